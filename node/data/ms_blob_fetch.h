/*  =========================================================================
    ms_blob_fetch - fetch blobs by hash from peers, in chunks, windowed

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Pure logic (DESIGN.md "Datasets"; docs/POOL.md "Datasets and blobs"):
    no sockets, no clock, no threads. The owner (ms_node) starts a fetch
    for a blob of known hash and size with the peers that may hold it,
    feeds it the BLOB_CHUNK and BLOB_MISSING envelopes that arrive
    (ms_blob_fetch_on_message) and the monotonic time (ms_blob_fetch_tick);
    it sends BLOB_REQUESTs through a small transport and writes chunks at
    their offsets into a temp file of an ms_blob_store, which checks the
    whole hash before the blob gets its name. A callback reports the end.

    The serving side is one function, ms_blob_serve: a BLOB_REQUEST in, a
    BLOB_CHUNK or BLOB_MISSING out.

    Envelopes passed to the transport are borrowed for the call (encode
    or copy them). Thread rule: one thread (the node actor); callbacks are
    called from inside start, on_message, tick and cancel and must not
    block; a done callback may start or cancel other fetches.
*/
#ifndef MS_BLOB_FETCH_H
#define MS_BLOB_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_blob_store.h"
#include "ms_err.h"
#include "ms_hash.h"
#include "ms_wire.h"

#define MS_BLOB_PEER_ID_BYTES 32 // node id size (MS_WIRE_ID_BYTES)
//  Chunk sizes accepted in the config (a BLOB_REQUEST asks one chunk).
#define MS_BLOB_CHUNK_MIN_BYTES (256u * 1024u)
#define MS_BLOB_CHUNK_MAX_BYTES MS_WIRE_BLOB_CHUNK_MAX_BYTES

//  How messages leave.
typedef struct {
    void *arg; // the mesh adapter, or a test's fake network

    //  Queue env (borrowed: encode or copy it) for peer `to`. Must not
    //  block. Returns MS_OK or a negative code (counted; a request that
    //  could not be sent times out like a lost one).
    int (*send)(void *arg, const uint8_t to[MS_BLOB_PEER_ID_BYTES],
                const ms_wire_envelope_t *env);
} ms_blob_transport_t;

//  Settings. Start from ms_blob_fetch_config_default() and change fields.
typedef struct {
    uint32_t chunk_bytes;       // bytes per request, 256 KiB..1 MiB (1 MiB)
    uint32_t window;            // requests in flight per fetch, >= 1 (8)
    int64_t request_timeout_ms; // a request unanswered this long is
                                // re-asked elsewhere (5000)
    uint32_t peer_timeouts;     // a peer is dropped after this many
                                // timeouts in a row (2)
    uint32_t max_attempts;      // whole-blob tries before giving up on
                                // hash mismatches (4)
    size_t max_fetches;         // fetches at once; more are refused (16)
} ms_blob_fetch_config_t;

//  Counters for /metrics and tests.
typedef struct {
    uint64_t requests_sent;    // BLOB_REQUESTs sent
    uint64_t chunks_received;  // chunks written
    uint64_t bytes_received;   // their bytes
    uint64_t chunks_rejected;  // chunks not asked for, from the wrong
                               // peer, or of the wrong size (ignored)
    uint64_t missing_received; // BLOB_MISSING answers (peer dropped)
    uint64_t timeouts;         // requests re-asked after a timeout
    uint64_t peers_dropped;    // peers given up (missing, timeouts, lies)
    uint64_t hash_mismatches;  // whole blobs refused by the hash check
    uint64_t completed;        // fetches ended MS_OK
    uint64_t failed;           // fetches ended with an error
    uint64_t send_errors;      // transport send failures
    uint32_t max_in_flight;    // most requests in flight in one fetch
} ms_blob_fetch_stats_t;

//  End of a fetch: status MS_OK (the blob is in the store), or
//  MS_ERR_NOTFOUND (no peer left that has it), MS_ERR_PROTOCOL (hash
//  mismatch from every peer tried, max_attempts reached),
//  MS_ERR_STORE_FULL, MS_ERR_IO, MS_ERR_INTERRUPTED (cancelled);
//  reason is a one-line text (borrowed for the call).
typedef void(ms_blob_fetch_done_fn)(void *arg, const ms_hash_t *hash,
                                    int status, const char *reason);

typedef struct ms_blob_fetch ms_blob_fetch_t;

//  Fill cfg with the defaults shown above.
void ms_blob_fetch_config_default(ms_blob_fetch_config_t *cfg);

