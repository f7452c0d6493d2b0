/*  =========================================================================
    ms_cpu_activation - fused bias + activation forward, activation
    backward, element-wise product (dropout)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One pass over the GEMM output per layer and direction: the bias add is
    fused with the activation, and the backward derivative is computed
    from the stored activation a (see ms_activation.h), so relu-like layers
    keep one array per layer. The switch on the activation is outside the
    loops, so each loop is a simple body the compiler vectorises (relu,
    leaky_relu, tanh-from-a, sigmoid-from-a, linear); the transcendental
    ones (elu, selu, gelu, tanh, sigmoid forward) call libm's float
    functions, which are deterministic on one machine.
*/
#include "ms_cpu.h"

#include <math.h>

#include "ms_activation.h"

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
            a[j] = v > 0.0f ? v : slope * v;
        }
        break;
    case MS_ACTIVATION_ELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            a[j] = v > 0.0f ? v : expm1f(v);
        }
        break;
    case MS_ACTIVATION_SELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            a[j] = v > 0.0f ? lambda * v : la * expm1f(v);
        }
        break;
    case MS_ACTIVATION_GELU:
        for (int64_t j = 0; j < cols; j++) {
            float v = z[j] + bias[j];
            z[j] = v;
            a[j] = 0.5f * v * (1.0f + erff(v * S_SQRT1_2));
        }
        break;
    case MS_ACTIVATION_TANH:
        for (int64_t j = 0; j < cols; j++)
            a[j] = tanhf(z[j] + bias[j]);
        break;
    case MS_ACTIVATION_SIGMOID:
        for (int64_t j = 0; j < cols; j++)
            a[j] = 1.0f / (1.0f + expf(-(z[j] + bias[j])));
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
            g[i] = a[i] > 0.0f ? g[i] : g[i] * slope;
        break;
    case MS_ACTIVATION_ELU:
        for (int64_t i = 0; i < n; i++)
            g[i] = a[i] > 0.0f ? g[i] : g[i] * (a[i] + 1.0f);
        break;
    case MS_ACTIVATION_SELU:
        for (int64_t i = 0; i < n; i++)
            g[i] = a[i] > 0.0f ? g[i] * lambda : g[i] * (a[i] + la);
        break;
    case MS_ACTIVATION_GELU:
        for (int64_t i = 0; i < n; i++) {
            float v = z[i];
            float cdf = 0.5f * (1.0f + erff(v * S_SQRT1_2));
            float pdf = expf(-0.5f * v * v) * S_INV_SQRT_2PI;
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
