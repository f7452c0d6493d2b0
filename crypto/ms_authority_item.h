/*  =========================================================================
    ms_authority_item - items signed by a pool authority: revocations and
    quarantine clears

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission" and "Records and
    anti-entropy": besides certificates, the authority issues items that
    every node keeps in a grow-only set reconciled by digest, outside the
    per-origin logs:

    - REVOKE {pool_id, subject, cut}: the subject key (a node id, or an
      enrollment key) is no longer a member. The cut says which of its
      records still count: `all` cuts every one (none of its records
      counts any more, past ones included: for a key that was stolen or a
      node that lied), or a list of (incarnation, highest seq kept), a
      version-vector prefix: records of a listed incarnation up to that
      seq keep counting; later ones, and those of any incarnation not
      listed, are still stored (so stores converge) but ignored for
      claims, results and strikes (for a node that was honest until now).
    - CLEAR_QUARANTINE {pool_id, subject, cut}: forgives the strikes
      that subject's results inside the cut earned (DESIGN.md
      "Verification"), so its quarantine lifts; strikes of its results
      above the cut still count. The cut is a list of (incarnation,
      highest seq), as in a revocation (`all` is refused: what it covers
      would depend on when a node applies the item). Forgiveness is thus
      a function of the item and the records, not of arrival order.
      Kind 2, the first clear encoding (no cut: "the strikes held when the
      clear is applied"), is refused when decoded; clears are kind 3.

    Both carry issued_at (seconds since the epoch, wall clock, for people
    and for ordering two items about one subject) and serial (the
    authority's counter), and are signed by the authority key, whose hash
    is the pool id (ms_cert_pool_id), so an item can name no other pool.

    Canonical encoding (signed bytes = the encoding up to the signature;
    integers big-endian; one item has one encoding):

        magic "MSA1" (4) | kind u8 | pool_id (32) | subject (32) |
        issuer (32) | issued_at i64 | serial u64 |
        REVOKE and CLEAR_QUARANTINE: cut_all u8 (1: all, 0: list) |
                     n_cuts u16 | n_cuts x (incarnation u64 | max_seq u64)
        | signature (64)

    With cut_all 1 (REVOKE only), n_cuts is 0; with cut_all 0, n_cuts is 1..
    MS_AUTHORITY_ITEM_MAX_CUTS and the incarnations are strictly
    increasing (so a list has one order). Decoding is strict: unknown kind,
    a wrong length, a non-canonical cut or trailing bytes are refused.

    Text file form (`meshsweep pool revoke --out FILE`), one line like a
    certificate bundle: "meshsweep-authority-item-v1 " BASE64 "\n" (the
    encoding in base64, libsodium original variant).
*/
#ifndef MS_AUTHORITY_ITEM_H
#define MS_AUTHORITY_ITEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_cert.h"
#include "ms_err.h"
#include "ms_hash.h"

#define MS_AUTHORITY_ITEM_MAX_CUTS 64 // incarnations in one cut list
#define MS_AUTHORITY_ITEM_MAX_BYTES                                            \
    (4 + 1 + 3 * 32 + 8 + 8 + 1 + 2 + MS_AUTHORITY_ITEM_MAX_CUTS * 16 + 64)

//  What an item says.
typedef enum {
    MS_AUTHORITY_ITEM_REVOKE = 1,              // subject is no longer a member
    MS_AUTHORITY_ITEM_CLEAR_QUARANTINE_V1 = 2, // old clear without a cut:
                                               // refused (order-dependent)
    MS_AUTHORITY_ITEM_CLEAR_QUARANTINE = 3,    // forgive subject's strikes
                                               // inside the cut
} ms_authority_item_kind_t;

//  One incarnation of the subject's log and the highest seq of the cut:
//  for REVOKE, records with seq <= max_seq still count; for
//  CLEAR_QUARANTINE, strikes of results with seq <= max_seq are forgiven.
typedef struct {
    uint64_t incarnation; // the origin's store incarnation
    uint64_t max_seq;     // the highest seq inside the cut
} ms_authority_cut_t;