//  Create a fetcher writing into store (borrowed: must outlive it) and
//  sending through transport (copied; its arg must outlive it). done is
//  called once per fetch (may be NULL). cfg NULL means the defaults.
//  Returns NULL when out of memory or when cfg is out of range
//  (chunk_bytes outside 256 KiB..1 MiB, window 0, request_timeout_ms < 1,
//  peer_timeouts 0, max_attempts 0, max_fetches 0). Caller owns the
//  result; free it with ms_blob_fetch_destroy().
ms_blob_fetch_t *ms_blob_fetch_new(ms_blob_store_t *store,
                                   const ms_blob_fetch_config_t *cfg,
                                   const ms_blob_transport_t *transport,
                                   ms_blob_fetch_done_fn *done, void *done_arg);

//  Cancel every fetch (no callbacks), remove their temp files, free;
//  NULL-safe, nulls *self_p.
void ms_blob_fetch_destroy(ms_blob_fetch_t **self_p);

//  Fetch the blob of hash and size bytes (from a DATASET record) from
//  peers (n_peers ids, copied; duplicates ignored). Sends the first
//  window of requests at once. When the store holds the blob already,
//  done is called with MS_OK before this returns. Starting a hash being
//  fetched adds the peers to it (size must match). Returns MS_OK;
//  MS_ERR_INVALID when n_peers is 0 for a blob not held, or size differs
//  from the running fetch's; MS_ERR_RANGE when max_fetches are running;
//  MS_ERR_STORE_FULL when size exceeds the quota; MS_ERR_IO, MS_ERR_NOMEM.
//  On an error done is not called.
int ms_blob_fetch_start(ms_blob_fetch_t *self, const ms_hash_t *hash,
                        uint64_t size,
                        const uint8_t (*peers)[MS_BLOB_PEER_ID_BYTES],
                        size_t n_peers, int64_t now_ms);

//  Stop the fetch of hash: done is called with MS_ERR_INTERRUPTED and the
//  temp file removed. Late chunks are then ignored. Returns MS_OK or
//  MS_ERR_NOTFOUND.
int ms_blob_fetch_cancel(ms_blob_fetch_t *self, const ms_hash_t *hash);

//  Handle an envelope from peer `from`: BLOB_CHUNK (written when it is
//  the chunk asked of that peer, whole and of the right total), or
//  BLOB_MISSING (the peer is dropped, its chunks re-asked elsewhere).
//  Completes the fetch (hash check, commit, done) when the last chunk
//  lands. Returns MS_OK when handled (stray and late chunks are counted
//  and ignored: MS_OK too); MS_ERR_PROTOCOL for another body kind.
int ms_blob_fetch_on_message(ms_blob_fetch_t *self,
                             const uint8_t from[MS_BLOB_PEER_ID_BYTES],
                             const ms_wire_envelope_t *env, int64_t now_ms);

//  Re-ask requests unanswered for request_timeout_ms (dropping peers
//  after peer_timeouts in a row); fail fetches left with no peer.
//  Returns MS_OK.
int ms_blob_fetch_tick(ms_blob_fetch_t *self, int64_t now_ms);

//  Monotonic time (ms) of the next request deadline, INT64_MAX when
//  nothing is in flight; for the owner's poll timeout.
int64_t ms_blob_fetch_next_deadline(ms_blob_fetch_t *self);

//  Fetches running now.
size_t ms_blob_fetch_count(ms_blob_fetch_t *self);

//  Requests in flight now, all fetches together.
size_t ms_blob_fetch_in_flight(ms_blob_fetch_t *self);

//  Copy the counters into *out.
void ms_blob_fetch_stats(ms_blob_fetch_t *self, ms_blob_fetch_stats_t *out);

//  Answer a BLOB_REQUEST from peer `from` out of store: a BLOB_CHUNK of
//  min(length, size - offset) bytes, or BLOB_MISSING when the blob is not
//  held (or cannot be read). Allocates at most
//  MS_WIRE_BLOB_CHUNK_MAX_BYTES for the call. Returns MS_OK when an
//  answer was sent; MS_ERR_PROTOCOL (nothing sent) for length 0, length
//  over MS_WIRE_BLOB_CHUNK_MAX_BYTES or offset + length overflowing;
//  MS_ERR_RANGE (nothing sent) for an offset at or past the end of a
//  held blob; MS_ERR_IO after sending BLOB_MISSING for a read failure;
//  the transport's code when send fails.
int ms_blob_serve(ms_blob_store_t *store,
                  const uint8_t from[MS_BLOB_PEER_ID_BYTES],
                  const ms_wire_blob_request_t *request,
                  const ms_blob_transport_t *transport);

#endif
