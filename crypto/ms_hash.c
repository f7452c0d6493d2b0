/*  =========================================================================
    ms_hash - content hashes: BLAKE2b-256 of bytes, streams and files

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_hash.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

_Static_assert(sizeof(crypto_generichash_state) <= sizeof(ms_hasher_t),
               "ms_hasher_t too small for crypto_generichash_state");
_Static_assert(_Alignof(crypto_generichash_state) <= _Alignof(ms_hasher_t),
               "ms_hasher_t under-aligned for crypto_generichash_state");

#define S_FILE_CHUNK (64 * 1024) // bytes per read when hashing a file

static pthread_once_t s_sodium_once = PTHREAD_ONCE_INIT;

//  --------------------------------------------------------------------------
//  Initialise libsodium (called once).

static void
s_sodium_init(void)
{
    //  sodium_init returns 1 when already initialised, -1 only when the
    //  system has no usable random source; hashing needs none of it.
    if (sodium_init() < 0)
        return; // hashing still works: it uses no randomness
}

//  --------------------------------------------------------------------------
//  Make sure libsodium is initialised, thread-safely.

static void
s_ensure_sodium(void)
{
    pthread_once(&s_sodium_once, s_sodium_init);
}

//  --------------------------------------------------------------------------
//  The libsodium state inside a hasher.

static crypto_generichash_state *
s_state(ms_hasher_t *hasher)
{
    return (crypto_generichash_state *) (void *) hasher->opaque_;
}

//  --------------------------------------------------------------------------
//  One-shot BLAKE2b-256.

void
ms_hash_bytes(const void *data, size_t n, ms_hash_t *out)
{
    static const unsigned char s_empty = 0;
    s_ensure_sodium();
    crypto_generichash(out->bytes, MS_HASH_BYTES,
                       n ? (const unsigned char *) data : &s_empty,
                       (unsigned long long) n, NULL, 0);
}

//  --------------------------------------------------------------------------
//  Start an incremental hash.

void
ms_hasher_init(ms_hasher_t *hasher)
{
    s_ensure_sodium();
    crypto_generichash_init(s_state(hasher), NULL, 0, MS_HASH_BYTES);
}

//  --------------------------------------------------------------------------
//  Feed bytes to an incremental hash.

void
ms_hasher_update(ms_hasher_t *hasher, const void *data, size_t n)
{
    if (n == 0)
        return;
    crypto_generichash_update(s_state(hasher), (const unsigned char *) data,
                              (unsigned long long) n);
}

//  --------------------------------------------------------------------------
//  Finish an incremental hash.

void
ms_hasher_final(ms_hasher_t *hasher, ms_hash_t *out)
{
    crypto_generichash_final(s_state(hasher), out->bytes, MS_HASH_BYTES);
}

//  --------------------------------------------------------------------------
//  Hash a file's bytes, streamed.

int
ms_hash_file(const char *path, ms_hash_t *out, ms_diag_t *diag)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot open: %s",
                                strerror(errno));
    unsigned char *buf = malloc(S_FILE_CHUNK);
    if (!buf) {
        fclose(file);
        return MS_ERR_NOMEM;
    }
    ms_hasher_t hasher;
    ms_hasher_init(&hasher);
    size_t got;
    while ((got = fread(buf, 1, S_FILE_CHUNK, file)) > 0)
        ms_hasher_update(&hasher, buf, got);
    int read_error = ferror(file) ? errno : 0;
    free(buf);
    fclose(file);
    if (read_error)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot read: %s",
                                strerror(read_error));
    ms_hasher_final(&hasher, out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Lowercase hex of a hash.

void
ms_hash_hex(const ms_hash_t *h, char out[MS_HASH_HEX_LEN + 1])
{
    static const char s_digits[] = "0123456789abcdef";
    for (int i = 0; i < MS_HASH_BYTES; i++) {
        out[2 * i] = s_digits[h->bytes[i] >> 4];
        out[2 * i + 1] = s_digits[h->bytes[i] & 0xf];
    }
    out[MS_HASH_HEX_LEN] = '\0';
}

//  --------------------------------------------------------------------------
//  Value of one hex digit, or -1.

static int
s_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

//  --------------------------------------------------------------------------
//  Parse 64 hex characters.

int
ms_hash_from_hex(const char *hex, ms_hash_t *out)
{
    if (!hex)
        return MS_ERR_INVALID;
    ms_hash_t parsed;
    for (int i = 0; i < MS_HASH_BYTES; i++) {
        //  A NUL in either position gives -1, so a short string stops here
        //  without reading past its end.
        int hi = s_hex_value(hex[2 * i]);
        if (hi < 0)
            return MS_ERR_INVALID;
        int lo = s_hex_value(hex[2 * i + 1]);
        if (lo < 0)
            return MS_ERR_INVALID;
        parsed.bytes[i] = (uint8_t) (hi << 4 | lo);
    }
    if (hex[MS_HASH_HEX_LEN] != '\0')
        return MS_ERR_INVALID;
    *out = parsed;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Constant-time comparison.

bool
ms_hash_equal(const ms_hash_t *a, const ms_hash_t *b)
{
    s_ensure_sodium();
    return sodium_memcmp(a->bytes, b->bytes, MS_HASH_BYTES) == 0;
}

//  --------------------------------------------------------------------------
//  All zero?

bool
ms_hash_is_zero(const ms_hash_t *h)
{
    s_ensure_sodium();
    return sodium_is_zero(h->bytes, MS_HASH_BYTES) == 1;
}

//  --------------------------------------------------------------------------
//  Find or append the entry keyed KEY in a table of per-id entries.

void *
ms_hash_entry(void *entries_p, size_t *n, size_t entry_bytes, size_t key_offset,
              const ms_hash_t *key, bool *added)
{
    if (added)
        *added = false;
    uint8_t *entries;
    memcpy(&entries, entries_p, sizeof entries); // the caller's T *
    for (size_t i = 0; i < *n; i++) {
        uint8_t *e = entries + i * entry_bytes;
        ms_hash_t e_key;
        memcpy(&e_key, e + key_offset, sizeof e_key);
        if (ms_hash_equal(&e_key, key))
            return e;
    }
    uint8_t *grown = realloc(entries, (*n + 1) * entry_bytes);
    if (!grown)
        return NULL;
    memcpy(entries_p, &grown, sizeof grown);
    uint8_t *e = grown + (*n)++ * entry_bytes;
    memset(e, 0, entry_bytes);
    memcpy(e + key_offset, key, sizeof *key);
    if (added)
        *added = true;
    return e;
}
