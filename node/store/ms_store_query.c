/*  =========================================================================
    ms_store_query - the store's reads: sweeps, tasks, datasets, results,
   pending tasks and digests

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every function here reads in one read transaction (ms_store_read_begin
    / _end: any thread, through the gate) and never writes; the tables it
    reads are written by the writer thread (ms_store.c) as records are
    applied (ms_store_derive.c).
*/
#include "ms_store.h"
#include "ms_store_internal.h"

#include "ms_hash.h"
#include <lmdb.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <zlib.h>

//  --------------------------------------------------------------------------
//  Compare two 32-byte ids (qsort).

static int
s_id_cmp(const void *a, const void *b)
{
    return memcmp(a, b, MS_STORE_ID);
}

//  --------------------------------------------------------------------------
//  True when two tasks share an id (or memory runs out: refuse too).

bool
ms_store_has_duplicate_ids(const ms_store_task_input_t *tasks, size_t n)
{
    if (n < 2)
        return false;
    uint8_t *ids = malloc(n * MS_STORE_ID);
    if (!ids)
        return true;
    for (size_t i = 0; i < n; i++)
        memcpy(ids + i * MS_STORE_ID, tasks[i].task_id, MS_STORE_ID);
    qsort(ids, n, MS_STORE_ID, s_id_cmp);
    bool dup = false;
    for (size_t i = 1; i < n && !dup; i++)
        dup = memcmp(ids + (i - 1) * MS_STORE_ID, ids + i * MS_STORE_ID,
                     MS_STORE_ID) == 0;
    free(ids);
    return dup;
}

//  --------------------------------------------------------------------------
//  Fill a borrowed sweep view from its records.

static int
s_sweep_view(ms_store_t *self, MDB_txn *txn, const uint8_t *id,
             const ms_store_sweep_hdr_t *sh, ms_store_sweep_t *sweep)
{
    MDB_val k = {MS_STORE_ID, (void *) id}, v;
    int rc = mdb_get(txn, self->db_sweeps, &k, &v);
    if (rc != 0)
        return ms_store_mdb(rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc,
                            "get sweep");
    if (v.mv_size == 0)
        return ms_store_mdb(MDB_CORRUPTED, "sweep record");
    memcpy(sweep->sweep_id, id, MS_STORE_ID);
    sweep->state = (ms_sweep_state_t) sh->state;
    sweep->priority = sh->priority;
    sweep->n_tasks = sh->n_tasks;
    memcpy(sweep->counts, sh->counts, sizeof sweep->counts);
    sweep->created_at_ms = sh->created_at_ms;
    sweep->updated_at_ms = sh->updated_at_ms;
    sweep->spec_json = v.mv_data;
    sweep->spec_len = v.mv_size - 1;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Get one sweep (owned copy).

int
ms_store_get_sweep(ms_store_t *self, const uint8_t sweep_id[MS_STORE_ID_BYTES],
                   ms_store_sweep_t **out)
{
    *out = NULL;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_sweep_hdr_t sh;
    ms_store_sweep_t view;
    rc = ms_store_sweep_hdr_get(self, txn, sweep_id, &sh);
    if (rc == MS_OK)
        rc = s_sweep_view(self, txn, sweep_id, &sh, &view);
    if (rc == MS_OK) {
        ms_store_sweep_t *copy = malloc(sizeof *copy + view.spec_len + 1);
        if (copy) {
            *copy = view;
            memcpy(copy + 1, view.spec_json, view.spec_len + 1);
            copy->spec_json = (const char *) (copy + 1);
            *out = copy;
        } else {
            rc = MS_ERR_NOMEM;
        }
    }
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free a sweep copy.

void
ms_store_sweep_destroy(ms_store_sweep_t **sweep_p)
{
    if (!sweep_p || !*sweep_p)
        return;
    free(*sweep_p);
    *sweep_p = NULL;
}

//  --------------------------------------------------------------------------
//  The payload of a dataset record, by dataset hash.

int
ms_store_get_dataset(ms_store_t *self, const uint8_t hash[MS_STORE_ID_BYTES],
                     uint8_t **payload, size_t *len)
{
    *payload = NULL;
    *len = 0;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val k = {MS_STORE_ID, (void *) hash}, v;
    int mrc = mdb_get(txn, self->db_datasets, &k, &v);
    if (mrc == MDB_NOTFOUND)
        rc = MS_ERR_NOTFOUND;
    else if (mrc != 0)
        rc = ms_store_mdb(mrc, "get dataset");
    else if (!(*payload = malloc(v.mv_size ? v.mv_size : 1)))
        rc = MS_ERR_NOMEM;
    else {
        memcpy(*payload, v.mv_data, v.mv_size);
        *len = v.mv_size;
    }
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Call fn for every dataset record.

int
ms_store_list_datasets(ms_store_t *self, ms_store_dataset_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_datasets, NULL, 0,
                                    "cursor datasets");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID)
            continue; // not a dataset hash: not ours to show
        status = fn(arg, it.k.mv_data, it.v.mv_data, it.v.mv_size);
    }
    status = ms_store_scan_close(&it, status);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Call fn for every sweep.

int
ms_store_list_sweeps(ms_store_t *self, ms_store_sweep_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_sweep_meta, NULL, 0,
                                    "cursor sweep_meta");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        ms_store_sweep_hdr_t sh;
        ms_store_sweep_t view;
        if (it.k.mv_size != MS_STORE_ID || it.v.mv_size != sizeof sh) {
            status = ms_store_mdb(MDB_CORRUPTED, "sweep_meta record");
            break;
        }
        memcpy(&sh, it.v.mv_data, sizeof sh);
        status = s_sweep_view(self, txn, it.k.mv_data, &sh, &view);
        if (status == MS_OK)
            status = fn(arg, &view);
    }
    status = ms_store_scan_close(&it, status);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Get one task (owned copy).

