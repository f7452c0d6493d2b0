/*  =========================================================================
    ms_cpu_optim - one optimizer step over a parameter segment

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The rules are in ms_optim.h. Each element's update is a fixed sequence
    of float32 operations (no fused multiply-add: -ffp-contract=off), so
    the vectorised loop gives the same bits as a scalar one. The Adam loop
    is written with SSE intrinsics on x86-64: with errno semantics (the
    build does not pass -fno-math-errno) GCC will not vectorise sqrtf, and
    the scalar loop took a fifth of a small network's epoch. The
    intrinsics perform exactly the scalar loop's operations in its order
    (IEEE add, mul, div, sqrt are correctly rounded), so both give the
    same bits; other CPUs use the scalar loop.
*/
#include "ms_cpu.h"

#include <math.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

//  --------------------------------------------------------------------------
//  Adam / AdamW, 8 lanes with AVX (chosen at run time); same operations as
//  the scalar loop. Returns the index where the scalar tail must start.

#if defined(__x86_64__)
__attribute__((target("avx"))) static int64_t
s_adam_avx(const ms_optim_step_t *s, int64_t n, float *restrict w,
           const float *restrict g, float *restrict m, float *restrict v)
{
    const __m256 b1 = _mm256_set1_ps(s->beta1), b2 = _mm256_set1_ps(s->beta2);
    const __m256 c1 = _mm256_set1_ps(1.0f - s->beta1);
    const __m256 c2 = _mm256_set1_ps(1.0f - s->beta2);
    const __m256 lr_c1 = _mm256_set1_ps(s->lr_c1);
    const __m256 rsqrt_c2 = _mm256_set1_ps(s->rsqrt_c2);
    const __m256 eps = _mm256_set1_ps(s->eps);
    const __m256 l2 = _mm256_set1_ps(s->l2);
    const __m256 decay = _mm256_set1_ps(s->decay);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 w8 = _mm256_loadu_ps(w + i);
        __m256 wi = _mm256_sub_ps(w8, _mm256_mul_ps(decay, w8));
        __m256 gi =
            _mm256_add_ps(_mm256_loadu_ps(g + i), _mm256_mul_ps(l2, w8));
        __m256 m8 = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)),
                                  _mm256_mul_ps(c1, gi));
        __m256 v8 = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                  _mm256_mul_ps(c2, _mm256_mul_ps(gi, gi)));
        _mm256_storeu_ps(m + i, m8);
        _mm256_storeu_ps(v + i, v8);
        __m256 denom =
            _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(v8), rsqrt_c2), eps);
        __m256 step = _mm256_div_ps(_mm256_mul_ps(lr_c1, m8), denom);
        _mm256_storeu_ps(w + i, _mm256_sub_ps(wi, step));
    }
    return i;
}
#endif

//  --------------------------------------------------------------------------
//  Adam / AdamW, 4 lanes with SSE2 (every x86-64); returns the index where
//  the scalar tail must start (0 on other CPUs).

static int64_t
s_adam_sse(const ms_optim_step_t *s, int64_t n, float *restrict w,
           const float *restrict g, float *restrict m, float *restrict v)
{
#if defined(__SSE2__)
    const __m128 b1 = _mm_set1_ps(s->beta1), b2 = _mm_set1_ps(s->beta2);
    const __m128 c1 = _mm_set1_ps(1.0f - s->beta1);
    const __m128 c2 = _mm_set1_ps(1.0f - s->beta2);
    const __m128 lr_c1 = _mm_set1_ps(s->lr_c1);
    const __m128 rsqrt_c2 = _mm_set1_ps(s->rsqrt_c2);
    const __m128 eps = _mm_set1_ps(s->eps);
    const __m128 l2 = _mm_set1_ps(s->l2), decay = _mm_set1_ps(s->decay);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m128 w4 = _mm_loadu_ps(w + i);
        __m128 wi = _mm_sub_ps(w4, _mm_mul_ps(decay, w4));
        __m128 gi = _mm_add_ps(_mm_loadu_ps(g + i), _mm_mul_ps(l2, w4));
        __m128 m4 =
            _mm_add_ps(_mm_mul_ps(b1, _mm_loadu_ps(m + i)), _mm_mul_ps(c1, gi));
        __m128 v4 = _mm_add_ps(_mm_mul_ps(b2, _mm_loadu_ps(v + i)),
                               _mm_mul_ps(c2, _mm_mul_ps(gi, gi)));
        _mm_storeu_ps(m + i, m4);
        _mm_storeu_ps(v + i, v4);
        __m128 denom = _mm_add_ps(_mm_mul_ps(_mm_sqrt_ps(v4), rsqrt_c2), eps);
        __m128 step = _mm_div_ps(_mm_mul_ps(lr_c1, m4), denom);
        _mm_storeu_ps(w + i, _mm_sub_ps(wi, step));
    }
    return i;
#else
    (void) s;
    (void) n;
    (void) w;
    (void) g;
    (void) m;
    (void) v;
    return 0;
#endif
}

//  --------------------------------------------------------------------------
//  w, m, v updated in place from g.

int
ms_cpu_optim_step(ms_backend_t *b, const ms_optim_step_t *s, int64_t n,
                  float *restrict w, const float *restrict g, float *restrict m,
                  float *restrict v)
{
    (void) b;
    if (s->skip)
        return MS_OK;
    const float lr = s->lr, l2 = s->l2, mu = s->momentum;
    switch (s->kind) {
    case MS_OPTIM_SGD:
        for (int64_t i = 0; i < n; i++)
            w[i] = w[i] - lr * (g[i] + l2 * w[i]);
        break;
    case MS_OPTIM_MOMENTUM:
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i] + l2 * w[i];
            m[i] = mu * m[i] + gi;
            w[i] = w[i] - lr * m[i];
        }
        break;
    case MS_OPTIM_NESTEROV:
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i] + l2 * w[i];
            m[i] = mu * m[i] + gi;
            w[i] = w[i] - lr * (gi + mu * m[i]);
        }
        break;
    case MS_OPTIM_ADAM:
    case MS_OPTIM_ADAMW: {
        const float b1 = s->beta1, b2 = s->beta2;
        const float c1 = 1.0f - b1, c2 = 1.0f - b2;
        const float lr_c1 = s->lr_c1, rsqrt_c2 = s->rsqrt_c2;
        const float eps = s->eps, decay = s->decay;
        int64_t i0;
#if defined(__x86_64__)
        if (__builtin_cpu_supports("avx"))
            i0 = s_adam_avx(s, n, w, g, m, v);
        else
#endif
            i0 = s_adam_sse(s, n, w, g, m, v);
        for (int64_t i = i0; i < n; i++) {
            float wi = w[i] - decay * w[i];
            float gi = g[i] + l2 * w[i];
            m[i] = b1 * m[i] + c1 * gi;
            v[i] = b2 * v[i] + c2 * (gi * gi);
            float denom = sqrtf(v[i]) * rsqrt_c2 + eps;
            w[i] = wi - lr_c1 * m[i] / denom;
        }
        break;
    }
    }
    return MS_OK;
}
