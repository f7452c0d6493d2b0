/*  =========================================================================
    ms_node_status - what the HTTP threads show of the node: the status
    page, the peers, the metrics snapshot; and a sweep's progress

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "HTTP API and dashboard" (GET /api/v1/status, /api/v1/peers,
    /metrics) and "Layout of node/" (node/actor); docs/API.md and
    docs/METRICS.md are the contract for the keys. The node loop tells
    the class what happens; HTTP threads read what it published.

    What it owns.
    - The published snapshot, the only node state HTTP threads read: the
      peers table (each peer marked revoked and quarantined), the status
      page's pool_counters (ms_metrics_t, ms_metrics_status_json), the
      labelled /metrics figures (gossip by kind, refusals by reason, peers
      by state, re-evaluations by outcome, tasks completed and their
      rate), the pending tasks that peers run now (by sweep), and the
      figures of /api/v1/status the loop keeps: busy workers, trained
      tasks and their seconds, worker crashes, the last platform, the
      workers' calibration, the last claim-to-start figures, the volunteer
      pause, the pool (operator, pool id, authority, encryption), results
      held and reveals, pool operators.
    - On the loop side: the completion sampler behind tasks_per_second
      (the increases of the stored sweeps' done + failed counts, sampled
      once a second, over the last minute), and per sweep what its
      progress adds to the store's counts (when its first task started
      here, the sum of its stored rows' train_seconds, read once and then
      kept up as results are stored).

    How it is fed. Events as they happen (ms_node_status_set_busy,
    _result_stored, _worker_crashed, _claim_to_start, _paused,
    _sweep_started); and every MS_NODE_STATUS_REFRESH_MS
    (ms_node_status_tick) a refresh: the node fills a sample of its
    collaborators' stats structs (iface.sample: value copies of the
    store's, runner's, gossip's, mesh's ... stats), gives the mesh's peer
    table (iface.peers), says who is revoked (iface.revoked) and which
    pending tasks a peer holds (iface.held_elsewhere); the class builds
    the snapshot outside its lock and swaps it in. Which figure of which
    collaborator is which line of MS_METRICS_LIST is written once, in
    ms_node_status_metrics. The class never calls into ms_node.

    Thread rule. The loop thread owns the loop side (tick, refresh,
    sweep_progress, sweep_started, the sampler) and is the only writer of
    the snapshot. One mutex, the class's own, guards the snapshot: each
    setter copies its figure under it; a refresh takes it only to swap
    what it built. HTTP threads (ms_node_status_json, _peers,
    _running_elsewhere; any thread may call them) read the snapshot under
    the mutex and nothing else of the node: the outbox's and the runner's
    counters reach /status through the sample, at most one refresh old,
    as the peers and pool_counters always were, no longer read from an
    HTTP thread while the loop changes them (issue 14). The exception is
    the store (borrowed, read only), which both sides read through its
    own read transactions as every HTTP handler does: /status reads the
    standing of this node and its peers at request time, as before. Not
    snapshotted, because that would cost the loop a read per peer every
    refresh for a page few ask for.
*/
#ifndef MS_NODE_STATUS_H
#define MS_NODE_STATUS_H

#include "ms_authority.h"
#include "ms_blob_fetch.h"
#include "ms_block_signer.h"
#include "ms_blob_store.h"
#include "ms_clock.h"
#include "ms_dataset_source.h"
#include "ms_gossip.h"
#include "ms_hash.h"
#include "ms_item_sync.h"
#include "ms_lease_feed.h"
#include "ms_mesh.h"
#include "ms_metrics.h"
#include "ms_outbox.h"
#include "ms_record_log.h"
#include "ms_reeval.h"
#include "ms_runner.h"
#include "ms_store.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_node_status ms_node_status_t;

#define MS_NODE_STATUS_REFRESH_MS 200      // the snapshot is at most this old
#define MS_NODE_STATUS_C2S_RING 256        // claim-to-start figures kept
#define MS_NODE_STATUS_TPS_RING 64         // completion samples kept (ring)
#define MS_NODE_STATUS_TPS_WINDOW_MS 60000 // tasks_per_second: last minute
#define MS_NODE_STATUS_TPS_SAMPLE_MS 1000  // ... sampled once a second
#define MS_NODE_STATUS_REMOTE_MAX                                              \
    8192 // pending tasks looked at, at
         // most, for "running elsewhere"

