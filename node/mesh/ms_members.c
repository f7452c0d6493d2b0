/*  =========================================================================
    ms_members - the pool's membership table

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A flat array searched linearly: a pool is tens to a few thousand
    nodes, every lookup is a 32-byte compare per entry, and the table
    changes only on HELLOs and authority items. A hash map would save
    nothing measurable and add code.
*/
#include "ms_members.h"
#include "ms_identity.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ms_members {
    bool has_authority;                      // certificates required
    uint8_t authority[MS_MEMBERS_KEY_BYTES]; // authority public key
    uint8_t pool_id[MS_MEMBERS_KEY_BYTES];   // this pool
    ms_member_t *entries;                    // the table
    size_t n_entries, cap_entries;           // used, allocated
};

//  --------------------------------------------------------------------------
//  Make an empty table

ms_members_t *
ms_members_new(const uint8_t *authority_pk,
               const uint8_t pool_id[MS_MEMBERS_KEY_BYTES])
{
    assert(pool_id);
    ms_members_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    ms_members_set_authority(self, authority_pk, pool_id);
    return self;
}

//  --------------------------------------------------------------------------
//  Free the table

void
ms_members_destroy(ms_members_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->entries);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Whether certificates are required

bool
ms_members_has_authority(const ms_members_t *self)
{
    assert(self);
    return self->has_authority;
}

//  --------------------------------------------------------------------------
//  Replace the authority; drop admissions made under the old one

void
ms_members_set_authority(ms_members_t *self, const uint8_t *authority_pk,
                         const uint8_t pool_id[MS_MEMBERS_KEY_BYTES])
{
    assert(self && pool_id);
    bool changed = self->has_authority != (authority_pk != NULL) ||
                   memcmp(self->pool_id, pool_id, MS_MEMBERS_KEY_BYTES) != 0 ||
                   (authority_pk && memcmp(self->authority, authority_pk,
                                           MS_MEMBERS_KEY_BYTES) != 0);
    self->has_authority = authority_pk != NULL;
    if (authority_pk)
        memcpy(self->authority, authority_pk, MS_MEMBERS_KEY_BYTES);
    else
        memset(self->authority, 0, MS_MEMBERS_KEY_BYTES);
    memcpy(self->pool_id, pool_id, MS_MEMBERS_KEY_BYTES);
    if (!changed)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < self->n_entries; i++)
        if (self->entries[i].state != MS_MEMBER_ADMITTED)
            self->entries[kept++] = self->entries[i];
    self->n_entries = kept;
}

//  --------------------------------------------------------------------------
//  Find an entry by node id (mutable)

