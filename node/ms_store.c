/*  =========================================================================
    ms_store - the node's LMDB store: sweeps, tasks and their states, results

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Implements DESIGN.md "Store (LMDB)" for one node (no gossip yet).

    Layout. One LMDB environment, named databases:

      meta         "incarnation" -> u64, "schema" -> u32
      sweeps       sweep_id -> canonical spec JSON + NUL
      sweep_meta   sweep_id -> s_sweep_hdr_t (state, priority, counts)
      sweep_tasks  sweep_id || index (u32 big-endian) -> task_id
      tasks        task_id -> s_task_hdr_t + config JSON + NUL + error + NUL
      task_state   state (1 byte) || sweep_id || index (BE) -> task_id
      results      task_id || node_id -> result row JSON + NUL

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

    Not done: an async write variant (callers block; the node's actor can
    hand writes to a helper thread if needed), compaction, and records by
    (origin, incarnation, seq) - they come with gossip.
*/
#include "ms_store.h"

#include <errno.h>
#include <jansson.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define S_ID MS_STORE_ID_BYTES
#define S_SCHEMA 1u
#define S_MAX_GROWS 48 // doublings tried for one batch

// File system magics refused for the store (statfs f_type).
#define S_FS_NFS 0x6969u
#define S_FS_SMB 0x517Bu
#define S_FS_CIFS 0xFF534D42u
#define S_FS_SMB2 0xFE534D42u

// On-disk sweep state record (sweep_meta). Fixed size, native endianness
// (the store is local to one machine).
typedef struct {
    uint8_t version;                   // record layout, 1
    uint8_t state;                     // ms_sweep_state_t
    uint16_t reserved;                 // zero
    int32_t priority;                  // higher first
    uint64_t n_tasks;                  // tasks in the sweep
    int64_t created_at_ms;             // wall clock, ms since the epoch
    int64_t updated_at_ms;             // wall clock, ms since the epoch
    uint64_t counts[MS_TASK_N_STATES]; // tasks per state
} s_sweep_hdr_t;

// On-disk task record header (tasks); config and error text follow.
typedef struct {
    uint8_t version;        // record layout, 1
    uint8_t state;          // ms_task_state_t
    uint16_t reserved;      // zero
    uint32_t index;         // position in the sweep
    uint32_t attempts;      // claims so far
    uint32_t config_len;    // bytes of config JSON, without NUL
    uint32_t error_len;     // bytes of last error, without NUL
    uint32_t reserved2;     // zero
    int64_t updated_at_ms;  // wall clock, ms since the epoch
    uint8_t sweep_id[S_ID]; // owning sweep
    uint8_t holder[S_ID];   // node running it, zero when none
} s_task_hdr_t;

typedef enum {
    S_OP_PUT_SWEEP,
    S_OP_SWEEP_STATE,
    S_OP_SWEEP_PRIORITY,
    S_OP_CLAIM_NEXT,
    S_OP_TASK_STATE,
    S_OP_RESET_CLAIMS,
    S_OP_PUT_RESULT,
} s_op_kind_t;

// One queued write: arguments borrowed from the blocked caller, results.
typedef struct s_op {
    struct s_op *next;                  // queue link
    s_op_kind_t kind;                   // what to do
    const uint8_t *id;                  // sweep or task id
    const uint8_t *node;                // node id, or NULL
    const char *text;                   // spec, reason or row
    size_t len;                         // bytes in text
    int32_t value;                      // priority or state
    const ms_store_task_input_t *tasks; // put sweep
    size_t n_tasks;                     // put sweep
    int rc;                             // result status
    bool existed;                       // put sweep: was there
    size_t count;                       // reset claims: tasks reset
    ms_store_task_t *task;              // claim next: the claimed task (owned)
    bool done;                          // set by the writer when rc is final
} s_op_t;

struct ms_store {
    MDB_env *env;    // the environment
    MDB_dbi db_meta; // see the layout above
    MDB_dbi db_sweeps;
    MDB_dbi db_sweep_meta;
    MDB_dbi db_sweep_tasks;
    MDB_dbi db_tasks;
    MDB_dbi db_task_state;
    MDB_dbi db_results;
    bool read_only;       // opened with opts.read_only
    unsigned max_batch;   // writes per commit
    uint64_t incarnation; // 64 random bits, made at creation

    pthread_mutex_t gate_mu; // guards the fields below down to stats
    pthread_cond_t gate_cv;  // gate changes
    unsigned n_active;       // open txns in this process (reads + write)
    unsigned n_reads;        // open read txns
    bool resizing;           // a resize waits for n_active == 0
    ms_store_stats_t stats;  // counters

    pthread_mutex_t q_mu;   // guards the queue
    pthread_cond_t q_cv;    // work queued or stopping
    pthread_cond_t done_cv; // some ops finished
    s_op_t *q_head;         // first queued op
    s_op_t *q_tail;         // last queued op
    bool stopping;          // destroy called
    bool writer_started;    // writer thread exists
    pthread_t writer;       // the writer thread
};

// Per thread: which stores this thread holds read txns in (gate bypass).
#define S_TLS_SLOTS 4
static _Thread_local const ms_store_t *s_tls_store[S_TLS_SLOTS];
static _Thread_local unsigned s_tls_depth[S_TLS_SLOTS];

//  --------------------------------------------------------------------------
//  Wall clock in ms since the Unix epoch.

static int64_t
s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

