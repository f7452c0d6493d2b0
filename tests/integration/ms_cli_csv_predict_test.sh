#!/usr/bin/env bash
# ms_cli_csv_predict_test - `meshsweep predict` reads a CSV file as
# training read the training CSV (the fresh-user report, problems 1 and
# 2): the weights metadata (native and ONNX, from train --save and from
# run --keep-weights) keeps the CSV schema, and predict uses it:
#   1. a test file that lacks a class scores as `train --test` scores it;
#   2. an unknown class and a misspelt one are refused, exit 2, one line
#      naming the file, the line, the row, the column and the classes;
#   3. columns in another order read the same (columns match by name);
#      a column training did not have, or a missing feature column, is
#      refused naming it; --label other than the training label refused;
#   4. a file without the label column gives the predictions only (text
#      and --json), equal to the labelled run's predictions, for a
#      classifier and for a regression;
#   5. a model with a categorical column predicts (one-hot with the
#      training categories; an unknown category refused naming it), and
#      its ONNX graph, evaluated with numpy on features built from the
#      metadata's schema, gives predict's classes;
#   6. the missing-value rule travels: a `mean` model fills a missing
#      value, an `error` model refuses it;
#   7. run --keep-weights all over a CSV spec: the kept files carry the
#      schema and predict reads an unlabelled file with it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
PY=/usr/bin/python3

python3 - "$T" <<'PY'
import random, sys
d = sys.argv[1]
rng = random.Random(2015)
means = {"setosa": (5.01, 3.43, 1.46, 0.25),
         "versicolor": (5.94, 2.77, 4.26, 1.33),
         "virginica": (6.59, 2.97, 5.55, 2.03)}
sds = {"setosa": (0.35, 0.38, 0.17, 0.11),
       "versicolor": (0.52, 0.31, 0.47, 0.20),
       "virginica": (0.64, 0.32, 0.55, 0.27)}
colour = {"setosa": "red", "versicolor": "green", "virginica": "blue"}
rows = []
for sp in ("virginica", "setosa", "versicolor"):
    for _ in range(50):
        c = colour[sp] if rng.random() < 0.7 else rng.choice(["red", "green", "blue"])
        rows.append([round(max(0.1, rng.gauss(m, s)), 1)
                     for m, s in zip(means[sp], sds[sp])] + [c, sp])
rng.shuffle(rows)
names = ["sepal length", "sepal width", "petal length", "petal width"]

def write(name, rs, cols, label=True, colour=False, sub=None):
    # cols: order of the numeric columns (indices 0..3)
    head = ['"%s"' % names[c] for c in cols] + (["colour"] if colour else [])
    if label:
        head.append("species")
    with open("%s/%s" % (d, name), "w") as out:
        out.write(",".join(head) + "\n")
        for i, r in enumerate(rs):
            f = [str(r[c]) for c in cols] + ([r[4]] if colour else [])
            if label:
                f.append('"%s"' % r[5])
            line = ",".join(f)
            if sub:
                line = sub(i, line)
            out.write(line + "\n")

plain = [0, 1, 2, 3]
write("iris.csv", rows, plain)
write("nosetosa.csv", [r for r in rows if r[5] != "setosa"], plain)
write("zzz.csv", rows, plain, sub=lambda i, l: l.replace('"setosa"', '"zzz"'))
write("typo.csv", rows, plain, sub=lambda i, l: l.replace('"virginica"', '"virginia"'))
write("swapped.csv", rows, [1, 0, 2, 3])
write("nolabel.csv", rows, plain, label=False)
write("nolabel-swapped.csv", rows, [3, 2, 1, 0], label=False)
write("colour.csv", rows, plain, colour=True)
write("colour-nolabel.csv", rows, plain, colour=True, label=False)
write("colour-purple.csv", rows, plain, colour=True,
      sub=lambda i, l: ",".join(l.split(",")[:4] + ["purple"] + l.split(",")[5:])
      if i == 6 else l)
write("missing.csv", rows, plain,
      sub=lambda i, l: ",".join([""] + l.split(",")[1:]) if i == 9 else l)
with open("%s/extra.csv" % d, "w") as out:
    out.write('"sepal length","sepal width","petal length","petal width",species,id\n')
    for i, r in enumerate(rows):
        out.write(",".join(str(v) for v in r[:4]) + ',"%s",%d\n' % (r[5], i))
with open("%s/short.csv" % d, "w") as out:
    out.write('"sepal length","petal length","petal width",species\n')
    for r in rows:
        out.write("%s,%s,%s,%s\n" % (r[0], r[2], r[3], r[5]))
