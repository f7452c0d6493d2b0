/*  =========================================================================
    ms_store_replica_test - extra replicas are never a second row; result
    rows over 64 KiB travel as fragments

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Work, claims and leases": a result finished by a node that
    was outranked on its slot is "an extra replica, never a second row".
    Each case merges the same records (a sweep and results of one task
    from several nodes) into fresh stores in EVERY arrival order and
    checks that all of them derive the same results table (row count,
    results digest, state digest) and which results fill the slots:
    - replicas 1, two nodes on slot 0 at epoch 1: one row (the lower
      H(task, slot, node)), the other an extra replica;
    - replicas 1, the second node at epoch 2: its row, whatever the hash;
    - replicas 2: both rows; a third node's result is the extra one;
    - replicas 2 with two results on slot 0 (epochs 1, 2) and one on slot
      1: the slot-0 top claim and the slot-1 result fill, the outranked
      slot-0 result is extra;
    - commit then reveal (replicas 2): every result above reveals a
      matching commit (seq 1, the result seq 2); a result without one,
      with a commit over other metrics, with its commit after it, or
      without its nonce is stored but not counted, a copy published
      before the node's own committed result does not hide it; with
      replicas 1 a
      result without a commit counts; the commitment binds node, nonce
      and metrics only;
    - a quarantine flip while a task is derived: the task is counted once
      in its sweep, and a node at exactly K strikes whose struck task is
      evaluated again does not set off a cascade of re-derivations;
    - a quarantine clear forgives the strikes of the results inside its
      cut, in every order of the clear and the results (same verdict rows,
      results digest and standing), and strikes above the cut still count;
    ms_results lists the table by default and, with ALL, the extra
    replicas flagged "replica": "extra", "counted": false.
    Then a 300 KiB result row (a long curve) appended on store A is
    carried in FRAGMENT records, merged into store B block by block, and
    read back byte for byte on both; a row over
    MS_WIRE_MAX_RESULT_PAYLOAD_BYTES is refused with MS_ERR_RANGE.
*/
#include "ms_results.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_verdict.h"

#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_wire.h"
#include "ms_test_fs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_store_fixture.h"

#define ID MS_STORE_ID_BYTES
#define MAX_RECS 5

typedef ms_sf_t fixture_t;

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_store_replica_test");
}

// One record of some origin (seq 1 of incarnation 1: each record of a
// case has its own origin, so any order keeps every origin contiguous),
// or, for a result, a block of its commit then itself (seq 1, 2) or
// itself then a commit (commit_after).
typedef struct {
    uint8_t origin[ID];
    uint32_t kind;
    uint8_t *bytes;
    size_t len;
    uint8_t *commit; // a COMMIT record's payload, or NULL
    size_t commit_len;
    bool commit_after; // the commit at seq 2, after the result
    uint8_t *copy;     // a result without nonce before both, or NULL
    size_t copy_len;
} rec_t;

// How s_result_as commits its result.
typedef enum {
    S_COMMIT_REVEAL,   // a matching commit at seq 1, the result at seq 2
    S_COMMIT_NONE,     // the result alone, no nonce
    S_COMMIT_WRONG,    // a commit over other metrics, then the result
    S_COMMIT_AFTER,    // the result (with its nonce) then its commit
    S_COMMIT_NO_NONCE, // a matching commit, then the result without nonce
    S_COMMIT_LATE,     // a copy (no commit) at seq 1, then commit, reveal
} s_commit_mode_t;

// Rows carry test metrics (a verdict can count them) when set.
static bool s_metrics = false;
// When > 0: the pool's operator count each store is given, and the
// slots ms_store_task_slots must report once every record is merged.
static uint32_t s_pool_ops = 0, s_want_slots = 0;

// One test sweep: its id, its single task's id, its sweep record.
typedef struct {
    uint8_t sweep_id[ID];
    uint8_t task_id[ID];
    rec_t rec;
} sweep_t;

//  --------------------------------------------------------------------------
//  A sweep of one task with verify.replicas REPLICAS, as a sweep record
//  of origin 0xEE.

static void
s_sweep_of_kind(sweep_t *s, int replicas, int tag, bool noop)
{
    memset(&s->rec, 0, sizeof s->rec);
    ms_sf_replica_sweep(replicas, tag, noop, s->sweep_id, s->task_id,
                        &s->rec.bytes, &s->rec.len);
    memset(s->rec.origin, 0xEE, ID);
    s->rec.kind = MS_RECORD_SWEEP;
}

static void
s_sweep(sweep_t *s, int replicas, int tag)
{
    s_sweep_of_kind(s, replicas, tag, false);
}

//  --------------------------------------------------------------------------
//  A result of S's task by node NODE (origin NODE x 32) for SLOT at
//  EPOCH, its row naming the node.

static void
s_result_as(rec_t *r, const sweep_t *s, uint8_t node, uint32_t slot,
            uint32_t epoch, s_commit_mode_t mode)
{
    char row[256];
    snprintf(row, sizeof row,
             "{\"status\":\"ok\",\"node\":%u,\"slot\":%u,\"epoch\":%u,"
             "\"counted\":true,\"val_accuracy\":0.5%s}",
             node, slot, epoch,
             s_metrics ? ",\"test_accuracy\":0.9,\"test_loss\":0.3" : "");
    memset(r, 0, sizeof *r);
    memset(r->origin, node, ID);
    ms_store_payload_t p = {.kind = MS_RECORD_RESULT};
    memcpy(p.u.result.task_id, s->task_id, ID);
    p.u.result.row_json = row;
    p.u.result.row_len = strlen(row);
    p.u.result.slot = slot;
    p.u.result.epoch = epoch;
    p.u.result.has_nonce = mode != S_COMMIT_NONE && mode != S_COMMIT_NO_NONCE;
    memset(p.u.result.nonce, 0x40 + node, ID);
    if (mode != S_COMMIT_NONE) {
        ms_store_payload_t c = {.kind = MS_RECORD_COMMIT};
        memcpy(c.u.commit.task_id, s->task_id, ID);
        c.u.commit.slot = slot;
        c.u.commit.epoch = epoch;
        const char *what = mode == S_COMMIT_WRONG
                               ? "{\"status\":\"ok\",\"val_accuracy\":0.9}"
                               : row;
        assert_int_equal(
            ms_store_payload_commitment(r->origin, p.u.result.nonce, what,
                                        strlen(what), c.u.commit.commitment),
            MS_OK);
        assert_int_equal(
            ms_store_payload_encode(&c, &r->commit, &r->commit_len), MS_OK);
        r->commit_after = mode == S_COMMIT_AFTER;
    }
    if (mode == S_COMMIT_LATE) {
        ms_store_payload_t c = p;
        const char *copy = "{\"status\":\"ok\",\"copy\":true}";
        c.u.result.row_json = copy;
        c.u.result.row_len = strlen(copy);
        c.u.result.has_nonce = false;
        assert_int_equal(ms_store_payload_encode(&c, &r->copy, &r->copy_len),
                         MS_OK);
    }
    r->kind = MS_RECORD_RESULT;
    assert_int_equal(ms_store_payload_encode(&p, &r->bytes, &r->len), MS_OK);
}

//  --------------------------------------------------------------------------
//  A result revealing its matching commit (see s_result_as).

static void
s_result(rec_t *r, const sweep_t *s, uint8_t node, uint32_t slot,
         uint32_t epoch)
{
    s_result_as(r, s, node, slot, epoch, S_COMMIT_REVEAL);
}

//  --------------------------------------------------------------------------
//  H(task || slot (BE) || node x 32): the claims' rank hash.

