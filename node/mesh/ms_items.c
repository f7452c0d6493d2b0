/*  =========================================================================
    ms_items - the grow-only set of authority items

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A sorted array of (digest, bytes) entries: binary search to find, a
    memmove to insert. Items are few and arrive rarely; the digest of the
    set is recomputed lazily (cached until the next add).
*/
#include "ms_items.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t digest[MS_ITEMS_DIGEST_BYTES]; // BLAKE2b-256 of bytes
    uint8_t *bytes;                        // the item (malloc'd)
    size_t n_bytes;                        // its length
} s_entry_t;

struct ms_items {
    s_entry_t *entries;                        // ascending by digest
    size_t n_entries, cap_entries;             // used, allocated
    bool digest_valid;                         // set_digest is current
    uint8_t set_digest[MS_ITEMS_DIGEST_BYTES]; // cached ms_items_digest
};

//  --------------------------------------------------------------------------
//  Item bytes of a chain

size_t
ms_items_encode_chain(const ms_cert_chain_t *chain, uint8_t *out)
{
    assert(chain && out);
    size_t n = ms_cert_chain_encode(chain, out + 1);
    if (n == 0)
        return 0;
    out[0] = MS_ITEMS_CHAIN;
    return n + 1;
}

//  --------------------------------------------------------------------------
//  Item bytes of an authority item

size_t
ms_items_encode_authority(const ms_authority_item_t *item, uint8_t *out)
{
    assert(item && out);
    size_t n = ms_authority_item_encode(item, out + 1);
    if (n == 0)
        return 0;
    out[0] = MS_ITEMS_AUTHORITY;
    return n + 1;
}

//  --------------------------------------------------------------------------
//  Decode and verify an item

int
ms_items_check(const uint8_t *bytes, size_t n,
               const uint8_t authority_pk[MS_CERT_KEY_BYTES],
               ms_items_parsed_t *out, ms_diag_t *diag)
{
    assert(out && authority_pk && (bytes || n == 0));
    memset(out, 0, sizeof *out);
    if (n < 2 || n > MS_ITEMS_MAX_BYTES)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "item",
                                "%zu bytes (expected 2..%d)", n,
                                (int) MS_ITEMS_MAX_BYTES);
    ms_hash_bytes(bytes, n, &out->digest);
    if (bytes[0] == MS_ITEMS_CHAIN) {
        out->type = MS_ITEMS_CHAIN;
        int rc = ms_cert_chain_decode(bytes + 1, n - 1, &out->chain, diag);
        if (rc != MS_OK)
            return rc;
        uint8_t pool[MS_CERT_POOL_ID_BYTES];
        ms_cert_pool_id(authority_pk, pool);
        if (memcmp(out->chain.leaf.pool_id, pool, sizeof pool) != 0)
            return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "item",
                                    "certificate of another pool");
        //  now_s 0: no certificate counts as expired (see the prose)
        return ms_cert_chain_verify(&out->chain, authority_pk, 0, diag);
    }
    if (bytes[0] == MS_ITEMS_AUTHORITY) {
        out->type = MS_ITEMS_AUTHORITY;
        int rc = ms_authority_item_decode(bytes + 1, n - 1, &out->item, diag);
        if (rc != MS_OK)
            return rc;
        return ms_authority_item_verify(&out->item, authority_pk, diag);
    }
    return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "item",
                            "unknown type %u (expected 1: certificate chain, "
                            "2: authority item)",
                            bytes[0]);
}

//  --------------------------------------------------------------------------
//  Make an empty set

ms_items_t *
ms_items_new(void)
{
    return calloc(1, sizeof(ms_items_t));
}

//  --------------------------------------------------------------------------
//  Free the set

void
ms_items_destroy(ms_items_t **self_p)
{
    assert(self_p);
    ms_items_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->n_entries; i++)
        free(self->entries[i].bytes);
    free(self->entries);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Index of digest, or where it would go (*found says which)

