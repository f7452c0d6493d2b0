#!/bin/sh
# how_deep - the study of docs/RESULTS.md "How deep?": examples/how-deep.yaml
# (three families of width-64 networks, 1 to 1,024 hidden layers, 3 seeds,
# Fashion-MNIST) run in one process, then its analysis, tables and plot.
#
# Usage: [WORKERS=2] tools/study/how_deep.sh [BUILD_DIR] [DATA_DIR] [OUT_DIR]
#
# Needs Debian's dataset-fashion-mnist and gnuplot-nox (the plot). The run
# resumes: a second call trains only what has no result yet, so the study
# can be stopped (Ctrl-C) and started again. Writes into OUT_DIR (default
# how-deep-out): analysis.txt (what `--analyze` prints), results.json (the
# rows and analyses), tables.md (docs/RESULTS.md's tables) and
# accuracy.svg (the plot).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
data=${2:-how-deep-data}
out=${3:-how-deep-out}
ms="$build/tools/meshsweep"
[ -x "$ms" ] || { echo "how_deep: $ms not built" >&2; exit 2; }
command -v gnuplot > /dev/null || {
    echo "how_deep: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
mkdir -p "$out"
spec="$root/examples/how-deep.yaml"
"$ms" run "$spec" --workers "${WORKERS:-2}" --data-dir "$data" --analyze \
    > "$out/analysis.txt"
"$ms" run "$spec" --data-dir "$data" --format json --analyze --quiet \
    > "$out/results.json"
/usr/bin/python3 "$here/how_deep_report.py" "$out/results.json" \
    --plot "$out/accuracy.svg" > "$out/tables.md"
echo "how_deep: $out/analysis.txt, $out/tables.md, $out/accuracy.svg"
