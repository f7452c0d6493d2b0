/*  =========================================================================
    ms_gossip_test - unit tests of gossip (push + anti-entropy) and ms_recset

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    2 to 5 gossip instances, each over its own ms_recset, wired through an
    in-process fake transport: a queue of deep-copied messages delivered in
    random order (seeded), with a chance of dropping each one. A "round"
    advances the clock by one anti-entropy period, ticks every node and
    delivers until the queue is empty (bounded).
*/
#include "ms_gossip.h"
#include "ms_recset.h"
#include "ms_rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#define ID MS_GOSSIP_ID_BYTES
#define T_MAX_NODES 8
#define T_ROUND_MS 100

typedef struct t_net t_net_t;

typedef struct {
    t_net_t *net;         // the network it is on
    int index;            // position in net->nodes
    uint8_t id[ID];       // node id
    uint64_t incarnation; // of its own records
    ms_recset_t *rs;      // its records
    ms_gossip_t *g;       // its gossip
    bool up;              // receives and ticks
} t_node_t;

typedef struct {
    int from, to;        // node indexes
    ms_gossip_msg_t msg; // deep copy; pointers into mem
    void *mem;           // owned copy of entries / records / payloads
} t_packet_t;

struct t_net {
    int n;                              // nodes
    t_node_t nodes[T_MAX_NODES];        // the nodes
    t_packet_t *q;                      // in flight
    size_t n_q, cap_q;                  // used, allocated
    ms_rng_t rng;                       // delivery order and drops
    double drop;                        // chance of losing a message
    bool line;                          // active view: i - 1 and i + 1 only
    int64_t now_ms;                     // simulated clock
    uint64_t sent[MS_GOSSIP_MSG_KINDS]; // messages accepted by kind
};

//  --------------------------------------------------------------------------
//  Node id of index i.

static void
t_id(int i, uint8_t out[ID])
{
    memset(out, 0x5a, ID);
    out[0] = (uint8_t) (i + 1);
}

//  --------------------------------------------------------------------------
//  Deep copy of a message into a packet.

static void
t_copy(const ms_gossip_msg_t *msg, t_packet_t *p)
{
    p->msg = *msg;
    p->mem = NULL;
    if (msg->kind == MS_GOSSIP_MSG_VECTOR && msg->u.vector.n_entries) {
        size_t n = msg->u.vector.n_entries;
        ms_gossip_entry_t *e = malloc(n * sizeof *e);
        assert_non_null(e);
        memcpy(e, msg->u.vector.entries, n * sizeof *e);
        p->msg.u.vector.entries = e;
        p->mem = e;
    } else if (msg->kind == MS_GOSSIP_MSG_BLOCK) {
        const ms_gossip_block_t *b = &msg->u.block;
        size_t bytes = b->n_records * sizeof(ms_gossip_record_t);
        for (size_t i = 0; i < b->n_records; i++)
            bytes += b->records[i].payload_bytes;
        uint8_t *mem = malloc(bytes ? bytes : 1);
        assert_non_null(mem);
        ms_gossip_record_t *r = (ms_gossip_record_t *) mem;
        uint8_t *pay = mem + b->n_records * sizeof *r;
        for (size_t i = 0; i < b->n_records; i++) {
            r[i] = b->records[i];
            if (r[i].payload_bytes) {
                memcpy(pay, b->records[i].payload, r[i].payload_bytes);
                r[i].payload = pay;
                pay += r[i].payload_bytes;
            }
        }
        p->msg.u.block.records = r;
        p->mem = mem;
    }
}

//  --------------------------------------------------------------------------
//  Transport: queue a copy (or drop it).

