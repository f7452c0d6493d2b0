#!/usr/bin/env bash
# ms_cli_csv_iris_test - CSV datasets as users have them (issue 15, item 7;
# DESIGN.md "Sweep specification", the dataset mapping). An iris-like CSV
# (150 rows, 3 classes named setosa/versicolor/virginica, a quoted header
# with spaces, quoted fields, CRLF line ends, generated here with a fixed
# seed from the real iris class means and deviations):
#   1. `meshsweep train --file iris.csv --label species` (the 2015 80/20
#      split) and with --train/--test files: status ok, test accuracy at
#      least 0.8, the classes in sorted order in the --json row;
#   2. a CSV with a missing value is refused, exit 2, one line naming the
#      file, the line, the row and the column; --missing mean trains it;
#   3. a pool of two meshsweepd (--no-beacon, --peer, loopback): a spec
#      with {file: iris.csv, label: species, split: 0.2} is submitted to
#      node 1 (the client uploads the file), node 2 fetches it by hash;
#      the tasks finish (bounded wait), both nodes ran some and hold the
#      same table, each row is ok with test accuracy >= 0.8 and carries
#      the classes (every node parsed the same bytes the same way);
#   4. the same spec over the missing-value CSV is refused at submission
#      naming the file as the spec names it, the row and the column, a bad
#      dataset key with its key path, and
#      nothing is stored (the node still lists one sweep).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"

python3 - "$T" <<'PY'
import random, sys
d = sys.argv[1]
rng = random.Random(2015)
# Fisher's iris: per-class means and standard deviations of the four
# measurements (cm).
means = {"setosa": (5.01, 3.43, 1.46, 0.25),
         "versicolor": (5.94, 2.77, 4.26, 1.33),
         "virginica": (6.59, 2.97, 5.55, 2.03)}
sds = {"setosa": (0.35, 0.38, 0.17, 0.11),
       "versicolor": (0.52, 0.31, 0.47, 0.20),
       "virginica": (0.64, 0.32, 0.55, 0.27)}
rows = []
for sp in ("virginica", "setosa", "versicolor"):
    for _ in range(50):
        rows.append([round(max(0.1, rng.gauss(m, s)), 1)
                     for m, s in zip(means[sp], sds[sp])] + [sp])
rng.shuffle(rows)
header = '"sepal length","sepal width","petal length","petal width",species'

def line(i, r):
    f = [str(v) for v in r[:4]]
    if i % 7 == 0:
        f[1] = '"%s"' % f[1]          # a quoted number
    sp = '"%s"' % r[4] if i % 3 == 0 else r[4]
    return ",".join(f + [sp])

def write(name, rs, missing_at=None):
    with open("%s/%s" % (d, name), "w", newline="") as out:
        out.write(header + "\r\n")
        for i, r in enumerate(rs):
            text = line(i, r)
            if i == missing_at:        # sepal width left empty
                parts = text.split(",")
                parts[1] = ""
                text = ",".join(parts)
            out.write(text + "\r\n")

write("iris.csv", rows)
write("iris-train.csv", rows[:120])
write("iris-test.csv", rows[120:])
write("missing.csv", rows, missing_at=41)   # data row 42: row 43, line 43
PY
head -3 "$T/iris.csv" | grep -q '^"sepal length","sepal width"' || fail "no iris file"

TRAIN=(--epochs 40 --width 16 --batch-size 8 --learning-rate 0.01 --quiet)

# check_row FILE - a train --json row: ok, accuracy >= 0.8, the classes.
check_row() {
    python3 - "$1" <<'PY' || fail "train row $1 (above)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "ok", r["status"]
assert r["test_accuracy"] >= 0.8, r["test_accuracy"]
assert r["classes"] == ["setosa", "versicolor", "virginica"], r.get("classes")
print("test accuracy %.4f" % r["test_accuracy"])
PY
}

# ---- 1. meshsweep train: one file split 80/20, and a train/test pair ----
"$MS" train --file "$T/iris.csv" --label species "${TRAIN[@]}" --json \
    >"$T/split.json" 2>"$T/split.err" || fail "train --file: $(cat "$T/split.err")"
acc=$(check_row "$T/split.json")
ok "train --file iris.csv --label species (80/20): $acc"
"$MS" train --train "$T/iris-train.csv" --test "$T/iris-test.csv" \
    --label species "${TRAIN[@]}" --json >"$T/pair.json" 2>"$T/pair.err" ||
    fail "train --train/--test: $(cat "$T/pair.err")"
acc=$(check_row "$T/pair.json")
ok "train --train/--test with string labels: $acc"
"$MS" train --file "$T/iris.csv" --label-index 4 "${TRAIN[@]}" >"$T/text.out" ||
    fail "train --label-index 4"
grep -q '^classes        setosa, versicolor, virginica$' "$T/text.out" ||
    fail "no classes line: $(cat "$T/text.out")"
ok "train --label-index 4 prints the classes"

