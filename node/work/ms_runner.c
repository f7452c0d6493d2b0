/*  =========================================================================
    ms_runner - workers' runs: starting the tasks we hold, settled claims,
    crash records, give-ups, outranked and lapsed leases, pauses

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Workers' runs (DESIGN.md "Work, claims and leases", "Workers"): the
    life of a claim once the scheduler made it (ms_scheduler.h) until its
    result is ours (ms_outbox.h); the settle rule is ms_settle.h's.

    Starting. A claim the scheduler made goes on the settle list
    (ms_runner_settle): it starts once every peer that was live and
    linked when its block was pushed acknowledged it, or at the cap
    (settle_ms; auto = one heartbeat interval), and then only if this
    node still holds the slot (ms_runner_start_settled; a claim lost
    while settling is released unstarted). With nobody to wait for it
    starts at once. A noop task, or a task a test's work hook makes up,
    completes in the node under its claim (no code to isolate); every
    other task goes to an idle worker, which this class then tracks in
    its run table (one ms_runner_run_t per worker).

    Ending. The node hands every worker event to ms_runner_worker_event,
    which decides what it means. A worker's crash is counted per task
    (ms_runner_crashed; in memory: a restarted node gives a task a fresh
    set of retries); the task is retried at once under the same claim up
    to retry_cap retries, then given up (ms_runner_fail: a failure
    record and the release in one block, its checkpoint dropped, never
    claimed again here), with the reason and the number of attempts
    ("worker killed by signal 6 (SIGABRT) on 3 attempts"). A worker that
    reports bad data is given up at once (it would fail the same way
    again). A claim outranked later stops its worker (SIGTERM; its death
    is then no crash), so does an own lease that lapsed by the boot clock
    when the slot cannot be claimed again, and a cancelled sweep.

    Crash points. A task is claimed by a record before it goes to a
    worker; while it runs, the store shows it running with this node as
    holder (a local field, not a record), and its result is appended (in
    a group commit, ms_outbox) before its checkpoint is deleted
    (ms_runner_drop_checkpoint). So at any crash point the store says
    what is left: tasks still "running" for this node at open are moved
    back to pending (the node calls ms_store_reset_claims), and their
    checkpoints make the rerun resume bit-exactly when this node claims
    them again.

    Volunteer behaviour: idle_only (DESIGN.md "Workers", "Work, claims
    and leases"; docs/VOLUNTEER.md). Once a second the loop samples
    others' CPU use (ms_idle: all busy CPU time minus this node's process
    tree, or its service cgroup). When others stay above idle_cpu_pct for
    idle_busy_s, the node pauses: every busy worker is stopped (SIGSTOP)
    and nothing is claimed or started (the node's scheduler,
    ms_runner_start_settled, ms_reeval's start return early). Our claims
    stay ours: the loop itself keeps running, so heartbeats (alone: the
    node's renew) go on renewing them, and a short pause costs the pool
    nothing. After max_pause_s of one pause the node releases them
    (release records with reason "paused", the tasks back to pending) so
    peers can take the tasks, and kills the workers that ran them: a
    released task must not go on to a result under a claim that is no
    longer ours (the store would keep it as an extra replica, but the
    machine's owner gets the memory back, and a peer's run is the one
    that counts). The checkpoint written after each epoch stays, so when
    this node claims the task again (a new epoch) it resumes from it: at
    most one epoch is lost. Settling claims (not started) are released
    too. When others stay at or below the threshold for idle_quiet_s, the
    node resumes: stopped workers continue (SIGCONT) where they were.

    Why SIGSTOP and not a cooperative pause between minibatches: it is
    immediate (a minibatch of a deep network takes seconds, a dataset
    load or an epoch's evaluation longer), needs no change to the worker
    protocol, and holds in every phase of a worker's life. Its cost: a
    stopped worker keeps its memory (the owner's programs may push it to
    swap), which worker_memory_mb bounds and max_pause_s ends.

    What the class needs of the node (the log, events, appending
    records, the settle peers, a sweep's dataset, results done in the
    node, the pause figures HTTP threads read) comes in through
    ms_runner_iface_t; the store, the lease table, the settle list, the
    worker pool and the idle sampler are borrowed handles of lower
    classes.
    =========================================================================
*/
#include "ms_runner.h"

#include "ms_clock.h"
#include "ms_keep.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_CHECK_RUNNING_MS 500 // how often running tasks are re-checked

//  Crashes of one task so far (for retries).
typedef struct {
    ms_hash_t task_id; // the task
    int crashes;       // worker deaths while running it
} s_crash_t;

struct ms_runner {
    ms_store_t *store;        // borrowed
    ms_lease_table_t *leases; // borrowed
    ms_settle_t *settle;      // borrowed: own claims waiting for acks
    ms_worker_pool_t *pool;   // borrowed
    ms_idle_t *idle;          // borrowed, or NULL (no idle_only)
    ms_runner_config_t cfg;   // settings (dirs: the copies below)
    ms_runner_iface_t iface;  // the node's side
    char *checkpoint_dir;     // cfg.checkpoint_dir copied
    char *weights_dir;        // cfg.weights_dir copied
    int n_workers;            // the pool's size
    ms_runner_run_t *running; // per worker
    s_crash_t *crashes;       // tasks that crashed a worker
    size_t n_crashes;         // entries in crashes
    int64_t noop_free_us;     // monotonic us of the last noop done
    int64_t *free_us;         // per worker: monotonic us it went idle
                              // (claim-to-start)
    int64_t next_check_at;    // monotonic ms: re-check running tasks
    ms_runner_stats_t stats;  // lease counters
    // idle_only (see "Volunteer behaviour")
    int64_t idle_next_at;      // monotonic ms: next sample
    int64_t paused_at_ms;      // monotonic ms the pause began
    bool pause_released;       // this pause released its claims
    bool paused;               // paused for the machine's owner
    time_t paused_since;       // wall time the pause began
    char pause_reason[200];    // why, "" when not paused
    uint64_t n_pauses;         // pauses begun
    uint64_t n_pause_releases; // claims released after max_pause_s
    double idle_others_pct;    // others' CPU, last sample, -1
    double idle_own_pct;       // own CPU, last sample, -1
};

