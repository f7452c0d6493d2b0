/*  =========================================================================
    ms_cuda_optim - one optimizer step over a parameter segment

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The rules are in ms_optim.h; the code is the scalar loop of
    core/cpu/ms_cpu_optim.c, one thread per parameter, built with
    --fmad=false and IEEE sqrt and division, so each parameter gets the
    CPU's bits. The scalars are read from device memory when the kernel
    runs (the cursor's w_step / b_step in a replayed training step), so a
    captured step takes the epoch's learning rate and Adam's per-step bias
    corrections without being captured again; skip leaves everything as it
    is (after a non-finite loss). One pass: w, g, m, v read once, w, m, v
    written once; memory-bound, as it should be. optim_all steps every
    segment of the parameter block (weights and biases of every layer) in
    one launch: 2L launches on a small network's dependent chain become
    one.
*/
#include "ms_cuda_internal.h"

//  --------------------------------------------------------------------------
//  Parameter i updated in place from g[i] by the rule of s.

static __device__ __forceinline__ void
s_update(const ms_optim_step_t &s, int64_t i, float *w, const float *g,
         float *m, float *v)
{
    const float lr = s.lr, l2 = s.l2, mu = s.momentum;
    switch (s.kind) {
    case MS_OPTIM_SGD:
        w[i] = w[i] - lr * (g[i] + l2 * w[i]);
        break;
    case MS_OPTIM_MOMENTUM: {
        float gi = g[i] + l2 * w[i];
        m[i] = mu * m[i] + gi;
        w[i] = w[i] - lr * m[i];
        break;
    }
    case MS_OPTIM_NESTEROV: {
        float gi = g[i] + l2 * w[i];
        m[i] = mu * m[i] + gi;
        w[i] = w[i] - lr * (gi + mu * m[i]);
        break;
    }
    case MS_OPTIM_ADAM:
    case MS_OPTIM_ADAMW: {
        const float c1 = 1.0f - s.beta1, c2 = 1.0f - s.beta2;
        float wi = w[i] - s.decay * w[i];
        float gi = g[i] + l2 * w[i];
        float mi = s.beta1 * m[i] + c1 * gi;
        float vi = s.beta2 * v[i] + c2 * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) * s.rsqrt_c2 + s.eps;
        w[i] = wi - s.lr_c1 * mi / denom;
        break;
    }
    }
}

//  --------------------------------------------------------------------------
//  w, m, v updated in place from g.

static __global__ void
optim_step_kernel(const ms_optim_step_t *step, int64_t n, float *w,
                  const float *g, float *m, float *v)
{
    const ms_optim_step_t s = *step;
    if (s.skip)
        return;
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
         i += (int64_t) gridDim.x * blockDim.x)
        s_update(s, i, w, g, m, v);
}

//  --------------------------------------------------------------------------
//  One optimizer step.

extern "C" int
ms_cuda_optim_step(ms_backend_t *b, const ms_optim_step_t *step, int64_t n,
                   float *w, const float *g, float *m, float *v)
{
    if (n <= 0)
        return MS_OK;
    optim_step_kernel<<<ms_cuda_blocks(n), MS_CUDA_THREADS, 0,
                        b->cuda->stream>>>(step, n, w, g, m, v);
    MS_CUDA_LAUNCHED(b, "optim_step_kernel");
    ms_cuda_prof_mark(b, "optim_step", n, 0, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Every segment of a parameter block in one launch: a thread finds the
//  segment of its first element by bisection over bounds, then walks
//  forward with its grid-stride index (which only grows); even segments
//  (weights) take w_step, odd ones (biases) b_step. Each element gets the
//  update optim_step_kernel gives it (the same function of the same
//  scalars).

static __global__ void
optim_all_kernel(const ms_optim_step_t *w_step, const ms_optim_step_t *b_step,
                 int32_t n_segs, const int64_t *bounds, int64_t n, float *w,
                 const float *g, float *m, float *v)
{
    const ms_optim_step_t ws = *w_step, bs = *b_step;
    if (ws.skip && bs.skip)
        return;
    int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int32_t lo = 0, hi = n_segs - 1; // last s with bounds[s] <= i
    while (lo < hi) {
        int32_t mid = (lo + hi + 1) / 2;
        if (bounds[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    int32_t seg = lo;
    int64_t end = bounds[seg + 1];
    for (; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        while (i >= end) {
            seg++;
            end = bounds[seg + 1];
        }
        const ms_optim_step_t &s = seg % 2 ? bs : ws;
        if (s.skip)
            continue;
        s_update(s, i, w, g, m, v);
    }
}

//  --------------------------------------------------------------------------
//  One optimizer step on every segment.

extern "C" int
ms_cuda_optim_all(ms_backend_t *b, const ms_optim_step_t *w_step,
                  const ms_optim_step_t *b_step, int32_t n_segs,
                  const int64_t *bounds, int64_t n, float *w, const float *g,
                  float *m, float *v)
{
    if (n_segs <= 0)
        return MS_OK;
    if (n <= 0)
        return MS_OK;
    optim_all_kernel<<<ms_cuda_blocks(n), MS_CUDA_THREADS, 0,
                       b->cuda->stream>>>(w_step, b_step, n_segs, bounds, n, w,
                                          g, m, v);
    MS_CUDA_LAUNCHED(b, "optim_all_kernel");
    ms_cuda_prof_mark(b, "optim_all", n, n_segs, 0);
    return MS_OK;
}
