/*  =========================================================================
    ms_runner - workers' runs: starting the tasks we hold, settled claims,
    crash records, give-ups, outranked and lapsed leases, pauses

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Work, claims and leases", "Workers" and "Layout of node/":
    the runner owns what the node knows about each worker's task (the run
    table), the crash counts of tasks (retries), the claims waiting to
    settle once started (ms_settle, borrowed) and the volunteer pause
    (idle_only, over a borrowed ms_idle). It starts a claim the scheduler
    made once it settled and is still ours, decides what a worker's end
    means (ms_runner_worker_event: done, crashed and retried, failed
    after its last attempt, stopped, paused out), gives a task up (a
    failure record and the release), stops workers on purpose
    (outranked, lapsed, cancelled), and releases claims (graceful stop,
    max_pause_s).

    The node creates it once its store, lease table, settle list and
    worker pool exist and hands it what it needs of the node through
    ms_runner_iface_t; the class never calls into ms_node. Loop thread
    only (the pause figures reach HTTP threads through iface.paused).
*/
#ifndef MS_RUNNER_H
#define MS_RUNNER_H

#include "ms_hash.h"
#include "ms_idle.h"
#include "ms_lease_table.h"
#include "ms_reeval.h"
#include "ms_settle.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_worker.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct ms_runner ms_runner_t;

//  What the node knows about the task a worker runs (one per worker;
//  ms_runner_run). A zeroed entry is an idle worker.
typedef struct {
    bool busy;          // a task is on this worker
    ms_hash_t task_id;  // the task
    ms_hash_t sweep_id; // its sweep
    json_t *config;     // its canonical config object (owned)
    bool train;         // kind train (not noop)
    bool stopping;      // stopped on purpose (cancel): its death is no
                        // crash
    bool leased;        // runs under a lease claim (slot, epoch) of ours
    uint32_t slot;      // the claim's slot
    uint32_t epoch;     // the claim's epoch
    int64_t started_ms; // monotonic ms when it went to the worker
    bool reeval;        // a re-evaluation of the result whose record hash
                        // is target (ms_reeval)
    uint8_t target[MS_HASH_BYTES];
    bool paused_out; // idle_only: its claim was released after
                     // max_pause_s and the worker killed; whatever it
                     // still sends is dropped
} ms_runner_run_t;

//  Counters the runner keeps (ms_runner_stats; the node's /metrics names
//  the lease ones lease_*_total).
typedef struct {
    uint64_t n_claims;        // claims taken (settled or claimed again)
    uint64_t n_conflicts;     // claims outranked, lost or lapsed
    uint64_t n_settle_lost;   // ... of which lost while settling
    uint64_t n_settle_capped; // claims decided without every ack
    uint64_t n_expiries;      // leases expired (not finished by a result)
    int64_t n_trainings;      // training attempts started
} ms_runner_stats_t;

//  The volunteer pause as HTTP threads see it (iface.paused).
typedef struct {
    bool paused;               // paused for the machine's owner
    time_t paused_since;       // wall time the pause began
    const char *reason;        // why, "" when not paused (borrowed)
    uint64_t n_pauses;         // pauses begun
    uint64_t n_pause_releases; // claims released after max_pause_s
    double others_pct;         // others' CPU, last sample, -1
    double own_pct;            // own CPU, last sample, -1
} ms_runner_pause_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside the ms_runner_* calls only.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Publish EVENT to the node's event listeners; takes it (NULL-safe).
    void (*emit)(void *arg, json_t *event);
    //  Append the N PAYLOADS to the node's own log as one durable commit
    //  (signed, pushed); MS_OK or the store's error.
    int (*append)(void *arg, size_t n, const ms_store_payload_t *payloads);
    //  Something the scheduler looks at changed (a lease expired, a
    //  worker is free again, the pause ended or released claims).
    void (*changed)(void *arg);
    //  Whether the node is in a pool (has a mesh).
    bool (*in_pool)(void *arg);
    //  The peers a claim waits for (linked and not dead now), as a
    //  malloc'd array in *out (caller frees; NULL when none or no
    //  memory). Returns how many.
    size_t (*settle_peers)(void *arg, uint8_t (**out)[MS_SETTLE_ID_BYTES]);
    //  A claim settled after WAITED_MS (the scheduler's prefetch window).
    void (*settled)(void *arg, double waited_ms);
    //  The sweep's dataset object for workers (borrowed until the next
    //  call), or NULL when it is not here (or no memory).
    const json_t *(*dataset)(void *arg, const ms_hash_t *sweep_id);
    //  A task of the sweep started here (its first one sets its start).
    void (*sweep_started)(void *arg, const ms_hash_t *sweep_id);
    //  Whether a trained task's worker writes its weights (blobs kept or
    //  weights_out_dir).
    bool (*keeps_weights)(void *arg);
    //  Tests: a made-up result body for a training task (caller owns it),
    //  or NULL to train it.
    json_t *(*work_hook)(void *arg, const char *task_hex, const char *sweep_hex,
                         const json_t *config);
    //  Claim-to-start of the task THEX of SWEEP_ID: its work started at
    //  STARTED_US, its runner was free since FREE_US (monotonic us).
    void (*claim_to_start)(void *arg, const ms_hash_t *sweep_id,
                           int64_t free_us, const char *thex,
                           int64_t started_us);
    //  A result body of RUN, done in the node (noop, work hook): the
    //  node stores it as every result.
    void (*result)(void *arg, ms_runner_run_t *run, json_t *body);
    //  The node gave the task up (the scheduler claims it no more).
    void (*gave_up)(void *arg, const ms_hash_t *task_id);
    //  The pause figures changed: *PAUSE is the new state (valid for the
    //  call).
    void (*paused)(void *arg, const ms_runner_pause_t *pause);
    //  A worker died (a crash, or a worker stopped on purpose): the node
    //  counts it (worker_crashes_total).
    void (*worker_died)(void *arg);
    //  The worker that re-evaluated the result whose record hash is
    //  TARGET reported EV (RESULT, FAILED or DIED; borrowed for the
    //  call): the outcome is ms_reeval's. Its entry is freed after.
    void (*reeval_event)(void *arg, const uint8_t target[MS_HASH_BYTES],
                         const ms_worker_event_t *ev);
} ms_runner_iface_t;