# Regression: y = petal length from the other three.
with open("%s/regr.csv" % d, "w") as out, open("%s/regr-nolabel.csv" % d, "w") as nl:
    out.write("a,b,c,y\n")
    nl.write("c,a,b\n")
    for r in rows:
        out.write("%s,%s,%s,%s\n" % (r[0], r[1], r[3], r[2]))
        nl.write("%s,%s,%s\n" % (r[3], r[0], r[1]))
PY

TRAIN=(--epochs 30 --hidden-layers 2 --width 16 --batch-size 8 --learning-rate 0.01 --quiet)

# acc_of JSON - the accuracy of a predict --json document.
acc_of() { ms_json_get "$1" 'repr(d["accuracy"])'; }
# same A B - A and B agree to 1e-6.
same() { python3 -c "import sys; sys.exit(abs($1 - $2) > 1e-6)"; }

# ---- 1. a test file without one class: the accuracy of train --test ----
for ext in onnx weights; do
    "$MS" train --train "$T/iris.csv" --test "$T/nosetosa.csv" --label species \
        "${TRAIN[@]}" --json --save "$T/iris.$ext" >"$T/nos-$ext.json" 2>"$T/train.err" ||
        fail "train --save iris.$ext: $(cat "$T/train.err")"
    want=$(ms_json_get "$T/nos-$ext.json" 'repr(d["test_accuracy"])')
    "$MS" predict --weights "$T/iris.$ext" --data "$T/nosetosa.csv" --json >"$T/p.json" ||
        fail "predict $ext nosetosa.csv"
    got=$(acc_of "$T/p.json")
    same "$got" "$want" || fail "$ext: predict on nosetosa.csv gives $got, train --test $want"
    python3 -c "import sys; sys.exit($want < 0.8)" || fail "$ext: test accuracy $want"
    ok "$ext: a test file without setosa scores $got, as train --test does"
done
$PY - "$T/iris.onnx" "$T/iris.weights" <<'PY' || fail "the saved networks do not carry the CSV schema"
import json, sys
import onnx
m = onnx.load(sys.argv[1])
meta = json.loads({p.key: p.value for p in m.metadata_props}["meshsweep"])
raw = open(sys.argv[2], "rb").read()
for csv in (meta["csv"],):
    assert csv["columns"] == ["sepal length", "sepal width", "petal length",
                              "petal width", "species"], csv
    assert csv["label"] == 4 and csv["missing"] == "error", csv
    assert csv["categorical"] == [], csv
assert b'"csv":{"categorical":[],"columns":["sepal length"' in raw, raw[:400]
PY
ok "native and ONNX metadata carry the CSV schema"

# ---- 2. an unknown class, a misspelt class: refused ----
for ext in onnx weights; do
    ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/iris.$ext" --data "$T/zzz.csv"
    ms_one_error_line "$T/e" \
        'zzz\.csv:[0-9]+: row [0-9]+: class "zzz" \(column "species"\) is not a class of the training data \(classes: setosa, versicolor, virginica\)'
    ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/iris.$ext" --data "$T/typo.csv" --label species
    ms_one_error_line "$T/e" 'typo\.csv:[0-9]+: row [0-9]+: class "virginia" \(column "species"\)'
done
ok "unknown and misspelt classes refused: $(cat "$T/e")"

# ---- 3. columns by name ----
"$MS" predict --weights "$T/iris.onnx" --data "$T/iris.csv" --json --predictions >"$T/plain.json"
"$MS" predict --weights "$T/iris.onnx" --data "$T/swapped.csv" --json --predictions >"$T/swapped.json"
cmp -s "$T/plain.json" "$T/swapped.json" || fail "swapped columns predict differently"
ok "swapped columns read by name: the same predictions ($(acc_of "$T/plain.json"))"
ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/iris.weights" --data "$T/extra.csv"
ms_one_error_line "$T/e" 'extra\.csv:1: column 6 "id" is not a column of the training data'
ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/iris.weights" --data "$T/short.csv"
ms_one_error_line "$T/e" 'short\.csv:1: the header has no column "sepal width"'
ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/iris.weights" --data "$T/iris.csv" --label colour
ms_one_error_line "$T/e" 'trained with label column "species", not "colour"'
ok "an extra column, a missing column, another --label: exit 2, one line"

# ---- 4. no label column: predictions only ----
for ext in onnx weights; do
    "$MS" predict --weights "$T/iris.$ext" --data "$T/iris.csv" --json --predictions >"$T/lab.json"
    "$MS" predict --weights "$T/iris.$ext" --data "$T/nolabel.csv" --json >"$T/nl.json"
    "$MS" predict --weights "$T/iris.$ext" --data "$T/nolabel-swapped.csv" >"$T/nl.txt"
    python3 - "$T/lab.json" "$T/nl.json" "$T/nl.txt" <<'PY' || fail "$ext: unlabelled predictions"
