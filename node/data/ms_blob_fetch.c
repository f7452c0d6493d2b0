/*  =========================================================================
    ms_blob_fetch - fetch blobs by hash from peers, in chunks, windowed

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    What it does (DESIGN.md "Datasets": "fetched in chunks with flow
    control and checked against their hash"; docs/POOL.md "Datasets and
    blobs").

    A fetch knows the blob's hash and size (from a DATASET record) and a
    list of peers that may hold it. The blob is cut into chunks of
    chunk_bytes (the last one shorter); chunk i is asked with one
    BLOB_REQUEST {hash, i * chunk_bytes, length}. A chunk is MISSING,
    ASKED (of one peer, with a deadline) or DONE.

    Flow control is a window of requests, as in TCP or BitTorrent's
    request pipelining: at most `window` chunks are ASKED at once per
    fetch, and each chunk that lands (or fails) frees a slot that is
    refilled at once with the lowest MISSING chunk. So the bytes in flight
    towards this node are bounded by window x chunk_bytes (8 MiB by
    default), the link stays busy (a window of 8 covers the round trip),
    and the pace is set by the receiver, who writes each chunk straight to
    the temp file at its offset with pwrite(2): no reassembly buffer,
    memory is one small state per chunk whatever the blob size.

    Several peers: each new request goes to the live peer with the fewest
    requests in flight (round-robin among equals), so a fast peer, which
    empties its queue sooner, gets more. A peer that answers BLOB_MISSING
    is dropped; a request unanswered for request_timeout_ms goes back to
    MISSING and is asked again (of the least loaded peer), and a peer
    that times out peer_timeouts times in a row is dropped. A chunk is
    accepted only from the peer it was asked of, at the offset asked, of
    the length asked and with the right total; anything else (late answers
    from a peer since given up, duplicates, garbage) is counted and
    ignored. When no peer is left the fetch fails (MS_ERR_NOTFOUND).

    Hash check. Only the whole blob has a known hash (the DATASET record
    carries one per file), so a lying peer is caught at the end: the store
    hashes the temp file and refuses it. The chunks record who sent them:
    if one peer sent everything, that peer is dropped. If several did,
    the liar is not known, so the next attempt asks every chunk of one
    peer alone ("solo"), then of the next one, and so on, dropping each
    peer whose solo copy mismatched; an honest peer ends it. At most
    max_attempts whole-blob tries are made, then the fetch fails
    (MS_ERR_PROTOCOL, "hash mismatch"). Not done: per-chunk hashes (a
    Merkle tree or BitTorrent's piece list) would find the liar after one
    pass and re-fetch only bad chunks, but need a field in the DATASET
    record that the wire does not have yet; a lying peer is rare in a pool
    of members, so the simple scheme costs little in practice.

    A crash mid-fetch leaves only a temp file in blobs/tmp/, which the
    store removes at open: no half blob is ever under its name.

    Serving (ms_blob_serve) reads min(length, size - offset) bytes at the
    offset from the store (copy or registered file) and answers one
    BLOB_CHUNK; a blob not held gets BLOB_MISSING; a malformed request
    (length 0 or over 1 MiB, an offset past the end) gets nothing and an
    error code the owner counts: a hostile peer cannot make a node read
    or allocate more than one chunk per request.
*/
#include "ms_blob_fetch.h"
#include "ms_array.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum {
    S_CHUNK_MISSING = 0, // to ask
    S_CHUNK_ASKED = 1,   // requested of chunk.peer, until deadline_at
    S_CHUNK_DONE = 2,    // written to the temp file
} s_chunk_state_t;

typedef struct {
    uint8_t state;       // s_chunk_state_t
    uint32_t peer;       // index in fetch.peers of the peer asked / sender
    int64_t deadline_at; // ASKED: re-ask after this monotonic time
} s_chunk_t;

typedef struct {
    uint8_t id[MS_BLOB_PEER_ID_BYTES]; // node id
    bool dropped;                      // given up: missing, timeouts, lies
    bool tried_solo;                   // was the only source of an attempt
    uint32_t in_flight;                // requests outstanding to it
    uint32_t timeouts_in_row;          // reset by a good chunk
} s_peer_t;

