/*  =========================================================================
    ms_record_log - the node's record log over the store: append, merge,
    vectors, blocks, equivocation, block acks (the gossip's source)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Records and anti-entropy" and "Store (LMDB)": the log of
    records keyed by (origin, incarnation, seq), as gossip (node/log/
    ms_gossip.h) sees it. The store owns the bytes; this class owns the
    path records take in and out of it:

    - out: ms_record_log_append stores records of ours in one durable
      commit and pushes the blocks it made to the peers (ms_gossip_push)
      before it returns; ms_record_log_source fills the ms_gossip_source_t
      whose read_blocks serves stored blocks to peers' range requests.
      A block of ours is handed to iface.serve_signature before it
      leaves (the node's signed-block code re-signs what an older
      process signed for another pool).
    - in: ms_record_log_on_message maps the gossip envelopes of the wire
      (VECTOR_DIGEST, VECTOR, RANGE_REQUEST, BLOCK) to ms_gossip_msg_t
      and back (ms_record_log_transport's send), so gossip stays free of
      proto/. A peer's BLOCK goes to iface.check_block first (signature,
      admission; the node's signed-block code) and reaches gossip only
      when taken: a refused block is never stored, buffered, forwarded,
      acked or counted. Gossip then merges through the source
      (merge_block, or merge_blocks for a drain's batch in one commit):
      the origin's submit role is set in the store first
      (iface.may_submit), and every record of a block that brought news
      goes to iface.merged: that is the change set the loop acts on
      (leases, scheduler). A conflicting record is equivocation: the
      store keeps it as evidence; it is logged here.
    - acks (the settle rule, ms_settle.h): a merged
      block holding a claim is acknowledged to its origin with BLOCK_ACK
      (seq: how far we hold its log contiguously; own_seq: how far ours
      goes) once it is held, i.e. after the drain's batch merged
      (ms_record_log_send_acks_due); a block above a gap is acked once the
      gap is filled. A BLOCK_ACK of a peer for our current incarnation
      goes to iface.acked (the node's ms_settle); stale ones are dropped.

    Why append lives here and not in the node: the settle rule needs
    "every block of ours committed before an ack was sent was pushed
    before it", which holds because append pushes before it returns and
    acks are sent from the same thread after it. Both halves of that rule
    are in this one file now. What a result record means for the node's
    events stays with the node (it wraps ms_record_log_append).

    What it needs of the node comes through ms_record_log_iface_t; the
    class never calls into ms_node. Gossip is not owned here: the node
    makes it over this class's source and transport and passes it to
    the calls that push (NULL: a node alone, nothing is pushed), so a
    gossip closed and opened again (a pool joined on SIGHUP) never
    leaves a stale pointer behind. Loop thread only.
*/
#ifndef MS_RECORD_LOG_H
#define MS_RECORD_LOG_H

#include "ms_gossip.h"
#include "ms_hash.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_RECORD_LOG_MAX_APPEND 256 // payloads in one ms_record_log_append

typedef struct ms_record_log ms_record_log_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside the ms_record_log_* calls and
//  the source and transport callbacks only.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Queue ENV (borrowed) for linked peer TO on the mesh: MS_OK, or the
    //  mesh's error (MS_ERR_NOTFOUND when there is no mesh or no link).
    int (*send)(void *arg, const uint8_t to[MS_HASH_BYTES],
                const ms_wire_envelope_t *env);
    //  Up to MAX ids of the push targets (linked, not dead peers) into
    //  OUT; returns how many.
    int (*active_peers)(void *arg, uint8_t (*out)[MS_HASH_BYTES], int max);
    //  One random live peer into OUT for an anti-entropy round: MS_OK, or
    //  MS_ERR_NOTFOUND when there is none.
    int (*random_peer)(void *arg, uint8_t out[MS_HASH_BYTES]);
    //  May the BLOCK that came from linked peer FROM reach gossip (signed
    //  by its origin for this pool, origin admitted)? False: refused (the
    //  node counts and logs it); the block is dropped.
    bool (*check_block)(void *arg, const uint8_t from[MS_HASH_BYTES],
                        const ms_wire_block_t *block);
    //  A stored block (records FIRST_SEQ.., N of them, kinds, payloads,
    //  lens) is about to leave: the node may point *SIG / *SIG_LEN at a
    //  fresh signature written into FRESH (MS_WIRE_SIGNATURE_BYTES), or
    //  leave them as stored. Called for blocks of every origin.
    void (*serve_signature)(void *arg, const uint8_t *origin,
                            uint64_t incarnation, uint64_t first_seq, size_t n,
                            const uint32_t *kinds,
                            const uint8_t *const *payloads, const size_t *lens,
                            const uint8_t **sig, size_t *sig_len,
                            uint8_t *fresh);
    //  Whether ORIGIN may submit sweeps and sweep-control records (asked
    //  before its blocks are merged): 1 yes, 0 no, -1 no rule here (an
    //  open pool: the store's default stands).
    int (*may_submit)(void *arg, const uint8_t origin[MS_HASH_BYTES]);
    //  One record of a merged block that brought news (every record of
    //  such a block, in seq order, after the commit; a record held
    //  before comes again, which the lease table takes as a no-op). The
    //  payload is borrowed for the call.
    void (*merged)(void *arg, const uint8_t origin[MS_HASH_BYTES],
                   uint64_t incarnation, uint64_t seq, uint32_t kind,
                   const uint8_t *payload, size_t len);
    //  Peer FROM holds our log (current incarnation) up to SEQ, and its
    //  own log (OWN_INCARNATION) was at OWN_SEQ then (BLOCK_ACK).
    void (*acked)(void *arg, const uint8_t from[MS_HASH_BYTES], uint64_t seq,
                  uint64_t own_incarnation, uint64_t own_seq);
} ms_record_log_iface_t;

