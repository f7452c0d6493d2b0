/*  =========================================================================
    ms_store_derive - records applied to the derived tables: sweeps and their
   fragments, tasks, claims, results and their ranks

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Writer thread only, inside the batch transaction: ms_store_apply takes
    one stored record and updates the tables it touches (a sweep and its
    tasks, a claim's lease, a result's row and rank, a failure, a
    re-evaluation, a dataset), then the task's state is derived again
    from its rows (ms_store_task_derive).
*/
#include "ms_store.h"
#include "ms_store_internal.h"

#include "ms_claim_rank.h"
#include "ms_hash.h"
#include "ms_ring.h"
#include "ms_store_payload.h"
#include "ms_verdict.h"
#include "ms_wire.h"
#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/vfs.h>
#include <zlib.h>

static int s_new_result_note(ms_store_t *self, MDB_txn *txn,
                             const uint8_t *task_id, const uint8_t *key,
                             const uint8_t *hash);

//  --------------------------------------------------------------------------
//  Derive a task's state from the records that touch it (see above) and
//  move it there. A task not known yet (its sweep record has not come) is
//  MS_OK: the sweep's apply derives it.

int
ms_store_task_derive(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id_in)
{
    uint8_t task_id[MS_STORE_ID];
    memcpy(task_id, task_id_in, MS_STORE_ID); // may point into the map
    MDB_val k = {MS_STORE_ID, task_id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return ms_store_mdb(rc, "get task");
    ms_store_task_hdr_t hdr;
    if (ms_store_task_decode(task_id, &v, &hdr, NULL) != MS_OK)
        return ms_store_mdb(MDB_CORRUPTED, "task record");

    bool any_meta = false, done = false;
    ms_store_scan_t it;
    rc = ms_store_scan_open(&it, txn, self->db_result_meta, task_id,
                            MS_STORE_ID, "cursor result_meta");
    while (rc == MS_OK && ms_store_scan_next(&it)) {
        const uint8_t *m = it.v.mv_data;
        any_meta = true;
        if (it.v.mv_size >= 4 && m[0] &&
            (m[1] == MS_RESULT_STATUS_OK || m[1] == MS_RESULT_STATUS_DIVERGED))
            done = true;
    }
    rc = ms_store_scan_close(&it, rc);
    if (rc != MS_OK)
        return rc;

    uint32_t n_nodes = 0;
    bool any_failure = false;
    uint8_t last[MS_STORE_ID];
    rc = ms_store_scan_open(&it, txn, self->db_failures, task_id, MS_STORE_ID,
                            "cursor failures");
    while (rc == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID * 2 + 16)
            break;
        any_failure = true;
        const uint8_t *node = (const uint8_t *) it.k.mv_data + MS_STORE_ID;
        if (it.v.mv_size < 1 ||
            ((const uint8_t *) it.v.mv_data)[0] != MS_FAILURE_CLASS_TASK)
            continue;
        if (n_nodes == 0 || memcmp(last, node, MS_STORE_ID) != 0) {
            bool skip = ms_store_is_equivocator(self, txn, node, &rc);
            if (rc != MS_OK || skip)
                continue; // an error ends the loop; an equivocator counts no
                          // more
            if (!ms_store_key_counts(self, txn, node, &rc) || rc != MS_OK)
                continue; // above its origin's revocation cut (or an error)
            n_nodes++;
            memcpy(last, node, MS_STORE_ID);
        }
    }
    rc = ms_store_scan_close(&it, rc);
    if (rc != MS_OK)
        return rc;
    uint32_t needed = self->n_members < 3 ? self->n_members : 3;
    bool failed = n_nodes > 0 && n_nodes >= needed;
    // Verification: with counted results the verdict decides (DESIGN.md
    // "Verification"): done once it is final for the task's slots
    // (verified; accepted when one slot is needed; disputed with no slot
    // left to open), failed when the agreeing results failed; otherwise
    // the task wants more results and stays open for the scheduler.
    int verdict = -1;
    bool final = false;
    if (any_meta) {
        rc = ms_store_verdict_derive(self, txn, task_id, &verdict, &final);
        if (rc != MS_OK)
            return rc;
        // The derive may move pages, and when it flipped a node's
        // quarantine it derived this task again
        // (ms_store_verdict_requeue_node): its state is what that nested derive
        // left, so read it again (a stale header would count the move twice in
        // the sweep's counts).
        rc = mdb_get(txn, self->db_tasks, &k, &v);
        if (rc != 0)
            return ms_store_mdb(rc, "get task");
        if (ms_store_task_decode(task_id, &v, &hdr, NULL) != MS_OK)
            return ms_store_mdb(MDB_CORRUPTED, "task record");
    }
    if (verdict >= 0) {
        done = final && verdict != MS_VERDICT_FAILED;
        failed = failed || (final && verdict == MS_VERDICT_FAILED);
    }

    ms_store_sweep_hdr_t sh;
    rc = ms_store_sweep_hdr_get(self, txn, hdr.sweep_id, &sh);
    if (rc != MS_OK)
        return rc == MS_ERR_NOTFOUND
                   ? ms_store_mdb(MDB_CORRUPTED, "task's sweep")
                   : rc;
    int state;
    if (done || (!any_meta && hdr.state == MS_TASK_DONE))
        state = MS_TASK_DONE;
    else if (failed || (!any_failure && hdr.state == MS_TASK_FAILED))
        state = MS_TASK_FAILED;
    else if (sh.state == MS_SWEEP_CANCELLED)
        state = MS_TASK_CANCELLED;
    else if (hdr.state == MS_TASK_CLAIMED || hdr.state == MS_TASK_RUNNING)
        state = hdr.state; // local (single-node API) states
    // (a task cancelled with its sweep is pending again once a reopen
    // made the sweep active)
    else
        state = MS_TASK_PENDING;
    if (state == hdr.state)
        return MS_OK;
    bool keep = state == MS_TASK_CLAIMED || state == MS_TASK_RUNNING;
    uint8_t holder[MS_STORE_ID];
    memcpy(holder, hdr.holder, MS_STORE_ID);
    return ms_store_task_move(self, txn, task_id, &v, &hdr, state,
                              keep ? holder : NULL, NULL);
}

//  --------------------------------------------------------------------------
//  Re-derive every task of a sweep.

static int
s_sweep_derive_tasks(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id)
{
    uint8_t *ids = NULL;
    size_t n = 0, cap = 0;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_sweep_tasks, sweep_id,
                                    MS_STORE_ID, "cursor sweep_tasks");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID + 4 || it.v.mv_size != MS_STORE_ID)
            break;
        status = ms_store_ids_push(&ids, &n, &cap, it.v.mv_data);
    }
    status = ms_store_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = ms_store_task_derive(self, txn, ids + i * MS_STORE_ID);
    free(ids);
    return status;
}

//  --------------------------------------------------------------------------
//  Decode a sweep_controls value; false when malformed.

static bool
s_control_value(const MDB_val *v, uint32_t *action, int32_t *value,
                uint64_t *lamport)
{
    if (v->mv_size != 8 && v->mv_size != 16)
        return false;
    const uint8_t *b = v->mv_data;
    *action = ms_be_get32(b);
    *value = (int32_t) ms_be_get32(b + 4);
    *lamport = v->mv_size == 16 ? ms_be_get64(b + 8) : 0;
    return true;
}

