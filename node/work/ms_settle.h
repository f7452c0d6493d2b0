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
    a peer's log.

    The settle rule, and why it makes the start decision independent of
    timing (it replaces DESIGN.md's "starts after a short settle window"
    with a better rule). Two nodes may claim one slot at the same
    epoch at about the same time: two survivors that see a dead holder's
    lease expire together, an owner and a stealer. A window of 2 x the
    round trip was a guess about timing: on a loaded machine a commit
    (fsync) or a loop turn takes longer than the window, both nodes start
    before they see each other's claim, and one is stopped later. Now a
    claim starts only when every peer that was live and linked when the
    claim's block was pushed has acknowledged it: a peer that merges a
    block holding a claim answers its origin with BLOCK_ACK (seq = how far
    it holds the origin's log, own_seq = how far its own log goes).
    Why that decides without timing: the ack is sent from the peer's loop
    after the merge returned (durable, fed to its lease table), and the
    loop commits and pushes its own blocks synchronously (the append pushes
    before it returns), so when a peer acks our claim, either it had not
    claimed the slot yet (then our claim, live in its table, forbids it
    to claim at that epoch), or its claim is in its log at or below
    own_seq. We start only once we hold the peer's log up to own_seq, so
    both claims are then in our lease table and in the peer's, and the
    ranking (epoch, then H(task, slot, node)) names the same holder on
    both: exactly one starts, the other releases its claim unstarted
    (counted in lease_settle_lost_total). Usually the peer's claim came
    before its ack on the one link of the pair (FIFO) and there is
    nothing to wait for; own_seq makes the rule hold also when the claim
    travelled another way (a link replaced, anti-entropy). Races thought
    through: the peer's claim committed but not yet pushed when ours
    arrives cannot happen in one loop (commit and push are one step; a
    store that one day commits in the background must ack only after
    its own committed blocks are pushed, or own_seq still covers it);
    group commit changes nothing (the ack follows the merge's return);
    a block that lands above a gap is acked only once the gap is pulled
    (the ack says how far the log is held contiguously). Who is waited
    for: the peers linked and not dead at push time, suspect ones too
    (the push targets; in a big pool that is the active view). A peer
    that dies or unlinks is no longer waited for, and no wait lasts
    longer than the cap (settle_ms; auto = one heartbeat interval): a
    stalled or old peer cannot stop starts for long, and then the
    ranking decides as before (a claim outranked later stops its
    worker). Suspect peers are waited for because a loaded machine makes
    live peers suspect (heartbeats late, the link up): case 2 of
    shared/cases, four nodes started together on a busy CI machine, had
    a suspect peer claim the same task in the same instant, and both
    started when only the alive peers were waited for. Peers outside the
    active view, and peers that link after the push, are not waited for
    either; a race with them is settled by the ranking. A retry under a
    claim that settled already waits for nothing. The bookkeeping is
    this class; the ack is node/log/ms_record_log's (BLOCK_ACK, sent and
    received there); the peers waited for are ms_peer_table's reachable
    ones (linked, not dead); ms_runner settles and starts the claims.

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
