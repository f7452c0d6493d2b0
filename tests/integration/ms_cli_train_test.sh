#!/usr/bin/env bash
# ms_cli_train_test - `meshsweep train` on tiny data: one line per epoch and
# the final metrics; --json prints a result row with every DESIGN.md field;
# the same command twice gives the same weights; CSV files and explicit
# hidden sizes work.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_tiny_dataset --train 600 --test 200

"$MS" train --epochs 3 --hidden-layers 2 --width 16 --batch-size 50 \
    --learning-rate 0.01 >"$T/train.out"
n=$(grep -c '^epoch ' "$T/train.out")
[ "$n" = 3 ] || fail "expected 3 epoch lines, got $n"
grep -Eq '^epoch +1/3 +train_loss [0-9.]+ +val_loss [0-9.]+ +val_acc [0-9.]+ +[0-9.]+ s$' "$T/train.out" ||
    fail "epoch line format: $(grep '^epoch' "$T/train.out" | head -1)"
for key in status test_accuracy test_loss params s/epoch; do
    grep -q "^$key " "$T/train.out" || fail "no '$key' in the final metrics"
done
# 64 inputs -> 16 -> 16 -> 10: 64*16+16 + 16*16+16 + 16*10+10
grep -Eq '^params +1482$' "$T/train.out" || fail "params: $(grep '^params' "$T/train.out")"
ok "train prints epochs and metrics"

"$MS" train --epochs 3 --hidden-layers 2 --width 16 --batch-size 50 \
    --learning-rate 0.01 --json >"$T/row.json" 2>"$T/train.err"
grep -c '^epoch ' "$T/train.err" | grep -qx 3 || fail "--json: epoch lines belong on stderr"
python3 - "$T/row.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
fields = ["task_id", "sweep_id", "config", "node_id", "operator", "status",
          "error", "epochs", "train_seconds", "seconds_per_epoch",
          "val_accuracy", "val_loss", "test_accuracy", "test_loss", "params",
          "platform", "fingerprint", "weights_digest", "verdict",
          "verdict_revision", "counted", "curve", "grad_norms"]
missing = [f for f in fields if f not in r]
assert not missing, "missing fields %s" % missing
assert len(r["task_id"]) == 64, r["task_id"]
assert len(r["weights_digest"]) == 64
assert r["status"] == "ok", r["status"]
assert r["epochs"] == 3 and len(r["curve"]) == 3
for e in r["curve"]:
    for k in ("epoch", "train_loss", "val_loss", "val_accuracy", "seconds"):
        assert k in e, k
c = r["config"]
assert c["hidden_layers"] == 2 and c["width"] == 16, c
assert c["batch_size"] == 50 and abs(c["learning_rate"] - 0.01) < 1e-12
assert c["activation"] == "relu" and c["init"] == "he"
assert r["params"] == 1482
assert 0.0 <= r["test_accuracy"] <= 1.0
assert r["test_accuracy"] > 0.5, "tiny data is learnable: %s" % r["test_accuracy"]
assert r["verdict"] == "pending" and r["verdict_revision"] == 0
assert r["counted"] is True
# epoch 1's weight-gradient norm of each of the 3 layers
assert len(r["grad_norms"]) == 3 and all(g > 0 for g in r["grad_norms"]), r["grad_norms"]
PY
ok "train --json row has every field"
grep -Eq '^grad_norms +[0-9.e+-]+ \(layer 0\) \.\. [0-9.e+-]+ \(layer 2\), epoch 1$' "$T/train.out" ||
    fail "grad_norms line: $(grep '^grad_norms' "$T/train.out")"

"$MS" train --epochs 3 --hidden-layers 2 --width 16 --batch-size 50 \
    --learning-rate 0.01 --json >"$T/row2.json" 2>/dev/null
d1=$(ms_json_get "$T/row.json" 'd["weights_digest"]')
d2=$(ms_json_get "$T/row2.json" 'd["weights_digest"]')
[ "$d1" = "$d2" ] || fail "same config and seed gave different weights ($d1, $d2)"
"$MS" train --epochs 3 --hidden-layers 2 --width 16 --batch-size 50 \
    --learning-rate 0.01 --seed 2 --json >"$T/row3.json" 2>/dev/null
d3=$(ms_json_get "$T/row3.json" 'd["weights_digest"]')
[ "$d1" != "$d3" ] || fail "another seed gave the same weights"
ok "deterministic weights per seed"

"$MS" train --epochs 1 --hidden-sizes 16,8 --activation selu --json \
    >"$T/row4.json" 2>/dev/null
[ "$(ms_json_get "$T/row4.json" 'd["config"]["hidden_sizes"]')" = "[16, 8]" ] ||
    fail "hidden sizes: $(ms_json_get "$T/row4.json" 'd["config"]')"
[ "$(ms_json_get "$T/row4.json" 'd["config"]["init"]')" = "lecun" ] ||
    fail "selu must default to lecun init"
ok "--hidden-sizes and the activation's default init"

python3 "$HERE/make_tiny_idx.py" csv "$T/csv" --train 300 --test 100
"$MS" train --train "$T/csv/train.csv" --test "$T/csv/test.csv" \
    --label label --epochs 2 --width 8 --json >"$T/row5.json" 2>/dev/null
[ "$(ms_json_get "$T/row5.json" 'd["epochs"]')" = 2 ] || fail "CSV train"
ok "train on CSV files"

"$MS" train --epochs 3 --hidden-layers 4 --width 16 --batch-size 50 \
    --learning-rate 0.01 --architecture residual --norm batch \
    --residual-scale rezero --warmup-epochs 0.5 --clip-norm 5 --json \
    >"$T/row6.json" 2>/dev/null
python3 - "$T/row6.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["config"]
assert c["architecture"] == "residual" and c["norm"] == "batch", c
assert c["residual_scale"] == "rezero" and c["warmup_epochs"] == 0.5, c
# W, b: 64*16+16 + 3*(16*16+16) + 16*10+10; gamma, beta of the 4 normed
# inputs (16 each): 128; 3 rezero scales; running mean, var: 128
assert r["params"] == 2026 + 128 + 3 + 128, r["params"]
assert r["status"] == "ok" and r["test_accuracy"] > 0.5, r
assert len(r["grad_norms"]) == 5, r["grad_norms"]
PY
ok "a residual batch-norm rezero network with warm-up and clipping trains"
