/*  =========================================================================
    ms_loss - output losses: softmax cross-entropy and mean squared error

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The backends compute the losses over a minibatch in one fused pass
    (ms_backend_ops_t softmax_xent / mse); this class is the scalar
    reference in double that they are tested against, and the rules:

    - cross_entropy: l = logsumexp(y) - y[label], computed with the max
      subtracted (no overflow); dl/dy = softmax(y) - onehot(label).
    - mse: l = mean over the K outputs of (y - t)^2, with t the one-hot
      label for classification data and the target for regression data
      (K = 1); dl/dy = 2 (y - t) / K.
    - The minibatch loss is the mean over its rows; gradients are scaled
      by 1 / rows accordingly. Accuracy is the fraction of rows whose
      argmax (first maximum) equals the label; NaN for regression.
    The output layer has no activation: softmax is part of the loss.
*/
#ifndef MS_LOSS_H
#define MS_LOSS_H

#include <stdint.h>

#include "ms_config.h"

//  Loss of one row of k outputs y against label (classification) or
//  target (regression: label < 0, k == 1); writes dl/dy to grad (k
//  doubles) when grad is not NULL. Reference implementation, in double.
double ms_loss_row(ms_loss_kind_t kind, int64_t k, const double *y,
                   int32_t label, double target, double *grad);

//  Index of the first maximum of y[0 .. k).
int64_t ms_loss_argmax(const float *y, int64_t k);

#endif