static int
t_send(void *arg, const uint8_t to[ID], const ms_gossip_msg_t *msg)
{
    t_node_t *node = arg;
    t_net_t *net = node->net;
    int dest = to[0] - 1;
    assert_true(dest >= 0 && dest < net->n);
    assert_int_not_equal(dest, node->index);
    net->sent[msg->kind]++;
    if (net->drop > 0 && ms_rng_uniform(&net->rng) < net->drop)
        return MS_OK;
    if (net->n_q == net->cap_q) {
        net->cap_q = net->cap_q ? net->cap_q * 2 : 256;
        net->q = realloc(net->q, net->cap_q * sizeof *net->q);
        assert_non_null(net->q);
    }
    t_packet_t *p = &net->q[net->n_q++];
    p->from = node->index;
    p->to = dest;
    t_copy(msg, p);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Transport: every other node is in the active view.

static int
t_active_peers(void *arg, uint8_t (*out)[ID], int max)
{
    t_node_t *node = arg;
    int n = 0;
    for (int i = 0; i < node->net->n && n < max; i++)
        if (i != node->index &&
            (!node->net->line || i == node->index - 1 || i == node->index + 1))
            t_id(i, out[n++]);
    return n;
}

//  --------------------------------------------------------------------------
//  Transport: a random other node.

static int
t_random_peer(void *arg, uint8_t out[ID])
{
    t_node_t *node = arg;
    if (node->net->n < 2)
        return MS_ERR_NOTFOUND;
    int k = (int) ms_rng_below(&node->net->rng, (uint64_t) node->net->n - 1);
    if (k >= node->index)
        k++;
    t_id(k, out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  (Re)create node i with a fresh record set and incarnation.

static void
t_node_start(t_net_t *net, int i, const ms_gossip_config_t *cfg)
{
    t_node_t *node = &net->nodes[i];
    ms_gossip_destroy(&node->g);
    ms_recset_destroy(&node->rs);
    node->net = net;
    node->index = i;
    t_id(i, node->id);
    node->incarnation = ms_rng_next(&net->rng);
    node->rs = ms_recset_new();
    assert_non_null(node->rs);
    ms_gossip_source_t src;
    ms_recset_source(node->rs, &src);
    ms_gossip_transport_t tr = {node, t_send, t_active_peers, t_random_peer};
    node->g = ms_gossip_new(node->id, cfg, &src, &tr, net->now_ms);
    assert_non_null(node->g);
    node->up = true;
}

//  --------------------------------------------------------------------------
//  A network of n nodes with config cfg (NULL: defaults at T_ROUND_MS).

static t_net_t *
t_net_new(int n, const ms_gossip_config_t *cfg, uint64_t seed, double drop)
{
    t_net_t *net = calloc(1, sizeof *net);
    assert_non_null(net);
    net->n = n;
    net->drop = drop;
    ms_rng_seed(&net->rng, seed, 7);
    ms_gossip_config_t c;
    if (cfg)
        c = *cfg;
    else {
        ms_gossip_config_default(&c);
        c.antientropy_ms = T_ROUND_MS;
        c.range_timeout_ms = 2 * T_ROUND_MS;
    }
    for (int i = 0; i < n; i++)
        t_node_start(net, i, &c);
    return net;
}

//  --------------------------------------------------------------------------
//  Free the network.

static void
t_net_destroy(t_net_t *net)
{
    for (size_t i = 0; i < net->n_q; i++)
        free(net->q[i].mem);
    free(net->q);
    for (int i = 0; i < net->n; i++) {
        ms_gossip_destroy(&net->nodes[i].g);
        ms_recset_destroy(&net->nodes[i].rs);
    }
    free(net);
}

//  --------------------------------------------------------------------------
//  Deliver queued messages in random order until none is left (bounded).

static void
t_deliver(t_net_t *net)
{
    for (long steps = 0; net->n_q > 0; steps++) {
        assert_true(steps < 10000000);
        size_t k = ms_rng_below(&net->rng, net->n_q);
        t_packet_t p = net->q[k];
        net->q[k] = net->q[--net->n_q];
        t_node_t *to = &net->nodes[p.to];
        if (to->up) {
            int rc = ms_gossip_on_message(to->g, net->nodes[p.from].id, &p.msg,
                                          net->now_ms);
            assert_int_equal(rc, MS_OK);
        }
        free(p.mem);
    }
}

//  --------------------------------------------------------------------------
//  One round: advance the clock, tick every live node, deliver.

static void
t_round(t_net_t *net)
{
    net->now_ms += T_ROUND_MS;
    for (int i = 0; i < net->n; i++)
        if (net->nodes[i].up)
            assert_int_equal(ms_gossip_tick(net->nodes[i].g, net->now_ms),
                             MS_OK);
    t_deliver(net);
}

//  --------------------------------------------------------------------------
//  True when every live node holds the same vector and record count.

static bool
t_converged(t_net_t *net)
{
    uint8_t d0[32], d[32];
    size_t n0 = 0;
    bool first = true;
    for (int i = 0; i < net->n; i++) {
        if (!net->nodes[i].up)
            continue;
        if (first) {
            ms_recset_digest(net->nodes[i].rs, d0);
            n0 = ms_recset_size(net->nodes[i].rs);
            first = false;
            continue;
        }
        ms_recset_digest(net->nodes[i].rs, d);
        if (memcmp(d, d0, 32) != 0 || ms_recset_size(net->nodes[i].rs) != n0)
            return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Rounds until converged (at most max), or -1.

static int
t_run_until_converged(t_net_t *net, int max)
{
    for (int r = 0; r < max; r++) {
        if (t_converged(net) && net->n_q == 0)
            return r;
        t_round(net);
    }
    return t_converged(net) ? max : -1;
}

//  --------------------------------------------------------------------------
//  Append n_blocks blocks of per_block records on node i (payload "i:seq"),
//  pushing each one.

static void
t_write(t_net_t *net, int i, int n_blocks, int per_block, bool push)
{
    t_node_t *node = &net->nodes[i];
    for (int b = 0; b < n_blocks; b++) {
        ms_gossip_record_t recs[MS_GOSSIP_MAX_BLOCK_RECORDS];
        char text[MS_GOSSIP_MAX_BLOCK_RECORDS][32];
        uint64_t next = ms_recset_held(node->rs, node->id, node->incarnation);
        for (int r = 0; r < per_block; r++) {
            int len = snprintf(text[r], sizeof text[r], "%d:%llu", i,
                               (unsigned long long) (next + 1 + (uint64_t) r));
            recs[r].seq = 0;
            recs[r].kind = 7;
            recs[r].payload = (const uint8_t *) text[r];
            recs[r].payload_bytes = (size_t) len;
        }
        ms_gossip_block_t block;
        assert_int_equal(ms_recset_append(node->rs, node->id, node->incarnation,
                                          recs, (size_t) per_block, &block),
                         MS_OK);
        if (push)
            assert_int_equal(ms_gossip_push(node->g, &block), MS_OK);
    }
}

//  --------------------------------------------------------------------------
//  Config with only push or only anti-entropy.

static ms_gossip_config_t
t_cfg(bool push, bool antientropy)
{
    ms_gossip_config_t c;
    ms_gossip_config_default(&c);
    c.antientropy_ms = T_ROUND_MS;
    c.range_timeout_ms = 2 * T_ROUND_MS;
    c.push = push;
    c.antientropy = antientropy;
    return c;
}

//  ==========================================================================
//  ms_recset

//  Emit callback that records the blocks' first seqs and sizes.
typedef struct {
    uint64_t first[64];
    size_t n[64];
    int count;
} t_seen_t;

static int
t_collect(void *arg, const ms_gossip_block_t *b)
{
    t_seen_t *s = arg;
    assert_true(s->count < 64);
    s->first[s->count] = b->first_seq;
    s->n[s->count] = b->n_records;
    s->count++;
    return 0;
}

static void
test_recset_append_merge_read(void **state)
{
    (void) state;
    ms_recset_t *a = ms_recset_new(), *b = ms_recset_new();
    assert_non_null(a);
    assert_non_null(b);
    uint8_t origin[ID];
    t_id(0, origin);
    const uint8_t p1[] = "alpha", p2[] = "beta", p3[] = "gamma";
    ms_gossip_record_t recs[3] = {{0, 1, p1, 5}, {0, 4, p2, 4}, {0, 7, p3, 5}};
    ms_gossip_block_t blk;
    assert_int_equal(ms_recset_append(a, origin, 42, recs, 2, &blk), MS_OK);
    assert_int_equal(blk.first_seq, 1);
    assert_int_equal(blk.n_records, 2);
    assert_int_equal(blk.records[1].seq, 2);
    assert_int_equal(ms_recset_append(a, origin, 42, recs + 2, 1, NULL), MS_OK);
    assert_int_equal(ms_recset_append(a, origin, 42, recs, 0, NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_recset_held(a, origin, 42), 3);
    assert_int_equal(ms_recset_held(a, origin, 43), 0);
    assert_int_equal(ms_recset_size(a), 3);
    assert_int_equal(ms_recset_stream_count(a), 1);
    const ms_gossip_record_t *r = ms_recset_record(a, origin, 42, 3);
    assert_non_null(r);
    assert_int_equal(r->kind, 7);
    assert_memory_equal(r->payload, "gamma", 5);
    assert_null(ms_recset_record(a, origin, 42, 4));

    //  Serve blocks whole, with their boundaries.
    ms_gossip_source_t src;
    ms_recset_source(a, &src);
    t_seen_t seen = {0};
    assert_int_equal(src.read_blocks(src.arg, origin, 42, 2, 3, 100, 1 << 20,
                                     t_collect, &seen),
                     MS_OK);
    assert_int_equal(seen.count, 2);
    assert_int_equal(seen.first[0], 1);
    assert_int_equal(seen.n[0], 2);
    assert_int_equal(seen.first[1], 3);
    memset(&seen, 0, sizeof seen);
    assert_int_equal(src.read_blocks(src.arg, origin, 42, 1, 3, 1, 1 << 20,
                                     t_collect, &seen),
                     MS_OK);
    assert_int_equal(seen.count, 1); // stopped at max_records

    //  Merge into b: gap refused, then in order, then duplicate.
    ms_gossip_record_t third = *r;
    ms_gossip_block_t b3 = {
        .incarnation = 42, .first_seq = 3, .n_records = 1, .records = &third};
    memcpy(b3.origin, origin, ID);
    size_t n_new = 99;
    assert_int_equal(ms_recset_merge_block(b, &b3, &n_new), MS_ERR_RANGE);
    assert_int_equal(n_new, 0);
    assert_int_equal(ms_recset_size(b), 0);
    ms_gossip_record_t first2[2] = {*ms_recset_record(a, origin, 42, 1),
                                    *ms_recset_record(a, origin, 42, 2)};
    ms_gossip_block_t b12 = b3;
    b12.first_seq = 1;
    b12.n_records = 2;
    b12.records = first2;
    assert_int_equal(ms_recset_merge_block(b, &b12, &n_new), MS_OK);
    assert_int_equal(n_new, 2);
    assert_int_equal(ms_recset_merge_block(b, &b3, &n_new), MS_OK);
    assert_int_equal(n_new, 1);
    assert_int_equal(ms_recset_merge_block(b, &b12, &n_new), MS_OK);
    assert_int_equal(n_new, 0);
    uint8_t da[32], db[32];
    ms_recset_digest(a, da);
    ms_recset_digest(b, db);
    assert_memory_equal(da, db, 32);
    assert_int_equal(ms_recset_equivocations(b), 0);

    //  Malformed: seqs not contiguous.
    ms_gossip_record_t bad[2] = {first2[0], first2[0]};
    b12.records = bad;
    assert_int_equal(ms_recset_merge_block(b, &b12, &n_new), MS_ERR_INVALID);

    //  Equivocation: same key, other bytes: flagged, not replaced.
    ms_gossip_record_t other = third;
    other.payload = (const uint8_t *) "GAMMA";
    b3.records = &other;
    assert_int_equal(ms_recset_merge_block(b, &b3, &n_new), MS_OK);
    assert_int_equal(n_new, 0);
    assert_int_equal(ms_recset_equivocations(b), 1);
    assert_true(ms_recset_flagged(b, origin, 42));
    assert_false(ms_recset_flagged(a, origin, 42));
    assert_memory_equal(ms_recset_record(b, origin, 42, 3)->payload, "gamma",
                        5);

    //  Digest depends on the vector.
    assert_int_equal(ms_recset_append(b, origin, 43, recs, 1, NULL), MS_OK);
    ms_recset_digest(b, db);
    assert_memory_not_equal(da, db, 32);
    ms_gossip_entry_t *e = NULL;
    size_t n_e = 0;
    ms_recset_source(b, &src);
    assert_int_equal(src.vector(src.arg, &e, &n_e), MS_OK);
    assert_int_equal(n_e, 2);
    assert_int_equal(e[0].incarnation, 42);
    assert_int_equal(e[0].seq, 3);
    assert_int_equal(e[1].incarnation, 43);
    assert_int_equal(e[1].seq, 1);
    free(e);
    ms_recset_destroy(&a);
    ms_recset_destroy(&b);
    assert_null(a);
    ms_recset_destroy(&b); // NULL-safe
}

//  ==========================================================================
//  ms_gossip

static void
test_config_and_deadline(void **state)
{
    (void) state;
    ms_gossip_config_t c;
    ms_gossip_config_default(&c);
    assert_int_equal(c.antientropy_ms, 1000);
    assert_true(c.push && c.antientropy);
    ms_recset_t *rs = ms_recset_new();
    ms_gossip_source_t src;
    ms_recset_source(rs, &src);
    t_net_t dummy = {0};
    t_node_t node = {.net = &dummy};
    ms_gossip_transport_t tr = {&node, t_send, t_active_peers, t_random_peer};
    uint8_t id[ID];
    t_id(0, id);
    c.antientropy_ms = 0;
    assert_null(ms_gossip_new(id, &c, &src, &tr, 0));
    ms_gossip_t *g = ms_gossip_new(id, NULL, &src, &tr, 5000);
    assert_non_null(g);
    assert_int_equal(ms_gossip_next_deadline(g), 6000);
    assert_string_equal(ms_gossip_msg_kind_name(MS_GOSSIP_MSG_VECTOR),
                        "vector");
    assert_string_equal(ms_gossip_msg_kind_name(77), "unknown");
    //  A round with no peer sends nothing and moves the deadline.
    assert_int_equal(ms_gossip_tick(g, 6000), MS_OK);
    assert_int_equal(ms_gossip_next_deadline(g), 7000);
    ms_gossip_stats_t st;
    ms_gossip_stats(g, &st);
    assert_int_equal(st.rounds, 0);
    ms_gossip_destroy(&g);
    assert_null(g);
    ms_gossip_destroy(&g);
    ms_recset_destroy(&rs);
}

static void
test_two_nodes_push_reaches_peer(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(true, false);
    t_net_t *net = t_net_new(2, &c, 1, 0.0);
    t_write(net, 0, 1, 3, true);
    t_deliver(net);
    assert_int_equal(ms_recset_size(net->nodes[1].rs), 3);
    assert_true(t_converged(net));
    //  One push; the receiver does not send it back to its origin.
    assert_int_equal(net->sent[MS_GOSSIP_MSG_BLOCK], 1);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_int_equal(st.blocks_merged, 1);
    assert_int_equal(st.records_new, 3);
    assert_int_equal(st.received[MS_GOSSIP_MSG_BLOCK], 1);
    t_net_destroy(net);
}

static void
test_five_push_only_converges(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(true, false);
    t_net_t *net = t_net_new(5, &c, 2, 0.0);
    for (int i = 0; i < 5; i++)
        t_write(net, i, 4, 2, true);
    t_deliver(net);
    assert_true(t_converged(net));
    assert_int_equal(ms_recset_size(net->nodes[3].rs), 5 * 4 * 2);
    //  Each block: 4 pushes by its origin, then each of the 4 others
    //  forwards it once to the 3 peers that are neither sender nor
    //  origin: at most 4 + 4 * 3 messages per block.
    assert_true(net->sent[MS_GOSSIP_MSG_BLOCK] <= 20u * (4 + 12));
    assert_int_equal(net->sent[MS_GOSSIP_MSG_DIGEST], 0);
    t_net_destroy(net);
}

static void
test_five_antientropy_only_converges(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, true);
    t_net_t *net = t_net_new(5, &c, 3, 0.1);
    for (int i = 0; i < 5; i++)
        t_write(net, i, 3, 5, true); // push is off: no messages
    assert_int_equal(net->sent[MS_GOSSIP_MSG_BLOCK], 0);
    assert_false(t_converged(net));
    int rounds = t_run_until_converged(net, 200);
    assert_true(rounds > 0);
    assert_true(t_converged(net));
    assert_int_equal(ms_recset_size(net->nodes[0].rs), 5 * 3 * 5);
    assert_true(net->sent[MS_GOSSIP_MSG_DIGEST] > 0);
    t_net_destroy(net);
}

static void
test_one_record_reaches_all_with_drops(void **state)
{
    (void) state;
    t_net_t *net = t_net_new(5, NULL, 4, 0.3);
    t_write(net, 2, 1, 1, true);
    int rounds = t_run_until_converged(net, 100);
    assert_true(rounds >= 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ms_recset_held(net->nodes[i].rs, net->nodes[2].id,
                                        net->nodes[2].incarnation),
                         1);
    t_net_destroy(net);
}

static void
test_catch_up_10000_records(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, true);
    c.range_records = 1000;
    t_net_t *net = t_net_new(2, &c, 5, 0.05);
    t_write(net, 0, 200, 50, false); // 10,000 records in 200 blocks
    assert_int_equal(ms_recset_size(net->nodes[0].rs), 10000);
    int rounds = t_run_until_converged(net, 100);
    assert_true(rounds >= 0);
    assert_int_equal(ms_recset_size(net->nodes[1].rs), 10000);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[1].g, &st);
    //  Pulled in windows of at most 1000 records: at least 10 requests.
    assert_true(st.range_requests >= 10);
    assert_int_equal(st.records_new, 10000);
    assert_int_equal(ms_gossip_pull_count(net->nodes[1].g), 0);
    ms_gossip_stats_t sa;
    ms_gossip_stats(net->nodes[0].g, &sa);
    //  No answer ever exceeded the window: blocks sent <= 20 per request
    //  served (plus the windows asked again after a drop).
    assert_true(sa.sent[MS_GOSSIP_MSG_BLOCK] <= 20 * sa.ranges_served);
    t_net_destroy(net);
}

static void
test_catch_up_in_flow_without_drops(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, true);
    c.range_records = 500;
    t_net_t *net = t_net_new(2, &c, 6, 0.0);
    t_write(net, 0, 100, 50, false); // 5,000 records
    //  One round: node 0 or 1 opens, the vector goes across, node 1
    //  pulls 10 windows in a row as each lands: no timeouts needed.
    int rounds = t_run_until_converged(net, 10);
    assert_true(rounds >= 1 && rounds <= 2);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_int_equal(st.range_requests, 10);
    assert_int_equal(st.pulls_timed_out, 0);
    t_net_destroy(net);
}

//  Hand one block of node src's stream (first_seq, n) to node dst as if
//  pushed by src.
static void
t_hand_block(t_net_t *net, int src, int dst, uint64_t first_seq, size_t n)
{
    t_node_t *s = &net->nodes[src];
    ms_gossip_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_BLOCK;
    memcpy(msg.u.block.origin, s->id, ID);
    msg.u.block.incarnation = s->incarnation;
    msg.u.block.first_seq = first_seq;
    msg.u.block.n_records = n;
    msg.u.block.records =
        ms_recset_record(s->rs, s->id, s->incarnation, first_seq);
    assert_non_null(msg.u.block.records);
    assert_int_equal(
        ms_gossip_on_message(net->nodes[dst].g, s->id, &msg, net->now_ms),
        MS_OK);
}

static void
test_push_forwarded_once_along_a_line(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(true, false);
    t_net_t *net = t_net_new(5, &c, 16, 0.0);
    net->line = true; // 0 - 1 - 2 - 3 - 4: only forwarding reaches 2..4
    t_write(net, 0, 1, 2, true);
    t_deliver(net);
    assert_true(t_converged(net));
    //  One message per link, none back to the sender.
    assert_int_equal(net->sent[MS_GOSSIP_MSG_BLOCK], 4);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[2].g, &st);
    assert_int_equal(st.blocks_forwarded, 1);
    //  The same block again brings nothing new: not forwarded.
    t_hand_block(net, 0, 1, 1, 2);
    assert_int_equal(net->n_q, 0);
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_int_equal(st.blocks_duplicate, 1);
    assert_int_equal(st.blocks_forwarded, 1);
    t_net_destroy(net);
}

static void
test_gap_filled_by_range_request(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(true, false);
    t_net_t *net = t_net_new(2, &c, 7, 0.0);
    t_write(net, 0, 3, 4, false); // blocks 1-4, 5-8, 9-12, not pushed
    t_hand_block(net, 0, 1, 9, 4);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_int_equal(st.gaps_buffered, 1);
    assert_true(st.gap_buffer_bytes > 0);
    assert_int_equal(st.range_requests, 1);
    assert_int_equal(ms_recset_size(net->nodes[1].rs), 0);
    assert_int_equal(ms_gossip_pull_count(net->nodes[1].g), 1);
    t_deliver(net); // request to 0, blocks 1-4 and 5-8 back, 9-12 merged
    assert_int_equal(ms_recset_held(net->nodes[1].rs, net->nodes[0].id,
                                    net->nodes[0].incarnation),
                     12);
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_int_equal(st.gap_buffer_bytes, 0);
    assert_int_equal(st.records_new, 12);
    assert_int_equal(ms_gossip_pull_count(net->nodes[1].g), 0);
    assert_true(t_converged(net));
    t_net_destroy(net);
}

static void
test_duplicate_and_reordered_blocks(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, false); // no range traffic answered
    t_net_t *net = t_net_new(2, &c, 8, 1.0);    // everything sent is lost
    t_write(net, 0, 5, 2, false);               // blocks at 1, 3, 5, 7, 9
    for (int f = 9; f >= 1; f -= 2)             // newest first
        t_hand_block(net, 0, 1, (uint64_t) f, 2);
    t_hand_block(net, 0, 1, 5, 2); // duplicate
    t_hand_block(net, 0, 1, 1, 2); // duplicate
    assert_int_equal(ms_recset_size(net->nodes[1].rs), 10);
    assert_true(t_converged(net));
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_int_equal(st.gaps_buffered, 4);
    assert_int_equal(st.records_new, 10);
    assert_int_equal(st.blocks_duplicate, 2);
    assert_int_equal(st.gap_buffer_bytes, 0);
    assert_int_equal(ms_recset_equivocations(net->nodes[1].rs), 0);
    t_net_destroy(net);
}