//  --------------------------------------------------------------------------
//  Map an LMDB code to a status; log the ones that are real failures.

static int
s_mdb(int rc, const char *what)
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

//  --------------------------------------------------------------------------
//  Write a u32 big-endian (so byte order is numeric order).

static void
s_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t) (v >> 24);
    p[1] = (uint8_t) (v >> 16);
    p[2] = (uint8_t) (v >> 8);
    p[3] = (uint8_t) v;
}

//  --------------------------------------------------------------------------
//  Read a big-endian u32.

static uint32_t
s_get_be32(const uint8_t *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 |
           (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

//  --------------------------------------------------------------------------
//  Build a task_state key: state || sweep_id || index.

static void
s_state_key(uint8_t key[1 + S_ID + 4], int state, const uint8_t *sweep_id,
            uint32_t index)
{
    key[0] = (uint8_t) state;
    memcpy(key + 1, sweep_id, S_ID);
    s_put_be32(key + 1 + S_ID, index);
}

//  --------------------------------------------------------------------------
//  Find (or take) this thread's gate slot for SELF; NULL when none free.

static unsigned *
s_tls_slot(const ms_store_t *self, bool take)
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
    unsigned *depth = reader ? s_tls_slot(self, true) : NULL;
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
        unsigned *depth = s_tls_slot(self, false);
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

static int
s_read_begin(ms_store_t *self, MDB_txn **txn)
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
        if (rc == MDB_MAP_RESIZED && !adopted && !s_tls_slot(self, false)) {
            adopted = true;
            if (s_resize(self, 0) == MS_OK)
                continue;
        }
        return s_mdb(rc, "mdb_txn_begin (read)");
    }
}

//  --------------------------------------------------------------------------
//  End a read txn.

static void
s_read_end(ms_store_t *self, MDB_txn *txn)
{
    mdb_txn_abort(txn);
    s_gate_leave(self, true);
}

//  --------------------------------------------------------------------------
//  Decode a task record (borrowed pointers into VAL). MS_ERR_STORE when
//  the record is malformed.

static int
s_task_decode(const uint8_t *task_id, const MDB_val *val, s_task_hdr_t *hdr,
              ms_store_task_t *task)
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
        memcpy(task->task_id, task_id, S_ID);
        memcpy(task->sweep_id, hdr->sweep_id, S_ID);
        memcpy(task->holder, hdr->holder, S_ID);
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
//  Copy a borrowed task into one owned block.

static ms_store_task_t *
s_task_dup(const ms_store_task_t *task)
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

