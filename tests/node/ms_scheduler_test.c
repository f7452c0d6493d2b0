/*  =========================================================================
    ms_scheduler_test - where a lease is decided: claims for idle workers
    and the prefetch, memory fit, other nodes' leases, owner rank, the
    scan's pace, give-ups, a failed append, a missing dataset

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Drives ms_scheduler_claim over a real store (ms_store_fixture) and a
    real lease table on a fake clock, with a fake node behind
    ms_scheduler_iface_t (members, holding, datasets, appends).
*/
#include "ms_scheduler.h"

#include "ms_assign.h"
#include "ms_hash.h"
#include "ms_lease_table.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_store_fixture.h"

#define S_TTL_MS 10000 // lease TTL of the test's tables

//  The fake node.
typedef struct {
    int64_t now;                   // the fake clock (ms), both clocks
    bool holding;                  // iface.holding answers this
    bool in_pool;                  // iface.in_pool answers this
    bool has_dataset;              // every sweep's dataset is here
    uint8_t members[4][32];        // members[0] is this node
    size_t n_members;              // entries in members
    uint8_t busy[32];              // a task on a "worker" (when has_busy)
    bool has_busy;                 // busy is set
    int append_rc;                 // what iface.append returns
    size_t n_appends;              // iface.append calls
    size_t n_appended;             // records they carried
    size_t n_wanted;               // iface.dataset_wanted calls
    size_t n_failed;               // iface.fail calls
    ms_failure_class_t failed_cls; // the last one's class
    int n_logs;                    // lines logged
} s_fake_t;

static void
s_log(void *arg, const char *line)
{
    s_fake_t *f = arg;
    (void) line;
    f->n_logs++;
}

static bool
s_holding(void *arg, int64_t now)
{
    (void) now;
    return ((s_fake_t *) arg)->holding;
}

static bool
s_in_pool(void *arg)
{
    return ((s_fake_t *) arg)->in_pool;
}

static bool
s_sweep(void *arg, const uint8_t sweep_id[MS_HASH_BYTES],
        ms_scheduler_sweep_t *out)
{
    (void) sweep_id;
    s_fake_t *f = arg;
    out->has_dataset = f->has_dataset;
    out->dataset_error = f->has_dataset ? NULL : "no such dataset";
    out->dataset_bytes = 0;
    return true;
}

static void
s_dataset_wanted(void *arg, const uint8_t sweep_id[MS_HASH_BYTES])
{
    (void) sweep_id;
    ((s_fake_t *) arg)->n_wanted++;
}

static size_t
s_members(void *arg, uint8_t (**out)[MS_ASSIGN_ID_BYTES])
{
    s_fake_t *f = arg;
    *out = calloc(f->n_members, MS_ASSIGN_ID_BYTES);
    if (!*out)
        return 0;
    memcpy(*out, f->members, f->n_members * MS_ASSIGN_ID_BYTES);
    return f->n_members;
}

static bool
s_task_busy(void *arg, const uint8_t task_id[MS_HASH_BYTES])
{
    s_fake_t *f = arg;
    return f->has_busy && memcmp(f->busy, task_id, MS_HASH_BYTES) == 0;
}

static bool
s_held(void *arg, const uint8_t task_id[MS_HASH_BYTES])
{
    (void) arg;
    (void) task_id;
    return false;
}

static int
s_append(void *arg, size_t n, const ms_store_payload_t *payloads)
{
    s_fake_t *f = arg;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(payloads[i].kind, MS_RECORD_CLAIM);
    f->n_appends++;
    if (f->append_rc == MS_OK)
        f->n_appended += n;
    return f->append_rc;
}

static void
s_fail(void *arg, const ms_hash_t *task_id, const ms_hash_t *sweep_id,
       uint32_t slot, uint32_t epoch, ms_failure_class_t cls,
       const char *reason)
{
    (void) task_id;
    (void) sweep_id;
    (void) slot;
    (void) epoch;
    s_fake_t *f = arg;
    assert_non_null(reason);
    f->n_failed++;
    f->failed_cls = cls;
}

