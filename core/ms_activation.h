/*  =========================================================================
    ms_activation - hidden-layer activation functions: reference values,
    derivatives, init gains

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The backends run the activations over whole arrays (ms_backend_ops_t
    bias_act_forward / act_backward); this class is the scalar reference
    they are tested against, in double, plus the facts the network needs
    about each activation.

    Definitions (z the pre-activation, a = f(z)):
      relu        max(z, 0)                      f' = [z > 0]
      leaky_relu  z > 0 ? z : slope z            f' = z > 0 ? 1 : slope
      elu         z > 0 ? z : e^z - 1 (alpha 1)  f' = z > 0 ? 1 : a + 1
      selu        lambda (z > 0 ? z : alpha (e^z - 1)), lambda =
                  1.0507009873554805, alpha = 1.6732632423543772
                  (Klambauer et al. 2017)        f' = z > 0 ? lambda
                                                      : a + lambda alpha
      gelu        z Phi(z) = z (1 + erf(z / sqrt 2)) / 2, the exact erf form
                  (Hendrycks and Gimpel 2016)    f' = Phi(z) + z phi(z)
      tanh        tanh z                         f' = 1 - a^2
      sigmoid     1 / (1 + e^-z)                 f' = a (1 - a)
      linear      z                              f' = 1
    Every derivative but gelu's is a function of a alone (with the sign of
    z equal to the sign of a for slope >= 0), so the network stores only a
    and keeps z only for gelu.
*/
#ifndef MS_ACTIVATION_H
#define MS_ACTIVATION_H

#include <stdbool.h>

#include "ms_config.h"

#define MS_SELU_LAMBDA 1.0507009873554805
#define MS_SELU_ALPHA 1.6732632423543772

//  f(z) in double (reference).
double ms_activation_value(ms_activation_t act, double slope, double z);

//  f'(z) in double (reference).
double ms_activation_derivative(ms_activation_t act, double slope, double z);

//  True when the backward pass needs the pre-activation z (gelu), false
//  when a = f(z) is enough.
bool ms_activation_needs_z(ms_activation_t act);

//  Gain for orthogonal init (Saxe et al. 2014; the values PyTorch's
//  calculate_gain uses, with 1 for selu so that lecun-like scaling keeps
//  the self-normalising fixed point): sqrt 2 for relu (and gelu, elu),
//  sqrt(2 / (1 + slope^2)) for leaky_relu, 5/3 for tanh, 1 otherwise.
double ms_activation_gain(ms_activation_t act, double slope);

#endif
