/*  =========================================================================
    ms_param_layout_test - the parameter block's layout: plain networks as
    ms_weights counts them, residual blocks and their remainder, norm
    gains, rezero scales and batch-norm statistics in their order

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_param_layout.h"
#include "ms_weights.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

//  --------------------------------------------------------------------------
//  A plain network's block is exactly the weights file's.

static void
test_plain_is_the_weights_layout(void **state)
{
    (void) state;
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    assert_int_equal(ms_train_config_set_uniform(&cfg, 3, 7), MS_OK);
    uint32_t sizes[] = {5, 7, 7, 7, 4};
    assert_int_equal(ms_param_layout_n_params(&cfg, sizes, 5),
                     ms_weights_n_params(sizes, 5));
    ms_param_layer_t l;
    ms_param_layout_layer(&cfg, sizes, 5, 2, &l);
    assert_int_equal(l.w, 5 * 7 + 7 + 7 * 7 + 7);
    assert_int_equal(l.b, l.w + 49);
    assert_int_equal(l.gamma, -1);
    assert_int_equal(l.mean, -1);
    assert_int_equal(ms_param_layout_n_blocks(&cfg), 0);
    assert_int_equal(ms_param_layout_alpha(&cfg, sizes, 5, 0), -1);
}

//  --------------------------------------------------------------------------
//  Blocks of two over hidden layers 1..5: {1,2}, {3,4}, {5}.

static void
test_blocks_take_the_remainder(void **state)
{
    (void) state;
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    assert_int_equal(ms_train_config_set_uniform(&cfg, 6, 3), MS_OK);
    cfg.architecture = MS_ARCH_RESIDUAL;
    cfg.block_layers = 2;
    assert_int_equal(ms_param_layout_n_blocks(&cfg), 3);
    int32_t first = 0, n = 0;
    ms_param_layout_block(&cfg, 2, &first, &n);
    assert_int_equal(first, 5);
    assert_int_equal(n, 1);
    ms_param_layout_block(&cfg, 1, &first, &n);
    assert_int_equal(first, 3);
    assert_int_equal(n, 2);
    cfg.block_layers = 1;
    assert_int_equal(ms_param_layout_n_blocks(&cfg), 5);
    cfg.n_hidden = 1;
    assert_int_equal(ms_param_layout_n_blocks(&cfg), 0);
}

//  --------------------------------------------------------------------------
//  Batch norm with rezero: gammas and betas, then the alphas, then the
//  running statistics, each per layer 1..L-1 with its fan_in.

static void
test_extra_sections_in_order(void **state)
{
    (void) state;
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    assert_int_equal(ms_train_config_set_uniform(&cfg, 3, 4), MS_OK);
    cfg.architecture = MS_ARCH_RESIDUAL;
    cfg.norm = MS_NORM_BATCH;
    cfg.residual_scale = MS_RESIDUAL_SCALE_REZERO;
    uint32_t sizes[] = {6, 4, 4, 4, 2};
    int64_t dense = ms_weights_n_params(sizes, 5); // 28 + 20 + 20 + 10
    assert_int_equal(dense, 78);
    ms_param_layer_t l1, l3;
    ms_param_layout_layer(&cfg, sizes, 5, 1, &l1);
    ms_param_layout_layer(&cfg, sizes, 5, 3, &l3);
    assert_int_equal(l1.gamma, dense);
    assert_int_equal(l1.beta, dense + 4);
    assert_int_equal(l3.gamma, dense + 16);
    assert_int_equal(l3.beta, dense + 20);
    // 2 blocks (layers 1, 2) of one layer: alphas after the 24 norm floats.
    assert_int_equal(ms_param_layout_alpha(&cfg, sizes, 5, 0), dense + 24);
    assert_int_equal(ms_param_layout_alpha(&cfg, sizes, 5, 1), dense + 25);
    assert_int_equal(ms_param_layout_alpha(&cfg, sizes, 5, 2), -1);
    assert_int_equal(l1.mean, dense + 26);
    assert_int_equal(l1.var, dense + 30);
    assert_int_equal(l3.var, dense + 26 + 20);
    assert_int_equal(ms_param_layout_n_params(&cfg, sizes, 5),
                     dense + 24 + 2 + 24);
    ms_param_layer_t l0;
    ms_param_layout_layer(&cfg, sizes, 5, 0, &l0);
    assert_int_equal(l0.gamma, -1); // layer 0 reads the raw input
}

//  --------------------------------------------------------------------------
//  The one-pass and config forms give what the per-layer and array forms
//  give: ms_param_layout_layers against ms_param_layout_layer, totals of
//  a config against totals of its sizes, for every architecture.

static void
test_layers_and_config_forms_agree(void **state)
{
    (void) state;
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    assert_int_equal(ms_train_config_set_uniform(&cfg, 5, 4), MS_OK);
    cfg.hidden_sizes[0] = 9; // the input projection may differ
    uint32_t sizes[7];
    for (int32_t i = 0; i < 7; i++)
        sizes[i] = ms_param_layout_size(&cfg, 6, 3, i);
    assert_int_equal(sizes[0], 6);
    assert_int_equal(sizes[1], 9);
    assert_int_equal(sizes[5], 4);
    assert_int_equal(sizes[6], 3);
    const ms_norm_t norms[3] = {MS_NORM_NONE, MS_NORM_LAYER, MS_NORM_BATCH};
    for (int arch = 0; arch < 2; arch++)
        for (int n = 0; n < 3; n++)
            for (int rz = 0; rz < 2; rz++) {
                cfg.architecture = arch ? MS_ARCH_RESIDUAL : MS_ARCH_PLAIN;
                cfg.norm = norms[n];
                cfg.residual_scale =
                    rz ? MS_RESIDUAL_SCALE_REZERO : MS_RESIDUAL_SCALE_ONE;
                cfg.block_layers = 2;
                ms_param_layer_t all[6], one;
                ms_param_layout_layers(&cfg, sizes, 7, all);
                for (int32_t l = 0; l < 6; l++) {
                    ms_param_layout_layer(&cfg, sizes, 7, l, &one);
                    assert_memory_equal(&one, &all[l], sizeof one);
                }
                ms_param_totals_t a, b;
                ms_param_layout_totals(&cfg, sizes, 7, &a);
                ms_param_layout_totals_of(&cfg, 6, 3, &b);
                assert_memory_equal(&a, &b, sizeof a);
                assert_int_equal(a.n_params,
                                 ms_param_layout_n_params(&cfg, sizes, 7));
                assert_int_equal(a.n_params,
                                 ms_train_config_params(&cfg, 6, 3));
                assert_int_equal(a.n_dense, all[5].b + all[5].fan_out);
                int64_t alpha = ms_param_layout_alpha(&cfg, sizes, 7, 0);
                assert_int_equal(a.n_trainable - a.n_dense,
                                 (norms[n] != MS_NORM_NONE ? 2 * 25 : 0) +
                                     (alpha >= 0 ? 2 : 0));
            }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_is_the_weights_layout),
        cmocka_unit_test(test_blocks_take_the_remainder),
        cmocka_unit_test(test_extra_sections_in_order),
        cmocka_unit_test(test_layers_and_config_forms_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
