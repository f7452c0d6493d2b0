#!/usr/bin/env bash
# ms_cli_onnx_test - the trained network, taken out: `meshsweep train
# --save x.onnx` writes a file that passes onnx.checker.check_model
# (Debian's python3-onnx) and whose graph, evaluated with numpy over its
# initializers (onnx_eval.py), gives the run's test accuracy to 1e-4, for
# every activation and input scaling; `--save x.weights` (native) and the
# ONNX file both give that accuracy through `meshsweep predict`; bad
# weights files and data of the wrong shape are refused with exit 2 and
# one line naming the file. On a 5,000-image subset of the real
# Fashion-MNIST (its full test set) when Debian's dataset-fashion-mnist is
# installed, else on the tiny synthetic set.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import onnx, numpy' 2>/dev/null ||
    { echo "python3-onnx or python3-numpy not installed: skipped"; exit 77; }
FM=/usr/share/datasets/fashion-mnist
D=$T/datasets/fashion-mnist
if [ -f "$FM/train-images-idx3-ubyte.gz" ]; then
    mkdir -p "$D"
    python3 - "$FM" "$D" 5000 <<'PY'
import gzip, shutil, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for kind, size in (("images-idx3", 784), ("labels-idx1", 1)):
    data = gzip.open("%s/train-%s-ubyte.gz" % (src, kind)).read()
    dims = data[3]
    head = bytearray(data[:4 + 4 * dims])
    struct.pack_into(">I", head, 4, n)
    with gzip.open("%s/train-%s-ubyte.gz" % (dst, kind), "wb") as f:
        f.write(bytes(head) + data[4 + 4 * dims:4 + 4 * dims + n * size])
    shutil.copy("%s/t10k-%s-ubyte.gz" % (src, kind), dst)
PY
    what="Fashion-MNIST (5,000 training images, 10,000 test images)"
else
    ms_tiny_dataset --train 1000 --test 500
    what="the tiny synthetic set"
fi
export MESHSWEEP_DATASETS_DIR=$T/datasets
IMAGES=$D/t10k-images-idx3-ubyte.gz
LABELS=$D/t10k-labels-idx1-ubyte.gz

# check NAME OPTIONS...: train twice (ONNX, native), the same weights; the
# graph outside meshsweep and predict on both files give the run's test
# accuracy.
check() {
    local name=$1
    shift
    "$MS" train --quiet --json "$@" --save "$T/$name.onnx" >"$T/$name.row" 2>"$T/$name.err" ||
        { cat "$T/$name.err" >&2; fail "$name: train --save .onnx failed"; }
    "$MS" train --quiet --json "$@" --save "$T/$name.weights" >"$T/$name.row2" 2>>"$T/$name.err" ||
        fail "$name: train --save .weights failed"
    local acc d1 d2
    acc=$(ms_json_get "$T/$name.row" 'repr(d["test_accuracy"])')
    d1=$(ms_json_get "$T/$name.row" 'd["weights_digest"]')
    d2=$(ms_json_get "$T/$name.row2" 'd["weights_digest"]')
    [ "$d1" = "$d2" ] || fail "$name: the two runs differ ($d1, $d2)"
    $PY "$HERE/onnx_eval.py" "$T/$name.onnx" "$IMAGES" "$LABELS" "$acc" \
        --config "$T/$name.row" >"$T/$name.eval" ||
        fail "$name: the ONNX graph does not give the run's accuracy"
    local f got
    for f in "$T/$name.weights" "$T/$name.onnx"; do
        "$MS" predict --weights "$f" --data "$IMAGES" --labels "$LABELS" --json >"$T/$name.pred"
        got=$(ms_json_get "$T/$name.pred" 'repr(d["accuracy"])')
        python3 -c "import sys; sys.exit(abs($got - $acc) > 1e-4)" ||
            fail "$name: predict --weights $(basename "$f"): accuracy $got, the run's $acc"
    done
    ok "$name: $(cat "$T/$name.eval"); predict agrees on both files"
}

check relu --hidden-layers 2 --width 32 --epochs 3 --learning-rate 0.003
check gelu-standard --hidden-sizes 24,16 --activation gelu --scale standard --epochs 1
check tanh-none --hidden-layers 1 --width 16 --activation tanh --scale none --epochs 1
for act in leaky_relu elu selu sigmoid linear; do
    check "$act" --hidden-layers 1 --width 16 --activation "$act" --epochs 1
