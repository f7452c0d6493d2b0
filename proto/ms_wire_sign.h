/*  =========================================================================
    ms_wire_sign - the signed bytes of a block of records; sign and verify

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Records and anti-entropy": records travel in signed blocks
    (1 to 64 records, one Ed25519 signature by the block's origin over the
    block header and the hashes of its records). The origin IS the
    signer's public key, so a block needs nothing else to be checked.

    The signed bytes (all integers big-endian, no padding; 102 + 44 n
    bytes for n records, 2,918 at most):

      "meshsweep block v1"   18 bytes, the domain tag (no NUL)
      pool id                32 bytes (zero when the node is in no pool)
      origin                 32 bytes, the signer's Ed25519 public key
      incarnation            u64
      first seq              u64
      record count n         u32, 1..64
      then per record i:     seq (u64, first seq + i), kind (u32),
                             BLAKE2b-256 of its payload (32 bytes)

    Full rationale in the prose block of ms_wire_sign.c. All functions are
    reentrant and thread-safe (no shared state).
*/
#ifndef MS_WIRE_SIGN_H
#define MS_WIRE_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"
#include "ms_identity.h"
#include "ms_wire.h"

#define MS_WIRE_SIGN_TAG "meshsweep block v1" // domain tag, no NUL
#define MS_WIRE_SIGN_TAG_BYTES 18
//  Tag, pool id, origin, incarnation, first seq, record count.
#define MS_WIRE_SIGN_HEADER_BYTES                                              \
    (MS_WIRE_SIGN_TAG_BYTES + 2 * MS_WIRE_ID_BYTES + 8 + 8 + 4)
//  Per record: seq, kind, BLAKE2b-256 of the payload.
#define MS_WIRE_SIGN_RECORD_BYTES (8 + 4 + MS_WIRE_ID_BYTES)
//  Signed bytes of a block of 64 records.
#define MS_WIRE_SIGN_MAX_BYTES                                                 \
    (MS_WIRE_SIGN_HEADER_BYTES +                                               \
     MS_WIRE_BLOCK_MAX_RECORDS * MS_WIRE_SIGN_RECORD_BYTES)
#define MS_WIRE_SIGNATURE_BYTES 64 // an Ed25519 signature

//  A block as the signer sees it: borrowed arrays, so that the store
//  (kinds, payloads, lens arrays) and the wire (ms_wire_block_t, through
//  ms_wire_block_view_init) share one function. Record i has seq
//  first_seq + i.
typedef struct {
    const uint8_t *origin;          // MS_WIRE_ID_BYTES: the signer's key
    uint64_t incarnation;           // the origin's store incarnation
    uint64_t first_seq;             // seq of record 0, >= 1
    size_t n_records;               // 1..MS_WIRE_BLOCK_MAX_RECORDS
    const uint32_t *kinds;          // n_records kinds
    const uint8_t *const *payloads; // n_records (NULL where lens[i] is 0)
    const size_t *lens;             // n_records payload lengths, bytes
} ms_wire_block_view_t;

//  The view of a block given as the store's arrays (N entries each; all
//  borrowed, as the view borrows them). Cannot fail: the signer and
//  ms_wire_block_signed_bytes check what it holds.
ms_wire_block_view_t
ms_wire_block_view(const uint8_t *origin, uint64_t incarnation,
                   uint64_t first_seq, size_t n, const uint32_t *kinds,
                   const uint8_t *const *payloads, const size_t *lens);

//  Fill *view from a wire block, using the caller's arrays (each of
//  MS_WIRE_BLOCK_MAX_RECORDS entries) for kinds, payloads and lengths.
//  view borrows block and the arrays. Returns MS_OK, or MS_ERR_INVALID
//  when block has 0 or more than MS_WIRE_BLOCK_MAX_RECORDS records.
int ms_wire_block_view_init(ms_wire_block_view_t *view,
                            const ms_wire_block_t *block,
                            uint32_t kinds[MS_WIRE_BLOCK_MAX_RECORDS],
                            const uint8_t *payloads[MS_WIRE_BLOCK_MAX_RECORDS],
                            size_t lens[MS_WIRE_BLOCK_MAX_RECORDS]);

//  Write the signed bytes of block (see above) for pool POOL_ID into out
//  and their length into *n. Costs one BLAKE2b-256 per record over its
//  payload. Returns MS_OK, or MS_ERR_INVALID (n_records 0 or over 64,
//  first_seq 0, a seq that overflows, a payload NULL with a length).
int ms_wire_block_signed_bytes(const uint8_t pool_id[MS_WIRE_ID_BYTES],
                               const ms_wire_block_view_t *block,
                               uint8_t out[MS_WIRE_SIGN_MAX_BYTES], size_t *n);

//  Sign block for pool POOL_ID with identity (whose public key must be
//  block->origin: a node signs only its own blocks) into sig. Returns
//  MS_OK; MS_ERR_INVALID for a block ms_wire_block_signed_bytes refuses,
//  an origin that is not identity's key, or libsodium refusing.
int ms_wire_block_sign(const ms_identity_t *identity,
                       const uint8_t pool_id[MS_WIRE_ID_BYTES],
                       const ms_wire_block_view_t *block,
                       uint8_t sig[MS_WIRE_SIGNATURE_BYTES]);

//  Check that sig (sig_bytes bytes; sig may be NULL when 0) is the
//  origin's signature of block for pool POOL_ID. Returns MS_OK;
//  MS_ERR_BADSIG when sig is not exactly MS_WIRE_SIGNATURE_BYTES long (an
//  unsigned block included) or does not verify under block->origin (a
//  byte changed anywhere in the header, a payload or the signature, a
//  block relabelled with another origin or pool); MS_ERR_INVALID for a
//  block ms_wire_block_signed_bytes refuses.
int ms_wire_block_verify(const uint8_t pool_id[MS_WIRE_ID_BYTES],
                         const ms_wire_block_view_t *block, const uint8_t *sig,
                         size_t sig_bytes);

#endif
