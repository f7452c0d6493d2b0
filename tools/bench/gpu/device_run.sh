#!/bin/bash
# device_run.sh - the GPU run of issue 6 on the device machine, after
# prepare.sh here (docs/BENCHMARKS.md "GPU"). Runs from the source root:
#   tools/bench/gpu/device_run.sh [DEST] [OUTDIR]
#   DEST    what prepare.sh made (default .gpu)
#   OUTDIR  results and logs (default $OUT, else /tmp/meshsweep-gpu-run)
# In order, each under a timeout, the whole under 6 minutes (the benchmark
# gets what the tests left of 345 s):
#   1. nvidia-smi's line for the GPU (name, driver, memory), or "no GPU";
#   2. the core tests labelled gpu/cuda (DEST/tests.txt: NAME BINARY
#      ARGS...), each with its log, 200 s at most; exit 77 is a skip;
#      the cuda backend suite a second time with
#      MESHSWEEP_CUDA_EPOCH_GRAPH=0 (its own test line) and a third with
#      MESHSWEEP_CUDA_TINY_GEMM=0 (its own line too): both are on by default;
#   3. tools/bench/gpu/run.sh with DEST/bin/bench_gpu (correctness, speed,
#      the profile, PyTorch, cuBLAS, several networks at once);
#      BENCH_GPU_ONLY=grid: the tests, correctness, the sklearn grid (TF32
#      off and on) and the profile only, no end-to-end sweep (~3 minutes);
#   4. a short summary, printed last.
# Without a GPU (no nvidia-smi, or it sees none) it says so, skips the GPU
# steps (the tests report skips, run.sh reports why), and still ends with
# the summary: the same script can be tried on any machine.
set -u
DEST=${1:-.gpu}
OUTDIR=${2:-${OUT:-/tmp/meshsweep-gpu-run}}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
cd "$ROOT"
mkdir -p "$OUTDIR"
DEST=$(cd "$DEST" 2>/dev/null && pwd) || {
    echo "device_run.sh: $1 not found: run tools/bench/gpu/prepare.sh first" >&2
    exit 2
}
LIB="$DEST/lib"
if [ ! -d "$LIB" ] && [ -f "$DEST/lib.tar.xz" ]; then
    LIB=${TMPDIR:-/tmp}/meshsweep-gpu-lib.$$
    mkdir -p "$LIB" && tar -C "$LIB" --strip-components=1 -xJf \
        "$DEST/lib.tar.xz" || { echo "device_run.sh: cannot unpack" \
        "$DEST/lib.tar.xz" >&2; exit 2; }
fi
export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -d /usr/local/cuda/lib64 ] &&
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"
export MESHSWEEP_DATASETS_DIR="$DEST/data"
export OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
export BENCH_GPU_STEP_TIMEOUT=${BENCH_GPU_STEP_TIMEOUT:-120}
START=$SECONDS
SUMMARY="$OUTDIR/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

# 1. The GPU
gpu=0
if command -v nvidia-smi > /dev/null &&
    timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
        --format=csv,noheader > "$OUTDIR/nvidia-smi.txt" 2>&1 &&
    [ -s "$OUTDIR/nvidia-smi.txt" ]; then
    gpu=1
    say "gpu: $(head -1 "$OUTDIR/nvidia-smi.txt")"
else
    say "gpu: none (no nvidia-smi, or it sees no GPU): GPU steps skipped"
fi

