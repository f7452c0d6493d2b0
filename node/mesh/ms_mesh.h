/*  =========================================================================
    ms_mesh - links between pool members: HELLO, heartbeats, failure
    detection, one TCP connection per pair, membership views

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Implements DESIGN.md "The pool" / "Discovery and links" and items 1-2 of
    the pool issue. The mesh owns one ROUTER bound on mesh_bind, one DEALER
    per peer it dials, the beacon (ms_discovery, optional) and the
    membership view (ms_view). It has no thread of its own: the node loop
    polls the mesh's sockets together with its own (ms_mesh_poll_items),
    calls ms_mesh_handle when one is readable and ms_mesh_tick when
    ms_mesh_next_deadline passes.

        ms_mesh_options_t opts;
        ms_mesh_options_defaults(&opts);
        memcpy(opts.node_id, my_id, 32); memcpy(opts.pool_id, pool, 32);
        opts.mesh_bind = "tcp://0.0.0.0:5871";
        ms_mesh_handlers_t h = { .arg = node, .on_message = s_on_message };
        ms_mesh_t *mesh;
        if (ms_mesh_open(&mesh, &opts, &h, &diag) != MS_OK) ...
        while (running) {
            zmq_pollitem_t items[MS_MESH_MAX_POLL_ITEMS + mine];
            int n = ms_mesh_poll_items(mesh, items, MS_MESH_MAX_POLL_ITEMS);
            ... add own items, zmq_poll(items, n + mine, timeout) where
                timeout = ms_mesh_next_deadline(mesh) - ms_mesh_now() ...
            ms_mesh_handle(mesh, ms_mesh_now());
            ms_mesh_tick(mesh, ms_mesh_now());
        }
        ms_mesh_destroy(&mesh);

    Link rule: the peer with the LOWER node id dials (DEALER, routing id =
    its 32-byte node id) the higher one's ROUTER. A static --peer is dialed
    whatever the order; when both directions end up open, the one the lower
    id dialed is kept and the other closed. HELLO goes first both ways
    (pool id must match, protocol ranges must overlap); until both HELLOs
    passed nothing else is sent and other frames from that peer are
    dropped. Malformed frames are dropped and counted, never fatal.

    Liveness: a peer is ALIVE while one of its own frames was heard within
    suspect_after_ms, SUSPECT until dead_after_ms (at once when its link
    is lost), then DEAD; any frame of its own makes it ALIVE again. Nothing a
   third party says makes a peer dead. Time is the local monotonic clock
   (ms_mesh_now; replaceable).

    Threads: every call belongs to the thread that opened the mesh (the
    node loop). Handlers are called from inside ms_mesh_handle/_tick.
*/
#ifndef MS_MESH_H
#define MS_MESH_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <zmq.h>

#include "ms_err.h"
#include "ms_members.h"
#include "ms_wire.h"

typedef struct ms_mesh ms_mesh_t;

#define MS_MESH_ID_BYTES 32         // node and pool ids
#define MS_MESH_MAX_POLL_ITEMS 256  // ROUTER + beacon + DEALERs, at most
#define MS_DEFAULT_MESH_PORT 5871   // DESIGN.md "Defaults"
#define MS_DEFAULT_BEACON_PORT 5870 // DESIGN.md "Defaults"
#define MS_DEFAULT_BEACON_INTERVAL_MS 1000
#define MS_DEFAULT_HEARTBEAT_MS 1000
#define MS_MESH_MAX_STATIC_PEERS 64

typedef enum {
    MS_PEER_ALIVE,   // one of its own frames heard within suspect_after_ms
    MS_PEER_SUSPECT, // silent for suspect_after_ms, or its link was lost
    MS_PEER_DEAD     // silent for dead_after_ms (or never linked)
} ms_peer_state_t;

