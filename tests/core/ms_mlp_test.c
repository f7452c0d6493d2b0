/*  =========================================================================
    ms_mlp_test - finite-difference gradient checks of the network for
    every activation, both losses, dropout with a fixed mask, L2 and
    several depths; layout and initialisation

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The network computes in float32, so a central difference with step h
    carries a rounding error of about (float eps x |loss|) / h. With h =
    1e-2 on a loss of order 1 that is ~1e-5, and the truncation error is
    O(h^2 f''') ~ 1e-4; the check accepts |fd - analytic| <= 1e-3 + 2e-2
    |analytic|. A wrong gradient (a missing factor, a transposed matrix, a
    dropped bias term) is off by far more. At a kink (relu, leaky_relu)
    a step can cross the kink and the difference is then meaningless, so a
    parameter that disagrees at h = 1e-2 is checked again at h = 2e-3 and
    3e-4 (float rounding then costs ~2e-4, still inside the tolerance): a
    pre-activation close enough to 0 to be crossed by all three is rare, a
    wrong gradient fails all three. Each case names the parameter that
    disagreed.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_activation.h"
#include "ms_mlp.h"
#include "ms_optim.h"

enum { ROWS = 5, N_IN = 4 };

typedef struct {
    ms_backend_t *backend;
    ms_mlp_t *mlp;
    ms_train_config_t cfg;
    int32_t n_out;
    ms_rng_t dropout_rng; // fixed: every evaluation copies it
} net_t;

//  Build a net with given hidden sizes, fill input and labels/targets.
static void
net_open(net_t *n, int32_t n_hidden, const int32_t *sizes, ms_activation_t act,
         ms_loss_kind_t loss, double dropout, int32_t n_out)
{
    memset(n, 0, sizeof *n);
    n->backend = ms_backend_cpu_new(1);
    ms_train_config_defaults(&n->cfg);
    n->cfg.n_hidden = n_hidden;
    for (int32_t i = 0; i < n_hidden; i++)
        n->cfg.hidden_sizes[i] = sizes[i];
    n->cfg.activation = act;
    n->cfg.leaky_slope = 0.1;
    n->cfg.loss = loss;
    n->cfg.dropout = dropout;
    n->cfg.optimizer = MS_OPTIM_SGD;
    n->n_out = n_out;
    assert_int_equal(
        ms_mlp_open(&n->mlp, &n->cfg, N_IN, n_out, ROWS, n->backend), MS_OK);
    ms_rng_t rng;
    ms_rng_seed(&rng, 42, 1);
    assert_int_equal(ms_mlp_init(n->mlp, MS_INIT_XAVIER, &rng), MS_OK);
    //  Non-zero biases so every term of the bias gradient matters.
    for (int32_t l = 0; l < ms_mlp_n_layers(n->mlp); l++) {
        int64_t bo;
        int32_t fo;
        ms_mlp_layer(n->mlp, l, NULL, &bo, NULL, &fo);
        for (int32_t j = 0; j < fo; j++)
            ms_mlp_params(n->mlp)[bo + j] = 0.1f * (float) (j % 3) - 0.1f;
    }
    float *x = ms_mlp_input(n->mlp);
    for (int i = 0; i < ROWS * N_IN; i++)
        x[i] = (float) ms_rng_normal(&rng);
    for (int i = 0; i < ROWS; i++) {
        ms_mlp_labels(n->mlp)[i] = i % (n_out > 1 ? n_out : 1);
        ms_mlp_targets(n->mlp)[i] = (float) ms_rng_normal(&rng);
    }
    ms_rng_seed(&n->dropout_rng, 42, 2);
}

static void
net_close(net_t *n)
{
    ms_mlp_destroy(&n->mlp);
    assert_null(n->mlp);
    ms_backend_destroy(&n->backend);
}

//  Mean loss at the current parameters (with the fixed dropout mask),
//  plus (l2 / 2) ||W||^2 over weights when l2 > 0.
static double
net_objective(net_t *n, double l2)
{
    ms_rng_t rng = n->dropout_rng;
    ms_rng_t *drop = n->cfg.dropout > 0 ? &rng : NULL;
    assert_int_equal(ms_mlp_forward(n->mlp, ms_mlp_params(n->mlp), ROWS, drop),
                     MS_OK);
    double sum = 0;
    int64_t correct = 0;
    assert_int_equal(ms_mlp_loss(n->mlp, ROWS, false, &sum, &correct), MS_OK);
    double j = sum / ROWS;
    if (l2 > 0)
        for (int32_t l = 0; l < ms_mlp_n_layers(n->mlp); l++) {
            int64_t wo, bo;
            ms_mlp_layer(n->mlp, l, &wo, &bo, NULL, NULL);
            for (int64_t i = wo; i < bo; i++) {
                double w = ms_mlp_params(n->mlp)[i];
                j += 0.5 * l2 * w * w;
            }
        }
    return j;
}

//  Analytic gradient into grads (forward + loss + backward).
static void
net_gradient(net_t *n)
{
    ms_rng_t rng = n->dropout_rng;
    ms_rng_t *drop = n->cfg.dropout > 0 ? &rng : NULL;
    assert_int_equal(ms_mlp_forward(n->mlp, ms_mlp_params(n->mlp), ROWS, drop),
                     MS_OK);
    double sum = 0;
    int64_t correct = 0;
    assert_int_equal(ms_mlp_loss(n->mlp, ROWS, true, &sum, &correct), MS_OK);
    assert_int_equal(ms_mlp_backward(n->mlp, ROWS), MS_OK);
}

//  Compare analytic (given) and central-difference gradients of every
//  parameter; returns the number of disagreements (and prints them).
static int
net_check(net_t *n, const float *analytic, double l2, const char *what)
{
    float *p = ms_mlp_params(n->mlp);
    int64_t np = ms_mlp_n_params(n->mlp);
    int bad = 0;
    const float steps[3] = {1e-2f, 2e-3f, 3e-4f};
    for (int64_t i = 0; i < np; i++) {
        double an = analytic[i], fd = 0;
        bool ok = false;
        for (int k = 0; k < 3 && !ok; k++) {
            float h = steps[k], save = p[i];
            p[i] = save + h;
            double up = net_objective(n, l2);
            p[i] = save - h;
            double down = net_objective(n, l2);
            p[i] = save;
            fd = (up - down) / (double) (2 * h);
            ok = fabs(fd - an) <= 1e-3 + 2e-2 * fabs(an);
        }
        if (!ok) {
            if (bad < 5)
                print_message("%s: param %lld: fd %.6g analytic %.6g\n", what,
                              (long long) i, fd, an);
            bad++;
        }
    }
    return bad;
}

//  Full check of one configuration.
static void
check_config(int32_t n_hidden, const int32_t *sizes, ms_activation_t act,
             ms_loss_kind_t loss, double dropout, int32_t n_out)
{
    net_t n;
    net_open(&n, n_hidden, sizes, act, loss, dropout, n_out);
    net_gradient(&n);
    int64_t np = ms_mlp_n_params(n.mlp);
    float *g = malloc((size_t) np * sizeof(float));
    memcpy(g, ms_mlp_grads(n.mlp), (size_t) np * sizeof(float));
    char what[128];
    snprintf(what, sizeof what, "%s/%s/depth %d/dropout %.1f/out %d",
             ms_activation_name(act), ms_loss_name(loss), (int) n_hidden,
             dropout, (int) n_out);
    int bad = net_check(&n, g, 0, what);
    free(g);
    net_close(&n);
    if (bad)
        fail_msg("%s: %d of %lld gradients wrong", what, bad, (long long) np);
}

//  --------------------------------------------------------------------------
static void
test_gradients_every_activation_cross_entropy(void **state)
{
    (void) state;
    const int32_t sizes[2] = {6, 5};
    for (int a = MS_ACTIVATION_RELU; a <= MS_ACTIVATION_LINEAR; a++)
        check_config(2, sizes, a, MS_LOSS_CROSS_ENTROPY, 0, 3);
}

static void
test_gradients_every_activation_mse(void **state)
{
    (void) state;
    const int32_t sizes[2] = {6, 5};
    for (int a = MS_ACTIVATION_RELU; a <= MS_ACTIVATION_LINEAR; a++) {
        check_config(2, sizes, a, MS_LOSS_MSE, 0, 3); // one-hot targets
        check_config(2, sizes, a, MS_LOSS_MSE, 0, 1); // regression
    }
}

static void
test_gradients_depths(void **state)
{
    (void) state;
    const int32_t sizes[6] = {7, 3, 6, 4, 5, 3};
    for (int32_t depth = 0; depth <= 6; depth += 2) {
        check_config(depth, sizes, MS_ACTIVATION_TANH, MS_LOSS_CROSS_ENTROPY, 0,
                     4);
        check_config(depth, sizes, MS_ACTIVATION_GELU, MS_LOSS_MSE, 0, 1);
    }
}

//  Dropout with the mask held fixed is a fixed linear map per unit: the
//  gradient must go through the same mask.
static void
test_gradients_dropout_fixed_mask(void **state)
{
    (void) state;
    const int32_t sizes[3] = {8, 6, 5};
    for (int a = MS_ACTIVATION_RELU; a <= MS_ACTIVATION_LINEAR; a++)
        check_config(3, sizes, a, MS_LOSS_CROSS_ENTROPY, 0.3, 3);
    check_config(3, sizes, MS_ACTIVATION_SIGMOID, MS_LOSS_MSE, 0.5, 1);
}

//  The mask does drop units: with p = 0.5 some hidden output is exactly
//  zero and the rest are scaled by 2.
static void
test_dropout_mask_values(void **state)
{
    (void) state;
    const int32_t sizes[1] = {64};
    net_t n;
    net_open(&n, 1, sizes, MS_ACTIVATION_LINEAR, MS_LOSS_CROSS_ENTROPY, 0.5, 3);
    float *out_eval = malloc(ROWS * 3 * sizeof(float));
    ms_mlp_forward(n.mlp, ms_mlp_params(n.mlp), ROWS, NULL);
    memcpy(out_eval, ms_mlp_output(n.mlp), ROWS * 3 * sizeof(float));
    ms_rng_t rng = n.dropout_rng;
    ms_mlp_forward(n.mlp, ms_mlp_params(n.mlp), ROWS, &rng);
    assert_memory_not_equal(out_eval, ms_mlp_output(n.mlp),
                            ROWS * 3 * sizeof(float));
    //  The rng advanced by one draw per hidden unit.
    ms_rng_t expect = n.dropout_rng;
    for (int i = 0; i < ROWS * 64; i++)
        ms_rng_next(&expect);
    assert_memory_equal(&rng, &expect, sizeof rng);
    free(out_eval);
    net_close(&n);
}

//  L2: the effective gradient that the optimizer applies (sgd, lr 1, so
//  w_before - w_after) is the gradient of loss + (l2 / 2) ||W||^2, and
//  biases are not decayed.
static void
test_gradients_l2(void **state)
{
    (void) state;
    const int32_t sizes[2] = {6, 5};
    net_t n;
    net_open(&n, 2, sizes, MS_ACTIVATION_TANH, MS_LOSS_CROSS_ENTROPY, 0, 3);
    n.cfg.l2 = 0.3;
    n.cfg.optimizer = MS_OPTIM_SGD;
    int64_t np = ms_mlp_n_params(n.mlp);
    float *before = malloc((size_t) np * sizeof(float));
    float *eff = malloc((size_t) np * sizeof(float));
    memcpy(before, ms_mlp_params(n.mlp), (size_t) np * sizeof(float));
    net_gradient(&n);
    //  A small rate keeps the difference accurate in float.
    const double lr = 1e-3;
    assert_int_equal(ms_mlp_step(n.mlp, &n.cfg, lr, 1), MS_OK);
    for (int64_t i = 0; i < np; i++)
        eff[i] = (float) (((double) before[i] - ms_mlp_params(n.mlp)[i]) / lr);
    memcpy(ms_mlp_params(n.mlp), before, (size_t) np * sizeof(float));
    int bad = net_check(&n, eff, 0.3, "l2");
    //  Compare with the un-decayed gradient: weights differ, biases not.
    int64_t bo;
    ms_mlp_layer(n.mlp, 0, NULL, &bo, NULL, NULL);
    assert_true(fabs(eff[0] - (ms_mlp_grads(n.mlp)[0] + 0.3f * before[0])) <
                1e-2 * (1 + fabs(eff[0])));
    assert_true(fabs(eff[bo] - ms_mlp_grads(n.mlp)[bo]) < 1e-2);
    free(before);
    free(eff);
    net_close(&n);
    assert_int_equal(bad, 0);
}

//  --------------------------------------------------------------------------
//  Layout: layer l's W (fan_out x fan_in) then b, contiguous.
static void
test_layout(void **state)
{
    (void) state;
    const int32_t sizes[2] = {6, 5};
    net_t n;
    net_open(&n, 2, sizes, MS_ACTIVATION_RELU, MS_LOSS_CROSS_ENTROPY, 0, 3);
    assert_int_equal(ms_mlp_n_layers(n.mlp), 3);
    assert_int_equal(ms_mlp_n_params(n.mlp), 5 * 6 + 7 * 5 + 6 * 3);
    assert_int_equal(ms_mlp_n_params(n.mlp),
                     ms_train_config_params(&n.cfg, N_IN, 3));
    int64_t wo, bo;
    int32_t fi, fo;
    ms_mlp_layer(n.mlp, 1, &wo, &bo, &fi, &fo);
    assert_int_equal(wo, 30);
    assert_int_equal(bo, 30 + 30);
    assert_int_equal(fi, 6);
    assert_int_equal(fo, 5);
    assert_int_equal(ms_mlp_state_floats(n.mlp), 0); // sgd keeps none
    assert_int_equal(ms_mlp_max_rows(n.mlp), ROWS);
    assert_true(ms_mlp_workspace_bytes(n.mlp) > 0);
    //  Output row 0 by hand for a 0-hidden-layer net is W x + b.
    net_close(&n);
    net_open(&n, 0, NULL, MS_ACTIVATION_RELU, MS_LOSS_MSE, 0, 2);
    ms_mlp_forward(n.mlp, ms_mlp_params(n.mlp), ROWS, NULL);
    const float *p = ms_mlp_params(n.mlp), *x = ms_mlp_input(n.mlp);
    for (int o = 0; o < 2; o++) {
        double want = p[2 * N_IN + o];
        for (int i = 0; i < N_IN; i++)
            want += (double) p[o * N_IN + i] * x[i];
        assert_true(fabs(ms_mlp_output(n.mlp)[o] - want) < 1e-5);
    }
    net_close(&n);
}

//  Init: he/xavier/lecun standard deviations; orthogonal rows/columns;
//  same seed, same bits.
static void
test_init(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    ms_train_config_set_uniform(&cfg, 1, 300);
    cfg.activation = MS_ACTIVATION_RELU;
    const ms_init_t inits[3] = {MS_INIT_HE, MS_INIT_XAVIER, MS_INIT_LECUN};
    const double want[3] = {sqrt(2.0 / 200), sqrt(2.0 / 500), sqrt(1.0 / 200)};
    for (int k = 0; k < 3; k++) {
        ms_mlp_t *m;
        assert_int_equal(ms_mlp_open(&m, &cfg, 200, 10, 4, b), MS_OK);
        ms_rng_t rng;
        ms_rng_seed(&rng, 5, 1);
        ms_mlp_init(m, inits[k], &rng);
        double ss = 0;
        for (int i = 0; i < 200 * 300; i++)
            ss += (double) ms_mlp_params(m)[i] * ms_mlp_params(m)[i];
        double sd = sqrt(ss / (200 * 300));
        assert_true(fabs(sd / want[k] - 1) < 0.02);
        for (int i = 0; i < 300; i++) // biases zero
            assert_true(ms_mlp_params(m)[200 * 300 + i] == 0.0f);
        ms_mlp_destroy(&m);
    }
    //  Orthogonal: layer 0 is 300 x 200 (orthonormal columns, gain
    //  sqrt 2), layer 1 is 10 x 300 (orthonormal rows, gain 1).
    ms_mlp_t *m, *m2;
    assert_int_equal(ms_mlp_open(&m, &cfg, 200, 10, 4, b), MS_OK);
    assert_int_equal(ms_mlp_open(&m2, &cfg, 200, 10, 4, b), MS_OK);
    ms_rng_t rng, rng2;
    ms_rng_seed(&rng, 5, 1);
    rng2 = rng;
    ms_mlp_init(m, MS_INIT_ORTHOGONAL, &rng);
    ms_mlp_init(m2, MS_INIT_ORTHOGONAL, &rng2);
    assert_memory_equal(ms_mlp_params(m), ms_mlp_params(m2),
                        (size_t) ms_mlp_n_params(m) * sizeof(float));
    const float *w = ms_mlp_params(m);
    for (int a = 0; a < 200; a += 37)
        for (int c = 0; c < 200; c += 23) {
            double dot = 0;
            for (int o = 0; o < 300; o++)
                dot += (double) w[o * 200 + a] * w[o * 200 + c];
            assert_true(fabs(dot - (a == c ? 2.0 : 0.0)) < 1e-5);
        }
    int64_t wo;
    ms_mlp_layer(m, 1, &wo, NULL, NULL, NULL);
    const float *w1 = w + wo;
    for (int r = 0; r < 10; r++)
        for (int s = 0; s < 10; s++) {
            double dot = 0;
            for (int i = 0; i < 300; i++)
                dot += (double) w1[r * 300 + i] * w1[s * 300 + i];
            assert_true(fabs(dot - (r == s ? 1.0 : 0.0)) < 1e-5);
        }
    ms_mlp_destroy(&m);
    ms_mlp_destroy(&m2);
    ms_backend_destroy(&b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients_every_activation_cross_entropy),
        cmocka_unit_test(test_gradients_every_activation_mse),
        cmocka_unit_test(test_gradients_depths),
        cmocka_unit_test(test_gradients_dropout_fixed_mask),
        cmocka_unit_test(test_dropout_mask_values),
        cmocka_unit_test(test_gradients_l2),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
