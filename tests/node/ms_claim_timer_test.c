/*  =========================================================================
    ms_claim_timer_test - claim-to-start: a sweep committed at t, its
    worker idle at t2, its work started at t3 gives t3 - max(t, t2);
    unknown sweeps are not measured; the first note wins; the sweeps of
    a store are noted once

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A real store (tests/support) for ms_claim_timer_note_stored.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_claim_timer.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_store_fixture.h"

#include <stdlib.h>
#include <string.h>

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_claim_timer_test");
}

//  A sweep id filled with TAG.
static ms_hash_t
s_sweep(uint8_t tag)
{
    ms_hash_t h;
    memset(h.bytes, tag, sizeof h.bytes);
    return h;
}

//  --------------------------------------------------------------------------
//  The figure: from the later of the commit and the worker's idle
//  moment to the start; 0 when the start is not after it.

static void
test_measure(void **state)
{
    (void) state;
    ms_claim_timer_t *t = ms_claim_timer_new();
    assert_non_null(t);
    ms_hash_t s = s_sweep(1);
    ms_claim_timer_note(t, &s, 1000000); // committed at t = 1 s
    assert_int_equal(ms_claim_timer_committed_at(t, &s), 1000000);
    double ms = -1;
    // The worker was idle before the commit: from the commit.
    assert_true(ms_claim_timer_measure(t, &s, 500000, 1250000, &ms));
    assert_true(ms > 249.999 && ms < 250.001);
    // The worker went idle after the commit (it ran another task): from
    // then on; queueing is not claim-to-start.
    assert_true(ms_claim_timer_measure(t, &s, 2000000, 2003500, &ms));
    assert_true(ms > 3.499 && ms < 3.501);
    // A start reported before (clock granularity): 0, still measured.
    assert_true(ms_claim_timer_measure(t, &s, 2000000, 1999000, &ms));
    assert_true(ms == 0);
    // No start time: not measured, *ms untouched.
    ms = -1;
    assert_false(ms_claim_timer_measure(t, &s, 0, 0, &ms));
    assert_true(ms == -1);
    ms_claim_timer_destroy(&t);
    assert_null(t);
    ms_claim_timer_destroy(&t); // NULL-safe
}

//  --------------------------------------------------------------------------
//  Unknown sweeps: never noted, or noted at 0 (stored before the process
//  started), are not measured; the first note of a sweep wins.

static void
test_unknown_and_first_note(void **state)
{
    (void) state;
    ms_claim_timer_t *t = ms_claim_timer_new();
    ms_hash_t a = s_sweep(0xa), b = s_sweep(0xb);
    double ms = -1;
    assert_int_equal(ms_claim_timer_committed_at(t, &a), 0);
    assert_false(ms_claim_timer_measure(t, &a, 0, 5000, &ms));

    ms_claim_timer_note(t, &a, 0);    // before this process
    ms_claim_timer_note(t, &a, 7000); // merged again later: still unknown
    assert_int_equal(ms_claim_timer_committed_at(t, &a), 0);
    assert_false(ms_claim_timer_measure(t, &a, 0, 9000, &ms));

    ms_claim_timer_note(t, &b, 3000);
    ms_claim_timer_note(t, &b, 8000); // submitted again: the first stays
    assert_int_equal(ms_claim_timer_committed_at(t, &b), 3000);
    assert_true(ms_claim_timer_measure(t, &b, 0, 4000, &ms));
    assert_true(ms > 0.999 && ms < 1.001);
    ms_claim_timer_destroy(&t);
}

//  --------------------------------------------------------------------------
//  Many sweeps: the table grows, each keeps its own time.

static void
test_many_sweeps(void **state)
{
    (void) state;
    ms_claim_timer_t *t = ms_claim_timer_new();
    for (uint32_t i = 0; i < 1000; i++) {
        ms_hash_t s = s_sweep(0);
        memcpy(s.bytes, &i, sizeof i);
        ms_claim_timer_note(t, &s, 1000 + (int64_t) i);
    }
    for (uint32_t i = 0; i < 1000; i++) {
        ms_hash_t s = s_sweep(0);
        memcpy(s.bytes, &i, sizeof i);
        assert_int_equal(ms_claim_timer_committed_at(t, &s),
                         1000 + (int64_t) i);
    }
    ms_claim_timer_destroy(&t);
}

//  --------------------------------------------------------------------------
//  ms_claim_timer_note_stored: the sweeps of the store at open are
//  unknown (0); a sweep merged later is noted at the merge's time, and
//  the ones noted before keep theirs.

static void
test_note_stored(void **state)
{
    ms_store_t *store = ms_sf_open(*state, NULL, 8 << 20);
    uint8_t origin[MS_STORE_ID_BYTES];
    ms_sf_id(origin, 0x42, 1);
    ms_sf_sweep_t old, fresh;
    ms_sf_sweep_seeds(&old, "old", 8, 2);
    ms_sf_sweep_seeds(&fresh, "fresh", 8, 2);
    assert_int_equal(ms_sf_append_sweep(store, origin, &old, 0), MS_OK);

    ms_claim_timer_t *t = ms_claim_timer_new();
    assert_int_equal(ms_claim_timer_note_stored(t, store, 0), MS_OK);
    ms_hash_t old_id, fresh_id;
    memcpy(old_id.bytes, old.sweep_id, MS_HASH_BYTES);
    memcpy(fresh_id.bytes, fresh.sweep_id, MS_HASH_BYTES);
    double ms = -1;
    assert_false(ms_claim_timer_measure(t, &old_id, 0, 1000, &ms));

    assert_int_equal(ms_sf_append_sweep(store, origin, &fresh, 0), MS_OK);
    assert_int_equal(ms_claim_timer_note_stored(t, store, 5000), MS_OK);
    assert_int_equal(ms_claim_timer_committed_at(t, &fresh_id), 5000);
    assert_int_equal(ms_claim_timer_committed_at(t, &old_id), 0);
    assert_true(ms_claim_timer_measure(t, &fresh_id, 0, 6000, &ms));
    assert_true(ms > 0.999 && ms < 1.001);

    ms_claim_timer_destroy(&t);
    ms_sf_sweep_free(&old);
    ms_sf_sweep_free(&fresh);
    ms_store_destroy(&store);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measure),
        cmocka_unit_test(test_unknown_and_first_note),
        cmocka_unit_test(test_many_sweeps),
        cmocka_unit_test_setup_teardown(test_note_stored, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
