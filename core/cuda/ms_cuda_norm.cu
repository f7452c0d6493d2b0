/*  =========================================================================
    ms_cuda_norm - layer norm, batch norm, the residual add and its scale,
    global gradient-norm clipping, on the device

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The CPU's loops (core/cpu/ms_cpu_norm.c) with the same formulas in the
    same order, so that, built with --fmad=false and IEEE division and
    square root like every kernel here, they give the CPU's bits: a layer
    norm row is one thread (its 8-lane sums as the CPU writes them), a
    column sum (batch statistics, dgamma, dbeta) is one thread over the
    rows in ascending order, the element-wise passes are one thread per
    element. The two reductions over a whole buffer (the rezero scale's
    gradient, the global gradient norm) run in one block: thread t sums
    elements t, t + T, ... in double, then a fixed tree in shared memory;
    a fixed order, so bit-identical reruns, but not the CPU's order (the
    CPU and the GPU have different fingerprints). clip_norm's one block
    then scales the whole gradient: one launch, no scratch; a block of
    1024 threads takes a 1M-parameter network's gradient in a few tens of
    microseconds, small beside its GEMMs.

    What was not done: a warp per layer-norm row (faster for widths of
    hundreds; the 64-wide rows of the depth study are a few cache lines);
    fusing batch norm's statistics with its output pass.
*/
#include "ms_cuda_internal.h"

#define S_FOR_EACH(i, n)                                                       \
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t) gridDim.x * blockDim.x)

#define S_REDUCE_THREADS 1024 // threads of the one-block reductions

//  --------------------------------------------------------------------------
//  Sum of n floats in the CPU's 8-lane order.

static __device__ float
s_sum(const float *x, int64_t n)
{
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++)
            lane[k] += x[j + k];
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        s += lane[k];
    for (; j < n; j++)
        s += x[j];
    return s;
}

//  --------------------------------------------------------------------------
//  Sum of (x - c)^2 over n floats in the CPU's 8-lane order.

static __device__ float
s_sum_sq_dev(const float *x, float c, int64_t n)
{
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) {
            float d = x[j + k] - c;
            lane[k] += d * d;
        }
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        s += lane[k];
    for (; j < n; j++) {
        float d = x[j] - c;
        s += d * d;
    }
    return s;
}

//  --------------------------------------------------------------------------
//  Layer norm forward, a thread per row.

static __global__ void
layer_norm_forward_kernel(int64_t rows, int64_t cols, const float *x,
                          const float *gamma, const float *beta, float *y,
                          float *mean, float *rstd)
{
    const float inv_n = 1.0f / (float) cols;
    S_FOR_EACH(i, rows)
    {
        const float *xr = x + i * cols;
        float *yr = y + i * cols;
        float mu = s_sum(xr, cols) * inv_n;
        float var = s_sum_sq_dev(xr, mu, cols) * inv_n;
        float rs = 1.0f / sqrtf(var + MS_NORM_EPS);
        mean[i] = mu;
        rstd[i] = rs;
        for (int64_t j = 0; j < cols; j++)
            yr[j] = gamma[j] * ((xr[j] - mu) * rs) + beta[j];
    }
}

//  --------------------------------------------------------------------------
//  dgamma, dbeta of either norm: a thread per column, rows ascending;
//  per_row: the stats are per row (layer norm), else per column.

static __global__ void
norm_dgamma_kernel(int64_t rows, int64_t cols, bool per_row, const float *x,
                   const float *mean, const float *rstd, const float *dy,
                   float *dgamma, float *dbeta)
{
    S_FOR_EACH(j, cols)
    {
        float sg = 0.0f, sb = 0.0f;
        for (int64_t i = 0; i < rows; i++) {
            int64_t s = per_row ? i : j;
            float d = dy[i * cols + j];
            float xh = (x[i * cols + j] - mean[s]) * rstd[s];
            sg += d * xh;
            sb += d;
        }
        dgamma[j] = sg;
        dbeta[j] = sb;
    }
}

//  --------------------------------------------------------------------------
//  Layer norm's input gradient, a thread per row (the row's sums first:
//  dx may be dy).