//  Counters (ms_record_log_stats).
typedef struct {
    uint64_t n_acks_sent;     // BLOCK_ACKs sent
    uint64_t n_acks_received; // BLOCK_ACKs of our incarnation received
    size_t n_acks_due;        // claim blocks waiting to be held and acked
} ms_record_log_stats_t;

//  Create the log of node NODE_ID over STORE (borrowed; it outlives the
//  log) with IFACE (copied). Returns NULL when memory runs out. Caller
//  owns the result; free it with ms_record_log_destroy().
ms_record_log_t *ms_record_log_new(ms_store_t *store,
                                   const uint8_t node_id[MS_HASH_BYTES],
                                   const ms_record_log_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p. Acks still due are dropped (the
//  claimers' settle cap covers them).
void ms_record_log_destroy(ms_record_log_t **self_p);

//  Fill *OUT with the gossip source over this log (arg: the log). Every
//  callback does what ms_gossip.h asks of it with the store's codes.
void ms_record_log_source(ms_record_log_t *self, ms_gossip_source_t *out);

//  Fill *OUT with the gossip transport over iface.send, active_peers and
//  random_peer (arg: the log): send writes the gossip message as its wire
//  envelope (MS_ERR_NOMEM, MS_ERR_INVALID for an unknown kind, else the
//  iface's code).
void ms_record_log_transport(ms_record_log_t *self, ms_gossip_transport_t *out);

//  Append the N (1 to MS_RECORD_LOG_MAX_APPEND) PAYLOADS (borrowed) as
//  records of ours in one durable commit, as blocks of up to
//  MS_RECORD_MAX_BLOCK records (one block when N is at most that), then
//  push those blocks through GOSSIP (NULL: alone, nothing is pushed).
//  KEYS (may be NULL) gets N keys. Returns MS_OK; MS_ERR_INVALID for N
//  out of range; or the code of ms_store_payload_encode or
//  ms_store_append_many (nothing stored in all of these cases);
//  push errors are gossip's counters, not returned.
int ms_record_log_append(ms_record_log_t *self, ms_gossip_t *gossip, size_t n,
                         const ms_store_payload_t *payloads,
                         ms_record_key_t *keys);

//  The seq of the last record ms_record_log_append wrote (0: none yet).
uint64_t ms_record_log_last_seq(const ms_record_log_t *self);

//  Handle envelope ENV (borrowed) from linked peer FROM at gossip time
//  NOW_MS (ms_mesh_now): a VECTOR_DIGEST, VECTOR, RANGE_REQUEST or BLOCK
//  goes to GOSSIP (a BLOCK after iface.check_block; one holding a claim
//  is acked once held, one holding a SWEEP or FRAGMENT sets
//  ms_record_log_sweeps_due), a BLOCK_ACK to iface.acked. Returns MS_OK
//  when handled; MS_ERR_UNTRUSTED for a block check_block refused (it
//  counted it); MS_ERR_PROTOCOL when gossip refused the message
//  (malformed or inconsistent: the caller counts it); MS_ERR_NOMEM when
//  it was dropped for want of memory; MS_ERR_NOTFOUND for any other body
//  (not the log's: the caller handles it) and when GOSSIP is NULL.
int ms_record_log_on_message(ms_record_log_t *self, ms_gossip_t *gossip,
                             const uint8_t from[MS_HASH_BYTES],
                             const ms_wire_envelope_t *env, int64_t now_ms);

//  Send the BLOCK_ACKs whose claim blocks are held now (call it after a
//  drain's batch merged); keep the others (a block above a gap waits
//  for the gap, a batch of pull answers may be held a little longer).
void ms_record_log_send_acks_due(ms_record_log_t *self);

//  True when blocks holding SWEEP or FRAGMENT records came since the last
//  ms_record_log_sweeps_noted (the node notes their commit times once
//  they are merged).
bool ms_record_log_sweeps_due(const ms_record_log_t *self);

//  The sweeps that came are noted: ms_record_log_sweeps_due is false until
//  the next block with a SWEEP or FRAGMENT record.
void ms_record_log_sweeps_noted(ms_record_log_t *self);

//  Copy the counters into *out.
void ms_record_log_stats(const ms_record_log_t *self,
                         ms_record_log_stats_t *out);

#endif
