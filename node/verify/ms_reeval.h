/*  =========================================================================
    ms_reeval - re-evaluation of other operators' results and the weights
    this node keeps pinned

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification", Re-evaluation and keep_weights (and
    docs/VERIFICATION.md "Re-evaluation"): a verifier samples each new ok
    result of another operator with probability reevaluate_fraction,
    drawn from its own generator, fetches the result's weights, has a
    worker recompute the test and validation metrics, and publishes a
    REEVALUATION record (ok with the recomputed metrics, or failed with
    the reason). Whether the recomputed metrics agree is the verdict
    engine's rule (ms_verdict_reeval_agrees); this class only counts the
    verifier's own view of it. It also holds copies of kept weights for
    other operators (two holders per result) and the node's own pinned
    weights (keep_weights), released when their result was re-evaluated
    or their retention passed.

    The node creates it once its blob store and blob fetch exist (in a
    pool) and hands it what it needs of the node through ms_reeval_iface_t;
    the class never calls into ms_node. Loop thread only.
*/
#ifndef MS_REEVAL_H
#define MS_REEVAL_H

#include "ms_blob_fetch.h"
#include "ms_blob_store.h"
#include "ms_hash.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_worker.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_REEVAL_TICK_MS 200 // how often ms_reeval_tick does its work

typedef struct ms_reeval ms_reeval_t;

//  One re-evaluation to start on a worker (ms_reeval_iface_t.start).
typedef struct {
    ms_hash_t task_id;        // the task
    ms_hash_t sweep_id;       // its sweep
    const uint8_t *target;    // the result's record hash (MS_HASH_BYTES)
    json_t *config;           // the task's config; start takes it on MS_OK
    const json_t *dataset;    // the sweep's dataset object (borrowed)
    const char *weights_path; // the weights blob's file
    int64_t started_ms;       // monotonic ms: the tick that starts it
} ms_reeval_run_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside the ms_reeval_* calls only.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Append PAYLOAD to the node's own log (signed, pushed to the peers);
    //  MS_OK or the store's error.
    int (*append)(void *arg, const ms_store_payload_t *payload);
    //  Publish EVENT to the node's event listeners; takes it (NULL-safe).
    void (*emit)(void *arg, json_t *event);
    //  The live linked peers, in the node's peer-table order, as a malloc'd
    //  array in *out (caller frees; NULL when there is no memory). Returns
    //  how many.
    size_t (*live_peers)(void *arg, uint8_t (**out)[MS_HASH_BYTES]);
    //  The sweep's keep_weights (an ms_keep_weights_t);
    //  MS_KEEP_WEIGHTS_SAMPLED when the node does not know the sweep.
    int (*sweep_keep)(void *arg, const uint8_t sweep_id[MS_HASH_BYTES]);
    //  The sweep's dataset object for workers (borrowed until the next
    //  call), or NULL when it is not here yet (the node then asks for it).
    const json_t *(*dataset)(void *arg, const ms_hash_t *sweep_id);
    //  Whether a worker is free for a re-evaluation now (idle, not paused).
    bool (*worker_free)(void *arg);
    //  Start RUN on a worker; on MS_OK *worker is its index and the node
    //  owns run->config (the run's end comes back through
    //  ms_reeval_worker_event). Else the pool's error.
    int (*start)(void *arg, const ms_reeval_run_t *run, int *worker);
    //  The monotonic clock in ms.
    int64_t (*now_ms)(void *arg);
} ms_reeval_iface_t;

//  Settings.
typedef struct {
    uint8_t node_id[MS_HASH_BYTES]; // this node's public key
    double reevaluate_fraction;     // [0, 1]: share of results sampled
    int reeval_timeout_s;           // >= 1: weights must be had by then
    int keep_retention_s;           // keep_weights sampled: pinned so long
    uint64_t seed[2];               // the sampling generator's state; not
                                    // both 0 (the node draws it from the OS)
} ms_reeval_config_t;

//  Counters (ms_reeval_stats).
typedef struct {
    uint64_t n_sampled;   // results chosen for re-evaluation
    uint64_t n_published; // re-evaluation records written
    uint64_t n_failed;    // ... of which failed (no weights)
    uint64_t n_agreed;    // published ok, within the sweep's tolerances
    uint64_t n_disagreed; // published ok, outside them
    uint64_t n_copied;    // weights copies held for other operators
    size_t n_pending;     // jobs not over yet
    size_t n_pinned;      // weights pinned by this class
} ms_reeval_stats_t;

//  Create the re-evaluator over STORE, BLOBS and FETCH (borrowed; they
//  outlive it) with CFG and IFACE (copied). Returns NULL when memory runs
//  out. Caller owns the result; free it with ms_reeval_destroy().
ms_reeval_t *ms_reeval_new(ms_store_t *store, ms_blob_store_t *blobs,
                           ms_blob_fetch_t *fetch,
                           const ms_reeval_config_t *cfg,
                           const ms_reeval_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p. Its pins are left to the blob store
//  (they end with it); jobs running on workers are forgotten.
void ms_reeval_destroy(ms_reeval_t **self_p);

//  A new ok result NR (from ms_store_new_results): our own (its kept
//  weights learn their record hash), or another operator's: sample it
//  with the generator, or hold a copy of its weights when this node is
//  one of its two holders. Results of our own operator and results we
//  re-evaluated already are skipped. NOW is monotonic ms.
void ms_reeval_sample(ms_reeval_t *self, const ms_store_new_result_t *nr,
                      int64_t now);

//  Drive everything at most every MS_REEVAL_TICK_MS: sample the store's
//  new results, release kept weights whose result was re-evaluated or
//  whose retention passed, move each job on (read its row, fetch its
//  weights, start it on a worker, or publish a failed re-evaluation when
//  its weights were not had within reeval_timeout_s). NOW is monotonic ms.
void ms_reeval_tick(ms_reeval_t *self, int64_t now);

//  A blob fetch ended (ms_blob_fetch's done callback): the jobs waiting
//  for HASH go on, or try again later when STATUS is not MS_OK (REASON
//  may be NULL).
void ms_reeval_blob_done(ms_reeval_t *self, const ms_hash_t *hash, int status,
                         const char *reason);

//  The worker that ran the re-evaluation of the result TARGET reported
//  EV (RESULT, FAILED or DIED; others are ignored by the caller): publish
//  the outcome (a died worker is tried again until the deadline).
void ms_reeval_worker_event(ms_reeval_t *self,
                            const uint8_t target[MS_HASH_BYTES],
                            const ms_worker_event_t *ev);

//  Pin BLOB (weights of task TASK_ID) and remember it: UNTIL_CHECKED
//  unpins it once its result (record hash TARGET, or NULL when not known
//  yet) was re-evaluated, FOREVER never by time. Nothing happens when the
//  blob store cannot pin it or memory runs out.
void ms_reeval_keep(ms_reeval_t *self, const ms_hash_t *blob,
                    const ms_hash_t *task_id, bool until_checked, bool forever,
                    const uint8_t *target);

//  Unpin the first kept entry of BLOB and forget it (keep_weights best:
//  a better result replaces it). Nothing when it is not kept.
void ms_reeval_unkeep(ms_reeval_t *self, const ms_hash_t *blob);

//  Copy the counters into *out.
void ms_reeval_stats(const ms_reeval_t *self, ms_reeval_stats_t *out);

#endif
