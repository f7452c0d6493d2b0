/*  =========================================================================
    ms_claim_timer - claim-to-start: when each sweep could first start
    here, and how long a task then took to start on its worker

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The figure /api/v1/status shows as claim_to_start_ms (median and p99
    of the last 256, kept by ms_node_status) and a verbose node logs per
    task ("task X claim-to-start N.NN ms"). The class notes when each
    sweep record was committed here (ms_claim_timer_note: a local submit,
    or ms_claim_timer_note_stored after the merge of a gossiped SWEEP or
    last FRAGMENT record); sweeps stored before the process started are
    noted as unknown (at 0) and never measured. The first note of a sweep
    wins: a sweep submitted again, or merged again, keeps its first time.
    Each worker reports when its task's work starts ("started": the first
    minibatch; noop at once) by CLOCK_MONOTONIC. Claim-to-start of a task
    (ms_claim_timer_measure) = that moment minus the later of the sweep's
    commit here and the moment its worker went idle: queueing behind
    other tasks is not claim-to-start; waiting for a peer's lease to
    expire, the settle and the dataset still count.

    The table grows by one entry per sweep for the process's life (a few
    dozen bytes a sweep) and is scanned linearly: a node sees few sweeps.
    The class never includes ms_node.h; it reads the store only in
    ms_claim_timer_note_stored. Loop thread only.
*/
#ifndef MS_CLAIM_TIMER_H
#define MS_CLAIM_TIMER_H

#include "ms_hash.h"
#include "ms_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_claim_timer ms_claim_timer_t;

//  Create an empty timer. Returns NULL when memory runs out. Caller owns
//  the result; free it with ms_claim_timer_destroy().
ms_claim_timer_t *ms_claim_timer_new(void);

//  Free it; NULL-safe, nulls *self_p.
void ms_claim_timer_destroy(ms_claim_timer_t **self_p);

//  The record of sweep SWEEP_ID was committed here at AT_US (monotonic
//  us; 0: unknown, before this process). Nothing happens when the sweep
//  was noted already (the first note wins) or when memory runs out (the
//  sweep is then not measured).
void ms_claim_timer_note(ms_claim_timer_t *self, const ms_hash_t *sweep_id,
                         int64_t at_us);

//  Note every sweep STORE (borrowed for the call) holds that was not
//  noted yet, at AT_US (0 at open: the sweeps stored before). Returns
//  MS_OK or the error of ms_store_list_sweeps (the sweeps listed before
//  it are noted).
int ms_claim_timer_note_stored(ms_claim_timer_t *self, ms_store_t *store,
                               int64_t at_us);

//  When the sweep's record was committed here (monotonic us); 0 when
//  unknown (never noted, or noted at 0).
int64_t ms_claim_timer_committed_at(const ms_claim_timer_t *self,
                                    const ms_hash_t *sweep_id);

//  The claim-to-start of a task of SWEEP_ID whose worker went idle at
//  FREE_US and whose work started at STARTED_US (monotonic us; see the
//  prose): true with *MS (milliseconds, 0 when the start was not after
//  the later of the two) set; false when not measured (the sweep's
//  commit time is unknown, or STARTED_US <= 0).
bool ms_claim_timer_measure(const ms_claim_timer_t *self,
                            const ms_hash_t *sweep_id, int64_t free_us,
                            int64_t started_us, double *ms);

#endif
