/*  =========================================================================
    ms_lease_feed - records to the lease table: merged records as they
    land, the stored claims at start and after a revocation

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_lease_feed.h for the rules. The store walks (load, reload)
    collect the unfinished tasks first and read their claims after, one
    task at a time: ms_store_claims_by_task opens its own read txn, which
    must not nest inside the pending-tasks walk's.
*/
#include "ms_lease_feed.h"
#include "ms_array.h"

#include "ms_hash.h"
#include "ms_store_payload.h"
#include "ms_wire.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ms_lease_feed {
    ms_lease_table_t *leases;        // the table fed (borrowed)
    ms_store_t *store;               // claims at load (borrowed)
    ms_lease_feed_iface_t iface;     // the node's side
    ms_lease_feed_stats_t stats;     // counters
    ms_wire_live_claim_t *hb_claims; // our heartbeat's list
                                     // (MS_LEASE_FEED_MAX_LIVE_CLAIMS)
};

//  Tasks collected from the store (startup load, claims reload).
typedef struct {
    ms_store_task_t *tasks; // copies (config pointers cleared)
    size_t n, cap;          // used, allocated
} s_task_list_t;

//  A claims walk: the feed, and whose claims (NULL: everyone's).
typedef struct {
    ms_lease_feed_t *feed;
    const uint8_t *who;
} s_walk_t;

ms_lease_feed_t *
ms_lease_feed_new(ms_lease_table_t *leases, ms_store_t *store,
                  const ms_lease_feed_iface_t *iface)
{
    assert(leases && store && iface);
    ms_lease_feed_t *self = calloc(1, sizeof *self);
    if (self)
        self->hb_claims =
            calloc(MS_LEASE_FEED_MAX_LIVE_CLAIMS, sizeof *self->hb_claims);
    if (!self || !self->hb_claims) {
        free(self);
        return NULL;
    }
    self->leases = leases;
    self->store = store;
    self->iface = *iface;
    return self;
}

void
ms_lease_feed_destroy(ms_lease_feed_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->hb_claims);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  An impossible result (case 7): release the claim it names, count it.

static void
s_refuse_result(ms_lease_feed_t *self, const uint8_t *origin,
                const uint8_t *payload, size_t len)
{
    ms_wire_result_t *w = NULL;
    if (ms_wire_decode_result_big(payload, len, &w) == MS_OK && w->epoch >= 1) {
        ms_claim_t c = {.slot = w->slot, .epoch = w->epoch};
        memcpy(c.task_id, w->task_id, MS_LEASE_ID_BYTES);
        memcpy(c.node_id, origin, MS_LEASE_ID_BYTES);
        ms_lease_table_add_release(self->leases, &c);
        self->stats.n_refused_invalid++;
        if (self->iface.log) {
            ms_hash_t tid;
            char hex[MS_HASH_HEX_LEN + 1], line[80];
            memcpy(tid.bytes, w->task_id, MS_HASH_BYTES);
            ms_hash_hex(&tid, hex);
            snprintf(line, sizeof line,
                     "refused an impossible result for task %.12s", hex);
            self->iface.log(self->iface.arg, line);
        }
    }
    ms_wire_result_destroy(&w);
}

void
ms_lease_feed_merge(ms_lease_feed_t *self,
                    const uint8_t origin[MS_LEASE_ID_BYTES], uint32_t kind,
                    const uint8_t *payload, size_t len)
{
    assert(self && origin);
    if (kind != MS_RECORD_CLAIM && kind != MS_RECORD_RELEASE &&
        kind != MS_RECORD_RESULT && kind != MS_RECORD_SWEEP &&
        kind != MS_RECORD_SWEEP_CONTROL && kind != MS_RECORD_FAILURE)
        return;
    if (self->iface.changed)
        self->iface.changed(self->iface.arg);
    if (kind == MS_RECORD_SWEEP || kind == MS_RECORD_SWEEP_CONTROL ||
        kind == MS_RECORD_FAILURE)
        return; // new tasks, states: the scheduler reads them from the store
    ms_store_payload_t *p = NULL;
    int rc = ms_store_payload_decode(kind, payload, len, &p);
    if (rc == MS_ERR_INVALID && kind == MS_RECORD_RESULT) {
        s_refuse_result(self, origin, payload, len);
        return;
    }
    if (rc != MS_OK)
        return;
    if (kind == MS_RECORD_RESULT) {
        ms_lease_table_finish(self->leases, p->u.result.task_id,
                              MS_LEASE_SLOT_ANY, origin);
        if (self->iface.result)
            self->iface.result(self->iface.arg, p->u.result.task_id, origin);
    } else if (p->u.claim.epoch >= 1 && p->u.claim.epoch <= UINT32_MAX) {
        ms_claim_t c;
        memcpy(c.task_id, p->u.claim.task_id, MS_LEASE_ID_BYTES);
        c.slot = p->u.claim.slot;
        c.epoch = (uint32_t) p->u.claim.epoch;
        memcpy(c.node_id, origin, MS_LEASE_ID_BYTES);
        if (kind == MS_RECORD_CLAIM)
            ms_lease_table_add_claim(self->leases, &c);
        else
            ms_lease_table_add_release(self->leases, &c);
    }
    ms_store_payload_destroy(&p);
}

