#!/bin/bash
# run.sh - the GPU benchmark of issue 6, one prepared run (docs/BENCHMARKS.md
# "GPU"): correctness of the cuda backend against the cpu backend on random
# networks, time per epoch on Fashion-MNIST for the sklearn grid and for
# deep and wide networks with TF32 off and on, PyTorch on the same GPU,
# cuBLAS's own SGEMM rate and the achieved fraction, several networks at
# once on one GPU. Prints one markdown table (report.py) last.
#
# Usage: tools/bench/gpu/run.sh BENCH_GPU OUTDIR [PYTHON]
#   BENCH_GPU  the bench_gpu binary (build*/tools/bench/bench_gpu)
#   OUTDIR     where every raw output (*.txt) and table.md go
#   PYTHON     python3 with torch for the PyTorch side (default python3)
# Environment: MESHSWEEP_DATASETS_DIR (a folder holding fashion-mnist/),
# BENCH_GPU_QUICK=1 (fewer epochs and networks: a smoke run),
# BENCH_GPU_STEP_TIMEOUT (seconds per step, default 150),
# BENCH_GPU_ONLY=grid (correctness, the sklearn grid with TF32 off and on,
# three of its networks with the epoch graph, three with the small-GEMM
# kernel (MESHSWEEP_CUDA_TINY_GEMM=1), and the profile only: no deep networks, PyTorch, cuBLAS alone or several
# networks at once; about 2 minutes of GPU time).
# The profile steps (profile_relu_10, profile_relu_100,10) run bench_gpu
# speed with MESHSWEEP_CUDA_PROFILE=1: the device time of every operation
# of one uncaptured step and of one graph replay (docs/CUDA_NOTES.md).
# Every step runs under timeout; a step that fails or times out leaves its
# output and the table says "n/a". Without a GPU every GPU step reports
# why it could not run and the script still ends with the table.
set -u
BIN=${1:?usage: run.sh BENCH_GPU OUTDIR [PYTHON]}
OUT=${2:?usage: run.sh BENCH_GPU OUTDIR [PYTHON]}
PY=${3:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
T=${BENCH_GPU_STEP_TIMEOUT:-150}
mkdir -p "$OUT"
DATA=${MESHSWEEP_DATASETS_DIR:-/usr/share/datasets}/fashion-mnist
[ -d "$DATA" ] || DATA=/usr/share/datasets/fashion-mnist
QUICK=${BENCH_GPU_QUICK:-0}
ONLY=${BENCH_GPU_ONLY:-all}
if [ "$QUICK" = 1 ]; then E_SMALL=2; E_DEEP=2; N_CORRECT=2; ROWS=6000
else E_SMALL=5; E_DEEP=3; N_CORRECT=8; ROWS=0; fi

# step NAME CMD...: run under timeout, output to OUT/NAME.txt
step() {
    local name=$1; shift
    local t0=$SECONDS
    timeout -k 5 "$T" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
    local rc=$?
    echo "rc $rc" >> "$OUT/$name.txt"
    echo "run.sh: $name: rc $rc, $((SECONDS - t0)) s" >&2
}

cuda=1
step probe "$BIN" speed --hidden 10 --epochs 2 --backend cuda
grep -q '^cuda_available 0' "$OUT/probe.txt" && cuda=0
if [ $cuda = 0 ]; then
    echo "run.sh: no usable cuda backend ($(sed -n 's/^cuda_reason //p' \
        "$OUT/probe.txt")): GPU steps skipped" >&2
fi

# (a) correctness
step correct "$BIN" correct --n $N_CORRECT --seed 1 --rows $ROWS

# (b) time per epoch: the sklearn grid, then deep and wide networks
GRID="10 100 10,10 100,10"
for act in relu tanh; do
    for h in $GRID; do
        for tf in 0 1; do
            [ $cuda = 1 ] && step "speed_${act}_${h}_tf$tf" "$BIN" speed \
                --hidden $h --activation $act --epochs $E_SMALL --tf32 $tf
        done
    done
done
# the whole epoch as one graph (MESHSWEEP_CUDA_EPOCH_GRAPH=1, TF32 off):
# speed_relu_H_tf0_eg (epoch_graphs says how many epochs used it; a
# fallback says why in the .err file)
for h in 10 10,10 100; do
    [ $cuda = 1 ] && step "speed_relu_${h}_tf0_eg" env \
        MESHSWEEP_CUDA_EPOCH_GRAPH=1 "$BIN" speed --hidden $h \
        --activation relu --epochs $E_SMALL --tf32 0
done
# the own small-GEMM kernel instead of cuBLAS for the tiny products
# (MESHSWEEP_CUDA_TINY_GEMM=1, TF32 off): speed_relu_H_tf0_tg, and with the
# epoch graph too for relu 10 (speed_relu_10_tf0_tgeg)
for h in 10 10,10 100,10; do
    [ $cuda = 1 ] && step "speed_relu_${h}_tf0_tg" env \
        MESHSWEEP_CUDA_TINY_GEMM=1 "$BIN" speed --hidden $h \
        --activation relu --epochs $E_SMALL --tf32 0
done
[ $cuda = 1 ] && step "speed_relu_10_tf0_tgeg" env MESHSWEEP_CUDA_TINY_GEMM=1 \
    MESHSWEEP_CUDA_EPOCH_GRAPH=1 "$BIN" speed --hidden 10 \
    --activation relu --epochs $E_SMALL --tf32 0
# the profile: where a small network's step spends its time (and with the
# small-GEMM kernel: profile_relu_100,10_tg)
for h in 10 100,10; do
    [ $cuda = 1 ] && step "profile_relu_$h" env MESHSWEEP_CUDA_PROFILE=1 \
        MESHSWEEP_CUDA_EPOCH_GRAPH=0 MESHSWEEP_CUDA_TINY_GEMM=0 \
        "$BIN" speed --hidden $h --activation relu --epochs 2 --tf32 0
done
[ $cuda = 1 ] && step "profile_relu_100,10_tg" env MESHSWEEP_CUDA_PROFILE=1 \
    MESHSWEEP_CUDA_EPOCH_GRAPH=0 \
    MESHSWEEP_CUDA_TINY_GEMM=1 "$BIN" speed --hidden 100,10 \
    --activation relu --epochs 2 --tf32 0
if [ "$ONLY" = grid ]; then
    echo "run.sh: BENCH_GPU_ONLY=grid: deep networks, PyTorch, cuBLAS" \
        "alone and several networks at once skipped" >&2
    cuda=0
fi
for net in 1024x4 4096x8; do
    for tf in 0 1; do
        [ $cuda = 1 ] && step "speed_relu_${net}_tf$tf" "$BIN" speed \
            --hidden $net --activation relu --epochs $E_DEEP --tf32 $tf
    done
done

# (c) PyTorch on the same GPU: CUDA graphs on (as the engine); one
# network eagerly too, to show what graphs are worth
for act in relu tanh; do
    for h in $GRID; do
        [ $cuda = 1 ] && step "torch_${act}_${h}_tf0_g1" "$PY" \
            "$HERE/bench_gpu_torch.py" --hidden $h --activation $act \
            --epochs $E_SMALL --tf32 0 --graphs 1 --data "$DATA"
    done
done
[ $cuda = 1 ] && step "torch_relu_100_tf0_g0" "$PY" \
    "$HERE/bench_gpu_torch.py" --hidden 100 --activation relu \
    --epochs $E_SMALL --tf32 0 --graphs 0 --data "$DATA"
for net in 100 1024x4 4096x8; do
    e=$E_SMALL; [ $net = 100 ] || e=$E_DEEP
    for tf in 0 1; do
        [ $cuda = 1 ] && step "torch_relu_${net}_tf${tf}_g1" "$PY" \
            "$HERE/bench_gpu_torch.py" --hidden $net --activation relu \
            --epochs $e --tf32 $tf --graphs 1 --data "$DATA"
    done
done

# (d) cuBLAS alone: the 8 x 4096 network's GEMMs at batch 200, a large
# square GEMM
for tf in 0 1; do
    [ $cuda = 1 ] && step "gemm_net_4096x8_tf$tf" "$BIN" gemm-net \
        --hidden 4096x8 --batch 200 --tf32 $tf
    [ $cuda = 1 ] && step "gemm_square_tf$tf" "$BIN" gemm --m 8192 \
        --nc 8192 --k 8192 --tf32 $tf
done

# several networks of a sweep at once: N threads, a backend (stream) each
for n in 1 2 4 8; do
    [ $cuda = 1 ] && step "multi_$n" "$BIN" multi --threads $n \
        --hidden 100,10 --activation relu --epochs 2
done

"$PY" "$HERE/report.py" "$OUT" "$ROOT/docs/BENCHMARKS.md" > "$OUT/table.md" ||
    /usr/bin/python3 "$HERE/report.py" "$OUT" "$ROOT/docs/BENCHMARKS.md" \
        > "$OUT/table.md"
cat "$OUT/table.md"
