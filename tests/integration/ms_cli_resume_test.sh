#!/usr/bin/env bash
# ms_cli_resume_test - case 3 of cases/README.md on one node, through
# `meshsweep run`: a 10-task sweep is stopped (SIGINT, as Ctrl-C) after 6
# tasks have finished; the results so far are kept and printed; the same
# command again trains only the missing tasks (10 - finished), the task
# that was interrupted resuming from its checkpoint.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_tiny_dataset --train 3000 --test 200 --side 8

cat >"$T/ten.yaml" <<'Y'
name: case-3
dataset: fashion-mnist
parameters:
  seed:          {values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}
  hidden_layers: {value: 3}
  width:         {value: 128}
  batch_size:    {value: 20}
  epochs:        {value: 40}
Y

"$MS" run "$T/ten.yaml" --data-dir "$T/data" --workers 1 >"$T/table1.txt" 2>"$T/run1.err" &
pid=$!
MS_PIDS+=("$pid")
finished() { [ "$(grep -c '^done ' "$T/run1.err" || true)" -ge 6 ]; }
ms_wait_until 150 finished || fail "6 tasks did not finish within 150 s"
sleep 0.3 # let the 7th task get an epoch (and a checkpoint) in
kill -INT "$pid"
ms_wait_exit "$pid" 30
rc=$EXIT_RC
[ "$rc" = 1 ] || fail "interrupted run exited $rc, want 1"
grep -q 'interrupted' "$T/run1.err" || fail "no 'interrupted' note"
done1=$(sed -nE 's/.*: ([0-9]+) of 10 tasks done.*/\1/p' "$T/run1.err" | tail -1)
[ -n "$done1" ] && [ "$done1" -ge 6 ] && [ "$done1" -lt 10 ] ||
    fail "first run finished '$done1' tasks (want 6..9): $(tail -2 "$T/run1.err")"
rows1=$(($(wc -l <"$T/table1.txt") - 1))
[ "$rows1" = "$done1" ] || fail "interrupted run printed $rows1 rows for $done1 results"
ckpts=$(find "$T/data" -name '*.ckpt' | wc -l)
ok "stopped after $done1 of 10 tasks, results kept, $ckpts checkpoint(s) left"

"$MS" run "$T/ten.yaml" --data-dir "$T/data" --workers 1 >"$T/table2.txt" 2>"$T/run2.err"
trained=$(sed -nE 's/.*; ([0-9]+) trained in this run.*/\1/p' "$T/run2.err" | tail -1)
[ "$trained" = $((10 - done1)) ] || fail "restart trained '$trained' tasks, want $((10 - done1))"
[ "$(($(wc -l <"$T/table2.txt") - 1))" = 10 ] || fail "final table does not have 10 rows"
[ "$(grep -c ' ok ' "$T/table2.txt")" = 10 ] || fail "not every task ok after the restart"
[ "$(find "$T/data" -name '*.ckpt' | wc -l)" = 0 ] || fail "checkpoints left after every task finished"
# The rows of the first run are unchanged by the second.
grep -v '^task' "$T/table1.txt" | awk '{print $1, $8, $9}' | sort >"$T/r1"
grep -v '^task' "$T/table2.txt" | awk '{print $1, $8, $9}' | sort >"$T/r2"
comm -23 "$T/r1" "$T/r2" | grep -q . && fail "a stored result changed after the restart"
ok "restart trained only the $trained missing tasks"
