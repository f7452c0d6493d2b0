#!/usr/bin/env bash
# ms_cli_kill_test - SIGKILL of meshsweepd during a sweep, then a restart on
# the same data dir (issue 2; case 1's single-node variant): every result
# stored before the kill is still there, unchanged; the rest finish; a
# task that was mid-way (it had a checkpoint) resumes from it and ends
# bit-identical to an uninterrupted run of the same spec.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 3000 --test 200

cat >"$T/six.yaml" <<'Y'
name: kill-test
dataset: fashion-mnist
parameters:
  seed:          {values: [1, 2, 3, 4, 5, 6]}
  hidden_layers: {value: 3}
  width:         {value: 128}
  batch_size:    {value: 20}
  epochs:        {value: 30}
Y
ms_start_daemon "$T/node" --workers 2
sweep=$("$MS" submit "$T/six.yaml" 2>/dev/null)
done_count() {
    "$MS" results "$sweep" --data-dir "$T/node" --format json >"$T/mid.json" 2>/dev/null || return 1
    [ "$(ms_json_get "$T/mid.json" 'len(d)')" -ge "$1" ]
}
has_ckpt() { [ -n "$(find "$T/node" -name '*.ckpt' -size +0 2>/dev/null | head -1)" ]; }
ms_wait_until 150 done_count 2 || fail "2 tasks did not finish within 150 s"
# Tasks take a few seconds (30 epochs), so a checkpoint seen now belongs
# to a task far from its end: the kill below catches it mid-way.
ms_wait_until 60 has_ckpt || fail "no checkpoint of a running task appeared"
kill -KILL "$DAEMON_PID"
ms_wait_exit "$DAEMON_PID" 10
"$MS" results "$sweep" --data-dir "$T/node" --format json >"$T/before.json"
n_before=$(ms_json_get "$T/before.json" 'len(d)')
find "$T/node" -name '*.ckpt' -printf '%f\n' | sed 's/\.ckpt$//' | sort >"$T/ckpt.txt"
[ -s "$T/ckpt.txt" ] || fail "the checkpoint vanished with the kill"
ok "killed meshsweepd with $n_before results stored, $(wc -l <"$T/ckpt.txt") task(s) mid-way"

# The workers die with their node (PR_SET_PDEATHSIG); none may linger.
no_node_procs() { ! pgrep -f "[m]eshsweepd --data-dir $T/node( |\$)" >/dev/null; }
ms_wait_until 10 no_node_procs || fail "processes of the killed node linger"

ms_start_daemon "$T/node" --workers 2
ms_wait_until 200 ms_sweep_finished "$sweep" || fail "sweep did not finish after the restart"
"$MS" results "$sweep" --format json >"$T/after.json"
python3 - "$T/before.json" "$T/after.json" "$T/ckpt.txt" <<'PY'
import json, sys
before = {r["task_id"]: r for r in json.load(open(sys.argv[1]))}
after = {r["task_id"]: r for r in json.load(open(sys.argv[2]))}
assert len(after) == 6, "want 6 results, got %d" % len(after)
assert all(r["status"] == "ok" for r in after.values())
for tid, r in before.items():
    assert after[tid] == r, "result of %s changed after the restart" % tid[:12]
for tid in open(sys.argv[3]).read().split():
    assert tid in after and tid not in before, tid
    assert len(after[tid]["curve"]) == 30, "resumed task's curve is not whole"
PY
[ -z "$(find "$T/node" -name '*.ckpt')" ] || fail "checkpoints left after the sweep finished"
ok "after the restart: earlier results unchanged, the rest finished"

# Bit-exact resume: the same spec run uninterrupted gives the same weights.
"$MS" run "$T/six.yaml" --data-dir "$T/clean" --workers 2 --quiet --format json >"$T/clean.json"
python3 - "$T/after.json" "$T/clean.json" "$T/ckpt.txt" <<'PY'
import json, sys
after = {r["task_id"]: r for r in json.load(open(sys.argv[1]))}
clean = {r["task_id"]: r for r in json.load(open(sys.argv[2]))}
for tid in open(sys.argv[3]).read().split():
    a, c = after[tid], clean[tid]
    assert a["weights_digest"] == c["weights_digest"], "resumed task %s differs from a clean run" % tid[:12]
    assert a["test_accuracy"] == c["test_accuracy"]
PY
ok "the task resumed from its checkpoint ends bit-identical to a clean run"
