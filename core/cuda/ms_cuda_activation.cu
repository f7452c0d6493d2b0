/*  =========================================================================
    ms_cuda_activation - fused bias + activation forward, activation
    backward, element-wise product (dropout)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The kernels are the CPU loops of core/cpu/ms_cpu_activation.c, one
    thread per element: the same formulas, in the same order, through the
    same ms_math.h functions (compiled for the device), built with
    --fmad=false (no fused multiply-add, like the CPU's -ffp-contract=off)
    and IEEE division and square root. So every element comes out with the
    CPU's bits: the test suite compares them bit for bit. One pass over
    memory per call, a grid-stride loop, the switch on the activation
    outside the loop (uniform over the grid: no divergence). These are
    memory-bound; 16-byte accesses would help the widest layers a little
    and are not done yet. act_backward_col_sum fuses a hidden layer's
    act_backward with its bias gradient (one launch fewer per hidden layer
    on the step's dependent chain).
*/
#include "ms_cuda_internal.h"

#include "ms_activation.h"
#include "ms_math.h"

#define S_SQRT1_2 0.70710678118654752440f  // 1 / sqrt 2
#define S_INV_SQRT_2PI 0.3989422804014327f // 1 / sqrt(2 pi)

#define S_FOR_EACH(i, n)                                                       \
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t) gridDim.x * blockDim.x)

//  --------------------------------------------------------------------------
//  z += bias (broadcast over rows), a = f(z); gelu keeps z.

static __global__ void
bias_act_forward_kernel(ms_activation_t act, float slope, int64_t rows,
                        int64_t cols, const float *bias, float *z, float *a)
{
    const float lambda = (float) MS_SELU_LAMBDA;
    const float la = (float) (MS_SELU_LAMBDA * MS_SELU_ALPHA);
    int64_t n = rows * cols;
    switch (act) {
    case MS_ACTIVATION_RELU:
        S_FOR_EACH(i, n)
        {
            float v = z[i] + bias[i % cols];
            a[i] = v > 0.0f ? v : 0.0f;
        }
        break;
    case MS_ACTIVATION_LEAKY_RELU:
        S_FOR_EACH(i, n)
        {
            float v = z[i] + bias[i % cols];
            a[i] = v * ms_math_select(v > 0.0f, 1.0f, slope);
        }
        break;
    case MS_ACTIVATION_ELU:
        S_FOR_EACH(i, n)
        {
            float v = z[i] + bias[i % cols];
            float neg = ms_math_expm1(v);
            a[i] = ms_math_select(v > 0.0f, v, neg);
        }
        break;
    case MS_ACTIVATION_SELU:
        S_FOR_EACH(i, n)
        {
            float v = z[i] + bias[i % cols];
            float pos = lambda * v;
            float neg = la * ms_math_expm1(v);
            a[i] = ms_math_select(v > 0.0f, pos, neg);
        }
        break;
    case MS_ACTIVATION_GELU:
        S_FOR_EACH(i, n)
        {
            float v = z[i] + bias[i % cols];
            z[i] = v;
            a[i] = 0.5f * v * (1.0f + ms_math_erf(v * S_SQRT1_2));
        }
        break;
    case MS_ACTIVATION_TANH:
        S_FOR_EACH(i, n)
        {
            a[i] = ms_math_tanh(z[i] + bias[i % cols]);
        }
        break;
    case MS_ACTIVATION_SIGMOID:
        S_FOR_EACH(i, n)
        {
            a[i] = ms_math_sigmoid(z[i] + bias[i % cols]);
        }
        break;
    case MS_ACTIVATION_LINEAR:
        S_FOR_EACH(i, n)
        {
            a[i] = z[i] + bias[i % cols];
        }
        break;
    }
}

//  --------------------------------------------------------------------------
//  g *= f'(z), from a (z for gelu).