static void
s_rank(const sweep_t *s, uint32_t slot, uint8_t node, uint8_t out[32])
{
    uint8_t buf[ID + 4 + ID];
    memcpy(buf, s->task_id, ID);
    buf[ID] = (uint8_t) (slot >> 24);
    buf[ID + 1] = (uint8_t) (slot >> 16);
    buf[ID + 2] = (uint8_t) (slot >> 8);
    buf[ID + 3] = (uint8_t) slot;
    memset(buf + ID + 4, node, ID);
    ms_hash_t h;
    ms_hash_bytes(buf, sizeof buf, &h);
    memcpy(out, h.bytes, 32);
}

// What a store derived: the row count, the digests, the nodes of the
// rows and of the extra replicas (from the rows' "node").
typedef struct {
    uint64_t n_rows;
    uint8_t results[32], state[32];
    int rows[MAX_RECS], n_fill; // nodes of the table's rows
    int extras[MAX_RECS], n_extra;
} seen_t;

//  --------------------------------------------------------------------------
//  Collect one counted result's node.

static int
s_collect(void *arg, const char *json, size_t n, bool extra)
{
    seen_t *seen = arg;
    json_error_t err;
    json_t *row = json_loadb(json, n, 0, &err);
    assert_non_null(row);
    int node = (int) json_integer_value(json_object_get(row, "node"));
    json_decref(row);
    if (extra && seen->n_extra < MAX_RECS)
        seen->extras[seen->n_extra++] = node;
    else if (!extra && seen->n_fill < MAX_RECS)
        seen->rows[seen->n_fill++] = node;
    return 0;
}

//  --------------------------------------------------------------------------
//  Merge RECS in the order ORDER into a new store; what it derived.

static void
s_merge_in_order(fixture_t *fx, const sweep_t *s, rec_t *const *recs,
                 const int *order, int n, seen_t *seen)
{
    ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
    if (s_pool_ops)
        assert_int_equal(ms_store_set_pool_operators(store, s_pool_ops), MS_OK);
    for (int i = 0; i < n; i++) {
        const rec_t *r = recs[order[i]];
        const uint8_t *pl[3] = {r->bytes, r->commit};
        uint32_t kinds[3] = {r->kind, MS_RECORD_COMMIT};
        size_t lens[3] = {r->len, r->commit_len};
        size_t n_recs = r->commit ? 2 : 1;
        if (r->commit && !r->commit_after) {
            pl[0] = r->commit, pl[1] = r->bytes;
            kinds[0] = MS_RECORD_COMMIT, kinds[1] = r->kind;
            lens[0] = r->commit_len, lens[1] = r->len;
        }
        if (r->copy) { // the copy first, then the rest
            for (size_t j = n_recs; j > 0; j--)
                pl[j] = pl[j - 1], kinds[j] = kinds[j - 1],
                lens[j] = lens[j - 1];
            pl[0] = r->copy, kinds[0] = MS_RECORD_RESULT, lens[0] = r->copy_len;
            n_recs++;
        }
        ms_store_merge_result_t out;
        assert_int_equal(ms_store_merge_block(store, r->origin, 1, 1, n_recs,
                                              kinds, pl, lens, NULL, 0, &out),
                         MS_OK);
        assert_int_equal(out.n_new, n_recs);
    }
    memset(seen, 0, sizeof *seen);
    assert_int_equal(ms_store_results_count(store, &seen->n_rows), MS_OK);
    assert_int_equal(ms_store_results_digest(store, seen->results), MS_OK);
    assert_int_equal(ms_store_state_digest(store, seen->state), MS_OK);
    assert_int_equal(
        ms_store_results_by_task_all(store, s->task_id, s_collect, seen),
        MS_OK);
    assert_int_equal(seen->n_fill, (int) seen->n_rows);
    if (s_pool_ops) {
        uint32_t n_slots = 0;
        assert_int_equal(ms_store_task_slots(store, s->task_id, &n_slots, NULL),
                         MS_OK);
        assert_int_equal(n_slots, s_want_slots);
        ms_store_destroy(&store); // a pending task has no row to list
        return;
    }
    // ms_results: the table by default, extra replicas flagged with ALL.
    ms_hash_t sid;
    memcpy(sid.bytes, s->sweep_id, ID);
    json_t *rows = NULL, *all = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_results_rows(store, &sid, &rows, &diag), MS_OK);
    assert_int_equal(json_array_size(rows), seen->n_rows);
    assert_int_equal(ms_results_rows_all(store, &sid, true, &all, &diag),
                     MS_OK);
    assert_int_equal(json_array_size(all), seen->n_rows + seen->n_extra);
    size_t k;
    json_t *row;
    json_array_foreach(all, k, row)
    {
        bool extra = k >= seen->n_rows;
        const char *replica =
            json_string_value(json_object_get(row, "replica"));
        assert_true(extra ? replica && !strcmp(replica, "extra") : !replica);
        assert_true(json_is_boolean(json_object_get(row, "counted")));
        assert_true(json_boolean_value(json_object_get(row, "counted")) ==
                    !extra);
    }
    json_decref(rows);
    json_decref(all);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Next permutation of order[0..n) (lexicographic); false after the last.