done
check softmax-regression --hidden-layers 0 --epochs 1
# Residual and normalised networks, as trained (issue 15): layer norm; batch
# norm (running statistics) with rezero and 2-layer blocks with a
# remainder; plain with layer norm.
check residual-layer --architecture residual --norm layer --hidden-layers 4 --width 16 --epochs 1
check residual-batch-rezero --architecture residual --norm batch --residual-scale rezero \
    --block-layers 2 --hidden-layers 4 --width 16 --epochs 1
check plain-layer --norm layer --hidden-layers 3 --width 16 --epochs 1
ok "every network checks and reproduces its accuracy on $what"

# --predictions: one line per row, then the accuracy.
"$MS" predict --weights "$T/relu.onnx" --data "$IMAGES" --labels "$LABELS" --predictions >"$T/pred.txt"
n_rows=$(grep -cE '^[0-9]+ [0-9] [0-9.]+$' "$T/pred.txt" || true)
n_test=$(python3 -c "import gzip,struct; print(struct.unpack('>I', gzip.open('$LABELS').read()[4:8])[0])")
[ "$n_rows" = "$n_test" ] || fail "--predictions: $n_rows prediction lines for $n_test rows"
grep -q '^accuracy ' "$T/pred.txt" || fail "--predictions: no accuracy line"
ok "predict --predictions prints each row's class and probability"

# IDX images alone: unlabelled rows, the predictions only; they are the
# run's (their hits over the labels give its test accuracy).
"$MS" predict --weights "$T/relu.weights" --data "$IMAGES" --json >"$T/unlabelled.json"
acc=$(ms_json_get "$T/relu.row" 'repr(d["test_accuracy"])')
python3 - "$T/unlabelled.json" "$LABELS" "$acc" <<'PY'
import gzip, json, sys
d = json.load(open(sys.argv[1]))
labels = gzip.open(sys.argv[2]).read()[8:]
assert d["accuracy"] is None and d["rows"] == len(labels), (d["accuracy"], d["rows"])
hits = sum(p["class"] == l for p, l in zip(d["predictions"], labels))
got = hits / len(labels)
assert abs(got - float(sys.argv[3])) <= 1e-4, "predictions give %s, the run %s" % (got, sys.argv[3])
PY
ok "predict on IDX images alone prints the predictions, which are the run's"

# A regression network on CSV data (mse, standard scaling): its graph ends
# at "logits" [N, 1], which give predict's values.
python3 - "$T" <<'PY'
import random, sys
r = random.Random(1)
for name, n in (("rtrain.csv", 400), ("rtest.csv", 100)):
    with open("%s/%s" % (sys.argv[1], name), "w") as f:
        f.write("a,b,c,label\n")
        for i in range(n):
            a, b, c = [r.uniform(-1, 1) for _ in range(3)]
            f.write("%f,%f,%f,%f\n" % (a, b, c, 0.5 * a - b + 0.25 * c + 0.013))
PY
"$MS" train --train "$T/rtrain.csv" --test "$T/rtest.csv" --loss mse --hidden-layers 1 \
    --width 8 --epochs 3 --scale standard --save "$T/reg.onnx" --quiet >/dev/null
"$MS" predict --weights "$T/reg.onnx" --data "$T/rtest.csv" --predictions --json >"$T/reg.json"
$PY - "$T/reg.onnx" "$T/rtest.csv" "$T/reg.json" "$HERE" <<'PY'
import json, sys
import numpy as np, onnx
sys.path.insert(0, sys.argv[4])
from onnx_eval import evaluate
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
assert [o.name for o in m.graph.output] == ["logits"]
x = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1, dtype=np.float32)[:, :3].copy()
got = evaluate(m, x)["logits"].ravel()
want = np.array([p["value"] for p in json.load(open(sys.argv[3]))["predictions"]])
assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (got[:3], want[:3])
PY
ok "a regression network: its graph's output is predict's value for every row"

