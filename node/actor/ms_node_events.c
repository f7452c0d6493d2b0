/*  =========================================================================
    ms_node_events - what the node publishes on GET /api/v1/events: results,
    verdict changes, peers, sweeps and their progress

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_node_events.h for what is published when. Every event's data is
    written in canonical JSON (ms_wire_canon_dump), as the API writes its
    replies, so an event's row and the row of GET .../results are the
    same bytes.
*/
#include "ms_node_events.h"

#include "ms_results.h"
#include "ms_verdict.h"
#include "ms_wire_canon.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A result to publish as an event (task, producer).
typedef struct {
    uint8_t task_id[MS_HASH_BYTES];
    uint8_t node_id[MS_HASH_BYTES];
} s_result_t;

//  A sweep as the events last saw it.
typedef struct {
    uint8_t sweep_id[MS_HASH_BYTES];
    ms_sweep_state_t state;           // last state seen
    int64_t counts[MS_TASK_N_STATES]; // counts last published (progress)
} s_sweep_t;

struct ms_node_events {
    ms_store_t *store;            // borrowed, read only
    ms_node_events_iface_t iface; // the node
    ms_events_t *ring;            // the ring the API's streams read
    s_result_t *results;          // results to publish (queue), or NULL
    size_t n_results;             // entries in results
    bool overflow;                // results dropped: publish a reset
    s_sweep_t *sweeps;            // sweeps seen by the scan
    size_t n_sweeps;              // entries in sweeps
    bool scanned;                 // the first scan (a silent baseline) ran
    int64_t tick_at;              // monotonic ms of the next scan
};

//  --------------------------------------------------------------------------
//  Create the events and their ring.

ms_node_events_t *
ms_node_events_new(ms_store_t *store, const ms_node_events_config_t *cfg,
                   const ms_node_events_iface_t *iface)
{
    ms_node_events_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->iface = *iface;
    self->ring = ms_events_new(cfg->capacity, cfg->max_readers, cfg->first_id);
    if (!self->ring)
        ms_node_events_destroy(&self);
    return self;
}

//  --------------------------------------------------------------------------
//  Free it and its ring.