int
ms_store_get_task(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                  ms_store_task_t **out)
{
    *out = NULL;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_task_hdr_t hdr;
    ms_store_task_t view;
    rc = ms_store_task_read(self, txn, task_id, &hdr, &view);
    if (rc == MS_OK && !(*out = ms_store_task_dup(&view)))
        rc = MS_ERR_NOMEM;
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free a task copy.

void
ms_store_task_destroy(ms_store_task_t **task_p)
{
    if (!task_p || !*task_p)
        return;
    free(*task_p);
    *task_p = NULL;
}

//  --------------------------------------------------------------------------
//  Call fn for every task of a sweep, in index order.

int
ms_store_tasks_by_sweep(ms_store_t *self,
                        const uint8_t sweep_id[MS_STORE_ID_BYTES],
                        ms_store_task_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_sweep_hdr_t sh;
    int status = ms_store_sweep_hdr_get(self, txn, sweep_id, &sh);
    ms_store_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = ms_store_scan_open(&it, txn, self->db_sweep_tasks, sweep_id,
                                    MS_STORE_ID, "cursor sweep_tasks");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID + 4)
            break;
        MDB_val tk = it.v, tv;
        ms_store_task_hdr_t hdr;
        ms_store_task_t view;
        int mrc = mdb_get(txn, self->db_tasks, &tk, &tv);
        if (mrc != 0 || tk.mv_size != MS_STORE_ID ||
            ms_store_task_decode(tk.mv_data, &tv, &hdr, &view) != MS_OK) {
            status = ms_store_mdb(mrc ? mrc : MDB_CORRUPTED, "task record");
            break;
        }
        status = fn(arg, &view);
    }
    status = ms_store_scan_close(&it, status);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Move a task to a state.