//  --------------------------------------------------------------------------
//  Order of the fold: logical time, then record key.

static int
s_control_cmp(const void *a, const void *b)
{
    const ms_store_control_row_t *x = a, *y = b;
    if (x->lamport != y->lamport)
        return x->lamport < y->lamport ? -1 : 1;
    return memcmp(x->key, y->key, MS_STORE_KEY);
}

//  --------------------------------------------------------------------------
//  Collect a sweep's control rows (*rows: caller frees; *n rows).

int
ms_store_control_rows(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                      ms_store_control_row_t **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    size_t cap = 0;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_controls, sweep_id,
                                    MS_STORE_ID, "cursor sweep_controls");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID + MS_STORE_KEY)
            break;
        ms_store_control_row_t row;
        if (!s_control_value(&it.v, &row.action, &row.value, &row.lamport))
            continue;
        memcpy(row.key, (const uint8_t *) it.k.mv_data + MS_STORE_ID,
               MS_STORE_KEY);
        status = ms_array_grow(rows, &cap, *n, sizeof **rows);
        if (status != MS_OK)
            break;
        (*rows)[(*n)++] = row;
    }
    status = ms_store_scan_close(&it, status);
    if (status != MS_OK) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return status;
}

//  --------------------------------------------------------------------------
//  Fold a sweep's controls (by logical time, then record key) into its
//  state and priority; re-derive its tasks when it turned cancelled or
//  back.

static int
s_sweep_refold(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id_in)
{
    uint8_t sweep_id[MS_STORE_ID];
    memcpy(sweep_id, sweep_id_in, MS_STORE_ID);
    ms_store_sweep_hdr_t sh;
    int rc = ms_store_sweep_hdr_get(self, txn, sweep_id, &sh);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK; // the sweep record has not come yet
    if (rc != MS_OK)
        return rc;
    ms_store_control_row_t *rows = NULL;
    size_t n = 0;
    rc = ms_store_control_rows(self, txn, sweep_id, &rows, &n);
    if (rc != MS_OK)
        return rc;
    if (n > 1)
        qsort(rows, n, sizeof *rows, s_control_cmp);
    int state = MS_SWEEP_ACTIVE;
    int32_t priority = 0, base = sh.priority;
    bool have_base = false, have_priority = false;
    for (size_t i = 0; i < n; i++) {
        uint32_t action = rows[i].action;
        int32_t value = rows[i].value;
        if (action == 0) {
            // Sweep records carry no time (0): the first in this order
            // is the lowest key's, the base.
            if (!have_base) {
                have_base = true;
                base = value;
            }
        } else if (action == MS_SWEEP_CONTROL_PRIORITY) {
            have_priority = true;
            priority = value;
        } else if (action == MS_SWEEP_CONTROL_CANCEL)
            state = MS_SWEEP_CANCELLED;
        else if (action == MS_SWEEP_CONTROL_REOPEN)
            state = MS_SWEEP_ACTIVE;
        else if (action == MS_SWEEP_CONTROL_PAUSE &&
                 state != MS_SWEEP_CANCELLED)
            state = MS_SWEEP_PAUSED;
        else if (action == MS_SWEEP_CONTROL_RESUME &&
                 state != MS_SWEEP_CANCELLED)
            state = MS_SWEEP_ACTIVE;
    }
    free(rows);
    bool was_cancelled = sh.state == MS_SWEEP_CANCELLED;
    sh.state = (uint8_t) state;
    sh.priority = have_priority ? priority : base;
    rc = ms_store_sweep_hdr_put(self, txn, sweep_id, &sh);
    if (rc == MS_OK && was_cancelled != (state == MS_SWEEP_CANCELLED))
        rc = s_sweep_derive_tasks(self, txn, sweep_id);
    return rc;
}

static int s_results_recount_task(ms_store_t *self, MDB_txn *txn,
                                  const uint8_t *task_id);
static int s_task_replicas(ms_store_t *self, MDB_txn *txn,
                           const uint8_t *task_id, uint32_t *replicas);

//  --------------------------------------------------------------------------
//  Keep a sweep's result slots per task (its spec's verify.replicas) in
//  its sweep_meta; *changed is set true when they changed.

static int
s_sweep_set_replicas(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                     uint32_t replicas, bool *changed)
{
    if (replicas < 1 || replicas > UINT16_MAX)
        replicas = 1;
    ms_store_sweep_hdr_t sh;
    int rc = ms_store_sweep_hdr_get(self, txn, sweep_id, &sh);
    if (rc != MS_OK || sh.replicas == replicas)
        return rc;
    *changed = *changed || (sh.replicas ? sh.replicas : 1) != replicas;
    sh.replicas = (uint16_t) replicas;
    return ms_store_sweep_hdr_put(self, txn, sweep_id, &sh);
}

//  --------------------------------------------------------------------------
//  Apply a sweep record: its spec, tasks and counts, its base
//  priority, then its controls and its tasks' states.

int
ms_store_apply_sweep(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                     const ms_store_payload_t *p)
{
    const struct ms_store_payload_sweep *s = &p->u.sweep;
    // P comes from ms_store_payload_decode, which rebuilt the spec with
    // ms_spec_load_canonical (canonical JSON, configs re-encoded byte for
    // byte): parsing the text again here cost seconds for 100,000 tasks.
    bool ok = s->n_tasks < UINT32_MAX && s->spec_json && s->spec_len > 0;
    for (size_t i = 0; ok && i < s->n_tasks; i++)
        ok = s->tasks[i].config_len < UINT32_MAX / 2 &&
             s->tasks[i].config_len > 0;
    if (!ok || ms_store_has_duplicate_ids(s->tasks, s->n_tasks)) {
        fprintf(stderr, "meshsweep: store: sweep record with an invalid "
                        "spec or task list; stored, not applied\n");
        return MS_OK;
    }
    ms_store_op_t op = {.kind = MS_STORE_OP_PUT_SWEEP,
                        .id = s->sweep_id,
                        .text = s->spec_json,
                        .len = s->spec_len,
                        .value = s->priority,
                        .tasks = s->tasks,
                        .n_tasks = s->n_tasks,
                        .created_at_ms = s->created_at_ms}; // 0: local now
    int rc = ms_store_op_put_sweep(self, txn, &op);
    if (rc == MS_ERR_CONFLICT) { // refused before writing
        fprintf(stderr, "meshsweep: store: sweep record conflicts with a "
                        "stored sweep or task; stored, not applied\n");
        return MS_OK;
    }
    if (rc != MS_OK)
        return rc;
    // Its priority as a control of action 0 under its own record key: of
    // several sweep records of one sweep (two nodes submitted the same
    // spec), the lowest key's priority is the base, whatever came first.
    uint8_t ck[MS_STORE_ID + MS_STORE_KEY], cv[8];
    memcpy(ck, s->sweep_id, MS_STORE_ID);
    memcpy(ck + MS_STORE_ID, key, MS_STORE_KEY);
    ms_be_put32(cv, 0);
    ms_be_put32(cv + 4, (uint32_t) s->priority);
    MDB_val k = {sizeof ck, ck}, v = {sizeof cv, cv};
    rc =
        ms_store_mdb(mdb_put(txn, self->db_controls, &k, &v, 0), "put control");
    if (rc == MS_OK)
        rc = s_sweep_refold(self, txn, s->sweep_id);
    // Result slots per task: results that came before the sweep were
    // ranked for 1 slot; rank them again now (ms_store_results_rank).
    bool rerank = !op.existed;
    if (rc == MS_OK)
        rc = s_sweep_set_replicas(self, txn, s->sweep_id, s->replicas, &rerank);
    if (rc == MS_OK && self->has_verdicts)
        rc =
            ms_store_sweep_verify_put(self, txn, s->sweep_id, s->replicas,
                                      s->accuracy_tolerance, s->loss_tolerance);
    for (size_t i = 0; rc == MS_OK && rerank && i < s->n_tasks; i++)
        rc = s_results_recount_task(self, txn, s->tasks[i].task_id);
    for (size_t i = 0; rc == MS_OK && !op.existed && i < s->n_tasks; i++)
        rc = ms_store_task_derive(self, txn, s->tasks[i].task_id);
    return rc;
}

