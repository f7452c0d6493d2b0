/*  =========================================================================
    ms_lifecycle - a sweep's life cycle: cancel, pause, resume, priority
    and reopen, as this node's sweep-control records

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Work, claims and leases" (sweep-control records) and
    "Layout of node/". The class owns the rule of a life-cycle action:
    which actions a sweep's state allows (a cancelled or done sweep is
    not paused or resumed; a second cancel is no error; a priority may
    always be set), the action's names, and the record that carries it,
    whose logical time is one above the highest this store holds for the
    sweep (ms_store_sweep_control_time), so it sorts after every control
    of the sweep this node has seen. The store applies the record (as
    every node that merges it does); this node also acts on a cancel at
    once: it stops its own workers on the sweep's tasks (iface.stop_sweep;
    their deaths then end the tasks cancelled, ms_runner_worker_event).

    Why a class apart from the node: the rule is about a sweep, not the
    loop; it reads only the store and writes only through the node's
    append, as ms_submit (node/data, the sweep's submission) does, and
    ms_submit's reopen of a cancelled sweep submitted again is one of
    these records (ms_lifecycle_reopen). The node hands it what it needs
    through ms_lifecycle_iface_t; the class never calls into ms_node.

    The store is borrowed and only read. Loop thread only (HTTP threads
    reach ms_lifecycle_apply through ms_node_command's queue).
*/
#ifndef MS_LIFECYCLE_H
#define MS_LIFECYCLE_H

#include "ms_err.h"
#include "ms_hash.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <jansson.h>

#include <stddef.h>
#include <stdint.h>

typedef struct ms_lifecycle ms_lifecycle_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside the ms_lifecycle_* calls only.
typedef struct {
    void *arg;
    //  Log one line (the node's verbose log).
    void (*log)(void *arg, const char *line);
    //  Publish EVENT to the node's event listeners; takes it (NULL-safe).
    void (*emit)(void *arg, json_t *event);
    //  Append the N PAYLOADS to the node's own log as one durable commit
    //  (signed, pushed); MS_OK or the store's error.
    int (*append)(void *arg, size_t n, const ms_store_payload_t *payloads);
    //  The scheduler should look again (a sweep's state changes).
    void (*changed)(void *arg);
    //  Stop this node's workers on the tasks of SWEEP_ID (a cancel).
    void (*stop_sweep)(void *arg, const ms_hash_t *sweep_id);
} ms_lifecycle_iface_t;

//  Create it over STORE (borrowed; it outlives the class) with IFACE
//  (copied). Returns NULL when memory runs out. Caller owns the result;
//  free it with ms_lifecycle_destroy().
ms_lifecycle_t *ms_lifecycle_new(ms_store_t *store,
                                 const ms_lifecycle_iface_t *iface);

//  Free it; NULL-safe, nulls *self_p.
void ms_lifecycle_destroy(ms_lifecycle_t **self_p);

//  Parse an action name ("cancel", "pause", "resume", "priority") into
//  *out (MS_SWEEP_CONTROL_CANCEL .. MS_SWEEP_CONTROL_PRIORITY; reopen is
//  no action a user names). Returns MS_OK or MS_ERR_INVALID (unknown
//  name or NULL; *out untouched). Any thread.
int ms_lifecycle_parse(const char *name, ms_sweep_control_t *out);

//  The name of ACTION ("cancel", ..., "reopen"), or "?" out of range.
//  Static string. Any thread.
const char *ms_lifecycle_name(ms_sweep_control_t action);

//  Apply ACTION (cancel, pause, resume or priority, PRIORITY used by the
//  last only) to the sweep SWEEP_ID for the whole pool: a sweep-control
//  record of ours (iface.append), a log line and a "control" event
//  {"event","sweep_id","action","priority"}; a cancel also stops this
//  node's workers on the sweep (iface.stop_sweep). Returns MS_OK (also
//  for a cancel of a cancelled sweep: nothing stored); MS_ERR_INVALID
//  (ACTION out of range: diag "action"); MS_ERR_NOTFOUND (unknown
//  sweep: diag); MS_ERR_CONFLICT (a cancelled or done sweep paused,
//  resumed or cancelled: diag says why); the store's error (reading the
//  sweep, or the append: diag "cannot store: ..."). DIAG names the sweep
//  by its hex id.
int ms_lifecycle_apply(ms_lifecycle_t *self, const ms_hash_t *sweep_id,
                       ms_sweep_control_t action, int32_t priority,
                       ms_diag_t *diag);

//  A cancelled sweep was submitted again: the reopen record (ms_submit's
//  reopen). No check, no event. Returns MS_OK or the store's error.
int ms_lifecycle_reopen(ms_lifecycle_t *self, const ms_hash_t *sweep_id);

#endif
