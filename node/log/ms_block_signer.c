/*  =========================================================================
    ms_block_signer - signed blocks: sign ours, check peers', serve old ones

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Signed blocks (DESIGN.md "Records and anti-entropy", issue 4 item 4).

    Signing. Every block of ours is signed with the node's Ed25519 key
    over proto/ms_wire_sign.h's bytes (pool id, header, per record seq,
    kind and payload hash) by the store's writer, in the txn that writes
    it (ms_block_signer_attach -> ms_block_signer_sign), so it is stored,
    pushed and served with its signature and is never durable unsigned.
    The writer reads only what this class holds by value (the node's
    public key, the pool id under the class's mutex) and the identity's
    secret key: before this class it read the pool id out of the node
    struct under the node's lock, which HTTP threads hold while they
    build a status page.

    Old stores. A store made before signing holds blocks of ours with no
    signature, and a data dir that changed pools (or ran alone, pool id
    zero) holds blocks signed for another pool id: both would be refused
    by every peer. Such a store is not refused at open (the user would
    lose its log for nothing), and it is not rewritten at open either
    (that costs a verify per own block at every start, or a marker in
    the store): an own block that this process did not sign (below
    signed_from, or of an older incarnation) is checked when it is
    served, and signed again for that send when its signature is missing
    or does not verify under the current pool id (counted in n_resigned:
    blocks_resigned_total). Blocks signed by this process are trusted as
    they are (pushes right after an append cost nothing more). The pool
    id therefore changes only together with signed_from: one call,
    ms_block_signer_set_pool, takes both. Peers' blocks held unsigned by
    an old store cannot be re-signed: peers refuse them from us and get
    them from their origin (which re-signs) or from an upgraded holder.

    Checking. A peer's block is checked where it enters the node (the
    node's message dispatch, before gossip sees it): unsigned -> refused;
    a signature that does not verify under the block's origin (payload,
    header or signature byte changed, another node's origin claimed,
    another pool's block) -> refused; origin not admitted (s_admitted)
    -> refused. A refused block is counted (n_rejected and one counter
    per reason), logged once per peer and reason, and dropped: gossip
    never sees it, so it is never stored, buffered above a gap,
    forwarded, acked or counted. Why there and not in the source's merge
    callbacks: every block that reaches gossip (push, range answer, a
    catch-up batch) comes through that one function, which knows the
    link the block came on (for the log and for a future per-peer
    penalty); a block buffered above a gap and merged later is verified
    once, not at each merge attempt; and a forged block never takes
    gap-buffer memory. The merge callbacks then see only verified blocks.
*/
#include "ms_block_signer.h"

#include "ms_err.h"
#include "ms_hash.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Why a peer's block was refused (a bit each, for the logged-once table).
typedef enum {
    S_REJECT_UNSIGNED = 1,      // no signature at all
    S_REJECT_BAD_SIGNATURE = 2, // does not verify under its origin
    S_REJECT_NOT_ADMITTED = 4,  // origin not admitted (membership)
} s_reject_reason_t;

//  A peer that sent refused blocks, and the reasons already logged.
typedef struct {
    uint8_t peer[MS_WIRE_ID_BYTES]; // the link's node id
    unsigned logged;                // s_reject_reason_t bits logged
} s_reject_log_t;

#define S_REJECT_LOG_MAX 1024 // peers remembered; beyond, not logged

struct ms_block_signer {
    const ms_identity_t *identity;     // the node's key pair (borrowed)
    uint8_t node_pk[MS_WIRE_ID_BYTES]; // its public key: our origin
    uint64_t incarnation;              // the store's incarnation
    ms_block_signer_iface_t iface;     // the node's side
    pthread_mutex_t lock;              // guards pool_id (writer vs loop)
    uint8_t pool_id[MS_WIRE_ID_BYTES]; // signed for (zero: no pool; lock)
    uint64_t signed_from;              // own seqs from here: signed by us now
    ms_block_signer_stats_t stats;     // counters (loop thread)
    s_reject_log_t *reject_log;        // (peer, reasons) already logged
    size_t n_reject_log;               // entries in reject_log
};

//  --------------------------------------------------------------------------
//  Create the signer.

