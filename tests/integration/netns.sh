# shellcheck shell=bash
# netns.sh - private network namespaces for multi-node tests (bash library)
#
# Copyright (c) the meshsweep developers. MIT licence.
#
# docs/POOL.md "Tests that need several hosts": N node namespaces joined by
# veth pairs to a bridge that lives in one more namespace, addresses
# 10.213.0.<i>/24 that exist only inside these namespaces, lo up, and a
# route for 255.255.255.255 on each node's eth0 so zbeacon's broadcasts
# (interface "*" or "eth0") reach the other nodes through the bridge.
#
# NETWORK SAFETY: the whole test runs inside a private mount + network
# namespace of its own (ms_netns_reexec, below): the namespaces, veths and
# bridge are made in there, nothing is routed to the machine's network,
# and all of it disappears when the test's last process exits (a trap
# also tears it down explicitly).
#
# Use, in a test script (after `set -euo pipefail`):
#
#     source "$(dirname "$0")/netns.sh"
#     ms_netns_reexec "$0" "$@"       # first: re-runs the script inside
#                                     # `unshare -mn` (exit 77 = skip)
#     source "$(dirname "$0")/lib.sh" # optional; its trap is chained
#     ms_netns_setup 4                # ms<PID>n1..n4 + ms<PID>br
#     ms_netns_exec 1 ping -c1 -W1 "$(ms_netns_ip 2)"
#     ms_netns_spawn 1 "$T/n1.log" "$MSD" --interface eth0 ...
#     ms_netns_cut 3; ...; ms_netns_heal 3
#     # ms_netns_teardown runs from the EXIT trap
#
# Functions:
#   ms_netns_reexec SCRIPT ARGS...  re-exec SCRIPT in a private mount+net
#                                   namespace (no-op once inside)
#   ms_netns_setup N                make N node namespaces + the bridge
#                                   (calls ms_netns_pre_eth0 I NS, when
#                                   the test defines it, before eth0)
#   ms_netns_name I                 print node I's namespace name
#   ms_netns_ip I                   print node I's address (10.213.0.I)
#   ms_netns_exec I CMD...          run CMD inside node I's namespace
#   ms_netns_spawn I LOG CMD...     start CMD in node I's namespace in the
#                                   background (pid in $SPAWNED, killed by
#                                   the teardown)
#   ms_netns_cut I / ms_netns_heal I  take node I's bridge port down / up
#   ms_netns_wait_links             wait until the bridge ports have carrier
#   ms_netns_teardown               kill what runs in them, delete them

MS_NETNS_PREFIX="ms$$"
MS_NETNS_N=0
MS_NETNS_PIDS=()
MS_NETNS_SUBNET="10.213.0"

# ms_netns_reexec SCRIPT ARGS... - unless already inside, re-run SCRIPT
# with bash inside `unshare -mn` (plus -r when not root). Exits 77 (skip)
# when user or network namespaces are not permitted here.
ms_netns_reexec() {
    if [ -n "${MS_NETNS_INSIDE:-}" ]; then
        return 0
    fi
    local script=$1
    shift
    local flags=(-m -n --propagation private)
    if [ "$(id -u)" -ne 0 ]; then
        flags=(-r "${flags[@]}")
    fi
    if ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
        echo "SKIP: unshare or ip not installed" >&2
        exit 77
    fi
    if ! unshare "${flags[@]}" true 2>/dev/null; then
        echo "SKIP: network namespaces not permitted here (unshare ${flags[*]})" >&2
        exit 77
    fi
    MS_NETNS_INSIDE=1 exec unshare "${flags[@]}" bash "$script" "$@"
}

# ms_netns_name I - node I's namespace name ("br" gives the bridge's).
ms_netns_name() {
    if [ "$1" = br ]; then
        echo "${MS_NETNS_PREFIX}br"
    else
        echo "${MS_NETNS_PREFIX}n$1"
    fi
}

# ms_netns_ip I - node I's address.
ms_netns_ip() {
    echo "${MS_NETNS_SUBNET}.$1"
}

# s_netns_run_dir - give `ip netns` a /run/netns private to this mount
# namespace (tmpfs), so nothing is left on the machine's /run.
s_netns_run_dir() {
    if [ -z "${MS_NETNS_INSIDE:-}" ]; then
        echo "netns.sh: call ms_netns_reexec first" >&2
        return 1
    fi
    if [ -d /run/netns ]; then
        mount -t tmpfs ms-netns /run/netns
    else
        # /run itself, in this private mount namespace only
        mount -t tmpfs ms-run /run
        mkdir -p /run/netns
    fi
}

