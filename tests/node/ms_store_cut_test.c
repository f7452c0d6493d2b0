/*  =========================================================================
    ms_store_cut_test - authority items in the store and revocation cuts:
    items are kept once by digest and survive a reopen; a revoked origin's
    records are still stored, but its results and claims above the cut no
    longer count (the results table loses them, the task is pending
    again), within the cut they still count; cuts of two revocations
    intersect; a result that arrives after the revocation is stored, not
    counted.

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_results.h"
#include "ms_store.h"
#include "ms_store_payload.h"

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
    return ms_sf_setup(state, "ms_store_cut_test");
}

// One record of some origin (seq 1 of incarnation 1: each record of a
// case has its own origin, so any order keeps every origin contiguous).
typedef struct {
    uint8_t origin[ID];
    uint32_t kind;
    uint8_t *bytes;
    size_t len;
} rec_t;

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
s_sweep(sweep_t *s, int replicas, int tag)
{
    ms_sf_replica_sweep(replicas, tag, false, s->sweep_id, s->task_id,
                        &s->rec.bytes, &s->rec.len);
    memset(s->rec.origin, 0xEE, ID);
    s->rec.kind = MS_RECORD_SWEEP;
}

//  --------------------------------------------------------------------------
//  A result of S's task by node NODE (origin NODE x 32) for SLOT at
//  EPOCH, its row naming the node.

static void
s_result(rec_t *r, const sweep_t *s, uint8_t node, uint32_t slot,
         uint32_t epoch)
{
    char row[256];
    snprintf(row, sizeof row,
             "{\"status\":\"ok\",\"node\":%u,\"slot\":%u,\"epoch\":%u,"
             "\"counted\":true,\"val_accuracy\":0.5}",
             node, slot, epoch);
    ms_store_payload_t p = {.kind = MS_RECORD_RESULT};
    memcpy(p.u.result.task_id, s->task_id, ID);
    p.u.result.row_json = row;
    p.u.result.row_len = strlen(row);
    p.u.result.slot = slot;
    p.u.result.epoch = epoch;
    memset(r->origin, node, ID);
    r->kind = MS_RECORD_RESULT;
    assert_int_equal(ms_store_payload_encode(&p, &r->bytes, &r->len), MS_OK);
}

//  --------------------------------------------------------------------------
//  Merge one record as seq SEQ of incarnation 1 of ORIGIN.

static void
s_merge(ms_store_t *store, const rec_t *r, uint64_t seq)
{
    const uint8_t *pl = r->bytes;
    ms_store_merge_result_t out;
    assert_int_equal(ms_store_merge_block(store, r->origin, 1, seq, 1, &r->kind,
                                          &pl, &r->len, NULL, 0, &out),
                     MS_OK);
    assert_int_equal(out.n_new, 1);
}

//  --------------------------------------------------------------------------
//  Results rows of the store.

static uint64_t
s_rows(ms_store_t *store)
{
    uint64_t n = 0;
    assert_int_equal(ms_store_results_count(store, &n), MS_OK);
    return n;
}

static int
s_count_claim(void *arg, const ms_store_claim_t *c)
{
    (void) c;
    (*(int *) arg)++;
    return 0;
}

static int
s_count_item(void *arg, const uint8_t *digest, const uint8_t *bytes, size_t n)
{
    (void) digest;
    (void) bytes;
    (void) n;
    (*(int *) arg)++;
    return 0;
}

//  --------------------------------------------------------------------------
//  See the banner.

static void
test_revocation_cut(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, NULL, 4 << 20);
    sweep_t s;
    s_sweep(&s, 1, 1);
    const uint8_t *pl = s.rec.bytes;
    ms_store_merge_result_t out;
    assert_int_equal(ms_store_merge_block(store, s.rec.origin, 1, 1, 1,
                                          &s.rec.kind, &pl, &s.rec.len, NULL, 0,
                                          &out),
                     MS_OK);
    //  node 1: a claim (seq 1), its result (seq 2)
    rec_t claim = {.kind = MS_RECORD_CLAIM}, res1, res2, res3;
    ms_store_payload_t cp = {.kind = MS_RECORD_CLAIM};
    memcpy(cp.u.claim.task_id, s.task_id, ID);
    cp.u.claim.epoch = 1;
    assert_int_equal(ms_store_payload_encode(&cp, &claim.bytes, &claim.len),
                     MS_OK);
    memset(claim.origin, 1, ID);
    s_merge(store, &claim, 1);
    s_result(&res1, &s, 1, 0, 1);
    s_merge(store, &res1, 2);
    assert_int_equal(s_rows(store), 1);
    int n_claims = 0;
    assert_int_equal(
        ms_store_claims_by_task(store, s.task_id, s_count_claim, &n_claims),
        MS_OK);
    assert_int_equal(n_claims, 1);
    ms_store_task_t *task = NULL;
    assert_int_equal(ms_store_get_task(store, s.task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_DONE);
    ms_store_task_destroy(&task);

    //  revoke node 1 keeping seq 1 (its claim) only: the result no longer
    //  counts, the task is pending again, the claim still counts
    uint8_t node1[ID], digest1[ID] = {1}, item1[8] = {2, 'a'};
    memset(node1, 1, ID);
    ms_store_cut_t cut = {.all = false, .n = 1};
    cut.upto[0].incarnation = 1;
    cut.upto[0].seq = 1;
    bool added = false;
    assert_int_equal(ms_store_put_item(store, digest1, item1, sizeof item1,
                                       node1, &cut, &added),
                     MS_OK);
    assert_true(added);
    assert_int_equal(s_rows(store), 0);
    assert_int_equal(ms_store_get_task(store, s.task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_PENDING);
    ms_store_task_destroy(&task);
    n_claims = 0;
    ms_store_claims_by_task(store, s.task_id, s_count_claim, &n_claims);
    assert_int_equal(n_claims, 1);
    assert_int_equal(ms_store_put_item(store, digest1, item1, sizeof item1,
                                       node1, &cut, &added),
                     MS_OK);
    assert_false(added); // grow-only by digest

    //  a second revocation (all): intersection, the claim goes too
    uint8_t digest2[ID] = {2}, item2[8] = {2, 'b'};
    assert_int_equal(ms_store_put_item(store, digest2, item2, sizeof item2,
                                       node1, NULL, &added),
                     MS_OK);
    n_claims = 0;
    ms_store_claims_by_task(store, s.task_id, s_count_claim, &n_claims);
    assert_int_equal(n_claims, 0);

    //  node 2's result counts as before
    s_result(&res2, &s, 2, 0, 1);
    s_merge(store, &res2, 1);
    assert_int_equal(s_rows(store), 1);
    ms_store_destroy(&store);

    //  reopen: items and cuts are durable; a later result of node 1 is
    //  stored (its log converges) and not counted
    fx->n_stores--;
    store = ms_sf_open(fx, NULL, 4 << 20);
    int n_items = 0;
    assert_int_equal(ms_store_items(store, s_count_item, &n_items), MS_OK);
    assert_int_equal(n_items, 2);
    s_result(&res3, &s, 1, 0, 2);
    s_merge(store, &res3, 3);
    uint64_t held = 0;
    assert_int_equal(ms_store_held(store, node1, 1, &held), MS_OK);
    assert_int_equal(held, 3);
    assert_int_equal(s_rows(store), 1);
    ms_store_destroy(&store);
    free(claim.bytes);
    free(res1.bytes);
    free(res2.bytes);
    free(res3.bytes);
    free(s.rec.bytes);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_revocation_cut, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
