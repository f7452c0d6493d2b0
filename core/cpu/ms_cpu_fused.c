/*  =========================================================================
    ms_cpu_fused - the fused operations of a training step on the CPU: the
    compositions of the CPU's own ops

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    On the GPU each of these is one launch instead of two to four (a small
    network's step is bound by dependent launches, docs/CUDA_NOTES.md).
    Here they call the ops they stand for, in the order ms_backend.h names,
    so the CPU's bits are exactly those of the unfused sequence
    (ms_golden_test).
*/
#include "ms_cpu.h"

//  --------------------------------------------------------------------------
//  Minibatch rows of x and of the labels or targets.

int
ms_cpu_gather_xy(ms_backend_t *b, int64_t rows, int64_t cols,
                 const float *x_src, const void *y_src, const int64_t *idx,
                 const ms_step_cursor_t *cursor, float *x_dst, void *y_dst)
{
    int rc = ms_cpu_gather(b, rows, cols, x_src, idx, cursor, x_dst);
    if (rc == MS_OK)
        rc = ms_cpu_gather(b, rows, 1, y_src, idx, cursor, y_dst);
    return rc;
}

//  --------------------------------------------------------------------------
//  g *= f'(z), then db = column sums of g.

int
ms_cpu_act_backward_col_sum(ms_backend_t *b, ms_activation_t act, float slope,
                            int64_t rows, int64_t cols, const float *z,
                            const float *a, float *g, float *db)
{
    int rc = ms_cpu_act_backward(b, act, slope, rows * cols, z, a, g);
    if (rc == MS_OK)
        rc = ms_cpu_col_sum(b, rows, cols, g, db);
    return rc;
}

//  --------------------------------------------------------------------------
//  Output bias, loss and delta, output bias gradient, batch end.

int
ms_cpu_train_loss(ms_backend_t *b, ms_loss_kind_t loss, int64_t rows,
                  int64_t cols, const float *bias, float *y,
                  const int32_t *labels, const float *targets, float *delta,
                  float *db, const ms_optim_step_t *table,
                  ms_step_cursor_t *cursor)
{
    int rc = ms_cpu_bias_act_forward(b, MS_ACTIVATION_LINEAR, 0.0f, rows, cols,
                                     bias, y, y);
    float scale = 1.0f / (float) rows;
    if (rc == MS_OK && loss == MS_LOSS_CROSS_ENTROPY)
        rc = ms_cpu_softmax_xent(b, rows, cols, y, labels, scale, delta,
                                 &cursor->loss_sum, &cursor->n_correct);
    else if (rc == MS_OK)
        rc = ms_cpu_mse(b, rows, cols, y, labels, labels ? NULL : targets,
                        scale, delta, &cursor->loss_sum,
                        labels ? &cursor->n_correct : NULL);
    if (rc == MS_OK)
        rc = ms_cpu_col_sum(b, rows, cols, delta, db);
    if (rc == MS_OK)
        rc = ms_cpu_batch_end(b, rows, table, cursor);
    return rc;
}

//  --------------------------------------------------------------------------
//  One optimizer step on every segment of a parameter block.

int
ms_cpu_optim_all(ms_backend_t *b, const ms_optim_step_t *w_step,
                 const ms_optim_step_t *b_step, int32_t n_segs,
                 const int64_t *bounds, int64_t n, float *w, const float *g,
                 float *m, float *v)
{
    (void) n;
    int rc = MS_OK;
    for (int32_t s = 0; s < n_segs && rc == MS_OK; s++) {
        int64_t off = bounds[s];
        rc = ms_cpu_optim_step(b, s % 2 ? b_step : w_step, bounds[s + 1] - off,
                               w + off, g + off, m ? m + off : NULL,
                               v ? v + off : NULL);
    }
    return rc;
}
