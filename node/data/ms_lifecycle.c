/*  =========================================================================
    ms_lifecycle - a sweep's life cycle: cancel, pause, resume, priority
    and reopen, as this node's sweep-control records

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The rule and the record; see the header. Before this class the node
    wrote both inside its loop file (ms_node_control, s_control_record),
    and ms_submit reached the record through the node.
*/
#include "ms_lifecycle.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ms_lifecycle {
    ms_store_t *store;          // borrowed, read only
    ms_lifecycle_iface_t iface; // the node's side
};

//  The names of the actions, by ms_sweep_control_t (0: none).
static const char *const s_names[] = {NULL,     "cancel",   "pause",
                                      "resume", "priority", "reopen"};
#define S_N_NAMES (sizeof s_names / sizeof s_names[0])

//  --------------------------------------------------------------------------
//  Create it.

ms_lifecycle_t *
ms_lifecycle_new(ms_store_t *store, const ms_lifecycle_iface_t *iface)
{
    assert(store && iface && iface->log && iface->emit && iface->append &&
           iface->changed && iface->stop_sweep);
    ms_lifecycle_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->iface = *iface;
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_lifecycle_destroy(ms_lifecycle_t **self_p)
{
    assert(self_p);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Parse an action name.

int
ms_lifecycle_parse(const char *name, ms_sweep_control_t *out)
{
    assert(out);
    for (int a = MS_SWEEP_CONTROL_CANCEL;
         name && a <= MS_SWEEP_CONTROL_PRIORITY; a++)
        if (strcmp(name, s_names[a]) == 0) {
            *out = (ms_sweep_control_t) a;
            return MS_OK;
        }
    return MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  The name of an action.

const char *
ms_lifecycle_name(ms_sweep_control_t action)
{
    return (size_t) action < S_N_NAMES && s_names[action] ? s_names[action]
                                                          : "?";
}

//  --------------------------------------------------------------------------
//  A sweep-control record of ours: ACTION at one above the highest
//  logical time this store holds for the sweep.

static int
s_record(ms_lifecycle_t *self, const ms_hash_t *sweep_id,
         ms_sweep_control_t action, int32_t priority)
{
    uint64_t seen = 0;
    int rc = ms_store_sweep_control_time(self->store, sweep_id->bytes, &seen);
    if (rc != MS_OK)
        return rc;
    ms_store_payload_t p;
    memset(&p, 0, sizeof p);
    p.kind = MS_RECORD_SWEEP_CONTROL;
    memcpy(p.u.control.sweep_id, sweep_id->bytes, MS_HASH_BYTES);
    p.u.control.action = action;
    p.u.control.priority = priority;
    p.u.control.lamport = seen < UINT64_MAX ? seen + 1 : UINT64_MAX;
    self->iface.changed(self->iface.arg);
    return self->iface.append(self->iface.arg, 1, &p);
}

//  --------------------------------------------------------------------------
//  Apply a life-cycle action to a sweep.

int
ms_lifecycle_apply(ms_lifecycle_t *self, const ms_hash_t *sweep_id,
                   ms_sweep_control_t action, int32_t priority, ms_diag_t *diag)
{
    assert(self && sweep_id);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(sweep_id, hex);
    if (action < MS_SWEEP_CONTROL_CANCEL || action > MS_SWEEP_CONTROL_PRIORITY)
        return ms_diag_set(diag, "action", "unknown action %d", (int) action);
    ms_store_sweep_t *sweep = NULL;
    int rc = ms_store_get_sweep(self->store, sweep_id->bytes, &sweep);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, hex, "%s",
                                rc == MS_ERR_NOTFOUND ? "no such sweep"
                                                      : ms_strerror(rc));
    ms_sweep_state_t state = sweep->state;
    ms_store_sweep_destroy(&sweep);
    if (action != MS_SWEEP_CONTROL_PRIORITY &&
        (state == MS_SWEEP_CANCELLED || state == MS_SWEEP_DONE)) {
        if (action == MS_SWEEP_CONTROL_CANCEL && state == MS_SWEEP_CANCELLED)
            return MS_OK; // cancelled twice: nothing more to do
        return ms_diag_set_code(diag, MS_ERR_CONFLICT, hex,
                                "the sweep is %s: it cannot be %s%s",
                                ms_sweep_state_name(state),
                                action == MS_SWEEP_CONTROL_CANCEL  ? "cancelled"
                                : action == MS_SWEEP_CONTROL_PAUSE ? "paused"
                                                                   : "resumed",
                                state == MS_SWEEP_CANCELLED
                                    ? " (submit its spec again to reopen it)"
                                    : "");
    }
    rc = s_record(self, sweep_id, action, priority);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, hex, "cannot store: %s",
                                ms_strerror(rc));
    if (action == MS_SWEEP_CONTROL_CANCEL)
        self->iface.stop_sweep(self->iface.arg, sweep_id);
    const char *name = ms_lifecycle_name(action);
    char line[64];
    snprintf(line, sizeof line, "sweep %.12s: %s%s", hex, name,
             action == MS_SWEEP_CONTROL_PRIORITY ? " set" : "");
    self->iface.log(self->iface.arg, line);
    self->iface.emit(self->iface.arg,
                     json_pack("{s:s, s:s, s:s, s:i}", "event", "control",
                               "sweep_id", hex, "action", name, "priority",
                               (int) priority));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A cancelled sweep submitted again: the reopen record.

int
ms_lifecycle_reopen(ms_lifecycle_t *self, const ms_hash_t *sweep_id)
{
    assert(self && sweep_id);
    return s_record(self, sweep_id, MS_SWEEP_CONTROL_REOPEN, 0);
}