//  --------------------------------------------------------------------------
//  Apply a sweep-control record.

static int
s_apply_control(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                const ms_store_payload_t *p)
{
    uint8_t ck[MS_STORE_ID + MS_STORE_KEY], cv[16];
    memcpy(ck, p->u.control.sweep_id, MS_STORE_ID);
    memcpy(ck + MS_STORE_ID, key, MS_STORE_KEY);
    ms_be_put32(cv, p->u.control.action);
    ms_be_put32(cv + 4, (uint32_t) p->u.control.priority);
    ms_be_put64(cv + 8, p->u.control.lamport);
    // No time (an older node's record): the old 8 bytes, so the state
    // digest of such a store stays what older nodes compute.
    MDB_val k = {sizeof ck, ck}, v = {p->u.control.lamport ? sizeof cv : 8, cv};
    int rc =
        ms_store_mdb(mdb_put(txn, self->db_controls, &k, &v, 0), "put control");
    return rc == MS_OK ? s_sweep_refold(self, txn, p->u.control.sweep_id) : rc;
}

//  --------------------------------------------------------------------------
//  Apply a claim or release record to its claims row.

static int
s_apply_claim(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
              const ms_store_payload_t *p)
{
    uint8_t ck[MS_STORE_ID + 4 + 8 + MS_STORE_ID];
    memcpy(ck, p->u.claim.task_id, MS_STORE_ID);
    ms_be_put32(ck + MS_STORE_ID, p->u.claim.slot);
    ms_be_put64(ck + MS_STORE_ID + 4, p->u.claim.epoch);
    memcpy(ck + MS_STORE_ID + 12, key,
           MS_STORE_ID); // the node: the record's origin
    MDB_val k = {sizeof ck, ck}, v;
    ms_store_claim_row_t row = {0};
    int rc = mdb_get(txn, self->db_claims, &k, &v);
    if (rc == 0 && v.mv_size == sizeof row)
        memcpy(&row, v.mv_data, sizeof row);
    else if (rc != 0 && rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get claim");
    if (p->kind == MS_RECORD_CLAIM) {
        if (row.claimed && memcmp(key, row.claim_key, MS_STORE_KEY) >= 0)
            return MS_OK;
        row.claimed = 1;
        memcpy(row.claim_key, key, MS_STORE_KEY);
    } else {
        if (row.released && memcmp(key, row.release_key, MS_STORE_KEY) >= 0)
            return MS_OK;
        row.released = 1;
        row.reason = p->u.claim.reason;
        memcpy(row.release_key, key, MS_STORE_KEY);
    }
    v.mv_size = sizeof row;
    v.mv_data = &row;
    return ms_store_mdb(mdb_put(txn, self->db_claims, &k, &v, 0), "put claim");
}

// One result of a (task, node) while choosing the counted one.
typedef struct {
    uint8_t key[MS_STORE_ID * 2 + 16]; // result_meta key
    uint64_t incarnation;              // from the key
    uint8_t hash[32];                  // record hash
    bool counted;                      // flag as stored
    bool committed;                    // a matching earlier commit exists
} s_result_ent_t;

//  --------------------------------------------------------------------------
//  Re-choose the counted result of (task, node): per incarnation the
//  lowest seq, across incarnations the lowest record hash (none when the
//  node is an equivocator). Rewrites the counted flags, then re-ranks the
//  task's results (ms_store_results_rank), which rewrites the results rows.

int
ms_store_results_recount(ms_store_t *self, MDB_txn *txn,
                         const uint8_t *prefix_in)
{
    uint8_t prefix[2 * MS_STORE_ID];
    memcpy(prefix, prefix_in, sizeof prefix); // may point into the map
    ms_store_gen_touch_task(self, txn, prefix);
    s_result_ent_t *ents = NULL;
    size_t n = 0, cap = 0;
    int rc;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_result_meta, prefix,
                                    2 * MS_STORE_ID, "cursor result_meta");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != 2 * MS_STORE_ID + 16)
            break;
        if (it.v.mv_size < MS_STORE_RM_ROW + 1)
            continue;
        status = ms_array_grow(&ents, &cap, n, sizeof *ents);
        if (status != MS_OK)
            break;
        s_result_ent_t *e = &ents[n++];
        memcpy(e->key, it.k.mv_data, sizeof e->key);
        e->incarnation = ms_be_get64(e->key + 2 * MS_STORE_ID);
        memcpy(e->hash, (const uint8_t *) it.v.mv_data + MS_STORE_RM_HASH, 32);
        e->counted = ((const uint8_t *) it.v.mv_data)[0] != 0;
        e->committed = ((const uint8_t *) it.v.mv_data)[3] != 0;
    }
    status = ms_store_scan_close(&it, status);
    size_t best = SIZE_MAX;
    bool excluded =
        status == MS_OK &&
        ms_store_is_equivocator(self, txn, prefix + MS_STORE_ID, &status);
    ms_store_cut_t cut;
    bool revoked = false;
    if (status == MS_OK)
        status =
            ms_store_cut_get(self, txn, prefix + MS_STORE_ID, &cut, &revoked);
    // Commit then reveal: with two or more replicas only a committed
    // result counts (a copy made after a reveal has no blind commit).
    uint32_t replicas = 1;
    if (status == MS_OK && n > 0)
        status = s_task_replicas(self, txn, prefix, &replicas);
    bool inc_taken = false; // this incarnation's candidate was seen
    for (size_t i = 0; !excluded && status == MS_OK && i < n; i++) {
        if (i > 0 && ents[i].incarnation != ents[i - 1].incarnation)
            inc_taken = false;
        //  (the first eligible of an incarnation has its lowest eligible
        //  seq: when it lies above the cut, so do the later ones)
        if (inc_taken || (replicas >= 2 && !ents[i].committed))
            continue;
        inc_taken = true;
        if (revoked && !ms_store_cut_counts(
                           &cut, ents[i].incarnation,
                           ms_be_get64(ents[i].key + 2 * MS_STORE_ID + 8)))
            continue;
        if (best == SIZE_MAX || memcmp(ents[i].hash, ents[best].hash, 32) < 0)
            best = i;
    }
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        bool counted = i == best;
        if (counted == ents[i].counted)
            continue;
        MDB_val mk = {sizeof ents[i].key, ents[i].key}, mv;
        rc = mdb_get(txn, self->db_result_meta, &mk, &mv);
        if (rc != 0) {
            status = ms_store_mdb(rc, "get result_meta");
            break;
        }
        uint8_t *copy = malloc(mv.mv_size);
        if (!copy) {
            status = MS_ERR_NOMEM;
            break;
        }
        memcpy(copy, mv.mv_data, mv.mv_size);
        copy[0] = counted;
        copy[2] = MS_STORE_PLACE_NONE; // ms_store_results_rank decides
        mv.mv_data = copy;
        status = ms_store_mdb(mdb_put(txn, self->db_result_meta, &mk, &mv, 0),
                              "put result_meta");
        free(copy);
    }
    free(ents);
    if (status == MS_OK && (excluded || (n > 0 && best == SIZE_MAX))) {
        // none of its results counts (any more)
        MDB_val rk = {2 * MS_STORE_ID, prefix};
        int d = mdb_del(txn, self->db_results, &rk, NULL);
        if (d != 0 && d != MDB_NOTFOUND)
            status = ms_store_mdb(d, "del result");
    }
    return status == MS_OK ? ms_store_results_rank(self, txn, prefix) : status;
}