int
ms_store_set_task_state(ms_store_t *self,
                        const uint8_t task_id[MS_STORE_ID_BYTES],
                        ms_task_state_t state, const uint8_t *node_id,
                        const char *reason)
{
    if ((unsigned) state >= MS_TASK_N_STATES || state == MS_TASK_DONE)
        return MS_ERR_INVALID;
    ms_store_op_t op = {.kind = MS_STORE_OP_TASK_STATE,
                        .id = task_id,
                        .node = node_id,
                        .text = reason,
                        .value = state};
    return ms_store_submit(self, &op);
}

//  --------------------------------------------------------------------------
//  Reset a node's claimed/running tasks to pending.

int
ms_store_reset_claims(ms_store_t *self,
                      const uint8_t node_id[MS_STORE_ID_BYTES], size_t *n_reset)
{
    if (n_reset)
        *n_reset = 0;
    ms_store_op_t op = {.kind = MS_STORE_OP_RESET_CLAIMS, .node = node_id};
    int rc = ms_store_submit(self, &op);
    if (rc == MS_OK && n_reset)
        *n_reset = op.count;
    return rc;
}

//  --------------------------------------------------------------------------
//  Call fn for each result row of task TASK_ID (inside TXN); *n_rows
//  counts them.

static int
s_task_rows(ms_store_t *self, MDB_txn *txn, MDB_cursor *cur,
            const uint8_t *task_id, ms_store_row_fn fn, void *arg,
            size_t *n_rows)
{
    (void) self;
    (void) txn;
    ms_store_scan_t it;
    ms_store_scan_use(&it, cur, task_id, MS_STORE_ID, "cursor results");
    int status = MS_OK;
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != 2 * MS_STORE_ID)
            break;
        if (it.v.mv_size == 0) {
            status = ms_store_mdb(MDB_CORRUPTED, "result row");
            break;
        }
        (*n_rows)++;
        status = fn(arg, it.v.mv_data, it.v.mv_size - 1);
    }
    return ms_store_scan_close(&it, status);
}

//  --------------------------------------------------------------------------
//  Call fn for a sweep's result rows in task index order (a page).

int
ms_store_results_by_sweep(ms_store_t *self,
                          const uint8_t sweep_id[MS_STORE_ID_BYTES],
                          uint32_t first_index, size_t max_rows,
                          ms_store_row_fn fn, void *arg, uint32_t *next_index)
{
    if (next_index)
        *next_index = MS_STORE_INDEX_END;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_sweep_hdr_t sh;
    int status = ms_store_sweep_hdr_get(self, txn, sweep_id, &sh);
    MDB_cursor *rcur = NULL;
    if (status == MS_OK) {
        rc = mdb_cursor_open(txn, self->db_results, &rcur);
        if (rc != 0)
            status = ms_store_mdb(rc, "cursor results");
    }
    uint8_t start[MS_STORE_ID + 4];
    memcpy(start, sweep_id, MS_STORE_ID);
    ms_be_put32(start + MS_STORE_ID, first_index);
    ms_store_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = ms_store_scan_open(&it, txn, self->db_sweep_tasks, sweep_id,
                                    MS_STORE_ID, "cursor sweep_tasks");
    ms_store_scan_from(&it, start, sizeof start);
    size_t n_rows = 0;
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID + 4)
            break;
        if (it.v.mv_size != MS_STORE_ID) {
            status = ms_store_mdb(MDB_CORRUPTED, "sweep_tasks value");
            break;
        }
        uint32_t index =
            ms_be_get32((const uint8_t *) it.k.mv_data + MS_STORE_ID);
        status = s_task_rows(self, txn, rcur, it.v.mv_data, fn, arg, &n_rows);
        if (status == MS_OK && max_rows > 0 && n_rows >= max_rows) {
            if (next_index && (uint64_t) index + 1 < sh.n_tasks)
                *next_index = index + 1;
            break;
        }
    }
    status = ms_store_scan_close(&it, status);
    if (rcur)
        mdb_cursor_close(rcur);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Call fn for each result row of one task.

