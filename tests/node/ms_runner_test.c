/*  =========================================================================
    ms_runner_test - workers' runs: settled claims started or released,
    the settle cap, give-ups, crash counts, what a worker's end means
    (retries up to retry_cap, the failure after the last attempt, stops,
    re-evaluations, paused-out runs), releasing every claim

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Drives ms_runner over a real store (ms_store_fixture), lease table,
    settle list and a pool of one worker, with a fake node behind
    ms_runner_iface_t whose work hook completes every task in the node
    (so no training runs).
*/
#include "ms_runner.h"

#include "ms_hash.h"
#include "ms_lease_table.h"
#include "ms_settle.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_worker.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_store_fixture.h"

#define S_MAX_SEEN 16 // records the fake node keeps

//  The fake node.
typedef struct {
    bool in_pool;                 // iface.in_pool answers this
    size_t n_peers;               // peers a claim waits for
    json_t *dataset;              // every sweep's dataset object
    uint32_t kinds[S_MAX_SEEN];   // kinds of the records appended
    uint32_t reasons[S_MAX_SEEN]; // their release reasons
    size_t n_records;             // records appended
    size_t n_results;             // iface.result calls
    ms_runner_run_t last;         // the last one's run (config NULL)
    size_t n_settled;             // iface.settled calls
    size_t n_started;             // iface.sweep_started calls
    size_t n_c2s;                 // iface.claim_to_start calls
    size_t n_gave_up;             // iface.gave_up calls
    size_t n_events;              // events emitted
    char last_event[32];          // the last one's "event"
    int last_attempt;             // ... and its "attempt" (0: none)
    char failure[800];            // the last failure record's reason
    uint32_t failure_class;       // ... and its class
    size_t n_died;                // iface.worker_died calls
    size_t n_reeval;              // iface.reeval_event calls
    uint8_t reeval_target[32];    // the last one's target
    size_t n_changed;             // iface.changed calls
} s_fake_t;

static void
s_log(void *arg, const char *line)
{
    (void) arg;
    (void) line;
}

static void
s_emit(void *arg, json_t *event)
{
    s_fake_t *f = arg;
    f->n_events++;
    const char *name = json_string_value(json_object_get(event, "event"));
    snprintf(f->last_event, sizeof f->last_event, "%s", name ? name : "");
    f->last_attempt =
        (int) json_integer_value(json_object_get(event, "attempt"));
    json_decref(event);
}

static int
s_append(void *arg, size_t n, const ms_store_payload_t *payloads)
{
    s_fake_t *f = arg;
    for (size_t i = 0; i < n && f->n_records < S_MAX_SEEN; i++) {
        f->kinds[f->n_records] = payloads[i].kind;
        f->reasons[f->n_records] = payloads[i].kind == MS_RECORD_RELEASE
                                       ? payloads[i].u.claim.reason
                                       : 0;
        if (payloads[i].kind == MS_RECORD_FAILURE) {
            snprintf(f->failure, sizeof f->failure, "%s",
                     payloads[i].u.failure.reason);
            f->failure_class = payloads[i].u.failure.failure_class;
        }
        f->n_records++;
    }
    return MS_OK;
}

static void
s_changed(void *arg)
{
    ((s_fake_t *) arg)->n_changed++;
}

static bool
s_in_pool(void *arg)
{
    return ((s_fake_t *) arg)->in_pool;
}

static size_t
s_settle_peers(void *arg, uint8_t (**out)[MS_SETTLE_ID_BYTES])
{
    s_fake_t *f = arg;
    *out = NULL;
    if (f->n_peers == 0 || !(*out = calloc(f->n_peers, MS_SETTLE_ID_BYTES)))
        return 0;
    for (size_t i = 0; i < f->n_peers; i++)
        memset((*out)[i], 0x40 + (int) i, MS_SETTLE_ID_BYTES);
    return f->n_peers;
}

static void
s_settled(void *arg, double waited_ms)
{
    assert_true(waited_ms >= 0);
    ((s_fake_t *) arg)->n_settled++;
}

static const json_t *
s_dataset(void *arg, const ms_hash_t *sweep_id)
{
    (void) sweep_id;
    return ((s_fake_t *) arg)->dataset;
}

static void
s_sweep_started(void *arg, const ms_hash_t *sweep_id)
{
    (void) sweep_id;
    ((s_fake_t *) arg)->n_started++;
}

