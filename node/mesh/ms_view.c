/*  =========================================================================
    ms_view - membership views as pure logic: full mesh up to 16 members,
    HyParView (active + passive views) beyond

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Discovery and links": pools up to 16 nodes are a full mesh;
    larger pools keep an active view of about 8 + log2(N) peers and a
    passive view, HyParView-style (Leitao, Pereira, Rodrigues, DSN 2007).

    Full mesh. While the pool has at most MS_VIEW_FULL_MESH_MAX members,
    every discovered peer joins the active view: the view asks for a link
    (LINK) and sends JOIN; the peer takes us in and answers with the list
    of its other members (a SHUFFLE_REPLY), each of which we then discover
    and JOIN in turn. So one static --peer is enough to meet the whole
    pool, at one reply per JOIN. The passive view stays empty. This is
    what a lab pool sees.

    HyParView. The active view is small and symmetric (if A holds B, B
    holds A): it is what gossip pushes to. The passive view is a larger
    random sample of the pool kept fresh by SHUFFLE random walks, and is
    the reserve from which failed active links are replaced.
    - A new node JOINs through a contact: the contact adds it to its active
      view and starts a FORWARD_JOIN random walk (ttl ARWL = 6) through
      each of its other active peers. A node on the walk adds the new node
      to its active view when ttl reaches 0 or it has no one else to walk
      to (and tells the new node with NEIGHBOR reply), and to its passive
      view when ttl = PRWL = 3.
    - Adding to a full active view drops a random member, which gets
      DISCONNECT and moves to the passive view.
    - A failed link (ms_view_on_link_down) removes the peer from both
      views; the slot is refilled by NEIGHBOR requests to random passive
      peers: high priority when the active view is empty (must be
      accepted), low otherwise (accepted only with room; refused with
      DISCONNECT). An unanswered request times out and that peer is
      forgotten.
    - Every shuffle_ms a node sends SHUFFLE (itself, 3 active and 4
      passive ids) on a random walk (ttl ARWL); the node where it stops
      answers SHUFFLE_REPLY with as many of its passive ids, and both merge
      what they got into their passive views (evicting random entries).

    Not done, on purpose: the paper's priority to evict the ids one just
    sent in a shuffle (random eviction is simpler and was as good in the
    simulation); SWIM-style indirect probes (the mesh's heartbeats decide
    link failure). The pool size in force is given by the caller (the mesh
    counts beacons and its peer table); without it the view estimates it
    as active + passive + 1, which is a lower bound.

    Actions are queued in order and drained by the caller; the view never
    calls out, so one view can be tested (and simulated by the thousand)
    without sockets.
*/
#include "ms_view.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define ID_BYTES MS_VIEW_ID_BYTES
#define PASSIVE_CAP (MS_VIEW_ACTIVE_MAX * MS_VIEW_PASSIVE_FACTOR)
#define PENDING_CAP 8

typedef struct {
    uint8_t id[ID_BYTES]; // peer asked with NEIGHBOR
    int64_t sent_at;      // when (monotonic ms)
} s_pending_t;

struct ms_view {
    uint8_t self_id[ID_BYTES]; // our node id
    ms_view_options_t opts;    // copied options
    uint64_t rng;              // splitmix64 state
    int pool_size;             // given pool size (0 = estimate)
    uint8_t active[MS_VIEW_ACTIVE_CAP][ID_BYTES]; // active view
    int n_active;                                 // entries in active
    uint8_t passive[PASSIVE_CAP][ID_BYTES];       // passive view
    int n_passive;                                // entries in passive
    s_pending_t pending[PENDING_CAP];             // NEIGHBOR requests in flight
    int n_pending;                                // entries in pending
    int64_t next_shuffle_at;   // next SHUFFLE round (0 = unset)
    int64_t next_refill_at;    // next refill attempt
    ms_view_action_t *actions; // queue (ring not needed: head
    int n_actions;             //  index + compaction)
    int actions_head;          // first unread action
    int actions_cap;           // allocated entries
};

