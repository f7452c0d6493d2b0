/*  =========================================================================
    ms_loss_test - reference losses and the CPU backend's fused loss ops

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "ms_backend.h"
#include "ms_loss.h"

//  --------------------------------------------------------------------------
//  Equal logits: loss log k, gradient 1/k - onehot.
static void
test_uniform_logits(void **state)
{
    (void) state;
    double y[4] = {0.3, 0.3, 0.3, 0.3}, g[4];
    double l = ms_loss_row(MS_LOSS_CROSS_ENTROPY, 4, y, 2, 0, g);
    assert_true(fabs(l - log(4.0)) < 1e-15);
    for (int j = 0; j < 4; j++)
        assert_true(fabs(g[j] - (0.25 - (j == 2))) < 1e-15);
}

//  Gradients of both losses agree with central differences.
static void
test_reference_gradients(void **state)
{
    (void) state;
    double y[5] = {0.5, -1.2, 2.0, 0.1, -0.3}, g[5];
    for (int kind = 0; kind < 2; kind++) {
        ms_loss_row(kind, 5, y, 3, 0, g);
        for (int j = 0; j < 5; j++) {
            double h = 1e-6, save = y[j];
            y[j] = save + h;
            double up = ms_loss_row(kind, 5, y, 3, 0, NULL);
            y[j] = save - h;
            double down = ms_loss_row(kind, 5, y, 3, 0, NULL);
            y[j] = save;
            assert_true(fabs((up - down) / (2 * h) - g[j]) < 1e-7);
        }
    }
    //  Regression: (y - t)^2, gradient 2 (y - t).
    double r = 1.5, gr;
    assert_true(fabs(ms_loss_row(MS_LOSS_MSE, 1, &r, -1, 0.5, &gr) - 1.0) <
                1e-15);
    assert_true(fabs(gr - 2.0) < 1e-15);
}

//  Huge logits do not overflow.
static void
test_no_overflow(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    float logits[3] = {1000.0f, 0.0f, -1000.0f};
    int32_t label = 1;
    float delta[3];
    double loss = 0;
    int64_t correct = 0;
    ms_backend_ops(b)->softmax_xent(b, 1, 3, logits, &label, 1.0f, delta, &loss,
                                    &correct);
    assert_true(isfinite(loss));
    assert_true(fabs(loss - 1000.0) < 1e-9);
    assert_int_equal(correct, 0);
    assert_true(fabs(delta[0] - 1.0f) < 1e-7 && fabs(delta[1] + 1.0f) < 1e-7);
    ms_backend_destroy(&b);
}

//  --------------------------------------------------------------------------
//  The CPU softmax_xent equals the reference: summed loss, scaled delta,
//  argmax hits; loss sums accumulate into the caller's total.
static void
test_cpu_softmax_xent(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    enum { R = 4, C = 3 };
    float y[R * C] = {1, 2, 3, 0.5f, -1, 0, 2, 2, 1, -3, 4, 4};
    int32_t labels[R] = {2, 0, 1, 2};
    float delta[R * C];
    double loss = 10.0;
    int64_t correct = 1;
    ms_backend_ops(b)->softmax_xent(b, R, C, y, labels, 0.25f, delta, &loss,
                                    &correct);
    double want = 10.0;
    for (int i = 0; i < R; i++) {
        double yd[C], g[C];
        for (int j = 0; j < C; j++)
            yd[j] = y[i * C + j];
        want += ms_loss_row(MS_LOSS_CROSS_ENTROPY, C, yd, labels[i], 0, g);
        for (int j = 0; j < C; j++)
            assert_true(fabs(delta[i * C + j] - 0.25 * g[j]) < 1e-7);
    }
    assert_true(fabs(loss - want) < 1e-6); // exp terms in float
    //  Rows 0 (argmax 2) and 3 (tie 4, 4: first maximum, 1) hit? Row 0 yes,
    //  row 1 (argmax 0) yes, row 2 (tie: first, 0) no, row 3 (1) no.
    assert_int_equal(correct, 1 + 2);
    //  Without delta: same loss.
    double loss2 = 10.0;
    ms_backend_ops(b)->softmax_xent(b, R, C, y, labels, 0.25f, NULL, &loss2,
                                    NULL);
    assert_true(loss2 == loss);
    ms_backend_destroy(&b);
}

//  The CPU mse against one-hot labels and against targets.
static void
test_cpu_mse(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    const ms_backend_ops_t *ops = ms_backend_ops(b);
    float y[4] = {0.2f, 0.9f, 0.6f, 0.1f};
    int32_t labels[2] = {1, 1};
    float delta[4];
    double loss = 0;
    int64_t correct = 0;
    ops->mse(b, 2, 2, y, labels, NULL, 0.5f, delta, &loss, &correct);
    double want = ((0.2 * 0.2 + 0.1 * 0.1) + (0.6 * 0.6 + 0.9 * 0.9)) / 2;
    assert_true(fabs(loss - want) < 1e-6);
    assert_int_equal(correct, 1);
    assert_true(fabs(delta[0] - 0.5f * 2 * 0.2f / 2) < 1e-7);
    assert_true(fabs(delta[3] - 0.5f * 2 * (0.1f - 1.0f) / 2) < 1e-7);

    float t[2] = {1.0f, -1.0f}, r[2] = {1.5f, -1.0f}, d[2];
    loss = 0;
    ops->mse(b, 2, 1, r, NULL, t, 1.0f, d, &loss, NULL);
    assert_true(fabs(loss - 0.25) < 1e-12);
    assert_true(d[0] == 1.0f && d[1] == 0.0f);
    ms_backend_destroy(&b);
}

//  argmax takes the first maximum.
static void
test_argmax(void **state)
{
    (void) state;
    float y[5] = {1, 3, 3, -1, 2};
    assert_int_equal(ms_loss_argmax(y, 5), 1);
    assert_int_equal(ms_loss_argmax(y, 1), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_logits),
        cmocka_unit_test(test_reference_gradients),
        cmocka_unit_test(test_no_overflow),
        cmocka_unit_test(test_cpu_softmax_xent),
        cmocka_unit_test(test_cpu_mse),
        cmocka_unit_test(test_argmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
