/*  =========================================================================
    ms_results - result rows of a sweep read from a store, and their text
    forms (table, CSV); sweep lookup by id prefix

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Needs no node: `meshsweep results --data-dir DIR` opens the store
    read-only and calls these; the HTTP API calls them from its threads
    (each call uses its own read transaction).

    A row is the JSON object of DESIGN.md "result row": task_id, sweep_id,
    config (canonical config object), node_id, operator, status, error,
    epochs, train_seconds, seconds_per_epoch, val_accuracy, val_loss,
    test_accuracy, test_loss (null when NaN), params, platform,
    fingerprint, weights_digest, verdict, verdict_revision, counted, curve,
    grad_norms (rows of engines before it lack it). Rows come in task index
   order. The default listing is the results table: per task the results that
   fill its slots (verify.replicas). The _all variants with ALL true add each
   task's extra replicas (a node outranked on its slot that finished anyway),
   after its rows, with "counted": false and "replica": "extra"; they never
   enter the table, its count, its digest or the analysis.
*/
#ifndef MS_RESULTS_H
#define MS_RESULTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "ms_err.h"
#include "ms_hash.h"
#include "ms_store.h"

#define MS_RESULTS_PREFIX_MIN 12 // shortest id prefix accepted

//  The top-level members a result row can have (DESIGN.md "result row",
//  and those the listings add: replica, operators, n_results), in the
//  row's order; NULL-terminated. The names GET .../results?fields= takes.
extern const char *const ms_results_row_members[];

//  Every result row of a sweep, as a new JSON array of row objects
//  (caller owns *rows: json_decref). A sweep with no results yet gives an
//  empty array. Returns MS_OK; MS_ERR_NOTFOUND (no such sweep: diag);
//  MS_ERR_STORE; MS_ERR_NOMEM.
int ms_results_rows(ms_store_t *store, const ms_hash_t *sweep_id, json_t **rows,
                    ms_diag_t *diag);

//  One page of rows: up to limit rows (limit <= 0: all) whose task index
//  comes after the cursor `after` (NULL or "" = from the start). *next
//  gets a malloc'd cursor for the next page, or NULL when this page is the
//  last (caller frees). Returns as ms_results_rows, plus MS_ERR_INVALID
//  for a malformed cursor.
int ms_results_page(ms_store_t *store, const ms_hash_t *sweep_id,
                    const char *after, int limit, json_t **rows, char **next,
                    ms_diag_t *diag);

//  As ms_results_rows / ms_results_page; with ALL, each task's extra
//  replicas follow its rows, flagged "replica": "extra" and "counted":
//  false (a page still ends at a task boundary).
int ms_results_rows_all(ms_store_t *store, const ms_hash_t *sweep_id, bool all,
                        json_t **rows, ms_diag_t *diag);
int ms_results_page_all(ms_store_t *store, const ms_hash_t *sweep_id, bool all,
                        const char *after, int limit, json_t **rows,
                        char **next, ms_diag_t *diag);

//  Flags of ms_results_page_ex.
#define MS_RESULTS_ALL 1u // extra replicas too (as the _all variants)
#define MS_RESULTS_VERIFIED                                                    \
    2u // only verified rows: rows of verified tasks
       // whose result is in the agreeing set, extra
       // replicas included (with replicas 1,
       // `accepted` is not verified)
#define MS_RESULTS_BY_TASK                                                     \
    4u // one row per task: the lower-median counted
       // result, with "operators" (the operators
       // behind the verdict) and "n_results"

//  As ms_results_page_all, with FLAGS (MS_RESULTS_*). Every row carries
//  the task's verdict from the store: "verdict", "verdict_revision",
//  "counted", "operator" (the producer's operator as verdicts count it)
//  and "verdict_operators" (the operators of the agreeing set, sorted).
int ms_results_page_ex(ms_store_t *store, const ms_hash_t *sweep_id,
                       unsigned flags, const char *after, int limit,
                       json_t **rows, char **next, ms_diag_t *diag);

//  As ms_results_page_ex, each stored row parsed for the top-level
//  members named in KEEP only (a NULL-terminated list; NULL: all), plus
//  task_id and node_id always, and the verdict fields laid over it; a
//  failed task's synthesized row is whole. The members left out are never
//  parsed, which is where a big listing's time goes. KEEP is borrowed for
//  the call. Returns as ms_results_page_ex.
int ms_results_page_fields(ms_store_t *store, const ms_hash_t *sweep_id,
                           unsigned flags, const char *const *keep,
                           const char *after, int limit, json_t **rows,
                           char **next, ms_diag_t *diag);

//  Find the top-level member KEY of the JSON object text JSON (N bytes;
//  a stored row): *value points at its value's text inside JSON and
//  *value_len is its length (borrowed; no parse, no allocation; a key
//  written with escapes does not match). Returns MS_OK; MS_ERR_NOTFOUND
//  (no such member); MS_ERR_INVALID (the text is not a JSON object).
int ms_results_row_member(const char *json, size_t n, const char *key,
                          const char **value, size_t *value_len);

//  The row of NODE_ID's result of TASK_ID as the results listing gives it
//  (ms_results_page_ex with MS_RESULTS_ALL): the stored row with the
//  task's verdict laid over it, flagged "replica": "extra" and "counted":
//  false when it is an extra replica. *row (caller owns: json_decref) is
//  NULL when the store holds no counted result of that node for the task
//  (a later result of the same node, a refused one). One read txn per
//  call. Returns MS_OK; MS_ERR_STORE; MS_ERR_NOMEM.
int ms_results_task_row(ms_store_t *store, const uint8_t *task_id,
                        const uint8_t *node_id, json_t **row);

//  The rows as a fixed-width text table for a terminal: short task id,
//  the architecture (hidden sizes), activation, optimizer, learning rate,
//  seed, status, epochs, val and test accuracy, seconds per epoch.
//  Caller frees the result (NULL only when memory runs out).
char *ms_results_format_table(const json_t *rows);

//  The rows as CSV with a header: the top-level scalar fields, then each
//  config key flattened as "config.KEY" (lists written as "100;10", so
//  verdict_operators reads "alice;bob"), platform and curve omitted
//  (fingerprint is kept). RFC 4180 quoting. Columns: task_id, sweep_id,
//  node_id, operator, status, error, epochs, train_seconds,
//  seconds_per_epoch, val_accuracy, val_loss, test_accuracy, test_loss,
//  params, fingerprint, weights_digest, verdict, verdict_revision,
//  verdict_operators, counted, config.*.
//  Caller frees the result (NULL only when memory runs out).
char *ms_results_format_csv(const json_t *rows);

//  Resolve a sweep id given as 64 hex characters or a unique prefix of at
//  least MS_RESULTS_PREFIX_MIN (12) hex characters. Returns MS_OK with
//  *out set; MS_ERR_INVALID (not hex, too short: diag); MS_ERR_NOTFOUND
//  (no sweep: diag); MS_ERR_CONFLICT (prefix matches several sweeps:
//  diag); MS_ERR_STORE.
int ms_results_find_sweep(ms_store_t *store, const char *hex_or_prefix,
                          ms_hash_t *out, ms_diag_t *diag);

#endif
