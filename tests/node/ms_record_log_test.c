/*  =========================================================================
    ms_record_log_test - the record log over a real store, with a fake
    node and a real gossip

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Each case opens a store in a temporary dir (ms_store_fixture.h), makes
    an ms_record_log over it with a fake ms_record_log_iface_t (recorded
    envelopes, a push-target list, a block check that can refuse, a
    signature server that can re-sign, a role answer, recorded merged
    records and acks, log lines) and, where messages flow, a real
    ms_gossip over the log's source and transport:
    - append: one durable commit, blocks pushed to the active view with the
      served signature; nothing pushed alone; a record the store refuses
      stores nothing;
    - vector, digest and held ranges as the store has them;
    - read_blocks: whole blocks, record and byte limits, emit's stop;
    - merge of another origin's blocks from the wire: in order (each
      record to iface.merged, the claim block acked to its origin once
      held), above a gap (a range request, no ack until the gap is
      filled), a duplicate (nothing merged), a refused block (never
      reaches gossip), a batch in one commit, equivocation (logged, kept
      as evidence), the submit role set before the merge;
    - BLOCK_ACKs received (stale incarnations dropped), the transport's
      envelopes, bodies that are not the log's.
*/
#include "ms_record_log.h"

#include "ms_err.h"
#include "ms_gossip.h"
#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_wire.h"
#include "ms_wire_sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_store_fixture.h"

#define ID MS_HASH_BYTES
#define MAX_SENT 64
#define MAX_MERGED 64
#define PEER_INC 7 // the peer origin's incarnation

//  One envelope the log sent, with what the cases look at.
typedef struct {
    uint8_t to[ID];          // the peer
    ms_wire_body_t body;     // its body
    uint8_t digest[ID];      // VECTOR_DIGEST
    size_t n_entries;        // VECTOR
    uint64_t first_seq;      // BLOCK; RANGE_REQUEST: from_seq
    uint64_t last_seq;       // BLOCK: first + n - 1; RANGE_REQUEST: to_seq
    uint8_t origin[ID];      // BLOCK, RANGE_REQUEST
    size_t sig_len;          // BLOCK
    uint8_t sig0;            // BLOCK: its signature's first byte
    ms_wire_block_ack_t ack; // BLOCK_ACK
} sent_t;

//  One record handed to iface.merged.
typedef struct {
    uint8_t origin[ID];
    uint64_t incarnation, seq;
    uint32_t kind;
} merged_t;

//  The fixture and the fake node.
typedef struct {
    ms_sf_t *fx;                 // the temporary dir
    ms_store_t *store;           // the real store
    ms_record_log_t *log;        // under test
    ms_gossip_t *gossip;         // over the log (NULL until made)
    uint8_t me[ID];              // our node id
    uint8_t peer[ID];            // a linked peer (the push target)
    uint8_t origin[ID];          // another origin whose blocks the peer relays
    sent_t sent[MAX_SENT];       // envelopes sent
    int n_sent;                  // how many
    int n_active;                // push targets listed (0 or 1: peer)
    bool refuse;                 // check_block says no
    int n_checks;                // check_block calls
    int n_serves;                // serve_signature calls
    bool resign;                 // serve_signature points at a fresh signature
    int may_submit;              // what may_submit answers
    merged_t merged[MAX_MERGED]; // records merged
    int n_merged;                // how many
    int n_acked;                 // acked calls
    uint8_t acked_from[ID];      // the last one's peer
    uint64_t acked_seq, acked_own_inc, acked_own_seq; // and its figures
    char log_text[4096];                              // logged lines
} t_t;

//  --------------------------------------------------------------------------
//  The fake node's side of ms_record_log_iface_t.

static void
s_fake_log(void *arg, const char *line)
{
    t_t *t = arg;
    size_t used = strlen(t->log_text);
    snprintf(t->log_text + used, sizeof t->log_text - used, "%s\n", line);
}

