/*  =========================================================================
    ms_rng - deterministic pseudo-random numbers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_rng.h"

#include <math.h>

//  --------------------------------------------------------------------------
//  splitmix64 step: expands a seed into well-mixed words.

static uint64_t
s_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t
s_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

//  --------------------------------------------------------------------------
//  Seed from (seed, stream).

void
ms_rng_seed(ms_rng_t *rng, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ s_splitmix64(&stream);
    for (int i = 0; i < 4; i++)
        rng->s[i] = s_splitmix64(&x);
    if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]))
        rng->s[0] = 1;
}

//  --------------------------------------------------------------------------
//  xoshiro256** next.

uint64_t
ms_rng_next(ms_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = s_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s_rotl(s[3], 45);
    return result;
}

//  --------------------------------------------------------------------------
//  Uniform in [0, 1).

double
ms_rng_uniform(ms_rng_t *rng)
{
    return (double) (ms_rng_next(rng) >> 11) * 0x1.0p-53;
}

//  --------------------------------------------------------------------------
//  Uniform integer below n (Lemire's nearly divisionless method).

uint64_t
ms_rng_below(ms_rng_t *rng, uint64_t n)
{
    unsigned __int128 m = (unsigned __int128) ms_rng_next(rng) * n;
    uint64_t low = (uint64_t) m;
    if (low < n) {
        uint64_t threshold = -n % n;
        while (low < threshold) {
            m = (unsigned __int128) ms_rng_next(rng) * n;
            low = (uint64_t) m;
        }
    }
    return (uint64_t) (m >> 64);
}

//  --------------------------------------------------------------------------
//  Standard normal by Box-Muller.

double
ms_rng_normal(ms_rng_t *rng)
{
    double u1 = 1.0 - ms_rng_uniform(rng); // (0, 1]
    double u2 = ms_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

//  --------------------------------------------------------------------------
//  Fisher-Yates shuffle.

void
ms_rng_shuffle_i64(ms_rng_t *rng, int64_t *idx, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t) ms_rng_below(rng, (uint64_t) i + 1);
        int64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}
