/*  =========================================================================
    ms_lease_table_test - claim rule, epochs, hash tie-break, expiry, clocks

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every table here reads a fake clock (mono and boot, ms) that the test
    moves by hand, so expiry, suspend and SIGSTOP are simulated exactly
    and the tests take no wall time. Several tables stand for several
    nodes; records are "exchanged" by feeding each table the same records
    in different orders (cases/README.md cases 1, 2 and 9).
*/
#include "ms_lease_table.h"

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

#define S_TTL 10000 // lease TTL in the tests, ms

//  A clock the test moves by hand.
typedef struct {
    int64_t mono; // CLOCK_MONOTONIC, ms
    int64_t boot; // CLOCK_BOOTTIME, ms
} s_fake_t;

//  A node of the simulation: its id, its clock, its table.
typedef struct {
    uint8_t id[32];          // node id
    s_fake_t now;            // its clocks
    ms_lease_clock_t clock;  // reads now
    ms_lease_table_t *table; // its view
} s_node_t;

//  --------------------------------------------------------------------------
//  Fake mono clock.

static int64_t
s_fake_mono(void *ctx)
{
    return ((s_fake_t *) ctx)->mono;
}

//  --------------------------------------------------------------------------
//  Fake boot clock.

static int64_t
s_fake_boot(void *ctx)
{
    return ((s_fake_t *) ctx)->boot;
}

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
//  Start a simulated node i (clock at 1000 ms on both clocks).

static void
s_node_init(s_node_t *node, int i)
{
    s_id("node", i, node->id);
    node->now.mono = 1000;
    node->now.boot = 1000;
    node->clock.mono_ms = s_fake_mono;
    node->clock.boot_ms = s_fake_boot;
    node->clock.ctx = &node->now;
    node->table = ms_lease_table_new(node->id, S_TTL, &node->clock);
    assert_non_null(node->table);
}

//  --------------------------------------------------------------------------
//  Move a node's clocks (both, as a running machine does).

static void
s_advance(s_node_t *node, int64_t ms)
{
    node->now.mono += ms;
    node->now.boot += ms;
}

//  --------------------------------------------------------------------------
//  A claim value.

static ms_claim_t
s_claim(const uint8_t task[32], uint32_t slot, uint32_t epoch,
        const uint8_t node[32])
{
    ms_claim_t c;
    memcpy(c.task_id, task, 32);
    c.slot = slot;
    c.epoch = epoch;
    memcpy(c.node_id, node, 32);
    return c;
}

//  --------------------------------------------------------------------------
//  H(task || slot_be32 || node), the tie-break hash the header documents.

static void
s_rank_hash(const uint8_t task[32], uint32_t slot, const uint8_t node[32],
            uint8_t out[32])
{
    uint8_t buf[68];
    memcpy(buf, task, 32);
    buf[32] = (uint8_t) (slot >> 24);
    buf[33] = (uint8_t) (slot >> 16);
    buf[34] = (uint8_t) (slot >> 8);
    buf[35] = (uint8_t) slot;
    memcpy(buf + 36, node, 32);
    ms_hash_t h;
    ms_hash_bytes(buf, sizeof buf, &h);
    memcpy(out, h.bytes, 32);
}

//  --------------------------------------------------------------------------
//  Renew intervals of TTL/2 or more are refused, naming the key.

static void
test_check_config(void **state)
{
    (void) state;
    ms_diag_t diag;
    assert_int_equal(ms_lease_check_config(1000, 10000, &diag), MS_OK);
    assert_int_equal(ms_lease_check_config(4999, 10000, &diag), MS_OK);
    assert_int_equal(ms_lease_check_config(5000, 10000, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "heartbeat_ms");
    assert_non_null(strstr(diag.reason, "half"));
    assert_int_equal(ms_lease_check_config(1, 3, NULL), MS_OK);
    assert_int_equal(ms_lease_check_config(2, 3, NULL), MS_ERR_INVALID);
    assert_int_equal(ms_lease_check_config(1000, 0, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "lease_ttl_ms");
    assert_int_equal(ms_lease_check_config(0, 10000, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "heartbeat_ms");
    assert_int_equal(ms_lease_check_config(-5, 10000, NULL), MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  The higher epoch holds the slot, whatever the hashes say.

static void
test_claim_higher_epoch_wins(void **state)
{
    (void) state;
    s_node_t obs;
    s_node_init(&obs, 0);
    uint8_t task[32], a[32], b[32];
    s_id("task", 1, task);
    s_id("node", 1, a);
    s_id("node", 2, b);
    //  Make a the hash winner at equal epoch, then give b the higher epoch.
    uint8_t ha[32], hb[32];
    s_rank_hash(task, 0, a, ha);
    s_rank_hash(task, 0, b, hb);
    const uint8_t *lo = memcmp(ha, hb, 32) < 0 ? a : b;
    const uint8_t *hi = lo == a ? b : a;
    ms_claim_t c1 = s_claim(task, 0, 1, lo);
    ms_claim_t c2 = s_claim(task, 0, 2, hi);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c2), MS_OK);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c1), MS_OK);
    ms_claim_t h;
    bool live = false;
    assert_int_equal(ms_lease_table_holder(obs.table, task, 0, &h, &live),
                     MS_OK);
    assert_int_equal(h.epoch, 2);
    assert_memory_equal(h.node_id, hi, 32);
    assert_true(live);
    assert_int_equal(ms_lease_table_max_epoch(obs.table, task, 0), 2);
    assert_int_equal(ms_lease_table_size(obs.table), 2);
    //  Duplicates change nothing.
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c1), MS_OK);
    assert_int_equal(ms_lease_table_size(obs.table), 2);
    //  Malformed records are refused.
    ms_claim_t bad = s_claim(task, 0, 0, a);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &bad), MS_ERR_INVALID);
    bad = s_claim(task, MS_LEASE_SLOT_ANY, 3, a);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &bad), MS_ERR_INVALID);
    assert_int_equal(ms_lease_table_add_release(obs.table, &bad),
                     MS_ERR_INVALID);
    //  Unknown slot or task: no holder.
    assert_int_equal(ms_lease_table_holder(obs.table, task, 1, NULL, NULL),
                     MS_ERR_NOTFOUND);
    uint8_t other[32];
    s_id("task", 99, other);
    assert_int_equal(ms_lease_table_holder(obs.table, other, 0, NULL, NULL),
                     MS_ERR_NOTFOUND);
    ms_lease_table_destroy(&obs.table);
    assert_null(obs.table);
    ms_lease_table_destroy(&obs.table); // NULL-safe
}

