/*  =========================================================================
    ms_math - float32 exp, expm1, tanh, sigmoid and erf that vectorise
    and give the same bits on every IEEE machine

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The CPU backend's activation loops called glibc's expf, expm1f, tanhf
    and erff one element at a time: a call per element stops GCC from
    vectorising the loop, elu and selu branched around the call on the
    sign of z (a misprediction on about half the elements), and libm's
    results may change between glibc versions, which weakens the rule
    "same config + fingerprint -> bit-identical weights" (DESIGN.md,
    determinism). These functions fix all three.

    How. Every function is a static inline body of straight-line code:
    IEEE + - * / on float, integer bit operations through memcpy, and
    selects between two values both computed; no calls, no branches,
    no tables. Inlined into a loop, GCC vectorises it (check
    with -fopt-info-vec-optimized); scalar or vector, each element goes
    through the same correctly rounded operations in the same order, so
    the result does not depend on the vector width, the compiler's
    choice to vectorise, or the libm. Two rules keep it so: the build
    uses -ffp-contract=off (no fused multiply-add), and no fast-math.
    Selects, clamps included, go through ms_math_select (bit masks), not
    "?:": GCC threads a ternary into branches, moves float arithmetic
    under them, and then will not if-convert it (with -ftrapping-math,
    the default), so the loop stays scalar. A clamp selects hi when
    x > hi and x otherwise, so a NaN passes through it (the comparison
    is false) and comes out as NaN.

      exp    Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, with n
             from the 1.5 * 2^23 rounding trick (its integer read from the
             bits, no float-to-int conversion); e^r - 1 by Cephes' degree-7
             polynomial (r + r^2 P(r)); 2^n applied as two exact power-of-
             two factors so that results that underflow to subnormals are
             rounded once and 2^128 overflows to inf. x is clamped to
             [-104, 89] first: below, e^x rounds to 0; above, to inf.
      expm1  the same reduction; for n <= 24, 2^n (e^r - 1) + (2^n - 1),
             both terms exact but for the final add, so small |x| keep
             full relative accuracy; for larger n it is exp. x clamped
             below at -20 (expm1 = -1 in float there); -0 gives -0.
      tanh   odd: tanh |x| = m / (m + 2) with m = expm1(2 |x|), |x|
             clamped at 10 (tanh = 1 in float beyond 9.01), sign copied
             back from x, so tanh(-0) = -0.
      sigmoid  e = exp(-|x|); 1 / (1 + e) for x >= 0, e / (1 + e) for
             x < 0, so that deep negative x keep relative accuracy down
             to the subnormals instead of dividing by an overflowed exp.
      erf    odd: for |x| < 0.8, the Maclaurin series through x^19 (terms
             alternate and shrink, truncation < 3e-9); above, 1 - erfc
             with erfc from Numerical Recipes' Chebyshev fit, t exp(-x^2
             + poly(t)), t = 1 / (1 + x / 2), relative error < 1.2e-7,
             which is under an ulp of erf there since erfc <= 0.26;
             |x| clamped at 4 (erf = 1 in float beyond 3.92).

    Maximum errors measured against double-precision glibc over every
    1000th float bit pattern (all of float's range, both signs) plus
    special values, in ulps of the exact result, subnormal results
    included (ms_math_test asserts the bounds in brackets):
      exp 0.95 [1], expm1 1.46 [1.5], tanh 2.21 [2.5],
      sigmoid 2.19 [2.5], erf 2.45 [3].
    glibc's own expf, tanhf and erff are within 1 to 2 ulps; moving to
    these changed trained weights in their last bits, as any change of
    the engine's arithmetic does (timings: docs/BENCHMARKS.md
    "Activations").

    Bit-identity rests on the IEEE basic operations only; the few
    integer steps are exact. A compiler that kept float intermediates in
    wider registers (x87, FLT_EVAL_METHOD != 0) would break it; x86-64
    SSE and AArch64 do not.

    Not done: a table-driven exp (faster, exactly rounded more often, but
    gathers vectorise poorly without AVX2 and the build targets baseline
    x86-64), and FMA (not available on every x86-64 and a different
    rounding). The double-precision reference functions used by the
    gradient checks stay in ms_activation.c on libm.
*/
#ifndef MS_MATH_H
#define MS_MATH_H

