/*  =========================================================================
    ms_node_events - what the node publishes on GET /api/v1/events: results,
    verdict changes, peers, sweeps and their progress

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "HTTP API and dashboard" (GET /events: progress, results,
    verdict changes, peers), docs/EVENTS.md (the user's view). The class
    owns the node's event ring (ms_events, which the API's streams read)
    and decides what goes into it: the queue of results not yet published,
    and each stored sweep as the events last saw it (state and counts).

    What is published, all from the node loop. `result`: every result
    record that lands here (our own once appended, peers' once merged)
    is queued (task, producer) by ms_node_events_result; once a turn the
    queue becomes rows, built by ms_results_task_row (the row the results
    listing gives, verdict laid over), at most
    MS_NODE_EVENTS_ROWS_PER_TURN a turn. `verdict`: each verdict change
    the store reports (ms_node_events_verdict), after the rows of that
    task still queued, so a client sees a result before the verdict it
    brought. `peer`: a peer appears or changes state (ms_node_events_peer).
    `sweep` and `progress`: once every MS_NODE_EVENTS_TICK_MS a scan of
    the stored sweeps compares each sweep's state and counts (as GET
    /api/v1/sweeps/{id} gives them: the pending tasks that peers run,
    iface.running_elsewhere, moved from pending to running) with what it
    saw last: one `progress` per changed sweep per scan (coalesced), a
    `sweep` when one appears or changes state. The first scan is a silent
    baseline (sweeps stored before the process started do not "appear").

    Nobody listening (ms_events_wanted false: no stream open, and none
    closed in the last minute) means nothing is built: the result queue
    is dropped, no row is read, no verdict's task is looked up; the scan
    still notes sweep states (one read txn a scan), so a stream opened
    later does not see every old sweep "appear". The ring notes the gap
    and a client resuming across it gets `reset` (it refetches over REST,
    as every client does when it connects). A queue overflow (a catch-up
    of thousands of results while streams are open: more than
    MS_NODE_EVENTS_RESULTS_MAX queued) publishes `reset` instead of the
    rows it dropped.

    Why a class of its own and not a part of ms_events: ms_events is the
    ring and its server-sent streams, shared by the loop and the HTTP
    threads, and knows nothing of the store, records or rows (its test
    needs none); what to publish is loop work over the store (rows,
    tasks, sweeps) and the node's view (peers, leases). Keeping the
    producer apart keeps the ring free of node/derive and node/store, and
    lets this class be tested over a real store with a real ring.

    Thread rule: loop thread only, except ms_node_events_ring, whose ring
    any thread may use (the API's streams read it). The store is
    borrowed, read only.
*/
#ifndef MS_NODE_EVENTS_H
#define MS_NODE_EVENTS_H

#include "ms_events.h"
#include "ms_hash.h"
#include "ms_mesh.h"
#include "ms_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_node_events ms_node_events_t;

#define MS_NODE_EVENTS_RESULTS_MAX 4096  // results queued; beyond: reset
#define MS_NODE_EVENTS_ROWS_PER_TURN 256 // result rows built per turn
#define MS_NODE_EVENTS_TICK_MS 1000      // sweep scan and keepalives

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside the ms_node_events_* calls
//  only, and none may call back into the class.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Pending tasks of SWEEP_ID that peers run now (shown as running).
    //  May be NULL (none).
    int64_t (*running_elsewhere)(void *arg,
                                 const uint8_t sweep_id[MS_HASH_BYTES]);
} ms_node_events_iface_t;

//  Settings.
typedef struct {
    size_t capacity;    // events the ring keeps (>= 2)
    size_t max_readers; // open streams at most
    uint64_t first_id;  // the first event's id (>= 1): the node passes
                        // its wall time in ms x 1000, so ids keep
                        // increasing across restarts
} ms_node_events_config_t;

//  Create the events over STORE (borrowed, read only; it outlives the
//  object) with a new ring of CFG and IFACE (copied). Returns NULL when
//  memory runs out. Caller owns the result; free it with
//  ms_node_events_destroy().
ms_node_events_t *ms_node_events_new(ms_store_t *store,
                                     const ms_node_events_config_t *cfg,
                                     const ms_node_events_iface_t *iface);

//  Free it and its ring; NULL-safe, nulls *self_p. No reader of the ring
//  may be open (the API closes its streams when it is destroyed, first).
void ms_node_events_destroy(ms_node_events_t **self_p);

//  The ring (borrowed, valid until ms_node_events_destroy): what the
//  API's GET /api/v1/events streams read. Any thread.
ms_events_t *ms_node_events_ring(ms_node_events_t *self);

//  A RESULT record of NODE_ID for TASK_ID landed in the store: queue its
//  `result` event (published by the next ms_node_events_turn). Past
//  MS_NODE_EVENTS_RESULTS_MAX queued (or out of memory) the queue
//  overflows: the next turn publishes `reset` instead.
void ms_node_events_result(ms_node_events_t *self,
                           const uint8_t task_id[MS_HASH_BYTES],
                           const uint8_t node_id[MS_HASH_BYTES]);

//  TASK_ID's verdict changed to V (ms_store_get_verdict): when someone
//  listens, publish the task's queued results first, then `verdict`
//  (sweep_id, task_id, verdict, verdict_revision, verdict_operators).
//  A task the store does not have publishes no verdict.
void ms_node_events_verdict(ms_node_events_t *self,
                            const uint8_t task_id[MS_HASH_BYTES],
                            const ms_store_verdict_t *v);

//  Peer ID is in STATE now; PREVIOUS is its state before (an
//  ms_peer_state_t), or -1 when it appears: when someone listens,
//  publish `peer` (node_id, state, previous_state or null).
void ms_node_events_peer(ms_node_events_t *self,
                         const uint8_t id[MS_HASH_BYTES], ms_peer_state_t state,
                         int previous);

//  Once a loop turn, NOW_MS (monotonic ms, ms_events_now_ms): publish
//  the queued results (or drop them when nobody listens); every
//  MS_NODE_EVENTS_TICK_MS the ring's keepalives and the sweep scan.
void ms_node_events_turn(ms_node_events_t *self, int64_t now_ms);

#endif
