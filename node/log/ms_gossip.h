/*  =========================================================================
    ms_gossip - record dissemination: eager push + scuttlebutt anti-entropy

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Pure logic (DESIGN.md "Records and anti-entropy", docs/POOL.md): no
    sockets, no clock, no threads. The owner feeds it envelopes from peers
    (ms_gossip_on_message) and the monotonic time (ms_gossip_tick), and it
    answers through two small interfaces the owner provides:

    - a record source (ms_gossip_source_t): where records live. ms_store
      in the daemon (adapted by ms_node), ms_recset in tests and in the
      simulation (tools/bench/sim_gossip).
    - a transport (ms_gossip_transport_t): how messages leave, and which
      peers to push to (the active view) or to reconcile with (a random
      member of it). ms_mesh in the daemon, a simulated network elsewhere.

    Messages are plain C values (ms_gossip_msg_t) that mirror the wire
    envelopes VECTOR_DIGEST, VECTOR, RANGE_REQUEST and BLOCK of
    proto/ms_wire.h field for field; the node maps one to the other, so
    gossip builds and is tested without proto/. The protocol needs no field
    beyond those (no flags): see the prose block of ms_gossip.c.

    Every pointer in a message or a block is borrowed: valid only during
    the call that receives it. A transport copies (encodes) what it keeps.

    Thread rule: an ms_gossip_t belongs to one thread (the node actor); the
    source and transport callbacks are called from that thread, from inside
    ms_gossip_push, ms_gossip_on_message and ms_gossip_tick, and must not
    block (queue, do not wait on a peer).
*/
#ifndef MS_GOSSIP_H
#define MS_GOSSIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_GOSSIP_ID_BYTES 32          // node id (Ed25519 public key) size
#define MS_GOSSIP_DIGEST_BYTES 32      // BLAKE2b-256 of the vector listing
#define MS_GOSSIP_MAX_BLOCK_RECORDS 64 // records per block, DESIGN.md

//  One record of a block. seq counts from 1 per (origin, incarnation);
//  kind is the record kind number of docs/POOL.md (unknown kinds are
//  carried untouched); payload is opaque to gossip.
typedef struct {
    uint64_t seq;           // sequence number within (origin, incarnation)
    uint32_t kind;          // record kind (1 sweep ... 9 reevaluation)
    const uint8_t *payload; // borrowed; may be NULL when payload_bytes is 0
    size_t payload_bytes;   // payload length in bytes
} ms_gossip_record_t;

//  A block: 1 to 64 records of one (origin, incarnation) with contiguous
//  seqs first_seq, first_seq + 1, ...; records[i].seq == first_seq + i.
//  The unit of sequence, transfer and (with the trust issue) signature.
typedef struct {
    uint8_t origin[MS_GOSSIP_ID_BYTES]; // node id of the writer
    uint64_t incarnation;               // 64 random bits of its store
    uint64_t first_seq;                 // seq of records[0], >= 1
    const ms_gossip_record_t *records;  // borrowed, n_records entries
    size_t n_records;                   // 1 .. MS_GOSSIP_MAX_BLOCK_RECORDS
    const uint8_t *signature;           // borrowed, opaque; NULL until trust
    size_t signature_bytes;             // 0 until the trust issue
} ms_gossip_block_t;

//  One version-vector entry: the highest contiguous seq held for
//  (origin, incarnation). A source lists entries sorted by (origin
//  bytes, incarnation) ascending, each key once; a VECTOR received may
//  come in any order (gossip sorts a copy) but never with a key twice.
typedef struct {
    uint8_t origin[MS_GOSSIP_ID_BYTES]; // node id
    uint64_t incarnation;               // store incarnation
    uint64_t seq;                       // highest contiguous seq held, >= 1
} ms_gossip_entry_t;

//  Message kinds; the values are the gossip envelope kinds of the wire.
typedef enum {
    MS_GOSSIP_MSG_DIGEST = 1,        // VECTOR_DIGEST: hash of my vector
    MS_GOSSIP_MSG_VECTOR = 2,        // VECTOR: my whole vector
    MS_GOSSIP_MSG_RANGE_REQUEST = 3, // RANGE_REQUEST: send me these seqs
    MS_GOSSIP_MSG_BLOCK = 4,         // BLOCK: one block of records
} ms_gossip_msg_kind_t;
#define MS_GOSSIP_MSG_KINDS 5 // array size for per-kind counters (0 unused)

