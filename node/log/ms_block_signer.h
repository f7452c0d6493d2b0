/*  =========================================================================
    ms_block_signer - signed blocks: sign ours, check peers', serve old ones

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Records and anti-entropy" (signed blocks, issue 4 item 4).
    The class owns what signing and checking a block needs, by value: the
    node's public key, the store's incarnation, the pool id blocks are
    signed for and the first seq of ours this process signed
    (signed_from); it borrows the node's identity for its secret key
    (libsodium signing is thread-safe; the secret stays in the one
    sodium_malloc region of ms_identity rather than being copied). It
    also owns the refusal counters and the table of (peer, reason)
    already logged. See ms_block_signer.c for the rules.

    Threads. ms_block_signer_sign runs on the store's writer thread
    (ms_block_signer_attach); it reads the key, the incarnation and the
    pool id, the last under the class's own small mutex, and never the
    node. Every other function is for the node's loop thread. A pool id
    change is ms_block_signer_set_pool, on the loop: it takes the mutex,
    so a block is signed whole for the old id or for the new one.

    The node creates it once its store is open and hands it what it
    needs of the node through ms_block_signer_iface_t; the class never
    calls into ms_node.
*/
#ifndef MS_BLOCK_SIGNER_H
#define MS_BLOCK_SIGNER_H

#include "ms_identity.h"
#include "ms_members.h"
#include "ms_store.h"
#include "ms_wire.h"
#include "ms_wire_sign.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_block_signer ms_block_signer_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside ms_block_signer_check only.
typedef struct {
    void *arg;
    //  The node's membership table now (borrowed for the call), or NULL
    //  when the node has none (no pool yet). NULL function: no table.
    const ms_members_t *(*members)(void *arg);
    //  Print LINE, which is always printed (not only when verbose); NULL
    //  function: the line goes to stderr with a newline.
    void (*warn)(void *arg, const char *line);
} ms_block_signer_iface_t;

//  Settings.
typedef struct {
    const ms_identity_t *identity;     // the node's key pair (borrowed; it
                                       // outlives the signer)
    uint64_t incarnation;              // the store's (ms_store_incarnation)
    uint8_t pool_id[MS_WIRE_ID_BYTES]; // blocks are signed for it (zero:
                                       // the node is in no pool)
    uint64_t signed_from; // first seq of ours this process signs: the
                          // store's held seq of ours + 1 (ms_store_held)
} ms_block_signer_config_t;

//  Counters (ms_block_signer_stats): the node's blocks_*_total figures.
typedef struct {
    uint64_t n_rejected;      // peers' blocks refused, every reason
    uint64_t n_unsigned;      // ... with no signature
    uint64_t n_bad_signature; // ... not verifying under their origin
    uint64_t n_not_admitted;  // ... of an origin not admitted
    uint64_t n_resigned;      // own blocks signed again to be served
} ms_block_signer_stats_t;

//  Create the signer with CFG and IFACE (copied). Returns NULL when
//  memory runs out. Caller owns the result; free it with
//  ms_block_signer_destroy() (after the store it is attached to).
ms_block_signer_t *ms_block_signer_new(const ms_block_signer_config_t *cfg,
                                       const ms_block_signer_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p.
void ms_block_signer_destroy(ms_block_signer_t **self_p);

//  Have STORE sign every block it makes from now on with this signer
//  (ms_store_set_signer; call it right after the store's open, before
//  the first append). The signer must outlive the store.
void ms_block_signer_attach(ms_block_signer_t *self, ms_store_t *store);

//  From now on sign for POOL_ID (MS_WIRE_ID_BYTES; all zero: no pool):
//  the node joined a pool (its first certificate, SIGHUP). SIGNED_FROM is
//  the first seq of ours signed for it (the store's held seq + 1): own
//  blocks below it are checked again when served (ms_block_signer_serve).
//  Loop thread; blocks the writer's signing for the copy only.
void ms_block_signer_set_pool(ms_block_signer_t *self,
                              const uint8_t pool_id[MS_WIRE_ID_BYTES],
                              uint64_t signed_from);

//  Copy the pool id blocks are signed for into OUT (zero: no pool). Any
//  thread.
void ms_block_signer_pool_id(ms_block_signer_t *self,
                             uint8_t out[MS_WIRE_ID_BYTES]);

//  Sign the block of records FIRST_SEQ .. FIRST_SEQ+N-1 of (ORIGIN,
//  INCARNATION), their KINDS, PAYLOADS and LENS (arrays of N, borrowed),
//  for the current pool id: SIG (MS_WIRE_SIGNATURE_BYTES of room) and
//  *SIG_LEN = MS_WIRE_SIGNATURE_BYTES. A block of another origin is left
//  unsigned (*SIG_LEN = 0, MS_OK). Returns MS_OK, or MS_ERR_INVALID for a
//  block ms_wire_block_sign refuses (0 or too many records). Any thread:
//  the store's writer calls it (ms_block_signer_attach).
int ms_block_signer_sign(ms_block_signer_t *self, const uint8_t *origin,
                         uint64_t incarnation, uint64_t first_seq, size_t n,
                         const uint32_t *kinds, const uint8_t *const *payloads,
                         const size_t *lens, uint8_t *sig, size_t *sig_len);

//  A stored block (as above) about to be served with *SIG (*SIG_LEN
//  bytes): when it is ours and this process did not sign it (an older
//  incarnation, or below signed_from), check that the signature verifies
//  under the current pool id, else sign it again into FRESH
//  (MS_WIRE_SIGNATURE_BYTES), point *SIG to FRESH and set *SIG_LEN
//  (counted in n_resigned). Other blocks are served as stored; so is one
//  that cannot be signed (peers will refuse it). Loop thread.
void ms_block_signer_serve(ms_block_signer_t *self, const uint8_t *origin,
                           uint64_t incarnation, uint64_t first_seq, size_t n,
                           const uint32_t *kinds,
                           const uint8_t *const *payloads, const size_t *lens,
                           const uint8_t **sig, size_t *sig_len,
                           uint8_t fresh[MS_WIRE_SIGNATURE_BYTES]);

//  Check BLOCK, which came on the link of peer FROM (MS_WIRE_ID_BYTES),
//  before gossip sees it: signed, by its origin, for this pool, and of an
//  origin admitted (iface.members). True: it may be merged. False:
//  refused, counted (n_rejected and one counter per reason) and logged
//  once per peer and reason (iface.warn); drop it. Loop thread.
bool ms_block_signer_check(ms_block_signer_t *self,
                           const uint8_t from[MS_WIRE_ID_BYTES],
                           const ms_wire_block_t *block);

//  Copy the counters into *OUT. Loop thread.
void ms_block_signer_stats(const ms_block_signer_t *self,
                           ms_block_signer_stats_t *out);

#endif
