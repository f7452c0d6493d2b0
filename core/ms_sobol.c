/*  =========================================================================
    ms_sobol - a digitally shifted Sobol sequence

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_sobol.h. Direction numbers: dimension 1 is van der Corput; the
    others follow from the primitive polynomials and initial direction
    numbers of new-joe-kuo-6.21201 by the recurrence of Bratley and Fox
    (ACM TOMS 14, 1988): v_k = v_{k-s} ^ (v_{k-s} >> s) ^ the a-selected
    v_{k-j}. Points in Gray-code order (Antonov and Saleev), so each step
    XORs one direction number per dimension.
*/
#include "ms_sobol.h"

#include <string.h>

//  Dimensions 2..21 of new-joe-kuo-6.21201: degree s, coefficient a,
//  initial direction numbers m_1..m_s. Dimension 1 is van der Corput.
static const struct {
    int s;         // degree of the primitive polynomial
    unsigned a;    // its inner coefficients as bits
    unsigned m[7]; // initial direction numbers (odd, m_k < 2^k)
} s_joe_kuo[MS_SOBOL_MAX_DIMS - 1] = {
    {1, 0, {1}},
    {2, 1, {1, 3}},
    {3, 1, {1, 3, 1}},
    {3, 2, {1, 1, 1}},
    {4, 1, {1, 1, 3, 3}},
    {4, 4, {1, 3, 5, 13}},
    {5, 2, {1, 1, 5, 5, 17}},
    {5, 4, {1, 1, 5, 5, 5}},
    {5, 7, {1, 1, 7, 11, 19}},
    {5, 11, {1, 1, 5, 1, 1}},
    {5, 13, {1, 1, 1, 3, 11}},
    {5, 14, {1, 3, 5, 5, 31}},
    {6, 1, {1, 3, 3, 9, 7, 49}},
    {6, 13, {1, 1, 1, 15, 21, 21}},
    {6, 16, {1, 3, 1, 13, 27, 49}},
    {6, 19, {1, 1, 1, 15, 7, 5}},
    {6, 22, {1, 3, 1, 15, 13, 25}},
    {6, 25, {1, 1, 5, 5, 19, 61}},
    {7, 1, {1, 3, 7, 11, 23, 15, 103}},
    {7, 4, {1, 3, 7, 13, 13, 15, 69}},
};

//  --------------------------------------------------------------------------
//  Set up dims dimensions, shifted by draws from rng.

void
ms_sobol_init(ms_sobol_t *sobol, size_t dims, ms_rng_t *rng)
{
    memset(sobol, 0, sizeof *sobol);
    sobol->dims = dims;
    for (size_t d = 0; d < dims; d++) {
        uint32_t *v = sobol->v[d];
        if (d == 0) {
            for (int k = 0; k < 32; k++)
                v[k] = (uint32_t) 1 << (31 - k);
        } else {
            int s = s_joe_kuo[d - 1].s;
            unsigned a = s_joe_kuo[d - 1].a;
            for (int k = 0; k < s; k++)
                v[k] = s_joe_kuo[d - 1].m[k] << (31 - k);
            for (int k = s; k < 32; k++) {
                v[k] = v[k - s] ^ (v[k - s] >> s);
                for (int j = 1; j < s; j++)
                    if ((a >> (s - 1 - j)) & 1)
                        v[k] ^= v[k - j];
            }
        }
        sobol->shift[d] = (uint32_t) (ms_rng_next(rng) >> 32);
    }
}

//  --------------------------------------------------------------------------
//  Coordinate d of the current point, in [0, 1).

double
ms_sobol_coord(const ms_sobol_t *sobol, size_t d)
{
    return (double) (sobol->x[d] ^ sobol->shift[d]) / 4294967296.0;
}

//  --------------------------------------------------------------------------
//  Advance to the next point (Gray-code order).

void
ms_sobol_next(ms_sobol_t *sobol)
{
    sobol->index++;
    int c = __builtin_ctzll(sobol->index);
    for (size_t d = 0; d < sobol->dims; d++)
        sobol->x[d] ^= sobol->v[d][c < 32 ? c : 31];
}
