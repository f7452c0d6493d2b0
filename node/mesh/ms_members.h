/*  =========================================================================
    ms_members - the pool's membership table: who is admitted, under
    which certificate, operator and roles; who is denied or revoked

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission". One table per node, keyed
    by node id (the Ed25519 public key), with the CURVE public key derived
    from it (ms_identity_curve_public) as a second key: the mesh's ZAP
    handler and the ROUTER side of a link only know the CURVE key of a
    connection. The mesh consults it for every HELLO and every later
    frame; signed blocks, authority items and verification (operators
    count, not nodes) consult it later.

    With an authority (a pool made by `meshsweep pool init`) a node is
    admitted by a certificate chain that verifies against the authority
    key at the current time (ms_cert_chain_verify), of this pool, not
    revoked, whose subject is the node's key. In an open pool
    (authority NULL) anybody with a valid HELLO is admitted and is its
    own operator (the name it sends, or its node id's short form).

    States: ADMITTED (a member in good standing while its certificate
    lasts), DENIED until a monotonic time (a key that failed its HELLO;
    it may try again afterwards), REVOKED with a cut (records of that
    origin above the cut are stored but not counted; `all` counts none).
    A revocation is final: a later valid certificate of the same key does
    not readmit it.

        ms_members_t *m = ms_members_new(authority_pk, pool_id);
        ms_members_refusal_t why;
        if (ms_members_admit(m, &chain, time(NULL), &why) == MS_OK) ...
        const char *op = ms_members_operator(m, node_id);
        ms_members_revoke(m, node_id, NULL); // cut: all
        ms_members_destroy(&m);

    Threads: one table belongs to one thread (the node loop).
*/
#ifndef MS_MEMBERS_H
#define MS_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_cert.h"
#include "ms_err.h"

typedef struct ms_members ms_members_t;

#define MS_MEMBERS_KEY_BYTES 32 // node id, CURVE key, pool id
#define MS_MEMBERS_MAX_CUT                                                     \
    64 // (incarnation, seq) pairs in a cut (as
       // MS_AUTHORITY_ITEM_MAX_CUTS)

typedef enum {
    MS_MEMBER_ADMITTED, // a member in good standing (until not_after)
    MS_MEMBER_DENIED,   // refused until denied_until_ms, then unknown
    MS_MEMBER_REVOKED   // revoked by the authority (final), with a cut
} ms_member_state_t;

//  Why a HELLO (or a certificate) was refused; counted per reason.
typedef enum {
    MS_MEMBERS_REFUSED_NO_CERT = 0,  // no certificate in the HELLO
    MS_MEMBERS_REFUSED_OTHER_POOL,   // certificate (or HELLO) of another
                                     // pool
    MS_MEMBERS_REFUSED_EXPIRED,      // a certificate of the chain expired
    MS_MEMBERS_REFUSED_REVOKED,      // the key is revoked
    MS_MEMBERS_REFUSED_BAD_SIG,      // forged: bad signature, or not issued
                                     // by our authority, or malformed
    MS_MEMBERS_REFUSED_KEY_MISMATCH, // certificate subject, HELLO node id
                                     // and link key differ
    MS_MEMBERS_REFUSED_DENIED,       // key denied for a while (no valid
                                     // HELLO in time, or refused before)
    MS_MEMBERS_REFUSED_KINDS         // number of reasons
} ms_members_refusal_t;

//  A revocation's cut: `all`, or per incarnation of the origin the
//  highest seq still counted (records above it are stored, not counted).
typedef struct {
    bool all;                 // nothing of the origin counts
    size_t n;                 // entries below (when !all)
    struct {                  //
        uint64_t incarnation; // store incarnation of the origin
        uint64_t seq;         // highest seq counted
    } upto[MS_MEMBERS_MAX_CUT];
} ms_members_cut_t;

//  One member as the table holds it. Plain value type (borrowed from the
//  table by the lookups; copy it to keep it).
typedef struct {
    uint8_t node_id[MS_MEMBERS_KEY_BYTES];        // Ed25519 public key
    uint8_t curve_key[MS_MEMBERS_KEY_BYTES];      // its CURVE public key
    bool has_chain;                               // admitted by certificate
    ms_cert_chain_t chain;                        // verified chain (has_chain)
    char operator_name[MS_CERT_OPERATOR_MAX + 1]; // operator (NUL-ended)
    uint32_t roles;                               // ms_cert_role_t bits
    uint32_t max_workers;                         // 0: no cap
    int64_t not_after;                            // s since the epoch, 0: never
    ms_member_state_t state;                      // see above
    int64_t denied_until_ms;                      // DENIED: monotonic ms
    ms_members_cut_t cut;                         // REVOKED: what still counts
} ms_member_t;

//  Make an empty table. authority_pk: the pool authority's public key
//  (MS_MEMBERS_KEY_BYTES), or NULL for an open pool; pool_id: this pool's
//  id (copied). Caller owns the result; free it with ms_members_destroy().
//  NULL only when memory runs out.
ms_members_t *ms_members_new(const uint8_t *authority_pk,
                             const uint8_t pool_id[MS_MEMBERS_KEY_BYTES]);

//  Free the table. NULL-safe; nulls *self_p.
void ms_members_destroy(ms_members_t **self_p);

//  Whether the pool has an authority (certificates required).
bool ms_members_has_authority(const ms_members_t *self);

//  Replace the authority key and pool id (a node that got its first
//  certificate, SIGHUP): entries admitted under the old ones are dropped
//  (revocations and denials are kept).
void ms_members_set_authority(ms_members_t *self, const uint8_t *authority_pk,
                              const uint8_t pool_id[MS_MEMBERS_KEY_BYTES]);

