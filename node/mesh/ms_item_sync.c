/*  =========================================================================
    ms_item_sync - the node's side of the authority items: check, keep,
    apply, and reconcile them with the linked peers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_item_sync.h for what the class owns and the reconciliation it
    runs. An item goes through one path wherever it comes from (a peer's
    ITEMS, the API, a peer's chain at link up, our own chain at join):
    s_take checks it against the authority key, keeps it in the store
    (a quarantine clear with ms_store_put_clear, which applies it in the
    same commit; anything else with ms_store_put_item, which re-derives
    what a revocation's subject touched), adds it to the set, applies it
    (s_apply: members table, operators, the mesh and the node) and
    pushes it. Items loaded from the store at join are checked and
    applied but not kept again or pushed.
*/
#include "ms_item_sync.h"

#include "ms_authority_item.h"
#include "ms_hash.h"

#include <jansson.h>
#include <sodium.h>

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  When a peer was last sent our ITEM_LIST.
typedef struct {
    uint8_t id[MS_ITEM_SYNC_ID_BYTES]; // the peer
    int64_t list_at;                   // monotonic ms of the last ITEM_LIST
} s_peer_t;

struct ms_item_sync {
    ms_item_sync_config_t cfg;               // settings (store borrowed)
    ms_item_sync_iface_t iface;              // the node's side
    ms_items_t *items;                       // the set; NULL: not joined
    ms_members_t *members;                   // borrowed while joined
    uint8_t authority_pk[MS_CERT_KEY_BYTES]; // while joined
    int64_t digest_at;                       // monotonic ms: next round
    s_peer_t *peers;                         // list times per peer
    size_t n_peers;                          // entries in peers
    ms_item_sync_stats_t stats;              // counters (n_items: 0)
};

ms_item_sync_t *
ms_item_sync_new(const ms_item_sync_config_t *cfg,
                 const ms_item_sync_iface_t *iface)
{
    assert(cfg && cfg->store && iface);
    ms_item_sync_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cfg = *cfg;
    self->iface = *iface;
    return self;
}

void
ms_item_sync_destroy(ms_item_sync_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_item_sync_t *self = *self_p;
    ms_items_destroy(&self->items);
    free(self->peers);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Send one envelope to a peer (errors: the next round tries again).

static void
s_send_env(ms_item_sync_t *self, const uint8_t to[MS_ITEM_SYNC_ID_BYTES],
           const ms_wire_envelope_t *env)
{
    if (self->iface.send)
        self->iface.send(self->iface.arg, to, env);
}

//  --------------------------------------------------------------------------
//  The push targets into out (at most max). Returns how many.

static int
s_active(ms_item_sync_t *self, uint8_t (*out)[MS_ITEM_SYNC_ID_BYTES], int max)
{
    return self->iface.active_peers
               ? self->iface.active_peers(self->iface.arg, out, max)
               : 0;
}

//  --------------------------------------------------------------------------
//  Apply a checked item to the members table, the store's operators, the
//  mesh and the node.

static void
s_apply(ms_item_sync_t *self, const ms_items_parsed_t *it)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_t h;
    if (it->type == MS_ITEMS_CHAIN) {
        ms_members_refusal_t why;
        ms_members_learn(self->members, &it->chain, &why);
        // Its operator counts for verification even when we never link
        // to it (a member known only through the items of the pool).
        if (ms_members_has_authority(self->members) &&
            it->chain.leaf.operator_name[0])
            ms_store_set_operator(self->cfg.store, it->chain.leaf.subject,
                                  it->chain.leaf.operator_name);
        return;
    }
    if (it->item.kind != MS_AUTHORITY_ITEM_REVOKE)
        return; // a quarantine clear: applied by the store (put_clear)
    ms_members_cut_t cut;
    memset(&cut, 0, sizeof cut);
    cut.all = it->item.cut_all;
    for (uint32_t i = 0; !cut.all && i < it->item.n_cuts; i++) {
        cut.upto[cut.n].incarnation = it->item.cuts[i].incarnation;
        cut.upto[cut.n].seq = it->item.cuts[i].max_seq;
        cut.n++;
    }
    memcpy(h.bytes, it->item.subject, MS_HASH_BYTES);
    ms_hash_hex(&h, hex);
    bool self_revoked =
        memcmp(it->item.subject, self->cfg.node_pk, MS_HASH_BYTES) == 0;
    if (self->iface.revoke && !self_revoked)
        self->iface.revoke(self->iface.arg, it->item.subject, &cut);
    else
        ms_members_revoke(self->members, it->item.subject, &cut);
    self->stats.n_revocations++;
    if (self->iface.revoked)
        self->iface.revoked(self->iface.arg, it->item.subject, self_revoked);
    fprintf(stderr,
            "meshsweepd: %s %.12s revoked by the pool authority (cut: %s); "
            "its later records are kept but not counted\n",
            self_revoked ? "this node" : "node", hex,
            cut.all ? "all" : "version vector prefix");
}