# The class names travel with the trained network: ONNX metadata_props
# and the native file's metadata.
"$MS" train --file "$T/iris.csv" --label species "${TRAIN[@]}" --save "$T/iris.onnx" >/dev/null ||
    fail "train --save iris.onnx"
"$MS" train --file "$T/iris.csv" --label species "${TRAIN[@]}" --save "$T/iris.weights" >/dev/null ||
    fail "train --save iris.weights"
/usr/bin/python3 - "$T/iris.onnx" "$T/iris.weights" <<'PY' || fail "the saved networks do not carry the classes"
import json, sys
import onnx
m = onnx.load(sys.argv[1])
props = {p.key: p.value for p in m.metadata_props}
assert json.loads(props["classes"]) == ["setosa", "versicolor", "virginica"], props
raw = open(sys.argv[2], "rb").read()
assert b'"classes":["setosa","versicolor","virginica"]' in raw
PY
ok "the saved ONNX and native networks carry the class names"

# ---- 2. a missing value: refused naming row and column, or filled ----
ms_expect_exit 2 "$T/e" "$MS" train --file "$T/missing.csv" --label species --epochs 1
ms_one_error_line "$T/e" \
    'missing\.csv:43: row 43, column "sepal width": missing value .*set missing: zero or mean'
ok "missing value refused: $(cat "$T/e")"
"$MS" train --file "$T/missing.csv" --label species --missing mean "${TRAIN[@]}" \
    --json >"$T/mean.json" || fail "train --missing mean"
acc=$(check_row "$T/mean.json")
ok "train --missing mean: $acc"

# ---- 3. a pool: submit to node 1 (the client uploads the file); node 2
# fetches it by hash and parses the same bytes with the spec's options ----
[ -x "$MSD" ] || { echo "meshsweepd not built: pool part skipped"; exit 0; }
pool_lo_ports 2
for k in 1 2; do
    pool_start_lo "$k" --open-pool="csv-$$" --workers 1 "${POOL_TIMES[@]}"
done
pool_wait_alive 10 1 1 2 || fail "the two nodes did not link"
cat >"$T/iris.yaml" <<Y
name: iris-depth
dataset: {file: $T/iris.csv, label: species, split: 0.2}
keep_weights: none
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4]}
  width:         {value: 16}
  batch_size:    {value: 8}
  learning_rate: {value: 0.01}
  epochs:        {value: 40}
Y
sweep=$(pool_submit 1 "$T/iris.yaml")
any_finished() { pool_finished 1 "$1" || pool_finished 2 "$1"; }
ms_wait_until 150 any_finished "$sweep" || fail "the iris sweep did not finish in 150 s"
ms_wait_until 20 pool_same_digest "$sweep" 1 2 || fail "the two nodes' tables differ"
pool_rows_json 1 "$sweep" "$T/rows.json"
python3 - "$T/rows.json" <<'PY' || fail "pool rows (above)"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 8, "%d rows" % len(rows)
for r in rows:
    assert r["status"] == "ok", r
    assert r["test_accuracy"] >= 0.8, r["test_accuracy"]
    assert r["classes"] == ["setosa", "versicolor", "virginica"], r.get("classes")
nodes = {r["node_id"] for r in rows}
assert len(nodes) == 2, "rows from %d node(s)" % len(nodes)
print("test accuracy %.4f..%.4f" % (min(r["test_accuracy"] for r in rows),
                                    max(r["test_accuracy"] for r in rows)))
PY
ok "two-node pool: 8 tasks on the uploaded iris CSV, rows from both nodes, one table"

# ---- 4. refused at submission, nothing stored ----
sed "s#$T/iris.csv#$T/missing.csv#" "$T/iris.yaml" >"$T/missing.yaml"
ms_expect_exit 2 "$T/e" "$MS" submit "$T/missing.yaml" --node "${POOL_API[1]}"
grep -Eq 'missing\.csv:43: row 43, column "sepal width": missing value' "$T/e" ||
    fail "submit of the missing-value CSV: $(cat "$T/e")"
grep -q 'blobs/' "$T/e" && fail "the error names the node's blob path: $(cat "$T/e")"
ok "submit refused the missing value: $(cat "$T/e")"
sed 's#split: 0.2#split: 0.2, missing: drop#' "$T/iris.yaml" >"$T/badkey.yaml"
ms_expect_exit 2 "$T/e" "$MS" submit "$T/badkey.yaml" --node "${POOL_API[1]}"
grep -q 'dataset.missing: must be error, zero or mean' "$T/e" ||
    fail "bad dataset.missing: $(cat "$T/e")"
ok "submit refused dataset.missing: drop with its key path"
n=$(pool_curl 1 /api/v1/sweeps | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len(d["sweeps"] if isinstance(d, dict) else d))')
[ "$n" = 1 ] || fail "the node lists $n sweeps after the refusals, not 1"
ok "nothing stored by the refused submissions"
