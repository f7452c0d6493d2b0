#!/bin/bash
# prepare.sh - build here what the GPU benchmark needs and put it in one
# folder the device machine gets (docs/BENCHMARKS.md "GPU").
#
# Usage (from the source root): tools/bench/gpu/prepare.sh [BUILD] [DEST]
#   BUILD  build folder (default build-gpu): RelWithDebInfo,
#          MESHSWEEP_CUDA=ON, CMAKE_CUDA_ARCHITECTURES "80;90"
#   DEST   folder in the repo root (default .gpu), added to
#          .git/info/exclude (not .gitignore)
# DEST then holds: bin/ (bench_gpu and the binaries of the core tests
# labelled gpu or cuda; tests.txt: one "NAME BINARY ARGS..." line each), lib.tar.xz (lib/: the shared libraries they need that are not
# glibc or CUDA's own: OpenBLAS, gfortran, cmocka, ... the real files,
# under their sonames; xz keeps the carry small), data/fashion-mnist/ (the four IDX .gz files), tests.txt (the
# test names). The device machine has none of our Debian libraries and no
# network: device_run.sh unpacks lib.tar.xz, sets LD_LIBRARY_PATH to it and
# MESHSWEEP_DATASETS_DIR to DEST/data. Carry DEST with the run (the run
# tool's carry list: [".gpu"]); it stays well under 64 MiB.
set -eu
BUILD=${1:-build-gpu}
DEST=${2:-.gpu}
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
grep -qxF "/$DEST/" "$(git rev-parse --git-path info/exclude)" 2>/dev/null ||
    echo "/$DEST/" >> "$(git rev-parse --git-path info/exclude)"
grep -qxF "/$BUILD/" "$(git rev-parse --git-path info/exclude)" 2>/dev/null ||
    echo "/$BUILD/" >> "$(git rev-parse --git-path info/exclude)"
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHSWEEP_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="80;90" -DMESHSWEEP_WERROR=ON > "$BUILD/prepare-cmake.log"
# The core test programs first (ctest names a test's command only once
# its binary exists), then the tests labelled gpu or cuda (a test may be
# a binary run with arguments: ms_backend_suite_test cuda).
CORE_TESTS=$(cd tests/core && ls ms_*_test.c | sed 's/\.c$//')
# shellcheck disable=SC2086 # target names are words
nice make -C "$BUILD" -j2 bench_gpu meshsweep meshsweepd $CORE_TESTS \
    > "$BUILD/prepare-make.log"
ctest --test-dir "$BUILD" -N -L 'gpu|cuda' --show-only=json-v1 \
    > "$BUILD/prepare-tests.json"
python3 - "$BUILD/prepare-tests.json" > "$BUILD/prepare-tests.txt" <<'PY'
import json, os, sys
tests = json.load(open(sys.argv[1])).get("tests", [])
for t in tests:
    cmd = t.get("command") or []
    if not cmd:
        sys.exit(f"prepare.sh: test {t['name']} has no built command")
    print(t["name"], os.path.basename(cmd[0]), *cmd[1:])
PY
BINS=$(awk '{print $2}' "$BUILD/prepare-tests.txt" | sort -u)
[ -n "$BINS" ] || { echo "prepare.sh: no test labelled gpu or cuda" >&2; exit 1; }
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/data/fashion-mnist"
cp "$BUILD/tools/bench/bench_gpu" "$DEST/bin/"
# The programs, for the end-to-end sweep on the GPU (device_run.sh step 3)
cp "$BUILD/tools/meshsweep" "$BUILD/node/meshsweepd" "$DEST/bin/"
for b in $BINS; do
    f=$(find "$BUILD/tests" -type f -name "$b" -perm -u+x | head -1)
    [ -n "$f" ] && cp "$f" "$DEST/bin/"
done
cp "$BUILD/prepare-tests.txt" "$DEST/tests.txt" # NAME BINARY ARGS...
# Shared libraries: everything ldd resolves except glibc's own, the
# loader and CUDA's (the driver comes with the machine; the toolkit's
# libraries are in /usr/local/cuda there).
for b in "$DEST"/bin/*; do ldd "$b"; done | awk '/=> \// {print $1, $3}' |
    sort -u | while read -r name path; do
    case "$name" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|\
    libresolv.so*|libnss_*|libutil.so*|libanl.so*|\
    libcuda.so*|libcublas*|libcudart*|libnvidia*|linux-vdso*|libgcc_s.so*|\
    libstdc++.so*) continue ;;
    esac
    cp -L "$path" "$DEST/lib/$name"
done
cp /usr/share/datasets/fashion-mnist/*.gz "$DEST/data/fashion-mnist/"
strip --strip-debug "$DEST"/bin/* "$DEST"/lib/* 2>/dev/null || true
# OpenBLAS (every kernel of DYNAMIC_ARCH) is 35 MB and the data 30 MB of
# gzip already: the libraries travel as xz (a tenth of that), and
# device_run.sh unpacks them.
tar -C "$DEST" -cJf "$DEST/lib.tar.xz" lib
rm -rf "$DEST/lib"
echo "prepare.sh: $DEST: $(du -sh "$DEST" | cut -f1) ($(ls "$DEST/bin" | wc -l)" \
    "binaries, libraries in lib.tar.xz, tests: $(wc -l < "$DEST/tests.txt"))"
tar -tJf "$DEST/lib.tar.xz" | sed 's/^/  /'