//  --------------------------------------------------------------------------
//  At equal epochs the lower H(task, slot, node) wins, in every node's view.

static void
test_claim_tie_broken_by_hash(void **state)
{
    (void) state;
    enum { N = 4 };
    s_node_t nodes[N];
    for (int i = 0; i < N; i++)
        s_node_init(&nodes[i], i);
    for (int t = 0; t < 16; t++) {
        uint8_t task[32];
        s_id("tie", t, task);
        uint32_t slot = (uint32_t) (t % 3);
        //  The expected winner, computed here from the documented rule.
        int best = 0;
        uint8_t best_h[32];
        s_rank_hash(task, slot, nodes[0].id, best_h);
        for (int i = 1; i < N; i++) {
            uint8_t h[32];
            s_rank_hash(task, slot, nodes[i].id, h);
            if (memcmp(h, best_h, 32) < 0) {
                memcpy(best_h, h, 32);
                best = i;
            }
        }
        for (int v = 0; v < N; v++) {
            //  each view gets the claims in a different rotation
            for (int k = 0; k < N; k++) {
                ms_claim_t c = s_claim(task, slot, 1, nodes[(k + v) % N].id);
                assert_int_equal(ms_lease_table_add_claim(nodes[v].table, &c),
                                 MS_OK);
            }
            ms_claim_t h;
            assert_int_equal(
                ms_lease_table_holder(nodes[v].table, task, slot, &h, NULL),
                MS_OK);
            assert_memory_equal(h.node_id, nodes[best].id, 32);
            assert_int_equal(h.epoch, 1);
        }
    }
    for (int i = 0; i < N; i++)
        ms_lease_table_destroy(&nodes[i].table);
}

//  One record of the permutation test.
typedef enum { S_REC_CLAIM, S_REC_RELEASE, S_REC_FINISH } s_rec_kind_t;
typedef struct {
    s_rec_kind_t kind; // what it is
    ms_claim_t claim;  // its content (finish: task, slot, node)
} s_rec_t;

//  --------------------------------------------------------------------------
//  Feed records in the given order into a fresh table; return it.

static ms_lease_table_t *
s_feed(s_node_t *obs, const s_rec_t *recs, const int *perm, int n)
{
    ms_lease_table_t *t = ms_lease_table_new(obs->id, S_TTL, &obs->clock);
    assert_non_null(t);
    for (int i = 0; i < n; i++) {
        const s_rec_t *r = &recs[perm[i]];
        int rc = r->kind == S_REC_CLAIM ? ms_lease_table_add_claim(t, &r->claim)
                 : r->kind == S_REC_RELEASE
                     ? ms_lease_table_add_release(t, &r->claim)
                     : ms_lease_table_finish(t, r->claim.task_id, r->claim.slot,
                                             r->claim.node_id);
        assert_int_equal(rc, MS_OK);
    }
    return t;
}

//  --------------------------------------------------------------------------
//  Next permutation in lexicographic order; false after the last.