typedef struct {
    ms_hash_t hash;      // the blob
    uint64_t size_bytes; // its size
    uint64_t n_chunks;   // ceil(size / chunk_bytes)
    s_chunk_t *chunks;   // n_chunks states
    uint64_t n_done;     // chunks DONE
    uint64_t next_hint;  // no MISSING chunk below this index
    uint32_t in_flight;  // chunks ASKED
    s_peer_t *peers;     // peers that may hold the blob
    size_t n_peers;      //
    size_t cap_peers;    //
    size_t rr;           // round-robin start among equally loaded peers
    ssize_t solo;        // index of the only peer asked, -1: spread
    uint32_t attempts;   // whole-blob tries started
    int fd;              // temp file, -1 when none
    char *tmp_path;      // its path, malloc'd
} s_fetch_t;

struct ms_blob_fetch {
    ms_blob_store_t *store;        // borrowed
    ms_blob_fetch_config_t cfg;    // settings
    ms_blob_transport_t transport; // copied
    ms_blob_fetch_done_fn *done;   // may be NULL
    void *done_arg;                //
    s_fetch_t **fetches;           // running fetches
    size_t n_fetches;              //
    ms_blob_fetch_stats_t stats;   // counters
};

//  --------------------------------------------------------------------------
//  Defaults.

void
ms_blob_fetch_config_default(ms_blob_fetch_config_t *cfg)
{
    cfg->chunk_bytes = MS_BLOB_CHUNK_MAX_BYTES;
    cfg->window = 8;
    cfg->request_timeout_ms = 5000;
    cfg->peer_timeouts = 2;
    cfg->max_attempts = 4;
    cfg->max_fetches = 16;
}

//  --------------------------------------------------------------------------
//  Create a fetcher.

ms_blob_fetch_t *
ms_blob_fetch_new(ms_blob_store_t *store, const ms_blob_fetch_config_t *cfg,
                  const ms_blob_transport_t *transport,
                  ms_blob_fetch_done_fn *done, void *done_arg)
{
    ms_blob_fetch_config_t c;
    if (cfg)
        c = *cfg;
    else
        ms_blob_fetch_config_default(&c);
    if (!store || !transport || !transport->send ||
        c.chunk_bytes < MS_BLOB_CHUNK_MIN_BYTES ||
        c.chunk_bytes > MS_BLOB_CHUNK_MAX_BYTES || c.window == 0 ||
        c.request_timeout_ms < 1 || c.peer_timeouts == 0 ||
        c.max_attempts == 0 || c.max_fetches == 0)
        return NULL;
    ms_blob_fetch_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->fetches = calloc(c.max_fetches, sizeof(s_fetch_t *));
    if (!self->fetches) {
        free(self);
        return NULL;
    }
    self->store = store;
    self->cfg = c;
    self->transport = *transport;
    self->done = done;
    self->done_arg = done_arg;
    return self;
}

//  --------------------------------------------------------------------------
//  Close and remove a fetch's temp file.

static void
s_fetch_drop_tmp(ms_blob_fetch_t *self, s_fetch_t *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp_path)
        ms_blob_store_tmp_discard(self->store, f->tmp_path);
    free(f->tmp_path);
    f->tmp_path = NULL;
}

//  --------------------------------------------------------------------------
//  Free a fetch (temp file removed).

static void
s_fetch_free(ms_blob_fetch_t *self, s_fetch_t *f)
{
    if (!f)
        return;
    s_fetch_drop_tmp(self, f);
    free(f->chunks);
    free(f->peers);
    free(f);
}

//  --------------------------------------------------------------------------
//  Free the fetcher and every fetch.

