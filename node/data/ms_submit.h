/*  =========================================================================
    ms_submit - a sweep spec becomes records: the submission path

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Layout of node/" (ms_submit: spec -> records) and
    "Datasets". A submission is parsed and expanded (ms_spec_parse), held
    to the pool's limits (max_tasks_per_sweep, max_dataset_bytes), its
    dataset checked (a built-in name resolves; a local runner's files, or
    the files uploaded as blobs, load with the workers' loader, so a bad
    file is refused at submission with the loader's diag and nothing is
    stored), and then stored as one block of records of ours: the SWEEP
    record (the spec and its expanded task list: other nodes never
    re-expand) and the DATASET record (name, files, sizes and the BLAKE2b
    content hash every node derives from the spec). A file dataset's
    worker object (paths by role) is written first to
    DATASETS_DIR/<sweep_id>.json (0600), so a stored sweep always finds
    its files, also after a restart. The same spec again is "existed"
    (nothing written); of a cancelled sweep it is reopened (a sweep-control
    record).

    The node creates the class over its store and its dataset source
    (ms_dataset_source: the dataset files, the dataset hash, the file
    roles, the workers' object of blobs) and hands it what it needs of the
    node through ms_submit_iface_t (append a record block, the reopen
    control, its verbose log, its blob store); the class never calls into
    ms_node. Loop thread only.
*/
#ifndef MS_SUBMIT_H
#define MS_SUBMIT_H

#include "ms_blob_store.h"
#include "ms_clock.h"
#include "ms_dataset_source.h"
#include "ms_err.h"
#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_wire.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_submit ms_submit_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside ms_submit_spec only.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Append the N (1 or 2) PAYLOADS to the node's own log as one durable
    //  commit (signed, pushed to the peers); MS_OK or the store's error.
    int (*append)(void *arg, size_t n, const ms_store_payload_t *payloads);
    //  Publish a reopen sweep-control record of SWEEP_ID (the same spec
    //  of a cancelled sweep came again); MS_OK or the store's error.
    int (*reopen)(void *arg, const ms_hash_t *sweep_id);
    //  SWEEP_ID is stored (FRESH: its records were written just now; else
    //  it existed, maybe reopened): the node's work changed.
    void (*stored)(void *arg, const ms_hash_t *sweep_id, bool fresh);
    //  The node's blob store (borrowed for the call), or NULL when it
    //  keeps none (in no pool). May be NULL (never any).
    ms_blob_store_t *(*blobs)(void *arg);
} ms_submit_iface_t;

//  Settings.
typedef struct {
    int64_t max_tasks_per_sweep; // >= 1: pool limit of tasks of a sweep
    int64_t max_dataset_bytes;   // >= 1: pool limit of a dataset's bytes
    const ms_clock_t *clock;     // created_at_ms of sweep records (wall);
                                 // NULL: ms_clock_system() (borrowed)
} ms_submit_config_t;

//  Create the submission path over STORE and DATASETS (borrowed; they
//  outlive the object: a file dataset's dataset file is written through
//  DATASETS) with CFG and IFACE (copied). Returns NULL when memory runs
//  out. Caller owns the result; free it with ms_submit_destroy().
ms_submit_t *ms_submit_new(ms_store_t *store, ms_dataset_source_t *datasets,
                           const ms_submit_config_t *cfg,
                           const ms_submit_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p.
void ms_submit_destroy(ms_submit_t **self_p);

//  Submit a sweep spec (YAML or JSON text of N bytes): parse and expand it
//  (unless PARSED, the same text already parsed by ms_spec_parse with
//  default options, taken either way; NULL: parse it here), check its
//  dataset and limits, write a file dataset's dataset file, and store the
//  sweep and dataset records (one block). LOCAL_FILES: the caller is a
//  local runner allowed to read dataset file paths named in the spec
//  (`meshsweep run`). UPLOADED (may be NULL; not with LOCAL_FILES): the
//  uploaded files of a file dataset, "ROLE:HEX,..." with the roles above,
//  each a blob the node holds; the blobs are pinned once the sweep is
//  stored. *SWEEP_ID (may be NULL) gets the sweep id; *EXISTED (may be
//  NULL) is true when the same spec was stored before (nothing new
//  written; a cancelled one is reopened). SUMMARY_JSON (may be NULL): on
//  MS_OK a malloc'd JSON object text {"sweep_id","existed","reopened",
//  "n_tasks","warnings":[...],"name"} (caller frees); NULL otherwise.
//  Returns MS_OK; MS_ERR_INVALID / MS_ERR_UNSUPPORTED (bad spec, limits,
//  files: diag has the key path and the reason; nothing stored);
//  MS_ERR_NOTFOUND (dataset missing, or a file not uploaded: diag names
//  it); MS_ERR_IO (a local file unreadable, or the dataset file cannot be
//  written: diag has the path); MS_ERR_RANGE (the sweep record would be
//  too big: diag "parameters" says how many tasks fit); MS_ERR_CONFLICT
//  (another spec stored under the same id: diag "store"); the append's
//  error (diag "store") or the reopen's (diag the sweep id); MS_ERR_NOMEM.
int ms_submit_spec(ms_submit_t *self, const char *spec_text, size_t n,
                   ms_spec_t *parsed, bool local_files, const char *uploaded,
                   ms_hash_t *sweep_id, bool *existed, char **summary_json,
                   ms_diag_t *diag);

#endif
