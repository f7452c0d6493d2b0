#!/usr/bin/env bash
# sklearn_compare.sh - the scikit-learn Fashion-MNIST benchmark grid, side by side.
#
# Runs examples/sklearn-grid.yaml with `meshsweep run` (one worker, one BLAS
# thread) and the same eight networks with scikit-learn's MLPClassifier
# (Debian's python3-sklearn, one BLAS thread), seeds 1..3 on both sides, then
# prints the comparison table (tools/bench/sklearn_compare.py).
# Usage: tools/bench/sklearn_compare.sh [BUILD_DIR]   (default build/)
# Needs: apt-get install python3-sklearn; about 10 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
echo "# meshsweep: examples/sklearn-grid.yaml" >&2
"$build/tools/meshsweep" run "$here/examples/sklearn-grid.yaml" --workers 1 \
    --data-dir "$tmp/data" --format json > "$tmp/meshsweep.json"
echo "# scikit-learn MLPClassifier, same grid" >&2
/usr/bin/python3 "$here/tools/bench/sklearn_grid.py" --seeds 1,2,3 > "$tmp/sklearn.jsonl"
/usr/bin/python3 "$here/tools/bench/sklearn_compare.py" "$tmp/meshsweep.json" "$tmp/sklearn.jsonl"