//  --------------------------------------------------------------------------
//  Log one formatted line through the node.

static void s_log(ms_runner_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(ms_runner_t *self, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n >= 0)
        self->iface.log(self->iface.arg, line);
}

//  --------------------------------------------------------------------------
//  Publish an event through the node (taken).

static void
s_emit(ms_runner_t *self, json_t *event)
{
    self->iface.emit(self->iface.arg, event);
}

//  --------------------------------------------------------------------------
//  Append records of ours through the node (one commit).

static int
s_append(ms_runner_t *self, size_t n, const ms_store_payload_t *payloads)
{
    return self->iface.append(self->iface.arg, n, payloads);
}

//  --------------------------------------------------------------------------
//  Hand the pause figures to the node (HTTP threads read its copy).

static void
s_publish_pause(ms_runner_t *self)
{
    ms_runner_pause_t p = {.paused = self->paused,
                           .paused_since = self->paused_since,
                           .reason = self->pause_reason,
                           .n_pauses = self->n_pauses,
                           .n_pause_releases = self->n_pause_releases,
                           .others_pct = self->idle_others_pct,
                           .own_pct = self->idle_own_pct};
    self->iface.paused(self->iface.arg, &p);
}

//  --------------------------------------------------------------------------
//  Create the runner.

ms_runner_t *
ms_runner_new(ms_store_t *store, ms_lease_table_t *leases, ms_settle_t *settle,
              ms_worker_pool_t *pool, ms_idle_t *idle,
              const ms_runner_config_t *cfg, const ms_runner_iface_t *iface)
{
    assert(store && leases && settle && pool && cfg && iface);
    assert(cfg->checkpoint_dir && cfg->weights_dir);
    ms_runner_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->leases = leases;
    self->settle = settle;
    self->pool = pool;
    self->idle = idle;
    self->cfg = *cfg;
    self->iface = *iface;
    self->n_workers = ms_worker_pool_size(pool);
    self->checkpoint_dir = strdup(cfg->checkpoint_dir);
    self->weights_dir = strdup(cfg->weights_dir);
    size_t n_slots = (size_t) (self->n_workers > 0 ? self->n_workers : 1);
    self->running = calloc(n_slots, sizeof *self->running);
    self->free_us = calloc(n_slots, sizeof *self->free_us);
    self->idle_others_pct = -1;
    self->idle_own_pct = -1;
    if (!self->checkpoint_dir || !self->weights_dir || !self->running ||
        !self->free_us) {
        free(self->checkpoint_dir);
        free(self->weights_dir);
        free(self->running);
        free(self->free_us);
        free(self);
        return NULL;
    }
    self->cfg.checkpoint_dir = self->checkpoint_dir;
    self->cfg.weights_dir = self->weights_dir;
    return self;
}

//  --------------------------------------------------------------------------
//  Free it; the tasks on workers go back to pending (checkpoints stay).