static bool
s_next_perm(int *p, int n)
{
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (p[j] <= p[i])
        j--;
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        t = p[a];
        p[a] = p[b];
        p[b] = t;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Holder and done are pure functions of the record set: every arrival
//  order (all 7! = 5040 of a mixed set) gives the same answers.

static void
test_holder_independent_of_order(void **state)
{
    (void) state;
    s_node_t obs;
    s_node_init(&obs, 9);
    uint8_t t1[32], t2[32], a[32], b[32], c[32];
    s_id("perm", 1, t1);
    s_id("perm", 2, t2);
    s_id("node", 1, a);
    s_id("node", 2, b);
    s_id("node", 3, c);
    enum { N = 7 };
    const s_rec_t recs[N] = {
        {S_REC_CLAIM, s_claim(t1, 0, 1, a)},
        {S_REC_CLAIM, s_claim(t1, 0, 1, b)},
        {S_REC_CLAIM, s_claim(t1, 0, 2, c)},
        {S_REC_RELEASE, s_claim(t1, 0, 2, c)}, // c gave slot 0 back
        {S_REC_CLAIM, s_claim(t1, 1, 1, c)},
        {S_REC_CLAIM, s_claim(t2, 0, 1, a)},
        {S_REC_FINISH, s_claim(t2, MS_LEASE_SLOT_ANY, 0, a)}, // a's result
    };
    int perm[N];
    for (int i = 0; i < N; i++)
        perm[i] = i;
    //  The reference answers, from the first order.
    ms_lease_table_t *ref = s_feed(&obs, recs, perm, N);
    ms_claim_t ref_h0, ref_h1;
    assert_int_equal(ms_lease_table_holder(ref, t1, 0, &ref_h0, NULL), MS_OK);
    assert_int_equal(ms_lease_table_holder(ref, t1, 1, &ref_h1, NULL), MS_OK);
    //  After c's release the epoch-1 tie is decided by the hash.
    uint8_t ha[32], hb[32];
    s_rank_hash(t1, 0, a, ha);
    s_rank_hash(t1, 0, b, hb);
    assert_memory_equal(ref_h0.node_id, memcmp(ha, hb, 32) < 0 ? a : b, 32);
    assert_memory_equal(ref_h1.node_id, c, 32);
    assert_int_equal(ms_lease_table_holder(ref, t2, 0, NULL, NULL),
                     MS_ERR_NOTFOUND);
    assert_true(ms_lease_table_slot_done(ref, t2, 0));
    assert_false(ms_lease_table_slot_done(ref, t1, 0));
    ms_lease_table_destroy(&ref);
    int n_orders = 0;
    while (s_next_perm(perm, N)) {
        ms_lease_table_t *t = s_feed(&obs, recs, perm, N);
        ms_claim_t h0, h1;
        assert_int_equal(ms_lease_table_holder(t, t1, 0, &h0, NULL), MS_OK);
        assert_int_equal(ms_lease_table_holder(t, t1, 1, &h1, NULL), MS_OK);
        assert_memory_equal(&h0, &ref_h0, sizeof h0);
        assert_memory_equal(&h1, &ref_h1, sizeof h1);
        assert_int_equal(ms_lease_table_holder(t, t2, 0, NULL, NULL),
                         MS_ERR_NOTFOUND);
        assert_true(ms_lease_table_slot_done(t, t2, 0));
        assert_false(ms_lease_table_slot_done(t, t1, 0));
        assert_int_equal(ms_lease_table_max_epoch(t, t1, 0), 2);
        assert_int_equal(ms_lease_table_size(t), 5);
        ms_lease_table_destroy(&t);
        n_orders++;
    }
    assert_int_equal(n_orders, 5039);
    ms_lease_table_destroy(&obs.table);
}

//  --------------------------------------------------------------------------
//  Case 2: 4 nodes started together claim 8 tasks blind (each claims every
//  task it may, in its own ms_assign order), then exchange records in
//  different orders: every view names the same holder per task, exactly
//  one node renews each lease, and the others are told they are
//  outranked. Also case 9 (split, then heal): two halves each claim, then
//  merge; the conflict resolves the same everywhere.

static void
test_case2_concurrent_claims(void **state)
{
    (void) state;
    enum { N = 4, T = 8 };
    s_node_t nodes[N];
    uint8_t members[N][32];
    for (int i = 0; i < N; i++) {
        s_node_init(&nodes[i], 100 + i);
        memcpy(members[i], nodes[i].id, 32);
    }
    ms_assign_task_t tasks[T];
    memset(tasks, 0, sizeof tasks);
    for (int t = 0; t < T; t++) {
        s_id("case2", t, tasks[t].task_id);
        tasks[t].task_index = (uint64_t) t;
    }
    //  Each node claims every task blind, within "10 ms".
    ms_claim_t made[N][T];
    for (int i = 0; i < N; i++) {
        size_t order[T];
        assert_int_equal(ms_assign_order(tasks, T,
                                         (const uint8_t(*)[32]) members, N,
                                         nodes[i].id, order),
                         MS_OK);
        for (int k = 0; k < T; k++) {
            const uint8_t *task = tasks[order[k]].task_id;
            assert_true(
                ms_lease_table_can_claim(nodes[i].table, task, 0, false, NULL));
            assert_int_equal(ms_lease_table_claim(nodes[i].table, task, 0,
                                                  false, &made[i][order[k]]),
                             MS_OK);
            assert_int_equal(made[i][order[k]].epoch, 1);
            //  a second claim of its own slot is refused
            assert_int_equal(
                ms_lease_table_claim(nodes[i].table, task, 0, false, NULL),
                MS_ERR_CONFLICT);
        }
        s_advance(&nodes[i], 2);
    }
    //  Exchange: node v receives the others' claims in its own order.
    for (int v = 0; v < N; v++)
        for (int k = 0; k < N * T; k++) {
            int idx = (k * 7 + v * 5) % (N * T); // 7 is prime to 32
            int from = idx / T, t = idx % T;
            if (from == v)
                continue;
            assert_int_equal(
                ms_lease_table_add_claim(nodes[v].table, &made[from][t]),
                MS_OK);
        }
    //  Every view agrees on the holder; the holder is live everywhere.
    int held_by[T];
    for (int t = 0; t < T; t++) {
        ms_claim_t h0;
        assert_int_equal(ms_lease_table_holder(nodes[0].table, tasks[t].task_id,
                                               0, &h0, NULL),
                         MS_OK);
        held_by[t] = -1;
        for (int i = 0; i < N; i++)
            if (memcmp(h0.node_id, nodes[i].id, 32) == 0)
                held_by[t] = i;
        assert_true(held_by[t] >= 0);
        for (int v = 0; v < N; v++) {
            ms_claim_t h;
            bool live = false;
            assert_int_equal(ms_lease_table_holder(nodes[v].table,
                                                   tasks[t].task_id, 0, &h,
                                                   &live),
                             MS_OK);
            assert_memory_equal(&h, &h0, sizeof h);
            assert_true(live);
            //  nobody may claim the slot while its holder lives
            assert_false(ms_lease_table_can_claim(
                nodes[v].table, tasks[t].task_id, 0, false, NULL));
        }
    }
    //  Exactly one node renews each lease (at most one live holder), and
    //  every loser is told, once.
    int renewers[T] = {0};
    int n_outranked = 0;
    for (int v = 0; v < N; v++) {
        ms_claim_t out[T];
        size_t n = 0;
        assert_int_equal(ms_lease_table_renew(nodes[v].table, out, T, &n),
                         MS_OK);
        for (size_t k = 0; k < n; k++)
            for (int t = 0; t < T; t++)
                if (memcmp(out[k].task_id, tasks[t].task_id, 32) == 0) {
                    renewers[t]++;
                    assert_int_equal(held_by[t], v);
                }
        size_t m = ms_lease_table_outranked(nodes[v].table, out, T);
        for (size_t k = 0; k < m; k++)
            assert_memory_equal(out[k].node_id, nodes[v].id, 32);
        n_outranked += (int) m;
        assert_int_equal(n + m, T);
        assert_int_equal(ms_lease_table_outranked(nodes[v].table, out, T), 0);
    }
    for (int t = 0; t < T; t++)
        assert_int_equal(renewers[t], 1);
    assert_int_equal(n_outranked, (N - 1) * T);

    //  Case 9: split {0,1} | {2,3}; the holder of task 0 is in one half.
    //  Both nodes of the other half see its lease expire and claim the
    //  slot at once, blind to each other (epoch 2 both). After the heal
    //  every view agrees on one epoch-2 holder.
    const uint8_t *task0 = tasks[0].task_id;
    int h = held_by[0];
    int far[2], nfar = 0;
    for (int i = 0; i < N; i++)
        if ((i < 2) != (h < 2))
            far[nfar++] = i;
    assert_int_equal(nfar, 2);
    ms_claim_t c9[2];
    for (int k = 0; k < 2; k++) {
        s_node_t *n = &nodes[far[k]];
        s_advance(n, S_TTL); // no heartbeat crosses the cut
        ms_claim_t exp[T * N];
        size_t ne = ms_lease_table_expire(n->table, exp, T * N);
        assert_true(ne >= 1);
        assert_int_equal(
            ms_lease_table_claim(n->table, task0, 0, false, &c9[k]), MS_OK);
        assert_int_equal(c9[k].epoch, 2);
    }
    for (int v = 0; v < N; v++)
        for (int k = 0; k < 2; k++)
            if (v != far[k])
                assert_int_equal(
                    ms_lease_table_add_claim(nodes[v].table, &c9[k]), MS_OK);
    ms_claim_t w0;
    assert_int_equal(ms_lease_table_holder(nodes[0].table, task0, 0, &w0, NULL),
                     MS_OK);
    assert_int_equal(w0.epoch, 2);
    for (int v = 1; v < N; v++) {
        ms_claim_t w;
        assert_int_equal(
            ms_lease_table_holder(nodes[v].table, task0, 0, &w, NULL), MS_OK);
        assert_memory_equal(&w, &w0, sizeof w);
    }
    //  The old holder and the losing far node are told they are outranked.
    ms_claim_t out[T];
    assert_int_equal(ms_lease_table_outranked(nodes[h].table, out, T), 1);
    assert_int_equal(out[0].epoch, 1);
    int loser = memcmp(w0.node_id, nodes[far[0]].id, 32) == 0 ? far[1] : far[0];
    assert_int_equal(ms_lease_table_outranked(nodes[loser].table, out, T), 1);
    assert_int_equal(out[0].epoch, 2);
    for (int i = 0; i < N; i++)
        ms_lease_table_destroy(&nodes[i].table);
}

//  --------------------------------------------------------------------------
//  A peer's lease expires TTL after it was last heard, not before; the
//  expiry is reported once; the slot is then claimable with epoch + 1.

static void
test_expire_after_ttl(void **state)
{
    (void) state;
    s_node_t obs, peer;
    s_node_init(&obs, 0);
    s_node_init(&peer, 1);
    uint8_t task[32];
    s_id("task", 1, task);
    ms_claim_t c;
    assert_int_equal(ms_lease_table_claim(peer.table, task, 0, false, &c),
                     MS_OK);
    assert_int_equal(ms_lease_table_next_expiry(obs.table), INT64_MAX);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c), MS_OK);
    int64_t seen_at = obs.now.mono;
    assert_int_equal(ms_lease_table_next_expiry(obs.table), seen_at + S_TTL);
    ms_claim_t out[4];
    s_advance(&obs, S_TTL - 1);
    bool live = false;
    assert_int_equal(ms_lease_table_holder(obs.table, task, 0, NULL, &live),
                     MS_OK);
    assert_true(live);
    assert_false(ms_lease_table_can_claim(obs.table, task, 0, false, NULL));
    assert_int_equal(ms_lease_table_expire(obs.table, out, 4), 0);
    s_advance(&obs, 1);
    assert_int_equal(ms_lease_table_holder(obs.table, task, 0, NULL, &live),
                     MS_OK);
    assert_false(live);
    assert_int_equal(ms_lease_table_next_expiry(obs.table), obs.now.mono);
    assert_int_equal(ms_lease_table_expire(obs.table, out, 4), 1);
    assert_memory_equal(&out[0], &c, sizeof c);
    assert_int_equal(ms_lease_table_expire(obs.table, out, 4), 0);
    assert_int_equal(ms_lease_table_next_expiry(obs.table), INT64_MAX);
    uint32_t epoch = 0;
    assert_true(ms_lease_table_can_claim(obs.table, task, 0, false, &epoch));
    assert_int_equal(epoch, 2);
    ms_lease_table_destroy(&obs.table);
    ms_lease_table_destroy(&peer.table);
}

