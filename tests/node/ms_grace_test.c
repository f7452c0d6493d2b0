/*  =========================================================================
    ms_grace_test - the startup grace with a fake clock: none alone; the
    grace from the join; held past each pull of the first catch-up, up to
    the cap; caught up for good once it ended with no pull running

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_grace.h"

#define T0 1000000 // the fake clock at the join (monotonic ms)

//  --------------------------------------------------------------------------
//  Alone (never started): nothing held, no deadline.

static void
test_alone(void **state)
{
    (void) state;
    ms_grace_t *g = ms_grace_new();
    assert_non_null(g);
    assert_false(ms_grace_holding(g, 0));
    assert_false(ms_grace_holding(g, T0));
    assert_int_equal(ms_grace_next_deadline(g, T0), INT64_MAX);
    assert_false(ms_grace_caught_up(g));
    ms_grace_destroy(&g);
    assert_null(g);
    ms_grace_destroy(&g); // NULL-safe
}

//  --------------------------------------------------------------------------
//  The grace from the join, no pulls: holds until T0 + grace, the
//  deadline is its end; caught up at the first turn after it.

static void
test_grace_without_pulls(void **state)
{
    (void) state;
    ms_grace_t *g = ms_grace_new();
    ms_grace_start(g, T0, 3000);
    assert_true(ms_grace_holding(g, T0));
    assert_true(ms_grace_holding(g, T0 + 2999));
    assert_false(ms_grace_holding(g, T0 + 3000));
    assert_int_equal(ms_grace_next_deadline(g, T0 + 10), T0 + 3000);
    assert_int_equal(ms_grace_next_deadline(g, T0 + 3000), INT64_MAX);
    ms_grace_hold(g, T0 + 1000, 0); // no pull, grace not over yet
    assert_false(ms_grace_caught_up(g));
    ms_grace_hold(g, T0 + 3000, 0);
    assert_true(ms_grace_caught_up(g));
    ms_grace_destroy(&g);
}

//  --------------------------------------------------------------------------
//  A catch-up holds the grace MS_GRACE_CATCH_UP_HOLD_MS past each pull,
//  beyond the grace's own end; when the pulls stop, the grace ends that
//  long after the last, and the node is caught up for good: a later pull
//  holds nothing.

static void
test_catch_up_holds(void **state)
{
    (void) state;
    ms_grace_t *g = ms_grace_new();
    ms_grace_start(g, T0, 3000);
    ms_grace_hold(g, T0 + 100, 2); // within the grace: it ends later anyway
    assert_int_equal(ms_grace_next_deadline(g, T0 + 100), T0 + 3000);
    ms_grace_hold(g, T0 + 2900, 1); // near its end: held past the pull
    assert_int_equal(ms_grace_next_deadline(g, T0 + 2900),
                     T0 + 2900 + MS_GRACE_CATCH_UP_HOLD_MS);
    int64_t last = T0 + 2900;
    for (int64_t t = T0 + 3000; t < T0 + 10000; t += 200) {
        ms_grace_hold(g, t, 1);
        assert_true(ms_grace_holding(g, t));
        last = t;
    }
    int64_t end = last + MS_GRACE_CATCH_UP_HOLD_MS;
    ms_grace_hold(g, last + 100, 0); // pulls done, the hold not over
    assert_true(ms_grace_holding(g, last + 100));
    assert_false(ms_grace_caught_up(g));
    assert_false(ms_grace_holding(g, end));
    ms_grace_hold(g, end, 0);
    assert_true(ms_grace_caught_up(g));
    ms_grace_hold(g, end + 10, 5); // a later pull: the node goes on
    assert_false(ms_grace_holding(g, end + 10));
    ms_grace_destroy(&g);
}

//  --------------------------------------------------------------------------
//  A peer that keeps the node pulling cannot hold the grace past
//  MS_GRACE_CATCH_UP_MAX_MS from the join.

static void
test_catch_up_capped(void **state)
{
    (void) state;
    ms_grace_t *g = ms_grace_new();
    ms_grace_start(g, T0, 3000);
    int64_t t = T0;
    for (; t < T0 + MS_GRACE_CATCH_UP_MAX_MS; t += 250)
        ms_grace_hold(g, t, 1);
    // The last hold inside the cap holds at most HOLD_MS past the cap.
    int64_t cap_end = T0 + MS_GRACE_CATCH_UP_MAX_MS + MS_GRACE_CATCH_UP_HOLD_MS;
    for (; t < cap_end + 1000; t += 250) {
        ms_grace_hold(g, t, 1); // past the cap: pulls hold nothing
        assert_true(!ms_grace_holding(g, t) ||
                    ms_grace_next_deadline(g, t) <= cap_end);
    }
    assert_false(ms_grace_holding(g, t));
    assert_true(ms_grace_caught_up(g));
    ms_grace_destroy(&g);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone),
        cmocka_unit_test(test_grace_without_pulls),
        cmocka_unit_test(test_catch_up_holds),
        cmocka_unit_test(test_catch_up_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
