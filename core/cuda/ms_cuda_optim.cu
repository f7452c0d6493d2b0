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
    written once; memory-bound, as it should be.
*/
#include "ms_cuda_internal.h"

//  --------------------------------------------------------------------------
//  w, m, v updated in place from g.

static __global__ void
optim_step_kernel(const ms_optim_step_t *step, int64_t n, float *w,
                  const float *g, float *m, float *v)
{
    const ms_optim_step_t s = *step;
    if (s.skip)
        return;
    const float lr = s.lr, l2 = s.l2, mu = s.momentum;
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
         i += (int64_t) gridDim.x * blockDim.x) {
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
    return MS_OK;
}