static __global__ void
act_backward_kernel(ms_activation_t act, float slope, int64_t n, const float *z,
                    const float *a, float *g)
{
    const float lambda = (float) MS_SELU_LAMBDA;
    const float la = (float) (MS_SELU_LAMBDA * MS_SELU_ALPHA);
    switch (act) {
    case MS_ACTIVATION_RELU:
        S_FOR_EACH(i, n)
        {
            g[i] = a[i] > 0.0f ? g[i] : 0.0f;
        }
        break;
    case MS_ACTIVATION_LEAKY_RELU:
        S_FOR_EACH(i, n)
        {
            g[i] = g[i] * ms_math_select(a[i] > 0.0f, 1.0f, slope);
        }
        break;
    case MS_ACTIVATION_ELU:
        S_FOR_EACH(i, n)
        {
            g[i] = g[i] * ms_math_select(a[i] > 0.0f, 1.0f, a[i] + 1.0f);
        }
        break;
    case MS_ACTIVATION_SELU:
        S_FOR_EACH(i, n)
        {
            g[i] = g[i] * ms_math_select(a[i] > 0.0f, lambda, a[i] + la);
        }
        break;
    case MS_ACTIVATION_GELU:
        S_FOR_EACH(i, n)
        {
            float v = z[i];
            float cdf = 0.5f * (1.0f + ms_math_erf(v * S_SQRT1_2));
            float pdf = ms_math_exp(-0.5f * v * v) * S_INV_SQRT_2PI;
            g[i] = g[i] * (cdf + v * pdf);
        }
        break;
    case MS_ACTIVATION_TANH:
        S_FOR_EACH(i, n)
        {
            g[i] = g[i] * (1.0f - a[i] * a[i]);
        }
        break;
    case MS_ACTIVATION_SIGMOID:
        S_FOR_EACH(i, n)
        {
            g[i] = g[i] * (a[i] * (1.0f - a[i]));
        }
        break;
    case MS_ACTIVATION_LINEAR:
        break;
    }
}

//  --------------------------------------------------------------------------
//  One element of act_backward_kernel: g * f'(z), from a (z for gelu); the
//  same formulas.

static __device__ __forceinline__ float
s_act_grad(ms_activation_t act, float slope, const float *z, int64_t i, float a,
           float g)
{
    const float lambda = (float) MS_SELU_LAMBDA;
    const float la = (float) (MS_SELU_LAMBDA * MS_SELU_ALPHA);
    switch (act) {
    case MS_ACTIVATION_RELU:
        return a > 0.0f ? g : 0.0f;
    case MS_ACTIVATION_LEAKY_RELU:
        return g * ms_math_select(a > 0.0f, 1.0f, slope);
    case MS_ACTIVATION_ELU:
        return g * ms_math_select(a > 0.0f, 1.0f, a + 1.0f);
    case MS_ACTIVATION_SELU:
        return g * ms_math_select(a > 0.0f, lambda, a + la);
    case MS_ACTIVATION_GELU: {
        float v = z[i];
        float cdf = 0.5f * (1.0f + ms_math_erf(v * S_SQRT1_2));
        float pdf = ms_math_exp(-0.5f * v * v) * S_INV_SQRT_2PI;
        return g * (cdf + v * pdf);
    }
    case MS_ACTIVATION_TANH:
        return g * (1.0f - a * a);
    case MS_ACTIVATION_SIGMOID:
        return g * (a * (1.0f - a));
    case MS_ACTIVATION_LINEAR:
        break;
    }
    return g;
}

#define S_CS_COLS 32  // columns per block (a warp's width)
#define S_CS_LANES 8  // warps per block: rows handled at once
#define S_CS_CHUNK 64 // rows staged in shared memory at a time

//  --------------------------------------------------------------------------
//  g *= f'(z) over rows x cols, and db = column sums of the new g, rows in
//  order (col_sum's and the CPU's order: the same bits). A block takes 32
//  columns; its 8 warps update a chunk of 64 rows (a warp reads a row's 32
//  columns at once) and stage the new values in shared memory; then one
//  thread per column adds the chunk's rows in order to its running sum.
//  One launch where act_backward and col_sum took two, and the sums read
//  shared memory instead of a column's strided global loads.