//  --------------------------------------------------------------------------
//  ITEMS with the items of digests (n of them), in batches.

static void
s_send_items(ms_item_sync_t *self, const uint8_t to[MS_ITEM_SYNC_ID_BYTES],
             const uint8_t (*digests)[MS_ITEMS_DIGEST_BYTES], size_t n)
{
    ms_wire_item_t batch[MS_WIRE_MAX_ITEMS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        const uint8_t *bytes = ms_items_get(self->items, digests[i], &len);
        if (!bytes || len > MS_WIRE_MAX_ITEM_BYTES)
            continue;
        batch[k].bytes = (uint8_t *) bytes;
        batch[k].n_bytes = len;
        if (++k == MS_WIRE_MAX_ITEMS || i + 1 == n) {
            ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION,
                                      .body = MS_WIRE_BODY_ITEMS};
            env.items.items = batch;
            env.items.n_items = k;
            s_send_env(self, to, &env);
            k = 0;
        }
    }
    if (k > 0) {
        ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION,
                                  .body = MS_WIRE_BODY_ITEMS};
        env.items.items = batch;
        env.items.n_items = k;
        s_send_env(self, to, &env);
    }
}

//  --------------------------------------------------------------------------
//  ITEM_DIGEST to one peer.

static void
s_send_digest(ms_item_sync_t *self, const uint8_t to[MS_ITEM_SYNC_ID_BYTES])
{
    ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_ITEM_DIGEST};
    ms_items_digest(self->items, env.item_digest.digest);
    env.item_digest.n_items = (uint32_t) ms_items_size(self->items);
    s_send_env(self, to, &env);
}

//  --------------------------------------------------------------------------
//  The list-time entry of peer id, made when new; NULL when memory ran
//  out (the list then goes unlimited, as to an unknown peer).