static ms_member_t *
s_find(const ms_members_t *self, const uint8_t *node_id)
{
    for (size_t i = 0; i < self->n_entries; i++)
        if (memcmp(self->entries[i].node_id, node_id, MS_MEMBERS_KEY_BYTES) ==
            0)
            return &self->entries[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Find or add an entry (its CURVE key derived); NULL when out of memory
//  or the key is not an Ed25519 point

static ms_member_t *
s_entry(ms_members_t *self, const uint8_t *node_id)
{
    ms_member_t *m = s_find(self, node_id);
    if (m)
        return m;
    uint8_t curve[MS_MEMBERS_KEY_BYTES];
    if (ms_identity_curve_public(node_id, curve) != MS_OK)
        return NULL;
    if (self->n_entries == self->cap_entries) {
        size_t cap = self->cap_entries ? 2 * self->cap_entries : 16;
        ms_member_t *grown = realloc(self->entries, cap * sizeof *grown);
        if (!grown)
            return NULL;
        self->entries = grown;
        self->cap_entries = cap;
    }
    m = &self->entries[self->n_entries++];
    memset(m, 0, sizeof *m);
    memcpy(m->node_id, node_id, MS_MEMBERS_KEY_BYTES);
    memcpy(m->curve_key, curve, MS_MEMBERS_KEY_BYTES);
    m->state = MS_MEMBER_DENIED; // placeholder until the caller sets it
    return m;
}

//  --------------------------------------------------------------------------
//  Why s_entry failed: MS_ERR_INVALID (not an Ed25519 key) or MS_ERR_NOMEM

static int
s_no_entry(const uint8_t *node_id)
{
    uint8_t curve[MS_MEMBERS_KEY_BYTES];
    return ms_identity_curve_public(node_id, curve) == MS_OK ? MS_ERR_NOMEM
                                                             : MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  Refusal for a key already in the table (revoked, denied), or -1

static int
s_standing(const ms_members_t *self, const uint8_t *node_id, int64_t now_ms)
{
    const ms_member_t *m = s_find(self, node_id);
    if (!m)
        return -1;
    if (m->state == MS_MEMBER_REVOKED)
        return MS_MEMBERS_REFUSED_REVOKED;
    if (m->state == MS_MEMBER_DENIED && now_ms < m->denied_until_ms)
        return MS_MEMBERS_REFUSED_DENIED;
    return -1;
}

//  --------------------------------------------------------------------------
//  True when the chain's leaf was issued by an enrollment key the authority
//  revoked: every node that key enrolled loses its standing with it (a
//  stolen kit is shut off), without its own key being revoked, so it
//  comes back with a chain from a new kit or from the authority.

static bool
s_enroller_revoked(const ms_members_t *self, const ms_cert_chain_t *chain)
{
    if (!chain->has_enroller)
        return false;
    const ms_member_t *e = s_find(self, chain->enroller.subject);
    return e && e->state == MS_MEMBER_REVOKED;
}

//  --------------------------------------------------------------------------
//  Check a chain for admission

int
ms_members_check(const ms_members_t *self, const ms_cert_chain_t *chain,
                 int64_t now_s, int64_t now_ms, ms_members_refusal_t *why,
                 ms_diag_t *diag)
{
    assert(self && why);
    if (!self->has_authority) {
        int standing =
            chain ? s_standing(self, chain->leaf.subject, now_ms) : -1;
        if (standing < 0)
            return MS_OK;
        *why = (ms_members_refusal_t) standing;
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "certificate", "key %s",
                                ms_members_refusal_name(*why));
    }
    if (!chain) {
        *why = MS_MEMBERS_REFUSED_NO_CERT;
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "certificate",
                                "none presented");
    }
    int standing = s_standing(self, chain->leaf.subject, now_ms);
    if (standing < 0 && s_enroller_revoked(self, chain))
        standing = MS_MEMBERS_REFUSED_REVOKED;
    if (standing >= 0) {
        *why = (ms_members_refusal_t) standing;
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "certificate", "key %s",
                                ms_members_refusal_name(*why));
    }
    //  another pool's certificate first: it may be perfectly valid there
    if (memcmp(chain->leaf.pool_id, self->pool_id, MS_MEMBERS_KEY_BYTES) != 0) {
        *why = MS_MEMBERS_REFUSED_OTHER_POOL;
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "certificate",
                                "of another pool");
    }
    int rc = ms_cert_chain_verify(chain, self->authority, now_s, diag);
    if (rc == MS_OK)
        return MS_OK;
    //  our pool id but not signed (through) our authority: forged
    *why = rc == MS_ERR_EXPIRED ? MS_MEMBERS_REFUSED_EXPIRED
                                : MS_MEMBERS_REFUSED_BAD_SIG;
    return MS_ERR_UNTRUSTED;
}

static void s_take_chain(ms_member_t *m, const ms_cert_chain_t *chain);

//  --------------------------------------------------------------------------
//  Admit by certificate

