/*  =========================================================================
    sim_gossip - dissemination of one new record over N simulated nodes

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    N nodes in one process, each with the daemon's own pure-logic classes:
    ms_view (HyParView membership: JOIN, FORWARD_JOIN, NEIGHBOR, SHUFFLE),
    ms_gossip (eager push + anti-entropy) and an ms_recset as its record
    store. The network is simulated in synchronous rounds: every message
    sent during round r (view or gossip) is delivered during round r + 1,
    in order of sending; nothing is lost unless --loss is given.

    1. Overlay. Node 0 starts alone; nodes join in batches through a
       random node that joined before (ms_view_on_discovered), then the
       views run --settle more rounds (shuffles, refills). The overlay
       reported is the union of the active views (its degree, whether it
       is connected, and the eccentricity of a few nodes, which bounds
       the rounds of a flood). With --overlay random, the views are
       replaced by a random near-regular graph of degree 8 + ceil(log2 N)
       (configuration model, loops and double edges dropped).
    2. Dissemination, per mode. Fresh record sets and gossip instances on
       every node, then --trials times: a random node appends one record
       (one block) and pushes it; rounds run until every node holds it.
       - push: eager push only (antientropy off);
       - ae: anti-entropy only (push off), one digest per node every
         --ae-period rounds (phases staggered at random);
       - both: the daemon's configuration.
       Measured: rounds until the last node has the record, and gossip
       messages sent meanwhile (by kind); in push mode also the flood's
       total (messages until the network is quiet).

    Usage: sim_gossip [--nodes 100,1000,3000,10000] [--trials 5]
                      [--seed 1] [--overlay hyparview|random]
                      [--ae-period 3] [--settle 200] [--loss 0]
    Prints a markdown table (docs/BENCHMARKS.md "Gossip dissemination").
*/
#include "ms_gossip.h"
#include "ms_recset.h"
#include "ms_rng.h"
#include "ms_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define ID MS_GOSSIP_ID_BYTES
#define S_ROUND_MS 100 // simulated time per round

typedef struct s_sim s_sim_t;

typedef struct {
    s_sim_t *sim;         // back pointer for the transport
    int index;            // position in sim->nodes
    uint8_t id[ID];       // node id (index in the first 4 bytes)
    ms_view_t *view;      // membership (hyparview overlay)
    int *nbrs;            // neighbours (random overlay)
    int n_nbrs;           //
    ms_recset_t *rs;      // records
    ms_gossip_t *g;       // gossip
    uint64_t incarnation; // of its own records
} s_node_t;

typedef struct {
    int from, to;      // node indexes
    ms_view_msg_t msg; // copy
} s_vpkt_t;

typedef struct {
    int from, to;        // node indexes
    ms_gossip_msg_t msg; // deep copy; pointers into mem
    void *mem;           // owned copy of entries / records / payloads
} s_gpkt_t;

typedef struct {
    void *items;   // packets
    size_t n, cap; // used, allocated
    size_t size;   // bytes per packet
} s_queue_t;

struct s_sim {
    int n;                  // nodes
    s_node_t *nodes;        // the nodes
    bool random_overlay;    // neighbours from nbrs, not the views
    ms_rng_t rng;           // every random choice of the simulation
    uint64_t seed;          // --seed
    double loss;            // chance of losing a gossip message
    int64_t now_ms;         // simulated clock
    s_queue_t vq[2], gq[2]; // view / gossip packets: [cur] delivered
    int cur;                //   this round, [1 - cur] sent for the next
    uint64_t sent[MS_GOSSIP_MSG_KINDS]; // gossip messages sent, by kind
    uint64_t view_msgs;                 // view messages sent
};

//  --------------------------------------------------------------------------
//  Abort with a message (the simulation has no recovery).

static void
s_die(const char *what)
{
    fprintf(stderr, "sim_gossip: %s\n", what);
    exit(1);
}

//  --------------------------------------------------------------------------
//  Append one packet to a queue, return it.

static void *
s_queue_push(s_queue_t *q)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 1024;
        q->items = realloc(q->items, q->cap * q->size);
        if (!q->items)
            s_die("out of memory");
    }
    return (char *) q->items + q->size * q->n++;
}