static int
s_fake_send(void *arg, const uint8_t to[ID], const ms_wire_envelope_t *env)
{
    t_t *t = arg;
    assert_true(t->n_sent < MAX_SENT);
    sent_t *s = &t->sent[t->n_sent++];
    memset(s, 0, sizeof *s);
    memcpy(s->to, to, ID);
    s->body = env->body;
    switch (env->body) {
    case MS_WIRE_BODY_VECTOR_DIGEST:
        memcpy(s->digest, env->vector_digest.digest, ID);
        break;
    case MS_WIRE_BODY_VECTOR:
        s->n_entries = env->vector.n_entries;
        break;
    case MS_WIRE_BODY_RANGE_REQUEST:
        memcpy(s->origin, env->range_request.origin, ID);
        s->first_seq = env->range_request.from_seq;
        s->last_seq = env->range_request.to_seq;
        break;
    case MS_WIRE_BODY_BLOCK:
        memcpy(s->origin, env->block.origin, ID);
        s->first_seq = env->block.first_seq;
        s->last_seq = env->block.first_seq + env->block.n_records - 1;
        s->sig_len = env->block.signature_bytes;
        s->sig0 = env->block.signature_bytes ? env->block.signature[0] : 0;
        break;
    case MS_WIRE_BODY_BLOCK_ACK:
        s->ack = env->block_ack;
        break;
    default:
        break;
    }
    return MS_OK;
}

static int
s_fake_active(void *arg, uint8_t (*out)[ID], int max)
{
    t_t *t = arg;
    int n = 0;
    if (t->n_active > 0 && max > 0)
        memcpy(out[n++], t->peer, ID);
    return n;
}

static int
s_fake_random(void *arg, uint8_t out[ID])
{
    t_t *t = arg;
    memcpy(out, t->peer, ID);
    return MS_OK;
}

static bool
s_fake_check(void *arg, const uint8_t from[ID], const ms_wire_block_t *block)
{
    t_t *t = arg;
    (void) from;
    (void) block;
    t->n_checks++;
    return !t->refuse;
}

static void
s_fake_serve(void *arg, const uint8_t *origin, uint64_t incarnation,
             uint64_t first_seq, size_t n, const uint32_t *kinds,
             const uint8_t *const *payloads, const size_t *lens,
             const uint8_t **sig, size_t *sig_len, uint8_t *fresh)
{
    t_t *t = arg;
    (void) incarnation;
    (void) first_seq;
    (void) n;
    (void) kinds;
    (void) payloads;
    (void) lens;
    t->n_serves++;
    if (t->resign && memcmp(origin, t->me, ID) == 0) {
        memset(fresh, 0x5a, MS_WIRE_SIGNATURE_BYTES);
        *sig = fresh;
        *sig_len = MS_WIRE_SIGNATURE_BYTES;
    }
}

static int
s_fake_may_submit(void *arg, const uint8_t origin[ID])
{
    t_t *t = arg;
    (void) origin;
    return t->may_submit;
}

static void
s_fake_merged(void *arg, const uint8_t origin[ID], uint64_t incarnation,
              uint64_t seq, uint32_t kind, const uint8_t *payload, size_t len)
{
    t_t *t = arg;
    (void) payload;
    (void) len;
    assert_true(t->n_merged < MAX_MERGED);
    merged_t *m = &t->merged[t->n_merged++];
    memcpy(m->origin, origin, ID);
    m->incarnation = incarnation;
    m->seq = seq;
    m->kind = kind;
}

static void
s_fake_acked(void *arg, const uint8_t from[ID], uint64_t seq,
             uint64_t own_incarnation, uint64_t own_seq)
{
    t_t *t = arg;
    t->n_acked++;
    memcpy(t->acked_from, from, ID);
    t->acked_seq = seq;
    t->acked_own_inc = own_incarnation;
    t->acked_own_seq = own_seq;
}

//  --------------------------------------------------------------------------
//  Setup: a store, the log over it, no gossip yet.

static int
s_setup(void **state)
{
    void *fxs = NULL;
    if (ms_sf_setup(&fxs, "ms_record_log_test") != 0)
        return -1;
    t_t *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    t->fx = fxs;
    t->store = ms_sf_open(t->fx, NULL, 4 << 20);
    ms_sf_id(t->me, 0xa1, 0);
    ms_sf_id(t->peer, 0xc3, 0);
    ms_sf_id(t->origin, 0xb2, 0);
    t->may_submit = -1;
    ms_record_log_iface_t iface = {.arg = t,
                                   .log = s_fake_log,
                                   .send = s_fake_send,
                                   .active_peers = s_fake_active,
                                   .random_peer = s_fake_random,
                                   .check_block = s_fake_check,
                                   .serve_signature = s_fake_serve,
                                   .may_submit = s_fake_may_submit,
                                   .merged = s_fake_merged,
                                   .acked = s_fake_acked};
    t->log = ms_record_log_new(t->store, t->me, &iface);
    assert_non_null(t->log);
    *state = t;
    return 0;
}

static int
s_teardown(void **state)
{
    t_t *t = *state;
    ms_gossip_destroy(&t->gossip);
    ms_record_log_destroy(&t->log);
    assert_null(t->log);
    ms_store_destroy(&t->store);
    void *fxs = t->fx;
    ms_sf_teardown(&fxs);
    free(t);
    return 0;
}