static __global__ void
layer_norm_dx_kernel(int64_t rows, int64_t cols, const float *x,
                     const float *gamma, const float *mean, const float *rstd,
                     const float *dy, float *dx, bool accumulate)
{
    const float inv_n = 1.0f / (float) cols;
    S_FOR_EACH(i, rows)
    {
        const float *xr = x + i * cols, *dyr = dy + i * cols;
        float *dxr = dx + i * cols;
        const float mu = mean[i], rs = rstd[i];
        float lg[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        float lgx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8)
            for (int k = 0; k < 8; k++) {
                float xh = (xr[j + k] - mu) * rs;
                float g = gamma[j + k] * dyr[j + k];
                lg[k] += g;
                lgx[k] += g * xh;
            }
        float sg = 0.0f, sgx = 0.0f;
        for (int k = 0; k < 8; k++) {
            sg += lg[k];
            sgx += lgx[k];
        }
        for (; j < cols; j++) {
            float xh = (xr[j] - mu) * rs;
            float g = gamma[j] * dyr[j];
            sg += g;
            sgx += g * xh;
        }
        const float mg = sg * inv_n, mgx = sgx * inv_n;
        for (j = 0; j < cols; j++) {
            float xh = (xr[j] - mu) * rs;
            float v = rs * ((gamma[j] * dyr[j] - mg) - xh * mgx);
            dxr[j] = accumulate ? dxr[j] + v : v;
        }
    }
}

//  --------------------------------------------------------------------------
//  Batch statistics (and the running ones), or the running ones alone, a
//  thread per column.

static __global__ void
batch_norm_stats_kernel(bool training, int64_t rows, int64_t cols,
                        const float *x, float *run_mean, float *run_var,
                        float *mean, float *rstd)
{
    S_FOR_EACH(j, cols)
    {
        if (!training) {
            mean[j] = run_mean[j];
            rstd[j] = 1.0f / sqrtf(run_var[j] + MS_NORM_EPS);
            continue;
        }
        const float inv_n = 1.0f / (float) rows;
        float m = 0.0f;
        for (int64_t i = 0; i < rows; i++)
            m += x[i * cols + j];
        m *= inv_n;
        float ss = 0.0f;
        for (int64_t i = 0; i < rows; i++) {
            float d = x[i * cols + j] - m;
            ss += d * d;
        }
        float var = ss * inv_n;
        if (run_mean) {
            const float mo = MS_NORM_MOMENTUM, keep = 1.0f - MS_NORM_MOMENTUM;
            const float unbias =
                rows > 1 ? (float) rows / (float) (rows - 1) : 1.0f;
            run_mean[j] = keep * run_mean[j] + mo * m;
            run_var[j] = keep * run_var[j] + mo * (var * unbias);
        }
        mean[j] = m;
        rstd[j] = 1.0f / sqrtf(var + MS_NORM_EPS);
    }
}

//  --------------------------------------------------------------------------
//  y = gamma (x - mean) rstd + beta with per-column stats.

static __global__ void
batch_norm_apply_kernel(int64_t rows, int64_t cols, const float *x,
                        const float *gamma, const float *beta,
                        const float *mean, const float *rstd, float *y)
{
    S_FOR_EACH(ij, rows * cols)
    {
        int64_t j = ij % cols;
        y[ij] = gamma[j] * ((x[ij] - mean[j]) * rstd[j]) + beta[j];
    }
}

//  --------------------------------------------------------------------------
//  Batch norm's input gradient, element-wise (the column sums are done).

static __global__ void
batch_norm_dx_kernel(int64_t rows, int64_t cols, const float *x,
                     const float *gamma, const float *mean, const float *rstd,
                     const float *dy, const float *dgamma, const float *dbeta,
                     float *dx, bool accumulate)
{
    const float inv_n = 1.0f / (float) rows;
    S_FOR_EACH(ij, rows * cols)
    {
        int64_t j = ij % cols;
        float xh = (x[ij] - mean[j]) * rstd[j];
        float v = gamma[j] * rstd[j] *
                  ((dy[ij] - dbeta[j] * inv_n) - xh * (dgamma[j] * inv_n));
        dx[ij] = accumulate ? dx[ij] + v : v;
    }
}

//  --------------------------------------------------------------------------
//  out = h + s u.

