/*  =========================================================================
    ms_rng - deterministic pseudo-random numbers for init, splits, shuffles
    and dropout

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number
    generators", 2018), seeded through splitmix64 so that any 64-bit seed
    gives a well-mixed state. The state is a plain value (32 bytes): copy it
    into a checkpoint and restore it to resume a run bit-exactly. Every
    draw is a pure function of the state, so runs are reproducible on any
    machine; the normal draws use only IEEE-exact operations plus libm's
    log/sqrt/cos, which glibc computes identically on x86-64.
*/
#ifndef MS_RNG_H
#define MS_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4]; // xoshiro256** state; never all zero
} ms_rng_t;

//  Seed a generator. Distinct (seed, stream) pairs give independent
//  sequences: use one stream per purpose (init, split, shuffle, dropout).
void ms_rng_seed(ms_rng_t *rng, uint64_t seed, uint64_t stream);

//  Next 64 random bits.
uint64_t ms_rng_next(ms_rng_t *rng);

//  Uniform double in [0, 1), 53 random bits.
double ms_rng_uniform(ms_rng_t *rng);

//  Uniform integer in [0, n), n >= 1, without modulo bias (Lemire).
uint64_t ms_rng_below(ms_rng_t *rng, uint64_t n);

//  Standard normal N(0, 1) by the Box-Muller transform (one draw per call;
//  the spare is discarded so the state alone defines the sequence).
double ms_rng_normal(ms_rng_t *rng);

//  Fisher-Yates shuffle of idx[0 .. n).
void ms_rng_shuffle_i64(ms_rng_t *rng, int64_t *idx, int64_t n);

#endif
