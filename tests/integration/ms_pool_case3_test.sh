#!/usr/bin/env bash
# ms_pool_case3_test.sh - case 3 of ../shared/cases/README.md with real
# meshsweepd daemons on loopback (--open-pool, --no-beacon, --peer): a
# 10-task sweep on 3 nodes; every node is stopped (SIGTERM) once 6 tasks
# have finished; all are restarted: only the tasks missing from the
# stores (read offline with `meshsweep results --data-dir` while every
# node is down) are trained after the restart, and the sweep ends with 10
# tasks, the same table on every node.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
# 6000 images: width 256 x 2 trains for a second or more in 30 epochs
ms_tiny_dataset --train 6000 --test 200

pool_lo_ports 3
C3=(--open-pool=case3 --workers 1 "${POOL_TIMES[@]}" --verbose)
for k in 1 2 3; do pool_start_lo "$k" "${C3[@]}"; done
pool_wait_alive 10 2 1 2 3 || fail "the nodes did not link"
cat >"$T/case3.yaml" <<'Y'
name: case-3
dataset: fashion-mnist
parameters:
  seed:          {values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}
  hidden_layers: {value: 2}
  width:         {value: 256}
  epochs:        {value: 30}
  batch_size:    {value: 50}
Y
sweep=$(pool_submit 1 "$T/case3.yaml")
six() { [ "$(pool_done 1 "$sweep")" -ge 6 ]; }
ms_wait_until 60 six || { pool_dump "$sweep" 1 2 3; fail "6 tasks did not finish"; }
for k in 1 2 3; do pool_kill "$k" TERM; done
for k in 1 2 3; do pool_reap "$k"; done
# what the stores hold, read offline: the union of the three
for k in 1 2 3; do
    "$MS" results "$sweep" --data-dir "$T/n$k" --format csv >"$T/before$k.csv" 2>/dev/null ||
        : >"$T/before$k.csv"
done
cat "$T"/before[123].csv | grep -v '^task_id,' | cut -c1-12 | sort -u >"$T/done_before.txt"
n_before=$(wc -l <"$T/done_before.txt")
[ "$n_before" -ge 6 ] && [ "$n_before" -lt 10 ] ||
    fail "the stores hold $n_before finished tasks at the stop (want 6..9)"
for k in 1 2 3; do mv "${POOL_LOG[$k]}" "${POOL_LOG[$k]}.first"; done
for k in 1 2 3; do pool_start_lo "$k" "${C3[@]}"; done
allfin() { for k in 1 2 3; do pool_finished "$k" "$sweep" || return 1; done; }
ms_wait_until 60 allfin || { pool_dump "$sweep" 1 2 3; fail "the sweep did not finish after the restart"; }
ms_wait_until 5 pool_same_digest "$sweep" 1 2 3 || fail "tables differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 10) || fail "rows"
# tasks trained after the restart: started and finished (a start that is
# stopped when outranked trains nothing that is kept)
cat "${POOL_LOG[1]}" "${POOL_LOG[2]}" "${POOL_LOG[3]}" |
    sed -n 's/.*task \([0-9a-f]\{12\}\) done: .*/\1/p' | sort >"$T/trained_after.txt"
again=$(comm -12 "$T/done_before.txt" <(sort -u "$T/trained_after.txt") | tr '\n' ' ')
[ -z "$again" ] || fail "tasks finished before the stop were trained again: $again"
n_after=$(sort -u "$T/trained_after.txt" | wc -l)
[ "$n_after" = $((10 - n_before)) ] ||
    fail "$n_after tasks trained after the restart, $((10 - n_before)) were missing"
ok "case 3: stopped with $n_before of 10 done; only the $n_after missing tasks were trained after the restart; $rows rows, same table on 3 nodes"
