/*  =========================================================================
    ms_claim_timer - claim-to-start: when each sweep could first start
    here, and how long a task then took to start on its worker

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_claim_timer.h. One array of (sweep, commit time), grown by one
    entry per sweep.
*/
#include "ms_claim_timer.h"

#include "ms_err.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

//  When a sweep record was committed here.
typedef struct {
    ms_hash_t sweep_id; // the sweep
    int64_t at_us;      // monotonic us of its commit here; 0 = unknown
                        // (in the store before this process started)
} s_sweep_seen_t;

struct ms_claim_timer {
    s_sweep_seen_t *seen; // in order of first note
    size_t n_seen;        // entries in seen
};

ms_claim_timer_t *
ms_claim_timer_new(void)
{
    return calloc(1, sizeof(ms_claim_timer_t));
}

void
ms_claim_timer_destroy(ms_claim_timer_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->seen);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The entry of a sweep, or NULL.

static const s_sweep_seen_t *
s_find(const ms_claim_timer_t *self, const ms_hash_t *sweep_id)
{
    for (size_t i = 0; i < self->n_seen; i++)
        if (memcmp(self->seen[i].sweep_id.bytes, sweep_id->bytes,
                   MS_HASH_BYTES) == 0)
            return &self->seen[i];
    return NULL;
}

void
ms_claim_timer_note(ms_claim_timer_t *self, const ms_hash_t *sweep_id,
                    int64_t at_us)
{
    assert(self && sweep_id);
    if (s_find(self, sweep_id))
        return;
    s_sweep_seen_t *grown =
        realloc(self->seen, (self->n_seen + 1) * sizeof *grown);
    if (!grown)
        return;
    self->seen = grown;
    self->seen[self->n_seen++] =
        (s_sweep_seen_t){.sweep_id = *sweep_id, .at_us = at_us};
}

//  A time to note for every sweep of the store not noted yet.
typedef struct {
    ms_claim_timer_t *timer; // the timer
    int64_t at_us;           // the time to note
} s_note_ctx_t;

//  --------------------------------------------------------------------------
//  ms_store_list_sweeps: note one listed sweep.

static int
s_note_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    s_note_ctx_t *ctx = arg;
    ms_hash_t sid;
    memcpy(sid.bytes, sweep->sweep_id, MS_HASH_BYTES);
    ms_claim_timer_note(ctx->timer, &sid, ctx->at_us);
    return 0;
}

int
ms_claim_timer_note_stored(ms_claim_timer_t *self, ms_store_t *store,
                           int64_t at_us)
{
    assert(self && store);
    s_note_ctx_t ctx = {.timer = self, .at_us = at_us};
    return ms_store_list_sweeps(store, s_note_sweep, &ctx);
}

int64_t
ms_claim_timer_committed_at(const ms_claim_timer_t *self,
                            const ms_hash_t *sweep_id)
{
    assert(self && sweep_id);
    const s_sweep_seen_t *e = s_find(self, sweep_id);
    return e ? e->at_us : 0;
}

bool
ms_claim_timer_measure(const ms_claim_timer_t *self, const ms_hash_t *sweep_id,
                       int64_t free_us, int64_t started_us, double *ms)
{
    assert(self && sweep_id && ms);
    int64_t from = ms_claim_timer_committed_at(self, sweep_id);
    if (from <= 0 || started_us <= 0)
        return false;
    if (free_us > from)
        from = free_us;
    *ms = started_us > from ? (double) (started_us - from) / 1000.0 : 0;
    return true;
}
