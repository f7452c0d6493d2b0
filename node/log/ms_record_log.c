/*  =========================================================================
    ms_record_log - the node's record log over the store: append, merge,
    vectors, blocks, equivocation, block acks (the gossip's source)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_record_log.h for what the class owns and the rules it follows.
    The code here is the store's log seen through ms_gossip's two
    interfaces: the source callbacks (s_src_*) adapt ms_store's vector,
    held, read_blocks and merge calls, and the transport (s_tr_*) writes
    gossip messages as wire envelopes; ms_record_log_on_message is the
    reverse mapping. Nothing here keeps records in memory: the store is
    the log, and what the class holds is the claim blocks still to be
    acknowledged (acks_due), the seq of our last append and whether
    sweep records came.
*/
#include "ms_record_log.h"
#include "ms_array.h"

#include "ms_wire_sign.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A block holding a claim that we must acknowledge to its origin once it
//  is merged here (gossip merges a socket drain's blocks in one commit,
//  after the drain).
typedef struct {
    uint8_t origin[MS_HASH_BYTES]; // the claimer
    uint64_t incarnation;          // its incarnation
    uint64_t last_seq;             // the block's last record
} s_ack_due_t;

struct ms_record_log {
    ms_store_t *store;               // the store (borrowed)
    uint8_t node_id[MS_HASH_BYTES];  // our id: the origin of our records
    ms_record_log_iface_t iface;     // the node
    uint64_t last_append_seq;        // seq of the last record appended
    bool sweeps_due;                 // SWEEP or FRAGMENT records came
    s_ack_due_t *acks_due;           // claim blocks to acknowledge once held
    size_t n_acks_due, cap_acks_due; // used, allocated
    uint64_t n_acks_sent;            // BLOCK_ACKs sent
    uint64_t n_acks_received;        // BLOCK_ACKs of our incarnation
};

_Static_assert(MS_GOSSIP_ID_BYTES == MS_HASH_BYTES, "one id size");
_Static_assert(MS_WIRE_ID_BYTES == MS_HASH_BYTES, "one id size");
_Static_assert(MS_GOSSIP_MAX_BLOCK_RECORDS == MS_RECORD_MAX_BLOCK, "block");
_Static_assert(MS_WIRE_BLOCK_MAX_RECORDS == MS_RECORD_MAX_BLOCK, "block");
_Static_assert(MS_RECORD_LOG_MAX_APPEND <= MS_STORE_MAX_APPEND_RECORDS,
               "append bound");

//  --------------------------------------------------------------------------
//  Log a line through the node.

