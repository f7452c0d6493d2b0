/*  =========================================================================
    ms_gossip - record dissemination: eager push + scuttlebutt anti-entropy

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    What it does (DESIGN.md "Records and anti-entropy", "Discovery and
    links"; docs/POOL.md). Every node ends up holding every record, by two
    mechanisms that cover each other's weak side:

    1. Eager push. A block committed locally is sent at once to every peer
       of the active view (8 + log2 N peers, or everyone up to 16 nodes).
       A peer that merges a block forwards it to its own active view once,
       and only when the block brought it new records: a node forwards each
       block at most once, so the flood costs at most N x view-size
       messages, and in a connected overlay a new record reaches everyone
       in the origin's eccentricity (at most the diameter: O(log N) hops
       in a random overlay of degree 8 + log2 N; the simulation measures
       exactly that many rounds). Push is fast but
       not reliable: a message lost, a peer down or a link that came up
       later leaves holes.

    2. Anti-entropy, the push-pull reconciliation of "scuttlebutt" (van
       Renesse, Dumitriu, Gough, Minsky, "Efficient reconciliation and
       flow control for anti-entropy protocols", LADIS 2008). Every
       antientropy_ms a node picks one random peer and sends it the digest
       of its version vector (VECTOR_DIGEST: 32 bytes). The vector holds,
       per (origin, incarnation), the highest contiguous seq held, so it
       summarises a whole log in one number per writer: the "scuttlebutt"
       idea, which avoids the Merkle trees or record lists of older
       anti-entropy. Equal digests end the round: in a quiet pool a round
       costs one small message. Otherwise the receiver answers with its
       VECTOR. The initiator now knows both vectors:
       - for what it lacks it pulls (RANGE_REQUEST, below);
       - what the peer lacks it sends at once as BLOCKs when that is at
         most direct_records records in all (the usual case: one missed
         push), else it sends its own VECTOR, and the peer pulls.
       The second VECTOR is sent only by the side that opened the round
       (it holds an open "session" for that peer, consumed by the first
       vector that comes back), so vectors never ping-pong, and the
       protocol needs no flag on the wire.

    Flow control (the "flow control" half of the paper, made simpler).
    All bulk transfer is pulled by the side that lacks records, in
    windows: a pull per (origin, incarnation) asks its peer for at most
    range_records seqs (RANGE_REQUEST), and asks for the next window once
    half of the last one has landed (held within range_records / 2 of its
    end), so about one and a half windows are in flight: the link stays
    busy while the requester merges, yet what it may receive is bounded.
    (Scuttlebutt bounds each exchange by an MTU and tunes send rates; a
    window asked by the receiver gives the same bound with no rate
    estimation: the requester's merging speed sets the pace.) The
    server answers with whole blocks (their boundaries are kept for life;
    they are the signed unit) and stops at range_records records or
    range_bytes bytes. So a node that missed 100,000 records streams them
    as a flow of windows, never one giant burst, and the requester's speed
    sets the pace. A window that stalls (a lost message, a server that
    clipped by bytes, a peer gone) is re-asked after range_timeout_ms; a
    pull with no progress after range_retries re-asks is dropped, and the
    next anti-entropy round (maybe with another peer) starts it again.
    At most max_pulls streams are pulled at once; the rest wait a round.

    Batched merging (catch-up). Merging block by block costs one durable
    commit (an fsync) per block: a node that missed 100,000 results took
    over two minutes to catch up, nearly all of it in fsyncs and in
    rewriting the same B-tree pages commit after commit. So the owner may
    open a batch around each drain of its sockets (ms_gossip_batch_begin
    / _end): BLOCKs are then checked for shape and copied into the batch,
    and the batch is merged with the source's merge_blocks, in ONE
    transaction and one fsync (DESIGN.md "Store": group commit). What a
    merge triggers is then done in arrival order, after the commit (so
    only durable blocks are forwarded): counting, forwarding of pushed
    blocks that brought news, the gap buffer for blocks above a gap, and
    the next windows. A batch made only of pushes merges at the end of
    its drain (latency of a result reaching every node is unchanged); a
    batch holding answers to our pulls stays open across drains while
    they keep bringing blocks, up to batch_blocks blocks, batch_bytes
    bytes or batch_hold_ms, since bigger commits rewrite far fewer pages
    (measured: 16x fewer bytes written at 8,192 blocks per commit than
    at 250). Any other message first merges the batch, so a DIGEST,
    VECTOR or RANGE_REQUEST sees every block that came before it.
    With batches, a window is merged whole and long after it landed, so
    windows are asked on receipt instead: once a pull has received up to
    pull_ahead_records before the end of what it asked, it asks the next
    window(s) at once, and the peer reads and sends while we merge (the
    link holds what is asked: ms_mesh sets its queues to 50,000 frames).
    Blocks from one peer arrive in the order sent (one link, answers in
    request order), so a pulled block that starts past what was received
    means the answer before it was clipped (range_bytes) or lost: the
    hole is asked again at once, not after range_timeout_ms, and the
    blocks above it wait in the gap buffer meanwhile.

    Gaps. A block whose first seq is above held + 1 (a push overtook a lost
    one) is refused by the source (MS_ERR_RANGE). It is kept in the gap
    buffer (bounded: gap_stream_bytes per stream, gap_buffer_bytes in all;
    oldest dropped first), and a pull for the gap is started with the peer
    that sent it. Whenever a merge advances a stream, buffered blocks that
    now fit are merged (and forwarded, if they came as pushes). A dropped
    buffered block costs nothing but time: anti-entropy fetches it again.

    Forwarding rule, in detail: blocks that answer our own RANGE_REQUEST
    (the stream is being pulled from that peer and the block lies in the
    window asked) are not forwarded: a node catching up on 100,000 records
    must not flood them to peers that have them already; those peers
    reconcile by anti-entropy if they need them.

    What is not done, and why.
    - No rumour mongering with a "stop after k duplicates" counter
      (Demers et al. 1987): forwarding once per new block is simpler, and
      its cost is bounded by the overlay degree, not by a tuned constant.
    - No Plumtree (lazy push of ids to non-tree links, Leitao et al.
      2007): it would cut the flood's N x degree messages to about N, but
      needs IHAVE/GRAFT/PRUNE messages and tree repair; at the pool's
      sizes (tens to a few thousand nodes, blocks of a few KiB) the flood
      is cheap, and the simulation shows it (docs/BENCHMARKS.md).
    - No Merkle tree over records: contiguous per-writer logs make the
      version vector an exact summary, so a tree would only help with
      holes, and holes are not kept (gap buffer, then pull).
    - No digests of parts of the vector: a vector costs 48 bytes per
      (origin, incarnation), 480 KB at 10,000 writers, sent only when the
      digests differ. If that matters one day, split it by origin prefix.
    - Gossip does not verify signatures or apply records: the source does
      (merge_block), so the daemon's store and the simulation's record set
      use one gossip code.
    - No per-peer quota on pulls or on range requests served: a member
      that lies in its vector can hold pull slots for (range_retries + 1)
      x range_timeout_ms, and ask for ranges as often as it likes (each
      answer is bounded). Members are admitted by certificate; quotas can
      come with the trust issue if a member ever needs them.
    - The gap buffer is a FIFO list scanned linearly: its byte bounds keep
      it short, and in a healthy pool it is empty.

    Malformed or inconsistent input (a vector with a key twice or a seq
    0, a block with holes in its seqs, a range with from > to) is counted in
    stats.rejected and ignored. Nothing here blocks or waits: every call
    does a bounded amount of work and returns.
*/
#include "ms_gossip.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define ID MS_GOSSIP_ID_BYTES