//  Settings.
typedef struct {
    uint8_t node_id[MS_HASH_BYTES]; // this node's public key
    const char *checkpoint_dir;     // DATA_DIR/checkpoints (copied)
    const char *weights_dir;        // DATA_DIR/weights (copied)
    int64_t settle_ms;              // settle cap; < 0: auto (heartbeat_ms)
    int64_t heartbeat_ms;           // the heartbeat interval
    int idle_cpu_pct;               // idle_only: the threshold (log lines)
    int idle_busy_s;                // ... busy this long pauses
    int idle_quiet_s;               // ... quiet this long resumes
    int max_pause_s;                // a pause longer releases the claims
    int retry_cap; // a task's worker crashes retried here before it is
                   // given up (DESIGN.md "Defaults": 2)
} ms_runner_config_t;

//  Create the runner over STORE, LEASES, SETTLE and POOL (borrowed; they
//  outlive it) and IDLE (borrowed, or NULL without idle_only), with CFG
//  and IFACE (copied). Returns NULL when memory runs out. Caller owns the
//  result; free it with ms_runner_destroy().
ms_runner_t *ms_runner_new(ms_store_t *store, ms_lease_table_t *leases,
                           ms_settle_t *settle, ms_worker_pool_t *pool,
                           ms_idle_t *idle, const ms_runner_config_t *cfg,
                           const ms_runner_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p. Tasks still on workers go back to
//  pending in the store ("node stopped"; re-evaluations aside); their
//  configs are freed.
void ms_runner_destroy(ms_runner_t **self_p);

//  The run table entry of WORKER (0 .. pool size - 1); borrowed, valid
//  while the runner lives.
ms_runner_run_t *ms_runner_run(ms_runner_t *self, int worker);

//  Workers running a task now.
int ms_runner_busy(const ms_runner_t *self);

//  Whether a worker of ours runs the task.
bool ms_runner_has_task(const ms_runner_t *self,
                        const uint8_t task_id[MS_HASH_BYTES]);

//  Whether the node is paused for the machine's owner (idle_only).
bool ms_runner_paused(const ms_runner_t *self);

//  The lease counters.
void ms_runner_stats(const ms_runner_t *self, ms_runner_stats_t *out);

//  The runner's nearest deadline for the loop (monotonic ms): the next
//  idle_only sample, and, when BUSY (a worker runs a task), the next
//  check of the running tasks. INT64_MAX when none.
int64_t ms_runner_next_deadline(const ms_runner_t *self, bool busy);

//  What a worker's event means for its run (an event of
//  ms_worker_pool_poll; EV borrowed for the call, cleared by the caller):
//  EPOCH: an "epoch" event. STARTED: claim-to-start (iface.claim_to_start,
//  from when the worker went idle). RESULT: iface.result. FAILED (the
//  worker says the task cannot run, as bad data): given up at once
//  (ms_runner_fail, class task). DIED: counted (iface.worker_died); a
//  worker stopped on purpose (ms_runner_stop) releases the claim
//  (reason outranked) and its task goes back to pending, or to cancelled
//  with its checkpoint dropped when its sweep was cancelled; any other
//  death is a crash of the task (ms_runner_crashed): retried at once
//  under the same claim (the settle list, nothing to wait for; a "retry"
//  event with the next attempt) while the crashes are at most
//  cfg.retry_cap, then given up with the reason "REASON on N attempts"
//  (class resource for a SIGKILL in a pool, likely the out-of-memory
//  killer; else task). A re-evaluation's end goes to iface.reeval_event;
//  a run released after max_pause_s ends with nothing published. Every
//  event but EPOCH and STARTED frees the worker's entry and tells
//  iface.changed.
void ms_runner_worker_event(ms_runner_t *self, ms_worker_event_t *ev);

//  A worker died running TASK_ID: count the crash; returns the crashes so
//  far, or RETRY_CAP + 1 when memory runs out (no retry).
int ms_runner_crashed(ms_runner_t *self, const ms_hash_t *task_id,
                      int retry_cap);

//  Forget the crash count of TASK_ID (it ended).
void ms_runner_forget(ms_runner_t *self, const ms_hash_t *task_id);

//  Delete TASK_ID's checkpoint (nothing when there is none).
void ms_runner_drop_checkpoint(ms_runner_t *self, const ms_hash_t *task_id);

//  Release our claim on (TASK_ID, SLOT) at EPOCH with REASON (an
//  ms_release_reason): the lease table and a release record (an append
//  error is logged).
void ms_runner_release(ms_runner_t *self, const ms_hash_t *task_id,
                       uint32_t slot, uint32_t epoch, uint32_t reason);

//  Start the task we hold (SLOT, EPOCH) on an idle worker; a noop task
//  (or a work hook's) completes in the node at once (iface.result).
//  Returns MS_OK; MS_ERR_CONFLICT no idle worker or nothing to run (the
//  claim released); other codes: the claim was released.
int ms_runner_start(ms_runner_t *self, const ms_hash_t *task_id, uint32_t slot,
                    uint32_t epoch);

//  The N_CLAIMS claims of ours (MS_RECORD_CLAIM payloads appended as one
//  block ending at SEQ) go on the settle list; each starts once every
//  live peer acknowledged the block (or at the cap). With nobody to wait
//  for, they start at once. NOW is monotonic ms.
void ms_runner_settle(ms_runner_t *self, const ms_store_payload_t *claims,
                      size_t n_claims, uint64_t seq, int64_t now);

//  Start the settled claims that we still hold while workers are idle;
//  release the others. Nothing while paused. NOW is monotonic ms.
void ms_runner_start_settled(ms_runner_t *self, int64_t now);

//  Give up the task we hold (SLOT, EPOCH): a failure record of class CLS
//  with REASON and the release, in one block; its checkpoint and crash
//  count go, and iface.gave_up is told.
void ms_runner_fail(ms_runner_t *self, const ms_hash_t *task_id,
                    const ms_hash_t *sweep_id, uint32_t slot, uint32_t epoch,
                    ms_failure_class_t cls, const char *reason);

//  Stop WORKER on purpose (cancel, outranked): SIGTERM (SIGCONT when
//  paused); its death then ends the task without a retry.
void ms_runner_stop(ms_runner_t *self, int worker);

//  Stop (ms_runner_stop) every worker of ours on a task of SWEEP_ID (its
//  sweep was cancelled): their deaths end the tasks cancelled.
void ms_runner_stop_sweep(ms_runner_t *self, const ms_hash_t *sweep_id);

//  Lease housekeeping at monotonic ms NOW: stop workers whose claims were
//  outranked (and release outranked settling claims), count expiries
//  (claim a lapsed lease of ours again or stop its worker), and every
//  500 ms stop workers whose sweep was cancelled.
void ms_runner_lease_tick(ms_runner_t *self, int64_t now);

//  Release every claim of ours, running and settling (graceful stop).
void ms_runner_release_all(ms_runner_t *self);

//  idle_only at monotonic ms NOW: sample others' CPU once a second,
//  pause, release the claims after max_pause_s, resume. Returns true
//  while paused (start nothing). False at once without idle_only.
bool ms_runner_idle_tick(ms_runner_t *self, int64_t now);

//  Whether a worker is free for a re-evaluation now: an idle worker, and
//  no pause for the machine's owner.
bool ms_runner_reeval_free(const ms_runner_t *self);

//  Start RUN (a re-evaluation ms_reeval chose; borrowed, but its config
//  is taken on MS_OK) on an idle worker, whose index goes to *WORKER:
//  its run table entry then holds the task, its config and RUN's
//  target, and the worker's end goes to iface.reeval_event. Returns
//  MS_OK, or ms_worker_pool_start's error (nothing started; the config
//  stays the caller's).
int ms_runner_start_reeval(ms_runner_t *self, const ms_reeval_run_t *run,
                           int *worker);

#endif
