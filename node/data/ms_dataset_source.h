/*  =========================================================================
    ms_dataset_source - which datasets this node has ready for its sweeps,
    and how the missing ones come from the peers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Layout of node/" (node/data: ms_dataset_source) and
    "Datasets". The class owns, per sweep the node has asked about, the
    workers' dataset object (or why there is none), the bytes of its
    files, and the state of its fetch; the datasets directory
    (DATA_DIR/datasets/<sweep>.json, the workers' object with the paths
    of a file dataset, kept across restarts); and the node's answers to
    blob uploads and blob questions.

    Where a sweep's dataset comes from, decided on the first ask:
    - a built-in name (fashion-mnist): Debian's files, when the package is
      here; in a pool only when their hash is the one of the sweep's
      DATASET record (a lookup of the record under that hash is the
      comparison), else the sweep is left to the nodes whose copy
      matches;
    - a file dataset: its dataset file (written by the submission, or by
      this class once its blobs are held). In a pool a missing file is
      looked for again at most once a second, and the files are fetched
      by hash: the DATASET record is read from the store (roles, sizes
      checked against max_dataset_bytes and the sweep's train hash), its
      blobs are pinned, and the node is asked to fetch each blob not held
      from the live linked peers. When every blob is held (each hash
      checked by the blob store before the blob got its name), the
      workers' object is built from the blob paths, saved as the dataset
      file, and the node hears that the sweep's dataset is ready. A
      failed fetch is tried again MS_DATASET_SOURCE_RETRY_MS later. No
      path from a record is ever opened: only blob store paths of
      verified hashes.

    Who drives the fetch. The node owns the blob store and ms_blob_fetch
    (one fetch serves this class and ms_reeval's weights, and its one done
    callback and the mesh's blob messages reach the node); this class asks
    for a blob through ms_dataset_source_iface_t.fetch and hears the end
    through ms_dataset_source_blob_done. That keeps the class free of the
    mesh and the fetch's transport, and lets a test fake both.

    The store is borrowed and only read (sweeps, DATASET records), as
    ms_submit and ms_reeval read it: a wrapper in the iface would only
    forward. The blob store is the node's, asked for on each use
    (iface.blobs), since a node joins a pool (and gets one) or falls back
    to alone at run time; a node with a blob store is in a pool.

    Thread rule: loop thread only, as the blob store is. HTTP threads
    never call it: an upload (PUT /api/v1/blobs/HASH) and the blob
    questions of the API (which blobs are held, the file of a blob) are
    queued to the loop as ms_node_command requests, and the loop answers
    with ms_dataset_source_blob_put, _blobs_held and _blob_file. The
    functions without SELF (hash, roles, the workers' object of blobs)
    are pure and thread-safe apart from the blob store they are given.
*/
#ifndef MS_DATASET_SOURCE_H
#define MS_DATASET_SOURCE_H

#include "ms_blob_fetch.h"
#include "ms_blob_store.h"
#include "ms_clock.h"
#include "ms_err.h"
#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_wire.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_dataset_source ms_dataset_source_t;

//  Roles of a file dataset's files (the keys of the workers' dataset
//  object): "train", "test" (IDX images or CSV) and, for IDX,
//  "train_labels", "test_labels", in that order.
#define MS_DATASET_SOURCE_FILE_ROLES 4

#define MS_DATASET_SOURCE_RETRY_MS 3000 // a failed fetch again after

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside the ms_dataset_source_* calls;
//  only ready may call back into the class.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  The node's blob store (borrowed for the call), or NULL when it
    //  keeps none (in no pool).
    ms_blob_store_t *(*blobs)(void *arg);
    //  The live linked peers, in the node's peer-table order, as a malloc'd
    //  array in *out (caller frees; NULL when there is no memory). Returns
    //  how many.
    size_t (*live_peers)(void *arg, uint8_t (**out)[MS_BLOB_PEER_ID_BYTES]);
    //  Start fetching the blob HASH of SIZE bytes from PEERS (N_PEERS >= 1;
    //  borrowed for the call) at NOW (monotonic ms); its end comes back
    //  through ms_dataset_source_blob_done. MS_OK, or the fetch's error
    //  (then no end comes back).
    int (*fetch)(void *arg, const ms_hash_t *hash, uint64_t size,
                 const uint8_t (*peers)[MS_BLOB_PEER_ID_BYTES], size_t n_peers,
                 int64_t now);
    //  The dataset of SWEEP_ID became ready (its blobs held, its object
    //  built): the node's work changed. May be NULL.
    void (*ready)(void *arg, const ms_hash_t *sweep_id);
} ms_dataset_source_iface_t;

