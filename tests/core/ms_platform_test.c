/*  =========================================================================
    ms_platform_test - platform facts and the calibration figure

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ms_platform.h"

//  --------------------------------------------------------------------------
static void
test_detect(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    ms_platform_t p;
    assert_int_equal(ms_platform_detect(&p, b), MS_OK);
    assert_string_equal(p.backend, "cpu");
    assert_true(strlen(p.cpu_model) > 0);
    assert_int_equal(strncmp(p.blas, "OpenBLAS ", 9), 0);
    assert_true(strlen(p.blas_core) > 0);
    assert_int_equal(p.blas_threads, 1);
    //  The build field carries the engine's numerics version.
    char build[64];
    snprintf(build, sizeof build, "%s numerics %d", MESHSWEEP_VERSION,
             MS_ENGINE_NUMERICS_VERSION);
    assert_string_equal(p.build, build);
    assert_true(strlen(p.compiler) > 0);
    assert_non_null(strstr(p.build_flags, "-ffp-contract=off"));
    assert_int_equal(strncmp(p.libc, "glibc ", 6), 0);
    assert_true(p.calibration_gflops == 0.0);
#if defined(__x86_64__)
    assert_non_null(strstr(p.cpu_flags, "sse4_2"));
#endif
    //  The core type follows OPENBLAS_CORETYPE when the environment pins
    //  it (ctest sets Haswell for the golden test and the suite).
    const char *pinned = getenv("OPENBLAS_CORETYPE");
    if (pinned && strcmp(pinned, "Haswell") == 0)
        assert_string_equal(p.blas_core, "Haswell");
    ms_backend_destroy(&b);
    //  No backend: cpu.
    assert_int_equal(ms_platform_detect(&p, NULL), MS_OK);
    assert_string_equal(p.backend, "cpu");
}

//  Calibration: positive, and fast.
static void
test_calibrate(void **state)
{
    (void) state;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double gf = ms_platform_calibrate();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double) (t1.tv_sec - t0.tv_sec) +
               (double) (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    assert_true(gf > 0.1);
    assert_true(s < 1.0);
}

//  Fingerprint fields, in order, without the calibration figure: ten on
//  the cpu, eighteen on cuda (room for more, so a new field fails the
//  count assertions rather than writing past the array).
#define S_MAX_FIELDS 32
typedef struct {
    int n;
    char names[S_MAX_FIELDS][32];
} seen_t;

static void
collect(void *arg, const char *name, const char *value)
{
    seen_t *seen = arg;
    assert_non_null(value);
    assert_true(seen->n < S_MAX_FIELDS);
    snprintf(seen->names[seen->n++], 32, "%s", name);
}

static void
test_fields(void **state)
{
    (void) state;
    ms_platform_t p;
    ms_platform_detect(&p, NULL);
    p.calibration_gflops = 12.5;
    seen_t seen = {0};
    ms_platform_fields(&p, collect, &seen);
    assert_int_equal(seen.n, 10);
    assert_string_equal(seen.names[0], "backend");
    assert_string_equal(seen.names[4], "blas_core");
    assert_string_equal(seen.names[9], "libc");
    for (int i = 0; i < seen.n; i++)
        assert_null(strstr(seen.names[i], "calibration"));
}

//  On the CPU the GPU facts are empty and stay out of the fingerprint (a
//  CPU fingerprint is what it was before the CUDA backend); a cuda
//  platform lists them after libc, in order.
static void
test_fields_gpu(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    ms_backend_info_t info;
    memset(&info, 0x55, sizeof info);
    assert_int_equal(ms_backend_info(b, &info), MS_OK);
    assert_string_equal(info.backend, "cpu");
    assert_string_equal(info.device, "");
    assert_true(info.memory_bytes == 0 && !info.tf32);
    assert_int_equal(ms_backend_set_tf32(b, true), MS_ERR_UNSUPPORTED);
    ms_platform_t p;
    assert_int_equal(ms_platform_detect(&p, b), MS_OK);
    assert_string_equal(p.gpu, "");
    assert_string_equal(p.cublas, "");
    assert_false(p.tf32);
    seen_t seen = {0};
    ms_platform_fields(&p, collect, &seen);
    assert_int_equal(seen.n, 10);
    for (int i = 0; i < seen.n; i++) {
        assert_null(strstr(seen.names[i], "gpu"));
        assert_null(strstr(seen.names[i], "cu"));
        assert_null(strstr(seen.names[i], "tf32"));
    }
    ms_backend_destroy(&b);

    snprintf(p.backend, sizeof p.backend, "cuda");
    snprintf(p.gpu, sizeof p.gpu, "NVIDIA H200");
    snprintf(p.gpu_cc, sizeof p.gpu_cc, "9.0");
    p.tf32 = true;
    p.cublas_workspace_bytes = 4 << 20;
    memset(&seen, 0, sizeof seen);
    ms_platform_fields(&p, collect, &seen);
    assert_int_equal(seen.n, 18);
    assert_string_equal(seen.names[9], "libc");
    const char *gpu_names[] = {"gpu",
                               "gpu_cc",
                               "gpu_driver",
                               "cuda_runtime",
                               "cublas",
                               "tf32",
                               "cublas_workspace_bytes",
                               "gemm"};
    for (int i = 0; i < 8; i++)
        assert_string_equal(seen.names[10 + i], gpu_names[i]);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_calibrate),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_fields_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
