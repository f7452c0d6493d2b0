#!/usr/bin/env bash
# ms_cli_fresh_report_test - what a new user's report of the issue-15
# features found in `meshsweep train` and `run --dry-run`, each now
# refused before any training with one line (exit 2), or said clearly:
# batch norm over one row (batch_size 1, or a last minibatch of 1 row);
# contradictory options (--hidden-sizes with --hidden-layers/--width, an
# empty --hidden-sizes, --label with --label-index, a category twice, the
# residual keys with a plain network); a warm-up longer than training (a
# warning);
# --save to a path that cannot be written, or of a noop run; a diverged
# run with --save (exit 1); regression accuracy printed "-";
# the residual width message naming the two layers; --dry-run lines that
# tell the depth keys apart. Tiny CSV files: fast.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
python3 "$HERE/make_tiny_idx.py" csv "$T/csv" --train 100 --test 20
cd "$T"
D=(--train csv/train.csv --test csv/test.csv --epochs 1 --width 8)

# refused CMD... PATTERN: exit 2, one error line matching PATTERN, and
# nothing trained (no epoch line, no "training" line on stdout).
refused() {
    local pattern=${*: -1}
    local args=("${@:1:$#-1}")
    ms_expect_exit 2 "$T/r.err" "$MS" train "${args[@]}"
    ms_one_error_line "$T/r.err" "$pattern"
    [ ! -s "$T/r.err.stdout" ] || fail "trained before refusing ${args[*]}: $(cat "$T/r.err.stdout")"
}

# -- Batch norm over one row.
refused "${D[@]}" --norm batch --batch-size 1 '^meshsweep: --batch-size: norm: batch needs batch_size >= 2'
"$MS" train "${D[@]}" --norm layer --batch-size 1 --quiet >/dev/null ||
    fail "layer norm with batch_size 1 was refused"
# 100 rows, validation_split 0.1: 90 training rows, 89 + 1.
refused "${D[@]}" --norm batch --batch-size 89 'the training split has 90 rows; with batch_size 89 its last minibatch has 1 row'
"$MS" train "${D[@]}" --norm batch --batch-size 88 --quiet >/dev/null ||
    fail "batch norm with a last minibatch of 2 rows was refused"
ok "norm batch: batch_size 1 and a last minibatch of 1 row refused (exit 2)"

# -- Contradictory network and CSV options, as a spec refuses them.
both='^meshsweep: --hidden-sizes: give either --hidden-sizes or --hidden-layers/--width, not both$'
refused --train csv/train.csv --test csv/test.csv --epochs 1 --hidden-sizes 16,8 --hidden-layers 3 "$both"
refused --train csv/train.csv --test csv/test.csv --epochs 1 --hidden-layers 3 --hidden-sizes 16,8 "$both"
refused --train csv/train.csv --test csv/test.csv --epochs 1 --hidden-sizes 16,8 --width 5 "$both"
refused --train csv/train.csv --test csv/test.csv --epochs 1 --hidden-sizes "" '^meshsweep: --hidden-sizes: needs at least one size'
refused --train csv/train.csv --test csv/test.csv --epochs 1 --hidden-sizes= '^meshsweep: --hidden-sizes: needs at least one size'
refused "${D[@]}" --label label --label-index 0 '^meshsweep: --label-index: give either --label or --label-index, not both$'
refused "${D[@]}" --categorical f1,f1 "^meshsweep: --categorical: 'f1' is listed twice$"
refused "${D[@]}" --residual-scale rezero "^meshsweep: --residual-scale: 'rezero' has no effect with architecture: plain"
refused "${D[@]}" --architecture plain --block-layers 2 '^meshsweep: --block-layers: 2 has no effect with architecture: plain'
"$MS" train "${D[@]}" --architecture residual --hidden-layers 3 --residual-scale rezero \
    --block-layers 2 --quiet >/dev/null || fail "a residual rezero network was refused"
ok "contradictory options refused as a spec refuses them"

cat >"$T/plain.yaml" <<'Y'
name: plain-rezero
dataset: {train: csv/train.csv, test: csv/test.csv}
parameters:
  residual_scale: {value: rezero}
Y
ms_expect_exit 2 "$T/p.err" "$MS" run "$T/plain.yaml" --dry-run
ms_one_error_line "$T/p.err" 'parameters\.residual_scale: .rezero. has no effect with architecture: plain'
ok "a spec's residual_scale with a plain network is refused"

