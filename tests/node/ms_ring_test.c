/*  =========================================================================
    ms_ring_test - the bounded drop-oldest queue

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_ring.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

//  --------------------------------------------------------------------------
//  Items come out oldest first, in the order pushed.

static void
test_fifo_order(void **state)
{
    (void) state;
    ms_ring_t *ring = ms_ring_new(sizeof(uint32_t), 8);
    assert_non_null(ring);
    for (uint32_t i = 0; i < 5; i++)
        assert_false(ms_ring_push(ring, &i));
    assert_int_equal(ms_ring_size(ring), 5);
    uint32_t out[8];
    assert_int_equal(ms_ring_take(ring, out, 3), 3);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[2], 2);
    assert_int_equal(ms_ring_take(ring, out, 8), 2);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[1], 4);
    assert_int_equal(ms_ring_take(ring, out, 8), 0);
    ms_ring_destroy(&ring);
    assert_null(ring);
    ms_ring_destroy(&ring); // NULL-safe
}

//  --------------------------------------------------------------------------
//  A full ring drops its oldest item per push and says so; what is taken
//  afterwards wraps around the end of the block in order.

static void
test_drop_oldest_and_wrap(void **state)
{
    (void) state;
    ms_ring_t *ring = ms_ring_new(sizeof(uint64_t), 4);
    assert_non_null(ring);
    size_t dropped = 0;
    for (uint64_t i = 0; i < 11; i++)
        dropped += ms_ring_push(ring, &i);
    assert_int_equal(dropped, 7);
    assert_int_equal(ms_ring_size(ring), 4);
    uint64_t out[4];
    assert_int_equal(ms_ring_take(ring, out, 4), 4);
    for (int k = 0; k < 4; k++)
        assert_int_equal(out[k], 7 + k);
    // half taken, half pushed: the live part straddles the block's end
    for (uint64_t i = 20; i < 23; i++)
        ms_ring_push(ring, &i);
    assert_int_equal(ms_ring_take(ring, out, 2), 2);
    for (uint64_t i = 23; i < 26; i++)
        ms_ring_push(ring, &i);
    assert_int_equal(ms_ring_take(ring, out, 4), 4);
    assert_int_equal(out[0], 22);
    assert_int_equal(out[1], 23);
    assert_int_equal(out[3], 25);
    ms_ring_destroy(&ring);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order),
        cmocka_unit_test(test_drop_oldest_and_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
