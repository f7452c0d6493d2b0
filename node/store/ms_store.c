/*  =========================================================================
    ms_store - the node's LMDB store: sweeps, tasks and their states, results

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Implements DESIGN.md "Store (LMDB)" and the record log of docs/POOL.md
    "Records".

    Files. The store is one class in five files that share
    ms_store_internal.h: this one (the environment, the gate, the writer
    thread and its batches, open and close), ms_store_log.c (the record
    log: records, blocks, vectors, cuts, equivocation, append and merge),
    ms_store_derive.c (records applied to the derived tables),
    ms_store_verdict.c (the rows ms_verdict judges, and the verdict
    table) and ms_store_query.c (reads). The prose below is the store's
    as a whole.

    Layout. One LMDB environment, named databases:

      meta         "incarnation" -> u64, "schema" -> u32
      sweeps       sweep_id -> canonical spec JSON + NUL
      sweep_meta   sweep_id -> ms_store_sweep_hdr_t (state, priority, counts)
      sweep_tasks  sweep_id || index (u32 big-endian) -> task_id
      tasks        task_id -> ms_store_task_hdr_t + config JSON + NUL + error +
   NUL task_state   state (1 byte) || sweep_id || index (BE) -> task_id results
   task_id || node_id -> result row JSON + NUL

    The spec lives apart from the small sweep_meta record because it can be
    large (it lists every task config) while the counts change with every
    task transition. Counts by state are kept in sweep_meta and updated in
    the transaction that moves the task, so a status query is one get, not
    a scan. task_state is the index behind "next pending task" (a range
    seek on PENDING || sweep_id) and the restart reset (CLAIMED, RUNNING).
    Big-endian indexes make LMDB's byte order the task order. Every text
    value is stored with a trailing NUL so a borrowed pointer into the map
    is a C string. Records will later be keyed (origin, incarnation, seq);
    the incarnation is made now, when the store is created.

    Group commit. One writer thread owns every write transaction. A write
    call queues an operation and sleeps; the writer takes everything queued
    (up to max_batch), applies them in one transaction, commits once with
    sync on, then wakes every caller with its own status. Every operation
    does all its checks before its first write, so a refused operation (not
    found, conflict, invalid) leaves no trace and the others still commit.
    A failure that may leave the transaction half-done (an LMDB error)
    aborts it, and the batch is rerun one operation per transaction so only
    the failing one fails. LMDB's nested transactions would give the same
    isolation, but each costs a 2 MiB dirty-list allocation: with 10,000
    writes that dominated the run. A caller returns only once its write is
    durable; a crash loses only writes whose calls had not returned, and
    LMDB's copy-on-write B-tree never shows a half-written record. Batching
    makes the fsync cost per write fall as load rises (16 writers: about
    one fsync per 16 writes).

    Map growth. On MDB_MAP_FULL the writer aborts the batch, doubles the
    map with mdb_env_set_mapsize and runs the whole batch again (the
    operations are pure functions of the store, so a rerun is exact).
    LMDB allows a resize only while this process has no transaction open,
    so a small gate counts open transactions (readers and the writer's);
    a resize waits until the count is zero while new transactions wait
    for the resize. The wait is short (readers finish their page; a resize
    happens log2(size) times in a store's life). A thread already inside a
    read transaction of this store (a callback that reads again) passes
    the gate so it cannot deadlock against a waiting resize. When another
    process grew the map, LMDB says MDB_MAP_RESIZED and we adopt its size
    the same way (size 0).

    Readers. Read transactions (MDB_NOTLS, so any thread, several at once)
    never block the writer: LMDB readers take no lock that the writer
    waits on. On MDB_READERS_FULL (slots left by processes killed while
    reading) we run mdb_reader_check and retry once; it also runs at open.

    Records. The pool's record log (records, blocks, vectors, evidence)
    and the tables derived from it are described in the prose block
    "Record log and derived tables" of ms_store_internal.h: every derived
    table is a pure function of the record set. Two local writes remain
    beside it, both about this node's own runs and kept out of the state
    digest: ms_store_set_task_state (a task shown running here, or back to
    pending) and ms_store_reset_claims (at open, what the last run left
    running goes back to pending). The issue-2 scheduler's direct writes
    of sweeps and results are gone: the tests build theirs from records
    too.

    Not done: an async write variant (callers block; the node's actor can
    hand writes to a helper thread if needed), compaction.
*/
#include "ms_store.h"
#include "ms_store_internal.h"

#include "ms_clock.h"
#include "ms_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>
#define S_SCHEMA 1u
#define S_MAX_GROWS 48 // doublings tried for one batch
// Page cache warmed ahead of the data file's last page (see s_warm_ahead)
#define S_WARM_AHEAD_BYTES (64u << 20)
#define S_WARM_READ_BYTES (1u << 20) // one pread of the warming

// File system magics refused for the store (statfs f_type).
#define S_FS_NFS 0x6969u
#define S_FS_SMB 0x517Bu
#define S_FS_CIFS 0xFF534D42u
#define S_FS_SMB2 0xFE534D42u

// Task traits (ms_store_task_hdr_t.traits): what the verdict and re-evaluation
// sampling need of a task's config, read once from it at apply.

// Per thread: which stores this thread holds read txns in (gate bypass).
#define S_TLS_SLOTS 4
static _Thread_local const ms_store_t *s_tls_store[S_TLS_SLOTS];
static _Thread_local unsigned s_tls_depth[S_TLS_SLOTS];

//  --------------------------------------------------------------------------
//  Wall clock in ms since the Unix epoch.

static int64_t
s_now_ms(void)
{
    return ms_clock_wall_ms();
}

//  --------------------------------------------------------------------------
//  Map an LMDB code to a status; log the ones that are real failures.

int
ms_store_mdb(int rc, const char *what)
{
    switch (rc) {
    case MDB_SUCCESS:
        return MS_OK;
    case MDB_NOTFOUND:
        return MS_ERR_NOTFOUND;
    case MDB_MAP_FULL:
        return MS_ERR_STORE_FULL;
    case ENOMEM:
        return MS_ERR_NOMEM;
    default:
        fprintf(stderr, "meshsweep: store: %s: %s\n", what, mdb_strerror(rc));
        return MS_ERR_STORE;
    }
}

int
ms_store_scan_open(ms_store_scan_t *it, MDB_txn *txn, MDB_dbi dbi,
                   const void *prefix, size_t prefix_len, const char *what)
{
    memset(it, 0, sizeof *it);
    it->prefix = it->from = prefix;
    it->prefix_len = it->from_len = prefix_len;
    it->what = what;
    int rc = mdb_cursor_open(txn, dbi, &it->cur);
    if (rc != 0) {
        it->cur = NULL;
        it->mrc = MDB_NOTFOUND; // nothing to report at close
        return ms_store_mdb(rc, what);
    }
    return MS_OK;
}

//  A scan on the caller's open cursor (one cursor for many scans of a
//  table in one txn): as ms_store_scan_open, but ms_store_scan_close leaves it
//  open.
void
ms_store_scan_use(ms_store_scan_t *it, MDB_cursor *cur, const void *prefix,
                  size_t prefix_len, const char *what)
{
    memset(it, 0, sizeof *it);
    it->cur = cur;
    it->borrowed = true;
    it->prefix = it->from = prefix;
    it->prefix_len = it->from_len = prefix_len;
    it->what = what;
}

//  Start an open scan at the first key >= from (from_len bytes, which
//  should start with the prefix), not at the prefix itself: a page that
//  goes on from where the last one stopped. Borrowed, as the prefix.
void
ms_store_scan_from(ms_store_scan_t *it, const void *from, size_t from_len)
{
    it->from = from;
    it->from_len = from_len;
}

//  Move to the next entry with the prefix: true when there is one.
bool
ms_store_scan_next(ms_store_scan_t *it)
{
    if (!it->cur)
        return false;
    if (!it->started) {
        it->started = true;
        it->k.mv_size = it->from_len;
        it->k.mv_data = (void *) it->from;
        it->mrc = mdb_cursor_get(it->cur, &it->k, &it->v,
                                 it->from_len ? MDB_SET_RANGE : MDB_FIRST);
    } else
        it->mrc = mdb_cursor_get(it->cur, &it->k, &it->v, MDB_NEXT);
    if (it->mrc != 0)
        return false;
    if (it->prefix_len && (it->k.mv_size < it->prefix_len ||
                           memcmp(it->k.mv_data, it->prefix, it->prefix_len))) {
        it->mrc = MDB_NOTFOUND; // past the prefix: the end
        return false;
    }
    return true;
}

