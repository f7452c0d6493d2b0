/*  =========================================================================
    ms_activation - reference activation values, derivatives and gains

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_activation.h"

#include <math.h>

#define S_SQRT1_2 0.70710678118654752440 // 1 / sqrt 2

//  --------------------------------------------------------------------------
//  f(z).

double
ms_activation_value(ms_activation_t act, double slope, double z)
{
    switch (act) {
    case MS_ACTIVATION_RELU:
        return z > 0 ? z : 0.0;
    case MS_ACTIVATION_LEAKY_RELU:
        return z > 0 ? z : slope * z;
    case MS_ACTIVATION_ELU:
        return z > 0 ? z : expm1(z);
    case MS_ACTIVATION_SELU:
        return MS_SELU_LAMBDA * (z > 0 ? z : MS_SELU_ALPHA * expm1(z));
    case MS_ACTIVATION_GELU:
        return 0.5 * z * (1.0 + erf(z * S_SQRT1_2));
    case MS_ACTIVATION_TANH:
        return tanh(z);
    case MS_ACTIVATION_SIGMOID:
        return 1.0 / (1.0 + exp(-z));
    case MS_ACTIVATION_LINEAR:
        return z;
    }
    return z;
}

//  --------------------------------------------------------------------------
//  f'(z).

double
ms_activation_derivative(ms_activation_t act, double slope, double z)
{
    switch (act) {
    case MS_ACTIVATION_RELU:
        return z > 0 ? 1.0 : 0.0;
    case MS_ACTIVATION_LEAKY_RELU:
        return z > 0 ? 1.0 : slope;
    case MS_ACTIVATION_ELU:
        return z > 0 ? 1.0 : exp(z);
    case MS_ACTIVATION_SELU:
        return MS_SELU_LAMBDA * (z > 0 ? 1.0 : MS_SELU_ALPHA * exp(z));
    case MS_ACTIVATION_GELU: {
        double cdf = 0.5 * (1.0 + erf(z * S_SQRT1_2));
        double pdf = exp(-0.5 * z * z) * 0.3989422804014327; // 1/sqrt(2 pi)
        return cdf + z * pdf;
    }
    case MS_ACTIVATION_TANH: {
        double t = tanh(z);
        return 1.0 - t * t;
    }
    case MS_ACTIVATION_SIGMOID: {
        double s = 1.0 / (1.0 + exp(-z));
        return s * (1.0 - s);
    }
    case MS_ACTIVATION_LINEAR:
        return 1.0;
    }
    return 1.0;
}

//  --------------------------------------------------------------------------
//  Does backward need z?

bool
ms_activation_needs_z(ms_activation_t act)
{
    return act == MS_ACTIVATION_GELU;
}

//  --------------------------------------------------------------------------
//  Orthogonal-init gain.

double
ms_activation_gain(ms_activation_t act, double slope)
{
    switch (act) {
    case MS_ACTIVATION_RELU:
    case MS_ACTIVATION_ELU:
    case MS_ACTIVATION_GELU:
        return sqrt(2.0);
    case MS_ACTIVATION_LEAKY_RELU:
        return sqrt(2.0 / (1.0 + slope * slope));
    case MS_ACTIVATION_TANH:
        return 5.0 / 3.0;
    default:
        return 1.0;
    }
}