static bool
s_keeps_weights(void *arg)
{
    (void) arg;
    return false;
}

static json_t *
s_work_hook(void *arg, const char *task_hex, const char *sweep_hex,
            const json_t *config)
{
    (void) arg;
    (void) sweep_hex;
    assert_int_equal(strlen(task_hex), MS_HASH_HEX_LEN);
    assert_non_null(config);
    return json_pack("{s:s}", "status", "ok");
}

static void
s_claim_to_start(void *arg, const ms_hash_t *sweep_id, int64_t free_us,
                 const char *thex, int64_t started_us)
{
    (void) sweep_id;
    (void) thex;
    assert_true(started_us >= free_us);
    ((s_fake_t *) arg)->n_c2s++;
}

static void
s_result(void *arg, ms_runner_run_t *run, json_t *body)
{
    s_fake_t *f = arg;
    assert_string_equal(json_string_value(json_object_get(body, "status")),
                        "ok");
    f->n_results++;
    f->last = *run;
    f->last.config = NULL;
}

static void
s_gave_up(void *arg, const ms_hash_t *task_id)
{
    (void) task_id;
    ((s_fake_t *) arg)->n_gave_up++;
}

static void
s_paused(void *arg, const ms_runner_pause_t *pause)
{
    (void) arg;
    (void) pause;
    fail_msg("no idle_only here: nothing to publish");
}

static void
s_worker_died(void *arg)
{
    ((s_fake_t *) arg)->n_died++;
}

static void
s_reeval_event(void *arg, const uint8_t target[MS_HASH_BYTES],
               const ms_worker_event_t *ev)
{
    s_fake_t *f = arg;
    assert_true(ev->kind != MS_WORKER_EVENT_EPOCH &&
                ev->kind != MS_WORKER_EVENT_STARTED);
    f->n_reeval++;
    memcpy(f->reeval_target, target, MS_HASH_BYTES);
}

//  One test's world.
typedef struct {
    s_fake_t fake;            // the fake node
    uint8_t node_id[32];      // this node
    char ckpt[300];           // the checkpoint dir
    ms_store_t *store;        // the store
    ms_lease_table_t *leases; // the lease table (system clock)
    ms_settle_t *settle;      // the settle list
    ms_worker_pool_t *pool;   // one worker
    ms_runner_t *runner;      // the class under test
    ms_sf_sweep_t sweep;      // the sweep stored
} s_world_t;

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_runner_test");
}

//  Open the world: a sweep of 3 tasks, SETTLE_MS the settle cap.
static void
s_open_capped(s_world_t *w, ms_sf_t *fx, bool in_pool, size_t n_peers,
              int64_t settle_ms, int retry_cap)
{
    memset(w, 0, sizeof *w);
    w->fake.in_pool = in_pool;
    w->fake.n_peers = n_peers;
    w->fake.dataset = json_object();
    memset(w->node_id, 0x11, sizeof w->node_id);
    snprintf(w->ckpt, sizeof w->ckpt, "%s/checkpoints", fx->root);
    mkdir(w->ckpt, 0700);
    w->store = ms_sf_open(fx, NULL, 16 << 20);
    ms_sf_sweep_seeds(&w->sweep, "runs", 8, 3);
    assert_int_equal(ms_sf_append_sweep(w->store, w->node_id, &w->sweep, 0),
                     MS_OK);
    w->leases = ms_lease_table_new(w->node_id, 10000, NULL);
    w->settle = ms_settle_new();
    assert_non_null(w->leases);
    assert_non_null(w->settle);
    ms_worker_options_t wo;
    ms_worker_options_defaults(&wo);
    wo.n_workers = 1;
    wo.backend = "cpu";
    wo.checkpoint_dir = w->ckpt;
    ms_diag_t diag;
    assert_int_equal(ms_worker_pool_open(&w->pool, &wo, &diag), MS_OK);
    ms_runner_config_t cfg = {.checkpoint_dir = w->ckpt,
                              .weights_dir = fx->root,
                              .settle_ms = settle_ms,
                              .heartbeat_ms = 500,
                              .max_pause_s = 60,
                              .retry_cap = retry_cap};
    memcpy(cfg.node_id, w->node_id, MS_HASH_BYTES);
    ms_runner_iface_t iface = {.arg = &w->fake,
                               .log = s_log,
                               .emit = s_emit,
                               .append = s_append,
                               .changed = s_changed,
                               .in_pool = s_in_pool,
                               .settle_peers = s_settle_peers,
                               .settled = s_settled,
                               .dataset = s_dataset,
                               .sweep_started = s_sweep_started,
                               .keeps_weights = s_keeps_weights,
                               .work_hook = s_work_hook,
                               .claim_to_start = s_claim_to_start,
                               .result = s_result,
                               .gave_up = s_gave_up,
                               .paused = s_paused,
                               .worker_died = s_worker_died,
                               .reeval_event = s_reeval_event};
    w->runner = ms_runner_new(w->store, w->leases, w->settle, w->pool, NULL,
                              &cfg, &iface);
    assert_non_null(w->runner);
}