static void s_log(ms_record_log_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(ms_record_log_t *self, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    self->iface.log(self->iface.arg, line);
}

//  --------------------------------------------------------------------------
//  Create the log.

ms_record_log_t *
ms_record_log_new(ms_store_t *store, const uint8_t node_id[MS_HASH_BYTES],
                  const ms_record_log_iface_t *iface)
{
    assert(store && node_id && iface);
    ms_record_log_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    memcpy(self->node_id, node_id, MS_HASH_BYTES);
    self->iface = *iface;
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_record_log_destroy(ms_record_log_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_record_log_t *self = *self_p;
    free(self->acks_due);
    free(self);
    *self_p = NULL;
}

//  ==========================================================================
//  Source: the store's log as gossip asks for it

//  --------------------------------------------------------------------------
//  Source: vector digest.

static int
s_src_digest(void *arg, uint8_t digest[MS_GOSSIP_DIGEST_BYTES])
{
    ms_record_log_t *self = arg;
    return ms_store_vector_digest(self->store, digest, NULL);
}

//  A vector being collected.
typedef struct {
    ms_gossip_entry_t *entries; // malloc'd
    size_t n, cap;              // used, allocated
} s_vec_t;

//  --------------------------------------------------------------------------
//  Collect one vector entry.

static int
s_vec_one(void *arg, const uint8_t *origin, uint64_t incarnation, uint64_t seq)
{
    s_vec_t *v = arg;
    if (seq == 0)
        return 0;
    if (ms_array_grow(&v->entries, &v->cap, v->n, sizeof *v->entries) != MS_OK)
        return MS_ERR_NOMEM;
    ms_gossip_entry_t *e = &v->entries[v->n++];
    memcpy(e->origin, origin, MS_GOSSIP_ID_BYTES);
    e->incarnation = incarnation;
    e->seq = seq;
    return 0;
}

//  --------------------------------------------------------------------------
//  Source: the whole vector.

static int
s_src_vector(void *arg, ms_gossip_entry_t **entries, size_t *n_entries)
{
    ms_record_log_t *self = arg;
    s_vec_t v = {0};
    int rc = ms_store_vector(self->store, s_vec_one, &v);
    if (rc != MS_OK) {
        free(v.entries);
        *entries = NULL;
        *n_entries = 0;
        return rc;
    }
    *entries = v.entries;
    *n_entries = v.n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Source: highest contiguous seq held.

static int
s_src_held(void *arg, const uint8_t origin[MS_GOSSIP_ID_BYTES],
           uint64_t incarnation, uint64_t *seq)
{
    ms_record_log_t *self = arg;
    return ms_store_held(self->store, origin, incarnation, seq);
}

//  Blocks read for a gossip range answer (or a push: s_push_own).
typedef struct {
    ms_record_log_t *log;                                        // the log
    int (*emit)(void *emit_arg, const ms_gossip_block_t *block); // gossip's
    void *emit_arg;                                              // its argument
    size_t max_bytes; // payload bytes to emit at most
    size_t bytes;     // emitted so far
    int rc;           // emit's first non-zero return
} s_read_ctx_t;

//  --------------------------------------------------------------------------
//  Hand one stored block, its signature served through the node, to
//  gossip's emit.

static int
s_read_one(void *arg, const uint8_t *origin, uint64_t incarnation,
           uint64_t first_seq, size_t n, const uint32_t *kinds,
           const uint8_t *const *payloads, const size_t *lens,
           const uint8_t *signature, size_t sig_len)
{
    s_read_ctx_t *ctx = arg;
    if (ctx->max_bytes && ctx->bytes >= ctx->max_bytes)
        return 1; // enough: stop (not an error)
    if (n == 0 || n > MS_GOSSIP_MAX_BLOCK_RECORDS)
        return 0;
    uint8_t fresh[MS_WIRE_SIGNATURE_BYTES];
    ms_record_log_t *self = ctx->log;
    self->iface.serve_signature(self->iface.arg, origin, incarnation, first_seq,
                                n, kinds, payloads, lens, &signature, &sig_len,
                                fresh);
    ms_gossip_record_t recs[MS_GOSSIP_MAX_BLOCK_RECORDS];
    for (size_t i = 0; i < n; i++) {
        recs[i].seq = first_seq + i;
        recs[i].kind = kinds[i];
        recs[i].payload = payloads[i];
        recs[i].payload_bytes = lens[i];
        ctx->bytes += lens[i];
    }
    ms_gossip_block_t block = {.incarnation = incarnation,
                               .first_seq = first_seq,
                               .n_records = n,
                               .records = recs,
                               .signature = signature,
                               .signature_bytes = sig_len};
    memcpy(block.origin, origin, MS_GOSSIP_ID_BYTES);
    int rc = ctx->emit(ctx->emit_arg, &block);
    if (rc != 0) {
        ctx->rc = rc;
        return 2;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Source: read whole blocks of a range.

static int
s_src_read_blocks(void *arg, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                  uint64_t incarnation, uint64_t from_seq, uint64_t to_seq,
                  size_t max_records, size_t max_bytes,
                  int (*emit)(void *emit_arg, const ms_gossip_block_t *block),
                  void *emit_arg)
{
    ms_record_log_t *self = arg;
    s_read_ctx_t ctx = {.log = self,
                        .emit = emit,
                        .emit_arg = emit_arg,
                        .max_bytes = max_bytes};
    int rc = ms_store_read_blocks(self->store, origin, incarnation, from_seq,
                                  to_seq, max_records, s_read_one, &ctx);
    if (ctx.rc != 0)
        return ctx.rc;
    return rc > 0 ? MS_OK : rc;
}

//  --------------------------------------------------------------------------
//  Tell the store whether ORIGIN may submit, before its blocks are merged
//  (DESIGN.md: sweeps and sweep-control records come only from members
//  with the `submit` role; in an open pool everyone may, and the node
//  has no rule to give).

static void
s_note_submit_role(ms_record_log_t *self, const uint8_t *origin)
{
    int may = self->iface.may_submit(self->iface.arg, origin);
    if (may < 0)
        return;
    if (ms_store_set_may_submit(self->store, origin, may != 0) != MS_OK)
        s_log(self, "out of memory noting a member's roles");
}

//  --------------------------------------------------------------------------
//  After a block's merge: its records to the node when it brought news,
//  and a log line when it held conflicting records.

static void
s_merged(ms_record_log_t *self, const ms_gossip_block_t *block,
         const ms_store_merge_result_t *res)
{
    if (res->n_new > 0)
        for (size_t i = 0; i < block->n_records; i++)
            self->iface.merged(
                self->iface.arg, block->origin, block->incarnation,
                block->first_seq + i, block->records[i].kind,
                block->records[i].payload, block->records[i].payload_bytes);
    if (res->equivocation) {
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_t h;
        memcpy(h.bytes, block->origin, MS_HASH_BYTES);
        ms_hash_hex(&h, hex);
        s_log(self,
              "node %.12s equivocates: %zu conflicting record(s) kept "
              "as evidence",
              hex, res->n_conflict);
    }
}

//  --------------------------------------------------------------------------
//  Source: merge a peer's block, then hand its records to the node.

static int
s_src_merge(void *arg, const ms_gossip_block_t *block, size_t *n_new)
{
    ms_record_log_t *self = arg;
    *n_new = 0;
    size_t n = block->n_records;
    if (n == 0 || n > MS_GOSSIP_MAX_BLOCK_RECORDS)
        return MS_ERR_INVALID;
    uint32_t kinds[MS_GOSSIP_MAX_BLOCK_RECORDS];
    const uint8_t *payloads[MS_GOSSIP_MAX_BLOCK_RECORDS];
    size_t lens[MS_GOSSIP_MAX_BLOCK_RECORDS];
    for (size_t i = 0; i < n; i++) {
        kinds[i] = block->records[i].kind;
        payloads[i] = block->records[i].payload;
        lens[i] = block->records[i].payload_bytes;
    }
    ms_store_merge_result_t res;
    memset(&res, 0, sizeof res);
    s_note_submit_role(self, block->origin);
    int rc = ms_store_merge_block(
        self->store, block->origin, block->incarnation, block->first_seq, n,
        kinds, payloads, lens, block->signature, block->signature_bytes, &res);
    if (rc != MS_OK)
        return rc;
    *n_new = res.n_new;
    s_merged(self, block, &res);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Source: merge a batch of peers' blocks in one store commit, then hand
//  the new records to the node (one pass, after the commit).

static int
s_src_merge_blocks(void *arg, const ms_gossip_block_t *blocks, size_t n_blocks,
                   int *rcs, size_t *n_new)
{
    ms_record_log_t *self = arg;
    size_t n_recs = 0;
    for (size_t b = 0; b < n_blocks; b++)
        n_recs += blocks[b].n_records;
    ms_store_block_t *sb = calloc(n_blocks ? n_blocks : 1, sizeof *sb);
    ms_store_merge_result_t *res = calloc(n_blocks ? n_blocks : 1, sizeof *res);
    uint32_t *kinds = calloc(n_recs ? n_recs : 1, sizeof *kinds);
    const uint8_t **payloads = calloc(n_recs ? n_recs : 1, sizeof *payloads);
    size_t *lens = calloc(n_recs ? n_recs : 1, sizeof *lens);
    int rc = MS_ERR_NOMEM;
    if (sb && res && kinds && payloads && lens) {
        size_t at = 0;
        for (size_t b = 0; b < n_blocks; b++) {
            const ms_gossip_block_t *g = &blocks[b];
            for (size_t i = 0; i < g->n_records; i++) {
                kinds[at + i] = g->records[i].kind;
                payloads[at + i] = g->records[i].payload;
                lens[at + i] = g->records[i].payload_bytes;
            }
            sb[b] = (ms_store_block_t){.origin = g->origin,
                                       .incarnation = g->incarnation,
                                       .first_seq = g->first_seq,
                                       .n = g->n_records,
                                       .kinds = kinds + at,
                                       .payloads = payloads + at,
                                       .lens = lens + at,
                                       .signature = g->signature,
                                       .sig_len = g->signature_bytes};
            at += g->n_records;
        }
        for (size_t b = 0; b < n_blocks; b++) {
            rcs[b] = 1; // unset: the store refused the whole call
            s_note_submit_role(self, blocks[b].origin);
        }
        rc = ms_store_merge_blocks(self->store, sb, n_blocks, rcs, res);
        if (n_blocks > 0 && rcs[0] != 1)
            rc = MS_OK; // each block's fate is in rcs
    }
    for (size_t b = 0; rc == MS_OK && b < n_blocks; b++) {
        n_new[b] = rcs[b] == MS_OK ? res[b].n_new : 0;
        if (rcs[b] == MS_OK)
            s_merged(self, &blocks[b], &res[b]);
    }
    free(sb);
    free(res);
    free(kinds);
    free(payloads);
    free(lens);
    return rc;
}

//  --------------------------------------------------------------------------
//  The gossip source over this log.

void
ms_record_log_source(ms_record_log_t *self, ms_gossip_source_t *out)
{
    assert(self && out);
    *out = (ms_gossip_source_t){.arg = self,
                                .vector_digest = s_src_digest,
                                .vector = s_src_vector,
                                .held = s_src_held,
                                .read_blocks = s_src_read_blocks,
                                .merge_block = s_src_merge,
                                .merge_blocks = s_src_merge_blocks};
}

//  ==========================================================================
//  Transport: gossip messages as wire envelopes

//  --------------------------------------------------------------------------
//  Transport: a gossip message as a wire envelope to one peer.

static int
s_tr_send(void *arg, const uint8_t to[MS_GOSSIP_ID_BYTES],
          const ms_gossip_msg_t *msg)
{
    ms_record_log_t *self = arg;
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    ms_wire_vector_entry_t *entries = NULL;
    ms_wire_record_t *recs = NULL;
    switch (msg->kind) {
    case MS_GOSSIP_MSG_DIGEST:
        env.body = MS_WIRE_BODY_VECTOR_DIGEST;
        memcpy(env.vector_digest.digest, msg->u.digest, MS_WIRE_ID_BYTES);
        break;
    case MS_GOSSIP_MSG_VECTOR:
        env.body = MS_WIRE_BODY_VECTOR;
        if (msg->u.vector.n_entries) {
            entries = calloc(msg->u.vector.n_entries, sizeof *entries);
            if (!entries)
                return MS_ERR_NOMEM;
            for (size_t i = 0; i < msg->u.vector.n_entries; i++) {
                memcpy(entries[i].origin, msg->u.vector.entries[i].origin,
                       MS_WIRE_ID_BYTES);
                entries[i].incarnation = msg->u.vector.entries[i].incarnation;
                entries[i].seq = msg->u.vector.entries[i].seq;
            }
        }
        env.vector.entries = entries;
        env.vector.n_entries = msg->u.vector.n_entries;
        break;
    case MS_GOSSIP_MSG_RANGE_REQUEST:
        env.body = MS_WIRE_BODY_RANGE_REQUEST;
        memcpy(env.range_request.origin, msg->u.range.origin, MS_WIRE_ID_BYTES);
        env.range_request.incarnation = msg->u.range.incarnation;
        env.range_request.from_seq = msg->u.range.from_seq;
        env.range_request.to_seq = msg->u.range.to_seq;
        env.range_request.max_records = msg->u.range.max_records;
        break;
    case MS_GOSSIP_MSG_BLOCK: {
        const ms_gossip_block_t *b = &msg->u.block;
        env.body = MS_WIRE_BODY_BLOCK;
        recs = calloc(b->n_records ? b->n_records : 1, sizeof *recs);
        if (!recs)
            return MS_ERR_NOMEM;
        for (size_t i = 0; i < b->n_records; i++) {
            recs[i].seq = b->records[i].seq;
            recs[i].kind = b->records[i].kind;
            recs[i].payload = (uint8_t *) b->records[i].payload;
            recs[i].payload_bytes = b->records[i].payload_bytes;
        }
        memcpy(env.block.origin, b->origin, MS_WIRE_ID_BYTES);
        env.block.incarnation = b->incarnation;
        env.block.first_seq = b->first_seq;
        env.block.records = recs;
        env.block.n_records = b->n_records;
        env.block.signature = (uint8_t *) b->signature;
        env.block.signature_bytes = b->signature_bytes;
        break;
    }
    default:
        return MS_ERR_INVALID;
    }
    int rc = self->iface.send(self->iface.arg, to, &env);
    free(entries);
    free(recs);
    return rc;
}

//  --------------------------------------------------------------------------
//  Transport: the push targets (the node's linked, not dead peers).

static int
s_tr_active(void *arg, uint8_t (*out)[MS_GOSSIP_ID_BYTES], int max)
{
    ms_record_log_t *self = arg;
    return self->iface.active_peers(self->iface.arg, out, max);
}

//  --------------------------------------------------------------------------
//  Transport: one random live peer.

static int
s_tr_random(void *arg, uint8_t out[MS_GOSSIP_ID_BYTES])
{
    ms_record_log_t *self = arg;
    return self->iface.random_peer(self->iface.arg, out);
}

//  --------------------------------------------------------------------------
//  The gossip transport over the node's mesh.

void
ms_record_log_transport(ms_record_log_t *self, ms_gossip_transport_t *out)
{
    assert(self && out);
    *out = (ms_gossip_transport_t){.arg = self,
                                   .send = s_tr_send,
                                   .active_peers = s_tr_active,
                                   .random_peer = s_tr_random};
}

//  ==========================================================================
//  Append: our records, durable, then pushed

//  --------------------------------------------------------------------------
//  Push one stored block of ours to the active view (an emit of
//  s_read_one that never stops the read: a failed push is gossip's
//  counter).

static int
s_push_emit(void *arg, const ms_gossip_block_t *block)
{
    ms_gossip_push(arg, block);
    return 0;
}

//  --------------------------------------------------------------------------
//  Push our records from_seq..to_seq (whole blocks) after their commit.

static void
s_push_own(ms_record_log_t *self, ms_gossip_t *gossip, uint64_t from_seq,
           uint64_t to_seq)
{
    if (!gossip)
        return;
    s_read_ctx_t ctx = {.log = self, .emit = s_push_emit, .emit_arg = gossip};
    ms_store_read_blocks(self->store, self->node_id,
                         ms_store_incarnation(self->store), from_seq, to_seq, 0,
                         s_read_one, &ctx);
}

//  --------------------------------------------------------------------------
//  Append payloads of ours in one durable commit, then push them.

int
ms_record_log_append(ms_record_log_t *self, ms_gossip_t *gossip, size_t n,
                     const ms_store_payload_t *payloads, ms_record_key_t *keys)
{
    assert(self && payloads);
    assert(n >= 1 && n <= MS_RECORD_LOG_MAX_APPEND);
    if (n < 1 || n > MS_RECORD_LOG_MAX_APPEND)
        return MS_ERR_INVALID; // out of contract (asserted in debug builds)
    uint32_t kinds[MS_RECORD_LOG_MAX_APPEND];
    uint8_t *bufs[MS_RECORD_LOG_MAX_APPEND] = {NULL};
    size_t lens[MS_RECORD_LOG_MAX_APPEND];
    ms_record_key_t own_keys[MS_RECORD_LOG_MAX_APPEND];
    if (!keys)
        keys = own_keys;
    int rc = MS_OK;
    for (size_t i = 0; i < n && rc == MS_OK; i++) {
        kinds[i] = payloads[i].kind;
        rc = ms_store_payload_encode(&payloads[i], &bufs[i], &lens[i]);
    }
    if (rc == MS_OK)
        rc = ms_store_append_many(self->store, self->node_id, n, kinds,
                                  (const void *const *) bufs, lens, keys);
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    if (rc == MS_OK) {
        self->last_append_seq = keys[n - 1].seq;
        s_push_own(self, gossip, keys[0].seq, keys[n - 1].seq);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  The seq of our last appended record.

uint64_t
ms_record_log_last_seq(const ms_record_log_t *self)
{
    assert(self);
    return self->last_append_seq;
}

//  ==========================================================================
//  Block acks (the settle rule, ms_settle.h)

//  --------------------------------------------------------------------------
//  A block of origin holding a claim was handled: acknowledge it to its
//  origin with how far we hold origin's log and how far our own log
//  goes. Sent after the merge returned (durable, handed to the node) and
//  after every block of ours committed so far was pushed
//  (ms_record_log_append pushes before it returns), so a claim of ours
//  that competes with origin's reaches it before this ack, or the ack's
//  own_seq tells it to wait for that claim.

static void
s_ack_block(ms_record_log_t *self, const uint8_t origin[MS_HASH_BYTES],
            uint64_t incarnation)
{
    if (memcmp(origin, self->node_id, MS_HASH_BYTES) == 0)
        return;
    uint64_t held = 0, own = 0;
    if (ms_store_held(self->store, origin, incarnation, &held) != MS_OK ||
        held == 0)
        return; // a gap: nothing to acknowledge yet (the pull will come)
    uint64_t own_inc = ms_store_incarnation(self->store);
    if (ms_store_held(self->store, self->node_id, own_inc, &own) != MS_OK)
        return;
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_BLOCK_ACK;
    env.block_ack.incarnation = incarnation;
    env.block_ack.seq = held;
    env.block_ack.own_incarnation = own_inc;
    env.block_ack.own_seq = own;
    if (self->iface.send(self->iface.arg, origin, &env) == MS_OK)
        self->n_acks_sent++;
}

//  --------------------------------------------------------------------------
//  Remember to acknowledge a claim block of origin up to last_seq once it
//  is merged here (ms_record_log_send_acks_due after the drain's batch).

static void
s_ack_later(ms_record_log_t *self, const uint8_t origin[MS_HASH_BYTES],
            uint64_t incarnation, uint64_t last_seq)
{
    for (size_t i = 0; i < self->n_acks_due; i++) {
        s_ack_due_t *d = &self->acks_due[i];
        if (d->incarnation == incarnation &&
            memcmp(d->origin, origin, MS_HASH_BYTES) == 0) {
            if (last_seq > d->last_seq)
                d->last_seq = last_seq;
            return;
        }
    }
    if (self->n_acks_due == self->cap_acks_due) {
        size_t cap = self->cap_acks_due ? 2 * self->cap_acks_due : 8;
        s_ack_due_t *grown = realloc(self->acks_due, cap * sizeof *grown);
        if (!grown) { // acknowledge what is held now: the claimer's cap
            s_ack_block(self, origin, incarnation); // covers the rest
            return;
        }
        self->acks_due = grown;
        self->cap_acks_due = cap;
    }
    s_ack_due_t *d = &self->acks_due[self->n_acks_due++];
    memcpy(d->origin, origin, MS_HASH_BYTES);
    d->incarnation = incarnation;
    d->last_seq = last_seq;
}

//  --------------------------------------------------------------------------
//  Send the acknowledgements whose blocks are merged now; keep the others.

void
ms_record_log_send_acks_due(ms_record_log_t *self)
{
    assert(self);
    for (size_t i = 0; i < self->n_acks_due;) {
        s_ack_due_t *d = &self->acks_due[i];
        uint64_t held = 0;
        if (ms_store_held(self->store, d->origin, d->incarnation, &held) ==
                MS_OK &&
            held >= d->last_seq) {
            s_ack_block(self, d->origin, d->incarnation);
            self->acks_due[i] = self->acks_due[--self->n_acks_due];
        } else
            i++;
    }
}

//  --------------------------------------------------------------------------
//  A BLOCK_ACK from a peer: it holds our log up to seq; its own log was at
//  own_seq then. Acks of another incarnation of ours are stale: dropped.

static void
s_on_block_ack(ms_record_log_t *self, const uint8_t from[MS_HASH_BYTES],
               const ms_wire_block_ack_t *ack)
{
    if (ack->incarnation != ms_store_incarnation(self->store))
        return;
    self->n_acks_received++;
    self->iface.acked(self->iface.arg, from, ack->seq, ack->own_incarnation,
                      ack->own_seq);
}

//  ==========================================================================
//  Envelopes from peers

//  --------------------------------------------------------------------------
//  A BLOCK that gossip took: a claim block is acked once held, a sweep
//  block's commit time is noted once merged (after the drain).

static void
s_block_taken(ms_record_log_t *self, const ms_wire_block_t *block)
{
    bool claim = false, sweep = false;
    for (size_t i = 0; i < block->n_records; i++) {
        uint32_t kind = block->records[i].kind;
        claim = claim || kind == MS_RECORD_CLAIM;
        sweep = sweep || kind == MS_RECORD_SWEEP || kind == MS_RECORD_FRAGMENT;
    }
    if (sweep)
        self->sweeps_due = true;
    if (claim && block->n_records > 0)
        s_ack_later(self, block->origin, block->incarnation,
                    block->first_seq + block->n_records - 1);
}

//  --------------------------------------------------------------------------
//  A gossip envelope (or a BLOCK_ACK) from a linked peer.

int
ms_record_log_on_message(ms_record_log_t *self, ms_gossip_t *gossip,
                         const uint8_t from[MS_HASH_BYTES],
                         const ms_wire_envelope_t *env, int64_t now_ms)
{
    assert(self && from && env);
    if (!gossip)
        return MS_ERR_NOTFOUND;
    ms_gossip_msg_t msg;
    memset(&msg, 0, sizeof msg);
    ms_gossip_entry_t *entries = NULL;
    ms_gossip_record_t *recs = NULL;
    switch (env->body) {
    case MS_WIRE_BODY_VECTOR_DIGEST:
        msg.kind = MS_GOSSIP_MSG_DIGEST;
        memcpy(msg.u.digest, env->vector_digest.digest, MS_GOSSIP_ID_BYTES);
        break;
    case MS_WIRE_BODY_VECTOR:
        msg.kind = MS_GOSSIP_MSG_VECTOR;
        if (env->vector.n_entries) {
            entries = calloc(env->vector.n_entries, sizeof *entries);
            if (!entries)
                return MS_ERR_NOMEM;
            for (size_t i = 0; i < env->vector.n_entries; i++) {
                memcpy(entries[i].origin, env->vector.entries[i].origin,
                       MS_GOSSIP_ID_BYTES);
                entries[i].incarnation = env->vector.entries[i].incarnation;
                entries[i].seq = env->vector.entries[i].seq;
            }
        }
        msg.u.vector.entries = entries;
        msg.u.vector.n_entries = env->vector.n_entries;
        break;
    case MS_WIRE_BODY_RANGE_REQUEST:
        msg.kind = MS_GOSSIP_MSG_RANGE_REQUEST;
        memcpy(msg.u.range.origin, env->range_request.origin,
               MS_GOSSIP_ID_BYTES);
        msg.u.range.incarnation = env->range_request.incarnation;
        msg.u.range.from_seq = env->range_request.from_seq;
        msg.u.range.to_seq = env->range_request.to_seq;
        msg.u.range.max_records = env->range_request.max_records;
        break;
    case MS_WIRE_BODY_BLOCK_ACK:
        s_on_block_ack(self, from, &env->block_ack);
        return MS_OK;
    case MS_WIRE_BODY_BLOCK:
        if (!self->iface.check_block(self->iface.arg, from, &env->block))
            return MS_ERR_UNTRUSTED; // never stored, forwarded, acked
        msg.kind = MS_GOSSIP_MSG_BLOCK;
        recs = calloc(env->block.n_records ? env->block.n_records : 1,
                      sizeof *recs);
        if (!recs)
            return MS_ERR_NOMEM;
        for (size_t i = 0; i < env->block.n_records; i++) {
            recs[i].seq = env->block.records[i].seq;
            recs[i].kind = env->block.records[i].kind;
            recs[i].payload = env->block.records[i].payload;
            recs[i].payload_bytes = env->block.records[i].payload_bytes;
        }
        memcpy(msg.u.block.origin, env->block.origin, MS_GOSSIP_ID_BYTES);
        msg.u.block.incarnation = env->block.incarnation;
        msg.u.block.first_seq = env->block.first_seq;
        msg.u.block.n_records = env->block.n_records;
        msg.u.block.records = recs;
        msg.u.block.signature = env->block.signature;
        msg.u.block.signature_bytes = env->block.signature_bytes;
        break;
    default:
        return MS_ERR_NOTFOUND; // not the log's
    }
    int rc = ms_gossip_on_message(gossip, from, &msg, now_ms);
    if (rc == MS_OK && env->body == MS_WIRE_BODY_BLOCK)
        s_block_taken(self, &env->block);
    free(entries);
    free(recs);
    return rc == MS_OK ? MS_OK : MS_ERR_PROTOCOL;
}

//  --------------------------------------------------------------------------
//  Whether sweep records came since they were last noted.

bool
ms_record_log_sweeps_due(const ms_record_log_t *self)
{
    assert(self);
    return self->sweeps_due;
}

//  --------------------------------------------------------------------------
//  The sweeps that came are noted.

void
ms_record_log_sweeps_noted(ms_record_log_t *self)
{
    assert(self);
    self->sweeps_due = false;
}

//  --------------------------------------------------------------------------
//  The counters.

void
ms_record_log_stats(const ms_record_log_t *self, ms_record_log_stats_t *out)
{
    assert(self && out);
    *out = (ms_record_log_stats_t){.n_acks_sent = self->n_acks_sent,
                                   .n_acks_received = self->n_acks_received,
                                   .n_acks_due = self->n_acks_due};
}