static s_peer_t *
s_peer(ms_item_sync_t *self, const uint8_t id[MS_ITEM_SYNC_ID_BYTES])
{
    for (size_t i = 0; i < self->n_peers; i++)
        if (memcmp(self->peers[i].id, id, MS_ITEM_SYNC_ID_BYTES) == 0)
            return &self->peers[i];
    s_peer_t *grown = realloc(self->peers, (self->n_peers + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    self->peers = grown;
    s_peer_t *p = &self->peers[self->n_peers++];
    memcpy(p->id, id, MS_ITEM_SYNC_ID_BYTES);
    p->list_at = 0;
    return p;
}

//  --------------------------------------------------------------------------
//  ITEM_LIST to one peer, at most once per MS_ITEM_SYNC_LIST_GAP_MS.

static void
s_send_list(ms_item_sync_t *self, const uint8_t to[MS_ITEM_SYNC_ID_BYTES],
            int64_t now)
{
    s_peer_t *p = s_peer(self, to);
    if (p && p->list_at && now - p->list_at < MS_ITEM_SYNC_LIST_GAP_MS)
        return;
    if (p)
        p->list_at = now;
    size_t n = ms_items_size(self->items);
    if (n > MS_WIRE_MAX_ITEM_DIGESTS)
        n = MS_WIRE_MAX_ITEM_DIGESTS;
    uint8_t(*digests)[MS_WIRE_ID_BYTES] =
        n ? malloc(n * sizeof *digests) : NULL;
    if (n && !digests)
        return;
    for (size_t i = 0; i < n; i++)
        memcpy(digests[i], ms_items_at(self->items, i), MS_WIRE_ID_BYTES);
    ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_ITEM_LIST};
    env.item_list.digests = digests;
    env.item_list.n_digests = n;
    s_send_env(self, to, &env);
    free(digests);
}

//  --------------------------------------------------------------------------
//  Check, keep, apply and (push) push an item. from: the peer it came
//  from (NULL: the API or this node). *added: it was new. Returns MS_OK
//  (new or known) or the check's error (counted, diag says why).

static int
s_take(ms_item_sync_t *self, const uint8_t *bytes, size_t n,
       const uint8_t *from, bool push, bool *added, ms_diag_t *diag)
{
    *added = false;
    if (!self->items || !self->members ||
        !ms_members_has_authority(self->members))
        return ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, "authority",
                                "this node is in no pool with an authority");
    ms_items_parsed_t it;
    int rc = ms_items_check(bytes, n, self->authority_pk, &it, diag);
    if (rc != MS_OK) {
        self->stats.n_refused++;
        if (self->stats.n_refused <= 16) {
            char text[600], peer[MS_HASH_HEX_LEN + 1] = "the API";
            if (from) {
                ms_hash_t h;
                memcpy(h.bytes, from, MS_HASH_BYTES);
                ms_hash_hex(&h, peer);
            }
            fprintf(stderr,
                    "meshsweepd: refused an authority item from %.12s: %s "
                    "(counted)\n",
                    peer, ms_diag_format(diag, text, sizeof text));
        }
        return rc;
    }
    if (ms_items_has(self->items, it.digest.bytes))
        return MS_OK;
    const uint8_t *subject = NULL;
    ms_store_cut_t cut;
    memset(&cut, 0, sizeof cut);
    if (it.type == MS_ITEMS_AUTHORITY &&
        (it.item.kind == MS_AUTHORITY_ITEM_REVOKE ||
         it.item.kind == MS_AUTHORITY_ITEM_CLEAR_QUARANTINE)) {
        subject = it.item.subject;
        cut.all = it.item.cut_all;
        for (uint32_t i = 0; !cut.all && i < it.item.n_cuts; i++) {
            cut.upto[cut.n].incarnation = it.item.cuts[i].incarnation;
            cut.upto[cut.n].seq = it.item.cuts[i].max_seq;
            cut.n++;
        }
    }
    if (it.type == MS_ITEMS_AUTHORITY &&
        it.item.kind == MS_AUTHORITY_ITEM_CLEAR_QUARANTINE)
        rc = ms_store_put_clear(self->cfg.store, it.digest.bytes, bytes, n,
                                it.item.subject, &cut, NULL);
    else
        rc = ms_store_put_item(self->cfg.store, it.digest.bytes, bytes, n,
                               subject, &cut, NULL);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, "store", "cannot keep the item: %s",
                                ms_strerror(rc));
    rc = ms_items_add(self->items, bytes, n, added);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, "authority", "cannot hold the item");
    s_apply(self, &it);
    self->stats.n_added++;
    if (!push)
        return MS_OK;
    uint8_t to[MS_ITEM_SYNC_MAX_PUSH][MS_ITEM_SYNC_ID_BYTES];
    int n_to = s_active(self, to, MS_ITEM_SYNC_MAX_PUSH);
    for (int i = 0; i < n_to; i++) {
        if (from && memcmp(to[i], from, MS_ITEM_SYNC_ID_BYTES) == 0)
            continue;
        s_send_items(self, to[i],
                     (const uint8_t(*)[MS_ITEMS_DIGEST_BYTES]) it.digest.bytes,
                     1);
    }
    return MS_OK;
}

