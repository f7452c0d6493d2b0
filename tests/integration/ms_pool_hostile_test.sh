#!/usr/bin/env bash
# ms_pool_hostile_test.sh - a peer that sends malformed, truncated,
# oversized and unknown messages (tests/integration/ms_hostile_peer.c) to
# a real meshsweepd with a finished sweep in its store, on loopback
# (--no-beacon): each message is refused and counted, the node keeps
# running and linked to its real peer, and its store is unchanged (record
# and block counts, the results table's sha256, the sweep's state).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
HOSTILE=${MESHSWEEP_HOSTILE_PEER:-}
[ -x "$HOSTILE" ] || { echo "ms_hostile_peer not built: skipped"; exit 77; }
ms_tiny_dataset --train 400 --test 100

pool_lo_ports 2
POOL=(--open-pool=hostile --workers 1 "${POOL_TIMES[@]}")
for k in 1 2; do pool_start_lo "$k" "${POOL[@]}"; done
pool_wait_alive 10 1 1 2 || fail "the two nodes did not link"
cat >"$T/spec.yaml" <<'Y'
name: hostile
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3, 4]}
  width:  {value: 16}
  epochs: {value: 2}
Y
sweep=$(pool_submit 1 "$T/spec.yaml")
ms_wait_until 60 pool_finished 1 "$sweep" || fail "the sweep did not finish"
ms_wait_until 20 pool_finished 2 "$sweep" || fail "the sweep did not reach node 2"
sleep 1 # the last records settle
snapshot() { # K: records, blocks, rows sha256, sweep state
    printf '%s %s %s %s\n' "$(pool_status "$1" 'd["pool_counters"]["records"]')" \
        "$(pool_status "$1" 'd["pool_counters"]["blocks"]')" \
        "$(pool_cli "$1" results "$sweep" --format csv | sort | sha256sum | cut -c1-16)" \
        "$(pool_curl "$1" "/api/v1/sweeps/$sweep" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')"
}
before=$(snapshot 1)
rejected0=$(pool_status 1 'd["pool_counters"]["rejected_messages_total"]')
ok "a finished sweep on two linked nodes: $before"

out=$("$HOSTILE" "tcp://127.0.0.1:${POOL_MESH[1]}" hostile) || fail "the hostile peer could not send: $out"
echo "$out"
sleep 1
kill -0 "${POOL_PID[1]}" 2>/dev/null || fail "node 1 died"
rejected1=$(pool_status 1 'd["pool_counters"]["rejected_messages_total"]')
[ "$rejected1" -ge $((rejected0 + 4)) ] ||
    fail "node 1 counted $((rejected1 - rejected0)) refused message(s), want at least 4"
after=$(snapshot 1)
[ "$after" = "$before" ] || fail "node 1's store changed: before '$before', after '$after'"
[ "$(pool_status 1 'd["peers"]["alive"]')" = 1 ] || fail "node 1 lost its real peer"
ok "$((rejected1 - rejected0)) hostile messages refused and counted; node 1 runs, still linked, store unchanged ($after)"

# The node still works: a second sweep completes on both.
sed 's/^name: hostile$/name: hostile-after/' "$T/spec.yaml" >"$T/spec2.yaml"
sweep2=$(pool_submit 1 "$T/spec2.yaml")
ms_wait_until 60 pool_finished 2 "$sweep2" || fail "a sweep after the attack did not finish"
ok "a sweep submitted after the attack completes on both nodes"