static __global__ void
residual_forward_kernel(int64_t n, const float *h, const float *scale,
                        const float *u, float *out)
{
    const float s = scale ? *scale : 1.0f;
    S_FOR_EACH(i, n)
    {
        out[i] = scale ? h[i] + s * u[i] : h[i] + u[i];
    }
}

//  --------------------------------------------------------------------------
//  gu = s g (times the mask).

static __global__ void
residual_backward_kernel(int64_t n, const float *g, const float *scale,
                         const float *mask, float *gu)
{
    const float s = scale ? *scale : 1.0f;
    S_FOR_EACH(i, n)
    {
        float v = scale ? s * g[i] : g[i];
        gu[i] = mask ? v * mask[i] : v;
    }
}

//  --------------------------------------------------------------------------
//  The one block's fixed-order reduction of per-thread partial sums in
//  shared memory; thread 0's part holds the total after it.

static __device__ double
s_block_total(double part)
{
    __shared__ double sh[S_REDUCE_THREADS];
    sh[threadIdx.x] = part;
    __syncthreads();
    for (unsigned w = S_REDUCE_THREADS / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    double total = sh[0];
    __syncthreads();
    return total;
}

//  --------------------------------------------------------------------------
//  *dscale = sum g u, one block.

static __global__ void
residual_dscale_kernel(int64_t n, const float *g, const float *u, float *dscale)
{
    double part = 0;
    for (int64_t i = threadIdx.x; i < n; i += S_REDUCE_THREADS)
        part += (double) g[i] * (double) u[i];
    double total = s_block_total(part);
    if (threadIdx.x == 0)
        *dscale = (float) total;
}

//  --------------------------------------------------------------------------
//  The global norm, then g *= max_norm / norm where it exceeds max_norm;
//  one block.

static __global__ void
clip_norm_kernel(int64_t n, float *g, float max_norm, float *factor)
{
    double part = 0;
    for (int64_t i = threadIdx.x; i < n; i += S_REDUCE_THREADS)
        part += (double) g[i] * (double) g[i];
    double norm = sqrt(s_block_total(part));
    float f = 1.0f;
    if (norm > (double) max_norm) {
        f = (float) ((double) max_norm / norm);
        for (int64_t i = threadIdx.x; i < n; i += S_REDUCE_THREADS)
            g[i] *= f;
    }
    if (threadIdx.x == 0 && factor)
        *factor = f;
}

//  --------------------------------------------------------------------------
//  Launch checks shared by the ops below.

#define S_LAUNCHED(b, kernel, op, d0, d1)                                      \
    do {                                                                       \
        MS_CUDA_LAUNCHED(b, kernel);                                           \
        ms_cuda_prof_mark(b, op, d0, d1, 0);                                   \
    } while (0)

//  --------------------------------------------------------------------------
//  Layer norm forward.

extern "C" int
ms_cuda_layer_norm_forward(ms_backend_t *b, int64_t rows, int64_t cols,
                           const float *x, const float *gamma,
                           const float *beta, float *y, float *mean,
                           float *rstd)
{
    if (rows <= 0 || cols <= 0)
        return MS_OK;
    layer_norm_forward_kernel<<<ms_cuda_blocks(rows), MS_CUDA_THREADS, 0,
                                b->cuda->stream>>>(rows, cols, x, gamma, beta,
                                                   y, mean, rstd);
    S_LAUNCHED(b, "layer_norm_forward_kernel", "layer_norm_forward", rows,
               cols);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Layer norm backward: the column sums, then the input gradient.

extern "C" int
ms_cuda_layer_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                            const float *x, const float *gamma,
                            const float *mean, const float *rstd,
                            const float *dy, float *dx, float *dgamma,
                            float *dbeta, bool accumulate)
{
    if (rows <= 0 || cols <= 0)
        return MS_OK;
    cudaStream_t st = b->cuda->stream;
    norm_dgamma_kernel<<<ms_cuda_blocks(cols), MS_CUDA_THREADS, 0, st>>>(
        rows, cols, true, x, mean, rstd, dy, dgamma, dbeta);
    S_LAUNCHED(b, "norm_dgamma_kernel", "layer_norm_dgamma", rows, cols);
    layer_norm_dx_kernel<<<ms_cuda_blocks(rows), MS_CUDA_THREADS, 0, st>>>(
        rows, cols, x, gamma, mean, rstd, dy, dx, accumulate);
    S_LAUNCHED(b, "layer_norm_dx_kernel", "layer_norm_dx", rows, cols);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Batch norm forward: the statistics, then the output.

extern "C" int
ms_cuda_batch_norm_forward(ms_backend_t *b, bool training, int64_t rows,
                           int64_t cols, const float *x, const float *gamma,
                           const float *beta, float *run_mean, float *run_var,
                           float *y, float *mean, float *rstd)
{
    if (rows <= 0 || cols <= 0)
        return MS_OK;
    cudaStream_t st = b->cuda->stream;
    batch_norm_stats_kernel<<<ms_cuda_blocks(cols), MS_CUDA_THREADS, 0, st>>>(
        training, rows, cols, x, run_mean, run_var, mean, rstd);
    S_LAUNCHED(b, "batch_norm_stats_kernel", "batch_norm_stats", rows, cols);
    batch_norm_apply_kernel<<<ms_cuda_blocks(rows * cols), MS_CUDA_THREADS, 0,
                              st>>>(rows, cols, x, gamma, beta, mean, rstd, y);
    S_LAUNCHED(b, "batch_norm_apply_kernel", "batch_norm_apply", rows, cols);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Batch norm backward: the column sums, then the input gradient.

extern "C" int
ms_cuda_batch_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                            const float *x, const float *gamma,
                            const float *mean, const float *rstd,
                            const float *dy, float *dx, float *dgamma,
                            float *dbeta, bool accumulate)
{
    if (rows <= 0 || cols <= 0)
        return MS_OK;
    cudaStream_t st = b->cuda->stream;
    norm_dgamma_kernel<<<ms_cuda_blocks(cols), MS_CUDA_THREADS, 0, st>>>(
        rows, cols, false, x, mean, rstd, dy, dgamma, dbeta);
    S_LAUNCHED(b, "norm_dgamma_kernel", "batch_norm_dgamma", rows, cols);
    batch_norm_dx_kernel<<<ms_cuda_blocks(rows * cols), MS_CUDA_THREADS, 0,
                           st>>>(rows, cols, x, gamma, mean, rstd, dy, dgamma,
                                 dbeta, dx, accumulate);
    S_LAUNCHED(b, "batch_norm_dx_kernel", "batch_norm_dx", rows, cols);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Residual add.

extern "C" int
ms_cuda_residual_forward(ms_backend_t *b, int64_t n, const float *h,
                         const float *scale, const float *u, float *out)
{
    if (n <= 0)
        return MS_OK;
    residual_forward_kernel<<<ms_cuda_blocks(n), MS_CUDA_THREADS, 0,
                              b->cuda->stream>>>(n, h, scale, u, out);
    S_LAUNCHED(b, "residual_forward_kernel", "residual_forward", n, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Residual backward: the branch's gradient, the scale's.

extern "C" int
ms_cuda_residual_backward(ms_backend_t *b, int64_t n, const float *g,
                          const float *scale, const float *u, const float *mask,
                          float *gu, float *dscale)
{
    if (n <= 0)
        return MS_OK;
    cudaStream_t st = b->cuda->stream;
    residual_backward_kernel<<<ms_cuda_blocks(n), MS_CUDA_THREADS, 0, st>>>(
        n, g, scale, mask, gu);
    S_LAUNCHED(b, "residual_backward_kernel", "residual_backward", n, 0);
    if (dscale) {
        residual_dscale_kernel<<<1, S_REDUCE_THREADS, 0, st>>>(n, g, u, dscale);
        S_LAUNCHED(b, "residual_dscale_kernel", "residual_dscale", n, 0);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Global gradient-norm clipping.

extern "C" int
ms_cuda_clip_norm(ms_backend_t *b, int64_t n, float *g, float max_norm,
                  float *factor)
{
    if (n <= 0)
        return MS_OK;
    clip_norm_kernel<<<1, S_REDUCE_THREADS, 0, b->cuda->stream>>>(
        n, g, max_norm, factor);
    S_LAUNCHED(b, "clip_norm_kernel", "clip_norm", n, 0);
    return MS_OK;
}