void
ms_node_events_destroy(ms_node_events_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_node_events_t *self = *self_p;
    ms_events_destroy(&self->ring);
    free(self->results);
    free(self->sweeps);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The ring.

ms_events_t *
ms_node_events_ring(ms_node_events_t *self)
{
    return self->ring;
}

//  --------------------------------------------------------------------------
//  Log that an event of TYPE was lost.

static void
s_log_lost(ms_node_events_t *self, const char *type)
{
    char line[80];
    snprintf(line, sizeof line, "an event (%s) was lost: out of memory", type);
    self->iface.log(self->iface.arg, line);
}

//  --------------------------------------------------------------------------
//  Queue a stored result for its event.

void
ms_node_events_result(ms_node_events_t *self,
                      const uint8_t task_id[MS_HASH_BYTES],
                      const uint8_t node_id[MS_HASH_BYTES])
{
    if (!self->results) {
        self->results =
            malloc(MS_NODE_EVENTS_RESULTS_MAX * sizeof *self->results);
        if (!self->results) {
            self->overflow = true;
            return;
        }
    }
    if (self->n_results >= MS_NODE_EVENTS_RESULTS_MAX) {
        self->overflow = true;
        return;
    }
    s_result_t *e = &self->results[self->n_results++];
    memcpy(e->task_id, task_id, MS_HASH_BYTES);
    memcpy(e->node_id, node_id, MS_HASH_BYTES);
}

//  --------------------------------------------------------------------------
//  Publish a JSON object (taken) as an event; canonical numbers, as the
//  API writes them.

static void
s_publish(ms_node_events_t *self, const char *type, const uint8_t *sweep_id,
          json_t *data)
{
    char *text = data ? ms_wire_canon_dump(data) : NULL;
    json_decref(data);
    if (!text ||
        ms_events_publish(self->ring, type, sweep_id, text, NULL) != MS_OK)
        s_log_lost(self, type);
    free(text);
}

//  --------------------------------------------------------------------------
//  Build and publish one queued result's row.

static void
s_publish_row(ms_node_events_t *self, const s_result_t *e)
{
    json_t *row = NULL;
    if (ms_results_task_row(self->store, e->task_id, e->node_id, &row) !=
            MS_OK ||
        !row)
        return; // not counted (a second result of its node), gone
    ms_hash_t sid;
    const char *hex = json_string_value(json_object_get(row, "sweep_id"));
    bool has_sweep = hex && strlen(hex) == MS_HASH_HEX_LEN &&
                     ms_hash_from_hex(hex, &sid) == MS_OK;
    s_publish(self, "result", has_sweep ? sid.bytes : NULL, row);
}

//  --------------------------------------------------------------------------
//  Build and publish the queued results' rows (a bounded number a turn).

static void
s_flush_results(ms_node_events_t *self, bool wanted)
{
    if (!wanted) {
        self->n_results = 0;
        self->overflow = false;
        return;
    }
    if (self->overflow) {
        s_publish(self, "reset", NULL, json_object());
        self->n_results = 0;
        self->overflow = false;
        return;
    }
    size_t n = self->n_results < MS_NODE_EVENTS_ROWS_PER_TURN
                   ? self->n_results
                   : MS_NODE_EVENTS_ROWS_PER_TURN;
    for (size_t i = 0; i < n; i++)
        s_publish_row(self, &self->results[i]);
    memmove(self->results, self->results + n,
            (self->n_results - n) * sizeof *self->results);
    self->n_results -= n;
}

//  --------------------------------------------------------------------------
//  Publish a verdict change.

void
ms_node_events_verdict(ms_node_events_t *self,
                       const uint8_t task_id[MS_HASH_BYTES],
                       const ms_store_verdict_t *v)
{
    if (!ms_events_wanted(self->ring, ms_events_now_ms()))
        return;
    // The task's queued results first: a client sees a result before the
    // verdict it brought (the verdict is stored with the result, the row
    // would otherwise wait for the next turn's s_flush_results).
    for (size_t i = 0; i < self->n_results;) {
        if (memcmp(self->results[i].task_id, task_id, MS_HASH_BYTES) != 0) {
            i++;
            continue;
        }
        s_publish_row(self, &self->results[i]);
        memmove(self->results + i, self->results + i + 1,
                (self->n_results - i - 1) * sizeof *self->results);
        self->n_results--;
    }
    ms_store_task_t *task = NULL;
    if (ms_store_get_task(self->store, task_id, &task) != MS_OK)
        return;
    ms_hash_t tid, sid;
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    memcpy(tid.bytes, task_id, MS_HASH_BYTES);
    memcpy(sid.bytes, task->sweep_id, MS_HASH_BYTES);
    ms_store_task_destroy(&task);
    ms_hash_hex(&tid, thex);
    ms_hash_hex(&sid, shex);
    json_t *ops = json_array();
    char text[MS_STORE_OPERATORS_TEXT];
    snprintf(text, sizeof text, "%s", v->operators);
    for (char *save = NULL, *t = strtok_r(text, ",", &save); ops && t;
         t = strtok_r(NULL, ",", &save))
        json_array_append_new(ops, json_string(t));
    s_publish(self, "verdict", sid.bytes,
              json_pack("{s:s, s:s, s:s, s:I, s:o}", "sweep_id", shex,
                        "task_id", thex, "verdict",
                        ms_verdict_state_name((ms_verdict_state_t) v->verdict),
                        "verdict_revision", (json_int_t) v->revision,
                        "verdict_operators", ops ? ops : json_array()));
}

//  --------------------------------------------------------------------------
//  Name of a peer state.

static const char *
s_peer_state_name(int state)
{
    return state == MS_PEER_ALIVE     ? "alive"
           : state == MS_PEER_SUSPECT ? "suspect"
                                      : "dead";
}

//  --------------------------------------------------------------------------
//  Publish a peer's change of state.

void
ms_node_events_peer(ms_node_events_t *self, const uint8_t id[MS_HASH_BYTES],
                    ms_peer_state_t state, int previous)
{
    if (!ms_events_wanted(self->ring, ms_events_now_ms()))
        return;
    ms_hash_t h;
    char hex[MS_HASH_HEX_LEN + 1];
    memcpy(h.bytes, id, MS_HASH_BYTES);
    ms_hash_hex(&h, hex);
    s_publish(self, "peer", NULL,
              json_pack("{s:s, s:s, s:o}", "node_id", hex, "state",
                        s_peer_state_name((int) state), "previous_state",
                        previous < 0
                            ? json_null()
                            : json_string(s_peer_state_name(previous))));
}

//  State of one scan.
typedef struct {
    ms_node_events_t *self; // the events
    bool wanted;            // publish (somebody listens)
} s_scan_t;

//  --------------------------------------------------------------------------
//  One stored sweep of the scan: `sweep` on a new one or a new state,
//  `progress` when its counts changed.

static int
s_scan_one(void *arg, const ms_store_sweep_t *sweep)
{
    s_scan_t *scan = arg;
    ms_node_events_t *self = scan->self;
    s_sweep_t *e = NULL;
    for (size_t i = 0; i < self->n_sweeps && !e; i++)
        if (memcmp(self->sweeps[i].sweep_id, sweep->sweep_id, MS_HASH_BYTES) ==
            0)
            e = &self->sweeps[i];
    // The counts as GET /api/v1/sweeps/{id} gives them: tasks that peers
    // run now are pending in our store and shown as running.
    int64_t counts[MS_TASK_N_STATES];
    for (int k = 0; k < MS_TASK_N_STATES; k++)
        counts[k] = (int64_t) sweep->counts[k];
    ms_hash_t sid;
    char hex[MS_HASH_HEX_LEN + 1];
    memcpy(sid.bytes, sweep->sweep_id, MS_HASH_BYTES);
    ms_hash_hex(&sid, hex);
    int64_t moved =
        self->iface.running_elsewhere
            ? self->iface.running_elsewhere(self->iface.arg, sweep->sweep_id)
            : 0;
    if (moved > counts[MS_TASK_PENDING])
        moved = counts[MS_TASK_PENDING];
    if (moved > 0) {
        counts[MS_TASK_PENDING] -= moved;
        counts[MS_TASK_RUNNING] += moved;
    }
    bool appeared = !e, changed = e && e->state != sweep->state;
    if (!e) {
        s_sweep_t *grown =
            realloc(self->sweeps, (self->n_sweeps + 1) * sizeof *grown);
        if (!grown)
            return 0;
        self->sweeps = grown;
        e = &self->sweeps[self->n_sweeps++];
        memcpy(e->sweep_id, sweep->sweep_id, MS_HASH_BYTES);
        memcpy(e->counts, counts, sizeof counts); // baseline
    }
    e->state = sweep->state;
    const char *state = ms_sweep_state_name(sweep->state);
    if (!scan->wanted)
        return 0;
    if ((appeared && self->scanned) || changed)
        s_publish(self, "sweep", sweep->sweep_id,
                  json_pack("{s:s, s:s}", "sweep_id", hex, "state", state));
    if ((appeared && self->scanned) ||
        memcmp(e->counts, counts, sizeof counts) != 0) {
        memcpy(e->counts, counts, sizeof counts);
        s_publish(self, "progress", sweep->sweep_id,
                  json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                            "sweep_id", hex, "state", state, "total",
                            (json_int_t) sweep->n_tasks, "pending",
                            (json_int_t) counts[MS_TASK_PENDING], "claimed",
                            (json_int_t) counts[MS_TASK_CLAIMED], "running",
                            (json_int_t) counts[MS_TASK_RUNNING], "done",
                            (json_int_t) counts[MS_TASK_DONE], "failed",
                            (json_int_t) counts[MS_TASK_FAILED], "cancelled",
                            (json_int_t) counts[MS_TASK_CANCELLED]));
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Once a loop turn: the queued results; once a tick: keepalives and the
//  sweep scan.

void
ms_node_events_turn(ms_node_events_t *self, int64_t now_ms)
{
    bool wanted = ms_events_wanted(self->ring, now_ms);
    if (self->n_results || self->overflow)
        s_flush_results(self, wanted);
    if (now_ms < self->tick_at)
        return;
    self->tick_at = now_ms + MS_NODE_EVENTS_TICK_MS;
    ms_events_tick(self->ring, now_ms);
    s_scan_t scan = {.self = self, .wanted = wanted};
    ms_store_list_sweeps(self->store, s_scan_one, &scan);
    self->scanned = true;
}
