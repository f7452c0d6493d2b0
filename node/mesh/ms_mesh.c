/*  =========================================================================
    ms_mesh - links between pool members: HELLO, heartbeats, failure
    detection, one TCP connection per pair, membership views

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Discovery and links"; the pool issue, items 1 and 2.

    Sockets. One ROUTER bound on mesh_bind (ROUTER_HANDOVER, so a peer that
    restarts takes its routing id back; ROUTER_MANDATORY, so a send to a
    gone peer fails instead of vanishing) and one DEALER per peer we dial,
    whose ZMQ routing id is our 32-byte node id. Every socket has linger 0
    and send timeout 0: the node loop never blocks on a peer.

    Channels. Between us and a peer there are at most two channels: OUT
    (our DEALER to its ROUTER) and IN (its DEALER to our ROUTER, frames
    tagged with its node id). Each channel opens with HELLO both ways:
    the dialer sends HELLO first, the ROUTER side checks it (routing id ==
    node id, pool id equal, protocol ranges overlap) and answers with its
    own HELLO. Until a channel's HELLOs passed, only HELLO, WHO_ARE_YOU and
    I_AM are read on it; anything else is dropped (n_dropped). A refused
    HELLO is counted (n_rejected), logged once per peer, and the OUT
    channel closed (a ROUTER cannot close one connection: IN frames of a
    refused peer are just dropped until it sends an acceptable HELLO).

    One connection per pair. The lower node id dials: a peer with a higher
    id that we learn of (beacon, view) is dialed at once; one with a lower
    id is dialed only after a grace of two heartbeats in which it did not
    dial us, or at once when it is a static --peer or the view has a
    message for it. When both channels are up, the one the lower id
    dialed is kept: the higher side closes its DEALER.

    Static peers. "NODE_ID_HEX@tcp://HOST:PORT" is dialed whatever the
    order; "tcp://HOST:PORT" (open pool) is dialed with WHO_ARE_YOU first,
    the I_AM answer gives its id, then HELLO. A dead or refused static
    peer is redialed with exponential backoff (redial_min_ms ..
    redial_max_ms).

    Liveness. Any frame of a peer's own on an open channel sets
    last_heard_at. ALIVE below suspect_after_ms, SUSPECT below
    dead_after_ms, then DEAD: the channels are reset (DEALER closed) and
    the view told the link is down. A later HELLO makes it ALIVE again.
    No message from a third party changes a peer's state.

    Views. ms_view decides whom we keep links to (full mesh up to 16
    members, HyParView beyond); the mesh executes its actions: SEND
    (encoded as the wire's view messages, endpoints from our address
    book; a message to a peer with no open channel waits in a short
    queue while we dial it), LINK (make sure a channel is or will be up),
    UNLINK (close our DEALER).

    Admission (DESIGN.md "Identity, pools and admission"; trust issue,
    item 3). With a members table that has an authority, every link is
    CURVE. The ROUTER is a CURVE server with our derived CURVE key, in
    its own ZAP domain, behind the process's ZAP handler (ms_zap: started
    before the bind); each DEALER is a CURVE client whose server key is
    derived from the node id we dial, so the handshake itself proves the
    server holds that node's key. HELLOs carry the sender's certificate
    chain; each side checks it against the table (ms_members_check:
    authority signature, pool id, expiry, revocation) and that the
    chain's subject is the HELLO's node id and the link's key: on the
    ROUTER side the connection's ZAP User-Id (the client's CURVE key, on
    every frame), on the DEALER side the key we dialed. Every later frame
    on the ROUTER is checked by its User-Id against the peer it claims to
    come from (the routing id is the client's choice, its key is not).
    A refused key is denied at ZAP for deny_ms, and a key that ZAP let in
    with no valid HELLO within hello_timeout_ms is denied the same way
    (ms_zap_take_stale, each tick); refusals are counted per reason and
    printed once per peer. A revoked key is denied at ZAP for good, its
    link closed and its frames dropped; a member whose certificate
    expires loses its link (it may come back with a renewed one).

    With CURVE, ROUTER_HANDOVER is off: with it, any client (even one ZAP
    let in only to try its HELLO) could take a member's routing id and
    receive what we send to that member. Without it a restarted peer
    gets its routing id back only once the old connection is closed, so
    the ROUTER runs ZMTP heartbeats (heartbeat_ms, timeout dead_after_ms)
    that close a dead connection. A stranger that connects first with a
    member's routing id still blocks that member's dial to us until it
    goes (libzmq cannot close one ROUTER connection); the member is then
    reached through our own dial to it (the higher id dials after a
    grace). An open pool's links stay plaintext, as anybody may join an
    open pool: its table admits every valid HELLO, each node its own
    operator.

    Not done: RTT from heartbeats (the wire has no echo field; rtt_ms is
    the HELLO round trip on OUT channels), SWIM indirect probes, a socket
    monitor (a dead TCP connection is found by silence, which the lease
    TTL needs anyway).
*/
#include "ms_mesh.h"
#include "ms_discovery.h"
#include "ms_identity.h"
#include "ms_view.h"
#include "ms_zap.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ID_BYTES MS_MESH_ID_BYTES
#define PEER_QUEUE_MAX 32 // frames waiting for a channel
#define READ_BUDGET 1000  // frames read per socket per handle
//  Frames queued per link and direction before a send fails (ZeroMQ's
//  default is 1000). A gossip range answer is up to range_records
//  blocks and a catch-up keeps about two windows in flight per stream
//  (ms_gossip.c, "Flow control"); a full queue drops what is sent, and
//  a dropped answer costs a range timeout. Memory stays bounded by what
//  the requesters ask (range_bytes per answer).
#define LINK_HWM_FRAMES 50000
#define DIAL_GRACE_BEATS 2 // higher id waits this many beats

typedef struct {
    uint8_t *data; // encoded envelope
    size_t size;   // bytes
} s_frame_t;

typedef struct {
    uint8_t id[ID_BYTES];                    // node id (zero until known)
    bool id_known;                           // false: open-pool --peer not yet
                                             // answered WHO_ARE_YOU
    uint8_t curve[ID_BYTES];                 // its CURVE key (id_known)
    bool revoked;                            // revoked: never linked again
    char endpoint[MS_WIRE_ENDPOINT_MAX + 1]; // where to dial ("" unknown)
    bool is_static;                          // a --peer
    bool rejected;                  // its HELLO was refused (logged once)
    zsock_t *dealer;                // OUT channel socket (NULL: none)
    bool out_up;                    // OUT: HELLO sent and answered
    int64_t out_hello_at;           // when our HELLO went out (RTT)
    bool in_up;                     // IN: its HELLO accepted, ours sent
    int64_t last_heard_at;          // last frame of its own (0 never)
    ms_peer_state_t state;          // by its silence, as of last tick
    ms_peer_state_t reported_state; // as last told to on_peer
    bool reported_linked;           // as last told to on_peer
    bool reported;                  // on_peer was called at least once
    int64_t dial_at;                // dial when no channel by then (0 no)
    int backoff_ms;                 // next redial backoff
    int64_t unanswered_since;       // static: first dial of a run of
                                    // dials with no answer (0: none)
    int n_unanswered;               // dials in that run
    bool warned_unreachable;        // its warning line was printed
    // what its HELLO and heartbeats said
    uint64_t incarnation;
    char operator_name[MS_WIRE_NAME_MAX + 1];
    uint32_t n_workers, n_busy;
    uint32_t protocol;               // negotiated version (0 unknown)
    int64_t rtt_ms;                  // HELLO round trip on OUT, -1 unknown
    uint64_t last_hb_seq;            // highest heartbeat seq seen
    s_frame_t queue[PEER_QUEUE_MAX]; // frames waiting for a channel
    int n_queue;
} s_peer_t;

struct ms_mesh {
    ms_mesh_options_t opts;      // copied; strings below
    char *mesh_bind;             // owned copy
    char *operator_name;         // owned copy ("" when none)
    char *advertise_host;        // owned copy (NULL)
    ms_mesh_handlers_t handlers; // copied (zero when none)
    zsock_t *router;             // bound ROUTER
    int port;                    // its real port
    ms_discovery_t *discovery;   // beacons (NULL with --no-beacon)
    ms_view_t *view;             // membership view
    s_peer_t **peers;            // peer table
    int n_peers, cap_peers;
    uint64_t hb_seq;                              // our heartbeat seq
    int64_t next_heartbeat_at;                    // monotonic ms
    ms_mesh_stats_t stats;                        // counters
    char self_endpoint[MS_WIRE_ENDPOINT_MAX + 1]; // what we advertise
    uint64_t rng; // xorshift state (random_peer)
    // admission (see the prose)
    bool secure;                            // CURVE links, certificates
    bool zap_started;                       // we hold a ms_zap reference
    char zap_domain[MS_ZAP_DOMAIN_MAX + 1]; // our ROUTER's ZAP domain
    uint8_t *certificate;                   // our chain (HELLO), owned
    size_t certificate_bytes;               // its length
    uint8_t curve_pk[ID_BYTES];             // our CURVE public key
    uint8_t curve_sk[ID_BYTES];             // our CURVE secret key (wiped)
    int64_t next_admission_at;              // monotonic ms: stale keys, expiry
};

static int64_t (*s_clock_fn)(void) = NULL;

//  --------------------------------------------------------------------------
//  Monotonic clock (replaceable)

int64_t
ms_mesh_now(void)
{
    return s_clock_fn ? s_clock_fn() : zclock_mono();
}

//  --------------------------------------------------------------------------
//  Replace the clock

void
ms_mesh_set_clock(int64_t (*clock_fn)(void))
{
    s_clock_fn = clock_fn;
}

//  --------------------------------------------------------------------------
//  Node id as hex (out has 65 bytes)

static void
s_hex(const uint8_t *id, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < ID_BYTES; i++) {
        out[2 * i] = digits[id[i] >> 4];
        out[2 * i + 1] = digits[id[i] & 15];
    }
    out[2 * ID_BYTES] = '\0';
}

//  --------------------------------------------------------------------------
//  Parse 64 hex characters into an id; false when malformed

static bool
s_unhex(const char *s, size_t n, uint8_t *id)
{
    if (n != 2 * ID_BYTES)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0)
            return false;
        if (i % 2 == 0)
            id[i / 2] = (uint8_t) (v << 4);
        else
            id[i / 2] |= (uint8_t) v;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Log a line when verbose

