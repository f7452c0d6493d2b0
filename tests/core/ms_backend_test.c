/*  =========================================================================
    ms_backend_test - backend construction, buffers, gemm, reductions

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ms_backend.h"
#include "ms_backend_internal.h"
#include "ms_synth.h"
#include "ms_train.h"

//  --------------------------------------------------------------------------
static void
test_open_by_name(void **state)
{
    (void) state;
    ms_backend_t *b = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_backend_open(&b, "cpu", 1, &diag), MS_OK);
    assert_string_equal(ms_backend_name(b), "cpu");
    assert_int_equal(ms_backend_threads(b), 1);
    const ms_backend_ops_t *ops = ms_backend_ops(b);
    assert_true(ops->host_memory);
    assert_string_equal(ops->name, "cpu");
    //  Every operation is there.
    assert_true(
        ops->alloc && ops->free_buf && ops->upload && ops->download &&
        ops->copy && ops->gemm && ops->bias_act_forward && ops->act_backward &&
        ops->mul && ops->col_sum && ops->softmax_xent && ops->mse &&
        ops->optim_step && ops->gather && ops->batch_end && ops->capture &&
        ops->graph_launch && ops->graph_destroy && ops->layer_norm_forward &&
        ops->layer_norm_backward && ops->batch_norm_forward &&
        ops->batch_norm_backward && ops->residual_forward &&
        ops->residual_backward && ops->clip_norm);
    //  No graphs on the cpu: the caller runs the function itself.
    ms_backend_graph_t *graph = (ms_backend_graph_t *) &diag;
    assert_int_equal(ops->capture(b, NULL, NULL, &graph), MS_ERR_UNSUPPORTED);
    assert_null(graph);
    ms_backend_destroy(&b);
    assert_null(b);
    ms_backend_destroy(&b); // NULL-safe
    //  cuda opens where a device (and a CUDA build) is; otherwise it says
    //  why, and auto falls back to cpu with that reason in its note.
    ms_diag_clear(&diag);
    int cuda_rc = ms_backend_open(&b, "cuda", 1, &diag);
    if (cuda_rc == MS_OK) {
        assert_string_equal(ms_backend_name(b), "cuda");
        assert_false(ms_backend_ops(b)->host_memory);
        ms_backend_destroy(&b);
    } else {
        assert_int_equal(cuda_rc, MS_ERR_NODEVICE);
        assert_null(b);
        assert_non_null(strstr(diag.reason, "cuda: "));
        print_message("cuda: %s\n", diag.reason);
    }
    assert_int_equal(ms_backend_open(&b, "auto", 0, &diag), MS_OK);
    assert_int_equal(ms_backend_threads(b), 1); // < 1 means 1
    if (cuda_rc == MS_OK) {
        assert_string_equal(ms_backend_name(b), "cuda");
        assert_string_equal(ms_backend_note(b), "");
    } else {
        assert_string_equal(ms_backend_name(b), "cpu");
        assert_non_null(strstr(ms_backend_note(b), "backend auto: cuda: "));
        assert_non_null(strstr(ms_backend_note(b), "; using cpu"));
        print_message("%s\n", ms_backend_note(b));
    }
    ms_backend_destroy(&b);
    assert_int_equal(ms_backend_open(&b, NULL, 1, &diag), MS_OK); // auto
    ms_backend_destroy(&b);
    //  The cpu backend: no note, no error, info names it, no TF32.
    b = ms_backend_cpu_new(1);
    assert_string_equal(ms_backend_note(b), "");
    assert_string_equal(ms_backend_last_error(b), "");
    ms_backend_info_t info;
    assert_int_equal(ms_backend_info(b, &info), MS_OK);
    assert_string_equal(info.backend, "cpu");
    assert_false(info.tf32);
    assert_int_equal(ms_backend_set_tf32(b, true), MS_ERR_UNSUPPORTED);
    ms_backend_destroy(&b);
    assert_int_equal(ms_backend_open(&b, "tpu", 1, &diag), MS_ERR_INVALID);
    assert_null(b);
    assert_non_null(strstr(diag.reason, "\"tpu\""));
}

//  Buffers are zeroed, 64-byte aligned; copies round-trip.
static void
test_buffers(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    const ms_backend_ops_t *ops = ms_backend_ops(b);
    float *d = ops->alloc(b, 100 * sizeof(float));
    float *e = ops->alloc(b, 100 * sizeof(float));
    assert_non_null(d);
    assert_int_equal((uintptr_t) d % 64, 0);
    for (int i = 0; i < 100; i++)
        assert_true(d[i] == 0.0f);
    float host[100], back[100];
    for (int i = 0; i < 100; i++)
        host[i] = (float) i * 0.5f;
    assert_int_equal(ops->upload(b, d, host, sizeof host), MS_OK);
    assert_int_equal(ops->copy(b, e, d, sizeof host), MS_OK);
    assert_int_equal(ops->download(b, back, e, sizeof host), MS_OK);
    assert_memory_equal(host, back, sizeof host);
    ops->free_buf(b, d);
    ops->free_buf(b, e);
    ops->free_buf(b, NULL);
    ms_backend_destroy(&b);
}

//  --------------------------------------------------------------------------
//  gemm in all four orientations against a naive double product.
static void
test_gemm_orientations(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    enum { M = 5, N = 7, K = 6 };
    float a[M * K], bt[K * N], c[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = 0.1f * (float) (i % 9 - 4);
    for (int i = 0; i < K * N; i++)
        bt[i] = 0.2f * (float) (i % 7 - 3);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            //  Stored shapes: A is M x K (or K x M when ta), B is K x N (or
            //  N x K when tb).
            int lda = ta ? M : K, ldb = tb ? K : N;
            for (int i = 0; i < M * N; i++)
                c[i] = 1.0f;
            ms_backend_ops(b)->gemm(b, ta, tb, M, N, K, 2.0f, a, lda, bt, ldb,
                                    0.5f, c, N);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int k = 0; k < K; k++) {
                        double av = ta ? a[k * M + i] : a[i * K + k];
                        double bv = tb ? bt[j * K + k] : bt[k * N + j];
                        s += av * bv;
                    }
                    double want = 2.0 * s + 0.5;
                    assert_true(fabs(c[i * N + j] - want) < 1e-5);
                }
        }
    ms_backend_destroy(&b);
}

//  col_sum sums rows in order; mul is element-wise.
static void
test_col_sum_and_mul(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    const ms_backend_ops_t *ops = ms_backend_ops(b);
    float d[6] = {1, 2, 3, 4, 5, 6}, db[3] = {9, 9, 9};
    ops->col_sum(b, 2, 3, d, db);
    assert_true(db[0] == 5 && db[1] == 7 && db[2] == 9);
    float mask[6] = {0, 2, 2, 0, 2, 0}, out[6];
    ops->mul(b, 6, mask, d, out);
    assert_true(out[0] == 0 && out[1] == 4 && out[4] == 10 && out[5] == 0);
    ms_backend_destroy(&b);
}

//  --------------------------------------------------------------------------
//  The capability rule: a backend whose table lacks an op (here the cpu's
//  table with layer_norm_forward, residual_backward or clip_norm taken
//  out) refuses exactly the configs that need it, naming the parameter
//  and the op, and so does ms_trainer_open; the cpu has every op.
static void
test_supports(void **state)
{
    (void) state;
    ms_backend_t *cpu = ms_backend_cpu_new(1);
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    ms_train_config_set_uniform(&cfg, 3, 8);
    ms_diag_t diag;
    cfg.architecture = MS_ARCH_RESIDUAL;
    cfg.norm = MS_NORM_LAYER;
    cfg.clip_norm = 1;
    assert_int_equal(ms_backend_supports(cpu, &cfg, &diag), MS_OK);
    ms_backend_ops_t lacking = *ms_backend_ops(cpu);
    lacking.name = "lacking";
    lacking.layer_norm_forward = NULL;
    ms_backend_t fake = *cpu;
    fake.ops = &lacking;
    assert_int_equal(ms_backend_supports(&fake, &cfg, &diag),
                     MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "norm");
    assert_non_null(strstr(diag.reason, "lacking backend has no "
                                        "layer_norm_forward"));
    //  The same trainer open is refused with the reason.
    ms_dataset_t *data = ms_synth_blobs(40, 4, 3, 0.5, 1);
    ms_dataset_t *empty = ms_synth_empty(4, 3);
    ms_trainer_t *t = NULL;
    assert_int_equal(
        ms_trainer_open(&t, &cfg, data, empty, empty, &fake, &diag),
        MS_ERR_UNSUPPORTED);
    assert_null(t);
    assert_string_equal(diag.where, "norm");
    //  Batch norm, a plain net, no clipping: layer norm is not needed.
    cfg.norm = MS_NORM_BATCH;
    cfg.architecture = MS_ARCH_PLAIN;
    cfg.clip_norm = 0;
    assert_int_equal(ms_backend_supports(&fake, &cfg, &diag), MS_OK);
    lacking.residual_backward = NULL;
    lacking.clip_norm = NULL;
    assert_int_equal(ms_backend_supports(&fake, &cfg, &diag), MS_OK);
    cfg.architecture = MS_ARCH_RESIDUAL;
    assert_int_equal(ms_backend_supports(&fake, &cfg, &diag),
                     MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "architecture");
    cfg.architecture = MS_ARCH_PLAIN;
    cfg.clip_norm = 0.5;
    assert_int_equal(ms_backend_supports(&fake, &cfg, &diag),
                     MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "clip_norm");
    //  The rule on a table by name, as a node uses it for its GPU
    //  workers: the cpu's has everything; a backend this build lacks
    //  trains nothing.
    assert_int_equal(
        ms_backend_ops_supports(ms_backend_ops_named("cpu"), &cfg, &diag),
        MS_OK);
    assert_null(ms_backend_ops_named("nope"));
    assert_int_equal(ms_backend_ops_supports(NULL, &cfg, &diag),
                     MS_ERR_UNSUPPORTED);
    //  A noop task needs nothing.
    cfg.kind = MS_KIND_NOOP;
    assert_int_equal(ms_backend_supports(&fake, &cfg, &diag), MS_OK);
    assert_int_equal(ms_backend_ops_supports(NULL, &cfg, &diag), MS_OK);
    ms_synth_free(&data);
    ms_synth_free(&empty);
    ms_backend_destroy(&cpu);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_by_name),
        cmocka_unit_test(test_supports),
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_gemm_orientations),
        cmocka_unit_test(test_col_sum_and_mul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