# 2. The cuda tests
n_pass=0 n_fail=0 n_skip=0
# run_test NAME LABEL BIN ARGS [VAR=VALUE...] - one test binary under a
# timeout with the environment given, logged to test_NAME.log, counted
# and said (LABEL after the name, may be empty)
run_test() {
    local name=$1 label=$2 bin=$3 args=$4 rc r
    shift 4
    # shellcheck disable=SC2086 # args are words
    ( cd "$OUTDIR" && env "$@" MESHSWEEP_SOURCE_DIR="$ROOT" \
        MESHSWEEP_BUILD_DIR="$DEST" timeout -k 5 200 "$DEST/bin/$bin" $args ) \
        > "$OUTDIR/test_$name.log" 2>&1
    rc=$?
    case $rc in
    0) n_pass=$((n_pass + 1)); r=passed ;;
    77) n_skip=$((n_skip + 1)); r="skipped: $(tail -1 "$OUTDIR/test_$name.log")" ;;
    *) n_fail=$((n_fail + 1)); r="FAILED (rc $rc; log test_$name.log)" ;;
    esac
    say "test $name${label:+ ($label)}: $r"
}
while read -r t bin args; do
    [ -n "$t" ] || continue
    run_test "$t" "" "$bin" "$args"
    # The cuda suite twice more, each time with a default turned off:
    # the whole-epoch graph (every training one graph per step), and the
    # small-GEMM kernel (cuBLAS for every GEMM)
    case " $bin $args " in
    *" ms_backend_suite_test cuda "*)
        run_test "${t}_epoch_graph" MESHSWEEP_CUDA_EPOCH_GRAPH=0 "$bin" \
            "$args" MESHSWEEP_CUDA_EPOCH_GRAPH=0
        run_test "${t}_tiny_gemm" MESHSWEEP_CUDA_TINY_GEMM=0 "$bin" "$args" \
            MESHSWEEP_CUDA_TINY_GEMM=0 ;;
    esac
done < "$DEST/tests.txt"
say "tests: $n_pass passed, $n_fail failed, $n_skip skipped"

# 2b. End to end: the scikit-learn grid (examples/sklearn-grid.yaml, 24
# networks, 10 epochs each) as `meshsweep run --backend cuda` runs it:
# an embedded node whose forked workers open the GPU. Every row must be
# status ok with backend cuda in its platform; the CSV lands in OUTDIR.
# (skipped with BENCH_GPU_ONLY=grid: it was measured already)
if [ $gpu = 1 ] && [ -x "$DEST/bin/meshsweep" ] &&
    [ "${BENCH_GPU_ONLY:-all}" != grid ]; then
    e2e_start=$SECONDS
    timeout -k 5 150 "$DEST/bin/meshsweep" run examples/sklearn-grid.yaml \
        --backend cuda --workers 4 --data-dir "${TMPDIR:-/tmp}/meshsweep-e2e-data.$$" \
        --format json --quiet > "$OUTDIR/e2e.json" 2> "$OUTDIR/e2e.log"
    rc=$?
    summary=$(python3 - "$OUTDIR/e2e.json" <<'PY' 2>&1
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows.get("results", rows) if isinstance(rows, dict) else rows
ok = [r for r in rows if r.get("status") == "ok"]
cuda = [r for r in ok if "cuda" in json.dumps(r.get("platform", ""))]
acc = sorted(r.get("test_accuracy") or 0 for r in ok)
spe = sorted(r.get("seconds_per_epoch") or 0 for r in ok)
med = lambda v: v[len(v) // 2] if v else float("nan")
print(f"{len(rows)} rows, {len(ok)} ok, {len(cuda)} on cuda, "
      f"test accuracy median {med(acc):.4f}, s/epoch median {med(spe):.4f}")
PY
)
    say "e2e sweep (meshsweep run --backend cuda): rc $rc in $((SECONDS - e2e_start)) s: $summary"
    [ $rc = 0 ] || { n_fail=$((n_fail + 1)); tail -5 "$OUTDIR/e2e.log"; }
fi

# 3. The benchmark (run.sh skips the GPU steps itself when the cuda
# backend cannot run, and says why)
PY=python3
[ $gpu = 1 ] || BENCH_GPU_QUICK=1
export BENCH_GPU_QUICK=${BENCH_GPU_QUICK:-0}
LEFT=$((345 - (SECONDS - START)))
[ $LEFT -lt 90 ] && LEFT=90
timeout -k 10 $LEFT "$HERE/run.sh" "$DEST/bin/bench_gpu" "$OUTDIR/bench" "$PY" \
    > "$OUTDIR/bench.log" 2>&1
say "benchmark: rc $? ($((SECONDS - START)) s so far); raw outputs in $OUTDIR/bench"

# 4. Summary, last
echo
echo "==== meshsweep GPU run, $(date -u +%Y-%m-%dT%H:%MZ), $((SECONDS - START)) s"
cat "$SUMMARY"
echo
cat "$OUTDIR/bench/table.md" 2>/dev/null || tail -20 "$OUTDIR/bench.log"
[ $n_fail = 0 ]