int
ms_store_results_by_task(ms_store_t *self,
                         const uint8_t task_id[MS_STORE_ID_BYTES],
                         ms_store_row_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_cursor *cur;
    size_t n_rows = 0;
    rc = mdb_cursor_open(txn, self->db_results, &cur);
    int status = rc == 0
                     ? s_task_rows(self, txn, cur, task_id, fn, arg, &n_rows)
                     : ms_store_mdb(rc, "cursor results");
    if (rc == 0)
        mdb_cursor_close(cur);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Name of a task state.

const char *
ms_task_state_name(ms_task_state_t state)
{
    static const char *names[MS_TASK_N_STATES] = {
        "pending", "claimed", "running", "done", "failed", "cancelled"};
    return (unsigned) state < MS_TASK_N_STATES ? names[state] : "unknown";
}

//  --------------------------------------------------------------------------
//  Name of a sweep state.

const char *
ms_sweep_state_name(ms_sweep_state_t state)
{
    static const char *names[MS_SWEEP_N_STATES] = {"active", "paused",
                                                   "cancelled", "done"};
    return (unsigned) state < MS_SWEEP_N_STATES ? names[state] : "unknown";
}

// An active sweep in serving order.
typedef struct {
    uint8_t id[MS_STORE_ID]; // sweep id
    int32_t priority;        // higher first
    int64_t created_at_ms;   // then earlier first
} s_sweep_order_t;

//  --------------------------------------------------------------------------
//  Serving order of sweeps (qsort): priority desc, created asc, id asc.

static int
s_sweep_order_cmp(const void *a, const void *b)
{
    const s_sweep_order_t *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->created_at_ms != y->created_at_ms)
        return x->created_at_ms < y->created_at_ms ? -1 : 1;
    return memcmp(x->id, y->id, MS_STORE_ID);
}

//  --------------------------------------------------------------------------
//  Call fn for each open task of the active sweeps, in serving order.

int
ms_store_pending_tasks(ms_store_t *self, ms_store_task_fn fn, void *arg)
{
    return ms_store_pending_tasks_filtered(self, NULL, fn, arg);
}

