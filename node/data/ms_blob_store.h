/*  =========================================================================
    ms_blob_store - content-addressed blobs on disk, within a quota

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Datasets": a blob (a dataset file, trained weights) is named
    by the BLAKE2b-256 hash of its bytes. This class keeps them:

    - copies in DATA_DIR/blobs/<64 hex>, written to DATA_DIR/blobs/tmp/,
      fsynced, hash-checked and renamed, so a blob is never under its name
      half written; tmp/ is emptied at open (what a crash left);
    - registered files: an EXISTING local file (Debian's fashion-mnist)
      recorded by hash without a copy, in DATA_DIR/blobs/registered.json
      (hash -> path, size, mtime); re-checked by size + mtime before each
      use and re-hashed when those changed (dropped when the hash moved);
    - a quota over the copies (registered files cost nothing), with LRU
      eviction of unpinned copies; a pin (a sweep using the blob) keeps it.

    A path named in a gossiped record is never opened here: registration
    is a local decision of the node (its own dataset files, its builtins).

    Thread rule: an ms_blob_store_t belongs to one thread (the node actor).
    Hashing (commit, register) reads the whole file: call those where a
    pause of a few tens of ms per 30 MB is acceptable.
*/
#ifndef MS_BLOB_STORE_H
#define MS_BLOB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"
#include "ms_hash.h"

//  Counters for /metrics and tests.
typedef struct {
    uint64_t used_bytes;  // bytes of copies held (what the quota counts)
    uint64_t quota_bytes; // the quota (0: no limit)
    size_t n_copies;      // blobs held as copies under blobs/
    size_t n_registered;  // registered local files
    uint64_t evictions;   // copies removed to make room
    uint64_t rehashes;    // registered files re-hashed after a change
    uint64_t commits;     // temp files turned into blobs
    uint64_t mismatches;  // temp files refused: hash differed
} ms_blob_store_stats_t;

typedef struct ms_blob_store ms_blob_store_t;

//  Open (creating data_dir, blobs/ and blobs/tmp/ when absent; the parent
//  of data_dir must exist) the blob store under data_dir/blobs with
//  a quota of quota_bytes for copies (0: no limit). Removes every file in
//  blobs/tmp/ (left by a crash mid-fetch) and ignores files in blobs/
//  whose name is not 64 lowercase hex characters. Loads
//  blobs/registered.json. Caller owns *out; free it with
//  ms_blob_store_destroy(). Returns MS_OK; MS_ERR_IO when a directory
//  cannot be created or read (diag: the path, the errno text);
//  MS_ERR_INVALID when registered.json is malformed (diag: the file and
//  what is wrong; delete it to start again); MS_ERR_NOMEM. *out is NULL
//  on failure.
int ms_blob_store_open(ms_blob_store_t **out, const char *data_dir,
                       uint64_t quota_bytes, ms_diag_t *diag);

//  Free the store (files stay on disk); NULL-safe, nulls *self_p.
void ms_blob_store_destroy(ms_blob_store_t **self_p);

//  Record the existing local file at path (kept where it is, never
//  copied) as the blob of its hash, written to *hash. Saved in
//  registered.json at once. Registering the same path again re-hashes it
//  and replaces the entry. Returns MS_OK; MS_ERR_IO when the file cannot
//  be read or the index written (diag: path, reason); MS_ERR_INVALID
//  when path is not a regular file (diag).
int ms_blob_store_register_file(ms_blob_store_t *self, const char *path,
                                ms_hash_t *hash, ms_diag_t *diag);

//  Register every file of a built-in dataset ("fashion-mnist"; paths from
//  ms_dataset_builtin_paths, so $MESHSWEEP_DATASETS_DIR first, then
//  /usr/share/datasets). With hashes non-NULL, writes the four hashes
//  (train images, train labels, test images, test labels). Returns MS_OK;
//  MS_ERR_NOTFOUND when the dataset is not installed; MS_ERR_INVALID for
//  an unknown name; MS_ERR_IO as register_file; diag says which.
int ms_blob_store_register_builtin(ms_blob_store_t *self, const char *name,
                                   ms_hash_t hashes[4], ms_diag_t *diag);

