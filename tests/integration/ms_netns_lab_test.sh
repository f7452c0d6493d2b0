#!/usr/bin/env bash
# ms_netns_lab_test.sh - discovery on hosts shaped like lab machines
# (issue 18, "What it must show"): three namespaces, each with a docker0
# bridge made first (an address and a broadcast address, nobody else on
# it), then eth0 (a veth into the shared bridge) with two IPv4 addresses
# in two subnets.
#   1. With no --interface each daemon beacons on eth0 (one beacon per
#      broadcast address) and not on docker0, lists the other two alive
#      within 10 s and keeps them alive for HOLD s (polled every second,
#      and no peer suspect or dead in its --verbose log), and its log
#      names eth0 and both broadcast addresses.
#   2. Interfaces that come and go: an eth1 (veth) added to node 1 gets a
#      beacon and a new "beacon:" line within the rescan, and loses both
#      when it goes.
#   3. The same as 1 with --interface eth0.
#   4. A node of another pool beside node 3, which hears no member, warns
#      once after 30 s naming eth0 and its broadcast address; the members
#      never do.
# HOLD is 20 s here (MS_LAB_HOLD_S); ms_netns_lab_long_test (label slow)
# runs it with 60 s, the issue's figure. The whole test runs in its own
# mount + network namespace (exit 77 when namespaces are not permitted):
# no beacon leaves it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
HOLD=${MS_LAB_HOLD_S:-20}

# docker0 first, as Docker leaves it on a lab host: up, an address and a
# broadcast address, no port (nobody to meet there)
ms_netns_pre_eth0() {
    ip -n "$2" link add docker0 type bridge
    ip -n "$2" addr add 172.17.0.1/16 brd + dev docker0
    ip -n "$2" link set docker0 up
}
ms_netns_setup 3
for i in 1 2 3; do
    ip -n "$(ms_netns_name "$i")" addr add "10.214.0.$i/24" brd + dev eth0
    first=$(ms_netns_exec "$i" ip -o -4 addr show |
        awk '$2 != "lo" { print $2; exit }')
    [ "$first" = docker0 ] || fail "node $i: first interface is '$first', not docker0"
done
ok "3 hosts: docker0 (172.17.0.1/16) first, then eth0 with 10.213.0.x and 10.214.0.x"

# the "beacon:" lines of node K's log
beacon_lines() { grep -E '^meshsweepd: beacon: ' "${POOL_LOG[$1]}" || true; }

# s_lab_run TAG ARGS... - three daemons with ARGS; alive within 10 s, no
# flip for HOLD s, the log names eth0 and both broadcast addresses.
s_lab_run() {
    local tag=$1 k t0 s line
    shift
    t0=$SECONDS
    t0_ms=$(date +%s%3N)
    for k in 1 2 3; do
        POOL_NOWAIT=1 pool_start "$k" "$k" "$T/$tag$k" --open-pool=lab \
            --workers 1 "${POOL_TIMES[@]}" --verbose "$@"
    done
    for k in 1 2 3; do pool_wait_api "$k"; done
    pool_wait_alive $((10 - (SECONDS - t0))) 2 1 2 3 || {
        pool_show_peers 1 2 3
        fail "$tag: the three nodes did not list 2 alive peers within 10 s"
    }
    ok "$tag: each node lists the other two alive $(($(date +%s%3N) - t0_ms)) ms after the starts"
    local mark=()
    for k in 1 2 3; do mark[k]=$(wc -l <"${POOL_LOG[$k]}"); done
    for ((s = 0; s < HOLD; s++)); do
        for k in 1 2 3; do
            [ "$(pool_alive "$k")" = 2 ] || {
                pool_show_peers 1 2 3
                fail "$tag: node $k lists fewer than 2 alive after $s s of $HOLD"
            }
        done
        sleep 1
    done
    for k in 1 2 3; do
        if tail -n +"$((mark[k] + 1))" "${POOL_LOG[$k]}" |
            grep -E 'peer [0-9a-f]{12} (suspect|dead)'; then
            fail "$tag: node $k saw a peer suspect or dead during the $HOLD s"
        fi
        line=$(beacon_lines "$k" | head -n 1)
        [[ "$line" == *"eth0 10.213.0.255"* && "$line" == *"eth0 10.214.0.255"* ]] ||
            fail "$tag: node $k's log does not name eth0 and its broadcast addresses: '$line'"
        # docker0 may be named only as skipped, never as in use
        [[ "${line%%(*}" != *docker0* ]] ||
            fail "$tag: node $k beacons on docker0: '$line'"
    done
    ok "$tag: alive for $HOLD s with no suspect or dead peer; log: ${line#meshsweepd: }"
}

