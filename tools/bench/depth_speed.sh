#!/bin/sh
# depth_speed - residual normalised networks against PyTorch, one thread
# each, on Fashion-MNIST (docs/BENCHMARKS.md "Deep residual networks").
#
# Usage: [PARTS="a b c"] tools/bench/depth_speed.sh [BUILD_DIR] [EPOCHS] [SEEDS]
#
#   (a) residual, layer norm, 256 hidden layers of width 64, batch 200,
#       adam: meshsweep's time per epoch over PyTorch's (target: at most
#       0.7);
#   (b) residual, layer norm, 16 hidden layers of width 512: training FLOP
#       rate over the single-thread cblas_sgemm rate of the same shapes
#       (target: at least 0.85), and the time against PyTorch's (target:
#       at most 1.0);
#   (c) accuracy parity: residual layer norm at depths 16 and 256, seeds
#       1..SEEDS (default 3), EPOCHS epochs (default 3), he init and no
#       weight decay on both sides: the mean test accuracies (target:
#       within 0.01).
#
# Both sides: adam lr 0.001, batch 200, no validation split, the same
# architecture (tools/bench/bench_torch.py builds it from torch.nn). The
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE of the environment apply to both
# sides; run it again under `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`
# for OpenBLAS's own choice, and report both.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
epochs=${2:-3}
seeds=${3:-3}
parts=${PARTS:-a b c}
want() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
bench="$build/tools/bench/bench_train"
[ -x "$bench" ] || { echo "depth_speed: $bench not built" >&2; exit 2; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
res="--param architecture=residual --param norm=layer"
pt_res="--architecture residual --norm layer --init he"

get() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc --all) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

if want a; then
echo "== (a) residual layer norm, 256 x 64, batch 200, adam, $epochs epochs"
# shellcheck disable=SC2086
"$bench" --layers 256 --width 64 --epochs "$epochs" $res > "$tmp/a.ms" 2> "$tmp/a.ms.log"
# shellcheck disable=SC2086
/usr/bin/python3 "$here/bench_torch.py" --layers 256 --width 64 --epochs "$epochs" $pt_res > "$tmp/a.pt"
ms_med=$(get epoch_seconds "$tmp/a.ms"); pt_med=$(get epoch_seconds "$tmp/a.pt")
ms_cpu=$(get epoch_cpu_seconds "$tmp/a.ms"); pt_cpu=$(get epoch_cpu_seconds "$tmp/a.pt")
echo "meshsweep        s/epoch median $ms_med  min $(get epoch_seconds_min "$tmp/a.ms")  cpu $ms_cpu  test $(get test_accuracy "$tmp/a.ms")"
echo "pytorch          s/epoch median $pt_med  min $(get epoch_seconds_min "$tmp/a.pt")  cpu $pt_cpu  test $(get test_accuracy "$tmp/a.pt")"
awk -v a="$ms_med" -v b="$pt_med" -v e="$ms_cpu" -v f="$pt_cpu" 'BEGIN {
    printf "ratio            median %.3f  cpu %.3f  (target <= 0.70)\n", a / b, e / f }'
fi

if want b; then
echo "== (b) residual layer norm, 16 x 512, batch 200, adam, $epochs epochs"
# shellcheck disable=SC2086
"$bench" --layers 16 --width 512 --epochs "$epochs" $res > "$tmp/b.ms" 2> "$tmp/b.ms.log"
# shellcheck disable=SC2086
/usr/bin/python3 "$here/bench_torch.py" --layers 16 --width 512 --epochs "$epochs" $pt_res > "$tmp/b.pt"
ms_med=$(get epoch_seconds "$tmp/b.ms"); pt_med=$(get epoch_seconds "$tmp/b.pt")
echo "meshsweep        s/epoch median $ms_med  cpu $(get epoch_cpu_seconds "$tmp/b.ms")"
echo "pytorch          s/epoch median $pt_med  cpu $(get epoch_cpu_seconds "$tmp/b.pt")"
echo "sgemm fraction   $(get sgemm_fraction "$tmp/b.ms") on CPU time, $(get sgemm_fraction_wall "$tmp/b.ms") on wall time  (target >= 0.85)"
awk -v a="$ms_med" -v b="$pt_med" 'BEGIN {
    printf "ratio            median %.3f  (target <= 1.00)\n", a / b }'
fi

want c || exit 0
echo "== (c) accuracy, residual layer norm, width 64, seeds 1..$seeds, $epochs epochs"
for depth in 16 256; do
    for s in $(seq 1 "$seeds"); do
        # shellcheck disable=SC2086
        "$bench" --layers "$depth" --width 64 --epochs "$epochs" --seed "$s" $res > "$tmp/c.ms" 2> /dev/null
        # shellcheck disable=SC2086
        /usr/bin/python3 "$here/bench_torch.py" --layers "$depth" --width 64 --epochs "$epochs" --seed "$s" $pt_res > "$tmp/c.pt"
        echo "$depth $s $(get test_accuracy "$tmp/c.ms") $(get test_accuracy "$tmp/c.pt")" >> "$tmp/acc"
        echo "depth $depth seed $s   meshsweep $(get test_accuracy "$tmp/c.ms")  pytorch $(get test_accuracy "$tmp/c.pt")"
    done
done
awk '{ m[$1] += $3; p[$1] += $4; n[$1]++ } END {
    for (d in n) printf "depth %-4s       mean meshsweep %.4f  pytorch %.4f  difference %+.4f  (target within 0.01)\n",
        d, m[d] / n[d], p[d] / n[d], m[d] / n[d] - p[d] / n[d] }' "$tmp/acc"
