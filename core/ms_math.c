/*  =========================================================================
    ms_math - the float32 functions of ms_math.h over arrays

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The bodies are the static inline functions of ms_math.h; these loops
    are what GCC vectorises (ms_math_test checks that they give the same
    bits as one call per element).
*/
#include "ms_math.h"

//  --------------------------------------------------------------------------
//  y[i] = e^x[i].

void
ms_math_exp_array(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ms_math_exp(x[i]);
}

//  --------------------------------------------------------------------------
//  y[i] = e^x[i] - 1.

void
ms_math_expm1_array(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ms_math_expm1(x[i]);
}

//  --------------------------------------------------------------------------
//  y[i] = tanh x[i].

void
ms_math_tanh_array(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ms_math_tanh(x[i]);
}

//  --------------------------------------------------------------------------
//  y[i] = 1 / (1 + e^-x[i]).

void
ms_math_sigmoid_array(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ms_math_sigmoid(x[i]);
}

//  --------------------------------------------------------------------------
//  y[i] = erf x[i].

void
ms_math_erf_array(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ms_math_erf(x[i]);
}
