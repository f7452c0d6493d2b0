#!/bin/sh
# train_speed - the engine against PyTorch, one thread each, on
# Fashion-MNIST (docs/BENCHMARKS.md "Training engine (CPU)").
#
# Usage: tools/bench/train_speed.sh [BUILD_DIR] [EPOCHS_SMALL] [EPOCHS_DEEP]
#
#   (a) 784-100-10 relu, batch 200, adam: meshsweep's time per epoch over
#       PyTorch's (target: at most 0.7);
#   (b) 784-1024x4-10 relu, batch 200, adam: training FLOP rate over the
#       single-thread cblas_sgemm rate of the same shapes (target: at
#       least 0.7), with PyTorch's time for reference;
#   and each bench_train's peak RSS against 2 (dataset float32 bytes +
#   4 x params x 4) + 64 MiB.
#
# BUILD_DIR (default: build) must hold tools/bench/bench_train; a Release
# build is what the figures are for. PyTorch is Debian's python3-torch,
# run with /usr/bin/python3. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are
# taken from the environment as they are (run it once more under
# `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` to see OpenBLAS's own
# choice). Times are medians over the epochs after the first, the
# fastest of those epochs, and the median CPU time per epoch: on a shared
# machine the minimum and the CPU time are the steadier figures.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
small_epochs=${2:-6}
deep_epochs=${3:-3}
bench="$build/tools/bench/bench_train"
[ -x "$bench" ] || { echo "train_speed: $bench not built" >&2; exit 2; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

get() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc --all) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== (a) 784-100-10 relu, batch 200, adam, one thread, $small_epochs epochs"
"$bench" --layers 1 --width 100 --epochs "$small_epochs" > "$tmp/a.ms" 2> "$tmp/a.ms.log"
/usr/bin/python3 "$here/bench_torch.py" --layers 1 --width 100 --epochs "$small_epochs" > "$tmp/a.pt"
ms_med=$(get epoch_seconds "$tmp/a.ms"); ms_min=$(get epoch_seconds_min "$tmp/a.ms")
pt_med=$(get epoch_seconds "$tmp/a.pt"); pt_min=$(get epoch_seconds_min "$tmp/a.pt")
ms_cpu=$(get epoch_cpu_seconds "$tmp/a.ms"); pt_cpu=$(get epoch_cpu_seconds "$tmp/a.pt")
echo "blas core        $(get blas_core "$tmp/a.ms")"
echo "meshsweep        s/epoch median $ms_med  min $ms_min  cpu $ms_cpu  (final loss $(get final_train_loss "$tmp/a.ms"))"
echo "pytorch          s/epoch median $pt_med  min $pt_min  cpu $pt_cpu  ($(grep '^torch' "$tmp/a.pt"))"
awk -v a="$ms_med" -v b="$pt_med" -v c="$ms_min" -v d="$pt_min" -v e="$ms_cpu" -v f="$pt_cpu" 'BEGIN {
    printf "ratio            median %.3f  min %.3f  cpu %.3f  (target <= 0.70)\n", a / b, c / d, e / f }'
echo "peak RSS         $(get peak_rss_mib "$tmp/a.ms") MiB  (budget $(get rss_budget_mib "$tmp/a.ms") MiB)"

echo "== (b) 784-1024-1024-1024-1024-10 relu, batch 200, adam, one thread, $deep_epochs epochs"
"$bench" --layers 4 --width 1024 --epochs "$deep_epochs" > "$tmp/b.ms" 2> "$tmp/b.ms.log"
/usr/bin/python3 "$here/bench_torch.py" --layers 4 --width 1024 --epochs "$deep_epochs" > "$tmp/b.pt"
echo "meshsweep        s/epoch median $(get epoch_seconds "$tmp/b.ms")  min $(get epoch_seconds_min "$tmp/b.ms")  cpu $(get epoch_cpu_seconds "$tmp/b.ms")"
echo "pytorch          s/epoch median $(get epoch_seconds "$tmp/b.pt")  min $(get epoch_seconds_min "$tmp/b.pt")  cpu $(get epoch_cpu_seconds "$tmp/b.pt")"
echo "train rate       $(get train_gflops "$tmp/b.ms") GFLOP/s (6 B in out per layer; executed: $(get train_gflops_executed "$tmp/b.ms"))"
echo "sgemm rate       $(get sgemm_gflops "$tmp/b.ms") GFLOP/s (cblas_sgemm alone, same shapes)"
echo "fraction         $(get sgemm_fraction "$tmp/b.ms") on CPU time, $(get sgemm_fraction_wall "$tmp/b.ms") on wall time  (target >= 0.70; per epoch, CPU:$(grep -o 'fraction [0-9.]*' "$tmp/b.ms.log" | cut -d' ' -f2 | tr '\n' ' ' | sed 's/^/ /'))"
echo "peak RSS         $(get peak_rss_mib "$tmp/b.ms") MiB  (budget $(get rss_budget_mib "$tmp/b.ms") MiB)"
