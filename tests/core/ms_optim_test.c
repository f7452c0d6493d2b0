/*  =========================================================================
    ms_optim_test - each optimizer's update against hand-computed steps;
    learning-rate schedules; vector and scalar paths give the same bits

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

#include "ms_optim.h"

static ms_backend_t *s_backend;

static int
setup(void **state)
{
    (void) state;
    s_backend = ms_backend_cpu_new(1);
    return 0;
}

static int
teardown(void **state)
{
    (void) state;
    ms_backend_destroy(&s_backend);
    return 0;
}

//  One step of kind on a single parameter; returns w after.
static void
step1(ms_train_config_t *cfg, double lr, int64_t t, bool is_bias, float *w,
      float g, float *m, float *v)
{
    ms_optim_step_t s;
    ms_optim_step_prepare(&s, cfg, lr, t, is_bias);
    assert_int_equal(
        ms_backend_ops(s_backend)->optim_step(s_backend, &s, 1, w, &g, m, v),
        MS_OK);
}

static ms_train_config_t
config(ms_optim_kind_t kind)
{
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    cfg.optimizer = kind;
    cfg.l2 = 0.01;
    cfg.momentum = 0.9;
    return cfg;
}

#define NEAR(a, b) assert_true(fabs((double) (a) - (double) (b)) < 1e-6)

//  --------------------------------------------------------------------------
//  sgd: w = 1 - 0.1 (0.5 + 0.01 x 1) = 0.949; a bias is not decayed.
static void
test_sgd(void **state)
{
    (void) state;
    ms_train_config_t cfg = config(MS_OPTIM_SGD);
    float w = 1.0f;
    step1(&cfg, 0.1, 1, false, &w, 0.5f, NULL, NULL);
    NEAR(w, 0.949);
    float b = 1.0f;
    step1(&cfg, 0.1, 1, true, &b, 0.5f, NULL, NULL);
    NEAR(b, 0.95);
}

//  momentum: v1 = 0.51, w1 = 1 - 0.051 = 0.949;
//  g'2 = 0.5 + 0.01 x 0.949 = 0.50949, v2 = 0.9 x 0.51 + 0.50949 =
//  0.96849, w2 = 0.949 - 0.096849 = 0.852151.
static void
test_momentum(void **state)
{
    (void) state;
    ms_train_config_t cfg = config(MS_OPTIM_MOMENTUM);
    float w = 1.0f, m = 0.0f;
    step1(&cfg, 0.1, 1, false, &w, 0.5f, &m, NULL);
    NEAR(m, 0.51);
    NEAR(w, 0.949);
    step1(&cfg, 0.1, 2, false, &w, 0.5f, &m, NULL);
    NEAR(m, 0.96849);
    NEAR(w, 0.852151);
}

//  nesterov: v1 = 0.51, w1 = 1 - 0.1 (0.51 + 0.9 x 0.51) = 0.9031;
//  g'2 = 0.5 + 0.009031 = 0.509031, v2 = 0.459 + 0.509031 = 0.968031,
//  w2 = 0.9031 - 0.1 (0.509031 + 0.8712279) = 0.76507411.
static void
test_nesterov(void **state)
{
    (void) state;
    ms_train_config_t cfg = config(MS_OPTIM_NESTEROV);
    float w = 1.0f, m = 0.0f;
    step1(&cfg, 0.1, 1, false, &w, 0.5f, &m, NULL);
    NEAR(w, 0.9031);
    step1(&cfg, 0.1, 2, false, &w, 0.5f, &m, NULL);
    NEAR(m, 0.968031);
    NEAR(w, 0.76507411);
}

//  adam, first step: m = 0.1 g', v = 0.001 g'^2, mhat = g', vhat = g'^2,
//  w -= lr g' / (|g'| + eps) = lr (almost exactly) for g' > 0.
//  Second step with g = -0.25 (g' = -0.25 + 0.01 w1):
//  computed in double below from the formulas.
static void
test_adam(void **state)
{
    (void) state;
    ms_train_config_t cfg = config(MS_OPTIM_ADAM);
    float w = 1.0f, m = 0, v = 0;
    step1(&cfg, 0.01, 1, false, &w, 0.5f, &m, &v);
    double g1 = 0.51;
    NEAR(m, 0.1 * g1);
    NEAR(v, 0.001 * g1 * g1);
    NEAR(w, 1.0 - 0.01 * g1 / (g1 + 1e-8));
    double w1 = w, m1 = m, v1 = v;
    step1(&cfg, 0.01, 2, false, &w, -0.25f, &m, &v);
    double g2 = -0.25 + 0.01 * w1;
    double m2 = 0.9 * m1 + 0.1 * g2, v2 = 0.999 * v1 + 0.001 * g2 * g2;
    double mh = m2 / (1 - 0.81), vh = v2 / (1 - 0.999 * 0.999);
    NEAR(m, m2);
    NEAR(v, v2);
    NEAR(w, w1 - 0.01 * mh / (sqrt(vh) + 1e-8));
}

//  adamw: the decay is decoupled: w = w - lr l2 w - lr mhat/(sqrt vhat +
//  eps) with mhat, vhat from the raw gradient; biases are not decayed.
static void
test_adamw(void **state)
{
    (void) state;
    ms_train_config_t cfg = config(MS_OPTIM_ADAMW);
    cfg.l2 = 0.1;
    float w = 2.0f, m = 0, v = 0;
    step1(&cfg, 0.01, 1, false, &w, 0.5f, &m, &v);
    NEAR(m, 0.05); // raw gradient, no l2 term
    NEAR(w, 2.0 - 0.01 * 0.1 * 2.0 - 0.01 * 0.5 / (0.5 + 1e-8));
    float b = 2.0f, mb = 0, vb = 0;
    step1(&cfg, 0.01, 1, true, &b, 0.5f, &mb, &vb);
    NEAR(b, 2.0 - 0.01 * 0.5 / (0.5 + 1e-8));
}

//  --------------------------------------------------------------------------
//  The vectorised Adam path (8 and 4 lanes) gives exactly the bits of a
//  scalar float evaluation of the same formula, tail included.
static void
test_adam_vector_equals_scalar(void **state)
{
    (void) state;
    enum { N = 37 };
    ms_train_config_t cfg = config(MS_OPTIM_ADAMW);
    ms_optim_step_t s;
    ms_optim_step_prepare(&s, &cfg, 0.003, 3, false);
    float w[N], g[N], m[N], v[N], ew[N], em[N], ev[N];
    for (int i = 0; i < N; i++) {
        w[i] = ew[i] = 0.1f * (float) (i - 18);
        g[i] = 0.07f * (float) ((i * 5) % 11 - 5);
        m[i] = em[i] = 0.01f * (float) (i % 7);
        v[i] = ev[i] = 0.001f * (float) (i % 5);
    }
    ms_backend_ops(s_backend)->optim_step(s_backend, &s, N, w, g, m, v);
    for (int i = 0; i < N; i++) {
        volatile float wi = ew[i] - s.decay * ew[i];
        volatile float gi = g[i] + s.l2 * ew[i];
        em[i] = s.beta1 * em[i] + (1.0f - s.beta1) * gi;
        ev[i] = s.beta2 * ev[i] + (1.0f - s.beta2) * (gi * gi);
        volatile float root = sqrtf(ev[i]);
        volatile float denom = root * s.rsqrt_c2 + s.eps;
        volatile float num = s.lr_c1 * em[i];
        ew[i] = wi - num / denom;
    }
    assert_memory_equal(w, ew, sizeof w);
    assert_memory_equal(m, em, sizeof m);
    assert_memory_equal(v, ev, sizeof v);
}

//  --------------------------------------------------------------------------
static void
test_schedules(void **state)
{
    (void) state;
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    cfg.learning_rate = 0.1;
    cfg.epochs = 10;
    assert_true(ms_optim_schedule_lr(&cfg, 7) == 0.1);
    cfg.schedule = MS_SCHEDULE_STEP;
    cfg.step_size = 3;
    cfg.gamma = 0.5;
    assert_true(ms_optim_schedule_lr(&cfg, 1) == 0.1);
    assert_true(ms_optim_schedule_lr(&cfg, 3) == 0.1);
    assert_true(fabs(ms_optim_schedule_lr(&cfg, 4) - 0.05) < 1e-15);
    assert_true(fabs(ms_optim_schedule_lr(&cfg, 7) - 0.025) < 1e-15);
    cfg.schedule = MS_SCHEDULE_COSINE;
    assert_true(fabs(ms_optim_schedule_lr(&cfg, 1) - 0.1) < 1e-15);
    assert_true(fabs(ms_optim_schedule_lr(&cfg, 6) - 0.05) < 1e-15);
    double last = ms_optim_schedule_lr(&cfg, 10);
    assert_true(last > 0 && last < 0.003);
    for (int e = 2; e <= 10; e++)
        assert_true(ms_optim_schedule_lr(&cfg, e) <
                    ms_optim_schedule_lr(&cfg, e - 1));
}

static void
test_state_sizes_and_prepare(void **state)
{
    (void) state;
    assert_int_equal(ms_optim_state_per_param(MS_OPTIM_SGD), 0);
    assert_int_equal(ms_optim_state_per_param(MS_OPTIM_MOMENTUM), 1);
    assert_int_equal(ms_optim_state_per_param(MS_OPTIM_NESTEROV), 1);
    assert_int_equal(ms_optim_state_per_param(MS_OPTIM_ADAM), 2);
    assert_int_equal(ms_optim_state_per_param(MS_OPTIM_ADAMW), 2);
    ms_train_config_t cfg = config(MS_OPTIM_ADAM);
    ms_optim_step_t s;
    ms_optim_step_prepare(&s, &cfg, 0.5, 2, false);
    assert_true(s.lr == 0.5f && s.l2 == 0.01f && s.decay == 0.0f);
    assert_true(s.bias_c1 == (float) (1 - 0.81));
    assert_true(s.lr_c1 == (float) (0.5 / (1 - 0.81)));
    assert_true(s.rsqrt_c2 == (float) (1 / sqrt(1 - 0.999 * 0.999)));
    ms_optim_step_prepare(&s, &cfg, 0.5, 2, true);
    assert_true(s.l2 == 0.0f && s.decay == 0.0f);
    cfg.optimizer = MS_OPTIM_ADAMW;
    ms_optim_step_prepare(&s, &cfg, 0.5, 2, false);
    assert_true(s.l2 == 0.0f && s.decay == (float) (0.5 * 0.01));
}

//  Warm-up: t / ceil(warmup_epochs x steps per epoch), then 1; off at 0;
//  a fractional epoch rounds the step count up.
static void
test_warmup_factor(void **state)
{
    (void) state;
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    assert_true(ms_optim_warmup_factor(&cfg, 1, 270) == 1.0);
    cfg.warmup_epochs = 1;
    assert_true(ms_optim_warmup_factor(&cfg, 1, 270) == 1.0 / 270);
    assert_true(ms_optim_warmup_factor(&cfg, 135, 270) == 0.5);
    assert_true(ms_optim_warmup_factor(&cfg, 270, 270) == 1.0);
    assert_true(ms_optim_warmup_factor(&cfg, 10000, 270) == 1.0);
    cfg.warmup_epochs = 0.25; // ceil(2.5) = 3 steps
    assert_true(ms_optim_warmup_factor(&cfg, 1, 10) == 1.0 / 3);
    assert_true(ms_optim_warmup_factor(&cfg, 2, 10) == 2.0 / 3);
    assert_true(ms_optim_warmup_factor(&cfg, 3, 10) == 1.0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd),
        cmocka_unit_test(test_momentum),
        cmocka_unit_test(test_nesterov),
        cmocka_unit_test(test_adam),
        cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_adam_vector_equals_scalar),
        cmocka_unit_test(test_schedules),
        cmocka_unit_test(test_state_sizes_and_prepare),
        cmocka_unit_test(test_warmup_factor),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
