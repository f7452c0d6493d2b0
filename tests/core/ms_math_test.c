/*  =========================================================================
    ms_math_test - the float32 functions of ms_math.h against double libm,
    their limits, and vectorised loops against one call per element

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Accuracy: every 1000th float bit pattern (4.3 million values, both
    signs, zeros to NaNs) plus special values, each function against the
    double-precision glibc result, the error in ulps of the float nearest
    the exact value (2^-149 in the subnormal range); a result the double
    says overflows must be inf of that sign. The bounds asserted are the
    measured maxima rounded up (measured with GCC 12, x86-64):
      exp 0.95, expm1 1.46, tanh 2.21, sigmoid 2.19, erf 2.45 ulp.
    Bit-identity: the vectorised array functions and the activation loops
    of the CPU backend against the same functions called through a
    volatile pointer (never inlined, so never vectorised), bit for bit.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ms_activation.h"
#include "ms_backend.h"
#include "ms_math.h"

#define S_STEP 1000u // sweep every 1000th bit pattern

typedef float (*s_fn_t)(float);

//  --------------------------------------------------------------------------
//  Scalar versions: called through volatile pointers, so a caller's loop
//  cannot inline and vectorise them.

static float
s_exp(float x)
{
    return ms_math_exp(x);
}

static float
s_expm1(float x)
{
    return ms_math_expm1(x);
}

static float
s_tanh(float x)
{
    return ms_math_tanh(x);
}

static float
s_sigmoid(float x)
{
    return ms_math_sigmoid(x);
}

static float
s_erf(float x)
{
    return ms_math_erf(x);
}

static s_fn_t volatile s_exp_p = s_exp;
static s_fn_t volatile s_expm1_p = s_expm1;
static s_fn_t volatile s_tanh_p = s_tanh;
static s_fn_t volatile s_sigmoid_p = s_sigmoid;
static s_fn_t volatile s_erf_p = s_erf;

//  --------------------------------------------------------------------------
//  Double references.

static double
s_ref_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

//  --------------------------------------------------------------------------
//  Error of got in ulps of the exact value want; HUGE_VAL for a wrong NaN,
//  inf or sign of an overflow.

static double
s_ulp_error(float got, double want)
{
    if (isnan(want))
        return isnan(got) ? 0.0 : HUGE_VAL;
    if (fabs(want) >= 0x1.ffffffp127) // rounds to inf in float
        return isinf(got) && (got > 0) == (want > 0) ? 0.0 : HUGE_VAL;
    if (isnan(got) || isinf(got))
        return HUGE_VAL;
    int e;
    frexp(want, &e);
    e -= 1; // want = m 2^e, 1 <= |m| < 2
    if (e < -126)
        e = -126;
    return fabs((double) got - want) / ldexp(1.0, e - 23);
}

//  --------------------------------------------------------------------------
//  Maximum ulp error of f against ref over the sweep and the specials.

static double
s_max_error(s_fn_t f, double (*ref)(double), const char *name)
{
    static const float special[] = {
        0.0f,   -0.0f,  1.0f,    -1.0f,    0.5f,      -0.5f,
        0.8f,   -0.8f,  1e-30f,  -1e-30f,  1e-45f,    -1e-45f,
        88.72f, 88.73f, -87.33f, -103.97f, -104.0f,   17.3f,
        -17.3f, 9.01f,  -9.01f,  3.92f,    -3.92f,    16.6f,
        -16.6f, 100.0f, -100.0f, INFINITY, -INFINITY, NAN};
    double worst = 0;
    float at = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += S_STEP) {
        uint32_t bits = (uint32_t) u;
        float x;
        memcpy(&x, &bits, sizeof x);
        double err = s_ulp_error(f(x), ref((double) x));
        if (err > worst) {
            worst = err;
            at = x;
        }
    }
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        double err = s_ulp_error(f(special[i]), ref((double) special[i]));
        if (err > worst) {
            worst = err;
            at = special[i];
        }
    }
    print_message("%s: max error %.3f ulp at %a\n", name, worst, (double) at);
    return worst;
}

//  --------------------------------------------------------------------------
static void
test_exp_error(void **state)
{
    (void) state;
    assert_true(s_max_error(s_exp_p, exp, "exp") <= 1.0);
}

static void
test_expm1_error(void **state)
{
    (void) state;
    assert_true(s_max_error(s_expm1_p, expm1, "expm1") <= 1.5);
}

static void
test_tanh_error(void **state)
{
    (void) state;
    assert_true(s_max_error(s_tanh_p, tanh, "tanh") <= 2.5);
}

static void
test_sigmoid_error(void **state)
{
    (void) state;
    assert_true(s_max_error(s_sigmoid_p, s_ref_sigmoid, "sigmoid") <= 2.5);
}

static void
test_erf_error(void **state)
{
    (void) state;
    assert_true(s_max_error(s_erf_p, erf, "erf") <= 3.0);
}

//  --------------------------------------------------------------------------
//  Limits, exact values, signs of zero, NaN.

static void
test_limits(void **state)
{
    (void) state;
    assert_true(ms_math_exp(0.0f) == 1.0f);
    assert_true(ms_math_exp(-INFINITY) == 0.0f);
    assert_true(ms_math_exp(-104.0f) == 0.0f);
    assert_true(ms_math_exp(-1000.0f) == 0.0f);
    assert_true(ms_math_exp(-103.0f) > 0.0f); // subnormal, not flushed
    assert_true(isinf(ms_math_exp(88.73f)) && ms_math_exp(88.73f) > 0);
    assert_true(isinf(ms_math_exp(INFINITY)));
    assert_true(ms_math_exp(88.72f) < INFINITY);
    assert_true(isnan(ms_math_exp(NAN)));

    assert_true(ms_math_expm1(0.0f) == 0.0f);
    assert_true(signbit(ms_math_expm1(-0.0f)));
    assert_true(ms_math_expm1(1e-30f) == 1e-30f);
    assert_true(ms_math_expm1(-1e-45f) == -1e-45f);
    assert_true(ms_math_expm1(-20.0f) == -1.0f);
    assert_true(ms_math_expm1(-INFINITY) == -1.0f);
    assert_true(isinf(ms_math_expm1(INFINITY)));
    assert_true(isnan(ms_math_expm1(NAN)));

    assert_true(ms_math_tanh(0.0f) == 0.0f);
    assert_true(signbit(ms_math_tanh(-0.0f)));
    assert_true(ms_math_tanh(1e-30f) == 1e-30f);
    assert_true(ms_math_tanh(10.0f) == 1.0f);
    assert_true(ms_math_tanh(-10.0f) == -1.0f);
    assert_true(ms_math_tanh(1e30f) == 1.0f);
    assert_true(ms_math_tanh(INFINITY) == 1.0f);
    assert_true(ms_math_tanh(-INFINITY) == -1.0f);
    assert_true(isnan(ms_math_tanh(NAN)));

    assert_true(ms_math_sigmoid(0.0f) == 0.5f);
    assert_true(ms_math_sigmoid(INFINITY) == 1.0f);
    assert_true(ms_math_sigmoid(20.0f) == 1.0f);
    assert_true(ms_math_sigmoid(-INFINITY) == 0.0f);
    assert_true(ms_math_sigmoid(-100.0f) > 0.0f); // e^-100, subnormal
    assert_true(isnan(ms_math_sigmoid(NAN)));

    assert_true(ms_math_erf(0.0f) == 0.0f);
    assert_true(signbit(ms_math_erf(-0.0f)));
    assert_true(ms_math_erf(4.0f) == 1.0f);
    assert_true(ms_math_erf(-1e30f) == -1.0f);
    assert_true(ms_math_erf(INFINITY) == 1.0f);
    assert_true(ms_math_erf(-INFINITY) == -1.0f);
    assert_true(isnan(ms_math_erf(NAN)));
}

//  --------------------------------------------------------------------------
//  n test inputs: a sweep of bit patterns, then a dense stretch of the
//  range activations see, then specials. Caller frees.

static float *
s_inputs(size_t *n_out)
{
    size_t n = 0, cap = 200000;
    float *x = malloc(cap * sizeof(float));
    assert_non_null(x);
    for (uint64_t u = 0; u <= 0xffffffffu && n < cap / 2; u += 65537u) {
        uint32_t bits = (uint32_t) u;
        memcpy(&x[n++], &bits, sizeof(float));
    }
    for (int i = 0; n < cap - 8; i++)
        x[n++] = -12.0f + 24.0f * (float) i / 99991.0f;
    x[n++] = 0.0f;
    x[n++] = -0.0f;
    x[n++] = INFINITY;
    x[n++] = -INFINITY;
    x[n++] = NAN;
    x[n++] = 1e-45f;
    x[n++] = 89.0f;
    x[n++] = -104.0f;
    *n_out = n;
    return x;
}

//  True when a and b are the same bits, or both NaN.
static int
s_same(float a, float b)
{
    if (isnan(a) && isnan(b))
        return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

//  --------------------------------------------------------------------------
//  ms_math_*_array (vectorised) == one scalar call per element.

static void
test_arrays_match_scalar(void **state)
{
    (void) state;
    size_t n;
    float *x = s_inputs(&n);
    float *y = malloc(n * sizeof(float));
    assert_non_null(y);
    struct {
        void (*array)(int64_t, const float *restrict, float *restrict);
        s_fn_t volatile *scalar;
        const char *name;
    } fns[] = {{ms_math_exp_array, &s_exp_p, "exp"},
               {ms_math_expm1_array, &s_expm1_p, "expm1"},
               {ms_math_tanh_array, &s_tanh_p, "tanh"},
               {ms_math_sigmoid_array, &s_sigmoid_p, "sigmoid"},
               {ms_math_erf_array, &s_erf_p, "erf"}};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        fns[f].array((int64_t) n, x, y);
        for (size_t i = 0; i < n; i++) {
            float want = (*fns[f].scalar)(x[i]);
            if (!s_same(y[i], want))
                fail_msg("%s(%a): array %a, scalar %a", fns[f].name,
                         (double) x[i], (double) y[i], (double) want);
        }
    }
    free(x);
    free(y);
}

//  --------------------------------------------------------------------------
//  One element of the CPU backend's forward (a from z + bias) and backward
//  (g f'), computed with scalar calls, in the same operation order.

static float
s_forward_one(ms_activation_t act, float slope, float v)
{
    const float lambda = (float) MS_SELU_LAMBDA;
    const float la = (float) (MS_SELU_LAMBDA * MS_SELU_ALPHA);
    switch (act) {
    case MS_ACTIVATION_ELU:
        return v > 0.0f ? v : s_expm1_p(v);
    case MS_ACTIVATION_SELU:
        return v > 0.0f ? lambda * v : la * s_expm1_p(v);
    case MS_ACTIVATION_GELU:
        return 0.5f * v * (1.0f + s_erf_p(v * 0.70710678118654752440f));
    case MS_ACTIVATION_TANH:
        return s_tanh_p(v);
    case MS_ACTIVATION_SIGMOID:
        return s_sigmoid_p(v);
    case MS_ACTIVATION_RELU:
        return v > 0.0f ? v : 0.0f;
    case MS_ACTIVATION_LEAKY_RELU:
        return v > 0.0f ? v : slope * v;
    case MS_ACTIVATION_LINEAR:
        return v;
    }
    return v;
}

static float
s_backward_one(ms_activation_t act, float slope, float z, float a, float g)
{
    const float lambda = (float) MS_SELU_LAMBDA;
    const float la = (float) (MS_SELU_LAMBDA * MS_SELU_ALPHA);
    switch (act) {
    case MS_ACTIVATION_RELU:
        return a > 0.0f ? g : 0.0f;
    case MS_ACTIVATION_LEAKY_RELU:
        return a > 0.0f ? g : g * slope;
    case MS_ACTIVATION_ELU:
        return a > 0.0f ? g : g * (a + 1.0f);
    case MS_ACTIVATION_SELU:
        return a > 0.0f ? g * lambda : g * (a + la);
    case MS_ACTIVATION_GELU: {
        float cdf = 0.5f * (1.0f + s_erf_p(z * 0.70710678118654752440f));
        float pdf = s_exp_p(-0.5f * z * z) * 0.3989422804014327f;
        return g * (cdf + z * pdf);
    }
    case MS_ACTIVATION_TANH:
        return g * (1.0f - a * a);
    case MS_ACTIVATION_SIGMOID:
        return g * (a * (1.0f - a));
    case MS_ACTIVATION_LINEAR:
        return g;
    }
    return g;
}

//  --------------------------------------------------------------------------
//  The backend's (vectorised) activation loops == the scalar element.

static void
test_activation_loops_match_scalar(void **state)
{
    (void) state;
    ms_backend_t *b = ms_backend_cpu_new(1);
    assert_non_null(b);
    const ms_backend_ops_t *ops = ms_backend_ops(b);
    enum { ROWS = 40, COLS = 1003 }; // odd width: vector tails too
    size_t n = ROWS * COLS;
    float *z = malloc(n * sizeof(float));
    float *a = malloc(n * sizeof(float));
    float *g = malloc(n * sizeof(float));
    float *v = malloc(n * sizeof(float));
    float bias[COLS];
    assert_true(z && a && g && v);
    const float slope = 0.01f;
    for (int act = 0; act <= MS_ACTIVATION_LINEAR; act++) {
        for (int j = 0; j < COLS; j++)
            bias[j] = 0.001f * (float) (j % 7 - 3);
        for (size_t i = 0; i < n; i++) {
            z[i] = -20.0f + 40.0f * (float) i / (float) n;
            g[i] = 0.5f - (float) (i % 11) * 0.1f;
        }
        assert_int_equal(
            ops->bias_act_forward(b, act, slope, ROWS, COLS, bias, z, a),
            MS_OK);
        for (size_t i = 0; i < n; i++) {
            float zi = -20.0f + 40.0f * (float) i / (float) n;
            v[i] = zi + bias[i % COLS];
            float want = s_forward_one(act, slope, v[i]);
            if (!s_same(a[i], want))
                fail_msg("%s forward at %a: loop %a, scalar %a",
                         ms_activation_name(act), (double) v[i], (double) a[i],
                         (double) want);
        }
        //  Backward reads z (gelu: the biased z forward left there) and a.
        assert_int_equal(ops->act_backward(b, act, slope, (int64_t) n, v, a, g),
                         MS_OK);
        for (size_t i = 0; i < n; i++) {
            float g0 = 0.5f - (float) (i % 11) * 0.1f;
            float want = s_backward_one(act, slope, v[i], a[i], g0);
            if (!s_same(g[i], want))
                fail_msg("%s backward at %a: loop %a, scalar %a",
                         ms_activation_name(act), (double) v[i], (double) g[i],
                         (double) want);
        }
    }
    free(z);
    free(a);
    free(g);
    free(v);
    ms_backend_destroy(&b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exp_error),
        cmocka_unit_test(test_expm1_error),
        cmocka_unit_test(test_tanh_error),
        cmocka_unit_test(test_sigmoid_error),
        cmocka_unit_test(test_erf_error),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_arrays_match_scalar),
        cmocka_unit_test(test_activation_loops_match_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
