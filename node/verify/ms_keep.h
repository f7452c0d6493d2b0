/*  =========================================================================
    ms_keep - the weights of our own training results: keep_weights and
    weights_out_dir

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification" (keep_weights) and docs/VERIFICATION.md
    "keep_weights": a training task runs with a weights path; its worker
    writes the final weights there (core/ms_weights.h). When the result
    is ok, ms_keep_result applies the sweep's keep_weights (read from its
    spec once per sweep), stores the file as a blob, names it in the row
    (weights_blob, weights_bytes) and has ms_reeval pin it;
    ms_keep_export copies it to weights_out_dir as TASK.weights and
    TASK.onnx (meshsweep run --keep-weights).

    The node creates the object with its re-evaluator (in a pool) and
    hands it what it needs through ms_keep_iface_t; the class never calls
    into ms_node. Loop thread only.
*/
#ifndef MS_KEEP_H
#define MS_KEEP_H

#include "ms_blob_store.h"
#include "ms_err.h"
#include "ms_hash.h"
#include "ms_reeval.h"
#include "ms_store.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_keep ms_keep_t;

//  What the class needs of its node: called on the loop thread, from
//  inside the ms_keep_* calls only, with ARG.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
} ms_keep_iface_t;

//  Create it over STORE, BLOBS and REEVAL (borrowed; they outlive it)
//  with IFACE (copied). Returns NULL when memory runs out. Caller owns
//  the result; free it with ms_keep_destroy().
ms_keep_t *ms_keep_new(ms_store_t *store, ms_blob_store_t *blobs,
                       ms_reeval_t *reeval, const ms_keep_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p. The pins it asked for stay with
//  ms_reeval.
void ms_keep_destroy(ms_keep_t **self_p);

//  The sweep's keep_weights (an ms_keep_weights_t), read from its spec
//  the first time it is asked; MS_KEEP_WEIGHTS_SAMPLED when the sweep is
//  not in the store then (and after), or when memory runs out.
int ms_keep_policy(ms_keep_t *self, const ms_hash_t *sweep_id);

//  Our training result of TASK_ID in SWEEP_ID (ROW: its row being
//  built): when the row's status is ok and the sweep's keep_weights
//  wants it (best: only a better value of the sweep's metric than the
//  best kept so far, whose pin it then replaces), store the file at
//  WEIGHTS_PATH as a blob, pin it through ms_reeval and set the row's
//  weights_blob and weights_bytes. The file is removed in every case.
//  Returns true when the weights were kept; a failure is logged.
bool ms_keep_result(ms_keep_t *self, const ms_hash_t *task_id,
                    const ms_hash_t *sweep_id, const char *weights_path,
                    json_t *row);

//  Copy the weights file at WEIGHTS_PATH of an ok result (ROW's status)
//  to OUT_DIR/NAME.weights and OUT_DIR/NAME.onnx; REMOVE: remove the
//  file once read (no blob store will take it). Returns MS_OK (written,
//  or nothing to export: not ok, or no readable file), or the error of
//  the write or the ONNX encoding, with DIAG filled.
int ms_keep_export(const char *weights_path, const json_t *row, bool remove,
                   const char *out_dir, const char *name, ms_diag_t *diag);

//  The file the worker of our training task TASK_ID writes its final
//  weights to: WEIGHTS_DIR/<task id hex>.weights, into PATH (N bytes;
//  truncated when shorter). The runner hands it to the worker, and
//  ms_keep_own reads it.
void ms_keep_weights_path(const char *weights_dir, const ms_hash_t *task_id,
                          char *path, size_t n);

//  Our training result of TASK_ID in SWEEP_ID is in (ROW: its row being
//  built), its worker's weights at ms_keep_weights_path(WEIGHTS_DIR):
//  with OUT_DIR (weights_out_dir; NULL: none) export them there as
//  TASK.weights and TASK.onnx (ms_keep_export), then with SELF keep them
//  (ms_keep_result) or, SELF NULL (no blob store: a node alone), remove
//  the file. *KEPT (may be NULL) says whether they were kept. Returns
//  MS_OK, or the export's error with DIAG filled: a failed export is
//  only reported (the keep still runs; the result stands).
int ms_keep_own(ms_keep_t *self, const char *weights_dir, const char *out_dir,
                const ms_hash_t *task_id, const ms_hash_t *sweep_id,
                json_t *row, bool *kept, ms_diag_t *diag);

#endif