static void
test_gap_buffer_is_bounded(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, true);
    c.gap_stream_bytes = 2000;
    c.gap_buffer_bytes = 2000;
    t_net_t *net = t_net_new(2, &c, 9, 0.0);
    t_write(net, 0, 40, 1, false);
    net->drop = 1.0; // range requests lost: the gap stays open
    for (uint64_t f = 2; f <= 40; f++)
        t_hand_block(net, 0, 1, f, 1);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_true(st.gap_buffer_bytes <= 2000);
    assert_true(st.gaps_dropped > 0);
    assert_int_equal(st.gaps_buffered, 39);
    net->drop = 0.0;
    assert_true(t_run_until_converged(net, 50) >= 0);
    assert_int_equal(ms_recset_size(net->nodes[1].rs), 40);
    t_net_destroy(net);
}

static void
test_wiped_node_new_incarnation(void **state)
{
    (void) state;
    t_net_t *net = t_net_new(3, NULL, 10, 0.1);
    for (int i = 0; i < 3; i++)
        t_write(net, i, 2, 3, true);
    assert_true(t_run_until_converged(net, 100) >= 0);
    uint64_t old_inc = net->nodes[2].incarnation;
    ms_gossip_config_t c = t_cfg(true, true);
    t_node_start(net, 2, &c); // data dir wiped: same id, new incarnation
    assert_int_not_equal(net->nodes[2].incarnation, old_inc);
    assert_int_equal(ms_recset_size(net->nodes[2].rs), 0);
    t_write(net, 2, 1, 2, true); // seqs from 1 again, under the new key
    assert_true(t_run_until_converged(net, 100) >= 0);
    for (int i = 0; i < 3; i++) {
        ms_recset_t *rs = net->nodes[i].rs;
        assert_int_equal(ms_recset_size(rs), 3 * 6 + 2);
        assert_int_equal(ms_recset_held(rs, net->nodes[2].id, old_inc), 6);
        assert_int_equal(
            ms_recset_held(rs, net->nodes[2].id, net->nodes[2].incarnation), 2);
        assert_int_equal(ms_recset_equivocations(rs), 0);
    }
    t_net_destroy(net);
}