//  A gossip message (one wire envelope). Only the member that matches
//  kind is read.
typedef struct {
    ms_gossip_msg_kind_t kind; // which member below is meaningful
    union {
        uint8_t digest[MS_GOSSIP_DIGEST_BYTES]; // DIGEST
        struct {
            const ms_gossip_entry_t *entries; // borrowed, unique keys
            size_t n_entries;                 // may be 0 (empty store)
        } vector;                             // VECTOR
        struct {
            uint8_t origin[MS_GOSSIP_ID_BYTES]; // stream asked for
            uint64_t incarnation;               //
            uint64_t from_seq;                  // first seq wanted, >= 1
            uint64_t to_seq;                    // last seq wanted, >= from
            uint32_t max_records;               // answer at most this many
        } range;                                // RANGE_REQUEST
        ms_gossip_block_t block;                // BLOCK
    } u;
} ms_gossip_msg_t;

//  Where records live. Every callback returns MS_OK or a negative
//  MS_ERR_ code; arg is passed back as it is.
typedef struct {
    void *arg; // the store (ms_store adapter, ms_recset)

    //  BLAKE2b-256 of the canonical vector listing (entries sorted by key,
    //  each origin || incarnation (8, big-endian) || seq (8, big-endian)).
    int (*vector_digest)(void *arg, uint8_t digest[MS_GOSSIP_DIGEST_BYTES]);

    //  The whole vector, sorted by (origin, incarnation), into a
    //  malloc'd array *entries (caller frees with free(); NULL when
    //  *n_entries is 0).
    int (*vector)(void *arg, ms_gossip_entry_t **entries, size_t *n_entries);

    //  Highest contiguous seq held for (origin, incarnation) into *seq
    //  (0 when the stream is unknown). Cheap: called for every block.
    int (*held)(void *arg, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                uint64_t incarnation, uint64_t *seq);

    //  Emit, in seq order, the whole blocks (boundaries as stored) that
    //  hold seqs from_seq .. to_seq, stopping once max_records records or
    //  max_bytes payload bytes have been emitted (the first block is
    //  always emitted whole). The block passed to emit is borrowed for the
    //  call; a non-zero return from emit stops and is returned. Seqs not
    //  held are skipped (MS_OK).
    int (*read_blocks)(void *arg, const uint8_t origin[MS_GOSSIP_ID_BYTES],
                       uint64_t incarnation, uint64_t from_seq, uint64_t to_seq,
                       size_t max_records, size_t max_bytes,
                       int (*emit)(void *emit_arg,
                                   const ms_gossip_block_t *block),
                       void *emit_arg);

    //  Merge a well-formed block (gossip checks shape first): MS_OK with
    //  *n_new = records newly stored (0 for a duplicate; records held
    //  already are compared byte for byte and a different one is kept as
    //  equivocation evidence, not counted new); MS_ERR_RANGE when
    //  first_seq > held + 1 (a gap: nothing stored); MS_ERR_INVALID or
    //  MS_ERR_BADSIG for a block the store refuses; other codes for store
    //  failures. The merge is durable when it returns.
    int (*merge_block)(void *arg, const ms_gossip_block_t *block,
                       size_t *n_new);

    //  Optional (may be NULL): merge N_BLOCKS well-formed blocks in array
    //  order as merge_block would one after the other, but in one durable
    //  commit (group commit: one fsync for the batch). A block may fill
    //  the gap below a later one of the same array. rcs[i] gets block i's
    //  merge_block code and n_new[i] its new records (0 unless rcs[i] is
    //  MS_OK). Returns MS_OK when the batch was attempted (each block's
    //  fate in rcs, so one refused block never loses the others), or a
    //  negative code when nothing was merged (rcs then unset). Durable
    //  when it returns. Used between ms_gossip_batch_begin and
    //  ms_gossip_batch_end; without it, gossip merges block by block.
    int (*merge_blocks)(void *arg, const ms_gossip_block_t *blocks,
                        size_t n_blocks, int *rcs, size_t *n_new);
} ms_gossip_source_t;