//  Make the gossip over the log (push, anti-entropy at 1 s).

static void
s_gossip(t_t *t)
{
    ms_gossip_source_t src;
    ms_gossip_transport_t tr;
    ms_record_log_source(t->log, &src);
    ms_record_log_transport(t->log, &tr);
    t->gossip = ms_gossip_new(t->me, NULL, &src, &tr, 0);
    assert_non_null(t->gossip);
}

//  A CLAIM payload of task (tag, n), slot 0, epoch 1.

static ms_store_payload_t
s_claim(uint8_t tag, uint32_t n)
{
    ms_store_payload_t p = {.kind = MS_RECORD_CLAIM};
    ms_sf_id(p.u.claim.task_id, tag, n);
    p.u.claim.epoch = 1;
    return p;
}

//  Our highest contiguous seq.

static uint64_t
s_own_held(t_t *t)
{
    uint64_t seq = 0;
    assert_int_equal(
        ms_store_held(t->store, t->me, ms_store_incarnation(t->store), &seq),
        MS_OK);
    return seq;
}

//  The other origin's highest contiguous seq.

static uint64_t
s_origin_held(t_t *t)
{
    uint64_t seq = 0;
    assert_int_equal(ms_store_held(t->store, t->origin, PEER_INC, &seq), MS_OK);
    return seq;
}

//  Envelopes of BODY sent so far.

static int
s_count_sent(const t_t *t, ms_wire_body_t body)
{
    int n = 0;
    for (int i = 0; i < t->n_sent; i++)
        n += t->sent[i].body == body;
    return n;
}

//  The last envelope of BODY sent, or NULL.

static const sent_t *
s_last_sent(const t_t *t, ms_wire_body_t body)
{
    for (int i = t->n_sent - 1; i >= 0; i--)
        if (t->sent[i].body == body)
            return &t->sent[i];
    return NULL;
}

//  A block of the other origin (PEER_INC) as a wire envelope: N payloads
//  from FIRST_SEQ, encoded into BUFS (freed by s_block_free).

typedef struct {
    ms_wire_envelope_t env;
    ms_wire_record_t recs[8];
    uint8_t *bufs[8];
    size_t n;
} t_block_t;

static void
s_block(t_t *t, t_block_t *b, uint64_t first_seq, size_t n,
        const ms_store_payload_t *payloads)
{
    assert_true(n >= 1 && n <= 8);
    memset(b, 0, sizeof *b);
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        assert_int_equal(
            ms_store_payload_encode(&payloads[i], &b->bufs[i], &len), MS_OK);
        b->recs[i] = (ms_wire_record_t){.seq = first_seq + i,
                                        .kind = payloads[i].kind,
                                        .payload = b->bufs[i],
                                        .payload_bytes = len};
    }
    b->env.protocol = MS_PROTOCOL_VERSION;
    b->env.body = MS_WIRE_BODY_BLOCK;
    memcpy(b->env.block.origin, t->origin, ID);
    b->env.block.incarnation = PEER_INC;
    b->env.block.first_seq = first_seq;
    b->env.block.records = b->recs;
    b->env.block.n_records = n;
}

static void
s_block_free(t_block_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->bufs[i]);
}

//  Hand the other origin's block of the N PAYLOADS from FIRST_SEQ to the
//  log, from the peer at gossip time NOW; returns the log's code.

static int
s_recv(t_t *t, uint64_t first_seq, size_t n, const ms_store_payload_t *payloads,
       int64_t now)
{
    t_block_t b;
    s_block(t, &b, first_seq, n, payloads);
    int rc = ms_record_log_on_message(t->log, t->gossip, t->peer, &b.env, now);
    s_block_free(&b);
    return rc;
}

//  The same for a block of one claim (task tag 0x70 + seq) at SEQ.

static int
s_recv_claim(t_t *t, uint64_t seq, int64_t now)
{
    ms_store_payload_t p = s_claim(0x70, (uint32_t) seq);
    return s_recv(t, seq, 1, &p, now);
}

//  --------------------------------------------------------------------------
//  Append: one commit, pushed whole to the active view; alone: stored only.