static size_t
s_search(const ms_items_t *self, const uint8_t *digest, bool *found)
{
    size_t lo = 0, hi = self->n_entries;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c =
            memcmp(self->entries[mid].digest, digest, MS_ITEMS_DIGEST_BYTES);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

//  --------------------------------------------------------------------------
//  Add an item

int
ms_items_add(ms_items_t *self, const uint8_t *bytes, size_t n, bool *added)
{
    assert(self && (bytes || n == 0));
    if (added)
        *added = false;
    if (n == 0 || n > MS_ITEMS_MAX_BYTES)
        return MS_ERR_INVALID;
    ms_hash_t h;
    ms_hash_bytes(bytes, n, &h);
    bool found;
    size_t at = s_search(self, h.bytes, &found);
    if (found)
        return MS_OK;
    if (self->n_entries >= MS_ITEMS_MAX_COUNT)
        return MS_ERR_STORE_FULL;
    if (self->n_entries == self->cap_entries) {
        size_t cap = self->cap_entries ? 2 * self->cap_entries : 16;
        s_entry_t *grown = realloc(self->entries, cap * sizeof *grown);
        if (!grown)
            return MS_ERR_NOMEM;
        self->entries = grown;
        self->cap_entries = cap;
    }
    uint8_t *copy = malloc(n);
    if (!copy)
        return MS_ERR_NOMEM;
    memcpy(copy, bytes, n);
    memmove(&self->entries[at + 1], &self->entries[at],
            (self->n_entries - at) * sizeof *self->entries);
    memcpy(self->entries[at].digest, h.bytes, MS_ITEMS_DIGEST_BYTES);
    self->entries[at].bytes = copy;
    self->entries[at].n_bytes = n;
    self->n_entries++;
    self->digest_valid = false;
    if (added)
        *added = true;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Membership

bool
ms_items_has(const ms_items_t *self,
             const uint8_t digest[MS_ITEMS_DIGEST_BYTES])
{
    assert(self && digest);
    bool found;
    s_search(self, digest, &found);
    return found;
}

//  --------------------------------------------------------------------------
//  Bytes of an item

const uint8_t *
ms_items_get(const ms_items_t *self,
             const uint8_t digest[MS_ITEMS_DIGEST_BYTES], size_t *n)
{
    assert(self && digest && n);
    bool found;
    size_t at = s_search(self, digest, &found);
    if (!found) {
        *n = 0;
        return NULL;
    }
    *n = self->entries[at].n_bytes;
    return self->entries[at].bytes;
}

//  --------------------------------------------------------------------------
//  Items held

size_t
ms_items_size(const ms_items_t *self)
{
    assert(self);
    return self->n_entries;
}

//  --------------------------------------------------------------------------
//  Digest of the set

void
ms_items_digest(const ms_items_t *self, uint8_t out[MS_ITEMS_DIGEST_BYTES])
{
    assert(self && out);
    ms_items_t *mut = (ms_items_t *) self; // the cache only
    if (!mut->digest_valid) {
        ms_hasher_t h;
        ms_hash_t d;
        ms_hasher_init(&h);
        for (size_t i = 0; i < self->n_entries; i++)
            ms_hasher_update(&h, self->entries[i].digest,
                             MS_ITEMS_DIGEST_BYTES);
        ms_hasher_final(&h, &d);
        memcpy(mut->set_digest, d.bytes, MS_ITEMS_DIGEST_BYTES);
        mut->digest_valid = true;
    }
    memcpy(out, self->set_digest, MS_ITEMS_DIGEST_BYTES);
}

//  --------------------------------------------------------------------------
//  i-th digest

const uint8_t *
ms_items_at(const ms_items_t *self, size_t i)
{
    assert(self && i < self->n_entries);
    return self->entries[i].digest;
}

//  --------------------------------------------------------------------------
//  qsort order of digests

static int
s_digest_cmp(const void *a, const void *b)
{
    return memcmp(a, b, MS_ITEMS_DIGEST_BYTES);
}

//  --------------------------------------------------------------------------
//  A sorted copy of their digests, or NULL (none, or out of memory)

static uint8_t (*s_sorted(const uint8_t (*theirs)[MS_ITEMS_DIGEST_BYTES],
                          size_t n))[MS_ITEMS_DIGEST_BYTES]
{
    if (n == 0)
        return NULL;
    uint8_t(*copy)[MS_ITEMS_DIGEST_BYTES] = malloc(n * sizeof *copy);
    if (!copy)
        return NULL;
    memcpy(copy, theirs, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, s_digest_cmp);
    return copy;
}

//  --------------------------------------------------------------------------
//  Ours that they lack

size_t
ms_items_missing(const ms_items_t *self,
                 const uint8_t (*theirs)[MS_ITEMS_DIGEST_BYTES],
                 size_t n_theirs, uint8_t (*out)[MS_ITEMS_DIGEST_BYTES],
                 size_t max)
{
    assert(self && (theirs || n_theirs == 0) && (out || max == 0));
    uint8_t(*sorted)[MS_ITEMS_DIGEST_BYTES] = s_sorted(theirs, n_theirs);
    if (n_theirs && !sorted)
        return 0; // out of memory: the next round tries again
    size_t n = 0, j = 0;
    for (size_t i = 0; i < self->n_entries && n < max; i++) {
        const uint8_t *d = self->entries[i].digest;
        while (j < n_theirs && memcmp(sorted[j], d, MS_ITEMS_DIGEST_BYTES) < 0)
            j++;
        if (j < n_theirs && memcmp(sorted[j], d, MS_ITEMS_DIGEST_BYTES) == 0)
            continue;
        memcpy(out[n++], d, MS_ITEMS_DIGEST_BYTES);
    }
    free(sorted);
    return n;
}

//  --------------------------------------------------------------------------
//  Theirs that we lack

size_t
ms_items_count_unknown(const ms_items_t *self,
                       const uint8_t (*theirs)[MS_ITEMS_DIGEST_BYTES],
                       size_t n_theirs)
{
    assert(self && (theirs || n_theirs == 0));
    size_t n = 0;
    for (size_t i = 0; i < n_theirs; i++)
        n += !ms_items_has(self, theirs[i]);
    return n;
}