//  How messages leave. Every callback returns MS_OK or a negative code.
typedef struct {
    void *arg; // the mesh adapter or the simulated network

    //  Queue msg for peer `to` (copy or encode it: msg is borrowed).
    //  Must not block; a full queue may drop and return an error (counted).
    int (*send)(void *arg, const uint8_t to[MS_GOSSIP_ID_BYTES],
                const ms_gossip_msg_t *msg);

    //  Write up to max peer ids of the active view (push targets) into
    //  out; return their count (>= 0) or a negative code.
    int (*active_peers)(void *arg, uint8_t (*out)[MS_GOSSIP_ID_BYTES], int max);

    //  Choose one live peer at random for an anti-entropy round into out;
    //  MS_ERR_NOTFOUND when there is none.
    int (*random_peer)(void *arg, uint8_t out[MS_GOSSIP_ID_BYTES]);
} ms_gossip_transport_t;

//  Settings. Start from ms_gossip_config_default() and change fields.
typedef struct {
    bool push;                   // eager push to the active view (true)
    bool antientropy;            // periodic reconciliation (true)
    int64_t antientropy_ms;      // one random peer per round (1000)
    uint32_t direct_records;     // a peer lacking at most this many records
                                 // in all gets them at once (64); above,
                                 // it is sent my vector and pulls
    uint32_t range_records;      // records asked per RANGE_REQUEST (1024);
                                 // the next is asked when half landed
    size_t range_bytes;          // payload bytes served per request (16 MiB)
    int64_t range_timeout_ms;    // a pull with no progress is re-asked (750)
    uint32_t range_retries;      // then dropped after this many re-asks (3)
    uint32_t max_pulls;          // streams pulled at once (256)
    size_t gap_buffer_bytes;     // blocks above a gap, all streams (128 MiB)
    size_t gap_stream_bytes;     // ... one (origin, incarnation) (64 MiB)
    int max_push_peers;          // active-view ids asked for per push (64)
    uint32_t batch_blocks;       // blocks held for one batched merge (16384)
    size_t batch_bytes;          // payload bytes held for it (64 MiB)
    int64_t batch_hold_ms;       // a batch of pull answers is held open
                                 // across drains at most this long (500)
    uint32_t pull_ahead_records; // a batched pull asks windows up to this
                                 // many records past what it received
                                 // (8192)
} ms_gossip_config_t;

//  Counters for /metrics. Bytes are the sizes of the fixed fields plus
//  payloads and signatures (the wire adds a few bytes of framing).
typedef struct {
    uint64_t sent[MS_GOSSIP_MSG_KINDS];           // messages, by kind
    uint64_t sent_bytes[MS_GOSSIP_MSG_KINDS];     // their bytes
    uint64_t received[MS_GOSSIP_MSG_KINDS];       // messages, by kind
    uint64_t received_bytes[MS_GOSSIP_MSG_KINDS]; // their bytes
    uint64_t rounds;                              // anti-entropy rounds started
    uint64_t digests_equal;    // digests received equal to mine
    uint64_t blocks_merged;    // blocks that brought new records
    uint64_t records_new;      // records newly stored
    uint64_t blocks_duplicate; // blocks with nothing new
    uint64_t blocks_forwarded; // eager forwards (per block, not per peer)
    uint64_t gaps_buffered;    // blocks put in the gap buffer
    uint64_t gaps_dropped;     // buffered blocks evicted or made useless
    uint64_t gap_buffer_bytes; // bytes held in the gap buffer now
    uint64_t range_requests;   // RANGE_REQUESTs sent
    uint64_t ranges_served;    // RANGE_REQUESTs answered
    uint64_t pulls_timed_out;  // pulls re-asked after range_timeout_ms
    uint64_t pulls_dropped;    // pulls given up after range_retries
    uint64_t rejected;         // malformed or inconsistent messages
    uint64_t source_errors;    // source callbacks failing (not gaps)
    uint64_t send_errors;      // transport send failures
    uint64_t batches;          // batched merges (merge_blocks calls)
    uint64_t max_batch_blocks; // most blocks in one batched merge
} ms_gossip_stats_t;

typedef struct ms_gossip ms_gossip_t;

//  Fill cfg with the defaults shown above (DESIGN.md "Defaults":
//  antientropy_ms 1000).
void ms_gossip_config_default(ms_gossip_config_t *cfg);