static void
test_append_pushes_blocks(void **state)
{
    t_t *t = *state;
    s_gossip(t);
    t->n_active = 1;
    t->resign = true;
    assert_int_equal(ms_record_log_last_seq(t->log), 0);
    ms_store_payload_t p[3] = {s_claim(1, 1), s_claim(1, 2), s_claim(1, 3)};
    ms_record_key_t keys[3];
    assert_int_equal(ms_record_log_append(t->log, t->gossip, 3, p, keys),
                     MS_OK);
    for (int i = 0; i < 3; i++) {
        assert_memory_equal(keys[i].origin, t->me, ID);
        assert_int_equal(keys[i].seq, (uint64_t) i + 1);
    }
    assert_int_equal(ms_record_log_last_seq(t->log), 3);
    assert_int_equal(s_own_held(t), 3);
    // one block of three, to the peer, with the signature the node served
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK), 1);
    const sent_t *s = s_last_sent(t, MS_WIRE_BODY_BLOCK);
    assert_memory_equal(s->to, t->peer, ID);
    assert_memory_equal(s->origin, t->me, ID);
    assert_int_equal(s->first_seq, 1);
    assert_int_equal(s->last_seq, 3);
    assert_int_equal(s->sig_len, MS_WIRE_SIGNATURE_BYTES);
    assert_int_equal(s->sig0, 0x5a);
    assert_int_equal(t->n_serves, 1);

    // alone (no gossip): stored, nothing sent
    ms_store_payload_t q = s_claim(1, 4);
    assert_int_equal(ms_record_log_append(t->log, NULL, 1, &q, NULL), MS_OK);
    assert_int_equal(ms_record_log_last_seq(t->log), 4);
    assert_int_equal(s_own_held(t), 4);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK), 1);

    // a record the store refuses: nothing of the call is stored or sent
    static const char bad_row[] = "not json";
    ms_store_payload_t r[2] = {s_claim(1, 5), {.kind = MS_RECORD_RESULT}};
    ms_sf_id(r[1].u.result.task_id, 1, 5);
    r[1].u.result.row_json = bad_row;
    r[1].u.result.row_len = sizeof bad_row - 1;
    assert_int_not_equal(ms_record_log_append(t->log, t->gossip, 2, r, NULL),
                         MS_OK);
    assert_int_equal(s_own_held(t), 4);
    assert_int_equal(ms_record_log_last_seq(t->log), 4);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK), 1);
}

//  --------------------------------------------------------------------------
//  The vector and its digest, as the store has them, through the source.

static void
test_vector_and_digest(void **state)
{
    t_t *t = *state;
    ms_gossip_source_t src;
    ms_record_log_source(t->log, &src);
    assert_ptr_equal(src.arg, t->log);
    ms_gossip_entry_t *e = NULL;
    size_t n = 99;
    assert_int_equal(src.vector(src.arg, &e, &n), MS_OK);
    assert_int_equal(n, 0);
    free(e);
    uint8_t empty[MS_GOSSIP_DIGEST_BYTES], d[MS_GOSSIP_DIGEST_BYTES];
    assert_int_equal(src.vector_digest(src.arg, empty), MS_OK);

    ms_store_payload_t p[2] = {s_claim(2, 1), s_claim(2, 2)};
    assert_int_equal(ms_record_log_append(t->log, NULL, 2, p, NULL), MS_OK);
    ms_gossip_record_t rec;
    uint8_t *buf = NULL;
    size_t len = 0;
    ms_store_payload_t c = s_claim(3, 1);
    assert_int_equal(ms_store_payload_encode(&c, &buf, &len), MS_OK);
    rec = (ms_gossip_record_t){
        .seq = 1, .kind = c.kind, .payload = buf, .payload_bytes = len};
    ms_gossip_block_t blk = {.incarnation = PEER_INC,
                             .first_seq = 1,
                             .records = &rec,
                             .n_records = 1};
    memcpy(blk.origin, t->origin, ID);
    size_t n_new = 0;
    assert_int_equal(src.merge_block(src.arg, &blk, &n_new), MS_OK);
    assert_int_equal(n_new, 1);
    free(buf);

    assert_int_equal(src.vector(src.arg, &e, &n), MS_OK);
    assert_int_equal(n, 2);
    // sorted by origin: ours (0xa1...) before the other (0xb2...)
    assert_memory_equal(e[0].origin, t->me, ID);
    assert_int_equal(e[0].incarnation, ms_store_incarnation(t->store));
    assert_int_equal(e[0].seq, 2);
    assert_memory_equal(e[1].origin, t->origin, ID);
    assert_int_equal(e[1].incarnation, PEER_INC);
    assert_int_equal(e[1].seq, 1);
    free(e);
    uint8_t want[32];
    assert_int_equal(src.vector_digest(src.arg, d), MS_OK);
    assert_int_equal(ms_store_vector_digest(t->store, want, NULL), MS_OK);
    assert_memory_equal(d, want, sizeof want);
    assert_memory_not_equal(d, empty, sizeof d);
}

