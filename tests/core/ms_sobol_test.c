/*  =========================================================================
    ms_sobol_test - the Sobol sequence's net property, its shift and its
    first points

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_sobol.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

//  A coordinate without its shift (the raw sequence).
static double
s_raw(const ms_sobol_t *sobol, size_t d)
{
    return (double) sobol->x[d] / 4294967296.0;
}

//  --------------------------------------------------------------------------
//  The unshifted first points are the textbook ones: dimension 1 is van
//  der Corput in Gray-code order (0, 1/2, 3/4, 1/4, 3/8, 7/8, 5/8, 1/8)
//  and dimension 2 (x^1 + 1, m = 1) gives 0, 1/2, 1/4, 3/4, 3/8, 5/8, 1/8,
//  7/8.

static void
test_first_points(void **state)
{
    (void) state;
    ms_rng_t rng;
    ms_rng_seed(&rng, 1, 1);
    ms_sobol_t sobol;
    ms_sobol_init(&sobol, 2, &rng);
    const double d1[] = {0, 0.5, 0.75, 0.25, 0.375, 0.875, 0.625, 0.125};
    const double d2[] = {0, 0.5, 0.25, 0.75, 0.375, 0.875, 0.125, 0.625};
    for (int i = 0; i < 8; i++) {
        assert_true(s_raw(&sobol, 0) == d1[i]);
        assert_true(s_raw(&sobol, 1) == d2[i]);
        ms_sobol_next(&sobol);
    }
    //  The shifted coordinate is the raw one XOR the shift.
    ms_sobol_init(&sobol, 2, &rng);
    ms_sobol_next(&sobol);
    uint32_t raw = sobol.x[1];
    double c = ms_sobol_coord(&sobol, 1);
    assert_true(c == (double) (raw ^ sobol.shift[1]) / 4294967296.0);
    assert_true(c >= 0 && c < 1);
}

//  --------------------------------------------------------------------------
//  The (t, m, s)-net property, shifted: the first 2^m points fall one per
//  interval of length 2^-m in every dimension (m = 4 .. 10); for
//  dimensions 1 and 2, 16 points one per cell of the 4 x 4 grid and 256
//  one per cell of the 16 x 16 grid (t = 0 there).

static void
test_net_property(void **state)
{
    (void) state;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        ms_rng_t rng;
        ms_rng_seed(&rng, seed, 9);
        ms_sobol_t sobol;
        ms_sobol_init(&sobol, MS_SOBOL_MAX_DIMS, &rng);
        static bool cell[MS_SOBOL_MAX_DIMS][1024];
        static bool grid[256];
        memset(cell, 0, sizeof cell);
        memset(grid, 0, sizeof grid);
        for (int i = 0; i < 1024; i++) {
            for (size_t d = 0; d < MS_SOBOL_MAX_DIMS; d++) {
                double u = ms_sobol_coord(&sobol, d);
                assert_true(u >= 0 && u < 1);
                int k = (int) (u * 1024);
                assert_false(cell[d][k]); // one per 1/1024 in 1024 points
                cell[d][k] = true;
            }
            if (i < 256) {
                int g = (int) (ms_sobol_coord(&sobol, 0) * 16) * 16 +
                        (int) (ms_sobol_coord(&sobol, 1) * 16);
                assert_false(grid[g]);
                grid[g] = true;
            }
            ms_sobol_next(&sobol);
        }
    }
}

//  --------------------------------------------------------------------------
//  The same seed gives the same points; another seed other points.

static void
test_seeded(void **state)
{
    (void) state;
    ms_sobol_t a, b, c;
    ms_rng_t ra, rb, rc;
    ms_rng_seed(&ra, 7, 3);
    ms_rng_seed(&rb, 7, 3);
    ms_rng_seed(&rc, 8, 3);
    ms_sobol_init(&a, 5, &ra);
    ms_sobol_init(&b, 5, &rb);
    ms_sobol_init(&c, 5, &rc);
    int differ = 0;
    for (int i = 0; i < 64; i++) {
        for (size_t d = 0; d < 5; d++) {
            assert_true(ms_sobol_coord(&a, d) == ms_sobol_coord(&b, d));
            differ += ms_sobol_coord(&a, d) != ms_sobol_coord(&c, d);
        }
        ms_sobol_next(&a);
        ms_sobol_next(&b);
        ms_sobol_next(&c);
    }
    assert_true(differ > 300);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_points),
        cmocka_unit_test(test_net_property),
        cmocka_unit_test(test_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
