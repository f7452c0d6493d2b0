/*  =========================================================================
    ms_cuda_loss - fused loss, accuracy and output delta; column sums;
    the end-of-minibatch accounting

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Losses: one block of S_LOSS_THREADS threads; thread t takes rows t,
    t + S_LOSS_THREADS, ... and does for each exactly what the CPU does for
    a row (core/cpu/ms_cpu_loss.c: argmax, exp terms in float through
    ms_math_exp, their sum and the log-sum-exp in double, the delta), so
    each row's loss and delta have the CPU's bits but for the double log
    (CUDA's and glibc's may differ in the last place). The row losses are
    summed in a fixed order: each thread's rows in row order, then a tree
    over the threads in shared memory; no atomics, so the same inputs give
    the same sum on every run. That order differs from the CPU's plain row
    order, within double rounding. The sum is added to the accumulator in
    device memory (the trainer reads it once per epoch). One block is
    enough for the output layer of a minibatch (classes x batch is small);
    a wide regression output or a very large evaluation chunk would want
    a grid and a second pass.

    col_sum: one thread per column summing the rows in order, the CPU's
    order exactly, so the bias gradients are bit-identical to the CPU's.

    batch_end: one thread, the code of ms_cpu_batch_end.

    train_loss: the output bias, the loss, the output layer's bias gradient
    and batch_end in one launch (one block): a small network's training
    step is bound by its dependent launches, not by arithmetic
    (docs/CUDA_NOTES.md), and this is four of them.
*/
#include "ms_cuda_internal.h"

#include "ms_math.h"

#define S_LOSS_THREADS 256

//  --------------------------------------------------------------------------
//  First maximum of y[0 .. k) (ms_loss_argmax).

static __device__ int64_t
s_argmax(const float *y, int64_t k)
{
    int64_t best = 0;
    for (int64_t j = 1; j < k; j++)
        if (y[j] > y[best])
            best = j;
    return best;
}

//  --------------------------------------------------------------------------
//  Sum the block's per-thread partials in a fixed tree order; thread 0 adds
//  them to the accumulators.

static __device__ void
s_block_add(double loss, long long hits, double *loss_sum, int64_t *n_correct)
{
    __shared__ double s_loss[S_LOSS_THREADS];
    __shared__ long long s_hits[S_LOSS_THREADS];
    unsigned t = threadIdx.x;
    s_loss[t] = loss;
    s_hits[t] = hits;
    __syncthreads();
    for (unsigned half = S_LOSS_THREADS / 2; half > 0; half /= 2) {
        if (t < half) {
            s_loss[t] += s_loss[t + half];
            s_hits[t] += s_hits[t + half];
        }
        __syncthreads();
    }
    if (t == 0) {
        *loss_sum += s_loss[0];
        if (n_correct)
            *n_correct += s_hits[0];
    }
}

//  --------------------------------------------------------------------------
//  One row of softmax cross-entropy (ms_cpu_softmax_xent's row): adds the
//  row's loss and hit to *loss and *correct, writes its delta when d.

static __device__ __forceinline__ void
s_xent_row(const float *y, int64_t cols, int32_t label, float grad_scale,
           float *d, double *loss, long long *correct)
{
    int64_t best = s_argmax(y, cols);
    double max = y[best];
    double sum = 0;
    for (int64_t j = 0; j < cols; j++) {
        double ej = (double) ms_math_exp(y[j] - y[best]);
        sum += ej;
        if (d)
            d[j] = (float) ej;
    }
    double lse = max + log(sum);
    *loss += lse - (double) y[label];
    *correct += best == label;
    if (d)
        for (int64_t j = 0; j < cols; j++) {
            double p = (double) d[j] / sum;
            d[j] = grad_scale * (float) (p - (j == label ? 1.0 : 0.0));
        }
}

//  --------------------------------------------------------------------------
//  One row of the mean squared error (ms_cpu_mse's row), idem.