//  --------------------------------------------------------------------------
//  Held: the highest contiguous seq; a block above a gap stores nothing.

static void
test_held_ranges(void **state)
{
    t_t *t = *state;
    ms_gossip_source_t src;
    ms_record_log_source(t->log, &src);
    uint64_t seq = 99;
    assert_int_equal(src.held(src.arg, t->origin, PEER_INC, &seq), MS_OK);
    assert_int_equal(seq, 0);
    ms_gossip_record_t recs[2];
    uint8_t *bufs[5] = {NULL};
    size_t lens[5];
    for (int i = 0; i < 5; i++) {
        ms_store_payload_t c = s_claim(4, (uint32_t) i + 1);
        assert_int_equal(ms_store_payload_encode(&c, &bufs[i], &lens[i]),
                         MS_OK);
    }
    // blocks [1,2], [4,5] (a gap), [3]: held 2, 2, then 5
    static const struct {
        uint64_t first;
        size_t n;
        int rc;
        uint64_t held;
    } steps[] = {{1, 2, MS_OK, 2},
                 {4, 2, MS_ERR_RANGE, 2},
                 {3, 1, MS_OK, 3},
                 {4, 2, MS_OK, 5}};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        for (size_t i = 0; i < steps[s].n; i++)
            recs[i] = (ms_gossip_record_t){
                .seq = steps[s].first + i,
                .kind = MS_RECORD_CLAIM,
                .payload = bufs[steps[s].first + i - 1],
                .payload_bytes = lens[steps[s].first + i - 1]};
        ms_gossip_block_t blk = {.incarnation = PEER_INC,
                                 .first_seq = steps[s].first,
                                 .records = recs,
                                 .n_records = steps[s].n};
        memcpy(blk.origin, t->origin, ID);
        size_t n_new = 99;
        assert_int_equal(src.merge_block(src.arg, &blk, &n_new), steps[s].rc);
        assert_int_equal(src.held(src.arg, t->origin, PEER_INC, &seq), MS_OK);
        assert_int_equal(seq, steps[s].held);
    }
    // another incarnation of the same origin is another stream
    assert_int_equal(src.held(src.arg, t->origin, PEER_INC + 1, &seq), MS_OK);
    assert_int_equal(seq, 0);
    for (int i = 0; i < 5; i++)
        free(bufs[i]);
}

//  --------------------------------------------------------------------------
//  read_blocks: whole blocks in order, the limits, emit's stop.

typedef struct {
    uint64_t first[8], last[8]; // blocks emitted
    size_t sig_len[8];          // their signatures' lengths
    int n;                      // how many
    int stop_at;                // return 7 at this call (0: never)
} t_emit_t;

static int
s_emit(void *arg, const ms_gossip_block_t *block)
{
    t_emit_t *e = arg;
    e->first[e->n] = block->first_seq;
    e->last[e->n] = block->first_seq + block->n_records - 1;
    e->sig_len[e->n] = block->signature_bytes;
    e->n++;
    return e->n == e->stop_at ? 7 : 0;
}

static void
test_read_blocks(void **state)
{
    t_t *t = *state;
    ms_gossip_source_t src;
    ms_record_log_source(t->log, &src);
    ms_store_payload_t p[3] = {s_claim(5, 1), s_claim(5, 2), s_claim(5, 3)};
    assert_int_equal(ms_record_log_append(t->log, NULL, 3, p, NULL), MS_OK);
    assert_int_equal(ms_record_log_append(t->log, NULL, 2, p, NULL), MS_OK);
    uint64_t inc = ms_store_incarnation(t->store);
    t->resign = true;

    t_emit_t e = {0};
    assert_int_equal(
        src.read_blocks(src.arg, t->me, inc, 2, 4, 0, 0, s_emit, &e), MS_OK);
    assert_int_equal(e.n, 2); // whole blocks: 1..3 and 4..5
    assert_int_equal(e.first[0], 1);
    assert_int_equal(e.last[0], 3);
    assert_int_equal(e.first[1], 4);
    assert_int_equal(e.last[1], 5);
    assert_int_equal(e.sig_len[0], MS_WIRE_SIGNATURE_BYTES); // served fresh
    assert_int_equal(t->n_serves, 2);

    memset(&e, 0, sizeof e); // at most one record: the first block whole
    assert_int_equal(
        src.read_blocks(src.arg, t->me, inc, 1, 5, 1, 0, s_emit, &e), MS_OK);
    assert_int_equal(e.n, 1);
    assert_int_equal(e.last[0], 3);

    memset(&e, 0, sizeof e); // at most one payload byte: the first block
    assert_int_equal(
        src.read_blocks(src.arg, t->me, inc, 1, 5, 0, 1, s_emit, &e), MS_OK);
    assert_int_equal(e.n, 1);

    memset(&e, 0, sizeof e); // emit stops the read with its code
    e.stop_at = 1;
    assert_int_equal(
        src.read_blocks(src.arg, t->me, inc, 1, 5, 0, 0, s_emit, &e), 7);
    assert_int_equal(e.n, 1);

    memset(&e, 0, sizeof e); // a stream not held: nothing, MS_OK
    assert_int_equal(
        src.read_blocks(src.arg, t->origin, PEER_INC, 1, 5, 0, 0, s_emit, &e),
        MS_OK);
    assert_int_equal(e.n, 0);
}

