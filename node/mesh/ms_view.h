/*  =========================================================================
    ms_view - membership views as pure logic: full mesh up to 16 members,
    HyParView (active + passive views) beyond

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    No sockets and no clock of its own: the caller feeds events (a peer
    discovered, a link up or down, a view message, the time) and then
    drains the actions the view wants done (send a message to X, open a
    link to X, close the link to X). ms_mesh executes them over ZeroMQ; the
    gossip simulation (tools/bench/sim_gossip) over a simulated network.

        ms_view_t *view = ms_view_new(my_id, NULL);
        ms_view_on_discovered(view, peer_id, now_ms);
        ms_view_action_t act;
        while (ms_view_next_action(view, &act)) {
            switch (act.kind) {
            case MS_VIEW_ACTION_SEND:   send act.msg to act.peer; break;
            case MS_VIEW_ACTION_LINK:   keep / open a link to act.peer; break;
            case MS_VIEW_ACTION_UNLINK: close the link to act.peer; break;
            }
        }

    Follows Leitao, Pereira, Rodrigues, "HyParView: a membership protocol
    for reliable gossip-based broadcast" (DSN 2007), with ARWL 6, PRWL 3.
    Threads: one view belongs to one thread.
*/
#ifndef MS_VIEW_H
#define MS_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_err.h"

typedef struct ms_view ms_view_t;

#define MS_VIEW_ID_BYTES 32      // node ids
#define MS_VIEW_FULL_MESH_MAX 16 // pools up to this size: everyone links all
#define MS_VIEW_ACTIVE_MAX 24    // bound on the active view in HyParView mode
#define MS_VIEW_PASSIVE_FACTOR 6 // passive view size = 6 x active size
#define MS_VIEW_ARWL 6           // active random walk length (JOIN)
#define MS_VIEW_PRWL 3           // passive random walk length
#define MS_VIEW_SHUFFLE_KA 3     // active ids in a SHUFFLE
#define MS_VIEW_SHUFFLE_KP 4     // passive ids in a SHUFFLE
#define MS_VIEW_MSG_MAX_IDS                                                    \
    16                        // >= 1 + KA + KP (SHUFFLE), and >= the
                              // other members of a full mesh
#define MS_VIEW_ACTIVE_CAP 32 // storage bound of the active view

typedef enum {
    MS_VIEW_MSG_JOIN = 1,     // a new node asks the contact to let it in
    MS_VIEW_MSG_FORWARD_JOIN, // random walk announcing subject (ttl)
    MS_VIEW_MSG_NEIGHBOR,     // ask (or accept, reply=true) an active link
    MS_VIEW_MSG_DISCONNECT,   // leave the active view (or refuse NEIGHBOR)
    MS_VIEW_MSG_SHUFFLE,      // random walk of ids from subject (ttl)
    MS_VIEW_MSG_SHUFFLE_REPLY // ids sent back to the shuffle's origin
} ms_view_msg_kind_t;

//  A view message (the mesh maps it to and from the wire envelope).
typedef struct {
    ms_view_msg_kind_t kind;
    uint8_t subject[MS_VIEW_ID_BYTES]; // FORWARD_JOIN: the new node;
                                       // SHUFFLE: the origin
    int ttl;                           // FORWARD_JOIN, SHUFFLE: hops left
    bool high_priority;                // NEIGHBOR: sender's active view is
                                       // empty (must be accepted)
    bool reply;                        // NEIGHBOR: acceptance of a request
    int n_ids;                         // SHUFFLE / SHUFFLE_REPLY ids
    uint8_t ids[MS_VIEW_MSG_MAX_IDS][MS_VIEW_ID_BYTES];
} ms_view_msg_t;

typedef enum {
    MS_VIEW_ACTION_SEND = 1, // send msg to peer (opening a link if needed)
    MS_VIEW_ACTION_LINK,     // peer joined the active view: keep a link
    MS_VIEW_ACTION_UNLINK    // peer left the active view: link may close
} ms_view_action_kind_t;

typedef struct {
    ms_view_action_kind_t kind;
    uint8_t peer[MS_VIEW_ID_BYTES];
    ms_view_msg_t msg; // MS_VIEW_ACTION_SEND only
} ms_view_action_t;

typedef struct {
    int shuffle_ms;          // period of SHUFFLE rounds (10000)
    int neighbor_timeout_ms; // a NEIGHBOR request unanswered this long is
                             // dropped and the peer forgotten (2000)
    uint64_t seed;           // random choices (mixed with the node id)
} ms_view_options_t;

//  Fill opts with the defaults above (seed 0).
void ms_view_options_defaults(ms_view_options_t *opts);

//  New view for node self_id (copied). opts may be NULL (defaults).
//  Caller owns the result; free it with ms_view_destroy(). NULL only when
//  memory runs out.
ms_view_t *ms_view_new(const uint8_t self_id[MS_VIEW_ID_BYTES],
                       const ms_view_options_t *opts);

//  Free the view. NULL-safe; sets *self_p to NULL.
void ms_view_destroy(ms_view_t **self_p);

//  Tell the view how many members the pool has (beacons, peer table);
//  0 = estimate from the view itself (active + passive + 1). Pools of up
//  to MS_VIEW_FULL_MESH_MAX members are a full mesh; beyond, the active
//  view holds 8 + ceil(log2 N) peers, at most MS_VIEW_ACTIVE_MAX.
void ms_view_set_pool_size(ms_view_t *self, int n_members);

//  The active view size in force now (full mesh: MS_VIEW_ACTIVE_CAP).
int ms_view_active_max(ms_view_t *self);

//  A peer became known (beacon, static peer, HELLO). Full mesh: it joins
//  the active view (LINK + NEIGHBOR). HyParView: it goes to the passive
//  view, and when our active view is empty we JOIN through it.
void ms_view_on_discovered(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES],
                           int64_t now_ms);

//  A link to id came up (both HELLOs passed). Full mesh: as discovered.
void ms_view_on_link_up(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES],
                        int64_t now_ms);

//  The link to id failed (peer dead, connection refused). id leaves both
//  views; an empty slot is refilled from the passive view.
void ms_view_on_link_down(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES],
                          int64_t now_ms);

//  A view message from a peer. msg is borrowed. Returns MS_OK or
//  MS_ERR_PROTOCOL (unknown kind, n_ids out of range: ignored).
int ms_view_on_message(ms_view_t *self, const uint8_t from[MS_VIEW_ID_BYTES],
                       const ms_view_msg_t *msg, int64_t now_ms);

//  Timed work: SHUFFLE rounds, refill of the active view from the passive
//  view, trimming an active view above its size, request time-outs.
void ms_view_tick(ms_view_t *self, int64_t now_ms);

//  When ms_view_tick next has work (monotonic ms).
int64_t ms_view_next_deadline(ms_view_t *self);

//  Pop the oldest pending action into *out. Returns false when none.
bool ms_view_next_action(ms_view_t *self, ms_view_action_t *out);

//  Whether id is in the active view.
bool ms_view_is_active(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES]);

//  Whether id is in the passive view.
bool ms_view_is_passive(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES]);

//  Sizes of the two views.
int ms_view_n_active(ms_view_t *self);
int ms_view_n_passive(ms_view_t *self);

//  The i-th member of the active view (0 <= i < n_active); borrowed, valid
//  until the next call that changes the view.
const uint8_t *ms_view_active(ms_view_t *self, int i);

#endif