static void
test_equal_digests_send_no_vector(void **state)
{
    (void) state;
    t_net_t *net = t_net_new(3, NULL, 11, 0.0);
    for (int i = 0; i < 3; i++)
        t_write(net, i, 1, 1, true);
    assert_true(t_run_until_converged(net, 50) >= 0);
    t_round(net); // let rounds opened before convergence finish
    uint64_t before[MS_GOSSIP_MSG_KINDS];
    memcpy(before, net->sent, sizeof before);
    ms_gossip_stats_t st0;
    ms_gossip_stats(net->nodes[0].g, &st0);
    for (int r = 0; r < 10; r++)
        t_round(net);
    assert_int_equal(net->sent[MS_GOSSIP_MSG_DIGEST] -
                         before[MS_GOSSIP_MSG_DIGEST],
                     30); // 3 nodes x 10 rounds
    assert_int_equal(net->sent[MS_GOSSIP_MSG_VECTOR],
                     before[MS_GOSSIP_MSG_VECTOR]);
    assert_int_equal(net->sent[MS_GOSSIP_MSG_BLOCK],
                     before[MS_GOSSIP_MSG_BLOCK]);
    assert_int_equal(net->sent[MS_GOSSIP_MSG_RANGE_REQUEST],
                     before[MS_GOSSIP_MSG_RANGE_REQUEST]);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[0].g, &st);
    assert_int_equal(st.rounds - st0.rounds, 10);
    assert_true(st.digests_equal > st0.digests_equal);
    //  A different store: the digest differs and a vector comes back.
    t_write(net, 1, 1, 1, false);
    ms_gossip_msg_t msg = {.kind = MS_GOSSIP_MSG_DIGEST};
    ms_recset_digest(net->nodes[0].rs, msg.u.digest);
    uint64_t v = net->sent[MS_GOSSIP_MSG_VECTOR];
    assert_int_equal(ms_gossip_on_message(net->nodes[1].g, net->nodes[0].id,
                                          &msg, net->now_ms),
                     MS_OK);
    assert_int_equal(net->sent[MS_GOSSIP_MSG_VECTOR], v + 1);
    t_net_destroy(net);
}