import json, sys
lab = json.load(open(sys.argv[1]))
nl = json.load(open(sys.argv[2]))
assert nl["accuracy"] is None and nl["rows"] == 150, nl
assert [p["class"] for p in nl["predictions"]] == [p["class"] for p in lab["predictions"]]
assert {p["name"] for p in nl["predictions"]} <= {"setosa", "versicolor", "virginica"}
lines = open(sys.argv[3]).read().splitlines()
assert len(lines) == 150, len(lines)
for i, (l, p) in enumerate(zip(lines, lab["predictions"])):
    f = l.split()
    assert f[0] == str(i) and f[1] == str(p["class"]) and f[2] == p["name"], (l, p)
PY
done
"$MS" train --file "$T/regr.csv" --label y --loss mse "${TRAIN[@]}" --save "$T/regr.onnx" >/dev/null ||
    fail "train regression"
"$MS" predict --weights "$T/regr.onnx" --data "$T/regr.csv" --json --predictions >"$T/rl.json"
"$MS" predict --weights "$T/regr.onnx" --data "$T/regr-nolabel.csv" --json >"$T/rn.json"
python3 - "$T/rl.json" "$T/rn.json" <<'PY' || fail "regression: unlabelled predictions"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["loss"] is not None and b["loss"] is None, (a["loss"], b["loss"])
assert [p["value"] for p in a["predictions"]] == [p["value"] for p in b["predictions"]]
assert len(b["predictions"]) == 150
PY
ok "a CSV without the label column: predictions only, as the labelled run's (classifier, regression)"

# ---- 5. a categorical column ----
for ext in onnx weights; do
    "$MS" train --file "$T/colour.csv" --label species --categorical colour "${TRAIN[@]}" \
        --save "$T/col.$ext" >/dev/null || fail "train --categorical colour --save col.$ext"
    "$MS" predict --weights "$T/col.$ext" --data "$T/colour.csv" --json --predictions >"$T/col-$ext.json" ||
        fail "predict col.$ext"
    "$MS" predict --weights "$T/col.$ext" --data "$T/colour-nolabel.csv" --json >"$T/coln-$ext.json" ||
        fail "predict col.$ext unlabelled"
    ms_json_get "$T/col-$ext.json" 'd["accuracy"] >= 0.8' | grep -q True ||
        fail "col.$ext: accuracy $(acc_of "$T/col-$ext.json")"
    ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/col.$ext" --data "$T/colour-purple.csv"
    ms_one_error_line "$T/e" \
        'colour-purple\.csv:8: row 8, column "colour": category "purple" is not in the training data \(categories: blue, green, red\)'
done
cmp -s <(ms_json_get "$T/col-onnx.json" 'd["predictions"]') \
    <(ms_json_get "$T/coln-onnx.json" 'd["predictions"]') || fail "categorical: unlabelled predictions differ"
$PY - "$HERE" "$T/col.onnx" "$T/colour.csv" "$T/col-onnx.json" <<'PY' || fail "the ONNX graph does not give predict's classes"
import csv, json, sys
import numpy as np
import onnx
sys.path.insert(0, sys.argv[1])
from onnx_eval import evaluate
m = onnx.load(sys.argv[2])
meta = json.loads({p.key: p.value for p in m.metadata_props}["meshsweep"])
sc = meta["csv"]
cats = {c["column"]: c["categories"] for c in sc["categorical"]}
assert cats == {4: ["blue", "green", "red"]}, cats
rows = list(csv.reader(open(sys.argv[3])))
index = {name: k for k, name in enumerate(rows[0])}
x = []
for r in rows[1:]:
    f = []
    for j, name in enumerate(sc["columns"]):
        if j == sc["label"]:
            continue
        v = r[index[name]]
        f += [1.0 if v == c else 0.0 for c in cats[j]] if j in cats else [float(v)]
    x.append(f)
x = np.array(x, dtype=np.float32)
assert x.shape[1] == meta["input"]["features"], x.shape
onnx.checker.check_model(m, full_check=True)
out = evaluate(m, x)["probabilities"]
got = list(np.argmax(out, axis=1))
want = [p["class"] for p in json.load(open(sys.argv[4]))["predictions"]]
assert got == want, sum(a != b for a, b in zip(got, want))
labels = [meta["classes"].index(r[index["species"]]) for r in rows[1:]]
print("graph accuracy %.4f" % np.mean(np.array(got) == np.array(labels)))
PY
ok "a categorical model predicts (native, ONNX); an unknown category refused; the ONNX graph agrees"