//  --------------------------------------------------------------------------
//  Direct heartbeats keep a lease alive; a third party's word does not;
//  a heartbeat may come before the claim record; node_dead expires now.

static void
test_heartbeat_keeps_alive(void **state)
{
    (void) state;
    s_node_t obs, peer;
    s_node_init(&obs, 0);
    s_node_init(&peer, 1);
    uint8_t task[32], relay[32];
    s_id("task", 1, task);
    s_id("node", 7, relay);
    ms_claim_t c;
    assert_int_equal(ms_lease_table_claim(peer.table, task, 0, false, &c),
                     MS_OK);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c), MS_OK);
    ms_claim_t out[4];
    bool live = false;
    for (int i = 0; i < 10; i++) { // five TTLs of heartbeats every TTL/2
        s_advance(&obs, S_TTL / 2);
        s_advance(&peer, S_TTL / 2);
        size_t n = 0;
        assert_int_equal(ms_lease_table_renew(peer.table, out, 4, &n), MS_OK);
        assert_int_equal(n, 1);
        assert_int_equal(ms_lease_table_heartbeat(obs.table, peer.id, out, n),
                         MS_OK);
        assert_int_equal(ms_lease_table_expire(obs.table, out, 4), 0);
        assert_int_equal(ms_lease_table_holder(obs.table, task, 0, NULL, &live),
                         MS_OK);
        assert_true(live);
    }
    int64_t last = obs.now.mono;
    assert_int_equal(ms_lease_table_next_expiry(obs.table), last + S_TTL);
    //  A relay vouching for the peer's claim is ignored.
    for (int i = 0; i < 3; i++) {
        s_advance(&obs, S_TTL / 2);
        assert_int_equal(ms_lease_table_heartbeat(obs.table, relay, &c, 1),
                         MS_OK);
    }
    assert_int_equal(ms_lease_table_holder(obs.table, task, 0, NULL, &live),
                     MS_OK);
    assert_false(live);
    assert_int_equal(ms_lease_table_expire(obs.table, out, 4), 1);
    //  A direct heartbeat revives it (and a later expiry is reported anew).
    assert_int_equal(ms_lease_table_heartbeat(obs.table, peer.id, &c, 1),
                     MS_OK);
    assert_int_equal(ms_lease_table_holder(obs.table, task, 0, NULL, &live),
                     MS_OK);
    assert_true(live);
    //  The mesh declares the peer dead: expired at once.
    assert_int_equal(ms_lease_table_node_dead(obs.table, peer.id), MS_OK);
    assert_int_equal(ms_lease_table_holder(obs.table, task, 0, NULL, &live),
                     MS_OK);
    assert_false(live);
    assert_true(ms_lease_table_can_claim(obs.table, task, 0, false, NULL));
    assert_int_equal(ms_lease_table_expire(obs.table, out, 4), 1);
    //  A heartbeat before the claim record: the lease runs from the
    //  heartbeat, not from the record's later arrival.
    uint8_t task2[32];
    s_id("task", 2, task2);
    ms_claim_t c2;
    assert_int_equal(ms_lease_table_claim(peer.table, task2, 0, false, &c2),
                     MS_OK);
    assert_int_equal(ms_lease_table_heartbeat(obs.table, peer.id, &c2, 1),
                     MS_OK);
    assert_int_equal(ms_lease_table_holder(obs.table, task2, 0, NULL, NULL),
                     MS_ERR_NOTFOUND); // no record yet: no holder
    assert_int_equal(ms_lease_table_max_epoch(obs.table, task2, 0), 0);
    s_advance(&obs, S_TTL - 100);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c2), MS_OK);
    assert_int_equal(ms_lease_table_holder(obs.table, task2, 0, NULL, &live),
                     MS_OK);
    assert_true(live);
    s_advance(&obs, 100);
    assert_int_equal(ms_lease_table_holder(obs.table, task2, 0, NULL, &live),
                     MS_OK);
    assert_false(live);
    //  A heartbeat naming the self node is ignored.
    assert_int_equal(ms_lease_table_heartbeat(obs.table, obs.id, NULL, 0),
                     MS_OK);
    ms_lease_table_destroy(&obs.table);
    ms_lease_table_destroy(&peer.table);
}