typedef struct {
    uint8_t node_id[MS_MESH_ID_BYTES]; // our node id (Ed25519 public key)
    uint8_t pool_id[MS_MESH_ID_BYTES]; // pool id; peers must match
    uint64_t incarnation;              // our store incarnation (in HELLO)
    int n_workers;                     // our worker count (in HELLO)
    const char *operator_name;         // in HELLO; NULL = ""
    const char *mesh_bind;             // "tcp://*:5871"; port 0 or "*"
                                       // port = ephemeral (see
                                       // ms_mesh_port)
    int mesh_port;                     // advertised in beacon and HELLO;
                                       // 0 = the port actually bound
    const char *advertise_host;        // --advertise: our host in
                                       // beacons, in HELLO (endpoint,
                                       // with mesh_port) and in view
                                       // messages; peers dial it rather
                                       // than the address they see (NAT).
                                       // NULL = none: view messages name
                                       // the beacon's interface address,
                                       // else 127.0.0.1, and peers use
                                       // the address they see
    bool beacon;                       // false = --no-beacon
    int beacon_port;                   // UDP port (5870)
    const char *interface;             // NULL = every usable interface,
                                       // "*" = zbeacon's wildcard, or
                                       // "NAME[,NAME...]" (ms_discovery)
    int beacon_interval_ms;            // 1000
    const char *const *static_peers;   // "[NODE_ID_HEX@]tcp://HOST:PORT"
    int n_static_peers;                // entries in static_peers
    int heartbeat_ms;                  // 1000
    int suspect_after_ms;              // 0 = 3 x heartbeat_ms
    int dead_after_ms;                 // 0 = 10 x heartbeat_ms (lease TTL)
    int redial_min_ms;                 // first redial backoff (0 = 250)
    int redial_max_ms;                 // backoff cap (0 = 8000)
    bool verbose;                      // log refusals etc. to stderr
    // Admission (DESIGN.md "Identity, pools and admission"). members
    // NULL: no admission table (HELLO checks pool and protocol only).
    // With a table that has an authority the links are CURVE: the ROUTER
    // a CURVE server behind the process's ZAP handler (ms_zap), each
    // DEALER a CURVE client whose server key is derived from the peer's
    // node id (so a static peer needs NODE_ID@), and HELLOs carry and
    // check certificate chains. An open pool's table admits every valid
    // HELLO (links stay plaintext: anybody may join an open pool).
    ms_members_t *members;       // borrowed: the node's table, or NULL
    const uint8_t *certificate;  // our encoded chain (ms_cert_chain_
                                 // encode), sent in HELLO; copied
    size_t certificate_bytes;    // its length (0: none)
    const uint8_t *curve_public; // our CURVE key pair (32 bytes each,
    const uint8_t *curve_secret; // ms_identity_curve_keys); copied;
                                 // needed with an authority
    int hello_timeout_ms;        // a let-in key must pass HELLO (5000)
    int deny_ms;                 // then it is denied this long (60000)
} ms_mesh_options_t;

typedef struct {
    void *arg; // passed back to every handler
    //  A peer changed state or link (linked = both HELLOs passed and the
    //  link is up). Called on every change, after the table is updated.
    void (*on_peer)(void *arg, const uint8_t id[MS_MESH_ID_BYTES],
                    ms_peer_state_t state, bool linked);
    //  Every envelope that is not mesh business (gossip, blobs, ...) from
    //  a linked peer. env is borrowed for the call.
    void (*on_message)(void *arg, const uint8_t from[MS_MESH_ID_BYTES],
                       const ms_wire_envelope_t *env);
    //  A heartbeat heard from a linked peer (claims are for the lease
    //  table); now_ms is our monotonic clock at arrival.
    void (*on_heartbeat)(void *arg, const uint8_t from[MS_MESH_ID_BYTES],
                         const ms_wire_envelope_t *hb, int64_t now_ms);
    //  Fill in the node's part of an outgoing heartbeat (live claims,
    //  n_busy). The mesh has set the kind and its own fields.
    void (*fill_heartbeat)(void *arg, ms_wire_envelope_t *hb);
} ms_mesh_handlers_t;

