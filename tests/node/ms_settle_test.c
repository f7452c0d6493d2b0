/*  =========================================================================
    ms_settle_test - claims waiting for acknowledgements: acks, the peer's
    own records, peers gone, the cap, order, removal

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_settle.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

//  How far the test "holds" each peer's log: held[peer byte 0].
typedef struct {
    uint64_t held[8];     // per peer (id byte 0 = index)
    uint64_t incarnation; // the only incarnation held
    int calls;            // times asked
} s_logs_t;

static uint64_t
s_held(void *arg, const uint8_t peer[MS_SETTLE_ID_BYTES], uint64_t incarnation)
{
    s_logs_t *logs = arg;
    logs->calls++;
    return incarnation == logs->incarnation ? logs->held[peer[0] % 8] : 0;
}

static void
s_id(uint8_t out[MS_SETTLE_ID_BYTES], int b)
{
    memset(out, 0, MS_SETTLE_ID_BYTES);
    out[0] = (uint8_t) b;
    out[31] = 0xAA;
}

//  --------------------------------------------------------------------------
//  A claim starts only when every peer acknowledged it AND its own log is
//  held up to the seq it reported; an ack of a lower seq does not count.

static void
test_waits_for_acks_and_records(void **state)
{
    (void) state;
    ms_settle_t *s = ms_settle_new();
    assert_non_null(s);
    uint8_t task[32], peers[2][32];
    s_id(task, 9);
    s_id(peers[0], 1);
    s_id(peers[1], 2);
    s_logs_t logs = {.incarnation = 77};
    assert_int_equal(ms_settle_add(s, task, 0, 3, 10, peers, 2, 1000, 500),
                     MS_OK);
    assert_int_equal(ms_settle_count(s), 1);
    assert_true(ms_settle_contains(s, task));
    assert_int_equal(ms_settle_next_deadline(s), 1500);
    ms_settle_claim_t c;
    assert_false(ms_settle_take_ready(s, 1001, s_held, &logs, &c));
    // peer 1 acks an older block: not this claim
    assert_int_equal(ms_settle_on_ack(s, peers[0], 9, 77, 0), 0);
    assert_false(ms_settle_take_ready(s, 1002, s_held, &logs, &c));
    // peer 1 acks it, its own log at 0: done for peer 1
    assert_int_equal(ms_settle_on_ack(s, peers[0], 10, 77, 0), 1);
    assert_false(ms_settle_take_ready(s, 1003, s_held, &logs, &c));
    // peer 2 acks it; its own log was at 5 and we hold 4: still waits
    logs.held[2] = 4;
    assert_int_equal(ms_settle_on_ack(s, peers[1], 12, 77, 5), 1);
    assert_false(ms_settle_take_ready(s, 1004, s_held, &logs, &c));
    assert_true(logs.calls > 0);
    // a second ack does not move the records it waits for
    assert_int_equal(ms_settle_on_ack(s, peers[1], 13, 77, 9), 0);
    logs.held[2] = 5; // its claim (seq 5) has been merged
    assert_true(ms_settle_take_ready(s, 1005, s_held, &logs, &c));
    assert_memory_equal(c.task_id, task, 32);
    assert_int_equal(c.slot, 0);
    assert_int_equal(c.epoch, 3);
    assert_int_equal(c.seq, 10);
    assert_int_equal(c.added_ms, 1000);
    assert_int_equal(c.n_peers, 2);
    assert_int_equal(c.n_acked, 2);
    assert_int_equal(c.n_gone, 0);
    assert_false(c.capped);
    assert_int_equal(ms_settle_count(s), 0);
    assert_int_equal(ms_settle_next_deadline(s), INT64_MAX);
    assert_false(ms_settle_take_ready(s, 5000, s_held, &logs, &c));
    ms_settle_destroy(&s);
    assert_null(s);
    ms_settle_destroy(&s); // NULL-safe
}

//  --------------------------------------------------------------------------
//  Records of another incarnation of the peer do not count.

static void
test_other_incarnation_does_not_count(void **state)
{
    (void) state;
    ms_settle_t *s = ms_settle_new();
    uint8_t task[32], peer[1][32];
    s_id(task, 9);
    s_id(peer[0], 3);
    s_logs_t logs = {.incarnation = 77};
    logs.held[3] = 100;
    assert_int_equal(ms_settle_add(s, task, 0, 1, 4, peer, 1, 0, 1000), MS_OK);
    ms_settle_on_ack(s, peer[0], 4, 78, 2); // its log is incarnation 78
    ms_settle_claim_t c;
    assert_false(ms_settle_take_ready(s, 10, s_held, &logs, &c));
    logs.incarnation = 78;
    assert_true(ms_settle_take_ready(s, 11, s_held, &logs, &c));
    ms_settle_destroy(&s);
}

//  --------------------------------------------------------------------------
//  A peer gone is not waited for; the cap ends any wait (capped).

static void
test_gone_and_cap(void **state)
{
    (void) state;
    ms_settle_t *s = ms_settle_new();
    uint8_t t1[32], t2[32], peers[2][32];
    s_id(t1, 11);
    s_id(t2, 12);
    s_id(peers[0], 1);
    s_id(peers[1], 2);
    s_logs_t logs = {.incarnation = 1};
    assert_int_equal(ms_settle_add(s, t1, 0, 1, 3, peers, 2, 100, 50), MS_OK);
    assert_int_equal(ms_settle_add(s, t2, 0, 1, 3, peers, 1, 100, 80), MS_OK);
    assert_int_equal(ms_settle_on_ack(s, peers[0], 3, 1, 0), 2);
    assert_int_equal(ms_settle_peer_gone(s, peers[1]), 1);
    ms_settle_claim_t c;
    // t1: peer 1 acked, peer 2 gone; t2 waited only for peer 1: both ready,
    // oldest first
    assert_true(ms_settle_take_ready(s, 101, s_held, &logs, &c));
    assert_memory_equal(c.task_id, t1, 32);
    assert_int_equal(c.n_acked, 1);
    assert_int_equal(c.n_gone, 1);
    assert_false(c.capped);
    assert_true(ms_settle_take_ready(s, 101, s_held, &logs, &c));
    assert_memory_equal(c.task_id, t2, 32);

    // No ack at all: ready at the cap, reported capped.
    assert_int_equal(ms_settle_add(s, t1, 0, 2, 4, peers, 2, 200, 50), MS_OK);
    assert_false(ms_settle_take_ready(s, 249, s_held, &logs, &c));
    assert_true(ms_settle_take_ready(s, 250, s_held, &logs, &c));
    assert_true(c.capped);
    assert_int_equal(c.n_acked, 0);
    ms_settle_destroy(&s);
}

//  --------------------------------------------------------------------------
//  No peer, or seq 0 (a retry under a settled claim): ready at once.
//  Duplicated peer ids are waited for once. Add replaces; remove, get.

static void
test_no_wait_replace_remove(void **state)
{
    (void) state;
    ms_settle_t *s = ms_settle_new();
    uint8_t t1[32], t2[32], peers[3][32];
    s_id(t1, 21);
    s_id(t2, 22);
    s_id(peers[0], 1);
    s_id(peers[1], 1);
    s_id(peers[2], 2);
    s_logs_t logs = {.incarnation = 1};
    ms_settle_claim_t c;
    assert_int_equal(ms_settle_add(s, t1, 0, 1, 0, peers, 3, 0, 1000), MS_OK);
    assert_true(ms_settle_take_ready(s, 0, s_held, &logs, &c));
    assert_int_equal(c.n_peers, 0);
    assert_false(c.capped);
    assert_int_equal(ms_settle_add(s, t1, 0, 1, 5, NULL, 0, 0, 1000), MS_OK);
    assert_true(ms_settle_take_ready(s, 0, NULL, NULL, &c));

    assert_int_equal(ms_settle_add(s, t1, 0, 1, 5, peers, 3, 0, 1000), MS_OK);
    assert_int_equal(ms_settle_on_ack(s, peers[0], 5, 1, 0), 1); // once
    assert_int_equal(ms_settle_add(s, t2, 1, 1, 6, peers, 3, 0, 1000), MS_OK);
    // replace t1 slot 0 with a new epoch: still two entries, t2 now first
    assert_int_equal(ms_settle_add(s, t1, 0, 2, 7, peers, 3, 0, 1000), MS_OK);
    assert_int_equal(ms_settle_count(s), 2);
    assert_true(ms_settle_get(s, 0, &c));
    assert_memory_equal(c.task_id, t2, 32);
    assert_true(ms_settle_get(s, 1, &c));
    assert_int_equal(c.epoch, 2);
    assert_int_equal(c.n_peers, 2);
    assert_false(ms_settle_get(s, 2, &c));
    assert_false(ms_settle_remove(s, t2, 0, &c)); // other slot
    assert_true(ms_settle_remove(s, t2, 1, &c));
    assert_int_equal(c.seq, 6);
    assert_false(ms_settle_contains(s, t2));
    assert_true(ms_settle_contains(s, t1));
    assert_true(ms_settle_remove(s, t1, 0, NULL));
    assert_int_equal(ms_settle_count(s), 0);
    ms_settle_destroy(&s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waits_for_acks_and_records),
        cmocka_unit_test(test_other_incarnation_does_not_count),
        cmocka_unit_test(test_gone_and_cap),
        cmocka_unit_test(test_no_wait_replace_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
