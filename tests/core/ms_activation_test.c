/*  =========================================================================
    ms_activation_test - reference activations and the CPU backend's fused
    bias + activation forward and backward passes

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "ms_activation.h"
#include "ms_backend.h"

#define N_ACT 8
static const double s_slope = 0.1;

//  --------------------------------------------------------------------------
static void
test_reference_values(void **state)
{
    (void) state;
    assert_true(ms_activation_value(MS_ACTIVATION_RELU, 0, -1.0) == 0.0);
    assert_true(ms_activation_value(MS_ACTIVATION_RELU, 0, 2.5) == 2.5);
    assert_true(fabs(ms_activation_value(MS_ACTIVATION_LEAKY_RELU, 0.1, -2.0) +
                     0.2) < 1e-15);
    assert_true(fabs(ms_activation_value(MS_ACTIVATION_ELU, 0, -1.0) -
                     (exp(-1.0) - 1.0)) < 1e-15);
    assert_true(fabs(ms_activation_value(MS_ACTIVATION_SELU, 0, 1.0) -
                     1.0507009873554805) < 1e-15);
    assert_true(fabs(ms_activation_value(MS_ACTIVATION_SELU, 0, -1.0) -
                     1.0507009873554805 * 1.6732632423543772 *
                         (exp(-1.0) - 1.0)) < 1e-15);
    //  gelu(1) = Phi(1) = 0.8413447460685429 (exact erf form)
    assert_true(fabs(ms_activation_value(MS_ACTIVATION_GELU, 0, 1.0) -
                     0.8413447460685429) < 1e-15);
    assert_true(ms_activation_value(MS_ACTIVATION_GELU, 0, 0.0) == 0.0);
    assert_true(fabs(ms_activation_value(MS_ACTIVATION_TANH, 0, 0.5) -
                     tanh(0.5)) < 1e-15);
    assert_true(ms_activation_value(MS_ACTIVATION_SIGMOID, 0, 0.0) == 0.5);
    assert_true(ms_activation_value(MS_ACTIVATION_LINEAR, 0, -3.0) == -3.0);
}

//  Derivatives agree with central differences of the values.
static void
test_reference_derivatives(void **state)
{
    (void) state;
    const double zs[] = {-2.3, -0.7, -0.1, 0.2, 0.9, 3.1};
    for (int a = 0; a < N_ACT; a++)
        for (size_t i = 0; i < sizeof zs / sizeof zs[0]; i++) {
            double z = zs[i], h = 1e-6;
            double fd = (ms_activation_value(a, s_slope, z + h) -
                         ms_activation_value(a, s_slope, z - h)) /
                        (2 * h);
            double an = ms_activation_derivative(a, s_slope, z);
            if (fabs(fd - an) > 1e-6)
                fail_msg("%s at %g: fd %g analytic %g", ms_activation_name(a),
                         z, fd, an);
        }
}

//  --------------------------------------------------------------------------
//  The CPU op adds the bias, applies f and (for gelu) keeps z.
static void
test_cpu_forward_matches_reference(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    const ms_backend_ops_t *ops = ms_backend_ops(b);
    enum { R = 3, C = 7 };
    for (int a = 0; a < N_ACT; a++) {
        float z[R * C], out[R * C], bias[C];
        double expect_z[R * C];
        for (int j = 0; j < C; j++)
            bias[j] = 0.25f * (float) (j - 3);
        for (int i = 0; i < R * C; i++) {
            z[i] = 0.37f * (float) (i - 10);
            expect_z[i] = (double) (z[i] + bias[i % C]);
        }
        assert_int_equal(
            ops->bias_act_forward(b, a, (float) s_slope, R, C, bias, z, out),
            MS_OK);
        for (int i = 0; i < R * C; i++) {
            double want = ms_activation_value(a, s_slope, expect_z[i]);
            if (fabs(out[i] - want) > 1e-6 * (1 + fabs(want)))
                fail_msg("%s: element %d: %g, want %g", ms_activation_name(a),
                         i, out[i], want);
            if (ms_activation_needs_z(a))
                assert_true(z[i] == (float) expect_z[i]);
        }
        //  In place gives the same values.
        float inplace[R * C];
        for (int i = 0; i < R * C; i++)
            inplace[i] = 0.37f * (float) (i - 10);
        ops->bias_act_forward(b, a, (float) s_slope, R, C, bias, inplace,
                              inplace);
        assert_memory_equal(inplace, out, sizeof out);
    }
    ms_backend_destroy(&b);
}

//  g *= f'(z), from a (or z for gelu).
static void
test_cpu_backward_matches_reference(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    const ms_backend_ops_t *ops = ms_backend_ops(b);
    enum { N = 21 };
    float zero_bias[N] = {0};
    for (int a = 0; a < N_ACT; a++) {
        float z[N], act[N], g[N];
        for (int i = 0; i < N; i++) {
            z[i] = 0.3f * (float) (i - 10) + 0.05f; // never exactly 0
            g[i] = 1.5f;
        }
        ops->bias_act_forward(b, a, (float) s_slope, 1, N, zero_bias, z, act);
        assert_int_equal(ops->act_backward(b, a, (float) s_slope, N,
                                           ms_activation_needs_z(a) ? z : NULL,
                                           act, g),
                         MS_OK);
        for (int i = 0; i < N; i++) {
            double want =
                1.5 * ms_activation_derivative(a, s_slope, (double) z[i]);
            if (fabs(g[i] - want) > 2e-6 * (1 + fabs(want)))
                fail_msg("%s: z %g: %g, want %g", ms_activation_name(a), z[i],
                         g[i], want);
        }
    }
    ms_backend_destroy(&b);
}

//  --------------------------------------------------------------------------
static void
test_needs_z_and_gain(void **state)
{
    (void) state;
    for (int a = 0; a < N_ACT; a++)
        assert_int_equal(ms_activation_needs_z(a), a == MS_ACTIVATION_GELU);
    assert_true(fabs(ms_activation_gain(MS_ACTIVATION_RELU, 0) - sqrt(2.0)) <
                1e-15);
    assert_true(fabs(ms_activation_gain(MS_ACTIVATION_TANH, 0) - 5.0 / 3.0) <
                1e-15);
    assert_true(fabs(ms_activation_gain(MS_ACTIVATION_LEAKY_RELU, 1.0) - 1.0) <
                1e-15);
    assert_true(ms_activation_gain(MS_ACTIVATION_SELU, 0) == 1.0);
    assert_true(ms_activation_gain(MS_ACTIVATION_LINEAR, 0) == 1.0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_values),
        cmocka_unit_test(test_reference_derivatives),
        cmocka_unit_test(test_cpu_forward_matches_reference),
        cmocka_unit_test(test_cpu_backward_matches_reference),
        cmocka_unit_test(test_needs_z_and_gain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
