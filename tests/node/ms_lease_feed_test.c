/*  =========================================================================
    ms_lease_feed_test - records to the lease table: merged claims,
    releases and results, an impossible result, the stored claims at
    start and one node's after a revocation

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A real lease table and a real store (tests/support); the fake iface
    counts what the feed reports.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_lease_feed.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_store_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  What the feed reported.
typedef struct {
    size_t n_changed;
    size_t n_results;
    uint8_t result_task[32], result_origin[32];
    char log[200];
} s_fake_t;

static void
s_changed(void *arg)
{
    ((s_fake_t *) arg)->n_changed++;
}

static void
s_result(void *arg, const uint8_t task_id[32], const uint8_t origin[32])
{
    s_fake_t *f = arg;
    f->n_results++;
    memcpy(f->result_task, task_id, 32);
    memcpy(f->result_origin, origin, 32);
}

static void
s_log(void *arg, const char *line)
{
    s_fake_t *f = arg;
    snprintf(f->log, sizeof f->log, "%s", line);
}

//  A world: this node's table and store, the feed, a sweep of 3 tasks.
typedef struct {
    uint8_t self_id[32], b[32], c[32];
    ms_store_t *store;
    ms_lease_table_t *leases;
    ms_lease_feed_t *feed;
    s_fake_t fake;
    ms_sf_sweep_t sweep;
} s_world_t;

static void
s_open(s_world_t *w, ms_sf_t *fx)
{
    memset(w, 0, sizeof *w);
    ms_sf_id(w->self_id, 0xa0, 1);
    ms_sf_id(w->b, 0xb0, 2);
    ms_sf_id(w->c, 0xc0, 3);
    w->store = ms_sf_open(fx, NULL, 4 << 20);
    w->leases = ms_lease_table_new(w->self_id, 10000, NULL);
    assert_non_null(w->leases);
    ms_lease_feed_iface_t iface = {.arg = &w->fake,
                                   .changed = s_changed,
                                   .result = s_result,
                                   .log = s_log};
    w->feed = ms_lease_feed_new(w->leases, w->store, &iface);
    assert_non_null(w->feed);
    ms_sf_sweep_seeds(&w->sweep, "feed", 8, 3);
    assert_int_equal(ms_sf_append_sweep(w->store, w->self_id, &w->sweep, 0),
                     MS_OK);
}

static void
s_close(s_world_t *w)
{
    ms_lease_feed_destroy(&w->feed);
    assert_null(w->feed);
    ms_lease_table_destroy(&w->leases);
    ms_store_destroy(&w->store);
    ms_sf_sweep_free(&w->sweep);
}

//  Merge payload P of origin into the feed (encoded as a peer's record).
static void
s_merge(s_world_t *w, const uint8_t *origin, const ms_store_payload_t *p)
{
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(p, &bytes, &len), MS_OK);
    ms_lease_feed_merge(w->feed, origin, p->kind, bytes, len);
    free(bytes);
}

static ms_store_payload_t
s_claim(uint32_t kind, const uint8_t *task, uint32_t slot, uint64_t epoch)
{
    ms_store_payload_t p = {.kind = kind};
    memcpy(p.u.claim.task_id, task, 32);
    p.u.claim.slot = slot;
    p.u.claim.epoch = epoch;
    return p;
}

//  Whether (task, slot 0) is held, and by whom (into who, may be NULL).
static bool
s_held_by(s_world_t *w, const uint8_t *task, uint8_t *who)
{
    ms_claim_t h;
    if (ms_lease_table_holder(w->leases, task, 0, &h, NULL) != MS_OK)
        return false;
    if (who)
        memcpy(who, h.node_id, 32);
    return true;
}

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_lease_feed_test");
}

//  --------------------------------------------------------------------------
//  A peer's claim holds the slot, its release frees it; both change the
//  work; sweep-level records only change the work; other kinds nothing.

static void
test_claims_and_releases(void **state)
{
    s_world_t w;
    s_open(&w, *state);
    const uint8_t *t0 = ms_sf_task_id(&w.sweep, 0);
    ms_store_payload_t p = s_claim(MS_RECORD_CLAIM, t0, 0, 1);
    s_merge(&w, w.b, &p);
    uint8_t who[32];
    assert_true(s_held_by(&w, t0, who));
    assert_memory_equal(who, w.b, 32);
    assert_int_equal(w.fake.n_changed, 1);

    p = s_claim(MS_RECORD_CLAIM, t0, 0, 2); // a higher epoch wins
    s_merge(&w, w.c, &p);
    assert_true(s_held_by(&w, t0, who));
    assert_memory_equal(who, w.c, 32);
    p = s_claim(MS_RECORD_RELEASE, t0, 0, 2);
    s_merge(&w, w.c, &p);
    assert_true(s_held_by(&w, t0, who));
    assert_memory_equal(who, w.b, 32);
    p = s_claim(MS_RECORD_RELEASE, t0, 0, 1);
    s_merge(&w, w.b, &p);
    assert_false(s_held_by(&w, t0, NULL));
    assert_int_equal(w.fake.n_changed, 4);

    ms_lease_feed_merge(w.feed, w.b, MS_RECORD_SWEEP_CONTROL, NULL, 0);
    ms_lease_feed_merge(w.feed, w.b, MS_RECORD_FAILURE, NULL, 0);
    assert_int_equal(w.fake.n_changed, 6);
    ms_lease_feed_merge(w.feed, w.b, MS_RECORD_DATASET, NULL, 0);
    assert_int_equal(w.fake.n_changed, 6);
    const uint8_t junk[3] = {1, 2, 3}; // does not decode: ignored
    ms_lease_feed_merge(w.feed, w.b, MS_RECORD_CLAIM, junk, sizeof junk);
    assert_int_equal(w.fake.n_changed, 7);
    assert_false(s_held_by(&w, t0, NULL));
    assert_int_equal(w.fake.n_results, 0);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A result finishes its producer's claim and is reported; an impossible
//  one releases the claim it names, is counted and logged, not reported.

static void
test_results(void **state)
{
    s_world_t w;
    s_open(&w, *state);
    const uint8_t *t0 = ms_sf_task_id(&w.sweep, 0);
    const uint8_t *t1 = ms_sf_task_id(&w.sweep, 1);
    ms_store_payload_t p = s_claim(MS_RECORD_CLAIM, t0, 0, 1);
    s_merge(&w, w.b, &p);
    p = s_claim(MS_RECORD_CLAIM, t1, 0, 1);
    s_merge(&w, w.c, &p);

    const char *row = "{\"status\":\"ok\",\"counted\":true,"
                      "\"val_accuracy\":0.5}";
    ms_store_payload_t r = {.kind = MS_RECORD_RESULT};
    memcpy(r.u.result.task_id, t0, 32);
    r.u.result.row_json = row;
    r.u.result.row_len = strlen(row);
    r.u.result.epoch = 1;
    s_merge(&w, w.b, &r);
    assert_false(s_held_by(&w, t0, NULL));
    assert_int_equal(w.fake.n_results, 1);
    assert_memory_equal(w.fake.result_task, t0, 32);
    assert_memory_equal(w.fake.result_origin, w.b, 32);

    const char *lie = "{\"status\":\"ok\",\"counted\":true,"
                      "\"val_accuracy\":2.5}";
    memcpy(r.u.result.task_id, t1, 32);
    r.u.result.row_json = lie;
    r.u.result.row_len = strlen(lie);
    assert_true(s_held_by(&w, t1, NULL));
    s_merge(&w, w.c, &r);
    assert_false(s_held_by(&w, t1, NULL));
    assert_int_equal(w.fake.n_results, 1);
    ms_lease_feed_stats_t st;
    ms_lease_feed_stats(w.feed, &st);
    assert_int_equal(st.n_refused_invalid, 1);
    assert_non_null(strstr(w.fake.log, "refused an impossible result"));
    assert_int_equal(w.fake.n_changed, 4);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  At start the stored claims and releases of the unfinished tasks are
//  loaded; after a revocation one node's facts go and its stored claims
//  come back, the others' stay as they are.

static void
test_load_and_reload(void **state)
{
    s_world_t w;
    s_open(&w, *state);
    const uint8_t *t0 = ms_sf_task_id(&w.sweep, 0);
    const uint8_t *t1 = ms_sf_task_id(&w.sweep, 1);
    const uint8_t *t2 = ms_sf_task_id(&w.sweep, 2);
    ms_store_payload_t p = s_claim(MS_RECORD_CLAIM, t0, 0, 1);
    ms_sf_merge_one(w.store, w.b, 1, &p);
    p = s_claim(MS_RECORD_CLAIM, t1, 0, 1);
    ms_sf_merge_one(w.store, w.c, 1, &p);
    p = s_claim(MS_RECORD_CLAIM, t2, 0, 1);
    ms_sf_merge_one(w.store, w.c, 2, &p);
    p = s_claim(MS_RECORD_RELEASE, t2, 0, 1);
    ms_sf_merge_one(w.store, w.c, 3, &p);
    assert_false(s_held_by(&w, t0, NULL));

    assert_int_equal(ms_lease_feed_load(w.feed), MS_OK);
    uint8_t who[32];
    assert_true(s_held_by(&w, t0, who));
    assert_memory_equal(who, w.b, 32);
    assert_true(s_held_by(&w, t1, who));
    assert_memory_equal(who, w.c, 32);
    assert_false(s_held_by(&w, t2, NULL)); // claimed and released
    assert_int_equal(w.fake.n_changed, 0); // loading is not a change

    //  b claims t2 in the table only (say, a claim above its cut)
    ms_claim_t extra = {.slot = 0, .epoch = 2};
    memcpy(extra.task_id, t2, 32);
    memcpy(extra.node_id, w.b, 32);
    assert_int_equal(ms_lease_table_add_claim(w.leases, &extra), MS_OK);
    assert_true(s_held_by(&w, t2, NULL));
    ms_lease_feed_reload_node(w.feed, w.b);
    assert_false(s_held_by(&w, t2, NULL));
    assert_true(s_held_by(&w, t0, who));
    assert_memory_equal(who, w.b, 32);
    assert_true(s_held_by(&w, t1, who));
    assert_memory_equal(who, w.c, 32);
    s_close(&w);
}

//  The fake clock of the heartbeat test (both clocks, ms).
static int64_t
s_fake_ms(void *ctx)
{
    return *(int64_t *) ctx;
}

//  --------------------------------------------------------------------------
//  Heartbeats: a peer's live claims listed in its heartbeat stay alive
//  past the TTL; ours are renewed and listed when we fill ours, and an
//  empty list is NULL.

static void
test_heartbeats(void **state)
{
    s_world_t w;
    s_open(&w, *state);
    int64_t now = 1000000;
    ms_lease_clock_t clock = {
        .mono_ms = s_fake_ms, .boot_ms = s_fake_ms, .ctx = &now};
    ms_lease_table_t *leases = ms_lease_table_new(w.self_id, 10000, &clock);
    ms_lease_feed_iface_t iface = {.arg = &w.fake};
    ms_lease_feed_t *feed = ms_lease_feed_new(leases, w.store, &iface);
    assert_non_null(feed);
    const uint8_t *t0 = ms_sf_task_id(&w.sweep, 0);
    const uint8_t *t1 = ms_sf_task_id(&w.sweep, 1);

    // Nothing of ours: an empty list.
    ms_wire_envelope_t hb;
    memset(&hb, 0, sizeof hb);
    ms_lease_feed_fill_heartbeat(feed, &hb);
    assert_int_equal(hb.heartbeat.n_live_claims, 0);
    assert_null(hb.heartbeat.live_claims);

    // Peer b claims t0; its heartbeats keep it live past the TTL.
    ms_claim_t c = {.slot = 0, .epoch = 1};
    memcpy(c.task_id, t0, 32);
    memcpy(c.node_id, w.b, 32);
    assert_int_equal(ms_lease_table_add_claim(leases, &c), MS_OK);
    ms_wire_live_claim_t listed = {.slot = 0, .epoch = 1};
    memcpy(listed.task_id, t0, 32);
    ms_wire_envelope_t peer_hb;
    memset(&peer_hb, 0, sizeof peer_hb);
    peer_hb.heartbeat.live_claims = &listed;
    peer_hb.heartbeat.n_live_claims = 1;
    for (int i = 0; i < 4; i++) {
        now += 5000;
        ms_lease_feed_heartbeat(feed, w.b, &peer_hb);
    }
    ms_claim_t h;
    bool live = false;
    assert_int_equal(ms_lease_table_holder(leases, t0, 0, &h, &live), MS_OK);
    assert_memory_equal(h.node_id, w.b, 32);
    assert_true(live); // 20 s on, TTL 10 s: kept alive by the heartbeats
    now += 10001;      // silent past the TTL
    assert_int_equal(ms_lease_table_holder(leases, t0, 0, &h, &live), MS_OK);
    assert_false(live);

    // Our claim on t1 is renewed and listed in our heartbeat.
    ms_claim_t mine;
    assert_int_equal(ms_lease_table_claim(leases, t1, 0, false, &mine), MS_OK);
    ms_lease_feed_fill_heartbeat(feed, &hb);
    assert_int_equal(hb.heartbeat.n_live_claims, 1);
    assert_memory_equal(hb.heartbeat.live_claims[0].task_id, t1, 32);
    assert_int_equal(hb.heartbeat.live_claims[0].epoch, mine.epoch);
    now += 8000;
    ms_lease_feed_fill_heartbeat(feed, &hb); // renewed again at 8 s
    now += 8000;
    assert_int_equal(ms_lease_table_holder(leases, t1, 0, &h, &live), MS_OK);
    assert_memory_equal(h.node_id, w.self_id, 32);
    assert_true(live);

    ms_lease_feed_destroy(&feed);
    ms_lease_table_destroy(&leases);
    s_close(&w);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claims_and_releases, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_results, s_setup, ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_heartbeats, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_load_and_reload, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