s_lab_stop() {
    local k
    for k in 1 2 3; do pool_kill "$k" TERM; done
    for k in 1 2 3; do pool_reap "$k"; done
}

# ---- 1. no --interface ------------------------------------------------------
# and a lone node of another pool beside node 3, which hears no member:
# it must warn once after 30 s, naming what it tried (checked at the end)
ms_netns_spawn 3 "$T/lone.log" "$MSD" --data-dir "$T/lone" --open-pool=lone \
    --api 127.0.0.1:5882 --mesh-port 5881 --workers 1 "${POOL_TIMES[@]}"
lone_t0=$SECONDS
s_lab_run auto
line=$(beacon_lines 1 | head -n 1)
[[ "$line" == *"docker0 (container or virtual bridge)"* ]] ||
    fail "node 1's log does not say docker0 was skipped: '$line'"

# ---- 2. an interface that comes and goes -----------------------------------
n0=$(beacon_lines 1 | wc -l)
ns1=$(ms_netns_name 1)
# a veth pair (no dummy module everywhere): eth1, and its other end
# vethlab, which the default choice skips by its name
ip -n "$ns1" link add eth1 type veth peer name vethlab
ip -n "$ns1" addr add 192.168.77.1/24 brd + dev eth1
ip -n "$ns1" link set vethlab up
ip -n "$ns1" link set eth1 up
ms_wait_until 10 bash -c "grep -E '^meshsweepd: beacon: ' '${POOL_LOG[1]}' | tail -n 1 | grep -q 'eth1 192.168.77.255'" ||
    fail "node 1 did not start beaconing on eth1 within 10 s: $(beacon_lines 1)"
ip -n "$ns1" link del eth1
ms_wait_until 10 bash -c "grep -E '^meshsweepd: beacon: ' '${POOL_LOG[1]}' | tail -n 1 | grep -v -q 'eth1'" ||
    fail "node 1 did not stop beaconing on eth1 within 10 s: $(beacon_lines 1)"
[ "$(beacon_lines 1 | wc -l)" = $((n0 + 2)) ] ||
    fail "expected one new beacon line per change: $(beacon_lines 1)"
[ "$(pool_alive 1)" = 2 ] || fail "node 1 lost its peers when eth1 came and went"
ok "eth1 added to node 1: beaconed on it; removed: dropped (one log line each)"
s_lab_stop

# ---- 3. --interface eth0 ----------------------------------------------------
s_lab_run eth0 --interface eth0
s_lab_stop

# ---- the lone node's warning ------------------------------------------------
left=$((45 - (SECONDS - lone_t0)))
[ "$left" -ge 1 ] || left=1 # already past: look once
ms_wait_until "$left" grep -q 'no beacon of this pool heard' "$T/lone.log" ||
    fail "the lone node did not warn within 45 s: $(cat "$T/lone.log")"
[ "$(grep -c 'no beacon of this pool heard' "$T/lone.log")" = 1 ] ||
    fail "the lone node warned more than once: $(cat "$T/lone.log")"
grep 'no beacon of this pool heard' "$T/lone.log" | grep -q 'eth0 10.213.0.255' ||
    fail "the lone node's warning does not name eth0: $(grep 'no beacon' "$T/lone.log")"
for k in 1 2 3; do
    if grep -q 'no beacon of this pool heard' "${POOL_LOG[$k]}"; then
        fail "node $k warned that it heard nobody"
    fi
done
ok "a lone node of another pool warned once (checked $((SECONDS - lone_t0)) s after its start): $(grep -o 'no beacon.*UDP 5870' "$T/lone.log" | cut -c1-100)"