static void
test_bad_messages_counted_and_ignored(void **state)
{
    (void) state;
    t_net_t *net = t_net_new(2, NULL, 12, 0.0);
    t_write(net, 0, 2, 2, false);
    t_node_t *a = &net->nodes[0], *b = &net->nodes[1];
    uint8_t d_before[32];
    ms_recset_digest(b->rs, d_before);
    int expected = 0;

    //  Unknown kind.
    ms_gossip_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = (ms_gossip_msg_kind_t) 9;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    expected++;

    //  Duplicate keys (in order, and out of order), zero seq, NULL
    //  entries.
    ms_gossip_entry_t e[3];
    memset(e, 0, sizeof e);
    memset(e[0].origin, 9, ID);
    memset(e[1].origin, 3, ID);
    memset(e[2].origin, 9, ID);
    e[0].seq = e[1].seq = e[2].seq = 5;
    msg.kind = MS_GOSSIP_MSG_VECTOR;
    msg.u.vector.entries = e;
    msg.u.vector.n_entries = 3;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    memcpy(e[1].origin, e[0].origin, ID);
    msg.u.vector.n_entries = 2;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    msg.u.vector.n_entries = 1;
    e[0].seq = 0;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    msg.u.vector.entries = NULL;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    expected += 4;

    //  Range with from > to, from 0, max 0.
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_RANGE_REQUEST;
    memcpy(msg.u.range.origin, a->id, ID);
    msg.u.range.incarnation = a->incarnation;
    msg.u.range.from_seq = 3;
    msg.u.range.to_seq = 2;
    msg.u.range.max_records = 10;
    assert_int_equal(ms_gossip_on_message(a->g, b->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    msg.u.range.from_seq = 0;
    assert_int_equal(ms_gossip_on_message(a->g, b->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    msg.u.range.from_seq = 1;
    msg.u.range.max_records = 0;
    assert_int_equal(ms_gossip_on_message(a->g, b->id, &msg, 0),
                     MS_ERR_PROTOCOL);

    //  Blocks: no records, 65 records, seqs with a hole, seq 0, NULL
    //  payload with a length.
    const ms_gossip_record_t *held =
        ms_recset_record(a->rs, a->id, a->incarnation, 1);
    ms_gossip_record_t recs[65];
    for (int i = 0; i < 65; i++) {
        recs[i] = *held;
        recs[i].seq = (uint64_t) i + 1;
    }
    memset(&msg, 0, sizeof msg);
    msg.kind = MS_GOSSIP_MSG_BLOCK;
    memcpy(msg.u.block.origin, a->id, ID);
    msg.u.block.incarnation = a->incarnation;
    msg.u.block.first_seq = 1;
    msg.u.block.records = recs;
    msg.u.block.n_records = 0;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    msg.u.block.n_records = 65;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    msg.u.block.n_records = 3;
    recs[1].seq = 7;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    recs[1].seq = 2;
    msg.u.block.first_seq = 0;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    msg.u.block.first_seq = 1;
    recs[2].payload = NULL;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, 0),
                     MS_ERR_PROTOCOL);
    expected += 3 + 5;

    ms_gossip_stats_t sa, sb;
    ms_gossip_stats(a->g, &sa);
    ms_gossip_stats(b->g, &sb);
    assert_int_equal(sa.rejected + sb.rejected, (uint64_t) expected);
    assert_int_equal(net->n_q, 0); // nothing was answered
    uint8_t d_after[32];
    ms_recset_digest(b->rs, d_after);
    assert_memory_equal(d_before, d_after, 32);
    assert_int_equal(ms_recset_size(b->rs), 0);
    assert_int_equal(ms_gossip_pull_count(b->g), 0);

    //  Still works afterwards.
    assert_int_equal(ms_gossip_push(a->g, &(ms_gossip_block_t){0}),
                     MS_ERR_INVALID);
    assert_true(t_run_until_converged(net, 20) >= 0);
    assert_int_equal(ms_recset_size(b->rs), 4);
    t_net_destroy(net);
}

static void
test_unsolicited_vector_in_any_order_only_pulls(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, false);
    t_net_t *net = t_net_new(3, &c, 14, 0.0);
    t_write(net, 0, 2, 3, false);
    t_write(net, 2, 1, 4, false);
    t_write(net, 1, 1, 2, false); // node 0 lacks these
    //  Node 0 also holds node 2's stream.
    t_node_t *n2 = &net->nodes[2];
    ms_gossip_block_t blk = {
        .incarnation = n2->incarnation, .first_seq = 1, .n_records = 4};
    memcpy(blk.origin, n2->id, ID);
    blk.records = ms_recset_record(n2->rs, n2->id, n2->incarnation, 1);
    assert_int_equal(ms_recset_merge_block(net->nodes[0].rs, &blk, NULL),
                     MS_OK);
    //  Node 0's vector, reversed, handed to node 1 as from node 0.
    ms_gossip_source_t src;
    ms_recset_source(net->nodes[0].rs, &src);
    ms_gossip_entry_t *e = NULL;
    size_t n = 0;
    assert_int_equal(src.vector(src.arg, &e, &n), MS_OK);
    assert_int_equal(n, 2);
    ms_gossip_entry_t tmp = e[0];
    e[0] = e[1];
    e[1] = tmp;
    ms_gossip_msg_t msg = {.kind = MS_GOSSIP_MSG_VECTOR};
    msg.u.vector.entries = e;
    msg.u.vector.n_entries = n;
    assert_int_equal(
        ms_gossip_on_message(net->nodes[1].g, net->nodes[0].id, &msg, 0),
        MS_OK);
    free(e);
    assert_int_equal(ms_gossip_pull_count(net->nodes[1].g), 2);
    assert_int_equal(net->sent[MS_GOSSIP_MSG_RANGE_REQUEST], 2);
    //  Node 1 opened no round with node 0: it sends neither its vector
    //  nor the records node 0 lacks (node 0 pulls those in its rounds).
    assert_int_equal(net->sent[MS_GOSSIP_MSG_VECTOR], 0);
    assert_int_equal(net->sent[MS_GOSSIP_MSG_BLOCK], 0);
    t_deliver(net);
    assert_int_equal(ms_recset_size(net->nodes[1].rs), 12);
    assert_int_equal(ms_gossip_pull_count(net->nodes[1].g), 0);
    assert_int_equal(net->sent[MS_GOSSIP_MSG_VECTOR], 0);
    t_net_destroy(net);
}

//  The last RANGE_REQUEST queued (fails when none), then empty the queue.
static void
t_last_range(t_net_t *net, uint64_t *from, uint64_t *to)
{
    bool seen = false;
    for (size_t k = 0; k < net->n_q; k++) {
        if (net->q[k].msg.kind == MS_GOSSIP_MSG_RANGE_REQUEST) {
            *from = net->q[k].msg.u.range.from_seq;
            *to = net->q[k].msg.u.range.to_seq;
            seen = true;
        }
        free(net->q[k].mem);
    }
    net->n_q = 0;
    assert_true(seen);
}

static void
test_pull_windows_pipelined_and_retried(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, false);
    c.range_records = 8;
    c.range_retries = 2;
    t_net_t *net = t_net_new(2, &c, 15, 0.0);
    t_write(net, 0, 10, 4, false); // 40 records, blocks of 4
    t_node_t *a = &net->nodes[0], *b = &net->nodes[1];
    ms_gossip_entry_t e = {.incarnation = a->incarnation, .seq = 40};
    memcpy(e.origin, a->id, ID);
    ms_gossip_msg_t msg = {.kind = MS_GOSSIP_MSG_VECTOR};
    msg.u.vector.entries = &e;
    msg.u.vector.n_entries = 1;
    assert_int_equal(ms_gossip_on_message(b->g, a->id, &msg, net->now_ms),
                     MS_OK);
    uint64_t from = 0, to = 0;
    t_last_range(net, &from, &to);
    assert_int_equal(from, 1);
    assert_int_equal(to, 8);
    //  Half of the window landed: the next window is asked already.
    t_hand_block(net, 0, 1, 1, 4);
    t_last_range(net, &from, &to);
    assert_int_equal(from, 9);
    assert_int_equal(to, 16);
    t_hand_block(net, 0, 1, 5, 4); // 8 held, 16 asked: nothing new
    assert_int_equal(net->n_q, 0);
    t_hand_block(net, 0, 1, 9, 4);
    t_last_range(net, &from, &to);
    assert_int_equal(from, 17);
    assert_int_equal(to, 24);
    //  Nothing more arrives: re-asked from held + 1 after the timeout,
    //  range_retries times, then dropped.
    net->now_ms += c.range_timeout_ms;
    assert_int_equal(ms_gossip_next_deadline(b->g), net->now_ms);
    ms_gossip_tick(b->g, net->now_ms);
    t_last_range(net, &from, &to);
    assert_int_equal(from, 13);
    assert_int_equal(to, 20);
    net->now_ms += c.range_timeout_ms;
    ms_gossip_tick(b->g, net->now_ms);
    t_last_range(net, &from, &to);
    net->now_ms += c.range_timeout_ms;
    ms_gossip_tick(b->g, net->now_ms);
    assert_int_equal(net->n_q, 0);
    assert_int_equal(ms_gossip_pull_count(b->g), 0);
    ms_gossip_stats_t st;
    ms_gossip_stats(b->g, &st);
    assert_int_equal(st.pulls_timed_out, 2);
    assert_int_equal(st.pulls_dropped, 1);
    assert_int_equal(st.range_requests, 5);
    assert_int_equal(ms_recset_held(b->rs, a->id, a->incarnation), 12);
    t_net_destroy(net);
}