//  Create a gossip instance for node self over source and transport
//  (copied; their args must outlive the instance). cfg NULL means the
//  defaults. The first anti-entropy round is due at now_ms +
//  antientropy_ms. Returns NULL only when out of memory or when cfg is
//  out of range (antientropy_ms < 1, range_records < 1, max_pulls < 1,
//  max_push_peers < 1). Caller owns the result; free it with
//  ms_gossip_destroy().
ms_gossip_t *ms_gossip_new(const uint8_t self[MS_GOSSIP_ID_BYTES],
                           const ms_gossip_config_t *cfg,
                           const ms_gossip_source_t *source,
                           const ms_gossip_transport_t *transport,
                           int64_t now_ms);

//  Free the instance and its buffers; NULL-safe, nulls *self_p.
void ms_gossip_destroy(ms_gossip_t **self_p);

//  Eager push: send block to every peer of the active view. Call it after
//  the block's local commit is durable (DESIGN.md). Gossip forwards
//  blocks from peers by itself (once, when they brought new records), so
//  the owner calls this only for its own blocks. A no-op when push is
//  off. Returns MS_OK; MS_ERR_INVALID for a malformed block (n_records
//  out of 1..64, seqs not contiguous); send errors are counted, not
//  returned.
int ms_gossip_push(ms_gossip_t *self, const ms_gossip_block_t *block);

//  Handle one message from peer `from` at monotonic time now_ms: merge
//  blocks (forwarding those that brought news, buffering those above a
//  gap), answer digests, vectors and range requests. Returns MS_OK when
//  the message was handled, MS_ERR_PROTOCOL when it was malformed or
//  inconsistent (counted in stats.rejected and otherwise ignored: state
//  unchanged). Source failures are counted, never fatal.
int ms_gossip_on_message(ms_gossip_t *self,
                         const uint8_t from[MS_GOSSIP_ID_BYTES],
                         const ms_gossip_msg_t *msg, int64_t now_ms);

//  Batched merging (catch-up: one durable commit per batch, not per
//  block). Between ms_gossip_batch_begin and ms_gossip_batch_end, the
//  BLOCKs handed to ms_gossip_on_message are checked for shape at once
//  (a malformed one is still rejected there) and copied into a batch
//  instead of being merged one by one; ms_gossip_batch_end merges the
//  batch with the source's merge_blocks (one commit), then does what a
//  merge triggers, in arrival order: forwarding of pushed blocks that
//  brought news (after the commit: push only what is durable), the gap
//  buffer and pulls for blocks above a gap, the next pull windows. The
//  batch is also merged when it reaches batch_blocks or batch_bytes, and
//  before any other message is handled (a DIGEST, VECTOR or
//  RANGE_REQUEST always sees every block that came before it), so the
//  outcome is the one of merging each block on arrival. A no-op pair
//  when the source has no merge_blocks. Calls do not nest; the owner
//  opens a batch around one drain of its sockets.
void ms_gossip_batch_begin(ms_gossip_t *self);

//  Merge the blocks held since ms_gossip_batch_begin (see there) at
//  monotonic time now_ms, and end the batch. Source failures are counted,
//  never fatal. Returns MS_OK.
int ms_gossip_batch_end(ms_gossip_t *self, int64_t now_ms);

//  Do what is due at monotonic time now_ms: start an anti-entropy round
//  (VECTOR_DIGEST to one random peer) every antientropy_ms, re-ask pulls
//  that made no progress for range_timeout_ms. Returns MS_OK.
int ms_gossip_tick(ms_gossip_t *self, int64_t now_ms);

//  The monotonic time (ms) at which ms_gossip_tick has work next, for
//  the owner's poll timeout.
int64_t ms_gossip_next_deadline(ms_gossip_t *self);

//  Copy the counters into *out.
void ms_gossip_stats(ms_gossip_t *self, ms_gossip_stats_t *out);

//  Number of streams being pulled now (catch-up in progress when > 0).
size_t ms_gossip_pull_count(ms_gossip_t *self);

//  Name of a message kind ("digest", "vector", "range_request",
//  "block"), "unknown" otherwise; for /metrics labels and logs.
const char *ms_gossip_msg_kind_name(int kind);

#endif
