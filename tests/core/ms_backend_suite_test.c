/*  =========================================================================
    ms_backend_suite_test - the backend-parametrised suite: every op
    against the CPU backend on random shapes with poisoned outputs, the
    network's gradients against finite differences, and whole training
    runs against the CPU backend, on the backend named by argv[1]

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Registered twice (labels.cmake): ms_backend_suite_test runs it on
    "cpu" (every CPU-side path through the backend interface: uploads,
    downloads, the cursor, the gather), ms_backend_suite_cuda on "cuda",
    labelled cuda: it exits 77 (skipped, with the reason on stderr) when
    no CUDA device can be opened, never a silent pass.

    Tolerances, float32 throughout, TF32 off:
      - element-wise ops (bias + activation, activation backward, mul,
        optimizer steps) and col_sum run the CPU's exact arithmetic on
        the GPU too (same ms_math.h code, no FMA, same order): they must
        agree within 2 ulp (the message says when they are not bit-
        identical);
      - gemm: |c - c_cpu| <= 1e-5 (1 + sum |a||b|) per element (cuBLAS and
        OpenBLAS sum in different orders);
      - losses: the summed loss within 1e-9 relative (double sums in
        another order), hits exact, deltas within 2 ulp;
      - training: train and validation losses within 1e-4 relative of the
        CPU backend after 20 steps and 1e-3 after one epoch.
    Poisoning: every output buffer is filled with NaN before the op; after
    it every element the op must write is finite (inputs are finite).
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_activation.h"
#include "ms_backend.h"
#include "ms_mlp.h"
#include "ms_optim.h"
#include "ms_rng.h"
#include "ms_synth.h"
#include "ms_train.h"

static const char *s_name = "cpu"; // backend under test
static ms_backend_t *s_b;          // it
static ms_backend_t *s_cpu;        // the reference
static ms_rng_t s_rng;             // test inputs

//  --------------------------------------------------------------------------
//  Helpers: device buffers from host arrays and back.

static void *
dev_from(const void *host, size_t n_bytes)
{
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    void *d = ops->alloc(s_b, n_bytes);
    assert_non_null(d);
    if (host)
        assert_int_equal(ops->upload(s_b, d, host, n_bytes), MS_OK);
    return d;
}

static void
dev_read(void *host, const void *dev, size_t n_bytes)
{
    assert_int_equal(ms_backend_ops(s_b)->download(s_b, host, dev, n_bytes),
                     MS_OK);
}

static void
dev_free(void *d)
{
    ms_backend_ops(s_b)->free_buf(s_b, d);
}

//  n random floats in [-scale, scale].
static float *
rand_floats(int64_t n, double scale)
{
    float *x = malloc((size_t) (n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        x[i] = (float) ((2 * ms_rng_uniform(&s_rng) - 1) * scale);
    return x;
}

//  n NaNs (the poison).
static float *
nan_floats(int64_t n)
{
    float *x = malloc((size_t) (n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        x[i] = NAN;
    return x;
}

//  Distance in ulps between two finite floats of the same sign class.
static int64_t
ulps(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0)
        ia = INT32_MIN - ia;
    if (ib < 0)
        ib = INT32_MIN - ib;
    int64_t d = (int64_t) ia - ib;
    return d < 0 ? -d : d;
}

//  got (from the backend) against want (CPU) within max_ulp; every got
//  finite (written). Reports the worst element.
static void
check_close(const char *what, const float *got, const float *want, int64_t n,
            int64_t max_ulp)
{
    int64_t worst = 0, at = -1;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) && isfinite(want[i]))
            fail_msg("%s [%s]: element %lld not written or not finite (%g, "
                     "cpu %g)",
                     what, s_name, (long long) i, got[i], want[i]);
        int64_t u = ulps(got[i], want[i]);
        if (u > worst) {
            worst = u;
            at = i;
        }
    }
    if (worst > max_ulp)
        fail_msg("%s [%s]: element %lld is %g, cpu %g (%lld ulp > %lld)", what,
                 s_name, (long long) at, got[at], want[at], (long long) worst,
                 (long long) max_ulp);
    if (worst > 0)
        print_message("note: %s [%s]: within %lld ulp of cpu, not "
                      "bit-identical\n",
                      what, s_name, (long long) worst);
}

//  Random odd and even shapes, 1 included.
static int64_t
rand_dim(int64_t hi)
{
    int64_t pick[6] = {1, 3, 7, 16, 33, hi};
    return pick[ms_rng_below(&s_rng, 6)];
}

//  --------------------------------------------------------------------------
static void
test_open_and_info(void **state)
{
    (void) state;
    ms_backend_info_t info;
    assert_int_equal(ms_backend_info(s_b, &info), MS_OK);
    assert_string_equal(info.backend, s_name);
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    assert_true(ops->gather && ops->batch_end && ops->capture &&
                ops->graph_launch && ops->graph_destroy);
    if (strcmp(s_name, "cuda") == 0) {
        print_message(
            "cuda: %s, cc %d.%d, %d SMs, %.1f GiB, driver %d, "
            "runtime %d, cuBLAS %d (%s), tf32 %s, workspace %lld\n",
            info.device, (int) info.cc_major, (int) info.cc_minor,
            (int) info.n_sms, (double) info.memory_bytes / 1073741824.0,
            (int) info.driver_version, (int) info.runtime_version,
            (int) info.blas_version, info.blas_library,
            info.tf32 ? "on" : "off", (long long) info.workspace_bytes);
        assert_true(info.device[0] && info.cc_major >= 7);
        assert_false(info.tf32);
        assert_true(info.workspace_bytes > 0 && info.blas_version > 0);
        assert_false(ops->host_memory);
        assert_int_equal(ms_backend_set_tf32(s_b, true), MS_OK);
        assert_int_equal(ms_backend_info(s_b, &info), MS_OK);
        assert_true(info.tf32);
        assert_int_equal(ms_backend_set_tf32(s_b, false), MS_OK);
    } else
        assert_int_equal(ms_backend_set_tf32(s_b, true), MS_ERR_UNSUPPORTED);
}

//  Buffers are zeroed; upload, copy, download round-trip.
static void
test_buffers(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    enum { N = 1001 };
    float *host = rand_floats(N, 3), *back = nan_floats(N);
    float *d = dev_from(NULL, N * sizeof(float));
    float *e = dev_from(NULL, N * sizeof(float));
    dev_read(back, d, N * sizeof(float));
    for (int i = 0; i < N; i++)
        assert_true(back[i] == 0.0f);
    assert_int_equal(ops->upload(s_b, d, host, N * sizeof(float)), MS_OK);
    assert_int_equal(ops->copy(s_b, e, d, N * sizeof(float)), MS_OK);
    dev_read(back, e, N * sizeof(float));
    assert_memory_equal(host, back, N * sizeof(float));
    dev_free(d);
    dev_free(e);
    ops->free_buf(s_b, NULL);
    free(host);
    free(back);
}

//  --------------------------------------------------------------------------
//  gemm in every orientation on random shapes, beta 0 over a NaN-filled C
//  (BLAS must not read C then) and beta 0.5. pad > 0: leading dimensions
//  pad more than the rows need (A, B and C), the padding NaN-filled and C's
//  checked untouched; and the call repeated must give the same bits.
static void
gemm_random_shapes(int64_t pad)
{
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    for (int trial = 0; trial < 24; trial++) {
        int64_t m = rand_dim(257), n = rand_dim(130), k = rand_dim(301);
        bool ta = trial & 1, tb = (trial >> 1) & 1, acc = (trial >> 2) & 1;
        int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad;
        int64_t ldc = n + pad;
        int64_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, nc = m * ldc;
        float *a = rand_floats(na, 1), *bm = rand_floats(nb, 1);
        float *c0 = acc ? rand_floats(nc, 1) : nan_floats(nc);
        //  The padding: NaN in A and B (never read), in C (never written).
        for (int64_t r = 0; r < (ta ? k : m); r++)
            for (int64_t q = ta ? m : k; q < lda; q++)
                a[r * lda + q] = NAN;
        for (int64_t r = 0; r < (tb ? n : k); r++)
            for (int64_t q = tb ? k : n; q < ldb; q++)
                bm[r * ldb + q] = NAN;
        for (int64_t r = 0; r < m; r++)
            for (int64_t q = n; q < ldc; q++)
                c0[r * ldc + q] = NAN;
        float *want = malloc((size_t) nc * sizeof(float));
        float *got = malloc((size_t) nc * sizeof(float));
        float *again = malloc((size_t) nc * sizeof(float));
        memcpy(want, c0, (size_t) nc * sizeof(float));
        if (!acc)
            for (int64_t r = 0; r < m; r++)
                memset(want + r * ldc, 0, (size_t) n * sizeof(float));
        float beta = acc ? 0.5f : 0.0f;
        ms_backend_ops(s_cpu)->gemm(s_cpu, ta, tb, m, n, k, 1.5f, a, lda, bm,
                                    ldb, beta, want, ldc);
        float *da = dev_from(a, (size_t) na * 4);
        float *db = dev_from(bm, (size_t) nb * 4);
        float *dc = dev_from(c0, (size_t) nc * 4);
        assert_int_equal(ops->gemm(s_b, ta, tb, m, n, k, 1.5f, da, lda, db, ldb,
                                   beta, dc, ldc),
                         MS_OK);
        dev_read(got, dc, (size_t) nc * 4);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double mag = 0;
                for (int64_t p = 0; p < k; p++)
                    mag += fabs(ta ? a[p * lda + i] : a[i * lda + p]) *
                           fabs(tb ? bm[j * ldb + p] : bm[p * ldb + j]);
                double g = got[i * ldc + j], w = want[i * ldc + j];
                if (!isfinite(g) || fabs(g - w) > 1e-5 * (1 + 1.5 * mag))
                    fail_msg("gemm [%s] %s%s m %lld n %lld k %lld beta %g pad "
                             "%lld: C[%lld,%lld] = %.9g, cpu %.9g",
                             s_name, ta ? "T" : "N", tb ? "T" : "N",
                             (long long) m, (long long) n, (long long) k,
                             (double) beta, (long long) pad, (long long) i,
                             (long long) j, g, w);
            }
        for (int64_t r = 0; r < m; r++)
            for (int64_t q = n; q < ldc; q++)
                if (!isnan(got[r * ldc + q]))
                    fail_msg("gemm [%s] pad %lld: C[%lld,%lld] past n written",
                             s_name, (long long) pad, (long long) r,
                             (long long) q);
        if (pad > 0) { // the same inputs again: the same bits
            assert_int_equal(ops->upload(s_b, dc, c0, (size_t) nc * 4), MS_OK);
            assert_int_equal(ops->gemm(s_b, ta, tb, m, n, k, 1.5f, da, lda, db,
                                       ldb, beta, dc, ldc),
                             MS_OK);
            dev_read(again, dc, (size_t) nc * 4);
            for (int64_t r = 0; r < m; r++)
                assert_memory_equal(got + r * ldc, again + r * ldc,
                                    (size_t) n * sizeof(float));
        }
        dev_free(da);
        dev_free(db);
        dev_free(dc);
        free(a);
        free(bm);
        free(c0);
        free(want);
        free(got);
        free(again);
    }
}

//  The tiny-GEMM setting back to its default (on; MESHSWEEP_CUDA_TINY_GEMM=0
//  turns it off).
static void
tiny_gemm_default(void)
{
    const char *env = getenv("MESHSWEEP_CUDA_TINY_GEMM");
    assert_int_equal(ms_backend_set_tiny_gemm(s_b, !(env && !strcmp(env, "0"))),
                     MS_OK);
}

static void
test_gemm_random_shapes(void **state)
{
    (void) state;
    //  On cuda: cuBLAS for every shape (the small-GEMM kernel, on by
    //  default, has test_gemm_tiny).
    bool cuda = strcmp(s_name, "cuda") == 0;
    if (cuda)
        assert_int_equal(ms_backend_set_tiny_gemm(s_b, false), MS_OK);
    gemm_random_shapes(0);
    gemm_random_shapes(5);
    if (cuda)
        tiny_gemm_default();
}

//  The same with the cuda backend's own small-GEMM kernel (every shape
//  above is small enough for it); cpu: the setter is unsupported.
static void
test_gemm_tiny(void **state)
{
    (void) state;
    if (strcmp(s_name, "cuda") != 0) {
        assert_int_equal(ms_backend_set_tiny_gemm(s_b, true),
                         MS_ERR_UNSUPPORTED);
        return;
    }
    assert_int_equal(ms_backend_set_tiny_gemm(s_b, true), MS_OK);
    gemm_random_shapes(0);
    gemm_random_shapes(5);
    tiny_gemm_default();
}

//  --------------------------------------------------------------------------
//  Every activation forward (out of place, and in place) and backward.
static void
test_activations_against_cpu(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    const ms_backend_ops_t *cpu = ms_backend_ops(s_cpu);
    for (int act = MS_ACTIVATION_RELU; act <= MS_ACTIVATION_LINEAR; act++) {
        int64_t rows = rand_dim(65), cols = rand_dim(97), n = rows * cols;
        char what[96];
        snprintf(what, sizeof what, "%s forward %lldx%lld",
                 ms_activation_name(act), (long long) rows, (long long) cols);
        float *z = rand_floats(n, 4), *bias = rand_floats(cols, 1);
        float *zc = malloc((size_t) n * 4), *ac = malloc((size_t) n * 4);
        memcpy(zc, z, (size_t) n * 4);
        cpu->bias_act_forward(s_cpu, act, 0.1f, rows, cols, bias, zc, ac);
        float *poison = nan_floats(n);
        float *dz = dev_from(z, (size_t) n * 4), *da = dev_from(poison, n * 4);
        float *dbias = dev_from(bias, (size_t) cols * 4);
        assert_int_equal(
            ops->bias_act_forward(s_b, act, 0.1f, rows, cols, dbias, dz, da),
            MS_OK);
        float *got = malloc((size_t) n * 4);
        dev_read(got, da, (size_t) n * 4);
        check_close(what, got, ac, n, 2);
        if (ms_activation_needs_z(act)) {
            dev_read(got, dz, (size_t) n * 4);
            check_close("gelu keeps z", got, zc, n, 2);
        }
        //  In place (a == z), as the network does for all but gelu.
        float *dzz = dev_from(z, (size_t) n * 4);
        assert_int_equal(
            ops->bias_act_forward(s_b, act, 0.1f, rows, cols, dbias, dzz, dzz),
            MS_OK);
        dev_read(got, dzz, (size_t) n * 4);
        check_close("forward in place", got, ac, n, 2);

        //  Backward from (zc, ac).
        snprintf(what, sizeof what, "%s backward %lld", ms_activation_name(act),
                 (long long) n);
        float *g = rand_floats(n, 1), *gc = malloc((size_t) n * 4);
        memcpy(gc, g, (size_t) n * 4);
        cpu->act_backward(s_cpu, act, 0.1f, n, zc, ac, gc);
        float *dzc = dev_from(zc, (size_t) n * 4);
        float *dac = dev_from(ac, (size_t) n * 4);
        float *dg = dev_from(g, (size_t) n * 4);
        assert_int_equal(ops->act_backward(s_b, act, 0.1f, n, dzc, dac, dg),
                         MS_OK);
        dev_read(got, dg, (size_t) n * 4);
        check_close(what, got, gc, n, 2);
        dev_free(dz);
        dev_free(da);
        dev_free(dbias);
        dev_free(dzz);
        dev_free(dzc);
        dev_free(dac);
        dev_free(dg);
        free(z);
        free(bias);
        free(zc);
        free(ac);
        free(poison);
        free(got);
        free(g);
        free(gc);
    }
}

//  --------------------------------------------------------------------------
//  mul and col_sum on poisoned outputs.
static void
test_mul_and_col_sum(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    for (int trial = 0; trial < 6; trial++) {
        int64_t rows = rand_dim(300), cols = rand_dim(129), n = rows * cols;
        float *x = rand_floats(n, 2), *mask = rand_floats(n, 2);
        float *want = malloc((size_t) n * 4), *got = malloc((size_t) n * 4);
        ms_backend_ops(s_cpu)->mul(s_cpu, n, mask, x, want);
        float *poison = nan_floats(n);
        float *dx = dev_from(x, (size_t) n * 4),
              *dm = dev_from(mask, (size_t) n * 4),
              *dout = dev_from(poison, (size_t) n * 4);
        assert_int_equal(ops->mul(s_b, n, dm, dx, dout), MS_OK);
        dev_read(got, dout, (size_t) n * 4);
        check_close("mul", got, want, n, 0);
        float *cw = malloc((size_t) cols * 4), *cg = malloc((size_t) cols * 4);
        ms_backend_ops(s_cpu)->col_sum(s_cpu, rows, cols, x, cw);
        float *dcs = dev_from(poison, (size_t) cols * 4);
        assert_int_equal(ops->col_sum(s_b, rows, cols, dx, dcs), MS_OK);
        dev_read(cg, dcs, (size_t) cols * 4);
        check_close("col_sum", cg, cw, cols, 0);
        dev_free(dx);
        dev_free(dm);
        dev_free(dout);
        dev_free(dcs);
        free(x);
        free(mask);
        free(want);
        free(got);
        free(poison);
        free(cw);
        free(cg);
    }
}

//  --------------------------------------------------------------------------
//  Losses: softmax cross-entropy, mse against labels and targets; the
//  accumulators are added to (start them non-zero).
static void
test_losses_against_cpu(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    const ms_backend_ops_t *cpu = ms_backend_ops(s_cpu);
    for (int trial = 0; trial < 12; trial++) {
        int kind = trial % 3; // xent, mse labels, mse targets
        int64_t rows = trial < 3 ? 1 : rand_dim(513);
        int64_t cols = kind == 2 ? 1 : 2 + (int64_t) ms_rng_below(&s_rng, 12);
        int64_t n = rows * cols;
        float *y = rand_floats(n, 5), *t = rand_floats(rows, 1);
        int32_t *labels = malloc((size_t) rows * 4);
        for (int64_t i = 0; i < rows; i++)
            labels[i] = (int32_t) ms_rng_below(&s_rng, (uint64_t) cols);
        float *dw = malloc((size_t) n * 4), *dg = malloc((size_t) n * 4);
        double lw = 0.25;
        int64_t cw = 3;
        if (kind == 0)
            cpu->softmax_xent(s_cpu, rows, cols, y, labels, 0.5f, dw, &lw, &cw);
        else
            cpu->mse(s_cpu, rows, cols, y, kind == 1 ? labels : NULL,
                     kind == 2 ? t : NULL, 0.5f, dw, &lw,
                     kind == 1 ? &cw : NULL);
        struct {
            double loss;
            int64_t hits;
        } acc = {0.25, 3}, back;
        void *dacc = dev_from(&acc, sizeof acc);
        float *poison = nan_floats(n);
        float *dy = dev_from(y, (size_t) n * 4), *dt = dev_from(t, rows * 4),
              *dd = dev_from(poison, (size_t) n * 4);
        int32_t *dl = dev_from(labels, (size_t) rows * 4);
        double *dloss = dacc;
        int64_t *dhits = (int64_t *) ((char *) dacc + sizeof(double));
        if (kind == 0)
            assert_int_equal(ops->softmax_xent(s_b, rows, cols, dy, dl, 0.5f,
                                               dd, dloss, dhits),
                             MS_OK);
        else
            assert_int_equal(ops->mse(s_b, rows, cols, dy,
                                      kind == 1 ? dl : NULL,
                                      kind == 2 ? dt : NULL, 0.5f, dd, dloss,
                                      kind == 1 ? dhits : NULL),
                             MS_OK);
        dev_read(&back, dacc, sizeof back);
        dev_read(dg, dd, (size_t) n * 4);
        const char *what = kind == 0   ? "softmax_xent"
                           : kind == 1 ? "mse (labels)"
                                       : "mse (targets)";
        if (fabs(back.loss - lw) > 1e-9 * fabs(lw))
            fail_msg("%s [%s] %lldx%lld: loss sum %.17g, cpu %.17g", what,
                     s_name, (long long) rows, (long long) cols, back.loss, lw);
        assert_int_equal(back.hits, cw);
        check_close(what, dg, dw, n, 2);
        dev_free(dacc);
        dev_free(dy);
        dev_free(dt);
        dev_free(dd);
        dev_free(dl);
        free(y);
        free(t);
        free(labels);
        free(dw);
        free(dg);
        free(poison);
    }
}

//  --------------------------------------------------------------------------
//  Every optimizer, weight and bias steps, from device scalars; skip
//  changes nothing.
static void
test_optimizers_against_cpu(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    for (int kind = MS_OPTIM_SGD; kind <= MS_OPTIM_ADAMW; kind++)
        for (int is_bias = 0; is_bias < 2; is_bias++) {
            ms_train_config_t cfg;
            ms_train_config_defaults(&cfg);
            cfg.optimizer = kind;
            cfg.l2 = 0.01;
            cfg.momentum = 0.9;
            int64_t n = rand_dim(5000);
            float *w = rand_floats(n, 1), *g = rand_floats(n, 1);
            float *m = rand_floats(n, 0.1), *v = rand_floats(n, 0.1);
            for (int64_t i = 0; i < n; i++)
                v[i] = fabsf(v[i]);
            float *dw = dev_from(w, n * 4), *dg = dev_from(g, n * 4),
                  *dm = dev_from(m, n * 4), *dv = dev_from(v, n * 4);
            ms_optim_step_t st;
            ms_optim_step_prepare(&st, &cfg, 0.01, 3, is_bias);
            ms_optim_step_t *dst = dev_from(&st, sizeof st);
            //  Three steps on the CPU and on the backend.
            for (int s = 0; s < 3; s++) {
                ms_backend_ops(s_cpu)->optim_step(s_cpu, &st, n, w, g, m, v);
                assert_int_equal(ops->optim_step(s_b, dst, n, dw, dg, dm, dv),
                                 MS_OK);
            }
            float *got = malloc((size_t) n * 4);
            char what[64];
            snprintf(what, sizeof what, "%s %s", ms_optim_name(kind),
                     is_bias ? "bias" : "weights");
            dev_read(got, dw, n * 4);
            check_close(what, got, w, n, 2);
            if (kind != MS_OPTIM_SGD) {
                dev_read(got, dm, n * 4);
                check_close("optimizer state m", got, m, n, 2);
            }
            //  skip: nothing moves.
            st.skip = 1;
            assert_int_equal(ops->upload(s_b, dst, &st, sizeof st), MS_OK);
            assert_int_equal(ops->optim_step(s_b, dst, n, dw, dg, dm, dv),
                             MS_OK);
            dev_read(got, dw, n * 4);
            check_close("skipped step", got, w, n, 2);
            dev_free(dw);
            dev_free(dg);
            dev_free(dm);
            dev_free(dv);
            dev_free(dst);
            free(w);
            free(g);
            free(m);
            free(v);
            free(got);
        }
}

//  --------------------------------------------------------------------------
//  gather by a device order from the cursor's first_row (floats, odd and
//  multiple-of-4 widths, int32 labels), and batch_end's accounting.
static void
test_gather_and_batch_end(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    enum { N = 97 };
    const int64_t widths[3] = {1, 13, 784};
    for (int w = 0; w < 3; w++) {
        int64_t cols = widths[w], rows = 11;
        float *src = rand_floats(N * cols, 9);
        int64_t idx[N];
        for (int64_t i = 0; i < N; i++)
            idx[i] = i;
        ms_rng_shuffle_i64(&s_rng, idx, N);
        ms_step_cursor_t c;
        memset(&c, 0, sizeof c);
        c.first_row = 40;
        float *dsrc = dev_from(src, (size_t) (N * cols) * 4);
        int64_t *didx = dev_from(idx, sizeof idx);
        ms_step_cursor_t *dc = dev_from(&c, sizeof c);
        float *poison = nan_floats(rows * cols);
        float *dout = dev_from(poison, (size_t) (rows * cols) * 4);
        float *got = malloc((size_t) (rows * cols) * 4);
        assert_int_equal(ops->gather(s_b, rows, cols, dsrc, didx, dc, dout),
                         MS_OK);
        dev_read(got, dout, (size_t) (rows * cols) * 4);
        for (int64_t i = 0; i < rows; i++)
            assert_memory_equal(got + i * cols, src + idx[40 + i] * cols,
                                (size_t) cols * 4);
        //  No cursor, no index: the first rows.
        assert_int_equal(ops->gather(s_b, rows, cols, dsrc, NULL, NULL, dout),
                         MS_OK);
        dev_read(got, dout, (size_t) (rows * cols) * 4);
        assert_memory_equal(got, src, (size_t) (rows * cols) * 4);
        dev_free(dsrc);
        dev_free(didx);
        dev_free(dc);
        dev_free(dout);
        free(src);
        free(got);
        free(poison);
    }

    //  batch_end: two finite minibatches, a NaN one, a finite one after it.
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    ms_optim_step_t table[8];
    for (int k = 0; k < 4; k++) {
        ms_optim_step_prepare(&table[2 * k], &cfg, 0.1, k + 1, false);
        ms_optim_step_prepare(&table[2 * k + 1], &cfg, 0.1, k + 1, true);
    }
    ms_optim_step_t *dtable = dev_from(table, sizeof table);
    ms_step_cursor_t c;
    memset(&c, 0, sizeof c);
    ms_step_cursor_t *dc = dev_from(&c, sizeof c);
    const double sums[4] = {3.0, 5.0, NAN, 1.0};
    for (int k = 0; k < 4; k++) {
        dev_read(&c, dc, sizeof c);
        c.loss_sum = sums[k];
        c.n_correct = 7;
        assert_int_equal(ops->upload(s_b, dc, &c, sizeof c), MS_OK);
        assert_int_equal(ops->batch_end(s_b, 4, dtable, dc), MS_OK);
        dev_read(&c, dc, sizeof c);
        assert_int_equal(c.first_row, 4 * (k + 1));
        assert_true(c.loss_sum == 0 && c.n_correct == 0);
        if (k == 1)
            assert_memory_equal(&c.w_step, &table[2], sizeof c.w_step);
    }
    assert_int_equal(c.n_steps, 2);
    assert_true(c.loss_acc == 3.0 / 4 + 5.0 / 4);
    assert_int_equal(c.diverged, 1);
    assert_true(isnan(c.bad_loss));
    assert_true(c.w_step.skip && c.b_step.skip);
    dev_free(dtable);
    dev_free(dc);
}

//  --------------------------------------------------------------------------
//  Gradient checks through the backend interface: the network on the
//  backend under test, parameters moved with upload / download.

enum { G_ROWS = 5, G_IN = 4 };

typedef struct {
    ms_mlp_t *mlp;
    ms_train_config_t cfg;
    float *params; // host copy
    int64_t np;
    ms_rng_t drop; // fixed dropout stream
} gnet_t;

static double
g_objective(gnet_t *n)
{
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    assert_int_equal(
        ops->upload(s_b, ms_mlp_params(n->mlp), n->params, (size_t) n->np * 4),
        MS_OK);
    ms_rng_t rng = n->drop;
    assert_int_equal(ms_mlp_forward(n->mlp, ms_mlp_params(n->mlp), G_ROWS,
                                    n->cfg.dropout > 0 ? &rng : NULL),
                     MS_OK);
    double sum = 0;
    int64_t hits = 0;
    assert_int_equal(ms_mlp_loss(n->mlp, G_ROWS, false, &sum, &hits), MS_OK);
    return sum / G_ROWS;
}

static void
g_check(int32_t n_hidden, const int32_t *sizes, ms_activation_t act,
        ms_loss_kind_t loss, double dropout, int32_t n_out)
{
    gnet_t n;
    memset(&n, 0, sizeof n);
    ms_train_config_defaults(&n.cfg);
    n.cfg.n_hidden = n_hidden;
    for (int32_t i = 0; i < n_hidden; i++)
        n.cfg.hidden_sizes[i] = sizes[i];
    n.cfg.activation = act;
    n.cfg.leaky_slope = 0.1;
    n.cfg.loss = loss;
    n.cfg.dropout = dropout;
    n.cfg.optimizer = MS_OPTIM_SGD;
    assert_int_equal(ms_mlp_open(&n.mlp, &n.cfg, G_IN, n_out, G_ROWS, s_b),
                     MS_OK);
    ms_rng_t rng;
    ms_rng_seed(&rng, 42, 1);
    assert_int_equal(ms_mlp_init(n.mlp, MS_INIT_XAVIER, &rng), MS_OK);
    n.np = ms_mlp_n_params(n.mlp);
    n.params = malloc((size_t) n.np * 4);
    dev_read(n.params, ms_mlp_params(n.mlp), (size_t) n.np * 4);
    for (int32_t l = 0; l < ms_mlp_n_layers(n.mlp); l++) {
        int64_t bo;
        int32_t fo;
        ms_mlp_layer(n.mlp, l, NULL, &bo, NULL, &fo);
        for (int32_t j = 0; j < fo; j++)
            n.params[bo + j] = 0.1f * (float) (j % 3) - 0.1f;
    }
    float x[G_ROWS * G_IN], t[G_ROWS];
    int32_t labels[G_ROWS];
    for (int i = 0; i < G_ROWS * G_IN; i++)
        x[i] = (float) ms_rng_normal(&rng);
    for (int i = 0; i < G_ROWS; i++) {
        labels[i] = i % (n_out > 1 ? n_out : 1);
        t[i] = (float) ms_rng_normal(&rng);
    }
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    ops->upload(s_b, ms_mlp_input(n.mlp), x, sizeof x);
    ops->upload(s_b, ms_mlp_labels(n.mlp), labels, sizeof labels);
    ops->upload(s_b, ms_mlp_targets(n.mlp), t, sizeof t);
    ms_rng_seed(&n.drop, 42, 2);

    //  Analytic gradient.
    g_objective(&n);
    ms_rng_t r2 = n.drop;
    assert_int_equal(ms_mlp_forward(n.mlp, ms_mlp_params(n.mlp), G_ROWS,
                                    dropout > 0 ? &r2 : NULL),
                     MS_OK);
    double sum = 0;
    int64_t hits = 0;
    assert_int_equal(ms_mlp_loss(n.mlp, G_ROWS, true, &sum, &hits), MS_OK);
    assert_int_equal(ms_mlp_backward(n.mlp, G_ROWS), MS_OK);
    float *an = malloc((size_t) n.np * 4);
    dev_read(an, ms_mlp_grads(n.mlp), (size_t) n.np * 4);

    //  Central differences (the rule of ms_mlp_test).
    int bad = 0;
    const float steps[3] = {1e-2f, 2e-3f, 3e-4f};
    for (int64_t i = 0; i < n.np; i++) {
        double fd = 0;
        bool ok = false;
        for (int k = 0; k < 3 && !ok; k++) {
            float h = steps[k], save = n.params[i];
            n.params[i] = save + h;
            double up = g_objective(&n);
            n.params[i] = save - h;
            double down = g_objective(&n);
            n.params[i] = save;
            fd = (up - down) / (double) (2 * h);
            ok = fabs(fd - an[i]) <= 1e-3 + 2e-2 * fabs(an[i]);
        }
        if (!ok && bad++ < 3)
            print_message("[%s] %s/%s/depth %d/dropout %.1f: param %lld fd "
                          "%.6g analytic %.6g\n",
                          s_name, ms_activation_name(act), ms_loss_name(loss),
                          (int) n_hidden, dropout, (long long) i, fd,
                          (double) an[i]);
    }
    free(an);
    free(n.params);
    ms_mlp_destroy(&n.mlp);
    if (bad)
        fail_msg("[%s] %s/%s/depth %d: %d gradients wrong", s_name,
                 ms_activation_name(act), ms_loss_name(loss), (int) n_hidden,
                 bad);
}

static void
test_gradients(void **state)
{
    (void) state;
    //  The shapes of ms_mlp_test (with {6, 5, 7} a relu unit of zero bias
    //  whose inputs were all dropped sits exactly on its kink).
    const int32_t sizes[3] = {8, 6, 5};
    for (int a = MS_ACTIVATION_RELU; a <= MS_ACTIVATION_LINEAR; a++) {
        g_check(2, sizes, a, MS_LOSS_CROSS_ENTROPY, 0, 3);
        g_check(2, sizes, a, MS_LOSS_MSE, 0, 1);
        g_check(3, sizes, a, MS_LOSS_CROSS_ENTROPY, 0.3, 3);
    }
    g_check(0, sizes, MS_ACTIVATION_RELU, MS_LOSS_MSE, 0, 2);
}

//  --------------------------------------------------------------------------
//  Training on the backend against the CPU backend.

typedef struct {
    const char *what;
    ms_activation_t act;
    ms_optim_kind_t opt;
    ms_loss_kind_t loss;
    double dropout;
    ms_schedule_t schedule;
} run_case_t;

//  Train cfg on both backends; compare every epoch's losses within tol.
static void
compare_runs(const char *what, const ms_train_config_t *cfg,
             const ms_dataset_t *train, const ms_dataset_t *val, double tol)
{
    ms_dataset_t *test = ms_synth_empty(train->n_features, train->n_classes);
    ms_run_result_t rc, rb;
    ms_diag_t diag;
    assert_int_equal(
        ms_train_run(cfg, train, val, test, s_cpu, NULL, NULL, &rc, &diag),
        MS_OK);
    int rcode =
        ms_train_run(cfg, train, val, test, s_b, NULL, NULL, &rb, &diag);
    if (rcode != MS_OK)
        fail_msg("%s [%s]: %s (%s)", what, s_name, ms_strerror(rcode),
                 ms_backend_last_error(s_b));
    assert_int_equal(rb.status, rc.status);
    assert_int_equal(rb.n_curve, rc.n_curve);
    for (int32_t e = 0; e < rc.n_curve; e++) {
        double pairs[2][2] = {{rb.curve[e].train_loss, rc.curve[e].train_loss},
                              {rb.curve[e].val_loss, rc.curve[e].val_loss}};
        for (int k = 0; k < 2; k++) {
            double got = pairs[k][0], want = pairs[k][1];
            if (!(fabs(got - want) <= tol * fabs(want)))
                fail_msg("%s [%s]: epoch %d %s loss %.9g, cpu %.9g (rel %.2g "
                         "> %g)",
                         what, s_name, (int) e + 1, k ? "val" : "train", got,
                         want, fabs(got - want) / fabs(want), tol);
        }
    }
    ms_run_result_clear(&rc);
    ms_run_result_clear(&rb);
    ms_synth_free(&test);
}

static void
set_case(ms_train_config_t *cfg, const run_case_t *c)
{
    ms_train_config_defaults(cfg);
    cfg->n_hidden = 2;
    cfg->explicit_sizes = true;
    cfg->width = 0;
    cfg->hidden_sizes[0] = 32;
    cfg->hidden_sizes[1] = 17;
    cfg->activation = c->act;
    cfg->optimizer = c->opt;
    cfg->loss = c->loss;
    cfg->dropout = c->dropout;
    cfg->schedule = c->schedule;
    cfg->learning_rate = c->opt >= MS_OPTIM_ADAM ? 0.003 : 0.05;
    cfg->l2 = 1e-4;
    cfg->seed = 7;
}

static const run_case_t s_cases[] = {
    {"relu adam", MS_ACTIVATION_RELU, MS_OPTIM_ADAM, MS_LOSS_CROSS_ENTROPY, 0,
     MS_SCHEDULE_CONSTANT},
    {"tanh momentum", MS_ACTIVATION_TANH, MS_OPTIM_MOMENTUM,
     MS_LOSS_CROSS_ENTROPY, 0, MS_SCHEDULE_CONSTANT},
    {"gelu nesterov mse", MS_ACTIVATION_GELU, MS_OPTIM_NESTEROV, MS_LOSS_MSE, 0,
     MS_SCHEDULE_CONSTANT},
    {"selu adamw dropout", MS_ACTIVATION_SELU, MS_OPTIM_ADAMW,
     MS_LOSS_CROSS_ENTROPY, 0.2, MS_SCHEDULE_COSINE},
    {"sigmoid sgd", MS_ACTIVATION_SIGMOID, MS_OPTIM_SGD, MS_LOSS_CROSS_ENTROPY,
     0, MS_SCHEDULE_STEP},
};

//  20 steps (one epoch of 20 full minibatches): 1e-4 relative.
static void
test_training_20_steps(void **state)
{
    (void) state;
    ms_dataset_t *train = ms_synth_blobs(320, 12, 4, 0.8, 3);
    ms_dataset_t *val = ms_synth_blobs(100, 12, 4, 0.8, 4);
    for (size_t i = 0; i < sizeof s_cases / sizeof s_cases[0]; i++) {
        ms_train_config_t cfg;
        set_case(&cfg, &s_cases[i]);
        cfg.batch_size = 16;
        cfg.epochs = 1;
        compare_runs(s_cases[i].what, &cfg, train, val, 1e-4);
    }
    //  Regression (targets), one row per minibatch at the end (321 rows).
    ms_dataset_t *rtrain = ms_synth_regression(321, 12, 0.1, 5);
    ms_dataset_t *rval = ms_synth_regression(50, 12, 0.1, 6);
    ms_train_config_t cfg;
    run_case_t reg = {
        "regression",        MS_ACTIVATION_ELU, MS_OPTIM_ADAM, MS_LOSS_MSE, 0,
        MS_SCHEDULE_CONSTANT};
    set_case(&cfg, &reg);
    cfg.batch_size = 16;
    cfg.epochs = 1;
    compare_runs("regression, last minibatch of 1 row", &cfg, rtrain, rval,
                 1e-4);
    ms_synth_free(&train);
    ms_synth_free(&val);
    ms_synth_free(&rtrain);
    ms_synth_free(&rval);
}

//  One epoch of a bigger set with a ragged last minibatch (and a second
//  epoch for the schedules): 1e-3 relative.
static void
test_training_one_epoch(void **state)
{
    (void) state;
    ms_dataset_t *train = ms_synth_blobs(3001, 40, 10, 1.0, 8);
    ms_dataset_t *val = ms_synth_blobs(500, 40, 10, 1.0, 9);
    for (size_t i = 0; i < sizeof s_cases / sizeof s_cases[0]; i++) {
        ms_train_config_t cfg;
        set_case(&cfg, &s_cases[i]);
        cfg.batch_size = 64;
        cfg.epochs = 2;
        compare_runs(s_cases[i].what, &cfg, train, val, 1e-3);
    }
    ms_synth_free(&train);
    ms_synth_free(&val);
}

//  The two training tests again with the small-GEMM kernel (cuda only).
static void
test_training_tiny_gemm(void **state)
{
    if (strcmp(s_name, "cuda") != 0)
        return;
    assert_int_equal(ms_backend_set_tiny_gemm(s_b, true), MS_OK);
    test_training_20_steps(state);
    test_training_one_epoch(state);
    tiny_gemm_default();
}

//  Same seed twice on the backend: the same bits; a run resumed from a
//  checkpoint: the same bits; an external data set evaluates like val.
static void
test_determinism_and_checkpoint(void **state)
{
    (void) state;
    ms_dataset_t *train = ms_synth_blobs(1000, 20, 5, 1.0, 10);
    ms_dataset_t *val = ms_synth_blobs(200, 20, 5, 1.0, 11);
    ms_dataset_t *test = ms_synth_blobs(200, 20, 5, 1.0, 12);
    ms_train_config_t cfg;
    set_case(&cfg, &s_cases[3]); // adamw, dropout, cosine
    cfg.batch_size = 32;
    cfg.epochs = 3;
    ms_diag_t diag;
    float *p[3];
    int64_t np = 0;
    double test_loss[3];
    for (int run = 0; run < 3; run++) {
        ms_trainer_t *t;
        assert_int_equal(
            ms_trainer_open(&t, &cfg, train, val, test, s_b, &diag), MS_OK);
        if (run == 2) { // resume from a checkpoint after epoch 1
            assert_int_equal(ms_trainer_epoch(t, NULL), MS_OK);
            void *bytes;
            size_t n;
            assert_int_equal(ms_trainer_save(t, &bytes, &n), MS_OK);
            ms_trainer_destroy(&t);
            assert_int_equal(
                ms_trainer_open(&t, &cfg, train, val, test, s_b, &diag), MS_OK);
            assert_int_equal(ms_trainer_restore(t, bytes, n), MS_OK);
            free(bytes);
        }
        while (!ms_trainer_done(t))
            assert_int_equal(ms_trainer_epoch(t, NULL), MS_OK);
        ms_run_result_t r;
        assert_int_equal(ms_trainer_finish(t, &r), MS_OK);
        test_loss[run] = r.test_loss;
        const float *params = ms_trainer_params(t, &np);
        assert_non_null(params);
        p[run] = malloc((size_t) np * 4);
        memcpy(p[run], params, (size_t) np * 4);
        if (run == 0) {
            //  An external data set (a copy of val) goes through a
            //  temporary device copy and gives val's numbers.
            ms_dataset_t *copy = ms_synth_blobs(200, 20, 5, 1.0, 11);
            double l1, a1, l2, a2;
            assert_int_equal(ms_trainer_evaluate(t, params, val, &l1, &a1),
                             MS_OK);
            assert_int_equal(ms_trainer_evaluate(t, params, copy, &l2, &a2),
                             MS_OK);
            assert_true(l1 == l2 && a1 == a2);
            ms_synth_free(&copy);
        }
        ms_run_result_clear(&r);
        ms_trainer_destroy(&t);
    }
    if (memcmp(p[0], p[1], (size_t) np * 4) != 0)
        fail_msg("[%s] two runs with one seed differ", s_name);
    if (memcmp(p[0], p[2], (size_t) np * 4) != 0)
        fail_msg("[%s] a run resumed from its checkpoint differs", s_name);
    assert_true(test_loss[0] == test_loss[1] && test_loss[0] == test_loss[2]);
    for (int i = 0; i < 3; i++)
        free(p[i]);
    ms_synth_free(&train);
    ms_synth_free(&val);
    ms_synth_free(&test);
}

//  Whole-epoch replay (MESHSWEEP_CUDA_EPOCH_GRAPH=1, read at trainer
//  open): 2 epochs with it on and off give the same bits (losses and
//  parameters), classification with a ragged last minibatch (run
//  uncaptured after the graph) and regression; on cuda the epoch graph
//  must have been used for epoch 2; on cpu the option is a no-op.
static void
s_epoch_graph_run(const ms_train_config_t *cfg, const ms_dataset_t *train,
                  const ms_dataset_t *val, bool on, ms_run_result_t *r,
                  float **params, int64_t *np, int32_t *graphs)
{
    ms_dataset_t *test = ms_synth_empty(train->n_features, train->n_classes);
    setenv("MESHSWEEP_CUDA_EPOCH_GRAPH", on ? "1" : "0", 1);
    ms_diag_t diag;
    ms_trainer_t *t;
    assert_int_equal(ms_trainer_open(&t, cfg, train, val, test, s_b, &diag),
                     MS_OK);
    while (!ms_trainer_done(t)) {
        int rc = ms_trainer_epoch(t, NULL);
        if (rc != MS_OK)
            fail_msg("epoch graph %s [%s]: %s (%s)", on ? "on" : "off", s_name,
                     ms_strerror(rc), ms_backend_last_error(s_b));
    }
    *graphs = ms_trainer_epoch_graphs(t);
    assert_int_equal(ms_trainer_finish(t, r), MS_OK);
    const float *p = ms_trainer_params(t, np);
    assert_non_null(p);
    *params = malloc((size_t) *np * sizeof(float));
    memcpy(*params, p, (size_t) *np * sizeof(float));
    ms_trainer_destroy(&t);
    ms_synth_free(&test);
}

static void
test_epoch_graph(void **state)
{
    (void) state;
    const char *saved = getenv("MESHSWEEP_CUDA_EPOCH_GRAPH");
    char *keep = saved ? strdup(saved) : NULL;
    ms_dataset_t *sets[2][2] = {{ms_synth_blobs(1000, 32, 10, 1.0, 21),
                                 ms_synth_blobs(200, 32, 10, 1.0, 22)},
                                {ms_synth_regression(1000, 32, 0.1, 23),
                                 ms_synth_regression(100, 32, 0.1, 24)}};
    for (int c = 0; c < 2; c++) {
        ms_train_config_t cfg;
        run_case_t rc = {"relu adam",
                         MS_ACTIVATION_RELU,
                         MS_OPTIM_ADAM,
                         c ? MS_LOSS_MSE : MS_LOSS_CROSS_ENTROPY,
                         0,
                         MS_SCHEDULE_CONSTANT};
        set_case(&cfg, &rc);
        cfg.batch_size = 64; // 15 full minibatches and one of 40 rows
        cfg.epochs = 2;
        ms_run_result_t r[2];
        float *p[2];
        int64_t np[2];
        int32_t graphs[2];
        for (int on = 0; on < 2; on++)
            s_epoch_graph_run(&cfg, sets[c][0], sets[c][1], on, &r[on], &p[on],
                              &np[on], &graphs[on]);
        assert_int_equal(graphs[0], 0);
        if (strcmp(s_name, "cpu") == 0)
            assert_int_equal(graphs[1], 0);
        else if (graphs[1] != 1)
            fail_msg("[%s] case %d: the epoch graph ran %d epochs, want 1 "
                     "(epoch 2)",
                     s_name, c, (int) graphs[1]);
        assert_int_equal(r[0].n_curve, 2);
        assert_int_equal(r[1].n_curve, r[0].n_curve);
        for (int32_t e = 0; e < r[0].n_curve; e++)
            if (r[0].curve[e].train_loss != r[1].curve[e].train_loss ||
                !(r[0].curve[e].val_loss == r[1].curve[e].val_loss))
                fail_msg("[%s] case %d epoch %d: epoch graph loss %.17g / "
                         "%.17g, per-step %.17g / %.17g",
                         s_name, c, (int) e + 1, r[1].curve[e].train_loss,
                         r[1].curve[e].val_loss, r[0].curve[e].train_loss,
                         r[0].curve[e].val_loss);
        assert_int_equal(np[0], np[1]);
        if (memcmp(p[0], p[1], (size_t) np[0] * sizeof(float)) != 0)
            fail_msg("[%s] case %d: parameters differ with the epoch graph",
                     s_name, c);
        for (int on = 0; on < 2; on++) {
            free(p[on]);
            ms_run_result_clear(&r[on]);
        }
        ms_synth_free(&sets[c][0]);
        ms_synth_free(&sets[c][1]);
    }
    if (keep) {
        setenv("MESHSWEEP_CUDA_EPOCH_GRAPH", keep, 1);
        free(keep);
    } else
        unsetenv("MESHSWEEP_CUDA_EPOCH_GRAPH");
}

//  A huge learning rate diverges on both backends, at the same epoch.
static void
test_divergence(void **state)
{
    (void) state;
    ms_dataset_t *train = ms_synth_blobs(400, 10, 3, 1.0, 13);
    ms_dataset_t *val = ms_synth_empty(10, 3);
    ms_train_config_t cfg;
    set_case(&cfg, &s_cases[4]);
    cfg.learning_rate = 1e30;
    cfg.batch_size = 16;
    cfg.epochs = 3;
    ms_run_result_t rc, rb;
    ms_diag_t diag;
    assert_int_equal(
        ms_train_run(&cfg, train, val, val, s_cpu, NULL, NULL, &rc, &diag),
        MS_OK);
    assert_int_equal(
        ms_train_run(&cfg, train, val, val, s_b, NULL, NULL, &rb, &diag),
        MS_OK);
    assert_int_equal(rc.status, MS_RUN_DIVERGED);
    assert_int_equal(rb.status, MS_RUN_DIVERGED);
    assert_string_equal(rb.error, rc.error);
    ms_run_result_clear(&rc);
    ms_run_result_clear(&rb);
    ms_synth_free(&train);
    ms_synth_free(&val);
}

//  --------------------------------------------------------------------------
//  The fused ops of a training step against the ops they stand for, on the
//  backend under test, bit for bit: act_backward_col_sum (shapes across
//  the GPU kernel's 32-column and 64-row tiles), train_loss (cross-entropy,
//  mse on labels and on targets), optim_all (weights and biases with
//  different L2), gather_xy.

static void
test_fused_ops(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    static const ms_activation_t acts[] = {
        MS_ACTIVATION_RELU, MS_ACTIVATION_TANH, MS_ACTIVATION_GELU,
        MS_ACTIVATION_SIGMOID, MS_ACTIVATION_LINEAR};
    for (int t = 0; t < 5; t++) {
        int64_t rows = t == 0 ? 200 : rand_dim(300);
        int64_t cols = t == 0 ? 10 : rand_dim(129), n = rows * cols;
        float *z = rand_floats(n, 3), *a = rand_floats(n, 1);
        float *g = rand_floats(n, 1);
        float *dz = dev_from(z, n * 4), *da = dev_from(a, n * 4);
        float *g1 = dev_from(g, n * 4), *g2 = dev_from(g, n * 4);
        float *db1 = dev_from(NULL, cols * 4), *db2 = dev_from(NULL, cols * 4);
        assert_int_equal(ops->act_backward(s_b, acts[t], 0.1f, n, dz, da, g1),
                         MS_OK);
        assert_int_equal(ops->col_sum(s_b, rows, cols, g1, db1), MS_OK);
        assert_int_equal(ops->act_backward_col_sum(s_b, acts[t], 0.1f, rows,
                                                   cols, dz, da, g2, db2),
                         MS_OK);
        float *w1 = malloc((size_t) n * 4), *w2 = malloc((size_t) n * 4);
        dev_read(w1, g1, n * 4);
        dev_read(w2, g2, n * 4);
        check_close("act_backward_col_sum g", w2, w1, n, 0);
        dev_read(w1, db1, cols * 4);
        dev_read(w2, db2, cols * 4);
        check_close("act_backward_col_sum db", w2, w1, cols, 0);
        dev_free(dz);
        dev_free(da);
        dev_free(g1);
        dev_free(g2);
        dev_free(db1);
        dev_free(db2);
        free(z);
        free(a);
        free(g);
        free(w1);
        free(w2);
    }

    //  train_loss: 0 cross-entropy, 1 mse on labels, 2 mse on targets.
    for (int kind = 0; kind < 3; kind++) {
        int64_t rows = kind == 0 ? 200 : rand_dim(300);
        int64_t cols = kind == 2 ? 1 : 2 + rand_dim(12), n = rows * cols;
        float *y = rand_floats(n, 3), *bias = rand_floats(cols, 1);
        float *tg = rand_floats(rows, 2);
        int32_t *lab = malloc((size_t) rows * 4);
        for (int64_t i = 0; i < rows; i++)
            lab[i] = (int32_t) (ms_rng_uniform(&s_rng) * (double) cols) %
                     (int32_t) cols;
        ms_optim_step_t table[4];
        memset(table, 0, sizeof table);
        for (int k = 0; k < 4; k++) {
            table[k].kind = MS_OPTIM_SGD;
            table[k].lr = 0.5f + (float) k;
        }
        ms_step_cursor_t c0;
        memset(&c0, 0, sizeof c0);
        c0.first_row = 7;
        c0.n_steps = 1;
        c0.loss_acc = 0.25;
        const int32_t *labp = kind == 2 ? NULL : lab;
        float *y1 = dev_from(y, n * 4), *y2 = dev_from(y, n * 4);
        float *dbias = dev_from(bias, cols * 4);
        int32_t *dl = dev_from(lab, rows * 4);
        float *dt = dev_from(tg, rows * 4);
        float *d1 = dev_from(NULL, n * 4), *d2 = dev_from(NULL, n * 4);
        float *db1 = dev_from(NULL, cols * 4), *db2 = dev_from(NULL, cols * 4);
        ms_optim_step_t *dtab = dev_from(table, sizeof table);
        ms_step_cursor_t *c1 = dev_from(&c0, sizeof c0);
        ms_step_cursor_t *c2 = dev_from(&c0, sizeof c0);
        float scale = 1.0f / (float) rows;
        assert_int_equal(ops->bias_act_forward(s_b, MS_ACTIVATION_LINEAR, 0.0f,
                                               rows, cols, dbias, y1, y1),
                         MS_OK);
        if (kind == 0)
            assert_int_equal(ops->softmax_xent(s_b, rows, cols, y1, dl, scale,
                                               d1, &c1->loss_sum,
                                               &c1->n_correct),
                             MS_OK);
        else
            assert_int_equal(ops->mse(s_b, rows, cols, y1, labp ? dl : NULL,
                                      labp ? NULL : dt, scale, d1,
                                      &c1->loss_sum,
                                      labp ? &c1->n_correct : NULL),
                             MS_OK);
        assert_int_equal(ops->col_sum(s_b, rows, cols, d1, db1), MS_OK);
        assert_int_equal(ops->batch_end(s_b, rows, dtab, c1), MS_OK);
        assert_int_equal(
            ops->train_loss(
                s_b, kind == 0 ? MS_LOSS_CROSS_ENTROPY : MS_LOSS_MSE, rows,
                cols, dbias, y2, labp ? dl : NULL, dt, d2, db2, dtab, c2),
            MS_OK);
        float *w1 = malloc((size_t) n * 4), *w2 = malloc((size_t) n * 4);
        dev_read(w1, y1, n * 4);
        dev_read(w2, y2, n * 4);
        check_close("train_loss y", w2, w1, n, 0);
        dev_read(w1, d1, n * 4);
        dev_read(w2, d2, n * 4);
        check_close("train_loss delta", w2, w1, n, 0);
        dev_read(w1, db1, cols * 4);
        dev_read(w2, db2, cols * 4);
        check_close("train_loss db", w2, w1, cols, 0);
        ms_step_cursor_t r1, r2;
        dev_read(&r1, c1, sizeof r1);
        dev_read(&r2, c2, sizeof r2);
        assert_int_equal(r2.first_row, 7 + rows);
        assert_int_equal(r2.n_steps, 2);
        assert_int_equal(r2.n_correct, 0);
        assert_true(r2.loss_sum == 0.0);
        assert_true(r2.loss_acc == r1.loss_acc);
        assert_true(r2.loss_acc > 0.25);
        assert_true(r2.w_step.lr == 2.5f && r2.b_step.lr == 3.5f);
        dev_free(y1);
        dev_free(y2);
        dev_free(dbias);
        dev_free(dl);
        dev_free(dt);
        dev_free(d1);
        dev_free(d2);
        dev_free(db1);
        dev_free(db2);
        dev_free(dtab);
        dev_free(c1);
        dev_free(c2);
        free(y);
        free(bias);
        free(tg);
        free(lab);
        free(w1);
        free(w2);
    }

    //  optim_all on a block of three layers' W and b, adam, L2 on weights.
    {
        int64_t bounds[7] = {0, 300, 310, 1310, 1410, 1420, 1421};
        int64_t n = bounds[6];
        ms_train_config_t cfg;
        ms_train_config_defaults(&cfg);
        cfg.optimizer = MS_OPTIM_ADAM;
        cfg.l2 = 0.01;
        ms_optim_step_t ws, bs;
        ms_optim_step_prepare(&ws, &cfg, 0.01, 3, false);
        ms_optim_step_prepare(&bs, &cfg, 0.01, 3, true);
        float *w = rand_floats(n, 1), *g = rand_floats(n, 1);
        float *m = rand_floats(n, 0.1), *v = rand_floats(n, 0.1);
        for (int64_t i = 0; i < n; i++)
            v[i] = fabsf(v[i]);
        float *dw[2], *dm[2], *dv[2], *dg = dev_from(g, n * 4);
        for (int k = 0; k < 2; k++) {
            dw[k] = dev_from(w, n * 4);
            dm[k] = dev_from(m, n * 4);
            dv[k] = dev_from(v, n * 4);
        }
        ms_optim_step_t *dws = dev_from(&ws, sizeof ws);
        ms_optim_step_t *dbs = dev_from(&bs, sizeof bs);
        int64_t *dbounds = dev_from(bounds, sizeof bounds);
        for (int s = 0; s < 6; s++) {
            int64_t o = bounds[s];
            assert_int_equal(ops->optim_step(s_b, s % 2 ? dbs : dws,
                                             bounds[s + 1] - o, dw[0] + o,
                                             dg + o, dm[0] + o, dv[0] + o),
                             MS_OK);
        }
        assert_int_equal(ops->optim_all(s_b, dws, dbs, 6, dbounds, n, dw[1], dg,
                                        dm[1], dv[1]),
                         MS_OK);
        float *r1 = malloc((size_t) n * 4), *r2 = malloc((size_t) n * 4);
        float **blocks[3] = {dw, dm, dv};
        for (int k = 0; k < 3; k++) {
            dev_read(r1, blocks[k][0], n * 4);
            dev_read(r2, blocks[k][1], n * 4);
            check_close("optim_all", r2, r1, n, 0);
        }
        dev_read(r2, dw[1], n * 4);
        assert_true(memcmp(r2, w, (size_t) n * 4) != 0);
        for (int k = 0; k < 2; k++) {
            dev_free(dw[k]);
            dev_free(dm[k]);
            dev_free(dv[k]);
        }
        dev_free(dg);
        dev_free(dws);
        dev_free(dbs);
        dev_free(dbounds);
        free(w);
        free(g);
        free(m);
        free(v);
        free(r1);
        free(r2);
    }

    //  gather_xy against two gathers.
    {
        int64_t n_src = 50, rows = 13, cols = 12;
        float *x = rand_floats(n_src * cols, 1);
        int32_t lab[50];
        int64_t idx[50];
        for (int64_t i = 0; i < n_src; i++) {
            lab[i] = (int32_t) (i * 7 % 10);
            idx[i] = (i * 17 + 3) % n_src;
        }
        ms_step_cursor_t c;
        memset(&c, 0, sizeof c);
        c.first_row = 20;
        float *dx = dev_from(x, n_src * cols * 4);
        int32_t *dl = dev_from(lab, sizeof lab);
        int64_t *di = dev_from(idx, sizeof idx);
        ms_step_cursor_t *dc = dev_from(&c, sizeof c);
        float *ox[2] = {dev_from(NULL, rows * cols * 4),
                        dev_from(NULL, rows * cols * 4)};
        int32_t *ol[2] = {dev_from(NULL, rows * 4), dev_from(NULL, rows * 4)};
        assert_int_equal(ops->gather(s_b, rows, cols, dx, di, dc, ox[0]),
                         MS_OK);
        assert_int_equal(ops->gather(s_b, rows, 1, dl, di, dc, ol[0]), MS_OK);
        assert_int_equal(
            ops->gather_xy(s_b, rows, cols, dx, dl, di, dc, ox[1], ol[1]),
            MS_OK);
        float r[2][13 * 12];
        int32_t rl[2][13];
        for (int k = 0; k < 2; k++) {
            dev_read(r[k], ox[k], sizeof r[k]);
            dev_read(rl[k], ol[k], sizeof rl[k]);
            dev_free(ox[k]);
            dev_free(ol[k]);
        }
        assert_memory_equal(r[0], r[1], sizeof r[0]);
        assert_memory_equal(rl[0], rl[1], sizeof rl[0]);
        assert_int_equal(rl[1][0], lab[idx[20]]);
        dev_free(dx);
        dev_free(dl);
        dev_free(di);
        dev_free(dc);
        free(x);
    }
}

//  --------------------------------------------------------------------------
//  The ops of residual and normalised networks against the CPU on random
//  shapes with poisoned outputs: layer and batch norm forward (training
//  and evaluation, the running statistics) and backward (written and
//  accumulated), the residual add and its backward with and without a
//  scale and mask, clipping. The element-wise and per-row / per-column
//  passes mirror the CPU's order: bit-identical (0 ulp); the two whole-
//  buffer reductions (the scale's gradient, the clip's norm) sum in
//  another fixed order: within 2 ulp.
static void
test_norm_ops_against_cpu(void **state)
{
    (void) state;
    const ms_backend_ops_t *ops = ms_backend_ops(s_b);
    const ms_backend_ops_t *cpu = ms_backend_ops(s_cpu);
    for (int trial = 0; trial < 8; trial++) {
        int64_t rows = rand_dim(200), cols = rand_dim(70), n = rows * cols;
        bool layer = trial % 2 == 0, acc = trial % 4 >= 2;
        int64_t ns = layer ? rows : cols; // stats per row or per column
        const char *kind = layer ? "layer_norm" : "batch_norm";
        float *x = rand_floats(n, 3), *dy = rand_floats(n, 1);
        float *gamma = rand_floats(cols, 1.5), *beta = rand_floats(cols, 0.5);
        float *run = rand_floats(2 * cols, 1); // mean, var (made positive)
        for (int64_t j = 0; j < cols; j++)
            run[cols + j] = fabsf(run[cols + j]) + 0.5f;
        float *dx0 = rand_floats(n, 1); // what accumulate adds to
        //  CPU reference: y, stats, running stats, dx, dgamma, dbeta.
        float *y = malloc((size_t) n * 4), *mu = malloc((size_t) ns * 4),
              *rs = malloc((size_t) ns * 4), *crun = malloc((size_t) cols * 8),
              *dx = malloc((size_t) n * 4), *dg = malloc((size_t) cols * 8);
        memcpy(crun, run, (size_t) cols * 8);
        memcpy(dx, dx0, (size_t) n * 4);
        if (layer) {
            cpu->layer_norm_forward(s_cpu, rows, cols, x, gamma, beta, y, mu,
                                    rs);
            cpu->layer_norm_backward(s_cpu, rows, cols, x, gamma, mu, rs, dy,
                                     dx, dg, dg + cols, acc);
        } else {
            cpu->batch_norm_forward(s_cpu, true, rows, cols, x, gamma, beta,
                                    crun, crun + cols, y, mu, rs);
            cpu->batch_norm_backward(s_cpu, rows, cols, x, gamma, mu, rs, dy,
                                     dx, dg, dg + cols, acc);
        }
        //  The backend on poisoned outputs.
        float *poison = nan_floats(n);
        float *d_x = dev_from(x, (size_t) n * 4),
              *d_dy = dev_from(dy, (size_t) n * 4),
              *d_g = dev_from(gamma, (size_t) cols * 4),
              *d_b = dev_from(beta, (size_t) cols * 4),
              *d_run = dev_from(run, (size_t) cols * 8),
              *d_y = dev_from(poison, (size_t) n * 4),
              *d_mu = dev_from(poison, (size_t) ns * 4),
              *d_rs = dev_from(poison, (size_t) ns * 4),
              *d_dx = dev_from(acc ? dx0 : poison, (size_t) n * 4),
              *d_dg = dev_from(NULL, (size_t) cols * 8);
        if (layer) {
            assert_int_equal(ops->layer_norm_forward(s_b, rows, cols, d_x, d_g,
                                                     d_b, d_y, d_mu, d_rs),
                             MS_OK);
            assert_int_equal(ops->layer_norm_backward(s_b, rows, cols, d_x, d_g,
                                                      d_mu, d_rs, d_dy, d_dx,
                                                      d_dg, d_dg + cols, acc),
                             MS_OK);
        } else {
            assert_int_equal(
                ops->batch_norm_forward(s_b, true, rows, cols, d_x, d_g, d_b,
                                        d_run, d_run + cols, d_y, d_mu, d_rs),
                MS_OK);
            assert_int_equal(ops->batch_norm_backward(s_b, rows, cols, d_x, d_g,
                                                      d_mu, d_rs, d_dy, d_dx,
                                                      d_dg, d_dg + cols, acc),
                             MS_OK);
        }
        float *got = malloc((size_t) n * 4);
        char what[64];
        dev_read(got, d_y, (size_t) n * 4);
        snprintf(what, sizeof what, "%s_forward", kind);
        check_close(what, got, y, n, 0);
        dev_read(got, d_dx, (size_t) n * 4);
        snprintf(what, sizeof what, "%s_backward dx%s", kind,
                 acc ? " (accumulated)" : "");
        check_close(what, got, dx, n, 0);
        dev_read(got, d_dg, (size_t) cols * 8);
        snprintf(what, sizeof what, "%s_backward dgamma, dbeta", kind);
        check_close(what, got, dg, 2 * cols, 0);
        if (!layer) {
            dev_read(got, d_run, (size_t) cols * 8);
            check_close("batch_norm running statistics", got, crun, 2 * cols,
                        0);
            //  Evaluation: the running statistics normalise.
            cpu->batch_norm_forward(s_cpu, false, rows, cols, x, gamma, beta,
                                    crun, crun + cols, y, mu, rs);
            assert_int_equal(
                ops->batch_norm_forward(s_b, false, rows, cols, d_x, d_g, d_b,
                                        d_run, d_run + cols, d_y, d_mu, d_rs),
                MS_OK);
            dev_read(got, d_y, (size_t) n * 4);
            check_close("batch_norm_forward (evaluation)", got, y, n, 0);
        }
        //  Residual add and backward: scale, mask, scale gradient.
        float scale = 0.7f, cds = 0, gds = 0;
        float *d_s = dev_from(&scale, 4), *d_ds = dev_from(NULL, 4);
        const float *sc = trial % 3 ? &scale : NULL;
        float *mask = trial % 2 ? rand_floats(n, 2) : NULL;
        float *d_mask = mask ? dev_from(mask, (size_t) n * 4) : NULL;
        cpu->residual_forward(s_cpu, n, x, sc, dy, y);
        assert_int_equal(
            ops->residual_forward(s_b, n, d_x, sc ? d_s : NULL, d_dy, d_y),
            MS_OK);
        dev_read(got, d_y, (size_t) n * 4);
        check_close("residual_forward", got, y, n, 0);
        cpu->residual_backward(s_cpu, n, dy, sc, x, mask, y, &cds);
        assert_int_equal(ops->residual_backward(s_b, n, d_dy, sc ? d_s : NULL,
                                                d_x, d_mask, d_dx, d_ds),
                         MS_OK);
        dev_read(got, d_dx, (size_t) n * 4);
        check_close("residual_backward", got, y, n, 0);
        dev_read(&gds, d_ds, 4);
        check_close("residual_backward dscale", &gds, &cds, 1, 2);
        //  Clipping at half the norm (every element scaled) and at twice
        //  it (nothing changes, factor 1).
        double norm = 0;
        for (int64_t i = 0; i < n; i++)
            norm += (double) dy[i] * dy[i];
        norm = sqrt(norm);
        for (int k = 0; k < 2; k++) {
            float clip = (float) (k ? 2 * norm : norm / 2), cf = 0, gf = 0;
            memcpy(y, dy, (size_t) n * 4);
            cpu->clip_norm(s_cpu, n, y, clip, &cf);
            float *d_c = dev_from(dy, (size_t) n * 4);
            assert_int_equal(ops->clip_norm(s_b, n, d_c, clip, d_ds), MS_OK);
            dev_read(got, d_c, (size_t) n * 4);
            dev_read(&gf, d_ds, 4);
            check_close("clip_norm", got, y, n, 2);
            check_close("clip_norm factor", &gf, &cf, 1, 2);
            assert_true(k ? cf == 1.0f : cf < 1.0f);
            dev_free(d_c);
        }
        void *devs[] = {d_x,  d_dy, d_g,  d_b, d_run, d_y,   d_mu,
                        d_rs, d_dx, d_dg, d_s, d_ds,  d_mask};
        for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
            dev_free(devs[i]);
        void *hosts[] = {x,  dy,   gamma, beta, run,    dx0, y,   mu,
                         rs, crun, dx,    dg,   poison, got, mask};
        for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
            free(hosts[i]);
    }
}

//  Residual and normalised networks, warm-up and clipping, trained on the
//  backend against the CPU: 1e-4 relative after 20 steps.
static void
test_training_depth_configs(void **state)
{
    (void) state;
    ms_dataset_t *train = ms_synth_blobs(320, 12, 4, 0.8, 3);
    ms_dataset_t *val = ms_synth_blobs(100, 12, 4, 0.8, 4);
    for (int which = 0; which < 3; which++) {
        ms_train_config_t cfg;
        set_case(&cfg, &s_cases[0]);
        ms_train_config_set_uniform(&cfg, 6, 24);
        cfg.architecture = MS_ARCH_RESIDUAL;
        cfg.batch_size = 16;
        cfg.epochs = 1;
        const char *what = "residual layer norm, warm-up";
        cfg.norm = MS_NORM_LAYER;
        cfg.warmup_epochs = 0.5;
        if (which == 1) {
            what = "residual batch norm rezero, blocks of 2, dropout";
            cfg.norm = MS_NORM_BATCH;
            cfg.residual_scale = MS_RESIDUAL_SCALE_REZERO;
            cfg.block_layers = 2;
            cfg.dropout = 0.1;
        } else if (which == 2) {
            what = "plain layer norm, clipping";
            cfg.architecture = MS_ARCH_PLAIN;
            cfg.clip_norm = 0.3;
        }
        compare_runs(what, &cfg, train, val, 1e-4);
    }
    ms_synth_free(&train);
    ms_synth_free(&val);
}

int
main(int argc, char **argv)
{
    if (argc > 1)
        s_name = argv[1];
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_backend_open(&s_b, s_name, 1, &diag);
    if (rc != MS_OK) {
        fprintf(stderr,
                "ms_backend_suite_test: SKIPPED on %s: %s (%s); nothing "
                "was tested\n",
                s_name, diag.reason[0] ? diag.reason : "cannot open",
                ms_strerror(rc));
        return 77;
    }
    s_cpu = ms_backend_cpu_new(1);
    ms_rng_seed(&s_rng, 2024, 99);
    print_message("ms_backend_suite_test: backend %s\n", s_name);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_and_info),
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_gemm_random_shapes),
        cmocka_unit_test(test_activations_against_cpu),
        cmocka_unit_test(test_mul_and_col_sum),
        cmocka_unit_test(test_losses_against_cpu),
        cmocka_unit_test(test_optimizers_against_cpu),
        cmocka_unit_test(test_gather_and_batch_end),
        cmocka_unit_test(test_fused_ops),
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_training_20_steps),
        cmocka_unit_test(test_training_one_epoch),
        cmocka_unit_test(test_gemm_tiny),
        cmocka_unit_test(test_training_tiny_gemm),
        cmocka_unit_test(test_determinism_and_checkpoint),
        cmocka_unit_test(test_divergence),
        cmocka_unit_test(test_epoch_graph),
        cmocka_unit_test(test_norm_ops_against_cpu),
        cmocka_unit_test(test_training_depth_configs),
    };
    int failed = cmocka_run_group_tests_name(s_name, tests, NULL, NULL);
    ms_backend_destroy(&s_b);
    ms_backend_destroy(&s_cpu);
    return failed;
}
