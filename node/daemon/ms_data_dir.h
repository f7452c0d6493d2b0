/*  =========================================================================
    ms_data_dir - a node's data dir: its layout and the one-node lock

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Programs" (meshsweepd --data-dir) and "Layout of node/".
    The data dir holds identity/ (the node's keys and certificate) and
    store/ (LMDB), apart so that a wiped store keeps the identity, beside
    checkpoints/, weights/ (workers' output), held/ (committed results),
    datasets/ and blobs/. The class names those places (one place for the
    layout) and makes the folders its owner asks for (ms_data_dir_make;
    mkdir -p, the last part mode 0700).

    One node per data dir: ms_data_dir_open takes a POSIX write lock on
    DATA_DIR/node.lock and holds it until ms_data_dir_destroy. Two nodes
    on one data dir would share an identity and an incarnation and train
    the same task twice. A POSIX lock (not flock) is not inherited by
    forked workers and dies with the process, so a node killed with
    SIGKILL can restart at once. The file holds the holder's pid, a hint
    for the refusal's message (and for `meshsweep pool join`, which finds
    the running node by the lock).

    The class never includes ms_node.h. One thread (the node's owner).
*/
#ifndef MS_DATA_DIR_H
#define MS_DATA_DIR_H

#include "ms_err.h"

#include <stddef.h>

typedef struct ms_data_dir ms_data_dir_t;

//  Make the data dir DIR (copied) when missing and lock it for this
//  process. Returns MS_OK with *OUT set; else *OUT stays NULL and:
//  MS_ERR_NOMEM; MS_ERR_INVALID a path too long; MS_ERR_IO a folder that
//  cannot be made, is no directory, or a lock file that cannot be opened
//  or locked; MS_ERR_CONFLICT another process holds the lock (its pid in
//  DIAG). Caller owns the result; free it with ms_data_dir_destroy().
int ms_data_dir_open(ms_data_dir_t **out, const char *dir, ms_diag_t *diag);

//  Release the lock and free; NULL-safe, nulls *self_p.
void ms_data_dir_destroy(ms_data_dir_t **self_p);

//  DIR/NAME (NAME a relative path: "identity", "store", "checkpoints",
//  "weights", "held", "datasets", "blobs/tmp") into PATH (N bytes).
//  Returns MS_OK, or MS_ERR_INVALID when it does not fit (PATH is then
//  truncated).
int ms_data_dir_path(const ms_data_dir_t *self, const char *name, char *path,
                     size_t n);

//  ms_data_dir_path, and make the folder when missing (mkdir -p, the
//  last part mode 0700). Returns MS_OK; MS_ERR_INVALID it does not fit;
//  MS_ERR_IO it cannot be made or is no directory (in DIAG).
int ms_data_dir_make(const ms_data_dir_t *self, const char *name, char *path,
                     size_t n, ms_diag_t *diag);

#endif
