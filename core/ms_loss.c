/*  =========================================================================
    ms_loss - reference losses in double

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_loss.h"

#include <math.h>

//  --------------------------------------------------------------------------
//  One row's loss and gradient.

double
ms_loss_row(ms_loss_kind_t kind, int64_t k, const double *y, int32_t label,
            double target, double *grad)
{
    if (kind == MS_LOSS_CROSS_ENTROPY) {
        double max = y[0];
        for (int64_t j = 1; j < k; j++)
            if (y[j] > max)
                max = y[j];
        double sum = 0;
        for (int64_t j = 0; j < k; j++)
            sum += exp(y[j] - max);
        double lse = max + log(sum);
        if (grad)
            for (int64_t j = 0; j < k; j++)
                grad[j] = exp(y[j] - lse) - (j == label ? 1.0 : 0.0);
        return lse - y[label];
    }
    double loss = 0;
    for (int64_t j = 0; j < k; j++) {
        double t = label >= 0 ? (j == label ? 1.0 : 0.0) : target;
        double d = y[j] - t;
        loss += d * d;
        if (grad)
            grad[j] = 2.0 * d / (double) k;
    }
    return loss / (double) k;
}

//  --------------------------------------------------------------------------
//  First maximum.

int64_t
ms_loss_argmax(const float *y, int64_t k)
{
    int64_t best = 0;
    for (int64_t j = 1; j < k; j++)
        if (y[j] > y[best])
            best = j;
    return best;
}