static int64_t
s_clock(void *ctx)
{
    return ((s_fake_t *) ctx)->now;
}

//  One test's world: store, sweep(s), lease table, scheduler.
typedef struct {
    ms_sf_t *fx;               // the store fixture
    s_fake_t fake;             // the fake node
    ms_lease_clock_t clock;    // the fake clock for the table
    ms_store_t *store;         // the store
    ms_lease_table_t *leases;  // the lease table
    ms_scheduler_t *sched;     // the class under test
    ms_scheduler_config_t cfg; // its settings
    ms_sf_sweep_t sweeps[2];   // the sweeps stored
    size_t n_sweeps;           // entries in sweeps
    ms_store_payload_t claims[MS_SCHEDULER_MAX_CLAIMS]; // last pass
    size_t n_claims;                                    // its count
} s_world_t;

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_scheduler_test");
}

//  Open the world: N_WORKERS workers, MEMORY bytes per task (0: a lot).
static void
s_open(s_world_t *w, ms_sf_t *fx, int n_workers, int64_t memory)
{
    memset(w, 0, sizeof *w);
    w->fx = fx;
    w->fake.now = 100000;
    w->fake.has_dataset = true;
    w->fake.n_members = 1;
    memset(w->fake.members[0], 0x11, 32);
    w->clock = (ms_lease_clock_t){
        .mono_ms = s_clock, .boot_ms = s_clock, .ctx = &w->fake};
    w->store = ms_sf_open(fx, NULL, 16 << 20);
    w->leases = ms_lease_table_new(w->fake.members[0], S_TTL_MS, &w->clock);
    assert_non_null(w->leases);
    w->cfg.n_workers = n_workers;
    w->cfg.memory_bytes = memory > 0 ? memory : INT64_C(1) << 40;
    memcpy(w->cfg.node_id, w->fake.members[0], MS_HASH_BYTES);
    ms_scheduler_iface_t iface = {.arg = &w->fake,
                                  .log = s_log,
                                  .holding = s_holding,
                                  .in_pool = s_in_pool,
                                  .sweep = s_sweep,
                                  .dataset_wanted = s_dataset_wanted,
                                  .members = s_members,
                                  .task_busy = s_task_busy,
                                  .held = s_held,
                                  .append = s_append,
                                  .fail = s_fail};
    w->sched = ms_scheduler_new(w->store, w->leases, &w->cfg, &iface);
    assert_non_null(w->sched);
}

//  Store a sweep of N_TASKS tasks of one hidden layer of WIDTH.
static ms_sf_sweep_t *
s_add_sweep(s_world_t *w, const char *name, uint32_t width, uint32_t n_tasks)
{
    assert_true(w->n_sweeps < 2);
    ms_sf_sweep_t *sw = &w->sweeps[w->n_sweeps++];
    ms_sf_sweep_seeds(sw, name, width, n_tasks);
    assert_int_equal(ms_sf_append_sweep(w->store, w->fake.members[0], sw, 0),
                     MS_OK);
    return sw;
}

static void
s_close(s_world_t *w)
{
    ms_scheduler_destroy(&w->sched);
    assert_null(w->sched);
    ms_lease_table_destroy(&w->leases);
    for (size_t i = 0; i < w->n_sweeps; i++)
        ms_sf_sweep_free(&w->sweeps[i]);
    ms_store_destroy(&w->store);
}

//  One pass with N_IDLE idle workers and N_SETTLING claims settling, after
//  a change; returns the count of claims.
static size_t
s_pass(s_world_t *w, int n_idle, int n_settling)
{
    w->fake.now += 1000;
    ms_scheduler_changed(w->sched);
    assert_int_equal(ms_scheduler_claim(w->sched, w->fake.now, n_idle,
                                        n_settling, w->claims, &w->n_claims),
                     MS_OK);
    return w->n_claims;
}

//  Whether this node holds TASK_ID's slot 0 in the lease table.
static bool
s_we_hold(s_world_t *w, const uint8_t *task_id)
{
    ms_claim_t holder;
    bool live = false;
    return ms_lease_table_holder(w->leases, task_id, 0, &holder, &live) ==
               MS_OK &&
           live && memcmp(holder.node_id, w->fake.members[0], 32) == 0;
}