//  --------------------------------------------------------------------------
//  A SIGSTOPped holder woken after 2 x TTL: its peer took the slot over
//  with a higher epoch; the woken node does not renew, and is told it is
//  outranked (or, if it looks first, that its own lease expired).

static void
test_sigstop_holder_outranked(void **state)
{
    (void) state;
    s_node_t a, b;
    s_node_init(&a, 1);
    s_node_init(&b, 2);
    uint8_t task[32];
    s_id("task", 5, task);
    ms_claim_t ca;
    assert_int_equal(ms_lease_table_claim(a.table, task, 0, false, &ca), MS_OK);
    assert_int_equal(ms_lease_table_add_claim(b.table, &ca), MS_OK);
    //  a is stopped for 2 x TTL: both clocks run, a sends nothing.
    s_advance(&a, 2 * S_TTL);
    s_advance(&b, 2 * S_TTL);
    ms_claim_t out[4];
    assert_int_equal(ms_lease_table_expire(b.table, out, 4), 1);
    ms_claim_t cb;
    assert_int_equal(ms_lease_table_claim(b.table, task, 0, false, &cb), MS_OK);
    assert_int_equal(cb.epoch, 2);
    //  a wakes; b's claim arrives before a looks at its leases.
    size_t n = 99;
    assert_int_equal(ms_lease_table_renew(a.table, out, 4, &n), MS_OK);
    assert_int_equal(n, 0); // a lapsed lease is not renewed
    assert_int_equal(ms_lease_table_add_claim(a.table, &cb), MS_OK);
    assert_int_equal(ms_lease_table_outranked(a.table, out, 4), 1);
    assert_memory_equal(&out[0], &ca, sizeof ca);
    ms_claim_t h;
    bool live = false;
    assert_int_equal(ms_lease_table_holder(a.table, task, 0, &h, &live), MS_OK);
    assert_memory_equal(&h, &cb, sizeof cb);
    assert_true(live);
    assert_false(ms_lease_table_can_claim(a.table, task, 0, false, NULL));
    //  b keeps renewing its lease.
    assert_int_equal(ms_lease_table_renew(b.table, out, 4, &n), MS_OK);
    assert_int_equal(n, 1);

    //  Variant: the woken node looks at its leases first.
    s_node_t c;
    s_node_init(&c, 3);
    uint8_t task2[32];
    s_id("task", 6, task2);
    ms_claim_t cc;
    assert_int_equal(ms_lease_table_claim(c.table, task2, 0, false, &cc),
                     MS_OK);
    s_advance(&c, 2 * S_TTL);
    assert_int_equal(ms_lease_table_expire(c.table, out, 4), 1);
    assert_memory_equal(&out[0], &cc, sizeof cc);
    assert_int_equal(ms_lease_table_outranked(c.table, out, 4), 0);
    ms_lease_table_destroy(&a.table);
    ms_lease_table_destroy(&b.table);
    ms_lease_table_destroy(&c.table);
}