void
ms_runner_destroy(ms_runner_t **self_p)
{
    assert(self_p);
    ms_runner_t *self = *self_p;
    if (!self)
        return;
    for (int i = 0; i < self->n_workers; i++) {
        ms_runner_run_t *r = &self->running[i];
        if (r->busy && !r->reeval)
            ms_store_set_task_state(self->store, r->task_id.bytes,
                                    MS_TASK_PENDING, NULL, "node stopped");
        json_decref(r->config);
    }
    free(self->running);
    free(self->free_us);
    free(self->crashes);
    free(self->checkpoint_dir);
    free(self->weights_dir);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The run table entry of a worker.

ms_runner_run_t *
ms_runner_run(ms_runner_t *self, int worker)
{
    assert(self && worker >= 0 && worker < self->n_workers);
    return &self->running[worker];
}

//  --------------------------------------------------------------------------
//  Workers running a task now.

int
ms_runner_busy(const ms_runner_t *self)
{
    assert(self);
    int n = 0;
    for (int i = 0; i < self->n_workers; i++)
        n += self->running[i].busy;
    return n;
}

//  --------------------------------------------------------------------------
//  Whether a worker of ours runs the task.

bool
ms_runner_has_task(const ms_runner_t *self,
                   const uint8_t task_id[MS_HASH_BYTES])
{
    assert(self && task_id);
    for (int i = 0; i < self->n_workers; i++)
        if (self->running[i].busy &&
            memcmp(self->running[i].task_id.bytes, task_id, MS_HASH_BYTES) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Paused for the machine's owner.

bool
ms_runner_paused(const ms_runner_t *self)
{
    assert(self);
    return self->paused;
}

//  --------------------------------------------------------------------------
//  The lease counters.

void
ms_runner_stats(const ms_runner_t *self, ms_runner_stats_t *out)
{
    assert(self && out);
    *out = self->stats;
}

//  --------------------------------------------------------------------------
//  The runner's nearest deadline: the next idle_only sample, and the next
//  check of the running tasks while workers are busy.

int64_t
ms_runner_next_deadline(const ms_runner_t *self, bool busy)
{
    assert(self);
    int64_t d = self->idle ? self->idle_next_at : INT64_MAX;
    if (busy && self->next_check_at < d)
        d = self->next_check_at;
    return d;
}

//  --------------------------------------------------------------------------
//  Crash record of a task (created at 0).

static s_crash_t *
s_crash_of(ms_runner_t *self, const ms_hash_t *task_id)
{
    return ms_hash_entry(&self->crashes, &self->n_crashes, sizeof(s_crash_t),
                         offsetof(s_crash_t, task_id), task_id, NULL);
}

//  --------------------------------------------------------------------------
//  Forget the crash record of a task (it ended).

void
ms_runner_forget(ms_runner_t *self, const ms_hash_t *task_id)
{
    for (size_t i = 0; i < self->n_crashes; i++)
        if (ms_hash_equal(&self->crashes[i].task_id, task_id)) {
            self->crashes[i] = self->crashes[--self->n_crashes];
            return;
        }
}

//  --------------------------------------------------------------------------
//  A worker died running a task: count the crash.

int
ms_runner_crashed(ms_runner_t *self, const ms_hash_t *task_id, int retry_cap)
{
    s_crash_t *crash = s_crash_of(self, task_id);
    return crash ? ++crash->crashes : retry_cap + 1;
}

//  --------------------------------------------------------------------------
//  Delete a task's checkpoint.

void
ms_runner_drop_checkpoint(ms_runner_t *self, const ms_hash_t *task_id)
{
    char hex[MS_HASH_HEX_LEN + 1], path[PATH_MAX + 100];
    ms_hash_hex(task_id, hex);
    ms_worker_checkpoint_path(self->checkpoint_dir, hex, path, sizeof path);
    unlink(path);
}

//  --------------------------------------------------------------------------
//  A claim payload (claim or release).

static ms_store_payload_t
s_claim_payload(uint32_t kind, const ms_hash_t *task_id, uint32_t slot,
                uint32_t epoch, uint32_t reason)
{
    ms_store_payload_t p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    memcpy(p.u.claim.task_id, task_id->bytes, MS_HASH_BYTES);
    p.u.claim.slot = slot;
    p.u.claim.epoch = epoch;
    p.u.claim.reason = reason;
    return p;
}

//  --------------------------------------------------------------------------
//  Release our claim on (task, slot): lease table and a release record.

void
ms_runner_release(ms_runner_t *self, const ms_hash_t *task_id, uint32_t slot,
                  uint32_t epoch, uint32_t reason)
{
    assert(self && task_id);
    ms_claim_t out;
    ms_lease_table_release(self->leases, task_id->bytes, slot, &out);
    ms_store_payload_t p =
        s_claim_payload(MS_RECORD_RELEASE, task_id, slot, epoch, reason);
    int rc = s_append(self, 1, &p);
    if (rc != MS_OK)
        s_log(self, "cannot write a release: %s", ms_strerror(rc));
}

//  --------------------------------------------------------------------------
//  Start a task we hold (slot, epoch) on an idle worker. Returns MS_OK;
//  MS_ERR_CONFLICT no idle worker; other codes: the claim was released.

int
ms_runner_start(ms_runner_t *self, const ms_hash_t *tid, uint32_t slot,
                uint32_t epoch)
{
    assert(self && tid);
    ms_store_task_t *task = NULL;
    int rc = ms_store_get_task(self->store, tid->bytes, &task);
    if (rc != MS_OK) {
        ms_runner_release(self, tid, slot, epoch, MS_RELEASE_REASON_FAILED);
        return rc;
    }
    ms_hash_t sid;
    memcpy(sid.bytes, task->sweep_id, MS_HASH_BYTES);
    json_error_t err;
    json_t *config = json_loadb(task->config_json, task->config_len, 0, &err);
    ms_task_state_t state = task->state;
    ms_store_task_destroy(&task);
    const json_t *dataset = self->iface.dataset(self->iface.arg, &sid);
    if (state == MS_TASK_DONE || state == MS_TASK_FAILED ||
        state == MS_TASK_CANCELLED || !config || !dataset) {
        ms_runner_release(self, tid, slot, epoch,
                          state == MS_TASK_DONE ? MS_RELEASE_REASON_DONE
                                                : MS_RELEASE_REASON_FAILED);
        json_decref(config);
        return MS_ERR_CONFLICT;
    }
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(tid, thex);
    ms_hash_hex(&sid, shex);
    s_crash_t *crash = s_crash_of(self, tid);
    int attempt = (crash ? crash->crashes : 0) + 1;
    char wpath[PATH_MAX + 100];
    ms_keep_weights_path(self->weights_dir, tid, wpath, sizeof wpath);
    ms_worker_task_t wt = {
        .task_id = thex,
        .sweep_id = shex,
        .config = config,
        .dataset = (json_t *) dataset,
        .attempt = attempt,
        .weights_path =
            self->iface.keeps_weights(self->iface.arg) ? wpath : NULL};
    const char *kind = json_string_value(json_object_get(config, "kind"));
    json_t *made_up = NULL; // a body from the work hook (tests only)
    if (!(kind && strcmp(kind, "noop") == 0))
        made_up = self->iface.work_hook(self->iface.arg, thex, shex, config);
    if (made_up || (kind && strcmp(kind, "noop") == 0)) {
        // A noop task has no code to isolate from the node (workers exist
        // so that a crash in training never takes the node down): the
        // node completes it here, under the same claim, and its result
        // goes the way of every result (this turn's block, the push).
        ms_runner_run_t done = {.busy = true,
                                .task_id = *tid,
                                .sweep_id = sid,
                                .config = config,
                                .leased = true,
                                .slot = slot,
                                .epoch = epoch,
                                .started_ms = ms_clock_mono_ms()};
        // Claim-to-start: its start is now; "idle since" is the end of
        // the previous noop done here (as a worker's idle time).
        int64_t now_us = ms_clock_mono_us();
        s_log(self, "task %.12s started in the node (%s; slot %u, epoch %u)",
              thex, made_up ? "work hook" : "noop", slot, epoch);
        self->iface.claim_to_start(self->iface.arg, &sid, self->noop_free_us,
                                   thex, now_us);
        json_t *body = made_up ? made_up : ms_worker_noop_result();
        self->noop_free_us = ms_clock_mono_us();
        if (!body) {
            ms_runner_release(self, tid, slot, epoch, MS_RELEASE_REASON_FAILED);
            json_decref(config);
            return MS_ERR_NOMEM;
        }
        self->iface.sweep_started(self->iface.arg, &sid);
        self->iface.result(self->iface.arg, &done, body);
        json_decref(body);
        json_decref(config);
        return MS_OK;
    }
    int worker = -1;
    rc = ms_worker_pool_start(self->pool, &wt, &worker);
    if (rc != MS_OK) {
        ms_runner_release(self, tid, slot, epoch, MS_RELEASE_REASON_FAILED);
        json_decref(config);
        return rc;
    }
    // Local display state (not a record): running here.
    ms_store_set_task_state(self->store, tid->bytes, MS_TASK_RUNNING,
                            self->cfg.node_id, NULL);
    ms_runner_run_t *r = &self->running[worker];
    memset(r, 0, sizeof *r);
    r->busy = true;
    r->task_id = *tid;
    r->sweep_id = sid;
    r->config = config;
    r->train = !(kind && strcmp(kind, "noop") == 0);
    r->leased = true;
    r->slot = slot;
    r->epoch = epoch;
    r->started_ms = ms_clock_mono_ms();
    if (r->train)
        self->stats.n_trainings++;
    self->iface.sweep_started(self->iface.arg, &sid);
    s_log(self,
          "task %.12s started on worker %d (slot %u, epoch %u, "
          "attempt %d)",
          thex, worker, slot, epoch, attempt);
    s_emit(self,
           json_pack("{s:s, s:s, s:s, s:i}", "event", "started", "task_id",
                     thex, "sweep_id", shex, "attempt", attempt));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The longest wait (ms) of a claim for its acknowledgements: settle_ms,
//  or auto = one heartbeat interval; 0 alone (nobody to race with).

static int64_t
s_settle_cap_ms(const ms_runner_t *self)
{
    if (!self->iface.in_pool(self->iface.arg))
        return 0;
    if (self->cfg.settle_ms >= 0)
        return self->cfg.settle_ms;
    return self->cfg.heartbeat_ms;
}

//  --------------------------------------------------------------------------
//  How far we hold a peer's log (the settle rule's "its records are in").

static uint64_t
s_settle_held(void *arg, const uint8_t peer[MS_SETTLE_ID_BYTES],
              uint64_t incarnation)
{
    ms_runner_t *self = arg;
    uint64_t seq = 0;
    if (ms_store_held(self->store, peer, incarnation, &seq) != MS_OK)
        return 0;
    return seq;
}

//  --------------------------------------------------------------------------
//  Put claims of ours (written as one block ending at seq, all for slot
//  0) on the settle list: each starts once every live peer acknowledged
//  the block (or at the cap). With nobody to wait for, start at once.

void
ms_runner_settle(ms_runner_t *self, const ms_store_payload_t *claims,
                 size_t n_claims, uint64_t seq, int64_t now)
{
    assert(self && (claims || n_claims == 0));
    uint8_t(*peers)[MS_SETTLE_ID_BYTES] = NULL;
    int64_t cap = n_claims ? s_settle_cap_ms(self) : 0;
    size_t n_peers =
        cap > 0 ? self->iface.settle_peers(self->iface.arg, &peers) : 0;
    for (size_t k = 0; k < n_claims; k++) {
        ms_hash_t tid;
        memcpy(tid.bytes, claims[k].u.claim.task_id, MS_HASH_BYTES);
        uint32_t epoch = (uint32_t) claims[k].u.claim.epoch;
        uint32_t slot = claims[k].u.claim.slot;
        self->stats.n_claims++;
        if (n_peers == 0) {
            ms_runner_start(self, &tid, slot, epoch);
            continue;
        }
        if (ms_settle_add(self->settle, tid.bytes, slot, epoch, seq,
                          (const uint8_t(*)[MS_SETTLE_ID_BYTES]) peers, n_peers,
                          now, cap) != MS_OK)
            ms_runner_release(self, &tid, slot, epoch,
                              MS_RELEASE_REASON_FAILED);
    }
    free(peers);
}

//  --------------------------------------------------------------------------
//  Start the settled claims (see "Starting") that we still hold;
//  drop the others.

void
ms_runner_start_settled(ms_runner_t *self, int64_t now)
{
    assert(self);
    if (self->paused)
        return; // idle_only: nothing starts while paused
    ms_settle_claim_t st;
    while (ms_worker_pool_idle(self->pool) > 0 &&
           ms_settle_take_ready(self->settle, now, s_settle_held, self, &st)) {
        ms_hash_t tid;
        memcpy(tid.bytes, st.task_id, MS_HASH_BYTES);
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&tid, hex);
        if (st.capped) {
            self->stats.n_settle_capped++;
            s_log(self,
                  "task %.12s: %zu of %zu peer(s) did not acknowledge the "
                  "claim within %" PRId64 " ms: deciding without them",
                  hex, st.n_peers - st.n_acked - st.n_gone, st.n_peers,
                  now - st.added_ms);
        }
        ms_claim_t holder;
        bool live = false;
        if (ms_lease_table_holder(self->leases, st.task_id, st.slot, &holder,
                                  &live) != MS_OK ||
            memcmp(holder.node_id, self->cfg.node_id, MS_HASH_BYTES) != 0 ||
            holder.epoch != st.epoch) {
            self->stats.n_conflicts++;
            self->stats.n_settle_lost++;
            s_log(self, "task %.12s: the claim lost its slot while settling",
                  hex);
            // Released, so that nobody waits a TTL for a claim that never
            // ran (and nobody counts its expiry).
            ms_runner_release(self, &tid, st.slot, st.epoch,
                              MS_RELEASE_REASON_OUTRANKED);
            continue;
        }
        // How long claims take to settle here: prefetch covers it.
        self->iface.settled(self->iface.arg, (double) (now - st.added_ms));
        if (st.n_peers)
            s_log(self,
                  "task %.12s: claim settled after %" PRId64
                  " ms (%zu ack(s), %zu peer(s) gone)",
                  hex, now - st.added_ms, st.n_acked, st.n_gone);
        ms_runner_start(self, &tid, st.slot, st.epoch);
    }
}

//  --------------------------------------------------------------------------
//  Give up a task we hold: a failure record (class resource or task) and
//  the release, in one block. The store ends the task `failed` once
//  task-class failures from min(3, members) nodes are in.

void
ms_runner_fail(ms_runner_t *self, const ms_hash_t *task_id,
               const ms_hash_t *sweep_id, uint32_t slot, uint32_t epoch,
               ms_failure_class_t cls, const char *reason)
{
    assert(self && task_id && sweep_id);
    ms_store_payload_t p[2];
    memset(&p[0], 0, sizeof p[0]);
    p[0].kind = MS_RECORD_FAILURE;
    memcpy(p[0].u.failure.task_id, task_id->bytes, MS_HASH_BYTES);
    p[0].u.failure.failure_class = cls;
    p[0].u.failure.reason = reason ? reason : "";
    p[0].u.failure.slot = slot;
    p[0].u.failure.epoch = epoch;
    p[1] = s_claim_payload(MS_RECORD_RELEASE, task_id, slot, epoch,
                           MS_RELEASE_REASON_FAILED);
    ms_lease_table_release(self->leases, task_id->bytes, slot, NULL);
    int rc = s_append(self, 2, p);
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(task_id, thex);
    ms_hash_hex(sweep_id, shex);
    if (rc != MS_OK)
        s_log(self, "task %.12s: cannot record failure: %s", thex,
              ms_strerror(rc));
    ms_runner_drop_checkpoint(self, task_id);
    ms_runner_forget(self, task_id);
    // Either class: this node does not claim the task again (its failure
    // is published; a task-class failure counts once per node, so the
    // task is left to the other nodes, and a node whose every run of it
    // fails must not win it back again and again).
    self->iface.gave_up(self->iface.arg, task_id);
    if (cls == MS_FAILURE_CLASS_RESOURCE) {
        s_log(self, "task %.12s given up here (resource): %s", thex, reason);
        return;
    }
    // The store derived the task's state from the failures; keep the
    // reason with it (a local field), and take our "running" off.
    ms_store_task_t *t = NULL;
    if (ms_store_get_task(self->store, task_id->bytes, &t) == MS_OK &&
        t->state != MS_TASK_DONE && t->state != MS_TASK_CANCELLED)
        ms_store_set_task_state(self->store, task_id->bytes,
                                t->state == MS_TASK_FAILED ? MS_TASK_FAILED
                                                           : MS_TASK_PENDING,
                                NULL, reason);
    ms_store_task_destroy(&t);
    s_log(self, "task %.12s failed: %s", thex, reason);
    s_emit(self, json_pack("{s:s, s:s, s:s, s:s}", "event", "failed", "task_id",
                           thex, "sweep_id", shex, "reason", reason));
}

//  --------------------------------------------------------------------------
//  Stop a worker on purpose (cancel, outranked): SIGTERM; its death then
//  ends the task without a retry (the node's worker events).

void
ms_runner_stop(ms_runner_t *self, int i)
{
    assert(self && i >= 0 && i < self->n_workers);
    ms_runner_run_t *r = &self->running[i];
    if (!r->busy || r->stopping)
        return;
    int pid = ms_worker_pool_pid(self->pool, i);
    if (pid > 0 && kill(pid, SIGTERM) == 0)
        r->stopping = true;
    ms_worker_pool_resume(self->pool, i); // paused: SIGTERM lands on SIGCONT
}

//  --------------------------------------------------------------------------
//  Stop this node's workers on the tasks of a sweep (cancel): SIGTERM; the
//  worker's death then cancels the task instead of retrying.

void
ms_runner_stop_sweep(ms_runner_t *self, const ms_hash_t *sweep_id)
{
    assert(self && sweep_id);
    for (int i = 0; i < self->n_workers; i++)
        if (ms_hash_equal(&self->running[i].sweep_id, sweep_id))
            ms_runner_stop(self, i);
}

//  --------------------------------------------------------------------------
//  A worker's run ended (any event but EPOCH and STARTED): note when the
//  worker went idle (when it ran a task) and free its entry.

static void
s_run_ended(ms_runner_t *self, int worker)
{
    ms_runner_run_t *r = &self->running[worker];
    if (r->busy)
        self->free_us[worker] = ms_clock_mono_us();
    json_decref(r->config);
    memset(r, 0, sizeof *r);
}

//  --------------------------------------------------------------------------
//  The worker of R (stopped on purpose: cancelled or outranked) died: no
//  crash. The claim is released; the task is cancelled with its sweep
//  (its checkpoint dropped) or pending again (its checkpoint kept: we may
//  claim it again).

static void
s_stopped_died(ms_runner_t *self, ms_runner_run_t *r)
{
    ms_runner_release(self, &r->task_id, r->slot, r->epoch,
                      MS_RELEASE_REASON_OUTRANKED);
    ms_store_sweep_t *sw = NULL;
    bool cancelled =
        ms_store_get_sweep(self->store, r->sweep_id.bytes, &sw) == MS_OK &&
        sw->state == MS_SWEEP_CANCELLED;
    ms_store_sweep_destroy(&sw);
    ms_store_set_task_state(self->store, r->task_id.bytes,
                            cancelled ? MS_TASK_CANCELLED : MS_TASK_PENDING,
                            NULL, cancelled ? "sweep cancelled" : NULL);
    if (cancelled)
        ms_runner_drop_checkpoint(self, &r->task_id);
    ms_runner_forget(self, &r->task_id);
}

//  --------------------------------------------------------------------------
//  The worker of R crashed (died, not stopped): count it; retry at once
//  under the same claim (it settled before its first start: nothing to
//  wait for) up to retry_cap retries, then give the task up with
//  "REASON on N attempts".

static void
s_crashed(ms_runner_t *self, ms_runner_run_t *r, const ms_worker_event_t *ev,
          const char *thex, const char *shex)
{
    int crashes = ms_runner_crashed(self, &r->task_id, self->cfg.retry_cap);
    if (crashes > self->cfg.retry_cap) {
        char reason[700];
        snprintf(reason, sizeof reason, "%s on %d attempt%s", ev->reason,
                 crashes, crashes == 1 ? "" : "s");
        // In a pool, a worker killed by SIGKILL is most likely the
        // out-of-memory killer: a resource failure, for bigger nodes.
        ms_runner_fail(self, &r->task_id, &r->sweep_id, r->slot, r->epoch,
                       self->iface.in_pool(self->iface.arg) &&
                               ev->term_signal == SIGKILL
                           ? MS_FAILURE_CLASS_RESOURCE
                           : MS_FAILURE_CLASS_TASK,
                       reason);
        return;
    }
    if (ms_settle_add(self->settle, r->task_id.bytes, r->slot, r->epoch, 0,
                      NULL, 0, ms_clock_mono_ms(), 0) != MS_OK)
        ms_runner_release(self, &r->task_id, r->slot, r->epoch,
                          MS_RELEASE_REASON_FAILED);
    s_emit(self, json_pack("{s:s, s:s, s:s, s:i, s:s}", "event", "retry",
                           "task_id", thex, "sweep_id", shex, "attempt",
                           crashes + 1, "reason", ev->reason));
}

//  --------------------------------------------------------------------------
//  One event of a worker's run: what the run's end means (see "Ending").

void
ms_runner_worker_event(ms_runner_t *self, ms_worker_event_t *ev)
{
    assert(self && ev && ev->worker >= 0 && ev->worker < self->n_workers);
    bool progress = ev->kind == MS_WORKER_EVENT_EPOCH ||
                    ev->kind == MS_WORKER_EVENT_STARTED;
    if (!progress)
        self->iface.changed(self->iface.arg); // a worker is free again
    ms_runner_run_t *r = &self->running[ev->worker];
    if (r->busy && (r->reeval || r->paused_out)) {
        // A re-evaluation (its outcome is ms_reeval's), or a run whose
        // claim was released after max_pause_s and its worker killed
        // (ms_runner_idle_tick; the task is pending again with its
        // checkpoint): what it sent before it was stopped is dropped, it
        // no longer runs under a claim of ours.
        if (progress)
            return;
        if (ev->kind == MS_WORKER_EVENT_DIED)
            self->iface.worker_died(self->iface.arg);
        if (r->reeval)
            self->iface.reeval_event(self->iface.arg, r->target, ev);
        else {
            char thex[MS_HASH_HEX_LEN + 1];
            ms_hash_hex(&r->task_id, thex);
            s_log(self,
                  "task %.12s: worker %d ended after its claim was released "
                  "(paused past max_pause_s)",
                  thex, ev->worker);
            ms_runner_forget(self, &r->task_id);
        }
        s_run_ended(self, ev->worker);
        return;
    }
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&r->task_id, thex);
    ms_hash_hex(&r->sweep_id, shex);
    switch (ev->kind) {
    case MS_WORKER_EVENT_EPOCH: {
        json_t *out = json_copy(ev->body);
        if (out) {
            json_object_del(out, "op");
            json_object_set_new(out, "event", json_string("epoch"));
            json_object_set_new(out, "sweep_id", json_string(shex));
        }
        s_emit(self, out);
        return;
    }
    case MS_WORKER_EVENT_STARTED:
        if (r->busy)
            self->iface.claim_to_start(
                self->iface.arg, &r->sweep_id, self->free_us[ev->worker], thex,
                json_integer_value(json_object_get(ev->body, "mono_us")));
        return;
    case MS_WORKER_EVENT_RESULT:
        if (r->busy)
            self->iface.result(self->iface.arg, r, ev->body);
        break;
    case MS_WORKER_EVENT_FAILED:
        // Bad data: it would fail the same way again.
        if (r->busy && r->leased)
            ms_runner_fail(self, &r->task_id, &r->sweep_id, r->slot, r->epoch,
                           MS_FAILURE_CLASS_TASK, ev->reason);
        break;
    case MS_WORKER_EVENT_DIED: {
        self->iface.worker_died(self->iface.arg);
        // "worker 0 killed by signal 6 (SIGABRT) while running task X",
        // not "worker 0: worker killed ..."
        bool of_worker = strncmp(ev->reason, "worker ", 7) == 0;
        s_log(self, "worker %d%s%s%s%.12s", ev->worker, of_worker ? " " : ": ",
              of_worker ? ev->reason + 7 : ev->reason,
              r->busy ? " while running task " : "", r->busy ? thex : "");
        if (r->busy && r->stopping)
            s_stopped_died(self, r);
        else if (r->busy)
            s_crashed(self, r, ev, thex, shex);
        break;
    }
    }
    s_run_ended(self, ev->worker);
}

//  --------------------------------------------------------------------------
//  One of our own leases lapsed by the boot clock (the machine slept, the
//  process was stopped, the loop stalled): peers may have taken the slot.
//  Re-check before going on: claim it again (a new epoch, published) when
//  the rule allows, else stop the worker.

static void
s_own_lease_lapsed(ms_runner_t *self, const ms_claim_t *lapsed)
{
    for (int i = 0; i < self->n_workers; i++) {
        ms_runner_run_t *r = &self->running[i];
        if (!r->busy || !r->leased || r->stopping || r->slot != lapsed->slot ||
            r->epoch != lapsed->epoch ||
            memcmp(r->task_id.bytes, lapsed->task_id, MS_HASH_BYTES) != 0)
            continue;
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&r->task_id, hex);
        ms_claim_t mine;
        if (ms_lease_table_claim(self->leases, r->task_id.bytes, r->slot, false,
                                 &mine) == MS_OK) {
            ms_store_payload_t p = s_claim_payload(MS_RECORD_CLAIM, &r->task_id,
                                                   r->slot, mine.epoch, 0);
            if (s_append(self, 1, &p) == MS_OK) {
                s_log(self,
                      "task %.12s: own lease lapsed, claimed again "
                      "(epoch %u)",
                      hex, mine.epoch);
                r->epoch = mine.epoch;
                self->stats.n_claims++;
                return;
            }
        }
        s_log(self,
              "task %.12s: own lease lapsed and the slot is taken: "
              "stopping",
              hex);
        self->stats.n_conflicts++;
        ms_runner_stop(self, i);
        return;
    }
}

//  --------------------------------------------------------------------------
//  Lease housekeeping: stop workers whose claims were outranked, count
//  expiries (their slots become claimable), and stop workers whose task
//  was cancelled or ended elsewhere.

void
ms_runner_lease_tick(ms_runner_t *self, int64_t now)
{
    assert(self);
    ms_claim_t buf[64];
    size_t n;
    while ((n = ms_lease_table_outranked(self->leases, buf, 64)) > 0) {
        for (size_t k = 0; k < n; k++) {
            for (int i = 0; i < self->n_workers; i++) {
                ms_runner_run_t *r = &self->running[i];
                if (r->busy && r->leased && r->slot == buf[k].slot &&
                    memcmp(r->task_id.bytes, buf[k].task_id, MS_HASH_BYTES) ==
                        0) {
                    char hex[MS_HASH_HEX_LEN + 1];
                    ms_hash_hex(&r->task_id, hex);
                    s_log(self, "task %.12s: outranked, stopping its worker",
                          hex);
                    self->stats.n_conflicts++;
                    ms_runner_stop(self, i);
                }
            }
            ms_settle_claim_t lost;
            if (ms_settle_remove(self->settle, buf[k].task_id, buf[k].slot,
                                 &lost)) {
                ms_hash_t tid;
                memcpy(tid.bytes, lost.task_id, MS_HASH_BYTES);
                char hex[MS_HASH_HEX_LEN + 1];
                ms_hash_hex(&tid, hex);
                s_log(self,
                      "task %.12s: the claim was outranked while settling",
                      hex);
                self->stats.n_conflicts++;
                self->stats.n_settle_lost++;
                ms_runner_release(self, &tid, lost.slot, lost.epoch,
                                  MS_RELEASE_REASON_OUTRANKED);
            }
        }
        if (n < 64)
            break;
    }
    while ((n = ms_lease_table_expire(self->leases, buf, 64)) > 0) {
        self->iface.changed(self->iface.arg);
        for (size_t k = 0; k < n; k++) {
            // A claim whose task is already done is no expiry: its result
            // finished it (a result stored as fragments reaches the lease
            // table only through the task's state).
            ms_store_task_t *task = NULL;
            bool done = ms_store_get_task(self->store, buf[k].task_id, &task) ==
                            MS_OK &&
                        task->state == MS_TASK_DONE;
            ms_store_task_destroy(&task);
            if (done) {
                ms_lease_table_finish(self->leases, buf[k].task_id, buf[k].slot,
                                      buf[k].node_id);
                continue;
            }
            self->stats.n_expiries++;
            if (memcmp(buf[k].node_id, self->cfg.node_id, MS_HASH_BYTES) == 0)
                s_own_lease_lapsed(self, &buf[k]);
        }
        if (n < 64)
            break;
    }
    if (now < self->next_check_at)
        return;
    self->next_check_at = now + S_CHECK_RUNNING_MS;
    for (int i = 0; i < self->n_workers; i++) {
        ms_runner_run_t *r = &self->running[i];
        if (!r->busy || r->stopping)
            continue;
        ms_store_sweep_t *sw = NULL;
        if (ms_store_get_sweep(self->store, r->sweep_id.bytes, &sw) == MS_OK &&
            sw->state == MS_SWEEP_CANCELLED)
            ms_runner_stop(self, i);
        ms_store_sweep_destroy(&sw);
    }
}

//  --------------------------------------------------------------------------
//  Release every settling claim (not started) with REASON; returns how
//  many.

static int
s_release_settling(ms_runner_t *self, uint32_t reason)
{
    int n = 0;
    ms_settle_claim_t st;
    while (ms_settle_get(self->settle, 0, &st)) {
        ms_hash_t tid;
        memcpy(tid.bytes, st.task_id, MS_HASH_BYTES);
        ms_settle_remove(self->settle, st.task_id, st.slot, NULL);
        ms_runner_release(self, &tid, st.slot, st.epoch, reason);
        n++;
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Release every claim of ours (graceful shutdown): running and settling.

void
ms_runner_release_all(ms_runner_t *self)
{
    assert(self);
    for (int i = 0; i < self->n_workers; i++) {
        ms_runner_run_t *r = &self->running[i];
        if (r->busy && r->leased)
            ms_runner_release(self, &r->task_id, r->slot, r->epoch,
                              MS_RELEASE_REASON_SHUTDOWN);
    }
    s_release_settling(self, MS_RELEASE_REASON_SHUTDOWN);
}

//  --------------------------------------------------------------------------
//  Pause: stop the busy workers; from now on nothing starts.

static void
s_idle_pause(ms_runner_t *self, int64_t now)
{
    int n = ms_worker_pool_pause(self->pool);
    char reason[200];
    snprintf(reason, sizeof reason,
             "others used %.0f%% of the CPU, over idle_cpu_pct %d%% for %d s",
             ms_idle_others_pct(self->idle), self->cfg.idle_cpu_pct,
             self->cfg.idle_busy_s);
    self->paused = true;
    self->paused_since = time(NULL);
    snprintf(self->pause_reason, sizeof self->pause_reason, "%s", reason);
    self->n_pauses++;
    s_publish_pause(self);
    self->paused_at_ms = now;
    self->pause_released = false;
    // One line whether verbose or not: the owner's and the operator's
    // record of when the node stood aside.
    fprintf(stderr,
            "meshsweepd: paused: %s; %d worker%s stopped, claims kept up to "
            "max_pause_s %d s\n",
            reason, n, n == 1 ? "" : "s", self->cfg.max_pause_s);
}

//  --------------------------------------------------------------------------
//  Resume: continue the stopped workers; the scheduler runs again.

static void
s_idle_resume(ms_runner_t *self, int64_t now)
{
    int n = ms_worker_pool_resume(self->pool, -1);
    self->paused = false;
    self->pause_reason[0] = 0;
    s_publish_pause(self);
    self->iface.changed(self->iface.arg);
    fprintf(stderr,
            "meshsweepd: resumed after %.1f s: others used %.0f%% of the CPU, "
            "at or under idle_cpu_pct %d%% for %d s; %d worker%s continued%s\n",
            (double) (now - self->paused_at_ms) / 1000.0,
            ms_idle_others_pct(self->idle), self->cfg.idle_cpu_pct,
            self->cfg.idle_quiet_s, n, n == 1 ? "" : "s",
            self->pause_released ? " (its claims were released)" : "");
}

//  --------------------------------------------------------------------------
//  A pause outlasted max_pause_s: release our claims (running and
//  settling) so that peers can take the tasks, and kill the workers that
//  ran them (their checkpoints stay).

static void
s_idle_release(ms_runner_t *self)
{
    int n = 0;
    for (int i = 0; i < self->n_workers; i++) {
        ms_runner_run_t *r = &self->running[i];
        if (!r->busy || !r->leased || r->stopping || r->reeval)
            continue;
        ms_runner_release(self, &r->task_id, r->slot, r->epoch,
                          MS_RELEASE_REASON_PAUSED);
        ms_store_set_task_state(self->store, r->task_id.bytes, MS_TASK_PENDING,
                                NULL, NULL);
        r->leased = false;
        r->stopping = true;
        r->paused_out = true;
        int pid = ms_worker_pool_pid(self->pool, i);
        if (pid > 0)
            kill(pid, SIGKILL); // stopped or not, it dies now
        n++;
    }
    n += s_release_settling(self, MS_RELEASE_REASON_PAUSED);
    self->pause_released = true;
    self->n_pause_releases += (uint64_t) n;
    s_publish_pause(self);
    fprintf(stderr,
            "meshsweepd: paused for max_pause_s %d s: %d claim%s released "
            "(peers may take the tasks; checkpoints kept)\n",
            self->cfg.max_pause_s, n, n == 1 ? "" : "s");
    self->iface.changed(self->iface.arg);
}

//  --------------------------------------------------------------------------
//  idle_only: sample others' CPU use once a second, pause, release after
//  max_pause_s, resume. Returns true while paused (start nothing).

bool
ms_runner_idle_tick(ms_runner_t *self, int64_t now)
{
    assert(self);
    if (!self->idle)
        return false;
    if (now >= self->idle_next_at) {
        self->idle_next_at = now + 1000;
        int n = self->n_workers;
        int *pids = calloc((size_t) (n > 0 ? n : 1), sizeof *pids);
        for (int i = 0; pids && i < n; i++)
            pids[i] = ms_worker_pool_pid(self->pool, i);
        ms_idle_change_t change = MS_IDLE_CHANGE_NONE;
        int rc = ms_idle_sample(self->idle, pids, pids ? (size_t) n : 0, now,
                                &change);
        free(pids);
        if (rc == MS_OK) {
            self->idle_others_pct = ms_idle_others_pct(self->idle);
            self->idle_own_pct = ms_idle_own_pct(self->idle);
            s_publish_pause(self);
        }
        if (change == MS_IDLE_CHANGE_PAUSE)
            s_idle_pause(self, now);
        else if (change == MS_IDLE_CHANGE_RESUME)
            s_idle_resume(self, now);
    }
    if (self->paused && !self->pause_released &&
        now - self->paused_at_ms >= (int64_t) self->cfg.max_pause_s * 1000)
        s_idle_release(self);
    // A worker that went busy while paused cannot exist (nothing starts),
    // but a retry or a respawn must not run either: stop any busy worker.
    if (self->paused)
        ms_worker_pool_pause(self->pool);
    return self->paused;
}

//  --------------------------------------------------------------------------
//  A worker is free for a re-evaluation.

bool
ms_runner_reeval_free(const ms_runner_t *self)
{
    assert(self);
    return ms_worker_pool_idle(self->pool) >= 1 && !ms_runner_paused(self);
}

//  --------------------------------------------------------------------------
//  Start a re-evaluation on an idle worker.

int
ms_runner_start_reeval(ms_runner_t *self, const ms_reeval_run_t *run,
                       int *worker)
{
    assert(self && run && worker);
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&run->task_id, thex);
    ms_hash_hex(&run->sweep_id, shex);
    ms_worker_task_t wt = {.task_id = thex,
                           .sweep_id = shex,
                           .config = run->config,
                           .dataset = (json_t *) run->dataset,
                           .attempt = 1,
                           .weights_path = run->weights_path,
                           .reeval = true};
    int rc = ms_worker_pool_start(self->pool, &wt, worker);
    if (rc != MS_OK)
        return rc;
    ms_runner_run_t *r = ms_runner_run(self, *worker);
    memset(r, 0, sizeof *r);
    r->busy = true;
    r->reeval = true;
    r->task_id = run->task_id;
    r->sweep_id = run->sweep_id;
    r->config = run->config;
    r->started_ms = run->started_ms;
    memcpy(r->target, run->target, MS_HASH_BYTES);
    return MS_OK;
}
