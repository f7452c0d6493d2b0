#!/usr/bin/env bash
# ms_netns_nat_test.sh - --advertise behind a NAT rule, and --bind (issue
# 18, "What it must show"): three namespaces on one bridge (netns.sh).
# Node 2's mesh listens on 10.213.0.2:5871 (--bind) but nftables in its
# namespace resets every connection to that port except those that came
# through a DNAT rule, 10.213.0.200:15871 -> 10.213.0.2:5871, and drops
# its own dials out: its peers reach it only at the DNAT address.
#   1. With --advertise 10.213.0.200:15871 (in its beacons and HELLO) the
#      three nodes list each other alive within 10 s, and the DNAT rule
#      counted the connections.
#   2. Node 2 again without --advertise: its peers dial the address its
#      beacons come from, are refused, say so once each (one warning line
#      naming the endpoint), do not list it alive, and back off: under 40
#      connection attempts each in 10 s (libzmq alone would retry every
#      100 ms).
# The whole test runs in its own mount + network namespace (exit 77 when
# namespaces are not permitted, or without nft): no beacon leaves it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
command -v nft >/dev/null || { echo "SKIP: nft not installed (nftables)" >&2; exit 77; }

ms_netns_setup 3
NS2=$(ms_netns_name 2)
ip -n "$NS2" addr add 10.213.0.200/24 dev eth0
ip netns exec "$NS2" nft -f - <<'EOF'
table ip msnat {
    chain pre {
        type nat hook prerouting priority dstnat; policy accept;
        ip daddr 10.213.0.200 tcp dport 15871 counter dnat to 10.213.0.2:5871
    }
    chain in {
        type filter hook input priority filter; policy accept;
        tcp dport 5871 ct status dnat accept
        tcp dport 5871 tcp flags syn counter reject with tcp reset
    }
    chain out {
        type filter hook output priority filter; policy accept;
        tcp dport 5871 drop
    }
}
EOF
# nft_count CHAIN - packets counted by the rule of CHAIN with a counter
nft_count() {
    ip netns exec "$NS2" nft list chain ip msnat "$1" |
        sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | head -n 1
}
ok "node 2's mesh is reachable only through DNAT 10.213.0.200:15871 -> 10.213.0.2:5871"

ARGS=(--open-pool=nat --workers 1 "${POOL_TIMES[@]}" --interface eth0)
# ---- 1. --advertise ---------------------------------------------------------
t0=$(date +%s%3N)
for k in 1 3; do
    POOL_NOWAIT=1 pool_start "$k" "$k" "$T/n$k" "${ARGS[@]}"
done
POOL_NOWAIT=1 pool_start 2 2 "$T/n2" "${ARGS[@]}" --bind 10.213.0.2 \
    --advertise 10.213.0.200:15871
for k in 1 2 3; do pool_wait_api "$k"; done
pool_wait_alive 10 2 1 2 3 || {
    pool_show_peers 1 2 3
    fail "with --advertise the three nodes did not list 2 alive peers within 10 s"
}
dnat=$(nft_count pre)
[ "${dnat:-0}" -ge 1 ] || fail "no connection came through the DNAT rule"
ok "with --advertise: all alive after $(($(date +%s%3N) - t0)) ms, $dnat connection(s) through DNAT"
grep -q 'does not answer' "${POOL_LOG[1]}" "${POOL_LOG[3]}" &&
    fail "a peer warned about node 2 although it is reachable"
for k in 1 2 3; do pool_kill "$k" TERM; done
for k in 1 2 3; do pool_reap "$k"; done

# ---- 2. the same without --advertise ---------------------------------------
for k in 1 3; do
    POOL_NOWAIT=1 pool_start "$k" "$k" "$T/n$k" "${ARGS[@]}"
done
POOL_NOWAIT=1 pool_start 2 2 "$T/n2" "${ARGS[@]}" --bind 10.213.0.2
for k in 1 2 3; do pool_wait_api "$k"; done
pool_wait_alive 10 1 1 3 || fail "nodes 1 and 3 did not find each other"
resets0=$(nft_count in)
sleep 10
resets=$(($(nft_count in) - resets0))
for k in 1 3; do
    [ "$(pool_alive "$k")" = 1 ] || fail "node $k lists node 2 alive: $(pool_cli "$k" peers)"
    n=$(grep -c 'does not answer at tcp://10.213.0.2:5871' "${POOL_LOG[$k]}" || true)
    [ "$n" = 1 ] || {
        cat "${POOL_LOG[$k]}" >&2
        fail "node $k: $n warning lines about node 2's endpoint, want 1"
    }
done
[ "$resets" -lt 80 ] || fail "$resets connection attempts to node 2 in 10 s: a tight loop"
ok "without --advertise: node 2 unreachable, reported once by each peer ($(grep -h 'does not answer' "${POOL_LOG[1]}" | cut -c1-90)...), $resets attempts in 10 s"
