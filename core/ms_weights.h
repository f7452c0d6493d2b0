/*  =========================================================================
    ms_weights - the trained-weights file: shapes and float32 parameters,
    versioned and checksummed (what keep_weights keeps and re-evaluation
    loads)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Format, version 1 (every integer and float little-endian):

      offset  bytes          field
      0       8              magic "MSWEIGHT"
      8       4              u32 version (1)
      12      4              u32 n_sizes: layers + 1, 2..MS_WEIGHTS_MAX_SIZES
      16      4 * n_sizes    u32 sizes: inputs, each hidden width, outputs
                             (each 1..MS_WEIGHTS_MAX_WIDTH)
      ..      8              u64 n_params = sum over layers l of
                             sizes[l+1] * (sizes[l] + 1)
      ..      4 * n_params   float32 parameters, layer by layer: the
                             weights (fan_out x fan_in, row-major) then the
                             bias; the layout of ms_trainer_params, so
                             BLAKE2b-256 of these bytes is a result's
                             weights_digest
      ..      4              u32 CRC-32 (zlib) of every byte before it

    Version 2 is version 1 with two changes: n_params may exceed the
    count the sizes give (the extra floats are the norm gains and biases,
    rezero scales and batch-norm statistics whose layout the config in the
    metadata describes, ms_mlp.h), and between the parameters and the
    checksum come

      ..      4              u32 meta_len, 1..MS_WEIGHTS_MAX_META
      ..      meta_len       metadata: a JSON object in UTF-8 (no NUL):
                             {"config": the task's config JSON,
                              "input": the input transform, "classes":
                              class names, ...}; readers ignore keys they
                             do not know

    A file without metadata whose parameters the sizes account for is
    written as version 1, so plain networks keep the bytes (and blob ids)
    they had.

    Nothing follows the checksum. The CRC catches a damaged copy; what the
    bytes mean is bound elsewhere: a kept file is a blob named by the
    BLAKE2b-256 of the whole file (the row's weights_blob), and its
    parameter block hashes to the row's weights_digest.

    Thread rule: every function is reentrant.
*/
#ifndef MS_WEIGHTS_H
#define MS_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_WEIGHTS_MAGIC "MSWEIGHT"
#define MS_WEIGHTS_VERSION 1u      // sizes and parameters only
#define MS_WEIGHTS_VERSION_META 2u // with extra parameters and metadata
#define MS_WEIGHTS_MAX_META (16u << 20)
#define MS_WEIGHTS_MAX_SIZES 100001u  // layers + 1
#define MS_WEIGHTS_MAX_WIDTH 1000000u // inputs, width or outputs
#define MS_WEIGHTS_MAX_PARAMS (1ll << 31)

//  A decoded weights file. Owned by the caller of ms_weights_decode.
typedef struct {
    uint32_t n_sizes; // layers + 1
    uint32_t *sizes;  // n_sizes entries: inputs, hidden widths, outputs
    int64_t n_params; // floats in params
    float *params;    // ms_trainer_params layout
    char *meta_json;  // version 2: the metadata, NUL-terminated; else NULL
} ms_weights_t;

//  The number of parameters of a network of n_sizes layer sizes, or -1
//  when a size or the total is out of range.
int64_t ms_weights_n_params(const uint32_t *sizes, uint32_t n_sizes);

//  Encode weights into a new malloc'd buffer *out of *n bytes (caller
//  frees). meta_json NULL: version 1, and n_params must be what the
//  shapes need; otherwise version 2 with meta_json (borrowed, a JSON
//  object's text) as the metadata and n_params at least what the shapes
//  need. Returns MS_OK; MS_ERR_INVALID (diag) when n_sizes or a size is
//  out of range, n_params does not fit the shapes or the metadata is
//  empty or over MS_WEIGHTS_MAX_META; MS_ERR_NOMEM.
int ms_weights_encode(const uint32_t *sizes, uint32_t n_sizes,
                      const float *params, int64_t n_params,
                      const char *meta_json, void **out, size_t *n,
                      ms_diag_t *diag);

//  Decode n bytes. Caller owns *out (free with ms_weights_destroy).
//  Returns MS_OK; MS_ERR_INVALID with one diag line naming what is wrong
//  and where ("weights", "bad magic", "truncated: N bytes, the header
//  needs M", "checksum mismatch", "unsupported version V", ...);
//  MS_ERR_NOMEM. *out is NULL on failure.
int ms_weights_decode(const void *bytes, size_t n, ms_weights_t **out,
                      ms_diag_t *diag);

//  Free decoded weights; NULL-safe, nulls *self_p.
void ms_weights_destroy(ms_weights_t **self_p);

//  Write encoded weights to path atomically (path.tmp, fsync, rename).
//  Returns MS_OK, MS_ERR_IO (diag: the path and errno text), or an
//  encode error.
int ms_weights_write_file(const char *path, const uint32_t *sizes,
                          uint32_t n_sizes, const float *params,
                          int64_t n_params, const char *meta_json,
                          ms_diag_t *diag);

//  Write n encoded bytes (a weights file, or an ONNX model of one) to
//  path atomically (path.tmp, fsync, rename; mode 0600 before the
//  umask, as the trained weights of a private run). Returns MS_OK or
//  MS_ERR_IO (diag: the path and errno text).
int ms_weights_write_bytes(const char *path, const void *bytes, size_t n,
                           ms_diag_t *diag);

//  Read and decode the file at path (at most max_bytes; 0: no limit).
//  Returns MS_OK; MS_ERR_NOTFOUND or MS_ERR_IO (diag: path, reason);
//  MS_ERR_INVALID (diag names the path and what is wrong); MS_ERR_NOMEM.
int ms_weights_read_file(const char *path, size_t max_bytes, ms_weights_t **out,
                         ms_diag_t *diag);

#endif
