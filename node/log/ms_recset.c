/*  =========================================================================
    ms_recset - an in-memory record set: the gossip source of tests and sims

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Streams are kept in an array of pointers sorted by (origin,
    incarnation), found by binary search: the vector listing is then the
    array in order, and the digest one pass over it. A stream keeps its
    records 1 .. held in one array (record seq s at index s - 1), so a
    block view is a slice of that array, and the block boundaries as a
    sorted array of (first_seq, n) found by binary search when serving a
    range.
*/
#include "ms_recset.h"
#include "ms_array.h"

#include "ms_be.h"
#include "ms_hash.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t first_seq; // seq of the block's first record
    uint32_t n_records; // records in the block
} s_bound_t;

typedef struct {
    uint8_t origin[MS_GOSSIP_ID_BYTES]; // node id
    uint64_t incarnation;               // store incarnation
    uint64_t held;                      // records 1 .. held are stored
    ms_gossip_record_t *records;        // held entries; payloads owned
    size_t records_cap;                 // allocated entries
    s_bound_t *bounds;                  // block boundaries, by first_seq
    size_t n_bounds;                    // entries used
    size_t bounds_cap;                  // entries allocated
    bool flagged;                       // equivocation seen
} s_stream_t;

struct ms_recset {
    s_stream_t **streams;                   // sorted by (origin, incarnation)
    size_t n_streams;                       // entries used
    size_t streams_cap;                     // entries allocated
    size_t n_records;                       // records held, all streams
    size_t n_equivocations;                 // conflicting records refused
    bool digest_valid;                      // digest matches the streams
    uint8_t digest[MS_GOSSIP_DIGEST_BYTES]; // cached vector digest
};

//  --------------------------------------------------------------------------
//  Compare a stream key with (origin, incarnation): <0, 0, >0.

static int
s_key_cmp(const s_stream_t *s, const uint8_t *origin, uint64_t incarnation)
{
    int c = memcmp(s->origin, origin, MS_GOSSIP_ID_BYTES);
    if (c != 0)
        return c;
    return s->incarnation < incarnation   ? -1
           : s->incarnation > incarnation ? 1
                                          : 0;
}

//  --------------------------------------------------------------------------
//  Index of the stream with this key, or of where it would go (*found).

