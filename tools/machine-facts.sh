#!/usr/bin/env bash
# machine-facts.sh BUILD_DIR - one paragraph on the machine a test run ran
# on, for reading its failures: CPU model and cores, AVX2/AVX-512, the
# OpenBLAS settings and the core OpenBLAS runs as, and the seconds per epoch
# of one fixed small training run (meshsweep train: 3 hidden layers of 128,
# minibatch 20, 3000 rows of 8x8 pixels, 5 epochs) by BUILD_DIR's meshsweep,
# and from it the factor by which the tests' waits are to be stretched
# (last line, "time scale N"): 1 up to 0.06 s per epoch (the developers'
# idle 2-core machines measure 0.04-0.06 s), one more for each further
# 0.06 s, at most 8. A machine busy with other work when the suite starts
# measures slower and gets longer waits.
set -uo pipefail
dir=${1:?usage: machine-facts.sh BUILD_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
simd=$(grep -m1 -ow 'avx2\|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' ')
core=$(python3 -c 'import ctypes
l = ctypes.CDLL("libopenblas.so.0")
l.openblas_get_corename.restype = ctypes.c_char_p
print(l.openblas_get_corename().decode())' 2>/dev/null || echo unknown)
echo "machine: ${model:-unknown CPU}, $(nproc) cores, ${simd:-no AVX2}"
echo "machine: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-(unset)}" \
    "OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-(unset)}" \
    "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS-(unset)}; OpenBLAS core $core"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if python3 "$here/tests/integration/make_tiny_idx.py" idx "$tmp/fashion-mnist" \
    --train 3000 --test 200 --side 8 >/dev/null 2>&1; then
    spe=$(MESHSWEEP_DATASETS_DIR=$tmp timeout 120 "$dir/tools/meshsweep" train \
        --dataset fashion-mnist --hidden-layers 3 --width 128 --batch-size 20 \
        --epochs 5 2>/dev/null | sed -n 's/^s\/epoch *//p')
    echo "machine: meshsweep train 3x128, minibatch 20, 3000 rows: ${spe:-?} s/epoch"
fi
scale=$(awk -v s="${spe:-0}" 'BEGIN { n = int(s / 0.06 + 0.999); if (n < 1) n = 1; if (n > 8) n = 8; print n }')
echo "machine: time scale $scale for the tests' waits (MS_TEST_TIME_SCALE)"