//  --------------------------------------------------------------------------
//  Merge from the wire: in order, a gap, a duplicate, a refused block;
//  claim blocks acked to their origin once held.

static void
test_merge_in_order_gap_duplicate_refused(void **state)
{
    t_t *t = *state;
    s_gossip(t);
    ms_store_payload_t own = s_claim(6, 1);
    assert_int_equal(ms_record_log_append(t->log, t->gossip, 1, &own, NULL),
                     MS_OK);

    // in order: a block of two claims
    ms_store_payload_t p[2] = {s_claim(7, 1), s_claim(7, 2)};
    assert_int_equal(s_recv(t, 1, 2, p, 10), MS_OK);
    assert_int_equal(t->n_checks, 1);
    assert_int_equal(s_origin_held(t), 2);
    assert_int_equal(t->n_merged, 2);
    for (int i = 0; i < 2; i++) {
        assert_memory_equal(t->merged[i].origin, t->origin, ID);
        assert_int_equal(t->merged[i].incarnation, PEER_INC);
        assert_int_equal(t->merged[i].seq, (uint64_t) i + 1);
        assert_int_equal(t->merged[i].kind, MS_RECORD_CLAIM);
    }
    // the ack waits for the drain's end, then goes to the claimer
    ms_record_log_stats_t st;
    ms_record_log_stats(t->log, &st);
    assert_int_equal(st.n_acks_due, 1);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK_ACK), 0);
    ms_record_log_send_acks_due(t->log);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK_ACK), 1);
    const sent_t *a = s_last_sent(t, MS_WIRE_BODY_BLOCK_ACK);
    assert_memory_equal(a->to, t->origin, ID);
    assert_int_equal(a->ack.incarnation, PEER_INC);
    assert_int_equal(a->ack.seq, 2);
    assert_int_equal(a->ack.own_incarnation, ms_store_incarnation(t->store));
    assert_int_equal(a->ack.own_seq, 1);
    ms_record_log_stats(t->log, &st);
    assert_int_equal(st.n_acks_due, 0);
    assert_int_equal(st.n_acks_sent, 1);

    // a gap: seq 4 is buffered by gossip, seq 3 asked of the peer, no ack
    assert_int_equal(s_recv_claim(t, 4, 20), MS_OK);
    assert_int_equal(s_origin_held(t), 2);
    assert_int_equal(t->n_merged, 2);
    const sent_t *rr = s_last_sent(t, MS_WIRE_BODY_RANGE_REQUEST);
    assert_non_null(rr);
    assert_memory_equal(rr->to, t->peer, ID);
    assert_memory_equal(rr->origin, t->origin, ID);
    assert_int_equal(rr->first_seq, 3);
    ms_record_log_send_acks_due(t->log);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK_ACK), 1);
    ms_record_log_stats(t->log, &st);
    assert_int_equal(st.n_acks_due, 1);

    // the gap filled: 3, then the buffered 4, merged in order; acked to 4
    assert_int_equal(s_recv_claim(t, 3, 30), MS_OK);
    assert_int_equal(s_origin_held(t), 4);
    assert_int_equal(t->n_merged, 4);
    assert_int_equal(t->merged[2].seq, 3);
    assert_int_equal(t->merged[3].seq, 4);
    ms_record_log_send_acks_due(t->log);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK_ACK), 2);
    assert_int_equal(s_last_sent(t, MS_WIRE_BODY_BLOCK_ACK)->ack.seq, 4);

    // a duplicate: nothing merged (the claimer is told again how far we are)
    assert_int_equal(s_recv_claim(t, 3, 40), MS_OK);
    assert_int_equal(t->n_merged, 4);
    assert_int_equal(s_origin_held(t), 4);
    ms_record_log_send_acks_due(t->log);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK_ACK), 3);
    assert_int_equal(s_last_sent(t, MS_WIRE_BODY_BLOCK_ACK)->ack.seq, 4);

    // refused by the check: never reaches gossip or the store, no ack
    ms_gossip_stats_t before, after;
    ms_gossip_stats(t->gossip, &before);
    int sent_before = t->n_sent;
    t->refuse = true;
    assert_int_equal(s_recv_claim(t, 5, 50), MS_ERR_UNTRUSTED);
    ms_gossip_stats(t->gossip, &after);
    assert_int_equal(after.received[MS_GOSSIP_MSG_BLOCK],
                     before.received[MS_GOSSIP_MSG_BLOCK]);
    assert_int_equal(s_origin_held(t), 4);
    assert_int_equal(t->n_merged, 4);
    ms_record_log_send_acks_due(t->log);
    assert_int_equal(t->n_sent, sent_before);
}