//  --------------------------------------------------------------------------
//  Node index from a node id.

static int
s_index(const uint8_t *id)
{
    return (int) (((uint32_t) id[0] << 24) | ((uint32_t) id[1] << 16) |
                  ((uint32_t) id[2] << 8) | id[3]);
}

//  --------------------------------------------------------------------------
//  Deep copy of a gossip message into a packet.

static void
s_copy(const ms_gossip_msg_t *msg, s_gpkt_t *p)
{
    p->msg = *msg;
    p->mem = NULL;
    if (msg->kind == MS_GOSSIP_MSG_VECTOR && msg->u.vector.n_entries) {
        size_t n = msg->u.vector.n_entries;
        ms_gossip_entry_t *e = malloc(n * sizeof *e);
        if (!e)
            s_die("out of memory");
        memcpy(e, msg->u.vector.entries, n * sizeof *e);
        p->msg.u.vector.entries = e;
        p->mem = e;
    } else if (msg->kind == MS_GOSSIP_MSG_BLOCK) {
        const ms_gossip_block_t *b = &msg->u.block;
        size_t bytes = b->n_records * sizeof(ms_gossip_record_t);
        for (size_t i = 0; i < b->n_records; i++)
            bytes += b->records[i].payload_bytes;
        uint8_t *mem = malloc(bytes ? bytes : 1);
        if (!mem)
            s_die("out of memory");
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
        p->msg.u.block.signature = NULL;
        p->msg.u.block.signature_bytes = 0;
        p->mem = mem;
    }
}

//  --------------------------------------------------------------------------
//  Gossip transport: queue a copy for the next round.