static void
test_equivocation_by_push_is_flagged(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(true, false);
    t_net_t *net = t_net_new(2, &c, 13, 0.0);
    t_write(net, 0, 1, 1, true);
    t_deliver(net);
    //  A clone of node 0's disk writes a different seq 1.
    t_node_t *a = &net->nodes[0];
    ms_gossip_record_t r = {1, 7, (const uint8_t *) "clone", 5};
    ms_gossip_msg_t msg = {.kind = MS_GOSSIP_MSG_BLOCK};
    memcpy(msg.u.block.origin, a->id, ID);
    msg.u.block.incarnation = a->incarnation;
    msg.u.block.first_seq = 1;
    msg.u.block.n_records = 1;
    msg.u.block.records = &r;
    assert_int_equal(ms_gossip_on_message(net->nodes[1].g, a->id, &msg, 0),
                     MS_OK);
    assert_true(ms_recset_flagged(net->nodes[1].rs, a->id, a->incarnation));
    assert_int_equal(ms_recset_equivocations(net->nodes[1].rs), 1);
    t_net_destroy(net);
}

//  --------------------------------------------------------------------------
//  Deliver in FIFO order (per link, as one TCP connection does), each
//  node's messages of one pass inside one batch (as the daemon does per
//  socket drain), until nothing is left and no batch is held.

