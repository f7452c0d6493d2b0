/*  =========================================================================
    ms_outbox - a turn's results, commit then reveal

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification" (commit then reveal) and "Records and
    anti-entropy" (group commit), docs/VERIFICATION.md "Commit then
    reveal": the path of our own results after a worker reported them.
    The node queues each result of a loop turn here (ms_outbox_push); at
    the end of the turn ms_outbox_flush stores them as one block of ours.
    A result of a task with verify.replicas >= 2 is not published at once:
    its COMMIT record goes into the block and the result is held (in
    memory and in HELD_DIR/<task id>) until ms_outbox_reveal finds the
    commits it waits for; then its RESULT record (with the nonce) is
    appended. Held results survive a restart (ms_outbox_load).

    The node creates it once its data dir exists and hands it what it
    needs of the node through ms_outbox_iface_t; the class never calls
    into ms_node. Loop thread only, except ms_outbox_stats (see there).
*/
#ifndef MS_OUTBOX_H
#define MS_OUTBOX_H

#include "ms_hash.h"
#include "ms_store_payload.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_outbox ms_outbox_t;

//  One result of ours, from the worker's report to its durable record.
//  The node fills the fields up to log_line; has_nonce, nonce and
//  replicas belong to the outbox (commit then reveal).
typedef struct {
    ms_hash_t task_id;            // the task
    ms_hash_t sweep_id;           // its sweep
    uint32_t slot;                // the claim's slot
    uint32_t epoch;               // the claim's epoch
    bool train;                   // kind train (not noop)
    double train_seconds;         // the row's train_seconds
    char *row;                    // canonical row JSON (owned), or NULL
    size_t row_len;               // bytes in row
    ms_result_status_t status;    // ok, diverged, failed
    json_t *event;                // the "result" event to emit (owned)
    json_t *platform;             // the worker's platform, or NULL (owned)
    char log_line[160];           // the "done" log line
    bool has_nonce;               // commit then reveal: a held result
    uint8_t nonce[MS_HASH_BYTES]; // what its commit hashed
    uint32_t replicas;            // its sweep's verify.replicas
} ms_outbox_result_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside the ms_outbox_* calls only.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Append N (1 to max_queued) payloads to the node's own log in one
    //  durable commit (signed, pushed to the peers); MS_OK or the store's
    //  error (MS_ERR_NOMEM and MS_ERR_STORE_FULL are worth a retry).
    int (*append)(void *arg, size_t n, const ms_store_payload_t *payloads);
    //  The task's slots and verify.replicas (ms_store_task_slots): MS_OK
    //  or the store's error.
    int (*task_slots)(void *arg, const uint8_t task_id[MS_HASH_BYTES],
                      uint32_t *n_slots, uint32_t *replicas);
    //  How many distinct operators have a COMMIT for the task, ours
    //  included (ms_store_commit_operators): MS_OK or the store's error.
    int (*commit_operators)(void *arg, const uint8_t task_id[MS_HASH_BYTES],
                            uint32_t *n_ops);
    //  The operators in the pool as the node sees them (0 when unknown).
    uint32_t (*pool_operators)(void *arg);
    //  RES is durable: the node's part (lease table, checkpoint, crash
    //  count, counters). It may take res->platform (and set it NULL); the
    //  outbox then logs res->log_line and emits res->event.
    void (*stored)(void *arg, ms_outbox_result_t *res);
    //  Publish EVENT to the node's event listeners; takes it (NULL-safe).
    void (*emit)(void *arg, json_t *event);
    //  Publish a task-class failure of RES's claim with REASON (the row
    //  cannot be stored: another node runs the task).
    void (*fail)(void *arg, const ms_outbox_result_t *res, const char *reason);
    //  The result of RES's claim is lost for store error RC: release the
    //  claim and set the task pending again (reason ms_strerror(rc)).
    void (*requeue)(void *arg, const ms_outbox_result_t *res, int rc);
} ms_outbox_iface_t;

//  Settings.
typedef struct {
    uint8_t node_id[MS_HASH_BYTES]; // this node's public key (commitments)
    const char *held_dir;           // DATA_DIR/held, made by the caller
                                    // (copied)
    size_t max_queued; // >= 1: results of one turn, one append at most
} ms_outbox_config_t;