static size_t
s_find(ms_recset_t *self, const uint8_t *origin, uint64_t incarnation,
       bool *found)
{
    size_t lo = 0, hi = self->n_streams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = s_key_cmp(self->streams[mid], origin, incarnation);
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
//  The stream with this key, or NULL.

static s_stream_t *
s_lookup(ms_recset_t *self, const uint8_t *origin, uint64_t incarnation)
{
    bool found;
    size_t at = s_find(self, origin, incarnation, &found);
    return found ? self->streams[at] : NULL;
}

//  --------------------------------------------------------------------------
//  The stream with this key, created empty when missing; NULL on NOMEM.

static s_stream_t *
s_lookup_or_add(ms_recset_t *self, const uint8_t *origin, uint64_t incarnation)
{
    bool found;
    size_t at = s_find(self, origin, incarnation, &found);
    if (found)
        return self->streams[at];
    if (ms_array_grow(&self->streams, &self->streams_cap, self->n_streams,
                      sizeof *self->streams) != MS_OK)
        return NULL;
    s_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    memcpy(s->origin, origin, MS_GOSSIP_ID_BYTES);
    s->incarnation = incarnation;
    memmove(self->streams + at + 1, self->streams + at,
            (self->n_streams - at) * sizeof *self->streams);
    self->streams[at] = s;
    self->n_streams++;
    self->digest_valid = false;
    return s;
}

//  --------------------------------------------------------------------------
//  Free one stream and its payloads.

static void
s_stream_free(s_stream_t *s)
{
    for (uint64_t i = 0; i < s->held; i++)
        free((void *) s->records[i].payload);
    free(s->records);
    free(s->bounds);
    free(s);
}

//  --------------------------------------------------------------------------
//  Create an empty record set.

ms_recset_t *
ms_recset_new(void)
{
    return calloc(1, sizeof(ms_recset_t));
}

//  --------------------------------------------------------------------------
//  Free the set.

void
ms_recset_destroy(ms_recset_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_recset_t *self = *self_p;
    for (size_t i = 0; i < self->n_streams; i++)
        s_stream_free(self->streams[i]);
    free(self->streams);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Make room for n more records and one more boundary in stream s.

static int
s_reserve(s_stream_t *s, size_t n)
{
    if (s->held + n > s->records_cap) {
        size_t cap = s->records_cap ? s->records_cap : 16;
        while (cap < s->held + n)
            cap *= 2;
        ms_gossip_record_t *grown = realloc(s->records, cap * sizeof *grown);
        if (!grown)
            return MS_ERR_NOMEM;
        s->records = grown;
        s->records_cap = cap;
    }
    return ms_array_grow(&s->bounds, &s->bounds_cap, s->n_bounds,
                         sizeof *s->bounds);
}

//  --------------------------------------------------------------------------
//  Store n records (copies) as seqs held + 1 ... and one boundary.

static int
s_store(ms_recset_t *self, s_stream_t *s, const ms_gossip_record_t *records,
        size_t n)
{
    int rc = s_reserve(s, n);
    if (rc != MS_OK)
        return rc;
    //  Copy every payload first so a NOMEM leaves the stream unchanged.
    uint8_t **copies = calloc(n, sizeof *copies);
    if (!copies)
        return MS_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t len = records[i].payload_bytes;
        copies[i] = malloc(len ? len : 1);
        if (!copies[i]) {
            for (size_t j = 0; j < i; j++)
                free(copies[j]);
            free(copies);
            return MS_ERR_NOMEM;
        }
        if (len)
            memcpy(copies[i], records[i].payload, len);
    }
    s->bounds[s->n_bounds].first_seq = s->held + 1;
    s->bounds[s->n_bounds].n_records = (uint32_t) n;
    s->n_bounds++;
    for (size_t i = 0; i < n; i++) {
        ms_gossip_record_t *r = &s->records[s->held];
        r->seq = s->held + 1;
        r->kind = records[i].kind;
        r->payload = copies[i];
        r->payload_bytes = records[i].payload_bytes;
        s->held++;
    }
    free(copies);
    self->n_records += n;
    self->digest_valid = false;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Fill a borrowed view of the block that starts at bound b of stream s.

static void
s_view(const s_stream_t *s, const s_bound_t *b, ms_gossip_block_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->origin, s->origin, MS_GOSSIP_ID_BYTES);
    out->incarnation = s->incarnation;
    out->first_seq = b->first_seq;
    out->n_records = b->n_records;
    out->records = &s->records[b->first_seq - 1];
}

//  --------------------------------------------------------------------------
//  Append a locally written block.

int
ms_recset_append(ms_recset_t *self, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                 uint64_t incarnation, const ms_gossip_record_t *records,
                 size_t n, ms_gossip_block_t *block)
{
    assert(self && origin);
    if (n < 1 || n > MS_GOSSIP_MAX_BLOCK_RECORDS || !records)
        return MS_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (records[i].payload_bytes && !records[i].payload)
            return MS_ERR_INVALID;
    s_stream_t *s = s_lookup_or_add(self, origin, incarnation);
    if (!s)
        return MS_ERR_NOMEM;
    int rc = s_store(self, s, records, n);
    if (rc != MS_OK)
        return rc;
    if (block)
        s_view(s, &s->bounds[s->n_bounds - 1], block);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  True when the block's shape is valid (count, contiguous seqs).

static bool
s_block_ok(const ms_gossip_block_t *b)
{
    if (b->n_records < 1 || b->n_records > MS_GOSSIP_MAX_BLOCK_RECORDS ||
        !b->records || b->first_seq < 1 ||
        b->first_seq > UINT64_MAX - MS_GOSSIP_MAX_BLOCK_RECORDS)
        return false;
    for (size_t i = 0; i < b->n_records; i++) {
        if (b->records[i].seq != b->first_seq + i)
            return false;
        if (b->records[i].payload_bytes && !b->records[i].payload)
            return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Merge a block from a peer.

int
ms_recset_merge_block(ms_recset_t *self, const ms_gossip_block_t *block,
                      size_t *n_new)
{
    assert(self && block);
    if (n_new)
        *n_new = 0;
    if (!s_block_ok(block))
        return MS_ERR_INVALID;
    s_stream_t *s = s_lookup(self, block->origin, block->incarnation);
    uint64_t held = s ? s->held : 0;
    if (block->first_seq > held + 1)
        return MS_ERR_RANGE;
    //  Records held already: equal bytes are skipped, others are evidence.
    size_t skip = 0;
    for (; skip < block->n_records && block->first_seq + skip <= held; skip++) {
        const ms_gossip_record_t *in = &block->records[skip];
        const ms_gossip_record_t *have = &s->records[in->seq - 1];
        if (in->kind != have->kind ||
            in->payload_bytes != have->payload_bytes ||
            (in->payload_bytes &&
             memcmp(in->payload, have->payload, in->payload_bytes) != 0)) {
            s->flagged = true;
            self->n_equivocations++;
        }
    }
    if (skip == block->n_records)
        return MS_OK;
    if (!s) {
        s = s_lookup_or_add(self, block->origin, block->incarnation);
        if (!s)
            return MS_ERR_NOMEM;
    }
    size_t n = block->n_records - skip;
    int rc = s_store(self, s, block->records + skip, n);
    if (rc == MS_OK && n_new)
        *n_new = n;
    return rc;
}

//  --------------------------------------------------------------------------
//  Merge blocks in array order.

int
ms_recset_merge_blocks(ms_recset_t *self, const ms_gossip_block_t *blocks,
                       size_t n_blocks, int *rcs, size_t *n_new)
{
    assert(self && (blocks || n_blocks == 0) && rcs && n_new);
    for (size_t i = 0; i < n_blocks; i++) {
        n_new[i] = 0;
        rcs[i] = ms_recset_merge_block(self, &blocks[i], &n_new[i]);
        if (rcs[i] != MS_OK)
            n_new[i] = 0;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Highest contiguous seq held.

uint64_t
ms_recset_held(ms_recset_t *self, const uint8_t origin[MS_GOSSIP_ID_BYTES],
               uint64_t incarnation)
{
    assert(self && origin);
    s_stream_t *s = s_lookup(self, origin, incarnation);
    return s ? s->held : 0;
}

//  --------------------------------------------------------------------------
//  Borrowed view of one record.

const ms_gossip_record_t *
ms_recset_record(ms_recset_t *self, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                 uint64_t incarnation, uint64_t seq)
{
    assert(self && origin);
    s_stream_t *s = s_lookup(self, origin, incarnation);
    if (!s || seq < 1 || seq > s->held)
        return NULL;
    return &s->records[seq - 1];
}

//  --------------------------------------------------------------------------
//  Records held.

size_t
ms_recset_size(ms_recset_t *self)
{
    assert(self);
    return self->n_records;
}

//  --------------------------------------------------------------------------
//  Streams held.

size_t
ms_recset_stream_count(ms_recset_t *self)
{
    assert(self);
    return self->n_streams;
}

//  --------------------------------------------------------------------------
//  Equivocating records seen.

size_t
ms_recset_equivocations(ms_recset_t *self)
{
    assert(self);
    return self->n_equivocations;
}

//  --------------------------------------------------------------------------
//  True when the stream has equivocated.

bool
ms_recset_flagged(ms_recset_t *self, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                  uint64_t incarnation)
{
    assert(self && origin);
    s_stream_t *s = s_lookup(self, origin, incarnation);
    return s ? s->flagged : false;
}

//  --------------------------------------------------------------------------
//  Digest of the canonical vector listing.

void
ms_recset_digest(ms_recset_t *self, uint8_t digest[MS_GOSSIP_DIGEST_BYTES])
{
    assert(self && digest);
    if (!self->digest_valid) {
        ms_hasher_t h;
        ms_hasher_init(&h);
        for (size_t i = 0; i < self->n_streams; i++) {
            const s_stream_t *s = self->streams[i];
            if (s->held == 0)
                continue;
            uint8_t entry[MS_GOSSIP_ID_BYTES + 16];
            memcpy(entry, s->origin, MS_GOSSIP_ID_BYTES);
            ms_be_put64(entry + MS_GOSSIP_ID_BYTES, s->incarnation);
            ms_be_put64(entry + MS_GOSSIP_ID_BYTES + 8, s->held);
            ms_hasher_update(&h, entry, sizeof entry);
        }
        ms_hash_t out;
        ms_hasher_final(&h, &out);
        memcpy(self->digest, out.bytes, MS_GOSSIP_DIGEST_BYTES);
        self->digest_valid = true;
    }
    memcpy(digest, self->digest, MS_GOSSIP_DIGEST_BYTES);
}

//  --------------------------------------------------------------------------
//  Source callback: vector digest.

static int
s_src_digest(void *arg, uint8_t digest[MS_GOSSIP_DIGEST_BYTES])
{
    ms_recset_digest(arg, digest);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Source callback: the whole vector in a malloc'd array.

static int
s_src_vector(void *arg, ms_gossip_entry_t **entries, size_t *n_entries)
{
    ms_recset_t *self = arg;
    *entries = NULL;
    *n_entries = 0;
    if (self->n_streams == 0)
        return MS_OK;
    ms_gossip_entry_t *out = malloc(self->n_streams * sizeof *out);
    if (!out)
        return MS_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < self->n_streams; i++) {
        const s_stream_t *s = self->streams[i];
        if (s->held == 0)
            continue;
        memcpy(out[n].origin, s->origin, MS_GOSSIP_ID_BYTES);
        out[n].incarnation = s->incarnation;
        out[n].seq = s->held;
        n++;
    }
    if (n == 0) {
        free(out);
        out = NULL;
    }
    *entries = out;
    *n_entries = n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Source callback: held seq of one stream.

static int
s_src_held(void *arg, const uint8_t origin[MS_GOSSIP_ID_BYTES],
           uint64_t incarnation, uint64_t *seq)
{
    *seq = ms_recset_held(arg, origin, incarnation);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Source callback: emit whole blocks covering from_seq .. to_seq.

static int
s_src_read_blocks(void *arg, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                  uint64_t incarnation, uint64_t from_seq, uint64_t to_seq,
                  size_t max_records, size_t max_bytes,
                  int (*emit)(void *emit_arg, const ms_gossip_block_t *block),
                  void *emit_arg)
{
    ms_recset_t *self = arg;
    s_stream_t *s = s_lookup(self, origin, incarnation);
    if (!s || s->n_bounds == 0 || from_seq > to_seq || from_seq > s->held)
        return MS_OK;
    //  Last boundary whose first_seq <= from_seq.
    size_t lo = 0, hi = s->n_bounds;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->bounds[mid].first_seq <= from_seq)
            lo = mid;
        else
            hi = mid;
    }
    size_t n_records = 0, n_bytes = 0;
    for (size_t i = lo; i < s->n_bounds; i++) {
        const s_bound_t *b = &s->bounds[i];
        if (b->first_seq > to_seq)
            break;
        if (n_records > 0 && (n_records >= max_records || n_bytes >= max_bytes))
            break;
        ms_gossip_block_t view;
        s_view(s, b, &view);
        int rc = emit(emit_arg, &view);
        if (rc != 0)
            return rc;
        n_records += b->n_records;
        for (size_t r = 0; r < view.n_records; r++)
            n_bytes += view.records[r].payload_bytes;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Source callback: merge a block.

static int
s_src_merge_block(void *arg, const ms_gossip_block_t *block, size_t *n_new)
{
    return ms_recset_merge_block(arg, block, n_new);
}

//  --------------------------------------------------------------------------
//  Source callback: merge blocks in array order.

static int
s_src_merge_blocks(void *arg, const ms_gossip_block_t *blocks, size_t n_blocks,
                   int *rcs, size_t *n_new)
{
    return ms_recset_merge_blocks(arg, blocks, n_blocks, rcs, n_new);
}

//  --------------------------------------------------------------------------
//  Callbacks over this set for ms_gossip_new.

void
ms_recset_source(ms_recset_t *self, ms_gossip_source_t *out)
{
    assert(self && out);
    memset(out, 0, sizeof *out);
    out->arg = self;
    out->vector_digest = s_src_digest;
    out->vector = s_src_vector;
    out->held = s_src_held;
    out->read_blocks = s_src_read_blocks;
    out->merge_block = s_src_merge_block;
    out->merge_blocks = s_src_merge_blocks;
}
