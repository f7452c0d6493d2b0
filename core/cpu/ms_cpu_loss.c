/*  =========================================================================
    ms_cpu_loss - fused loss, accuracy and output delta; column sums

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Per row: the exp terms exp(y - max) in float (ms_math_exp: a float
    exp is a fifth of the cost of a double one, the terms are <= 1 with
    float inputs anyway, and ms_math gives the same bits whatever the
    libm, where glibc's expf has changed between versions), kept in
    the delta row until their sum (in double) is known; the log-sum-exp
    and the loss in double; the delta rounded to float. Loss sums are
    accumulated in double in row order. Rules in ms_loss.h.
*/
#include "ms_cpu.h"

#include <math.h>
#include <string.h>

#include "ms_loss.h"
#include "ms_math.h"

//  --------------------------------------------------------------------------
//  Softmax cross-entropy, accuracy, delta.

int
ms_cpu_softmax_xent(ms_backend_t *b, int64_t rows, int64_t cols,
                    const float *logits, const int32_t *labels,
                    float grad_scale, float *delta, double *loss_sum,
                    int64_t *n_correct)
{
    (void) b;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *y = logits + i * cols;
        int64_t best = ms_loss_argmax(y, cols);
        int32_t label = labels[i];
        double max = y[best];
        double sum = 0;
        //  One exp per logit: the terms wait in the delta row (as float)
        //  until the sum is known.
        float *d = delta ? delta + i * cols : NULL;
        for (int64_t j = 0; j < cols; j++) {
            double ej = (double) ms_math_exp(y[j] - y[best]);
            sum += ej;
            if (d)
                d[j] = (float) ej;
        }
        double lse = max + log(sum);
        loss += lse - (double) y[label];
        correct += best == label;
        if (d) {
            for (int64_t j = 0; j < cols; j++) {
                double p = (double) d[j] / sum;
                d[j] = grad_scale * (float) (p - (j == label ? 1.0 : 0.0));
            }
        }
    }
    *loss_sum += loss;
    if (n_correct)
        *n_correct += correct;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Mean squared error against one-hot labels or targets.

int
ms_cpu_mse(ms_backend_t *b, int64_t rows, int64_t cols, const float *y,
           const int32_t *labels, const float *targets, float grad_scale,
           float *delta, double *loss_sum, int64_t *n_correct)
{
    (void) b;
    double loss = 0;
    int64_t correct = 0;
    float scale = grad_scale * 2.0f / (float) cols;
    for (int64_t i = 0; i < rows; i++) {
        const float *yi = y + i * cols;
        double row = 0;
        for (int64_t j = 0; j < cols; j++) {
            float t = labels ? (j == labels[i] ? 1.0f : 0.0f) : targets[i];
            float d = yi[j] - t;
            row += (double) d * (double) d;
            if (delta)
                delta[i * cols + j] = scale * d;
        }
        loss += row / (double) cols;
        if (labels)
            correct += ms_loss_argmax(yi, cols) == labels[i];
    }
    *loss_sum += loss;
    if (n_correct)
        *n_correct += correct;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Column sums in row order.

int
ms_cpu_col_sum(ms_backend_t *b, int64_t rows, int64_t cols,
               const float *restrict delta, float *restrict db)
{
    (void) b;
    memset(db, 0, (size_t) cols * sizeof(float));
    for (int64_t i = 0; i < rows; i++) {
        const float *d = delta + i * cols;
        for (int64_t j = 0; j < cols; j++)
            db[j] += d[j];
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  End of a minibatch: its mean loss, divergence, the next step's scalars.

int
ms_cpu_batch_end(ms_backend_t *b, int64_t rows, const ms_optim_step_t *table,
                 ms_step_cursor_t *c)
{
    (void) b;
    double mean = c->loss_sum / (double) rows;
    if (!c->diverged) {
        if (!isfinite(mean)) {
            c->diverged = 1;
            c->bad_loss = mean;
            c->w_step.skip = 1;
            c->b_step.skip = 1;
        } else {
            c->loss_acc += mean;
            c->w_step = table[2 * c->n_steps];
            c->b_step = table[2 * c->n_steps + 1];
            c->n_steps++;
        }
    }
    c->first_row += rows;
    c->loss_sum = 0;
    c->n_correct = 0;
    return MS_OK;
}
