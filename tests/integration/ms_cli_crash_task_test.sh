#!/usr/bin/env bash
# ms_cli_crash_task_test - case 4 of cases/README.md: a task whose worker
# crashes every time (the worker fault hook MESHSWEEP_FAULT_CRASH_TASK
# aborts it) is recorded as failed with the reason after a bounded number
# of attempts; the other tasks finish; the node stays up. Checked with
# meshsweepd and with the embedded node of `meshsweep run`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 400 --test 100

cat >"$T/four.yaml" <<'Y'
name: crash-test
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3, 4]}
  width:  {value: 16}
  epochs: {value: 2}
Y
"$MS" run "$T/four.yaml" --dry-run >"$T/dry.txt"
sweep=$(awk 'NR==1 {print $2}' "$T/dry.txt" | tr -d :)
victim=$(grep -Eo '^[0-9a-f]{64}' "$T/dry.txt" | sed -n 2p)
[ -n "$victim" ] || fail "no task ids from --dry-run"

check_rows() { # FILE: 3 ok rows, the victim failed with a reason
    python3 - "$1" "$victim" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
victim = sys.argv[2]
by = {r["task_id"]: r for r in rows}
assert victim in by, "the crashed task has no row"
v = by[victim]
assert v["status"] == "failed", v["status"]
assert v["error"], "failed row without a reason"
others = [r for t, r in by.items() if t != victim]
assert len(others) == 3 and all(r["status"] == "ok" for r in others), others
print(v["error"])
PY
}

MESHSWEEP_FAULT_CRASH_TASK=${victim:0:16} ms_start_daemon "$T/node" --workers 2
[ "$("$MS" submit "$T/four.yaml" 2>/dev/null)" = "$sweep" ] || fail "daemon computed another sweep id"
ms_wait_until 120 ms_sweep_finished "$sweep" || fail "sweep did not end within 120 s"
"$MS" results "$sweep" --format json >"$T/rows.json"
reason=$(check_rows "$T/rows.json") || fail "rows after the crashes"
ms_gone "$DAEMON_PID" && fail "meshsweepd died"
"$MS" status >/dev/null || fail "meshsweepd does not answer after the crashes"
"$MS" results "$sweep" | grep "^${victim:0:12} " | grep -q failed || fail "table does not show the failure"
ok "meshsweepd: crashing task failed ($reason), others done, node up"

MESHSWEEP_FAULT_CRASH_TASK=${victim:0:16} timeout 120 \
    "$MS" run "$T/four.yaml" --data-dir "$T/embedded" --workers 2 --format json \
    >"$T/rows2.json" 2>"$T/run.err" || fail "meshsweep run with a crashing task exited $?"
check_rows "$T/rows2.json" >/dev/null || fail "rows of meshsweep run"
grep -q "^failed  ${victim:0:12}" "$T/run.err" || fail "run did not report the failure on stderr"
ok "meshsweep run: crashing task failed, others done"