//  Close the scan: status, or the cursor's error when status is MS_OK.
int
ms_store_scan_close(ms_store_scan_t *it, int status)
{
    if (status == MS_OK && it->mrc != 0 && it->mrc != MDB_NOTFOUND)
        status = ms_store_mdb(it->mrc, it->what);
    if (it->cur && !it->borrowed)
        mdb_cursor_close(it->cur);
    it->cur = NULL;
    return status;
}

//  --------------------------------------------------------------------------
//  Append one id to an id list.

int
ms_store_ids_push(uint8_t **ids, size_t *n, size_t *cap, const void *id)
{
    int rc = ms_array_grow(ids, cap, *n, MS_STORE_ID);
    if (rc != MS_OK)
        return rc;
    memcpy(*ids + *n * MS_STORE_ID, id, MS_STORE_ID);
    (*n)++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Build a task_state key: state || sweep_id || index.

void
ms_store_state_key(uint8_t key[1 + MS_STORE_ID + 4], int state,
                   const uint8_t *sweep_id, uint32_t index)
{
    key[0] = (uint8_t) state;
    memcpy(key + 1, sweep_id, MS_STORE_ID);
    ms_be_put32(key + 1 + MS_STORE_ID, index);
}

//  --------------------------------------------------------------------------
//  Find (or take) this thread's gate slot for SELF; NULL when none free.

unsigned *
ms_store_tls_slot(const ms_store_t *self, bool take)
{
    for (int i = 0; i < S_TLS_SLOTS; i++)
        if (s_tls_store[i] == self && s_tls_depth[i] > 0)
            return &s_tls_depth[i];
    if (!take)
        return NULL;
    for (int i = 0; i < S_TLS_SLOTS; i++)
        if (s_tls_depth[i] == 0) {
            s_tls_store[i] = self;
            return &s_tls_depth[i];
        }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Enter the gate for a txn: wait while a resize runs (unless this thread
//  already holds a read txn of this store), then count the txn.

static void
s_gate_enter(ms_store_t *self, bool reader)
{
    unsigned *depth = reader ? ms_store_tls_slot(self, true) : NULL;
    pthread_mutex_lock(&self->gate_mu);
    if (!(depth && *depth > 0))
        while (self->resizing)
            pthread_cond_wait(&self->gate_cv, &self->gate_mu);
    self->n_active++;
    if (reader) {
        self->n_reads++;
        self->stats.n_reads_open = self->n_reads;
    }
    pthread_mutex_unlock(&self->gate_mu);
    if (depth)
        (*depth)++;
}

//  --------------------------------------------------------------------------
//  Leave the gate after a txn ended.

static void
s_gate_leave(ms_store_t *self, bool reader)
{
    if (reader) {
        unsigned *depth = ms_store_tls_slot(self, false);
        if (depth)
            (*depth)--;
    }
    pthread_mutex_lock(&self->gate_mu);
    self->n_active--;
    if (reader) {
        self->n_reads--;
        self->stats.n_reads_open = self->n_reads;
    }
    if (self->n_active == 0 && self->resizing)
        pthread_cond_broadcast(&self->gate_cv);
    pthread_mutex_unlock(&self->gate_mu);
}

//  --------------------------------------------------------------------------
//  Set the map size (0: adopt another process's size) once no txn of this
//  process is open. Returns MS_OK or MS_ERR_STORE_FULL.

static int
s_resize(ms_store_t *self, size_t size)
{
    pthread_mutex_lock(&self->gate_mu);
    while (self->resizing) // one resize at a time
        pthread_cond_wait(&self->gate_cv, &self->gate_mu);
    self->resizing = true;
    while (self->n_active > 0)
        pthread_cond_wait(&self->gate_cv, &self->gate_mu);
    int rc = mdb_env_set_mapsize(self->env, size);
    MDB_envinfo info;
    mdb_env_info(self->env, &info);
    self->stats.map_size_bytes = info.me_mapsize;
    if (rc == 0 && size > 0)
        self->stats.n_map_grows++;
    self->resizing = false;
    pthread_cond_broadcast(&self->gate_cv);
    pthread_mutex_unlock(&self->gate_mu);
    if (rc != 0) {
        fprintf(stderr, "meshsweep: store: mdb_env_set_mapsize(%zu): %s\n",
                size, mdb_strerror(rc));
        return MS_ERR_STORE_FULL;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Clear reader slots of dead processes; count them.

static void
s_reader_check(ms_store_t *self)
{
    int dead = 0;
    if (mdb_reader_check(self->env, &dead) == 0 && dead > 0) {
        pthread_mutex_lock(&self->gate_mu);
        self->stats.n_stale_readers += (uint64_t) dead;
        pthread_mutex_unlock(&self->gate_mu);
    }
}

//  --------------------------------------------------------------------------
//  Begin a read txn (through the gate). On READERS_FULL clear stale
//  readers and retry; on MAP_RESIZED adopt the new size and retry.

int
ms_store_read_begin(ms_store_t *self, MDB_txn **txn)
{
    bool checked = false, adopted = false;
    for (;;) {
        s_gate_enter(self, true);
        int rc = mdb_txn_begin(self->env, NULL, MDB_RDONLY, txn);
        if (rc == 0)
            return MS_OK;
        s_gate_leave(self, true);
        if (rc == MDB_READERS_FULL && !checked) {
            checked = true;
            s_reader_check(self);
            continue;
        }
        if (rc == MDB_MAP_RESIZED && !adopted &&
            !ms_store_tls_slot(self, false)) {
            adopted = true;
            if (s_resize(self, 0) == MS_OK)
                continue;
        }
        return ms_store_mdb(rc, "mdb_txn_begin (read)");
    }
}

//  --------------------------------------------------------------------------
//  End a read txn.

void
ms_store_read_end(ms_store_t *self, MDB_txn *txn)
{
    mdb_txn_abort(txn);
    s_gate_leave(self, true);
}

//  --------------------------------------------------------------------------
//  Decode a task record (borrowed pointers into VAL). MS_ERR_STORE when
//  the record is malformed.

int
ms_store_task_decode(const uint8_t *task_id, const MDB_val *val,
                     ms_store_task_hdr_t *hdr, ms_store_task_t *task)
{
    if (val->mv_size < sizeof *hdr)
        return MS_ERR_STORE;
    memcpy(hdr, val->mv_data, sizeof *hdr);
    if (hdr->version != 1 || hdr->state >= MS_TASK_N_STATES ||
        val->mv_size !=
            sizeof *hdr + (size_t) hdr->config_len + hdr->error_len + 2)
        return MS_ERR_STORE;
    if (task) {
        const char *text = (const char *) val->mv_data + sizeof *hdr;
        memcpy(task->task_id, task_id, MS_STORE_ID);
        memcpy(task->sweep_id, hdr->sweep_id, MS_STORE_ID);
        memcpy(task->holder, hdr->holder, MS_STORE_ID);
        task->index = hdr->index;
        task->state = (ms_task_state_t) hdr->state;
        task->attempts = hdr->attempts;
        task->updated_at_ms = hdr->updated_at_ms;
        task->config_json = text;
        task->config_len = hdr->config_len;
        task->error = text + hdr->config_len + 1;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read task TASK_ID in TXN into *HDR and *VIEW (borrowed from the txn).
//  MS_ERR_NOTFOUND when the store has no such task (yet), MS_ERR_STORE
//  when its record is damaged or LMDB fails.

int
ms_store_task_read(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
                   ms_store_task_hdr_t *hdr, ms_store_task_t *view)
{
    MDB_val k = {MS_STORE_ID, (void *) task_id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc != 0)
        return ms_store_mdb(rc, "get task");
    if (ms_store_task_decode(task_id, &v, hdr, view) != MS_OK)
        return ms_store_mdb(MDB_CORRUPTED, "task record");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The traits (MS_STORE_TT_*) of a canonical task config: its top-level `kind`
//  and `loss` members. The one reading of them; the store calls it when
//  a sweep is applied, and for rows of older stores (traits 0).

static uint8_t
s_task_traits_parse(const char *config_json, size_t config_len)
{
    uint8_t traits = MS_STORE_TT_KNOWN;
    json_t *cfg = json_loadb(config_json, config_len, 0, NULL);
    const char *kind = json_string_value(json_object_get(cfg, "kind"));
    const char *loss = json_string_value(json_object_get(cfg, "loss"));
    if (kind && strcmp(kind, "noop") == 0)
        traits |= MS_STORE_TT_NOOP;
    if (loss && strcmp(loss, "mse") == 0)
        traits |= MS_STORE_TT_REGRESSION;
    json_decref(cfg);
    return traits;
}

//  --------------------------------------------------------------------------
//  The traits of a decoded task (HDR and its VIEW from ms_store_task_decode).

uint8_t
ms_store_task_traits(const ms_store_task_hdr_t *hdr,
                     const ms_store_task_t *view)
{
    if (hdr->traits & MS_STORE_TT_KNOWN)
        return hdr->traits;
    return s_task_traits_parse(view->config_json, view->config_len);
}

//  --------------------------------------------------------------------------
//  Copy a borrowed task into one owned block.

ms_store_task_t *
ms_store_task_dup(const ms_store_task_t *task)
{
    size_t err_len = strlen(task->error);
    ms_store_task_t *copy =
        malloc(sizeof *copy + task->config_len + 1 + err_len + 1);
    if (!copy)
        return NULL;
    *copy = *task;
    char *text = (char *) (copy + 1);
    memcpy(text, task->config_json, task->config_len + 1);
    memcpy(text + task->config_len + 1, task->error, err_len + 1);
    copy->config_json = text;
    copy->error = text + task->config_len + 1;
    return copy;
}

//  --------------------------------------------------------------------------
//  Read a sweep's state record.

int
ms_store_sweep_hdr_get(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                       ms_store_sweep_hdr_t *hdr)
{
    MDB_val key = {MS_STORE_ID, (void *) sweep_id}, val;
    int rc = mdb_get(txn, self->db_sweep_meta, &key, &val);
    if (rc != 0)
        return ms_store_mdb(rc, "get sweep_meta");
    if (val.mv_size != sizeof *hdr)
        return ms_store_mdb(MDB_CORRUPTED, "sweep_meta record");
    memcpy(hdr, val.mv_data, sizeof *hdr);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Write a sweep's state record; an active sweep with nothing left to run
//  turns done, a done sweep with work again turns active.

int
ms_store_sweep_hdr_put(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                       ms_store_sweep_hdr_t *hdr)
{
    uint64_t open = hdr->counts[MS_TASK_PENDING] +
                    hdr->counts[MS_TASK_CLAIMED] + hdr->counts[MS_TASK_RUNNING];
    if (hdr->state == MS_SWEEP_ACTIVE && open == 0)
        hdr->state = MS_SWEEP_DONE;
    else if (hdr->state == MS_SWEEP_DONE && open > 0)
        hdr->state = MS_SWEEP_ACTIVE;
    hdr->updated_at_ms = s_now_ms();
    MDB_val key = {MS_STORE_ID, (void *) sweep_id}, val = {sizeof *hdr, hdr};
    return ms_store_mdb(mdb_put(txn, self->db_sweep_meta, &key, &val, 0),
                        "put sweep_meta");
}

/*  Sweep generations. ms_store_sweep_generation gives readers a number
    that changes whenever what a sweep's result rows and verdicts derive
    from may have changed, so the HTTP API can cache a sweep's analysis
    (node/http/ms_api.c) without reading the rows to see whether it is stale.
    The writer notes the sweeps a txn touches (a task entering or leaving
    done or failed, a result row or its counted flags, a verdict) in a
    64-bit mask of slots, a slot being the sweep id's first byte mod 64,
    and bumps those slots' counters after the commit, so a reader that
    sees the new count also sees the commit. A change that may touch any
    sweep (an operator's name, a node's quarantine, a revoked origin's
    cut) bumps them all. Sweeps sharing a slot invalidate each other: a
    cache miss, never a stale answer. The counters live in memory (they
    start again at each open; a cache is per process too). A write by
    another process shows as a gap in LMDB's txn ids: until this
    process's writer commits again (and then bumps every slot) the
    generation is 0, "unknown", which a cache must not store. */

//  --------------------------------------------------------------------------
//  Note that the current write txn touches SWEEP_ID.

static void
s_gen_touch_sweep(ms_store_t *self, const uint8_t *sweep_id)
{
    self->gen_dirty |= (uint64_t) 1 << MS_STORE_GEN_SLOT(sweep_id);
}

//  --------------------------------------------------------------------------
//  Note that the current write txn touches TASK_ID's sweep (every sweep
//  when the task is not known).

void
ms_store_gen_touch_task(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id)
{
    MDB_val k = {MS_STORE_ID, (void *) task_id}, v;
    if (mdb_get(txn, self->db_tasks, &k, &v) == 0 &&
        v.mv_size >= sizeof(ms_store_task_hdr_t))
        s_gen_touch_sweep(self, (const uint8_t *) v.mv_data +
                                    offsetof(ms_store_task_hdr_t, sweep_id));
    else
        self->gen_dirty_all = true;
}

//  --------------------------------------------------------------------------
//  Move a task (record HDR, raw value VAL) to NEW_STATE inside a write
//  txn: rewrite the record, move its task_state key, update the sweep's
//  counts. HOLDER (or NULL: zero) and REASON (NULL: keep) as given.

int
ms_store_task_move(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
                   const MDB_val *val, const ms_store_task_hdr_t *hdr,
                   int new_state, const uint8_t *holder, const char *reason)
{
    ms_store_task_hdr_t nh = *hdr;
    const char *text = (const char *) val->mv_data + sizeof *hdr;
    const char *err = reason ? reason : text + hdr->config_len + 1;
    size_t err_len = reason ? strlen(reason) : hdr->error_len;
    if (err_len > UINT32_MAX / 2)
        err_len = UINT32_MAX / 2;
    nh.state = (uint8_t) new_state;
    nh.error_len = (uint32_t) err_len;
    if (hdr->state == MS_TASK_DONE || hdr->state == MS_TASK_FAILED ||
        new_state == MS_TASK_DONE || new_state == MS_TASK_FAILED)
        s_gen_touch_sweep(self, hdr->sweep_id); // its rows change
    nh.updated_at_ms = s_now_ms();
    if (holder)
        memcpy(nh.holder, holder, MS_STORE_ID);
    else
        memset(nh.holder, 0, MS_STORE_ID);

    size_t size = sizeof nh + (size_t) nh.config_len + 1 + err_len + 1;
    uint8_t *buf = malloc(size);
    if (!buf)
        return MS_ERR_NOMEM;
    memcpy(buf, &nh, sizeof nh);
    memcpy(buf + sizeof nh, text, (size_t) nh.config_len + 1);
    memcpy(buf + sizeof nh + nh.config_len + 1, err, err_len);
    buf[size - 1] = 0;

    uint8_t tid[MS_STORE_ID];
    memcpy(tid, task_id, MS_STORE_ID); // task_id may point into the map
    MDB_val k = {MS_STORE_ID, tid}, v = {size, buf};
    int rc = ms_store_mdb(mdb_put(txn, self->db_tasks, &k, &v, 0), "put task");
    free(buf);
    if (rc != MS_OK)
        return rc;

    if (new_state != hdr->state) {
        uint8_t sk[1 + MS_STORE_ID + 4];
        ms_store_state_key(sk, hdr->state, hdr->sweep_id, hdr->index);
        MDB_val skey = {sizeof sk, sk};
        rc = mdb_del(txn, self->db_task_state, &skey, NULL);
        if (rc != 0 && rc != MDB_NOTFOUND)
            return ms_store_mdb(rc, "del task_state");
        ms_store_state_key(sk, new_state, hdr->sweep_id, hdr->index);
        MDB_val sval = {MS_STORE_ID, tid};
        rc = ms_store_mdb(mdb_put(txn, self->db_task_state, &skey, &sval, 0),
                          "put task_state");
        if (rc != MS_OK)
            return rc;
        ms_store_sweep_hdr_t sh;
        rc = ms_store_sweep_hdr_get(self, txn, hdr->sweep_id, &sh);
        if (rc != MS_OK)
            return rc == MS_ERR_NOTFOUND ? MS_ERR_STORE : rc;
        if (sh.counts[hdr->state] > 0)
            sh.counts[hdr->state]--;
        sh.counts[new_state]++;
        rc = ms_store_sweep_hdr_put(self, txn, hdr->sweep_id, &sh);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Writer: store a sweep and its tasks.

int
ms_store_op_put_sweep(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    MDB_val key = {MS_STORE_ID, (void *) op->id}, val;
    int rc = mdb_get(txn, self->db_sweeps, &key, &val);
    if (rc == 0) {
        if (val.mv_size == op->len + 1 &&
            memcmp(val.mv_data, op->text, op->len) == 0) {
            op->existed = true;
            return MS_OK;
        }
        return MS_ERR_CONFLICT;
    }
    if (rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get sweep");
    s_gen_touch_sweep(self, op->id);

    // Check first (a refused op must write nothing): no task id may be
    // stored yet. Duplicates inside tasks[] were refused by the caller.
    for (size_t i = 0; i < op->n_tasks; i++) {
        MDB_val tk = {MS_STORE_ID, (void *) op->tasks[i].task_id}, tv;
        rc = mdb_get(txn, self->db_tasks, &tk, &tv);
        if (rc == 0)
            return MS_ERR_CONFLICT; // belongs to another sweep
        if (rc != MDB_NOTFOUND)
            return ms_store_mdb(rc, "get task");
    }
    int64_t now = s_now_ms();
    int64_t created = op->created_at_ms ? op->created_at_ms : now;
    for (size_t i = 0; i < op->n_tasks; i++) {
        const ms_store_task_input_t *in = &op->tasks[i];
        ms_store_task_hdr_t th = {
            .version = 1,
            .state = MS_TASK_PENDING,
            .traits = s_task_traits_parse(in->config_json, in->config_len),
            .index = (uint32_t) i,
            .config_len = (uint32_t) in->config_len,
            .updated_at_ms = now};
        memcpy(th.sweep_id, op->id, MS_STORE_ID);
        MDB_val tk = {MS_STORE_ID, (void *) in->task_id};
        MDB_val tv = {sizeof th + in->config_len + 2, NULL};
        rc = mdb_put(txn, self->db_tasks, &tk, &tv,
                     MDB_NOOVERWRITE | MDB_RESERVE);
        if (rc != 0) // KEYEXIST here is a bug: tasks[] was checked
            return ms_store_mdb(rc, "put task");
        uint8_t *p = tv.mv_data;
        memcpy(p, &th, sizeof th);
        memcpy(p + sizeof th, in->config_json, in->config_len);
        p[sizeof th + in->config_len] = 0;
        p[sizeof th + in->config_len + 1] = 0; // empty error

        uint8_t ik[MS_STORE_ID + 4];
        memcpy(ik, op->id, MS_STORE_ID);
        ms_be_put32(ik + MS_STORE_ID, (uint32_t) i);
        MDB_val ikey = {sizeof ik, ik};
        rc = mdb_put(txn, self->db_sweep_tasks, &ikey, &tk, 0);
        if (rc != 0)
            return ms_store_mdb(rc, "put sweep_tasks");
        uint8_t sk[1 + MS_STORE_ID + 4];
        ms_store_state_key(sk, MS_TASK_PENDING, op->id, (uint32_t) i);
        MDB_val skey = {sizeof sk, sk};
        rc = mdb_put(txn, self->db_task_state, &skey, &tk, 0);
        if (rc != 0)
            return ms_store_mdb(rc, "put task_state");
    }
    MDB_val sv = {op->len + 1, NULL};
    rc = mdb_put(txn, self->db_sweeps, &key, &sv, MDB_RESERVE);
    if (rc != 0)
        return ms_store_mdb(rc, "put sweep");
    memcpy(sv.mv_data, op->text, op->len);
    ((char *) sv.mv_data)[op->len] = 0;

    ms_store_sweep_hdr_t sh = {.version = 1,
                               .state = MS_SWEEP_ACTIVE,
                               .priority = op->value,
                               .n_tasks = op->n_tasks,
                               .created_at_ms = created};
    sh.counts[MS_TASK_PENDING] = op->n_tasks;
    return ms_store_sweep_hdr_put(self, txn, op->id, &sh);
}

//  --------------------------------------------------------------------------
//  Collect the task ids of the task_state keys starting with PREFIX.
//  Caller frees *ids.

static int
s_collect_state(ms_store_t *self, MDB_txn *txn, const uint8_t *prefix,
                size_t prefix_len, uint8_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 0;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_task_state, prefix,
                                    prefix_len, "cursor task_state");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.v.mv_size != MS_STORE_ID) {
            status = ms_store_mdb(MDB_CORRUPTED, "task_state value");
            break;
        }
        status = ms_store_ids_push(ids, n, &cap, it.v.mv_data);
    }
    status = ms_store_scan_close(&it, status);
    if (status != MS_OK) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return status;
}

//  --------------------------------------------------------------------------
//  After an op's first write, a "refused" status (not found, conflict)
//  means the store is inconsistent, and the txn must not commit.

int
ms_store_written(int rc)
{
    if (rc == MS_ERR_NOTFOUND || rc == MS_ERR_CONFLICT ||
        rc == MS_ERR_INVALID) {
        fprintf(stderr, "meshsweep: store: inconsistent record (%s)\n",
                ms_strerror(rc));
        return MS_ERR_STORE;
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Writer: move one task to a state given by the caller (claimed and
//  running keep the current holder unless a node is given).

static int
s_op_task_state(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    MDB_val k = {MS_STORE_ID, (void *) op->id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc != 0)
        return ms_store_mdb(rc, "get task");
    ms_store_task_hdr_t hdr;
    if (ms_store_task_decode(op->id, &v, &hdr, NULL) != MS_OK)
        return ms_store_mdb(MDB_CORRUPTED, "task record");
    if (hdr.state == MS_TASK_DONE)
        return MS_ERR_CONFLICT;
    bool keep = op->value == MS_TASK_CLAIMED || op->value == MS_TASK_RUNNING;
    uint8_t holder[MS_STORE_ID];
    memcpy(holder, op->node ? op->node : hdr.holder, MS_STORE_ID);
    return ms_store_written(ms_store_task_move(self, txn, op->id, &v, &hdr,
                                               op->value, keep ? holder : NULL,
                                               op->text));
}

//  --------------------------------------------------------------------------
//  Writer: move tasks claimed or running by a node back to pending.

static int
s_op_reset_claims(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    static const int states[] = {MS_TASK_CLAIMED, MS_TASK_RUNNING};
    for (size_t s = 0; s < 2; s++) {
        uint8_t prefix = (uint8_t) states[s];
        uint8_t *ids;
        size_t n;
        int rc = s_collect_state(self, txn, &prefix, 1, &ids, &n);
        for (size_t i = 0; rc == MS_OK && i < n; i++) {
            const uint8_t *id = ids + i * MS_STORE_ID;
            MDB_val k = {MS_STORE_ID, (void *) id}, v;
            ms_store_task_hdr_t hdr;
            rc = mdb_get(txn, self->db_tasks, &k, &v);
            if (rc != 0) {
                rc = ms_store_mdb(rc, "get task");
                break;
            }
            if (ms_store_task_decode(id, &v, &hdr, NULL) != MS_OK) {
                rc = ms_store_mdb(MDB_CORRUPTED, "task record");
                break;
            }
            if (memcmp(hdr.holder, op->node, MS_STORE_ID) != 0)
                continue;
            rc = ms_store_task_move(self, txn, id, &v, &hdr, MS_TASK_PENDING,
                                    NULL, NULL);
            if (rc == MS_OK)
                op->count++;
        }
        free(ids);
        if (rc != MS_OK)
            return ms_store_written(rc);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Writer: apply one op in TXN.

static int
s_op_apply(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    switch (op->kind) {
    case MS_STORE_OP_PUT_SWEEP: // applied inside ms_store_apply_sweep, never
                                // queued
        break;
    case MS_STORE_OP_TASK_STATE:
        return s_op_task_state(self, txn, op);
    case MS_STORE_OP_RESET_CLAIMS:
        return s_op_reset_claims(self, txn, op);
    case MS_STORE_OP_APPEND:
        return ms_store_op_append(self, txn, op);
    case MS_STORE_OP_MERGE:
        return ms_store_op_merge(self, txn, op);
    case MS_STORE_OP_MEMBERS:
        return ms_store_op_members(self, txn, op);
    case MS_STORE_OP_PUT_ITEM:
        return ms_store_op_put_item(self, txn, op);
    case MS_STORE_OP_OPERATOR:
        return ms_store_op_operator(self, txn, op);
    case MS_STORE_OP_POOL_OPS:
        return ms_store_op_pool_ops(self, txn, op);
    }
    return MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  Writer: clear an op's outputs before a (re)run.

static void
s_op_reset(ms_store_op_t *op)
{
    op->existed = false;
    op->count = 0;
    memset(&op->merge, 0, sizeof op->merge);
}

//  --------------------------------------------------------------------------
//  True when an op's status means it wrote nothing and left the txn
//  usable (it refused before its first write).

static bool
s_op_refused(int rc)
{
    return rc == MS_ERR_NOTFOUND || rc == MS_ERR_CONFLICT ||
           rc == MS_ERR_INVALID || rc == MS_ERR_RANGE;
}

//  --------------------------------------------------------------------------
//  Writer: set every op of a batch to STATUS.

static void
s_batch_fail(ms_store_op_t *batch, int status)
{
    for (ms_store_op_t *op = batch; op; op = op->next) {
        s_op_reset(op);
        op->rc = status;
    }
}

//  --------------------------------------------------------------------------
//  Writer: apply a batch of ops in one durable txn; grow the map and rerun
//  on MAP_FULL; when an op breaks the txn, rerun the ops one per txn so
//  the others still land. Sets every op's rc.

static void
s_batch_apply(ms_store_t *self, ms_store_op_t *batch, size_t n_ops)
{
    int grows = 0;
    for (;;) {
        MDB_txn *txn = NULL;
        s_gate_enter(self, false);
        int rc = mdb_txn_begin(self->env, NULL, 0, &txn);
        if (rc != 0) {
            s_gate_leave(self, false);
            if (rc == MDB_MAP_RESIZED && grows++ < S_MAX_GROWS &&
                s_resize(self, 0) == MS_OK)
                continue;
            s_batch_fail(batch, ms_store_mdb(rc, "mdb_txn_begin (write)"));
            return;
        }
        // Each op checks before it writes, so a refused op (not found,
        // conflict, invalid) leaves no trace and the txn goes on. Any
        // other failure may leave the txn half-done: abort it.
        int broken = MS_OK;
        self->block.open = false;
        self->txn_vec_changed = false;
        self->gen_dirty = 0;
        self->gen_dirty_all = false;
        size_t txnid = mdb_txn_id(txn);
        for (ms_store_op_t *op = batch; op; op = op->next) {
            s_op_reset(op);
            op->rc = s_op_apply(self, txn, op);
            if (op->rc != MS_OK && !s_op_refused(op->rc)) {
                broken = op->rc;
                break;
            }
        }
        if (broken == MS_OK) {
            rc = mdb_txn_commit(txn);
            if (rc == MDB_MAP_FULL)
                broken = MS_ERR_STORE_FULL;
            else if (rc != 0)
                broken = ms_store_mdb(rc, "mdb_txn_commit");
        } else {
            mdb_txn_abort(txn);
        }
        s_gate_leave(self, false);

        if (broken == MS_ERR_STORE_FULL) {
            MDB_envinfo info;
            mdb_env_info(self->env, &info);
            if (grows++ < S_MAX_GROWS &&
                s_resize(self, info.me_mapsize * 2) == MS_OK)
                continue;
            s_batch_fail(batch, MS_ERR_STORE_FULL);
            return;
        }
        if (broken != MS_OK) {
            if (n_ops == 1) {
                s_batch_fail(batch, broken);
                return;
            }
            for (ms_store_op_t *op = batch, *next; op; op = next) {
                next = op->next;
                op->next = NULL;
                s_batch_apply(self, op, 1);
                op->next = next;
            }
            return;
        }
        // A commit that wrote nothing keeps the txn id; a later id than
        // this txn's means another process wrote between (or just after).
        MDB_envinfo info;
        mdb_env_info(self->env, &info);
        pthread_mutex_lock(&self->gate_mu);
        if (self->txn_vec_changed)
            self->vec_gen++;
        if (txnid != self->gen_txnid + 1 ||
            (info.me_last_txnid != txnid && info.me_last_txnid + 1 != txnid))
            self->gen_dirty_all = true; // another process wrote
        self->gen_txnid = info.me_last_txnid;
        if (self->gen_dirty_all)
            self->gen_all++;
        for (unsigned b = 0; b < MS_STORE_GEN_SLOTS; b++)
            if (self->gen_dirty & ((uint64_t) 1 << b))
                self->gen_slots[b]++;
        self->stats.n_commits++;
        self->stats.n_writes += n_ops;
        self->stats.n_verdict_evals = self->v_evals;
        if (n_ops > self->stats.max_batch)
            self->stats.max_batch = n_ops;
        if (self->n_reads > 0)
            self->stats.n_commits_read_open++;
        pthread_mutex_unlock(&self->gate_mu);
        return;
    }
}

//  --------------------------------------------------------------------------
//  Writer (or open, before the writer starts): keep the page cache of
//  data.mdb from its start to S_WARM_AHEAD_BYTES past LMDB's last page
//  (8 MiB for a store under 8 MiB) made of single-page folios.
//
//  Why. LMDB writes a commit's dirty pages with pwrite/writev, runs of
//  contiguous pages as one call (new pages at the end of the file always
//  are), and kernels with large page-cache folios for ext4 (6.x) then
//  cache such a run as one folio of up to 256 KiB: every later commit
//  that rewrites one 4 KiB page of it dirties the whole folio, and the
//  fdatasync walks all of its blocks. Measured on this machine (kernel
//  6.18, ext4): 25,000 random 4 KiB page writes with 50 fdatasyncs take
//  0.40 s on a file cached in 4 KiB folios and 0.69 s on one written in
//  256 KiB runs (0.86 s after the cache was dropped and read back through
//  a map with readahead); the store's commits showed the same, 8 times
//  more bytes accounted to writeback than written. A page that is already
//  cached keeps its folio when it is written, so the writer reads the
//  region LMDB will grow into ahead of time, with readahead off
//  (POSIX_FADV_RANDOM on LMDB's descriptor: a read then fills single-page
//  folios; 1 MiB per pread, about 0.5 ms per MiB here), after
//  extending the file with ftruncate when it is shorter (a hole: no disk
//  blocks, the reads are zero pages, nothing is written; the file's size
//  runs up to S_WARM_AHEAD_BYTES past LMDB's last page). Map faults
//  after a restart read single pages too (MDB_NORDAHEAD). Durability and
//  LMDB's format are untouched: LMDB ignores file bytes past its last
//  page, the file is never shortened, and only the page cache changes.
//  HINT: bytes a batch about to be applied may add (a big sweep grows the
//  file by more than the usual window in one commit); 0 after a commit.
//  A failure (no space, an unsupported descriptor) only stops the warming.

static void
s_warm_ahead(ms_store_t *self, uint64_t hint)
{
    if (self->read_only || self->data_fd < 0 || self->warm_failed)
        return;
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_env_info(self->env, &info) != 0 || mdb_env_stat(self->env, &st))
        return;
    uint64_t psize = st.ms_psize;
    uint64_t used = ((uint64_t) info.me_last_pgno + 1) * psize;
    // S_WARM_AHEAD_BYTES ahead, 8 MiB while the store is under 8 MiB (a
    // test's, a new node's: they cost little cache).
    uint64_t ahead = used < (8u << 20) ? (8u << 20) : S_WARM_AHEAD_BYTES;
    if (used + ahead / 2 <= self->warm_end && used + hint <= self->warm_end)
        return; // still well ahead
    uint64_t target = used + (hint > ahead ? hint : ahead);
    if (target > (uint64_t) info.me_mapsize)
        target = (uint64_t) info.me_mapsize;
    struct stat fst;
    if (fstat(self->data_fd, &fst) != 0)
        goto fail;
    if ((uint64_t) fst.st_size < target &&
        ftruncate(self->data_fd, (off_t) target) != 0)
        goto fail;
    uint8_t *buf = malloc(S_WARM_READ_BYTES);
    if (!buf)
        return; // try again after the next commit
    uint64_t from = self->warm_end > used ? self->warm_end : used;
    from -= from % psize;
    for (uint64_t off = from; off < target; off += S_WARM_READ_BYTES)
        if (pread(self->data_fd, buf, S_WARM_READ_BYTES, (off_t) off) < 0) {
            free(buf);
            goto fail;
        }
    free(buf);
    self->warm_end = target;
    return;
fail:
    self->warm_failed = true;
    fprintf(stderr,
            "meshsweep: store: page cache warming stopped: %s (commits "
            "go on, slower on kernels with large folios)\n",
            strerror(errno));
}

//  --------------------------------------------------------------------------
//  The writer thread: take what is queued, apply it as one commit, wake
//  the callers; exit once stopping and the queue is empty.

static void *
s_writer_main(void *arg)
{
    ms_store_t *self = arg;
    pthread_mutex_lock(&self->q_mu);
    for (;;) {
        while (!self->q_head && !self->stopping)
            pthread_cond_wait(&self->q_cv, &self->q_mu);
        if (!self->q_head)
            break;
        ms_store_op_t *batch = self->q_head, *last = batch;
        size_t n = 1;
        //  One call's ops (ms_store_merge_blocks) share one commit even
        //  past max_batch: a catch-up's batch is one fsync, not several.
        while (last->next && (n < self->max_batch || last->chained)) {
            last = last->next;
            n++;
        }
        self->q_head = last->next;
        if (!self->q_head)
            self->q_tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&self->q_mu);
        //  Warm for a big batch first (a sweep: its spec, its tasks'
        //  rows and indexes, about 32 times its deflated fragments).
        uint64_t bytes = 0;
        for (ms_store_op_t *op = batch; op; op = op->next) {
            bytes += op->len;
            for (size_t i = 0; op->lens && i < op->n_recs; i++)
                bytes += op->lens[i];
        }
        if (bytes > (1u << 20))
            s_warm_ahead(self, bytes > (32u << 20) ? (1ull << 30) : 32 * bytes);

        s_batch_apply(self, batch, n);

        pthread_mutex_lock(&self->q_mu);
        for (ms_store_op_t *op = batch, *next; op; op = next) {
            next = op->next;
            op->done = true;
        }
        pthread_cond_broadcast(&self->done_cv);
        pthread_mutex_unlock(&self->q_mu);
        s_warm_ahead(self, 0); // callers already woken: off their path
        pthread_mutex_lock(&self->q_mu);
    }
    pthread_mutex_unlock(&self->q_mu);
    return NULL;
}

//  --------------------------------------------------------------------------
//  Queue OP for the writer and wait until it is durable (or refused).

int
ms_store_submit(ms_store_t *self, ms_store_op_t *op)
{
    if (self->read_only)
        return MS_ERR_UNSUPPORTED;
    if (ms_store_tls_slot(self, false)) {
        // A write from inside a read callback could wait forever on a map
        // resize that waits for this very read txn.
        fprintf(stderr, "meshsweep: store: write called inside a read "
                        "callback; refused\n");
        return MS_ERR_INVALID;
    }
    op->next = NULL;
    op->done = false;
    op->rc = MS_OK;
    pthread_mutex_lock(&self->q_mu);
    if (self->stopping) {
        pthread_mutex_unlock(&self->q_mu);
        return MS_ERR_INTERRUPTED;
    }
    if (self->q_tail)
        self->q_tail->next = op;
    else
        self->q_head = op;
    self->q_tail = op;
    pthread_cond_signal(&self->q_cv);
    while (!op->done)
        pthread_cond_wait(&self->done_cv, &self->q_mu);
    pthread_mutex_unlock(&self->q_mu);
    return op->rc;
}

//  --------------------------------------------------------------------------
//  Create DIR and its missing parents, mode 0700.

static int
s_mkdir_p(const char *dir)
{
    size_t len = strlen(dir);
    char *path = malloc(len + 1);
    if (!path)
        return MS_ERR_NOMEM;
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != 0)
            continue;
        char saved = path[i];
        path[i] = 0;
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            free(path);
            return MS_ERR_IO;
        }
        path[i] = saved;
    }
    free(path);
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? MS_OK : MS_ERR_IO;
}

//  --------------------------------------------------------------------------
//  Open the named databases and read or make the incarnation.

static int
s_open_dbs(ms_store_t *self, const char *dir, ms_diag_t *diag)
{
    MDB_txn *txn;
    unsigned flags = self->read_only ? 0 : MDB_CREATE;
    int rc =
        mdb_txn_begin(self->env, NULL, self->read_only ? MDB_RDONLY : 0, &txn);
    if (rc != 0)
        return ms_diag_set_code(diag, ms_store_mdb(rc, "open"), dir,
                                "cannot begin a transaction: %s",
                                mdb_strerror(rc));
    struct {
        const char *name;
        MDB_dbi *dbi;
    } dbs[] = {{"meta", &self->db_meta},
               {"sweeps", &self->db_sweeps},
               {"sweep_meta", &self->db_sweep_meta},
               {"sweep_tasks", &self->db_sweep_tasks},
               {"tasks", &self->db_tasks},
               {"task_state", &self->db_task_state},
               {"results", &self->db_results},
               {"records", &self->db_records},
               {"blocks", &self->db_blocks},
               {"vectors", &self->db_vectors},
               {"evidence", &self->db_evidence},
               {"equivocators", &self->db_equivocators},
               {"sweep_controls", &self->db_controls},
               {"claims", &self->db_claims},
               {"result_meta", &self->db_result_meta},
               {"failures", &self->db_failures},
               {"datasets", &self->db_datasets},
               {"items", &self->db_items},
               {"cuts", &self->db_cuts}};
    self->has_cuts = true;
    for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
        rc = mdb_dbi_open(txn, dbs[i].name, flags, dbs[i].dbi);
        if (rc == MDB_NOTFOUND && self->read_only &&
            (dbs[i].dbi == &self->db_items || dbs[i].dbi == &self->db_cuts)) {
            self->has_cuts = false; // a store from before authority items
            continue;
        }
        if (rc != 0) {
            mdb_txn_abort(txn);
            if (rc == MDB_NOTFOUND)
                return ms_diag_set_code(diag, MS_ERR_NOTFOUND, dir,
                                        "not a meshsweep store (no '%s')",
                                        dbs[i].name);
            return ms_diag_set_code(diag, MS_ERR_STORE, dir,
                                    "cannot open database '%s': %s",
                                    dbs[i].name, mdb_strerror(rc));
        }
    }
    MDB_val k = {strlen("incarnation"), "incarnation"}, v;
    rc = mdb_get(txn, self->db_meta, &k, &v);
    if (rc == 0 && v.mv_size == sizeof self->incarnation) {
        memcpy(&self->incarnation, v.mv_data, sizeof self->incarnation);
    } else if (rc == MDB_NOTFOUND && !self->read_only) {
        do {
            if (getrandom(&self->incarnation, sizeof self->incarnation, 0) !=
                (ssize_t) sizeof self->incarnation) {
                mdb_txn_abort(txn);
                return ms_diag_set_code(diag, MS_ERR_IO, dir, "getrandom: %s",
                                        strerror(errno));
            }
        } while (self->incarnation == 0);
        uint32_t schema = S_SCHEMA;
        MDB_val sk = {strlen("schema"), "schema"},
                sv = {sizeof schema, &schema};
        v.mv_size = sizeof self->incarnation;
        v.mv_data = &self->incarnation;
        rc = mdb_put(txn, self->db_meta, &k, &v, 0);
        if (rc == 0)
            rc = mdb_put(txn, self->db_meta, &sk, &sv, 0);
        if (rc != 0) {
            mdb_txn_abort(txn);
            return ms_diag_set_code(diag, ms_store_mdb(rc, "meta"), dir,
                                    "cannot write the store meta: %s",
                                    mdb_strerror(rc));
        }
    } else {
        mdb_txn_abort(txn);
        return ms_diag_set_code(diag, MS_ERR_STORE, dir,
                                "store meta has no valid incarnation");
    }
    // Verification tables (optional when an older store is read).
    struct {
        const char *name;
        MDB_dbi *dbi;
    } vdbs[] = {{"verdicts", &self->db_verdicts},
                {"verdict_nodes", &self->db_verdict_nodes},
                {"operators", &self->db_operators},
                {"sweep_verify", &self->db_sweep_verify}};
    self->has_verdicts = true;
    for (size_t i = 0; i < sizeof vdbs / sizeof vdbs[0]; i++) {
        rc = mdb_dbi_open(txn, vdbs[i].name, flags, vdbs[i].dbi);
        if (rc == MDB_NOTFOUND && self->read_only) {
            self->has_verdicts = false;
            break;
        }
        if (rc != 0) {
            mdb_txn_abort(txn);
            return ms_diag_set_code(diag, MS_ERR_STORE, dir,
                                    "cannot open database '%s': %s",
                                    vdbs[i].name, mdb_strerror(rc));
        }
    }
    // Verdict counts: made once from the rows for a store from before
    // them (every later change keeps them, in its own txn).
    if (self->has_verdicts && !self->read_only) {
        rc = ms_store_verdict_counts_init(self, txn);
        if (rc != MS_OK) {
            mdb_txn_abort(txn);
            return ms_diag_set_code(diag, rc, dir,
                                    "cannot count the verdict rows");
        }
    }
    // Re-evaluations (optional when an older store is read).
    rc = mdb_dbi_open(txn, "reevals", flags, &self->db_reevals);
    self->has_reevals = rc == 0;
    if (rc != 0 && !(rc == MDB_NOTFOUND && self->read_only)) {
        mdb_txn_abort(txn);
        return ms_diag_set_code(diag, MS_ERR_STORE, dir,
                                "cannot open database 'reevals': %s",
                                mdb_strerror(rc));
    }
    // Commits (commit then reveal; optional when an older store is read).
    rc = mdb_dbi_open(txn, "commits", flags, &self->db_commits);
    self->has_commits = rc == 0;
    if (rc != 0 && !(rc == MDB_NOTFOUND && self->read_only)) {
        mdb_txn_abort(txn);
        return ms_diag_set_code(diag, MS_ERR_STORE, dir,
                                "cannot open database 'commits': %s",
                                mdb_strerror(rc));
    }
    rc = mdb_txn_commit(txn); // keeps the dbi handles
    if (rc != 0)
        return ms_diag_set_code(diag, ms_store_mdb(rc, "open"), dir,
                                "cannot commit the store meta: %s",
                                mdb_strerror(rc));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Fill options with the defaults.

void
ms_store_options_default(ms_store_options_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->map_size_bytes = MS_DEFAULT_STORE_MAP_SIZE;
    opts->max_readers = MS_DEFAULT_STORE_MAX_READERS;
    opts->max_batch = MS_DEFAULT_STORE_MAX_BATCH;
}

//  --------------------------------------------------------------------------
//  Create the environment handle and open it with the given flags. Returns
//  0 or an LMDB / errno code (the caller closes the handle on failure).

static int
s_env_open(ms_store_t *self, const char *dir, const ms_store_options_t *o,
           unsigned flags)
{
    int rc = mdb_env_create(&self->env);
    if (rc == 0)
        rc = mdb_env_set_maxdbs(self->env, 32);
    if (rc == 0)
        rc = mdb_env_set_mapsize(self->env, (size_t) o->map_size_bytes);
    if (rc == 0)
        rc = mdb_env_set_maxreaders(self->env, o->max_readers);
    if (rc == 0)
        rc = mdb_env_open(self->env, dir, flags, 0600);
    return rc;
}

//  --------------------------------------------------------------------------
//  Refuse a data.mdb shorter than the pages its meta page names (a
//  truncated copy, a disk that filled during a copy): the first read
//  through the map beyond the end of the file would kill the process with
//  SIGBUS. Only the meta pages have been read at this point (with read(),
//  not through the map), so checking here is safe.

static int
s_check_file_size(ms_store_t *self, const char *dir, ms_diag_t *diag)
{
    MDB_envinfo info;
    MDB_stat st;
    mdb_filehandle_t fd;
    struct stat fst;
    if (mdb_env_info(self->env, &info) != 0 ||
        mdb_env_stat(self->env, &st) != 0 ||
        mdb_env_get_fd(self->env, &fd) != 0 || fstat(fd, &fst) != 0)
        return ms_diag_set_code(diag, MS_ERR_STORE, dir,
                                "cannot read the store's size");
    uint64_t needed = ((uint64_t) info.me_last_pgno + 1) * st.ms_psize;
    if ((uint64_t) fst.st_size < needed)
        return ms_diag_set_code(
            diag, MS_ERR_STORE, dir,
            "data.mdb is truncated: %lld bytes, but its pages reach %llu "
            "bytes; restore the store from a copy, or move it away to start "
            "an empty one",
            (long long) fst.st_size, (unsigned long long) needed);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open or create the store in DIR.

int
ms_store_open(ms_store_t **out, const char *dir, const ms_store_options_t *opts,
              ms_diag_t *diag)
{
    *out = NULL;
    ms_store_options_t o;
    if (opts)
        o = *opts;
    else
        ms_store_options_default(&o);
    if (o.map_size_bytes == 0)
        o.map_size_bytes = MS_DEFAULT_STORE_MAP_SIZE;
    if (o.max_readers == 0)
        o.max_readers = MS_DEFAULT_STORE_MAX_READERS;
    if (o.max_batch == 0)
        o.max_batch = MS_DEFAULT_STORE_MAX_BATCH;
    const char *env_fs = getenv("MESHSWEEP_TEST_FSTYPE");
    if (o.fs_type == 0 && env_fs && *env_fs)
        o.fs_type = (uint32_t) strtoul(env_fs, NULL, 0);

    if (!dir || !*dir)
        return ms_diag_set(diag, "store", "no store directory given");
    if (o.read_only) {
        struct stat st;
        char *data = malloc(strlen(dir) + sizeof "/data.mdb");
        if (!data)
            return MS_ERR_NOMEM;
        sprintf(data, "%s/data.mdb", dir);
        int found = stat(data, &st) == 0;
        int stat_errno = errno;
        free(data);
        if (!found && stat_errno != ENOENT && stat_errno != ENOTDIR)
            return ms_diag_set_code(diag, MS_ERR_IO, dir, "cannot read: %s",
                                    strerror(stat_errno));
        if (!found)
            return ms_diag_set_code(diag, MS_ERR_NOTFOUND, dir,
                                    "no store here (no data.mdb)");
    } else {
        int rc = s_mkdir_p(dir);
        if (rc != MS_OK)
            return ms_diag_set_code(diag, rc, dir, "cannot create: %s",
                                    strerror(errno));
    }
    uint32_t fs_type = o.fs_type;
    if (fs_type == 0) {
        struct statfs sfs;
        if (statfs(dir, &sfs) != 0)
            return ms_diag_set_code(diag, MS_ERR_IO, dir, "statfs: %s",
                                    strerror(errno));
        fs_type = (uint32_t) sfs.f_type;
    }
    if (fs_type == S_FS_NFS || fs_type == S_FS_SMB || fs_type == S_FS_CIFS ||
        fs_type == S_FS_SMB2)
        return ms_diag_set_code(
            diag, MS_ERR_STORE_NFS, dir,
            "the store is on a network file system (type 0x%x); LMDB's locks "
            "and mmap are unsafe there: use a local disk",
            fs_type);

    ms_store_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->read_only = o.read_only;
    self->max_batch = o.max_batch;
    self->n_members = 3;
    self->n_pool_operators = 1;
    self->vc_ids = ms_ring_new(MS_STORE_ID, MS_STORE_VC_MAX);
    self->nr = ms_ring_new(sizeof(ms_store_new_result_t), MS_STORE_NR_MAX);
    if (!self->vc_ids || !self->nr) {
        ms_ring_destroy(&self->vc_ids);
        ms_ring_destroy(&self->nr);
        free(self);
        return ms_diag_set_code(diag, MS_ERR_NOMEM, dir, "out of memory");
    }
    pthread_mutex_init(&self->vc_mu, NULL);
    pthread_mutex_init(&self->nr_mu, NULL);
    pthread_mutex_init(&self->role_mu, NULL);
    pthread_mutex_init(&self->gate_mu, NULL);
    pthread_cond_init(&self->gate_cv, NULL);
    pthread_mutex_init(&self->q_mu, NULL);
    pthread_cond_init(&self->q_cv, NULL);
    pthread_cond_init(&self->done_cv, NULL);

    int status = MS_OK;
    //  MDB_NORDAHEAD: no readahead on the map (see s_warm_ahead).
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | (o.read_only ? MDB_RDONLY : 0);
    int rc = s_env_open(self, dir, &o, flags);
    if (rc == EACCES && o.read_only) {
        //  A reader without write access to lock.mdb (another user's
        //  store, a read-only copy): LMDB tolerates that only on a
        //  read-only file system. Read without the lock table instead: a
        //  concurrent writer is not coordinated with, which a one-shot
        //  query of committed results can live with.
        mdb_env_close(self->env);
        self->env = NULL;
        rc = s_env_open(self, dir, &o, flags | MDB_NOLOCK);
        if (rc == 0)
            fprintf(stderr,
                    "%s: no write access to the lock file: reading "
                    "without LMDB's reader lock\n",
                    dir);
    }
    if (rc != 0) {
        status = ms_diag_set_code(diag, ms_store_mdb(rc, "mdb_env_open"), dir,
                                  "cannot open the LMDB environment: %s",
                                  mdb_strerror(rc));
        goto fail;
    }
    status = s_check_file_size(self, dir, diag);
    if (status != MS_OK)
        goto fail;
    if (!o.skip_reader_check)
        s_reader_check(self);
    status = s_open_dbs(self, dir, diag);
    if (status != MS_OK)
        goto fail;
    MDB_envinfo info;
    mdb_env_info(self->env, &info);
    self->stats.map_size_bytes = info.me_mapsize;
    self->gen_txnid = info.me_last_txnid; // "Sweep generations"
    if (!self->read_only) {
        self->data_fd = -1;
        mdb_filehandle_t fd;
        if (mdb_env_get_fd(self->env, &fd) == 0) {
            self->data_fd = fd;
            (void) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        }
        s_warm_ahead(self, 0);
        if (pthread_create(&self->writer, NULL, s_writer_main, self) != 0) {
            status = ms_diag_set_code(diag, MS_ERR_NOMEM, dir,
                                      "cannot start the writer thread");
            goto fail;
        }
        self->writer_started = true;
    }
    *out = self;
    return MS_OK;

fail:
    ms_store_destroy(&self);
    return status;
}

//  --------------------------------------------------------------------------
//  Drain the queue, stop the writer, close the environment, free.

void
ms_store_destroy(ms_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_store_t *self = *self_p;
    if (self->writer_started) {
        pthread_mutex_lock(&self->q_mu);
        self->stopping = true;
        pthread_cond_broadcast(&self->q_cv);
        pthread_mutex_unlock(&self->q_mu);
        pthread_join(self->writer, NULL);
    }
    if (self->env)
        mdb_env_close(self->env);
    pthread_cond_destroy(&self->done_cv);
    pthread_cond_destroy(&self->q_cv);
    pthread_mutex_destroy(&self->q_mu);
    pthread_cond_destroy(&self->gate_cv);
    pthread_mutex_destroy(&self->gate_mu);
    pthread_mutex_destroy(&self->vc_mu);
    pthread_mutex_destroy(&self->nr_mu);
    pthread_mutex_destroy(&self->role_mu);
    free(self->no_submit);
    ms_ring_destroy(&self->vc_ids);
    ms_ring_destroy(&self->nr);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The store's incarnation.

uint64_t
ms_store_incarnation(ms_store_t *self)
{
    return self->incarnation;
}

//  --------------------------------------------------------------------------
//  Set the block signer.

void
ms_store_set_signer(ms_store_t *self, ms_store_sign_fn fn, void *arg)
{
    pthread_mutex_lock(&self->q_mu); // the writer reads them under ops
    self->sign_fn = fn;
    self->sign_arg = arg;
    pthread_mutex_unlock(&self->q_mu);
}

//  --------------------------------------------------------------------------
//  Tests only: keep own records that do not decode instead of refusing.

void
ms_store_set_unchecked_appends(ms_store_t *self, bool unchecked)
{
    __atomic_store_n(&self->unchecked_appends, unchecked, __ATOMIC_RELAXED);
}

//  --------------------------------------------------------------------------
//  A sweep's generation ("Sweep generations" above the task moves).

uint64_t
ms_store_sweep_generation(ms_store_t *self,
                          const uint8_t sweep_id[MS_STORE_ID_BYTES])
{
    MDB_envinfo info;
    if (mdb_env_info(self->env, &info) != 0)
        return 0;
    pthread_mutex_lock(&self->gate_mu);
    uint64_t gen =
        info.me_last_txnid == self->gen_txnid
            ? 1 + self->gen_all + self->gen_slots[MS_STORE_GEN_SLOT(sweep_id)]
            : 0; // another process wrote: unknown
    pthread_mutex_unlock(&self->gate_mu);
    return gen;
}

//  --------------------------------------------------------------------------
//  Copy the counters.

void
ms_store_stats(ms_store_t *self, ms_store_stats_t *out)
{
    uint64_t n_rec = 0, n_blk = 0, n_evi = 0, n_eqv = 0, n_bad = 0;
    MDB_txn *txn;
    if (ms_store_read_begin(self, &txn) == MS_OK) {
        MDB_stat st;
        if (mdb_stat(txn, self->db_records, &st) == 0)
            n_rec = st.ms_entries;
        if (mdb_stat(txn, self->db_blocks, &st) == 0)
            n_blk = st.ms_entries;
        if (mdb_stat(txn, self->db_evidence, &st) == 0)
            n_evi = st.ms_entries / 2; // both records of each conflict
        if (mdb_stat(txn, self->db_equivocators, &st) == 0)
            n_eqv = st.ms_entries;
        MDB_val mk = {strlen("bad_fragments"), "bad_fragments"}, mv;
        if (mdb_get(txn, self->db_meta, &mk, &mv) == 0 &&
            mv.mv_size == sizeof n_bad)
            memcpy(&n_bad, mv.mv_data, sizeof n_bad);
        ms_store_read_end(self, txn);
    }
    pthread_mutex_lock(&self->gate_mu);
    *out = self->stats;
    pthread_mutex_unlock(&self->gate_mu);
    out->n_records = n_rec;
    out->n_blocks = n_blk;
    out->n_equivocations = n_evi;
    out->n_equivocating = n_eqv;
    out->n_bad_fragments = n_bad;
}

int
ms_store_set_member_count(ms_store_t *self, uint32_t n_members)
{
    return ms_store_submit_count(self, MS_STORE_OP_MEMBERS, n_members);
}

//  --------------------------------------------------------------------------
//  Call fn for each claim row of a task.

int
ms_store_claims_by_task(ms_store_t *self,
                        const uint8_t task_id[MS_STORE_ID_BYTES],
                        ms_store_claim_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_claims, task_id,
                                    MS_STORE_ID, "cursor claims");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != 2 * MS_STORE_ID + 12)
            break;
        ms_store_claim_row_t row;
        if (it.v.mv_size != sizeof row) {
            status = ms_store_mdb(MDB_CORRUPTED, "claim row");
            break;
        }
        memcpy(&row, it.v.mv_data, sizeof row);
        if (row.claimed &&
            !ms_store_key_counts(self, txn, row.claim_key, &status))
            continue; // above its origin's revocation cut: holds nothing
        if (status != MS_OK)
            break;
        const uint8_t *kp = it.k.mv_data;
        ms_store_claim_t c = {.slot = ms_be_get32(kp + MS_STORE_ID),
                              .epoch = ms_be_get64(kp + MS_STORE_ID + 4),
                              .claimed = row.claimed,
                              .released = row.released,
                              .reason = row.reason};
        memcpy(c.task_id, kp, MS_STORE_ID);
        memcpy(c.node_id, kp + MS_STORE_ID + 12, MS_STORE_ID);
        if (row.claimed)
            ms_store_key_parse(row.claim_key, &c.claim_key);
        if (row.released)
            ms_store_key_parse(row.release_key, &c.release_key);
        status = fn(arg, &c);
    }
    status = ms_store_scan_close(&it, status);
    ms_store_read_end(self, txn);
    return status;
}