static __device__ __forceinline__ void
s_mse_row(const float *yi, int64_t cols, const int32_t *label,
          const float *target, float scale, float *d, double *loss,
          long long *correct)
{
    double row = 0;
    for (int64_t j = 0; j < cols; j++) {
        float t = label ? (j == *label ? 1.0f : 0.0f) : *target;
        float dj = yi[j] - t;
        row += (double) dj * (double) dj;
        if (d)
            d[j] = scale * dj;
    }
    *loss += row / (double) cols;
    if (label)
        *correct += s_argmax(yi, cols) == *label;
}

//  --------------------------------------------------------------------------
//  Softmax cross-entropy, accuracy, delta.

static __global__ void
softmax_xent_kernel(int64_t rows, int64_t cols, const float *logits,
                    const int32_t *labels, float grad_scale, float *delta,
                    double *loss_sum, int64_t *n_correct)
{
    double loss = 0;
    long long correct = 0;
    for (int64_t i = threadIdx.x; i < rows; i += S_LOSS_THREADS)
        s_xent_row(logits + i * cols, cols, labels[i], grad_scale,
                   delta ? delta + i * cols : NULL, &loss, &correct);
    s_block_add(loss, correct, loss_sum, n_correct);
}

//  --------------------------------------------------------------------------
//  Mean squared error against one-hot labels or targets.

static __global__ void
mse_kernel(int64_t rows, int64_t cols, const float *y, const int32_t *labels,
           const float *targets, float grad_scale, float *delta,
           double *loss_sum, int64_t *n_correct)
{
    double loss = 0;
    long long correct = 0;
    float scale = grad_scale * 2.0f / (float) cols;
    for (int64_t i = threadIdx.x; i < rows; i += S_LOSS_THREADS)
        s_mse_row(y + i * cols, cols, labels ? labels + i : NULL,
                  targets ? targets + i : NULL, scale,
                  delta ? delta + i * cols : NULL, &loss, &correct);
    s_block_add(loss, correct, loss_sum, n_correct);
}

//  --------------------------------------------------------------------------
//  db[j] = sum of delta[i, j] over i ascending.

static __global__ void
col_sum_kernel(int64_t rows, int64_t cols, const float *delta, float *db)
{
    for (int64_t j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; j < cols;
         j += (int64_t) gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int64_t i = 0; i < rows; i++)
            s += delta[i * cols + j];
        db[j] = s;
    }
}

//  --------------------------------------------------------------------------
//  End of a minibatch (ms_cpu_batch_end), by one thread.

static __device__ void
s_batch_end(int64_t rows, const ms_optim_step_t *table, ms_step_cursor_t *c)
{
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
}

static __global__ void
batch_end_kernel(int64_t rows, const ms_optim_step_t *table,
                 ms_step_cursor_t *c)
{
    s_batch_end(rows, table, c);
}

//  --------------------------------------------------------------------------
//  The output layer's end of a training step, one block: y += bias; the
//  loss rows (each thread its rows, as the loss kernels); the block's sum
//  into the cursor; after a barrier (the block's global writes are then
//  visible to it), the bias gradient, one thread per column summing the
//  rows in order (the CPU's order: its bits); then thread 0, which made
//  the loss sum, ends the minibatch.

static __global__ void
train_loss_kernel(ms_loss_kind_t kind, int64_t rows, int64_t cols,
                  const float *bias, float *y, const int32_t *labels,
                  const float *targets, float *delta, float *db,
                  const ms_optim_step_t *table, ms_step_cursor_t *c)
{
    double loss = 0;
    long long correct = 0;
    float grad_scale = 1.0f / (float) rows;
    float mse_scale = grad_scale * 2.0f / (float) cols;
    for (int64_t i = threadIdx.x; i < rows; i += S_LOSS_THREADS) {
        float *yi = y + i * cols;
        for (int64_t j = 0; j < cols; j++)
            yi[j] = yi[j] + bias[j];
        if (kind == MS_LOSS_CROSS_ENTROPY)
            s_xent_row(yi, cols, labels[i], grad_scale, delta + i * cols, &loss,
                       &correct);
        else
            s_mse_row(yi, cols, labels ? labels + i : NULL,
                      labels ? NULL : targets + i, mse_scale, delta + i * cols,
                      &loss, &correct);
    }
    s_block_add(loss, correct, &c->loss_sum,
                labels ? &c->n_correct : (int64_t *) NULL);
    __syncthreads();
    for (int64_t j = threadIdx.x; j < cols; j += S_LOSS_THREADS) {
        float s = 0.0f;
#pragma unroll 8
        for (int64_t i = 0; i < rows; i++)
            s += delta[i * cols + j];
        db[j] = s;
    }
    if (threadIdx.x == 0)
        s_batch_end(rows, table, c);
}