static int
s_sweep_hdr_get(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                s_sweep_hdr_t *hdr)
{
    MDB_val key = {S_ID, (void *) sweep_id}, val;
    int rc = mdb_get(txn, self->db_sweep_meta, &key, &val);
    if (rc != 0)
        return s_mdb(rc, "get sweep_meta");
    if (val.mv_size != sizeof *hdr)
        return s_mdb(MDB_CORRUPTED, "sweep_meta record");
    memcpy(hdr, val.mv_data, sizeof *hdr);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Write a sweep's state record; an active sweep with nothing left to run
//  turns done, a done sweep with work again turns active.

static int
s_sweep_hdr_put(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                s_sweep_hdr_t *hdr)
{
    uint64_t open = hdr->counts[MS_TASK_PENDING] +
                    hdr->counts[MS_TASK_CLAIMED] + hdr->counts[MS_TASK_RUNNING];
    if (hdr->state == MS_SWEEP_ACTIVE && open == 0)
        hdr->state = MS_SWEEP_DONE;
    else if (hdr->state == MS_SWEEP_DONE && open > 0)
        hdr->state = MS_SWEEP_ACTIVE;
    hdr->updated_at_ms = s_now_ms();
    MDB_val key = {S_ID, (void *) sweep_id}, val = {sizeof *hdr, hdr};
    return s_mdb(mdb_put(txn, self->db_sweep_meta, &key, &val, 0),
                 "put sweep_meta");
}

//  --------------------------------------------------------------------------
//  Move a task (record HDR, raw value VAL) to NEW_STATE inside a write
//  txn: rewrite the record, move its task_state key, update the sweep's
//  counts. HOLDER (or NULL: zero) and REASON (NULL: keep) as given.

static int
s_task_move(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
            const MDB_val *val, const s_task_hdr_t *hdr, int new_state,
            const uint8_t *holder, const char *reason, bool count_attempt)
{
    s_task_hdr_t nh = *hdr;
    const char *text = (const char *) val->mv_data + sizeof *hdr;
    const char *err = reason ? reason : text + hdr->config_len + 1;
    size_t err_len = reason ? strlen(reason) : hdr->error_len;
    if (err_len > UINT32_MAX / 2)
        err_len = UINT32_MAX / 2;
    nh.state = (uint8_t) new_state;
    nh.error_len = (uint32_t) err_len;
    nh.updated_at_ms = s_now_ms();
    if (count_attempt)
        nh.attempts++;
    if (holder)
        memcpy(nh.holder, holder, S_ID);
    else
        memset(nh.holder, 0, S_ID);

    size_t size = sizeof nh + (size_t) nh.config_len + 1 + err_len + 1;
    uint8_t *buf = malloc(size);
    if (!buf)
        return MS_ERR_NOMEM;
    memcpy(buf, &nh, sizeof nh);
    memcpy(buf + sizeof nh, text, (size_t) nh.config_len + 1);
    memcpy(buf + sizeof nh + nh.config_len + 1, err, err_len);
    buf[size - 1] = 0;

    uint8_t tid[S_ID];
    memcpy(tid, task_id, S_ID); // task_id may point into the map
    MDB_val k = {S_ID, tid}, v = {size, buf};
    int rc = s_mdb(mdb_put(txn, self->db_tasks, &k, &v, 0), "put task");
    free(buf);
    if (rc != MS_OK)
        return rc;

    if (new_state != hdr->state) {
        uint8_t sk[1 + S_ID + 4];
        s_state_key(sk, hdr->state, hdr->sweep_id, hdr->index);
        MDB_val skey = {sizeof sk, sk};
        rc = mdb_del(txn, self->db_task_state, &skey, NULL);
        if (rc != 0 && rc != MDB_NOTFOUND)
            return s_mdb(rc, "del task_state");
        s_state_key(sk, new_state, hdr->sweep_id, hdr->index);
        MDB_val sval = {S_ID, tid};
        rc = s_mdb(mdb_put(txn, self->db_task_state, &skey, &sval, 0),
                   "put task_state");
        if (rc != MS_OK)
            return rc;
        s_sweep_hdr_t sh;
        rc = s_sweep_hdr_get(self, txn, hdr->sweep_id, &sh);
        if (rc != MS_OK)
            return rc == MS_ERR_NOTFOUND ? MS_ERR_STORE : rc;
        if (sh.counts[hdr->state] > 0)
            sh.counts[hdr->state]--;
        sh.counts[new_state]++;
        rc = s_sweep_hdr_put(self, txn, hdr->sweep_id, &sh);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Writer: store a sweep and its tasks.

static int
s_op_put_sweep(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    MDB_val key = {S_ID, (void *) op->id}, val;
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
        return s_mdb(rc, "get sweep");

    // Check first (a refused op must write nothing): no task id may be
    // stored yet. Duplicates inside tasks[] were refused by the caller.
    for (size_t i = 0; i < op->n_tasks; i++) {
        MDB_val tk = {S_ID, (void *) op->tasks[i].task_id}, tv;
        rc = mdb_get(txn, self->db_tasks, &tk, &tv);
        if (rc == 0)
            return MS_ERR_CONFLICT; // belongs to another sweep
        if (rc != MDB_NOTFOUND)
            return s_mdb(rc, "get task");
    }
    int64_t now = s_now_ms();
    for (size_t i = 0; i < op->n_tasks; i++) {
        const ms_store_task_input_t *in = &op->tasks[i];
        s_task_hdr_t th = {.version = 1,
                           .state = MS_TASK_PENDING,
                           .index = (uint32_t) i,
                           .config_len = (uint32_t) in->config_len,
                           .updated_at_ms = now};
        memcpy(th.sweep_id, op->id, S_ID);
        MDB_val tk = {S_ID, (void *) in->task_id};
        MDB_val tv = {sizeof th + in->config_len + 2, NULL};
        rc = mdb_put(txn, self->db_tasks, &tk, &tv,
                     MDB_NOOVERWRITE | MDB_RESERVE);
        if (rc != 0) // KEYEXIST here is a bug: tasks[] was checked
            return s_mdb(rc, "put task");
        uint8_t *p = tv.mv_data;
        memcpy(p, &th, sizeof th);
        memcpy(p + sizeof th, in->config_json, in->config_len);
        p[sizeof th + in->config_len] = 0;
        p[sizeof th + in->config_len + 1] = 0; // empty error

        uint8_t ik[S_ID + 4];
        memcpy(ik, op->id, S_ID);
        s_put_be32(ik + S_ID, (uint32_t) i);
        MDB_val ikey = {sizeof ik, ik};
        rc = mdb_put(txn, self->db_sweep_tasks, &ikey, &tk, 0);
        if (rc != 0)
            return s_mdb(rc, "put sweep_tasks");
        uint8_t sk[1 + S_ID + 4];
        s_state_key(sk, MS_TASK_PENDING, op->id, (uint32_t) i);
        MDB_val skey = {sizeof sk, sk};
        rc = mdb_put(txn, self->db_task_state, &skey, &tk, 0);
        if (rc != 0)
            return s_mdb(rc, "put task_state");
    }
    MDB_val sv = {op->len + 1, NULL};
    rc = mdb_put(txn, self->db_sweeps, &key, &sv, MDB_RESERVE);
    if (rc != 0)
        return s_mdb(rc, "put sweep");
    memcpy(sv.mv_data, op->text, op->len);
    ((char *) sv.mv_data)[op->len] = 0;

    s_sweep_hdr_t sh = {.version = 1,
                        .state = MS_SWEEP_ACTIVE,
                        .priority = op->value,
                        .n_tasks = op->n_tasks,
                        .created_at_ms = now};
    sh.counts[MS_TASK_PENDING] = op->n_tasks;
    return s_sweep_hdr_put(self, txn, op->id, &sh);
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
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, self->db_task_state, &cur);
    if (rc != 0)
        return s_mdb(rc, "cursor task_state");
    MDB_val k = {prefix_len, (void *) prefix}, v;
    int status = MS_OK;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < prefix_len || memcmp(k.mv_data, prefix, prefix_len))
            break;
        if (v.mv_size != S_ID) {
            status = s_mdb(MDB_CORRUPTED, "task_state value");
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            uint8_t *grown = realloc(*ids, cap * S_ID);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            *ids = grown;
        }
        memcpy(*ids + *n * S_ID, v.mv_data, S_ID);
        (*n)++;
    }
    if (status == MS_OK && rc != 0 && rc != MDB_NOTFOUND)
        status = s_mdb(rc, "cursor task_state");
    mdb_cursor_close(cur);
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

static int
s_written(int rc)
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
//  Writer: load task ID and move it to STATE.

static int
s_move_by_id(ms_store_t *self, MDB_txn *txn, const uint8_t *id, int state,
             const uint8_t *holder, const char *reason, bool count_attempt,
             ms_store_task_t **out)
{
    MDB_val k = {S_ID, (void *) id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc != 0)
        return s_mdb(rc, "get task");
    s_task_hdr_t hdr;
    if (s_task_decode(id, &v, &hdr, NULL) != MS_OK)
        return s_mdb(MDB_CORRUPTED, "task record");
    if (hdr.state == MS_TASK_DONE && state != MS_TASK_DONE)
        return MS_ERR_CONFLICT;
    rc = s_written(s_task_move(self, txn, id, &v, &hdr, state, holder, reason,
                               count_attempt));
    if (rc == MS_OK && out) {
        rc = mdb_get(txn, self->db_tasks, &k, &v);
        if (rc != 0)
            return s_written(s_mdb(rc, "get task"));
        ms_store_task_t task;
        if (s_task_decode(id, &v, &hdr, &task) != MS_OK)
            return s_mdb(MDB_CORRUPTED, "task record");
        *out = s_task_dup(&task);
        if (!*out)
            return MS_ERR_NOMEM;
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Writer: set a sweep's state (or priority).

static int
s_op_sweep_set(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    s_sweep_hdr_t sh;
    int rc = s_sweep_hdr_get(self, txn, op->id, &sh);
    if (rc != MS_OK)
        return rc;
    if (op->kind == S_OP_SWEEP_PRIORITY) {
        sh.priority = op->value;
        return s_sweep_hdr_put(self, txn, op->id, &sh);
    }
    sh.state = (uint8_t) op->value;
    rc = s_sweep_hdr_put(self, txn, op->id, &sh);
    if (rc != MS_OK || op->value != MS_SWEEP_CANCELLED)
        return rc;
    uint8_t prefix[1 + S_ID];
    prefix[0] = MS_TASK_PENDING;
    memcpy(prefix + 1, op->id, S_ID);
    uint8_t *ids;
    size_t n;
    rc = s_collect_state(self, txn, prefix, sizeof prefix, &ids, &n);
    for (size_t i = 0; rc == MS_OK && i < n; i++)
        rc = s_move_by_id(self, txn, ids + i * S_ID, MS_TASK_CANCELLED, NULL,
                          NULL, false, NULL);
    free(ids);
    return s_written(rc); // the sweep record was written already
}

//  --------------------------------------------------------------------------
//  Writer: claim the next pending task of the best active sweep.

static int
s_op_claim_next(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, self->db_sweep_meta, &cur);
    if (rc != 0)
        return s_mdb(rc, "cursor sweep_meta");
    bool found = false;
    uint8_t best[S_ID];
    s_sweep_hdr_t bh = {0};
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        s_sweep_hdr_t sh;
        if (k.mv_size != S_ID || v.mv_size != sizeof sh)
            continue;
        memcpy(&sh, v.mv_data, sizeof sh);
        if (sh.state != MS_SWEEP_ACTIVE || sh.counts[MS_TASK_PENDING] == 0)
            continue;
        // Keys come in id order, so on equal (priority, created) the
        // first seen (lower id) stays.
        if (!found || sh.priority > bh.priority ||
            (sh.priority == bh.priority &&
             sh.created_at_ms < bh.created_at_ms)) {
            found = true;
            bh = sh;
            memcpy(best, k.mv_data, S_ID);
        }
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND)
        return s_mdb(rc, "cursor sweep_meta");
    if (!found)
        return MS_ERR_NOTFOUND;

    uint8_t prefix[1 + S_ID];
    prefix[0] = MS_TASK_PENDING;
    memcpy(prefix + 1, best, S_ID);
    rc = mdb_cursor_open(txn, self->db_task_state, &cur);
    if (rc != 0)
        return s_mdb(rc, "cursor task_state");
    k.mv_size = sizeof prefix;
    k.mv_data = prefix;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    uint8_t id[S_ID];
    bool have = rc == 0 && k.mv_size >= sizeof prefix &&
                memcmp(k.mv_data, prefix, sizeof prefix) == 0 &&
                v.mv_size == S_ID;
    if (have)
        memcpy(id, v.mv_data, S_ID);
    mdb_cursor_close(cur);
    if (!have) // counts say pending, index has none
        return s_mdb(rc ? rc : MDB_CORRUPTED, "pending index");
    return s_move_by_id(self, txn, id, MS_TASK_RUNNING, op->node, NULL, true,
                        &op->task);
}

//  --------------------------------------------------------------------------
//  Writer: move one task to a state given by the caller.

static int
s_op_task_state(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    const uint8_t *holder = NULL;
    uint8_t kept[S_ID];
    if (op->value == MS_TASK_CLAIMED || op->value == MS_TASK_RUNNING) {
        holder = op->node;
        if (!holder) { // keep the current holder
            MDB_val k = {S_ID, (void *) op->id}, v;
            s_task_hdr_t hdr;
            int rc = mdb_get(txn, self->db_tasks, &k, &v);
            if (rc != 0)
                return s_mdb(rc, "get task");
            if (s_task_decode(op->id, &v, &hdr, NULL) != MS_OK)
                return s_mdb(MDB_CORRUPTED, "task record");
            memcpy(kept, hdr.holder, S_ID);
            holder = kept;
        }
    }
    return s_move_by_id(self, txn, op->id, op->value, holder, op->text, false,
                        NULL);
}

//  --------------------------------------------------------------------------
//  Writer: move tasks claimed or running by a node back to pending.

static int
s_op_reset_claims(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    static const int states[] = {MS_TASK_CLAIMED, MS_TASK_RUNNING};
    for (size_t s = 0; s < 2; s++) {
        uint8_t prefix = (uint8_t) states[s];
        uint8_t *ids;
        size_t n;
        int rc = s_collect_state(self, txn, &prefix, 1, &ids, &n);
        for (size_t i = 0; rc == MS_OK && i < n; i++) {
            const uint8_t *id = ids + i * S_ID;
            MDB_val k = {S_ID, (void *) id}, v;
            s_task_hdr_t hdr;
            rc = mdb_get(txn, self->db_tasks, &k, &v);
            if (rc != 0) {
                rc = s_mdb(rc, "get task");
                break;
            }
            if (s_task_decode(id, &v, &hdr, NULL) != MS_OK) {
                rc = s_mdb(MDB_CORRUPTED, "task record");
                break;
            }
            if (memcmp(hdr.holder, op->node, S_ID) != 0)
                continue;
            rc = s_task_move(self, txn, id, &v, &hdr, MS_TASK_PENDING, NULL,
                             NULL, false);
            if (rc == MS_OK)
                op->count++;
        }
        free(ids);
        if (rc != MS_OK)
            return s_written(rc);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Writer: store a result row and mark its task done.

static int
s_op_put_result(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    MDB_val k = {S_ID, (void *) op->id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc != 0)
        return s_mdb(rc, "get task");
    s_task_hdr_t hdr;
    if (s_task_decode(op->id, &v, &hdr, NULL) != MS_OK)
        return s_mdb(MDB_CORRUPTED, "task record");

    uint8_t rk[2 * S_ID];
    memcpy(rk, op->id, S_ID);
    memcpy(rk + S_ID, op->node, S_ID);
    MDB_val rkey = {sizeof rk, rk}, rval = {op->len + 1, NULL};
    rc = mdb_put(txn, self->db_results, &rkey, &rval,
                 MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST) {
        if (rval.mv_size == op->len + 1 &&
            memcmp(rval.mv_data, op->text, op->len) == 0)
            rc = 0; // the same row again
        else
            return MS_ERR_CONFLICT;
    } else if (rc != 0) {
        return s_mdb(rc, "put result");
    } else {
        memcpy(rval.mv_data, op->text, op->len);
        ((char *) rval.mv_data)[op->len] = 0;
    }
    if (hdr.state == MS_TASK_DONE)
        return MS_OK;
    rc = mdb_get(txn, self->db_tasks, &k, &v); // pages may have moved
    if (rc != 0)
        return s_written(s_mdb(rc, "get task"));
    return s_written(s_task_move(self, txn, op->id, &v, &hdr, MS_TASK_DONE,
                                 NULL, NULL, false));
}

//  --------------------------------------------------------------------------
//  Writer: apply one op in TXN.

static int
s_op_apply(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    switch (op->kind) {
    case S_OP_PUT_SWEEP:
        return s_op_put_sweep(self, txn, op);
    case S_OP_SWEEP_STATE:
    case S_OP_SWEEP_PRIORITY:
        return s_op_sweep_set(self, txn, op);
    case S_OP_CLAIM_NEXT:
        return s_op_claim_next(self, txn, op);
    case S_OP_TASK_STATE:
        return s_op_task_state(self, txn, op);
    case S_OP_RESET_CLAIMS:
        return s_op_reset_claims(self, txn, op);
    case S_OP_PUT_RESULT:
        return s_op_put_result(self, txn, op);
    }
    return MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  Writer: clear an op's outputs before a (re)run.

static void
s_op_reset(s_op_t *op)
{
    op->existed = false;
    op->count = 0;
    ms_store_task_destroy(&op->task);
}

//  --------------------------------------------------------------------------
//  True when an op's status means it wrote nothing and left the txn
//  usable (it refused before its first write).

static bool
s_op_refused(int rc)
{
    return rc == MS_ERR_NOTFOUND || rc == MS_ERR_CONFLICT ||
           rc == MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  Writer: set every op of a batch to STATUS.

static void
s_batch_fail(s_op_t *batch, int status)
{
    for (s_op_t *op = batch; op; op = op->next) {
        s_op_reset(op);
        op->rc = status;
    }
}

//  --------------------------------------------------------------------------
//  Writer: apply a batch of ops in one durable txn; grow the map and rerun
//  on MAP_FULL; when an op breaks the txn, rerun the ops one per txn so
//  the others still land. Sets every op's rc.

static void
s_batch_apply(ms_store_t *self, s_op_t *batch, size_t n_ops)
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
            s_batch_fail(batch, s_mdb(rc, "mdb_txn_begin (write)"));
            return;
        }
        // Each op checks before it writes, so a refused op (not found,
        // conflict, invalid) leaves no trace and the txn goes on. Any
        // other failure may leave the txn half-done: abort it.
        int broken = MS_OK;
        for (s_op_t *op = batch; op; op = op->next) {
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
                broken = s_mdb(rc, "mdb_txn_commit");
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
            for (s_op_t *op = batch, *next; op; op = next) {
                next = op->next;
                op->next = NULL;
                s_batch_apply(self, op, 1);
                op->next = next;
            }
            return;
        }
        pthread_mutex_lock(&self->gate_mu);
        self->stats.n_commits++;
        self->stats.n_writes += n_ops;
        if (n_ops > self->stats.max_batch)
            self->stats.max_batch = n_ops;
        if (self->n_reads > 0)
            self->stats.n_commits_read_open++;
        pthread_mutex_unlock(&self->gate_mu);
        return;
    }
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
        s_op_t *batch = self->q_head, *last = batch;
        size_t n = 1;
        while (last->next && n < self->max_batch) {
            last = last->next;
            n++;
        }
        self->q_head = last->next;
        if (!self->q_head)
            self->q_tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&self->q_mu);

        s_batch_apply(self, batch, n);

        pthread_mutex_lock(&self->q_mu);
        for (s_op_t *op = batch, *next; op; op = next) {
            next = op->next;
            op->done = true;
        }
        pthread_cond_broadcast(&self->done_cv);
    }
    pthread_mutex_unlock(&self->q_mu);
    return NULL;
}

