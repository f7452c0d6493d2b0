#!/usr/bin/env bash
# ms_pool_sweep_test.sh - a sweep across three real meshsweepd daemons on
# loopback (--open-pool, --no-beacon, --peer: nothing is broadcast), lease
# TTL 2 s (issue 3, "What it must show"):
#   1. a 24-task sweep submitted to node 1 is worked on by all three; the
#      results table (rows and their sha256) is identical on every node
#      within 2 s of the first node seeing the sweep finished; no task
#      missing, no (task, node) pair counted twice;
#   2. node 2 killed and its store deleted (identity kept): it comes back
#      with a new incarnation (seen by its peers), catches up to the same
#      digest, and nothing is counted twice; a second sweep submitted to
#      the wiped node is worked on by all and reaches every node.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

pool_lo_ports 3
POOL=(--open-pool=sweep --workers 1 "${POOL_TIMES[@]}")
for k in 1 2 3; do pool_start_lo "$k" "${POOL[@]}"; done
pool_wait_alive 10 2 1 2 3 || fail "the three nodes did not link"
ok "three daemons linked"

# ---- 1. 24 tasks, worked on by all, same table everywhere -----------------
grid() { # NAME
    cat <<Y
name: $1
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2, 3]}
  seed:          {values: [1, 2, 3, 4, 5, 6, 7, 8]}
  width:         {value: 32}
  epochs:        {value: 300}
  batch_size:    {value: 50}
Y
}
grid pool-sweep-24 >"$T/grid.yaml"
sweep=$(pool_submit 1 "$T/grid.yaml")
any_finished() { pool_finished 1 "$1" || pool_finished 2 "$1" || pool_finished 3 "$1"; }
ms_wait_until 60 any_finished "$sweep" || { pool_dump "$sweep" 1 2 3; fail "the 24-task sweep did not finish in 60 s"; }
t_done=$SECONDS
ms_wait_until 2 pool_same_digest "$sweep" 1 2 3 ||
    fail "results tables differ 2 s after the last task: $(for k in 1 2 3; do pool_digest $k "$sweep"; done)"
[ $((SECONDS - t_done)) -le 2 ] || fail "tables converged only after $((SECONDS - t_done)) s"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 24) || fail "rows of sweep 1"
[ "$nodes" = 3 ] || fail "only $nodes of 3 nodes worked on the sweep"
ok "24 tasks ($rows rows) worked on by $nodes nodes; same table everywhere within 2 s (sha256 ${POOL_DIGEST:0:16})"

# ---- 2. a deleted store: new incarnation, catch-up, nothing twice ----------
inc_of() { # K ID: the incarnation node K lists for node ID
    pool_curl "$1" /api/v1/peers | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p["node_id"] == sys.argv[1] and p["state"] == "alive":
        print(p["incarnation"])' "$2"
}
id2=$(pool_status 2 'd["node_id"]')
inc_before=$(inc_of 1 "$id2")
[ -n "$inc_before" ] || fail "node 1 lists no incarnation for node 2"
pool_kill 2 KILL
pool_reap 2
[ -d "$T/n2/store" ] || fail "no store/ in node 2's data dir"
rm -rf "$T/n2/store"
pool_start_lo 2 "${POOL[@]}"
[ "$(pool_status 2 'd["node_id"]')" = "$id2" ] || fail "node 2 lost its identity"
new_inc() { local i; i=$(inc_of 1 "$id2"); [ -n "$i" ] && [ "$i" != "$inc_before" ]; }
ms_wait_until 10 new_inc || fail "node 1 does not see a new incarnation of node 2 ($inc_before)"
ms_wait_until 20 pool_same_digest "$sweep" 1 2 3 || fail "wiped node 2 did not catch up"
pool_check_rows "$T/digest2.csv.raw" 24 >/dev/null || fail "rows after the wipe"
ok "node 2 with a deleted store: new incarnation ($inc_before -> $(inc_of 1 "$id2")), caught up, nothing counted twice"

grid pool-sweep-after-wipe | sed 's/{value: 5}/{value: 4}/' >"$T/grid2.yaml"
sweep2=$(pool_submit 2 "$T/grid2.yaml")
ms_wait_until 60 any_finished "$sweep2" || { pool_dump "$sweep2" 1 2 3; fail "sweep 2 did not finish"; }
ms_wait_until 5 pool_same_digest "$sweep2" 1 2 3 || fail "sweep 2 tables differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 24) || fail "rows of sweep 2"
ms_wait_until 5 pool_same_digest "$sweep" 1 2 3 || fail "sweep 1 tables differ at the end"
ok "a sweep submitted to the wiped node: $rows rows from $nodes nodes, same table everywhere"