static void
t_deliver_batched(t_net_t *net)
{
    for (int pass = 0;; pass++) {
        assert_true(pass < 100000);
        size_t n = net->n_q;
        t_packet_t *q = net->q;
        net->q = NULL;
        net->n_q = net->cap_q = 0;
        for (int d = 0; d < net->n; d++) {
            t_node_t *to = &net->nodes[d];
            if (!to->up)
                continue;
            ms_gossip_batch_begin(to->g);
            for (size_t k = 0; k < n; k++)
                if (q[k].to == d)
                    assert_int_equal(
                        ms_gossip_on_message(to->g, net->nodes[q[k].from].id,
                                             &q[k].msg, net->now_ms),
                        MS_OK);
            assert_int_equal(ms_gossip_batch_end(to->g, net->now_ms), MS_OK);
        }
        for (size_t k = 0; k < n; k++)
            free(q[k].mem);
        free(q);
        if (n == 0 && net->n_q == 0)
            return; // an empty pass merged what was held: done
    }
}

//  A catch-up through batches: 10,000 records pulled in windows, merged
//  a drain at a time (many blocks per merge_blocks call), no window lost
//  or asked twice.

static void
test_batched_catch_up(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, true);
    c.range_records = 500;
    t_net_t *net = t_net_new(2, &c, 7, 0.0);
    t_write(net, 0, 200, 50, false); // 10,000 records in 200 blocks
    int r = 0;
    for (; r < 20 && !(t_converged(net) && net->n_q == 0); r++) {
        net->now_ms += T_ROUND_MS;
        for (int i = 0; i < net->n; i++)
            assert_int_equal(ms_gossip_tick(net->nodes[i].g, net->now_ms),
                             MS_OK);
        t_deliver_batched(net);
    }
    assert_true(t_converged(net));
    assert_int_equal(ms_recset_size(net->nodes[1].rs), 10000);
    ms_gossip_stats_t st;
    ms_gossip_stats(net->nodes[1].g, &st);
    assert_int_equal(st.records_new, 10000);
    assert_int_equal(st.blocks_merged, 200);
    assert_true(st.batches >= 1 && st.batches < 200); // merged in batches
    assert_true(st.max_batch_blocks > 1);
    assert_int_equal(st.pulls_timed_out, 0);
    assert_int_equal(st.rejected, 0);
    assert_int_equal(st.gaps_dropped, 0);
    assert_int_equal(st.range_requests, 20); // each window asked once
    assert_int_equal(ms_gossip_pull_count(net->nodes[1].g), 0);
    t_net_destroy(net);
}