//  Counts of a sweep's tasks by state, and timings.
typedef struct {
    int64_t total;          // tasks in the sweep
    int64_t pending;        // not started (or back after a stop/crash)
    int64_t running;        // on a worker now
    int64_t done;           // finished with a result (ok or diverged)
    int64_t failed;         // failed after its retries
    int64_t cancelled;      // cancelled (later issue)
    double train_seconds;   // sum of train_seconds of stored results
    double elapsed_seconds; // wall time since this node started the sweep
                            // (0 when it has not yet)
} ms_sweep_progress_t;

//  What the node's collaborators say now (iface.sample), by value. A
//  has_* false means the node has no such collaborator now (alone, or in
//  no pool): its figures are zero and its group is off the status page.
//  Pointers are borrowed for the call.
typedef struct {
    ms_metrics_t own;                 // the node's own counters (ms_metrics.h)
    uint64_t n_rejected_messages;     // peer messages the node refused itself
    ms_store_stats_t store;           // ms_store_stats
    uint64_t n_ignored_no_role;       // ms_store_ignored_no_role
    size_t n_leases;                  // ms_lease_table_size
    ms_runner_stats_t runner;         // ms_runner_stats
    ms_outbox_stats_t outbox;         // ms_outbox_stats
    uint32_t n_pool_operators;        // operators in the pool, as the store has
    bool has_gossip;                  // a gossip
    ms_gossip_stats_t gossip;         // ms_gossip_stats
    bool has_mesh;                    // a mesh (then a member table)
    ms_mesh_stats_t mesh;             // ms_mesh_stats
    bool mesh_secure;                 // ms_mesh_secure
    size_t n_members;                 // members admitted (ms_members_count)
    ms_item_sync_stats_t items;       // ms_item_sync_stats (authority items)
    ms_lease_feed_stats_t lease_feed; // ms_lease_feed_stats
    bool has_datasets;                // a dataset source
    ms_dataset_source_stats_t datasets; // ms_dataset_source_stats
    bool has_fetch;                     // a blob fetcher (then a blob store)
    ms_blob_fetch_stats_t fetch;        // ms_blob_fetch_stats
    size_t n_fetches_running;           // ms_blob_fetch_count
    ms_blob_store_stats_t blobs;        // ms_blob_store_stats
    bool has_reeval;                    // a re-evaluator
    ms_reeval_stats_t reeval;           // ms_reeval_stats
    ms_authority_status_t authority;    // ms_authority_status: certificate,
                                        // pool id, operator
    ms_block_signer_stats_t signer;     // ms_block_signer_stats
    ms_record_log_stats_t log;          // ms_record_log_stats
    double calibration_gflops;     // the workers' median figure, 0: none yet
    const json_t *worker_platform; // what a worker announced, or NULL
} ms_node_status_sample_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside ms_node_status_tick and
//  ms_node_status_refresh only, and none may call back into the class.
typedef struct {
    void *arg;
    //  Fill *OUT (zeroed by the class) with the collaborators' figures.
    void (*sample)(void *arg, ms_node_status_sample_t *out);
    //  The mesh's peer table, a new JSON array of objects with at least
    //  "node_id" (hex) and "state" (alive, suspect, dead) that the class
    //  takes; an empty one in no pool; NULL when memory runs out (the
    //  published table then stays).
    json_t *(*peers)(void *arg);
    //  True when the pool authority revoked NODE_ID's certificate.
    bool (*revoked)(void *arg, const uint8_t node_id[MS_HASH_BYTES]);
    //  True when a peer (not this node) holds a live lease on slot 0 of
    //  TASK_ID in the node's view.
    bool (*held_elsewhere)(void *arg, const uint8_t task_id[MS_HASH_BYTES]);
} ms_node_status_iface_t;

//  Settings, fixed for the node's life.
typedef struct {
    const char *node_id;    // 64 hex (copied)
    const char *store_path; // the store's data file, whose size is
                            // store_bytes (copied; shorter than PATH_MAX)
    const char *open_pool;  // the open pool's name, or NULL (copied)
    int n_workers;          // worker processes
    const json_t *backend;  // the backend object (ms_gpu_plan_json), or
                            // NULL (copied)
    bool idle_only;         // the volunteer settings, as configured
    int idle_cpu_pct, idle_busy_s, idle_quiet_s, max_pause_s;
    int worker_memory_mb;
    const char *idle_source; // "processes" or "cgroup" (static), or NULL
                             // without idle_only
    const char *idle_cgroup; // the cgroup's cpu.stat, or NULL (copied)
    const ms_clock_t *clock; // monotonic ms (uptime, samples, sweeps'
                             // elapsed time); NULL: ms_clock_system()
                             // (borrowed)
    int64_t opened_at_ms;    // monotonic ms the node opened (uptime_seconds
                             // counts from it); 0: at ms_node_status_new
} ms_node_status_config_t;