//  Settings.
typedef struct {
    const char *datasets_dir;  // DATA_DIR/datasets, an existing dir
                               // (copied; shorter than PATH_MAX)
    int64_t max_dataset_bytes; // >= 1: pool limit of a dataset's bytes
    const ms_clock_t *clock;   // monotonic ms of the retries; NULL:
                               // ms_clock_system() (borrowed)
} ms_dataset_source_config_t;

//  What the class knows of one sweep's dataset (ms_dataset_source_sweep).
typedef struct {
    const json_t *dataset; // the workers' object, or NULL when not ready
    const char *error;     // why not (NULL when ready, or not known)
    int64_t bytes;         // bytes of its files (0 when unknown)
    bool fetching;         // blob fetches run for its files
} ms_dataset_source_sweep_t;

//  Counters (ms_dataset_source_stats; the node's /metrics names them).
typedef struct {
    uint64_t n_fetched;        // datasets made ready from fetched blobs
    uint64_t n_fetches_asked;  // datasets whose files were asked of peers
    uint64_t n_local;          // built-in copies matching their record
    uint64_t n_local_mismatch; // built-in copies whose hash differed
    uint64_t n_uploads;        // blobs uploaded through the API
} ms_dataset_source_stats_t;

//  Create the dataset source over STORE (borrowed, read only; it outlives
//  the object) with CFG and IFACE (copied). Returns NULL when memory runs
//  out or datasets_dir does not fit PATH_MAX. Caller owns the result;
//  free it with ms_dataset_source_destroy().
ms_dataset_source_t *
ms_dataset_source_new(ms_store_t *store, const ms_dataset_source_config_t *cfg,
                      const ms_dataset_source_iface_t *iface);

//  Free it and what it holds of each sweep; NULL-safe, nulls *self_p.
//  Running fetches are the node's (they end with its ms_blob_fetch);
//  pins stay with the blob store.
void ms_dataset_source_destroy(ms_dataset_source_t **self_p);

//  What the class knows of SWEEP_ID's dataset, into *OUT (pointers
//  borrowed until the next call on SELF). The first ask of a sweep
//  decides where its dataset comes from (see above; a built-in copy is
//  hashed and counted then); in a pool, a missing dataset file is looked
//  for again at most once a second. Returns false only when memory runs
//  out (then *OUT is zeroed).
bool ms_dataset_source_sweep(ms_dataset_source_t *self,
                             const uint8_t sweep_id[MS_HASH_BYTES],
                             ms_dataset_source_sweep_t *out);

//  The workers' dataset object of SWEEP_ID (as ms_dataset_source_sweep),
//  or NULL when it is not ready. Borrowed until the next call on SELF.
const json_t *ms_dataset_source_dataset(ms_dataset_source_t *self,
                                        const ms_hash_t *sweep_id);

//  Fetch SWEEP_ID's dataset files from the live linked peers (see
//  above), unless it is ready, fetching, tried less than
//  MS_DATASET_SOURCE_RETRY_MS ago, or the node is in no pool. Becomes
//  ready at once when its blobs are all held already. A dataset record
//  missing or out of contract, a failed start or no peer is logged and
//  tried again later.
void ms_dataset_source_fetch(ms_dataset_source_t *self,
                             const ms_hash_t *sweep_id);

//  The scheduler found SWEEP_ID's dataset missing: ms_dataset_source_fetch,
//  once until that fetch ends or its try is over (asked again on later
//  scans while it cannot start).
void ms_dataset_source_want(ms_dataset_source_t *self,
                            const uint8_t sweep_id[MS_HASH_BYTES]);

//  A blob fetch ended (the node's ms_blob_fetch done callback): the
//  sweeps fetching HASH become ready when it was their last file, or,
//  when STATUS is not MS_OK, are tried again MS_DATASET_SOURCE_RETRY_MS
//  later.
void ms_dataset_source_blob_done(ms_dataset_source_t *self,
                                 const ms_hash_t *hash, int status);