//  True when the blob is held: a copy, or a registered file whose size
//  and mtime are unchanged (or whose re-hash still matches).
bool ms_blob_store_has(ms_blob_store_t *self, const ms_hash_t *hash);

//  Size in bytes of a held blob into *size. Returns MS_OK or
//  MS_ERR_NOTFOUND.
int ms_blob_store_size(ms_blob_store_t *self, const ms_hash_t *hash,
                       uint64_t *size);

//  The local path of a held blob (the copy, or the registered file) into
//  *path, malloc'd (caller frees). Marks the blob used (LRU). Returns
//  MS_OK; MS_ERR_NOTFOUND when not held; MS_ERR_NOMEM. *path is NULL on
//  failure.
int ms_blob_store_path(ms_blob_store_t *self, const ms_hash_t *hash,
                       char **path);

//  Read len bytes at offset of a held blob into buf (for serving chunks).
//  offset + len must not pass the end. Returns MS_OK; MS_ERR_NOTFOUND
//  when not held; MS_ERR_RANGE when offset + len > size; MS_ERR_IO when
//  the read fails or comes up short (a registered file that shrank).
int ms_blob_store_read(ms_blob_store_t *self, const ms_hash_t *hash,
                       uint64_t offset, size_t len, void *buf);

//  Store n bytes (data may be NULL when n is 0) as a blob; its hash into
//  *hash (trained weights, tests). Same durability and quota as commit.
//  Returns MS_OK (also when held already); MS_ERR_STORE_FULL when the
//  quota cannot make room; MS_ERR_IO.
int ms_blob_store_put(ms_blob_store_t *self, const void *data, size_t n,
                      ms_hash_t *hash);

//  Pin / unpin a blob (counted: n pins need n unpins). A pinned copy is
//  never evicted. A hash not held yet may be pinned (a sweep pins its
//  data before fetching it). Unpin of a hash not pinned: MS_ERR_NOTFOUND.
//  Pin returns MS_OK or MS_ERR_NOMEM.
int ms_blob_store_pin(ms_blob_store_t *self, const ms_hash_t *hash);
int ms_blob_store_unpin(ms_blob_store_t *self, const ms_hash_t *hash);

//  Create a temp file in blobs/tmp/ for a blob of size bytes being
//  fetched: *fd open for writing (pwrite at offsets; caller closes it),
//  *tmp_path malloc'd (caller frees). Returns MS_OK; MS_ERR_STORE_FULL
//  when size exceeds the quota; MS_ERR_IO. On failure *fd is -1 and
//  *tmp_path NULL.
int ms_blob_store_tmp_create(ms_blob_store_t *self, uint64_t size, int *fd,
                             char **tmp_path);

//  Turn a complete temp file (its fd closed or not: the file is reopened)
//  into the blob of hash: fsync, hash check, evict LRU unpinned copies
//  until it fits, rename to blobs/<hex>, fsync the directory. The temp
//  file is consumed either way (renamed or removed). Returns MS_OK;
//  MS_ERR_INVALID when the content hash differs (counted in mismatches);
//  MS_ERR_STORE_FULL when pinned copies leave no room; MS_ERR_IO.
int ms_blob_store_tmp_commit(ms_blob_store_t *self, const ms_hash_t *hash,
                             const char *tmp_path);

//  Remove a temp file that will not be committed (a failed fetch).
void ms_blob_store_tmp_discard(ms_blob_store_t *self, const char *tmp_path);

//  Copy the counters into *out.
void ms_blob_store_stats(ms_blob_store_t *self, ms_blob_store_stats_t *out);

#endif
