/*  =========================================================================
    ms_recset - an in-memory record set: the gossip source of tests and sims

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Holds records keyed (origin, incarnation, seq) the way docs/POOL.md
    "Records" says ms_store's record log does, without LMDB: per stream the
    records 1 .. held (contiguous, nothing above a gap), the block
    boundaries as they arrived, the version vector and its BLAKE2b digest
    (crypto/ms_hash.h over the canonical listing). A record already held
    that arrives with other bytes (kind or payload) is equivocation: it is
    counted and its stream is flagged; the held record is not replaced
    (ms_store keeps the conflicting bytes as evidence; this set, made for
    tests and simulations, only counts them). ms_recset_source() adapts
    it to ms_gossip_source_t.

    Thread rule: one thread at a time.
*/
#ifndef MS_RECSET_H
#define MS_RECSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"
#include "ms_gossip.h"

typedef struct ms_recset ms_recset_t;

//  Create an empty record set. Returns NULL only when out of memory.
//  Caller owns the result; free it with ms_recset_destroy().
ms_recset_t *ms_recset_new(void);

//  Free the set and every record; NULL-safe, nulls *self_p.
void ms_recset_destroy(ms_recset_t **self_p);

//  Local commit: append n records (1..64; their seq fields are ignored)
//  to (origin, incarnation) as one block with the next seqs. Payloads are
//  copied. *block (may be NULL) receives a view of the stored block for
//  ms_gossip_push, valid until the set next changes. Returns MS_OK,
//  MS_ERR_INVALID for n out of range, MS_ERR_NOMEM.
int ms_recset_append(ms_recset_t *self,
                     const uint8_t origin[MS_GOSSIP_ID_BYTES],
                     uint64_t incarnation, const ms_gossip_record_t *records,
                     size_t n, ms_gossip_block_t *block);

//  Merge a block from a peer (the ms_gossip_source_t merge_block rule):
//  MS_OK with *n_new (may be NULL) new records; MS_ERR_RANGE when
//  first_seq > held + 1 (nothing stored); MS_ERR_INVALID for a malformed
//  block (n_records out of 1..64, seqs not contiguous from first_seq,
//  first_seq 0); MS_ERR_NOMEM.
int ms_recset_merge_block(ms_recset_t *self, const ms_gossip_block_t *block,
                          size_t *n_new);

//  Merge n_blocks blocks in array order, as ms_recset_merge_block one
//  after the other (the ms_gossip_source_t merge_blocks rule: a block may
//  fill the gap below a later one): rcs[i] gets block i's code, n_new[i]
//  its new records (0 unless rcs[i] is MS_OK). Returns MS_OK (each
//  block's fate is in rcs; a refused block does not stop the others).
int ms_recset_merge_blocks(ms_recset_t *self, const ms_gossip_block_t *blocks,
                           size_t n_blocks, int *rcs, size_t *n_new);

//  Highest contiguous seq held for (origin, incarnation); 0 if unknown.
uint64_t ms_recset_held(ms_recset_t *self,
                        const uint8_t origin[MS_GOSSIP_ID_BYTES],
                        uint64_t incarnation);

//  Borrowed view of record seq of (origin, incarnation), valid until the
//  set changes; NULL when not held.
const ms_gossip_record_t *
ms_recset_record(ms_recset_t *self, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                 uint64_t incarnation, uint64_t seq);

//  Total records held, all streams.
size_t ms_recset_size(ms_recset_t *self);

//  Number of (origin, incarnation) streams held.
size_t ms_recset_stream_count(ms_recset_t *self);

//  Records refused as equivocation (same key, other bytes), all streams.
size_t ms_recset_equivocations(ms_recset_t *self);

//  True when (origin, incarnation) has equivocated.
bool ms_recset_flagged(ms_recset_t *self,
                       const uint8_t origin[MS_GOSSIP_ID_BYTES],
                       uint64_t incarnation);

//  BLAKE2b-256 of the canonical vector listing (see ms_gossip_source_t
//  vector_digest); cached until the set changes. Cannot fail.
void ms_recset_digest(ms_recset_t *self,
                      uint8_t digest[MS_GOSSIP_DIGEST_BYTES]);

//  Fill *out with callbacks over this set (arg = self) for ms_gossip_new.
void ms_recset_source(ms_recset_t *self, ms_gossip_source_t *out);

#endif