//  In one batch: a block above a gap is held back (gap buffer), a
//  malformed block is rejected at once, the good block merges; the next
//  batch fills the gap and the held block merges after it.

static void
test_batched_gap_and_malformed(void **state)
{
    (void) state;
    ms_gossip_config_t c = t_cfg(false, false);
    t_net_t *net = t_net_new(2, &c, 8, 0.0);
    t_write(net, 0, 3, 2, false); // seqs 1-2, 3-4, 5-6
    t_node_t *n0 = &net->nodes[0], *n1 = &net->nodes[1];
    ms_gossip_batch_begin(n1->g);
    t_hand_block(net, 0, 1, 5, 2); // above the gap
    ms_gossip_msg_t bad;
    memset(&bad, 0, sizeof bad);
    bad.kind = MS_GOSSIP_MSG_BLOCK;
    memcpy(bad.u.block.origin, n0->id, ID);
    bad.u.block.incarnation = n0->incarnation;
    bad.u.block.first_seq = 3;
    ms_gossip_record_t recs[2];
    recs[0] = *ms_recset_record(n0->rs, n0->id, n0->incarnation, 3);
    recs[1] = *ms_recset_record(n0->rs, n0->id, n0->incarnation, 4);
    recs[1].seq = 9; // not contiguous: malformed
    bad.u.block.records = recs;
    bad.u.block.n_records = 2;
    assert_int_equal(ms_gossip_on_message(n1->g, n0->id, &bad, net->now_ms),
                     MS_ERR_PROTOCOL);
    t_hand_block(net, 0, 1, 1, 2);               // fits
    assert_int_equal(ms_recset_size(n1->rs), 0); // held in the batch
    assert_int_equal(ms_gossip_batch_end(n1->g, net->now_ms), MS_OK);
    assert_int_equal(ms_recset_held(n1->rs, n0->id, n0->incarnation), 2);
    ms_gossip_stats_t st;
    ms_gossip_stats(n1->g, &st);
    assert_int_equal(st.rejected, 1);
    assert_int_equal(st.gaps_buffered, 1);
    assert_int_equal(st.batches, 1);
    assert_int_equal(st.max_batch_blocks, 2);
    assert_true(st.gap_buffer_bytes > 0);
    ms_gossip_batch_begin(n1->g);
    t_hand_block(net, 0, 1, 3, 2); // the gap: it answers the pull of it
    assert_int_equal(ms_gossip_batch_end(n1->g, net->now_ms), MS_OK);
    //  A batch of pull answers stays open while drains bring blocks...
    assert_int_equal(ms_recset_held(n1->rs, n0->id, n0->incarnation), 2);
    assert_true(ms_gossip_next_deadline(n1->g) <=
                net->now_ms + c.batch_hold_ms);
    //  ... and merges at the first drain that brings none.
    ms_gossip_batch_begin(n1->g);
    assert_int_equal(ms_gossip_batch_end(n1->g, net->now_ms), MS_OK);
    assert_int_equal(ms_recset_held(n1->rs, n0->id, n0->incarnation), 6);
    ms_gossip_stats(n1->g, &st);
    assert_int_equal(st.records_new, 6);
    assert_int_equal(st.gap_buffer_bytes, 0);
    t_net_destroy(net);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recset_append_merge_read),
        cmocka_unit_test(test_config_and_deadline),
        cmocka_unit_test(test_two_nodes_push_reaches_peer),
        cmocka_unit_test(test_five_push_only_converges),
        cmocka_unit_test(test_five_antientropy_only_converges),
        cmocka_unit_test(test_one_record_reaches_all_with_drops),
        cmocka_unit_test(test_catch_up_10000_records),
        cmocka_unit_test(test_catch_up_in_flow_without_drops),
        cmocka_unit_test(test_push_forwarded_once_along_a_line),
        cmocka_unit_test(test_gap_filled_by_range_request),
        cmocka_unit_test(test_duplicate_and_reordered_blocks),
        cmocka_unit_test(test_gap_buffer_is_bounded),
        cmocka_unit_test(test_wiped_node_new_incarnation),
        cmocka_unit_test(test_equal_digests_send_no_vector),
        cmocka_unit_test(test_bad_messages_counted_and_ignored),
        cmocka_unit_test(test_unsolicited_vector_in_any_order_only_pulls),
        cmocka_unit_test(test_pull_windows_pipelined_and_retried),
        cmocka_unit_test(test_equivocation_by_push_is_flagged),
        cmocka_unit_test(test_batched_catch_up),
        cmocka_unit_test(test_batched_gap_and_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