//  Counters for /metrics and tests.
typedef struct {
    uint64_t n_frames_in;     // frames received (all sockets)
    uint64_t n_frames_out;    // frames sent
    uint64_t n_malformed;     // frames that did not decode (dropped)
    uint64_t n_rejected;      // HELLOs refused (pool id, protocol, id)
    uint64_t n_dropped;       // well-formed frames dropped (before HELLO,
                              // unknown routing id, not linked)
    uint64_t n_beacons;       // beacons of our pool heard (not our own)
    uint64_t n_heartbeats_in; // heartbeats received
    uint64_t n_dials;         // DEALER connects made (incl. redials)
    // admission (with a members table)
    uint64_t n_admission_refused;                 // all reasons
    uint64_t n_refused[MS_MEMBERS_REFUSED_KINDS]; // per reason
    uint64_t n_hello_timeouts; // keys let in without a valid HELLO in
                               // hello_timeout_ms (then denied)
    uint64_t n_unauthorized;   // frames dropped: User-Id not the link's
                               // key, or the sender no longer a member
    uint64_t n_revoked_links;  // links closed by a revocation or expiry
} ms_mesh_stats_t;

//  Fill opts with defaults: zero ids, incarnation 0, n_workers 0,
//  operator "", mesh_bind "tcp://*:5871", mesh_port 0, beacon true,
//  beacon_port 5870, interface NULL, beacon_interval_ms 1000, no static
//  peers, heartbeat_ms 1000, suspect/dead 0 (derived), redial 250..8000,
//  no members table, no certificate, hello_timeout_ms 5000, deny_ms
//  60000.
void ms_mesh_options_defaults(ms_mesh_options_t *opts);

//  Open a mesh: bind the ROUTER, start the beacon (when opts->beacon),
//  parse and dial the static peers. opts is copied (strings too);
//  handlers is copied (may be NULL: no callbacks). Caller owns *out; free
//  it with ms_mesh_destroy(). Returns MS_OK; MS_ERR_INVALID (a static peer
//  spec, a zero heartbeat or dead < suspect: diag names the option);
//  MS_ERR_IO (bind failed or beacon could not start: diag says where);
//  MS_ERR_UNSUPPORTED (an authority, and libzmq has no CURVE: diag);
//  MS_ERR_NOMEM. *out is NULL on failure. With an authority, a static
//  peer without NODE_ID@ or missing CURVE keys is MS_ERR_INVALID.
int ms_mesh_open(ms_mesh_t **out, const ms_mesh_options_t *opts,
                 const ms_mesh_handlers_t *handlers, ms_diag_t *diag);

//  Add a static peer after open (as one --peer: "[NODE_ID_HEX@]tcp://
//  HOST:PORT"); it is dialed at the next tick. Our own id is ignored; a
//  peer already known becomes static. Returns MS_OK; MS_ERR_INVALID (bad
//  spec: diag says why); MS_ERR_NOMEM.
int ms_mesh_add_peer(ms_mesh_t *self, const char *spec, ms_diag_t *diag);

//  Revoke a peer: our link to it is closed, its key denied at ZAP for
//  good, its later frames and HELLOs dropped, and it is never dialed
//  again (the members table marks it revoked with cut, NULL = all).
//  Returns MS_OK; MS_ERR_INVALID (not a valid node id); MS_ERR_NOMEM.
int ms_mesh_revoke(ms_mesh_t *self, const uint8_t id[MS_MESH_ID_BYTES],
                   const ms_members_cut_t *cut);

//  Replace the certificate our HELLOs carry (a renewed certificate of the
//  same pool; SIGHUP). cert is copied. Links up now keep going; new
//  HELLOs carry the new chain. Returns MS_OK or MS_ERR_NOMEM.
int ms_mesh_set_certificate(ms_mesh_t *self, const uint8_t *cert, size_t n);