//  Create the status over STORE (borrowed, read only; it outlives the
//  object) with CFG and IFACE (copied). Nothing is published until the
//  first refresh (an empty peers table, no counters). Returns NULL when
//  memory runs out or a string does not fit. Caller owns the result;
//  free it with ms_node_status_destroy().
ms_node_status_t *ms_node_status_new(ms_store_t *store,
                                     const ms_node_status_config_t *cfg,
                                     const ms_node_status_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p. No HTTP thread may read it then.
void ms_node_status_destroy(ms_node_status_t **self_p);

//  Refresh the snapshot when MS_NODE_STATUS_REFRESH_MS have passed since
//  the last tick's refresh (the first tick refreshes at once). Loop
//  thread.
void ms_node_status_tick(ms_node_status_t *self);

//  Refresh the snapshot now: sample the stored sweeps' finished counts,
//  ask the iface for the sample, the peers and their standing, count the
//  pending tasks peers hold (with a mesh; at most
//  MS_NODE_STATUS_REMOTE_MAX looked at), build pool_counters and the
//  labelled figures, and publish them. What cannot be built for want of
//  memory keeps its last published value. Loop thread.
void ms_node_status_refresh(ms_node_status_t *self);

//  The mapping of the collaborators' figures in SAMPLE onto the lines of
//  MS_METRICS_LIST: *OUT gets the node's own counters with every figure
//  a collaborator keeps copied into its line (rejected_messages_total is
//  the sum of every refusal). Returns the groups on the page
//  (MS_METRICS_GROUP_NODE, with GOSSIP, MESH, FETCH when the sample has
//  them). Pure; any thread.
unsigned ms_node_status_metrics(const ms_node_status_sample_t *sample,
                                ms_metrics_t *out);

//  Workers running a task now. Loop thread.
void ms_node_status_set_busy(ms_node_status_t *self, int n_busy);

//  A result of ours is durable: a train task (TRAIN) counts in
//  tasks_trained_total and TRAIN_SECONDS in training_seconds_total; its
//  sweep's progress sum grows by TRAIN_SECONDS (when finite, and once the
//  sum was read). *PLATFORM (may be NULL or point to NULL) becomes the
//  platform on /status: taken, and *PLATFORM set NULL. Loop thread.
void ms_node_status_result_stored(ms_node_status_t *self,
                                  const ms_hash_t *sweep_id, bool train,
                                  double train_seconds, json_t **platform);

//  A worker died (worker_crashes_total). Loop thread.
void ms_node_status_worker_crashed(ms_node_status_t *self);

//  One claim-to-start figure (ms): kept in a ring of the last
//  MS_NODE_STATUS_C2S_RING for the median and p99 of /status. Loop
//  thread.
void ms_node_status_claim_to_start(ms_node_status_t *self, double ms);

//  The volunteer pause figures changed (ms_runner_iface_t.paused; PAUSE
//  and its reason copied). Loop thread.
void ms_node_status_paused(ms_node_status_t *self,
                           const ms_runner_pause_t *pause);

//  A task of SWEEP_ID started here: the first call of a sweep starts its
//  elapsed_seconds. Loop thread.
void ms_node_status_sweep_started(ms_node_status_t *self,
                                  const ms_hash_t *sweep_id);

//  Fill *OUT with the progress of SWEEP_ID: the counts from the store
//  (claimed tasks count as pending), the sum of its stored rows'
//  train_seconds (read from the store on the first call of a sweep, then
//  kept up by ms_node_status_result_stored) and the time since its first
//  task started here. Returns MS_OK; MS_ERR_NOTFOUND (unknown sweep);
//  MS_ERR_STORE; MS_ERR_NOMEM. Loop thread.
int ms_node_status_sweep_progress(ms_node_status_t *self,
                                  const ms_hash_t *sweep_id,
                                  ms_sweep_progress_t *out);

//  The status object of /api/v1/status and /metrics (ms_api_hooks_t
//  .status: docs/API.md lists its keys) from the published snapshot, the
//  store's standings of this node and its peers, the store file's size
//  and the uptime. Caller owns the result (json_decref); NULL when memory
//  runs out. Any thread.
json_t *ms_node_status_json(ms_node_status_t *self);

//  A copy of the published peers table (an empty array when memory runs
//  out). Caller owns it (json_decref). Any thread.
json_t *ms_node_status_peers(ms_node_status_t *self);

//  Pending tasks of SWEEP_ID that peers run now, as last published.
//  Any thread.
int64_t ms_node_status_running_elsewhere(ms_node_status_t *self,
                                         const uint8_t sweep_id[MS_HASH_BYTES]);

#endif