//  The world with the default retry_cap (2).
static void
s_open(s_world_t *w, ms_sf_t *fx, bool in_pool, size_t n_peers,
       int64_t settle_ms)
{
    s_open_capped(w, fx, in_pool, n_peers, settle_ms, 2);
}

static void
s_close(s_world_t *w)
{
    ms_runner_destroy(&w->runner);
    assert_null(w->runner);
    ms_worker_pool_destroy(&w->pool);
    ms_settle_destroy(&w->settle);
    ms_lease_table_destroy(&w->leases);
    ms_sf_sweep_free(&w->sweep);
    ms_store_destroy(&w->store);
    json_decref(w->fake.dataset);
}

//  Claim task I (slot 0) in the lease table as the scheduler does; the
//  claim record in *P.
static void
s_claim(s_world_t *w, size_t i, ms_store_payload_t *p)
{
    ms_claim_t mine;
    assert_int_equal(ms_lease_table_claim(w->leases,
                                          ms_sf_task_id(&w->sweep, i), 0, false,
                                          &mine),
                     MS_OK);
    memset(p, 0, sizeof *p);
    p->kind = MS_RECORD_CLAIM;
    memcpy(p->u.claim.task_id, ms_sf_task_id(&w->sweep, i), MS_HASH_BYTES);
    p->u.claim.epoch = mine.epoch;
}

//  --------------------------------------------------------------------------
//  Alone, a claim starts at once; the work hook's body is the result,
//  under the claim's slot and epoch.