static bool
s_next_perm(int *order, int n)
{
    int i = n - 2;
    while (i >= 0 && order[i] >= order[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (order[j] <= order[i])
        j--;
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        t = order[a];
        order[a] = order[b];
        order[b] = t;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  True when the node list holds NODE.

static bool
s_has(const int *nodes, int n, int node)
{
    for (int i = 0; i < n; i++)
        if (nodes[i] == node)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Merge the sweep and RESULTS in every order: each store derives the
//  same table; it has the rows of FILL and the extra replicas of EXTRA.

static void
s_every_order(fixture_t *fx, sweep_t *s, rec_t *results, int n_results,
              const int *fill, int n_fill, const int *extra, int n_extra)
{
    rec_t *recs[MAX_RECS];
    recs[0] = &s->rec;
    for (int i = 0; i < n_results; i++)
        recs[i + 1] = &results[i];
    int n = n_results + 1, order[MAX_RECS];
    for (int i = 0; i < n; i++)
        order[i] = i;
    seen_t first, seen;
    int n_orders = 0;
    do {
        s_merge_in_order(fx, s, recs, order, n, n_orders ? &seen : &first);
        if (n_orders++ == 0)
            continue;
        assert_int_equal(seen.n_rows, first.n_rows);
        assert_memory_equal(seen.results, first.results, 32);
        assert_memory_equal(seen.state, first.state, 32);
    } while (s_next_perm(order, n));
    assert_int_equal(first.n_rows, n_fill);
    assert_int_equal(first.n_extra, n_extra);
    for (int i = 0; i < n_fill; i++)
        assert_true(s_has(first.rows, first.n_fill, fill[i]));
    for (int i = 0; i < n_extra; i++)
        assert_true(s_has(first.extras, first.n_extra, extra[i]));
    fprintf(stderr, "%d arrival orders: %llu row(s), %d extra\n", n_orders,
            (unsigned long long) first.n_rows, first.n_extra);
    for (int i = 0; i < n_results; i++) {
        free(results[i].bytes);
        free(results[i].commit);
        free(results[i].copy);
    }
    free(s->rec.bytes);
}

//  --------------------------------------------------------------------------
//  replicas 1: two nodes both ran the task (slot 0, epoch 1): one row,
//  the lower rank hash; the other is an extra replica, in every order.

static void
test_replicas_1_same_epoch(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep(&s, 1, 1);
    rec_t res[2];
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result(&res[1], &s, 0x22, 0, 1);
    uint8_t h1[32], h2[32];
    s_rank(&s, 0, 0x11, h1);
    s_rank(&s, 0, 0x22, h2);
    int win = memcmp(h1, h2, 32) < 0 ? 0x11 : 0x22;
    int lose = win == 0x11 ? 0x22 : 0x11;
    s_every_order(fx, &s, res, 2, &win, 1, &lose, 1);
}

//  --------------------------------------------------------------------------
//  replicas 1: the node that claimed at epoch 2 (the slot's top claim)
//  fills the slot whatever the hashes; the outranked epoch-1 holder that
//  finished anyway is the extra replica.

static void
test_replicas_1_higher_epoch(void **state)
{
    fixture_t *fx = *state;
    for (int flip = 0; flip < 2; flip++) {
        sweep_t s;
        s_sweep(&s, 1, 2 + flip);
        rec_t res[2];
        int old_node = flip ? 0x22 : 0x11, new_node = flip ? 0x11 : 0x22;
        s_result(&res[0], &s, (uint8_t) old_node, 0, 1);
        s_result(&res[1], &s, (uint8_t) new_node, 0, 2);
        s_every_order(fx, &s, res, 2, &new_node, 1, &old_node, 1);
    }
}

//  --------------------------------------------------------------------------
//  replicas 2: two results both fill; a third node's is extra.

static void
test_replicas_2(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep(&s, 2, 4);
    rec_t res[2];
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result(&res[1], &s, 0x22, 0, 1);
    int both[2] = {0x11, 0x22};
    s_every_order(fx, &s, res, 2, both, 2, NULL, 0);

    s_sweep(&s, 2, 5);
    rec_t res3[3];
    s_result(&res3[0], &s, 0x11, 0, 1);
    s_result(&res3[1], &s, 0x22, 1, 1);
    s_result(&res3[2], &s, 0x33, 1, 1);
    // Slot 0: 0x11 alone. Slot 1: the lower H(task, 1, node) of 0x22
    // and 0x33.
    uint8_t h2[32], h3[32];
    s_rank(&s, 1, 0x22, h2);
    s_rank(&s, 1, 0x33, h3);
    int fill[2] = {0x11, memcmp(h2, h3, 32) < 0 ? 0x22 : 0x33};
    int extra = fill[1] == 0x22 ? 0x33 : 0x22;
    s_every_order(fx, &s, res3, 3, fill, 2, &extra, 1);
}

//  --------------------------------------------------------------------------
//  replicas 2: slot 0 taken over at epoch 2 (0x33) from a holder that
//  finished anyway (0x11), slot 1 held by 0x22: rows 0x33 and 0x22, never
//  the outranked 0x11, whatever its hash.

static void
test_replicas_2_per_slot(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep(&s, 2, 6);
    rec_t res[3];
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result(&res[1], &s, 0x33, 0, 2);
    s_result(&res[2], &s, 0x22, 1, 1);
    int fill[2] = {0x33, 0x22}, extra = 0x11;
    s_every_order(fx, &s, res, 3, fill, 2, &extra, 1);
}

//  --------------------------------------------------------------------------
//  Commit then reveal, replicas 2: a result counts only when the same
//  node published a matching commit earlier in its log. 0x11 and 0x22
//  reveal their commits and fill the slots; 0x33 (no commit: a copier),
//  0x44 (a commit over other metrics), 0x55 (its commit after the result)
//  and 0x66 (a commit, but the result carries no nonce) are stored but
//  not counted: no row, not extra, in every order of arrival. With
//  replicas 1 a result without a commit counts as before.

static void
test_commit_reveal(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep(&s, 2, 7);
    rec_t res[4];
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result(&res[1], &s, 0x22, 1, 1);
    s_result_as(&res[2], &s, 0x33, 1, 2, S_COMMIT_NONE);
    s_result_as(&res[3], &s, 0x44, 0, 2, S_COMMIT_WRONG);
    int both[2] = {0x11, 0x22};
    s_every_order(fx, &s, res, 4, both, 2, NULL, 0);

    s_sweep(&s, 2, 8);
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result_as(&res[1], &s, 0x55, 1, 1, S_COMMIT_AFTER);
    s_result_as(&res[2], &s, 0x66, 1, 1, S_COMMIT_NO_NONCE);
    int one = 0x11;
    s_every_order(fx, &s, res, 3, &one, 1, NULL, 0);

    // A node that published a copy first (not counted) and then its own
    // committed result: the committed one counts (the first committed of
    // its incarnation, not the first of all).
    s_sweep(&s, 2, 10);
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result_as(&res[1], &s, 0x77, 1, 1, S_COMMIT_LATE);
    int late[2] = {0x11, 0x77};
    s_every_order(fx, &s, res, 2, late, 2, NULL, 0);

    s_sweep(&s, 1, 9);
    s_result_as(&res[0], &s, 0x33, 0, 1, S_COMMIT_NONE);
    int copier = 0x33;
    s_every_order(fx, &s, res, 1, &copier, 1, NULL, 0);
}

//  --------------------------------------------------------------------------
//  A slot finished by a result that does not count is open again
//  (replicas 2, a pool of 3 operators): 0x11 fills slot 0 with a
//  committed result, 0x33 finished slot 1 with a copy (no commit: never
//  counted). The lease table keeps slot 1 done, so the task wants 2
//  counted results and the scheduler must look at 3 slots; in every
//  arrival order. With 0x33's result committed the task is verified: no
//  slot.

static void
test_void_slot(void **state)
{
    fixture_t *fx = *state;
    s_metrics = true;
    s_pool_ops = 3;
    sweep_t s;
    s_sweep(&s, 2, 11);
    rec_t res[2];
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result_as(&res[1], &s, 0x33, 1, 1, S_COMMIT_NONE);
    s_want_slots = 3;
    int one = 0x11;
    s_every_order(fx, &s, res, 2, &one, 1, NULL, 0);

    s_sweep(&s, 2, 12);
    s_result(&res[0], &s, 0x11, 0, 1);
    s_result(&res[1], &s, 0x33, 1, 1);
    s_want_slots = 0;
    int both[2] = {0x11, 0x33};
    s_every_order(fx, &s, res, 2, both, 2, NULL, 0);
    s_metrics = false;
    s_pool_ops = 0;
}

//  --------------------------------------------------------------------------
//  The commitment binds the node, the nonce and the metrics (status,
//  accuracies, losses, weights digest) but not the rest of the row, and
//  is independent of the row's key order and spacing.

static void
test_commitment(void **state)
{
    (void) state;
    uint8_t a[ID], b[ID], n1[ID], n2[ID], c[ID], d[ID];
    memset(a, 1, ID);
    memset(b, 2, ID);
    memset(n1, 3, ID);
    memset(n2, 4, ID);
    const char *row = "{\"status\":\"ok\",\"test_accuracy\":0.875,"
                      "\"test_loss\":0.25,\"weights_digest\":\"ab\","
                      "\"train_seconds\":1.5}";
    const char *same = "{ \"train_seconds\": 9, \"weights_digest\": \"ab\","
                       " \"test_loss\": 0.25, \"test_accuracy\": 0.875,"
                       " \"status\": \"ok\", \"val_loss\": null }";
    const char *other_acc = "{\"status\":\"ok\",\"test_accuracy\":0.876,"
                            "\"test_loss\":0.25,\"weights_digest\":\"ab\"}";
    const char *other_dig = "{\"status\":\"ok\",\"test_accuracy\":0.875,"
                            "\"test_loss\":0.25,\"weights_digest\":\"ac\"}";
    assert_int_equal(ms_store_payload_commitment(a, n1, row, strlen(row), c),
                     MS_OK);
    assert_int_equal(ms_store_payload_commitment(a, n1, same, strlen(same), d),
                     MS_OK);
    assert_memory_equal(c, d, ID);
    assert_int_equal(ms_store_payload_commitment(b, n1, row, strlen(row), d),
                     MS_OK);
    assert_memory_not_equal(c, d, ID);
    assert_int_equal(ms_store_payload_commitment(a, n2, row, strlen(row), d),
                     MS_OK);
    assert_memory_not_equal(c, d, ID);
    assert_int_equal(
        ms_store_payload_commitment(a, n1, other_acc, strlen(other_acc), d),
        MS_OK);
    assert_memory_not_equal(c, d, ID);
    assert_int_equal(
        ms_store_payload_commitment(a, n1, other_dig, strlen(other_dig), d),
        MS_OK);
    assert_memory_not_equal(c, d, ID);
    assert_int_equal(ms_store_payload_commitment(a, n1, "[1]", 3, d),
                     MS_ERR_INVALID);
    assert_int_equal(ms_store_payload_commitment(a, n1, "{", 1, d),
                     MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  A result row of about BYTES bytes: a curve of pseudo-random numbers.

static char *
s_big_row(size_t bytes)
{
    char *row = malloc(bytes + 256);
    assert_non_null(row);
    size_t off = (size_t) sprintf(row, "{\"status\":\"ok\",\"node\":7,"
                                       "\"curve\":[");
    uint64_t x = 88172645463325252ull;
    for (int i = 0; off < bytes; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        off += (size_t) sprintf(row + off, "%s%.17g", i ? "," : "",
                                (double) (x >> 11) / 9007199254740992.0);
    }
    sprintf(row + off, "]}");
    return row;
}

// Blocks read from a store, to merge into another.
typedef struct {
    ms_store_t *into;
    size_t n_blocks, n_fragments;
} copy_t;

//  --------------------------------------------------------------------------
//  Merge one block read from store A into store B.

static int
s_copy_block(void *arg, const uint8_t *origin, uint64_t inc, uint64_t first,
             size_t n, const uint32_t *kinds, const uint8_t *const *payloads,
             const size_t *lens, const uint8_t *sig, size_t sig_len)
{
    copy_t *c = arg;
    for (size_t i = 0; i < n; i++) {
        assert_true(lens[i] <= MS_WIRE_MAX_PAYLOAD_BYTES);
        c->n_fragments += kinds[i] == MS_RECORD_FRAGMENT;
    }
    c->n_blocks++;
    return ms_store_merge_block(c->into, origin, inc, first, n, kinds, payloads,
                                lens, sig, sig_len, NULL);
}

// One row's text, copied out of a row callback.
typedef struct {
    char *text;
    size_t len;
    int n;
} row_t;

static int
s_take_row(void *arg, const char *json, size_t n)
{
    row_t *r = arg;
    r->n++;
    free(r->text);
    r->text = malloc(n + 1);
    memcpy(r->text, json, n + 1);
    r->len = n;
    return 0;
}

//  --------------------------------------------------------------------------
//  Re-evaluation records reach the verdict (replicas 1, pool 3): a result
//  of 0x11 is accepted; two other operators recompute 0.05 less: disputed
//  and struck, 2 slots wanted; on another store one agreeing
//  re-evaluation verifies it, a failed one (no weights) disputes it.

static void
s_merge_one(ms_store_t *store, const uint8_t *origin, uint64_t seq,
            const ms_store_payload_t *p)
{
    ms_sf_merge_one(store, origin, seq, p);
}

//  --------------------------------------------------------------------------
//  A noop task has no weights: its results are never queued for
//  re-evaluation sampling, and a re-evaluation of one (a node of an older
//  version sampled them and published "weights not found") changes
//  nothing: the result stays accepted and no slot opens.

static void
test_noop_never_reevaluated(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep_of_kind(&s, 1, 43, true);
    const char *row = "{\"status\":\"ok\",\"test_accuracy\":0,"
                      "\"test_loss\":0}";
    ms_store_payload_t res = {.kind = MS_RECORD_RESULT};
    memcpy(res.u.result.task_id, s.task_id, ID);
    res.u.result.row_json = row;
    res.u.result.row_len = strlen(row);
    res.u.result.epoch = 1;
    uint8_t o_sweep[ID], o11[ID], o22[ID];
    memset(o_sweep, 0xEE, ID);
    memset(o11, 0x11, ID);
    memset(o22, 0x22, ID);
    ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
    assert_int_equal(ms_store_set_pool_operators(store, 3), MS_OK);
    const uint8_t *pl[1] = {s.rec.bytes};
    uint32_t kinds[1] = {MS_RECORD_SWEEP};
    size_t lens[1] = {s.rec.len};
    ms_store_merge_result_t mo;
    assert_int_equal(ms_store_merge_block(store, o_sweep, 1, 1, 1, kinds, pl,
                                          lens, NULL, 0, &mo),
                     MS_OK);
    s_merge_one(store, o11, 1, &res);
    ms_store_new_result_t nr[4];
    assert_int_equal(ms_store_new_results(store, nr, 4), 0);
    ms_store_verdict_t v;
    assert_int_equal(ms_store_get_verdict(store, s.task_id, &v), MS_OK);
    assert_int_equal(v.verdict, MS_VERDICT_ACCEPTED);
    ms_store_payload_t e = {.kind = MS_RECORD_REEVALUATION};
    memcpy(e.u.reeval.task_id, s.task_id, ID);
    // its target: the result's record hash, BLAKE2b(origin || incarnation
    // || seq || kind || payload), all big-endian (ms_store.c "Record log")
    uint8_t *bytes = NULL, key[ID + 16] = {0}, kb[4] = {0, 0, 0, 0};
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(&res, &bytes, &len), MS_OK);
    memcpy(key, o11, ID);
    key[ID + 7] = 1;  // incarnation 1
    key[ID + 15] = 1; // seq 1
    kb[3] = (uint8_t) MS_RECORD_RESULT;
    ms_hasher_t h;
    ms_hash_t target;
    ms_hasher_init(&h);
    ms_hasher_update(&h, key, sizeof key);
    ms_hasher_update(&h, kb, 4);
    ms_hasher_update(&h, bytes, len);
    ms_hasher_final(&h, &target);
    free(bytes);
    memcpy(e.u.reeval.target, target.bytes, ID);
    e.u.reeval.status = MS_WIRE_REEVAL_FAILED;
    snprintf(e.u.reeval.reason, sizeof e.u.reeval.reason, "weights not found");
    s_merge_one(store, o22, 1, &e);
    assert_int_equal(ms_store_get_verdict(store, s.task_id, &v), MS_OK);
    assert_int_equal(v.verdict, MS_VERDICT_ACCEPTED);
    assert_int_equal(v.slots_wanted, 1);
    ms_store_destroy(&store);
    free(s.rec.bytes);
}

static void
test_reevaluation_verdicts(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep(&s, 1, 41);
    const char *row = "{\"status\":\"ok\",\"test_accuracy\":0.9,"
                      "\"test_loss\":0.3,\"val_accuracy\":0.9}";
    ms_store_payload_t res = {.kind = MS_RECORD_RESULT};
    memcpy(res.u.result.task_id, s.task_id, ID);
    res.u.result.row_json = row;
    res.u.result.row_len = strlen(row);
    res.u.result.epoch = 1;
    uint8_t o_sweep[ID], o11[ID], o22[ID], o33[ID];
    memset(o_sweep, 0xEE, ID);
    memset(o11, 0x11, ID);
    memset(o22, 0x22, ID);
    memset(o33, 0x33, ID);
    for (int variant = 0; variant < 2; variant++) {
        ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
        assert_int_equal(ms_store_set_pool_operators(store, 3), MS_OK);
        const uint8_t *pl[1] = {s.rec.bytes};
        uint32_t kinds[1] = {MS_RECORD_SWEEP};
        size_t lens[1] = {s.rec.len};
        ms_store_merge_result_t mo;
        assert_int_equal(ms_store_merge_block(store, o_sweep, 1, 1, 1, kinds,
                                              pl, lens, NULL, 0, &mo),
                         MS_OK);
        s_merge_one(store, o11, 1, &res);
        ms_store_verdict_t v;
        assert_int_equal(ms_store_get_verdict(store, s.task_id, &v), MS_OK);
        assert_int_equal(v.verdict, MS_VERDICT_ACCEPTED);
        ms_store_new_result_t nr[4];
        assert_int_equal(ms_store_new_results(store, nr, 4), 1);
        assert_memory_equal(nr[0].node_id, o11, ID);
        ms_store_payload_t e = {.kind = MS_RECORD_REEVALUATION};
        memcpy(e.u.reeval.task_id, s.task_id, ID);
        memcpy(e.u.reeval.target, nr[0].record_hash, ID);
        e.u.reeval.status = MS_WIRE_REEVAL_OK;
        e.u.reeval.test_loss = 0.3;
        if (variant == 0) {
            e.u.reeval.test_accuracy = 0.85;
            s_merge_one(store, o22, 1, &e);
            assert_int_equal(ms_store_get_verdict(store, s.task_id, &v), MS_OK);
            assert_int_equal(v.verdict, MS_VERDICT_DISPUTED);
            assert_false(v.marks[0].strike); // one verifier never strikes
            s_merge_one(store, o33, 1, &e);
            assert_int_equal(ms_store_get_verdict(store, s.task_id, &v), MS_OK);
            assert_int_equal(v.verdict, MS_VERDICT_DISPUTED);
            assert_int_equal(v.slots_wanted, 2);
            assert_false(v.final);
            assert_true(v.marks[0].strike);
            uint32_t n = 0, strikes = 0;
            bool q = true;
            assert_int_equal(
                ms_store_node_standing(store, o11, &n, &strikes, &q), MS_OK);
            assert_int_equal(strikes, 1);
            bool mine = false;
            assert_int_equal(ms_store_reevals_of(store, s.task_id,
                                                 nr[0].record_hash, o33, &n,
                                                 &mine),
                             MS_OK);
            assert_int_equal(n, 2);
            assert_true(mine);
        } else {
            e.u.reeval.test_accuracy = 0.901;
            s_merge_one(store, o22, 1, &e);
            assert_int_equal(ms_store_get_verdict(store, s.task_id, &v), MS_OK);
            assert_int_equal(v.verdict, MS_VERDICT_VERIFIED);
            assert_true(v.final);
            e.u.reeval.status = MS_WIRE_REEVAL_FAILED;
            e.u.reeval.test_accuracy = e.u.reeval.test_loss = 0;
            snprintf(e.u.reeval.reason, sizeof e.u.reeval.reason,
                     "weights not found");
            s_merge_one(store, o33, 1, &e);
            assert_int_equal(ms_store_get_verdict(store, s.task_id, &v), MS_OK);
            assert_int_equal(v.verdict, MS_VERDICT_DISPUTED); // 1 against 1
            assert_false(v.marks[0].strike);
        }
        ms_store_destroy(&store);
    }
    free(s.rec.bytes);
}

//  --------------------------------------------------------------------------
//  A 300 KiB row: appended (fragments, each within one wire record),
//  merged into another store, read back whole on both; over the result
//  limit it is refused with MS_ERR_RANGE.

static void
test_big_row(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep(&s, 1, 7);
    char *row = s_big_row(300 * 1024);
    size_t row_len = strlen(row);
    ms_store_payload_t p = {.kind = MS_RECORD_RESULT};
    memcpy(p.u.result.task_id, s.task_id, ID);
    p.u.result.row_json = row;
    p.u.result.row_len = row_len;
    p.u.result.epoch = 1;
    uint8_t *payload = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(&p, &payload, &len), MS_OK);
    assert_true(len > MS_WIRE_MAX_PAYLOAD_BYTES);

    ms_store_t *a = ms_sf_open(fx, NULL, 4 << 20),
               *b = ms_sf_open(fx, NULL, 4 << 20);
    const uint8_t *pl = s.rec.bytes;
    assert_int_equal(ms_store_merge_block(a, s.rec.origin, 1, 1, 1, &s.rec.kind,
                                          &pl, &s.rec.len, NULL, 0, NULL),
                     MS_OK);
    uint8_t node[ID];
    memset(node, 7, ID);
    ms_record_key_t key;
    assert_int_equal(
        ms_store_append(a, node, MS_RECORD_RESULT, payload, len, &key), MS_OK);
    // B gets A's blocks: the sweep's origin, then the node's fragments.
    copy_t c = {.into = b};
    assert_int_equal(ms_store_read_blocks(a, s.rec.origin, 1, 1, UINT64_MAX, 0,
                                          s_copy_block, &c),
                     MS_OK);
    assert_int_equal(ms_store_read_blocks(a, node, ms_store_incarnation(a), 1,
                                          UINT64_MAX, 0, s_copy_block, &c),
                     MS_OK);
    assert_true(c.n_fragments >= 2);
    ms_store_t *stores[2] = {a, b};
    uint8_t digests[2][32];
    for (int i = 0; i < 2; i++) {
        row_t got = {0};
        assert_int_equal(
            ms_store_results_by_task(stores[i], s.task_id, s_take_row, &got),
            MS_OK);
        assert_int_equal(got.n, 1);
        assert_int_equal(got.len, row_len);
        assert_memory_equal(got.text, row, row_len);
        free(got.text);
        ms_store_task_t *t = NULL;
        assert_int_equal(ms_store_get_task(stores[i], s.task_id, &t), MS_OK);
        assert_int_equal(t->state, MS_TASK_DONE);
        ms_store_task_destroy(&t);
        assert_int_equal(ms_store_results_digest(stores[i], digests[i]), MS_OK);
        ms_store_stats_t st;
        ms_store_stats(stores[i], &st);
        assert_int_equal(st.n_bad_fragments, 0);
    }
    assert_memory_equal(digests[0], digests[1], 32);
    fprintf(stderr,
            "big row: %zu bytes, payload %zu bytes, %zu fragment records in "
            "%zu blocks\n",
            row_len, len, c.n_fragments, c.n_blocks);
    ms_store_destroy(&a);
    ms_store_destroy(&b);
    free(payload);
    free(row);
    free(s.rec.bytes);

    // Over the result limit: the encoder says MS_ERR_RANGE (the node makes
    // it a task-class failure).
    size_t huge = MS_WIRE_MAX_RESULT_PAYLOAD_BYTES + 1;
    char *big = malloc(huge + 1);
    assert_non_null(big);
    memset(big, ' ', huge);
    memcpy(big, "{\"status\":\"ok\"}", 15);
    big[huge] = 0;
    p.u.result.row_json = big;
    p.u.result.row_len = huge;
    payload = NULL;
    assert_int_equal(ms_store_payload_encode(&p, &payload, &len), MS_ERR_RANGE);
    assert_null(payload);
    free(big);
}

//  --------------------------------------------------------------------------
//  Merge a committed result of TASK by node NODE (origin NODE x 32,
//  incarnation INC: one per task, so each is contiguous) for SLOT with
//  test accuracy ACC: its commit (seq 1) and its reveal (seq 2).

static void
s_merge_committed(ms_store_t *store, const uint8_t *task_id, uint8_t node,
                  uint64_t inc, uint32_t slot, double acc)
{
    char row[256];
    snprintf(row, sizeof row,
             "{\"status\":\"ok\",\"node\":%u,\"test_accuracy\":%.3f,"
             "\"test_loss\":0.3,\"val_accuracy\":0.5}",
             node, acc);
    uint8_t origin[ID];
    memset(origin, node, ID);
    ms_store_payload_t r = {.kind = MS_RECORD_RESULT};
    memcpy(r.u.result.task_id, task_id, ID);
    r.u.result.row_json = row;
    r.u.result.row_len = strlen(row);
    r.u.result.slot = slot;
    r.u.result.epoch = 1;
    r.u.result.has_nonce = true;
    memset(r.u.result.nonce, 0x40 + node, ID);
    ms_store_payload_t c = {.kind = MS_RECORD_COMMIT};
    memcpy(c.u.commit.task_id, task_id, ID);
    c.u.commit.slot = slot;
    c.u.commit.epoch = 1;
    assert_int_equal(ms_store_payload_commitment(origin, r.u.result.nonce, row,
                                                 strlen(row),
                                                 c.u.commit.commitment),
                     MS_OK);
    uint8_t *pl[2] = {NULL, NULL};
    size_t lens[2];
    assert_int_equal(ms_store_payload_encode(&c, &pl[0], &lens[0]), MS_OK);
    assert_int_equal(ms_store_payload_encode(&r, &pl[1], &lens[1]), MS_OK);
    uint32_t kinds[2] = {MS_RECORD_COMMIT, MS_RECORD_RESULT};
    ms_store_merge_result_t out;
    assert_int_equal(ms_store_merge_block(store, origin, inc, 1, 2, kinds,
                                          (const uint8_t *const *) pl, lens,
                                          NULL, 0, &out),
                     MS_OK);
    assert_int_equal(out.n_new, 2);
    free(pl[0]);
    free(pl[1]);
}

//  --------------------------------------------------------------------------
//  Every task of the N sweeps is done, and each sweep's counts say so
//  (one task each, counted once).

static void
s_assert_done_once(ms_store_t *store, const sweep_t *sw, int n)
{
    for (int i = 0; i < n; i++) {
        ms_store_task_t *task = NULL;
        assert_int_equal(ms_store_get_task(store, sw[i].task_id, &task), MS_OK);
        assert_int_equal(task->state, MS_TASK_DONE);
        ms_store_task_destroy(&task);
        ms_store_sweep_t *sweep = NULL;
        assert_int_equal(ms_store_get_sweep(store, sw[i].sweep_id, &sweep),
                         MS_OK);
        uint64_t sum = 0;
        for (int st = 0; st < MS_TASK_N_STATES; st++)
            sum += sweep->counts[st];
        if (sweep->counts[MS_TASK_DONE] != 1 || sum != 1)
            fprintf(stderr, "sweep %d: done %llu, pending %llu, %llu in all\n",
                    i, (unsigned long long) sweep->counts[MS_TASK_DONE],
                    (unsigned long long) sweep->counts[MS_TASK_PENDING],
                    (unsigned long long) sum);
        assert_int_equal(sweep->counts[MS_TASK_DONE], 1);
        assert_int_equal(sum, 1);
        assert_int_equal(sweep->state, MS_SWEEP_DONE);
        ms_store_sweep_destroy(&sweep);
    }
}

//  --------------------------------------------------------------------------
//  A quarantine flip while a task is derived (replicas 2, pool 3): a liar
//  (0x30, op4) 0.05 above two honest operators (0x31, 0x32) on three
//  tasks is struck on each; the third strike quarantines it while the
//  third task turns verified, and the flip derives the liar's tasks again,
//  that one included. The task is counted done once in its sweep (a
//  stale header counted the move twice: done 2, and a pending count
//  short by one let a sweep look finished with a task still open), and
//  every derive after it is one evaluation: a liar at exactly K strikes
//  whose struck task is evaluated again does not flip out and back in
//  (which derived all its tasks again, twice, each doing the same).

static void
test_quarantine_flip(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
    assert_int_equal(ms_store_set_pool_operators(store, 3), MS_OK);
    const uint8_t liar = 0x30, alice = 0x31, bob = 0x32, carol = 0x33;
    const char *ops[4] = {"op4", "op1", "op2", "op3"};
    for (uint8_t k = 0; k < 4; k++) {
        uint8_t id[ID];
        memset(id, liar + k, ID);
        assert_int_equal(ms_store_set_operator(store, id, ops[k]), MS_OK);
    }
    sweep_t sw[3];
    uint8_t o_sweep[ID], o_liar[ID];
    memset(o_sweep, 0xEE, ID);
    memset(o_liar, liar, ID);
    for (int i = 0; i < 3; i++) {
        s_sweep(&sw[i], 2, 60 + i);
        const uint8_t *pl[1] = {sw[i].rec.bytes};
        uint32_t kinds[1] = {MS_RECORD_SWEEP};
        size_t lens[1] = {sw[i].rec.len};
        assert_int_equal(ms_store_merge_block(store, o_sweep, (uint64_t) i + 1,
                                              1, 1, kinds, pl, lens, NULL, 0,
                                              NULL),
                         MS_OK);
    }
    for (int i = 0; i < 3; i++) {
        uint64_t inc = (uint64_t) i + 1;
        s_merge_committed(store, sw[i].task_id, liar, inc, 0, 0.95);
        s_merge_committed(store, sw[i].task_id, alice, inc, 1, 0.90);
        ms_store_verdict_t v;
        assert_int_equal(ms_store_get_verdict(store, sw[i].task_id, &v), MS_OK);
        assert_int_equal(v.verdict, MS_VERDICT_DISPUTED);
        assert_int_equal(v.slots_wanted, 3);
        ms_store_stats_t before, after;
        ms_store_stats(store, &before);
        s_merge_committed(store, sw[i].task_id, bob, inc, 2, 0.90);
        ms_store_stats(store, &after);
        assert_int_equal(ms_store_get_verdict(store, sw[i].task_id, &v), MS_OK);
        assert_int_equal(v.verdict, MS_VERDICT_VERIFIED);
        uint32_t n = 0, strikes = 0;
        bool q = false;
        assert_int_equal(
            ms_store_node_standing(store, o_liar, &n, &strikes, &q), MS_OK);
        assert_int_equal(strikes, (uint32_t) i + 1);
        assert_true(q == (i == 2));
        // the flip derives its 3 tasks again, this one included
        fprintf(stderr, "task %d verified: %llu evaluation(s)\n", i,
                (unsigned long long) (after.n_verdict_evals -
                                      before.n_verdict_evals));
        assert_true(after.n_verdict_evals - before.n_verdict_evals <=
                    (i == 2 ? 4u : 1u));
    }
    s_assert_done_once(store, sw, 3);

    // Quarantined at exactly K = 3: a late replica of a struck task
    // evaluates that task alone, and nothing changes state.
    ms_store_stats_t before, after;
    ms_store_stats(store, &before);
    s_merge_committed(store, sw[0].task_id, carol, 1, 3, 0.90);
    ms_store_stats(store, &after);
    fprintf(
        stderr, "late replica: %llu evaluation(s)\n",
        (unsigned long long) (after.n_verdict_evals - before.n_verdict_evals));
    assert_int_equal(after.n_verdict_evals - before.n_verdict_evals, 1);
    uint32_t n = 0, strikes = 0;
    bool q = false;
    assert_int_equal(ms_store_node_standing(store, o_liar, &n, &strikes, &q),
                     MS_OK);
    assert_int_equal(strikes, 3);
    assert_true(q);
    s_assert_done_once(store, sw, 3);
    ms_store_destroy(&store);
    for (int i = 0; i < 3; i++)
        free(sw[i].rec.bytes);
}

//  --------------------------------------------------------------------------
//  A quarantine clear forgives the strikes of the results inside its cut,
//  whatever the arrival order (DESIGN.md: verdicts are a function of the
//  records). A liar (0x30, op4) is struck on 4 tasks (replicas 2, pool 3;
//  its result of task i is record (incarnation i + 1, seq 2)). The clear
//  and the 4 tasks' results are merged in all 120 orders of those 5
//  events, the clear before, between and after the results; every order
//  must leave identical verdict rows, results digest and standing:
//  - cut 1:2,2:2,3:2,4:1 forgives tasks 0..2 (task 3's result, seq 2, is
//    above its incarnation's seq 1): 4 strikes, 1 left, not quarantined;
//  - cut 1:2 forgives task 0 only: 3 left of 4 counted, quarantined.
//  The first cut is the case the old rule ("the strikes held when the
//  clear is applied") got wrong: a clear applied first forgave nothing.

typedef struct {
    ms_store_verdict_t v[4];
    uint8_t results[32];
    uint32_t n_counted, n_strikes;
    bool quarantined;
} s_clear_view_t;

static void
s_clear_view(ms_store_t *store, const sweep_t *sw, const uint8_t *o_liar,
             s_clear_view_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 4; i++)
        assert_int_equal(ms_store_get_verdict(store, sw[i].task_id, &out->v[i]),
                         MS_OK);
    assert_int_equal(ms_store_results_digest(store, out->results), MS_OK);
    assert_int_equal(ms_store_node_standing(store, o_liar, &out->n_counted,
                                            &out->n_strikes, &out->quarantined),
                     MS_OK);
}

static void
s_clear_view_equal(const s_clear_view_t *a, const s_clear_view_t *b)
{
    for (int i = 0; i < 4; i++) {
        const ms_store_verdict_t *x = &a->v[i], *y = &b->v[i];
        assert_int_equal(x->verdict, y->verdict);
        assert_int_equal(x->revision, y->revision);
        assert_int_equal(x->n_operators, y->n_operators);
        assert_int_equal(x->n_agreeing, y->n_agreeing);
        assert_int_equal(x->slots_wanted, y->slots_wanted);
        assert_string_equal(x->operators, y->operators);
        assert_int_equal(x->n_marks, y->n_marks);
        for (size_t m = 0; m < x->n_marks; m++) {
            assert_memory_equal(x->marks[m].node_id, y->marks[m].node_id, ID);
            assert_int_equal(x->marks[m].counted, y->marks[m].counted);
            assert_int_equal(x->marks[m].agrees, y->marks[m].agrees);
            assert_int_equal(x->marks[m].strike, y->marks[m].strike);
            assert_int_equal(x->marks[m].role, y->marks[m].role);
        }
    }
    assert_memory_equal(a->results, b->results, 32);
    assert_int_equal(a->n_counted, b->n_counted);
    assert_int_equal(a->n_strikes, b->n_strikes);
    assert_int_equal(a->quarantined, b->quarantined);
}

static void
s_clear_every_order(fixture_t *fx, const ms_store_cut_t *cut, bool want_q)
{
    const uint8_t liar = 0x30;
    const char *ops[3] = {"op4", "op1", "op2"};
    sweep_t sw[4];
    for (int i = 0; i < 4; i++)
        s_sweep(&sw[i], 2, 70 + i);
    uint8_t o_sweep[ID], o_liar[ID], digest[ID];
    memset(o_sweep, 0xEE, ID);
    memset(o_liar, liar, ID);
    memset(digest, 0xC1, ID);
    const uint8_t item[] = "a clear (the store keeps its bytes)";
    int order[5] = {0, 1, 2, 3, 4}; // 0..3: task i's results; 4: the clear
    s_clear_view_t ref, got;
    int n_orders = 0;
    do {
        ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
        assert_int_equal(ms_store_set_pool_operators(store, 3), MS_OK);
        for (uint8_t k = 0; k < 3; k++) {
            uint8_t id[ID];
            memset(id, liar + k, ID);
            assert_int_equal(ms_store_set_operator(store, id, ops[k]), MS_OK);
        }
        for (int i = 0; i < 4; i++) {
            const uint8_t *pl[1] = {sw[i].rec.bytes};
            uint32_t kinds[1] = {MS_RECORD_SWEEP};
            size_t lens[1] = {sw[i].rec.len};
            assert_int_equal(ms_store_merge_block(store, o_sweep,
                                                  (uint64_t) i + 1, 1, 1, kinds,
                                                  pl, lens, NULL, 0, NULL),
                             MS_OK);
        }
        for (int e = 0; e < 5; e++) {
            int i = order[e];
            if (i == 4) {
                bool added = false;
                assert_int_equal(ms_store_put_clear(store, digest, item,
                                                    sizeof item, o_liar, cut,
                                                    &added),
                                 MS_OK);
                assert_true(added);
                continue;
            }
            uint64_t inc = (uint64_t) i + 1;
            s_merge_committed(store, sw[i].task_id, liar, inc, 0, 0.95);
            s_merge_committed(store, sw[i].task_id, liar + 1, inc, 1, 0.90);
            s_merge_committed(store, sw[i].task_id, liar + 2, inc, 2, 0.90);
        }
        s_clear_view(store, sw, o_liar, n_orders == 0 ? &ref : &got);
        if (n_orders > 0) {
            if (got.quarantined != ref.quarantined)
                fprintf(stderr,
                        "order %d %d %d %d %d: quarantined %d, first order "
                        "%d\n",
                        order[0], order[1], order[2], order[3], order[4],
                        got.quarantined, ref.quarantined);
            s_clear_view_equal(&ref, &got);
        }
        ms_store_destroy(&store);
        n_orders++;
        char dir[512];
        snprintf(dir, sizeof dir, "%s/s%d", fx->root, fx->n_stores - 1);
        ms_tf_rm_rf(dir);
    } while (s_next_perm(order, 5));
    assert_int_equal(n_orders, 120);
    assert_int_equal(ref.n_counted, 4);
    assert_int_equal(ref.n_strikes, 4);
    assert_int_equal(ref.quarantined, want_q);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ref.v[i].verdict, MS_VERDICT_VERIFIED);
        assert_string_equal(ref.v[i].operators, "op1,op2");
    }
    for (int i = 0; i < 4; i++)
        free(sw[i].rec.bytes);
}

static void
test_clear_cut_every_order(void **state)
{
    fixture_t *fx = *state;
    ms_store_cut_t cut = {.n = 4};
    for (int i = 0; i < 4; i++) {
        cut.upto[i].incarnation = (uint64_t) i + 1;
        cut.upto[i].seq = i < 3 ? 2 : 1; // task 3's result is above
    }
    s_clear_every_order(fx, &cut, false);
    ms_store_cut_t one = {.n = 1};
    one.upto[0].incarnation = 1;
    one.upto[0].seq = 2;
    s_clear_every_order(fx, &one, true);

    // A clear without a proper cut is refused.
    ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
    uint8_t node[ID], digest[ID];
    memset(node, 0x30, ID);
    memset(digest, 0xC2, ID);
    ms_store_cut_t all = {.all = true}, none = {.n = 0}, unsorted = {.n = 2};
    unsorted.upto[0].incarnation = 5;
    unsorted.upto[1].incarnation = 5;
    const uint8_t item[] = "x";
    assert_int_equal(
        ms_store_put_clear(store, digest, item, 1, node, NULL, NULL),
        MS_ERR_INVALID);
    assert_int_equal(
        ms_store_put_clear(store, digest, item, 1, node, &all, NULL),
        MS_ERR_INVALID);
    assert_int_equal(
        ms_store_put_clear(store, digest, item, 1, node, &none, NULL),
        MS_ERR_INVALID);
    assert_int_equal(
        ms_store_put_clear(store, digest, item, 1, node, &unsorted, NULL),
        MS_ERR_INVALID);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  The revision counts changes of what a user sees, not of the state
//  alone (docs/VERIFICATION.md "Revision"): replicas 2, pool 3; alice and
//  bob agree (verified by op1, op2), then carol's late replica agrees too:
//  still verified, now by op1, op2, op3, so a new revision. In every
//  arrival order of the three results the row reads verified, revision 2,
//  operators "op1,op2,op3" (the revision stays a function of the
//  records). Then a quarantine changes S with no new result of the task:
//  a liar (op4) that agrees on a task counts in S until its strikes on
//  three other tasks quarantine it; the task stays verified, by the honest
//  operators only, and its revision goes up.

static void
s_revision_store(fixture_t *fx, const sweep_t *s, const int *order,
                 ms_store_verdict_t *v)
{
    ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
    assert_int_equal(ms_store_set_pool_operators(store, 3), MS_OK);
    const char *ops[3] = {"op1", "op2", "op3"};
    for (uint8_t k = 0; k < 3; k++) {
        uint8_t id[ID];
        memset(id, 0x31 + k, ID);
        assert_int_equal(ms_store_set_operator(store, id, ops[k]), MS_OK);
    }
    uint8_t o_sweep[ID];
    memset(o_sweep, 0xEE, ID);
    const uint8_t *pl[1] = {s->rec.bytes};
    uint32_t kinds[1] = {MS_RECORD_SWEEP};
    size_t lens[1] = {s->rec.len};
    assert_int_equal(ms_store_merge_block(store, o_sweep, 1, 1, 1, kinds, pl,
                                          lens, NULL, 0, NULL),
                     MS_OK);
    for (int i = 0; i < 3; i++)
        s_merge_committed(store, s->task_id, (uint8_t) (0x31 + order[i]), 1,
                          (uint32_t) order[i], 0.90);
    assert_int_equal(ms_store_get_verdict(store, s->task_id, v), MS_OK);
    ms_store_destroy(&store);
}

static void
test_revision_counts_operators(void **state)
{
    fixture_t *fx = *state;
    sweep_t s;
    s_sweep(&s, 2, 70);
    int order[3] = {0, 1, 2};
    int n_orders = 0;
    do {
        ms_store_verdict_t v;
        s_revision_store(fx, &s, order, &v);
        assert_int_equal(v.verdict, MS_VERDICT_VERIFIED);
        assert_string_equal(v.operators, "op1,op2,op3");
        // pending -> verified (2 operators) -> verified (3 operators)
        assert_int_equal(v.revision, 2);
        n_orders++;
    } while (s_next_perm(order, 3));
    assert_int_equal(n_orders, 6);
    free(s.rec.bytes);

    // A quarantine: the liar (0x30, op4) agrees on task 3 (0.90 with
    // alice and bob): verified by op1, op2, op4. Its lies on tasks 0..2
    // (0.95 against alice and bob) quarantine it: task 3 stays verified,
    // by op1 and op2, a new revision.
    ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
    assert_int_equal(ms_store_set_pool_operators(store, 3), MS_OK);
    const uint8_t liar = 0x30, alice = 0x31, bob = 0x32;
    const char *names[3] = {"op4", "op1", "op2"};
    for (uint8_t k = 0; k < 3; k++) {
        uint8_t id[ID];
        memset(id, liar + k, ID);
        assert_int_equal(ms_store_set_operator(store, id, names[k]), MS_OK);
    }
    sweep_t sw[4];
    uint8_t o_sweep[ID];
    memset(o_sweep, 0xEE, ID);
    for (int i = 0; i < 4; i++) {
        s_sweep(&sw[i], 2, 80 + i);
        const uint8_t *pl[1] = {sw[i].rec.bytes};
        uint32_t kinds[1] = {MS_RECORD_SWEEP};
        size_t lens[1] = {sw[i].rec.len};
        assert_int_equal(ms_store_merge_block(store, o_sweep, (uint64_t) i + 1,
                                              1, 1, kinds, pl, lens, NULL, 0,
                                              NULL),
                         MS_OK);
    }
    s_merge_committed(store, sw[3].task_id, liar, 4, 0, 0.90);
    s_merge_committed(store, sw[3].task_id, alice, 4, 1, 0.90);
    s_merge_committed(store, sw[3].task_id, bob, 4, 2, 0.90);
    ms_store_verdict_t v;
    assert_int_equal(ms_store_get_verdict(store, sw[3].task_id, &v), MS_OK);
    assert_int_equal(v.verdict, MS_VERDICT_VERIFIED);
    assert_string_equal(v.operators, "op1,op2,op4");
    uint32_t before = v.revision;
    fprintf(stderr,
            "task 3 before the quarantine: verified by '%s', "
            "revision %u\n",
            v.operators, (unsigned) before);
    for (int i = 0; i < 3; i++) {
        uint64_t inc = (uint64_t) i + 1;
        s_merge_committed(store, sw[i].task_id, liar, inc, 0, 0.95);
        s_merge_committed(store, sw[i].task_id, alice, inc, 1, 0.90);
        s_merge_committed(store, sw[i].task_id, bob, inc, 2, 0.90);
    }
    uint8_t o_liar[ID];
    memset(o_liar, liar, ID);
    uint32_t n = 0, strikes = 0;
    bool q = false;
    assert_int_equal(ms_store_node_standing(store, o_liar, &n, &strikes, &q),
                     MS_OK);
    assert_true(q);
    assert_int_equal(ms_store_get_verdict(store, sw[3].task_id, &v), MS_OK);
    fprintf(stderr, "task 3 after the quarantine: %s by '%s', revision %u\n",
            ms_verdict_state_name((ms_verdict_state_t) v.verdict), v.operators,
            (unsigned) v.revision);
    assert_int_equal(v.verdict, MS_VERDICT_VERIFIED);
    assert_string_equal(v.operators, "op1,op2");
    assert_int_equal(v.revision, before + 1);
    ms_store_destroy(&store);
    for (int i = 0; i < 4; i++)
        free(sw[i].rec.bytes);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reevaluation_verdicts),
        cmocka_unit_test(test_replicas_1_same_epoch),
        cmocka_unit_test(test_replicas_1_higher_epoch),
        cmocka_unit_test(test_replicas_2),
        cmocka_unit_test(test_replicas_2_per_slot),
        cmocka_unit_test(test_commit_reveal),
        cmocka_unit_test(test_void_slot),
        cmocka_unit_test(test_quarantine_flip),
        cmocka_unit_test(test_noop_never_reevaluated),
        cmocka_unit_test(test_clear_cut_every_order),
        cmocka_unit_test(test_revision_counts_operators),
        cmocka_unit_test(test_commitment),
        cmocka_unit_test(test_big_row),
    };
    return cmocka_run_group_tests(tests, s_setup, ms_sf_teardown);
}