static void s_log(ms_mesh_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(ms_mesh_t *self, const char *fmt, ...)
{
    if (!self->opts.verbose)
        return;
    char hex[2 * ID_BYTES + 1];
    s_hex(self->opts.node_id, hex);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "meshsweepd[mesh %.12s]: ", hex);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

//  --------------------------------------------------------------------------
//  Find a peer by id (known ids only)

static s_peer_t *
s_peer_find(ms_mesh_t *self, const uint8_t *id)
{
    for (int i = 0; i < self->n_peers; i++)
        if (self->peers[i]->id_known &&
            memcmp(self->peers[i]->id, id, ID_BYTES) == 0)
            return self->peers[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Add a peer entry (id may be NULL: unknown yet)

static s_peer_t *
s_peer_add(ms_mesh_t *self, const uint8_t *id)
{
    if (self->n_peers == self->cap_peers) {
        int cap = self->cap_peers ? self->cap_peers * 2 : 16;
        s_peer_t **grown = realloc(self->peers, (size_t) cap * sizeof *grown);
        if (!grown)
            return NULL;
        self->peers = grown;
        self->cap_peers = cap;
    }
    s_peer_t *peer = calloc(1, sizeof *peer);
    if (!peer)
        return NULL;
    if (id) {
        memcpy(peer->id, id, ID_BYTES);
        peer->id_known = true;
        ms_identity_curve_public(id, peer->curve); // zero when not a key
    }
    peer->state = MS_PEER_DEAD;
    peer->rtt_ms = -1;
    peer->backoff_ms = self->opts.redial_min_ms;
    self->peers[self->n_peers++] = peer;
    return peer;
}

//  --------------------------------------------------------------------------
//  Drop the frames waiting for a channel

static void
s_peer_clear_queue(s_peer_t *peer)
{
    for (int i = 0; i < peer->n_queue; i++)
        free(peer->queue[i].data);
    peer->n_queue = 0;
}

//  --------------------------------------------------------------------------
//  Close the OUT channel

static void
s_peer_close_out(s_peer_t *peer)
{
    zsock_destroy(&peer->dealer);
    peer->out_up = false;
}

//  --------------------------------------------------------------------------
//  Free a peer entry

static void
s_peer_free(s_peer_t **peer_p)
{
    s_peer_t *peer = *peer_p;
    if (!peer)
        return;
    s_peer_close_out(peer);
    s_peer_clear_queue(peer);
    free(peer);
    *peer_p = NULL;
}

//  --------------------------------------------------------------------------
//  Whether a peer has an open channel (both HELLOs passed)

static bool
s_linked(const s_peer_t *peer)
{
    return peer->out_up || peer->in_up;
}

//  --------------------------------------------------------------------------
//  Whether our id is lower than the peer's (we are the dialer)

static bool
s_we_dial(ms_mesh_t *self, const s_peer_t *peer)
{
    return memcmp(self->opts.node_id, peer->id, ID_BYTES) < 0;
}

//  --------------------------------------------------------------------------
//  Tell the node about a state or link change (once per change)

static void
s_report(ms_mesh_t *self, s_peer_t *peer)
{
    bool linked = s_linked(peer);
    if (!peer->id_known ||
        (peer->reported && peer->state == peer->reported_state &&
         linked == peer->reported_linked))
        return;
    peer->reported = true;
    peer->reported_state = peer->state;
    peer->reported_linked = linked;
    if (self->handlers.on_peer)
        self->handlers.on_peer(self->handlers.arg, peer->id, peer->state,
                               linked);
}

//  --------------------------------------------------------------------------
//  Encode an envelope (counted as malformed-out on failure: a bug)

static int
s_encode(const ms_wire_envelope_t *env, uint8_t **buf, size_t *n)
{
    int rc = ms_wire_encode_envelope(env, buf, n);
    return rc == MS_OK ? MS_OK : (rc == MS_ERR_NOMEM ? rc : MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  Send bytes on the OUT channel (our DEALER); never blocks

static int
s_send_out(ms_mesh_t *self, s_peer_t *peer, const uint8_t *data, size_t n)
{
    if (!peer->dealer)
        return MS_ERR_NOTFOUND;
    if (zmq_send(zsock_resolve(peer->dealer), data, n, ZMQ_DONTWAIT) < 0)
        return MS_ERR_IO;
    self->stats.n_frames_out++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Send bytes on the IN channel (our ROUTER, to routing id); never blocks.
//  A gone peer (EHOSTUNREACH) closes the IN channel.

static int
s_send_in_id(ms_mesh_t *self, const uint8_t *rid, size_t rid_bytes,
             const uint8_t *data, size_t n)
{
    void *sock = zsock_resolve(self->router);
    if (zmq_send(sock, rid, rid_bytes, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return MS_ERR_IO;
    if (zmq_send(sock, data, n, ZMQ_DONTWAIT) < 0)
        return MS_ERR_IO;
    self->stats.n_frames_out++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Send on the IN channel of a peer

static int
s_send_in(ms_mesh_t *self, s_peer_t *peer, const uint8_t *data, size_t n)
{
    int rc = s_send_in_id(self, peer->id, ID_BYTES, data, n);
    if (rc != MS_OK && errno == EHOSTUNREACH)
        peer->in_up = false;
    return rc;
}

//  --------------------------------------------------------------------------
//  Send bytes to a linked peer: the OUT channel when up, else IN

static int
s_send_linked(ms_mesh_t *self, s_peer_t *peer, const uint8_t *data, size_t n)
{
    if (peer->out_up)
        return s_send_out(self, peer, data, n);
    if (peer->in_up)
        return s_send_in(self, peer, data, n);
    return MS_ERR_NOTFOUND;
}

//  --------------------------------------------------------------------------
//  Encode and send one small envelope on a channel (out or in)

static int
s_send_env(ms_mesh_t *self, s_peer_t *peer, bool out,
           const ms_wire_envelope_t *env)
{
    uint8_t *buf = NULL;
    size_t n = 0;
    int rc = s_encode(env, &buf, &n);
    if (rc != MS_OK)
        return rc;
    rc = out ? s_send_out(self, peer, buf, n) : s_send_in(self, peer, buf, n);
    free(buf);
    return rc;
}

//  --------------------------------------------------------------------------
//  Our HELLO

static void
s_hello(ms_mesh_t *self, ms_wire_envelope_t *env)
{
    memset(env, 0, sizeof *env);
    env->protocol = MS_PROTOCOL_VERSION;
    env->body = MS_WIRE_BODY_HELLO;
    ms_wire_hello_t *h = &env->hello;
    memcpy(h->node_id, self->opts.node_id, ID_BYTES);
    memcpy(h->pool_id, self->opts.pool_id, ID_BYTES);
    h->protocol_min = MS_PROTOCOL_MIN;
    h->protocol_max = MS_PROTOCOL_MAX;
    h->incarnation = self->opts.incarnation;
    h->mesh_port = (uint16_t) self->opts.mesh_port;
    h->n_workers =
        (uint32_t) (self->opts.n_workers > 0 ? self->opts.n_workers : 0);
    h->operator_name = self->operator_name;
    h->certificate = self->certificate;
    h->certificate_bytes = self->certificate_bytes;
    //  --advertise: where peers dial us, whatever address they see
    if (self->advertise_host)
        snprintf(h->endpoint, sizeof h->endpoint, "%s", self->self_endpoint);
}

//  --------------------------------------------------------------------------
//  Send our HELLO on a channel

static int
s_send_hello(ms_mesh_t *self, s_peer_t *peer, bool out, int64_t now_ms)
{
    ms_wire_envelope_t env;
    s_hello(self, &env);
    if (out)
        peer->out_hello_at = now_ms;
    return s_send_env(self, peer, out, &env);
}

//  --------------------------------------------------------------------------
//  Open (or reopen) the OUT channel: DEALER with our id as routing id,
//  then HELLO, or WHO_ARE_YOU when the peer's id is not known yet

static int
s_dial(ms_mesh_t *self, s_peer_t *peer, int64_t now_ms)
{
    s_peer_close_out(peer);
    if (!peer->endpoint[0])
        return MS_ERR_NOTFOUND;
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    if (!dealer)
        return MS_ERR_NOMEM;
    zsock_set_linger(dealer, 0);
    zsock_set_sndtimeo(dealer, 0);
    zsock_set_sndhwm(dealer, LINK_HWM_FRAMES);
    zsock_set_rcvhwm(dealer, LINK_HWM_FRAMES);
    zsock_set_maxmsgsize(dealer, (int) MS_MAX_FRAME_BYTES + 1024);
    //  libzmq reconnects a DEALER by itself every 100 ms by default: to an
    //  endpoint that does not answer (a wrong --advertise, NAT) that is
    //  ten SYNs a second for as long as the dial lasts. Back off as the
    //  mesh's own redials do instead.
    zsock_set_reconnect_ivl(dealer, self->opts.redial_min_ms);
    zsock_set_reconnect_ivl_max(dealer, self->opts.redial_max_ms);
    zmq_setsockopt(zsock_resolve(dealer), ZMQ_ROUTING_ID, self->opts.node_id,
                   ID_BYTES);
    if (self->secure) {
        //  the server key is the peer's, derived from the id we dial: the
        //  handshake fails unless the server holds that node's key. No
        //  automatic reconnect: a connection libzmq reopened by itself
        //  would carry no HELLO, and the peer's ZAP would deny our key
        //  after hello_timeout_ms; the mesh redials (HELLO first) instead.
        zsock_set_reconnect_ivl(dealer, -1);
        void *raw = zsock_resolve(dealer);
        if (!peer->id_known || peer->revoked ||
            zmq_setsockopt(raw, ZMQ_CURVE_SERVERKEY, peer->curve, ID_BYTES) ||
            zmq_setsockopt(raw, ZMQ_CURVE_PUBLICKEY, self->curve_pk,
                           ID_BYTES) ||
            zmq_setsockopt(raw, ZMQ_CURVE_SECRETKEY, self->curve_sk,
                           ID_BYTES)) {
            zsock_destroy(&dealer);
            return MS_ERR_INVALID;
        }
    }
    if (zsock_connect(dealer, "%s", peer->endpoint) != 0) {
        zsock_destroy(&dealer);
        return MS_ERR_IO;
    }
    peer->dealer = dealer;
    self->stats.n_dials++;
    if (peer->id_known)
        return s_send_hello(self, peer, true, now_ms);
    ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_WHO_ARE_YOU};
    return s_send_env(self, peer, true, &env);
}

//  --------------------------------------------------------------------------
//  Schedule the next dial attempt with backoff

static void
s_schedule_dial(ms_mesh_t *self, s_peer_t *peer, int64_t at)
{
    if (!peer->endpoint[0] || (!peer->id_known && !peer->is_static) ||
        peer->revoked)
        return;
    if (peer->dial_at == 0 || at < peer->dial_at)
        peer->dial_at = at;
    (void) self;
}

//  --------------------------------------------------------------------------
//  Flush frames that waited for a channel

static void
s_flush_queue(ms_mesh_t *self, s_peer_t *peer)
{
    for (int i = 0; i < peer->n_queue; i++)
        s_send_linked(self, peer, peer->queue[i].data, peer->queue[i].size);
    s_peer_clear_queue(peer);
}

//  --------------------------------------------------------------------------
//  A frame of the peer's own was heard

static void
s_heard(ms_mesh_t *self, s_peer_t *peer, int64_t now_ms)
{
    peer->last_heard_at = now_ms;
    if (peer->state != MS_PEER_ALIVE) {
        peer->state = MS_PEER_ALIVE;
        s_report(self, peer);
    }
}

//  --------------------------------------------------------------------------
//  A peer is dialed again with no answer to the dials before: after a few
//  (S_WARN_DIALS, over S_WARN_MS at least, so a peer that starts a moment
//  after us says nothing) one warning line, whatever --verbose says: a
//  mistyped or unreachable --peer, or a peer whose beacon or HELLO names
//  an endpoint we cannot reach (a wrong --advertise, NAT), must not fail
//  in silence, and one line per run of failures is not a flood. The
//  redials themselves back off (redial_min_ms .. redial_max_ms).

#define S_WARN_DIALS 3 // dials with no answer before the warning
#define S_WARN_MS 3000 // and at least this long since the first

static void
s_unanswered(ms_mesh_t *self, s_peer_t *peer, int64_t now_ms)
{
    if (peer->unanswered_since == 0)
        peer->unanswered_since = now_ms;
    peer->n_unanswered++;
    if (peer->warned_unreachable || peer->n_unanswered < S_WARN_DIALS ||
        now_ms - peer->unanswered_since < S_WARN_MS)
        return;
    peer->warned_unreachable = true;
    if (!peer->is_static) {
        char hex[2 * ID_BYTES + 1];
        s_hex(peer->id, hex);
        fprintf(stderr,
                "meshsweepd: warning: peer %.12s does not answer at %s, the "
                "endpoint its beacon or HELLO gave (%d dials in %.1f s): "
                "not reachable from here (NAT, firewall, or a wrong "
                "--advertise on that node?); still trying every %d s at "
                "most\n",
                hex, peer->endpoint, peer->n_unanswered,
                (double) (now_ms - peer->unanswered_since) / 1000.0,
                (self->opts.redial_max_ms + 999) / 1000);
        return;
    }
    fprintf(stderr,
            "meshsweepd: warning: peer %s: no answer to %d dials in %.1f s "
            "(not running, wrong address or port, or another pool?); still "
            "trying every %d s at most\n",
            peer->endpoint, peer->n_unanswered,
            (double) (now_ms - peer->unanswered_since) / 1000.0,
            (self->opts.redial_max_ms + 999) / 1000);
}

//  --------------------------------------------------------------------------
//  A peer answered: end its run of unanswered dials (and say so when it
//  was warned about).

static void
s_answered(s_peer_t *peer, int64_t now_ms)
{
    if (peer->warned_unreachable)
        fprintf(stderr, "meshsweepd: peer %s answered after %.1f s\n",
                peer->endpoint,
                (double) (now_ms - peer->unanswered_since) / 1000.0);
    peer->warned_unreachable = false;
    peer->n_unanswered = 0;
    peer->unanswered_since = 0;
}

//  --------------------------------------------------------------------------
//  A channel came up: keep one link per pair, flush, tell view and node

static void
s_channel_up(ms_mesh_t *self, s_peer_t *peer, int64_t now_ms)
{
    //  both directions open: keep the one the lower id dialed
    if (peer->out_up && peer->in_up && !s_we_dial(self, peer)) {
        s_log(self, "closing our link to a lower id (it dialed us)");
        s_peer_close_out(peer);
    }
    peer->dial_at = 0;
    peer->backoff_ms = self->opts.redial_min_ms;
    peer->rejected = false;
    s_answered(peer, now_ms);
    s_flush_queue(self, peer);
    s_heard(self, peer, now_ms);
    s_report(self, peer);
    ms_view_on_link_up(self->view, peer->id, now_ms);
    //  a higher id dialed us first (it had something to send): the lower
    //  dials too, and the higher drops its DEALER when our HELLO arrives
    if (peer->in_up && !peer->dealer && s_we_dial(self, peer) &&
        ms_view_is_active(self->view, peer->id))
        s_schedule_dial(self, peer, now_ms);
}

//  --------------------------------------------------------------------------
//  A peer went dead (or its link failed): reset channels, tell view

static void
s_peer_down(ms_mesh_t *self, s_peer_t *peer, int64_t now_ms)
{
    bool was_active = ms_view_is_active(self->view, peer->id);
    s_peer_close_out(peer);
    peer->in_up = false;
    peer->state = MS_PEER_DEAD;
    s_report(self, peer);
    if (was_active)
        ms_view_on_link_down(self->view, peer->id, now_ms);
    if (peer->is_static || was_active)
        s_schedule_dial(self, peer,
                        now_ms + peer->backoff_ms +
                            (peer->is_static || s_we_dial(self, peer)
                                 ? 0
                                 : DIAL_GRACE_BEATS * self->opts.heartbeat_ms));
}

//  --------------------------------------------------------------------------
//  Check a HELLO: ids, pool, protocol overlap, and with a members table
//  its certificate (see the prose). expect: the node id of the link
//  (routing id or the id we dialed), or NULL; link_key: the ROUTER
//  side's User-Id key, or NULL (DEALER side: authenticated by the server
//  key). Admits the sender to the table on success. Returns true to
//  accept; else *why (a phrase) and *reason (an admission refusal, or -1
//  for a protocol matter that is not one).

static bool
s_hello_ok(ms_mesh_t *self, const ms_wire_hello_t *h, const uint8_t *expect,
           const uint8_t *link_key, const char **why, int *reason)
{
    *reason = -1;
    if (memcmp(h->node_id, self->opts.node_id, ID_BYTES) == 0) {
        *why = "our own node id";
        return false;
    }
    if (expect && memcmp(h->node_id, expect, ID_BYTES) != 0) {
        *why = "node id differs from the link's";
        *reason = MS_MEMBERS_REFUSED_KEY_MISMATCH;
        return false;
    }
    if (memcmp(h->pool_id, self->opts.pool_id, ID_BYTES) != 0) {
        *why = "another pool";
        *reason = MS_MEMBERS_REFUSED_OTHER_POOL;
        return false;
    }
    if (h->protocol_max < MS_PROTOCOL_MIN ||
        h->protocol_min > MS_PROTOCOL_MAX) {
        *why = "no protocol version in common";
        return false;
    }
    ms_members_t *members = self->opts.members;
    if (!members)
        return true;
    ms_members_refusal_t r = MS_MEMBERS_REFUSED_BAD_SIG;
    int64_t now_ms = ms_mesh_now();
    if (!self->secure) {
        // open pool: every valid HELLO is its own operator
        int rc = ms_members_admit_open(members, h->node_id, h->operator_name,
                                       now_ms, &r);
        if (rc == MS_OK || rc == MS_ERR_NOMEM)
            return true;
        *why = ms_members_refusal_name(r);
        *reason = (int) r;
        return false;
    }
    uint8_t curve[ID_BYTES];
    ms_cert_chain_t chain;
    if (link_key && (ms_identity_curve_public(h->node_id, curve) != MS_OK ||
                     memcmp(curve, link_key, ID_BYTES) != 0)) {
        *why = "the HELLO's node id is not the link's key";
        r = MS_MEMBERS_REFUSED_KEY_MISMATCH;
    } else if (h->certificate_bytes == 0) {
        *why = "no certificate";
        r = MS_MEMBERS_REFUSED_NO_CERT;
    } else if (ms_cert_chain_decode(h->certificate, h->certificate_bytes,
                                    &chain, NULL) != MS_OK) {
        *why = "malformed certificate";
        r = MS_MEMBERS_REFUSED_BAD_SIG;
    } else if (memcmp(chain.leaf.subject, h->node_id, ID_BYTES) != 0) {
        *why = "certificate of another key";
        r = MS_MEMBERS_REFUSED_KEY_MISMATCH;
    } else if (ms_members_admit(members, &chain, (int64_t) time(NULL), now_ms,
                                &r) == MS_OK) {
        return true;
    } else
        *why = ms_members_refusal_name(r);
    *reason = (int) r;
    return false;
}

//  --------------------------------------------------------------------------
//  Count and log (once per peer, or the first few) a refused HELLO. With
//  CURVE the link's key (link_key: the ROUTER side's User-Id, else the
//  peer's key) is denied at ZAP for deny_ms, and in the table when it is
//  the HELLO's own key (a HELLO naming another key must not get that
//  key denied).

static void
s_refuse(ms_mesh_t *self, s_peer_t *peer, const ms_wire_hello_t *h,
         const char *why, int reason, const uint8_t *link_key)
{
    self->stats.n_rejected++;
    if (reason >= 0 && self->opts.members) {
        self->stats.n_admission_refused++;
        self->stats.n_refused[reason]++;
        const uint8_t *key = link_key                 ? link_key
                             : peer && peer->id_known ? peer->curve
                                                      : NULL;
        // A key refused because it is denied already is not denied again:
        // a retry every few seconds would push the end of the deny out
        // for ever, and a node that comes back with a renewed certificate
        // must get in once the deny runs out.
        if (self->secure && key && reason != MS_MEMBERS_REFUSED_REVOKED &&
            reason != MS_MEMBERS_REFUSED_DENIED) {
            ms_zap_deny(self->zap_domain, key, self->opts.deny_ms);
            uint8_t curve[ID_BYTES];
            if (ms_identity_curve_public(h->node_id, curve) == MS_OK &&
                memcmp(curve, key, ID_BYTES) == 0)
                ms_members_deny(self->opts.members, h->node_id,
                                ms_mesh_now() + self->opts.deny_ms);
        }
    }
    if (peer && peer->rejected)
        return;
    if (peer)
        peer->rejected = true;
    else if (self->stats.n_rejected > 16)
        return;
    char hex[2 * ID_BYTES + 1];
    s_hex(h->node_id, hex);
    if (peer && peer->is_static)
        // A --peer the user gave that answers as someone else (a wrong
        // NODE_ID, this node itself, another pool): say so, once.
        fprintf(stderr,
                "meshsweepd: warning: static peer %s refused: its HELLO "
                "says node %.12s: %s\n",
                peer->endpoint, hex, why);
    else if (reason >= 0 && self->opts.members)
        // admission refusals are for the operator to see, verbose or not
        fprintf(stderr, "meshsweepd: refused node %.12s: %s (admission: %s)\n",
                hex, why,
                ms_members_refusal_name((ms_members_refusal_t) reason));
    else
        s_log(self, "refused HELLO from %.12s: %s", hex, why);
}

//  --------------------------------------------------------------------------
//  Record what a HELLO says about its sender

static void
s_hello_info(s_peer_t *peer, const ms_wire_hello_t *h)
{
    peer->incarnation = h->incarnation;
    snprintf(peer->operator_name, sizeof peer->operator_name, "%s",
             h->operator_name ? h->operator_name : "");
    peer->n_workers = h->n_workers;
    peer->protocol =
        h->protocol_max < MS_PROTOCOL_MAX ? h->protocol_max : MS_PROTOCOL_MAX;
}

//  --------------------------------------------------------------------------
//  Make "tcp://HOST:PORT" from an address and a port

static void
s_endpoint(char *out, const char *host, unsigned port)
{
    bool v6 = strchr(host, ':') != NULL;
    snprintf(out, MS_WIRE_ENDPOINT_MAX + 1,
             v6 ? "tcp://[%s]:%u" : "tcp://%s:%u", host, port);
}

//  --------------------------------------------------------------------------
//  Learn a peer (beacon, view message): make its entry, note where to
//  dial it. Returns the entry (NULL when out of memory or it is us).

static s_peer_t *
s_learn(ms_mesh_t *self, const uint8_t *id, const char *endpoint)
{
    if (memcmp(id, self->opts.node_id, ID_BYTES) == 0)
        return NULL;
    s_peer_t *peer = s_peer_find(self, id);
    if (!peer)
        peer = s_peer_add(self, id);
    //  an endpoint heard on a link (HELLO's source address) or configured
    //  wins over what a message claims: only fill a gap
    if (peer && !peer->endpoint[0] && endpoint && endpoint[0] &&
        ms_wire_endpoint_valid(endpoint))
        snprintf(peer->endpoint, sizeof peer->endpoint, "%s", endpoint);
    return peer;
}

//  --------------------------------------------------------------------------
//  Fill a wire peer entry; false when we know no endpoint for it

static bool
s_wire_peer(ms_mesh_t *self, const uint8_t *id, uint8_t *out_id,
            char *out_endpoint)
{
    const char *endpoint = NULL;
    if (memcmp(id, self->opts.node_id, ID_BYTES) == 0)
        endpoint = self->self_endpoint;
    else {
        s_peer_t *peer = s_peer_find(self, id);
        if (peer)
            endpoint = peer->endpoint;
    }
    if (!endpoint || !ms_wire_endpoint_valid(endpoint))
        return false;
    memcpy(out_id, id, ID_BYTES);
    snprintf(out_endpoint, MS_WIRE_ENDPOINT_MAX + 1, "%s", endpoint);
    return true;
}

//  --------------------------------------------------------------------------
//  Encode a view message as a wire envelope (buf malloc'd)

static int
s_encode_view(ms_mesh_t *self, const ms_view_msg_t *msg, uint8_t **buf,
              size_t *n)
{
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    ms_wire_peer_t peers[MS_VIEW_MSG_MAX_IDS];
    switch (msg->kind) {
    case MS_VIEW_MSG_JOIN:
        env.body = MS_WIRE_BODY_JOIN;
        if (!s_wire_peer(self, self->opts.node_id, env.join.node_id,
                         env.join.endpoint))
            return MS_ERR_NOTFOUND;
        break;
    case MS_VIEW_MSG_DISCONNECT:
        env.body = MS_WIRE_BODY_DISCONNECT;
        memcpy(env.join.node_id, self->opts.node_id, ID_BYTES);
        break;
    case MS_VIEW_MSG_FORWARD_JOIN:
        env.body = MS_WIRE_BODY_FORWARD_JOIN;
        if (!s_wire_peer(self, msg->subject, env.forward_join.node_id,
                         env.forward_join.endpoint))
            return MS_ERR_NOTFOUND;
        env.forward_join.ttl = (uint32_t) (msg->ttl > 0 ? msg->ttl : 0);
        break;
    case MS_VIEW_MSG_NEIGHBOR:
        env.body = MS_WIRE_BODY_NEIGHBOR;
        if (!s_wire_peer(self, self->opts.node_id, env.neighbor.node_id,
                         env.neighbor.endpoint))
            return MS_ERR_NOTFOUND;
        //  the wire has no reply flag: an acceptance goes out as high
        //  priority (the asker treats a NEIGHBOR from a peer it asked as
        //  the acceptance)
        env.neighbor.high_priority = msg->high_priority || msg->reply;
        break;
    case MS_VIEW_MSG_SHUFFLE:
    case MS_VIEW_MSG_SHUFFLE_REPLY:
        env.body = msg->kind == MS_VIEW_MSG_SHUFFLE
                       ? MS_WIRE_BODY_SHUFFLE
                       : MS_WIRE_BODY_SHUFFLE_REPLY;
        if (msg->kind == MS_VIEW_MSG_SHUFFLE) {
            if (!s_wire_peer(self, msg->subject, env.shuffle.node_id,
                             env.shuffle.endpoint))
                return MS_ERR_NOTFOUND;
            env.shuffle.ttl = (uint32_t) (msg->ttl > 0 ? msg->ttl : 0);
        }
        for (int i = 0; i < msg->n_ids && i < MS_VIEW_MSG_MAX_IDS; i++)
            if (s_wire_peer(self, msg->ids[i],
                            peers[env.shuffle.n_peers].node_id,
                            peers[env.shuffle.n_peers].endpoint))
                env.shuffle.n_peers++;
        env.shuffle.peers = env.shuffle.n_peers ? peers : NULL;
        break;
    default:
        return MS_ERR_INVALID;
    }
    return s_encode(&env, buf, n);
}

//  --------------------------------------------------------------------------
//  Decode a wire view body into a view message (learning endpoints).
//  Returns false when env is not a view body.

static bool
s_decode_view(ms_mesh_t *self, const ms_wire_envelope_t *env,
              ms_view_msg_t *msg)
{
    memset(msg, 0, sizeof *msg);
    switch (env->body) {
    case MS_WIRE_BODY_JOIN:
        msg->kind = MS_VIEW_MSG_JOIN;
        s_learn(self, env->join.node_id, env->join.endpoint);
        return true;
    case MS_WIRE_BODY_DISCONNECT:
        msg->kind = MS_VIEW_MSG_DISCONNECT;
        return true;
    case MS_WIRE_BODY_FORWARD_JOIN:
        msg->kind = MS_VIEW_MSG_FORWARD_JOIN;
        memcpy(msg->subject, env->forward_join.node_id, ID_BYTES);
        msg->ttl =
            env->forward_join.ttl > 64 ? 64 : (int) env->forward_join.ttl;
        s_learn(self, env->forward_join.node_id, env->forward_join.endpoint);
        return true;
    case MS_WIRE_BODY_NEIGHBOR:
        msg->kind = MS_VIEW_MSG_NEIGHBOR;
        msg->high_priority = env->neighbor.high_priority;
        return true;
    case MS_WIRE_BODY_SHUFFLE:
    case MS_WIRE_BODY_SHUFFLE_REPLY:
        msg->kind = env->body == MS_WIRE_BODY_SHUFFLE
                        ? MS_VIEW_MSG_SHUFFLE
                        : MS_VIEW_MSG_SHUFFLE_REPLY;
        if (env->body == MS_WIRE_BODY_SHUFFLE) {
            memcpy(msg->subject, env->shuffle.node_id, ID_BYTES);
            msg->ttl = env->shuffle.ttl > 64 ? 64 : (int) env->shuffle.ttl;
            s_learn(self, env->shuffle.node_id, env->shuffle.endpoint);
        }
        for (size_t i = 0;
             i < env->shuffle.n_peers && msg->n_ids < MS_VIEW_MSG_MAX_IDS;
             i++) {
            const ms_wire_peer_t *p = &env->shuffle.peers[i];
            if (s_learn(self, p->node_id, p->endpoint))
                memcpy(msg->ids[msg->n_ids++], p->node_id, ID_BYTES);
        }
        return true;
    default:
        return false;
    }
}

//  --------------------------------------------------------------------------
//  Queue a frame for a peer with no open channel (dropped when full)

static void
s_enqueue(s_peer_t *peer, uint8_t **buf, size_t n)
{
    if (peer->n_queue == PEER_QUEUE_MAX) {
        free(*buf);
        *buf = NULL;
        return;
    }
    peer->queue[peer->n_queue].data = *buf;
    peer->queue[peer->n_queue].size = n;
    peer->n_queue++;
    *buf = NULL;
}

//  --------------------------------------------------------------------------
//  Execute what the view asked for

static void
s_view_actions(ms_mesh_t *self, int64_t now_ms)
{
    ms_view_action_t act;
    while (ms_view_next_action(self->view, &act)) {
        s_peer_t *peer = s_peer_find(self, act.peer);
        if (!peer)
            peer = s_learn(self, act.peer, NULL);
        if (!peer)
            continue;
        switch (act.kind) {
        case MS_VIEW_ACTION_SEND: {
            uint8_t *buf = NULL;
            size_t n = 0;
            if (s_encode_view(self, &act.msg, &buf, &n) != MS_OK)
                break;
            if (s_linked(peer))
                s_send_linked(self, peer, buf, n);
            else {
                //  wait for a channel; a higher id gives the lower one a
                //  grace to dial first
                s_enqueue(peer, &buf, n);
                if (!peer->dealer)
                    s_schedule_dial(self, peer,
                                    peer->is_static || s_we_dial(self, peer)
                                        ? now_ms
                                        : now_ms + DIAL_GRACE_BEATS *
                                                       self->opts.heartbeat_ms);
            }
            free(buf);
            break;
        }
        case MS_VIEW_ACTION_LINK:
            if (!s_linked(peer) && !peer->dealer)
                s_schedule_dial(self, peer,
                                peer->is_static || s_we_dial(self, peer)
                                    ? now_ms
                                    : now_ms + DIAL_GRACE_BEATS *
                                                   self->opts.heartbeat_ms);
            break;
        case MS_VIEW_ACTION_UNLINK:
            if (!peer->is_static) {
                s_peer_close_out(peer);
                peer->dial_at = 0;
                s_report(self, peer);
            }
            break;
        }
    }
}

//  --------------------------------------------------------------------------
//  Process a decoded body from a linked peer

static void
s_dispatch(ms_mesh_t *self, s_peer_t *peer, const ms_wire_envelope_t *env,
           int64_t now_ms)
{
    ms_view_msg_t vmsg;
    switch (env->body) {
    case MS_WIRE_BODY_HEARTBEAT: {
        const ms_wire_heartbeat_t *hb = &env->heartbeat;
        if (hb->incarnation != peer->incarnation) {
            peer->incarnation = hb->incarnation;
            peer->last_hb_seq = 0;
        }
        if (hb->seq <= peer->last_hb_seq && peer->last_hb_seq) {
            self->stats.n_dropped++; // stale or replayed
            return;
        }
        peer->last_hb_seq = hb->seq;
        peer->n_workers = hb->n_workers;
        peer->n_busy = hb->n_busy;
        self->stats.n_heartbeats_in++;
        if (self->handlers.on_heartbeat)
            self->handlers.on_heartbeat(self->handlers.arg, peer->id, env,
                                        now_ms);
        return;
    }
    case MS_WIRE_BODY_WHO_ARE_YOU:
    case MS_WIRE_BODY_I_AM:
        return;
    default:
        break;
    }
    if (s_decode_view(self, env, &vmsg)) {
        ms_view_on_message(self->view, peer->id, &vmsg, now_ms);
        s_view_actions(self, now_ms);
        return;
    }
    if (self->handlers.on_message)
        self->handlers.on_message(self->handlers.arg, peer->id, env);
}

//  --------------------------------------------------------------------------
//  One frame on the ROUTER (IN channels)

static void
s_on_router_frame(ms_mesh_t *self, const uint8_t *rid, size_t rid_bytes,
                  const uint8_t *data, size_t n, const char *peer_address,
                  const char *user_id, int64_t now_ms)
{
    //  CURVE: the connection's key (ZAP User-Id) decides who sent it
    uint8_t link_key[ID_BYTES];
    if (self->secure &&
        (!user_id || !s_unhex(user_id, strlen(user_id), link_key))) {
        self->stats.n_unauthorized++;
        return;
    }
    ms_wire_envelope_t *env = NULL;
    if (ms_wire_decode_envelope(data, n, &env) != MS_OK) {
        self->stats.n_malformed++;
        return;
    }
    s_peer_t *peer = rid_bytes == ID_BYTES ? s_peer_find(self, rid) : NULL;
    if (self->secure && peer && env->body != MS_WIRE_BODY_HELLO &&
        (peer->revoked || memcmp(peer->curve, link_key, ID_BYTES) != 0)) {
        //  another key using this peer's routing id, or a revoked peer
        self->stats.n_unauthorized++;
        ms_wire_envelope_destroy(&env);
        return;
    }
    if (env->body == MS_WIRE_BODY_WHO_ARE_YOU) {
        ms_wire_envelope_t reply = {.protocol = MS_PROTOCOL_VERSION,
                                    .body = MS_WIRE_BODY_I_AM};
        memcpy(reply.i_am.node_id, self->opts.node_id, ID_BYTES);
        uint8_t *buf = NULL;
        size_t nb = 0;
        if (s_encode(&reply, &buf, &nb) == MS_OK)
            s_send_in_id(self, rid, rid_bytes, buf, nb);
        free(buf);
    } else if (env->body == MS_WIRE_BODY_HELLO) {
        const char *why = NULL;
        int reason = -1;
        const uint8_t *key = self->secure ? link_key : NULL;
        if (rid_bytes != ID_BYTES) {
            s_refuse(self, peer, &env->hello, "routing id is not a node id",
                     MS_MEMBERS_REFUSED_KEY_MISMATCH, key);
        } else if (peer && peer->revoked) {
            s_refuse(self, peer, &env->hello, "revoked",
                     MS_MEMBERS_REFUSED_REVOKED, key);
        } else if (!s_hello_ok(self, &env->hello, rid, key, &why, &reason)) {
            //  a refusal must not touch a member's entry: the table is
            //  only told about the link's own key (s_refuse)
            s_refuse(self, peer && self->secure ? NULL : peer, &env->hello, why,
                     reason, key);
        } else {
            if (!peer)
                peer = s_peer_add(self, rid);
            if (peer) {
                if (!peer->is_static && env->hello.endpoint[0]) {
                    //  its --advertise: the address we see may be a NAT's
                    snprintf(peer->endpoint, sizeof peer->endpoint, "%s",
                             env->hello.endpoint);
                } else if (!peer->is_static && peer_address && *peer_address) {
                    char ep[MS_WIRE_ENDPOINT_MAX + 1];
                    s_endpoint(ep, peer_address, env->hello.mesh_port);
                    if (ms_wire_endpoint_valid(ep))
                        snprintf(peer->endpoint, sizeof peer->endpoint, "%s",
                                 ep);
                }
                s_hello_info(peer, &env->hello);
                peer->last_hb_seq = 0;
                peer->in_up = true;
                if (self->secure)
                    ms_zap_allow(self->zap_domain, link_key);
                s_send_hello(self, peer, false, now_ms);
                //  a HELLO on IN while OUT is up: the peer restarted (our
                //  DEALER reconnected without a HELLO) or dialed us too.
                //  The lower id redials at once (fresh HELLO), the higher
                //  keeps the lower's link.
                if (peer->in_up && peer->out_up) {
                    s_peer_close_out(peer);
                    if (s_we_dial(self, peer))
                        s_dial(self, peer, now_ms);
                }
                if (peer->in_up)
                    s_channel_up(self, peer, now_ms);
            }
        }
    } else if (!peer || !peer->in_up) {
        self->stats.n_dropped++;
    } else {
        s_heard(self, peer, now_ms);
        s_dispatch(self, peer, env, now_ms);
    }
    ms_wire_envelope_destroy(&env);
}

//  --------------------------------------------------------------------------
//  An open-pool --peer told us its id: merge with a known entry

static s_peer_t *
s_on_i_am(ms_mesh_t *self, s_peer_t *peer, const uint8_t *id, int64_t now_ms)
{
    if (memcmp(id, self->opts.node_id, ID_BYTES) == 0) {
        s_log(self, "--peer %s is this node; ignored", peer->endpoint);
        s_peer_close_out(peer);
        peer->dial_at = 0;
        peer->is_static = false;
        return NULL;
    }
    s_peer_t *known = s_peer_find(self, id);
    if (known && known != peer) {
        //  hand our DEALER and static-ness to the known entry
        s_peer_close_out(known);
        known->dealer = peer->dealer;
        peer->dealer = NULL;
        known->is_static = true;
        snprintf(known->endpoint, sizeof known->endpoint, "%s", peer->endpoint);
        peer->is_static = false;
        peer->dial_at = 0;
        peer->endpoint[0] = '\0';
        peer = known;
    } else {
        memcpy(peer->id, id, ID_BYTES);
        peer->id_known = true;
        ms_identity_curve_public(id, peer->curve);
    }
    s_send_hello(self, peer, true, now_ms);
    return peer;
}

//  --------------------------------------------------------------------------
//  One frame on a DEALER (OUT channel of peer)

static void
s_on_dealer_frame(ms_mesh_t *self, s_peer_t *peer, const uint8_t *data,
                  size_t n, int64_t now_ms)
{
    ms_wire_envelope_t *env = NULL;
    if (ms_wire_decode_envelope(data, n, &env) != MS_OK) {
        self->stats.n_malformed++;
        return;
    }
    if (env->body == MS_WIRE_BODY_I_AM) {
        if (!peer->id_known)
            s_on_i_am(self, peer, env->i_am.node_id, now_ms);
    } else if (env->body == MS_WIRE_BODY_WHO_ARE_YOU) {
        ms_wire_envelope_t reply = {.protocol = MS_PROTOCOL_VERSION,
                                    .body = MS_WIRE_BODY_I_AM};
        memcpy(reply.i_am.node_id, self->opts.node_id, ID_BYTES);
        s_send_env(self, peer, true, &reply);
    } else if (env->body == MS_WIRE_BODY_HELLO) {
        const char *why = NULL;
        int reason = -1;
        if (!peer->id_known || peer->revoked ||
            !s_hello_ok(self, &env->hello, peer->id, NULL, &why, &reason)) {
            if (peer->revoked) {
                why = "revoked";
                reason = MS_MEMBERS_REFUSED_REVOKED;
            }
            s_refuse(self, peer, &env->hello, why ? why : "HELLO before I_AM",
                     reason, NULL);
            s_peer_close_out(peer);
            if (peer->is_static)
                s_schedule_dial(self, peer, now_ms + self->opts.redial_max_ms);
        } else {
            s_hello_info(peer, &env->hello);
            peer->last_hb_seq = 0;
            peer->out_up = true;
            peer->rtt_ms = now_ms - peer->out_hello_at;
            s_channel_up(self, peer, now_ms);
        }
    } else if (!peer->out_up) {
        self->stats.n_dropped++;
    } else {
        s_heard(self, peer, now_ms);
        s_dispatch(self, peer, env, now_ms);
    }
    ms_wire_envelope_destroy(&env);
}

//  --------------------------------------------------------------------------
//  Read every waiting frame of the ROUTER

static int
s_handle_router(ms_mesh_t *self, int64_t now_ms)
{
    void *sock = zsock_resolve(self->router);
    int count = 0;
    for (int budget = READ_BUDGET; budget > 0; budget--) {
        zmq_msg_t rid, body;
        zmq_msg_init(&rid);
        if (zmq_msg_recv(&rid, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&rid);
            break;
        }
        self->stats.n_frames_in++;
        count++;
        if (!zmq_msg_more(&rid)) { // cannot happen on a ROUTER
            zmq_msg_close(&rid);
            continue;
        }
        zmq_msg_init(&body);
        if (zmq_msg_recv(&body, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&body);
            zmq_msg_close(&rid);
            break;
        }
        bool extra = zmq_msg_more(&body);
        if (extra) {
            //  one frame per message: drain and count the rest
            self->stats.n_malformed++;
            zmq_msg_t more;
            int more_flag = 1;
            while (more_flag) {
                zmq_msg_init(&more);
                if (zmq_msg_recv(&more, sock, ZMQ_DONTWAIT) < 0) {
                    zmq_msg_close(&more);
                    break;
                }
                more_flag = zmq_msg_more(&more);
                zmq_msg_close(&more);
            }
        } else {
            const char *addr = zmq_msg_gets(&body, "Peer-Address");
            const char *user =
                self->secure ? zmq_msg_gets(&body, "User-Id") : NULL;
            s_on_router_frame(self, zmq_msg_data(&rid), zmq_msg_size(&rid),
                              zmq_msg_data(&body), zmq_msg_size(&body), addr,
                              user, now_ms);
        }
        zmq_msg_close(&body);
        zmq_msg_close(&rid);
    }
    return count;
}

//  --------------------------------------------------------------------------
//  Read every waiting frame of one DEALER. The peer table may change
//  under us (I_AM merge), so the dealer is looked up each round.

static int
s_handle_dealer(ms_mesh_t *self, s_peer_t *peer, int64_t now_ms)
{
    int count = 0;
    for (int budget = READ_BUDGET; budget > 0 && peer->dealer; budget--) {
        void *sock = zsock_resolve(peer->dealer);
        zmq_msg_t body;
        zmq_msg_init(&body);
        if (zmq_msg_recv(&body, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&body);
            break;
        }
        self->stats.n_frames_in++;
        count++;
        if (zmq_msg_more(&body)) {
            self->stats.n_malformed++;
            int more_flag = 1;
            while (more_flag) {
                zmq_msg_t more;
                zmq_msg_init(&more);
                if (zmq_msg_recv(&more, sock, ZMQ_DONTWAIT) < 0) {
                    zmq_msg_close(&more);
                    break;
                }
                more_flag = zmq_msg_more(&more);
                zmq_msg_close(&more);
            }
        } else
            s_on_dealer_frame(self, peer, zmq_msg_data(&body),
                              zmq_msg_size(&body), now_ms);
        zmq_msg_close(&body);
    }
    return count;
}

//  --------------------------------------------------------------------------
//  Beacons heard: hints to dial

static int
s_handle_beacons(ms_mesh_t *self, int64_t now_ms)
{
    int count = 0;
    for (int budget = READ_BUDGET; budget > 0; budget--) {
        ms_discovery_hint_t hint;
        int rc = ms_discovery_recv(self->discovery, &hint);
        if (rc == MS_ERR_NOTFOUND)
            break;
        count++;
        if (rc != MS_OK)
            continue;
        if (hint.protocol_max < MS_PROTOCOL_MIN ||
            hint.protocol_min > MS_PROTOCOL_MAX)
            continue; // no version in common: not worth a dial
        self->stats.n_beacons++;
        char ep[MS_WIRE_ENDPOINT_MAX + 1];
        s_endpoint(ep, hint.host, hint.mesh_port);
        s_peer_t *peer = s_peer_find(self, hint.node_id);
        bool fresh = !peer;
        if (peer && s_linked(peer))
            continue;
        peer = s_learn(self, hint.node_id, ep);
        if (!peer)
            continue;
        if (!peer->is_static && ms_wire_endpoint_valid(ep))
            snprintf(peer->endpoint, sizeof peer->endpoint, "%s", ep);
        if (fresh || !ms_view_is_active(self->view, peer->id))
            ms_view_on_discovered(self->view, peer->id, now_ms);
        else if (!peer->dealer && peer->dial_at == 0)
            s_schedule_dial(self, peer,
                            s_we_dial(self, peer)
                                ? now_ms
                                : now_ms + DIAL_GRACE_BEATS *
                                               self->opts.heartbeat_ms);
        s_view_actions(self, now_ms);
    }
    return count;
}

//  --------------------------------------------------------------------------
//  Parse one --peer spec into a new static entry

static int
s_add_static(ms_mesh_t *self, const char *spec, ms_diag_t *diag)
{
    const char *at = strchr(spec, '@');
    const char *endpoint = at ? at + 1 : spec;
    uint8_t id[ID_BYTES];
    if (at && !s_unhex(spec, (size_t) (at - spec), id))
        return ms_diag_set(diag, "--peer",
                           "'%s': NODE_ID must be 64 hex characters", spec);
    if (!ms_wire_endpoint_valid(endpoint))
        return ms_diag_set(diag, "--peer",
                           "'%s': expected [NODE_ID@]tcp://HOST:PORT", spec);
    if (!at && self->secure)
        return ms_diag_set(diag, "--peer",
                           "'%s': a pool with an authority needs the peer's "
                           "node id: NODE_ID@tcp://HOST:PORT (its CURVE key "
                           "is derived from it)",
                           spec);
    if (at && memcmp(id, self->opts.node_id, ID_BYTES) == 0)
        return MS_OK; // ourselves (a shared peer list): nothing to do
    s_peer_t *peer = at ? s_peer_find(self, id) : NULL;
    if (!peer)
        peer = s_peer_add(self, at ? id : NULL);
    if (!peer)
        return MS_ERR_NOMEM;
    peer->is_static = true;
    snprintf(peer->endpoint, sizeof peer->endpoint, "%s", endpoint);
    peer->dial_at = 1; // at the first tick
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Fill the defaults

void
ms_mesh_options_defaults(ms_mesh_options_t *opts)
{
    assert(opts);
    memset(opts, 0, sizeof *opts);
    opts->operator_name = "";
    opts->mesh_bind = "tcp://*:5871";
    opts->beacon = true;
    opts->beacon_port = MS_DEFAULT_BEACON_PORT;
    opts->beacon_interval_ms = MS_DEFAULT_BEACON_INTERVAL_MS;
    opts->heartbeat_ms = MS_DEFAULT_HEARTBEAT_MS;
    opts->redial_min_ms = 250;
    opts->redial_max_ms = 8000;
    opts->hello_timeout_ms = MS_ZAP_HELLO_TIMEOUT_MS;
    opts->deny_ms = MS_ZAP_DENY_MS;
}

//  --------------------------------------------------------------------------
//  Open a mesh

int
ms_mesh_open(ms_mesh_t **out, const ms_mesh_options_t *opts,
             const ms_mesh_handlers_t *handlers, ms_diag_t *diag)
{
    assert(out && opts);
    *out = NULL;
    if (opts->heartbeat_ms <= 0)
        return ms_diag_set(diag, "heartbeat_ms", "must be > 0, not %d",
                           opts->heartbeat_ms);
    if (opts->n_static_peers < 0 ||
        opts->n_static_peers > MS_MESH_MAX_STATIC_PEERS ||
        (opts->n_static_peers > 0 && !opts->static_peers))
        return ms_diag_set(diag, "--peer", "at most %d static peers",
                           MS_MESH_MAX_STATIC_PEERS);
    if (!opts->mesh_bind || !*opts->mesh_bind)
        return ms_diag_set(diag, "mesh_bind", "missing");
    ms_mesh_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    int rc = MS_ERR_NOMEM;
    self->opts = *opts;
    if (handlers)
        self->handlers = *handlers;
    ms_mesh_options_t *o = &self->opts;
    if (o->suspect_after_ms <= 0)
        o->suspect_after_ms = 3 * o->heartbeat_ms;
    if (o->dead_after_ms <= 0)
        o->dead_after_ms = 10 * o->heartbeat_ms;
    if (o->redial_min_ms <= 0)
        o->redial_min_ms = 250;
    if (o->redial_max_ms < o->redial_min_ms)
        o->redial_max_ms = o->redial_min_ms < 8000 ? 8000 : o->redial_min_ms;
    if (o->dead_after_ms <= o->suspect_after_ms) {
        rc = ms_diag_set(diag, "dead_after_ms",
                         "must be above suspect_after_ms (%d), not %d",
                         o->suspect_after_ms, o->dead_after_ms);
        goto fail;
    }
    self->mesh_bind = strdup(opts->mesh_bind);
    self->operator_name =
        strdup(opts->operator_name ? opts->operator_name : "");
    self->advertise_host =
        opts->advertise_host ? strdup(opts->advertise_host) : NULL;
    if (!self->mesh_bind || !self->operator_name ||
        (opts->advertise_host && !self->advertise_host))
        goto fail;
    if (self->advertise_host) {
        char ep[MS_WIRE_ENDPOINT_MAX + 1];
        s_endpoint(ep, self->advertise_host,
                   o->mesh_port > 0 ? (unsigned) o->mesh_port : 1u);
        if (!*self->advertise_host || !ms_wire_endpoint_valid(ep)) {
            rc = ms_diag_set(diag, "advertise",
                             "'%.100s' is not a host name or address",
                             self->advertise_host);
            goto fail;
        }
    }
    o->mesh_bind = self->mesh_bind;
    o->operator_name = self->operator_name;
    o->advertise_host = self->advertise_host;
    o->interface = NULL;
    o->static_peers = NULL;
    o->n_static_peers = 0;
    if (o->hello_timeout_ms <= 0)
        o->hello_timeout_ms = MS_ZAP_HELLO_TIMEOUT_MS;
    if (o->deny_ms <= 0)
        o->deny_ms = MS_ZAP_DENY_MS;
    o->certificate = NULL;
    o->certificate_bytes = 0;
    o->curve_public = o->curve_secret = NULL;
    self->secure = opts->members && ms_members_has_authority(opts->members);
    if (opts->certificate_bytes > 0) {
        rc = ms_mesh_set_certificate(self, opts->certificate,
                                     opts->certificate_bytes);
        if (rc != MS_OK)
            goto fail;
    }
    if (self->secure) {
        if (!opts->curve_public || !opts->curve_secret) {
            rc = ms_diag_set(diag, "curve",
                             "a pool with an authority needs "
                             "the node's CURVE keys");
            goto fail;
        }
        memcpy(self->curve_pk, opts->curve_public, ID_BYTES);
        memcpy(self->curve_sk, opts->curve_secret, ID_BYTES);
        char hex[2 * ID_BYTES + 1];
        s_hex(o->node_id, hex);
        snprintf(self->zap_domain, sizeof self->zap_domain, "ms-%.16s", hex);
        //  DESIGN.md: the ZAP handler runs before any bind
        rc = ms_zap_start(diag);
        if (rc != MS_OK)
            goto fail;
        self->zap_started = true;
    }

    self->router = zsock_new(ZMQ_ROUTER);
    if (!self->router)
        goto fail;
    zsock_set_linger(self->router, 0);
    zsock_set_sndtimeo(self->router, 0);
    zsock_set_sndhwm(self->router, LINK_HWM_FRAMES);
    zsock_set_rcvhwm(self->router, LINK_HWM_FRAMES);
    zsock_set_router_handover(self->router, self->secure ? 0 : 1);
    zsock_set_router_mandatory(self->router, 1);
    if (self->secure) {
        void *raw = zsock_resolve(self->router);
        int one = 1;
        zsock_set_zap_domain(self->router, self->zap_domain);
        zsock_set_heartbeat_ivl(self->router, o->heartbeat_ms);
        zsock_set_heartbeat_timeout(self->router, o->dead_after_ms);
        if (zmq_setsockopt(raw, ZMQ_CURVE_SERVER, &one, sizeof one) ||
            zmq_setsockopt(raw, ZMQ_CURVE_SECRETKEY, self->curve_sk,
                           ID_BYTES)) {
            rc = ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, "mesh",
                                  "cannot make the mesh socket a CURVE "
                                  "server: %s",
                                  zmq_strerror(zmq_errno()));
            goto fail;
        }
    }
    zsock_set_maxmsgsize(self->router, (int) MS_MAX_FRAME_BYTES + 1024);
    if (zsock_bind(self->router, "%s", self->mesh_bind) < 0) {
        rc =
            ms_diag_set_code(diag, MS_ERR_IO, "mesh_bind", "cannot bind %s: %s",
                             self->mesh_bind, zmq_strerror(zmq_errno()));
        goto fail;
    }
    char *last = zsock_last_endpoint(self->router);
    const char *colon = last ? strrchr(last, ':') : NULL;
    self->port = colon ? atoi(colon + 1) : 0;
    zstr_free(&last);
    if (self->port <= 0) {
        rc = ms_diag_set_code(diag, MS_ERR_IO, "mesh_bind",
                              "cannot read the bound port of %s",
                              self->mesh_bind);
        goto fail;
    }
    if (o->mesh_port <= 0)
        o->mesh_port = self->port;

    self->view = ms_view_new(o->node_id, NULL);
    if (!self->view)
        goto fail;
    for (int i = 0; i < opts->n_static_peers; i++) {
        rc = s_add_static(self, opts->static_peers[i], diag);
        if (rc != MS_OK)
            goto fail;
    }
    if (opts->beacon) {
        ms_discovery_options_t d = {.mesh_port = (uint16_t) o->mesh_port,
                                    .beacon_port = opts->beacon_port,
                                    .interface = opts->interface,
                                    .interval_ms = opts->beacon_interval_ms,
                                    .advertise_host = self->advertise_host};
        memcpy(d.pool_id, o->pool_id, ID_BYTES);
        memcpy(d.node_id, o->node_id, ID_BYTES);
        rc = ms_discovery_open(&self->discovery, &d, diag);
        if (rc != MS_OK)
            goto fail;
    }
    const char *host = self->advertise_host;
    if (!host && self->discovery && *ms_discovery_hostname(self->discovery))
        host = ms_discovery_hostname(self->discovery);
    s_endpoint(self->self_endpoint, host ? host : "127.0.0.1",
               (unsigned) o->mesh_port);
    if (!ms_wire_endpoint_valid(self->self_endpoint)) // e.g. host "*"
        s_endpoint(self->self_endpoint, "127.0.0.1", (unsigned) o->mesh_port);
    self->next_heartbeat_at = ms_mesh_now();
    self->rng = (uint64_t) self->next_heartbeat_at * 2654435761u + 1;
    for (int i = 0; i < ID_BYTES; i++)
        self->rng = self->rng * 131 + o->node_id[i];
    if (!self->rng)
        self->rng = 1;
    *out = self;
    return MS_OK;
fail:
    ms_mesh_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Add a static peer after open

int
ms_mesh_add_peer(ms_mesh_t *self, const char *spec, ms_diag_t *diag)
{
    assert(self && spec);
    return s_add_static(self, spec, diag);
}

//  --------------------------------------------------------------------------
//  Close everything and free

void
ms_mesh_destroy(ms_mesh_t **self_p)
{
    assert(self_p);
    ms_mesh_t *self = *self_p;
    if (!self)
        return;
    ms_discovery_destroy(&self->discovery);
    for (int i = 0; i < self->n_peers; i++)
        s_peer_free(&self->peers[i]);
    free(self->peers);
    zsock_destroy(&self->router);
    if (self->zap_started)
        ms_zap_stop();
    free(self->certificate);
    sodium_memzero(self->curve_sk, sizeof self->curve_sk);
    ms_view_destroy(&self->view);
    free(self->mesh_bind);
    free(self->operator_name);
    free(self->advertise_host);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Sockets to poll

int
ms_mesh_poll_items(ms_mesh_t *self, zmq_pollitem_t *items, int max)
{
    assert(self && items);
    int n = 0;
    if (n < max)
        items[n++] =
            (zmq_pollitem_t){zsock_resolve(self->router), 0, ZMQ_POLLIN, 0};
    if (self->discovery)
        n += ms_discovery_poll_items(self->discovery, items + n, max - n);
    for (int i = 0; i < self->n_peers && n < max; i++)
        if (self->peers[i]->dealer)
            items[n++] = (zmq_pollitem_t){zsock_resolve(self->peers[i]->dealer),
                                          0, ZMQ_POLLIN, 0};
    return n;
}

//  --------------------------------------------------------------------------
//  Process what is readable

int
ms_mesh_handle(ms_mesh_t *self, int64_t now_ms)
{
    assert(self);
    int count = s_handle_router(self, now_ms);
    if (self->discovery)
        count += s_handle_beacons(self, now_ms);
    for (int i = 0; i < self->n_peers; i++)
        if (self->peers[i]->dealer)
            count += s_handle_dealer(self, self->peers[i], now_ms);
    s_view_actions(self, now_ms);
    return count;
}

//  --------------------------------------------------------------------------
//  Heartbeats to every linked peer

static void
s_send_heartbeats(ms_mesh_t *self)
{
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_HEARTBEAT;
    env.heartbeat.incarnation = self->opts.incarnation;
    env.heartbeat.seq = ++self->hb_seq;
    env.heartbeat.n_workers =
        (uint32_t) (self->opts.n_workers > 0 ? self->opts.n_workers : 0);
    if (self->handlers.fill_heartbeat)
        self->handlers.fill_heartbeat(self->handlers.arg, &env);
    uint8_t *buf = NULL;
    size_t n = 0;
    if (s_encode(&env, &buf, &n) != MS_OK) {
        s_log(self, "heartbeat does not encode (fill_heartbeat?)");
        return;
    }
    for (int i = 0; i < self->n_peers; i++)
        if (s_linked(self->peers[i]))
            s_send_linked(self, self->peers[i], buf, n);
    free(buf);
}

//  --------------------------------------------------------------------------
//  Admission's timed work (CURVE): keys ZAP let in that sent no valid
//  HELLO in time are denied and counted; members whose certificate
//  expired lose their link.

#define S_ADMISSION_TICK_MS 500 // how often (the 5 s timeout is coarse)
#define S_STALE_MAX 64          // keys logged per tick

static void
s_admission_tick(ms_mesh_t *self, int64_t now_ms)
{
    uint8_t stale[S_STALE_MAX][MS_ZAP_KEY_BYTES];
    size_t n = ms_zap_take_stale(self->zap_domain, self->opts.hello_timeout_ms,
                                 self->opts.deny_ms, stale, S_STALE_MAX);
    self->stats.n_hello_timeouts += n;
    for (size_t i = 0; i < n && i < S_STALE_MAX; i++) {
        if (self->stats.n_hello_timeouts > 16)
            break;
        char hex[2 * ID_BYTES + 1];
        s_hex(stale[i], hex);
        fprintf(stderr,
                "meshsweepd: denied CURVE key %.12s for %d s: no valid "
                "HELLO within %d ms\n",
                hex, self->opts.deny_ms / 1000, self->opts.hello_timeout_ms);
    }
    int64_t now_s = (int64_t) time(NULL);
    for (int i = 0; i < self->n_peers; i++) {
        s_peer_t *peer = self->peers[i];
        if (!s_linked(peer) ||
            ms_members_is_member(self->opts.members, peer->id, now_s))
            continue;
        char hex[2 * ID_BYTES + 1];
        s_hex(peer->id, hex);
        fprintf(stderr,
                "meshsweepd: closing the link to %.12s: no longer a member "
                "(certificate expired or revoked)\n",
                hex);
        self->stats.n_revoked_links++;
        s_peer_down(self, peer, now_ms);
    }
}

//  --------------------------------------------------------------------------
//  Timed work

int
ms_mesh_tick(ms_mesh_t *self, int64_t now_ms)
{
    assert(self);
    //  order: the view first (its sends may schedule dials), heartbeats
    //  (a send may find a link gone), liveness (may tell the view), then
    //  dials, so that nothing is left due at now_ms afterwards
    int n_known = 0;
    for (int i = 0; i < self->n_peers; i++)
        n_known += self->peers[i]->id_known;
    ms_view_set_pool_size(self->view, n_known + 1);
    if (self->discovery)
        ms_discovery_tick(self->discovery, now_ms);
    ms_view_tick(self->view, now_ms);
    s_view_actions(self, now_ms);
    if (now_ms >= self->next_heartbeat_at) {
        s_send_heartbeats(self);
        self->next_heartbeat_at = now_ms + self->opts.heartbeat_ms;
    }
    if (self->secure && now_ms >= self->next_admission_at) {
        s_admission_tick(self, now_ms);
        self->next_admission_at = now_ms + S_ADMISSION_TICK_MS;
    }
    for (int i = 0; i < self->n_peers; i++) {
        s_peer_t *peer = self->peers[i];
        //  liveness by silence (a lost link makes it suspect at once)
        if (peer->last_heard_at && peer->state != MS_PEER_DEAD) {
            int64_t silent = now_ms - peer->last_heard_at;
            if (silent >= self->opts.dead_after_ms) {
                s_log(self, "peer silent %" PRId64 " ms: dead", silent);
                s_peer_down(self, peer, now_ms);
            } else if ((silent >= self->opts.suspect_after_ms ||
                        !s_linked(peer)) &&
                       peer->state == MS_PEER_ALIVE) {
                peer->state = MS_PEER_SUSPECT;
                s_report(self, peer);
            }
        }
    }
    s_view_actions(self, now_ms);
    for (int i = 0; i < self->n_peers; i++) {
        s_peer_t *peer = self->peers[i];
        //  dials and redials (also the lower id linked only by the
        //  higher's dial: it dials, and the higher then drops its own)
        bool need =
            !s_linked(peer) || (peer->id_known && s_we_dial(self, peer) &&
                                !peer->out_up && !peer->dealer);
        if (peer->dial_at && now_ms >= peer->dial_at && need) {
            if (peer->dealer) // the last dial got no answer
                s_unanswered(self, peer, now_ms);
            else if (peer->unanswered_since == 0)
                peer->unanswered_since = now_ms; // a run starts
            s_dial(self, peer, now_ms);
            peer->dial_at = now_ms + peer->backoff_ms;
            peer->backoff_ms = peer->backoff_ms * 2 > self->opts.redial_max_ms
                                   ? self->opts.redial_max_ms
                                   : peer->backoff_ms * 2;
        } else if (peer->dial_at && !need)
            peer->dial_at = 0;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  When tick next has work

int64_t
ms_mesh_next_deadline(ms_mesh_t *self)
{
    assert(self);
    int64_t at = self->next_heartbeat_at;
    for (int i = 0; i < self->n_peers; i++) {
        const s_peer_t *peer = self->peers[i];
        if (peer->dial_at && peer->dial_at < at)
            at = peer->dial_at;
        if (peer->last_heard_at && peer->state != MS_PEER_DEAD) {
            int64_t t = peer->last_heard_at + (peer->state == MS_PEER_ALIVE
                                                   ? self->opts.suspect_after_ms
                                                   : self->opts.dead_after_ms);
            if (peer->state == MS_PEER_ALIVE && !s_linked(peer))
                t = 0; // lost its link: suspect now
            if (t < at)
                at = t;
        }
    }
    int64_t v = ms_view_next_deadline(self->view);
    if (v > 0 && v < at)
        at = v;
    if (self->secure && self->next_admission_at < at)
        at = self->next_admission_at;
    if (self->discovery && ms_discovery_next_deadline(self->discovery) < at)
        at = ms_discovery_next_deadline(self->discovery);
    return at;
}

//  --------------------------------------------------------------------------
//  Send to one linked peer

int
ms_mesh_send(ms_mesh_t *self, const uint8_t to[MS_MESH_ID_BYTES],
             const ms_wire_envelope_t *env)
{
    assert(self && to && env);
    s_peer_t *peer = s_peer_find(self, to);
    if (!peer || !s_linked(peer))
        return MS_ERR_NOTFOUND;
    uint8_t *buf = NULL;
    size_t n = 0;
    int rc = s_encode(env, &buf, &n);
    if (rc != MS_OK)
        return rc;
    rc = s_send_linked(self, peer, buf, n);
    free(buf);
    return rc;
}

//  --------------------------------------------------------------------------
//  Send to the active view

int
ms_mesh_send_active(ms_mesh_t *self, const ms_wire_envelope_t *env)
{
    assert(self && env);
    uint8_t *buf = NULL;
    size_t n = 0;
    int rc = s_encode(env, &buf, &n);
    if (rc != MS_OK)
        return rc;
    int count = 0;
    for (int i = 0; i < self->n_peers; i++) {
        s_peer_t *peer = self->peers[i];
        if (s_linked(peer) && ms_view_is_active(self->view, peer->id) &&
            s_send_linked(self, peer, buf, n) == MS_OK)
            count++;
    }
    free(buf);
    return count;
}

//  --------------------------------------------------------------------------
//  A random linked, alive peer

int
ms_mesh_random_peer(ms_mesh_t *self, uint8_t out[MS_MESH_ID_BYTES])
{
    assert(self && out);
    int n = 0;
    for (int i = 0; i < self->n_peers; i++)
        if (s_linked(self->peers[i]) && self->peers[i]->state == MS_PEER_ALIVE)
            n++;
    if (n == 0)
        return MS_ERR_NOTFOUND;
    self->rng ^= self->rng << 13;
    self->rng ^= self->rng >> 7;
    self->rng ^= self->rng << 17;
    int pick = (int) (self->rng % (uint64_t) n);
    for (int i = 0; i < self->n_peers; i++)
        if (s_linked(self->peers[i]) &&
            self->peers[i]->state == MS_PEER_ALIVE && pick-- == 0) {
            memcpy(out, self->peers[i]->id, ID_BYTES);
            return MS_OK;
        }
    return MS_ERR_NOTFOUND;
}

//  --------------------------------------------------------------------------
//  State of one peer

ms_peer_state_t
ms_mesh_peer_state(ms_mesh_t *self, const uint8_t id[MS_MESH_ID_BYTES],
                   bool *linked)
{
    assert(self && id);
    s_peer_t *peer = s_peer_find(self, id);
    if (linked)
        *linked = peer && s_linked(peer);
    return peer ? peer->state : MS_PEER_DEAD;
}

//  --------------------------------------------------------------------------
//  Linked, alive peers

int
ms_mesh_n_alive(ms_mesh_t *self)
{
    assert(self);
    int n = 0;
    for (int i = 0; i < self->n_peers; i++)
        if (s_linked(self->peers[i]) && self->peers[i]->state == MS_PEER_ALIVE)
            n++;
    return n;
}

//  --------------------------------------------------------------------------
//  Peer table as JSON

json_t *
ms_mesh_peers_json(ms_mesh_t *self)
{
    assert(self);
    static const char *names[] = {"alive", "suspect", "dead"};
    json_t *list = json_array();
    if (!list)
        return NULL;
    int64_t now_ms = ms_mesh_now();
    for (int i = 0; i < self->n_peers; i++) {
        const s_peer_t *peer = self->peers[i];
        if (!peer->id_known)
            continue;
        char hex[2 * ID_BYTES + 1];
        s_hex(peer->id, hex);
        const char *direction = peer->out_up  ? "out"
                                : peer->in_up ? "in"
                                              : "none";
        json_t *o = json_pack(
            "{s:s, s:s, s:b, s:s, s:o, s:I, s:s, s:i, s:i, s:i, s:o, s:b, "
            "s:s, s:b}",
            "node_id", hex, "state", names[peer->state], "linked",
            s_linked(peer), "endpoint", peer->endpoint, "last_heard_ms_ago",
            peer->last_heard_at ? json_integer(now_ms - peer->last_heard_at)
                                : json_null(),
            "incarnation", (json_int_t) peer->incarnation, "operator",
            peer->operator_name, "n_workers", (int) peer->n_workers, "n_busy",
            (int) peer->n_busy, "protocol", (int) peer->protocol, "rtt_ms",
            peer->rtt_ms >= 0 ? json_integer(peer->rtt_ms) : json_null(),
            "static", peer->is_static, "direction", direction, "active",
            ms_view_is_active(self->view, peer->id));
        if (!o || json_array_append_new(list, o) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

//  --------------------------------------------------------------------------
//  Counters

void
ms_mesh_stats(ms_mesh_t *self, ms_mesh_stats_t *out)
{
    assert(self && out);
    *out = self->stats;
}

//  --------------------------------------------------------------------------
//  Bound port

int
ms_mesh_port(ms_mesh_t *self)
{
    assert(self);
    return self->port;
}

//  --------------------------------------------------------------------------
//  Revoke a peer

int
ms_mesh_revoke(ms_mesh_t *self, const uint8_t id[MS_MESH_ID_BYTES],
               const ms_members_cut_t *cut)
{
    assert(self && id);
    uint8_t curve[ID_BYTES];
    if (ms_identity_curve_public(id, curve) != MS_OK)
        return MS_ERR_INVALID;
    if (self->opts.members) {
        int rc = ms_members_revoke(self->opts.members, id, cut);
        if (rc != MS_OK)
            return rc;
    }
    if (self->secure)
        ms_zap_revoke(self->zap_domain, curve);
    s_peer_t *peer = s_peer_find(self, id);
    if (!peer)
        return MS_OK;
    bool was_linked = s_linked(peer);
    peer->revoked = true;
    peer->is_static = false;
    s_peer_clear_queue(peer);
    if (was_linked)
        self->stats.n_revoked_links++;
    s_peer_down(self, peer, ms_mesh_now());
    peer->dial_at = 0;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Replace our certificate

int
ms_mesh_set_certificate(ms_mesh_t *self, const uint8_t *cert, size_t n)
{
    assert(self && (cert || n == 0));
    uint8_t *copy = NULL;
    if (n > 0) {
        copy = malloc(n);
        if (!copy)
            return MS_ERR_NOMEM;
        memcpy(copy, cert, n);
    }
    free(self->certificate);
    self->certificate = copy;
    self->certificate_bytes = n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  CURVE links?

bool
ms_mesh_secure(ms_mesh_t *self)
{
    assert(self);
    return self->secure;
}