#include <stdint.h>
#include <string.h>

//  The CUDA backend's kernels call the same functions (core/cuda), so that
//  both backends' element-wise results are the same bits (nvcc builds them
//  with --fmad=false, the -ffp-contract=off of the device).
#if defined(__CUDACC__)
#define MS_MATH_INLINE static inline __host__ __device__
#define MS_MATH_RESTRICT __restrict__
#else
#define MS_MATH_INLINE static inline
#define MS_MATH_RESTRICT restrict
#endif

//  --------------------------------------------------------------------------
//  Bits of a float and back (memcpy compiles to a register move).

MS_MATH_INLINE uint32_t
ms_math_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

MS_MATH_INLINE float
ms_math_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

//  cond ? a : b with both already computed, through bit masks: written as
//  a ternary, GCC may move the arithmetic of one side under a branch and
//  then, with -ftrapping-math (the default), not if-convert it, and the
//  loop stays scalar.
MS_MATH_INLINE float
ms_math_select(int cond, float a, float b)
{
    uint32_t mask = 0u - (uint32_t) (cond != 0);
    return ms_math_from_bits((ms_math_bits(a) & mask) |
                             (ms_math_bits(b) & ~mask));
}

//  2^k as a float for k in [-126, 127].
MS_MATH_INLINE float
ms_math_pow2(int32_t k)
{
    return ms_math_from_bits(((uint32_t) k + 127u) << 23);
}

//  Cody-Waite reduction: x = n ln2 + r with |r| <= ln2/2 (x must already be
//  clamped to [-160, 160]); returns r, n through *n.
MS_MATH_INLINE float
ms_math_reduce(float x, int32_t *n)
{
    const float shift = 12582912.0f;          // 1.5 * 2^23
    const float log2e = 1.44269504088896341f; // 1 / ln 2
    const float ln2_hi = 0.693359375f;        // 355 / 512: n ln2_hi exact
    const float ln2_lo = -2.12194440e-4f;     // ln 2 - ln2_hi
    float t = x * log2e + shift;              // round(x / ln2) + shift
    float nf = t - shift;
    *n = (int32_t) (ms_math_bits(t) - ms_math_bits(shift));
    return (x - nf * ln2_hi) - nf * ln2_lo;
}

//  e^r - 1 for |r| <= ln2/2 (Cephes expf polynomial).
MS_MATH_INLINE float
ms_math_expm1_reduced(float r)
{
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * (r * r) + r;
}

//  e^x. Max error 1 ulp (measured 0.95 ulp); 0 below -103.97, inf above
//  88.72, NaN for NaN.
MS_MATH_INLINE float
ms_math_exp(float x)
{
    x = ms_math_select(x < -104.0f, -104.0f, x);
    x = ms_math_select(x > 89.0f, 89.0f, x);
    int32_t n;
    float r = ms_math_reduce(x, &n);
    float p = 1.0f + ms_math_expm1_reduced(r);
    int32_t n1 = n >> 1;
    return p * ms_math_pow2(n1) * ms_math_pow2(n - n1);
}

//  e^x - 1. Max error 1.5 ulp (measured 1.46 ulp); -1 below -17.3, inf
//  above 88.72, -0 for -0, NaN for NaN.
MS_MATH_INLINE float
ms_math_expm1(float x)
{
    float xc = ms_math_select(x < -20.0f, -20.0f, x);
    xc = ms_math_select(xc > 89.0f, 89.0f, xc);
    int32_t n;
    float r = ms_math_reduce(xc, &n);
    float m = ms_math_expm1_reduced(r);
    //  n <= 24: 2^n m and 2^n - 1 are exact, one rounding in the sum.
    float u = ms_math_pow2(n > 24 ? 24 : n);
    float small = u * m + (u - 1.0f);
    //  n > 24: the -1 is below half an ulp; this is exp(x).
    int32_t n1 = n >> 1;
    float big = (1.0f + m) * ms_math_pow2(n1) * ms_math_pow2(n - n1);
    float y = ms_math_select(n > 24, big, small);
    return ms_math_select(x == 0.0f, x, y);
}

