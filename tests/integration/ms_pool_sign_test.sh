#!/usr/bin/env bash
# ms_pool_sign_test.sh - signed blocks (issue 4 item 4) on a 3-node open
# pool on loopback (--no-beacon): honest nodes sign and accept each
# other's blocks (no block refused while a sweep runs); then a member that
# passed HELLO (tests/integration/ms_hostile_peer.c --blocks) sends every
# node (a) a correctly signed block with one payload byte flipped, (b) a
# block with one signature byte flipped, (c) an unsigned block, (d) a
# block claiming another node's origin. Every node refuses all four and
# counts them by reason (blocks_bad_signature_total 3, blocks_unsigned_total
# 1), logs once per peer and reason, stores nothing (record and block
# counts, the results' sha256, the sweep state unchanged), and the pool
# keeps working: a sweep submitted afterwards completes with the same
# results digest on the three nodes.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
HOSTILE=${MESHSWEEP_HOSTILE_PEER:-}
[ -x "$HOSTILE" ] || { echo "ms_hostile_peer not built: skipped"; exit 77; }
ms_tiny_dataset --train 400 --test 100

pool_lo_ports 3
POOL=(--open-pool=signed --workers 1 "${POOL_TIMES[@]}")
for k in 1 2 3; do pool_start_lo "$k" "${POOL[@]}"; done
pool_wait_alive 15 2 1 2 3 || fail "the three nodes did not link"
cat >"$T/spec.yaml" <<'Y'
name: signed
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3, 4, 5, 6]}
  width:  {value: 16}
  epochs: {value: 2}
Y
sweep=$(pool_submit 1 "$T/spec.yaml")
for k in 1 2 3; do
    ms_wait_until 90 pool_finished "$k" "$sweep" || fail "the sweep did not finish on node $k"
done
sleep 1 # the last records settle
counter() { pool_status "$1" "d['pool_counters']['$2']"; }
snapshot() { # K: records, blocks, rows sha256, sweep state
    printf '%s %s %s %s\n' "$(counter "$1" records)" "$(counter "$1" blocks)" \
        "$(pool_cli "$1" results "$sweep" --format csv | sort | sha256sum | cut -c1-16)" \
        "$(pool_curl "$1" "/api/v1/sweeps/$sweep" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')"
}
declare -A before id
for k in 1 2 3; do
    [ "$(counter "$k" blocks_rejected_total)" = 0 ] ||
        fail "node $k refused an honest block: $(pool_status "$k" 'd["pool_counters"]')"
    merged=$(counter "$k" gossip_blocks_merged_total)
    [ "$merged" -gt 0 ] || fail "node $k merged no block of its peers"
    before[$k]=$(snapshot "$k")
    id[$k]=$(pool_status "$k" 'd["node_id"]')
    [[ "${id[$k]}" =~ ^[0-9a-f]{64}$ ]] || fail "node $k id '${id[$k]}'"
done
ok "a sweep on 3 signing nodes: every peer block verified and merged, none refused (node 1: ${before[1]})"

for k in 1 2 3; do
    victim=${id[$((k % 3 + 1))]} # another node's origin, for (d)
    out=$("$HOSTILE" "tcp://127.0.0.1:${POOL_MESH[$k]}" signed --blocks \
        "$T/hostile$k" "$victim") || fail "the hostile member could not send to node $k: $out"
done
echo "$out"
refused() { # K: all four counted
    [ "$(counter "$1" blocks_rejected_total)" = 4 ]
}
for k in 1 2 3; do
    ms_wait_until 10 refused "$k" ||
        fail "node $k refused $(counter "$k" blocks_rejected_total) block(s), want 4"
    bad=$(counter "$k" blocks_bad_signature_total)
    unsigned=$(counter "$k" blocks_unsigned_total)
    [ "$bad" = 3 ] && [ "$unsigned" = 1 ] ||
        fail "node $k: $bad bad signature(s) (want 3: payload, signature, origin), $unsigned unsigned (want 1)"
    [ "$(counter "$k" blocks_not_admitted_total)" = 0 ] || fail "node $k: not admitted counted"
    kill -0 "${POOL_PID[$k]}" 2>/dev/null || fail "node $k died"
    after=$(snapshot "$k")
    [ "$after" = "${before[$k]}" ] ||
        fail "node $k's store changed: before '${before[$k]}', after '$after'"
    logged=$(grep -c 'refused a block from peer' "${POOL_LOG[$k]}" || true)
    [ "$logged" = 2 ] || fail "node $k logged $logged refusal line(s), want 2 (once per peer and reason)"
done
ok "every node refused the 4 bad blocks (3 bad signatures, 1 unsigned), logged twice, store unchanged"

# Nothing of the hostile member reached a store through a peer either:
# no node holds a record of its origin or of the forged one.
for k in 1 2 3; do
    [ "$(snapshot "$k")" = "${before[$k]}" ] || fail "node $k changed later"
done

# The pool still works: a second sweep completes everywhere, same rows.
sed 's/^name: signed$/name: signed-after/' "$T/spec.yaml" >"$T/spec2.yaml"
sweep2=$(pool_submit 2 "$T/spec2.yaml")
for k in 1 2 3; do
    ms_wait_until 90 pool_finished "$k" "$sweep2" || fail "the sweep after the attack did not finish on node $k"
done
ms_wait_until 20 pool_same_digest "$sweep2" 1 2 3 || fail "the three nodes differ on the second sweep's results"
for k in 1 2 3; do
    [ "$(counter "$k" blocks_rejected_total)" = 4 ] ||
        fail "node $k refused an honest block after the attack"
done
ok "a sweep after the attack completes on the 3 nodes, same digest ${POOL_DIGEST:0:16}, no honest block refused"
