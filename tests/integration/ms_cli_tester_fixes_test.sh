#!/usr/bin/env bash
# ms_cli_tester_fixes_test - what a tester found trying the single node as
# a new user (issue 2 follow-up): --dry-run of a large grid is linear and
# summarised; a validation_split that leaves no training row, a missing or
# non-file dataset and a --data-dir that is a file are bad input (exit 2,
# one line naming the key or path); the divergence line says it once and
# writes "nan"; --format csv --analyze keeps stdout CSV; a spec sweeping
# nothing warns; a network too large for the pool is refused; a swept
# optimizer gets its own column and its own analysis groups; "1 task".
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_tiny_dataset --train 200 --test 50

# -- --dry-run: a 40000-task grid (33 s before the fix, quadratic) lists
#    the first 1000 tasks and a count; --all and --json list every task.
python3 - "$T/big.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("name: big\ndataset: fashion-mnist\nparameters:\n")
    f.write("  width: {values: [%s]}\n" % ", ".join(str(i) for i in range(1, 201)))
    f.write("  seed: {values: [%s]}\n" % ", ".join(str(i) for i in range(1, 201)))
PY
start=$SECONDS
"$MS" run "$T/big.yaml" --dry-run >"$T/dry.txt"
head -1 "$T/dry.txt" | grep -Eq '^sweep [0-9a-f]{64}: 40000 tasks$' || fail "dry-run header: $(head -1 "$T/dry.txt")"
[ "$(grep -Ec '^[0-9a-f]{64}  ' "$T/dry.txt")" = 1000 ] || fail "dry-run did not list 1000 tasks"
tail -1 "$T/dry.txt" | grep -q '^\.\.\. and 39000 more tasks' || fail "dry-run summary: $(tail -1 "$T/dry.txt")"
"$MS" run "$T/big.yaml" --dry-run --all >"$T/all.txt"
[ "$(grep -Ec '^[0-9a-f]{64}  ' "$T/all.txt")" = 40000 ] || fail "--all did not list 40000 tasks"
"$MS" run "$T/big.yaml" --dry-run --json >"$T/dry.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["n_tasks"] == 40000 == len(d["tasks"]) == len({t["task_id"] for t in d["tasks"]})' "$T/dry.json" ||
    fail "--dry-run --json"
took=$((SECONDS - start))
[ "$took" -lt 60 ] || fail "three dry-runs of 40000 tasks took $took s"
ok "--dry-run of 40000 tasks: 1000 listed and a count; --all, --json list all (${took} s for three)"

# -- One task: "1 task", and a spec that sweeps nothing warns.
printf 'name: one\ndataset: fashion-mnist\nparameters: {}\n' >"$T/one.yaml"
"$MS" run "$T/one.yaml" --dry-run >"$T/one.txt" 2>"$T/one.err"
head -1 "$T/one.txt" | grep -Eq ': 1 task$' || fail "plural: $(head -1 "$T/one.txt")"
grep -q 'warning: no parameters swept: one task with every default' "$T/one.err" || fail "no warning for parameters: {}: $(cat "$T/one.err")"
ok "parameters: {} warns; '1 task'"

# -- validation_split leaving no training row: named, before any task.
printf 'name: vs\ndataset: fashion-mnist\nparameters:\n  validation_split: {values: [0.1, 0.999999]}\n' >"$T/vs.yaml"
ms_expect_exit 2 "$T/e" "$MS" run "$T/vs.yaml" --dry-run
ms_one_error_line "$T/e" 'vs.yaml: validation_split: 0\.999999 leaves no training rows \(200 samples\)$'
ms_expect_exit 2 "$T/e" "$MS" run "$T/vs.yaml" --data-dir "$T/data-vs" --quiet
[ ! -e "$T/data-vs" ] || fail "a refused spec created the data dir"
ms_expect_exit 2 "$T/e" "$MS" train --validation-split 0.999999 --epochs 1 --width 4
ms_one_error_line "$T/e" '^meshsweep: validation_split: 0\.999999 leaves no training rows \(200 samples\)$'
ok "validation_split 0.999999: exit 2 naming the key and the reason"