int
ms_store_pending_tasks_filtered(ms_store_t *self, ms_store_task_skip_fn skip,
                                ms_store_task_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_sweep_order_t *sweeps = NULL;
    size_t n = 0, cap = 0;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_sweep_meta, NULL, 0,
                                    "cursor sweep_meta");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        ms_store_sweep_hdr_t sh;
        if (it.k.mv_size != MS_STORE_ID || it.v.mv_size != sizeof sh)
            continue;
        memcpy(&sh, it.v.mv_data, sizeof sh);
        if (sh.state != MS_SWEEP_ACTIVE)
            continue;
        status = ms_array_grow(&sweeps, &cap, n, sizeof *sweeps);
        if (status != MS_OK)
            break;
        memcpy(sweeps[n].id, it.k.mv_data, MS_STORE_ID);
        sweeps[n].priority = sh.priority;
        sweeps[n].created_at_ms = sh.created_at_ms;
        n++;
    }
    status = ms_store_scan_close(&it, status);
    if (status == MS_OK && n > 1)
        qsort(sweeps, n, sizeof *sweeps, s_sweep_order_cmp);
    // Per sweep, walk the task_state index of the unfinished states
    // (pending, claimed, running) and merge the three runs by task index:
    // the done tasks are never visited, so a scan costs what is left of
    // the sweep, not its size.
    enum { S_OPEN_STATES = 3 };
    static const int open_states[S_OPEN_STATES] = {
        MS_TASK_PENDING, MS_TASK_CLAIMED, MS_TASK_RUNNING};
    MDB_cursor *runs[S_OPEN_STATES] = {NULL};
    for (int r = 0; status == MS_OK && r < S_OPEN_STATES; r++) {
        rc = mdb_cursor_open(txn, self->db_task_state, &runs[r]);
        if (rc != 0)
            status = ms_store_mdb(rc, "cursor task_state");
    }
    for (size_t s = 0; status == MS_OK && s < n; s++) {
        MDB_val rk[S_OPEN_STATES], rv[S_OPEN_STATES];
        bool live[S_OPEN_STATES];
        uint8_t start[S_OPEN_STATES][1 + MS_STORE_ID + 4];
        for (int r = 0; r < S_OPEN_STATES; r++) {
            ms_store_state_key(start[r], open_states[r], sweeps[s].id, 0);
            rk[r].mv_size = sizeof start[r];
            rk[r].mv_data = start[r];
            rc = mdb_cursor_get(runs[r], &rk[r], &rv[r], MDB_SET_RANGE);
            live[r] = rc == 0 && rk[r].mv_size == 1 + MS_STORE_ID + 4 &&
                      ((const uint8_t *) rk[r].mv_data)[0] == open_states[r] &&
                      memcmp((const uint8_t *) rk[r].mv_data + 1, sweeps[s].id,
                             MS_STORE_ID) == 0;
            if (rc != 0 && rc != MDB_NOTFOUND)
                status = ms_store_mdb(rc, "cursor task_state");
        }
        while (status == MS_OK) {
            int best = -1;
            for (int r = 0; r < S_OPEN_STATES; r++)
                if (live[r] &&
                    (best < 0 ||
                     memcmp((const uint8_t *) rk[r].mv_data + 1 + MS_STORE_ID,
                            (const uint8_t *) rk[best].mv_data + 1 +
                                MS_STORE_ID,
                            4) < 0))
                    best = r;
            if (best < 0)
                break;
            MDB_val tk = rv[best], tv;
            ms_store_task_hdr_t hdr;
            ms_store_task_t view;
            ms_store_task_filter_t f =
                tk.mv_size == MS_STORE_ID && skip
                    ? skip(arg, tk.mv_data, sweeps[s].id,
                           (ms_task_state_t) open_states[best])
                    : MS_STORE_TASK_READ;
            if (f == MS_STORE_TASK_STOP)
                break;
            bool skipped = f == MS_STORE_TASK_SKIP;
            bool key_only = f == MS_STORE_TASK_KEY && tk.mv_size == MS_STORE_ID;
            int g = skipped || key_only ? 0
                    : tk.mv_size == MS_STORE_ID
                        ? mdb_get(txn, self->db_tasks, &tk, &tv)
                        : MDB_CORRUPTED;
            if (key_only) {
                // The task as the index has it (no row read).
                memset(&view, 0, sizeof view);
                memcpy(view.task_id, tk.mv_data, MS_STORE_ID);
                memcpy(view.sweep_id, sweeps[s].id, MS_STORE_ID);
                view.index = ms_be_get32((const uint8_t *) rk[best].mv_data +
                                         1 + MS_STORE_ID);
                view.state = (ms_task_state_t) open_states[best];
                view.error = "";
            } else if (!skipped &&
                       (g != 0 || ms_store_task_decode(tk.mv_data, &tv, &hdr,
                                                       &view) != MS_OK)) {
                status = ms_store_mdb(g ? g : MDB_CORRUPTED, "task record");
                break;
            }
            if (!skipped && view.state != MS_TASK_DONE &&
                view.state != MS_TASK_FAILED &&
                view.state != MS_TASK_CANCELLED) {
                status = fn(arg, &view);
                if (status != 0)
                    break;
            }
            rc = mdb_cursor_get(runs[best], &rk[best], &rv[best], MDB_NEXT);
            live[best] =
                rc == 0 && rk[best].mv_size == 1 + MS_STORE_ID + 4 &&
                ((const uint8_t *) rk[best].mv_data)[0] == open_states[best] &&
                memcmp((const uint8_t *) rk[best].mv_data + 1, sweeps[s].id,
                       MS_STORE_ID) == 0;
            if (rc != 0 && rc != MDB_NOTFOUND)
                status = ms_store_mdb(rc, "cursor task_state");
        }
    }
    for (int r = 0; r < S_OPEN_STATES; r++)
        if (runs[r])
            mdb_cursor_close(runs[r]);
    free(sweeps);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Highest logical time among a sweep's controls.