//  --------------------------------------------------------------------------
//  Release frees the slot (also when the release arrives first); an own
//  release returns the claim to publish and ends its renewal.

static void
test_release_frees_slot(void **state)
{
    (void) state;
    s_node_t obs, peer;
    s_node_init(&obs, 0);
    s_node_init(&peer, 1);
    uint8_t task[32], task2[32];
    s_id("task", 1, task);
    s_id("task", 2, task2);
    ms_claim_t c;
    assert_int_equal(ms_lease_table_claim(peer.table, task, 0, false, &c),
                     MS_OK);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c), MS_OK);
    assert_false(ms_lease_table_can_claim(obs.table, task, 0, false, NULL));
    ms_claim_t r;
    assert_int_equal(ms_lease_table_release(peer.table, task, 0, &r), MS_OK);
    assert_memory_equal(&r, &c, sizeof c);
    assert_int_equal(ms_lease_table_release(peer.table, task, 0, NULL),
                     MS_ERR_NOTFOUND);
    size_t n = 99;
    assert_int_equal(ms_lease_table_renew(peer.table, NULL, 0, &n), MS_OK);
    assert_int_equal(n, 0);
    ms_claim_t out[4];
    assert_int_equal(ms_lease_table_outranked(peer.table, out, 4), 0);
    assert_int_equal(ms_lease_table_add_release(obs.table, &r), MS_OK);
    assert_int_equal(ms_lease_table_holder(obs.table, task, 0, NULL, NULL),
                     MS_ERR_NOTFOUND);
    uint32_t epoch = 0;
    assert_true(ms_lease_table_can_claim(obs.table, task, 0, false, &epoch));
    assert_int_equal(epoch, 2);
    //  Release before claim.
    ms_claim_t c2 = s_claim(task2, 0, 1, peer.id);
    assert_int_equal(ms_lease_table_add_release(obs.table, &c2), MS_OK);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c2), MS_OK);
    assert_int_equal(ms_lease_table_holder(obs.table, task2, 0, NULL, NULL),
                     MS_ERR_NOTFOUND);
    //  A release names one epoch: a later claim of the node holds.
    ms_claim_t c3 = s_claim(task2, 0, 2, peer.id);
    assert_int_equal(ms_lease_table_add_claim(obs.table, &c3), MS_OK);
    ms_claim_t h;
    assert_int_equal(ms_lease_table_holder(obs.table, task2, 0, &h, NULL),
                     MS_OK);
    assert_int_equal(h.epoch, 2);
    ms_lease_table_destroy(&obs.table);
    ms_lease_table_destroy(&peer.table);
}

//  --------------------------------------------------------------------------
//  Finished slots and done tasks cannot be claimed; a node never claims a
//  second slot of a task it holds or has a result for.