//  Counters (ms_outbox_stats).
typedef struct {
    size_t n_queued;    // results of this turn not stored yet
    size_t n_held;      // committed results not revealed yet
    uint64_t n_reveals; // held results revealed since start
} ms_outbox_stats_t;

//  Create the outbox with CFG and IFACE (copied). It reads nothing yet
//  (ms_outbox_load does). Returns NULL when memory runs out. Caller owns
//  the result; free it with ms_outbox_destroy().
ms_outbox_t *ms_outbox_new(const ms_outbox_config_t *cfg,
                           const ms_outbox_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p. Held results' files stay for the
//  next run; queued results are dropped (flush them first).
void ms_outbox_destroy(ms_outbox_t **self_p);

//  Read the held results a previous run left in held_dir (one file per
//  task, written by ms_outbox_flush). A file that does not parse is
//  logged and left for the operator; a missing dir holds nothing. Stops
//  early when memory runs out (the rest are read at the next start).
void ms_outbox_load(ms_outbox_t *self);

//  Queue RES for this turn's block; takes its fields and zeroes *RES. A
//  result without a row (RES->row NULL: no memory for it) is lost at once
//  (iface.requeue with MS_ERR_NOMEM). When max_queued results are queued
//  already they are flushed first.
void ms_outbox_push(ms_outbox_t *self, ms_outbox_result_t *res);

//  Store the queued results as one block of ours (one append): a result
//  of a task with replicas >= 2 as a COMMIT, written to its held file
//  before and held after; others as RESULT records. When the block
//  cannot be appended each result is appended alone, so one bad row
//  loses only itself (iface.fail for a row over the limit or invalid,
//  else iface.requeue). Stored results go to iface.stored. Nothing
//  happens when none is queued.
void ms_outbox_flush(ms_outbox_t *self);

//  Reveal the held results whose task has commits of min(replicas, pool
//  operators) distinct operators, or wants no slot any more: append
//  their RESULT records (with the nonce), remove their files. Runs at
//  most every 100 ms (NOW is monotonic ms); a result whose append fails
//  for want of memory or room is tried again later. The caller keeps it
//  from running during its start grace.
void ms_outbox_reveal(ms_outbox_t *self, int64_t now);

//  True when we hold a committed result of the task (not revealed yet).
bool ms_outbox_held(const ms_outbox_t *self,
                    const uint8_t task_id[MS_HASH_BYTES]);

//  True when a result of the task is queued for this turn's block.
bool ms_outbox_queued(const ms_outbox_t *self,
                      const uint8_t task_id[MS_HASH_BYTES]);

//  The counters. The node's /status reads them from an HTTP thread under
//  its own lock, as it read its own fields before: word-sized values that
//  may be a turn stale.
ms_outbox_stats_t ms_outbox_stats(const ms_outbox_t *self);

//  Free what a result owns (row, event, platform) and zero it.
void ms_outbox_result_clear(ms_outbox_result_t *res);

//  Our result's row from the worker's report BODY (borrowed): BODY's
//  fields but peak_rss_bytes, and task_id and sweep_id (hex of TASK_ID,
//  SWEEP_ID), config (CONFIG, a reference), node_id (NODE_HEX), operator
//  (OPERATOR_NAME), fingerprint (the hex BLAKE2b of BODY's platform in
//  canonical form without calibration_gflops; null without a platform),
//  verdict "pending", verdict_revision 0, counted true. The node then
//  finishes it (kept weights; test hooks) and hands it to
//  ms_outbox_result_fill. Caller owns the result (json_decref); NULL when
//  memory runs out.
json_t *ms_outbox_row_new(const json_t *body, const ms_hash_t *task_id,
                          const ms_hash_t *sweep_id, json_t *config,
                          const char *node_hex, const char *operator_name);

//  A row's status: "ok", "diverged", else (none, or NULL ROW) failed.
ms_result_status_t ms_outbox_row_status(const json_t *row);

//  Fill *RES (task_id, sweep_id, slot, epoch and train set by the caller)
//  from ROW (the finished row, borrowed; NULL: no memory) and BODY (the
//  worker's report, borrowed): the canonical row text (NULL when memory
//  runs out: ms_outbox_push then loses the result), its status, the
//  report's train_seconds and platform (a reference, NULL when none or
//  empty), the "done" log line with the worker's peak RSS, and the
//  "result" event.
void ms_outbox_result_fill(ms_outbox_result_t *res, const json_t *row,
                           const json_t *body);

#endif