//  --------------------------------------------------------------------------
//  Result slots of a task: its sweep's verify.replicas (from the sweep
//  record), 1 while the task or its sweep is not known here (or was
//  stored by the single-node API). The trust issue makes this
//  min(replicas, operators).

static int
s_task_replicas(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
                uint32_t *replicas)
{
    *replicas = 1;
    MDB_val k = {MS_STORE_ID, (void *) task_id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return ms_store_mdb(rc, "get task");
    ms_store_task_hdr_t th;
    if (v.mv_size < sizeof th)
        return ms_store_mdb(MDB_CORRUPTED, "task record");
    memcpy(&th, v.mv_data, sizeof th);
    ms_store_sweep_hdr_t sh;
    rc = ms_store_sweep_hdr_get(self, txn, th.sweep_id, &sh);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK;
    if (rc != MS_OK)
        return rc;
    if (sh.replicas > 0)
        *replicas = sh.replicas;
    return MS_OK;
}

// One counted-or-not result of a task while ranking them.
typedef struct {
    uint8_t key[MS_STORE_ID * 2 + 16]; // result_meta key (task || node || ...)
    bool counted;                      // counted for its (task, node)
    uint8_t place;                     // MS_STORE_PLACE_* as stored
    bool fills;                        // chosen to fill a slot
    uint32_t slot, epoch;              // what it was computed for
    uint8_t rank[32];                  // H(task || slot (BE) || node)
} s_rank_ent_t;

//  --------------------------------------------------------------------------
//  True when a ranks before b: higher epoch, then lower H(task, slot,
//  node) - the claims' ranking (ms_lease_table), so a result of the
//  slot's top claim comes first.

static bool
s_rank_before(const s_rank_ent_t *a, const s_rank_ent_t *b)
{
    return ms_claim_rank_before(a->epoch, a->rank, b->epoch, b->rank);
}

//  --------------------------------------------------------------------------
//  Choose which counted results of a task fill its slots (DESIGN.md: an
//  outranked node's result is "an extra replica, never a second row"):
//  the task needs R = s_task_replicas slots; first, for each slot s < R,
//  the best-ranked counted result computed for s; then, while fewer than
//  R are chosen, the best-ranked of the rest (a slot nobody's result was
//  computed for is filled by another node's). One counted result per
//  node, so the chosen ones are R distinct nodes at most. Pure: it reads
//  only result_meta and the sweep record. The results table holds the
//  chosen rows; the other counted ones are flagged extra in result_meta
//  (listed only by ms_store_results_by_task_all). Rows of nodes with no
//  result_meta (the single-node API) are left alone.

int
ms_store_results_rank(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id_in)
{
    uint8_t task_id[MS_STORE_ID];
    memcpy(task_id, task_id_in, MS_STORE_ID); // may point into the map
    ms_store_gen_touch_task(self, txn, task_id);
    s_rank_ent_t *ents = NULL;
    size_t n = 0, cap = 0;
    uint32_t n_counted = 0;
    int rc;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_result_meta, task_id,
                                    MS_STORE_ID, "cursor result_meta");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != 2 * MS_STORE_ID + 16)
            break;
        if (it.v.mv_size < MS_STORE_RM_ROW + 1)
            continue;
        status = ms_array_grow(&ents, &cap, n, sizeof *ents);
        if (status != MS_OK)
            break;
        const uint8_t *m = it.v.mv_data;
        s_rank_ent_t *e = &ents[n++];
        memset(e, 0, sizeof *e);
        memcpy(e->key, it.k.mv_data, sizeof e->key);
        e->counted = m[0] != 0;
        e->place = m[2];
        e->slot = ms_be_get32(m + MS_STORE_RM_SLOT);
        e->epoch = ms_be_get32(m + MS_STORE_RM_EPOCH);
        n_counted += e->counted;
    }
    status = ms_store_scan_close(&it, status);
    uint32_t replicas = 1;
    if (status == MS_OK && n > 0)
        status = s_task_replicas(self, txn, task_id, &replicas);
    // Choose: per slot first, then the best of the rest (every counted
    // one when they are not more than the slots: no ranking needed).
    if (n_counted <= replicas)
        replicas = 0;
    for (size_t i = 0; i < n; i++) {
        s_rank_ent_t *e = &ents[i];
        e->fills = e->counted && replicas == 0;
        if (!e->counted || replicas == 0)
            continue;
        ms_claim_rank_hash(task_id, e->slot, e->key + MS_STORE_ID, e->rank);
    }
    uint32_t chosen = 0;
    for (uint32_t slot = 0; status == MS_OK && slot < replicas; slot++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            if (ents[i].counted && !ents[i].fills && ents[i].slot == slot &&
                (best == SIZE_MAX || s_rank_before(&ents[i], &ents[best])))
                best = i;
        if (best != SIZE_MAX) {
            ents[best].fills = true;
            chosen++;
        }
    }
    while (status == MS_OK && chosen < replicas) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            if (ents[i].counted && !ents[i].fills &&
                (best == SIZE_MAX || s_rank_before(&ents[i], &ents[best])))
                best = i;
        if (best == SIZE_MAX)
            break;
        ents[best].fills = true;
        chosen++;
    }
    // Write what changed: the place, then the node's results row (a row
    // whose place stays MS_STORE_PLACE_FILLS is already the results row).
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        uint8_t place = !ents[i].counted ? MS_STORE_PLACE_NONE
                        : ents[i].fills  ? MS_STORE_PLACE_FILLS
                                         : MS_STORE_PLACE_EXTRA;
        if (place == ents[i].place)
            continue;
        bool extra = place == MS_STORE_PLACE_EXTRA;
        MDB_val mk = {sizeof ents[i].key, ents[i].key}, mv;
        rc = mdb_get(txn, self->db_result_meta, &mk, &mv);
        if (rc != 0) {
            status = ms_store_mdb(rc, "get result_meta");
            break;
        }
        size_t size = mv.mv_size;
        uint8_t *copy = malloc(size);
        if (!copy) {
            status = MS_ERR_NOMEM;
            break;
        }
        memcpy(copy, mv.mv_data, size);
        copy[2] = place;
        mv.mv_data = copy;
        status = ms_store_mdb(mdb_put(txn, self->db_result_meta, &mk, &mv, 0),
                              "put result_meta");
        MDB_val rk = {2 * MS_STORE_ID, ents[i].key}, rv;
        if (status == MS_OK && ents[i].fills) {
            int g = mdb_get(txn, self->db_results, &rk, &rv);
            bool same = g == 0 && rv.mv_size == size - MS_STORE_RM_ROW &&
                        memcmp(rv.mv_data, copy + MS_STORE_RM_ROW,
                               size - MS_STORE_RM_ROW) == 0;
            if (g != 0 && g != MDB_NOTFOUND)
                status = ms_store_mdb(g, "get result");
            else if (!same) {
                rv.mv_size = size - MS_STORE_RM_ROW;
                rv.mv_data = copy + MS_STORE_RM_ROW;
                status = ms_store_mdb(
                    mdb_put(txn, self->db_results, &rk, &rv, 0), "put result");
            }
        } else if (status == MS_OK && extra) {
            int d = mdb_del(txn, self->db_results, &rk, NULL);
            if (d != 0 && d != MDB_NOTFOUND)
                status = ms_store_mdb(d, "del result");
        }
        free(copy);
    }
    free(ents);
    return status;
}