void
ms_blob_fetch_destroy(ms_blob_fetch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_blob_fetch_t *self = *self_p;
    for (size_t i = 0; i < self->n_fetches; i++)
        s_fetch_free(self, self->fetches[i]);
    free(self->fetches);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Index of the fetch of hash, or -1.

static ssize_t
s_find(ms_blob_fetch_t *self, const ms_hash_t *hash)
{
    for (size_t i = 0; i < self->n_fetches; i++)
        if (memcmp(self->fetches[i]->hash.bytes, hash->bytes, MS_HASH_BYTES) ==
            0)
            return (ssize_t) i;
    return -1;
}

//  --------------------------------------------------------------------------
//  Remove fetch f from the table, free it, then report status.

static void s_finish(ms_blob_fetch_t *self, s_fetch_t *f, int status,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
s_finish(ms_blob_fetch_t *self, s_fetch_t *f, int status, const char *fmt, ...)
{
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    ms_hash_t hash = f->hash;
    ssize_t i = s_find(self, &hash);
    if (i >= 0)
        self->fetches[i] = self->fetches[--self->n_fetches];
    s_fetch_free(self, f);
    if (status == MS_OK)
        self->stats.completed++;
    else
        self->stats.failed++;
    if (self->done)
        self->done(self->done_arg, &hash, status, reason);
}

//  --------------------------------------------------------------------------
//  Bytes of chunk idx.

static uint32_t
s_chunk_len(ms_blob_fetch_t *self, const s_fetch_t *f, uint64_t idx)
{
    uint64_t off = idx * self->cfg.chunk_bytes;
    uint64_t left = f->size_bytes - off;
    return left < self->cfg.chunk_bytes ? (uint32_t) left
                                        : self->cfg.chunk_bytes;
}

//  --------------------------------------------------------------------------
//  Number of peers not dropped.

static size_t
s_live_peers(const s_fetch_t *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_peers; i++)
        n += !f->peers[i].dropped;
    return n;
}

//  --------------------------------------------------------------------------
//  The peer to ask next: the solo one, or the least loaded live one.

static ssize_t
s_pick_peer(s_fetch_t *f)
{
    if (f->solo >= 0)
        return f->peers[f->solo].dropped ? -1 : f->solo;
    ssize_t best = -1;
    for (size_t k = 0; k < f->n_peers; k++) {
        size_t i = (f->rr + k) % f->n_peers;
        if (f->peers[i].dropped)
            continue;
        if (best < 0 || f->peers[i].in_flight < f->peers[best].in_flight)
            best = (ssize_t) i;
    }
    if (best >= 0)
        f->rr = ((size_t) best + 1) % f->n_peers;
    return best;
}

//  --------------------------------------------------------------------------
//  Ask MISSING chunks until the window is full or no peer is left.

static void
s_fill(ms_blob_fetch_t *self, s_fetch_t *f, int64_t now_ms)
{
    while (f->in_flight < self->cfg.window) {
        while (f->next_hint < f->n_chunks &&
               f->chunks[f->next_hint].state != S_CHUNK_MISSING)
            f->next_hint++;
        if (f->next_hint >= f->n_chunks)
            return;
        ssize_t p = s_pick_peer(f);
        if (p < 0)
            return;
        uint64_t idx = f->next_hint;
        s_chunk_t *c = &f->chunks[idx];
        c->state = S_CHUNK_ASKED;
        c->peer = (uint32_t) p;
        c->deadline_at = now_ms + self->cfg.request_timeout_ms;
        f->in_flight++;
        f->peers[p].in_flight++;
        if (f->in_flight > self->stats.max_in_flight)
            self->stats.max_in_flight = f->in_flight;
        ms_wire_envelope_t env;
        memset(&env, 0, sizeof env);
        env.protocol = MS_PROTOCOL_VERSION;
        env.body = MS_WIRE_BODY_BLOB_REQUEST;
        memcpy(env.blob_request.hash, f->hash.bytes, MS_HASH_BYTES);
        env.blob_request.offset = idx * self->cfg.chunk_bytes;
        env.blob_request.length = s_chunk_len(self, f, idx);
        self->stats.requests_sent++;
        if (self->transport.send(self->transport.arg, f->peers[p].id, &env) !=
            MS_OK)
            self->stats.send_errors++; // times out like a lost request
    }
}

//  --------------------------------------------------------------------------
//  Return the chunk to MISSING (it was ASKED).

static void
s_unask(s_fetch_t *f, uint64_t idx)
{
    s_chunk_t *c = &f->chunks[idx];
    c->state = S_CHUNK_MISSING;
    f->in_flight--;
    f->peers[c->peer].in_flight--;
    if (idx < f->next_hint)
        f->next_hint = idx;
}

//  --------------------------------------------------------------------------
//  Give up peer p: its requests go back to MISSING.

static void
s_drop_peer(ms_blob_fetch_t *self, s_fetch_t *f, size_t p)
{
    if (f->peers[p].dropped)
        return;
    f->peers[p].dropped = true;
    self->stats.peers_dropped++;
    for (uint64_t i = 0; i < f->n_chunks && f->peers[p].in_flight > 0; i++)
        if (f->chunks[i].state == S_CHUNK_ASKED && f->chunks[i].peer == p)
            s_unask(f, i);
}

//  --------------------------------------------------------------------------
//  Open a fresh temp file and mark every chunk MISSING (a new attempt).

static int
s_begin_attempt(ms_blob_fetch_t *self, s_fetch_t *f)
{
    s_fetch_drop_tmp(self, f);
    int rc = ms_blob_store_tmp_create(self->store, f->size_bytes, &f->fd,
                                      &f->tmp_path);
    if (rc != MS_OK)
        return rc;
    memset(f->chunks, 0, f->n_chunks * sizeof(s_chunk_t));
    for (size_t i = 0; i < f->n_peers; i++)
        f->peers[i].in_flight = 0;
    f->n_done = 0;
    f->next_hint = 0;
    f->in_flight = 0;
    f->attempts++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  After the peer set shrank: pick a new solo peer if needed; fail when
//  no peer is left. Returns false when the fetch was finished (freed).

static bool
s_after_drop(ms_blob_fetch_t *self, s_fetch_t *f, int64_t now_ms)
{
    if (f->solo >= 0 && f->peers[f->solo].dropped) {
        //  The solo peer went away (missing or timeouts): the next one
        //  not tried alone carries on; chunks written so far are kept
        //  (the hash check decides; a mismatch then blames several).
        f->solo = -1;
        for (size_t i = 0; i < f->n_peers; i++)
            if (!f->peers[i].dropped && !f->peers[i].tried_solo) {
                f->solo = (ssize_t) i;
                f->peers[i].tried_solo = true;
                break;
            }
    }
    if (s_live_peers(f) == 0) {
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&f->hash, hex);
        s_finish(self, f, MS_ERR_NOTFOUND,
                 "blob %.12s: no peer left that has it (%zu asked: missing "
                 "or not answering)",
                 hex, f->n_peers);
        return false;
    }
    s_fill(self, f, now_ms);
    return true;
}

//  --------------------------------------------------------------------------
//  Every chunk is written: commit (hash check) or try again.

static void
s_complete(ms_blob_fetch_t *self, s_fetch_t *f, int64_t now_ms)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&f->hash, hex);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    int rc = ms_blob_store_tmp_commit(self->store, &f->hash, f->tmp_path);
    free(f->tmp_path); // consumed by commit either way
    f->tmp_path = NULL;
    if (rc == MS_OK) {
        s_finish(self, f, MS_OK, "blob %.12s: %llu bytes fetched", hex,
                 (unsigned long long) f->size_bytes);
        return;
    }
    if (rc != MS_ERR_INVALID) {
        s_finish(self, f, rc, "blob %.12s: cannot store: %s", hex,
                 ms_strerror(rc));
        return;
    }
    //  Hash mismatch: blame the sender when there was only one.
    self->stats.hash_mismatches++;
    ssize_t only = -1;
    bool several = false;
    for (uint64_t i = 0; i < f->n_chunks && !several; i++) {
        if (only < 0)
            only = (ssize_t) f->chunks[i].peer;
        else if ((ssize_t) f->chunks[i].peer != only)
            several = true;
    }
    if (!several && only >= 0)
        s_drop_peer(self, f, (size_t) only);
    f->solo = -1;
    for (size_t i = 0; i < f->n_peers; i++)
        if (!f->peers[i].dropped && !f->peers[i].tried_solo) {
            f->solo = (ssize_t) i;
            break;
        }
    if (f->attempts >= self->cfg.max_attempts || f->solo < 0) {
        s_finish(self, f, MS_ERR_PROTOCOL,
                 "blob %.12s: hash mismatch after %u attempt(s) from %zu "
                 "peer(s); refused",
                 hex, f->attempts, f->n_peers);
        return;
    }
    f->peers[f->solo].tried_solo = true;
    rc = s_begin_attempt(self, f);
    if (rc != MS_OK) {
        s_finish(self, f, rc, "blob %.12s: cannot create temp file: %s", hex,
                 ms_strerror(rc));
        return;
    }
    s_fill(self, f, now_ms);
}

