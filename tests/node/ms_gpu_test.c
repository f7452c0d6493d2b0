/*  =========================================================================
    ms_gpu_test - the node's GPU plan: gpu_workers parsing, the split of
    workers between GPU and CPU, the fallback line, the probe in a child,
    the GPU worker's memory budget, the /status object

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Runs without a GPU: the plan is tested with stub probes (a device
    found, none found), and the real probe with whatever this build and
    machine have.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ms_gpu.h"

static int s_probe_calls = 0; // calls of the stub probes

//  --------------------------------------------------------------------------
//  A probe that finds a 64 GiB GPU.

static int
s_probe_found(ms_backend_info_t *gpu, int timeout_ms, ms_diag_t *diag)
{
    (void) timeout_ms;
    (void) diag;
    s_probe_calls++;
    memset(gpu, 0, sizeof *gpu);
    snprintf(gpu->backend, sizeof gpu->backend, "cuda");
    snprintf(gpu->device, sizeof gpu->device, "Test GPU");
    gpu->cc_major = 9;
    gpu->driver_version = 13000;
    gpu->runtime_version = 13000;
    gpu->blas_version = 130002;
    gpu->memory_bytes = (int64_t) 64 << 30;
    gpu->workspace_bytes = 4 << 20;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A probe that finds no driver.

static int
s_probe_none(ms_backend_info_t *gpu, int timeout_ms, ms_diag_t *diag)
{
    (void) timeout_ms;
    s_probe_calls++;
    memset(gpu, 0, sizeof *gpu);
    return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                            "no CUDA driver (libcuda.so.1 not found)");
}

//  --------------------------------------------------------------------------
//  gpu_workers: auto or 0..4096; anything else one clear error.

static void
test_workers_parse(void **state)
{
    (void) state;
    int v = 7;
    ms_diag_t diag;
    assert_int_equal(ms_gpu_workers_parse("auto", &v, &diag), MS_OK);
    assert_int_equal(v, MS_GPU_WORKERS_AUTO);
    assert_int_equal(ms_gpu_workers_parse("0", &v, &diag), MS_OK);
    assert_int_equal(v, 0);
    assert_int_equal(ms_gpu_workers_parse("12", &v, &diag), MS_OK);
    assert_int_equal(v, 12);
    const char *bad[] = {"", "-1", "4097", "two", "3x", "Auto", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ms_diag_clear(&diag);
        assert_int_equal(ms_gpu_workers_parse(bad[i], &v, &diag),
                         MS_ERR_INVALID);
        assert_string_equal(diag.where, "gpu_workers");
        char want[64];
        snprintf(want, sizeof want, "'%s' is not a whole number", bad[i]);
        if (!strstr(diag.reason, want))
            fail_msg("'%s': reason '%s'", bad[i], diag.reason);
    }
}

//  --------------------------------------------------------------------------
//  With a GPU: auto puts every worker on it (up to one per 2 GiB free);
//  a number splits; 0 or backend cpu never probe.

static void
test_plan_with_gpu(void **state)
{
    (void) state;
    ms_gpu_plan_t plan;
    ms_diag_t diag;
    s_probe_calls = 0;
    assert_int_equal(ms_gpu_plan(&plan, "auto", MS_GPU_WORKERS_AUTO, 4,
                                 s_probe_found, &diag),
                     MS_OK);
    assert_true(plan.have_gpu);
    assert_string_equal(plan.gpu_backend, "cuda");
    assert_int_equal(plan.n_gpu_workers, 4);
    assert_string_equal(plan.note, "");
    assert_string_equal(plan.gpu.device, "Test GPU");
    // 64 GiB, 4 contexts of 512 MiB: 15.5 GiB each.
    assert_true(ms_gpu_worker_budget(&plan) ==
                (((int64_t) 64 << 30) - 4 * MS_GPU_CONTEXT_BYTES) / 4);

    // 64 GiB: at most 32 GPU workers in auto; the rest on the CPU.
    assert_int_equal(ms_gpu_plan(&plan, "cuda", MS_GPU_WORKERS_AUTO, 40,
                                 s_probe_found, &diag),
                     MS_OK);
    assert_int_equal(plan.n_gpu_workers, 32);
    assert_int_equal(plan.n_workers, 40);

    assert_int_equal(ms_gpu_plan(&plan, "auto", 2, 8, s_probe_found, &diag),
                     MS_OK);
    assert_int_equal(plan.n_gpu_workers, 2);
    assert_int_equal(s_probe_calls, 3);

    // No GPU worker wanted: no probe, no line, CPU.
    assert_int_equal(ms_gpu_plan(&plan, "auto", 0, 8, s_probe_found, &diag),
                     MS_OK);
    assert_int_equal(plan.n_gpu_workers, 0);
    assert_false(plan.have_gpu);
    assert_string_equal(plan.note, "");
    assert_true(ms_gpu_worker_budget(&plan) == 0);
    assert_int_equal(
        ms_gpu_plan(&plan, "cpu", MS_GPU_WORKERS_AUTO, 8, s_probe_found, &diag),
        MS_OK);
    assert_string_equal(plan.gpu_backend, "cpu");
    assert_int_equal(s_probe_calls, 3);
}

//  --------------------------------------------------------------------------
//  Without a GPU: auto falls back with one line saying why; cuda is
//  refused with the reason.

static void
test_plan_without_gpu(void **state)
{
    (void) state;
    ms_gpu_plan_t plan;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_gpu_plan(&plan, "auto", MS_GPU_WORKERS_AUTO, 3, s_probe_none, &diag),
        MS_OK);
    assert_false(plan.have_gpu);
    assert_int_equal(plan.n_gpu_workers, 0);
    assert_string_equal(plan.gpu_backend, "cpu");
    assert_string_equal(plan.note,
                        "backend auto: no usable GPU (no CUDA driver "
                        "(libcuda.so.1 not found)); all 3 workers train on "
                        "the CPU");
    assert_null(strchr(plan.note, '\n'));

    ms_diag_clear(&diag);
    assert_int_equal(
        ms_gpu_plan(&plan, "cuda", MS_GPU_WORKERS_AUTO, 3, s_probe_none, &diag),
        MS_ERR_INVALID);
    assert_string_equal(diag.where, "backend");
    assert_non_null(strstr(diag.reason, "libcuda.so.1 not found"));
    assert_non_null(strstr(diag.reason, "--backend auto or cpu"));
}

//  --------------------------------------------------------------------------
//  Bad combinations: one clear error each.

static void
test_plan_refuses(void **state)
{
    (void) state;
    ms_gpu_plan_t plan;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_gpu_plan(&plan, "auto", 5, 4, s_probe_found, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "gpu_workers");
    assert_string_equal(diag.reason, "5 is more than the node's 4 workers");
    ms_diag_clear(&diag);
    assert_int_equal(ms_gpu_plan(&plan, "cpu", 1, 4, s_probe_found, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "backend cpu"));
    ms_diag_clear(&diag);
    assert_int_equal(ms_gpu_plan(&plan, "tpu", 1, 4, s_probe_found, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "backend");
    assert_non_null(strstr(diag.reason, "'tpu'"));
}

//  --------------------------------------------------------------------------
//  The real probe runs in a child and comes back with an answer: on a
//  build without the CUDA backend, why not in so many words.

static void
test_probe_in_child(void **state)
{
    (void) state;
    ms_backend_info_t gpu;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_gpu_probe(&gpu, 20000, &diag);
#ifndef MESHSWEEP_HAVE_CUDA
    assert_int_equal(rc, MS_ERR_NODEVICE);
    assert_non_null(strstr(diag.reason, "this build has no CUDA backend"));
#else
    if (rc == MS_OK)
        assert_true(gpu.device[0] && gpu.memory_bytes > 0);
    else {
        assert_int_equal(rc, MS_ERR_NODEVICE);
        assert_true(diag.reason[0] != 0);
    }
#endif
}

//  --------------------------------------------------------------------------
//  The /status object.

static void
test_plan_json(void **state)
{
    (void) state;
    ms_gpu_plan_t plan;
    ms_diag_t diag;
    assert_int_equal(ms_gpu_plan(&plan, "auto", 1, 3, s_probe_found, &diag),
                     MS_OK);
    json_t *obj = ms_gpu_plan_json(&plan);
    assert_non_null(obj);
    assert_string_equal(json_string_value(json_object_get(obj, "requested")),
                        "auto");
    assert_int_equal(json_integer_value(json_object_get(obj, "gpu_workers")),
                     1);
    assert_int_equal(json_integer_value(json_object_get(obj, "cpu_workers")),
                     2);
    json_t *gpu = json_object_get(obj, "gpu");
    assert_string_equal(json_string_value(json_object_get(gpu, "name")),
                        "Test GPU");
    assert_string_equal(json_string_value(json_object_get(gpu, "cublas")),
                        "13.0.2");
    assert_string_equal(json_string_value(json_object_get(gpu, "cc")), "9.0");
    assert_string_equal(json_string_value(json_object_get(gpu, "driver")),
                        "13.0");
    assert_true(json_is_false(json_object_get(gpu, "tf32")));
    assert_true(json_is_null(json_object_get(obj, "note")));
    json_decref(obj);

    assert_int_equal(
        ms_gpu_plan(&plan, "auto", MS_GPU_WORKERS_AUTO, 2, s_probe_none, &diag),
        MS_OK);
    obj = ms_gpu_plan_json(&plan);
    assert_true(json_is_null(json_object_get(obj, "gpu")));
    assert_non_null(
        strstr(json_string_value(json_object_get(obj, "note")), "no CUDA"));
    assert_int_equal(json_integer_value(json_object_get(obj, "cpu_workers")),
                     2);
    json_decref(obj);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workers_parse),
        cmocka_unit_test(test_plan_with_gpu),
        cmocka_unit_test(test_plan_without_gpu),
        cmocka_unit_test(test_plan_refuses),
        cmocka_unit_test(test_probe_in_child),
        cmocka_unit_test(test_plan_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
