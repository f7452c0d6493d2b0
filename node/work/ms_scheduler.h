/*  =========================================================================
    ms_scheduler - where a lease is decided: which unfinished tasks this
    node claims now, and how many

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Work, claims and leases", "Verification" and "Layout of
    node/": one scheduling pass (ms_scheduler_claim) lists the unfinished
    tasks of active sweeps (ms_store_pending_tasks_filtered), orders them
    by rendezvous owner rank over the members (ms_assign_order: own tasks
    first, then steal in reverse owner rank), skips what does not fit
    this node's memory or its GPU workers' ops, picks the slot the lease
    rule and the operator rule allow, claims it in the lease table and
    appends all the pass's claims as one durable commit. It claims for
    the idle workers and, beyond them (prefetch), a window of short
    tasks this node owns. The claims it returns are the node's to settle
    and start (ms_settle, the runner).

    The node creates it once its store and lease table exist and hands
    it what it needs of the node through ms_scheduler_iface_t; the class
    never calls into ms_node. Loop thread only.
*/
#ifndef MS_SCHEDULER_H
#define MS_SCHEDULER_H

#include "ms_assign.h"
#include "ms_hash.h"
#include "ms_lease_table.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_SCHEDULER_MAX_CLAIMS                                                \
    256 // claims one pass appends at most
        // (one durable commit)
#define MS_SCHEDULER_MAX_PREFETCH                                              \
    768 // claims held beyond the workers (a heartbeat lists them all)

typedef struct ms_scheduler ms_scheduler_t;

//  What the scheduler needs to know of one sweep (ms_scheduler_iface_t
//  .sweep). Strings are borrowed until the next iface call.
typedef struct {
    bool has_dataset;          // its dataset object for workers is ready
    const char *dataset_error; // why not (may be NULL)
    int64_t dataset_bytes;     // bytes of its dataset files (0: unknown)
} ms_scheduler_sweep_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside ms_scheduler_claim only.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Whether the node claims nothing now (it is stopping, or the startup
    //  grace holds at monotonic ms NOW).
    bool (*holding)(void *arg, int64_t now);
    //  Whether the node is in a pool (has a mesh): prefetch, dataset
    //  fetches; alone, a task without its dataset fails.
    bool (*in_pool)(void *arg);
    //  What the node knows of the sweep SWEEP_ID (the node may read it in
    //  now). False when it cannot (memory): the pass stops there.
    bool (*sweep)(void *arg, const uint8_t sweep_id[MS_HASH_BYTES],
                  ms_scheduler_sweep_t *out);
    //  The sweep's dataset is not here: have it fetched (once per sweep;
    //  the node keeps track).
    void (*dataset_wanted)(void *arg, const uint8_t sweep_id[MS_HASH_BYTES]);
    //  The members for rendezvous owners, this node first, as a malloc'd
    //  array in *out (caller frees; NULL when there is no memory). Returns
    //  how many.
    size_t (*members)(void *arg, uint8_t (**out)[MS_ASSIGN_ID_BYTES]);
    //  Whether the task is on a worker of the node, waiting in this
    //  turn's results, or settling.
    bool (*task_busy)(void *arg, const uint8_t task_id[MS_HASH_BYTES]);
    //  Whether the node holds a committed, unrevealed result of the task.
    bool (*held)(void *arg, const uint8_t task_id[MS_HASH_BYTES]);
    //  Append the N payloads (claims) to the node's own log as one
    //  durable commit (signed, pushed to the peers); MS_OK or the store's
    //  error.
    int (*append)(void *arg, size_t n, const ms_store_payload_t *payloads);
    //  Give up the task held under (SLOT, EPOCH): a failure record of
    //  class CLS with REASON (may be NULL) and the release. The node then
    //  calls ms_scheduler_gave_up.
    void (*fail)(void *arg, const ms_hash_t *task_id, const ms_hash_t *sweep_id,
                 uint32_t slot, uint32_t epoch, ms_failure_class_t cls,
                 const char *reason);
} ms_scheduler_iface_t;

//  Settings.
typedef struct {
    uint8_t node_id[MS_HASH_BYTES]; // this node's public key
    int n_workers;                  // worker processes (>= 1)
    int n_gpu_workers;              // ... of which on the GPU (ms_gpu.h)
    const char *gpu_backend;        // what they open (copied), or NULL
    int worker_memory_mb;           // a worker's cap (0: none)
    int64_t memory_bytes;           // > 0: the memory one task may use, as
                                    // is (tests); 0: MemAvailable (Linux),
                                    // else free pages, per worker, capped
    int64_t gpu_memory_bytes;       // device memory one GPU worker's task
                                    // may use (ms_gpu_worker_budget)
} ms_scheduler_config_t;

//  Create the scheduler over STORE and LEASES (borrowed; they outlive it)
//  with CFG and IFACE (copied). Measures the memory a task may use now
//  unless cfg->memory_bytes says. Returns NULL when memory runs out.
//  Caller owns the result; free it with ms_scheduler_destroy().
ms_scheduler_t *ms_scheduler_new(ms_store_t *store, ms_lease_table_t *leases,
                                 const ms_scheduler_config_t *cfg,
                                 const ms_scheduler_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p.
void ms_scheduler_destroy(ms_scheduler_t **self_p);

//  One scheduling pass at monotonic ms NOW with N_IDLE idle workers and
//  N_SETTLING claims of ours settling: claim for the idle workers and,
//  beyond them, the prefetch window of short tasks this node owns. A
//  pass runs only when something changed (ms_scheduler_changed) or
//  every 250 ms, and at most every 2 ms; none while the node holds
//  (iface.holding) or has no room. The claims are taken in the lease
//  table and appended through iface.append as one commit; on an append
//  error they are released from the table again and none is returned.
//  CLAIMS (room for MS_SCHEDULER_MAX_CLAIMS) gets the claims appended
//  (kind MS_RECORD_CLAIM), *N_CLAIMS their count (0 when no pass ran).
//  Returns MS_OK; MS_ERR_NOMEM or the store's error when the tasks
//  cannot be listed (logged; *n_claims is 0).
int ms_scheduler_claim(ms_scheduler_t *self, int64_t now, int n_idle,
                       int n_settling, ms_store_payload_t *claims,
                       size_t *n_claims);

//  Something a pass looks at changed (records, workers, peers): the next
//  ms_scheduler_claim scans the tasks.
void ms_scheduler_changed(ms_scheduler_t *self);

//  The monotonic ms of the next scan without a change (a deadline of the
//  node's loop).
int64_t ms_scheduler_next_scan_at(const ms_scheduler_t *self);

//  The node gave the task up (a failure it published): never claim it
//  again in this process. Nothing happens when memory runs out.
void ms_scheduler_gave_up(ms_scheduler_t *self, const ms_hash_t *task_id);

//  A task of sweep SWEEP_ID ran RAN_MS here: the sweep's mean run time,
//  which sizes its prefetch. Nothing happens when memory runs out.
void ms_scheduler_task_ran(ms_scheduler_t *self,
                           const uint8_t sweep_id[MS_HASH_BYTES],
                           double ran_ms);

//  A claim settled after WAITED_MS: the mean settle time, which widens
//  the prefetch window.
void ms_scheduler_settled(ms_scheduler_t *self, double waited_ms);

#endif
