/*  =========================================================================
    ms_settle - own claims waiting for the peers' acknowledgements before
    they start (the claim settle rule)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A short array of claims in the order they were added (a node has at
    most as many as it has idle workers), each with a short array of the
    peers it waits for (at most the push targets of one block). Every
    call scans them linearly: a few hundred comparisons at most.
*/
#include "ms_settle.h"
#include "ms_array.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define ID MS_SETTLE_ID_BYTES

//  What a claim still waits for from one peer.
typedef enum {
    S_WAIT_ACK = 0, // its acknowledgement of the claim's seq
    S_WAIT_RECORDS, // its own records up to need_seq
    S_WAIT_ACKED,   // nothing: acknowledged, its records held
    S_WAIT_GONE,    // nothing: no longer live
} s_wait_state_t;

//  One peer a claim waits for.
typedef struct {
    uint8_t peer[ID];     // the peer
    s_wait_state_t state; // what is still missing
    uint64_t need_inc;    // S_WAIT_RECORDS: its incarnation then
    uint64_t need_seq;    // S_WAIT_RECORDS: its own seq then
} s_wait_t;

//  One waiting claim.
typedef struct {
    ms_settle_claim_t claim; // what take_ready reports (counts filled then)
    int64_t deadline_ms;     // ready at the latest then
    s_wait_t *waits;         // n_waits entries (malloc'd)
    size_t n_waits;          // entries in waits
} s_entry_t;

struct ms_settle {
    s_entry_t *entries; // oldest first
    size_t n, cap;      // used, allocated
};

//  --------------------------------------------------------------------------
//  A new, empty list.

ms_settle_t *
ms_settle_new(void)
{
    return calloc(1, sizeof(ms_settle_t));
}

//  --------------------------------------------------------------------------
//  Free the list.

void
ms_settle_destroy(ms_settle_t **self_p)
{
    assert(self_p);
    ms_settle_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->n; i++)
        free(self->entries[i].waits);
    free(self->entries);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Drop entry i, keeping the order of the others.

static void
s_drop(ms_settle_t *self, size_t i)
{
    free(self->entries[i].waits);
    memmove(&self->entries[i], &self->entries[i + 1],
            (self->n - i - 1) * sizeof self->entries[0]);
    self->n--;
}

//  --------------------------------------------------------------------------
//  Index of the entry on (task_id, slot), or self->n.

static size_t
s_find(const ms_settle_t *self, const uint8_t *task_id, uint32_t slot)
{
    for (size_t i = 0; i < self->n; i++)
        if (self->entries[i].claim.slot == slot &&
            memcmp(self->entries[i].claim.task_id, task_id, ID) == 0)
            return i;
    return self->n;
}

//  --------------------------------------------------------------------------
//  Add a claim.