ms_block_signer_t *
ms_block_signer_new(const ms_block_signer_config_t *cfg,
                    const ms_block_signer_iface_t *iface)
{
    assert(cfg && cfg->identity && iface);
    ms_block_signer_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    if (pthread_mutex_init(&self->lock, NULL) != 0) {
        free(self);
        return NULL;
    }
    self->identity = cfg->identity;
    memcpy(self->node_pk, ms_identity_public_key(cfg->identity),
           MS_WIRE_ID_BYTES);
    self->incarnation = cfg->incarnation;
    self->iface = *iface;
    memcpy(self->pool_id, cfg->pool_id, MS_WIRE_ID_BYTES);
    self->signed_from = cfg->signed_from;
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_block_signer_destroy(ms_block_signer_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_block_signer_t *self = *self_p;
    pthread_mutex_destroy(&self->lock);
    free(self->reject_log);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The store's signer callback (writer thread).

static int
s_store_sign(void *arg, const uint8_t *origin, uint64_t incarnation,
             uint64_t first_seq, size_t n, const uint32_t *kinds,
             const uint8_t *const *payloads, const size_t *lens, uint8_t *sig,
             size_t *sig_len)
{
    return ms_block_signer_sign(arg, origin, incarnation, first_seq, n, kinds,
                                payloads, lens, sig, sig_len);
}

//  --------------------------------------------------------------------------
//  Sign the store's blocks with this signer.

void
ms_block_signer_attach(ms_block_signer_t *self, ms_store_t *store)
{
    assert(self && store);
    ms_store_set_signer(store, s_store_sign, self);
}

//  --------------------------------------------------------------------------
//  A new pool id, and the first own seq signed for it.

void
ms_block_signer_set_pool(ms_block_signer_t *self,
                         const uint8_t pool_id[MS_WIRE_ID_BYTES],
                         uint64_t signed_from)
{
    assert(self && pool_id);
    pthread_mutex_lock(&self->lock);
    memcpy(self->pool_id, pool_id, MS_WIRE_ID_BYTES);
    pthread_mutex_unlock(&self->lock);
    self->signed_from = signed_from;
}

//  --------------------------------------------------------------------------
//  The pool id blocks are signed for.

void
ms_block_signer_pool_id(ms_block_signer_t *self, uint8_t out[MS_WIRE_ID_BYTES])
{
    assert(self && out);
    pthread_mutex_lock(&self->lock);
    memcpy(out, self->pool_id, MS_WIRE_ID_BYTES);
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  Sign a block of ours; a block of another origin (never made by this
//  node) is left unsigned.

int
ms_block_signer_sign(ms_block_signer_t *self, const uint8_t *origin,
                     uint64_t incarnation, uint64_t first_seq, size_t n,
                     const uint32_t *kinds, const uint8_t *const *payloads,
                     const size_t *lens, uint8_t *sig, size_t *sig_len)
{
    assert(self && origin && sig && sig_len);
    *sig_len = 0;
    if (memcmp(origin, self->node_pk, MS_WIRE_ID_BYTES) != 0)
        return MS_OK;
    ms_wire_block_view_t view = ms_wire_block_view(
        origin, incarnation, first_seq, n, kinds, payloads, lens);
    uint8_t pool[MS_WIRE_ID_BYTES];
    ms_block_signer_pool_id(self, pool);
    int rc = ms_wire_block_sign(self->identity, pool, &view, sig);
    if (rc == MS_OK)
        *sig_len = MS_WIRE_SIGNATURE_BYTES;
    return rc;
}

//  --------------------------------------------------------------------------
//  A stored block about to be served: when it is ours and this process
//  did not sign it, make sure its signature verifies under the current
//  pool, else sign it again into fresh.

void
ms_block_signer_serve(ms_block_signer_t *self, const uint8_t *origin,
                      uint64_t incarnation, uint64_t first_seq, size_t n,
                      const uint32_t *kinds, const uint8_t *const *payloads,
                      const size_t *lens, const uint8_t **sig, size_t *sig_len,
                      uint8_t fresh[MS_WIRE_SIGNATURE_BYTES])
{
    assert(self && origin && sig && sig_len && fresh);
    if (memcmp(origin, self->node_pk, MS_WIRE_ID_BYTES) != 0)
        return;
    if (incarnation == self->incarnation && first_seq >= self->signed_from)
        return; // signed by this process, for this pool
    ms_wire_block_view_t view = ms_wire_block_view(
        origin, incarnation, first_seq, n, kinds, payloads, lens);
    uint8_t pool[MS_WIRE_ID_BYTES];
    ms_block_signer_pool_id(self, pool);
    if (ms_wire_block_verify(pool, &view, *sig, *sig_len) == MS_OK)
        return;
    if (ms_wire_block_sign(self->identity, pool, &view, fresh) != MS_OK)
        return; // served as stored (peers will refuse it)
    *sig = fresh;
    *sig_len = MS_WIRE_SIGNATURE_BYTES;
    self->stats.n_resigned++;
}

//  --------------------------------------------------------------------------
//  The membership hook: may records of ORIGIN (of its store INCARNATION,
//  up to SEQ) be stored, forwarded and counted here? In an open pool
//  every node that speaks the pool's id is a member: true. With a pool
//  authority it asks the membership table (node/mesh/ms_members): the
//  origin must hold a valid certificate of this pool (a member in good
//  standing, known from its HELLO or from the authority items), and,
//  once the origin is revoked, SEQ must lie within the revocation's cut
//  for that incarnation (DESIGN.md "Records and anti-entropy" keeps
//  records past the cut stored but not counted: whichever rule the
//  membership table settles on for those, this is the one place that
//  applies it to incoming blocks).

static bool
s_admitted(ms_block_signer_t *self, const uint8_t origin[MS_WIRE_ID_BYTES],
           uint64_t incarnation, uint64_t seq)
{
    //  The rule settled on (DESIGN.md): a block is refused only when its
    //  origin never was a member we know of (no certificate seen at a
    //  HELLO or as an authority item). A revoked origin's blocks are
    //  still stored and forwarded, so every store converges on the same
    //  logs; the cut is a counting rule that the store applies while it
    //  derives claims, results and failures (ms_store_put_item), and
    //  that the lease table applies to claims (the node's s_counts).
    //  Refusing blocks above a cut here would leave stores that saw them
    //  before the revocation different from those that did not, for ever.
    (void) incarnation;
    (void) seq;
    const ms_members_t *members =
        self->iface.members ? self->iface.members(self->iface.arg) : NULL;
    if (!members || !ms_members_has_authority(members))
        return true; // open pool: every node of the pool id is a member
    return ms_members_known(members, origin);
}

//  --------------------------------------------------------------------------
//  Count a refused block and log it (always, not only when verbose)
//  once per peer and reason.

static void
s_refused(ms_block_signer_t *self, const uint8_t from[MS_WIRE_ID_BYTES],
          const ms_wire_block_t *block, s_reject_reason_t reason)
{
    self->stats.n_rejected++;
    const char *why = "origin not admitted";
    if (reason == S_REJECT_UNSIGNED) {
        self->stats.n_unsigned++;
        why = "unsigned";
    } else if (reason == S_REJECT_BAD_SIGNATURE) {
        self->stats.n_bad_signature++;
        why = "bad signature";
    } else
        self->stats.n_not_admitted++;
    s_reject_log_t *entry = NULL;
    for (size_t i = 0; i < self->n_reject_log && !entry; i++)
        if (memcmp(self->reject_log[i].peer, from, MS_WIRE_ID_BYTES) == 0)
            entry = &self->reject_log[i];
    if (!entry) {
        if (self->n_reject_log == S_REJECT_LOG_MAX)
            return;
        if (!self->reject_log) {
            self->reject_log =
                calloc(S_REJECT_LOG_MAX, sizeof *self->reject_log);
            if (!self->reject_log)
                return;
        }
        entry = &self->reject_log[self->n_reject_log++];
        memcpy(entry->peer, from, MS_WIRE_ID_BYTES);
        entry->logged = 0;
    }
    if (entry->logged & reason)
        return;
    entry->logged |= reason;
    char peer_hex[MS_HASH_HEX_LEN + 1], origin_hex[MS_HASH_HEX_LEN + 1];
    ms_hash_t h;
    memcpy(h.bytes, from, MS_HASH_BYTES);
    ms_hash_hex(&h, peer_hex);
    memcpy(h.bytes, block->origin, MS_HASH_BYTES);
    ms_hash_hex(&h, origin_hex);
    //  Always printed (not only when verbose): bounded by the table.
    char line[300];
    snprintf(line, sizeof line,
             "meshsweepd: refused a block from peer %.12s: origin %.12s seqs "
             "%" PRIu64 "..%" PRIu64
             ": %s (counted; logged once per peer and reason)",
             peer_hex, origin_hex, block->first_seq,
             block->first_seq + block->n_records - 1, why);
    if (self->iface.warn)
        self->iface.warn(self->iface.arg, line);
    else
        fprintf(stderr, "%s\n", line);
}

//  --------------------------------------------------------------------------
//  Check a peer's block before gossip sees it.

bool
ms_block_signer_check(ms_block_signer_t *self,
                      const uint8_t from[MS_WIRE_ID_BYTES],
                      const ms_wire_block_t *block)
{
    assert(self && from && block);
    if (block->signature_bytes == 0) {
        s_refused(self, from, block, S_REJECT_UNSIGNED);
        return false;
    }
    uint32_t kinds[MS_WIRE_BLOCK_MAX_RECORDS];
    const uint8_t *payloads[MS_WIRE_BLOCK_MAX_RECORDS];
    size_t lens[MS_WIRE_BLOCK_MAX_RECORDS];
    ms_wire_block_view_t view;
    uint8_t pool[MS_WIRE_ID_BYTES];
    ms_block_signer_pool_id(self, pool);
    if (ms_wire_block_view_init(&view, block, kinds, payloads, lens) != MS_OK ||
        ms_wire_block_verify(pool, &view, block->signature,
                             block->signature_bytes) != MS_OK) {
        s_refused(self, from, block, S_REJECT_BAD_SIGNATURE);
        return false;
    }
    if (!s_admitted(self, block->origin, block->incarnation,
                    block->first_seq + block->n_records - 1)) {
        s_refused(self, from, block, S_REJECT_NOT_ADMITTED);
        return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  The counters.

void
ms_block_signer_stats(const ms_block_signer_t *self,
                      ms_block_signer_stats_t *out)
{
    assert(self && out);
    *out = self->stats;
}