# -- Bad input is exit 2: a missing --train file, a device, a file as
#    --data-dir.
ms_expect_exit 2 "$T/e" "$MS" train --train "$T/nope.csv" --test "$T/nope.csv" --epochs 1
ms_one_error_line "$T/e" 'nope\.csv: cannot open'
ms_expect_exit 2 "$T/e" timeout 20 "$MS" train --train /dev/zero --test /dev/zero --epochs 1
ms_one_error_line "$T/e" '/dev/zero: .*not a regular file'
echo x >"$T/afile"
printf 'name: w8\ndataset: fashion-mnist\nparameters:\n  width: {value: 8}\n' >"$T/w8.yaml"
ms_expect_exit 2 "$T/e" "$MS" run "$T/w8.yaml" --data-dir "$T/afile" --quiet
ms_one_error_line "$T/e" 'afile: not a directory'
ok "missing --train, /dev/zero, a file as --data-dir: exit 2"

# -- Divergence: said once, "nan" without a sign.
python3 "$HERE/make_tiny_idx.py" csv "$T/csv" --train 100 --test 20
"$MS" train --train "$T/csv/train.csv" --test "$T/csv/test.csv" --optimizer sgd \
    --learning-rate 1e30 --epochs 3 --width 8 >"$T/div.txt" 2>&1 || true
grep -Eq '^status +diverged at epoch [0-9]+ \((train|val) loss (nan|inf|-inf)\)$' "$T/div.txt" || fail "divergence line: $(grep status "$T/div.txt")"
grep -q 'diverged: diverged' "$T/div.txt" && fail "'diverged' repeated"
grep -q -- '-nan' "$T/div.txt" && fail "'-nan' printed: $(cat "$T/div.txt")"
ok "divergence: 'diverged at epoch N (... loss nan)', no '-nan'"

# -- A swept optimizer: its own column, its own analysis groups; CSV with
#    --analyze keeps stdout pure CSV.
cat >"$T/opt.yaml" <<'Y'
name: opt
dataset: fashion-mnist
parameters:
  optimizer:     {values: [adam, sgd]}
  hidden_layers: {values: [1, 2]}
  width:         {value: 8}
  epochs:        {value: 1}
  batch_size:    {value: 50}
Y
"$MS" run "$T/opt.yaml" --data-dir "$T/data" --workers 2 --quiet --analyze >"$T/opt.txt" 2>"$T/opt.err"
head -1 "$T/opt.txt" | grep -Eq '^task +activation +layers +width +optimizer +seed ' || fail "no optimizer column: $(head -1 "$T/opt.txt")"
grep -q '^relu, width 8, optimizer adam$' "$T/opt.txt" || fail "no adam group: $(cat "$T/opt.txt")"
grep -q '^relu, width 8, optimizer sgd$' "$T/opt.txt" || fail "no sgd group"
"$MS" run "$T/opt.yaml" --data-dir "$T/data" --quiet --format csv --analyze >"$T/opt.csv" 2>"$T/opt-csv.err"
grep -q 'Analysis' "$T/opt.csv" && fail "analysis text in the CSV on stdout"
grep -q 'Analysis of 4 result rows' "$T/opt-csv.err" || fail "no analysis on stderr with --format csv"
python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert len(rows) == 5 and all(len(r) == len(rows[0]) for r in rows), rows
' "$T/opt.csv" || fail "stdout is not a CSV of 4 rows"
ok "optimizer sweep: a column and a group per optimizer; csv --analyze: stdout is CSV"

# -- A network too large for the pool.
printf 'name: big\ndataset: fashion-mnist\nparameters:\n  hidden_sizes: {value: [65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536]}\n' >"$T/huge.yaml"
ms_expect_exit 2 "$T/e" "$MS" run "$T/huge.yaml" --dry-run
ms_one_error_line "$T/e" 'parameters\.hidden_sizes: network has [0-9]+ parameters, more than the pool limit 2147483648'
printf 'name: w\ndataset: fashion-mnist\nparameters:\n  width: {values: [2.5]}\n' >"$T/w.yaml"
ms_expect_exit 2 "$T/e" "$MS" run "$T/w.yaml" --dry-run
ms_one_error_line "$T/e" 'width must be an integer, not the non-integral number 2\.5 '
ok "8 x 65536 refused by max_params; 'not the non-integral number 2.5'"