static __global__ void
act_backward_col_sum_kernel(ms_activation_t act, float slope, int64_t rows,
                            int64_t cols, const float *z, const float *a,
                            float *g, float *db)
{
    __shared__ float tile[S_CS_CHUNK][S_CS_COLS + 1];
    int tx = (int) (threadIdx.x % S_CS_COLS),
        ty = (int) (threadIdx.x / S_CS_COLS);
    int64_t j = (int64_t) blockIdx.x * S_CS_COLS + tx;
    bool col = j < cols;
    float sum = 0.0f;
    for (int64_t r0 = 0; r0 < rows; r0 += S_CS_CHUNK) {
        int n = rows - r0 < S_CS_CHUNK ? (int) (rows - r0) : S_CS_CHUNK;
        for (int r = ty; r < n && col; r += S_CS_LANES) {
            int64_t k = (r0 + r) * cols + j;
            float v = g[k];
            if (act != MS_ACTIVATION_LINEAR) {
                v = s_act_grad(act, slope, z, k, a[k], v);
                g[k] = v;
            }
            tile[r][tx] = v;
        }
        __syncthreads();
        if (ty == 0 && col)
            for (int r = 0; r < n; r++)
                sum += tile[r][tx];
        __syncthreads();
    }
    if (ty == 0 && col)
        db[j] = sum;
}

//  --------------------------------------------------------------------------
//  out = x * mask.

static __global__ void
mul_kernel(int64_t n, const float *mask, const float *x, float *out)
{
    S_FOR_EACH(i, n)
    {
        out[i] = x[i] * mask[i];
    }
}

//  --------------------------------------------------------------------------
//  z += bias and a = f(z) over rows x cols.

extern "C" int
ms_cuda_bias_act_forward(ms_backend_t *b, ms_activation_t act, float slope,
                         int64_t rows, int64_t cols, const float *bias,
                         float *z, float *a)
{
    if (rows <= 0 || cols <= 0)
        return MS_OK;
    bias_act_forward_kernel<<<ms_cuda_blocks(rows * cols), MS_CUDA_THREADS, 0,
                              b->cuda->stream>>>(act, slope, rows, cols, bias,
                                                 z, a);
    MS_CUDA_LAUNCHED(b, "bias_act_forward_kernel");
    ms_cuda_prof_mark(b, "bias_act_forward", rows, cols, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  g *= f'(z).

extern "C" int
ms_cuda_act_backward(ms_backend_t *b, ms_activation_t act, float slope,
                     int64_t n, const float *z, const float *a, float *g)
{
    if (n <= 0 || act == MS_ACTIVATION_LINEAR)
        return MS_OK;
    act_backward_kernel<<<ms_cuda_blocks(n), MS_CUDA_THREADS, 0,
                          b->cuda->stream>>>(act, slope, n, z, a, g);
    MS_CUDA_LAUNCHED(b, "act_backward_kernel");
    ms_cuda_prof_mark(b, "act_backward", n, 0, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  out = x * mask.

extern "C" int
ms_cuda_mul(ms_backend_t *b, int64_t n, const float *mask, const float *x,
            float *out)
{
    if (n <= 0)
        return MS_OK;
    mul_kernel<<<ms_cuda_blocks(n), MS_CUDA_THREADS, 0, b->cuda->stream>>>(
        n, mask, x, out);
    MS_CUDA_LAUNCHED(b, "mul_kernel");
    ms_cuda_prof_mark(b, "mul", n, 0, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  g *= f'(z), db = column sums of g.

extern "C" int
ms_cuda_act_backward_col_sum(ms_backend_t *b, ms_activation_t act, float slope,
                             int64_t rows, int64_t cols, const float *z,
                             const float *a, float *g, float *db)
{
    if (cols <= 0)
        return MS_OK;
    int64_t blocks = (cols + S_CS_COLS - 1) / S_CS_COLS;
    if (blocks > 2147483647)
        return ms_cuda_fail(b, "act_backward_col_sum", __FILE__, __LINE__,
                            "too many columns");
    act_backward_col_sum_kernel<<<(unsigned) blocks, S_CS_COLS * S_CS_LANES, 0,
                                  b->cuda->stream>>>(act, slope, rows, cols, z,
                                                     a, g, db);
    MS_CUDA_LAUNCHED(b, "act_backward_col_sum_kernel");
    ms_cuda_prof_mark(b, "act_backward_col_sum", rows, cols, 0);
    return MS_OK;
}