int
ms_store_sweep_control_time(ms_store_t *self,
                            const uint8_t sweep_id[MS_STORE_ID_BYTES],
                            uint64_t *time)
{
    *time = 0;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_control_row_t *rows = NULL;
    size_t n = 0;
    rc = ms_store_control_rows(self, txn, sweep_id, &rows, &n);
    ms_store_read_end(self, txn);
    for (size_t i = 0; i < n; i++)
        if (rows[i].lamport > *time)
            *time = rows[i].lamport;
    free(rows);
    return rc;
}

//  --------------------------------------------------------------------------
//  Number of counted result rows.

int
ms_store_results_count(ms_store_t *self, uint64_t *n)
{
    *n = 0;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_stat st;
    rc = mdb_stat(txn, self->db_results, &st);
    if (rc == 0)
        *n = st.ms_entries;
    ms_store_read_end(self, txn);
    return rc ? ms_store_mdb(rc, "stat results") : MS_OK;
}

//  --------------------------------------------------------------------------
//  Feed a length-prefixed byte string into a hasher.

static void
s_hash_item(ms_hasher_t *h, const void *data, size_t len)
{
    uint8_t lb[8];
    ms_be_put64(lb, len);
    ms_hasher_update(h, lb, 8);
    ms_hasher_update(h, data, len);
}

//  --------------------------------------------------------------------------
//  Hash one database's entries (key, value) in key order. MODE selects
//  a projection of local-only fields: 0 as stored, 1 sweep_meta, 2 tasks.

static int
s_hash_db(MDB_txn *txn, MDB_dbi dbi, const char *name, int mode, ms_hasher_t *h)
{
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, dbi, NULL, 0, "cursor (digest)");
    if (status != MS_OK)
        return status;
    s_hash_item(h, name, strlen(name));
    while (status == MS_OK && ms_store_scan_next(&it)) {
        MDB_val k = it.k, v = it.v;
        s_hash_item(h, k.mv_data, k.mv_size);
        if (mode == 1 && v.mv_size == sizeof(ms_store_sweep_hdr_t)) {
            ms_store_sweep_hdr_t sh;
            memcpy(&sh, v.mv_data, sizeof sh);
            uint8_t b[4 + 4 + 8 + 8 + 8 * MS_TASK_N_STATES];
            uint64_t counts[MS_TASK_N_STATES];
            memcpy(counts, sh.counts, sizeof counts);
            counts[MS_TASK_PENDING] +=
                counts[MS_TASK_CLAIMED] + counts[MS_TASK_RUNNING];
            counts[MS_TASK_CLAIMED] = counts[MS_TASK_RUNNING] = 0;
            ms_be_put32(b, sh.state);
            ms_be_put32(b + 4, (uint32_t) sh.priority);
            ms_be_put64(b + 8, sh.n_tasks);
            ms_be_put64(b + 16, 0); // created_at: local arrival time
            for (int i = 0; i < MS_TASK_N_STATES; i++)
                ms_be_put64(b + 24 + 8 * i, counts[i]);
            s_hash_item(h, b, sizeof b);
        } else if (mode == 2) {
            ms_store_task_hdr_t th;
            ms_store_task_t view;
            if (k.mv_size != MS_STORE_ID ||
                ms_store_task_decode(k.mv_data, &v, &th, &view) != MS_OK) {
                status = ms_store_mdb(MDB_CORRUPTED, "task record");
                break;
            }
            int state = th.state;
            if (state == MS_TASK_CLAIMED || state == MS_TASK_RUNNING)
                state = MS_TASK_PENDING;
            uint8_t b[MS_STORE_ID + 8];
            memcpy(b, th.sweep_id, MS_STORE_ID);
            ms_be_put32(b + MS_STORE_ID, th.index);
            ms_be_put32(b + MS_STORE_ID + 4, (uint32_t) state);
            s_hash_item(h, b, sizeof b);
            s_hash_item(h, view.config_json, view.config_len);
        } else {
            s_hash_item(h, v.mv_data, v.mv_size);
        }
    }
    return ms_store_scan_close(&it, status);
}

