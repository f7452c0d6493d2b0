/*  =========================================================================
    ms_grace - the startup grace: no claims blind, and none while the
    first catch-up runs

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Work, claims and leases" (no claims blind). A node that
    joins its pool claims nothing, and reveals no held result, before the
    startup grace is over: two beacon intervals and one anti-entropy
    round (ms_assign_grace_ms), so that nodes started together see each
    other before they claim. Alone (no pool) there is no grace: a new
    grace holds nothing until ms_grace_start.

    The grace is then held while the first catch-up runs. A node that
    (re)starts behind its peers learns the sweeps before their claims and
    results (a stream's records come in seq order), so once the grace
    ended it would claim tasks long done elsewhere: wasted runs, extra
    records to spread, and synchronous appends in the middle of the
    merge. So while gossip pulls streams (ms_grace_hold with the number
    of pulls running) the grace lasts MS_GRACE_CATCH_UP_HOLD_MS past the
    last pull, at most MS_GRACE_CATCH_UP_MAX_MS from the start (a peer
    that lies in its vector cannot hold it longer). Once the grace ended
    with no pull running the node is caught up, for good: later pulls (a
    gap, a peer back from a partition) do not stop the node.

    Who asks: the scheduler (ms_scheduler_iface_t.holding), the outbox's
    reveal (the caller keeps it from running in the grace: a restarted
    node counts only itself as the pool until its peers link, and would
    reveal at once), and the node's loop, whose timeout wakes at the
    grace's end (ms_grace_next_deadline). The class has no clock: every
    call takes NOW (monotonic ms). It never includes ms_node.h. Loop
    thread only.
*/
#ifndef MS_GRACE_H
#define MS_GRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_grace ms_grace_t;

#define MS_GRACE_CATCH_UP_HOLD_MS 500  // held this long past a pull
#define MS_GRACE_CATCH_UP_MAX_MS 60000 // ... and no longer from the start

//  Create a grace that holds nothing (a node alone). Returns NULL when
//  memory runs out. Caller owns the result; free it with
//  ms_grace_destroy().
ms_grace_t *ms_grace_new(void);

//  Free it; NULL-safe, nulls *self_p.
void ms_grace_destroy(ms_grace_t **self_p);

//  The node joined its pool at NOW (monotonic ms): the grace holds for
//  GRACE_MS (>= 0) and may be held by a catch-up up to
//  MS_GRACE_CATCH_UP_MAX_MS from NOW.
void ms_grace_start(ms_grace_t *self, int64_t now, int64_t grace_ms);

//  Once a loop turn, after the mesh's messages were handled: N_PULLS
//  streams are being pulled now (ms_gossip_pull_count). Holds the grace
//  MS_GRACE_CATCH_UP_HOLD_MS past NOW while pulls run (within the cap);
//  with none running once the grace ended, the node is caught up and
//  later calls change nothing.
void ms_grace_hold(ms_grace_t *self, int64_t now, size_t n_pulls);

//  Whether the grace holds at NOW: no claims, no reveals.
bool ms_grace_holding(const ms_grace_t *self, int64_t now);

//  Whether the first catch-up is over (see ms_grace_hold).
bool ms_grace_caught_up(const ms_grace_t *self);

//  The monotonic ms the grace ends, when it holds at NOW; else
//  INT64_MAX (a deadline of the node's loop).
int64_t ms_grace_next_deadline(const ms_grace_t *self, int64_t now);

#endif