//  --------------------------------------------------------------------------
//  Queue OP for the writer and wait until it is durable (or refused).

static int
s_submit(ms_store_t *self, s_op_t *op)
{
    if (self->read_only)
        return MS_ERR_UNSUPPORTED;
    if (s_tls_slot(self, false)) {
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
//  True when TEXT[0..len) parses as a JSON object.

static bool
s_json_object(const char *text, size_t len)
{
    json_error_t err;
    json_t *json = json_loadb(text, len, 0, &err);
    bool ok = json_is_object(json);
    json_decref(json);
    return ok;
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
        return ms_diag_set_code(diag, s_mdb(rc, "open"), dir,
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
               {"results", &self->db_results}};
    for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
        rc = mdb_dbi_open(txn, dbs[i].name, flags, dbs[i].dbi);
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
            return ms_diag_set_code(diag, s_mdb(rc, "meta"), dir,
                                    "cannot write the store meta: %s",
                                    mdb_strerror(rc));
        }
    } else {
        mdb_txn_abort(txn);
        return ms_diag_set_code(diag, MS_ERR_STORE, dir,
                                "store meta has no valid incarnation");
    }
    rc = mdb_txn_commit(txn); // keeps the dbi handles
    if (rc != 0)
        return ms_diag_set_code(diag, s_mdb(rc, "open"), dir,
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
        free(data);
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
    pthread_mutex_init(&self->gate_mu, NULL);
    pthread_cond_init(&self->gate_cv, NULL);
    pthread_mutex_init(&self->q_mu, NULL);
    pthread_cond_init(&self->q_cv, NULL);
    pthread_cond_init(&self->done_cv, NULL);

    int status = MS_OK;
    int rc = mdb_env_create(&self->env);
    if (rc == 0)
        rc = mdb_env_set_maxdbs(self->env, 16);
    if (rc == 0)
        rc = mdb_env_set_mapsize(self->env, (size_t) o.map_size_bytes);
    if (rc == 0)
        rc = mdb_env_set_maxreaders(self->env, o.max_readers);
    if (rc == 0)
        rc = mdb_env_open(self->env, dir,
                          MDB_NOTLS | (o.read_only ? MDB_RDONLY : 0), 0600);
    if (rc != 0) {
        status = ms_diag_set_code(diag, s_mdb(rc, "mdb_env_open"), dir,
                                  "cannot open the LMDB environment: %s",
                                  mdb_strerror(rc));
        goto fail;
    }
    if (!o.skip_reader_check)
        s_reader_check(self);
    status = s_open_dbs(self, dir, diag);
    if (status != MS_OK)
        goto fail;
    MDB_envinfo info;
    mdb_env_info(self->env, &info);
    self->stats.map_size_bytes = info.me_mapsize;
    if (!self->read_only) {
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
//  Copy the counters.

void
ms_store_stats(ms_store_t *self, ms_store_stats_t *out)
{
    pthread_mutex_lock(&self->gate_mu);
    *out = self->stats;
    pthread_mutex_unlock(&self->gate_mu);
}

//  --------------------------------------------------------------------------
//  Compare two 32-byte ids (qsort).

static int
s_id_cmp(const void *a, const void *b)
{
    return memcmp(a, b, S_ID);
}

//  --------------------------------------------------------------------------
//  True when two tasks share an id (or memory runs out: refuse too).

static bool
s_has_duplicate_ids(const ms_store_task_input_t *tasks, size_t n)
{
    if (n < 2)
        return false;
    uint8_t *ids = malloc(n * S_ID);
    if (!ids)
        return true;
    for (size_t i = 0; i < n; i++)
        memcpy(ids + i * S_ID, tasks[i].task_id, S_ID);
    qsort(ids, n, S_ID, s_id_cmp);
    bool dup = false;
    for (size_t i = 1; i < n && !dup; i++)
        dup = memcmp(ids + (i - 1) * S_ID, ids + i * S_ID, S_ID) == 0;
    free(ids);
    return dup;
}

//  --------------------------------------------------------------------------
//  Store a sweep and its tasks in one txn.

int
ms_store_put_sweep(ms_store_t *self, const uint8_t sweep_id[MS_STORE_ID_BYTES],
                   const char *spec_json, size_t spec_len, int32_t priority,
                   const ms_store_task_input_t *tasks, size_t n_tasks,
                   bool *existed)
{
    if (existed)
        *existed = false;
    if (!spec_json || spec_len == 0 || (n_tasks > 0 && !tasks) ||
        n_tasks >= UINT32_MAX || !s_json_object(spec_json, spec_len))
        return MS_ERR_INVALID;
    for (size_t i = 0; i < n_tasks; i++)
        if (!tasks[i].task_id || !tasks[i].config_json ||
            tasks[i].config_len >= UINT32_MAX / 2 ||
            !s_json_object(tasks[i].config_json, tasks[i].config_len))
            return MS_ERR_INVALID;
    if (s_has_duplicate_ids(tasks, n_tasks))
        return MS_ERR_INVALID;
    s_op_t op = {.kind = S_OP_PUT_SWEEP,
                 .id = sweep_id,
                 .text = spec_json,
                 .len = spec_len,
                 .value = priority,
                 .tasks = tasks,
                 .n_tasks = n_tasks};
    int rc = s_submit(self, &op);
    if (rc == MS_OK && existed)
        *existed = op.existed;
    return rc;
}

//  --------------------------------------------------------------------------
//  Fill a borrowed sweep view from its records.

static int
s_sweep_view(ms_store_t *self, MDB_txn *txn, const uint8_t *id,
             const s_sweep_hdr_t *sh, ms_store_sweep_t *sweep)
{
    MDB_val k = {S_ID, (void *) id}, v;
    int rc = mdb_get(txn, self->db_sweeps, &k, &v);
    if (rc != 0)
        return s_mdb(rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc, "get sweep");
    if (v.mv_size == 0)
        return s_mdb(MDB_CORRUPTED, "sweep record");
    memcpy(sweep->sweep_id, id, S_ID);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_sweep_hdr_t sh;
    ms_store_sweep_t view;
    rc = s_sweep_hdr_get(self, txn, sweep_id, &sh);
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
    s_read_end(self, txn);
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
//  Call fn for every sweep.

int
ms_store_list_sweeps(ms_store_t *self, ms_store_sweep_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_cursor *cur;
    int status = MS_OK;
    rc = mdb_cursor_open(txn, self->db_sweep_meta, &cur);
    if (rc != 0) {
        s_read_end(self, txn);
        return s_mdb(rc, "cursor sweep_meta");
    }
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        s_sweep_hdr_t sh;
        ms_store_sweep_t view;
        if (k.mv_size != S_ID || v.mv_size != sizeof sh) {
            status = s_mdb(MDB_CORRUPTED, "sweep_meta record");
            break;
        }
        memcpy(&sh, v.mv_data, sizeof sh);
        status = s_sweep_view(self, txn, k.mv_data, &sh, &view);
        if (status == MS_OK)
            status = fn(arg, &view);
        if (status != MS_OK)
            break;
    }
    if (status == MS_OK && rc != MDB_NOTFOUND)
        status = s_mdb(rc, "cursor sweep_meta");
    mdb_cursor_close(cur);
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Set a sweep's state.

int
ms_store_set_sweep_state(ms_store_t *self,
                         const uint8_t sweep_id[MS_STORE_ID_BYTES],
                         ms_sweep_state_t state)
{
    if ((unsigned) state >= MS_SWEEP_N_STATES)
        return MS_ERR_INVALID;
    s_op_t op = {.kind = S_OP_SWEEP_STATE, .id = sweep_id, .value = state};
    return s_submit(self, &op);
}

//  --------------------------------------------------------------------------
//  Set a sweep's priority.

int
ms_store_set_sweep_priority(ms_store_t *self,
                            const uint8_t sweep_id[MS_STORE_ID_BYTES],
                            int32_t priority)
{
    s_op_t op = {
        .kind = S_OP_SWEEP_PRIORITY, .id = sweep_id, .value = priority};
    return s_submit(self, &op);
}

//  --------------------------------------------------------------------------
//  Get one task (owned copy).

int
ms_store_get_task(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                  ms_store_task_t **out)
{
    *out = NULL;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val k = {S_ID, (void *) task_id}, v;
    rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc == 0) {
        s_task_hdr_t hdr;
        ms_store_task_t view;
        rc = s_task_decode(task_id, &v, &hdr, &view);
        if (rc == MS_OK) {
            *out = s_task_dup(&view);
            if (!*out)
                rc = MS_ERR_NOMEM;
        } else {
            rc = s_mdb(MDB_CORRUPTED, "task record");
        }
    } else {
        rc = s_mdb(rc, "get task");
    }
    s_read_end(self, txn);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_sweep_hdr_t sh;
    int status = s_sweep_hdr_get(self, txn, sweep_id, &sh);
    MDB_cursor *cur = NULL;
    if (status == MS_OK) {
        rc = mdb_cursor_open(txn, self->db_sweep_tasks, &cur);
        if (rc != 0)
            status = s_mdb(rc, "cursor sweep_tasks");
    }
    if (status == MS_OK) {
        MDB_val k = {S_ID, (void *) sweep_id}, v;
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size != S_ID + 4 || memcmp(k.mv_data, sweep_id, S_ID))
                break;
            MDB_val tk = v, tv;
            s_task_hdr_t hdr;
            ms_store_task_t view;
            rc = mdb_get(txn, self->db_tasks, &tk, &tv);
            if (rc != 0 || tk.mv_size != S_ID ||
                s_task_decode(tk.mv_data, &tv, &hdr, &view) != MS_OK) {
                status = s_mdb(rc ? rc : MDB_CORRUPTED, "task record");
                break;
            }
            status = fn(arg, &view);
            if (status != MS_OK)
                break;
        }
        if (status == MS_OK && rc != 0 && rc != MDB_NOTFOUND)
            status = s_mdb(rc, "cursor sweep_tasks");
        mdb_cursor_close(cur);
    }
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Claim the next pending task for a node.

int
ms_store_claim_next(ms_store_t *self, const uint8_t node_id[MS_STORE_ID_BYTES],
                    ms_store_task_t **out)
{
    if (out)
        *out = NULL;
    s_op_t op = {.kind = S_OP_CLAIM_NEXT, .node = node_id};
    int rc = s_submit(self, &op);
    if (rc == MS_OK && out)
        *out = op.task;
    else
        ms_store_task_destroy(&op.task);
    return rc;
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
    s_op_t op = {.kind = S_OP_TASK_STATE,
                 .id = task_id,
                 .node = node_id,
                 .text = reason,
                 .value = state};
    return s_submit(self, &op);
}

//  --------------------------------------------------------------------------
//  Reset a node's claimed/running tasks to pending.

int
ms_store_reset_claims(ms_store_t *self,
                      const uint8_t node_id[MS_STORE_ID_BYTES], size_t *n_reset)
{
    if (n_reset)
        *n_reset = 0;
    s_op_t op = {.kind = S_OP_RESET_CLAIMS, .node = node_id};
    int rc = s_submit(self, &op);
    if (rc == MS_OK && n_reset)
        *n_reset = op.count;
    return rc;
}

//  --------------------------------------------------------------------------
//  Store a result row and mark the task done.

int
ms_store_put_result(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                    const uint8_t node_id[MS_STORE_ID_BYTES],
                    const char *row_json, size_t row_len)
{
    if (!row_json || !s_json_object(row_json, row_len))
        return MS_ERR_INVALID;
    s_op_t op = {.kind = S_OP_PUT_RESULT,
                 .id = task_id,
                 .node = node_id,
                 .text = row_json,
                 .len = row_len};
    return s_submit(self, &op);
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
    MDB_val k = {S_ID, (void *) task_id}, v;
    int rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 2 * S_ID || memcmp(k.mv_data, task_id, S_ID))
            break;
        if (v.mv_size == 0)
            return s_mdb(MDB_CORRUPTED, "result row");
        (*n_rows)++;
        int status = fn(arg, v.mv_data, v.mv_size - 1);
        if (status != 0)
            return status;
    }
    return rc == 0 || rc == MDB_NOTFOUND ? MS_OK : s_mdb(rc, "cursor");
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_sweep_hdr_t sh;
    int status = s_sweep_hdr_get(self, txn, sweep_id, &sh);
    MDB_cursor *tcur = NULL, *rcur = NULL;
    if (status == MS_OK) {
        rc = mdb_cursor_open(txn, self->db_sweep_tasks, &tcur);
        if (rc == 0)
            rc = mdb_cursor_open(txn, self->db_results, &rcur);
        if (rc != 0)
            status = s_mdb(rc, "cursor");
    }
    if (status == MS_OK) {
        uint8_t start[S_ID + 4];
        memcpy(start, sweep_id, S_ID);
        s_put_be32(start + S_ID, first_index);
        MDB_val k = {sizeof start, start}, v;
        size_t n_rows = 0;
        for (rc = mdb_cursor_get(tcur, &k, &v, MDB_SET_RANGE); rc == 0;
             rc = mdb_cursor_get(tcur, &k, &v, MDB_NEXT)) {
            if (k.mv_size != S_ID + 4 || memcmp(k.mv_data, sweep_id, S_ID))
                break;
            if (v.mv_size != S_ID) {
                status = s_mdb(MDB_CORRUPTED, "sweep_tasks value");
                break;
            }
            uint32_t index = s_get_be32((const uint8_t *) k.mv_data + S_ID);
            status = s_task_rows(self, txn, rcur, v.mv_data, fn, arg, &n_rows);
            if (status != MS_OK)
                break;
            if (max_rows > 0 && n_rows >= max_rows) {
                if (next_index && (uint64_t) index + 1 < sh.n_tasks)
                    *next_index = index + 1;
                break;
            }
        }
        if (status == MS_OK && rc != 0 && rc != MDB_NOTFOUND)
            status = s_mdb(rc, "cursor sweep_tasks");
    }
    if (rcur)
        mdb_cursor_close(rcur);
    if (tcur)
        mdb_cursor_close(tcur);
    s_read_end(self, txn);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_cursor *cur;
    size_t n_rows = 0;
    rc = mdb_cursor_open(txn, self->db_results, &cur);
    int status = rc == 0
                     ? s_task_rows(self, txn, cur, task_id, fn, arg, &n_rows)
                     : s_mdb(rc, "cursor results");
    if (rc == 0)
        mdb_cursor_close(cur);
    s_read_end(self, txn);
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