int
ms_settle_add(ms_settle_t *self, const uint8_t task_id[MS_SETTLE_ID_BYTES],
              uint32_t slot, uint32_t epoch, uint64_t seq,
              const uint8_t (*peers)[MS_SETTLE_ID_BYTES], size_t n_peers,
              int64_t now_ms, int64_t cap_ms)
{
    assert(self && task_id && (peers || n_peers == 0));
    s_wait_t *waits = NULL;
    size_t n_waits = 0;
    if (n_peers > 0) {
        waits = calloc(n_peers, sizeof *waits);
        if (!waits)
            return MS_ERR_NOMEM;
        for (size_t p = 0; p < n_peers; p++) {
            bool dup = false;
            for (size_t q = 0; q < n_waits && !dup; q++)
                dup = memcmp(waits[q].peer, peers[p], ID) == 0;
            if (!dup)
                memcpy(waits[n_waits++].peer, peers[p], ID);
        }
    }
    size_t old = s_find(self, task_id, slot);
    if (old < self->n)
        s_drop(self, old);
    if (ms_array_grow(&self->entries, &self->cap, self->n,
                      sizeof *self->entries) != MS_OK) {
        free(waits);
        return MS_ERR_NOMEM;
    }
    s_entry_t *e = &self->entries[self->n++];
    memset(e, 0, sizeof *e);
    memcpy(e->claim.task_id, task_id, ID);
    e->claim.slot = slot;
    e->claim.epoch = epoch;
    e->claim.seq = seq;
    e->claim.added_ms = now_ms;
    e->claim.n_peers = seq ? n_waits : 0;
    e->deadline_ms = cap_ms > 0 ? now_ms + cap_ms : now_ms;
    if (seq == 0) { // nothing to acknowledge: waits for nobody
        free(waits);
        waits = NULL;
        n_waits = 0;
    }
    e->waits = waits;
    e->n_waits = n_waits;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  An acknowledgement from peer.

size_t
ms_settle_on_ack(ms_settle_t *self, const uint8_t peer[MS_SETTLE_ID_BYTES],
                 uint64_t acked_seq, uint64_t peer_incarnation,
                 uint64_t peer_seq)
{
    assert(self && peer);
    size_t n = 0;
    for (size_t i = 0; i < self->n; i++) {
        s_entry_t *e = &self->entries[i];
        if (e->claim.seq > acked_seq)
            continue;
        for (size_t w = 0; w < e->n_waits; w++)
            if (e->waits[w].state == S_WAIT_ACK &&
                memcmp(e->waits[w].peer, peer, ID) == 0) {
                e->waits[w].state = S_WAIT_RECORDS;
                e->waits[w].need_inc = peer_incarnation;
                e->waits[w].need_seq = peer_seq;
                n++;
            }
    }
    return n;
}

//  --------------------------------------------------------------------------
//  A peer is no longer live.

size_t
ms_settle_peer_gone(ms_settle_t *self, const uint8_t peer[MS_SETTLE_ID_BYTES])
{
    assert(self && peer);
    size_t n = 0;
    for (size_t i = 0; i < self->n; i++) {
        s_entry_t *e = &self->entries[i];
        for (size_t w = 0; w < e->n_waits; w++)
            if ((e->waits[w].state == S_WAIT_ACK ||
                 e->waits[w].state == S_WAIT_RECORDS) &&
                memcmp(e->waits[w].peer, peer, ID) == 0) {
                e->waits[w].state = S_WAIT_GONE;
                n++;
            }
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Fill the counts of entry e; true when it waits for nothing now.

static bool
s_settled(s_entry_t *e, ms_settle_held_fn held, void *arg)
{
    size_t acked = 0, gone = 0;
    for (size_t w = 0; w < e->n_waits; w++) {
        s_wait_t *wt = &e->waits[w];
        if (wt->state == S_WAIT_RECORDS &&
            (wt->need_seq == 0 ||
             (held && held(arg, wt->peer, wt->need_inc) >= wt->need_seq)))
            wt->state = S_WAIT_ACKED;
        acked += wt->state == S_WAIT_ACKED;
        gone += wt->state == S_WAIT_GONE;
    }
    e->claim.n_acked = acked;
    e->claim.n_gone = gone;
    return acked + gone == e->n_waits;
}

//  --------------------------------------------------------------------------
//  Take the oldest ready claim.

bool
ms_settle_take_ready(ms_settle_t *self, int64_t now_ms, ms_settle_held_fn held,
                     void *arg, ms_settle_claim_t *out)
{
    assert(self && out);
    for (size_t i = 0; i < self->n; i++) {
        s_entry_t *e = &self->entries[i];
        bool settled = s_settled(e, held, arg);
        if (!settled && now_ms < e->deadline_ms)
            continue;
        *out = e->claim;
        out->capped = !settled;
        s_drop(self, i);
        return true;
    }
    return false;
}

//  --------------------------------------------------------------------------
//  Remove the claim on (task_id, slot).

bool
ms_settle_remove(ms_settle_t *self, const uint8_t task_id[MS_SETTLE_ID_BYTES],
                 uint32_t slot, ms_settle_claim_t *out)
{
    assert(self && task_id);
    size_t i = s_find(self, task_id, slot);
    if (i == self->n)
        return false;
    if (out)
        *out = self->entries[i].claim;
    s_drop(self, i);
    return true;
}

//  --------------------------------------------------------------------------
//  True when a claim on task_id is waiting.

bool
ms_settle_contains(const ms_settle_t *self,
                   const uint8_t task_id[MS_SETTLE_ID_BYTES])
{
    assert(self && task_id);
    for (size_t i = 0; i < self->n; i++)
        if (memcmp(self->entries[i].claim.task_id, task_id, ID) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Number of waiting claims.

size_t
ms_settle_count(const ms_settle_t *self)
{
    assert(self);
    return self->n;
}

//  --------------------------------------------------------------------------
//  The i-th waiting claim.

bool
ms_settle_get(const ms_settle_t *self, size_t i, ms_settle_claim_t *out)
{
    assert(self && out);
    if (i >= self->n)
        return false;
    *out = self->entries[i].claim;
    return true;
}

//  --------------------------------------------------------------------------
//  The earliest cap.

int64_t
ms_settle_next_deadline(const ms_settle_t *self)
{
    assert(self);
    int64_t d = INT64_MAX;
    for (size_t i = 0; i < self->n; i++)
        if (self->entries[i].deadline_ms < d)
            d = self->entries[i].deadline_ms;
    return d;
}
