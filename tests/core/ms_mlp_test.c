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
#include "ms_backend_internal.h"
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

//  A config with given hidden sizes (sgd, leaky slope 0.1).
static void
net_config(ms_train_config_t *cfg, int32_t n_hidden, const int32_t *sizes,
           ms_activation_t act, ms_loss_kind_t loss, double dropout)
{
    ms_train_config_defaults(cfg);
    cfg->n_hidden = n_hidden;
    for (int32_t i = 0; i < n_hidden; i++)
        cfg->hidden_sizes[i] = sizes[i];
    cfg->activation = act;
    cfg->leaky_slope = 0.1;
    cfg->loss = loss;
    cfg->dropout = dropout;
    cfg->optimizer = MS_OPTIM_SGD;
}

//  Build the net of cfg, fill input and labels/targets.
static void
net_open_cfg(net_t *n, const ms_train_config_t *cfg, int32_t n_out)
{
    memset(n, 0, sizeof *n);
    n->backend = ms_backend_cpu_new(1);
    n->cfg = *cfg;
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

//  Build a net with given hidden sizes, fill input and labels/targets.
static void
net_open(net_t *n, int32_t n_hidden, const int32_t *sizes, ms_activation_t act,
         ms_loss_kind_t loss, double dropout, int32_t n_out)
{
    ms_train_config_t cfg;
    net_config(&cfg, n_hidden, sizes, act, loss, dropout);
    net_open_cfg(n, &cfg, n_out);
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
    //  A training pass (an rng given): the drawn masks when there is
    //  dropout, batch statistics when there is batch norm.
    ms_rng_t rng = n->dropout_rng;
    assert_int_equal(ms_mlp_forward(n->mlp, ms_mlp_params(n->mlp), ROWS, &rng),
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
    //  A training pass (an rng given): the drawn masks when there is
    //  dropout, batch statistics when there is batch norm.
    ms_rng_t rng = n->dropout_rng;
    assert_int_equal(ms_mlp_forward(n->mlp, ms_mlp_params(n->mlp), ROWS, &rng),
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

//  Every parameter of an open net against central differences; closes
//  the net; fails naming what. The running statistics of batch norm (not
//  trained) must have a zero gradient.
static void
net_check_all(net_t *n, const char *what)
{
    net_gradient(n);
    int64_t np = ms_mlp_n_params(n->mlp);
    float *g = malloc((size_t) np * sizeof(float));
    memcpy(g, ms_mlp_grads(n->mlp), (size_t) np * sizeof(float));
    for (int64_t i = ms_mlp_n_trainable(n->mlp); i < np; i++)
        assert_true(g[i] == 0.0f);
    int bad = net_check(n, g, 0, what);
    free(g);
    net_close(n);
    if (bad)
        fail_msg("%s: %d of %lld gradients wrong", what, bad, (long long) np);
}

//  Full check of one configuration.
static void
check_config(int32_t n_hidden, const int32_t *sizes, ms_activation_t act,
             ms_loss_kind_t loss, double dropout, int32_t n_out)
{
    net_t n;
    net_open(&n, n_hidden, sizes, act, loss, dropout, n_out);
    char what[128];
    snprintf(what, sizeof what, "%s/%s/depth %d/dropout %.1f/out %d",
             ms_activation_name(act), ms_loss_name(loss), (int) n_hidden,
             dropout, (int) n_out);
    net_check_all(&n, what);
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

//  --------------------------------------------------------------------------
//  Residual and normalised networks.

//  Move the norm gains and biases and the rezero scales away from their
//  init (1, 0, 0), so that every term of their gradients and of the
//  gradients through them matters (a zero rezero scale would cut the
//  blocks off, a unit gain hide a missing factor).
static void
net_set_extras(net_t *n)
{
    float *p = ms_mlp_params(n->mlp);
    for (int32_t l = 1; l < ms_mlp_n_layers(n->mlp); l++) {
        int64_t go, bo;
        int32_t fi;
        ms_mlp_layer(n->mlp, l, NULL, NULL, &fi, NULL);
        if (ms_mlp_norm(n->mlp, l, &go, &bo, NULL, NULL) == MS_NORM_NONE)
            continue;
        for (int32_t j = 0; j < fi; j++) {
            p[go + j] = 1.0f + 0.15f * (float) (j % 4) - 0.2f;
            p[bo + j] = 0.05f * (float) (j % 3) - 0.05f;
        }
    }
    for (int32_t k = 0; k < ms_mlp_n_blocks(n->mlp); k++) {
        int64_t ao;
        ms_mlp_block(n->mlp, k, NULL, NULL, &ao);
        if (ao >= 0)
            p[ao] = 0.6f + 0.1f * (float) (k % 3);
    }
}

//  A residual / normalised config on top of net_config.
static void
arch_config(ms_train_config_t *cfg, int32_t n_hidden, const int32_t *sizes,
            ms_activation_t act, ms_architecture_t arch, int32_t block_layers,
            ms_norm_t norm, ms_residual_scale_t scale, double dropout)
{
    net_config(cfg, n_hidden, sizes, act, MS_LOSS_CROSS_ENTROPY, dropout);
    cfg->architecture = arch;
    cfg->block_layers = block_layers;
    cfg->norm = norm;
    cfg->residual_scale = scale;
    ms_diag_t diag;
    assert_int_equal(ms_train_config_check(cfg, &diag), MS_OK);
}

//  Every parameter of a small residual / normalised net against central
//  differences (net_check's rules).
static void
check_arch(int32_t n_hidden, const int32_t *sizes, ms_activation_t act,
           ms_architecture_t arch, int32_t block_layers, ms_norm_t norm,
           ms_residual_scale_t scale, double dropout)
{
    ms_train_config_t cfg;
    arch_config(&cfg, n_hidden, sizes, act, arch, block_layers, norm, scale,
                dropout);
    net_t n;
    net_open_cfg(&n, &cfg, 3);
    net_set_extras(&n);
    char what[160];
    snprintf(what, sizeof what,
             "%s/%s/%d layers/block %d/norm %s/scale %s/dropout %.1f",
             ms_activation_name(act), ms_architecture_name(arch),
             (int) n_hidden, (int) block_layers, ms_norm_name(norm),
             ms_residual_scale_name(scale), dropout);
    net_check_all(&n, what);
}

//  Layer norm and batch norm on the inputs of layers 1 .. L-1 of a plain
//  network, every activation.
static void
test_gradients_norms(void **state)
{
    (void) state;
    const int32_t sizes[3] = {7, 6, 5};
    for (int a = MS_ACTIVATION_RELU; a <= MS_ACTIVATION_LINEAR; a++) {
        check_arch(3, sizes, a, MS_ARCH_PLAIN, 1, MS_NORM_LAYER,
                   MS_RESIDUAL_SCALE_ONE, 0);
        check_arch(3, sizes, a, MS_ARCH_PLAIN, 1, MS_NORM_BATCH,
                   MS_RESIDUAL_SCALE_ONE, 0);
    }
    check_arch(3, sizes, MS_ACTIVATION_TANH, MS_ARCH_PLAIN, 1, MS_NORM_LAYER,
               MS_RESIDUAL_SCALE_ONE, 0.3);
}

//  The residual add (blocks of one and two layers, the remainder block),
//  with and without norm, rezero, dropout inside the branches.
static void
test_gradients_residual(void **state)
{
    (void) state;
    const int32_t sizes[6] = {6, 6, 6, 6, 6, 6};
    for (int32_t bl = 1; bl <= 2; bl++)
        for (int norm = MS_NORM_NONE; norm <= MS_NORM_BATCH; norm++)
            for (int sc = 0; sc <= 1; sc++) {
                check_arch(6, sizes, MS_ACTIVATION_TANH, MS_ARCH_RESIDUAL, bl,
                           norm, sc, 0);
                check_arch(5, sizes, MS_ACTIVATION_GELU, MS_ARCH_RESIDUAL, bl,
                           norm, sc, 0);
            }
    check_arch(1, sizes, MS_ACTIVATION_TANH, MS_ARCH_RESIDUAL, 1, MS_NORM_LAYER,
               MS_RESIDUAL_SCALE_ONE, 0);
    check_arch(4, sizes, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 2, MS_NORM_LAYER,
               MS_RESIDUAL_SCALE_REZERO, 0.3);
    check_arch(4, sizes, MS_ACTIVATION_SIGMOID, MS_ARCH_RESIDUAL, 1,
               MS_NORM_BATCH, MS_RESIDUAL_SCALE_REZERO, 0.3);
}

//  Deep residual normalised networks (width 8): the whole gradient
//  against central differences along random directions, since one
//  difference per parameter would take minutes. J(p + h d) - J(p - h d)
//  over 2h is d . grad J + O(h^2); in float32 the loss's rounding
//  (~1e-7 |J| per op, growing with depth) divided by h = 1e-2 adds about
//  1e-4 at depth 256 (measured: relative errors up to 1.5e-2 at h = 1e-2,
//  up to 7e-2 at h = 1e-3, where rounding dominates). So the check
//  accepts |fd - analytic| <= 1e-4 + 2e-2 |analytic| at h = 1e-2, or at
//  3e-3 where that disagrees, along three unit directions: wide enough
//  for rounding, narrow enough for a wrong gradient anywhere (checked by
//  breaking layer_norm_backward, batch_norm_backward and
//  residual_backward by hand: each fails).
static void
check_deep(int32_t depth, ms_norm_t norm, ms_residual_scale_t scale,
           int32_t block_layers)
{
    int32_t *sizes = malloc((size_t) depth * sizeof(int32_t));
    for (int32_t i = 0; i < depth; i++)
        sizes[i] = 8;
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    arch_config(cfg, depth, sizes, MS_ACTIVATION_TANH, MS_ARCH_RESIDUAL,
                block_layers, norm, scale, 0);
    net_t n;
    net_open_cfg(&n, cfg, 3);
    net_set_extras(&n);
    net_gradient(&n);
    int64_t nt = ms_mlp_n_trainable(n.mlp);
    float *g = malloc((size_t) nt * sizeof(float));
    float *save = malloc((size_t) nt * sizeof(float));
    double *dir = malloc((size_t) nt * sizeof(double));
    memcpy(g, ms_mlp_grads(n.mlp), (size_t) nt * sizeof(float));
    float *p = ms_mlp_params(n.mlp);
    memcpy(save, p, (size_t) nt * sizeof(float));
    ms_rng_t rng;
    ms_rng_seed(&rng, 7, (uint64_t) depth);
    for (int trial = 0; trial < 3; trial++) {
        double an = 0, dn = 0;
        for (int64_t i = 0; i < nt; i++) {
            dir[i] = ms_rng_normal(&rng);
            dn += dir[i] * dir[i];
        }
        dn = sqrt(dn);
        for (int64_t i = 0; i < nt; i++) {
            dir[i] /= dn; // unit direction
            an += dir[i] * g[i];
        }
        //  h = 1e-2, and 3e-3 where that disagrees (less truncation, more
        //  rounding): a wrong gradient disagrees at both.
        const double steps[2] = {1e-2, 3e-3};
        double fd = 0;
        bool ok = false;
        for (int k = 0; k < 2 && !ok; k++) {
            double h = steps[k];
            for (int64_t i = 0; i < nt; i++)
                p[i] = (float) (save[i] + h * dir[i]);
            double up = net_objective(&n, 0);
            for (int64_t i = 0; i < nt; i++)
                p[i] = (float) (save[i] - h * dir[i]);
            double down = net_objective(&n, 0);
            memcpy(p, save, (size_t) nt * sizeof(float));
            fd = (up - down) / (2 * h);
            ok = fabs(fd - an) <= 1e-4 + 2e-2 * fabs(an);
        }
        if (getenv("MS_GRADCHECK_PRINT"))
            print_message("depth %d norm %s scale %s block %d: fd %.8g "
                          "analytic %.8g rel %.2e\n",
                          (int) depth, ms_norm_name(norm),
                          ms_residual_scale_name(scale), (int) block_layers, fd,
                          an, fabs(fd - an) / fabs(an));
        if (!ok)
            fail_msg("depth %d norm %s scale %s block %d, direction %d: fd "
                     "%.8g analytic %.8g",
                     (int) depth, ms_norm_name(norm),
                     ms_residual_scale_name(scale), (int) block_layers, trial,
                     fd, an);
    }
    free(g);
    free(save);
    free(dir);
    free(sizes);
    free(cfg);
    net_close(&n);
}

static void
test_gradients_deep_residual(void **state)
{
    (void) state;
    check_deep(64, MS_NORM_LAYER, MS_RESIDUAL_SCALE_ONE, 1);
    check_deep(64, MS_NORM_BATCH, MS_RESIDUAL_SCALE_REZERO, 2);
    check_deep(256, MS_NORM_LAYER, MS_RESIDUAL_SCALE_ONE, 1);
    check_deep(256, MS_NORM_LAYER, MS_RESIDUAL_SCALE_REZERO, 2);
    check_deep(256, MS_NORM_BATCH, MS_RESIDUAL_SCALE_ONE, 1);
}

//  The parameter block of a residual batch-norm rezero network: W, b as
//  for a plain one, then gamma, beta per layer 1 .. L-1, the scales, the
//  running statistics; init values; the count ms_train_config_params
//  gives; the running statistics move in training and serve evaluation.
static void
test_layout_residual(void **state)
{
    (void) state;
    const int32_t sizes[4] = {6, 6, 6, 6};
    ms_train_config_t cfg;
    arch_config(&cfg, 4, sizes, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 2,
                MS_NORM_BATCH, MS_RESIDUAL_SCALE_REZERO, 0);
    net_t n;
    net_open_cfg(&n, &cfg, 3);
    int64_t plain = 5 * 6 + 3 * 7 * 6 + 7 * 3;
    int64_t normed = 6 * 4;                      // inputs of layers 1 .. 4
    assert_int_equal(ms_mlp_n_blocks(n.mlp), 2); // layers 1-2, then 3
    int32_t first, last;
    int64_t ao;
    ms_mlp_block(n.mlp, 1, &first, &last, &ao);
    assert_int_equal(first, 3);
    assert_int_equal(last, 3);
    assert_int_equal(ao, plain + 2 * normed + 1);
    assert_int_equal(ms_mlp_n_trainable(n.mlp), plain + 2 * normed + 2);
    assert_int_equal(ms_mlp_n_params(n.mlp), plain + 4 * normed + 2);
    assert_int_equal(ms_mlp_n_params(n.mlp),
                     ms_train_config_params(&cfg, N_IN, 3));
    int64_t go, bo, mo, vo;
    assert_int_equal(ms_mlp_norm(n.mlp, 0, &go, NULL, NULL, NULL),
                     MS_NORM_NONE);
    assert_int_equal(go, -1);
    assert_int_equal(ms_mlp_norm(n.mlp, 2, &go, &bo, &mo, &vo), MS_NORM_BATCH);
    assert_int_equal(go, plain + 12);
    assert_int_equal(bo, plain + 18);
    assert_int_equal(mo, plain + 2 * normed + 2 + 12);
    assert_int_equal(vo, mo + 6);
    const float *p = ms_mlp_params(n.mlp);
    assert_true(p[go] == 1.0f && p[bo] == 0.0f && p[mo] == 0.0f &&
                p[vo] == 1.0f && p[ao] == 0.0f);
    //  A training pass moves layer 1's running means towards the batch
    //  means of its input (0.1 of the way, from 0), its variances from 1;
    //  evaluation then uses them and leaves them: its outputs differ from
    //  a training pass's.
    ms_mlp_norm(n.mlp, 1, NULL, NULL, &mo, &vo);
    ms_rng_t rng = n.dropout_rng;
    assert_int_equal(ms_mlp_forward(n.mlp, p, ROWS, &rng), MS_OK);
    float train_out[ROWS * 3];
    memcpy(train_out, ms_mlp_output(n.mlp), sizeof train_out);
    float stats[12];
    memcpy(stats, p + mo, sizeof stats);
    float far = 0;
    for (int j = 0; j < 6; j++) {
        far = fmaxf(far, fabsf(stats[j]));
        assert_true(stats[6 + j] != 1.0f || stats[j] == 0.0f);
    }
    assert_true(far > 0);
    assert_int_equal(ms_mlp_forward(n.mlp, p, ROWS, NULL), MS_OK);
    assert_memory_equal(p + mo, stats, sizeof stats);
    assert_memory_not_equal(train_out, ms_mlp_output(n.mlp), sizeof train_out);
    net_close(&n);
    //  Layer norm without rezero: no scales, no running statistics; a
    //  plain network without norm has exactly the plain layout.
    arch_config(&cfg, 4, sizes, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 1,
                MS_NORM_LAYER, MS_RESIDUAL_SCALE_ONE, 0);
    net_open_cfg(&n, &cfg, 3);
    assert_int_equal(ms_mlp_n_params(n.mlp), plain + 2 * normed);
    assert_int_equal(ms_mlp_n_trainable(n.mlp), ms_mlp_n_params(n.mlp));
    ms_mlp_block(n.mlp, 0, NULL, NULL, &ao);
    assert_int_equal(ao, -1);
    net_close(&n);
}

//  Clipping: the step a clipped sgd (lr 1e-3) takes is the gradient
//  scaled to the clip's norm; the norms ms_mlp_grad_norms reports are
//  the unclipped ones.
static void
test_clip_norm(void **state)
{
    (void) state;
    const int32_t sizes[3] = {6, 6, 6};
    ms_train_config_t cfg;
    arch_config(&cfg, 3, sizes, MS_ACTIVATION_TANH, MS_ARCH_RESIDUAL, 1,
                MS_NORM_LAYER, MS_RESIDUAL_SCALE_ONE, 0);
    cfg.l2 = 0;
    net_t n;
    net_open_cfg(&n, &cfg, 3);
    net_gradient(&n);
    int64_t np = ms_mlp_n_params(n.mlp);
    float *g = malloc((size_t) np * sizeof(float));
    float *before = malloc((size_t) np * sizeof(float));
    memcpy(g, ms_mlp_grads(n.mlp), (size_t) np * sizeof(float));
    memcpy(before, ms_mlp_params(n.mlp), (size_t) np * sizeof(float));
    double norm = 0;
    for (int64_t i = 0; i < np; i++)
        norm += (double) g[i] * g[i];
    norm = sqrt(norm);
    double unclipped[4];
    assert_int_equal(ms_mlp_grad_norms(n.mlp, unclipped), MS_OK);
    //  The same net (same init, same input) clipped at half the norm:
    //  every gradient halves.
    net_t c;
    cfg.clip_norm = norm / 2;
    net_open_cfg(&c, &cfg, 3);
    assert_memory_equal(ms_mlp_params(c.mlp), before,
                        (size_t) np * sizeof(float));
    net_gradient(&c);
    assert_int_equal(ms_mlp_step(c.mlp, &c.cfg, 1e-3, 1), MS_OK);
    for (int64_t i = 0; i < np; i++) {
        double step = ((double) before[i] - ms_mlp_params(c.mlp)[i]) / 1e-3;
        assert_true(fabs(step - g[i] / 2) <= 1e-3 * (1 + fabs(g[i])));
    }
    double reported[4];
    assert_int_equal(ms_mlp_grad_norms(c.mlp, reported), MS_OK);
    for (int l = 0; l < 4; l++)
        assert_true(fabs(reported[l] - unclipped[l]) <=
                    1e-5 * unclipped[l] + 1e-12);
    free(g);
    free(before);
    net_close(&c);
    net_close(&n);
}

//  A cpu backend whose alloc counts the bytes asked for, to hold
//  ms_mlp_memory_bytes against what ms_mlp_open allocates. host_memory
//  false makes ms_mlp_open allocate as for a device (its scalars too).
static const ms_backend_ops_t *s_cpu_ops;
static int64_t s_alloc_bytes;

static void *
s_counting_alloc(ms_backend_t *b, size_t n_bytes)
{
    s_alloc_bytes += (int64_t) n_bytes;
    return s_cpu_ops->alloc(b, n_bytes);
}

//  Bytes ms_mlp_open allocates for cfg (n_outputs 3, rows rows) on the
//  counting backend, host_memory as given.
static int64_t
s_open_bytes(const ms_train_config_t *cfg, int64_t rows, bool host_memory)
{
    ms_backend_t *backend = ms_backend_cpu_new(1);
    assert_non_null(backend);
    s_cpu_ops = backend->ops;
    ms_backend_ops_t counting = *s_cpu_ops;
    counting.alloc = s_counting_alloc;
    counting.host_memory = host_memory;
    backend->ops = &counting;
    s_alloc_bytes = 0;
    ms_mlp_t *mlp = NULL;
    assert_int_equal(ms_mlp_open(&mlp, cfg, N_IN, 3, rows, backend), MS_OK);
    int64_t bytes = s_alloc_bytes;
    ms_mlp_destroy(&mlp);
    backend->ops = s_cpu_ops;
    ms_backend_destroy(&backend);
    return bytes;
}

//  ms_mlp_memory_bytes is what ms_mlp_open allocates: exactly on a
//  device backend, and at most 256 bytes more on the cpu (the device
//  scalars, 120 bytes today, that a host backend does not need); for plain,
//  gelu (z kept), dropout, residual with layer norm, batch norm, rezero and a
//  deep residual network, at several batch sizes; and it grows with depth and
//  rows.
static void
test_memory_estimate(void **state)
{
    (void) state;
    const int32_t w6[6] = {6, 6, 6, 6, 6, 6};
    const int32_t mixed[3] = {9, 5, 7};
    int32_t deep[64];
    for (int i = 0; i < 64; i++)
        deep[i] = 8;
    struct {
        int32_t n_hidden;
        const int32_t *sizes;
        ms_activation_t act;
        ms_architecture_t arch;
        int32_t block_layers;
        ms_norm_t norm;
        ms_residual_scale_t scale;
        double dropout;
        ms_optim_kind_t optim;
    } cases[] = {
        {3, mixed, MS_ACTIVATION_RELU, MS_ARCH_PLAIN, 1, MS_NORM_NONE,
         MS_RESIDUAL_SCALE_ONE, 0, MS_OPTIM_SGD},
        {0, mixed, MS_ACTIVATION_RELU, MS_ARCH_PLAIN, 1, MS_NORM_NONE,
         MS_RESIDUAL_SCALE_ONE, 0, MS_OPTIM_ADAM},
        {3, mixed, MS_ACTIVATION_GELU, MS_ARCH_PLAIN, 1, MS_NORM_NONE,
         MS_RESIDUAL_SCALE_ONE, 0.3, MS_OPTIM_MOMENTUM},
        {5, w6, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 2, MS_NORM_LAYER,
         MS_RESIDUAL_SCALE_ONE, 0, MS_OPTIM_ADAMW},
        {4, w6, MS_ACTIVATION_TANH, MS_ARCH_PLAIN, 1, MS_NORM_BATCH,
         MS_RESIDUAL_SCALE_ONE, 0, MS_OPTIM_ADAM},
        {6, w6, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 1, MS_NORM_BATCH,
         MS_RESIDUAL_SCALE_REZERO, 0.2, MS_OPTIM_ADAM},
        {6, w6, MS_ACTIVATION_GELU, MS_ARCH_RESIDUAL, 2, MS_NORM_NONE,
         MS_RESIDUAL_SCALE_REZERO, 0, MS_OPTIM_NESTEROV},
        {64, deep, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 2, MS_NORM_LAYER,
         MS_RESIDUAL_SCALE_REZERO, 0.1, MS_OPTIM_ADAM},
    };
    const int64_t rows[3] = {1, ROWS, 37};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int r = 0; r < 3; r++) {
            ms_train_config_t cfg;
            arch_config(&cfg, cases[c].n_hidden, cases[c].sizes, cases[c].act,
                        cases[c].arch, cases[c].block_layers, cases[c].norm,
                        cases[c].scale, cases[c].dropout);
            cfg.optimizer = cases[c].optim;
            int64_t est = ms_mlp_memory_bytes(&cfg, N_IN, 3, rows[r]);
            int64_t device = s_open_bytes(&cfg, rows[r], false);
            int64_t host = s_open_bytes(&cfg, rows[r], true);
            if (est != device || host > est || est - host > 256)
                fail_msg("case %zu rows %lld: estimate %lld, device %lld, "
                         "cpu %lld",
                         c, (long long) rows[r], (long long) est,
                         (long long) device, (long long) host);
            //  At least the parameters, gradients and state.
            int64_t n = ms_train_config_params(&cfg, N_IN, 3);
            assert_true(est >=
                        n * 4 * (2 + ms_optim_state_per_param(cfg.optimizer)));
        }
    ms_train_config_t shallow, deeper;
    arch_config(&shallow, 8, deep, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 1,
                MS_NORM_LAYER, MS_RESIDUAL_SCALE_ONE, 0);
    arch_config(&deeper, 64, deep, MS_ACTIVATION_RELU, MS_ARCH_RESIDUAL, 1,
                MS_NORM_LAYER, MS_RESIDUAL_SCALE_ONE, 0);
    assert_true(ms_mlp_memory_bytes(&deeper, N_IN, 3, 100) >
                ms_mlp_memory_bytes(&shallow, N_IN, 3, 100));
    assert_true(ms_mlp_memory_bytes(&deeper, N_IN, 3, 1000) >
                ms_mlp_memory_bytes(&deeper, N_IN, 3, 100));
    //  max_rows below 1 counts as 1, as ms_mlp_open does.
    assert_int_equal(ms_mlp_memory_bytes(&deeper, N_IN, 3, 0),
                     ms_mlp_memory_bytes(&deeper, N_IN, 3, 1));
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
        cmocka_unit_test(test_gradients_norms),
        cmocka_unit_test(test_gradients_residual),
        cmocka_unit_test(test_gradients_deep_residual),
        cmocka_unit_test(test_layout_residual),
        cmocka_unit_test(test_memory_estimate),
        cmocka_unit_test(test_clip_norm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
