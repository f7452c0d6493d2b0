/*  =========================================================================
    ms_sobol - a digitally shifted Sobol sequence in up to 21 dimensions

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A 32-bit Sobol sequence (I. M. Sobol, 1967) with Joe and Kuo's
    direction numbers (new-joe-kuo-6.21201: "Constructing Sobol sequences
    with better two-dimensional projections", SIAM J. Sci. Comput. 30,
    2008), in Gray-code order from index 0, each dimension's integers
    XORed with a 32-bit digital shift drawn from an ms_rng. A digital
    shift keeps the (t, m, s)-net structure (2^m points fall one per
    dyadic interval of length 2^-m in each dimension, and dimensions 1 and
    2 one per cell of a 2^(m/2) grid), is cheap, and makes the seed change
    the points; Owen scrambling would lower integration error but is not
    needed to cover a search space. Used by the sweep expander (method:
    sobol) and available to any search that wants low-discrepancy points.

    Thread rule: an ms_sobol_t is a plain value owned by its caller.
*/
#ifndef MS_SOBOL_H
#define MS_SOBOL_H

#include "ms_rng.h"

#include <stddef.h>
#include <stdint.h>

#define MS_SOBOL_MAX_DIMS 21 // Joe & Kuo dimensions built in

typedef struct {
    size_t dims;                       // dimensions in use
    uint32_t v[MS_SOBOL_MAX_DIMS][32]; // direction numbers
    uint32_t x[MS_SOBOL_MAX_DIMS];     // current point, unshifted
    uint32_t shift[MS_SOBOL_MAX_DIMS]; // digital shift per dimension
    uint64_t index;                    // index of the current point
} ms_sobol_t;

//  Set up DIMS dimensions (1 .. MS_SOBOL_MAX_DIMS; the caller checks) at
//  point 0, each shifted by the high 32 bits of one ms_rng_next draw from
//  RNG, in dimension order.
void ms_sobol_init(ms_sobol_t *sobol, size_t dims, ms_rng_t *rng);

//  Coordinate D (< dims) of the current point, in [0, 1) (a multiple of
//  2^-32).
double ms_sobol_coord(const ms_sobol_t *sobol, size_t d);

//  Advance to the next point.
void ms_sobol_next(ms_sobol_t *sobol);

#endif