static int
s_send(void *arg, const uint8_t to[ID], const ms_gossip_msg_t *msg)
{
    s_node_t *node = arg;
    s_sim_t *sim = node->sim;
    int dest = s_index(to);
    if (dest < 0 || dest >= sim->n || dest == node->index)
        s_die("gossip sent to a bad peer");
    sim->sent[msg->kind]++;
    if (sim->loss > 0 && ms_rng_uniform(&sim->rng) < sim->loss)
        return MS_OK;
    s_gpkt_t *p = s_queue_push(&sim->gq[1 - sim->cur]);
    p->from = node->index;
    p->to = dest;
    s_copy(msg, p);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Gossip transport: the active view.

static int
s_active_peers(void *arg, uint8_t (*out)[ID], int max)
{
    s_node_t *node = arg;
    s_sim_t *sim = node->sim;
    int n = 0;
    if (sim->random_overlay) {
        for (int i = 0; i < node->n_nbrs && n < max; i++)
            memcpy(out[n++], sim->nodes[node->nbrs[i]].id, ID);
    } else {
        int k = ms_view_n_active(node->view);
        for (int i = 0; i < k && n < max; i++)
            memcpy(out[n++], ms_view_active(node->view, i), ID);
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Gossip transport: one random member of the active view.

static int
s_random_peer(void *arg, uint8_t out[ID])
{
    s_node_t *node = arg;
    s_sim_t *sim = node->sim;
    if (sim->random_overlay) {
        if (node->n_nbrs == 0)
            return MS_ERR_NOTFOUND;
        int k = (int) ms_rng_below(&sim->rng, (uint64_t) node->n_nbrs);
        memcpy(out, sim->nodes[node->nbrs[k]].id, ID);
        return MS_OK;
    }
    int n = ms_view_n_active(node->view);
    if (n == 0)
        return MS_ERR_NOTFOUND;
    int k = (int) ms_rng_below(&sim->rng, (uint64_t) n);
    memcpy(out, ms_view_active(node->view, k), ID);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Move node i's pending view actions onto the network.

static void
s_view_drain(s_sim_t *sim, int i)
{
    ms_view_action_t act;
    while (ms_view_next_action(sim->nodes[i].view, &act)) {
        if (act.kind != MS_VIEW_ACTION_SEND)
            continue; // links are implicit in the simulation
        int dest = s_index(act.peer);
        if (dest < 0 || dest >= sim->n || dest == i)
            s_die("view message to a bad peer");
        s_vpkt_t *p = s_queue_push(&sim->vq[1 - sim->cur]);
        p->from = i;
        p->to = dest;
        p->msg = act.msg;
        sim->view_msgs++;
    }
}

//  --------------------------------------------------------------------------
//  One round: deliver what was sent last round, then tick everyone.

static void
s_round(s_sim_t *sim, bool gossip)
{
    sim->now_ms += S_ROUND_MS;
    //  Everything sent so far (last round, or between rounds) is
    //  delivered now; what is sent from here on waits for the next round.
    sim->cur = 1 - sim->cur;
    s_queue_t *vq = &sim->vq[sim->cur], *gq = &sim->gq[sim->cur];
    for (size_t k = 0; k < vq->n; k++) {
        s_vpkt_t *p = (s_vpkt_t *) vq->items + k;
        ms_view_on_message(sim->nodes[p->to].view, sim->nodes[p->from].id,
                           &p->msg, sim->now_ms);
        s_view_drain(sim, p->to);
    }
    vq->n = 0;
    for (size_t k = 0; k < gq->n; k++) {
        s_gpkt_t *p = (s_gpkt_t *) gq->items + k;
        s_node_t *to = &sim->nodes[p->to];
        if (to->g)
            ms_gossip_on_message(to->g, sim->nodes[p->from].id, &p->msg,
                                 sim->now_ms);
        free(p->mem);
    }
    gq->n = 0;
    for (int i = 0; i < sim->n; i++) {
        if (!sim->random_overlay) {
            ms_view_tick(sim->nodes[i].view, sim->now_ms);
            s_view_drain(sim, i);
        }
        if (gossip && sim->nodes[i].g)
            ms_gossip_tick(sim->nodes[i].g, sim->now_ms);
    }
}

//  --------------------------------------------------------------------------
//  Build the HyParView overlay: batched joins, then settle rounds.

static void
s_overlay_hyparview(s_sim_t *sim, uint64_t seed, int settle)
{
    ms_view_options_t opts;
    ms_view_options_defaults(&opts);
    opts.shuffle_ms = 10 * S_ROUND_MS;
    opts.neighbor_timeout_ms = 10 * S_ROUND_MS;
    for (int i = 0; i < sim->n; i++) {
        opts.seed = seed * 1000003u + (uint64_t) i;
        sim->nodes[i].view = ms_view_new(sim->nodes[i].id, &opts);
        if (!sim->nodes[i].view)
            s_die("out of memory");
        ms_view_set_pool_size(sim->nodes[i].view, sim->n);
    }
    int batch = sim->n / 100 > 0 ? sim->n / 100 : 1;
    int joined = 1;
    while (joined < sim->n) {
        int stop = joined + batch < sim->n ? joined + batch : sim->n;
        int before = joined;
        for (; joined < stop; joined++) {
            int contact = (int) ms_rng_below(&sim->rng, (uint64_t) before);
            ms_view_on_discovered(sim->nodes[joined].view,
                                  sim->nodes[contact].id, sim->now_ms);
            s_view_drain(sim, joined);
        }
        s_round(sim, false);
    }
    for (int r = 0; r < settle; r++)
        s_round(sim, false);
}

//  --------------------------------------------------------------------------
//  True when a and b are linked in the random overlay.

static bool
s_linked(const s_node_t *a, int b)
{
    for (int i = 0; i < a->n_nbrs; i++)
        if (a->nbrs[i] == b)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Random near-regular overlay of degree d (configuration model).

static void
s_overlay_random(s_sim_t *sim, int d)
{
    size_t n_stubs = (size_t) sim->n * (size_t) d;
    int *stubs = malloc(n_stubs * sizeof *stubs);
    if (!stubs)
        s_die("out of memory");
    for (size_t k = 0; k < n_stubs; k++)
        stubs[k] = (int) (k / (size_t) d);
    for (size_t k = n_stubs - 1; k > 0; k--) {
        size_t j = ms_rng_below(&sim->rng, k + 1);
        int t = stubs[k];
        stubs[k] = stubs[j];
        stubs[j] = t;
    }
    for (int i = 0; i < sim->n; i++) {
        sim->nodes[i].nbrs = malloc((size_t) d * sizeof(int));
        if (!sim->nodes[i].nbrs)
            s_die("out of memory");
    }
    for (size_t k = 0; k + 1 < n_stubs; k += 2) {
        int a = stubs[k], b = stubs[k + 1];
        if (a == b || s_linked(&sim->nodes[a], b))
            continue;
        sim->nodes[a].nbrs[sim->nodes[a].n_nbrs++] = b;
        sim->nodes[b].nbrs[sim->nodes[b].n_nbrs++] = a;
    }
    free(stubs);
}

//  --------------------------------------------------------------------------
//  Neighbour j of node i in the overlay in force.

static int
s_nbr(s_sim_t *sim, int i, int j)
{
    if (sim->random_overlay)
        return sim->nodes[i].nbrs[j];
    return s_index(ms_view_active(sim->nodes[i].view, j));
}

//  --------------------------------------------------------------------------
//  Degree of node i in the overlay in force.

static int
s_degree(s_sim_t *sim, int i)
{
    return sim->random_overlay ? sim->nodes[i].n_nbrs
                               : ms_view_n_active(sim->nodes[i].view);
}

//  --------------------------------------------------------------------------
//  BFS from src over the overlay: nodes reached, eccentricity.

static void
s_bfs(s_sim_t *sim, int src, int *dist, int *queue, int *reached, int *ecc)
{
    for (int i = 0; i < sim->n; i++)
        dist[i] = -1;
    int head = 0, tail = 0;
    dist[src] = 0;
    queue[tail++] = src;
    *ecc = 0;
    while (head < tail) {
        int u = queue[head++];
        for (int j = 0; j < s_degree(sim, u); j++) {
            int v = s_nbr(sim, u, j);
            if (dist[v] < 0) {
                dist[v] = dist[u] + 1;
                if (dist[v] > *ecc)
                    *ecc = dist[v];
                queue[tail++] = v;
            }
        }
    }
    *reached = tail;
}

//  --------------------------------------------------------------------------
//  Overlay figures for the table.

typedef struct {
    int deg_min, deg_max; // active view sizes
    double deg_mean;      //
    int asymmetric;       // directed links without the reverse
    int reached;          // nodes reached from node 0
    int ecc_max;          // largest eccentricity seen over a few sources
} s_overlay_t;

static void
s_overlay_stats(s_sim_t *sim, s_overlay_t *out)
{
    memset(out, 0, sizeof *out);
    out->deg_min = 1 << 30;
    long total = 0;
    for (int i = 0; i < sim->n; i++) {
        int d = s_degree(sim, i);
        total += d;
        if (d < out->deg_min)
            out->deg_min = d;
        if (d > out->deg_max)
            out->deg_max = d;
        for (int j = 0; j < d; j++) {
            int v = s_nbr(sim, i, j);
            bool back = false;
            for (int k = 0; k < s_degree(sim, v) && !back; k++)
                back = s_nbr(sim, v, k) == i;
            if (!back)
                out->asymmetric++;
        }
    }
    out->deg_mean = (double) total / sim->n;
    int *dist = malloc((size_t) sim->n * sizeof *dist);
    int *queue = malloc((size_t) sim->n * sizeof *queue);
    if (!dist || !queue)
        s_die("out of memory");
    for (int s = 0; s < 5; s++) {
        int src = s == 0 ? 0 : (int) ms_rng_below(&sim->rng, (uint64_t) sim->n);
        int reached, ecc;
        s_bfs(sim, src, dist, queue, &reached, &ecc);
        if (s == 0)
            out->reached = reached;
        if (ecc > out->ecc_max)
            out->ecc_max = ecc;
    }
    free(dist);
    free(queue);
}

//  --------------------------------------------------------------------------
//  Fresh record sets and gossip instances on every node for one mode.

static void
s_gossip_setup(s_sim_t *sim, bool push, bool antientropy, int ae_period)
{
    ms_gossip_config_t cfg;
    ms_gossip_config_default(&cfg);
    cfg.push = push;
    cfg.antientropy = antientropy;
    cfg.antientropy_ms = (int64_t) ae_period * S_ROUND_MS;
    cfg.range_timeout_ms = 4 * cfg.antientropy_ms;
    cfg.max_pulls = 8;
    cfg.max_push_peers = MS_VIEW_ACTIVE_CAP + 32;
    cfg.gap_buffer_bytes = 64u << 10;
    cfg.gap_stream_bytes = 64u << 10;
    for (int i = 0; i < sim->n; i++) {
        s_node_t *node = &sim->nodes[i];
        ms_gossip_destroy(&node->g);
        ms_recset_destroy(&node->rs);
        node->rs = ms_recset_new();
        if (!node->rs)
            s_die("out of memory");
        node->incarnation = ms_rng_next(&sim->rng);
        ms_gossip_source_t src;
        ms_recset_source(node->rs, &src);
        ms_gossip_transport_t tr = {node, s_send, s_active_peers,
                                    s_random_peer};
        //  Stagger the rounds: the first is due within one period.
        int64_t phase =
            (int64_t) ms_rng_below(&sim->rng, (uint64_t) ae_period) *
            S_ROUND_MS;
        node->g = ms_gossip_new(node->id, &cfg, &src, &tr, sim->now_ms - phase);
        if (!node->g)
            s_die("out of memory");
    }
}

//  --------------------------------------------------------------------------
//  Results of one mode over the trials.

typedef struct {
    double rounds_mean; // rounds until every node held the record
    int rounds_max;     //
    double msgs_mean;   // gossip messages sent meanwhile
    double data_mean;   // of which vector, range and block messages
    double flood_mean;  // messages until quiet (push mode)
    double ecc_mean;    // eccentricity of the origins in the overlay
    int failed;         // trials that did not reach everyone
} s_result_t;

//  --------------------------------------------------------------------------
//  Gossip messages sent so far (all kinds; data kinds into *data).

static uint64_t
s_sent_total(s_sim_t *sim, uint64_t *data)
{
    uint64_t all = 0;
    for (int k = 1; k < MS_GOSSIP_MSG_KINDS; k++)
        all += sim->sent[k];
    *data = all - sim->sent[MS_GOSSIP_MSG_DIGEST];
    return all;
}

//  --------------------------------------------------------------------------
//  Run the trials of one mode.

static void
s_mode(s_sim_t *sim, bool push, bool antientropy, int ae_period, int trials,
       int max_rounds, s_result_t *out)
{
    memset(out, 0, sizeof *out);
    s_gossip_setup(sim, push, antientropy, ae_period);
    //  Warm up: let the stagger settle (digests of empty stores).
    for (int r = 0; r < 2 * ae_period; r++)
        s_round(sim, true);
    int ok = 0;
    //  The same origins in every mode, so that the modes compare.
    ms_rng_t origins;
    ms_rng_seed(&origins, sim->seed, 99);
    int *dist = malloc((size_t) sim->n * sizeof *dist);
    int *queue = malloc((size_t) sim->n * sizeof *queue);
    if (!dist || !queue)
        s_die("out of memory");
    for (int t = 0; t < trials; t++) {
        int origin = (int) ms_rng_below(&origins, (uint64_t) sim->n);
        s_node_t *o = &sim->nodes[origin];
        int reach_bfs, ecc;
        s_bfs(sim, origin, dist, queue, &reach_bfs, &ecc);
        out->ecc_mean += ecc;
        uint8_t payload[32];
        for (int k = 0; k < 32; k++)
            payload[k] = (uint8_t) ms_rng_next(&sim->rng);
        ms_gossip_record_t rec = {0, 7, payload, sizeof payload};
        ms_gossip_block_t block;
        if (ms_recset_append(o->rs, o->id, o->incarnation, &rec, 1, &block) !=
            MS_OK)
            s_die("append failed");
        uint64_t seq = block.first_seq;
        uint64_t data0, all0 = s_sent_total(sim, &data0);
        ms_gossip_push(o->g, &block);
        int rounds = 0, reached = 0;
        while (rounds < max_rounds) {
            s_round(sim, true);
            rounds++;
            reached = 0;
            for (int i = 0; i < sim->n; i++)
                if (ms_recset_held(sim->nodes[i].rs, o->id, o->incarnation) >=
                    seq)
                    reached++;
            if (reached == sim->n)
                break;
        }
        uint64_t data1, all1 = s_sent_total(sim, &data1);
        if (reached < sim->n) {
            out->failed++;
        } else {
            ok++;
            out->rounds_mean += rounds;
            if (rounds > out->rounds_max)
                out->rounds_max = rounds;
            out->msgs_mean += (double) (all1 - all0);
            out->data_mean += (double) (data1 - data0);
        }
        //  Let the trial's traffic end before the next one.
        int quiet = 0;
        for (int r = 0; r < 4 * ae_period + 10 && quiet < 2; r++) {
            s_round(sim, true);
            quiet = sim->gq[1 - sim->cur].n == 0 ? quiet + 1 : 0;
        }
        uint64_t data2, all2 = s_sent_total(sim, &data2);
        if (reached == sim->n)
            out->flood_mean +=
                (double) (push && !antientropy ? all2 - all0 : data2 - data0);
    }
    free(dist);
    free(queue);
    out->ecc_mean /= trials;
    if (ok > 0) {
        out->rounds_mean /= ok;
        out->msgs_mean /= ok;
        out->data_mean /= ok;
        out->flood_mean /= ok;
    }
}

//  --------------------------------------------------------------------------
//  Seconds of monotonic time.

static double
s_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

//  --------------------------------------------------------------------------
//  Free the simulation.

static void
s_sim_free(s_sim_t *sim)
{
    for (int i = 0; i < sim->n; i++) {
        ms_gossip_destroy(&sim->nodes[i].g);
        ms_recset_destroy(&sim->nodes[i].rs);
        ms_view_destroy(&sim->nodes[i].view);
        free(sim->nodes[i].nbrs);
    }
    for (int q = 0; q < 2; q++) {
        for (size_t k = 0; k < sim->gq[q].n; k++)
            free(((s_gpkt_t *) sim->gq[q].items + k)->mem);
        free(sim->gq[q].items);
        free(sim->vq[q].items);
    }
    free(sim->nodes);
}

//  --------------------------------------------------------------------------
//  Simulate one pool size and print its table rows.

static void
s_run_size(int n, uint64_t seed, bool random_overlay, int ae_period, int settle,
           int trials, double loss)
{
    double t0 = s_seconds();
    s_sim_t sim;
    memset(&sim, 0, sizeof sim);
    sim.n = n;
    sim.random_overlay = random_overlay;
    ms_rng_seed(&sim.rng, seed, (uint64_t) n);
    sim.seed = seed;
    for (int q = 0; q < 2; q++) {
        sim.vq[q].size = sizeof(s_vpkt_t);
        sim.gq[q].size = sizeof(s_gpkt_t);
    }
    sim.nodes = calloc((size_t) n, sizeof *sim.nodes);
    if (!sim.nodes)
        s_die("out of memory");
    for (int i = 0; i < n; i++) {
        s_node_t *node = &sim.nodes[i];
        node->sim = &sim;
        node->index = i;
        for (int k = 0; k < ID; k++)
            node->id[k] = (uint8_t) ms_rng_next(&sim.rng);
        node->id[0] = (uint8_t) (i >> 24);
        node->id[1] = (uint8_t) (i >> 16);
        node->id[2] = (uint8_t) (i >> 8);
        node->id[3] = (uint8_t) i;
    }
    int log2n = 0;
    while ((1 << log2n) < n)
        log2n++;
    if (random_overlay)
        s_overlay_random(&sim, 8 + log2n);
    else
        s_overlay_hyparview(&sim, seed, settle);
    uint64_t view_msgs = sim.view_msgs;
    s_overlay_t ov;
    s_overlay_stats(&sim, &ov);
    double t1 = s_seconds();

    sim.loss = loss;
    s_result_t push, ae, both;
    int max_rounds = 200 * ae_period;
    s_mode(&sim, true, false, ae_period, trials, max_rounds, &push);
    s_mode(&sim, false, true, ae_period, trials, max_rounds, &ae);
    s_mode(&sim, true, true, ae_period, trials, max_rounds, &both);
    double t2 = s_seconds();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    printf("| %d | %.1f | %d / %.1f / %d | %s%d | %d | "
           "%.1f (%d) [%.1f]%s | %.0f (%.1f/node) | "
           "%.1f (%d) = %.1f periods%s | %.0f (%.0f data) | "
           "%.1f (%d)%s | %.1f s + %.1f s, %.0f MiB |\n",
           n, log2((double) n), ov.deg_min, ov.deg_mean, ov.deg_max,
           ov.reached == n ? "" : "NOT CONNECTED ", ov.asymmetric, ov.ecc_max,
           push.rounds_mean, push.rounds_max, push.ecc_mean,
           push.failed ? " (some trials failed)" : "", push.flood_mean,
           push.flood_mean / n, ae.rounds_mean, ae.rounds_max,
           ae.rounds_mean / ae_period, ae.failed ? " (some failed)" : "",
           ae.msgs_mean, ae.data_mean, both.rounds_mean, both.rounds_max,
           both.failed ? " (some failed)" : "", t1 - t0, t2 - t1,
           (double) ru.ru_maxrss / 1024.0);
    fprintf(stderr,
            "sim_gossip: N=%d overlay %s: %llu view messages to build; "
            "push reach-all msgs %.0f; ae data msgs to reach-all %.0f\n",
            n, random_overlay ? "random" : "hyparview",
            (unsigned long long) view_msgs, push.msgs_mean, ae.data_mean);
    fflush(stdout);
    s_sim_free(&sim);
}

int
main(int argc, char **argv)
{
    int sizes[16] = {100, 1000, 3000, 10000};
    int n_sizes = 4;
    int trials = 5, ae_period = 3, settle = 200;
    uint64_t seed = 1;
    bool random_overlay = false;
    double loss = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--nodes") == 0 && v) {
            n_sizes = 0;
            char *copy = strdup(v), *save = NULL;
            if (!copy)
                s_die("out of memory");
            for (char *tok = strtok_r(copy, ",", &save); tok && n_sizes < 16;
                 tok = strtok_r(NULL, ",", &save)) {
                int n = atoi(tok);
                if (n < 2 || n > 1000000)
                    s_die("--nodes: each size must be 2 .. 1000000");
                sizes[n_sizes++] = n;
            }
            free(copy);
            i++;
        } else if (strcmp(a, "--trials") == 0 && v) {
            trials = atoi(v);
            i++;
        } else if (strcmp(a, "--seed") == 0 && v) {
            seed = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--ae-period") == 0 && v) {
            ae_period = atoi(v);
            i++;
        } else if (strcmp(a, "--settle") == 0 && v) {
            settle = atoi(v);
            i++;
        } else if (strcmp(a, "--loss") == 0 && v) {
            loss = atof(v);
            i++;
        } else if (strcmp(a, "--overlay") == 0 && v) {
            if (strcmp(v, "random") == 0)
                random_overlay = true;
            else if (strcmp(v, "hyparview") != 0)
                s_die("--overlay: hyparview or random");
            i++;
        } else {
            fprintf(stderr,
                    "usage: sim_gossip [--nodes 100,1000,3000,10000] "
                    "[--trials 5] [--seed 1] [--overlay hyparview|random] "
                    "[--ae-period 3] [--settle 200] [--loss 0]\n");
            return 2;
        }
    }
    if (trials < 1 || ae_period < 1 || settle < 0 || loss < 0 || loss >= 1)
        s_die("--trials, --ae-period >= 1, --settle >= 0, 0 <= --loss < 1");
    printf("| N | log2 N | active view min / mean / max | asym. links | "
           "eccentricity (max of 5) | push: rounds mean (max) [origin "
           "eccentricity] | "
           "push: messages, whole flood | anti-entropy: rounds mean (max) | "
           "anti-entropy: messages to reach all | push + AE: rounds mean "
           "(max) | time (overlay + gossip), peak RSS |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    for (int s = 0; s < n_sizes; s++)
        s_run_size(sizes[s], seed, random_overlay, ae_period, settle, trials,
                   loss);
    return 0;
}