void
ms_item_sync_on_message(ms_item_sync_t *self,
                        const uint8_t from[MS_ITEM_SYNC_ID_BYTES],
                        const ms_wire_envelope_t *env, int64_t now_ms)
{
    assert(self && from && env);
    if (!self->items)
        return; // an open pool has no authority items
    if (env->body == MS_WIRE_BODY_ITEM_DIGEST) {
        uint8_t ours[MS_ITEMS_DIGEST_BYTES];
        ms_items_digest(self->items, ours);
        if (memcmp(ours, env->item_digest.digest, sizeof ours) != 0)
            s_send_list(self, from, now_ms);
    } else if (env->body == MS_WIRE_BODY_ITEM_LIST) {
        const uint8_t(*theirs)[MS_ITEMS_DIGEST_BYTES] =
            (const uint8_t(*)[MS_ITEMS_DIGEST_BYTES]) env->item_list.digests;
        size_t n_theirs = env->item_list.n_digests;
        size_t max = ms_items_size(self->items);
        uint8_t(*missing)[MS_ITEMS_DIGEST_BYTES] =
            max ? malloc(max * sizeof *missing) : NULL;
        size_t n = missing ? ms_items_missing(self->items, theirs, n_theirs,
                                              missing, max)
                           : 0;
        if (n)
            s_send_items(self, from,
                         (const uint8_t(*)[MS_ITEMS_DIGEST_BYTES]) missing, n);
        free(missing);
        if (ms_items_count_unknown(self->items, theirs, n_theirs) > 0)
            s_send_list(self, from, now_ms);
    } else if (env->body == MS_WIRE_BODY_ITEMS) {
        for (size_t i = 0; i < env->items.n_items; i++) {
            ms_diag_t diag;
            ms_diag_clear(&diag);
            bool added;
            s_take(self, env->items.items[i].bytes, env->items.items[i].n_bytes,
                   from, true, &added, &diag);
        }
    }
}

void
ms_item_sync_link_up(ms_item_sync_t *self,
                     const uint8_t id[MS_ITEM_SYNC_ID_BYTES])
{
    assert(self && id);
    if (!self->items || !self->members)
        return;
    const ms_member_t *m = ms_members_find(self->members, id);
    if (m && m->has_chain) {
        uint8_t bytes[MS_ITEMS_MAX_BYTES];
        ms_cert_chain_t chain = m->chain; // m may move as the table grows
        size_t n = ms_items_encode_chain(&chain, bytes);
        ms_diag_t diag;
        ms_diag_clear(&diag);
        bool added;
        if (n)
            s_take(self, bytes, n, NULL, true, &added, &diag);
    }
    s_send_digest(self, id);
}

void
ms_item_sync_tick(ms_item_sync_t *self, int64_t now_ms)
{
    assert(self);
    if (!self->items || now_ms < self->digest_at)
        return;
    self->digest_at = now_ms + MS_ITEM_SYNC_ROUND_MS;
    uint8_t to[MS_ITEM_SYNC_MAX_PUSH][MS_ITEM_SYNC_ID_BYTES];
    int n_to = s_active(self, to, MS_ITEM_SYNC_MAX_PUSH);
    for (int i = 0; i < n_to; i++)
        s_send_digest(self, to[i]);
}

//  --------------------------------------------------------------------------
//  Load one stored item (join): check it again (a store is not a
//  signature), hold and apply it.

static int
s_load_one(void *arg, const uint8_t *digest, const uint8_t *bytes, size_t n)
{
    ms_item_sync_t *self = arg;
    (void) digest;
    ms_items_parsed_t it;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_items_check(bytes, n, self->authority_pk, &it, &diag) != MS_OK) {
        char text[600];
        fprintf(stderr, "meshsweepd: ignored a stored authority item: %s\n",
                ms_diag_format(&diag, text, sizeof text));
        return 0;
    }
    if (ms_items_add(self->items, bytes, n, NULL) == MS_OK)
        s_apply(self, &it);
    return 0;
}

int
ms_item_sync_join(ms_item_sync_t *self, ms_members_t *members,
                  const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                  const ms_cert_chain_t *chain)
{
    assert(self && members && authority_pk);
    ms_item_sync_leave(self);
    if (!chain)
        return MS_OK;
    self->items = ms_items_new();
    if (!self->items)
        return MS_ERR_NOMEM;
    self->members = members;
    memcpy(self->authority_pk, authority_pk, MS_CERT_KEY_BYTES);
    int rc = ms_store_items(self->cfg.store, s_load_one, self);
    if (rc != MS_OK) {
        ms_item_sync_leave(self);
        return rc;
    }
    uint8_t bytes[MS_ITEMS_MAX_BYTES];
    size_t n = ms_items_encode_chain(chain, bytes);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    bool added;
    if (n)
        s_take(self, bytes, n, NULL, false, &added, &diag);
    return MS_OK;
}

