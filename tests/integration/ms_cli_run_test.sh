#!/usr/bin/env bash
# ms_cli_run_test - `meshsweep run` end to end on an embedded node: the
# table has every task of the spec in the documented order; running the
# same command again finds the same sweep and trains nothing; csv and json
# carry the same rows; `results --data-dir` (full id or a 12-hex prefix)
# reads the same store; --analyze prints the plateau and the fit.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_tiny_dataset --train 400 --test 100
cd "$T"

cat >"$T/grid.yaml" <<'Y'
name: run-test
dataset: fashion-mnist
method: grid
parameters:
  activation:    {values: [tanh, relu]}
  hidden_layers: {values: [2, 1]}
  width:         {values: [16, 8]}
  epochs:        {value: 2}
  batch_size:    {value: 50}
Y
"$MS" run "$T/grid.yaml" --dry-run >"$T/dry.txt"
sweep=$(awk 'NR==1 {print $2}' "$T/dry.txt" | tr -d :)
[ ${#sweep} = 64 ] || fail "dry run: no sweep id: $(head -1 "$T/dry.txt")"
grep -Eo '^[0-9a-f]{64}' "$T/dry.txt" | sort >"$T/tasks.txt"
[ "$(wc -l <"$T/tasks.txt")" = 8 ] || fail "dry run lists $(wc -l <"$T/tasks.txt") tasks, want 8"
[ ! -e "$T/meshsweep-data" ] || fail "--dry-run created a data dir"
ok "--dry-run lists 8 tasks and stores nothing"

# Default data dir: ./meshsweep-data.
"$MS" run "$T/grid.yaml" --workers 2 >"$T/table1.txt" 2>"$T/run1.err"
[ -d "$T/meshsweep-data" ] || fail "no ./meshsweep-data"
head -1 "$T/table1.txt" | grep -Eq '^task +activation +layers +width +seed +status +epochs +val_acc +test_acc +s/epoch +params +verdict +operators *$' ||
    fail "table header: $(head -1 "$T/table1.txt")"
[ "$(($(wc -l <"$T/table1.txt") - 1))" = 8 ] || fail "table has $(($(wc -l <"$T/table1.txt") - 1)) rows, want 8"
while read -r id; do
    grep -q "^${id:0:12} " "$T/table1.txt" || fail "task ${id:0:12} missing from the table"
done <"$T/tasks.txt"
[ "$(grep -c ' ok ' "$T/table1.txt")" = 8 ] || fail "not every task is ok"
# Order: activation, width, depth.
awk 'NR>1 {print $2, $4, $3}' "$T/table1.txt" >"$T/order.txt"
sort -k1,1 -k2,2n -k3,3n "$T/order.txt" | cmp -s - "$T/order.txt" || fail "table not sorted by activation, width, depth"
grep -q "8 trained in this run" "$T/run1.err" || fail "first run: $(tail -1 "$T/run1.err")"
ok "run prints every task, sorted"

"$MS" run "$T/grid.yaml" --workers 2 --analyze >"$T/table2.txt" 2>"$T/run2.err"
grep -q "sweep $sweep" "$T/run2.err" || fail "second run: another sweep id"
grep -q "0 trained in this run" "$T/run2.err" || fail "second run trained again: $(tail -1 "$T/run2.err")"
head -9 "$T/table2.txt" | cmp -s - "$T/table1.txt" || fail "second run's table differs"
grep -qi 'plateau' "$T/table2.txt" || fail "--analyze prints no plateau"
grep -Eq 'time per epoch = .*depth' "$T/table2.txt" || fail "--analyze prints no time fit"
ok "same command again: same sweep, nothing trained, --analyze works"

"$MS" results "$sweep" --data-dir "$T/meshsweep-data" >"$T/table3.txt"
cmp -s "$T/table1.txt" "$T/table3.txt" || fail "results --data-dir differs from run's table"
"$MS" results "${sweep:0:12}" --data-dir "$T/meshsweep-data" >"$T/table4.txt"
cmp -s "$T/table1.txt" "$T/table4.txt" || fail "12-hex prefix"
"$MS" results "$sweep" --data-dir "$T/meshsweep-data" --format csv >"$T/rows.csv"
"$MS" results "$sweep" --data-dir "$T/meshsweep-data" --format json >"$T/rows.json"
python3 - "$T/rows.csv" "$T/rows.json" "$T/tasks.txt" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
js = json.load(open(sys.argv[2]))
tasks = sorted(open(sys.argv[3]).read().split())
assert sorted(r["task_id"] for r in rows) == tasks, "csv task ids"
assert sorted(r["task_id"] for r in js) == tasks, "json task ids"
assert [r["task_id"] for r in rows] == [r["task_id"] for r in js], "same order"
assert "curve" not in rows[0] and "config.width" in rows[0], list(rows[0])
for c, j in zip(rows, js):
    assert c["status"] == j["status"]
    assert float(c["test_accuracy"]) == j["test_accuracy"]
    assert int(c["config.width"]) == j["config"]["width"]
    assert c["weights_digest"] == j["weights_digest"]
    assert len(j["curve"]) == 2
PY
ms_expect_exit 2 "$T/e" "$MS" results 000000000000 --data-dir "$T/meshsweep-data"
ms_one_error_line "$T/e" '000000000000'
ok "results --data-dir: table, csv and json carry the same rows"

# `meshsweep train` with a task's config gives that task's numbers: the same
# weights (bit for bit), metrics and platform fingerprint as the worker.
read -r act layers width < <(ms_json_get "$T/rows.json" \
    '"%s %d %d" % (d[0]["config"]["activation"], d[0]["config"]["hidden_layers"], d[0]["config"]["width"])')
"$MS" train --activation "$act" --hidden-layers "$layers" --width "$width" \
    --epochs 2 --batch-size 50 --json >"$T/train.json" 2>/dev/null
python3 - "$T/rows.json" "$T/train.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))[0]
row = json.load(open(sys.argv[2]))
assert row["config"] == task["config"], "configs differ"
for k in ("weights_digest", "test_accuracy", "test_loss", "val_accuracy",
          "params", "fingerprint"):
    assert row[k] == task[k], "%s: train %s, worker %s" % (k, row[k], task[k])
PY
ok "train with a task's config reproduces the task bit for bit"
