/*  =========================================================================
    ms_settle - own claims waiting for the peers' acknowledgements before
    they start (the claim settle rule)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Pure bookkeeping (no clock, no sockets, no store): the node tells it
    which claims it wrote (ms_settle_add, with the seq of the claim's
    record in its own log and the peers the block was pushed to), which
    acknowledgements came back (ms_settle_on_ack) and which peers stopped
    being live (ms_settle_peer_gone); it asks which claims may start now
    (ms_settle_take_ready), passing a callback that says how far it holds
    a peer's log. The rule itself, and why it makes the start decision
    independent of timing, is in the prose block of node/actor/ms_node.c
    ("Leases").

    A claim is ready when, for every peer it waits for, either the peer
    is gone, or the peer acknowledged a seq >= the claim's seq AND this
    node holds the peer's own log up to the seq the peer reported in that
    acknowledgement; or when its cap (monotonic ms) has passed (then it
    is reported as capped).

    Thread rule: one ms_settle_t belongs to one thread (the node loop).
*/
#ifndef MS_SETTLE_H
#define MS_SETTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_SETTLE_ID_BYTES 32 // node ids and task ids

typedef struct ms_settle ms_settle_t;

//  One waiting claim, as reported by take_ready, remove and get.
typedef struct {
    uint8_t task_id[MS_SETTLE_ID_BYTES]; // the task
    uint32_t slot;                       // claimed slot
    uint32_t epoch;                      // claimed epoch
    uint64_t seq;     // seq of the claim record in our log (0: none)
    int64_t added_ms; // monotonic ms when it was added
    size_t n_peers;   // peers it waited for
    size_t n_acked;   // of which acknowledged it, their records held
    size_t n_gone;    // of which stopped being live before that
    bool capped;      // taken at the cap with peers still waited for
} ms_settle_claim_t;

//  How far this node holds peer's log of incarnation: the highest
//  contiguous seq (0 when none).
typedef uint64_t (*ms_settle_held_fn)(void *arg,
                                      const uint8_t peer[MS_SETTLE_ID_BYTES],
                                      uint64_t incarnation);

//  A new, empty list. Returns NULL when out of memory. Free it with
//  ms_settle_destroy().
ms_settle_t *ms_settle_new(void);

//  Free the list; NULL-safe, nulls *self_p.
void ms_settle_destroy(ms_settle_t **self_p);

//  Add a claim of ours: (task_id, slot, epoch), written as record seq of
//  our log (0 when there is nothing to acknowledge, e.g. a retry under a
//  claim already settled), pushed to peers[0..n_peers) (copied; ids
//  equal to one already listed are kept once). It is ready at the latest
//  at now_ms + cap_ms (cap_ms <= 0: at once). A claim already listed for
//  (task_id, slot) is replaced. Returns MS_OK or MS_ERR_NOMEM (nothing
//  added).
int ms_settle_add(ms_settle_t *self, const uint8_t task_id[MS_SETTLE_ID_BYTES],
                  uint32_t slot, uint32_t epoch, uint64_t seq,
                  const uint8_t (*peers)[MS_SETTLE_ID_BYTES], size_t n_peers,
                  int64_t now_ms, int64_t cap_ms);

//  peer acknowledged our log up to acked_seq (of our current
//  incarnation; the caller drops acks of other incarnations); its own
//  log was then at peer_seq of peer_incarnation. Every waiting claim with
//  seq <= acked_seq that still waited for peer's acknowledgement now
//  waits only for peer's records up to peer_seq. Returns how many claims
//  it concerned.
size_t ms_settle_on_ack(ms_settle_t *self,
                        const uint8_t peer[MS_SETTLE_ID_BYTES],
                        uint64_t acked_seq, uint64_t peer_incarnation,
                        uint64_t peer_seq);

//  peer is no longer waited for (dead or unlinked): no claim waits for
//  it any more. Returns how many claims it concerned.
size_t ms_settle_peer_gone(ms_settle_t *self,
                           const uint8_t peer[MS_SETTLE_ID_BYTES]);

//  Take the oldest claim that is ready at now_ms (see above; held is
//  asked for peers that acknowledged) into *out and remove it. Returns
//  true when one was taken, false when none is ready.
bool ms_settle_take_ready(ms_settle_t *self, int64_t now_ms,
                          ms_settle_held_fn held, void *arg,
                          ms_settle_claim_t *out);

//  Remove the claim on (task_id, slot) (outranked, released); *out (may
//  be NULL) gets it. Returns true when there was one.
bool ms_settle_remove(ms_settle_t *self,
                      const uint8_t task_id[MS_SETTLE_ID_BYTES], uint32_t slot,
                      ms_settle_claim_t *out);

//  True when a claim on task_id (any slot) is waiting.
bool ms_settle_contains(const ms_settle_t *self,
                        const uint8_t task_id[MS_SETTLE_ID_BYTES]);

//  Number of waiting claims.
size_t ms_settle_count(const ms_settle_t *self);

//  The i-th waiting claim (oldest first) into *out; false when i is out of
//  range.
bool ms_settle_get(const ms_settle_t *self, size_t i, ms_settle_claim_t *out);

//  The earliest cap (monotonic ms) of the waiting claims; INT64_MAX when
//  none waits.
int64_t ms_settle_next_deadline(const ms_settle_t *self);

#endif