static void
test_finished_slot_not_claimable(void **state)
{
    (void) state;
    s_node_t self, peer;
    s_node_init(&self, 0);
    s_node_init(&peer, 1);
    uint8_t task[32];
    s_id("task", 1, task);
    //  peer holds slot 0 and finishes it.
    ms_claim_t c = s_claim(task, 0, 1, peer.id);
    assert_int_equal(ms_lease_table_add_claim(self.table, &c), MS_OK);
    assert_int_equal(ms_lease_table_finish(self.table, task, 0, peer.id),
                     MS_OK);
    assert_true(ms_lease_table_slot_done(self.table, task, 0));
    assert_false(ms_lease_table_slot_done(self.table, task, 1));
    assert_int_equal(ms_lease_table_holder(self.table, task, 0, NULL, NULL),
                     MS_ERR_NOTFOUND);
    //  expired or not, a done slot is never claimable
    s_advance(&self, 3 * S_TTL);
    assert_false(ms_lease_table_can_claim(self.table, task, 0, false, NULL));
    //  slot 1 is free: self takes it, and may not take slot 2 as well.
    uint32_t slot = 99, epoch = 0;
    assert_int_equal(
        ms_lease_table_pick_slot(self.table, task, 3, false, &slot, &epoch),
        MS_OK);
    assert_int_equal(slot, 1);
    assert_int_equal(epoch, 1);
    ms_claim_t mine;
    assert_int_equal(ms_lease_table_claim(self.table, task, 1, false, &mine),
                     MS_OK);
    assert_false(ms_lease_table_can_claim(self.table, task, 2, false, NULL));
    assert_int_equal(
        ms_lease_table_pick_slot(self.table, task, 3, false, &slot, &epoch),
        MS_ERR_NOTFOUND);
    //  self's result lands: its claim ends quietly, and it still may not
    //  claim another slot (it has a result).
    assert_int_equal(
        ms_lease_table_finish(self.table, task, MS_LEASE_SLOT_ANY, self.id),
        MS_OK);
    ms_claim_t out[4];
    assert_int_equal(ms_lease_table_outranked(self.table, out, 4), 0);
    assert_true(ms_lease_table_slot_done(self.table, task, 1));
    assert_false(ms_lease_table_can_claim(self.table, task, 2, false, NULL));
    //  On another task: self_has_result (from the store) refuses too.
    uint8_t t2[32];
    s_id("task", 2, t2);
    assert_false(ms_lease_table_can_claim(self.table, t2, 0, true, NULL));
    assert_int_equal(ms_lease_table_claim(self.table, t2, 0, true, NULL),
                     MS_ERR_CONFLICT);
    //  A done task: own claims on it are reported, no slot is claimable.
    assert_int_equal(ms_lease_table_claim(self.table, t2, 0, false, &mine),
                     MS_OK);
    assert_int_equal(ms_lease_table_set_task_done(self.table, t2), MS_OK);
    assert_int_equal(ms_lease_table_outranked(self.table, out, 4), 1);
    assert_memory_equal(&out[0], &mine, sizeof mine);
    for (uint32_t s = 0; s < 4; s++)
        assert_false(ms_lease_table_can_claim(self.table, t2, s, false, NULL));
    //  Another node's result on the slot self holds: self stops.
    uint8_t t3[32];
    s_id("task", 3, t3);
    assert_int_equal(ms_lease_table_claim(self.table, t3, 0, false, &mine),
                     MS_OK);
    assert_int_equal(ms_lease_table_finish(self.table, t3, 0, peer.id), MS_OK);
    assert_int_equal(ms_lease_table_outranked(self.table, out, 4), 1);
    assert_memory_equal(&out[0], &mine, sizeof mine);
    ms_lease_table_destroy(&self.table);
    ms_lease_table_destroy(&peer.table);
}

//  --------------------------------------------------------------------------
//  The self node judges its own lease by the boot clock: a suspend (boot
//  runs, mono stands still) past the TTL ends it; renewals keep it.

static void
test_own_lease_boottime(void **state)
{
    (void) state;
    s_node_t self;
    s_node_init(&self, 0);
    uint8_t task[32];
    s_id("task", 1, task);
    ms_claim_t c;
    assert_int_equal(ms_lease_table_claim(self.table, task, 0, false, &c),
                     MS_OK);
    assert_int_equal(ms_lease_table_next_expiry(self.table),
                     self.now.mono + S_TTL);
    ms_claim_t out[4];
    size_t n = 0;
    for (int i = 0; i < 6; i++) {
        s_advance(&self, S_TTL / 2 - 1);
        assert_int_equal(ms_lease_table_renew(self.table, out, 4, &n), MS_OK);
        assert_int_equal(n, 1);
        assert_memory_equal(&out[0], &c, sizeof c);
    }
    //  renew with too small a buffer: all renewed, the count says so
    assert_int_equal(ms_lease_table_renew(self.table, NULL, 0, &n),
                     MS_ERR_RANGE);
    assert_int_equal(n, 1);
    //  Suspend: the boot clock runs on, the mono clock does not.
    self.now.boot += S_TTL;
    bool live = true;
    assert_int_equal(ms_lease_table_holder(self.table, task, 0, NULL, &live),
                     MS_OK);
    assert_false(live);
    assert_int_equal(ms_lease_table_next_expiry(self.table), self.now.mono);
    assert_int_equal(ms_lease_table_renew(self.table, out, 4, &n), MS_OK);
    assert_int_equal(n, 0);
    assert_int_equal(ms_lease_table_expire(self.table, out, 4), 1);
    assert_memory_equal(&out[0], &c, sizeof c);
    //  It re-checks: nobody else claimed, so it takes the slot back.
    uint32_t epoch = 0;
    assert_true(ms_lease_table_can_claim(self.table, task, 0, false, &epoch));
    assert_int_equal(epoch, 2);
    ms_claim_t c2;
    assert_int_equal(ms_lease_table_claim(self.table, task, 0, false, &c2),
                     MS_OK);
    assert_int_equal(ms_lease_table_outranked(self.table, out, 4), 0);
    assert_int_equal(ms_lease_table_renew(self.table, out, 4, &n), MS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].epoch, 2);
    //  The mono clock alone (no suspend) does not end an own lease early:
    //  the boot clock is the judge.
    self.now.mono += 5 * S_TTL;
    assert_int_equal(ms_lease_table_holder(self.table, task, 0, NULL, &live),
                     MS_OK);
    assert_true(live);
    ms_lease_table_destroy(&self.table);
}