# Bad input: exit 2, one line naming the file and what is wrong.
head -c 300 "$T/relu.weights" >"$T/cut.weights"
ms_expect_exit 2 "$T/e1" "$MS" predict --weights "$T/cut.weights" --data "$IMAGES" --labels "$LABELS"
ms_one_error_line "$T/e1" "cut\.weights: .*truncated"
$PY - "$T/other.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
save(helper.make_model(g), sys.argv[1])
PY
ms_expect_exit 2 "$T/e2" "$MS" predict --weights "$T/other.onnx" --data "$IMAGES" --labels "$LABELS"
ms_one_error_line "$T/e2" "other\.onnx: .*not written by meshsweep"
python3 "$HERE/make_tiny_idx.py" idx "$T/small" --train 20 --test 20 --side 6
ms_expect_exit 2 "$T/e3" "$MS" predict --weights "$T/relu.onnx" \
    --data "$T/small/t10k-images-idx3-ubyte.gz" --labels "$T/small/t10k-labels-idx1-ubyte.gz"
ms_one_error_line "$T/e3" "t10k-images-idx3-ubyte\.gz: 36 features per row, the network of .*relu\.onnx takes [0-9]+"
ms_expect_exit 2 "$T/e4" "$MS" predict --weights "$T/none.onnx" --data "$IMAGES" --labels "$LABELS"
ms_one_error_line "$T/e4" "none\.onnx: "
ok "truncated weights, a foreign ONNX file, data of the wrong width, a missing file: exit 2, one line"

# meshsweep run --keep-weights all --weights-dir DIR: each task's weights
# as TASK.weights and TASK.onnx; the ONNX graph and predict on the native
# file give the row's test accuracy.
cat >"$T/run.yaml" <<'Y'
name: keep
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2]}
  width:         {value: 16}
  epochs:        {value: 1}
Y
"$MS" run "$T/run.yaml" --data-dir "$T/run-data" --keep-weights all \
    --weights-dir "$T/kept" --quiet --json >"$T/run.json"
n_rows=$(ms_json_get "$T/run.json" 'len(d)')
[ "$n_rows" = 2 ] || fail "run: $n_rows rows"
for k in 0 1; do
    task=$(ms_json_get "$T/run.json" "d[$k]['task_id']")
    acc=$(ms_json_get "$T/run.json" "repr(d[$k]['test_accuracy'])")
    [ -f "$T/kept/$task.weights" ] && [ -f "$T/kept/$task.onnx" ] ||
        fail "run --keep-weights: no files for task ${task:0:12}: $(ls "$T/kept")"
    $PY "$HERE/onnx_eval.py" "$T/kept/$task.onnx" "$IMAGES" "$LABELS" "$acc" >/dev/null ||
        fail "run --keep-weights: task ${task:0:12}: the ONNX graph does not give $acc"
    "$MS" predict --weights "$T/kept/$task.weights" --data "$IMAGES" --labels "$LABELS" --json >"$T/kp.json"
    got=$(ms_json_get "$T/kp.json" 'repr(d["accuracy"])')
    python3 -c "import sys; sys.exit(abs($got - $acc) > 1e-4)" ||
        fail "run --keep-weights: predict gives $got, the row $acc"
done
ok "run --keep-weights all writes each task's network; both files reproduce the rows"

# --keep-weights best, the same sweep resumed (nothing trains): only the
# network of the row with the best val_accuracy (the spec's default metric).
"$MS" run "$T/run.yaml" --data-dir "$T/run-data" --keep-weights best \
    --weights-dir "$T/best" --json >"$T/best.json" 2>"$T/best.err"
want=$(ms_json_get "$T/best.json" 'max((r for r in d if r["status"] == "ok"), key=lambda r: r["val_accuracy"])["task_id"]')
got=$(ls "$T/best")
[ "$got" = "$(printf '%s.onnx\n%s.weights' "$want" "$want")" ] ||
    fail "run --keep-weights best: kept '$got', want the network of ${want:0:12}"
grep -q "best network: task ${want:0:12}" "$T/best.err" ||
    fail "run --keep-weights best: no line naming it: $(cat "$T/best.err")"
# A directory where the mode goes (the option's old form): exit 2, one line.
set +e
"$MS" run "$T/run.yaml" --data-dir "$T/run-data" --keep-weights "$T/kept" \
    >/dev/null 2>"$T/kw.err"
rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$T/kw.err")" = 1 ] && grep -q "not none, best or all" "$T/kw.err" ||
    fail "run --keep-weights DIR: exit $rc, $(cat "$T/kw.err")"
ok "run --keep-weights best keeps only the best row's network; a directory there is refused"