//  A stream being pulled from one peer.
typedef struct {
    uint8_t origin[ID];   // stream key
    uint64_t incarnation; //
    uint8_t peer[ID];     // who we pull from
    uint64_t target;      // highest seq wanted from that peer
    uint64_t asked_to;    // last seq of the window asked
    uint64_t held_at_ask; // held when the window was asked
    uint64_t rcv_to;      // seqs up to here received or held (batches)
    uint64_t seen_to;     // highest seq received from this pull
    uint64_t hole_to;     // end of the hole asked again (0: none)
    int64_t deadline_at;  // re-ask when no progress by then
    uint32_t retries;     // re-asks without progress
} s_pull_t;

//  An anti-entropy round we opened (we sent a digest to peer).
typedef struct {
    uint8_t peer[ID];   // digest sent to
    int64_t expires_at; // forgotten then
} s_session_t;

//  A block copied out of a message (one allocation: this + records +
//  bytes): waiting above a gap, or held in a batch.
typedef struct s_gap {
    struct s_gap *prev, *next; // FIFO, oldest at head
    ms_gossip_block_t block;   // records point into this allocation
    uint8_t from[ID];          // the peer that sent it
    bool pushed;               // came as a push (forward once merged)
    size_t bytes;              // accounted size
} s_gap_t;

#define S_MAX_SESSIONS 16

struct ms_gossip {
    uint8_t self[ID];                     // our node id
    ms_gossip_config_t cfg;               // settings
    ms_gossip_source_t src;               // where records live
    ms_gossip_transport_t net;            // how messages leave
    int64_t next_round_at;                // next anti-entropy round
    s_pull_t *pulls;                      // max_pulls entries allocated
    size_t n_pulls;                       // entries used
    s_session_t sessions[S_MAX_SESSIONS]; // open rounds
    size_t n_sessions;                    // entries used
    s_gap_t *gap_head, *gap_tail;         // gap buffer, FIFO
    size_t gap_bytes;                     // bytes in the gap buffer
    uint8_t (*peers)[ID];                 // scratch: max_push_peers ids
    bool batching;                        // between batch_begin and _end
    s_gap_t **batch;                      // blocks held for one merge
    size_t n_batch;                       // entries used (<= batch_blocks)
    size_t batch_bytes;                   // their accounted bytes
    size_t n_batch_pulled;                // of them, answers to our pulls
    size_t n_drain_blocks;                // blocks since batch_begin
    int64_t batch_since;                  // when its first block came
    ms_gossip_stats_t stats;              // counters
};

//  --------------------------------------------------------------------------
//  Fill cfg with the defaults.

void
ms_gossip_config_default(ms_gossip_config_t *cfg)
{
    assert(cfg);
    memset(cfg, 0, sizeof *cfg);
    cfg->push = true;
    cfg->antientropy = true;
    cfg->antientropy_ms = 1000;
    cfg->direct_records = 64;
    cfg->range_records = 1024;
    cfg->range_bytes = 16u << 20;
    cfg->range_timeout_ms = 750;
    cfg->range_retries = 3;
    cfg->max_pulls = 256;
    cfg->gap_buffer_bytes = 128u << 20;
    cfg->gap_stream_bytes = 64u << 20;
    cfg->max_push_peers = 64;
    cfg->batch_blocks = 16384;
    cfg->batch_bytes = 64u << 20;
    cfg->batch_hold_ms = 500;
    cfg->pull_ahead_records = 8192;
}

//  --------------------------------------------------------------------------
//  Create a gossip instance.

ms_gossip_t *
ms_gossip_new(const uint8_t self_id[MS_GOSSIP_ID_BYTES],
              const ms_gossip_config_t *cfg, const ms_gossip_source_t *source,
              const ms_gossip_transport_t *transport, int64_t now_ms)
{
    assert(self_id && source && transport);
    assert(source->vector_digest && source->vector && source->held &&
           source->read_blocks && source->merge_block);
    assert(transport->send && transport->active_peers &&
           transport->random_peer);
    ms_gossip_config_t c;
    if (cfg)
        c = *cfg;
    else
        ms_gossip_config_default(&c);
    if (c.antientropy_ms < 1 || c.range_records < 1 || c.max_pulls < 1 ||
        c.max_push_peers < 1 || c.range_timeout_ms < 1)
        return NULL;
    ms_gossip_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    memcpy(self->self, self_id, ID);
    self->cfg = c;
    self->src = *source;
    self->net = *transport;
    self->next_round_at = now_ms + c.antientropy_ms;
    self->pulls = calloc(c.max_pulls, sizeof *self->pulls);
    self->peers = calloc((size_t) c.max_push_peers, sizeof *self->peers);
    if (c.batch_blocks > 0 && source->merge_blocks)
        self->batch = calloc(c.batch_blocks, sizeof *self->batch);
    if (!self->pulls || !self->peers ||
        (c.batch_blocks > 0 && source->merge_blocks && !self->batch)) {
        ms_gossip_destroy(&self);
        return NULL;
    }
    return self;
}

//  --------------------------------------------------------------------------
//  Free the instance.