//  --------------------------------------------------------------------------
//  Apply a commit record: kept by (task, node, incarnation, seq).

static int
s_apply_commit(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
               const ms_store_payload_t *p)
{
    uint8_t ck[2 * MS_STORE_ID + 16], cv[MS_STORE_ID + 8];
    memcpy(ck, p->u.commit.task_id, MS_STORE_ID);
    memcpy(ck + MS_STORE_ID, key, MS_STORE_KEY); // node || incarnation || seq
    memcpy(cv, p->u.commit.commitment, MS_STORE_ID);
    ms_be_put32(cv + MS_STORE_ID, p->u.commit.slot);
    ms_be_put32(cv + MS_STORE_ID + 4, p->u.commit.epoch);
    MDB_val k = {sizeof ck, ck}, v = {sizeof cv, cv};
    int rc = mdb_put(txn, self->db_commits, &k, &v, MDB_NOOVERWRITE);
    return rc == MDB_KEYEXIST ? MS_OK : ms_store_mdb(rc, "put commit");
}

//  --------------------------------------------------------------------------
//  True in *match when the result P at record KEY reveals a commit: one of
//  the same task by the same node and incarnation at a lower seq, holding
//  ms_store_payload_commitment(node, nonce, row). A row the commitment
//  cannot be computed over matches nothing.

static int
s_commit_matches(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                 const ms_store_payload_t *p, bool *match)
{
    *match = false;
    uint8_t want[MS_STORE_ID];
    int rc = ms_store_payload_commitment(key, p->u.result.nonce,
                                         p->u.result.row_json,
                                         p->u.result.row_len, want);
    if (rc == MS_ERR_NOMEM)
        return rc;
    if (rc != MS_OK)
        return MS_OK;
    uint8_t prefix[2 * MS_STORE_ID + 8];
    memcpy(prefix, p->u.result.task_id, MS_STORE_ID);
    memcpy(prefix + MS_STORE_ID, key, MS_STORE_ID + 8); // node || incarnation
    uint64_t seq = ms_be_get64(key + MS_STORE_ID + 8);
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_commits, prefix,
                                    sizeof prefix, "cursor commits");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != 2 * MS_STORE_ID + 16 ||
            ms_be_get64((const uint8_t *) it.k.mv_data + 2 * MS_STORE_ID + 8) >=
                seq)
            break;
        if (it.v.mv_size >= MS_STORE_ID &&
            memcmp(it.v.mv_data, want, MS_STORE_ID) == 0) {
            *match = true;
            break;
        }
    }
    return ms_store_scan_close(&it, status);
}

//  --------------------------------------------------------------------------
//  Re-choose the counted result of every node of a task (its replicas
//  changed: the commit rule depends on them); ranks the task.

static int
s_results_recount_task(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id)
{
    uint8_t prefix[2 * MS_STORE_ID];
    memcpy(prefix, task_id, MS_STORE_ID);
    memset(prefix + MS_STORE_ID, 0, MS_STORE_ID);
    bool any = false;
    for (;;) {
        //  The first result of the task at or after node prefix + MS_STORE_ID.
        ms_store_scan_t it;
        int rc = ms_store_scan_open(&it, txn, self->db_result_meta, task_id,
                                    MS_STORE_ID, "cursor result_meta");
        ms_store_scan_from(&it, prefix, sizeof prefix);
        bool found = rc == MS_OK && ms_store_scan_next(&it) &&
                     it.k.mv_size == 2 * MS_STORE_ID + 16;
        if (found)
            memcpy(prefix + MS_STORE_ID,
                   (const uint8_t *) it.k.mv_data + MS_STORE_ID, MS_STORE_ID);
        rc = ms_store_scan_close(&it, rc);
        if (rc != MS_OK)
            return rc;
        if (!found)
            break;
        any = true;
        rc = ms_store_results_recount(self, txn, prefix);
        if (rc != MS_OK)
            return rc;
        // the next node: prefix + 1 (the node id as a big number)
        int i = 2 * MS_STORE_ID - 1;
        while (i >= MS_STORE_ID && ++prefix[i] == 0)
            i--;
        if (i < MS_STORE_ID)
            break; // it was the last node id possible
    }
    return any ? MS_OK : ms_store_results_rank(self, txn, task_id);
}

//  --------------------------------------------------------------------------
//  Apply a result record: keep it, re-choose the counted one and the
//  ones that fill the task's slots, re-derive the task.

static int
s_apply_result(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
               const uint8_t *hash, const ms_store_payload_t *p)
{
    uint8_t mk[2 * MS_STORE_ID + 16];
    memcpy(mk, p->u.result.task_id, MS_STORE_ID);
    memcpy(mk + MS_STORE_ID, key, MS_STORE_KEY); // node || incarnation || seq
    ms_store_gen_touch_task(self, txn, mk);
    size_t row_len = p->u.result.row_len;
    MDB_val k = {sizeof mk, mk}, v = {MS_STORE_RM_ROW + row_len + 1, NULL};
    int rc = mdb_put(txn, self->db_result_meta, &k, &v,
                     MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST)
        return MS_OK;
    if (rc != 0)
        return ms_store_mdb(rc, "put result_meta");
    uint8_t *m = v.mv_data;
    m[0] = 0;
    m[1] = (uint8_t) p->u.result.status;
    m[2] = 0;
    bool committed = false;
    if (p->u.result.has_nonce) {
        rc = s_commit_matches(self, txn, key, p, &committed);
        if (rc != MS_OK)
            return rc;
    }
    m[3] = committed;
    memcpy(m + MS_STORE_RM_HASH, hash, 32);
    ms_be_put32(m + MS_STORE_RM_SLOT, p->u.result.slot);
    ms_be_put32(m + MS_STORE_RM_EPOCH, p->u.result.epoch);
    memcpy(m + MS_STORE_RM_ROW, p->u.result.row_json, row_len);
    m[MS_STORE_RM_ROW + row_len] = 0;
    if (p->u.result.status == MS_RESULT_STATUS_OK) {
        rc = s_new_result_note(self, txn, p->u.result.task_id, key, hash);
        if (rc != MS_OK)
            return rc;
    }
    rc = ms_store_results_recount(self, txn, mk);
    return rc == MS_OK ? ms_store_task_derive(self, txn, p->u.result.task_id)
                       : rc;
}