//  --------------------------------------------------------------------------
//  A drain's blocks in one batch: one merge_blocks commit, in order.

static void
test_merge_batch(void **state)
{
    t_t *t = *state;
    s_gossip(t);
    ms_gossip_batch_begin(t->gossip);
    for (uint64_t seq = 1; seq <= 3; seq++)
        assert_int_equal(s_recv_claim(t, seq, 10), MS_OK);
    assert_int_equal(s_origin_held(t), 0); // held in the batch
    assert_int_equal(ms_gossip_batch_end(t->gossip, 10), MS_OK);
    assert_int_equal(s_origin_held(t), 3);
    assert_int_equal(t->n_merged, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(t->merged[i].seq, (uint64_t) i + 1);
    ms_gossip_stats_t gs;
    ms_gossip_stats(t->gossip, &gs);
    assert_int_equal(gs.batches, 1);
    // the three claim blocks: one ack up to 3
    ms_record_log_send_acks_due(t->log);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_BLOCK_ACK), 1);
    assert_int_equal(s_last_sent(t, MS_WIRE_BODY_BLOCK_ACK)->ack.seq, 3);
}

//  --------------------------------------------------------------------------
//  Another record under a held key: kept as evidence, logged, not merged.

static void
test_equivocation(void **state)
{
    t_t *t = *state;
    s_gossip(t);
    assert_int_equal(s_recv_claim(t, 1, 10), MS_OK);
    assert_int_equal(t->n_merged, 1);
    ms_store_payload_t other = s_claim(0x71, 1); // other bytes, same key
    assert_int_equal(s_recv(t, 1, 1, &other, 20), MS_OK);
    assert_int_equal(t->n_merged, 1);
    assert_non_null(strstr(t->log_text, "equivocates: 1 conflicting"));
    bool eq = false;
    assert_int_equal(ms_store_equivocating(t->store, t->origin, &eq), MS_OK);
    assert_true(eq);
}

//  --------------------------------------------------------------------------
//  The submit role is set in the store before a block is merged; a sweep
//  block makes the sweeps due.

static void
test_submit_role_and_sweeps_due(void **state)
{
    t_t *t = *state;
    s_gossip(t);
    ms_sf_sweep_t sw;
    ms_sf_sweep_seeds(&sw, "record-log", 8, 2);
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, sw.sweep_id, ID);
    p.u.sweep.spec_json = ms_spec_canonical(sw.spec, &p.u.sweep.spec_len);

    t->may_submit = 0; // a member without the submit role
    assert_false(ms_record_log_sweeps_due(t->log));
    assert_int_equal(s_recv(t, 1, 1, &p, 10), MS_OK);
    assert_int_equal(s_origin_held(t), 1);                   // stored,
    assert_int_equal(ms_store_ignored_no_role(t->store), 1); // not applied
    assert_true(ms_record_log_sweeps_due(t->log));
    ms_record_log_sweeps_noted(t->log);
    assert_false(ms_record_log_sweeps_due(t->log));

    // no rule (open pool): the store's default (may submit) stands
    t->may_submit = -1;
    ms_sf_id(t->origin, 0xb4, 0);
    assert_int_equal(s_recv(t, 1, 1, &p, 20), MS_OK);
    assert_int_equal(s_origin_held(t), 1);
    assert_int_equal(ms_store_ignored_no_role(t->store), 1);
    ms_sf_sweep_free(&sw);
}

//  --------------------------------------------------------------------------
//  BLOCK_ACKs of peers: ours go to the node, stale ones are dropped.