# ---- 6. the missing-value rule ----
ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/iris.onnx" --data "$T/missing.csv"
ms_one_error_line "$T/e" 'missing\.csv:11: row 11, column "sepal length": missing value'
"$MS" train --file "$T/iris.csv" --label species --missing mean "${TRAIN[@]}" \
    --save "$T/mean.onnx" >/dev/null || fail "train --missing mean"
"$MS" predict --weights "$T/mean.onnx" --data "$T/missing.csv" --json >"$T/m.json" ||
    fail "predict with a mean model on a missing value"
$PY - "$T/mean.onnx" <<'PY' || fail "mean fills not kept"
import json, sys
import onnx
m = onnx.load(sys.argv[1])
sc = json.loads({p.key: p.value for p in m.metadata_props}["meshsweep"])["csv"]
assert sc["missing"] == "mean" and len(sc["fill"]) == 4, sc
assert 5.0 < sc["fill"][0] < 7.0, sc["fill"]
PY
ok "missing values: refused by an error model, filled by a mean model ($(acc_of "$T/m.json"))"

# ---- 7. run --keep-weights: the worker's files carry the schema ----
cat >"$T/run.yaml" <<Y
name: keep-csv
dataset: {file: $T/iris.csv, label: species, split: 0.2}
parameters:
  hidden_layers: {value: 1}
  width:         {value: 16}
  batch_size:    {value: 8}
  learning_rate: {value: 0.01}
  epochs:        {value: 20}
Y
"$MS" run "$T/run.yaml" --data-dir "$T/run-data" --keep-weights all \
    --weights-dir "$T/kept" --quiet --json >"$T/run.json" 2>"$T/run.err" ||
    fail "run --keep-weights: $(cat "$T/run.err")"
task=$(ms_json_get "$T/run.json" "d[0]['task_id']")
for ext in onnx weights; do
    f="$T/kept/$task.$ext"
    [ -f "$f" ] || fail "run --keep-weights: no $f: $(ls "$T/kept")"
    "$MS" predict --weights "$f" --data "$T/nosetosa.csv" --predictions --json >"$T/k.json" ||
        fail "predict $f nosetosa.csv"
    "$MS" predict --weights "$f" --data "$T/nolabel-swapped.csv" --json >"$T/kn.json" ||
        fail "predict $f nolabel"
    ms_expect_exit 2 "$T/e" "$MS" predict --weights "$f" --data "$T/zzz.csv"
    ms_one_error_line "$T/e" 'class "zzz"'
done
ok "run --keep-weights: the kept networks read CSV with the training schema"

# ---- 8. a file of a newer numerics version: predicted, with a note ----
$PY - "$T/iris.onnx" "$T/n99.onnx" <<'PY' || fail "cannot edit the ONNX metadata"
import json, sys
import onnx
m = onnx.load(sys.argv[1])
for p in m.metadata_props:
    if p.key == "meshsweep":
        meta = json.loads(p.value)
        meta["numerics"] = 99
        p.value = json.dumps(meta, separators=(",", ":"), sort_keys=True)
onnx.save(m, sys.argv[2])
PY
"$MS" predict --weights "$T/n99.onnx" --data "$T/iris.csv" >"$T/n99.out" 2>"$T/n99.err" ||
    fail "predict n99.onnx: $(cat "$T/n99.err")"
grep -q "n99\.onnx was written by an engine of numerics version 99, this one is version [0-9]" "$T/n99.err" ||
    fail "no numerics note: $(cat "$T/n99.err")"
ok "numerics 99: $(cat "$T/n99.err")"

# ---- 9. an IDX label out of range names the label file ----
ms_tiny_dataset --train 200 --test 50 --side 6
D=$MESHSWEEP_DATASETS_DIR/fashion-mnist
"$MS" train --dataset fashion-mnist --epochs 1 --width 8 --quiet --save "$T/img.weights" >/dev/null ||
    fail "train fashion-mnist tiny"
python3 - "$D/t10k-labels-idx1-ubyte.gz" "$T/bad-labels.gz" <<'PY'
import gzip, sys
b = bytearray(gzip.open(sys.argv[1]).read())
b[8 + 4] = 200
gzip.open(sys.argv[2], "wb").write(bytes(b))
PY
ms_expect_exit 2 "$T/e" "$MS" predict --weights "$T/img.weights" \
    --data "$D/t10k-images-idx3-ubyte.gz" --labels "$T/bad-labels.gz"
ms_one_error_line "$T/e" 'bad-labels\.gz: sample 4: label 200 out of range'
"$MS" predict --weights "$T/img.weights" --data "$T/iris.csv" >/dev/null 2>"$T/e" || true
grep -q "keeps no CSV schema" "$T/e" || fail "no note for weights without a schema: $(cat "$T/e")"
ok "an IDX label out of range names the label file; weights without a schema say so for a CSV"