//  --------------------------------------------------------------------------
//  One stored claim row into the table (of walk->who only, when set).

static int
s_load_claim(void *arg, const ms_store_claim_t *claim)
{
    s_walk_t *walk = arg;
    if (walk->who && memcmp(claim->node_id, walk->who, MS_LEASE_ID_BYTES) != 0)
        return 0;
    if (claim->epoch < 1 || claim->epoch > UINT32_MAX)
        return 0;
    ms_claim_t c;
    memcpy(c.task_id, claim->task_id, MS_LEASE_ID_BYTES);
    c.slot = claim->slot;
    c.epoch = (uint32_t) claim->epoch;
    memcpy(c.node_id, claim->node_id, MS_LEASE_ID_BYTES);
    if (claim->claimed)
        ms_lease_table_add_claim(walk->feed->leases, &c);
    if (claim->released)
        ms_lease_table_add_release(walk->feed->leases, &c);
    return 0;
}

//  --------------------------------------------------------------------------
//  Collect one task (ids and index only).

static int
s_collect_task(void *arg, const ms_store_task_t *task)
{
    s_task_list_t *list = arg;
    if (ms_array_grow(&list->tasks, &list->cap, list->n, sizeof *list->tasks) !=
        MS_OK)
        return MS_ERR_NOMEM;
    ms_store_task_t *t = &list->tasks[list->n++];
    *t = *task;
    t->config_json = NULL;
    t->error = NULL;
    return 0;
}

//  --------------------------------------------------------------------------
//  The claims of WHO (NULL: all) of every unfinished task into the table.
//  A task whose claims cannot be read stops the walk (its error is
//  returned) unless KEEP_GOING; an error listing the tasks always does.

static int
s_walk(ms_lease_feed_t *self, const uint8_t *who, bool keep_going)
{
    s_task_list_t list = {0};
    s_walk_t walk = {.feed = self, .who = who};
    int rc = ms_store_pending_tasks(self->store, s_collect_task, &list);
    for (size_t i = 0; rc == MS_OK && i < list.n; i++) {
        rc = ms_store_claims_by_task(self->store, list.tasks[i].task_id,
                                     s_load_claim, &walk);
        if (keep_going)
            rc = MS_OK;
    }
    free(list.tasks);
    return rc;
}

int
ms_lease_feed_load(ms_lease_feed_t *self)
{
    assert(self);
    return s_walk(self, NULL, false);
}

void
ms_lease_feed_reload_node(ms_lease_feed_t *self,
                          const uint8_t who[MS_LEASE_ID_BYTES])
{
    assert(self && who);
    ms_lease_table_forget_node(self->leases, who);
    s_walk(self, who, true);
}

void
ms_lease_feed_stats(const ms_lease_feed_t *self, ms_lease_feed_stats_t *out)
{
    assert(self && out);
    *out = self->stats;
}

//  --------------------------------------------------------------------------
//  A peer's heartbeat: its live claims.

void
ms_lease_feed_heartbeat(ms_lease_feed_t *self,
                        const uint8_t from[MS_LEASE_ID_BYTES],
                        const ms_wire_envelope_t *hb)
{
    assert(self && from && hb);
    size_t n = hb->heartbeat.n_live_claims;
    ms_claim_t *live = n ? calloc(n, sizeof *live) : NULL;
    if (n && !live)
        return;
    for (size_t i = 0; i < n; i++) {
        memcpy(live[i].task_id, hb->heartbeat.live_claims[i].task_id,
               MS_LEASE_ID_BYTES);
        live[i].slot = hb->heartbeat.live_claims[i].slot;
        live[i].epoch = hb->heartbeat.live_claims[i].epoch;
        memcpy(live[i].node_id, from, MS_LEASE_ID_BYTES);
    }
    ms_lease_table_heartbeat(self->leases, from, live, n);
    free(live);
}

//  --------------------------------------------------------------------------
//  Our heartbeat: renew our leases and list them.

void
ms_lease_feed_fill_heartbeat(ms_lease_feed_t *self, ms_wire_envelope_t *hb)
{
    assert(self && hb);
    ms_claim_t claims[MS_LEASE_FEED_MAX_LIVE_CLAIMS];
    size_t n = 0;
    ms_lease_table_renew(self->leases, claims, MS_LEASE_FEED_MAX_LIVE_CLAIMS,
                         &n);
    if (n > MS_LEASE_FEED_MAX_LIVE_CLAIMS)
        n = MS_LEASE_FEED_MAX_LIVE_CLAIMS;
    for (size_t i = 0; i < n; i++) {
        memcpy(self->hb_claims[i].task_id, claims[i].task_id, MS_WIRE_ID_BYTES);
        self->hb_claims[i].slot = claims[i].slot;
        self->hb_claims[i].epoch = claims[i].epoch;
    }
    hb->heartbeat.live_claims = n ? self->hb_claims : NULL;
    hb->heartbeat.n_live_claims = n;
}
