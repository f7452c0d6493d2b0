#!/usr/bin/env bash
# ms_pool_case7_test.sh - case 7 of cases/README.md end to end: "a sweep
# with replicas: 1; one result claims accuracy above 1.0, or a NaN loss
# with status ok: the result is refused as invalid and the task is
# scheduled again on another node". Real daemons on loopback (--open-pool,
# --no-beacon, --peer: nothing is broadcast), lease TTL 2 s:
#   1. two honest meshsweepd and one dishonest member (ms_dishonest_node
#      --lie impossible: a real node whose results claim test_accuracy 1.2
#      or a null test_loss with status ok, in its own signed blocks) run
#      an 8-task sweep: every such result is refused as invalid on both
#      honest nodes (results_refused_invalid_total equals the number the
#      liar published), each of those tasks is run again by an honest node
#      and completes, the sweep completes, the honest tables hold no row
#      of the liar and have the same digest;
#   2. the honest node's side: a node whose own worker produces impossible
#      rows (--lie broken-worker: its store checks its own rows as every
#      node's does) never publishes them: each becomes a task-class
#      failure there, another node runs the task, and the honest nodes'
#      counters of refused results do not move (nothing false left it).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
LIAR=${MESHSWEEP_DISHONEST_NODE:-}
[ -x "$LIAR" ] || { echo "ms_dishonest_node not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

pool_lo_ports 4
POOL=(--open-pool=case7 --workers 1 "${POOL_TIMES[@]}")
pool_start_lo 1 "${POOL[@]}"
pool_start_lo 2 "${POOL[@]}"
MSD=$LIAR pool_start_lo 3 --lie impossible "${POOL[@]}"
pool_wait_alive 20 2 1 2 3 || fail "the three nodes did not link"
grep -q 'liar: mode impossible' "$T/node3.log" || fail "node 3 is not the liar"
liar=$(pool_status 3 'd["node_id"]')
ok "two honest daemons and a dishonest member (impossible results) linked"

grid() { # NAME
    cat <<Y
name: $1
dataset: fashion-mnist
verify: {replicas: 1}
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4]}
  width:         {value: 16}
  epochs:        {value: 100}
  batch_size:    {value: 50}
Y
}

# no_row_of K NODE_ID - node K's table (digest file) has no row of NODE_ID.
no_row_of() {
    python3 - "$T/digest$1.csv.raw" "$2" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = [r["task_id"][:12] for r in rows if r["node_id"] == sys.argv[2]]
if bad:
    sys.exit("rows of node %s: %s" % (sys.argv[2][:12], bad))
EOF
}

# ---- 1. impossible results: refused everywhere, tasks run again ------------
grid case7-impossible >"$T/grid1.yaml"
sweep=$(pool_submit 1 "$T/grid1.yaml")
both_finished() { pool_finished 1 "$1" && pool_finished 2 "$1"; }
ms_wait_until 90 both_finished "$sweep" || { pool_dump "$sweep" 1 2 3; fail "the sweep did not finish on the honest nodes"; }
lies=$(grep -c '^liar: impossible task ' "$T/node3.log" || true)
[ "$lies" -ge 1 ] || { pool_dump "$sweep" 1 2 3; fail "the liar published no result (it ran no task)"; }
grep -q 'test_accuracy 1.2' "$T/node3.log" || fail "no accuracy-over-1 lie"
# All the liar's results reach both honest nodes and are refused there.
refused_all() { [ "$(pool_counter 1 results_refused_invalid_total)" = "$lies" ] &&
    [ "$(pool_counter 2 results_refused_invalid_total)" = "$lies" ]; }
ms_wait_until 15 refused_all || fail "refused: node 1 $(pool_counter 1 results_refused_invalid_total), node 2 $(pool_counter 2 results_refused_invalid_total), liar published $lies"
ms_wait_until 10 pool_same_digest "$sweep" 1 2 || fail "honest tables differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 8) || fail "rows of the sweep"
no_row_of 1 "$liar" || fail "node 1 holds a row of the liar"
no_row_of 2 "$liar" || fail "node 2 holds a row of the liar"
# Each task the liar answered falsely was completed by an honest node.
for t in $(sed -n 's/^liar: impossible task \([0-9a-f]*\) .*/\1/p' "$T/node3.log"); do
    n=$(grep -c "^$t," "$T/digest1.csv" || true)
    [ "$n" = 1 ] || fail "task ${t:0:12}, answered falsely by the liar: $n honest rows"
done
ok "$lies impossible result(s) refused as invalid on both honest nodes; those tasks ran again elsewhere; $rows rows, $tasks tasks, none of the liar; same digest (${POOL_DIGEST:0:16})"

# ---- 2. an own impossible row: a task-class failure, never published -------
pool_kill 3 TERM
pool_reap 3
before1=$(pool_counter 1 results_refused_invalid_total)
before2=$(pool_counter 2 results_refused_invalid_total)
MSD=$LIAR pool_start_lo 4 --lie broken-worker --verbose "${POOL[@]}"
pool_wait_alive 20 2 1 2 4 || fail "the broken node did not link"
broken=$(pool_status 4 'd["node_id"]')
grid case7-broken-worker >"$T/grid2.yaml"
sweep2=$(pool_submit 1 "$T/grid2.yaml")
ms_wait_until 90 both_finished "$sweep2" || { pool_dump "$sweep2" 1 2 4; fail "sweep 2 did not finish"; }
made=$(grep -c '^liar: broken-worker task ' "$T/node4.log" || true)
[ "$made" -ge 1 ] || { pool_dump "$sweep2" 1 2 4; fail "the broken node ran no task"; }
failed=$(grep -c 'failed: result refused as invalid' "$T/node4.log" || true)
[ "$failed" = "$made" ] || fail "$made impossible rows made, $failed task-class failures recorded"
ms_wait_until 10 pool_same_digest "$sweep2" 1 2 4 || fail "tables of sweep 2 differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 8) || fail "rows of sweep 2"
no_row_of 1 "$broken" || fail "node 1 holds a row of the broken node"
for t in $(sed -n 's/^liar: broken-worker task \([0-9a-f]*\) .*/\1/p' "$T/node4.log"); do
    n=$(grep -c "^$t," "$T/digest1.csv" || true)
    [ "$n" = 1 ] || fail "task ${t:0:12}, failed on the broken node: $n honest rows"
done
[ "$(pool_counter 1 results_refused_invalid_total)" = "$before1" ] &&
    [ "$(pool_counter 2 results_refused_invalid_total)" = "$before2" ] ||
    fail "an impossible row left the broken node (refused counters moved)"
ok "broken worker: $made impossible row(s) refused by its own store as task-class failures, never published; the tasks ran on other nodes ($rows rows, same digest)"
