#!/usr/bin/env bash
# sklearn_compare.sh - the scikit-learn Fashion-MNIST benchmark grid, side by side.
#
# Runs examples/sklearn-grid.yaml with `meshsweep run` (one worker, one BLAS
# thread) and the same eight networks with scikit-learn's MLPClassifier
# (Debian's python3-sklearn, one BLAS thread), the same seeds on both sides
# (SEEDS, default 1,2,3), then prints the comparison table
# (tools/bench/sklearn_compare.py).
# Usage: [SEEDS=1,2,3,4,5] tools/bench/sklearn_compare.sh [BUILD_DIR]   (default build/)
# Needs: apt-get install python3-sklearn; about 10 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
if [ -n "${KEEP:-}" ]; then       # KEEP=DIR keeps both sides' raw results
    tmp=$KEEP; mkdir -p "$tmp"
else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
fi
export OPENBLAS_NUM_THREADS=1
seeds=${SEEDS:-1,2,3}
sed "s/seed: *{values: \[1, 2, 3\]}/seed: {values: [${seeds//,/, }]}/" \
    "$here/examples/sklearn-grid.yaml" > "$tmp/sklearn-grid.yaml"
grep -q "seed: {values: \[${seeds//,/, }\]}" "$tmp/sklearn-grid.yaml"
echo "# meshsweep: examples/sklearn-grid.yaml, seeds $seeds" >&2
"$build/tools/meshsweep" run "$tmp/sklearn-grid.yaml" --workers 1 \
    --data-dir "$tmp/data" --format json > "$tmp/meshsweep.json"
echo "# scikit-learn MLPClassifier, same grid" >&2
/usr/bin/python3 "$here/tools/bench/sklearn_grid.py" --seeds "$seeds" > "$tmp/sklearn.jsonl"
/usr/bin/python3 "$here/tools/bench/sklearn_compare.py" "$tmp/meshsweep.json" "$tmp/sklearn.jsonl"