//  Whether the mesh runs CURVE links (the pool has an authority).
bool ms_mesh_secure(ms_mesh_t *self);

//  Close every socket, stop the beacon, free the mesh. NULL-safe; sets
//  *self_p to NULL. Peers see us go silent (no goodbye is needed).
void ms_mesh_destroy(ms_mesh_t **self_p);

//  Fill items[0..max) with the sockets the mesh wants polled for
//  ZMQ_POLLIN (ROUTER, beacon, each DEALER). Returns how many were filled.
//  The set changes after handle/tick: call it again before each poll.
int ms_mesh_poll_items(ms_mesh_t *self, zmq_pollitem_t *items, int max);

//  Read and process everything readable now on every mesh socket (no
//  wait). Frames from peers that fail to decode are counted and dropped.
//  Returns the number of frames processed (>= 0).
int ms_mesh_handle(ms_mesh_t *self, int64_t now_ms);

//  Timed work: heartbeats, alive/suspect/dead transitions, redials with
//  backoff, view maintenance (shuffle, refill). Cheap when nothing is due.
//  Returns MS_OK.
int ms_mesh_tick(ms_mesh_t *self, int64_t now_ms);

//  The monotonic time (ms) at which ms_mesh_tick next has work to do.
int64_t ms_mesh_next_deadline(ms_mesh_t *self);

//  Send env to one linked peer. env is borrowed. Returns MS_OK;
//  MS_ERR_NOTFOUND (unknown or not linked peer); MS_ERR_IO (would block
//  or the socket failed; the frame is dropped); MS_ERR_INVALID (env does
//  not encode).
int ms_mesh_send(ms_mesh_t *self, const uint8_t to[MS_MESH_ID_BYTES],
                 const ms_wire_envelope_t *env);

//  Send env to every linked peer of the active view (all linked peers in
//  full-mesh mode). Returns the number of peers it went to (>= 0), or
//  MS_ERR_INVALID when env does not encode.
int ms_mesh_send_active(ms_mesh_t *self, const ms_wire_envelope_t *env);

//  Pick a random linked ALIVE peer into out (for anti-entropy rounds).
//  Returns MS_OK or MS_ERR_NOTFOUND (none).
int ms_mesh_random_peer(ms_mesh_t *self, uint8_t out[MS_MESH_ID_BYTES]);

//  State of a peer (MS_PEER_DEAD when unknown); *linked (may be NULL)
//  tells whether both HELLOs passed and the link is up.
ms_peer_state_t ms_mesh_peer_state(ms_mesh_t *self,
                                   const uint8_t id[MS_MESH_ID_BYTES],
                                   bool *linked);

//  Number of linked peers that are ALIVE.
int ms_mesh_n_alive(ms_mesh_t *self);

//  The peer table as JSON for GET /api/v1/peers and `meshsweep peers`:
//  [{"node_id","state":"alive|suspect|dead","linked","endpoint",
//    "last_heard_ms_ago","incarnation","operator","n_workers","n_busy",
//    "protocol","rtt_ms","static"}]. Caller owns the result (json_decref).
//  NULL only when memory runs out.
json_t *ms_mesh_peers_json(ms_mesh_t *self);

//  Counters (copied into *out).
void ms_mesh_stats(ms_mesh_t *self, ms_mesh_stats_t *out);

//  The TCP port the ROUTER is bound to (the real one with port 0).
int ms_mesh_port(ms_mesh_t *self);

//  The monotonic clock the mesh uses (zclock_mono() unless replaced).
int64_t ms_mesh_now(void);

//  Replace the clock (tests); NULL restores zclock_mono(). Process-wide;
//  set it before opening meshes.
void ms_mesh_set_clock(int64_t (*clock_fn)(void));

#endif