//  --------------------------------------------------------------------------
//  Add peers not known yet (dropped peers stay dropped).

static int
s_add_peers(s_fetch_t *f, const uint8_t (*peers)[MS_BLOB_PEER_ID_BYTES],
            size_t n_peers)
{
    for (size_t k = 0; k < n_peers; k++) {
        bool known = false;
        for (size_t i = 0; i < f->n_peers && !known; i++)
            known =
                memcmp(f->peers[i].id, peers[k], MS_BLOB_PEER_ID_BYTES) == 0;
        if (known)
            continue;
        if (ms_array_grow(&f->peers, &f->cap_peers, f->n_peers,
                          sizeof *f->peers) != MS_OK)
            return MS_ERR_NOMEM;
        memset(&f->peers[f->n_peers], 0, sizeof(s_peer_t));
        memcpy(f->peers[f->n_peers].id, peers[k], MS_BLOB_PEER_ID_BYTES);
        f->n_peers++;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Start (or widen) the fetch of a blob.

int
ms_blob_fetch_start(ms_blob_fetch_t *self, const ms_hash_t *hash, uint64_t size,
                    const uint8_t (*peers)[MS_BLOB_PEER_ID_BYTES],
                    size_t n_peers, int64_t now_ms)
{
    ssize_t i = s_find(self, hash);
    if (i >= 0) {
        s_fetch_t *f = self->fetches[i];
        if (f->size_bytes != size)
            return MS_ERR_INVALID;
        int rc = s_add_peers(f, peers, n_peers);
        if (rc == MS_OK)
            s_fill(self, f, now_ms);
        return rc;
    }
    if (ms_blob_store_has(self->store, hash)) {
        self->stats.completed++;
        if (self->done)
            self->done(self->done_arg, hash, MS_OK, "held already");
        return MS_OK;
    }
    if (n_peers == 0 || !peers)
        return MS_ERR_INVALID;
    if (self->n_fetches >= self->cfg.max_fetches)
        return MS_ERR_RANGE;
    s_fetch_t *f = calloc(1, sizeof *f);
    if (!f)
        return MS_ERR_NOMEM;
    f->hash = *hash;
    f->size_bytes = size;
    f->fd = -1;
    f->solo = -1;
    f->n_chunks =
        size / self->cfg.chunk_bytes + (size % self->cfg.chunk_bytes != 0);
    int rc = MS_OK;
    if (f->n_chunks > SIZE_MAX / sizeof(s_chunk_t)) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    f->chunks = calloc(f->n_chunks ? f->n_chunks : 1, sizeof(s_chunk_t));
    if (!f->chunks) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    if ((rc = s_add_peers(f, peers, n_peers)) != MS_OK ||
        (rc = s_begin_attempt(self, f)) != MS_OK)
        goto fail;
    self->fetches[self->n_fetches++] = f;
    if (f->n_chunks == 0)
        s_complete(self, f, now_ms); // the empty blob: nothing to ask
    else
        s_fill(self, f, now_ms);
    return MS_OK;
fail:
    s_fetch_free(self, f);
    return rc;
}

//  --------------------------------------------------------------------------
//  Cancel a fetch.

int
ms_blob_fetch_cancel(ms_blob_fetch_t *self, const ms_hash_t *hash)
{
    ssize_t i = s_find(self, hash);
    if (i < 0)
        return MS_ERR_NOTFOUND;
    s_finish(self, self->fetches[i], MS_ERR_INTERRUPTED, "cancelled");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Index of peer id in fetch f, or -1.

static ssize_t
s_peer_index(const s_fetch_t *f, const uint8_t id[MS_BLOB_PEER_ID_BYTES])
{
    for (size_t i = 0; i < f->n_peers; i++)
        if (memcmp(f->peers[i].id, id, MS_BLOB_PEER_ID_BYTES) == 0)
            return (ssize_t) i;
    return -1;
}

//  --------------------------------------------------------------------------
//  A BLOB_CHUNK arrived.

static void
s_on_chunk(ms_blob_fetch_t *self, const uint8_t from[MS_BLOB_PEER_ID_BYTES],
           const ms_wire_blob_chunk_t *ch, int64_t now_ms)
{
    ms_hash_t hash;
    memcpy(hash.bytes, ch->hash, MS_HASH_BYTES);
    ssize_t fi = s_find(self, &hash);
    if (fi < 0) {
        self->stats.chunks_rejected++; // late, or never asked
        return;
    }
    s_fetch_t *f = self->fetches[fi];
    ssize_t p = s_peer_index(f, from);
    uint64_t idx = ch->offset / self->cfg.chunk_bytes;
    if (p < 0 || f->peers[p].dropped || ch->total != f->size_bytes ||
        ch->offset % self->cfg.chunk_bytes != 0 || idx >= f->n_chunks ||
        f->chunks[idx].state != S_CHUNK_ASKED ||
        f->chunks[idx].peer != (uint32_t) p ||
        ch->data_bytes != s_chunk_len(self, f, idx) ||
        (ch->data_bytes > 0 && !ch->data)) {
        self->stats.chunks_rejected++;
        return;
    }
    size_t done = 0;
    while (done < ch->data_bytes) {
        ssize_t w = pwrite(f->fd, ch->data + done, ch->data_bytes - done,
                           (off_t) (ch->offset + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t) w;
    }
    if (done < ch->data_bytes) {
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&f->hash, hex);
        s_finish(self, f, MS_ERR_IO, "blob %.12s: cannot write temp file: %s",
                 hex, strerror(errno));
        return;
    }
    s_chunk_t *c = &f->chunks[idx];
    c->state = S_CHUNK_DONE;
    f->in_flight--;
    f->peers[p].in_flight--;
    f->peers[p].timeouts_in_row = 0;
    f->n_done++;
    self->stats.chunks_received++;
    self->stats.bytes_received += ch->data_bytes;
    if (f->n_done == f->n_chunks)
        s_complete(self, f, now_ms);
    else
        s_fill(self, f, now_ms);
}

//  --------------------------------------------------------------------------
//  A BLOB_MISSING arrived: drop that peer for that blob.

static void
s_on_missing(ms_blob_fetch_t *self, const uint8_t from[MS_BLOB_PEER_ID_BYTES],
             const ms_wire_blob_missing_t *m, int64_t now_ms)
{
    ms_hash_t hash;
    memcpy(hash.bytes, m->hash, MS_HASH_BYTES);
    ssize_t fi = s_find(self, &hash);
    if (fi < 0)
        return;
    s_fetch_t *f = self->fetches[fi];
    ssize_t p = s_peer_index(f, from);
    if (p < 0 || f->peers[p].dropped)
        return;
    self->stats.missing_received++;
    s_drop_peer(self, f, (size_t) p);
    s_after_drop(self, f, now_ms);
}

//  --------------------------------------------------------------------------
//  Handle a BLOB_CHUNK or BLOB_MISSING.

int
ms_blob_fetch_on_message(ms_blob_fetch_t *self,
                         const uint8_t from[MS_BLOB_PEER_ID_BYTES],
                         const ms_wire_envelope_t *env, int64_t now_ms)
{
    if (env->body == MS_WIRE_BODY_BLOB_CHUNK)
        s_on_chunk(self, from, &env->blob_chunk, now_ms);
    else if (env->body == MS_WIRE_BODY_BLOB_MISSING)
        s_on_missing(self, from, &env->blob_missing, now_ms);
    else
        return MS_ERR_PROTOCOL;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Timeouts of one fetch. Returns false when it was finished.

static bool
s_tick_fetch(ms_blob_fetch_t *self, s_fetch_t *f, int64_t now_ms)
{
    bool dropped = false;
    for (uint64_t i = 0; i < f->n_chunks; i++) {
        s_chunk_t *c = &f->chunks[i];
        if (c->state != S_CHUNK_ASKED || c->deadline_at > now_ms)
            continue;
        uint32_t p = c->peer;
        self->stats.timeouts++;
        s_unask(f, i);
        if (++f->peers[p].timeouts_in_row >= self->cfg.peer_timeouts &&
            !f->peers[p].dropped) {
            s_drop_peer(self, f, p);
            dropped = true;
        }
    }
    if (dropped)
        return s_after_drop(self, f, now_ms);
    s_fill(self, f, now_ms);
    return true;
}

//  --------------------------------------------------------------------------
//  Re-ask what timed out.

int
ms_blob_fetch_tick(ms_blob_fetch_t *self, int64_t now_ms)
{
    //  Callbacks may start or cancel fetches: walk a copy of the hashes.
    size_t n = self->n_fetches;
    if (n == 0)
        return MS_OK;
    ms_hash_t *hashes = malloc(n * sizeof *hashes);
    if (!hashes)
        return MS_OK; // try again next tick
    for (size_t i = 0; i < n; i++)
        hashes[i] = self->fetches[i]->hash;
    for (size_t i = 0; i < n; i++) {
        ssize_t fi = s_find(self, &hashes[i]);
        if (fi >= 0)
            s_tick_fetch(self, self->fetches[fi], now_ms);
    }
    free(hashes);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Earliest request deadline.

int64_t
ms_blob_fetch_next_deadline(ms_blob_fetch_t *self)
{
    int64_t best = INT64_MAX;
    for (size_t k = 0; k < self->n_fetches; k++) {
        const s_fetch_t *f = self->fetches[k];
        for (uint64_t i = 0; i < f->n_chunks; i++)
            if (f->chunks[i].state == S_CHUNK_ASKED &&
                f->chunks[i].deadline_at < best)
                best = f->chunks[i].deadline_at;
    }
    return best;
}

//  --------------------------------------------------------------------------
//  Fetches running.

size_t
ms_blob_fetch_count(ms_blob_fetch_t *self)
{
    return self->n_fetches;
}

//  --------------------------------------------------------------------------
//  Requests in flight, all fetches.

size_t
ms_blob_fetch_in_flight(ms_blob_fetch_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->n_fetches; i++)
        n += self->fetches[i]->in_flight;
    return n;
}

//  --------------------------------------------------------------------------
//  Copy the counters.

void
ms_blob_fetch_stats(ms_blob_fetch_t *self, ms_blob_fetch_stats_t *out)
{
    *out = self->stats;
}

//  --------------------------------------------------------------------------
//  Answer one BLOB_REQUEST.

int
ms_blob_serve(ms_blob_store_t *store, const uint8_t from[MS_BLOB_PEER_ID_BYTES],
              const ms_wire_blob_request_t *request,
              const ms_blob_transport_t *transport)
{
    if (request->length == 0 ||
        request->length > MS_WIRE_BLOB_CHUNK_MAX_BYTES ||
        request->offset > UINT64_MAX - request->length)
        return MS_ERR_PROTOCOL;
    ms_hash_t hash;
    memcpy(hash.bytes, request->hash, MS_HASH_BYTES);
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    uint64_t size = 0;
    int rc = MS_OK;
    uint8_t *buf = NULL;
    if (ms_blob_store_size(store, &hash, &size) == MS_OK) {
        if (request->offset >= size)
            return MS_ERR_RANGE;
        uint64_t left = size - request->offset;
        size_t len = left < request->length ? (size_t) left : request->length;
        buf = malloc(len);
        if (!buf)
            return MS_ERR_NOMEM;
        rc = ms_blob_store_read(store, &hash, request->offset, len, buf);
        if (rc == MS_OK) {
            env.body = MS_WIRE_BODY_BLOB_CHUNK;
            memcpy(env.blob_chunk.hash, request->hash, MS_HASH_BYTES);
            env.blob_chunk.offset = request->offset;
            env.blob_chunk.total = size;
            env.blob_chunk.data = buf;
            env.blob_chunk.data_bytes = len;
        } else
            rc = MS_ERR_IO;
    }
    if (env.body == MS_WIRE_BODY_NONE) {
        env.body = MS_WIRE_BODY_BLOB_MISSING;
        memcpy(env.blob_missing.hash, request->hash, MS_HASH_BYTES);
    }
    int src = transport->send(transport->arg, from, &env);
    free(buf);
    return src != MS_OK ? src : rc;
}
