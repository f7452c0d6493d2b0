#!/usr/bin/env bash
# ms_cli_fashion_test - `meshsweep train` on the real Fashion-MNIST of
# Debian's dataset-fashion-mnist (skipped when it is not installed): one
# epoch of a small network reaches a sane test accuracy, quickly.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
unset MESHSWEEP_DATASETS_DIR
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
    { echo "dataset-fashion-mnist not installed: skipped"; exit 77; }
start=$SECONDS
"$MS" train --dataset fashion-mnist --epochs 1 --hidden-layers 1 --width 64 \
    --json >"$T/row.json" 2>"$T/train.err"
acc=$(ms_json_get "$T/row.json" 'd["test_accuracy"]')
params=$(ms_json_get "$T/row.json" 'd["params"]')
python3 -c "import sys; sys.exit(0 if float('$acc') > 0.78 else 1)" ||
    fail "test accuracy $acc after one epoch (want > 0.78)"
[ "$params" = $((784 * 64 + 64 + 64 * 10 + 10)) ] || fail "params $params"
[ $((SECONDS - start)) -lt 60 ] || fail "took $((SECONDS - start)) s"
ok "one epoch on Fashion-MNIST: test accuracy $acc in $((SECONDS - start)) s"
