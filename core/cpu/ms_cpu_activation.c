/*  =========================================================================
    ms_cpu_activation - fused bias + activation forward, activation
    backward, element-wise product (dropout)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One pass over the GEMM output per layer and direction: the bias add is
    fused with the activation, and the backward derivative is computed
    from the stored activation a (see ms_activation.h), so relu-like layers
    keep one array per layer. The switch on the activation is outside the
    loops, so each loop is a simple body the compiler vectorises. The
    transcendental ones (elu, selu, gelu, tanh, sigmoid) use ms_math.h's
    inline float functions instead of libm's: no call per element, so
    those loops vectorise too, and the same bits on every IEEE machine
    whatever the libm. Where the definition has two sides (elu, selu),
    both are computed and one selected: no data-dependent branch, which
    mispredicted on about half the elements; the select is
    ms_math_select's bit mask, not "?:", which GCC may turn into a branch
    around trapping float arithmetic and then not vectorise. x * 1 is x
    exactly, so leaky_relu forward and the leaky_relu, elu and selu
    backward are one multiply by a selected factor, bit-identical to the
    old "a > 0 ? g : g * f" (ms_math_test checks every loop against the
    scalar formulas, bit for bit). GCC 12 -O3 with
    -fopt-info-vec-optimized reports every loop of this file vectorised.
*/
#include "ms_cpu.h"

#include "ms_activation.h"
#include "ms_math.h"

#define S_SQRT1_2 0.70710678118654752440f  // 1 / sqrt 2
#define S_INV_SQRT_2PI 0.3989422804014327f // 1 / sqrt(2 pi)

//  --------------------------------------------------------------------------
//  One row: z += bias, a = f(z).

static void
s_row_forward(ms_activation_t act, float slope, int64_t cols,
              const float *restrict bias, float *z, float *a)
{
    const float lambda = (float) MS_SELU_LAMBDA;
    const float la = (float) (MS_SELU_LAMBDA * MS_SELU_ALPHA);
    switch (act) {
    case MS_ACTIVATION_RELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            a[j] = v > 0.0f ? v : 0.0f;
        }
        break;
    case MS_ACTIVATION_LEAKY_RELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            a[j] = v * ms_math_select(v > 0.0f, 1.0f, slope);
        }
        break;
    case MS_ACTIVATION_ELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            float neg = ms_math_expm1(v);
            a[j] = ms_math_select(v > 0.0f, v, neg);
        }
        break;
    case MS_ACTIVATION_SELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            float pos = lambda * v;
            float neg = la * ms_math_expm1(v);
            a[j] = ms_math_select(v > 0.0f, pos, neg);
        }
        break;
    case MS_ACTIVATION_GELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            z[j] = v;
            a[j] = 0.5f * v * (1.0f + ms_math_erf(v * S_SQRT1_2));
        }
        break;
    case MS_ACTIVATION_TANH:
        for (int64_t j = 0; j < cols; j++)
            a[j] = ms_math_tanh(z[j] + bias[j]);
        break;
    case MS_ACTIVATION_SIGMOID:
        for (int64_t j = 0; j < cols; j++)
            a[j] = ms_math_sigmoid(z[j] + bias[j]);
        break;
    case MS_ACTIVATION_LINEAR:
        for (int64_t j = 0; j < cols; j++)
            a[j] = z[j] + bias[j];
        break;
    }
}

//  --------------------------------------------------------------------------
//  z += bias and a = f(z) over rows x cols.

int
ms_cpu_bias_act_forward(ms_backend_t *b, ms_activation_t act, float slope,
                        int64_t rows, int64_t cols, const float *bias, float *z,
                        float *a)
{
    (void) b;
    for (int64_t i = 0; i < rows; i++)
        s_row_forward(act, slope, cols, bias, z + i * cols, a + i * cols);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  g *= f'(z), from a (or z for gelu).

int
ms_cpu_act_backward(ms_backend_t *b, ms_activation_t act, float slope,
                    int64_t n, const float *z, const float *restrict a,
                    float *restrict g)
{
    (void) b;
    const float lambda = (float) MS_SELU_LAMBDA;
    const float la = (float) (MS_SELU_LAMBDA * MS_SELU_ALPHA);
    switch (act) {
    case MS_ACTIVATION_RELU:
        for (int64_t i = 0; i < n; i++)
            g[i] = a[i] > 0.0f ? g[i] : 0.0f;
        break;
    case MS_ACTIVATION_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            g[i] = g[i] * ms_math_select(a[i] > 0.0f, 1.0f, slope);
        break;
    case MS_ACTIVATION_ELU:
        for (int64_t i = 0; i < n; i++)
            g[i] = g[i] * ms_math_select(a[i] > 0.0f, 1.0f, a[i] + 1.0f);
        break;
    case MS_ACTIVATION_SELU:
        for (int64_t i = 0; i < n; i++)
            g[i] = g[i] * ms_math_select(a[i] > 0.0f, lambda, a[i] + la);
        break;
    case MS_ACTIVATION_GELU:
        for (int64_t i = 0; i < n; i++) {
            float v = z[i];
            float cdf = 0.5f * (1.0f + ms_math_erf(v * S_SQRT1_2));
            float pdf = ms_math_exp(-0.5f * v * v) * S_INV_SQRT_2PI;
            g[i] = g[i] * (cdf + v * pdf);
        }
        break;
    case MS_ACTIVATION_TANH:
        for (int64_t i = 0; i < n; i++)
            g[i] = g[i] * (1.0f - a[i] * a[i]);
        break;
    case MS_ACTIVATION_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            g[i] = g[i] * (a[i] * (1.0f - a[i]));
        break;
    case MS_ACTIVATION_LINEAR:
        break;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  out = x * mask.

int
ms_cpu_mul(ms_backend_t *b, int64_t n, const float *mask, const float *x,
           float *out)
{
    (void) b;
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] * mask[i];
    return MS_OK;
}