//  --------------------------------------------------------------------------
//  splitmix64: small, good enough for random peer choices

static uint64_t
s_rand(ms_view_t *self)
{
    uint64_t z = (self->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

//  --------------------------------------------------------------------------
//  Uniform integer in [0, n)

static int
s_rand_below(ms_view_t *self, int n)
{
    assert(n > 0);
    return (int) (s_rand(self) % (uint64_t) n);
}

//  --------------------------------------------------------------------------
//  Index of id in a list of ids, or -1

static int
s_find(uint8_t (*list)[ID_BYTES], int n, const uint8_t *id)
{
    for (int i = 0; i < n; i++)
        if (memcmp(list[i], id, ID_BYTES) == 0)
            return i;
    return -1;
}

//  --------------------------------------------------------------------------
//  Remove entry i of a list by moving the last one into its place

static void
s_remove_at(uint8_t (*list)[ID_BYTES], int *n, int i)
{
    assert(i >= 0 && i < *n);
    if (i != *n - 1)
        memcpy(list[i], list[*n - 1], ID_BYTES);
    (*n)--;
}

//  --------------------------------------------------------------------------
//  Append an action to the queue (dropped only if memory runs out)

static ms_view_action_t *
s_push_action(ms_view_t *self, ms_view_action_kind_t kind, const uint8_t *peer)
{
    if (self->actions_head > 0 && self->actions_head == self->n_actions) {
        self->actions_head = 0;
        self->n_actions = 0;
    }
    if (self->n_actions == self->actions_cap) {
        int cap = self->actions_cap ? self->actions_cap * 2 : 16;
        ms_view_action_t *grown =
            realloc(self->actions, (size_t) cap * sizeof *grown);
        if (!grown)
            return NULL;
        self->actions = grown;
        self->actions_cap = cap;
    }
    ms_view_action_t *act = &self->actions[self->n_actions++];
    memset(act, 0, sizeof *act);
    act->kind = kind;
    memcpy(act->peer, peer, ID_BYTES);
    return act;
}

//  --------------------------------------------------------------------------
//  Queue a message to peer; returns the message to fill (or NULL)

static ms_view_msg_t *
s_send(ms_view_t *self, const uint8_t *peer, ms_view_msg_kind_t kind)
{
    ms_view_action_t *act = s_push_action(self, MS_VIEW_ACTION_SEND, peer);
    if (!act)
        return NULL;
    act->msg.kind = kind;
    return &act->msg;
}

//  --------------------------------------------------------------------------
//  Pool size in force: the given one, else the view's own estimate

static int
s_pool_size(ms_view_t *self)
{
    if (self->pool_size > 0)
        return self->pool_size;
    return self->n_active + self->n_passive + 1;
}

//  --------------------------------------------------------------------------
//  Whether the pool is small enough for a full mesh

static bool
s_full_mesh(ms_view_t *self)
{
    return s_pool_size(self) <= MS_VIEW_FULL_MESH_MAX;
}

//  --------------------------------------------------------------------------
//  Passive view capacity in force

static int
s_passive_max(ms_view_t *self)
{
    int max = ms_view_active_max(self) * MS_VIEW_PASSIVE_FACTOR;
    return max > PASSIVE_CAP ? PASSIVE_CAP : max;
}

//  --------------------------------------------------------------------------
//  Drop id from the pending NEIGHBOR requests; true if it was there

static bool
s_pending_remove(ms_view_t *self, const uint8_t *id)
{
    for (int i = 0; i < self->n_pending; i++)
        if (memcmp(self->pending[i].id, id, ID_BYTES) == 0) {
            self->pending[i] = self->pending[--self->n_pending];
            return true;
        }
    return false;
}

//  --------------------------------------------------------------------------
//  Add id to the passive view (not self, not active); evicts at random

static void
s_add_passive(ms_view_t *self, const uint8_t *id)
{
    if (memcmp(id, self->self_id, ID_BYTES) == 0 ||
        s_find(self->active, self->n_active, id) >= 0 ||
        s_find(self->passive, self->n_passive, id) >= 0)
        return;
    int max = s_passive_max(self);
    if (max <= 0)
        return;
    while (self->n_passive >= max)
        s_remove_at(self->passive, &self->n_passive,
                    s_rand_below(self, self->n_passive));
    memcpy(self->passive[self->n_passive++], id, ID_BYTES);
}

//  --------------------------------------------------------------------------
//  Move active member i out (DISCONNECT + UNLINK), into the passive view

static void
s_drop_active_at(ms_view_t *self, int i)
{
    uint8_t id[ID_BYTES];
    memcpy(id, self->active[i], ID_BYTES);
    s_remove_at(self->active, &self->n_active, i);
    s_send(self, id, MS_VIEW_MSG_DISCONNECT);
    s_push_action(self, MS_VIEW_ACTION_UNLINK, id);
    s_add_passive(self, id);
}

//  --------------------------------------------------------------------------
//  Add id to the active view (LINK); a full view drops a random member
//  first. Returns true when id is in the active view afterwards.

static bool
s_add_active(ms_view_t *self, const uint8_t *id)
{
    if (memcmp(id, self->self_id, ID_BYTES) == 0)
        return false;
    if (s_find(self->active, self->n_active, id) >= 0)
        return true;
    int pi = s_find(self->passive, self->n_passive, id);
    if (pi >= 0)
        s_remove_at(self->passive, &self->n_passive, pi);
    int max = ms_view_active_max(self);
    while (self->n_active >= max && self->n_active > 0)
        s_drop_active_at(self, s_rand_below(self, self->n_active));
    memcpy(self->active[self->n_active++], id, ID_BYTES);
    s_push_action(self, MS_VIEW_ACTION_LINK, id);
    return true;
}

//  --------------------------------------------------------------------------
//  A random active member other than `not` (may be NULL); NULL if none

static const uint8_t *
s_random_active_except(ms_view_t *self, const uint8_t * not )
{
    int n = self->n_active;
    if (n == 0)
        return NULL;
    int start = s_rand_below(self, n);
    for (int k = 0; k < n; k++) {
        const uint8_t *cand = self->active[(start + k) % n];
        if (!not || memcmp(cand, not, ID_BYTES) != 0)
            return cand;
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Send a NEIGHBOR request to a random passive peer not already asked

static void
s_request_neighbor(ms_view_t *self, int64_t now_ms)
{
    if (self->n_passive == 0 || self->n_pending >= PENDING_CAP)
        return;
    int start = s_rand_below(self, self->n_passive);
    for (int k = 0; k < self->n_passive; k++) {
        const uint8_t *cand = self->passive[(start + k) % self->n_passive];
        bool asked = false;
        for (int j = 0; j < self->n_pending; j++)
            if (memcmp(self->pending[j].id, cand, ID_BYTES) == 0)
                asked = true;
        if (asked)
            continue;
        ms_view_msg_t *msg = s_send(self, cand, MS_VIEW_MSG_NEIGHBOR);
        if (msg)
            msg->high_priority = self->n_active == 0;
        memcpy(self->pending[self->n_pending].id, cand, ID_BYTES);
        self->pending[self->n_pending].sent_at = now_ms;
        self->n_pending++;
        return;
    }
}

//  --------------------------------------------------------------------------
//  Fill msg ids with up to n random distinct entries of a list

static void
s_sample_ids(ms_view_t *self, ms_view_msg_t *msg, uint8_t (*list)[ID_BYTES],
             int n_list, int n, const uint8_t *skip)
{
    if (n_list == 0)
        return;
    int start = s_rand_below(self, n_list);
    for (int k = 0; k < n_list && n > 0 && msg->n_ids < MS_VIEW_MSG_MAX_IDS;
         k++) {
        const uint8_t *cand = list[(start + k) % n_list];
        if (skip && memcmp(cand, skip, ID_BYTES) == 0)
            continue;
        memcpy(msg->ids[msg->n_ids++], cand, ID_BYTES);
        n--;
    }
}

//  --------------------------------------------------------------------------
//  Fill the defaults

void
ms_view_options_defaults(ms_view_options_t *opts)
{
    assert(opts);
    opts->shuffle_ms = 10000;
    opts->neighbor_timeout_ms = 2000;
    opts->seed = 0;
}

//  --------------------------------------------------------------------------
//  New view

ms_view_t *
ms_view_new(const uint8_t self_id[MS_VIEW_ID_BYTES],
            const ms_view_options_t *opts)
{
    assert(self_id);
    ms_view_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    memcpy(self->self_id, self_id, ID_BYTES);
    if (opts)
        self->opts = *opts;
    else
        ms_view_options_defaults(&self->opts);
    if (self->opts.shuffle_ms <= 0)
        self->opts.shuffle_ms = 10000;
    if (self->opts.neighbor_timeout_ms <= 0)
        self->opts.neighbor_timeout_ms = 2000;
    uint64_t mix = self->opts.seed;
    for (int i = 0; i < ID_BYTES; i++)
        mix = mix * 131 + self_id[i];
    self->rng = mix;
    return self;
}

//  --------------------------------------------------------------------------
//  Free the view

void
ms_view_destroy(ms_view_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->actions);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Set the pool size in force

void
ms_view_set_pool_size(ms_view_t *self, int n_members)
{
    assert(self);
    self->pool_size = n_members > 0 ? n_members : 0;
}

//  --------------------------------------------------------------------------
//  Active view size in force

int
ms_view_active_max(ms_view_t *self)
{
    assert(self);
    int n = s_pool_size(self);
    if (n <= MS_VIEW_FULL_MESH_MAX)
        return MS_VIEW_ACTIVE_CAP;
    int log2n = 0;
    while ((1 << log2n) < n && log2n < 30)
        log2n++;
    int max = 8 + log2n;
    return max > MS_VIEW_ACTIVE_MAX ? MS_VIEW_ACTIVE_MAX : max;
}

//  --------------------------------------------------------------------------
//  A peer became known

void
ms_view_on_discovered(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES],
                      int64_t now_ms)
{
    assert(self && id);
    (void) now_ms;
    if (memcmp(id, self->self_id, ID_BYTES) == 0 ||
        s_find(self->active, self->n_active, id) >= 0)
        return;
    if (s_full_mesh(self) || self->n_active == 0) {
        //  JOIN through this contact: it becomes our first active peer
        s_add_active(self, id);
        s_send(self, id, MS_VIEW_MSG_JOIN);
        return;
    }
    s_add_passive(self, id);
}

//  --------------------------------------------------------------------------
//  A link came up

void
ms_view_on_link_up(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES],
                   int64_t now_ms)
{
    assert(self && id);
    if (s_full_mesh(self))
        ms_view_on_discovered(self, id, now_ms);
    else
        s_add_passive(self, id);
}

//  --------------------------------------------------------------------------
//  A link failed

void
ms_view_on_link_down(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES],
                     int64_t now_ms)
{
    assert(self && id);
    int i = s_find(self->active, self->n_active, id);
    if (i >= 0)
        s_remove_at(self->active, &self->n_active, i);
    i = s_find(self->passive, self->n_passive, id);
    if (i >= 0)
        s_remove_at(self->passive, &self->n_passive, i);
    s_pending_remove(self, id);
    if (self->n_active < ms_view_active_max(self))
        s_request_neighbor(self, now_ms);
}

//  --------------------------------------------------------------------------
//  JOIN: let the new node in and start FORWARD_JOIN walks

static void
s_on_join(ms_view_t *self, const uint8_t *from)
{
    if (s_full_mesh(self)) {
        //  full mesh: take it in and tell it every member we link to
        s_add_active(self, from);
        ms_view_msg_t *reply = s_send(self, from, MS_VIEW_MSG_SHUFFLE_REPLY);
        if (reply)
            s_sample_ids(self, reply, self->active, self->n_active,
                         MS_VIEW_MSG_MAX_IDS, from);
        return;
    }
    if (s_find(self->active, self->n_active, from) >= 0)
        return; // both sides found each other (beacons): nothing to spread
    s_add_active(self, from);
    for (int i = 0; i < self->n_active; i++) {
        if (memcmp(self->active[i], from, ID_BYTES) == 0)
            continue;
        ms_view_msg_t *msg =
            s_send(self, self->active[i], MS_VIEW_MSG_FORWARD_JOIN);
        if (msg) {
            memcpy(msg->subject, from, ID_BYTES);
            msg->ttl = MS_VIEW_ARWL;
        }
    }
}

//  --------------------------------------------------------------------------
//  FORWARD_JOIN: take the new node in at the walk's end, else pass it on

static void
s_on_forward_join(ms_view_t *self, const uint8_t *from,
                  const ms_view_msg_t *msg)
{
    const uint8_t *subject = msg->subject;
    if (memcmp(subject, self->self_id, ID_BYTES) == 0)
        return;
    bool in_active = s_find(self->active, self->n_active, subject) >= 0;
    bool walk_ends = msg->ttl <= 0 || self->n_active <= 1;
    if (walk_ends || s_full_mesh(self)) {
        if (!in_active && s_add_active(self, subject)) {
            ms_view_msg_t *reply = s_send(self, subject, MS_VIEW_MSG_NEIGHBOR);
            if (reply) {
                reply->high_priority = true;
                reply->reply = true;
            }
            in_active = true;
        }
        if (walk_ends)
            return;
    }
    if (msg->ttl == MS_VIEW_PRWL)
        s_add_passive(self, subject);
    const uint8_t *next = s_random_active_except(self, from);
    if (next && memcmp(next, subject, ID_BYTES) == 0)
        next = NULL;
    if (!next) {
        if (!in_active && s_add_active(self, subject)) {
            ms_view_msg_t *reply = s_send(self, subject, MS_VIEW_MSG_NEIGHBOR);
            if (reply) {
                reply->high_priority = true;
                reply->reply = true;
            }
        }
        return;
    }
    uint8_t next_id[ID_BYTES];
    memcpy(next_id, next, ID_BYTES);
    ms_view_msg_t *fwd = s_send(self, next_id, MS_VIEW_MSG_FORWARD_JOIN);
    if (fwd) {
        memcpy(fwd->subject, subject, ID_BYTES);
        fwd->ttl = msg->ttl - 1;
    }
}

//  --------------------------------------------------------------------------
//  NEIGHBOR: a request (accept if high priority or room) or an acceptance

static void
s_on_neighbor(ms_view_t *self, const uint8_t *from, const ms_view_msg_t *msg)
{
    bool was_pending = s_pending_remove(self, from);
    if (s_find(self->active, self->n_active, from) >= 0)
        return;
    int max = ms_view_active_max(self);
    if (msg->reply || was_pending) {
        //  an acceptance: of our request, or of our place on a FORWARD_JOIN
        //  (on the wire, which has no reply flag, a NEIGHBOR from a peer we
        //  asked is the acceptance)
        if (msg->high_priority || self->n_active < max)
            s_add_active(self, from);
        else {
            s_send(self, from, MS_VIEW_MSG_DISCONNECT);
            s_add_passive(self, from);
        }
        return;
    }
    if (msg->high_priority || self->n_active < max) {
        s_add_active(self, from);
        ms_view_msg_t *reply = s_send(self, from, MS_VIEW_MSG_NEIGHBOR);
        if (reply) {
            reply->reply = true;
            reply->high_priority = msg->high_priority;
        }
    } else {
        s_send(self, from, MS_VIEW_MSG_DISCONNECT);
        s_add_passive(self, from);
    }
}

//  --------------------------------------------------------------------------
//  DISCONNECT: leave the active view (or a refused NEIGHBOR request)

static void
s_on_disconnect(ms_view_t *self, const uint8_t *from, int64_t now_ms)
{
    s_pending_remove(self, from);
    int i = s_find(self->active, self->n_active, from);
    if (i >= 0) {
        s_remove_at(self->active, &self->n_active, i);
        s_push_action(self, MS_VIEW_ACTION_UNLINK, from);
    }
    s_add_passive(self, from);
    if (self->n_active == 0)
        s_request_neighbor(self, now_ms);
}

//  --------------------------------------------------------------------------
//  Merge shuffle ids into the passive view

static void
s_merge_ids(ms_view_t *self, const ms_view_msg_t *msg, int64_t now_ms)
{
    for (int i = 0; i < msg->n_ids; i++) {
        if (s_full_mesh(self))
            ms_view_on_discovered(self, msg->ids[i], now_ms);
        else
            s_add_passive(self, msg->ids[i]);
    }
}

//  --------------------------------------------------------------------------
//  SHUFFLE: forward the walk, or answer its origin and merge

static void
s_on_shuffle(ms_view_t *self, const uint8_t *from, const ms_view_msg_t *msg,
             int64_t now_ms)
{
    if (memcmp(msg->subject, self->self_id, ID_BYTES) == 0)
        return;
    int ttl = msg->ttl - 1;
    if (ttl > 0 && self->n_active > 1) {
        const uint8_t *next = s_random_active_except(self, from);
        if (next && memcmp(next, msg->subject, ID_BYTES) != 0) {
            uint8_t next_id[ID_BYTES];
            memcpy(next_id, next, ID_BYTES);
            ms_view_msg_t *fwd = s_send(self, next_id, MS_VIEW_MSG_SHUFFLE);
            if (fwd) {
                *fwd = *msg;
                fwd->ttl = ttl;
            }
            return;
        }
    }
    ms_view_msg_t *reply =
        s_send(self, msg->subject, MS_VIEW_MSG_SHUFFLE_REPLY);
    if (reply)
        s_sample_ids(self, reply, self->passive, self->n_passive, msg->n_ids,
                     msg->subject);
    s_merge_ids(self, msg, now_ms);
    s_add_passive(self, msg->subject);
}

//  --------------------------------------------------------------------------
//  Handle one view message

int
ms_view_on_message(ms_view_t *self, const uint8_t from[MS_VIEW_ID_BYTES],
                   const ms_view_msg_t *msg, int64_t now_ms)
{
    assert(self && from && msg);
    if (msg->n_ids < 0 || msg->n_ids > MS_VIEW_MSG_MAX_IDS)
        return MS_ERR_PROTOCOL;
    if (memcmp(from, self->self_id, ID_BYTES) == 0)
        return MS_ERR_PROTOCOL;
    switch (msg->kind) {
    case MS_VIEW_MSG_JOIN:
        s_on_join(self, from);
        return MS_OK;
    case MS_VIEW_MSG_FORWARD_JOIN:
        s_on_forward_join(self, from, msg);
        return MS_OK;
    case MS_VIEW_MSG_NEIGHBOR:
        s_on_neighbor(self, from, msg);
        return MS_OK;
    case MS_VIEW_MSG_DISCONNECT:
        s_on_disconnect(self, from, now_ms);
        return MS_OK;
    case MS_VIEW_MSG_SHUFFLE:
        s_on_shuffle(self, from, msg, now_ms);
        return MS_OK;
    case MS_VIEW_MSG_SHUFFLE_REPLY:
        s_merge_ids(self, msg, now_ms);
        return MS_OK;
    }
    return MS_ERR_PROTOCOL;
}

//  --------------------------------------------------------------------------
//  Timed work

void
ms_view_tick(ms_view_t *self, int64_t now_ms)
{
    assert(self);
    //  requests unanswered too long: forget that peer
    for (int i = 0; i < self->n_pending;) {
        if (now_ms - self->pending[i].sent_at >=
            self->opts.neighbor_timeout_ms) {
            int pi =
                s_find(self->passive, self->n_passive, self->pending[i].id);
            if (pi >= 0)
                s_remove_at(self->passive, &self->n_passive, pi);
            self->pending[i] = self->pending[--self->n_pending];
        } else
            i++;
    }
    int max = ms_view_active_max(self);
    while (self->n_active > max)
        s_drop_active_at(self, s_rand_below(self, self->n_active));
    if (now_ms >= self->next_refill_at) {
        self->next_refill_at = now_ms + self->opts.neighbor_timeout_ms / 4;
        if (self->n_active < max && !s_full_mesh(self))
            s_request_neighbor(self, now_ms);
    }
    if (self->next_shuffle_at == 0)
        self->next_shuffle_at =
            now_ms + s_rand_below(self, self->opts.shuffle_ms) + 1;
    if (now_ms >= self->next_shuffle_at) {
        self->next_shuffle_at = now_ms + self->opts.shuffle_ms;
        if (!s_full_mesh(self) && self->n_active > 0) {
            uint8_t to[ID_BYTES];
            memcpy(to, s_random_active_except(self, NULL), ID_BYTES);
            ms_view_msg_t *msg = s_send(self, to, MS_VIEW_MSG_SHUFFLE);
            if (msg) {
                memcpy(msg->subject, self->self_id, ID_BYTES);
                msg->ttl = MS_VIEW_ARWL;
                memcpy(msg->ids[msg->n_ids++], self->self_id, ID_BYTES);
                s_sample_ids(self, msg, self->active, self->n_active,
                             MS_VIEW_SHUFFLE_KA, to);
                s_sample_ids(self, msg, self->passive, self->n_passive,
                             MS_VIEW_SHUFFLE_KP, NULL);
            }
        }
    }
}

//  --------------------------------------------------------------------------
//  When tick next has work

int64_t
ms_view_next_deadline(ms_view_t *self)
{
    assert(self);
    int64_t at = self->next_shuffle_at ? self->next_shuffle_at : 0;
    if (!s_full_mesh(self) && self->n_active < ms_view_active_max(self) &&
        self->n_passive > 0 && self->next_refill_at < at)
        at = self->next_refill_at;
    for (int i = 0; i < self->n_pending; i++) {
        int64_t t = self->pending[i].sent_at + self->opts.neighbor_timeout_ms;
        if (t < at)
            at = t;
    }
    return at;
}

//  --------------------------------------------------------------------------
//  Pop the oldest action

bool
ms_view_next_action(ms_view_t *self, ms_view_action_t *out)
{
    assert(self && out);
    if (self->actions_head >= self->n_actions)
        return false;
    *out = self->actions[self->actions_head++];
    if (self->actions_head == self->n_actions) {
        self->actions_head = 0;
        self->n_actions = 0;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Membership queries

bool
ms_view_is_active(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES])
{
    assert(self && id);
    return s_find(self->active, self->n_active, id) >= 0;
}

//  --------------------------------------------------------------------------
//  Whether id is passive

bool
ms_view_is_passive(ms_view_t *self, const uint8_t id[MS_VIEW_ID_BYTES])
{
    assert(self && id);
    return s_find(self->passive, self->n_passive, id) >= 0;
}

//  --------------------------------------------------------------------------
//  Active view size

int
ms_view_n_active(ms_view_t *self)
{
    assert(self);
    return self->n_active;
}

//  --------------------------------------------------------------------------
//  Passive view size

int
ms_view_n_passive(ms_view_t *self)
{
    assert(self);
    return self->n_passive;
}

//  --------------------------------------------------------------------------
//  The i-th active member

const uint8_t *
ms_view_active(ms_view_t *self, int i)
{
    assert(self && i >= 0 && i < self->n_active);
    return self->active[i];
}
