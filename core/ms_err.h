/*  =========================================================================
    ms_err - project-wide status codes and user-facing diagnostics

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    core/ is the root of the dependency graph, so the one error enum of the
    project lives here. Functions that can fail return int: MS_OK (0) or one
    of the negative codes below. Foreign codes (MDB_*, libsodium -1,
    protobuf-c NULL, cuBLAS status) are mapped by the one class that calls
    that library and never travel further.

    Input a user must fix (a spec, a dataset, a config file, a command-line
    option) carries an ms_diag_t: where the problem is (a file path, a key
    path such as "parameters.width.values[2]", "line 12") and why.
*/
#ifndef MS_ERR_H
#define MS_ERR_H

#include <stddef.h>

typedef enum {
    MS_OK = 0,
    // generic
    MS_ERR_NOMEM = -1,       // out of memory
    MS_ERR_IO = -2,          // a read, write or fsync failed
    MS_ERR_INVALID = -3,     // malformed input (see the ms_diag_t)
    MS_ERR_NOTFOUND = -4,    // no such key, file, task or sweep
    MS_ERR_CONFLICT = -5,    // exists already with other content
    MS_ERR_EXPIRED = -6,     // lease or certificate past its time
    MS_ERR_UNSUPPORTED = -7, // understood, but not (yet) supported
    MS_ERR_RANGE = -8,       // a value out of its allowed range
    MS_ERR_INTERRUPTED = -9, // stopped on request (signal, outranked)
    MS_ERR_TIMEOUT = -10,    // a deadline passed
    // crypto / trust
    MS_ERR_BADSIG = -20,    // signature does not verify
    MS_ERR_UNTRUSTED = -21, // signer is not a member in good standing
    // store
    MS_ERR_STORE_FULL = -30, // LMDB map full and could not grow
    MS_ERR_STORE = -31,      // any other LMDB failure
    MS_ERR_STORE_NFS = -32,  // data dir on a network file system
    // devices and training
    MS_ERR_NODEVICE = -40, // backend has no usable device
    MS_ERR_BACKEND = -41,  // the backend library reported an error
    MS_ERR_DATASET = -42,  // dataset file unreadable or malformed
    // peers and HTTP
    MS_ERR_PROTOCOL = -50, // malformed or unexpected message
    MS_ERR_HTTP = -51,     // an HTTP exchange failed
} ms_err_t;

//  Return a static English description of a status code ("out of memory").
//  Unknown codes give "unknown error". Thread-safe.
const char *ms_strerror(int code);

//  Where and why an input was refused. Filled by parsers and loaders; a
//  caller prints it as "meshsweep: WHERE: REASON".
#define MS_DIAG_WHERE_MAX 512
#define MS_DIAG_REASON_MAX 512
typedef struct {
    char where[MS_DIAG_WHERE_MAX];   // file path, key path or "line N"
    char reason[MS_DIAG_REASON_MAX]; // what is wrong, in one line
} ms_diag_t;

//  Set diag (if not NULL) to WHERE and a printf-style REASON. Always
//  returns MS_ERR_INVALID so a parser can `return ms_diag_set(...)`.
int ms_diag_set(ms_diag_t *diag, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

//  Same as ms_diag_set, returning the given code instead of MS_ERR_INVALID.
int ms_diag_set_code(ms_diag_t *diag, int code, const char *where,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

//  Clear diag (if not NULL) to empty strings.
void ms_diag_clear(ms_diag_t *diag);

//  Format diag as "WHERE: REASON" (or just REASON when WHERE is empty)
//  into out (size out_size, always NUL-terminated). Returns out.
const char *ms_diag_format(const ms_diag_t *diag, char *out, size_t out_size);

#endif
