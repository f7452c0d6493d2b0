#!/usr/bin/env bash
# test.sh - the whole test suite, as CI runs it (about 10-15 minutes on 2 cores):
#   1. Release build (-Werror) and every test not labelled slow (among them
#      ms_packaging_lint_test: tools/lint-packaging.sh --self-test lints the
#      Dockerfile, the Kubernetes manifests and the Slurm script);
#   2. the Debian package from that build: tools/package-test.sh installs,
#      checks and removes it (as root; skipped with a line otherwise);
#   3. ASan + UBSan build and the unit tests;
#   4. the clang-format check;
#   5. each libFuzzer target for MESHSWEEP_FUZZ_SECONDS (default 20) seconds
#      (clang build in build-fuzz/, seeds in tests/fuzz/corpus/).
# Usage: tools/test.sh [--quick]   (--quick: step 1 only)
# Build folders: build-ci/, build-asan/, build-fuzz/ (left for inspection).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
jobs=$(nproc 2>/dev/null || echo 2)
quick=0
[ "${1:-}" = "--quick" ] && quick=1
# The suite keeps the machine's OpenBLAS settings (tests that pin a core
# type say so themselves); BLAS runs one thread per worker. These machines'
# Debian OpenBLAS (0.3.21) is older than their CPUs and they are meant to
# run it as a Haswell core with a 512 KiB L2: where the environment does not
# say so (a CI machine need not), on an x86-64 CPU with AVX2 the suite sets
# the same, so that CI runs what the developers ran.
export OPENBLAS_NUM_THREADS=1
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-Haswell}
    export OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-512}
fi
# The dashboard's browser test must run here, not skip: a missing chromium
# or npm package fails it (tests/browser/lib.sh).
export MESHSWEEP_REQUIRE_BROWSER=1
status=0

echo "== [1/5] Release build and tests (not slow)"
# Prefix /usr: the Debian package of step 2 is made from this build.
cmake -S . -B build-ci -DCMAKE_BUILD_TYPE=Release -DMESHSWEEP_WERROR=ON \
    -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build build-ci -j "$jobs"
# Where a CUDA toolkit is installed (as on these machines, GPU or not), the
# CUDA backend must have been compiled and linked into that build.
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then
    if grep -q 'MESHSWEEP_HAVE_CUDA=1' build-ci/core/CMakeFiles/ms_core.dir/flags.make; then
        echo "CUDA backend: compiled and linked (no GPU needed; its tests skip without one)"
    else
        echo "test.sh: a CUDA toolkit is installed but the CUDA backend was not built" >&2
        status=1
    fi
fi
# The machine, for reading a failure: CPU, the OpenBLAS core in use, and the
# speed of one small training run (3 x 128, minibatch 20, 3000 rows of 64
# pixels; 0.04-0.06 s per epoch on the developers' 2-core machines).
# On a slower machine the integration tests' bounded waits and their ctest
# timeouts stretch by the factor it prints (MESHSWEEP_TEST_TIME_SCALE in
# tests/integration/CMakeLists.txt; lib.sh reads it as MS_TEST_TIME_SCALE).
facts=$(tools/machine-facts.sh build-ci || true)
echo "$facts"
scale=$(echo "$facts" | sed -n 's/.*time scale \([0-9]*\).*/\1/p')
export MS_TEST_TIME_SCALE=${MS_TEST_TIME_SCALE:-${scale:-1}}
cmake -S . -B build-ci -DMESHSWEEP_TEST_TIME_SCALE="$MS_TEST_TIME_SCALE" >/dev/null
ctest --test-dir build-ci -LE slow -j "$jobs" --output-on-failure --timeout 600 || status=1
# A CI log keeps its head and its tail: repeat the end of each failed test's
# output here so that it survives.
failed_tail=$(tools/ctest-failed-tail.sh build-ci 12 || true)

if [ $quick -eq 0 ]; then
    echo "== [2/5] Debian package (tools/package-test.sh)"
    if [ "$(id -u)" -eq 0 ]; then
        tools/package-test.sh build-ci || status=1
    else
        echo "package: SKIPPED: not root (tools/package-test.sh installs the" \
            "package with dpkg; CI runs it as root)"
    fi

    echo "== [3/5] ASan + UBSan build and unit tests"
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMESHSWEEP_CUDA=OFF \
        -DMESHSWEEP_SANITIZE=address,undefined -DMESHSWEEP_WERROR=ON >/dev/null
    cmake --build build-asan -j "$jobs"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan -L unit -LE slow -j "$jobs" --output-on-failure \
        --timeout 600 || status=1

    echo "== [4/5] clang-format check"
    if command -v clang-format >/dev/null; then
        files=$(git ls-files '*.c' '*.h' '*.cu' | grep -v '^build')
        if ! clang-format --dry-run -Werror $files; then
            echo "clang-format: the files above need formatting (clang-format -i FILE)"
            status=1
        else
            echo "clang-format: $(echo "$files" | wc -w) files clean"
        fi
    else
        echo "clang-format not installed: format check skipped"
    fi

    echo "== [5/5] fuzz targets, ${MESHSWEEP_FUZZ_SECONDS:-20} s each"
    if command -v clang >/dev/null; then
        CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug \
            -DMESHSWEEP_CUDA=OFF -DMESHSWEEP_FUZZ=ON >/dev/null
        cmake --build build-fuzz -j "$jobs" --target ms_spec_fuzz \
            ms_canonical_fuzz ms_dataset_fuzz ms_wire_envelope_fuzz \
            ms_wire_payload_fuzz ms_beacon_fuzz ms_onnx_fuzz
        for t in spec canonical dataset wire_envelope wire_payload beacon onnx; do
            corpus=$(mktemp -d)
            if ! build-fuzz/tests/fuzz/ms_${t}_fuzz "$corpus" tests/fuzz/corpus/$t \
                -max_total_time="${MESHSWEEP_FUZZ_SECONDS:-20}" -rss_limit_mb=2048 \
                -print_final_stats=1 >build-fuzz/ms_${t}_fuzz.log 2>&1; then
                tail -40 build-fuzz/ms_${t}_fuzz.log
                echo "fuzz: ms_${t}_fuzz FAILED (crash input in the log above)"
                status=1
            else
                echo "fuzz: ms_${t}_fuzz ok, $(grep -o 'stat::number_of_executed_units: *[0-9]*' build-fuzz/ms_${t}_fuzz.log | grep -o '[0-9]*$') inputs"
            fi
            rm -rf "$corpus"
        done
    else
        echo "clang not installed: fuzz step skipped"
    fi
fi

if [ -n "${failed_tail:-}" ]; then
    echo "== failed tests of step 1, the last lines of each"
    echo "$failed_tail"
fi
if [ $status -eq 0 ]; then echo "test.sh: all steps passed"; else echo "test.sh: FAILED"; fi
exit $status
