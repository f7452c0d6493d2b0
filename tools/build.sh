#!/usr/bin/env bash
# build.sh - configure and build meshsweep (Release) into build/.
# Usage: tools/build.sh [extra cmake arguments]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$here" -B "$here/build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$here/build" -j "$jobs"