# -- Warm-up longer than training: one warning line (CLI and spec).
"$MS" train "${D[@]}" --warmup-epochs 5 --quiet >/dev/null 2>"$T/w.err" || fail "warm-up run failed"
ms_one_error_line "$T/w.err" '^meshsweep: warning: --warmup-epochs 5 is more than --epochs 1: the learning rate never leaves warm-up$'
ok "--warmup-epochs over --epochs: one warning line"

# -- --save is checked before training.
refused "${D[@]}" --save /nonexistent/dir/x.onnx '^meshsweep: --save: /nonexistent/dir/x\.onnx: no directory /nonexistent/dir'
refused "${D[@]}" --save "$T" "^meshsweep: --save: $T: is a directory"
refused "${D[@]}" --save "" '^meshsweep: --save: needs a file name$'
refused "${D[@]}" --kind noop --save n.onnx '^meshsweep: --save: a noop run trains no network to save$'
[ ! -e n.onnx ] || fail "a noop run wrote n.onnx"
ms_expect_exit 1 "$T/div.err" "$MS" train --train csv/train.csv --test csv/test.csv --optimizer sgd \
    --learning-rate 1e30 --epochs 3 --width 8 --save div.onnx
ms_one_error_line "$T/div.err" '^meshsweep: --save: not written: the run is diverged$'
grep -Eq '^status +diverged at epoch' "$T/div.err.stdout" || fail "no diverged status: $(cat "$T/div.err.stdout")"
[ ! -e div.onnx ] || fail "a diverged run wrote div.onnx"
ok "--save: a bad path and a noop run refused before training; diverged exits 1"

# -- Regression: no accuracy.
python3 - "$T" <<'EOF'
import random, sys
random.seed(1)
for name, n in (("rtrain.csv", 80), ("rtest.csv", 20)):
    with open(sys.argv[1] + "/" + name, "w") as f:
        f.write("a,b,y\n")
        for _ in range(n):
            a, b = random.random(), random.random()
            f.write("%f,%f,%f\n" % (a, b, 2 * a - b))
EOF
"$MS" train --train rtrain.csv --test rtest.csv --label y --loss mse --epochs 2 --width 8 >"$T/reg.txt"
grep -qx 'test_accuracy  -' "$T/reg.txt" || fail "regression test_accuracy: $(cat "$T/reg.txt")"
grep -qx 'val_accuracy   -' "$T/reg.txt" || fail "regression val_accuracy: $(cat "$T/reg.txt")"
grep -q 'val_acc -  ' "$T/reg.txt" || fail "regression epoch line: $(cat "$T/reg.txt")"
! grep -q nan "$T/reg.txt" || fail "regression output has nan: $(cat "$T/reg.txt")"
ok "regression: accuracy printed '-', not nan"

# -- Clearer messages.
refused --train csv/train.csv --test csv/test.csv --epochs 1 --architecture residual --hidden-sizes 32,16,16 \
    '^meshsweep: --hidden-sizes: hidden layer 0 has 32 units, hidden layer 1 has 16: a residual block needs equal widths$'
cat >"$T/norms.yaml" <<'Y'
name: norms
dataset: {train: csv/train.csv, test: csv/test.csv}
parameters:
  architecture: {value: residual}
  hidden_layers: {value: 2}
  width: {value: 8}
  epochs: {value: 1}
  warmup_epochs: {value: 3}
  norm: {values: [none, layer, batch]}
  residual_scale: {values: [1, rezero]}
Y
"$MS" run "$T/norms.yaml" --dry-run >"$T/dry.txt" 2>"$T/dry.err"
[ "$(grep -cE '^[0-9a-f]{64}  ' "$T/dry.txt")" = 6 ] || fail "dry run: $(cat "$T/dry.txt")"
[ "$(grep -E '^[0-9a-f]{64}  ' "$T/dry.txt" | cut -c67- | sort -u | wc -l)" = 6 ] ||
    fail "--dry-run shows distinct tasks alike: $(cat "$T/dry.txt")"
grep -qE '  relu 2x8 seed 1 residual norm batch residual_scale rezero$' "$T/dry.txt" ||
    fail "--dry-run label: $(cat "$T/dry.txt")"
ms_one_error_line "$T/dry.err" 'norms\.yaml: warning: warmup_epochs 3 is more than epochs 1 \(6 tasks\): the learning rate never leaves warm-up$'
ok "--dry-run lines show norm, architecture and residual_scale; the spec's warm-up warning"