//  --------------------------------------------------------------------------
//  Case 1 variant: a node restarted with the same store reads its own old
//  claim back; it has no lease in this process, so it takes the slot back
//  (epoch + 1) and not another slot.

static void
test_restart_takes_own_slot_back(void **state)
{
    (void) state;
    s_node_t self;
    s_node_init(&self, 0);
    uint8_t task[32];
    s_id("task", 1, task);
    ms_claim_t old = s_claim(task, 1, 3, self.id);
    assert_int_equal(ms_lease_table_add_claim(self.table, &old), MS_OK);
    ms_claim_t h;
    bool live = true;
    assert_int_equal(ms_lease_table_holder(self.table, task, 1, &h, &live),
                     MS_OK);
    assert_memory_equal(&h, &old, sizeof old);
    assert_false(live);
    ms_claim_t out[4];
    assert_int_equal(ms_lease_table_expire(self.table, out, 4), 1);
    assert_int_equal(ms_lease_table_outranked(self.table, out, 4), 0);
    uint32_t slot = 99, epoch = 0;
    assert_int_equal(
        ms_lease_table_pick_slot(self.table, task, 2, false, &slot, &epoch),
        MS_OK);
    assert_int_equal(slot, 1);
    assert_int_equal(epoch, 4);
    assert_false(ms_lease_table_can_claim(self.table, task, 0, false, NULL));
    ms_claim_t c;
    assert_int_equal(ms_lease_table_claim(self.table, task, 1, false, &c),
                     MS_OK);
    assert_int_equal(c.epoch, 4);
    assert_int_equal(ms_lease_table_holder(self.table, task, 1, &h, &live),
                     MS_OK);
    assert_memory_equal(&h, &c, sizeof c);
    assert_true(live);
    //  release names the newest own claim
    ms_claim_t r;
    assert_int_equal(ms_lease_table_release(self.table, task, 1, &r), MS_OK);
    assert_int_equal(r.epoch, 4);
    assert_int_equal(ms_lease_table_holder(self.table, task, 1, NULL, NULL),
                     MS_ERR_NOTFOUND);
    ms_lease_table_destroy(&self.table);
}

//  --------------------------------------------------------------------------
//  Many tasks: finished work leaves the periodic scans (next expiry goes
//  back to "none"), and the system clock works.

static void
test_many_tasks(void **state)
{
    (void) state;
    s_node_t obs;
    s_node_init(&obs, 0);
    uint8_t peer[32];
    s_id("node", 1, peer);
    enum { T = 20000 };
    for (int t = 0; t < T; t++) {
        uint8_t task[32];
        s_id("many", t, task);
        ms_claim_t c = s_claim(task, 0, 1, peer);
        assert_int_equal(ms_lease_table_add_claim(obs.table, &c), MS_OK);
    }
    assert_int_equal(ms_lease_table_size(obs.table), T);
    assert_int_equal(ms_lease_table_next_expiry(obs.table),
                     obs.now.mono + S_TTL);
    for (int t = 0; t < T; t++) {
        uint8_t task[32];
        s_id("many", t, task);
        assert_int_equal(ms_lease_table_finish(obs.table, task, 0, peer),
                         MS_OK);
        assert_true(ms_lease_table_slot_done(obs.table, task, 0));
    }
    assert_int_equal(ms_lease_table_next_expiry(obs.table), INT64_MAX);
    ms_claim_t out[4];
    s_advance(&obs, 2 * S_TTL);
    assert_int_equal(ms_lease_table_expire(obs.table, out, 4), 0);
    ms_lease_table_destroy(&obs.table);
    //  The system clock: boot >= mono, both advance.
    const ms_lease_clock_t *sys = ms_lease_clock_system();
    int64_t m = sys->mono_ms(sys->ctx), b = sys->boot_ms(sys->ctx);
    assert_true(m > 0);
    assert_true(b >= m);
    ms_lease_table_t *t = ms_lease_table_new(obs.id, S_TTL, NULL);
    assert_non_null(t);
    uint8_t task[32];
    s_id("many", 0, task);
    ms_claim_t c;
    assert_int_equal(ms_lease_table_claim(t, task, 0, false, &c), MS_OK);
    bool live = false;
    assert_int_equal(ms_lease_table_holder(t, task, 0, NULL, &live), MS_OK);
    assert_true(live);
    ms_lease_table_destroy(&t);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_config),
        cmocka_unit_test(test_claim_higher_epoch_wins),
        cmocka_unit_test(test_claim_tie_broken_by_hash),
        cmocka_unit_test(test_holder_independent_of_order),
        cmocka_unit_test(test_case2_concurrent_claims),
        cmocka_unit_test(test_expire_after_ttl),
        cmocka_unit_test(test_heartbeat_keeps_alive),
        cmocka_unit_test(test_sigstop_holder_outranked),
        cmocka_unit_test(test_release_frees_slot),
        cmocka_unit_test(test_finished_slot_not_claimable),
        cmocka_unit_test(test_own_lease_boottime),
        cmocka_unit_test(test_restart_takes_own_slot_back),
        cmocka_unit_test(test_many_tasks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