//  --------------------------------------------------------------------------
//  Softmax cross-entropy.

extern "C" int
ms_cuda_softmax_xent(ms_backend_t *b, int64_t rows, int64_t cols,
                     const float *logits, const int32_t *labels,
                     float grad_scale, float *delta, double *loss_sum,
                     int64_t *n_correct)
{
    if (rows <= 0)
        return MS_OK;
    softmax_xent_kernel<<<1, S_LOSS_THREADS, 0, b->cuda->stream>>>(
        rows, cols, logits, labels, grad_scale, delta, loss_sum, n_correct);
    MS_CUDA_LAUNCHED(b, "softmax_xent_kernel");
    ms_cuda_prof_mark(b, "softmax_xent", rows, cols, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Mean squared error.

extern "C" int
ms_cuda_mse(ms_backend_t *b, int64_t rows, int64_t cols, const float *y,
            const int32_t *labels, const float *targets, float grad_scale,
            float *delta, double *loss_sum, int64_t *n_correct)
{
    if (rows <= 0)
        return MS_OK;
    mse_kernel<<<1, S_LOSS_THREADS, 0, b->cuda->stream>>>(
        rows, cols, y, labels, targets, grad_scale, delta, loss_sum, n_correct);
    MS_CUDA_LAUNCHED(b, "mse_kernel");
    ms_cuda_prof_mark(b, "mse", rows, cols, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Column sums.

extern "C" int
ms_cuda_col_sum(ms_backend_t *b, int64_t rows, int64_t cols, const float *delta,
                float *db)
{
    if (cols <= 0)
        return MS_OK;
    col_sum_kernel<<<ms_cuda_blocks(cols), MS_CUDA_THREADS, 0,
                     b->cuda->stream>>>(rows, cols, delta, db);
    MS_CUDA_LAUNCHED(b, "col_sum_kernel");
    ms_cuda_prof_mark(b, "col_sum", rows, cols, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  End of a minibatch.

extern "C" int
ms_cuda_batch_end(ms_backend_t *b, int64_t rows, const ms_optim_step_t *table,
                  ms_step_cursor_t *cursor)
{
    batch_end_kernel<<<1, 1, 0, b->cuda->stream>>>(rows, table, cursor);
    MS_CUDA_LAUNCHED(b, "batch_end_kernel");
    ms_cuda_prof_mark(b, "batch_end", rows, 0, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Output bias, loss, output bias gradient, end of the minibatch.

extern "C" int
ms_cuda_train_loss(ms_backend_t *b, ms_loss_kind_t loss, int64_t rows,
                   int64_t cols, const float *bias, float *y,
                   const int32_t *labels, const float *targets, float *delta,
                   float *db, const ms_optim_step_t *table,
                   ms_step_cursor_t *cursor)
{
    if (rows <= 0)
        return MS_OK;
    train_loss_kernel<<<1, S_LOSS_THREADS, 0, b->cuda->stream>>>(
        loss, rows, cols, bias, y, labels, targets, delta, db, table, cursor);
    MS_CUDA_LAUNCHED(b, "train_loss_kernel");
    ms_cuda_prof_mark(b, "train_loss", rows, cols, 0);
    return MS_OK;
}
