/*  =========================================================================
    ms_hash - content hashes: BLAKE2b-256 of bytes, streams and files

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every id in meshsweep is a content hash (DESIGN.md "Sweep
    specification": sweep_id, task_id; "Datasets": file hashes; blobs and
    weight digests). H is BLAKE2b with a 32-byte digest and no key (RFC
    7693), computed by libsodium's crypto_generichash. Hashes are written
    as 64 lowercase hex characters; the short form is the first 12.

    All functions are thread-safe: sodium_init() is called once, through
    pthread_once, before the first use of libsodium.
*/
#ifndef MS_HASH_H
#define MS_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_HASH_BYTES 32     // BLAKE2b-256 digest size
#define MS_HASH_HEX_LEN 64   // lowercase hex characters, without the NUL
#define MS_HASH_SHORT_LEN 12 // hex characters of the short display form

//  A digest: a plain value, copy it freely.
typedef struct {
    uint8_t bytes[MS_HASH_BYTES]; // BLAKE2b-256 output
} ms_hash_t;

//  An incremental hasher: a plain value that wraps libsodium's
//  crypto_generichash_state (kept opaque here so that users of this
//  header need not include sodium.h). Init, update any number of times,
//  final once. Its storage is 64-byte aligned as libsodium requires.
typedef struct {
    _Alignas(64) uint8_t opaque_[512]; // crypto_generichash_state
} ms_hasher_t;

//  Hash n bytes of data (data may be NULL when n is 0) into *out.
//  BLAKE2b-256, unkeyed. Cannot fail.
void ms_hash_bytes(const void *data, size_t n, ms_hash_t *out);

//  Start an incremental BLAKE2b-256 hash in *hasher.
void ms_hasher_init(ms_hasher_t *hasher);

//  Feed n more bytes (data may be NULL when n is 0).
void ms_hasher_update(ms_hasher_t *hasher, const void *data, size_t n);

//  Finish the hash into *out; the hasher must be re-initialised before
//  it is used again. The result equals ms_hash_bytes() of the
//  concatenation of every update.
void ms_hasher_final(ms_hasher_t *hasher, ms_hash_t *out);

//  Hash the whole content of the file at path, streamed in 64 KiB
//  reads (memory does not grow with the file). Returns MS_OK; MS_ERR_IO
//  when the file cannot be opened or read, with diag (may be NULL)
//  where = path, reason = the errno text. *out is unchanged on error.
int ms_hash_file(const char *path, ms_hash_t *out, ms_diag_t *diag);

//  Write h as 64 lowercase hex characters plus a NUL into out.
void ms_hash_hex(const ms_hash_t *h, char out[MS_HASH_HEX_LEN + 1]);

//  Parse exactly 64 hex characters (either case; the string must end
//  there) into *out. Returns MS_OK, or MS_ERR_INVALID for a NULL, short,
//  long or non-hex string (*out unchanged).
int ms_hash_from_hex(const char *hex, ms_hash_t *out);

//  True when a and b hold the same digest (constant time).
bool ms_hash_equal(const ms_hash_t *a, const ms_hash_t *b);

//  True when every byte of h is zero (the "no hash yet" value).
bool ms_hash_is_zero(const ms_hash_t *h);

//  The entry keyed KEY in a small table of per-id entries (one per sweep,
//  one per task): *ENTRIES_P is the caller's `T *` (NULL when empty),
//  realloc'd here, holding *N entries of ENTRY_BYTES each, each with its
//  ms_hash_t key at KEY_OFFSET (offsetof(T, field)). When no entry has
//  KEY, one is appended, all zero but its key, *N counts it and *ADDED
//  (may be NULL) is set true so the caller can fill in its defaults.
//  Returns the entry, borrowed: it moves when an entry is appended, and
//  the caller owns and frees the table. NULL when memory runs out (the
//  table is as it was). A linear search: for tables of a few dozen.
//  Not thread-safe on one table.
void *ms_hash_entry(void *entries_p, size_t *n, size_t entry_bytes,
                    size_t key_offset, const ms_hash_t *key, bool *added);

#endif