# ms_netns_setup N - N node namespaces (1 <= N <= 200) and a bridge.
ms_netns_setup() {
    local n=$1 i ns br
    if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then
        echo "ms_netns_setup: N must be 1..200, not '$n'" >&2
        return 1
    fi
    s_netns_run_dir
    ms_netns_chain_trap
    ip link set lo up
    br=$(ms_netns_name br)
    ip netns add "$br"
    ip -n "$br" link set lo up
    ip -n "$br" link add br0 type bridge
    ip -n "$br" link set br0 up
    for ((i = 1; i <= n; i++)); do
        ns=$(ms_netns_name "$i")
        ip netns add "$ns"
        MS_NETNS_N=$i
        # a test may shape the host first (ms_netns_lab_test: a docker0
        # bridge made before eth0, as Docker leaves one)
        if declare -F ms_netns_pre_eth0 >/dev/null; then
            ms_netns_pre_eth0 "$i" "$ns"
        fi
        ip link add "v${i}n" type veth peer name "v${i}b"
        ip link set "v${i}n" netns "$ns"
        ip link set "v${i}b" netns "$br"
        ip -n "$ns" link set "v${i}n" name eth0
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$(ms_netns_ip "$i")/24" brd + dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" route add 255.255.255.255/32 dev eth0 \
            src "$(ms_netns_ip "$i")"
        ip -n "$br" link set "v${i}b" master br0
        ip -n "$br" link set "v${i}b" up
    done
    ms_netns_wait_links
}

# ms_netns_wait_links - wait (at most 5 s) until every link is ready: each
# bridge port that is up is forwarding, and each node's eth0 whose bridge
# port is up has carrier (a new veth takes a moment, and packets sent
# before are lost). Returns 1 on time-out.
ms_netns_wait_links() {
    local br _ i ready
    br=$(ms_netns_name br)
    for _ in $(seq 1 50); do
        ready=1
        for ((i = 1; i <= MS_NETNS_N; i++)); do
            # a port taken down by ms_netns_cut is not waited for
            if ! ip -n "$br" -o link show "v${i}b" | grep -q '[<,]UP[,>]'; then
                continue
            fi
            if ! bridge -n "$br" link show dev "v${i}b" | grep -q 'state forwarding' \
                || ip -n "$(ms_netns_name "$i")" -o link show eth0 \
                    | grep -q 'NO-CARRIER'; then
                ready=0
                break
            fi
        done
        [ "$ready" = 1 ] && return 0
        sleep 0.1
    done
    echo "ms_netns_wait_links: links not ready after 5 s" >&2
    return 1
}

# ms_netns_exec I CMD... - run CMD in node I's namespace.
ms_netns_exec() {
    local ns
    ns=$(ms_netns_name "$1")
    shift
    ip netns exec "$ns" "$@"
}

# ms_netns_spawn I LOG CMD... - start CMD in node I's namespace in the
# background, output in LOG; pid in $SPAWNED (also killed by teardown, and
# added to lib.sh's MS_PIDS when lib.sh is loaded).
ms_netns_spawn() {
    local i=$1 log=$2
    shift 2
    ip netns exec "$(ms_netns_name "$i")" "$@" >"$log" 2>&1 &
    SPAWNED=$!
    MS_NETNS_PIDS+=("$SPAWNED")
    if declare -p MS_PIDS >/dev/null 2>&1; then
        MS_PIDS+=("$SPAWNED")
    fi
}

# ms_netns_cut I - cut node I off (its bridge port down; its own config
# is untouched, so heal needs nothing but the port back up).
ms_netns_cut() {
    ip -n "$(ms_netns_name br)" link set "v${1}b" down
}

# ms_netns_heal I - give node I its link back.
ms_netns_heal() {
    ip -n "$(ms_netns_name br)" link set "v${1}b" up
    ms_netns_wait_links
}

# ms_netns_teardown - kill what runs in the namespaces, delete them.
# Safe to call twice.
ms_netns_teardown() {
    local pid i ns
    for pid in "${MS_NETNS_PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    done
    for pid in "${MS_NETNS_PIDS[@]:-}"; do
        [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
    done
    MS_NETNS_PIDS=()
    for ((i = 1; i <= MS_NETNS_N; i++)); do
        ns=$(ms_netns_name "$i")
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done
    if [ "$MS_NETNS_N" -gt 0 ]; then
        ip netns del "$(ms_netns_name br)" 2>/dev/null || true
    fi
    MS_NETNS_N=0
}

# ms_netns_chain_trap - run ms_netns_teardown on EXIT before whatever EXIT
# trap is set now (lib.sh's ms_cleanup), keeping the exit status.
ms_netns_chain_trap() {
    local prev
    prev=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT\$//")
    if [ -n "$prev" ]; then
        # shellcheck disable=SC2064,SC2154
        trap "ms_netns_rc=\$?; ms_netns_teardown; (exit \$ms_netns_rc); $prev" EXIT
    else
        trap 'ms_netns_rc=$?; ms_netns_teardown; exit $ms_netns_rc' EXIT
    fi
}