//  tanh x. Max error 2.5 ulp (measured 2.21 ulp); +-1 beyond +-9.01, sign of
//  zero kept, NaN for NaN.
MS_MATH_INLINE float
ms_math_tanh(float x)
{
    uint32_t sign = ms_math_bits(x) & 0x80000000u;
    float a = ms_math_from_bits(ms_math_bits(x) & 0x7fffffffu);
    a = ms_math_select(a > 10.0f, 10.0f, a);
    float m = ms_math_expm1(a + a);
    float t = m / (m + 2.0f);
    return ms_math_from_bits(ms_math_bits(t) | sign);
}

//  The logistic function 1 / (1 + e^-x). Max error 2.5 ulp (measured
//  2.19 ulp), subnormal results included; 0 for -inf, 1 for +inf and
//  for x > 16.6, NaN for NaN.
MS_MATH_INLINE float
ms_math_sigmoid(float x)
{
    float a = ms_math_from_bits(ms_math_bits(x) & 0x7fffffffu);
    float e = ms_math_exp(-a);
    float d = 1.0f + e;
    float pos = 1.0f / d;
    float neg = e / d;
    return ms_math_select(x < 0.0f, neg, pos);
}

//  erf x. Max error 3 ulp (measured 2.45 ulp); +-1 beyond +-3.92, sign of
//  zero kept, NaN for NaN.
MS_MATH_INLINE float
ms_math_erf(float x)
{
    uint32_t sign = ms_math_bits(x) & 0x80000000u;
    float a = ms_math_from_bits(ms_math_bits(x) & 0x7fffffffu);
    a = ms_math_select(a > 4.0f, 4.0f, a);
    //  |x| < 0.8: 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)), k <= 9.
    float z = a * a;
    float s = -1.636584469e-07f;
    s = s * z + 1.646211437e-06f;
    s = s * z + -1.492565036e-05f;
    s = s * z + 1.205533298e-04f;
    s = s * z + -8.548327023e-04f;
    s = s * z + 5.223977625e-03f;
    s = s * z + -2.686617065e-02f;
    s = s * z + 1.128379167e-01f;
    s = s * z + -3.761263890e-01f;
    float near = s * z * a + 1.128379167e+00f * a;
    //  |x| >= 0.8: 1 - erfc, erfc = t exp(-x^2 + q(t)), t = 1 / (1 + x/2)
    //  (Numerical Recipes erfcc, relative error < 1.2e-7).
    float t = 1.0f / (1.0f + 0.5f * a);
    float q = 0.17087277f;
    q = q * t + -0.82215223f;
    q = q * t + 1.48851587f;
    q = q * t + -1.13520398f;
    q = q * t + 0.27886807f;
    q = q * t + -0.18628806f;
    q = q * t + 0.09678418f;
    q = q * t + 0.37409196f;
    q = q * t + 1.00002368f;
    q = q * t + -1.26551223f;
    float far = 1.0f - t * ms_math_exp(q - z);
    float y = ms_math_select(a < 0.8f, near, far);
    return ms_math_from_bits(ms_math_bits(y) | sign);
}

//  --------------------------------------------------------------------------
//  The same over arrays, y[i] = f(x[i]) for i < n, in ms_math.c (vectorised
//  loops, bit-identical to one call per element). x and y must not
//  overlap. Any thread.
void ms_math_exp_array(int64_t n, const float *MS_MATH_RESTRICT x,
                       float *MS_MATH_RESTRICT y);
void ms_math_expm1_array(int64_t n, const float *MS_MATH_RESTRICT x,
                         float *MS_MATH_RESTRICT y);
void ms_math_tanh_array(int64_t n, const float *MS_MATH_RESTRICT x,
                        float *MS_MATH_RESTRICT y);
void ms_math_sigmoid_array(int64_t n, const float *MS_MATH_RESTRICT x,
                           float *MS_MATH_RESTRICT y);
void ms_math_erf_array(int64_t n, const float *MS_MATH_RESTRICT x,
                       float *MS_MATH_RESTRICT y);

#endif
