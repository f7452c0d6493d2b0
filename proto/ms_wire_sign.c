/*  =========================================================================
    ms_wire_sign - the signed bytes of a block of records; sign and verify

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Records and anti-entropy" and issue 4 item 4: every block is
    signed by its origin, and every node checks the signature before it
    stores, forwards or counts the block. This file fixes the one byte
    string that is signed (layout in ms_wire_sign.h) and wraps libsodium's
    Ed25519 (through ms_identity) around it.

    Why these bytes.
    - A fixed binary layout, not protobuf: protobuf encodings are not
      canonical (field order, varint widths, unknown fields), so a relay
      that re-encodes a block must not change what was signed. The fields
      are copied out of the decoded block into fixed-width big-endian
      slots; two encoders that agree on the values agree on the bytes.
    - The domain tag "meshsweep block v1" keeps a block signature from
      ever being valid as another message the same key signs (a HELLO,
      a future record signature): those will carry other tags. "v1"
      versions the layout: a new layout gets a new tag, never a new
      meaning for the old one.
    - The pool id: a block signed in one pool does not verify in another
      (a member of two pools cannot have its records replayed across).
      A node in no pool (`meshsweep run`) signs with the zero pool id; its
      blocks never travel (the node re-signs an old block it serves
      when the signature does not verify under its current pool, see
      node/actor/ms_node.c "Signed blocks").
    - Per record its seq, its kind and the BLAKE2b-256 of its payload,
      not the payload itself: the signature is over at most 2,918 bytes
      whatever the payloads weigh (a block may carry 64 x 64 KiB), and
      DESIGN.md lets a node drop the claim and release payloads of a
      finished task while keeping the signed headers: with the hashes in
      the signed bytes, the block still verifies from its header, the
      hashes and the records that were kept. The seq is redundant with
      first seq + i; it is there so each 44-byte record entry names its
      record on its own. The kind is signed so that a relay cannot turn a
      result into an unknown kind (stored, not applied) or back.
    - One signature per block, not per record: Ed25519 verification is
      the expensive part (about 50 us), and a block is the unit of
      transfer and merge anyway; a 64-record block costs one verify.

    What was not done. Ed25519ph (pre-hashed) would let a signer stream
    the message; the message here is small, so plain Ed25519 over the
    whole buffer is simpler and the standard choice. Batch verification
    (verifying many blocks at once, faster per signature) is not in
    libsodium; the cost is measured in docs/BENCHMARKS.md "Signing".
*/
#include "ms_wire_sign.h"
#include "ms_be.h"
#include "ms_hash.h"

#include <string.h>

_Static_assert(sizeof MS_WIRE_SIGN_TAG - 1 == MS_WIRE_SIGN_TAG_BYTES,
               "tag length");
_Static_assert(MS_WIRE_SIGNATURE_BYTES == MS_IDENTITY_SIG_BYTES,
               "an Ed25519 signature");
_Static_assert(MS_WIRE_ID_BYTES == MS_IDENTITY_PK_BYTES, "origin is a key");
_Static_assert(MS_WIRE_SIGNATURE_BYTES <= MS_WIRE_MAX_SIGNATURE_BYTES,
               "a signature fits the wire");

//  --------------------------------------------------------------------------
//  The view of a block given as arrays.

ms_wire_block_view_t
ms_wire_block_view(const uint8_t *origin, uint64_t incarnation,
                   uint64_t first_seq, size_t n, const uint32_t *kinds,
                   const uint8_t *const *payloads, const size_t *lens)
{
    return (ms_wire_block_view_t){.origin = origin,
                                  .incarnation = incarnation,
                                  .first_seq = first_seq,
                                  .n_records = n,
                                  .kinds = kinds,
                                  .payloads = payloads,
                                  .lens = lens};
}

//  --------------------------------------------------------------------------
//  A view of a wire block over the caller's arrays.