void
ms_item_sync_leave(ms_item_sync_t *self)
{
    assert(self);
    ms_items_destroy(&self->items);
    self->members = NULL;
    memset(self->authority_pk, 0, sizeof self->authority_pk);
}

//  --------------------------------------------------------------------------
//  Decode base64 (libsodium original variant) of text[0..n) into out (at
//  most max bytes). Returns the byte count, or 0.

static size_t
s_base64(const char *text, size_t n, uint8_t *out, size_t max)
{
    size_t len = 0;
    if (sodium_base642bin(out, max, text, n, NULL, &len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0)
        return 0;
    return len;
}

int
ms_item_sync_post(ms_item_sync_t *self, const char *text, size_t n,
                  char **summary, ms_diag_t *diag)
{
    assert(self && summary && (text || n == 0));
    static const char item_magic[] = "meshsweep-authority-item-v1 ";
    static const char cert_magic[] = "meshsweep-cert-v1 ";
    while (n > 0 &&
           (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        n--;
    uint8_t bytes[MS_ITEMS_MAX_BYTES];
    size_t len = 0;
    if (n > strlen(item_magic) &&
        memcmp(text, item_magic, strlen(item_magic)) == 0) {
        size_t at = strlen(item_magic);
        len = s_base64(text + at, n - at, bytes + 1, sizeof bytes - 1);
        if (len == 0) {
            self->stats.n_refused++;
            return ms_diag_set_code(diag, MS_ERR_INVALID, "item",
                                    "not valid base64 after '%s'",
                                    "meshsweep-authority-item-v1");
        }
        bytes[0] = MS_ITEMS_AUTHORITY;
        len++;
    } else if (n > strlen(cert_magic) + 2 * MS_CERT_KEY_BYTES + 1 &&
               memcmp(text, cert_magic, strlen(cert_magic)) == 0) {
        size_t at = strlen(cert_magic);
        uint8_t authority[MS_CERT_KEY_BYTES];
        size_t alen = 0;
        if (sodium_hex2bin(authority, sizeof authority, text + at,
                           2 * MS_CERT_KEY_BYTES, NULL, &alen, NULL) != 0 ||
            alen != MS_CERT_KEY_BYTES ||
            text[at + 2 * MS_CERT_KEY_BYTES] != ' ')
            return ms_diag_set_code(diag, MS_ERR_INVALID, "bundle",
                                    "expected the authority key in hex");
        if (self->items &&
            memcmp(authority, self->authority_pk, MS_CERT_KEY_BYTES) != 0) {
            self->stats.n_refused++;
            return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "bundle",
                                    "of another pool authority");
        }
        at += 2 * MS_CERT_KEY_BYTES + 1;
        len = s_base64(text + at, n - at, bytes + 1, sizeof bytes - 1);
        if (len == 0) {
            self->stats.n_refused++;
            return ms_diag_set_code(diag, MS_ERR_INVALID, "bundle",
                                    "not valid base64 after the key");
        }
        bytes[0] = MS_ITEMS_CHAIN;
        len++;
    } else
        return ms_diag_set_code(diag, MS_ERR_INVALID, "body",
                                "expected an authority item file "
                                "('meshsweep-authority-item-v1 ...') or a "
                                "certificate bundle ('meshsweep-cert-v1 "
                                "...')");
    bool added = false;
    int rc = s_take(self, bytes, len, NULL, true, &added, diag);
    if (rc != MS_OK)
        return rc;
    ms_hash_t h;
    ms_hash_bytes(bytes, len, &h);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    json_t *ans =
        json_pack("{s:s, s:s, s:b}", "digest", hex, "type",
                  bytes[0] == MS_ITEMS_CHAIN ? "certificate" : "authority-item",
                  "new", added);
    *summary = ans ? json_dumps(ans, JSON_COMPACT) : NULL;
    json_decref(ans);
    return MS_OK;
}

void
ms_item_sync_stats(const ms_item_sync_t *self, ms_item_sync_stats_t *out)
{
    assert(self && out);
    *out = self->stats;
    out->n_items = self->items ? ms_items_size(self->items) : 0;
}
