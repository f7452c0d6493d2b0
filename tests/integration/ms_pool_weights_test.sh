#!/usr/bin/env bash
# ms_pool_weights_test - a pool's kept weights, given to a user: a
# one-node pool (meshsweepd --open-pool --no-beacon) trains a sweep with
# keep_weights: all; GET /api/v1/tasks/{id}/weights?format=native is the
# kept blob (its BLAKE2b-256 is the row's weights_blob); `meshsweep weights
# TASK --out t.onnx` writes an ONNX file that passes the checker, carries
# the task id, and whose graph (numpy, onnx_eval.py) gives the row's test
# accuracy; predict on the native file gives it too. A task whose sweep
# keeps nothing answers 404 saying so; a bad format, 400.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
PY=/usr/bin/python3
$PY -c 'import onnx, numpy' 2>/dev/null ||
    { echo "python3-onnx or python3-numpy not installed: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 300
D=$T/datasets/fashion-mnist
ms_start_daemon "$T/node" --workers 1 --no-beacon --open-pool \
    --mesh-port "$(ms_free_port)"

cat >"$T/kept.yaml" <<'Y'
name: kept
dataset: fashion-mnist
keep_weights: all
parameters:
  hidden_layers: {values: [1, 2]}
  width:         {value: 16}
  activation:    {value: tanh}
  scale:         {value: standard}
  epochs:        {value: 3}
  batch_size:    {value: 50}
Y
cat >"$T/none.yaml" <<'Y'
name: unkept
dataset: fashion-mnist
keep_weights: none
parameters:
  hidden_layers: {value: 1}
  width:         {value: 8}
  epochs:        {value: 1}
Y
kept=$("$MS" submit "$T/kept.yaml" 2>/dev/null)
unkept=$("$MS" submit "$T/none.yaml" 2>/dev/null)
ms_wait_until 120 ms_sweep_finished "$kept" || fail "sweep $kept did not finish"
ms_wait_until 60 ms_sweep_finished "$unkept" || fail "sweep $unkept did not finish"
"$MS" results "$kept" --format json >"$T/kept.json"
"$MS" results "$unkept" --format json >"$T/unkept.json"
task=$(ms_json_get "$T/kept.json" 'd[1]["task_id"]')
acc=$(ms_json_get "$T/kept.json" 'repr(d[1]["test_accuracy"])')
blob=$(ms_json_get "$T/kept.json" 'd[1]["weights_blob"]')
[ ${#blob} = 64 ] || fail "the row names no weights_blob"

"$MS" weights "${task:0:12}" --out "$T/t.weights" >"$T/w1.out"
grep -q "wrote .*t.weights (native" "$T/w1.out" || fail "weights: $(cat "$T/w1.out")"
python3 - "$T/t.weights" "$blob" <<'PY'
import hashlib, sys
got = hashlib.blake2b(open(sys.argv[1], "rb").read(), digest_size=32).hexdigest()
assert got == sys.argv[2], "native bytes hash to %s, the row's weights_blob is %s" % (got, sys.argv[2])
PY
ok "format=native is the kept blob (its hash is the row's weights_blob)"

"$MS" weights "$task" --out "$T/t.onnx" >"$T/w2.out"
$PY "$HERE/onnx_eval.py" "$T/t.onnx" "$D/t10k-images-idx3-ubyte.gz" \
    "$D/t10k-labels-idx1-ubyte.gz" "$acc" >"$T/eval.out" ||
    fail "the pool's ONNX file does not give the row's accuracy $acc"
$PY - "$T/t.onnx" "$task" <<'PY'
import json, sys, onnx
m = onnx.load(sys.argv[1])
props = {e.key: e.value for e in m.metadata_props}
assert props["task"] == sys.argv[2], props.get("task")
assert json.loads(props["meshsweep"])["input"]["scale"] == "standard"
PY
"$MS" predict --weights "$T/t.weights" --dataset fashion-mnist --json >"$T/pred.json"
got=$(ms_json_get "$T/pred.json" 'repr(d["accuracy"])')
python3 -c "import sys; sys.exit(abs($got - $acc) > 1e-4)" ||
    fail "predict on the kept weights: $got, the row's $acc"
ok "weights TASK --out t.onnx: checks, names the task, $(cat "$T/eval.out"); predict agrees"

utask=$(ms_json_get "$T/unkept.json" 'd[0]["task_id"]')
code=$(curl -s -o "$T/404.json" -w '%{http_code}' "$NODE/api/v1/tasks/$utask/weights?format=onnx")
[ "$code" = 404 ] || fail "a task without kept weights: HTTP $code"
grep -q 'no kept weights' "$T/404.json" || fail "404 body: $(cat "$T/404.json")"
ms_expect_exit 2 "$T/e1" "$MS" weights "$utask" --out "$T/u.onnx"
ms_one_error_line "$T/e1" "no kept weights"
[ ! -e "$T/u.onnx" ] || fail "a refused download left a file"
code=$(curl -s -o "$T/400.json" -w '%{http_code}' "$NODE/api/v1/tasks/$task/weights?format=pt")
[ "$code" = 400 ] || fail "format=pt: HTTP $code"
ok "no kept weights: 404 saying so (weights exits 2); a bad format: 400"