int
ms_members_admit(ms_members_t *self, const ms_cert_chain_t *chain,
                 int64_t now_s, int64_t now_ms, ms_members_refusal_t *why)
{
    assert(self && why);
    int rc = ms_members_check(self, chain, now_s, now_ms, why, NULL);
    if (rc != MS_OK)
        return rc;
    if (!chain)
        return MS_ERR_INVALID; // open pool: ms_members_admit_open
    ms_member_t *m = s_entry(self, chain->leaf.subject);
    if (!m) {
        *why = MS_MEMBERS_REFUSED_BAD_SIG; // not a valid key at all
        return MS_ERR_UNTRUSTED;
    }
    s_take_chain(m, chain);
    m->state = MS_MEMBER_ADMITTED;
    m->denied_until_ms = 0;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Admit in an open pool

int
ms_members_admit_open(ms_members_t *self,
                      const uint8_t node_id[MS_MEMBERS_KEY_BYTES],
                      const char *operator_name, int64_t now_ms,
                      ms_members_refusal_t *why)
{
    assert(self && node_id);
    if (self->has_authority)
        return MS_ERR_INVALID;
    int standing = s_standing(self, node_id, now_ms);
    if (standing >= 0) {
        if (why)
            *why = (ms_members_refusal_t) standing;
        return MS_ERR_UNTRUSTED;
    }
    ms_member_t *m = s_entry(self, node_id);
    if (!m)
        return MS_ERR_NOMEM;
    m->has_chain = false;
    if (operator_name && *operator_name)
        snprintf(m->operator_name, sizeof m->operator_name, "%s",
                 operator_name);
    else
        for (int i = 0; i < 6; i++)
            snprintf(m->operator_name + 2 * i, 3, "%02x", node_id[i]);
    m->roles = MS_CERT_ROLE_WORKER | MS_CERT_ROLE_SUBMIT;
    m->max_workers = 0;
    m->not_after = 0;
    m->state = MS_MEMBER_ADMITTED;
    m->denied_until_ms = 0;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Deny for a while

int
ms_members_deny(ms_members_t *self, const uint8_t node_id[MS_MEMBERS_KEY_BYTES],
                int64_t until_ms)
{
    assert(self && node_id);
    ms_member_t *m = s_entry(self, node_id);
    if (!m)
        return s_no_entry(node_id);
    if (m->state == MS_MEMBER_REVOKED)
        return MS_OK;
    m->state = MS_MEMBER_DENIED;
    m->denied_until_ms = until_ms;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy chain's facts (operator, roles, expiry) into m

static void
s_take_chain(ms_member_t *m, const ms_cert_chain_t *chain)
{
    m->has_chain = true;
    m->chain = *chain;
    snprintf(m->operator_name, sizeof m->operator_name, "%s",
             chain->leaf.operator_name);
    m->roles = chain->leaf.roles;
    m->max_workers = chain->leaf.max_workers;
    m->not_after = chain->leaf.not_after;
    if (chain->has_enroller && chain->enroller.not_after &&
        (!m->not_after || chain->enroller.not_after < m->not_after))
        m->not_after = chain->enroller.not_after;
}

//  --------------------------------------------------------------------------
//  Learn a chain from an authority item

int
ms_members_learn(ms_members_t *self, const ms_cert_chain_t *chain,
                 ms_members_refusal_t *why)
{
    assert(self && chain && why);
    if (!self->has_authority)
        return MS_ERR_INVALID;
    if (memcmp(chain->leaf.pool_id, self->pool_id, MS_MEMBERS_KEY_BYTES) != 0) {
        *why = MS_MEMBERS_REFUSED_OTHER_POOL;
        return MS_ERR_UNTRUSTED;
    }
    if (ms_cert_chain_verify(chain, self->authority, 0, NULL) != MS_OK) {
        *why = MS_MEMBERS_REFUSED_BAD_SIG;
        return MS_ERR_UNTRUSTED;
    }
    ms_member_t *m = s_entry(self, chain->leaf.subject);
    if (!m) {
        *why = MS_MEMBERS_REFUSED_BAD_SIG;
        return s_no_entry(chain->leaf.subject) == MS_ERR_NOMEM
                   ? MS_ERR_NOMEM
                   : MS_ERR_UNTRUSTED;
    }
    if (m->state == MS_MEMBER_ADMITTED && m->has_chain)
        return MS_OK; // the chain of its HELLO (or learned before) stays
    s_take_chain(m, chain);
    if (m->state != MS_MEMBER_REVOKED) {
        m->state = MS_MEMBER_ADMITTED;
        m->denied_until_ms = 0;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Intersect cut `into` with `with`: a record counts afterwards when it
//  counted under both

static void
s_cut_intersect(ms_members_cut_t *into, const ms_members_cut_t *with)
{
    if (into->all)
        return;
    if (with->all) {
        memset(into, 0, sizeof *into);
        into->all = true;
        return;
    }
    size_t kept = 0;
    for (size_t i = 0; i < into->n; i++)
        for (size_t j = 0; j < with->n; j++)
            if (with->upto[j].incarnation == into->upto[i].incarnation) {
                into->upto[kept].incarnation = into->upto[i].incarnation;
                into->upto[kept].seq = into->upto[i].seq < with->upto[j].seq
                                           ? into->upto[i].seq
                                           : with->upto[j].seq;
                kept++;
                break;
            }
    into->n = kept;
    if (kept == 0)
        into->all = true;
}

//  --------------------------------------------------------------------------
//  Revoke with a cut

int
ms_members_revoke(ms_members_t *self,
                  const uint8_t node_id[MS_MEMBERS_KEY_BYTES],
                  const ms_members_cut_t *cut)
{
    assert(self && node_id);
    ms_member_t *m = s_entry(self, node_id);
    if (!m)
        return s_no_entry(node_id);
    ms_members_cut_t next;
    memset(&next, 0, sizeof next);
    if (cut && !cut->all && cut->n > 0) {
        next = *cut;
        if (next.n > MS_MEMBERS_MAX_CUT)
            next.n = MS_MEMBERS_MAX_CUT;
    } else
        next.all = true;
    if (m->state == MS_MEMBER_REVOKED)
        s_cut_intersect(&m->cut, &next);
    else
        m->cut = next;
    m->state = MS_MEMBER_REVOKED;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A member in good standing now

bool
ms_members_is_member(const ms_members_t *self,
                     const uint8_t node_id[MS_MEMBERS_KEY_BYTES], int64_t now_s)
{
    assert(self && node_id);
    const ms_member_t *m = s_find(self, node_id);
    return m && m->state == MS_MEMBER_ADMITTED &&
           (m->not_after == 0 || now_s <= m->not_after) &&
           !(m->has_chain && s_enroller_revoked(self, &m->chain));
}

//  --------------------------------------------------------------------------
//  Whether a record of origin counts

bool
ms_members_counts(const ms_members_t *self,
                  const uint8_t origin[MS_MEMBERS_KEY_BYTES],
                  uint64_t incarnation, uint64_t seq)
{
    assert(self && origin);
    const ms_member_t *m = s_find(self, origin);
    if (!m)
        return false;
    if (m->state == MS_MEMBER_ADMITTED)
        return true;
    if (m->state == MS_MEMBER_DENIED)
        return m->has_chain; // denied at a HELLO, but a known member
    if (m->state != MS_MEMBER_REVOKED || m->cut.all)
        return false;
    for (size_t i = 0; i < m->cut.n; i++)
        if (m->cut.upto[i].incarnation == incarnation)
            return seq <= m->cut.upto[i].seq;
    return false;
}

//  --------------------------------------------------------------------------
//  Operator of a member

const char *
ms_members_operator(const ms_members_t *self,
                    const uint8_t node_id[MS_MEMBERS_KEY_BYTES])
{
    assert(self && node_id);
    const ms_member_t *m = s_find(self, node_id);
    if (!m || !m->operator_name[0])
        return NULL;
    if (m->has_chain || m->state == MS_MEMBER_ADMITTED)
        return m->operator_name; // (open pool: no chain, its HELLO's name)
    return NULL;
}

//  --------------------------------------------------------------------------
//  Is or was a member

bool
ms_members_known(const ms_members_t *self,
                 const uint8_t node_id[MS_MEMBERS_KEY_BYTES])
{
    assert(self && node_id);
    const ms_member_t *m = s_find(self, node_id);
    return m && (m->state == MS_MEMBER_ADMITTED || m->has_chain);
}

//  --------------------------------------------------------------------------
//  Entry by node id

const ms_member_t *
ms_members_find(const ms_members_t *self,
                const uint8_t node_id[MS_MEMBERS_KEY_BYTES])
{
    assert(self && node_id);
    return s_find(self, node_id);
}

//  --------------------------------------------------------------------------
//  Entry by CURVE key

const ms_member_t *
ms_members_find_curve(const ms_members_t *self,
                      const uint8_t curve_key[MS_MEMBERS_KEY_BYTES])
{
    assert(self && curve_key);
    for (size_t i = 0; i < self->n_entries; i++)
        if (memcmp(self->entries[i].curve_key, curve_key,
                   MS_MEMBERS_KEY_BYTES) == 0)
            return &self->entries[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Entries in a state

size_t
ms_members_count(const ms_members_t *self, ms_member_state_t state)
{
    assert(self);
    size_t n = 0;
    for (size_t i = 0; i < self->n_entries; i++)
        n += self->entries[i].state == state;
    return n;
}

//  --------------------------------------------------------------------------
//  Name of a refusal reason

const char *
ms_members_refusal_name(ms_members_refusal_t why)
{
    static const char *names[MS_MEMBERS_REFUSED_KINDS] = {
        "no_certificate", "other_pool",   "expired", "revoked",
        "bad_signature",  "key_mismatch", "denied"};
    return (unsigned) why < MS_MEMBERS_REFUSED_KINDS ? names[why] : "?";
}