//  --------------------------------------------------------------------------
//  Claims for the idle workers less those settling; each is taken in the
//  lease table and appended in one commit; a second pass claims others.

static void
test_claims_for_idle_workers(void **state)
{
    s_world_t w;
    s_open(&w, *state, 4, 0);
    ms_sf_sweep_t *sw = s_add_sweep(&w, "idle", 8, 10);
    assert_int_equal(s_pass(&w, 3, 0), 3);
    assert_int_equal(w.fake.n_appends, 1);
    assert_int_equal(w.fake.n_appended, 3);
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(w.claims[k].u.claim.slot, 0);
        assert_int_equal(w.claims[k].u.claim.epoch, 1);
        assert_true(s_we_hold(&w, w.claims[k].u.claim.task_id));
        for (size_t j = 0; j < k; j++)
            assert_memory_not_equal(w.claims[j].u.claim.task_id,
                                    w.claims[k].u.claim.task_id, 32);
    }
    // Alone, one member: the first tasks of the sweep in order.
    assert_memory_equal(w.claims[0].u.claim.task_id, ms_sf_task_id(sw, 0), 32);
    // Two idle, two settling: no room, no pass.
    assert_int_equal(s_pass(&w, 2, 2), 0);
    assert_int_equal(w.fake.n_appends, 1);
    // Held tasks are no candidates: the next pass claims new ones.
    assert_int_equal(s_pass(&w, 7, 0), 7);
    for (size_t k = 0; k < 7; k++)
        for (size_t j = 0; j < 3; j++)
            assert_memory_not_equal(w.claims[k].u.claim.task_id,
                                    ms_sf_task_id(sw, j), 32);
    // All ten held: nothing left.
    assert_int_equal(s_pass(&w, 4, 0), 0);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  Prefetch: once tasks of a sweep ran short here, a node in a pool claims
//  window / run time per worker beyond the idle ones; alone none.