static void
test_block_ack_received(void **state)
{
    t_t *t = *state;
    s_gossip(t);
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_BLOCK_ACK;
    env.block_ack.incarnation = ms_store_incarnation(t->store) + 1; // stale
    env.block_ack.seq = 5;
    assert_int_equal(
        ms_record_log_on_message(t->log, t->gossip, t->peer, &env, 10), MS_OK);
    assert_int_equal(t->n_acked, 0);
    env.block_ack.incarnation = ms_store_incarnation(t->store);
    env.block_ack.own_incarnation = 9;
    env.block_ack.own_seq = 12;
    assert_int_equal(
        ms_record_log_on_message(t->log, t->gossip, t->peer, &env, 10), MS_OK);
    assert_int_equal(t->n_acked, 1);
    assert_memory_equal(t->acked_from, t->peer, ID);
    assert_int_equal(t->acked_seq, 5);
    assert_int_equal(t->acked_own_inc, 9);
    assert_int_equal(t->acked_own_seq, 12);
    ms_record_log_stats_t st;
    ms_record_log_stats(t->log, &st);
    assert_int_equal(st.n_acks_received, 1);
}

//  --------------------------------------------------------------------------
//  The transport writes gossip messages as envelopes; a digest that
//  differs from ours is answered with our vector; other bodies are not
//  the log's.

static void
test_transport_and_other_bodies(void **state)
{
    t_t *t = *state;
    ms_gossip_transport_t tr;
    ms_record_log_transport(t->log, &tr);
    ms_gossip_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_DIGEST;
    memset(msg.u.digest, 0x42, sizeof msg.u.digest);
    assert_int_equal(tr.send(tr.arg, t->peer, &msg), MS_OK);
    const sent_t *s = s_last_sent(t, MS_WIRE_BODY_VECTOR_DIGEST);
    assert_non_null(s);
    assert_int_equal(s->digest[0], 0x42);
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_RANGE_REQUEST;
    memcpy(msg.u.range.origin, t->origin, ID);
    msg.u.range.from_seq = 3;
    msg.u.range.to_seq = 9;
    msg.u.range.max_records = 4;
    assert_int_equal(tr.send(tr.arg, t->peer, &msg), MS_OK);
    s = s_last_sent(t, MS_WIRE_BODY_RANGE_REQUEST);
    assert_int_equal(s->first_seq, 3);
    assert_int_equal(s->last_seq, 9);
    msg.kind = (ms_gossip_msg_kind_t) 0;
    assert_int_equal(tr.send(tr.arg, t->peer, &msg), MS_ERR_INVALID);
    uint8_t ids[2][ID];
    assert_int_equal(tr.active_peers(tr.arg, ids, 2), 0);
    t->n_active = 1;
    assert_int_equal(tr.active_peers(tr.arg, ids, 2), 1);
    assert_memory_equal(ids[0], t->peer, ID);
    assert_int_equal(tr.random_peer(tr.arg, ids[1]), MS_OK);
    assert_memory_equal(ids[1], t->peer, ID);

    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_VECTOR_DIGEST;
    memset(env.vector_digest.digest, 0x13, ID); // not our digest
    assert_int_equal(ms_record_log_on_message(t->log, NULL, t->peer, &env, 10),
                     MS_ERR_NOTFOUND); // no gossip: nothing to hand it to
    s_gossip(t);
    ms_store_payload_t p = s_claim(8, 1);
    assert_int_equal(ms_record_log_append(t->log, NULL, 1, &p, NULL), MS_OK);
    int vectors = s_count_sent(t, MS_WIRE_BODY_VECTOR);
    assert_int_equal(
        ms_record_log_on_message(t->log, t->gossip, t->peer, &env, 10), MS_OK);
    assert_int_equal(s_count_sent(t, MS_WIRE_BODY_VECTOR), vectors + 1);
    s = s_last_sent(t, MS_WIRE_BODY_VECTOR);
    assert_memory_equal(s->to, t->peer, ID);
    assert_int_equal(s->n_entries, 1);

    env.body = MS_WIRE_BODY_ITEM_DIGEST; // the node's, not the log's
    assert_int_equal(
        ms_record_log_on_message(t->log, t->gossip, t->peer, &env, 10),
        MS_ERR_NOTFOUND);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_pushes_blocks, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_vector_and_digest, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_held_ranges, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_read_blocks, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(
            test_merge_in_order_gap_duplicate_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_merge_batch, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_equivocation, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_submit_role_and_sweeps_due,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_block_ack_received, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_transport_and_other_bodies,
                                        s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
