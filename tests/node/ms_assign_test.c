/*  =========================================================================
    ms_assign_test - rendezvous owners, ranks, order of work, grace

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_assign.h"

#include "ms_hash.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  An id: BLAKE2b of a label.

static void
s_id(const char *label, int i, uint8_t out[32])
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s-%d", label, i);
    ms_hash_t h;
    ms_hash_bytes(buf, strlen(buf), &h);
    memcpy(out, h.bytes, 32);
}

//  --------------------------------------------------------------------------
//  The weight is BLAKE2b-256(task || node); the owner has the highest.

static void
test_weight_is_blake2b(void **state)
{
    (void) state;
    uint8_t task[32], node[32], w[32], buf[64];
    s_id("task", 1, task);
    s_id("node", 1, node);
    ms_assign_weight(task, node, w);
    memcpy(buf, task, 32);
    memcpy(buf + 32, node, 32);
    ms_hash_t h;
    ms_hash_bytes(buf, 64, &h);
    assert_memory_equal(w, h.bytes, 32);
    //  the owner is the member with the memcmp-highest weight
    uint8_t members[5][32];
    int best = 0;
    uint8_t best_w[32];
    for (int i = 0; i < 5; i++) {
        s_id("node", i, members[i]);
        uint8_t wi[32];
        ms_assign_weight(task, members[i], wi);
        if (i == 0 || memcmp(wi, best_w, 32) > 0) {
            memcpy(best_w, wi, 32);
            best = i;
        }
    }
    uint8_t owner[32];
    assert_int_equal(
        ms_assign_owner(task, (const uint8_t(*)[32]) members, 5, owner), MS_OK);
    assert_memory_equal(owner, members[best], 32);
    assert_int_equal(
        ms_assign_rank(task, (const uint8_t(*)[32]) members, 5, members[best]),
        0);
    //  no members: no owner; rank alone is 0
    memset(owner, 0xAB, 32);
    assert_int_equal(ms_assign_owner(task, NULL, 0, owner), MS_ERR_NOTFOUND);
    assert_int_equal(owner[0], 0xAB);
    assert_int_equal(ms_assign_rank(task, NULL, 0, node), 0);
}

//  --------------------------------------------------------------------------
//  10,000 tasks over 4 nodes: each owns 25% +- 2%; ranks are a
//  permutation; self unlisted ranks among the members.

static void
test_owner_balanced(void **state)
{
    (void) state;
    enum { N = 4, T = 10000 };
    uint8_t members[N][32];
    for (int i = 0; i < N; i++)
        s_id("node", i, members[i]);
    int owned[N] = {0};
    for (int t = 0; t < T; t++) {
        uint8_t task[32], owner[32];
        s_id("task", t, task);
        assert_int_equal(
            ms_assign_owner(task, (const uint8_t(*)[32]) members, N, owner),
            MS_OK);
        int seen[N] = {0};
        for (int i = 0; i < N; i++) {
            int r = ms_assign_rank(task, (const uint8_t(*)[32]) members, N,
                                   members[i]);
            assert_true(r >= 0 && r < N);
            seen[r]++;
            if (r == 0) {
                assert_memory_equal(owner, members[i], 32);
                owned[i]++;
            }
        }
        for (int r = 0; r < N; r++)
            assert_int_equal(seen[r], 1);
    }
    for (int i = 0; i < N; i++) {
        assert_true(owned[i] >= T * 23 / 100);
        assert_true(owned[i] <= T * 27 / 100);
    }
    //  self need not be listed: its rank counts the members above it
    uint8_t task[32], outsider[32];
    s_id("task", 0, task);
    s_id("node", 77, outsider);
    int r = ms_assign_rank(task, (const uint8_t(*)[32]) members, N, outsider);
    uint8_t all[N + 1][32];
    memcpy(all, members, sizeof members);
    memcpy(all[N], outsider, 32);
    assert_int_equal(
        ms_assign_rank(task, (const uint8_t(*)[32]) all, N + 1, outsider), r);
}

//  --------------------------------------------------------------------------
//  When a node leaves, only its tasks move, each to its second-ranked
//  member.

static void
test_owner_stable_when_node_leaves(void **state)
{
    (void) state;
    enum { N = 4, T = 10000 };
    uint8_t members[N][32];
    for (int i = 0; i < N; i++)
        s_id("node", i, members[i]);
    int moved = 0;
    for (int t = 0; t < T; t++) {
        uint8_t task[32], before[32], after[32];
        s_id("task", t, task);
        assert_int_equal(
            ms_assign_owner(task, (const uint8_t(*)[32]) members, N, before),
            MS_OK);
        //  node 2 leaves: list without it
        uint8_t rest[N - 1][32];
        memcpy(rest[0], members[0], 32);
        memcpy(rest[1], members[1], 32);
        memcpy(rest[2], members[3], 32);
        assert_int_equal(
            ms_assign_owner(task, (const uint8_t(*)[32]) rest, N - 1, after),
            MS_OK);
        if (memcmp(before, members[2], 32) != 0) {
            assert_memory_equal(after, before, 32);
        } else {
            moved++;
            //  it goes to the member that ranked second
            assert_int_equal(
                ms_assign_rank(task, (const uint8_t(*)[32]) members, N, after),
                1);
        }
    }
    assert_true(moved > T / 5 && moved < T * 3 / 10);
}

//  --------------------------------------------------------------------------
//  Own tasks first (by priority, round-robin across sweeps, then index),
//  then others' by rank 1, 2, ...

static void
test_order_own_first(void **state)
{
    (void) state;
    enum { N = 3, T = 60 };
    uint8_t members[N][32];
    for (int i = 0; i < N; i++)
        s_id("node", i, members[i]);
    const uint8_t *self = members[1];
    ms_assign_task_t tasks[T];
    memset(tasks, 0, sizeof tasks);
    //  three sweeps: A (priority 0, seq 1), B (priority 0, seq 2),
    //  C (priority 5, seq 3); tasks interleaved in the input
    for (int t = 0; t < T; t++) {
        int sw = t % 3;
        s_id("order-task", t, tasks[t].task_id);
        s_id("sweep", sw, tasks[t].sweep_id);
        tasks[t].priority = sw == 2 ? 5 : 0;
        tasks[t].sweep_seq = (uint64_t) sw + 1;
        tasks[t].task_index = (uint64_t) (T - t); // reverse of input order
    }
    size_t order[T];
    assert_int_equal(ms_assign_order(tasks, T, (const uint8_t(*)[32]) members,
                                     N, self, order),
                     MS_OK);
    //  a permutation
    int seen[T] = {0};
    for (int k = 0; k < T; k++) {
        assert_true(order[k] < T);
        seen[order[k]]++;
    }
    for (int t = 0; t < T; t++)
        assert_int_equal(seen[t], 1);
    int n_own = 0;
    int prev_rank = 0;
    for (int k = 0; k < T; k++) {
        const ms_assign_task_t *a = &tasks[order[k]];
        int r =
            ms_assign_rank(a->task_id, (const uint8_t(*)[32]) members, N, self);
        assert_true(r >= prev_rank); // own (0) first, then 1, then 2
        n_own += r == 0;
        if (k > 0 && r == prev_rank) {
            const ms_assign_task_t *p = &tasks[order[k - 1]];
            assert_true(a->priority <= p->priority); // priority desc
            if (a->sweep_seq == p->sweep_seq)
                assert_true(a->task_index > p->task_index);
        }
        prev_rank = r;
    }
    assert_true(n_own > 0 && n_own < T);
    //  Round-robin: among own tasks of priority 0, sweeps A and B
    //  alternate while both have tasks left.
    int a_left = 0, b_left = 0;
    for (int k = 0; k < T; k++) {
        const ms_assign_task_t *t = &tasks[order[k]];
        if (ms_assign_rank(t->task_id, (const uint8_t(*)[32]) members, N,
                           self) == 0 &&
            t->priority == 0) {
            a_left += t->sweep_seq == 1;
            b_left += t->sweep_seq == 2;
        }
    }
    int last = 0;
    for (int k = 0; k < T && a_left > 0 && b_left > 0; k++) {
        const ms_assign_task_t *t = &tasks[order[k]];
        if (ms_assign_rank(t->task_id, (const uint8_t(*)[32]) members, N,
                           self) != 0 ||
            t->priority != 0)
            continue;
        int sw = (int) t->sweep_seq;
        assert_int_not_equal(sw, last); // never twice in a row
        last = sw;
        if (sw == 1)
            a_left--;
        else
            b_left--;
    }
    //  deterministic: the same input gives the same order
    size_t again[T];
    assert_int_equal(ms_assign_order(tasks, T, (const uint8_t(*)[32]) members,
                                     N, self, again),
                     MS_OK);
    assert_memory_equal(order, again, sizeof order);
    //  empty input
    assert_int_equal(ms_assign_order(NULL, 0, NULL, 0, self, NULL), MS_OK);
}

//  --------------------------------------------------------------------------
//  Startup grace: two beacon intervals and one anti-entropy round.

static void
test_grace(void **state)
{
    (void) state;
    assert_int_equal(ms_assign_grace_ms(1000, 1000), 3000);
    assert_int_equal(ms_assign_grace_ms(50, 200), 300);
    assert_int_equal(ms_assign_grace_ms(-1, 200), 200);
    assert_int_equal(ms_assign_grace_ms(0, 0), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_is_blake2b),
        cmocka_unit_test(test_owner_balanced),
        cmocka_unit_test(test_owner_stable_when_node_leaves),
        cmocka_unit_test(test_order_own_first),
        cmocka_unit_test(test_grace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