static void
test_prefetch_short_tasks(void **state)
{
    s_world_t w;
    s_open(&w, *state, 2, 0);
    ms_sf_sweep_t *sw = s_add_sweep(&w, "short", 8, 300);
    w.fake.in_pool = true;
    // Nothing ran here yet: only the idle worker.
    assert_int_equal(s_pass(&w, 1, 0), 1);
    // 1 ms a task: a window of 50 ms, 50 per worker, 2 workers.
    ms_scheduler_task_ran(w.sched, sw->sweep_id, 1.0);
    assert_int_equal(s_pass(&w, 1, 0), 1 + 100);
    // Claims settling count against the window.
    assert_int_equal(s_pass(&w, 1, 40), 100 + 1 - 40);
    // Slow settling widens the window to 2 x 100 ms: 400 beyond the
    // workers, more than the 137 tasks left.
    ms_scheduler_settled(w.sched, 100.0);
    assert_int_equal(s_pass(&w, 0, 0), 300 - 1 - 101 - 61);
    s_close(&w);

    // Alone: no prefetch, whatever ran.
    s_open(&w, *state, 2, 0);
    sw = s_add_sweep(&w, "short", 8, 300);
    ms_scheduler_task_ran(w.sched, sw->sweep_id, 1.0);
    assert_int_equal(s_pass(&w, 1, 0), 1);
    assert_int_equal(s_pass(&w, 0, 0), 0);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  With another member: the idle worker takes our own tasks first, and the
//  prefetch claims only tasks we own (never steals ahead).

static void
test_owner_rank(void **state)
{
    s_world_t w;
    s_open(&w, *state, 1, 0);
    ms_sf_sweep_t *sw = s_add_sweep(&w, "rank", 8, 60);
    w.fake.in_pool = true;
    w.fake.n_members = 2;
    memset(w.fake.members[1], 0x22, 32);
    const uint8_t(*members)[MS_ASSIGN_ID_BYTES] =
        (const uint8_t(*)[MS_ASSIGN_ID_BYTES]) w.fake.members;
    size_t n_own = 0;
    for (size_t i = 0; i < sw->n_tasks; i++)
        n_own += ms_assign_rank(ms_sf_task_id(sw, i), members, 2,
                                w.fake.members[0]) == 0;
    assert_true(n_own > 5 && n_own < sw->n_tasks - 5);
    assert_int_equal(s_pass(&w, 1, 0), 1);
    assert_int_equal(ms_assign_rank(w.claims[0].u.claim.task_id, members, 2,
                                    w.fake.members[0]),
                     0);
    // Prefetch of 50 (1 ms a task, one worker): our own tasks only.
    ms_scheduler_task_ran(w.sched, sw->sweep_id, 1.0);
    size_t n = s_pass(&w, 1, 0);
    assert_int_equal(n, n_own - 1);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(ms_assign_rank(w.claims[k].u.claim.task_id, members, 2,
                                        w.fake.members[0]),
                         0);
    // Idle workers steal what is left (the other member's tasks).
    assert_int_equal(s_pass(&w, 5, 0), 5);
    assert_int_not_equal(ms_assign_rank(w.claims[0].u.claim.task_id, members, 2,
                                        w.fake.members[0]),
                         0);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A slot another node holds live is not claimed (its claim ranks higher:
//  the lease rule); nor a task on our workers, nor one we gave up.

static void
test_skips_held_busy_given_up(void **state)
{
    s_world_t w;
    s_open(&w, *state, 4, 0);
    ms_sf_sweep_t *sw = s_add_sweep(&w, "held", 8, 4);
    ms_claim_t theirs = {.slot = 0, .epoch = 1};
    memcpy(theirs.task_id, ms_sf_task_id(sw, 0), 32);
    memset(theirs.node_id, 0x22, 32);
    assert_int_equal(ms_lease_table_add_claim(w.leases, &theirs), MS_OK);
    memcpy(w.fake.busy, ms_sf_task_id(sw, 1), 32);
    w.fake.has_busy = true;
    ms_hash_t gone;
    memcpy(gone.bytes, ms_sf_task_id(sw, 2), 32);
    ms_scheduler_gave_up(w.sched, &gone);
    assert_int_equal(s_pass(&w, 4, 0), 1);
    assert_memory_equal(w.claims[0].u.claim.task_id, ms_sf_task_id(sw, 3), 32);
    // Their lease expires (no heartbeat for a TTL): now it is claimable,
    // at the next epoch.
    w.fake.now += 2 * S_TTL_MS;
    ms_claim_t buf[8];
    assert_true(ms_lease_table_expire(w.leases, buf, 8) >= 1);
    assert_int_equal(s_pass(&w, 1, 0), 1);
    assert_memory_equal(w.claims[0].u.claim.task_id, ms_sf_task_id(sw, 0), 32);
    assert_int_equal(w.claims[0].u.claim.epoch, 2);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  Memory: a task whose network does not fit the memory one task may use
//  is left to bigger nodes; a small one beside it is claimed.

static void
test_skips_what_does_not_fit(void **state)
{
    s_world_t w;
    // 8 MiB a task: a 784-8-10 network fits, a 784-4096-10 one (3.3
    // million parameters, 16 bytes each with gradients and Adam) not.
    s_open(&w, *state, 4, 8 << 20);
    ms_sf_sweep_t *big = s_add_sweep(&w, "big", 4096, 3);
    ms_sf_sweep_t *small = s_add_sweep(&w, "small", 8, 3);
    assert_int_equal(s_pass(&w, 4, 0), 3);
    for (size_t k = 0; k < 3; k++) {
        ms_store_task_t *t = NULL;
        assert_int_equal(
            ms_store_get_task(w.store, w.claims[k].u.claim.task_id, &t), MS_OK);
        assert_memory_equal(t->sweep_id, small->sweep_id, 32);
        ms_store_task_destroy(&t);
    }
    for (size_t i = 0; i < 3; i++)
        assert_false(s_we_hold(&w, ms_sf_task_id(big, i)));
    s_close(&w);

    // With room for it, the big one is claimed too.
    s_open(&w, *state, 4, 0);
    s_add_sweep(&w, "big", 4096, 3);
    assert_int_equal(s_pass(&w, 4, 0), 3);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  The scan's pace: no pass while the node holds (grace, stopping); after a
//  scan, none without a change until 250 ms passed; at most one per 2 ms.

static void
test_scan_pace(void **state)
{
    s_world_t w;
    s_open(&w, *state, 1, 0);
    s_add_sweep(&w, "pace", 8, 10);
    w.fake.holding = true;
    assert_int_equal(s_pass(&w, 1, 0), 0);
    w.fake.holding = false;
    assert_int_equal(s_pass(&w, 1, 0), 1);
    int64_t t0 = w.fake.now;
    assert_int_equal(ms_scheduler_next_scan_at(w.sched), t0 + 250);
    // A change 1 ms later: put off to 2 ms after the last scan.
    ms_scheduler_changed(w.sched);
    assert_int_equal(
        ms_scheduler_claim(w.sched, t0 + 1, 1, 0, w.claims, &w.n_claims),
        MS_OK);
    assert_int_equal(w.n_claims, 0);
    assert_int_equal(ms_scheduler_next_scan_at(w.sched), t0 + 2);
    assert_int_equal(
        ms_scheduler_claim(w.sched, t0 + 2, 1, 0, w.claims, &w.n_claims),
        MS_OK);
    assert_int_equal(w.n_claims, 1);
    // No change: no scan before next_scan_at, then one by time alone.
    assert_int_equal(
        ms_scheduler_claim(w.sched, t0 + 200, 1, 0, w.claims, &w.n_claims),
        MS_OK);
    assert_int_equal(w.n_claims, 0);
    assert_int_equal(
        ms_scheduler_claim(w.sched, t0 + 252, 1, 0, w.claims, &w.n_claims),
        MS_OK);
    assert_int_equal(w.n_claims, 1);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  An append that fails leaves nothing claimed: the lease table forgets
//  the pass's claims and none is returned.

static void
test_append_failure_releases(void **state)
{
    s_world_t w;
    s_open(&w, *state, 2, 0);
    ms_sf_sweep_t *sw = s_add_sweep(&w, "nospace", 8, 2);
    w.fake.append_rc = MS_ERR_STORE_FULL;
    int logs = w.fake.n_logs;
    assert_int_equal(s_pass(&w, 2, 0), 0);
    assert_int_equal(w.fake.n_appends, 1);
    assert_true(w.fake.n_logs > logs);
    for (size_t i = 0; i < 2; i++) {
        assert_false(s_we_hold(&w, ms_sf_task_id(sw, i)));
        assert_true(ms_lease_table_can_claim(w.leases, ms_sf_task_id(sw, i), 0,
                                             false, NULL));
    }
    w.fake.append_rc = MS_OK;
    assert_int_equal(s_pass(&w, 2, 0), 2);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A sweep whose dataset is not here: in a pool the node is asked to fetch
//  it and nothing is claimed; alone the task is claimed and given up.

static void
test_missing_dataset(void **state)
{
    s_world_t w;
    s_open(&w, *state, 1, 0);
    s_add_sweep(&w, "nodata", 8, 2);
    w.fake.has_dataset = false;
    w.fake.in_pool = true;
    assert_int_equal(s_pass(&w, 1, 0), 0);
    assert_int_equal(w.fake.n_appends, 0);
    assert_int_equal(w.fake.n_failed, 0);
    assert_true(w.fake.n_wanted >= 1);
    w.fake.in_pool = false;
    assert_int_equal(s_pass(&w, 1, 0), 0);
    assert_int_equal(w.fake.n_failed, 2);
    assert_int_equal(w.fake.failed_cls, MS_FAILURE_CLASS_TASK);
    assert_int_equal(w.fake.n_appended, 2); // their claims
    s_close(&w);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claims_for_idle_workers, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_prefetch_short_tasks, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_owner_rank, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_skips_held_busy_given_up, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_skips_what_does_not_fit, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_scan_pace, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_append_failure_releases, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_missing_dataset, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