//  --------------------------------------------------------------------------
//  Call fn for every counted result of one task: the rows of the results
//  table (extra false), then the extra replicas (extra true), each in
//  node id order.

int
ms_store_results_by_task_all(ms_store_t *self,
                             const uint8_t task_id[MS_STORE_ID_BYTES],
                             ms_store_replica_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    int status = MS_OK;
    MDB_dbi dbis[2] = {self->db_results, self->db_result_meta};
    for (int t = 0; t < 2 && status == MS_OK; t++) {
        ms_store_scan_t it;
        status = ms_store_scan_open(&it, txn, dbis[t], task_id, MS_STORE_ID,
                                    t == 0 ? "cursor results"
                                           : "cursor result_meta");
        size_t key_len = t == 0 ? 2 * MS_STORE_ID : 2 * MS_STORE_ID + 16;
        while (status == MS_OK && ms_store_scan_next(&it)) {
            if (it.k.mv_size != key_len)
                break;
            const uint8_t *m = it.v.mv_data;
            if (t == 0 && it.v.mv_size == 0) {
                status = ms_store_mdb(MDB_CORRUPTED, "result row");
                break;
            }
            if (t == 1 && (it.v.mv_size < MS_STORE_RM_ROW + 1 || !m[0] ||
                           m[2] != MS_STORE_PLACE_EXTRA))
                continue; // not counted, or it fills a slot
            size_t off = t == 0 ? 0 : MS_STORE_RM_ROW;
            status =
                fn(arg, (const char *) m + off, it.v.mv_size - off - 1, t == 1);
        }
        status = ms_store_scan_close(&it, status);
    }
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Digest of every derived table.

int
ms_store_state_digest(ms_store_t *self, uint8_t digest[32])
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    struct {
        MDB_dbi dbi;
        const char *name;
        int mode;
    } tables[] = {{self->db_sweeps, "sweeps", 0},
                  {self->db_sweep_meta, "sweep_meta", 1},
                  {self->db_sweep_tasks, "sweep_tasks", 0},
                  {self->db_tasks, "tasks", 2},
                  {self->db_results, "results", 0},
                  {self->db_result_meta, "result_meta", 0},
                  {self->db_claims, "claims", 0},
                  {self->db_failures, "failures", 0},
                  {self->db_datasets, "datasets", 0},
                  {self->db_controls, "sweep_controls", 0}};
    ms_hasher_t h;
    ms_hasher_init(&h);
    for (size_t i = 0; rc == MS_OK && i < sizeof tables / sizeof tables[0]; i++)
        rc = s_hash_db(txn, tables[i].dbi, tables[i].name, tables[i].mode, &h);
    ms_store_read_end(self, txn);
    ms_hash_t out;
    ms_hasher_final(&h, &out);
    if (rc == MS_OK)
        memcpy(digest, out.bytes, 32);
    return rc;
}

//  --------------------------------------------------------------------------
//  Digest of the results table.

int
ms_store_results_digest(ms_store_t *self, uint8_t digest[32])
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_hasher_t h;
    ms_hasher_init(&h);
    rc = s_hash_db(txn, self->db_results, "results", 0, &h);
    ms_store_read_end(self, txn);
    ms_hash_t out;
    ms_hasher_final(&h, &out);
    if (rc == MS_OK)
        memcpy(digest, out.bytes, 32);
    return rc;
}