//  Check a chain for admission without changing the table: it must
//  verify against the authority at now_s, be of this pool, and its key
//  must not be revoked or denied (now_ms: monotonic). chain NULL = no
//  certificate. Returns MS_OK, or MS_ERR_UNTRUSTED with *why set (and
//  diag saying what, may be NULL). An open pool table refuses nothing
//  but revoked or denied keys (chain may be NULL).
int ms_members_check(const ms_members_t *self, const ms_cert_chain_t *chain,
                     int64_t now_s, int64_t now_ms, ms_members_refusal_t *why,
                     ms_diag_t *diag);

//  Admit the subject of chain (as ms_members_check, then store it:
//  operator, roles and max_workers from the leaf). A member already in
//  the table gets the new chain. Returns MS_OK; MS_ERR_UNTRUSTED (*why);
//  MS_ERR_NOMEM.
int ms_members_admit(ms_members_t *self, const ms_cert_chain_t *chain,
                     int64_t now_s, int64_t now_ms, ms_members_refusal_t *why);

//  Admit node_id in an open pool, with operator_name (NULL or "": the
//  short form of its node id, 12 hex characters). Returns MS_OK;
//  MS_ERR_UNTRUSTED (revoked or denied: *why, may be NULL); MS_ERR_INVALID
//  (the table has an authority: use ms_members_admit); MS_ERR_NOMEM.
int ms_members_admit_open(ms_members_t *self,
                          const uint8_t node_id[MS_MEMBERS_KEY_BYTES],
                          const char *operator_name, int64_t now_ms,
                          ms_members_refusal_t *why);

//  Deny node_id until until_ms (monotonic): it is not a member and its
//  HELLOs are refused until then. A revoked key stays revoked. Returns
//  MS_OK; MS_ERR_INVALID (not a valid Ed25519 key); MS_ERR_NOMEM.
int ms_members_deny(ms_members_t *self,
                    const uint8_t node_id[MS_MEMBERS_KEY_BYTES],
                    int64_t until_ms);

//  Learn a member's chain from an authority item (a chain some node
//  admitted and gossiped): it must verify against the authority with
//  expiry ignored (ms_cert_chain_verify at time 0) and be of this pool.
//  The key gets the chain, operator, roles and expiry; an unknown or
//  denied key becomes ADMITTED (a member known by certificate; its link
//  still needs its own HELLO), a revoked key stays revoked (its operator
//  becomes known for its old records), an admitted one keeps the chain it
//  has unless it had none. Returns MS_OK; MS_ERR_UNTRUSTED (*why: other
//  pool, bad signature; an open pool table learns nothing: MS_ERR_INVALID);
//  MS_ERR_NOMEM.
int ms_members_learn(ms_members_t *self, const ms_cert_chain_t *chain,
                     ms_members_refusal_t *why);

//  Revoke node_id with a cut (NULL = all). Final. A key not in the table
//  gets an entry (it can never be admitted). A key revoked before keeps
//  the intersection of the two cuts (a record counts only when both let
//  it count: the order two revocations arrive in does not matter).
//  Returns MS_OK; MS_ERR_INVALID (not a valid Ed25519 key); MS_ERR_NOMEM.
int ms_members_revoke(ms_members_t *self,
                      const uint8_t node_id[MS_MEMBERS_KEY_BYTES],
                      const ms_members_cut_t *cut);

//  Whether node_id is a member in good standing now: admitted, not
//  revoked, not denied, certificate not expired at now_s.
bool ms_members_is_member(const ms_members_t *self,
                          const uint8_t node_id[MS_MEMBERS_KEY_BYTES],
                          int64_t now_s);

//  Whether a record (origin, incarnation, seq) counts: its origin is or
//  was a member and it is within the cut of a revocation (always true
//  for an admitted origin, also once its certificate expired, and for a
//  key whose chain is known; false for an unknown or denied one).
bool ms_members_counts(const ms_members_t *self,
                       const uint8_t origin[MS_MEMBERS_KEY_BYTES],
                       uint64_t incarnation, uint64_t seq);

//  Whether node_id is or was a member: admitted (expired or not), or
//  revoked with a chain known, or with a chain learned from an item. The
//  signed-block hook: a block of any other origin is refused.
bool ms_members_known(const ms_members_t *self,
                      const uint8_t node_id[MS_MEMBERS_KEY_BYTES]);

//  The operator of node_id (borrowed, valid until the table changes): of
//  any key whose certificate this node saw (at a HELLO or as an authority
//  item), also once expired or revoked, so verification can name the
//  operator behind an old record; in an open pool the name its HELLO
//  gave. NULL when no certificate of node_id is known.
const char *ms_members_operator(const ms_members_t *self,
                                const uint8_t node_id[MS_MEMBERS_KEY_BYTES]);

//  The entry of node_id (borrowed, valid until the table changes), or
//  NULL.
const ms_member_t *ms_members_find(const ms_members_t *self,
                                   const uint8_t node_id[MS_MEMBERS_KEY_BYTES]);

//  The entry whose CURVE key is curve_key (borrowed), or NULL.
const ms_member_t *
ms_members_find_curve(const ms_members_t *self,
                      const uint8_t curve_key[MS_MEMBERS_KEY_BYTES]);

//  Entries in the table with state `state`.
size_t ms_members_count(const ms_members_t *self, ms_member_state_t state);

//  Short name of a refusal reason ("no_certificate", "other_pool",
//  "expired", "revoked", "bad_signature", "key_mismatch", "denied"), for
//  logs and counter names.
const char *ms_members_refusal_name(ms_members_refusal_t why);

#endif