static void
test_alone_starts_at_once(void **state)
{
    s_world_t w;
    s_open(&w, *state, false, 2, 1000);
    ms_store_payload_t p;
    s_claim(&w, 0, &p);
    ms_runner_settle(w.runner, &p, 1, 1, 1000);
    assert_int_equal(ms_settle_count(w.settle), 0);
    assert_int_equal(w.fake.n_results, 1);
    assert_true(w.fake.last.leased);
    assert_int_equal(w.fake.last.slot, 0);
    assert_int_equal(w.fake.last.epoch, 1);
    assert_memory_equal(w.fake.last.task_id.bytes, ms_sf_task_id(&w.sweep, 0),
                        32);
    assert_int_equal(w.fake.n_started, 1);
    assert_int_equal(w.fake.n_c2s, 1);
    ms_runner_stats_t st;
    ms_runner_stats(w.runner, &st);
    assert_int_equal(st.n_claims, 1);
    assert_int_equal(st.n_settle_capped, 0);
    assert_int_equal(ms_runner_busy(w.runner), 0);
    assert_false(ms_runner_idle_tick(w.runner, 1000)); // no idle_only
    assert_false(ms_runner_paused(w.runner));
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  In a pool, a claim waits for its peers' acknowledgements; with none,
//  it is decided at the cap (counted) and started, still ours.

static void
test_settles_at_the_cap(void **state)
{
    s_world_t w;
    s_open(&w, *state, true, 1, 50);
    ms_store_payload_t p;
    s_claim(&w, 1, &p);
    ms_runner_settle(w.runner, &p, 1, 1, 1000);
    assert_int_equal(ms_settle_count(w.settle), 1);
    ms_runner_start_settled(w.runner, 1010);
    assert_int_equal(w.fake.n_results, 0);
    ms_runner_start_settled(w.runner, 1060);
    assert_int_equal(ms_settle_count(w.settle), 0);
    assert_int_equal(w.fake.n_results, 1);
    assert_int_equal(w.fake.n_settled, 1);
    ms_runner_stats_t st;
    ms_runner_stats(w.runner, &st);
    assert_int_equal(st.n_claims, 1);
    assert_int_equal(st.n_settle_capped, 1);
    assert_int_equal(st.n_settle_lost, 0);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A claim another node's claim outranked while it settled is released
//  (reason outranked) and never started.

static void
test_lost_while_settling(void **state)
{
    s_world_t w;
    s_open(&w, *state, true, 1, 50);
    ms_store_payload_t p;
    s_claim(&w, 2, &p);
    ms_runner_settle(w.runner, &p, 1, 1, 1000);
    ms_claim_t theirs = {.slot = 0, .epoch = 2};
    memcpy(theirs.task_id, ms_sf_task_id(&w.sweep, 2), 32);
    memset(theirs.node_id, 0x22, 32);
    assert_int_equal(ms_lease_table_add_claim(w.leases, &theirs), MS_OK);
    ms_runner_start_settled(w.runner, 1060);
    assert_int_equal(w.fake.n_results, 0);
    assert_int_equal(w.fake.n_records, 1);
    assert_int_equal(w.fake.kinds[0], MS_RECORD_RELEASE);
    assert_int_equal(w.fake.reasons[0], MS_RELEASE_REASON_OUTRANKED);
    ms_runner_stats_t st;
    ms_runner_stats(w.runner, &st);
    assert_int_equal(st.n_settle_lost, 1);
    assert_int_equal(st.n_conflicts, 1);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  Giving a task up: a failure and its release in one block, the
//  checkpoint gone, the crash count forgotten, the node told.

static void
test_fail_gives_up(void **state)
{
    s_world_t w;
    s_open(&w, *state, false, 0, 0);
    ms_hash_t tid, sid;
    memcpy(tid.bytes, ms_sf_task_id(&w.sweep, 0), 32);
    memcpy(sid.bytes, w.sweep.sweep_id, 32);
    char hex[MS_HASH_HEX_LEN + 1], path[600];
    ms_hash_hex(&tid, hex);
    ms_worker_checkpoint_path(w.ckpt, hex, path, sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(ms_runner_crashed(w.runner, &tid, 2), 1);
    assert_int_equal(ms_runner_crashed(w.runner, &tid, 2), 2);
    ms_runner_fail(w.runner, &tid, &sid, 0, 1, MS_FAILURE_CLASS_TASK,
                   "bad data");
    assert_int_equal(w.fake.n_records, 2);
    assert_int_equal(w.fake.kinds[0], MS_RECORD_FAILURE);
    assert_int_equal(w.fake.kinds[1], MS_RECORD_RELEASE);
    assert_int_equal(w.fake.reasons[1], MS_RELEASE_REASON_FAILED);
    assert_int_equal(w.fake.n_gave_up, 1);
    assert_int_equal(w.fake.n_events, 1); // "failed"
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(ms_runner_crashed(w.runner, &tid, 2), 1);
    ms_runner_forget(w.runner, &tid);
    assert_int_equal(ms_runner_crashed(w.runner, &tid, 2), 1);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A graceful stop releases the settling claims (reason shutdown).

static void
test_release_all(void **state)
{
    s_world_t w;
    s_open(&w, *state, true, 2, 5000);
    ms_store_payload_t p[2];
    s_claim(&w, 0, &p[0]);
    s_claim(&w, 1, &p[1]);
    ms_runner_settle(w.runner, p, 2, 1, 1000);
    assert_int_equal(ms_settle_count(w.settle), 2);
    ms_runner_release_all(w.runner);
    assert_int_equal(ms_settle_count(w.settle), 0);
    assert_int_equal(w.fake.n_records, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(w.fake.kinds[i], MS_RECORD_RELEASE);
        assert_int_equal(w.fake.reasons[i], MS_RELEASE_REASON_SHUTDOWN);
    }
    assert_true(ms_lease_table_can_claim(w.leases, ms_sf_task_id(&w.sweep, 0),
                                         0, false, NULL));
    assert_int_equal(w.fake.n_results, 0);
    s_close(&w);
}

//  Put task I on worker 0 as ms_runner_start does (its entry in the run
//  table, under a claim of slot 0 at EPOCH); returns the entry.
static ms_runner_run_t *
s_on_worker(s_world_t *w, size_t i, uint32_t epoch)
{
    ms_runner_run_t *r = ms_runner_run(w->runner, 0);
    assert_false(r->busy);
    r->busy = true;
    memcpy(r->task_id.bytes, ms_sf_task_id(&w->sweep, i), 32);
    memcpy(r->sweep_id.bytes, w->sweep.sweep_id, 32);
    r->config = json_pack("{s:s}", "kind", "train");
    r->train = true;
    r->leased = true;
    r->slot = 0;
    r->epoch = epoch;
    return r;
}

//  Worker 0 died with REASON (killed by SIG, 0: exited).
static void
s_died(s_world_t *w, const char *reason, int sig)
{
    ms_worker_event_t ev = {
        .kind = MS_WORKER_EVENT_DIED, .worker = 0, .term_signal = sig};
    snprintf(ev.reason, sizeof ev.reason, "%s", reason);
    ms_runner_worker_event(w->runner, &ev);
}

//  --------------------------------------------------------------------------
//  A crash is retried at once under the same claim (on the settle list,
//  a "retry" event with the next attempt) up to retry_cap retries; the
//  next crash gives the task up: a failure record "REASON on N
//  attempts" (class task) and the release, the node told.

static void
test_crash_retried_then_failed(void **state)
{
    s_world_t w;
    s_open(&w, *state, false, 0, 0);
    const uint8_t *tid = ms_sf_task_id(&w.sweep, 0);
    const char *why = "worker killed by signal 6 (SIGABRT)";
    for (int attempt = 1; attempt <= 2; attempt++) {
        s_on_worker(&w, 0, 1);
        size_t changed = w.fake.n_changed;
        s_died(&w, why, 6);
        assert_int_equal(w.fake.n_died, (size_t) attempt);
        assert_true(w.fake.n_changed > changed);
        assert_false(ms_runner_run(w.runner, 0)->busy); // entry freed
        assert_null(ms_runner_run(w.runner, 0)->config);
        assert_string_equal(w.fake.last_event, "retry");
        assert_int_equal(w.fake.last_attempt, attempt + 1);
        assert_int_equal(w.fake.n_records, 0); // nothing published
        assert_int_equal(ms_settle_count(w.settle), 1);
        ms_settle_claim_t st;
        assert_true(ms_settle_remove(w.settle, tid, 0, &st));
        assert_int_equal(st.epoch, 1); // the same claim
    }
    s_on_worker(&w, 0, 1);
    s_died(&w, why, 6);
    assert_int_equal(ms_settle_count(w.settle), 0);
    assert_int_equal(w.fake.n_records, 2);
    assert_int_equal(w.fake.kinds[0], MS_RECORD_FAILURE);
    assert_int_equal(w.fake.kinds[1], MS_RECORD_RELEASE);
    assert_int_equal(w.fake.reasons[1], MS_RELEASE_REASON_FAILED);
    assert_string_equal(w.fake.failure,
                        "worker killed by signal 6 (SIGABRT) on 3 attempts");
    assert_int_equal(w.fake.failure_class, MS_FAILURE_CLASS_TASK);
    assert_int_equal(w.fake.n_gave_up, 1);
    assert_string_equal(w.fake.last_event, "failed");
    // The crash count went with the give-up: a new run starts afresh.
    ms_hash_t t;
    memcpy(t.bytes, tid, 32);
    assert_int_equal(ms_runner_crashed(w.runner, &t, 2), 1);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  retry_cap 0: the first crash gives up ("on 1 attempt"); a SIGKILL in a
//  pool (the out-of-memory killer) is a resource failure, alone a task
//  one.

static void
test_sigkill_in_pool_is_resource(void **state)
{
    s_world_t w;
    s_open_capped(&w, *state, true, 0, 0, 0);
    s_on_worker(&w, 1, 1);
    s_died(&w, "worker killed by signal 9 (SIGKILL)", 9);
    assert_int_equal(w.fake.n_records, 2);
    assert_string_equal(w.fake.failure,
                        "worker killed by signal 9 (SIGKILL) on 1 attempt");
    assert_int_equal(w.fake.failure_class, MS_FAILURE_CLASS_RESOURCE);
    assert_int_equal(w.fake.n_gave_up, 1);
    s_close(&w);
    s_open_capped(&w, *state, false, 0, 0, 0);
    s_on_worker(&w, 1, 1);
    s_died(&w, "worker killed by signal 9 (SIGKILL)", 9);
    assert_int_equal(w.fake.failure_class, MS_FAILURE_CLASS_TASK);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A worker stopped on purpose (outranked) dies: no crash, no retry; the
//  claim is released (reason outranked) and the task is pending again.

static void
test_stopped_is_no_crash(void **state)
{
    s_world_t w;
    s_open(&w, *state, false, 0, 0);
    ms_runner_run_t *r = s_on_worker(&w, 2, 1);
    r->stopping = true;
    ms_store_set_task_state(w.store, ms_sf_task_id(&w.sweep, 2),
                            MS_TASK_RUNNING, w.node_id, NULL);
    s_died(&w, "worker exited with status 143", 0);
    assert_int_equal(w.fake.n_died, 1);
    assert_int_equal(w.fake.n_records, 1);
    assert_int_equal(w.fake.kinds[0], MS_RECORD_RELEASE);
    assert_int_equal(w.fake.reasons[0], MS_RELEASE_REASON_OUTRANKED);
    assert_int_equal(ms_settle_count(w.settle), 0);
    assert_int_equal(w.fake.n_gave_up, 0);
    ms_store_task_t *t = NULL;
    assert_int_equal(ms_store_get_task(w.store, ms_sf_task_id(&w.sweep, 2), &t),
                     MS_OK);
    assert_int_equal(t->state, MS_TASK_PENDING);
    ms_store_task_destroy(&t);
    ms_hash_t tid;
    memcpy(tid.bytes, ms_sf_task_id(&w.sweep, 2), 32);
    assert_int_equal(ms_runner_crashed(w.runner, &tid, 2), 1); // none before
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A worker's other events: progress (epoch, started) keeps the run; a
//  result goes to the node; bad data gives up at once, with the worker's
//  reason.

static void
test_result_failed_and_progress(void **state)
{
    s_world_t w;
    s_open(&w, *state, false, 0, 0);
    s_on_worker(&w, 0, 3);
    ms_worker_event_t ev = {.kind = MS_WORKER_EVENT_STARTED, .worker = 0};
    ev.body = json_pack("{s:I}", "mono_us", (json_int_t) 1 << 40);
    ms_runner_worker_event(w.runner, &ev);
    json_decref(ev.body);
    assert_int_equal(w.fake.n_c2s, 1);
    ev = (ms_worker_event_t){.kind = MS_WORKER_EVENT_EPOCH, .worker = 0};
    ev.body = json_pack("{s:s, s:i}", "op", "epoch", "epoch", 1);
    ms_runner_worker_event(w.runner, &ev);
    json_decref(ev.body);
    assert_string_equal(w.fake.last_event, "epoch");
    assert_true(ms_runner_run(w.runner, 0)->busy); // still running
    assert_int_equal(w.fake.n_changed, 0);
    ev = (ms_worker_event_t){.kind = MS_WORKER_EVENT_RESULT, .worker = 0};
    ev.body = json_pack("{s:s}", "status", "ok");
    ms_runner_worker_event(w.runner, &ev);
    json_decref(ev.body);
    assert_int_equal(w.fake.n_results, 1);
    assert_int_equal(w.fake.last.epoch, 3);
    assert_memory_equal(w.fake.last.task_id.bytes, ms_sf_task_id(&w.sweep, 0),
                        32);
    assert_false(ms_runner_run(w.runner, 0)->busy);
    assert_int_equal(w.fake.n_records, 0);
    s_on_worker(&w, 1, 1);
    ev = (ms_worker_event_t){.kind = MS_WORKER_EVENT_FAILED, .worker = 0};
    snprintf(ev.reason, sizeof ev.reason, "dataset: 3 features, not 4");
    ms_runner_worker_event(w.runner, &ev);
    assert_int_equal(w.fake.n_records, 2);
    assert_string_equal(w.fake.failure, "dataset: 3 features, not 4");
    assert_int_equal(w.fake.failure_class, MS_FAILURE_CLASS_TASK);
    assert_int_equal(w.fake.n_died, 0);
    assert_false(ms_runner_run(w.runner, 0)->busy);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A re-evaluation's end is ms_reeval's (the target handed on), and a
//  run released after max_pause_s ends with nothing published.

static void
test_reeval_and_paused_out(void **state)
{
    s_world_t w;
    s_open(&w, *state, false, 0, 0);
    ms_runner_run_t *r = s_on_worker(&w, 0, 1);
    r->reeval = true;
    r->leased = false;
    memset(r->target, 0x77, 32);
    ms_worker_event_t ev = {.kind = MS_WORKER_EVENT_STARTED, .worker = 0};
    ms_runner_worker_event(w.runner, &ev);
    assert_int_equal(w.fake.n_c2s, 0);
    s_died(&w, "worker killed by signal 11 (SIGSEGV)", 11);
    assert_int_equal(w.fake.n_reeval, 1);
    assert_int_equal(w.fake.n_died, 1);
    uint8_t want[32];
    memset(want, 0x77, 32);
    assert_memory_equal(w.fake.reeval_target, want, 32);
    assert_int_equal(w.fake.n_records, 0);
    assert_false(ms_runner_run(w.runner, 0)->busy);
    r = s_on_worker(&w, 1, 1);
    r->paused_out = true;
    r->stopping = true;
    r->leased = false;
    ev = (ms_worker_event_t){.kind = MS_WORKER_EVENT_RESULT, .worker = 0};
    ev.body = json_pack("{s:s}", "status", "ok");
    ms_runner_worker_event(w.runner, &ev);
    json_decref(ev.body);
    assert_int_equal(w.fake.n_results, 0); // dropped
    assert_int_equal(w.fake.n_records, 0);
    assert_int_equal(w.fake.n_reeval, 1);
    assert_false(ms_runner_run(w.runner, 0)->busy);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  A cancel stops our workers on that sweep's tasks only (SIGTERM: its
//  death is then no crash).

static void
test_stop_sweep(void **state)
{
    s_world_t w;
    s_open(&w, *state, false, 0, 0);
    ms_runner_run_t *r = s_on_worker(&w, 0, 1);
    ms_hash_t other;
    memset(other.bytes, 0x99, 32);
    ms_runner_stop_sweep(w.runner, &other);
    assert_false(r->stopping);
    ms_hash_t sid;
    memcpy(sid.bytes, w.sweep.sweep_id, 32);
    ms_runner_stop_sweep(w.runner, &sid);
    assert_true(r->stopping);
    s_died(&w, "worker exited with status 143", 0);
    assert_int_equal(w.fake.n_records, 1);
    assert_int_equal(w.fake.reasons[0], MS_RELEASE_REASON_OUTRANKED);
    assert_int_equal(w.fake.n_gave_up, 0);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  ms_runner_start_reeval: a re-evaluation goes to the idle worker, its
//  entry holds the task, config and target (no lease, no training), the
//  worker is then not free for another; its end is ms_reeval's.

static void
test_start_reeval(void **state)
{
    s_world_t w;
    s_open(&w, *state, true, 0, 0);
    assert_true(ms_runner_reeval_free(w.runner));
    uint8_t target[32];
    memset(target, 0x5a, sizeof target);
    ms_reeval_run_t run = {.target = target,
                           .config = json_pack("{s:s}", "kind", "train"),
                           .dataset = w.fake.dataset,
                           .weights_path = "/nonexistent/weights",
                           .started_ms = 1234};
    memcpy(run.task_id.bytes, ms_sf_task_id(&w.sweep, 1), 32);
    memcpy(run.sweep_id.bytes, w.sweep.sweep_id, 32);
    int worker = -1;
    assert_int_equal(ms_runner_start_reeval(w.runner, &run, &worker), MS_OK);
    assert_int_equal(worker, 0);
    ms_runner_run_t *r = ms_runner_run(w.runner, 0);
    assert_true(r->busy);
    assert_true(r->reeval);
    assert_false(r->leased);
    assert_false(r->train);
    assert_ptr_equal(r->config, run.config); // taken
    assert_int_equal(r->started_ms, 1234);
    assert_memory_equal(r->task_id.bytes, run.task_id.bytes, 32);
    assert_memory_equal(r->target, target, 32);
    assert_false(ms_runner_reeval_free(w.runner)); // its one worker is busy
    s_died(&w, "worker killed by signal 9 (SIGKILL)", 9);
    assert_int_equal(w.fake.n_reeval, 1);
    assert_memory_equal(w.fake.reeval_target, target, 32);
    assert_int_equal(w.fake.n_records, 0); // nothing of ours published
    s_close(&w);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alone_starts_at_once, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_settles_at_the_cap, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_lost_while_settling, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_fail_gives_up, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_release_all, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_crash_retried_then_failed, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_sigkill_in_pool_is_resource,
                                        s_setup, ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_stopped_is_no_crash, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_result_failed_and_progress,
                                        s_setup, ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_start_reeval, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_reeval_and_paused_out, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_stop_sweep, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
