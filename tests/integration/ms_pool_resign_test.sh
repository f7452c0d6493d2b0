#!/usr/bin/env bash
# ms_pool_resign_test.sh - a node's own blocks signed for another pool id
# (a data dir that ran in open pool "before", then joins pool "after"; a
# store made before signing, with unsigned own blocks, takes the same
# path) are signed again when served, so a peer of the new pool accepts
# them: node 1 runs a sweep alone in "before", restarts in "after" next
# to a fresh node 2, which catches up on node 1's log, refuses no block
# and sees the sweep finished with node 1's results; node 1 counts the
# blocks it re-signed (blocks_resigned_total).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 400 --test 100

pool_lo_ports 2
cat >"$T/spec.yaml" <<'Y'
name: resign
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3]}
  width:  {value: 16}
  epochs: {value: 1}
Y
pool_start_lo 1 --open-pool=before --workers 1 "${POOL_TIMES[@]}"
sweep=$(pool_submit 1 "$T/spec.yaml")
ms_wait_until 60 pool_finished 1 "$sweep" || fail "the sweep did not finish on node 1 alone"
records=$(pool_status 1 'd["pool_counters"]["records"]')
pool_kill 1 TERM
pool_reap 1
ok "node 1 ran a sweep alone in pool 'before' ($records records)"

for k in 1 2; do pool_start_lo "$k" --open-pool=after --workers 1 "${POOL_TIMES[@]}"; done
pool_wait_alive 15 1 1 2 || fail "the two nodes did not link"
ms_wait_until 30 pool_finished 2 "$sweep" || fail "node 2 did not get node 1's sweep"
ms_wait_until 20 pool_same_digest "$sweep" 1 2 || fail "nodes 1 and 2 differ on the results"
rejected=$(pool_status 2 'd["pool_counters"]["blocks_rejected_total"]')
[ "$rejected" = 0 ] || fail "node 2 refused $rejected block(s) of node 1"
resigned=$(pool_status 1 'd["pool_counters"]["blocks_resigned_total"]')
[ "$resigned" -gt 0 ] || fail "node 1 re-signed no block"
ok "node 2 caught up on node 1's old log ($resigned block(s) re-signed for the new pool, none refused), same results ${POOL_DIGEST:0:16}"