//  --------------------------------------------------------------------------
//  Queue a new ok result for the node's re-evaluation sampling (bounded:
//  when full the oldest is dropped; a result missed here is simply not
//  sampled by this node). Only results that have weights to re-evaluate
//  are queued: those of tasks that train (not noop). A result whose task
//  is not known yet (it came before its sweep) is not sampled either.

static int
s_new_result_note(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
                  const uint8_t *key, const uint8_t *hash)
{
    ms_store_task_hdr_t th;
    ms_store_task_t view;
    int rc = ms_store_task_read(self, txn, task_id, &th, &view);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK;
    if (rc != MS_OK)
        return rc;
    if (ms_store_task_traits(&th, &view) & MS_STORE_TT_NOOP)
        return MS_OK;
    ms_store_new_result_t e;
    memcpy(e.task_id, task_id, MS_STORE_ID);
    memcpy(e.node_id, key, MS_STORE_ID);
    memcpy(e.record_hash, hash, MS_STORE_ID);
    pthread_mutex_lock(&self->nr_mu);
    ms_ring_push(self->nr, &e);
    pthread_mutex_unlock(&self->nr_mu);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Apply a re-evaluation record: keep it by (task, verifier record key),
//  then evaluate the task again (the verdict reads every re-evaluation of
//  the task; see "Verdicts in the store").

static int
s_apply_reeval(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
               const uint8_t *hash, const ms_store_payload_t *p)
{
    if (!self->has_reevals)
        return MS_OK;
    const ms_wire_reevaluation_t *r = &p->u.reeval;
    uint8_t rk[MS_STORE_ID + MS_STORE_KEY];
    memcpy(rk, r->task_id, MS_STORE_ID);
    memcpy(rk + MS_STORE_ID, key,
           MS_STORE_KEY); // verifier || incarnation || seq
    ms_store_reeval_val_t rv;
    memset(&rv, 0, sizeof rv);
    memcpy(rv.target, r->target, MS_STORE_ID);
    memcpy(rv.record_hash, hash, MS_STORE_ID);
    rv.failed = r->status != MS_WIRE_REEVAL_OK;
    rv.test_accuracy = r->test_accuracy;
    rv.test_loss = r->test_loss;
    rv.val_accuracy = r->val_accuracy;
    rv.val_loss = r->val_loss;
    MDB_val k = {sizeof rk, rk}, v = {sizeof rv, &rv};
    int rc = mdb_put(txn, self->db_reevals, &k, &v, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST)
        return MS_OK;
    if (rc != 0)
        return ms_store_mdb(rc, "put reeval");
    return ms_store_task_derive(self, txn, r->task_id);
}

//  --------------------------------------------------------------------------
//  Apply a failure record.

static int
s_apply_failure(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                const ms_store_payload_t *p)
{
    uint8_t fk[2 * MS_STORE_ID + 16];
    memcpy(fk, p->u.failure.task_id, MS_STORE_ID);
    memcpy(fk + MS_STORE_ID, key, MS_STORE_KEY);
    size_t len = strlen(p->u.failure.reason);
    MDB_val k = {sizeof fk, fk}, v = {1 + len + 1, NULL};
    int rc =
        mdb_put(txn, self->db_failures, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST)
        return MS_OK;
    if (rc != 0)
        return ms_store_mdb(rc, "put failure");
    uint8_t *f = v.mv_data;
    f[0] = (uint8_t) p->u.failure.failure_class;
    memcpy(f + 1, p->u.failure.reason, len + 1);
    return ms_store_task_derive(self, txn, p->u.failure.task_id);
}

//  --------------------------------------------------------------------------
//  Apply a dataset record: by hash, the smaller payload bytes kept.

static int
s_apply_dataset(ms_store_t *self, MDB_txn *txn, const ms_store_payload_t *p,
                const void *payload, size_t len)
{
    MDB_val k = {MS_STORE_ID, (void *) p->u.dataset.hash}, v;
    int rc = mdb_get(txn, self->db_datasets, &k, &v);
    if (rc == 0) {
        size_t m = v.mv_size < len ? v.mv_size : len;
        int c = memcmp(payload, v.mv_data, m);
        if (c > 0 || (c == 0 && len >= v.mv_size))
            return MS_OK;
    } else if (rc != MDB_NOTFOUND) {
        return ms_store_mdb(rc, "get dataset");
    }
    v.mv_size = len;
    v.mv_data = (void *) payload;
    return ms_store_mdb(mdb_put(txn, self->db_datasets, &k, &v, 0),
                        "put dataset");
}

//  --------------------------------------------------------------------------
//  Count a fragment set that is stored but not applied (meta
//  "bad_fragments", in the txn so a rerun counts it once) and say why.

static int
s_bad_fragments(ms_store_t *self, MDB_txn *txn, const uint8_t key[MS_STORE_KEY],
                const char *why)
{
    ms_record_key_t k;
    ms_store_key_parse(key, &k);
    fprintf(stderr,
            "meshsweep: store: fragmented record ending at seq %llu of "
            "incarnation %016llx is inconsistent (%s); stored, not applied\n",
            (unsigned long long) k.seq, (unsigned long long) k.incarnation,
            why);
    MDB_val mk = {strlen("bad_fragments"), "bad_fragments"}, mv;
    uint64_t n = 0;
    int rc = mdb_get(txn, self->db_meta, &mk, &mv);
    if (rc == 0 && mv.mv_size == sizeof n)
        memcpy(&n, mv.mv_data, sizeof n);
    else if (rc != 0 && rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get bad_fragments");
    n++;
    mv.mv_size = sizeof n;
    mv.mv_data = &n;
    return ms_store_mdb(mdb_put(txn, self->db_meta, &mk, &mv, 0),
                        "put bad_fragments");
}

//  --------------------------------------------------------------------------
//  Inflate a zlib stream of IN_LEN bytes into exactly RAW_LEN bytes
//  (the output never grows past RAW_LEN). Returns a malloc'd buffer or
//  NULL (*why says why: "nomem" or an inflate error).

static uint8_t *
s_inflate(const uint8_t *in, size_t in_len, size_t raw_len, const char **why)
{
    uint8_t *out = malloc(raw_len + 1); // +1: a longer stream is caught
    if (!out) {
        *why = "nomem";
        return NULL;
    }
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK) {
        free(out);
        *why = "inflate init";
        return NULL;
    }
    z.next_in = (Bytef *) in;
    z.avail_in = (uInt) in_len;
    z.next_out = out;
    z.avail_out = (uInt) raw_len + 1;
    int zrc = inflate(&z, Z_FINISH);
    bool ok = zrc == Z_STREAM_END && z.total_out == raw_len && z.avail_in == 0;
    inflateEnd(&z);
    if (!ok) {
        free(out);
        *why = zrc == Z_STREAM_END ? "inflated length is not raw_len"
                                   : "inflate error";
        return NULL;
    }
    return out;
}

//  --------------------------------------------------------------------------
//  Reassemble the logical payload whose last fragment LAST is stored
//  under KEY: read the earlier fragments back (seq - 1, seq - 2, ...),
//  check that they agree and tile the stream, inflate, check the hash.
//  On success *raw (caller frees) holds raw_len bytes and *first_seq
//  the first fragment's seq; a bad set gives MS_ERR_INVALID with *why.

int
ms_store_fragment_assemble(ms_store_t *self, MDB_txn *txn,
                           const uint8_t key[MS_STORE_KEY],
                           const ms_wire_fragment_t *last, uint8_t **raw,
                           uint64_t *first_seq, const char **why)
{
    *raw = NULL;
    *why = NULL;
    ms_record_key_t k;
    ms_store_key_parse(key, &k);
    uint8_t *stream = malloc(last->total_len);
    if (!stream)
        return MS_ERR_NOMEM;
    memcpy(stream + last->offset, last->data, last->data_len);
    uint64_t need = last->offset, seq = k.seq;
    int rc = MS_OK;
    while (rc == MS_OK && need > 0) {
        if (seq <= 1) {
            *why = "first fragment missing";
            rc = MS_ERR_INVALID;
            break;
        }
        seq--;
        uint8_t rk[MS_STORE_KEY];
        ms_store_rec_key(rk, k.origin, k.incarnation, seq);
        MDB_val mk = {MS_STORE_KEY, rk}, mv;
        int g = mdb_get(txn, self->db_records, &mk, &mv);
        if (g != 0) {
            rc = g == MDB_NOTFOUND ? MS_ERR_INVALID
                                   : ms_store_mdb(g, "get fragment");
            *why = "earlier fragment not held";
            break;
        }
        ms_wire_fragment_t *f = NULL;
        if (mv.mv_size < 4 || ms_be_get32(mv.mv_data) != MS_RECORD_FRAGMENT) {
            *why = "gap: an earlier record is not a fragment";
            rc = MS_ERR_INVALID;
            break;
        }
        int d = ms_wire_decode_fragment((const uint8_t *) mv.mv_data + 4,
                                        mv.mv_size - 4, &f);
        if (d == MS_ERR_NOMEM) {
            rc = d;
            break;
        }
        if (d != MS_OK || f->inner_kind != last->inner_kind ||
            f->total_len != last->total_len || f->raw_len != last->raw_len ||
            f->compression != last->compression ||
            memcmp(f->hash, last->hash, 32) != 0) {
            *why = "earlier fragment does not match";
            rc = MS_ERR_INVALID;
        } else if (f->offset + f->data_len != need) {
            *why = "gap in offsets";
            rc = MS_ERR_INVALID;
        } else {
            memcpy(stream + f->offset, f->data, f->data_len);
            need = f->offset;
        }
        ms_wire_fragment_destroy(&f);
    }
    if (rc != MS_OK) {
        free(stream);
        return rc;
    }
    uint8_t *out = stream;
    if (last->compression == MS_WIRE_COMPRESSION_DEFLATE) {
        out = s_inflate(stream, last->total_len, last->raw_len, why);
        free(stream);
        if (!out)
            return strcmp(*why, "nomem") == 0 ? MS_ERR_NOMEM : MS_ERR_INVALID;
    }
    ms_hash_t h;
    ms_hash_bytes(out, last->raw_len, &h);
    if (memcmp(h.bytes, last->hash, 32) != 0) {
        free(out);
        *why = "hash mismatch";
        return MS_ERR_INVALID;
    }
    *raw = out;
    *first_seq = seq;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Apply a FRAGMENT record: nothing until its last fragment; then the
//  logical record (kind inner_kind, key of its first fragment), decoded
//  here or given as PRE (an append decoded it before fragmenting).

static int
s_apply_fragment(ms_store_t *self, MDB_txn *txn,
                 const uint8_t key[MS_STORE_KEY], const void *payload,
                 size_t len, const ms_store_payload_t *pre)
{
    ms_wire_fragment_t *last = NULL;
    int rc = ms_wire_decode_fragment(payload, len, &last);
    if (rc != MS_OK) // undecodable: stored only, like any such record
        return rc == MS_ERR_NOMEM ? rc : MS_OK;
    if (last->offset + last->data_len != last->total_len) {
        ms_wire_fragment_destroy(&last);
        return MS_OK; // not the last piece
    }
    uint8_t *raw = NULL;
    uint64_t first_seq = 0;
    const char *why = NULL;
    rc = ms_store_fragment_assemble(self, txn, key, last, &raw, &first_seq,
                                    &why);
    if (rc == MS_ERR_INVALID) {
        ms_wire_fragment_destroy(&last);
        return s_bad_fragments(self, txn, key, why);
    }
    if (rc != MS_OK) {
        ms_wire_fragment_destroy(&last);
        return rc;
    }
    uint32_t inner_kind = last->inner_kind;
    size_t raw_len = last->raw_len;
    ms_wire_fragment_destroy(&last);
    ms_store_payload_t *decoded = NULL;
    if (!pre) {
        rc = ms_store_payload_decode(inner_kind, raw, raw_len, &decoded);
        if (rc == MS_ERR_NOMEM) {
            free(raw);
            return rc;
        }
        if (rc == MS_ERR_INVALID)
            fprintf(stderr,
                    "meshsweep: store: fragmented record of kind %u "
                    "does not decode; stored, not applied\n",
                    inner_kind);
        pre = decoded;
    }
    uint8_t inner_key[MS_STORE_KEY];
    memcpy(inner_key, key, MS_STORE_KEY);
    ms_be_put64(inner_key + MS_STORE_ID + 8, first_seq);
    rc = pre ? ms_store_apply(self, txn, inner_key, inner_kind, pre, raw,
                              raw_len)
             : MS_OK;
    ms_store_payload_destroy(&decoded);
    free(raw);
    return rc;
}

//  --------------------------------------------------------------------------
//  Whether the origin of the record at KEY may submit sweeps and sweep
//  controls (see ms_store_set_may_submit); counts a refusal.

static bool
s_may_submit(ms_store_t *self, const uint8_t *key)
{
    bool may = true;
    pthread_mutex_lock(&self->role_mu);
    for (size_t i = 0; may && i < self->n_no_submit; i++)
        if (memcmp(self->no_submit[i], key, MS_STORE_ID) == 0)
            may = false;
    if (!may)
        self->n_ignored_no_role++;
    pthread_mutex_unlock(&self->role_mu);
    return may;
}

//  --------------------------------------------------------------------------
//  Apply one stored record (P: its decoded payload; NULL: unknown kind
//  or undecodable, stored only;
//  for a FRAGMENT, P is the pre-decoded inner payload or NULL).

int
ms_store_apply(ms_store_t *self, MDB_txn *txn, const uint8_t key[MS_STORE_KEY],
               uint32_t kind, const ms_store_payload_t *p, const void *payload,
               size_t len)
{
    if (kind == MS_RECORD_FRAGMENT)
        return s_apply_fragment(self, txn, key, payload, len, p);
    if (!p)
        return MS_OK;
    switch (kind) {
    case MS_RECORD_SWEEP:
        if (!s_may_submit(self, key))
            return MS_OK; // stored, not applied
        return ms_store_apply_sweep(self, txn, key, p);
    case MS_RECORD_SWEEP_CONTROL:
        if (!s_may_submit(self, key))
            return MS_OK;
        return s_apply_control(self, txn, key, p);
    case MS_RECORD_DATASET:
        return s_apply_dataset(self, txn, p, payload, len);
    case MS_RECORD_CLAIM:
    case MS_RECORD_RELEASE:
        return s_apply_claim(self, txn, key, p);
    case MS_RECORD_RESULT: {
        uint8_t hash[32];
        ms_store_rec_hash(key, kind, payload, len, hash);
        return s_apply_result(self, txn, key, hash, p);
    }
    case MS_RECORD_FAILURE:
        return s_apply_failure(self, txn, key, p);
    case MS_RECORD_COMMIT:
        return self->has_commits ? s_apply_commit(self, txn, key, p) : MS_OK;
    case MS_RECORD_REEVALUATION: {
        uint8_t hash[32];
        ms_store_rec_hash(key, kind, payload, len, hash);
        return s_apply_reeval(self, txn, key, hash, p);
    }
    default:
        return MS_OK;
    }
}

//  --------------------------------------------------------------------------
//  Free what ms_store_expand made.

void
ms_store_expand_free(ms_store_expand_t *x)
{
    for (size_t i = 0; i < x->n; i++) {
        free(x->bufs[i]);
        ms_store_payload_destroy(&x->pre[i]);
    }
    free(x->kinds);
    free(x->payloads);
    free(x->lens);
    free(x->bufs);
    free(x->pre);
    free(x->first);
    memset(x, 0, sizeof *x);
}

//  --------------------------------------------------------------------------
//  Room for MORE records in X.

static int
s_expand_grow(ms_store_expand_t *x, size_t more)
{
    if (x->n + more <= x->cap)
        return MS_OK;
    size_t cap = x->cap ? x->cap : 16;
    while (cap < x->n + more)
        cap *= 2;
    // each array is resized even when one fails: those that grew stay
    // grown (cap says less), as before
    int n_failed =
        (ms_array_resize(&x->kinds, cap, sizeof *x->kinds) != 0) +
        (ms_array_resize(&x->payloads, cap, sizeof *x->payloads) != 0) +
        (ms_array_resize(&x->lens, cap, sizeof *x->lens) != 0) +
        (ms_array_resize(&x->bufs, cap, sizeof *x->bufs) != 0) +
        (ms_array_resize(&x->pre, cap, sizeof *x->pre) != 0);
    if (n_failed)
        return MS_ERR_NOMEM;
    x->cap = cap;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Add the fragments of one payload to X: compress (deflate level 6,
//  kept raw when that does not shrink it), cut the stream in pieces of
//  MS_STORE_FRAGMENT_BYTES, encode each as a FRAGMENT payload. PRE (the
//  decoded payload, may be NULL) is taken and hung on the last one.

static int
s_expand_fragments(ms_store_expand_t *x, uint32_t kind, const uint8_t *payload,
                   size_t len, ms_store_payload_t **pre)
{
    ms_wire_fragment_t f = {.inner_kind = kind, .raw_len = len};
    ms_hash_t h;
    ms_hash_bytes(payload, len, &h);
    memcpy(f.hash, h.bytes, 32);
    uLongf zlen = compressBound((uLong) len);
    uint8_t *z = malloc(zlen);
    if (!z)
        return MS_ERR_NOMEM;
    const uint8_t *stream = payload;
    f.total_len = len;
    f.compression = MS_WIRE_COMPRESSION_NONE;
    if (compress2(z, &zlen, payload, (uLong) len, 6) == Z_OK && zlen < len) {
        stream = z;
        f.total_len = zlen;
        f.compression = MS_WIRE_COMPRESSION_DEFLATE;
    }
    size_t n_frags = (size_t) ((f.total_len + MS_STORE_FRAGMENT_BYTES - 1) /
                               MS_STORE_FRAGMENT_BYTES);
    int rc = s_expand_grow(x, n_frags);
    for (size_t j = 0; rc == MS_OK && j < n_frags; j++) {
        f.offset = (uint64_t) j * MS_STORE_FRAGMENT_BYTES;
        f.data = (uint8_t *) stream + f.offset;
        f.data_len = (size_t) (f.total_len - f.offset < MS_STORE_FRAGMENT_BYTES
                                   ? f.total_len - f.offset
                                   : MS_STORE_FRAGMENT_BYTES);
        uint8_t *buf = NULL;
        size_t n = 0;
        rc = ms_wire_encode_fragment(&f, &buf, &n);
        if (rc != MS_OK)
            break;
        x->kinds[x->n] = MS_RECORD_FRAGMENT;
        x->payloads[x->n] = buf;
        x->lens[x->n] = n;
        x->bufs[x->n] = buf;
        x->pre[x->n] = NULL;
        if (j + 1 == n_frags) {
            x->pre[x->n] = *pre;
            *pre = NULL;
        }
        x->n++;
    }
    free(z);
    return rc;
}

//  --------------------------------------------------------------------------
//  Build the records of an append of N caller records (checked first:
//  kinds, lengths; a fragmented payload of a known kind must decode).

int
ms_store_expand(ms_store_expand_t *x, size_t n, const uint32_t *kinds,
                const void *const *payloads, const size_t *lens)
{
    memset(x, 0, sizeof *x);
    if (n == 0 || n > MS_STORE_MAX_APPEND_RECORDS || !kinds || !payloads ||
        !lens)
        return MS_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (kinds[i] == MS_RECORD_FRAGMENT ||
            lens[i] > MS_STORE_MAX_LOGICAL_BYTES || (lens[i] && !payloads[i]))
            return MS_ERR_INVALID;
    x->first = calloc(n, sizeof *x->first);
    if (!x->first)
        return MS_ERR_NOMEM;
    int rc = MS_OK;
    for (size_t i = 0; rc == MS_OK && i < n; i++) {
        x->first[i] = x->n;
        if (lens[i] <= MS_STORE_FRAGMENT_BYTES) {
            rc = s_expand_grow(x, 1);
            if (rc == MS_OK) {
                x->kinds[x->n] = kinds[i];
                x->payloads[x->n] = payloads[i];
                x->lens[x->n] = lens[i];
                x->bufs[x->n] = NULL;
                x->pre[x->n] = NULL;
                x->n++;
            }
            continue;
        }
        ms_store_payload_t *p = NULL;
        rc = ms_store_payload_decode(kinds[i], payloads[i], lens[i], &p);
        if (rc == MS_ERR_UNSUPPORTED)
            rc = MS_OK; // a kind not known here: stored, not applied
        if (rc == MS_OK)
            rc = s_expand_fragments(x, kinds[i], payloads[i], lens[i], &p);
        ms_store_payload_destroy(&p);
    }
    if (rc != MS_OK)
        ms_store_expand_free(x);
    return rc;
}