void
ms_gossip_destroy(ms_gossip_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_gossip_t *self = *self_p;
    s_gap_t *g = self->gap_head;
    while (g) {
        s_gap_t *next = g->next;
        free(g);
        g = next;
    }
    for (size_t i = 0; i < self->n_batch; i++)
        free(self->batch[i]);
    free(self->batch);
    free(self->pulls);
    free(self->peers);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Name of a message kind.

const char *
ms_gossip_msg_kind_name(int kind)
{
    switch (kind) {
    case MS_GOSSIP_MSG_DIGEST:
        return "digest";
    case MS_GOSSIP_MSG_VECTOR:
        return "vector";
    case MS_GOSSIP_MSG_RANGE_REQUEST:
        return "range_request";
    case MS_GOSSIP_MSG_BLOCK:
        return "block";
    default:
        return "unknown";
    }
}

//  --------------------------------------------------------------------------
//  Size of a message's fixed fields, payloads and signature, in bytes.

static uint64_t
s_msg_bytes(const ms_gossip_msg_t *msg)
{
    switch (msg->kind) {
    case MS_GOSSIP_MSG_DIGEST:
        return MS_GOSSIP_DIGEST_BYTES;
    case MS_GOSSIP_MSG_VECTOR:
        return (uint64_t) msg->u.vector.n_entries * (ID + 16);
    case MS_GOSSIP_MSG_RANGE_REQUEST:
        return ID + 3 * 8 + 4;
    case MS_GOSSIP_MSG_BLOCK: {
        const ms_gossip_block_t *b = &msg->u.block;
        uint64_t n = ID + 16 + b->signature_bytes;
        for (size_t i = 0; i < b->n_records && b->records; i++)
            n += 12 + b->records[i].payload_bytes;
        return n;
    }
    default:
        return 0;
    }
}

//  --------------------------------------------------------------------------
//  Send one message and count it.

static void
s_send(ms_gossip_t *self, const uint8_t to[ID], const ms_gossip_msg_t *msg)
{
    int rc = self->net.send(self->net.arg, to, msg);
    if (rc != MS_OK) {
        self->stats.send_errors++;
        return;
    }
    self->stats.sent[msg->kind]++;
    self->stats.sent_bytes[msg->kind] += s_msg_bytes(msg);
}

//  --------------------------------------------------------------------------
//  True when the block has a valid shape (count, contiguous seqs).

static bool
s_block_ok(const ms_gossip_block_t *b)
{
    if (b->n_records < 1 || b->n_records > MS_GOSSIP_MAX_BLOCK_RECORDS ||
        !b->records || b->first_seq < 1 ||
        b->first_seq > UINT64_MAX - MS_GOSSIP_MAX_BLOCK_RECORDS)
        return false;
    if (b->signature_bytes && !b->signature)
        return false;
    for (size_t i = 0; i < b->n_records; i++) {
        if (b->records[i].seq != b->first_seq + i)
            return false;
        if (b->records[i].payload_bytes && !b->records[i].payload)
            return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Send a block to every active peer except `except` (may be NULL) and
//  the block's origin.

static void
s_flood(ms_gossip_t *self, const ms_gossip_block_t *block,
        const uint8_t *except)
{
    int n = self->net.active_peers(self->net.arg, self->peers,
                                   self->cfg.max_push_peers);
    if (n < 0) {
        self->stats.send_errors++;
        return;
    }
    if (n > self->cfg.max_push_peers)
        n = self->cfg.max_push_peers;
    ms_gossip_msg_t msg;
    msg.kind = MS_GOSSIP_MSG_BLOCK;
    msg.u.block = *block;
    for (int i = 0; i < n; i++) {
        if (except && memcmp(self->peers[i], except, ID) == 0)
            continue;
        if (memcmp(self->peers[i], block->origin, ID) == 0)
            continue;
        s_send(self, self->peers[i], &msg);
    }
}

//  --------------------------------------------------------------------------
//  Eager push of a local block.

int
ms_gossip_push(ms_gossip_t *self, const ms_gossip_block_t *block)
{
    assert(self && block);
    if (!s_block_ok(block))
        return MS_ERR_INVALID;
    if (self->cfg.push)
        s_flood(self, block, NULL);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The pull of a stream, or NULL.

static s_pull_t *
s_pull_find(ms_gossip_t *self, const uint8_t *origin, uint64_t incarnation)
{
    for (size_t i = 0; i < self->n_pulls; i++) {
        s_pull_t *p = &self->pulls[i];
        if (p->incarnation == incarnation && memcmp(p->origin, origin, ID) == 0)
            return p;
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Forget a pull.

static void
s_pull_remove(ms_gossip_t *self, s_pull_t *p)
{
    size_t at = (size_t) (p - self->pulls);
    self->pulls[at] = self->pulls[--self->n_pulls];
}

static void s_pull_send(ms_gossip_t *self, s_pull_t *p, uint64_t from,
                        uint64_t to, int64_t now_ms);

//  --------------------------------------------------------------------------
//  Ask p's peer for the next window after `after` (held: held now).

static void
s_pull_ask(ms_gossip_t *self, s_pull_t *p, uint64_t after, uint64_t held,
           int64_t now_ms)
{
    uint64_t to = p->target;
    if (to - after > self->cfg.range_records)
        to = after + self->cfg.range_records;
    p->asked_to = to;
    p->held_at_ask = held;
    if (after <= held) {
        //  Asked again from what is held (start, re-ask): forget what the
        //  earlier windows brought.
        p->rcv_to = p->seen_to = held;
        p->hole_to = 0;
    }
    s_pull_send(self, p, after + 1, to, now_ms);
}

//  --------------------------------------------------------------------------
//  Send p's peer a RANGE_REQUEST for seqs from .. to; the pull's deadline
//  moves on.

static void
s_pull_send(ms_gossip_t *self, s_pull_t *p, uint64_t from, uint64_t to,
            int64_t now_ms)
{
    p->deadline_at = now_ms + self->cfg.range_timeout_ms;
    ms_gossip_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_RANGE_REQUEST;
    memcpy(msg.u.range.origin, p->origin, ID);
    msg.u.range.incarnation = p->incarnation;
    msg.u.range.from_seq = from;
    msg.u.range.to_seq = to;
    msg.u.range.max_records = self->cfg.range_records;
    self->stats.range_requests++;
    s_send(self, p->peer, &msg);
}

//  --------------------------------------------------------------------------
//  Held seq of a stream from the source; UINT64_MAX on a source error
//  (so that no pull is started on a failing store).

static uint64_t
s_held(ms_gossip_t *self, const uint8_t *origin, uint64_t incarnation)
{
    uint64_t seq = 0;
    if (self->src.held(self->src.arg, origin, incarnation, &seq) != MS_OK) {
        self->stats.source_errors++;
        return UINT64_MAX;
    }
    return seq;
}

//  --------------------------------------------------------------------------
//  Pull (origin, incarnation) up to target from peer, unless held or
//  pulled already (then only raise the target of a pull from that peer).

static void
s_pull_start(ms_gossip_t *self, const uint8_t *origin, uint64_t incarnation,
             const uint8_t *peer, uint64_t target, int64_t now_ms)
{
    uint64_t held = s_held(self, origin, incarnation);
    if (held == UINT64_MAX || target <= held)
        return;
    s_pull_t *p = s_pull_find(self, origin, incarnation);
    if (p) {
        if (memcmp(p->peer, peer, ID) == 0 && target > p->target)
            p->target = target;
        return;
    }
    if (self->n_pulls == self->cfg.max_pulls)
        return; // the next round starts it
    p = &self->pulls[self->n_pulls++];
    memset(p, 0, sizeof *p);
    memcpy(p->origin, origin, ID);
    p->incarnation = incarnation;
    memcpy(p->peer, peer, ID);
    p->target = target;
    s_pull_ask(self, p, held, held, now_ms);
}

//  --------------------------------------------------------------------------
//  After a stream advanced to held: finish its pull or ask the next window.

static void
s_pull_progress(ms_gossip_t *self, const uint8_t *origin, uint64_t incarnation,
                uint64_t held, int64_t now_ms)
{
    s_pull_t *p = s_pull_find(self, origin, incarnation);
    if (!p)
        return;
    if (held > p->rcv_to)
        p->rcv_to = held;
    if (held >= p->target)
        s_pull_remove(self, p);
    else if (p->asked_to < p->target &&
             held + self->cfg.range_records / 2 >= p->asked_to)
        s_pull_ask(self, p, held > p->asked_to ? held : p->asked_to, held,
                   now_ms); // half the window landed: ask the next one
}

//  --------------------------------------------------------------------------
//  Unlink and free a buffered block.

static void
s_gap_free(ms_gossip_t *self, s_gap_t *g)
{
    if (g->prev)
        g->prev->next = g->next;
    else
        self->gap_head = g->next;
    if (g->next)
        g->next->prev = g->prev;
    else
        self->gap_tail = g->prev;
    self->gap_bytes -= g->bytes;
    free(g);
}

//  --------------------------------------------------------------------------
//  True when the buffered block belongs to (origin, incarnation).

static bool
s_gap_is(const s_gap_t *g, const uint8_t *origin, uint64_t incarnation)
{
    return g->block.incarnation == incarnation &&
           memcmp(g->block.origin, origin, ID) == 0;
}

//  --------------------------------------------------------------------------
//  Bytes of a copy of block b (the s_gap_t allocation).

static size_t
s_copy_size(const ms_gossip_block_t *b)
{
    size_t payload = b->signature_bytes;
    for (size_t i = 0; i < b->n_records; i++)
        payload += b->records[i].payload_bytes;
    return sizeof(s_gap_t) + b->n_records * sizeof(ms_gossip_record_t) +
           payload;
}

//  --------------------------------------------------------------------------
//  A copy of block b from peer `from` in one allocation (not linked), or
//  NULL when out of memory.

static s_gap_t *
s_copy(const uint8_t *from, const ms_gossip_block_t *b, bool pushed)
{
    size_t size = s_copy_size(b);
    s_gap_t *g = malloc(size);
    if (!g)
        return NULL;
    memset(g, 0, sizeof *g);
    ms_gossip_record_t *recs = (ms_gossip_record_t *) (g + 1);
    uint8_t *bytes = (uint8_t *) (recs + b->n_records);
    g->block = *b;
    g->block.records = recs;
    for (size_t i = 0; i < b->n_records; i++) {
        recs[i] = b->records[i];
        if (recs[i].payload_bytes) {
            memcpy(bytes, b->records[i].payload, recs[i].payload_bytes);
            recs[i].payload = bytes;
            bytes += recs[i].payload_bytes;
        } else {
            recs[i].payload = NULL;
        }
    }
    if (b->signature_bytes) {
        memcpy(bytes, b->signature, b->signature_bytes);
        g->block.signature = bytes;
    } else {
        g->block.signature = NULL;
    }
    memcpy(g->from, from, ID);
    g->pushed = pushed;
    g->bytes = size;
    return g;
}

//  --------------------------------------------------------------------------
//  Keep a copy of a block above a gap; evict the oldest to stay in bounds.
//  OWN (may be NULL) is a copy of b made by s_copy: it is taken (linked
//  or freed) instead of making another.

static void
s_gap_add(ms_gossip_t *self, const uint8_t *from, const ms_gossip_block_t *b,
          bool pushed, s_gap_t *own)
{
    //  The same block buffered already: nothing to do.
    size_t stream_bytes = 0;
    for (s_gap_t *g = self->gap_head; g; g = g->next) {
        if (!s_gap_is(g, b->origin, b->incarnation))
            continue;
        if (g->block.first_seq == b->first_seq) {
            self->stats.blocks_duplicate++;
            free(own);
            return;
        }
        stream_bytes += g->bytes;
    }
    size_t size = s_copy_size(b);
    if (size > self->cfg.gap_stream_bytes ||
        size > self->cfg.gap_buffer_bytes) {
        self->stats.gaps_dropped++;
        free(own);
        return;
    }
    //  Oldest of this stream first, then oldest of all.
    for (s_gap_t *g = self->gap_head;
         g && stream_bytes + size > self->cfg.gap_stream_bytes;) {
        s_gap_t *next = g->next;
        if (s_gap_is(g, b->origin, b->incarnation)) {
            stream_bytes -= g->bytes;
            s_gap_free(self, g);
            self->stats.gaps_dropped++;
        }
        g = next;
    }
    while (self->gap_head &&
           self->gap_bytes + size > self->cfg.gap_buffer_bytes) {
        s_gap_free(self, self->gap_head);
        self->stats.gaps_dropped++;
    }
    s_gap_t *g = own ? own : s_copy(from, b, pushed);
    if (!g) {
        self->stats.gaps_dropped++;
        return;
    }
    g->next = NULL;
    g->prev = self->gap_tail;
    if (self->gap_tail)
        self->gap_tail->next = g;
    else
        self->gap_head = g;
    self->gap_tail = g;
    self->gap_bytes += size;
    self->stats.gaps_buffered++;
}

//  --------------------------------------------------------------------------
//  True when a block from peer answers our pull of its stream.

static bool
s_is_pulled(ms_gossip_t *self, const uint8_t *from, const ms_gossip_block_t *b)
{
    s_pull_t *p = s_pull_find(self, b->origin, b->incarnation);
    return p && memcmp(p->peer, from, ID) == 0 && b->first_seq <= p->asked_to;
}

//  --------------------------------------------------------------------------
//  A block answering our pull landed in a batch (not merged yet). Blocks
//  from one peer come in the order it sent them (one link, FIFO), and it
//  answers requests in order, so what a pull receives is a run of seqs:
//  - once half the last window has come, the next window is asked now,
//    so that the peer reads and sends it while we merge this one
//    (without this, a window merged in one batch would be asked for only
//    after its merge, and the link would idle for a merge per window);
//  - a block that starts past the run means the answer before it ended
//    early (the peer clipped it at its range_bytes, or a frame was lost):
//    the hole is asked again at once rather than after range_timeout_ms.
//    Blocks above it wait in the gap buffer; pipelining pauses until the
//    hole has come.

static void
s_pull_received(ms_gossip_t *self, const uint8_t *from,
                const ms_gossip_block_t *b, int64_t now_ms)
{
    s_pull_t *p = s_pull_find(self, b->origin, b->incarnation);
    if (!p || memcmp(p->peer, from, ID) != 0)
        return;
    uint64_t last = b->first_seq + b->n_records - 1;
    if (last > p->seen_to)
        p->seen_to = last;
    if (b->first_seq <= p->rcv_to + 1) {
        if (last > p->rcv_to)
            p->rcv_to = last;
        if (p->hole_to && p->rcv_to >= p->hole_to) {
            //  The hole came: what followed it came before.
            p->rcv_to = p->seen_to;
            p->hole_to = 0;
        }
    } else if (!p->hole_to) {
        p->hole_to = b->first_seq - 1;
        s_pull_send(self, p, p->rcv_to + 1, p->hole_to, now_ms);
        return;
    }
    uint64_t ahead = self->cfg.pull_ahead_records > self->cfg.range_records / 2
                         ? self->cfg.pull_ahead_records
                         : self->cfg.range_records / 2;
    uint64_t held = UINT64_MAX;
    while (!p->hole_to && p->asked_to < p->target &&
           p->rcv_to + ahead >= p->asked_to) {
        if (held == UINT64_MAX)
            held = s_held(self, p->origin, p->incarnation);
        if (held == UINT64_MAX)
            return;
        s_pull_ask(self, p, p->asked_to, held, now_ms);
    }
}

//  --------------------------------------------------------------------------
//  Merge one well-formed block: count, forward if it brought news and
//  came as a push, buffer it above a gap (when buffer; else drop it).
//  Returns the source's code (MS_OK, MS_ERR_RANGE, or a failure);
//  *advanced tells if held moved.

static int
s_merge_one(ms_gossip_t *self, const uint8_t *from, const ms_gossip_block_t *b,
            bool pushed, bool buffer, int64_t now_ms, bool *advanced)
{
    *advanced = false;
    size_t n_new = 0;
    int rc = self->src.merge_block(self->src.arg, b, &n_new);
    if (rc == MS_OK) {
        if (n_new == 0) {
            self->stats.blocks_duplicate++;
            return MS_OK;
        }
        *advanced = true;
        self->stats.blocks_merged++;
        self->stats.records_new += n_new;
        if (pushed && self->cfg.push) {
            self->stats.blocks_forwarded++;
            s_flood(self, b, from);
        }
        return MS_OK;
    }
    if (rc == MS_ERR_RANGE) {
        if (!buffer) {
            self->stats.gaps_dropped++;
            return rc;
        }
        s_gap_add(self, from, b, pushed, NULL);
        s_pull_start(self, b->origin, b->incarnation, from, b->first_seq - 1,
                     now_ms);
        return rc;
    }
    if (rc != MS_ERR_INVALID && rc != MS_ERR_BADSIG)
        self->stats.source_errors++;
    return rc;
}

//  --------------------------------------------------------------------------
//  Compare two entry keys: <0, 0, >0.

static int
s_entry_cmp(const ms_gossip_entry_t *a, const ms_gossip_entry_t *b)
{
    int c = memcmp(a->origin, b->origin, ID);
    if (c != 0)
        return c;
    return a->incarnation < b->incarnation   ? -1
           : a->incarnation > b->incarnation ? 1
                                             : 0;
}

//  --------------------------------------------------------------------------
//  s_entry_cmp for qsort.

static int
s_entry_qsort_cmp(const void *a, const void *b)
{
    return s_entry_cmp(a, b);
}

static void s_after_advance(ms_gossip_t *self, const uint8_t *origin,
                            uint64_t incarnation, int64_t now_ms);

//  --------------------------------------------------------------------------
//  s_gap_t by (stream, first_seq), for qsort of a pointer array.

static int
s_copy_qsort_cmp(const void *a, const void *b)
{
    const s_gap_t *x = *(const s_gap_t *const *) a;
    const s_gap_t *y = *(const s_gap_t *const *) b;
    int c = memcmp(x->block.origin, y->block.origin, ID);
    if (c != 0)
        return c;
    if (x->block.incarnation != y->block.incarnation)
        return x->block.incarnation < y->block.incarnation ? -1 : 1;
    if (x->block.first_seq != y->block.first_seq)
        return x->block.first_seq < y->block.first_seq ? -1 : 1;
    return 0;
}

//  --------------------------------------------------------------------------
//  Merge N copied blocks with ONE merge_blocks call (one durable commit),
//  then act on each outcome in array order as s_merge_one does: count,
//  forward pushed blocks that brought news, buffer blocks above a gap and
//  pull the gap. FROM_GAP: the items are linked in the gap buffer (a
//  block still above its gap stays there; the others are unlinked and
//  freed); else they are a batch's, owned here (moved to the gap buffer
//  or freed). When FOLLOW, every stream that advanced then gets
//  s_after_advance. Returns true when some stream advanced.

static bool
s_merge_many(ms_gossip_t *self, s_gap_t **items, size_t n, bool from_gap,
             bool follow, int64_t now_ms)
{
    ms_gossip_block_t *blocks = calloc(n, sizeof *blocks);
    int *rcs = malloc(n * sizeof *rcs);
    size_t *n_new = malloc(n * sizeof *n_new);
    ms_gossip_entry_t *moved = malloc(n * sizeof *moved);
    int rc = MS_ERR_NOMEM;
    if (blocks && rcs && n_new && moved) {
        for (size_t i = 0; i < n; i++)
            blocks[i] = items[i]->block;
        rc = self->src.merge_blocks(self->src.arg, blocks, n, rcs, n_new);
    }
    free(blocks);
    if (rc != MS_OK) {
        //  Nothing merged: a batch is lost (anti-entropy fetches it
        //  again), buffered blocks stay where they are.
        self->stats.source_errors += n;
        if (!from_gap)
            for (size_t i = 0; i < n; i++)
                free(items[i]);
        free(rcs);
        free(n_new);
        free(moved);
        return false;
    }
    self->stats.batches++;
    if (n > self->stats.max_batch_blocks)
        self->stats.max_batch_blocks = n;
    size_t n_moved = 0;
    for (size_t i = 0; i < n; i++) {
        s_gap_t *g = items[i];
        const ms_gossip_block_t *b = &g->block;
        if (rcs[i] == MS_ERR_RANGE) {
            if (from_gap)
                continue; // still above its gap: stays buffered
            //  s_gap_add takes g; the pull starts from a copy of the key.
            uint8_t origin[ID], from[ID];
            memcpy(origin, b->origin, ID);
            memcpy(from, g->from, ID);
            uint64_t inc = b->incarnation, below = b->first_seq - 1;
            s_gap_add(self, from, b, g->pushed, g);
            s_pull_start(self, origin, inc, from, below, now_ms);
            continue;
        }
        if (rcs[i] == MS_OK && n_new[i] == 0) {
            self->stats.blocks_duplicate++;
        } else if (rcs[i] == MS_OK) {
            self->stats.blocks_merged++;
            self->stats.records_new += n_new[i];
            if (g->pushed && self->cfg.push) {
                self->stats.blocks_forwarded++;
                s_flood(self, b, g->from);
            }
            memcpy(moved[n_moved].origin, b->origin, ID);
            moved[n_moved].incarnation = b->incarnation;
            moved[n_moved].seq = 0;
            n_moved++;
        } else if (rcs[i] == MS_ERR_INVALID || rcs[i] == MS_ERR_BADSIG) {
            self->stats.rejected++; // refused by the source: ignored
        } else {
            self->stats.source_errors++;
        }
        if (from_gap)
            s_gap_free(self, g);
        else
            free(g);
    }
    free(rcs);
    free(n_new);
    //  Each stream that advanced once, whatever its number of blocks.
    qsort(moved, n_moved, sizeof *moved, s_entry_qsort_cmp);
    size_t n_streams = 0;
    for (size_t i = 0; i < n_moved; i++)
        if (n_streams == 0 || s_entry_cmp(&moved[n_streams - 1], &moved[i]))
            moved[n_streams++] = moved[i];
    if (follow)
        for (size_t i = 0; i < n_streams; i++)
            s_after_advance(self, moved[i].origin, moved[i].incarnation,
                            now_ms);
    free(moved);
    return n_streams > 0;
}

//  --------------------------------------------------------------------------
//  Merge the held batch (one commit) and act on it.

static void
s_batch_flush(ms_gossip_t *self, int64_t now_ms)
{
    size_t n = self->n_batch;
    if (n == 0)
        return;
    //  Take the batch: what the merge triggers may not add to it.
    s_gap_t **items = malloc(n * sizeof *items);
    if (!items) {
        self->stats.source_errors += n;
        for (size_t i = 0; i < n; i++)
            free(self->batch[i]);
        self->n_batch = 0;
        self->batch_bytes = 0;
        self->n_batch_pulled = 0;
        return;
    }
    memcpy(items, self->batch, n * sizeof *items);
    //  Each stream in seq order: the store applies a batch in array
    //  order, so a block that arrived before the one below it (answers of
    //  windows asked ahead, from two peers) still fits in this commit
    //  instead of going through the gap buffer.
    qsort(items, n, sizeof *items, s_copy_qsort_cmp);
    self->n_batch = 0;
    self->batch_bytes = 0;
    self->n_batch_pulled = 0;
    bool was = self->batching;
    self->batching = false;
    (void) s_merge_many(self, items, n, false, true, now_ms);
    self->batching = was;
    free(items);
}

//  --------------------------------------------------------------------------
//  The buffered blocks of (origin, incarnation) that fit from HELD on,
//  in seq order (a chain: each starts at most one past the end of the
//  ones before), into a malloc'd array *out; returns their count (0 and
//  *out NULL when none or out of memory).

static size_t
s_gap_chain(ms_gossip_t *self, const uint8_t *origin, uint64_t incarnation,
            uint64_t held, s_gap_t ***out)
{
    *out = NULL;
    size_t n = 0;
    for (s_gap_t *g = self->gap_head; g; g = g->next)
        n += s_gap_is(g, origin, incarnation);
    if (n == 0)
        return 0;
    s_gap_t **all = malloc(n * sizeof *all);
    if (!all)
        return 0;
    n = 0;
    for (s_gap_t *g = self->gap_head; g; g = g->next)
        if (s_gap_is(g, origin, incarnation))
            all[n++] = g;
    qsort(all, n, sizeof *all, s_copy_qsort_cmp);
    size_t k = 0;
    uint64_t end = held;
    while (k < n && all[k]->block.first_seq <= end + 1) {
        uint64_t last = all[k]->block.first_seq + all[k]->block.n_records - 1;
        if (last > end)
            end = last;
        k++;
    }
    if (k == 0) {
        free(all);
        return 0;
    }
    *out = all;
    return k;
}

//  --------------------------------------------------------------------------
//  After (origin, incarnation) advanced: merge buffered blocks that fit
//  now, then move its pull on.

static void
s_after_advance(ms_gossip_t *self, const uint8_t *origin, uint64_t incarnation,
                int64_t now_ms)
{
    uint8_t key[ID];
    memcpy(key, origin, ID); // a stable copy while the buffer changes
    uint64_t held = s_held(self, key, incarnation);
    if (held == UINT64_MAX)
        return;
    if (self->src.merge_blocks) {
        //  Every buffered block that now fits, in one commit per pass
        //  (a pass merges the whole chain; another only when a block
        //  of the chain filled less than it promised).
        s_gap_t **chain = NULL;
        size_t n;
        while ((n = s_gap_chain(self, key, incarnation, held, &chain)) > 0) {
            bool advanced = s_merge_many(self, chain, n, true, false, now_ms);
            free(chain);
            if (!advanced)
                break;
            held = s_held(self, key, incarnation);
            if (held == UINT64_MAX)
                return;
        }
        s_pull_progress(self, key, incarnation, held, now_ms);
        return;
    }
    //  Passes over the FIFO until one merges nothing; blocks mostly come
    //  in seq order, so one or two passes do.
    bool again = self->gap_head != NULL;
    while (again) {
        again = false;
        s_gap_t *g = self->gap_head;
        while (g) {
            s_gap_t *next = g->next;
            if (s_gap_is(g, key, incarnation) &&
                g->block.first_seq <= held + 1) {
                //  Fits now (or is covered): merge it and drop it.
                bool advanced = false;
                (void) s_merge_one(self, g->from, &g->block, g->pushed, false,
                                   now_ms, &advanced);
                s_gap_free(self, g);
                if (advanced) {
                    held = s_held(self, key, incarnation);
                    if (held == UINT64_MAX)
                        return;
                    again = true;
                }
            }
            g = next;
        }
    }
    s_pull_progress(self, key, incarnation, held, now_ms);
}

//  --------------------------------------------------------------------------
//  BLOCK from a peer.

static int
s_on_block(ms_gossip_t *self, const uint8_t *from, const ms_gossip_block_t *b,
           int64_t now_ms)
{
    if (!s_block_ok(b))
        return MS_ERR_PROTOCOL;
    bool pushed = !s_is_pulled(self, from, b);
    if (!self->batching && self->n_batch > 0)
        s_batch_flush(self, now_ms); // a held batch goes first
    if (self->batching) {
        s_gap_t *g = s_copy(from, b, pushed);
        if (g) {
            if (self->n_batch == 0)
                self->batch_since = now_ms;
            self->batch[self->n_batch++] = g;
            self->batch_bytes += g->bytes;
            self->n_drain_blocks++;
            if (!pushed) {
                self->n_batch_pulled++;
                s_pull_received(self, from, b, now_ms);
            }
            if (self->n_batch >= self->cfg.batch_blocks ||
                self->batch_bytes >= self->cfg.batch_bytes)
                s_batch_flush(self, now_ms);
            return MS_OK;
        }
        s_batch_flush(self, now_ms); // out of memory: merge this one alone
    }
    bool advanced = false;
    int rc = s_merge_one(self, from, b, pushed, true, now_ms, &advanced);
    if (rc == MS_ERR_INVALID || rc == MS_ERR_BADSIG)
        return MS_ERR_PROTOCOL;
    if (advanced)
        s_after_advance(self, b->origin, b->incarnation, now_ms);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open a batch.

void
ms_gossip_batch_begin(ms_gossip_t *self)
{
    assert(self);
    if (self->batch)
        self->batching = true;
    self->n_drain_blocks = 0;
}

//  --------------------------------------------------------------------------
//  True when a batch left open by ms_gossip_batch_end must merge now.

static bool
s_batch_due(ms_gossip_t *self, int64_t now_ms)
{
    if (self->n_batch == 0)
        return false;
    if (self->n_batch_pulled == 0 ||
        now_ms >= self->batch_since + self->cfg.batch_hold_ms)
        return true;
    if (self->n_drain_blocks > 0)
        return false; // blocks keep coming: hold on
    //  A quiet drain: merge, unless a pull still waits for what it asked
    //  (the peer is reading or the link is busy: the rest is coming).
    for (size_t i = 0; i < self->n_pulls; i++)
        if (self->pulls[i].rcv_to < self->pulls[i].asked_to)
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  Merge the batch and close it.

int
ms_gossip_batch_end(ms_gossip_t *self, int64_t now_ms)
{
    assert(self);
    self->batching = false;
    if (s_batch_due(self, now_ms))
        s_batch_flush(self, now_ms);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Send my whole vector to peer.

static void
s_send_vector(ms_gossip_t *self, const uint8_t *to,
              const ms_gossip_entry_t *entries, size_t n)
{
    ms_gossip_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_VECTOR;
    msg.u.vector.entries = entries;
    msg.u.vector.n_entries = n;
    s_send(self, to, &msg);
}

//  --------------------------------------------------------------------------
//  DIGEST from a peer: answer with my vector when they differ.

static int
s_on_digest(ms_gossip_t *self, const uint8_t *from, const uint8_t *digest)
{
    uint8_t mine[MS_GOSSIP_DIGEST_BYTES];
    if (self->src.vector_digest(self->src.arg, mine) != MS_OK) {
        self->stats.source_errors++;
        return MS_OK;
    }
    if (memcmp(mine, digest, sizeof mine) == 0) {
        self->stats.digests_equal++;
        return MS_OK;
    }
    ms_gossip_entry_t *entries = NULL;
    size_t n = 0;
    if (self->src.vector(self->src.arg, &entries, &n) != MS_OK) {
        self->stats.source_errors++;
        return MS_OK;
    }
    s_send_vector(self, from, entries, n);
    free(entries);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Consume the open session with peer; true when there was one.

static bool
s_session_take(ms_gossip_t *self, const uint8_t *peer, int64_t now_ms)
{
    for (size_t i = 0; i < self->n_sessions; i++) {
        s_session_t *s = &self->sessions[i];
        if (memcmp(s->peer, peer, ID) != 0)
            continue;
        bool live = s->expires_at > now_ms;
        self->sessions[i] = self->sessions[--self->n_sessions];
        return live;
    }
    return false;
}

//  --------------------------------------------------------------------------
//  Emit callback of read_blocks: send one block to the peer in arg.

typedef struct {
    ms_gossip_t *self; // sender
    const uint8_t *to; // peer
} s_emit_t;

static int
s_emit_block(void *arg, const ms_gossip_block_t *block)
{
    s_emit_t *e = arg;
    ms_gossip_msg_t msg;
    msg.kind = MS_GOSSIP_MSG_BLOCK;
    msg.u.block = *block;
    s_send(e->self, e->to, &msg);
    return 0;
}

//  --------------------------------------------------------------------------
//  VECTOR from a peer: pull what I lack; if I opened this round, send
//  what the peer lacks (few records) or my vector (many).

static int
s_on_vector(ms_gossip_t *self, const uint8_t *from,
            const ms_gossip_entry_t *theirs, size_t n_theirs, int64_t now_ms)
{
    if (n_theirs && !theirs)
        return MS_ERR_PROTOCOL;
    bool sorted = true;
    for (size_t i = 0; i < n_theirs; i++) {
        if (theirs[i].seq < 1)
            return MS_ERR_PROTOCOL;
        if (i > 0 && s_entry_cmp(&theirs[i - 1], &theirs[i]) >= 0)
            sorted = false;
    }
    ms_gossip_entry_t *copy = NULL;
    if (!sorted) {
        //  The wire allows any order: sort a copy; a key twice is refused.
        copy = malloc(n_theirs * sizeof *copy);
        if (!copy) {
            self->stats.source_errors++;
            return MS_OK;
        }
        memcpy(copy, theirs, n_theirs * sizeof *copy);
        qsort(copy, n_theirs, sizeof *copy, s_entry_qsort_cmp);
        for (size_t i = 1; i < n_theirs; i++)
            if (s_entry_cmp(&copy[i - 1], &copy[i]) == 0) {
                free(copy);
                return MS_ERR_PROTOCOL;
            }
        theirs = copy;
    }
    ms_gossip_entry_t *mine = NULL;
    size_t n_mine = 0;
    if (self->src.vector(self->src.arg, &mine, &n_mine) != MS_OK) {
        self->stats.source_errors++;
        free(copy);
        return MS_OK;
    }
    bool session = s_session_take(self, from, now_ms);
    uint64_t they_lack = 0;
    size_t i = 0, j = 0;
    while (i < n_mine || j < n_theirs) {
        int c = i == n_mine     ? 1
                : j == n_theirs ? -1
                                : s_entry_cmp(&mine[i], &theirs[j]);
        if (c < 0) {
            they_lack += mine[i].seq;
            i++;
        } else if (c > 0) {
            s_pull_start(self, theirs[j].origin, theirs[j].incarnation, from,
                         theirs[j].seq, now_ms);
            j++;
        } else {
            if (mine[i].seq > theirs[j].seq)
                they_lack += mine[i].seq - theirs[j].seq;
            else if (mine[i].seq < theirs[j].seq)
                s_pull_start(self, theirs[j].origin, theirs[j].incarnation,
                             from, theirs[j].seq, now_ms);
            i++;
            j++;
        }
    }
    if (session && they_lack > 0) {
        if (they_lack > self->cfg.direct_records) {
            s_send_vector(self, from, mine, n_mine);
        } else {
            //  Few: send the blocks now (second walk, same order).
            s_emit_t e = {self, from};
            for (i = 0, j = 0; i < n_mine; i++) {
                while (j < n_theirs && s_entry_cmp(&theirs[j], &mine[i]) < 0)
                    j++;
                uint64_t have = 0;
                if (j < n_theirs && s_entry_cmp(&theirs[j], &mine[i]) == 0)
                    have = theirs[j].seq;
                if (have >= mine[i].seq)
                    continue;
                int rc = self->src.read_blocks(
                    self->src.arg, mine[i].origin, mine[i].incarnation,
                    have + 1, mine[i].seq, self->cfg.direct_records,
                    self->cfg.range_bytes, s_emit_block, &e);
                if (rc != MS_OK)
                    self->stats.source_errors++;
            }
        }
    }
    free(mine);
    free(copy);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  RANGE_REQUEST from a peer: send the blocks asked, within my bounds.

static int
s_on_range(ms_gossip_t *self, const uint8_t *from, const ms_gossip_msg_t *msg)
{
    uint64_t lo = msg->u.range.from_seq, hi = msg->u.range.to_seq;
    if (lo < 1 || hi < lo || msg->u.range.max_records < 1)
        return MS_ERR_PROTOCOL;
    size_t max = msg->u.range.max_records;
    if (max > self->cfg.range_records)
        max = self->cfg.range_records;
    s_emit_t e = {self, from};
    self->stats.ranges_served++;
    int rc = self->src.read_blocks(self->src.arg, msg->u.range.origin,
                                   msg->u.range.incarnation, lo, hi, max,
                                   self->cfg.range_bytes, s_emit_block, &e);
    if (rc != MS_OK)
        self->stats.source_errors++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Handle one message from a peer.

int
ms_gossip_on_message(ms_gossip_t *self, const uint8_t from[MS_GOSSIP_ID_BYTES],
                     const ms_gossip_msg_t *msg, int64_t now_ms)
{
    assert(self && from && msg);
    int rc = MS_ERR_PROTOCOL;
    int kind = (int) msg->kind;
    if (kind >= 1 && kind < MS_GOSSIP_MSG_KINDS) {
        self->stats.received[kind]++;
        self->stats.received_bytes[kind] += s_msg_bytes(msg);
    }
    if (self->n_batch > 0 && msg->kind != MS_GOSSIP_MSG_BLOCK)
        s_batch_flush(self, now_ms); // it sees every block before it
    switch (msg->kind) {
    case MS_GOSSIP_MSG_DIGEST:
        rc = s_on_digest(self, from, msg->u.digest);
        break;
    case MS_GOSSIP_MSG_VECTOR:
        rc = s_on_vector(self, from, msg->u.vector.entries,
                         msg->u.vector.n_entries, now_ms);
        break;
    case MS_GOSSIP_MSG_RANGE_REQUEST:
        rc = s_on_range(self, from, msg);
        break;
    case MS_GOSSIP_MSG_BLOCK:
        rc = s_on_block(self, from, &msg->u.block, now_ms);
        break;
    default:
        break;
    }
    if (rc == MS_ERR_PROTOCOL)
        self->stats.rejected++;
    return rc;
}

//  --------------------------------------------------------------------------
//  Open an anti-entropy round with one random peer.

static void
s_round(ms_gossip_t *self, int64_t now_ms)
{
    uint8_t peer[ID];
    if (self->net.random_peer(self->net.arg, peer) != MS_OK)
        return;
    ms_gossip_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_DIGEST;
    if (self->src.vector_digest(self->src.arg, msg.u.digest) != MS_OK) {
        self->stats.source_errors++;
        return;
    }
    self->stats.rounds++;
    //  Remember the session (replacing an older one with that peer, or
    //  the oldest when full).
    int64_t expires_at =
        now_ms + 2 * self->cfg.antientropy_ms + self->cfg.range_timeout_ms;
    size_t at = self->n_sessions;
    for (size_t i = 0; i < self->n_sessions; i++)
        if (memcmp(self->sessions[i].peer, peer, ID) == 0 ||
            self->sessions[i].expires_at <= now_ms)
            at = i;
    if (at == S_MAX_SESSIONS) {
        at = 0;
        for (size_t i = 1; i < self->n_sessions; i++)
            if (self->sessions[i].expires_at < self->sessions[at].expires_at)
                at = i;
    }
    if (at == self->n_sessions)
        self->n_sessions++;
    memcpy(self->sessions[at].peer, peer, ID);
    self->sessions[at].expires_at = expires_at;
    s_send(self, peer, &msg);
}

//  --------------------------------------------------------------------------
//  Run what is due: an anti-entropy round, pull re-asks.

int
ms_gossip_tick(ms_gossip_t *self, int64_t now_ms)
{
    assert(self);
    if (self->batching || s_batch_due(self, now_ms))
        s_batch_flush(self, now_ms);
    if (self->cfg.antientropy && now_ms >= self->next_round_at) {
        s_round(self, now_ms);
        self->next_round_at += self->cfg.antientropy_ms;
        if (self->next_round_at <= now_ms)
            self->next_round_at = now_ms + self->cfg.antientropy_ms;
    }
    for (size_t i = 0; i < self->n_pulls;) {
        s_pull_t *p = &self->pulls[i];
        if (now_ms < p->deadline_at) {
            i++;
            continue;
        }
        uint64_t held = s_held(self, p->origin, p->incarnation);
        if (held == UINT64_MAX || held >= p->target) {
            s_pull_remove(self, p);
            continue;
        }
        if (held > p->held_at_ask) {
            //  Progress, but the window did not complete (clipped answer).
            s_pull_ask(self, p, held, held, now_ms);
        } else if (p->retries < self->cfg.range_retries) {
            p->retries++;
            self->stats.pulls_timed_out++;
            s_pull_ask(self, p, held, held, now_ms);
        } else {
            self->stats.pulls_dropped++;
            s_pull_remove(self, p);
            continue;
        }
        i++;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  When ms_gossip_tick has work next.

int64_t
ms_gossip_next_deadline(ms_gossip_t *self)
{
    assert(self);
    int64_t next = self->cfg.antientropy ? self->next_round_at : INT64_MAX;
    if (self->n_batch > 0 && self->batch_since + self->cfg.batch_hold_ms < next)
        next = self->batch_since + self->cfg.batch_hold_ms;
    for (size_t i = 0; i < self->n_pulls; i++)
        if (self->pulls[i].deadline_at < next)
            next = self->pulls[i].deadline_at;
    return next;
}

//  --------------------------------------------------------------------------
//  Copy the counters.

void
ms_gossip_stats(ms_gossip_t *self, ms_gossip_stats_t *out)
{
    assert(self && out);
    *out = self->stats;
    out->gap_buffer_bytes = self->gap_bytes;
}

//  --------------------------------------------------------------------------
//  Streams pulled now.

size_t
ms_gossip_pull_count(ms_gossip_t *self)
{
    assert(self);
    return self->n_pulls;
}