//  An uploaded file TMP_PATH (consumed: renamed or removed) becomes the
//  blob HASH once its bytes hash to it. Returns MS_OK; MS_ERR_UNSUPPORTED
//  (no blob store: in no pool); MS_ERR_INVALID (the bytes hash to
//  something else: nothing is kept, the blobs held stay); MS_ERR_STORE_FULL
//  (the quota is full of pinned blobs); the blob store's other errors.
//  Each with diag: where ("blobs" or "body") and the reason.
int ms_dataset_source_blob_put(ms_dataset_source_t *self, const ms_hash_t *hash,
                               const char *tmp_path, ms_diag_t *diag);

//  Which of the blobs named in TEXT (a JSON array of hex hashes; NULL:
//  none; entries that are not hashes are skipped) this node holds, as
//  malloc'd JSON text {hex: bool} in *SUMMARY (caller frees). MS_OK or
//  MS_ERR_NOMEM (then *SUMMARY is NULL).
int ms_dataset_source_blobs_held(ms_dataset_source_t *self, const char *text,
                                 char **summary);

//  The file of the held blob HASH, as malloc'd JSON text {"path": PATH}
//  in *SUMMARY (caller frees). MS_OK; MS_ERR_NOTFOUND (not held, or in no
//  pool); MS_ERR_NOMEM.
int ms_dataset_source_blob_file(ms_dataset_source_t *self,
                                const ms_hash_t *hash, char **summary);

//  The path of SWEEP_ID's dataset file, DATASETS_DIR/<hex>.json, into OUT
//  (N bytes; PATH_MAX + 80 always suffice).
void ms_dataset_source_path(const ms_dataset_source_t *self,
                            const ms_hash_t *sweep_id, char *out, size_t n);

//  Write DATASET (the workers' object) as SWEEP_ID's dataset file:
//  compact JSON with sorted keys, written to a temporary file, fsync'd
//  and renamed (mode 0600); then a sweep already asked about has it as
//  its dataset (a cached "unknown dataset" is forgotten; a reference is
//  taken). Returns MS_OK; MS_ERR_IO or MS_ERR_NOMEM with diag naming the
//  path and the reason (nothing cached then).
int ms_dataset_source_save(ms_dataset_source_t *self, const ms_hash_t *sweep_id,
                           json_t *dataset, ms_diag_t *diag);

//  Counters, into *OUT.
void ms_dataset_source_stats(const ms_dataset_source_t *self,
                             ms_dataset_source_stats_t *out);

//  The content hash of a sweep's dataset D into *OUT: BLAKE2b over the
//  hashes of its files (a built-in dataset's four files are hashed here,
//  so nodes with the same Debian package see the same hash). FILES (may
//  be NULL): for a built-in dataset, its four files (role, size, hash)
//  for the dataset record. Returns MS_OK; the built-in lookup's or file
//  hash's error (MS_ERR_NOTFOUND, MS_ERR_IO) when a file cannot be read.
int ms_dataset_source_hash(const ms_spec_dataset_t *d, ms_hash_t *out,
                           ms_wire_dataset_file_t files[4]);

//  The role index (0 .. MS_DATASET_SOURCE_FILE_ROLES - 1) of the role
//  NAME (N bytes, not terminated), -1 when it names none.
int ms_dataset_source_file_role(const char *name, size_t n);

//  The name of role index ROLE (0 .. MS_DATASET_SOURCE_FILE_ROLES - 1),
//  a static string.
const char *ms_dataset_source_role_name(int role);

//  The workers' dataset object of a file dataset held as blobs in BLOBS:
//  the blob paths by role of FH where HAVE (train and test at least), the
//  CSV options CSV (may be NULL; label defaults to "label") and the
//  train/test hashes (the worker re-checks them). Pins the blobs when PIN.
//  *OUT gets the new object (caller json_decref's it), *BYTES the files'
//  total size. Returns MS_OK; the blob store's error (MS_ERR_NOTFOUND
//  when a blob is not held); MS_ERR_NOMEM.
int ms_dataset_source_blob_object(
    ms_blob_store_t *blobs, const ms_hash_t fh[MS_DATASET_SOURCE_FILE_ROLES],
    const bool have[MS_DATASET_SOURCE_FILE_ROLES], const json_t *csv, bool pin,
    json_t **out, int64_t *bytes);

#endif