int
ms_wire_block_view_init(ms_wire_block_view_t *view,
                        const ms_wire_block_t *block,
                        uint32_t kinds[MS_WIRE_BLOCK_MAX_RECORDS],
                        const uint8_t *payloads[MS_WIRE_BLOCK_MAX_RECORDS],
                        size_t lens[MS_WIRE_BLOCK_MAX_RECORDS])
{
    memset(view, 0, sizeof *view);
    if (block->n_records == 0 || block->n_records > MS_WIRE_BLOCK_MAX_RECORDS)
        return MS_ERR_INVALID;
    for (size_t i = 0; i < block->n_records; i++) {
        kinds[i] = block->records[i].kind;
        payloads[i] = block->records[i].payload;
        lens[i] = block->records[i].payload_bytes;
    }
    view->origin = block->origin;
    view->incarnation = block->incarnation;
    view->first_seq = block->first_seq;
    view->n_records = block->n_records;
    view->kinds = kinds;
    view->payloads = payloads;
    view->lens = lens;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The signed bytes of a block.

int
ms_wire_block_signed_bytes(const uint8_t pool_id[MS_WIRE_ID_BYTES],
                           const ms_wire_block_view_t *block,
                           uint8_t out[MS_WIRE_SIGN_MAX_BYTES], size_t *n)
{
    *n = 0;
    size_t count = block->n_records;
    if (count == 0 || count > MS_WIRE_BLOCK_MAX_RECORDS ||
        block->first_seq == 0 || block->first_seq > UINT64_MAX - (count - 1) ||
        !block->origin)
        return MS_ERR_INVALID;
    uint8_t *p = out;
    memcpy(p, MS_WIRE_SIGN_TAG, MS_WIRE_SIGN_TAG_BYTES);
    p += MS_WIRE_SIGN_TAG_BYTES;
    memcpy(p, pool_id, MS_WIRE_ID_BYTES);
    p += MS_WIRE_ID_BYTES;
    memcpy(p, block->origin, MS_WIRE_ID_BYTES);
    p += MS_WIRE_ID_BYTES;
    p = ms_be_put64(p, block->incarnation);
    p = ms_be_put64(p, block->first_seq);
    p = ms_be_put32(p, (uint32_t) count);
    for (size_t i = 0; i < count; i++) {
        if (block->lens[i] && !block->payloads[i])
            return MS_ERR_INVALID;
        p = ms_be_put64(p, block->first_seq + i);
        p = ms_be_put32(p, block->kinds[i]);
        ms_hash_t h;
        ms_hash_bytes(block->payloads[i], block->lens[i], &h);
        memcpy(p, h.bytes, MS_WIRE_ID_BYTES);
        p += MS_WIRE_ID_BYTES;
    }
    *n = (size_t) (p - out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Sign our own block.

int
ms_wire_block_sign(const ms_identity_t *identity,
                   const uint8_t pool_id[MS_WIRE_ID_BYTES],
                   const ms_wire_block_view_t *block,
                   uint8_t sig[MS_WIRE_SIGNATURE_BYTES])
{
    if (!block->origin ||
        memcmp(block->origin, ms_identity_public_key(identity),
               MS_WIRE_ID_BYTES) != 0)
        return MS_ERR_INVALID;
    uint8_t msg[MS_WIRE_SIGN_MAX_BYTES];
    size_t n;
    int rc = ms_wire_block_signed_bytes(pool_id, block, msg, &n);
    if (rc != MS_OK)
        return rc;
    return ms_identity_sign(identity, msg, n, sig);
}

//  --------------------------------------------------------------------------
//  Check a block's signature by its origin.

int
ms_wire_block_verify(const uint8_t pool_id[MS_WIRE_ID_BYTES],
                     const ms_wire_block_view_t *block, const uint8_t *sig,
                     size_t sig_bytes)
{
    uint8_t msg[MS_WIRE_SIGN_MAX_BYTES];
    size_t n;
    int rc = ms_wire_block_signed_bytes(pool_id, block, msg, &n);
    if (rc != MS_OK)
        return rc;
    if (sig_bytes != MS_WIRE_SIGNATURE_BYTES || !sig)
        return MS_ERR_BADSIG;
    return ms_identity_verify(block->origin, msg, n, sig);
}