//  One authority item. Plain value type (about 1.2 KB): copy it freely.
typedef struct {
    ms_authority_item_kind_t kind;          // REVOKE or CLEAR_QUARANTINE
    uint8_t pool_id[MS_CERT_POOL_ID_BYTES]; // the pool it applies to
    uint8_t subject[MS_CERT_KEY_BYTES];     // the key it is about
    uint8_t issuer[MS_CERT_KEY_BYTES];      // the authority key
    int64_t issued_at;                      // s since the epoch
    uint64_t serial;                        // the authority's counter
    bool cut_all;                           // REVOKE: every record cut
    uint32_t n_cuts;                        // entries in cuts
    ms_authority_cut_t cuts[MS_AUTHORITY_ITEM_MAX_CUTS]; // by incarnation
    uint8_t signature[MS_CERT_SIG_BYTES];                // by issuer
} ms_authority_item_t;

//  The name of a kind ("revoke", "clear-quarantine"), or "unknown".
const char *ms_authority_item_kind_name(int kind);

//  Check the fields without the signature: a known kind; for REVOKE a cut
//  that is `all` with no entries, or 1..MAX entries with strictly
//  increasing incarnations; for CLEAR_QUARANTINE 1..MAX entries (never
//  `all`) likewise; issued_at >= 0. MS_OK or MS_ERR_INVALID (diag says
//  which field; kind 2, the clear without a cut, is an unknown kind).
int ms_authority_item_check_fields(const ms_authority_item_t *item,
                                   ms_diag_t *diag);

//  Canonical encoding of item into out (at least
//  MS_AUTHORITY_ITEM_MAX_BYTES). Returns the byte count, or 0 when the
//  fields are out of contract (ms_authority_item_check_fields).
size_t ms_authority_item_encode(const ms_authority_item_t *item, uint8_t *out);

//  Decode an item: the whole of buf (n bytes) must be one item, strictly
//  canonical (see the prose). MS_OK or MS_ERR_PROTOCOL (diag). Does not
//  check the signature.
int ms_authority_item_decode(const uint8_t *buf, size_t n,
                             ms_authority_item_t *out, ms_diag_t *diag);

//  Sign item with the authority secret key sk (64 bytes): sets issuer to
//  sk's public half, pool_id to that key's pool id, and the signature over
//  the canonical encoding. MS_OK; MS_ERR_INVALID (fields: diag).
int ms_authority_item_sign(ms_authority_item_t *item,
                           const uint8_t sk[MS_CERT_SECRET_BYTES],
                           ms_diag_t *diag);

//  Verify item against the pool authority key: fields, issuer equal to
//  authority_pk, pool_id equal to its pool id, and the signature. MS_OK;
//  MS_ERR_INVALID (fields); MS_ERR_UNTRUSTED (another issuer or pool);
//  MS_ERR_BADSIG. diag says why. Thread-safe.
int ms_authority_item_verify(const ms_authority_item_t *item,
                             const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                             ms_diag_t *diag);

//  The item's digest, BLAKE2b-256 of its whole encoding (signature
//  included): its key in the grow-only set. MS_OK or MS_ERR_INVALID
//  (fields out of contract).
int ms_authority_item_digest(const ms_authority_item_t *item, ms_hash_t *out);

//  Write item's text form to path (mode 0644, atomically: temporary file,
//  fsync, rename). MS_OK; MS_ERR_INVALID (fields); MS_ERR_IO (diag names
//  the path).
int ms_authority_item_save(const char *path, const ms_authority_item_t *item,
                           ms_diag_t *diag);

//  Read an item's text form from path and check it is self-consistent:
//  format, decoding, pool id equal to the issuer's, signature by the
//  issuer. Whether the issuer is *your* pool's authority is the caller's
//  check (ms_authority_item_verify with its own key). MS_OK;
//  MS_ERR_NOTFOUND (no file); MS_ERR_IO; MS_ERR_INVALID (format: diag
//  names the path and what); MS_ERR_UNTRUSTED / MS_ERR_BADSIG.
int ms_authority_item_load(const char *path, ms_authority_item_t *out,
                           ms_diag_t *diag);

#endif
