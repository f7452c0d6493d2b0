/*  =========================================================================
    ms_items - the grow-only set of authority items: members' certificate
    chains, revocations, quarantine clears; reconciled by digest

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Records and anti-entropy": authority items form a
    grow-only set reconciled by digest, outside the per-origin logs. An
    item travels and is stored as a type byte then its canonical
    encoding:

        1 (MS_ITEMS_CHAIN)     | ms_cert_chain_encode   a member's chain
        2 (MS_ITEMS_AUTHORITY) | ms_authority_item_encode  revocation or
                                                         quarantine clear

    Its digest is BLAKE2b-256 of those bytes. A chain is an item so that
    every node learns the operator and roles of every member, also of
    members it never linked to (verification counts operators, and a
    record outlives its origin's link).

    Reconciliation (node/mesh/ms_item_sync drives it over ITEM_DIGEST,
    ITEM_LIST and ITEMS): the digest of the set is BLAKE2b-256 of its item
   digests in ascending byte order (so two nodes holding the same items have the
    same digest whatever the order they learned them in; the empty set
    hashes nothing). When a peer's digest differs, one side sends its
    list of digests; the other answers with the items the list lacks
    (ms_items_missing), and sends its own list when the peer's list named
    items it lacks (ms_items_count_unknown). A set of N items costs one
    32-byte digest per round while equal, and 32 N bytes once when not:
    items are few (one chain per member plus rare revocations), so no
    Merkle tree or IBLT was worth its code.

    Checking (ms_items_check): every item is verified before it is kept:
    a chain with ms_cert_chain_verify against the pool authority with
    expiry ignored (DESIGN.md: expiry closes links, it never makes old
    records unacceptable, and the operator of an old record must stay
    known), an authority item with ms_authority_item_verify. The set
    itself keeps bytes only: the caller checks, then adds.

        ms_items_t *set = ms_items_new();
        ms_items_parsed_t it;
        if (ms_items_check(bytes, n, authority_pk, &it, &diag) == MS_OK)
            ms_items_add(set, bytes, n, &added);
        uint8_t digest[32];
        ms_items_digest(set, digest);
        ms_items_destroy(&set);

    Threads: one set belongs to one thread (the node loop);
    ms_items_check and the encoders are thread-safe.
*/
#ifndef MS_ITEMS_H
#define MS_ITEMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_authority_item.h"
#include "ms_cert.h"
#include "ms_err.h"
#include "ms_hash.h"

typedef struct ms_items ms_items_t;

#define MS_ITEMS_DIGEST_BYTES 32
//  Bytes of one item at most (type byte + the larger encoding).
#define MS_ITEMS_MAX_BYTES                                                     \
    (1 + (MS_CERT_CHAIN_MAX_BYTES > MS_AUTHORITY_ITEM_MAX_BYTES                \
              ? MS_CERT_CHAIN_MAX_BYTES                                        \
              : MS_AUTHORITY_ITEM_MAX_BYTES))
//  Items one set holds at most (a bound against a flood of valid chains).
#define MS_ITEMS_MAX_COUNT 8192

//  An item's type (its first byte).
typedef enum {
    MS_ITEMS_CHAIN = 1,     // a member's certificate chain
    MS_ITEMS_AUTHORITY = 2, // an ms_authority_item_t
} ms_items_type_t;

//  A checked item. Plain value type (about 2.5 KB).
typedef struct {
    ms_items_type_t type;     // which of the two below
    ms_hash_t digest;         // BLAKE2b-256 of the item's bytes
    ms_cert_chain_t chain;    // MS_ITEMS_CHAIN
    ms_authority_item_t item; // MS_ITEMS_AUTHORITY
} ms_items_parsed_t;

//  Item bytes of a chain into out (MS_ITEMS_MAX_BYTES). Returns the byte
//  count, or 0 when the chain's fields are out of contract.
size_t ms_items_encode_chain(const ms_cert_chain_t *chain, uint8_t *out);

//  Item bytes of an authority item into out (MS_ITEMS_MAX_BYTES).
//  Returns the byte count, or 0 when its fields are out of contract.
size_t ms_items_encode_authority(const ms_authority_item_t *item, uint8_t *out);

//  Decode and verify an item (bytes, n) of the pool whose authority key
//  is authority_pk: a known type, strict decoding, every signature, the
//  pool id (see the prose; a chain's expiry is not checked). Fills *out.
//  MS_OK; MS_ERR_PROTOCOL (malformed: unknown type, bad length,
//  non-canonical); MS_ERR_UNTRUSTED (another pool or issuer);
//  MS_ERR_BADSIG; MS_ERR_INVALID (fields out of contract). diag says
//  what and why. Thread-safe.
int ms_items_check(const uint8_t *bytes, size_t n,
                   const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                   ms_items_parsed_t *out, ms_diag_t *diag);

//  Make an empty set. Caller owns the result; free it with
//  ms_items_destroy(). NULL only when memory runs out.
ms_items_t *ms_items_new(void);

//  Free the set. NULL-safe; nulls *self_p.
void ms_items_destroy(ms_items_t **self_p);

//  Add an item's bytes (copied; not checked here: ms_items_check first)
//  under their digest. *added (may be NULL) says whether it was new.
//  MS_OK; MS_ERR_INVALID (n is 0 or over MS_ITEMS_MAX_BYTES);
//  MS_ERR_STORE_FULL (MS_ITEMS_MAX_COUNT items held); MS_ERR_NOMEM.
int ms_items_add(ms_items_t *self, const uint8_t *bytes, size_t n, bool *added);

//  Whether the set holds the item of this digest.
bool ms_items_has(const ms_items_t *self,
                  const uint8_t digest[MS_ITEMS_DIGEST_BYTES]);

//  The bytes of the item of this digest (borrowed, valid until the set
//  changes) and their count in *n, or NULL.
const uint8_t *ms_items_get(const ms_items_t *self,
                            const uint8_t digest[MS_ITEMS_DIGEST_BYTES],
                            size_t *n);

//  Items held.
size_t ms_items_size(const ms_items_t *self);

//  The digest of the set (see the prose) into out.
void ms_items_digest(const ms_items_t *self,
                     uint8_t out[MS_ITEMS_DIGEST_BYTES]);

//  The i-th digest in ascending order (i < ms_items_size), borrowed.
const uint8_t *ms_items_at(const ms_items_t *self, size_t i);

//  Of our items, those whose digest is not in theirs (n_theirs digests,
//  any order): their digests go to out (up to max), in ascending order.
//  Returns how many went to out.
size_t ms_items_missing(const ms_items_t *self,
                        const uint8_t (*theirs)[MS_ITEMS_DIGEST_BYTES],
                        size_t n_theirs, uint8_t (*out)[MS_ITEMS_DIGEST_BYTES],
                        size_t max);

//  How many of theirs (n_theirs digests) we do not hold.
size_t ms_items_count_unknown(const ms_items_t *self,
                              const uint8_t (*theirs)[MS_ITEMS_DIGEST_BYTES],
                              size_t n_theirs);

#endif
