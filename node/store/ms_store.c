/*  =========================================================================
    ms_store - the node's LMDB store: sweeps, tasks and their states, results

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Implements DESIGN.md "Store (LMDB)" and the record log of docs/POOL.md
    "Records".

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

    Records. The pool's record log (records, blocks, vectors, evidence)
    and the tables derived from it are described in the second prose
    block, "Record log and derived tables", further down: every derived
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

#include "ms_clock.h"
#include "ms_claim_rank.h"
#include "ms_hash.h"
#include "ms_ring.h"
#include "ms_store_payload.h"
#include "ms_verdict.h"
#include "ms_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <lmdb.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define S_ID MS_STORE_ID_BYTES
#define S_SCHEMA 1u
#define S_MAX_GROWS 48 // doublings tried for one batch
#define S_GEN_SLOTS 64 // sweep generation counters (a power of two <= 64)
#define S_GEN_SLOT(id) ((id)[0] & (S_GEN_SLOTS - 1))
#define S_VC_MAX 4096 // changed verdicts queued for the node's events
#define S_NR_MAX 4096 // new ok results queued for re-evaluation sampling
// Page cache warmed ahead of the data file's last page (see s_warm_ahead)
#define S_WARM_AHEAD_BYTES (64u << 20)
#define S_WARM_READ_BYTES (1u << 20) // one pread of the warming

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
    uint16_t replicas;                 // result slots per task (0: 1)
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
    uint8_t traits;         // S_TT_*, computed once when the sweep is
                            // applied (0 in rows of older stores)
    uint8_t reserved;       // zero
    uint32_t index;         // position in the sweep
    uint32_t attempts;      // claims of the issue-2 scheduler (now 0)
    uint32_t config_len;    // bytes of config JSON, without NUL
    uint32_t error_len;     // bytes of last error, without NUL
    uint32_t reserved2;     // zero
    int64_t updated_at_ms;  // wall clock, ms since the epoch
    uint8_t sweep_id[S_ID]; // owning sweep
    uint8_t holder[S_ID];   // node running it, zero when none
} s_task_hdr_t;

// Task traits (s_task_hdr_t.traits): what the verdict and re-evaluation
// sampling need of a task's config, read once from it at apply.
#define S_TT_KNOWN 1      // the bits below are set (else: read the config)
#define S_TT_NOOP 2       // kind noop: trains nothing, has no weights
#define S_TT_REGRESSION 4 // loss mse: the verdict compares losses only

typedef enum {
    S_OP_PUT_SWEEP, // a sweep record's apply (s_apply_sweep, not queued)
    S_OP_TASK_STATE,
    S_OP_RESET_CLAIMS,
    S_OP_APPEND,
    S_OP_MERGE,
    S_OP_MEMBERS,
    S_OP_PUT_ITEM,
    S_OP_OPERATOR,
    S_OP_POOL_OPS,
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
    bool done;                          // set by the writer when rc is final
    bool chained;          // the next op is of the same call: same commit
    int64_t created_at_ms; // put sweep: 0 = now
    // Record log (append, merge).
    uint64_t incarnation;          // merge: the block's incarnation
    uint64_t first_seq;            // merge: the block's first seq
    size_t n_recs;                 // records in the block
    const uint32_t *kinds;         // n_recs kinds
    const void *const *payloads;   // n_recs payloads
    const size_t *lens;            // n_recs payload lengths
    const uint8_t *sig;            // merge: block signature or NULL
    size_t sig_len;                // bytes in sig
    bool explicit_block;           // append: a block of its own
    ms_record_key_t *keys_out;     // append: n_recs keys, or NULL
    ms_store_merge_result_t merge; // merge: the outcome
    // append: per record, the decoded inner payload of a fragmented
    // record at its last fragment (borrowed), else NULL; or NULL.
    ms_store_payload_t *const *pre;
    // put item: the item (id = digest, text/len = bytes), a revocation's
    // subject (node) and cut, whether it was new (existed false)
    const ms_store_cut_t *cut;
} s_op_t;

// The block being built by the current write txn from appends of one
// origin (group commit: one block per origin per commit, up to 64).
typedef struct {
    bool open;            // a block can still be extended
    uint8_t origin[S_ID]; // its origin
    uint64_t incarnation; // its incarnation
    uint64_t first_seq;   // its first seq
    uint32_t n;           // records in it so far
} s_open_block_t;

struct ms_store {
    MDB_env *env;    // the environment
    MDB_dbi db_meta; // see the layout above
    MDB_dbi db_sweeps;
    MDB_dbi db_sweep_meta;
    MDB_dbi db_sweep_tasks;
    MDB_dbi db_tasks;
    MDB_dbi db_task_state;
    MDB_dbi db_results;
    MDB_dbi db_records; // record log: see "Record log" below
    MDB_dbi db_blocks;
    MDB_dbi db_vectors;
    MDB_dbi db_evidence;
    MDB_dbi db_equivocators;
    MDB_dbi db_controls;
    MDB_dbi db_claims;
    MDB_dbi db_result_meta;
    MDB_dbi db_failures;
    MDB_dbi db_datasets;
    MDB_dbi db_items;          // authority items: digest -> item bytes
    MDB_dbi db_cuts;           // revoked origins: origin -> cut (s_cut_t)
    MDB_dbi db_commits;        // commit then reveal: see "Record log"
    bool has_commits;          // db_commits exists (an old store opened
                               // read-only may lack it)
    bool has_cuts;             // db_items and db_cuts exist (an old store
                               // opened read-only may lack them)
    MDB_dbi db_verdicts;       // verification (see "Verdicts in the store")
    MDB_dbi db_verdict_nodes;  //
    MDB_dbi db_operators;      //
    MDB_dbi db_sweep_verify;   //
    bool has_verdicts;         // those exist (an old store read-only: no)
    MDB_dbi db_reevals;        // re-evaluations: see "Verdicts in the store"
    bool has_reevals;          // db_reevals exists (old read-only: no)
    pthread_mutex_t nr_mu;     // guards the new-result queue
    ms_ring_t *nr;             // S_NR_MAX ms_store_new_result_t applied,
                               // for sampling
    uint32_t n_pool_operators; // verdicts; writer thread only
    int v_depth;               // writer thread only: quarantine re-derive
    uint64_t v_evals;          // writer thread only: s_verdict_derive runs
    pthread_mutex_t vc_mu;     // guards the changed-verdict queue
    ms_ring_t *vc_ids;         // S_VC_MAX task ids whose verdict changed
    uint64_t vc_dropped;       // dropped since the last take
    uint32_t n_members;        // failure rule; writer thread only
    s_open_block_t block;      // writer thread only: current txn's block
    bool txn_vec_changed;      // writer thread only: txn moved a vector
    uint64_t gen_dirty;        // writer thread only: sweep slots this txn
                               // touched (bit = S_GEN_SLOT(sweep id))
    bool gen_dirty_all;        // writer thread only: every sweep touched
    uint64_t gen_slots[S_GEN_SLOTS]; // gate_mu: see "Sweep generations"
    uint64_t gen_all;                // gate_mu: bumped when every sweep changes
    size_t gen_txnid;                // gate_mu: last txn id this process wrote
    uint64_t vec_gen;                // gate_mu: bumped after vector commits
    uint64_t digest_gen;             // gate_mu: vec_gen of the cached digest
    bool digest_valid;               // gate_mu: cache filled
    uint8_t digest[32];              // gate_mu: cached vector digest
    uint64_t digest_n;               // gate_mu: entries in it
    bool read_only;                  // opened with opts.read_only
    unsigned max_batch;              // writes per commit
    int data_fd;                     // writer: LMDB's data file (-1: unknown)
    uint64_t warm_end;               // writer: bytes of data.mdb warmed
    bool warm_failed;                // writer: warming gave up (logged once)
    uint64_t incarnation;            // 64 random bits, made at creation

    pthread_mutex_t role_mu;    // guards the no-submit list below
    uint8_t (*no_submit)[S_ID]; // origins lacking the `submit` role
    size_t n_no_submit;         // entries in no_submit
    size_t cap_no_submit;       // allocated
    uint64_t n_ignored_no_role; // their sweep records, not applied

    ms_store_sign_fn sign_fn; // signs appended blocks (writer), or NULL
    void *sign_arg;           // its argument
    bool unchecked_appends;   // tests: keep own undecodable records

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
    return ms_clock_wall_ms();
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
//  Scans. Every read of a range of a table is the same loop: a cursor at
//  the first key with a prefix (MDB_SET_RANGE; MDB_FIRST for the whole
//  table), MDB_NEXT while the key still has the prefix, and the cursor's
//  own error told apart from the end. Written once here:
//
//      s_scan_t it;
//      int status = s_scan_open(&it, txn, dbi, prefix, prefix_len, "what");
//      while (status == MS_OK && s_scan_next(&it)) {
//          ... it.k, it.v (valid until the next call) ...
//      }
//      status = s_scan_close(&it, status);
//
//  A body may break out of the loop, or set status to stop it with that
//  error; s_scan_close keeps the first error and closes the cursor (a
//  zeroed s_scan_t, never opened, closes as nothing). The prefix is
//  borrowed for the scan's life.

typedef struct {
    MDB_cursor *cur;    // NULL once closed (or never opened)
    MDB_val k, v;       // the current entry
    const void *prefix; // keys must start with it
    size_t prefix_len;  // 0: the whole table
    const void *from;   // the first key looked at (default: the prefix)
    size_t from_len;    // its length
    bool started;       // the first get was made
    bool borrowed;      // the cursor is the caller's: left open
    int mrc;            // the last mdb_cursor_get's return
    const char *what;   // the table, for messages ("cursor results")
} s_scan_t;

static int
s_scan_open(s_scan_t *it, MDB_txn *txn, MDB_dbi dbi, const void *prefix,
            size_t prefix_len, const char *what)
{
    memset(it, 0, sizeof *it);
    it->prefix = it->from = prefix;
    it->prefix_len = it->from_len = prefix_len;
    it->what = what;
    int rc = mdb_cursor_open(txn, dbi, &it->cur);
    if (rc != 0) {
        it->cur = NULL;
        it->mrc = MDB_NOTFOUND; // nothing to report at close
        return s_mdb(rc, what);
    }
    return MS_OK;
}

//  A scan on the caller's open cursor (one cursor for many scans of a
//  table in one txn): as s_scan_open, but s_scan_close leaves it open.
static void
s_scan_use(s_scan_t *it, MDB_cursor *cur, const void *prefix, size_t prefix_len,
           const char *what)
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
static void
s_scan_from(s_scan_t *it, const void *from, size_t from_len)
{
    it->from = from;
    it->from_len = from_len;
}

//  Move to the next entry with the prefix: true when there is one.
static bool
s_scan_next(s_scan_t *it)
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
static int
s_scan_close(s_scan_t *it, int status)
{
    if (status == MS_OK && it->mrc != 0 && it->mrc != MDB_NOTFOUND)
        status = s_mdb(it->mrc, it->what);
    if (it->cur && !it->borrowed)
        mdb_cursor_close(it->cur);
    it->cur = NULL;
    return status;
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
//  Read task TASK_ID in TXN into *HDR and *VIEW (borrowed from the txn).
//  MS_ERR_NOTFOUND when the store has no such task (yet), MS_ERR_STORE
//  when its record is damaged or LMDB fails.

static int
s_task_read(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
            s_task_hdr_t *hdr, ms_store_task_t *view)
{
    MDB_val k = {S_ID, (void *) task_id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc != 0)
        return s_mdb(rc, "get task");
    if (s_task_decode(task_id, &v, hdr, view) != MS_OK)
        return s_mdb(MDB_CORRUPTED, "task record");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The traits (S_TT_*) of a canonical task config: its top-level `kind`
//  and `loss` members. The one reading of them; the store calls it when
//  a sweep is applied, and for rows of older stores (traits 0).

static uint8_t
s_task_traits_parse(const char *config_json, size_t config_len)
{
    uint8_t traits = S_TT_KNOWN;
    json_t *cfg = json_loadb(config_json, config_len, 0, NULL);
    const char *kind = json_string_value(json_object_get(cfg, "kind"));
    const char *loss = json_string_value(json_object_get(cfg, "loss"));
    if (kind && strcmp(kind, "noop") == 0)
        traits |= S_TT_NOOP;
    if (loss && strcmp(loss, "mse") == 0)
        traits |= S_TT_REGRESSION;
    json_decref(cfg);
    return traits;
}

//  --------------------------------------------------------------------------
//  The traits of a decoded task (HDR and its VIEW from s_task_decode).

static uint8_t
s_task_traits(const s_task_hdr_t *hdr, const ms_store_task_t *view)
{
    if (hdr->traits & S_TT_KNOWN)
        return hdr->traits;
    return s_task_traits_parse(view->config_json, view->config_len);
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
    self->gen_dirty |= (uint64_t) 1 << S_GEN_SLOT(sweep_id);
}

//  --------------------------------------------------------------------------
//  Note that the current write txn touches TASK_ID's sweep (every sweep
//  when the task is not known).

static void
s_gen_touch_task(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id)
{
    MDB_val k = {S_ID, (void *) task_id}, v;
    if (mdb_get(txn, self->db_tasks, &k, &v) == 0 &&
        v.mv_size >= sizeof(s_task_hdr_t))
        s_gen_touch_sweep(self, (const uint8_t *) v.mv_data +
                                    offsetof(s_task_hdr_t, sweep_id));
    else
        self->gen_dirty_all = true;
}

//  --------------------------------------------------------------------------
//  Move a task (record HDR, raw value VAL) to NEW_STATE inside a write
//  txn: rewrite the record, move its task_state key, update the sweep's
//  counts. HOLDER (or NULL: zero) and REASON (NULL: keep) as given.

static int
s_task_move(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
            const MDB_val *val, const s_task_hdr_t *hdr, int new_state,
            const uint8_t *holder, const char *reason)
{
    s_task_hdr_t nh = *hdr;
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
    s_gen_touch_sweep(self, op->id);

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
    int64_t created = op->created_at_ms ? op->created_at_ms : now;
    for (size_t i = 0; i < op->n_tasks; i++) {
        const ms_store_task_input_t *in = &op->tasks[i];
        s_task_hdr_t th = {
            .version = 1,
            .state = MS_TASK_PENDING,
            .traits = s_task_traits_parse(in->config_json, in->config_len),
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
                        .created_at_ms = created};
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
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_task_state, prefix, prefix_len,
                             "cursor task_state");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.v.mv_size != S_ID) {
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
        memcpy(*ids + *n * S_ID, it.v.mv_data, S_ID);
        (*n)++;
    }
    status = s_scan_close(&it, status);
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
//  Writer: move one task to a state given by the caller (claimed and
//  running keep the current holder unless a node is given).

static int
s_op_task_state(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    MDB_val k = {S_ID, (void *) op->id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc != 0)
        return s_mdb(rc, "get task");
    s_task_hdr_t hdr;
    if (s_task_decode(op->id, &v, &hdr, NULL) != MS_OK)
        return s_mdb(MDB_CORRUPTED, "task record");
    if (hdr.state == MS_TASK_DONE)
        return MS_ERR_CONFLICT;
    bool keep = op->value == MS_TASK_CLAIMED || op->value == MS_TASK_RUNNING;
    uint8_t holder[S_ID];
    memcpy(holder, op->node ? op->node : hdr.holder, S_ID);
    return s_written(s_task_move(self, txn, op->id, &v, &hdr, op->value,
                                 keep ? holder : NULL, op->text));
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
                             NULL);
            if (rc == MS_OK)
                op->count++;
        }
        free(ids);
        if (rc != MS_OK)
            return s_written(rc);
    }
    return MS_OK;
}

static int s_op_append(ms_store_t *self, MDB_txn *txn, s_op_t *op);
static int s_op_merge(ms_store_t *self, MDB_txn *txn, s_op_t *op);
static int s_op_members(ms_store_t *self, MDB_txn *txn, s_op_t *op);
static int s_op_put_item(ms_store_t *self, MDB_txn *txn, s_op_t *op);

static int s_op_operator(ms_store_t *self, MDB_txn *txn, s_op_t *op);
static int s_op_pool_ops(ms_store_t *self, MDB_txn *txn, s_op_t *op);

//  --------------------------------------------------------------------------
//  Writer: apply one op in TXN.

static int
s_op_apply(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    switch (op->kind) {
    case S_OP_PUT_SWEEP: // applied inside s_apply_sweep, never queued
        break;
    case S_OP_TASK_STATE:
        return s_op_task_state(self, txn, op);
    case S_OP_RESET_CLAIMS:
        return s_op_reset_claims(self, txn, op);
    case S_OP_APPEND:
        return s_op_append(self, txn, op);
    case S_OP_MERGE:
        return s_op_merge(self, txn, op);
    case S_OP_MEMBERS:
        return s_op_members(self, txn, op);
    case S_OP_PUT_ITEM:
        return s_op_put_item(self, txn, op);
    case S_OP_OPERATOR:
        return s_op_operator(self, txn, op);
    case S_OP_POOL_OPS:
        return s_op_pool_ops(self, txn, op);
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
        self->block.open = false;
        self->txn_vec_changed = false;
        self->gen_dirty = 0;
        self->gen_dirty_all = false;
        size_t txnid = mdb_txn_id(txn);
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
        for (unsigned b = 0; b < S_GEN_SLOTS; b++)
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
        s_op_t *batch = self->q_head, *last = batch;
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
        for (s_op_t *op = batch; op; op = op->next) {
            bytes += op->len;
            for (size_t i = 0; op->lens && i < op->n_recs; i++)
                bytes += op->lens[i];
        }
        if (bytes > (1u << 20))
            s_warm_ahead(self, bytes > (32u << 20) ? (1ull << 30) : 32 * bytes);

        s_batch_apply(self, batch, n);

        pthread_mutex_lock(&self->q_mu);
        for (s_op_t *op = batch, *next; op; op = next) {
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

static int s_verdict_counts_init(ms_store_t *self, MDB_txn *txn);

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
            return ms_diag_set_code(diag, s_mdb(rc, "meta"), dir,
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
        rc = s_verdict_counts_init(self, txn);
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
    self->vc_ids = ms_ring_new(S_ID, S_VC_MAX);
    self->nr = ms_ring_new(sizeof(ms_store_new_result_t), S_NR_MAX);
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
        status = ms_diag_set_code(diag, s_mdb(rc, "mdb_env_open"), dir,
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
            ? 1 + self->gen_all + self->gen_slots[S_GEN_SLOT(sweep_id)]
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
    if (s_read_begin(self, &txn) == MS_OK) {
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
        s_read_end(self, txn);
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
//  The payload of a dataset record, by dataset hash.

int
ms_store_get_dataset(ms_store_t *self, const uint8_t hash[MS_STORE_ID_BYTES],
                     uint8_t **payload, size_t *len)
{
    *payload = NULL;
    *len = 0;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val k = {S_ID, (void *) hash}, v;
    int mrc = mdb_get(txn, self->db_datasets, &k, &v);
    if (mrc == MDB_NOTFOUND)
        rc = MS_ERR_NOTFOUND;
    else if (mrc != 0)
        rc = s_mdb(mrc, "get dataset");
    else if (!(*payload = malloc(v.mv_size ? v.mv_size : 1)))
        rc = MS_ERR_NOMEM;
    else {
        memcpy(*payload, v.mv_data, v.mv_size);
        *len = v.mv_size;
    }
    s_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Call fn for every dataset record.

int
ms_store_list_datasets(ms_store_t *self, ms_store_dataset_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_scan_t it;
    int status =
        s_scan_open(&it, txn, self->db_datasets, NULL, 0, "cursor datasets");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID)
            continue; // not a dataset hash: not ours to show
        status = fn(arg, it.k.mv_data, it.v.mv_data, it.v.mv_size);
    }
    status = s_scan_close(&it, status);
    s_read_end(self, txn);
    return status;
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
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_sweep_meta, NULL, 0,
                             "cursor sweep_meta");
    while (status == MS_OK && s_scan_next(&it)) {
        s_sweep_hdr_t sh;
        ms_store_sweep_t view;
        if (it.k.mv_size != S_ID || it.v.mv_size != sizeof sh) {
            status = s_mdb(MDB_CORRUPTED, "sweep_meta record");
            break;
        }
        memcpy(&sh, it.v.mv_data, sizeof sh);
        status = s_sweep_view(self, txn, it.k.mv_data, &sh, &view);
        if (status == MS_OK)
            status = fn(arg, &view);
    }
    status = s_scan_close(&it, status);
    s_read_end(self, txn);
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
    s_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = s_scan_open(&it, txn, self->db_sweep_tasks, sweep_id, S_ID,
                             "cursor sweep_tasks");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID + 4)
            break;
        MDB_val tk = it.v, tv;
        s_task_hdr_t hdr;
        ms_store_task_t view;
        int mrc = mdb_get(txn, self->db_tasks, &tk, &tv);
        if (mrc != 0 || tk.mv_size != S_ID ||
            s_task_decode(tk.mv_data, &tv, &hdr, &view) != MS_OK) {
            status = s_mdb(mrc ? mrc : MDB_CORRUPTED, "task record");
            break;
        }
        status = fn(arg, &view);
    }
    status = s_scan_close(&it, status);
    s_read_end(self, txn);
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
//  Call fn for each result row of task TASK_ID (inside TXN); *n_rows
//  counts them.

static int
s_task_rows(ms_store_t *self, MDB_txn *txn, MDB_cursor *cur,
            const uint8_t *task_id, ms_store_row_fn fn, void *arg,
            size_t *n_rows)
{
    (void) self;
    (void) txn;
    s_scan_t it;
    s_scan_use(&it, cur, task_id, S_ID, "cursor results");
    int status = MS_OK;
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != 2 * S_ID)
            break;
        if (it.v.mv_size == 0) {
            status = s_mdb(MDB_CORRUPTED, "result row");
            break;
        }
        (*n_rows)++;
        status = fn(arg, it.v.mv_data, it.v.mv_size - 1);
    }
    return s_scan_close(&it, status);
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
    MDB_cursor *rcur = NULL;
    if (status == MS_OK) {
        rc = mdb_cursor_open(txn, self->db_results, &rcur);
        if (rc != 0)
            status = s_mdb(rc, "cursor results");
    }
    uint8_t start[S_ID + 4];
    memcpy(start, sweep_id, S_ID);
    s_put_be32(start + S_ID, first_index);
    s_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = s_scan_open(&it, txn, self->db_sweep_tasks, sweep_id, S_ID,
                             "cursor sweep_tasks");
    s_scan_from(&it, start, sizeof start);
    size_t n_rows = 0;
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID + 4)
            break;
        if (it.v.mv_size != S_ID) {
            status = s_mdb(MDB_CORRUPTED, "sweep_tasks value");
            break;
        }
        uint32_t index = s_get_be32((const uint8_t *) it.k.mv_data + S_ID);
        status = s_task_rows(self, txn, rcur, it.v.mv_data, fn, arg, &n_rows);
        if (status == MS_OK && max_rows > 0 && n_rows >= max_rows) {
            if (next_index && (uint64_t) index + 1 < sh.n_tasks)
                *next_index = index + 1;
            break;
        }
    }
    status = s_scan_close(&it, status);
    if (rcur)
        mdb_cursor_close(rcur);
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

/*  =========================================================================
    Record log and derived tables (docs/POOL.md "Records")

    Layout added to the store (keys big-endian so LMDB's byte order is
    numeric order; K = origin (32) || incarnation (8) || seq (8)):

      records        K -> kind (u32) || payload
      blocks         origin || incarnation || first seq -> n (u32) ||
                     sig_len (u32) || signature
      vectors        origin || incarnation -> highest contiguous seq (u64)
      evidence       K || record hash -> kind || payload (both records of
                     an equivocation)
      equivocators   origin -> 1
      sweep_controls sweep || K -> action (u32) || priority (i32)
                     [|| lamport (u64), when not 0]; a sweep record
                     itself is there as action 0 (its priority)
      claims         task || slot (u32) || epoch (u64) || node -> claim row
      result_meta    task || node || incarnation || seq -> counted (u8) ||
                     status (u8) || extra (u8) || committed (u8) ||
                     record hash || slot (u32) || epoch (u32) || row + NUL
      commits        task || node || incarnation || seq -> commitment (32)
                     || slot (u32) || epoch (u32)
      failures       task || node || incarnation || seq -> class (u8) ||
                     reason + NUL
      datasets       hash -> the dataset record's payload
      meta           "bad_fragments" -> u64 (fragment sets not applied)
                     "verdict_counts" -> u64 x MS_STORE_VERDICT_STATES
                     (verdict rows per ms_verdict_state_t, kept by
                     s_verdict_derive; /metrics reads it, not the rows)

    Contiguity. A block is merged only when its first seq is at most
    held + 1, so the records of (origin, incarnation) are always exactly
    1..held and the vector entry is the highest seq held. A block above a
    gap is refused (MS_ERR_RANGE) before anything is written; gossip keeps
    it and asks for the gap. Each merge is one write txn: a crash leaves
    the block wholly in or wholly out, derived rows included.

    Blocks. The writer groups the appends of one origin made in one
    commit into one block (up to 64 records); ms_store_append_many makes
    a block of its own. A merged block is stored with its boundaries and
    signature. A block that overlaps what we hold (first seq <= held <
    last) is stored from held + 1 on, without its signature: peers serve
    whole stored blocks, so this happens only when two peers cut one
    origin's log differently, which the trust issue will refuse anyway.

    Derived state as a pure function of the record set. Every apply
    function reads what it needs from the derived tables and recomputes
    the affected rows from ALL the records that touch them, never from
    arrival order:
    - sweep: its spec, tasks and counts (s_op_put_sweep; created_at is the local
      time the sweep first landed here: the wire has no submission time;
      it orders this node's own work and its progress figures, and it is
      left out of the state digest, which covers only what every node
      derives alike); then its controls are
      folded and each task re-derived (results and failures may come
      first: they are kept by task id whether or not the task is known).
    - sweep-control: stored by (sweep, record key), with its logical time
      (a Lamport clock: the issuing node gives a control 1 + the highest
      time among the controls of that sweep it holds). The sweep's state
      and priority are a fold over its controls ordered by (time, origin,
      incarnation, seq), starting from (active, the sweep record's
      priority): pause and resume set paused/active, priority sets the
      priority, cancel is final for pause and resume (a later resume
      does not undo it), and reopen (a cancelled sweep submitted again)
      makes it active. Ordering by record key alone was wrong across
      nodes: a pause on node B and a later resume on node A (A had seen
      the pause) folded as "resume, pause" everywhere when A's id sorts
      first. With the clock, a control issued after another was seen
      always sorts after it; controls issued concurrently (neither node
      had seen the other's) are ordered by origin id, the same on every
      node, so the state stays a pure function of the record set. A
      record from a node that predates the clock has time 0 (it sorts
      first, by key, as before). The time saturates at UINT64_MAX (a
      hostile peer can then at worst tie, ordered by key). The base
      priority is that of the sweep record with the lowest key (two
      nodes may publish the same sweep).
    - claim / release: one row per (task, slot, epoch, node); the lowest
      record key of each kind is kept, so duplicates from a second
      incarnation change nothing.
    - result: every result is kept in result_meta; of one (task, node),
      the counted one is the lowest seq of each incarnation, and across
      incarnations the one with the lowest record hash (BLAKE2b of K ||
      kind || payload) - DESIGN.md's rule as a total order; the others
      are duplicates (counted 0). Of the counted results of a task (one
      per node), those that fill its slots (verify.replicas of its sweep,
      1 while the sweep is unknown) are chosen by s_results_rank: per
      slot the one of the top claim (epoch, then H(task, slot, node), as
      claims rank), then the best of the rest. The results table holds
      the chosen rows; the other counted results are extra replicas
      (flag in result_meta): kept, replicated, listed only on request
      (ms_store_results_by_task_all), never a row of the table.
    - commit (commit then reveal, DESIGN.md "Verification"): kept per
      (task, node, record). A result with a nonce is "committed" when a
      commit of the same task by the same node and incarnation at a LOWER
      seq holds ms_store_payload_commitment(node, nonce, row): decided
      once, when the result is applied, since contiguity means every
      lower seq of its log is already held then (a commit can never
      arrive after its reveal). With verify.replicas >= 2 only committed
      results can be counted (s_results_recount); with replicas 1 (or
      the sweep unknown) every result can, as before. The rule reads only
      the records, so every node counts alike. When a sweep lands, its
      tasks' results are recounted (their replicas were taken as 1).
    - failure: kept per (task, node, record). A task ends failed when
      task-class failures come from min(3, n_members) distinct nodes.
    - dataset: by hash; of two payloads under one hash the smaller bytes
      are kept.
    A task's state is derived from all of that: done when some counted
    result has status ok or diverged (replicas 1), else failed by the rule
    above, else cancelled when its sweep is, else pending (the single-node
    API's claimed/running and its failed are local and kept over pending).

    Equivocation. A record held under a key that arrives with other bytes
    is kept with the held one in evidence, and its origin (node id, all
    incarnations) is marked: from then on its results and failures no
    longer count (no results row, not in the failure rule), on every node
    that has seen both records. Its claims stay (leases are liveness, not
    safety).

    Fragments. The wire holds one record's payload to 64 KiB, but a sweep
    record lists every task config (40 MB for 100,000 tasks). The append
    calls take payloads up to MS_STORE_MAX_LOGICAL_BYTES and, in the
    caller's thread (the writer never compresses), turn one over
    MS_STORE_FRAGMENT_BYTES into FRAGMENT records: the payload is decoded
    first (a known kind that does not decode is refused, as before), then
    deflated (level 6; kept raw when that does not shrink it), the stream
    cut into pieces of MS_STORE_FRAGMENT_BYTES, each encoded with the
    shared header (inner kind, stream and raw lengths, compression,
    BLAKE2b-256 of the payload) and its offset. They are appended as one
    op, so one txn; an op with more than 64 records continues in new
    blocks. Applying a FRAGMENT does nothing until the one whose bytes end
    the stream: then s_fragment_assemble reads seq - 1, seq - 2, ... back
    from the records db (same txn, so also fragments written by this very
    op) until offset 0, each a FRAGMENT with the same header whose bytes
    end where the next begins; inflates into exactly raw_len bytes (the
    output buffer is raw_len + 1, so a longer stream fails, never grows);
    checks the hash; and applies the payload as a record of inner_kind
    under its FIRST fragment's key (the one keys_out reports). An append
    hands the payload it decoded to the writer (op->pre), so a 100,000
    task sweep is decoded once. Contiguity is what makes this exact: a
    merge needs no special case, because 1..held are always held, so the
    earlier fragments are there when the last lands, in this merge call,
    an earlier one, or before a crash. A set that fails a check is
    stored (the vector advances, peers get it) but not applied, counted
    in meta "bad_fragments" (in the txn, so a rerun counts it once) and
    logged; a fragment that does not decode is stored only, like any such
    record. Why not a compressed flag on the record: the record format
    (kind || payload, hashed and later signed) stays one shape, and a
    node that does not know kind 10 still stores and forwards it.

    Signatures. The store neither makes nor checks them itself: blocks
    of this node get the signature of the signer set with
    ms_store_set_signer (node/actor/ms_node.c signs with the node's key over
    proto/ms_wire_sign.h's bytes), computed in the writer inside the txn
    that writes the block, so an own block is never durable unsigned
    while a signer is set; merged blocks are stored with the signature
    they came with (the node verified it before the merge). A merged
    block that overlaps what is held is stored as a suffix without a
    signature (above): such a block cannot be served to peers that check
    signatures, which is right, since only an origin that cut its log
    two ways (or a relay) can cause it, and the whole block is still
    held by its origin.

    Not done yet: claim and release payloads of finished tasks are not
    dropped.
    =========================================================================
*/

#define S_KEY 48 // origin || incarnation || seq

_Static_assert(MS_STORE_MAX_LOGICAL_BYTES == MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES,
               "one logical payload bound");
_Static_assert(MS_STORE_FRAGMENT_BYTES + 256 <= MS_WIRE_MAX_PAYLOAD_BYTES,
               "a fragment's payload fits one wire record");
_Static_assert((int) MS_RECORD_FRAGMENT == (int) MS_WIRE_KIND_FRAGMENT,
               "fragment kind");

// Claim row (claims db). Fixed size, native endianness.
typedef struct {
    uint8_t claimed;            // a claim record is held
    uint8_t released;           // a release record is held
    uint16_t reserved;          // zero
    uint32_t reason;            // release reason of release_key
    uint8_t claim_key[S_KEY];   // lowest claim record key (zero: none)
    uint8_t release_key[S_KEY]; // lowest release record key (zero: none)
} s_claim_row_t;

//  --------------------------------------------------------------------------
//  Write a u64 big-endian.

static void
s_put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t) v;
        v >>= 8;
    }
}

//  --------------------------------------------------------------------------
//  Read a big-endian u64.

static uint64_t
s_get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

//  --------------------------------------------------------------------------
//  Build a record key origin || incarnation || seq.

static void
s_rec_key(uint8_t k[S_KEY], const uint8_t *origin, uint64_t inc, uint64_t seq)
{
    memcpy(k, origin, S_ID);
    s_put_be64(k + S_ID, inc);
    s_put_be64(k + S_ID + 8, seq);
}

//  --------------------------------------------------------------------------
//  Turn a record key back into its parts.

static void
s_key_parse(const uint8_t *k, ms_record_key_t *key)
{
    memcpy(key->origin, k, S_ID);
    key->incarnation = s_get_be64(k + S_ID);
    key->seq = s_get_be64(k + S_ID + 8);
}

//  --------------------------------------------------------------------------
//  Record hash: BLAKE2b of key || kind (BE) || payload.

static void
s_rec_hash(const uint8_t key[S_KEY], uint32_t kind, const void *payload,
           size_t len, uint8_t out[32])
{
    ms_hasher_t h;
    uint8_t kb[4];
    ms_hash_t digest;
    s_put_be32(kb, kind);
    ms_hasher_init(&h);
    ms_hasher_update(&h, key, S_KEY);
    ms_hasher_update(&h, kb, 4);
    ms_hasher_update(&h, payload, len);
    ms_hasher_final(&h, &digest);
    memcpy(out, digest.bytes, 32);
}

//  --------------------------------------------------------------------------
//  Highest contiguous seq held of (origin, inc); 0 when none.

static int
s_vector_get(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
             uint64_t inc, uint64_t *seq)
{
    uint8_t k[S_ID + 8];
    memcpy(k, origin, S_ID);
    s_put_be64(k + S_ID, inc);
    MDB_val key = {sizeof k, k}, val;
    *seq = 0;
    int rc = mdb_get(txn, self->db_vectors, &key, &val);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return s_mdb(rc, "get vector");
    if (val.mv_size != 8)
        return s_mdb(MDB_CORRUPTED, "vector value");
    *seq = s_get_be64(val.mv_data);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Set the vector entry of (origin, inc) to SEQ.

static int
s_vector_put(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
             uint64_t inc, uint64_t seq)
{
    uint8_t k[S_ID + 8], v[8];
    memcpy(k, origin, S_ID);
    s_put_be64(k + S_ID, inc);
    s_put_be64(v, seq);
    MDB_val key = {sizeof k, k}, val = {sizeof v, v};
    self->txn_vec_changed = true;
    return s_mdb(mdb_put(txn, self->db_vectors, &key, &val, 0), "put vector");
}

//  --------------------------------------------------------------------------
//  Store one record (kind || payload) under KEY; it must be new.

static int
s_record_put(ms_store_t *self, MDB_txn *txn, const uint8_t key[S_KEY],
             uint32_t kind, const void *payload, size_t len)
{
    MDB_val k = {S_KEY, (void *) key}, v = {4 + len, NULL};
    int rc =
        mdb_put(txn, self->db_records, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST) // the vector said it was not held
        return s_mdb(MDB_CORRUPTED, "record above the vector");
    if (rc != 0)
        return s_mdb(rc, "put record");
    s_put_be32(v.mv_data, kind);
    if (len)
        memcpy((uint8_t *) v.mv_data + 4, payload, len);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Store a block header: n || sig_len || signature.

static int
s_block_put(ms_store_t *self, MDB_txn *txn, const uint8_t *origin, uint64_t inc,
            uint64_t first, uint32_t n, const uint8_t *sig, size_t sig_len)
{
    uint8_t k[S_KEY];
    s_rec_key(k, origin, inc, first);
    MDB_val key = {S_KEY, k}, val = {8 + sig_len, NULL};
    int rc = mdb_put(txn, self->db_blocks, &key, &val, MDB_RESERVE);
    if (rc != 0)
        return s_mdb(rc, "put block");
    s_put_be32(val.mv_data, n);
    s_put_be32((uint8_t *) val.mv_data + 4, (uint32_t) sig_len);
    if (sig_len)
        memcpy((uint8_t *) val.mv_data + 8, sig, sig_len);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Revocation cuts (DESIGN.md "Records and anti-entropy"). A revoked
//  origin's records are still stored (stores converge) but those above
//  its cut are ignored for claims, results and failures: the derived
//  tables read db_cuts while deriving, and a new revocation re-derives
//  what that origin's records touch (s_op_put_item). Value: all (u8) ||
//  n (u8 pair count, BE u16) || n x (incarnation u64 BE | seq u64 BE).

//  --------------------------------------------------------------------------
//  Read ORIGIN's cut inside TXN: *revoked false when it has none.

//  (A quarantine clear's cut lives in the same db, under origin || 'Q':
//  s_clear_cut_get. Only mdb_get reads db_cuts, so the two never mix.)

static int
s_cut_read(ms_store_t *self, MDB_txn *txn, const uint8_t *key, size_t key_len,
           ms_store_cut_t *cut, bool *revoked)
{
    *revoked = false;
    memset(cut, 0, sizeof *cut);
    if (!self->has_cuts)
        return MS_OK;
    MDB_val k = {key_len, (void *) key}, v;
    int rc = mdb_get(txn, self->db_cuts, &k, &v);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return s_mdb(rc, "get cut");
    const uint8_t *p = v.mv_data;
    if (v.mv_size < 3)
        return s_mdb(MDB_CORRUPTED, "cut value");
    size_t n = (size_t) p[1] << 8 | p[2];
    if (n > MS_STORE_MAX_CUT || v.mv_size != 3 + 16 * n)
        return s_mdb(MDB_CORRUPTED, "cut value");
    cut->all = p[0] != 0;
    cut->n = n;
    for (size_t i = 0; i < n; i++) {
        cut->upto[i].incarnation = s_get_be64(p + 3 + 16 * i);
        cut->upto[i].seq = s_get_be64(p + 3 + 16 * i + 8);
    }
    *revoked = true;
    return MS_OK;
}

static int
s_cut_get(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
          ms_store_cut_t *cut, bool *revoked)
{
    return s_cut_read(self, txn, origin, S_ID, cut, revoked);
}

//  --------------------------------------------------------------------------
//  Read NODE's forgiven cut inside TXN, the union of its quarantine clears'
//  cuts (*has false and an empty cut when none).

#define S_CLEAR_KEY (S_ID + 1) // node || 'Q' in db_cuts

static int
s_clear_cut_get(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                ms_store_cut_t *cut, bool *has)
{
    uint8_t key[S_CLEAR_KEY];
    memcpy(key, node, S_ID);
    key[S_ID] = 'Q';
    return s_cut_read(self, txn, key, sizeof key, cut, has);
}

//  --------------------------------------------------------------------------
//  Write a cut value (all flag | n u16 | n x (incarnation | seq)) under KEY.

static int
s_cut_put(ms_store_t *self, MDB_txn *txn, const uint8_t *key, size_t key_len,
          const ms_store_cut_t *cut)
{
    uint8_t buf[3 + 16 * MS_STORE_MAX_CUT];
    size_t n = cut->all ? 0 : cut->n;
    buf[0] = cut->all;
    buf[1] = (uint8_t) (n >> 8);
    buf[2] = (uint8_t) n;
    for (size_t i = 0; i < n; i++) {
        s_put_be64(buf + 3 + 16 * i, cut->upto[i].incarnation);
        s_put_be64(buf + 3 + 16 * i + 8, cut->upto[i].seq);
    }
    MDB_val ck = {key_len, (void *) key}, cv = {3 + 16 * n, buf};
    self->gen_dirty_all = true; // a revoked origin's results leave
    return s_mdb(mdb_put(txn, self->db_cuts, &ck, &cv, 0), "put cut");
}

//  --------------------------------------------------------------------------
//  Whether a record (incarnation, seq) of an origin with CUT counts.

static bool
s_cut_counts(const ms_store_cut_t *cut, uint64_t incarnation, uint64_t seq)
{
    if (cut->all)
        return false;
    for (size_t i = 0; i < cut->n; i++)
        if (cut->upto[i].incarnation == incarnation)
            return seq <= cut->upto[i].seq;
    return false;
}

//  --------------------------------------------------------------------------
//  Whether the record under KEY (origin || inc || seq) counts (inside
//  TXN); *status gets an LMDB failure.

static bool
s_key_counts(ms_store_t *self, MDB_txn *txn, const uint8_t *key, int *status)
{
    ms_store_cut_t cut;
    bool revoked;
    int rc = s_cut_get(self, txn, key, &cut, &revoked);
    if (rc != MS_OK) {
        *status = rc;
        return true;
    }
    return !revoked || s_cut_counts(&cut, s_get_be64(key + S_ID),
                                    s_get_be64(key + S_ID + 8));
}

//  --------------------------------------------------------------------------
//  True when NODE is marked equivocating (inside TXN); *status gets an
//  LMDB failure.

static bool
s_is_equivocator(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                 int *status)
{
    MDB_val k = {S_ID, (void *) node}, v;
    int rc = mdb_get(txn, self->db_equivocators, &k, &v);
    if (rc != 0 && rc != MDB_NOTFOUND)
        *status = s_mdb(rc, "get equivocator");
    return rc == 0;
}

static int s_new_result_note(ms_store_t *self, MDB_txn *txn,
                             const uint8_t *task_id, const uint8_t *key,
                             const uint8_t *hash);
static int s_verdict_derive(ms_store_t *self, MDB_txn *txn,
                            const uint8_t *task_id_in, int *verdict_out,
                            bool *final_out);
static int s_verdict_requeue_node(ms_store_t *self, MDB_txn *txn,
                                  const uint8_t *node_in);
static int s_sweep_verify_put(ms_store_t *self, MDB_txn *txn,
                              const uint8_t *sweep_id, uint32_t replicas,
                              double acc, double loss);

//  --------------------------------------------------------------------------
//  Derive a task's state from the records that touch it (see above) and
//  move it there. A task not known yet (its sweep record has not come) is
//  MS_OK: the sweep's apply derives it.

static int
s_task_derive(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id_in)
{
    uint8_t task_id[S_ID];
    memcpy(task_id, task_id_in, S_ID); // may point into the map
    MDB_val k = {S_ID, task_id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return s_mdb(rc, "get task");
    s_task_hdr_t hdr;
    if (s_task_decode(task_id, &v, &hdr, NULL) != MS_OK)
        return s_mdb(MDB_CORRUPTED, "task record");

    bool any_meta = false, done = false;
    s_scan_t it;
    rc = s_scan_open(&it, txn, self->db_result_meta, task_id, S_ID,
                     "cursor result_meta");
    while (rc == MS_OK && s_scan_next(&it)) {
        const uint8_t *m = it.v.mv_data;
        any_meta = true;
        if (it.v.mv_size >= 4 && m[0] &&
            (m[1] == MS_RESULT_STATUS_OK || m[1] == MS_RESULT_STATUS_DIVERGED))
            done = true;
    }
    rc = s_scan_close(&it, rc);
    if (rc != MS_OK)
        return rc;

    uint32_t n_nodes = 0;
    bool any_failure = false;
    uint8_t last[S_ID];
    rc = s_scan_open(&it, txn, self->db_failures, task_id, S_ID,
                     "cursor failures");
    while (rc == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID * 2 + 16)
            break;
        any_failure = true;
        const uint8_t *node = (const uint8_t *) it.k.mv_data + S_ID;
        if (it.v.mv_size < 1 ||
            ((const uint8_t *) it.v.mv_data)[0] != MS_FAILURE_CLASS_TASK)
            continue;
        if (n_nodes == 0 || memcmp(last, node, S_ID) != 0) {
            bool skip = s_is_equivocator(self, txn, node, &rc);
            if (rc != MS_OK || skip)
                continue; // an error ends the loop; an equivocator counts no
                          // more
            if (!s_key_counts(self, txn, node, &rc) || rc != MS_OK)
                continue; // above its origin's revocation cut (or an error)
            n_nodes++;
            memcpy(last, node, S_ID);
        }
    }
    rc = s_scan_close(&it, rc);
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
        rc = s_verdict_derive(self, txn, task_id, &verdict, &final);
        if (rc != MS_OK)
            return rc;
        // The derive may move pages, and when it flipped a node's
        // quarantine it derived this task again (s_verdict_requeue_node):
        // its state is what that nested derive left, so read it again
        // (a stale header would count the move twice in the sweep's
        // counts).
        rc = mdb_get(txn, self->db_tasks, &k, &v);
        if (rc != 0)
            return s_mdb(rc, "get task");
        if (s_task_decode(task_id, &v, &hdr, NULL) != MS_OK)
            return s_mdb(MDB_CORRUPTED, "task record");
    }
    if (verdict >= 0) {
        done = final && verdict != MS_VERDICT_FAILED;
        failed = failed || (final && verdict == MS_VERDICT_FAILED);
    }

    s_sweep_hdr_t sh;
    rc = s_sweep_hdr_get(self, txn, hdr.sweep_id, &sh);
    if (rc != MS_OK)
        return rc == MS_ERR_NOTFOUND ? s_mdb(MDB_CORRUPTED, "task's sweep")
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
    uint8_t holder[S_ID];
    memcpy(holder, hdr.holder, S_ID);
    return s_task_move(self, txn, task_id, &v, &hdr, state,
                       keep ? holder : NULL, NULL);
}

//  --------------------------------------------------------------------------
//  Re-derive every task of a sweep.

static int
s_sweep_derive_tasks(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id)
{
    uint8_t *ids = NULL;
    size_t n = 0, cap = 0;
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_sweep_tasks, sweep_id, S_ID,
                             "cursor sweep_tasks");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID + 4 || it.v.mv_size != S_ID)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            uint8_t *grown = realloc(ids, cap * S_ID);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            ids = grown;
        }
        memcpy(ids + n++ * S_ID, it.v.mv_data, S_ID);
    }
    status = s_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = s_task_derive(self, txn, ids + i * S_ID);
    free(ids);
    return status;
}

//  One sweep_controls row, for the fold.
typedef struct {
    uint64_t lamport;   // logical time (0: none)
    uint8_t key[S_KEY]; // the record's key (origin || incarnation || seq)
    uint32_t action;    // ms_sweep_control_t, 0 for the sweep record
    int32_t value;      // priority
} s_control_row_t;

//  --------------------------------------------------------------------------
//  Decode a sweep_controls value; false when malformed.

static bool
s_control_value(const MDB_val *v, uint32_t *action, int32_t *value,
                uint64_t *lamport)
{
    if (v->mv_size != 8 && v->mv_size != 16)
        return false;
    const uint8_t *b = v->mv_data;
    *action = s_get_be32(b);
    *value = (int32_t) s_get_be32(b + 4);
    *lamport = v->mv_size == 16 ? s_get_be64(b + 8) : 0;
    return true;
}

//  --------------------------------------------------------------------------
//  Order of the fold: logical time, then record key.

static int
s_control_cmp(const void *a, const void *b)
{
    const s_control_row_t *x = a, *y = b;
    if (x->lamport != y->lamport)
        return x->lamport < y->lamport ? -1 : 1;
    return memcmp(x->key, y->key, S_KEY);
}

//  --------------------------------------------------------------------------
//  Collect a sweep's control rows (*rows: caller frees; *n rows).

static int
s_control_rows(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
               s_control_row_t **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    size_t cap = 0;
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_controls, sweep_id, S_ID,
                             "cursor sweep_controls");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID + S_KEY)
            break;
        s_control_row_t row;
        if (!s_control_value(&it.v, &row.action, &row.value, &row.lamport))
            continue;
        memcpy(row.key, (const uint8_t *) it.k.mv_data + S_ID, S_KEY);
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            s_control_row_t *grown = realloc(*rows, cap * sizeof *grown);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            *rows = grown;
        }
        (*rows)[(*n)++] = row;
    }
    status = s_scan_close(&it, status);
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
    uint8_t sweep_id[S_ID];
    memcpy(sweep_id, sweep_id_in, S_ID);
    s_sweep_hdr_t sh;
    int rc = s_sweep_hdr_get(self, txn, sweep_id, &sh);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK; // the sweep record has not come yet
    if (rc != MS_OK)
        return rc;
    s_control_row_t *rows = NULL;
    size_t n = 0;
    rc = s_control_rows(self, txn, sweep_id, &rows, &n);
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
    rc = s_sweep_hdr_put(self, txn, sweep_id, &sh);
    if (rc == MS_OK && was_cancelled != (state == MS_SWEEP_CANCELLED))
        rc = s_sweep_derive_tasks(self, txn, sweep_id);
    return rc;
}

static int s_results_recount_task(ms_store_t *self, MDB_txn *txn,
                                  const uint8_t *task_id);
static int s_task_replicas(ms_store_t *self, MDB_txn *txn,
                           const uint8_t *task_id, uint32_t *replicas);
static int s_results_rank(ms_store_t *self, MDB_txn *txn,
                          const uint8_t *task_id);

//  --------------------------------------------------------------------------
//  Keep a sweep's result slots per task (its spec's verify.replicas) in
//  its sweep_meta; *changed is set true when they changed.

static int
s_sweep_set_replicas(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                     uint32_t replicas, bool *changed)
{
    if (replicas < 1 || replicas > UINT16_MAX)
        replicas = 1;
    s_sweep_hdr_t sh;
    int rc = s_sweep_hdr_get(self, txn, sweep_id, &sh);
    if (rc != MS_OK || sh.replicas == replicas)
        return rc;
    *changed = *changed || (sh.replicas ? sh.replicas : 1) != replicas;
    sh.replicas = (uint16_t) replicas;
    return s_sweep_hdr_put(self, txn, sweep_id, &sh);
}

//  --------------------------------------------------------------------------
//  Apply a sweep record: its spec, tasks and counts, its base
//  priority, then its controls and its tasks' states.

static int
s_apply_sweep(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
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
    if (!ok || s_has_duplicate_ids(s->tasks, s->n_tasks)) {
        fprintf(stderr, "meshsweep: store: sweep record with an invalid "
                        "spec or task list; stored, not applied\n");
        return MS_OK;
    }
    s_op_t op = {.kind = S_OP_PUT_SWEEP,
                 .id = s->sweep_id,
                 .text = s->spec_json,
                 .len = s->spec_len,
                 .value = s->priority,
                 .tasks = s->tasks,
                 .n_tasks = s->n_tasks,
                 .created_at_ms = s->created_at_ms}; // 0: local now
    int rc = s_op_put_sweep(self, txn, &op);
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
    uint8_t ck[S_ID + S_KEY], cv[8];
    memcpy(ck, s->sweep_id, S_ID);
    memcpy(ck + S_ID, key, S_KEY);
    s_put_be32(cv, 0);
    s_put_be32(cv + 4, (uint32_t) s->priority);
    MDB_val k = {sizeof ck, ck}, v = {sizeof cv, cv};
    rc = s_mdb(mdb_put(txn, self->db_controls, &k, &v, 0), "put control");
    if (rc == MS_OK)
        rc = s_sweep_refold(self, txn, s->sweep_id);
    // Result slots per task: results that came before the sweep were
    // ranked for 1 slot; rank them again now (s_results_rank).
    bool rerank = !op.existed;
    if (rc == MS_OK)
        rc = s_sweep_set_replicas(self, txn, s->sweep_id, s->replicas, &rerank);
    if (rc == MS_OK && self->has_verdicts)
        rc = s_sweep_verify_put(self, txn, s->sweep_id, s->replicas,
                                s->accuracy_tolerance, s->loss_tolerance);
    for (size_t i = 0; rc == MS_OK && rerank && i < s->n_tasks; i++)
        rc = s_results_recount_task(self, txn, s->tasks[i].task_id);
    for (size_t i = 0; rc == MS_OK && !op.existed && i < s->n_tasks; i++)
        rc = s_task_derive(self, txn, s->tasks[i].task_id);
    return rc;
}

//  --------------------------------------------------------------------------
//  Apply a sweep-control record.

static int
s_apply_control(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                const ms_store_payload_t *p)
{
    uint8_t ck[S_ID + S_KEY], cv[16];
    memcpy(ck, p->u.control.sweep_id, S_ID);
    memcpy(ck + S_ID, key, S_KEY);
    s_put_be32(cv, p->u.control.action);
    s_put_be32(cv + 4, (uint32_t) p->u.control.priority);
    s_put_be64(cv + 8, p->u.control.lamport);
    // No time (an older node's record): the old 8 bytes, so the state
    // digest of such a store stays what older nodes compute.
    MDB_val k = {sizeof ck, ck}, v = {p->u.control.lamport ? sizeof cv : 8, cv};
    int rc = s_mdb(mdb_put(txn, self->db_controls, &k, &v, 0), "put control");
    return rc == MS_OK ? s_sweep_refold(self, txn, p->u.control.sweep_id) : rc;
}

//  --------------------------------------------------------------------------
//  Apply a claim or release record to its claims row.

static int
s_apply_claim(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
              const ms_store_payload_t *p)
{
    uint8_t ck[S_ID + 4 + 8 + S_ID];
    memcpy(ck, p->u.claim.task_id, S_ID);
    s_put_be32(ck + S_ID, p->u.claim.slot);
    s_put_be64(ck + S_ID + 4, p->u.claim.epoch);
    memcpy(ck + S_ID + 12, key, S_ID); // the node: the record's origin
    MDB_val k = {sizeof ck, ck}, v;
    s_claim_row_t row = {0};
    int rc = mdb_get(txn, self->db_claims, &k, &v);
    if (rc == 0 && v.mv_size == sizeof row)
        memcpy(&row, v.mv_data, sizeof row);
    else if (rc != 0 && rc != MDB_NOTFOUND)
        return s_mdb(rc, "get claim");
    if (p->kind == MS_RECORD_CLAIM) {
        if (row.claimed && memcmp(key, row.claim_key, S_KEY) >= 0)
            return MS_OK;
        row.claimed = 1;
        memcpy(row.claim_key, key, S_KEY);
    } else {
        if (row.released && memcmp(key, row.release_key, S_KEY) >= 0)
            return MS_OK;
        row.released = 1;
        row.reason = p->u.claim.reason;
        memcpy(row.release_key, key, S_KEY);
    }
    v.mv_size = sizeof row;
    v.mv_data = &row;
    return s_mdb(mdb_put(txn, self->db_claims, &k, &v, 0), "put claim");
}

// result_meta value: counted (u8) || status (u8) || place (u8) ||
// committed (u8: 1 when a matching earlier commit of the same node and
// incarnation exists) || record hash (32) || slot (u32 BE) || epoch (u32
// BE) || row + NUL.
// place: S_PLACE_* (what s_results_rank last decided for a counted one).
//  A re-evaluation (reevals db: task || verifier record key -> this).
//  Native endianness: local.
typedef struct {
    uint8_t target[S_ID];      // record hash of the result re-evaluated
    uint8_t record_hash[S_ID]; // of the re-evaluation record (order ties)
    uint8_t failed;            // could not recompute (no metrics)
    uint8_t pad[7];
    double test_accuracy, test_loss, val_accuracy, val_loss;
} s_reeval_val_t;

#define S_RM_HASH 4
#define S_RM_SLOT 36
#define S_RM_EPOCH 40
#define S_RM_ROW 44
#define S_PLACE_NONE 0  // not counted, or not ranked since it turned counted
#define S_PLACE_FILLS 1 // fills a slot: its row is the results row
#define S_PLACE_EXTRA 2 // an extra replica: no results row

// One result of a (task, node) while choosing the counted one.
typedef struct {
    uint8_t key[S_ID * 2 + 16]; // result_meta key
    uint64_t incarnation;       // from the key
    uint8_t hash[32];           // record hash
    bool counted;               // flag as stored
    bool committed;             // a matching earlier commit exists
} s_result_ent_t;

//  --------------------------------------------------------------------------
//  Re-choose the counted result of (task, node): per incarnation the
//  lowest seq, across incarnations the lowest record hash (none when the
//  node is an equivocator). Rewrites the counted flags, then re-ranks the
//  task's results (s_results_rank), which rewrites the results rows.

static int
s_results_recount(ms_store_t *self, MDB_txn *txn, const uint8_t *prefix_in)
{
    uint8_t prefix[2 * S_ID];
    memcpy(prefix, prefix_in, sizeof prefix); // may point into the map
    s_gen_touch_task(self, txn, prefix);
    s_result_ent_t *ents = NULL;
    size_t n = 0, cap = 0;
    int rc;
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_result_meta, prefix, 2 * S_ID,
                             "cursor result_meta");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != 2 * S_ID + 16)
            break;
        if (it.v.mv_size < S_RM_ROW + 1)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            s_result_ent_t *grown = realloc(ents, cap * sizeof *ents);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            ents = grown;
        }
        s_result_ent_t *e = &ents[n++];
        memcpy(e->key, it.k.mv_data, sizeof e->key);
        e->incarnation = s_get_be64(e->key + 2 * S_ID);
        memcpy(e->hash, (const uint8_t *) it.v.mv_data + S_RM_HASH, 32);
        e->counted = ((const uint8_t *) it.v.mv_data)[0] != 0;
        e->committed = ((const uint8_t *) it.v.mv_data)[3] != 0;
    }
    status = s_scan_close(&it, status);
    size_t best = SIZE_MAX;
    bool excluded =
        status == MS_OK && s_is_equivocator(self, txn, prefix + S_ID, &status);
    ms_store_cut_t cut;
    bool revoked = false;
    if (status == MS_OK)
        status = s_cut_get(self, txn, prefix + S_ID, &cut, &revoked);
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
        if (revoked && !s_cut_counts(&cut, ents[i].incarnation,
                                     s_get_be64(ents[i].key + 2 * S_ID + 8)))
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
            status = s_mdb(rc, "get result_meta");
            break;
        }
        uint8_t *copy = malloc(mv.mv_size);
        if (!copy) {
            status = MS_ERR_NOMEM;
            break;
        }
        memcpy(copy, mv.mv_data, mv.mv_size);
        copy[0] = counted;
        copy[2] = S_PLACE_NONE; // s_results_rank decides
        mv.mv_data = copy;
        status = s_mdb(mdb_put(txn, self->db_result_meta, &mk, &mv, 0),
                       "put result_meta");
        free(copy);
    }
    free(ents);
    if (status == MS_OK && (excluded || (n > 0 && best == SIZE_MAX))) {
        // none of its results counts (any more)
        MDB_val rk = {2 * S_ID, prefix};
        int d = mdb_del(txn, self->db_results, &rk, NULL);
        if (d != 0 && d != MDB_NOTFOUND)
            status = s_mdb(d, "del result");
    }
    return status == MS_OK ? s_results_rank(self, txn, prefix) : status;
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
    MDB_val k = {S_ID, (void *) task_id}, v;
    int rc = mdb_get(txn, self->db_tasks, &k, &v);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return s_mdb(rc, "get task");
    s_task_hdr_t th;
    if (v.mv_size < sizeof th)
        return s_mdb(MDB_CORRUPTED, "task record");
    memcpy(&th, v.mv_data, sizeof th);
    s_sweep_hdr_t sh;
    rc = s_sweep_hdr_get(self, txn, th.sweep_id, &sh);
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
    uint8_t key[S_ID * 2 + 16]; // result_meta key (task || node || ...)
    bool counted;               // counted for its (task, node)
    uint8_t place;              // S_PLACE_* as stored
    bool fills;                 // chosen to fill a slot
    uint32_t slot, epoch;       // what it was computed for
    uint8_t rank[32];           // H(task || slot (BE) || node)
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

static int
s_results_rank(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id_in)
{
    uint8_t task_id[S_ID];
    memcpy(task_id, task_id_in, S_ID); // may point into the map
    s_gen_touch_task(self, txn, task_id);
    s_rank_ent_t *ents = NULL;
    size_t n = 0, cap = 0;
    uint32_t n_counted = 0;
    int rc;
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_result_meta, task_id, S_ID,
                             "cursor result_meta");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != 2 * S_ID + 16)
            break;
        if (it.v.mv_size < S_RM_ROW + 1)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            s_rank_ent_t *grown = realloc(ents, cap * sizeof *ents);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            ents = grown;
        }
        const uint8_t *m = it.v.mv_data;
        s_rank_ent_t *e = &ents[n++];
        memset(e, 0, sizeof *e);
        memcpy(e->key, it.k.mv_data, sizeof e->key);
        e->counted = m[0] != 0;
        e->place = m[2];
        e->slot = s_get_be32(m + S_RM_SLOT);
        e->epoch = s_get_be32(m + S_RM_EPOCH);
        n_counted += e->counted;
    }
    status = s_scan_close(&it, status);
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
        ms_claim_rank_hash(task_id, e->slot, e->key + S_ID, e->rank);
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
    // whose place stays S_PLACE_FILLS is already the results row).
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        uint8_t place = !ents[i].counted ? S_PLACE_NONE
                        : ents[i].fills  ? S_PLACE_FILLS
                                         : S_PLACE_EXTRA;
        if (place == ents[i].place)
            continue;
        bool extra = place == S_PLACE_EXTRA;
        MDB_val mk = {sizeof ents[i].key, ents[i].key}, mv;
        rc = mdb_get(txn, self->db_result_meta, &mk, &mv);
        if (rc != 0) {
            status = s_mdb(rc, "get result_meta");
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
        status = s_mdb(mdb_put(txn, self->db_result_meta, &mk, &mv, 0),
                       "put result_meta");
        MDB_val rk = {2 * S_ID, ents[i].key}, rv;
        if (status == MS_OK && ents[i].fills) {
            int g = mdb_get(txn, self->db_results, &rk, &rv);
            bool same =
                g == 0 && rv.mv_size == size - S_RM_ROW &&
                memcmp(rv.mv_data, copy + S_RM_ROW, size - S_RM_ROW) == 0;
            if (g != 0 && g != MDB_NOTFOUND)
                status = s_mdb(g, "get result");
            else if (!same) {
                rv.mv_size = size - S_RM_ROW;
                rv.mv_data = copy + S_RM_ROW;
                status = s_mdb(mdb_put(txn, self->db_results, &rk, &rv, 0),
                               "put result");
            }
        } else if (status == MS_OK && extra) {
            int d = mdb_del(txn, self->db_results, &rk, NULL);
            if (d != 0 && d != MDB_NOTFOUND)
                status = s_mdb(d, "del result");
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
    uint8_t ck[2 * S_ID + 16], cv[S_ID + 8];
    memcpy(ck, p->u.commit.task_id, S_ID);
    memcpy(ck + S_ID, key, S_KEY); // node || incarnation || seq
    memcpy(cv, p->u.commit.commitment, S_ID);
    s_put_be32(cv + S_ID, p->u.commit.slot);
    s_put_be32(cv + S_ID + 4, p->u.commit.epoch);
    MDB_val k = {sizeof ck, ck}, v = {sizeof cv, cv};
    int rc = mdb_put(txn, self->db_commits, &k, &v, MDB_NOOVERWRITE);
    return rc == MDB_KEYEXIST ? MS_OK : s_mdb(rc, "put commit");
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
    uint8_t want[S_ID];
    int rc = ms_store_payload_commitment(key, p->u.result.nonce,
                                         p->u.result.row_json,
                                         p->u.result.row_len, want);
    if (rc == MS_ERR_NOMEM)
        return rc;
    if (rc != MS_OK)
        return MS_OK;
    uint8_t prefix[2 * S_ID + 8];
    memcpy(prefix, p->u.result.task_id, S_ID);
    memcpy(prefix + S_ID, key, S_ID + 8); // node || incarnation
    uint64_t seq = s_get_be64(key + S_ID + 8);
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_commits, prefix, sizeof prefix,
                             "cursor commits");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != 2 * S_ID + 16 ||
            s_get_be64((const uint8_t *) it.k.mv_data + 2 * S_ID + 8) >= seq)
            break;
        if (it.v.mv_size >= S_ID && memcmp(it.v.mv_data, want, S_ID) == 0) {
            *match = true;
            break;
        }
    }
    return s_scan_close(&it, status);
}

//  --------------------------------------------------------------------------
//  Re-choose the counted result of every node of a task (its replicas
//  changed: the commit rule depends on them); ranks the task.

static int
s_results_recount_task(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id)
{
    uint8_t prefix[2 * S_ID];
    memcpy(prefix, task_id, S_ID);
    memset(prefix + S_ID, 0, S_ID);
    bool any = false;
    for (;;) {
        //  The first result of the task at or after node prefix + S_ID.
        s_scan_t it;
        int rc = s_scan_open(&it, txn, self->db_result_meta, task_id, S_ID,
                             "cursor result_meta");
        s_scan_from(&it, prefix, sizeof prefix);
        bool found =
            rc == MS_OK && s_scan_next(&it) && it.k.mv_size == 2 * S_ID + 16;
        if (found)
            memcpy(prefix + S_ID, (const uint8_t *) it.k.mv_data + S_ID, S_ID);
        rc = s_scan_close(&it, rc);
        if (rc != MS_OK)
            return rc;
        if (!found)
            break;
        any = true;
        rc = s_results_recount(self, txn, prefix);
        if (rc != MS_OK)
            return rc;
        // the next node: prefix + 1 (the node id as a big number)
        int i = 2 * S_ID - 1;
        while (i >= S_ID && ++prefix[i] == 0)
            i--;
        if (i < S_ID)
            break; // it was the last node id possible
    }
    return any ? MS_OK : s_results_rank(self, txn, task_id);
}

//  --------------------------------------------------------------------------
//  Apply a result record: keep it, re-choose the counted one and the
//  ones that fill the task's slots, re-derive the task.

static int
s_apply_result(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
               const uint8_t *hash, const ms_store_payload_t *p)
{
    uint8_t mk[2 * S_ID + 16];
    memcpy(mk, p->u.result.task_id, S_ID);
    memcpy(mk + S_ID, key, S_KEY); // node || incarnation || seq
    s_gen_touch_task(self, txn, mk);
    size_t row_len = p->u.result.row_len;
    MDB_val k = {sizeof mk, mk}, v = {S_RM_ROW + row_len + 1, NULL};
    int rc = mdb_put(txn, self->db_result_meta, &k, &v,
                     MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST)
        return MS_OK;
    if (rc != 0)
        return s_mdb(rc, "put result_meta");
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
    memcpy(m + S_RM_HASH, hash, 32);
    s_put_be32(m + S_RM_SLOT, p->u.result.slot);
    s_put_be32(m + S_RM_EPOCH, p->u.result.epoch);
    memcpy(m + S_RM_ROW, p->u.result.row_json, row_len);
    m[S_RM_ROW + row_len] = 0;
    if (p->u.result.status == MS_RESULT_STATUS_OK) {
        rc = s_new_result_note(self, txn, p->u.result.task_id, key, hash);
        if (rc != MS_OK)
            return rc;
    }
    rc = s_results_recount(self, txn, mk);
    return rc == MS_OK ? s_task_derive(self, txn, p->u.result.task_id) : rc;
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
    s_task_hdr_t th;
    ms_store_task_t view;
    int rc = s_task_read(self, txn, task_id, &th, &view);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK;
    if (rc != MS_OK)
        return rc;
    if (s_task_traits(&th, &view) & S_TT_NOOP)
        return MS_OK;
    ms_store_new_result_t e;
    memcpy(e.task_id, task_id, S_ID);
    memcpy(e.node_id, key, S_ID);
    memcpy(e.record_hash, hash, S_ID);
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
    uint8_t rk[S_ID + S_KEY];
    memcpy(rk, r->task_id, S_ID);
    memcpy(rk + S_ID, key, S_KEY); // verifier || incarnation || seq
    s_reeval_val_t rv;
    memset(&rv, 0, sizeof rv);
    memcpy(rv.target, r->target, S_ID);
    memcpy(rv.record_hash, hash, S_ID);
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
        return s_mdb(rc, "put reeval");
    return s_task_derive(self, txn, r->task_id);
}

//  --------------------------------------------------------------------------
//  Apply a failure record.

static int
s_apply_failure(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                const ms_store_payload_t *p)
{
    uint8_t fk[2 * S_ID + 16];
    memcpy(fk, p->u.failure.task_id, S_ID);
    memcpy(fk + S_ID, key, S_KEY);
    size_t len = strlen(p->u.failure.reason);
    MDB_val k = {sizeof fk, fk}, v = {1 + len + 1, NULL};
    int rc =
        mdb_put(txn, self->db_failures, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST)
        return MS_OK;
    if (rc != 0)
        return s_mdb(rc, "put failure");
    uint8_t *f = v.mv_data;
    f[0] = (uint8_t) p->u.failure.failure_class;
    memcpy(f + 1, p->u.failure.reason, len + 1);
    return s_task_derive(self, txn, p->u.failure.task_id);
}

//  --------------------------------------------------------------------------
//  Apply a dataset record: by hash, the smaller payload bytes kept.

static int
s_apply_dataset(ms_store_t *self, MDB_txn *txn, const ms_store_payload_t *p,
                const void *payload, size_t len)
{
    MDB_val k = {S_ID, (void *) p->u.dataset.hash}, v;
    int rc = mdb_get(txn, self->db_datasets, &k, &v);
    if (rc == 0) {
        size_t m = v.mv_size < len ? v.mv_size : len;
        int c = memcmp(payload, v.mv_data, m);
        if (c > 0 || (c == 0 && len >= v.mv_size))
            return MS_OK;
    } else if (rc != MDB_NOTFOUND) {
        return s_mdb(rc, "get dataset");
    }
    v.mv_size = len;
    v.mv_data = (void *) payload;
    return s_mdb(mdb_put(txn, self->db_datasets, &k, &v, 0), "put dataset");
}

static int s_apply(ms_store_t *self, MDB_txn *txn, const uint8_t key[S_KEY],
                   uint32_t kind, const ms_store_payload_t *p,
                   const void *payload, size_t len);

//  --------------------------------------------------------------------------
//  Count a fragment set that is stored but not applied (meta
//  "bad_fragments", in the txn so a rerun counts it once) and say why.

static int
s_bad_fragments(ms_store_t *self, MDB_txn *txn, const uint8_t key[S_KEY],
                const char *why)
{
    ms_record_key_t k;
    s_key_parse(key, &k);
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
        return s_mdb(rc, "get bad_fragments");
    n++;
    mv.mv_size = sizeof n;
    mv.mv_data = &n;
    return s_mdb(mdb_put(txn, self->db_meta, &mk, &mv, 0), "put bad_fragments");
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

static int
s_fragment_assemble(ms_store_t *self, MDB_txn *txn, const uint8_t key[S_KEY],
                    const ms_wire_fragment_t *last, uint8_t **raw,
                    uint64_t *first_seq, const char **why)
{
    *raw = NULL;
    *why = NULL;
    ms_record_key_t k;
    s_key_parse(key, &k);
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
        uint8_t rk[S_KEY];
        s_rec_key(rk, k.origin, k.incarnation, seq);
        MDB_val mk = {S_KEY, rk}, mv;
        int g = mdb_get(txn, self->db_records, &mk, &mv);
        if (g != 0) {
            rc = g == MDB_NOTFOUND ? MS_ERR_INVALID : s_mdb(g, "get fragment");
            *why = "earlier fragment not held";
            break;
        }
        ms_wire_fragment_t *f = NULL;
        if (mv.mv_size < 4 || s_get_be32(mv.mv_data) != MS_RECORD_FRAGMENT) {
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
s_apply_fragment(ms_store_t *self, MDB_txn *txn, const uint8_t key[S_KEY],
                 const void *payload, size_t len, const ms_store_payload_t *pre)
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
    rc = s_fragment_assemble(self, txn, key, last, &raw, &first_seq, &why);
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
    uint8_t inner_key[S_KEY];
    memcpy(inner_key, key, S_KEY);
    s_put_be64(inner_key + S_ID + 8, first_seq);
    rc = pre ? s_apply(self, txn, inner_key, inner_kind, pre, raw, raw_len)
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
        if (memcmp(self->no_submit[i], key, S_ID) == 0)
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

static int
s_apply(ms_store_t *self, MDB_txn *txn, const uint8_t key[S_KEY], uint32_t kind,
        const ms_store_payload_t *p, const void *payload, size_t len)
{
    if (kind == MS_RECORD_FRAGMENT)
        return s_apply_fragment(self, txn, key, payload, len, p);
    if (!p)
        return MS_OK;
    switch (kind) {
    case MS_RECORD_SWEEP:
        if (!s_may_submit(self, key))
            return MS_OK; // stored, not applied
        return s_apply_sweep(self, txn, key, p);
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
        s_rec_hash(key, kind, payload, len, hash);
        return s_apply_result(self, txn, key, hash, p);
    }
    case MS_RECORD_FAILURE:
        return s_apply_failure(self, txn, key, p);
    case MS_RECORD_COMMIT:
        return self->has_commits ? s_apply_commit(self, txn, key, p) : MS_OK;
    case MS_RECORD_REEVALUATION: {
        uint8_t hash[32];
        s_rec_hash(key, kind, payload, len, hash);
        return s_apply_reeval(self, txn, key, hash, p);
    }
    default:
        return MS_OK;
    }
}

//  --------------------------------------------------------------------------
//  Decode the payloads of a block for applying; a known kind that does
//  not decode gives NULL (STRICT: refuse with MS_ERR_INVALID instead).

static int
s_decode_all(const s_op_t *op, bool strict, ms_store_payload_t **decoded)
{
    for (size_t i = 0; i < op->n_recs; i++) {
        decoded[i] = NULL;
        int rc = ms_store_payload_decode(op->kinds[i], op->payloads[i],
                                         op->lens[i], &decoded[i]);
        if (rc == MS_ERR_NOMEM)
            return rc;
        if (rc == MS_ERR_INVALID && strict)
            return rc;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free what s_decode_all made.

static void
s_decoded_free(ms_store_payload_t **decoded, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ms_store_payload_destroy(&decoded[i]);
}

//  --------------------------------------------------------------------------
//  Writer: store the header of an appended block of ours, signed by the
//  signer when one is set (ms_store_set_signer). The block's records are
//  read back from this txn: a block that grows across the appends of one
//  commit is signed again, whole, each time it grows (the last header
//  written wins).

static int
s_block_put_signed(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
                   uint64_t inc, uint64_t first, uint32_t n)
{
    if (!self->sign_fn)
        return s_block_put(self, txn, origin, inc, first, n, NULL, 0);
    uint32_t kinds[MS_RECORD_MAX_BLOCK];
    const uint8_t *payloads[MS_RECORD_MAX_BLOCK];
    size_t lens[MS_RECORD_MAX_BLOCK];
    if (n == 0 || n > MS_RECORD_MAX_BLOCK)
        return s_mdb(MDB_CORRUPTED, "block size");
    for (uint32_t i = 0; i < n; i++) {
        uint8_t key[S_KEY];
        s_rec_key(key, origin, inc, first + i);
        MDB_val k = {S_KEY, key}, v;
        int rc = mdb_get(txn, self->db_records, &k, &v);
        if (rc != 0 || v.mv_size < 4)
            return s_mdb(rc ? rc : MDB_CORRUPTED, "record of a new block");
        kinds[i] = s_get_be32(v.mv_data);
        payloads[i] = (const uint8_t *) v.mv_data + 4;
        lens[i] = v.mv_size - 4;
    }
    uint8_t sig[MS_RECORD_MAX_SIG_BYTES];
    size_t sig_len = 0;
    int rc = self->sign_fn(self->sign_arg, origin, inc, first, n, kinds,
                           payloads, lens, sig, &sig_len);
    if (rc != MS_OK || sig_len > MS_RECORD_MAX_SIG_BYTES) {
        fprintf(stderr, "meshsweep: store: cannot sign a block of ours: %s\n",
                ms_strerror(rc != MS_OK ? rc : MS_ERR_INVALID));
        return rc != MS_OK ? rc : MS_ERR_INVALID;
    }
    return s_block_put(self, txn, origin, inc, first, n, sig, sig_len);
}

//  --------------------------------------------------------------------------
//  Writer: append this node's records (one op) and grow the current
//  block of its origin when the previous append of this commit allows.
//  An op holds more than MS_RECORD_MAX_BLOCK records only when it carries
//  fragments: they continue in fresh blocks.

static int
s_op_append(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    ms_store_payload_t **decoded = calloc(op->n_recs, sizeof *decoded);
    if (!decoded)
        return MS_ERR_NOMEM;
    const uint8_t *origin = op->node;
    uint64_t inc = self->incarnation, held;
    bool strict = !__atomic_load_n(&self->unchecked_appends, __ATOMIC_RELAXED);
    int rc = s_decode_all(op, strict, decoded);
    if (rc == MS_OK)
        rc = s_vector_get(self, txn, origin, inc, &held);
    if (rc != MS_OK) { // refused (invalid) or broken, nothing written
        s_decoded_free(decoded, op->n_recs);
        free(decoded);
        return rc;
    }
    s_open_block_t *b = &self->block;
    for (size_t i = 0; rc == MS_OK && i < op->n_recs; i++) {
        uint64_t seq = held + 1 + i;
        uint8_t key[S_KEY];
        s_rec_key(key, origin, inc, seq);
        rc = s_record_put(self, txn, key, op->kinds[i], op->payloads[i],
                          op->lens[i]);
        const ms_store_payload_t *p =
            op->pre && op->pre[i] ? op->pre[i] : decoded[i];
        if (rc == MS_OK)
            rc = s_written(s_apply(self, txn, key, op->kinds[i], p,
                                   op->payloads[i], op->lens[i]));
        if (rc == MS_OK && op->keys_out) {
            memcpy(op->keys_out[i].origin, origin, S_ID);
            op->keys_out[i].incarnation = inc;
            op->keys_out[i].seq = seq;
        }
        if (rc != MS_OK)
            break;
        bool extend = b->open && b->incarnation == inc &&
                      memcmp(b->origin, origin, S_ID) == 0 &&
                      b->first_seq + b->n == seq &&
                      b->n < MS_RECORD_MAX_BLOCK &&
                      (!op->explicit_block || i > 0);
        if (extend) {
            b->n++;
        } else {
            b->open = true;
            memcpy(b->origin, origin, S_ID);
            b->incarnation = inc;
            b->first_seq = seq;
            b->n = 1;
        }
        if (i + 1 == op->n_recs || b->n == MS_RECORD_MAX_BLOCK)
            rc = s_block_put_signed(self, txn, origin, inc, b->first_seq, b->n);
    }
    s_decoded_free(decoded, op->n_recs);
    free(decoded);
    if (rc != MS_OK)
        return rc;
    if (op->explicit_block)
        b->open = false; // its block(s) stay its own
    return s_vector_put(self, txn, origin, inc, held + op->n_recs);
}

//  --------------------------------------------------------------------------
//  Writer: an origin was just marked equivocating: recount every (task,
//  node) of its results and re-derive every task it has results or
//  failures for (one scan of each table: a rare event).

static int
s_origin_uncount(ms_store_t *self, MDB_txn *txn, const uint8_t *origin_in)
{
    uint8_t origin[S_ID];
    memcpy(origin, origin_in, S_ID);
    uint8_t *tasks = NULL;
    size_t n = 0, cap = 0;
    int status = MS_OK;
    MDB_dbi dbis[2] = {self->db_result_meta, self->db_failures};
    for (int t = 0; t < 2 && status == MS_OK; t++) {
        s_scan_t it;
        status = s_scan_open(&it, txn, dbis[t], NULL, 0, "cursor (uncount)");
        while (status == MS_OK && s_scan_next(&it)) {
            if (it.k.mv_size != 2 * S_ID + 16 ||
                memcmp((const uint8_t *) it.k.mv_data + S_ID, origin, S_ID))
                continue;
            if (n > 0 &&
                memcmp(tasks + (n - 1) * S_ID, it.k.mv_data, S_ID) == 0)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                uint8_t *grown = realloc(tasks, cap * S_ID);
                if (!grown) {
                    status = MS_ERR_NOMEM;
                    break;
                }
                tasks = grown;
            }
            memcpy(tasks + n++ * S_ID, it.k.mv_data, S_ID);
        }
        status = s_scan_close(&it, status);
    }
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        uint8_t prefix[2 * S_ID];
        memcpy(prefix, tasks + i * S_ID, S_ID);
        memcpy(prefix + S_ID, origin, S_ID);
        status = s_results_recount(self, txn, prefix);
        if (status == MS_OK)
            status = s_task_derive(self, txn, prefix);
    }
    free(tasks);
    return status;
}

//  --------------------------------------------------------------------------
//  Writer: keep both records of an equivocation as evidence and mark the
//  origin.

static int
s_equivocate(ms_store_t *self, MDB_txn *txn, const uint8_t key[S_KEY],
             uint32_t kind, const void *payload, size_t len,
             const MDB_val *held)
{
    size_t held_len = held->mv_size;
    uint8_t *held_copy = malloc(held_len ? held_len : 1);
    if (!held_copy)
        return MS_ERR_NOMEM;
    memcpy(held_copy, held->mv_data, held_len);
    int rc = MS_OK;
    for (int which = 0; rc == MS_OK && which < 2; which++) {
        uint32_t k_kind = which ? s_get_be32(held_copy) : kind;
        const uint8_t *body = which ? held_copy + 4 : payload;
        size_t body_len = which ? held_len - 4 : len;
        uint8_t ek[S_KEY + 32];
        memcpy(ek, key, S_KEY);
        s_rec_hash(key, k_kind, body, body_len, ek + S_KEY);
        MDB_val k = {sizeof ek, ek}, v = {4 + body_len, NULL};
        int put = mdb_put(txn, self->db_evidence, &k, &v,
                          MDB_NOOVERWRITE | MDB_RESERVE);
        if (put == MDB_KEYEXIST)
            continue;
        rc = s_mdb(put, "put evidence");
        if (rc == MS_OK) {
            s_put_be32(v.mv_data, k_kind);
            if (body_len)
                memcpy((uint8_t *) v.mv_data + 4, body, body_len);
        }
    }
    free(held_copy);
    if (rc != MS_OK)
        return rc;
    uint8_t one = 1;
    MDB_val ok = {S_ID, (void *) key}, ov = {1, &one};
    rc = mdb_put(txn, self->db_equivocators, &ok, &ov, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST)
        return MS_OK; // marked before
    if (rc != 0)
        return s_mdb(rc, "put equivocator");
    return s_origin_uncount(self, txn, key);
}

//  --------------------------------------------------------------------------
//  Writer: merge a peer's block.

static int
s_op_merge(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    const uint8_t *origin = op->node;
    uint64_t inc = op->incarnation, held;
    int rc = s_vector_get(self, txn, origin, inc, &held);
    if (rc != MS_OK)
        return rc;
    if (op->first_seq > held + 1)
        return MS_ERR_RANGE; // a gap: refused before any write
    ms_store_payload_t *decoded[MS_RECORD_MAX_BLOCK] = {0};
    rc = s_decode_all(op, false, decoded);
    uint64_t last = op->first_seq + op->n_recs - 1;
    for (size_t i = 0; rc == MS_OK && i < op->n_recs; i++) {
        uint64_t seq = op->first_seq + i;
        uint8_t key[S_KEY];
        s_rec_key(key, origin, inc, seq);
        const uint8_t *payload = op->payloads[i];
        size_t len = op->lens[i];
        if (seq <= held) {
            MDB_val k = {S_KEY, key}, v;
            int g = mdb_get(txn, self->db_records, &k, &v);
            if (g != 0) {
                rc = s_mdb(g == MDB_NOTFOUND ? MDB_CORRUPTED : g,
                           "record below the vector");
                break;
            }
            if (v.mv_size == 4 + len && s_get_be32(v.mv_data) == op->kinds[i] &&
                (len == 0 ||
                 memcmp((uint8_t *) v.mv_data + 4, payload, len) == 0)) {
                op->merge.n_duplicate++;
                continue;
            }
            op->merge.n_conflict++;
            op->merge.equivocation = true;
            rc = s_equivocate(self, txn, key, op->kinds[i], payload, len, &v);
            continue;
        }
        rc = s_record_put(self, txn, key, op->kinds[i], payload, len);
        if (rc == MS_OK)
            rc =
                s_apply(self, txn, key, op->kinds[i], decoded[i], payload, len);
        if (rc == MS_OK)
            op->merge.n_new++;
    }
    s_decoded_free(decoded, op->n_recs);
    if (rc == MS_OK && last > held) {
        bool whole = op->first_seq > held;
        uint64_t first = whole ? op->first_seq : held + 1;
        rc = s_block_put(self, txn, origin, inc, first,
                         (uint32_t) (last - first + 1), whole ? op->sig : NULL,
                         whole ? op->sig_len : 0);
        if (rc == MS_OK)
            rc = s_vector_put(self, txn, origin, inc, last);
        held = last;
    }
    op->merge.held = held;
    return s_written(rc);
}

//  --------------------------------------------------------------------------
//  Writer: set the member count and re-derive every task with failures.

static int
s_op_members(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    self->n_members = (uint32_t) op->value;
    uint8_t *ids = NULL;
    size_t n = 0, cap = 0;
    s_scan_t it;
    int status =
        s_scan_open(&it, txn, self->db_failures, NULL, 0, "cursor failures");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size < S_ID ||
            (n > 0 && memcmp(ids + (n - 1) * S_ID, it.k.mv_data, S_ID) == 0))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            uint8_t *grown = realloc(ids, cap * S_ID);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            ids = grown;
        }
        memcpy(ids + n++ * S_ID, it.k.mv_data, S_ID);
    }
    status = s_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = s_written(s_task_derive(self, txn, ids + i * S_ID));
    free(ids);
    return status;
}

//  --------------------------------------------------------------------------
//  Writer: keep an authority item; for a revocation, narrow its subject's
//  cut (the intersection with an earlier one) and re-derive what the
//  subject's records touch.

#define S_ITEM_CLEAR 1 // s_op_t value of a quarantine clear

static int s_apply_clear(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                         const ms_store_cut_t *cut);

static int
s_op_put_item(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    MDB_val k = {S_ID, (void *) op->id}, v = {op->len, (void *) op->text};
    int rc = mdb_put(txn, self->db_items, &k, &v, MDB_NOOVERWRITE);
    op->existed = rc == MDB_KEYEXIST;
    if (op->existed)
        return MS_OK;
    if (rc != 0)
        return s_written(s_mdb(rc, "put item"));
    if (op->node && op->cut && op->value == S_ITEM_CLEAR)
        return s_written(s_apply_clear(self, txn, op->node, op->cut));
    if (!op->node || !op->cut)
        return MS_OK;
    ms_store_cut_t cut, next = *op->cut;
    bool revoked;
    rc = s_cut_get(self, txn, op->node, &cut, &revoked);
    if (rc != MS_OK)
        return rc;
    if (next.all || next.n == 0 || next.n > MS_STORE_MAX_CUT) {
        memset(&next, 0, sizeof next);
        next.all = true;
    }
    if (revoked && !cut.all && !next.all) { // keep what both let count
        size_t kept = 0;
        for (size_t i = 0; i < next.n; i++)
            for (size_t j = 0; j < cut.n; j++)
                if (cut.upto[j].incarnation == next.upto[i].incarnation) {
                    next.upto[kept].incarnation = next.upto[i].incarnation;
                    next.upto[kept].seq = next.upto[i].seq < cut.upto[j].seq
                                              ? next.upto[i].seq
                                              : cut.upto[j].seq;
                    kept++;
                    break;
                }
        next.n = kept;
        next.all = kept == 0;
    } else if (revoked && cut.all)
        next.all = true;
    if (next.all)
        next.n = 0;
    rc = s_cut_put(self, txn, op->node, S_ID, &next);
    if (rc != MS_OK)
        return s_written(rc);
    return s_written(s_origin_uncount(self, txn, op->node));
}

//  --------------------------------------------------------------------------
//  Keep an authority item

int
ms_store_put_item(ms_store_t *self, const uint8_t digest[MS_STORE_ID_BYTES],
                  const uint8_t *bytes, size_t n,
                  const uint8_t revoked[MS_STORE_ID_BYTES],
                  const ms_store_cut_t *cut, bool *added)
{
    if (!self || !digest || !bytes || n == 0)
        return MS_ERR_INVALID;
    if (added)
        *added = false;
    if (n > MS_STORE_MAX_ITEM_BYTES)
        return MS_ERR_INVALID;
    s_op_t op = {.kind = S_OP_PUT_ITEM,
                 .id = digest,
                 .text = (const char *) bytes,
                 .len = n,
                 .node = revoked,
                 .cut = revoked ? cut : NULL};
    ms_store_cut_t all = {.all = true};
    if (revoked && !cut)
        op.cut = &all;
    int rc = s_submit(self, &op);
    if (rc == MS_OK && added)
        *added = !op.existed;
    return rc;
}

//  --------------------------------------------------------------------------
//  Keep a quarantine clear and apply it

int
ms_store_put_clear(ms_store_t *self, const uint8_t digest[MS_STORE_ID_BYTES],
                   const uint8_t *bytes, size_t n,
                   const uint8_t subject[MS_STORE_ID_BYTES],
                   const ms_store_cut_t *cut, bool *added)
{
    if (!self || !digest || !bytes || n == 0 || !subject || !cut || cut->all ||
        cut->n == 0 || cut->n > MS_STORE_MAX_CUT)
        return MS_ERR_INVALID;
    for (size_t i = 1; i < cut->n; i++) // sorted, one entry per incarnation
        if (cut->upto[i].incarnation <= cut->upto[i - 1].incarnation)
            return MS_ERR_INVALID;
    if (added)
        *added = false;
    if (n > MS_STORE_MAX_ITEM_BYTES)
        return MS_ERR_INVALID;
    s_op_t op = {.kind = S_OP_PUT_ITEM,
                 .id = digest,
                 .text = (const char *) bytes,
                 .len = n,
                 .node = subject,
                 .cut = cut,
                 .value = S_ITEM_CLEAR};
    int rc = s_submit(self, &op);
    if (rc == MS_OK && added)
        *added = !op.existed;
    return rc;
}

//  --------------------------------------------------------------------------
//  Every authority item

int
ms_store_items(ms_store_t *self, ms_store_item_fn fn, void *arg)
{
    if (!self || !fn)
        return MS_ERR_INVALID;
    if (!self->has_cuts)
        return MS_OK;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_items, NULL, 0, "cursor items");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID)
            continue;
        status = fn(arg, it.k.mv_data, it.v.mv_data, it.v.mv_size);
    }
    status = s_scan_close(&it, status);
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Check a block's arrays against the limits.

static bool
s_block_valid(size_t n, const uint32_t *kinds, const void *const *payloads,
              const size_t *lens)
{
    if (n == 0 || n > MS_RECORD_MAX_BLOCK || !kinds || !payloads || !lens)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lens[i] > MS_RECORD_MAX_PAYLOAD_BYTES || (lens[i] && !payloads[i]))
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  The records an append stores: the caller's, with each payload over
//  MS_STORE_FRAGMENT_BYTES replaced by its fragments.

typedef struct {
    size_t n;                 // records
    uint32_t *kinds;          // n
    const void **payloads;    // n (fragments: bufs[i]; else borrowed)
    size_t *lens;             // n
    uint8_t **bufs;           // n: owned fragment payloads, or NULL
    ms_store_payload_t **pre; // n: decoded inner payload at a last fragment
    size_t *first;            // per caller record: its first record index
    size_t cap;               // allocated entries
} s_expand_t;

//  --------------------------------------------------------------------------
//  Free what s_expand made.

static void
s_expand_free(s_expand_t *x)
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
s_expand_grow(s_expand_t *x, size_t more)
{
    if (x->n + more <= x->cap)
        return MS_OK;
    size_t cap = x->cap ? x->cap : 16;
    while (cap < x->n + more)
        cap *= 2;
    void *k = realloc(x->kinds, cap * sizeof *x->kinds);
    if (k)
        x->kinds = k;
    void *p = realloc(x->payloads, cap * sizeof *x->payloads);
    if (p)
        x->payloads = p;
    void *l = realloc(x->lens, cap * sizeof *x->lens);
    if (l)
        x->lens = l;
    void *b = realloc(x->bufs, cap * sizeof *x->bufs);
    if (b)
        x->bufs = b;
    void *d = realloc(x->pre, cap * sizeof *x->pre);
    if (d)
        x->pre = d;
    if (!k || !p || !l || !b || !d)
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
s_expand_fragments(s_expand_t *x, uint32_t kind, const uint8_t *payload,
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

static int
s_expand(s_expand_t *x, size_t n, const uint32_t *kinds,
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
        s_expand_free(x);
    return rc;
}

//  --------------------------------------------------------------------------
//  Append records of this node (fragmenting big payloads) as one op.

static int
s_append(ms_store_t *self, const uint8_t *origin, size_t n,
         const uint32_t *kinds, const void *const *payloads, const size_t *lens,
         bool explicit_block, ms_record_key_t *keys_out)
{
    if (self->read_only)
        return MS_ERR_UNSUPPORTED;
    s_expand_t x;
    int rc = s_expand(&x, n, kinds, payloads, lens);
    if (rc != MS_OK)
        return rc;
    ms_record_key_t one_key, *keys = &one_key;
    if (keys_out && x.n > 1) {
        keys = calloc(x.n, sizeof *keys);
        if (!keys) {
            s_expand_free(&x);
            return MS_ERR_NOMEM;
        }
    }
    s_op_t op = {.kind = S_OP_APPEND,
                 .node = origin,
                 .n_recs = x.n,
                 .kinds = x.kinds,
                 .payloads = (const void *const *) x.payloads,
                 .lens = x.lens,
                 .explicit_block = explicit_block,
                 .keys_out = keys_out ? keys : NULL,
                 .pre = x.pre};
    rc = s_submit(self, &op);
    if (rc == MS_OK && keys_out)
        for (size_t i = 0; i < n; i++)
            keys_out[i] = keys[x.first[i]];
    if (keys != &one_key)
        free(keys);
    s_expand_free(&x);
    return rc;
}

//  --------------------------------------------------------------------------
//  Append one record of this node.

int
ms_store_append(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                uint32_t kind, const void *payload, size_t len,
                ms_record_key_t *key_out)
{
    const void *payloads[1] = {payload};
    return s_append(self, origin, 1, &kind, payloads, &len, false, key_out);
}

//  --------------------------------------------------------------------------
//  Append N records of this node as one block (or consecutive blocks of
//  their own when fragments make them more than MS_RECORD_MAX_BLOCK).

int
ms_store_append_many(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                     size_t n, const uint32_t kinds[],
                     const void *const payloads[], const size_t lens[],
                     ms_record_key_t *keys_out)
{
    return s_append(self, origin, n, kinds, payloads, lens, true, keys_out);
}

//  --------------------------------------------------------------------------
//  Say whether NODE_ID may submit.

int
ms_store_set_may_submit(ms_store_t *self,
                        const uint8_t node_id[MS_STORE_ID_BYTES], bool may)
{
    int rc = MS_OK;
    pthread_mutex_lock(&self->role_mu);
    size_t i = 0;
    while (i < self->n_no_submit &&
           memcmp(self->no_submit[i], node_id, S_ID) != 0)
        i++;
    if (may && i < self->n_no_submit) {
        self->n_no_submit--;
        memmove(self->no_submit[i], self->no_submit[self->n_no_submit], S_ID);
    } else if (!may && i == self->n_no_submit) {
        if (self->n_no_submit == self->cap_no_submit) {
            size_t cap = self->cap_no_submit ? 2 * self->cap_no_submit : 16;
            uint8_t(*grown)[S_ID] = realloc(self->no_submit, cap * S_ID);
            if (!grown)
                rc = MS_ERR_NOMEM;
            else {
                self->no_submit = grown;
                self->cap_no_submit = cap;
            }
        }
        if (rc == MS_OK)
            memcpy(self->no_submit[self->n_no_submit++], node_id, S_ID);
    }
    pthread_mutex_unlock(&self->role_mu);
    return rc;
}

//  --------------------------------------------------------------------------
//  Sweep and sweep-control records stored but not applied (their origin
//  lacked the `submit` role).

uint64_t
ms_store_ignored_no_role(ms_store_t *self)
{
    pthread_mutex_lock(&self->role_mu);
    uint64_t n = self->n_ignored_no_role;
    pthread_mutex_unlock(&self->role_mu);
    return n;
}

//  --------------------------------------------------------------------------
//  Merge a peer's block.

int
ms_store_merge_block(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                     uint64_t incarnation, uint64_t first_seq, size_t n,
                     const uint32_t kinds[], const uint8_t *const payloads[],
                     const size_t lens[], const uint8_t *signature,
                     size_t sig_len, ms_store_merge_result_t *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    const void *const *pl = (const void *const *) payloads;
    if (!s_block_valid(n, kinds, pl, lens) || first_seq == 0 ||
        first_seq > UINT64_MAX - n || sig_len > MS_RECORD_MAX_SIG_BYTES ||
        (sig_len && !signature))
        return MS_ERR_INVALID;
    s_op_t op = {.kind = S_OP_MERGE,
                 .node = origin,
                 .incarnation = incarnation,
                 .first_seq = first_seq,
                 .n_recs = n,
                 .kinds = kinds,
                 .payloads = pl,
                 .lens = lens,
                 .sig = signature,
                 .sig_len = sig_len};
    int rc = s_submit(self, &op);
    if (out && (rc == MS_OK || rc == MS_ERR_RANGE))
        *out = op.merge;
    return rc;
}

//  --------------------------------------------------------------------------
//  Queue N ops at once (so they share commits) and wait for all of them.

static void
s_submit_many(ms_store_t *self, s_op_t *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ops[i].next = i + 1 < n ? &ops[i + 1] : NULL;
        ops[i].chained = i + 1 < n;
        ops[i].done = false;
        ops[i].rc = MS_OK;
    }
    pthread_mutex_lock(&self->q_mu);
    if (self->stopping) {
        pthread_mutex_unlock(&self->q_mu);
        for (size_t i = 0; i < n; i++)
            ops[i].rc = MS_ERR_INTERRUPTED;
        return;
    }
    if (self->q_tail)
        self->q_tail->next = &ops[0];
    else
        self->q_head = &ops[0];
    self->q_tail = &ops[n - 1];
    pthread_cond_signal(&self->q_cv);
    for (size_t i = 0; i < n; i++)
        while (!ops[i].done)
            pthread_cond_wait(&self->done_cv, &self->q_mu);
    pthread_mutex_unlock(&self->q_mu);
}

//  --------------------------------------------------------------------------
//  Merge many blocks in shared commits.

int
ms_store_merge_blocks(ms_store_t *self, const ms_store_block_t *blocks,
                      size_t n_blocks, int *rcs, ms_store_merge_result_t *outs)
{
    if (outs)
        memset(outs, 0, n_blocks * sizeof *outs);
    if (n_blocks == 0)
        return MS_OK;
    if (self->read_only)
        return MS_ERR_UNSUPPORTED;
    if (s_tls_slot(self, false)) {
        fprintf(stderr, "meshsweep: store: write called inside a read "
                        "callback; refused\n");
        return MS_ERR_INVALID;
    }
    s_op_t *ops = calloc(n_blocks, sizeof *ops);
    if (!ops)
        return MS_ERR_NOMEM;
    size_t n_ops = 0;
    int first_err = MS_OK;
    int *valid = calloc(n_blocks, sizeof *valid);
    size_t *index = calloc(n_blocks, sizeof *index); // op -> block
    if (!valid || !index) {
        free(index);
        free(valid);
        free(ops);
        return MS_ERR_NOMEM;
    }
    for (size_t i = 0; i < n_blocks; i++) {
        const ms_store_block_t *b = &blocks[i];
        const void *const *pl = (const void *const *) b->payloads;
        if (!b->origin || !s_block_valid(b->n, b->kinds, pl, b->lens) ||
            b->first_seq == 0 || b->first_seq > UINT64_MAX - b->n ||
            b->sig_len > MS_RECORD_MAX_SIG_BYTES ||
            (b->sig_len && !b->signature)) {
            valid[i] = MS_ERR_INVALID;
            continue;
        }
        index[n_ops] = i;
        ops[n_ops++] = (s_op_t){.kind = S_OP_MERGE,
                                .node = b->origin,
                                .incarnation = b->incarnation,
                                .first_seq = b->first_seq,
                                .n_recs = b->n,
                                .kinds = b->kinds,
                                .payloads = pl,
                                .lens = b->lens,
                                .sig = b->signature,
                                .sig_len = b->sig_len};
    }
    if (n_ops > 0)
        s_submit_many(self, ops, n_ops);
    for (size_t j = 0; j < n_ops; j++) {
        size_t i = index[j];
        valid[i] = ops[j].rc;
        if (outs && (ops[j].rc == MS_OK || ops[j].rc == MS_ERR_RANGE))
            outs[i] = ops[j].merge;
    }
    for (size_t i = 0; i < n_blocks; i++) {
        if (rcs)
            rcs[i] = valid[i];
        if (first_err == MS_OK && valid[i] != MS_OK)
            first_err = valid[i];
    }
    free(index);
    free(valid);
    free(ops);
    return first_err;
}

//  --------------------------------------------------------------------------
//  Call fn for each vector entry.

int
ms_store_vector(ms_store_t *self, ms_store_vector_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_scan_t it;
    int status =
        s_scan_open(&it, txn, self->db_vectors, NULL, 0, "cursor vectors");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID + 8 || it.v.mv_size != 8) {
            status = s_mdb(MDB_CORRUPTED, "vector entry");
            break;
        }
        status = fn(arg, it.k.mv_data,
                    s_get_be64((const uint8_t *) it.k.mv_data + S_ID),
                    s_get_be64(it.v.mv_data));
    }
    status = s_scan_close(&it, status);
    s_read_end(self, txn);
    return status;
}

// Digest state while walking the vector.
typedef struct {
    ms_hasher_t hasher; // running BLAKE2b
    uint64_t n;         // entries so far
} s_vec_digest_t;

//  --------------------------------------------------------------------------
//  Feed one vector entry into the digest.

static int
s_vec_digest_fn(void *arg, const uint8_t *origin, uint64_t inc, uint64_t seq)
{
    s_vec_digest_t *d = arg;
    uint8_t e[S_KEY];
    s_rec_key(e, origin, inc, seq);
    ms_hasher_update(&d->hasher, e, sizeof e);
    d->n++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Digest of the version vector (cached until the next vector commit).

int
ms_store_vector_digest(ms_store_t *self, uint8_t digest[32],
                       uint64_t *n_entries)
{
    pthread_mutex_lock(&self->gate_mu);
    uint64_t gen = self->vec_gen;
    bool cached = self->digest_valid && self->digest_gen == gen;
    if (cached) {
        memcpy(digest, self->digest, 32);
        if (n_entries)
            *n_entries = self->digest_n;
    }
    pthread_mutex_unlock(&self->gate_mu);
    if (cached)
        return MS_OK;
    s_vec_digest_t d = {.n = 0};
    ms_hasher_init(&d.hasher);
    int rc = ms_store_vector(self, s_vec_digest_fn, &d);
    if (rc != MS_OK)
        return rc;
    ms_hash_t h;
    ms_hasher_final(&d.hasher, &h);
    memcpy(digest, h.bytes, 32);
    if (n_entries)
        *n_entries = d.n;
    pthread_mutex_lock(&self->gate_mu);
    if (self->vec_gen == gen) {
        memcpy(self->digest, h.bytes, 32);
        self->digest_n = d.n;
        self->digest_gen = gen;
        self->digest_valid = true;
    }
    pthread_mutex_unlock(&self->gate_mu);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Highest contiguous seq held of one (origin, incarnation).

int
ms_store_held(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
              uint64_t incarnation, uint64_t *seq)
{
    *seq = 0;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    rc = s_vector_get(self, txn, origin, incarnation, seq);
    s_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Give one stored block (header value HV) to fn, with its records.

static int
s_block_emit(ms_store_t *self, MDB_txn *txn, MDB_cursor *rcur,
             const uint8_t *origin, uint64_t inc, uint64_t first,
             const MDB_val *hv, ms_store_block_fn fn, void *arg, size_t *n_out)
{
    (void) self;
    (void) txn;
    if (hv->mv_size < 8)
        return s_mdb(MDB_CORRUPTED, "block header");
    const uint8_t *h = hv->mv_data;
    uint32_t n = s_get_be32(h), sig_len = s_get_be32(h + 4);
    if (n == 0 || n > MS_RECORD_MAX_BLOCK ||
        hv->mv_size != 8 + (size_t) sig_len)
        return s_mdb(MDB_CORRUPTED, "block header");
    uint32_t kinds[MS_RECORD_MAX_BLOCK];
    const uint8_t *payloads[MS_RECORD_MAX_BLOCK];
    size_t lens[MS_RECORD_MAX_BLOCK];
    uint8_t key[S_KEY];
    s_rec_key(key, origin, inc, first);
    MDB_val k = {S_KEY, key}, v;
    int rc = mdb_cursor_get(rcur, &k, &v, MDB_SET_KEY);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            rc = mdb_cursor_get(rcur, &k, &v, MDB_NEXT);
        if (rc != 0 || k.mv_size != S_KEY ||
            memcmp(k.mv_data, origin, S_ID) != 0 ||
            s_get_be64((const uint8_t *) k.mv_data + S_ID) != inc ||
            s_get_be64((const uint8_t *) k.mv_data + S_ID + 8) != first + i ||
            v.mv_size < 4)
            return s_mdb(rc && rc != MDB_NOTFOUND ? rc : MDB_CORRUPTED,
                         "record of a block");
        kinds[i] = s_get_be32(v.mv_data);
        payloads[i] = (const uint8_t *) v.mv_data + 4;
        lens[i] = v.mv_size - 4;
    }
    *n_out = n;
    return fn(arg, origin, inc, first, n, kinds, payloads, lens,
              sig_len ? h + 8 : NULL, sig_len);
}

//  --------------------------------------------------------------------------
//  Call fn for each whole stored block overlapping from..to.

int
ms_store_read_blocks(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                     uint64_t incarnation, uint64_t from_seq, uint64_t to_seq,
                     size_t max_records, ms_store_block_fn fn, void *arg)
{
    if (from_seq == 0)
        from_seq = 1;
    if (to_seq < from_seq)
        return MS_OK;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_cursor *bcur = NULL, *rcur = NULL;
    rc = mdb_cursor_open(txn, self->db_blocks, &bcur);
    if (rc == 0)
        rc = mdb_cursor_open(txn, self->db_records, &rcur);
    int status = rc ? s_mdb(rc, "cursor blocks") : MS_OK;
    uint8_t prefix[S_ID + 8], start[S_KEY];
    memcpy(prefix, origin, S_ID);
    s_put_be64(prefix + S_ID, incarnation);
    s_rec_key(start, origin, incarnation, from_seq);
    MDB_val k = {S_KEY, start}, v;
    // Find the block holding from_seq: the last block starting at or
    // before it, if it reaches it; else the first block after it.
    uint64_t first = 0;
    if (status == MS_OK) {
        rc = mdb_cursor_get(bcur, &k, &v, MDB_SET_RANGE);
        bool exact = rc == 0 && k.mv_size == S_KEY &&
                     memcmp(k.mv_data, start, S_KEY) == 0;
        if (!exact) {
            MDB_val pk, pv;
            int prc = mdb_cursor_get(bcur, &pk, &pv,
                                     rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
            if (prc == 0 && pk.mv_size == S_KEY &&
                memcmp(pk.mv_data, prefix, sizeof prefix) == 0 &&
                pv.mv_size >= 8 &&
                s_get_be64((const uint8_t *) pk.mv_data + S_ID + 8) +
                        s_get_be32(pv.mv_data) >
                    from_seq) {
                k = pk;
                v = pv;
                rc = 0;
            } else {
                k.mv_size = S_KEY;
                k.mv_data = start;
                rc = mdb_cursor_get(bcur, &k, &v, MDB_SET_RANGE);
            }
        }
    }
    size_t n_total = 0;
    for (; status == MS_OK && rc == 0;
         rc = mdb_cursor_get(bcur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != S_KEY || memcmp(k.mv_data, prefix, sizeof prefix))
            break;
        first = s_get_be64((const uint8_t *) k.mv_data + S_ID + 8);
        if (first > to_seq)
            break;
        size_t n = 0;
        status = s_block_emit(self, txn, rcur, origin, incarnation, first, &v,
                              fn, arg, &n);
        n_total += n;
        if (max_records > 0 && n_total >= max_records)
            break;
    }
    if (status == MS_OK && rc != 0 && rc != MDB_NOTFOUND)
        status = s_mdb(rc, "cursor blocks");
    if (rcur)
        mdb_cursor_close(rcur);
    if (bcur)
        mdb_cursor_close(bcur);
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Whether an origin is marked equivocating.

int
ms_store_equivocating(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                      bool *out)
{
    *out = false;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val k = {S_ID, (void *) origin}, v;
    rc = mdb_get(txn, self->db_equivocators, &k, &v);
    *out = rc == 0;
    rc = rc == 0 || rc == MDB_NOTFOUND ? MS_OK : s_mdb(rc, "get equivocator");
    s_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Set the member count of the failure rule.

//  Submit a count-setting op (member count, operator count): 0 refused,
//  clamped to INT32_MAX.

static int
s_submit_count(ms_store_t *self, s_op_kind_t kind, uint32_t n)
{
    if (n == 0)
        return MS_ERR_INVALID;
    s_op_t op = {.kind = kind,
                 .value = n > INT32_MAX ? INT32_MAX : (int32_t) n};
    return s_submit(self, &op);
}

int
ms_store_set_member_count(ms_store_t *self, uint32_t n_members)
{
    return s_submit_count(self, S_OP_MEMBERS, n_members);
}

//  --------------------------------------------------------------------------
//  Call fn for each claim row of a task.

int
ms_store_claims_by_task(ms_store_t *self,
                        const uint8_t task_id[MS_STORE_ID_BYTES],
                        ms_store_claim_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_scan_t it;
    int status =
        s_scan_open(&it, txn, self->db_claims, task_id, S_ID, "cursor claims");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != 2 * S_ID + 12)
            break;
        s_claim_row_t row;
        if (it.v.mv_size != sizeof row) {
            status = s_mdb(MDB_CORRUPTED, "claim row");
            break;
        }
        memcpy(&row, it.v.mv_data, sizeof row);
        if (row.claimed && !s_key_counts(self, txn, row.claim_key, &status))
            continue; // above its origin's revocation cut: holds nothing
        if (status != MS_OK)
            break;
        const uint8_t *kp = it.k.mv_data;
        ms_store_claim_t c = {.slot = s_get_be32(kp + S_ID),
                              .epoch = s_get_be64(kp + S_ID + 4),
                              .claimed = row.claimed,
                              .released = row.released,
                              .reason = row.reason};
        memcpy(c.task_id, kp, S_ID);
        memcpy(c.node_id, kp + S_ID + 12, S_ID);
        if (row.claimed)
            s_key_parse(row.claim_key, &c.claim_key);
        if (row.released)
            s_key_parse(row.release_key, &c.release_key);
        status = fn(arg, &c);
    }
    status = s_scan_close(&it, status);
    s_read_end(self, txn);
    return status;
}

// An active sweep in serving order.
typedef struct {
    uint8_t id[S_ID];      // sweep id
    int32_t priority;      // higher first
    int64_t created_at_ms; // then earlier first
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
    return memcmp(x->id, y->id, S_ID);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_sweep_order_t *sweeps = NULL;
    size_t n = 0, cap = 0;
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_sweep_meta, NULL, 0,
                             "cursor sweep_meta");
    while (status == MS_OK && s_scan_next(&it)) {
        s_sweep_hdr_t sh;
        if (it.k.mv_size != S_ID || it.v.mv_size != sizeof sh)
            continue;
        memcpy(&sh, it.v.mv_data, sizeof sh);
        if (sh.state != MS_SWEEP_ACTIVE)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            s_sweep_order_t *grown = realloc(sweeps, cap * sizeof *sweeps);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            sweeps = grown;
        }
        memcpy(sweeps[n].id, it.k.mv_data, S_ID);
        sweeps[n].priority = sh.priority;
        sweeps[n].created_at_ms = sh.created_at_ms;
        n++;
    }
    status = s_scan_close(&it, status);
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
            status = s_mdb(rc, "cursor task_state");
    }
    for (size_t s = 0; status == MS_OK && s < n; s++) {
        MDB_val rk[S_OPEN_STATES], rv[S_OPEN_STATES];
        bool live[S_OPEN_STATES];
        uint8_t start[S_OPEN_STATES][1 + S_ID + 4];
        for (int r = 0; r < S_OPEN_STATES; r++) {
            s_state_key(start[r], open_states[r], sweeps[s].id, 0);
            rk[r].mv_size = sizeof start[r];
            rk[r].mv_data = start[r];
            rc = mdb_cursor_get(runs[r], &rk[r], &rv[r], MDB_SET_RANGE);
            live[r] = rc == 0 && rk[r].mv_size == 1 + S_ID + 4 &&
                      ((const uint8_t *) rk[r].mv_data)[0] == open_states[r] &&
                      memcmp((const uint8_t *) rk[r].mv_data + 1, sweeps[s].id,
                             S_ID) == 0;
            if (rc != 0 && rc != MDB_NOTFOUND)
                status = s_mdb(rc, "cursor task_state");
        }
        while (status == MS_OK) {
            int best = -1;
            for (int r = 0; r < S_OPEN_STATES; r++)
                if (live[r] &&
                    (best < 0 ||
                     memcmp((const uint8_t *) rk[r].mv_data + 1 + S_ID,
                            (const uint8_t *) rk[best].mv_data + 1 + S_ID,
                            4) < 0))
                    best = r;
            if (best < 0)
                break;
            MDB_val tk = rv[best], tv;
            s_task_hdr_t hdr;
            ms_store_task_t view;
            ms_store_task_filter_t f =
                tk.mv_size == S_ID && skip
                    ? skip(arg, tk.mv_data, sweeps[s].id,
                           (ms_task_state_t) open_states[best])
                    : MS_STORE_TASK_READ;
            if (f == MS_STORE_TASK_STOP)
                break;
            bool skipped = f == MS_STORE_TASK_SKIP;
            bool key_only = f == MS_STORE_TASK_KEY && tk.mv_size == S_ID;
            int g = skipped || key_only ? 0
                    : tk.mv_size == S_ID
                        ? mdb_get(txn, self->db_tasks, &tk, &tv)
                        : MDB_CORRUPTED;
            if (key_only) {
                // The task as the index has it (no row read).
                memset(&view, 0, sizeof view);
                memcpy(view.task_id, tk.mv_data, S_ID);
                memcpy(view.sweep_id, sweeps[s].id, S_ID);
                view.index =
                    s_get_be32((const uint8_t *) rk[best].mv_data + 1 + S_ID);
                view.state = (ms_task_state_t) open_states[best];
                view.error = "";
            } else if (!skipped &&
                       (g != 0 ||
                        s_task_decode(tk.mv_data, &tv, &hdr, &view) != MS_OK)) {
                status = s_mdb(g ? g : MDB_CORRUPTED, "task record");
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
                rc == 0 && rk[best].mv_size == 1 + S_ID + 4 &&
                ((const uint8_t *) rk[best].mv_data)[0] == open_states[best] &&
                memcmp((const uint8_t *) rk[best].mv_data + 1, sweeps[s].id,
                       S_ID) == 0;
            if (rc != 0 && rc != MDB_NOTFOUND)
                status = s_mdb(rc, "cursor task_state");
        }
    }
    for (int r = 0; r < S_OPEN_STATES; r++)
        if (runs[r])
            mdb_cursor_close(runs[r]);
    free(sweeps);
    s_read_end(self, txn);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_control_row_t *rows = NULL;
    size_t n = 0;
    rc = s_control_rows(self, txn, sweep_id, &rows, &n);
    s_read_end(self, txn);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_stat st;
    rc = mdb_stat(txn, self->db_results, &st);
    if (rc == 0)
        *n = st.ms_entries;
    s_read_end(self, txn);
    return rc ? s_mdb(rc, "stat results") : MS_OK;
}

//  --------------------------------------------------------------------------
//  Feed a length-prefixed byte string into a hasher.

static void
s_hash_item(ms_hasher_t *h, const void *data, size_t len)
{
    uint8_t lb[8];
    s_put_be64(lb, len);
    ms_hasher_update(h, lb, 8);
    ms_hasher_update(h, data, len);
}

//  --------------------------------------------------------------------------
//  Hash one database's entries (key, value) in key order. MODE selects
//  a projection of local-only fields: 0 as stored, 1 sweep_meta, 2 tasks.

static int
s_hash_db(MDB_txn *txn, MDB_dbi dbi, const char *name, int mode, ms_hasher_t *h)
{
    s_scan_t it;
    int status = s_scan_open(&it, txn, dbi, NULL, 0, "cursor (digest)");
    if (status != MS_OK)
        return status;
    s_hash_item(h, name, strlen(name));
    while (status == MS_OK && s_scan_next(&it)) {
        MDB_val k = it.k, v = it.v;
        s_hash_item(h, k.mv_data, k.mv_size);
        if (mode == 1 && v.mv_size == sizeof(s_sweep_hdr_t)) {
            s_sweep_hdr_t sh;
            memcpy(&sh, v.mv_data, sizeof sh);
            uint8_t b[4 + 4 + 8 + 8 + 8 * MS_TASK_N_STATES];
            uint64_t counts[MS_TASK_N_STATES];
            memcpy(counts, sh.counts, sizeof counts);
            counts[MS_TASK_PENDING] +=
                counts[MS_TASK_CLAIMED] + counts[MS_TASK_RUNNING];
            counts[MS_TASK_CLAIMED] = counts[MS_TASK_RUNNING] = 0;
            s_put_be32(b, sh.state);
            s_put_be32(b + 4, (uint32_t) sh.priority);
            s_put_be64(b + 8, sh.n_tasks);
            s_put_be64(b + 16, 0); // created_at: local arrival time
            for (int i = 0; i < MS_TASK_N_STATES; i++)
                s_put_be64(b + 24 + 8 * i, counts[i]);
            s_hash_item(h, b, sizeof b);
        } else if (mode == 2) {
            s_task_hdr_t th;
            ms_store_task_t view;
            if (k.mv_size != S_ID ||
                s_task_decode(k.mv_data, &v, &th, &view) != MS_OK) {
                status = s_mdb(MDB_CORRUPTED, "task record");
                break;
            }
            int state = th.state;
            if (state == MS_TASK_CLAIMED || state == MS_TASK_RUNNING)
                state = MS_TASK_PENDING;
            uint8_t b[S_ID + 8];
            memcpy(b, th.sweep_id, S_ID);
            s_put_be32(b + S_ID, th.index);
            s_put_be32(b + S_ID + 4, (uint32_t) state);
            s_hash_item(h, b, sizeof b);
            s_hash_item(h, view.config_json, view.config_len);
        } else {
            s_hash_item(h, v.mv_data, v.mv_size);
        }
    }
    return s_scan_close(&it, status);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    int status = MS_OK;
    MDB_dbi dbis[2] = {self->db_results, self->db_result_meta};
    for (int t = 0; t < 2 && status == MS_OK; t++) {
        s_scan_t it;
        status = s_scan_open(&it, txn, dbis[t], task_id, S_ID,
                             t == 0 ? "cursor results" : "cursor result_meta");
        size_t key_len = t == 0 ? 2 * S_ID : 2 * S_ID + 16;
        while (status == MS_OK && s_scan_next(&it)) {
            if (it.k.mv_size != key_len)
                break;
            const uint8_t *m = it.v.mv_data;
            if (t == 0 && it.v.mv_size == 0) {
                status = s_mdb(MDB_CORRUPTED, "result row");
                break;
            }
            if (t == 1 &&
                (it.v.mv_size < S_RM_ROW + 1 || !m[0] || m[2] != S_PLACE_EXTRA))
                continue; // not counted, or it fills a slot
            size_t off = t == 0 ? 0 : S_RM_ROW;
            status =
                fn(arg, (const char *) m + off, it.v.mv_size - off - 1, t == 1);
        }
        status = s_scan_close(&it, status);
    }
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Digest of every derived table.

int
ms_store_state_digest(ms_store_t *self, uint8_t digest[32])
{
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
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
    s_read_end(self, txn);
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
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_hasher_t h;
    ms_hasher_init(&h);
    rc = s_hash_db(txn, self->db_results, "results", 0, &h);
    s_read_end(self, txn);
    ms_hash_t out;
    ms_hasher_final(&h, &out);
    if (rc == MS_OK)
        memcpy(digest, out.bytes, 32);
    return rc;
}

/*  =========================================================================
    Verdicts in the store (DESIGN.md "Verification"; docs/VERIFICATION.md
    "In the store")

    Layout:

      verdicts       task -> s_vrow_t || marks (s_vmark_t, by node id) ||
                     operators of S (sorted, comma-separated) + NUL
      verdict_nodes  node -> counted (u32) || strikes (u32) ||
                     quarantined (u8) || 3 pad || forgiven (u32): the
                     stratum-1 tally over tasks (rows of older stores
                     end before forgiven: 0)
      operators      node -> operator name + NUL (ms_store_set_operator)
      sweep_verify   sweep -> replicas (u32) || accuracy tolerance (f64)
                     || loss tolerance (f64), from the sweep record

    s_verdict_derive evaluates one task with ms_verdict_evaluate over its
    counted results (result_meta counted, slot fillers and extra replicas
    alike: an extra replica is still a valid result of its operator),
    twice: stratum 1 with nobody quarantined (its counted flags and
    strikes feed the per-node tally, kept by difference against the
    task's previous row, so the tally is the sum over tasks whatever the
    order), stratum 3 without the quarantined nodes (the verdict). When a
    node's quarantine flips, every task it has a result in is evaluated
    again, the task being derived included (its caller reads the task's
    state and verdict again afterwards). A flip is the net change over
    the tally's two passes: a node at exactly K strikes whose struck task
    is evaluated again dips to K - 1 between them, which is no flip.
    Everything read is stored data or the pool operator count, so the rows
    are a pure function of (records, operators, count).

    The revision is a pure function too, not a local history: it is the
    number of changes of the verdict's view (ms_verdict_revision: the state, and
    once decided the operators of S and the lower median m and its loss)
    when the task's counted results are taken one by one in their
    canonical order (seq, record hash) with no node quarantined, then once
    more for the final evaluation (quarantine applied) - "a late replica
    changes the verdict" where late means later in that order, and a
    quarantine that takes a producer out of S is one more change. Two
    nodes that got the results in different orders show the same
    revision, so result rows (which carry it) stay byte-identical across
    nodes. A result left out by a revocation cut is no input (a node that
    got the revocation first never stored it), so a revocation changes
    the revision only through that sequence (docs/VERIFICATION.md
    "Revision"). A node still emits an event for every change it sees:
    state, revision, or the operators of S.

    The verdict tables are left out of ms_store_state_digest: they also
    depend on the node's view of the pool's size, which differs for a
    moment between nodes; the result rows that carry them are compared
    by the pool tests instead.

    The authority's quarantine clears (ms_store_put_clear) each carry a
    cut of the node's log; their union is kept in cuts under node || 'Q'
    (per incarnation the highest seq of any clear: a grow-only set, so
    any order of clears gives the same union). A stratum-1 strike of a
    result inside that union is forgiven (S_VM_RAW_FORGIVEN, summed into
    the node's forgiven count like strikes, by difference); the
    quarantine rule subtracts it (ms_verdict_quarantined). Forgiveness
    is thus a function of the clears and the records: a node that got
    the clear before the results forgives exactly what one that got it
    after does. A new clear derives every task of the node again.

    Commit then reveal decides which results are counted at all (see
    "Record log", commit): with replicas >= 2 a result without a matching
    earlier commit of its node never reaches the verdict.

    Re-evaluations (REEVALUATION records, docs/VERIFICATION.md
    "Re-evaluation") are kept in reevals (task || verifier record key ->
    s_reeval_val_t) and passed to every evaluation of the task, the
    revision's prefixes included (a re-evaluation whose target is not in
    a prefix yet has no target there). Their verifiers' operators and
    quarantine are read like the producers'. A new ok result is also
    queued (ms_store_new_results) for the node's own sampling.
    =========================================================================
*/

#define S_VMAX 64 // counted results of one task evaluated (first by order)
// The view a revision counts names as many operators as a row describes.
_Static_assert(MS_VERDICT_VIEW_OPERATORS == MS_STORE_VERDICT_MAX_MARKS,
               "a verdict's view and its row describe the same operators");

//  Verdict row header (verdicts db). Native endianness: local.
typedef struct {
    uint8_t version;       // 1
    uint8_t verdict;       // ms_verdict_state_t
    uint8_t status;        // ms_run_status_t of S
    uint8_t flags;         // S_VF_*
    uint32_t revision;     // see above
    uint32_t n_needed;     // min(replicas, pool operators)
    uint32_t n_operators;  // operators with a counted result
    uint32_t n_agreeing;   // |S|
    uint32_t slots_wanted; // what the task wants now
    uint32_t n_marks;      // s_vmark_t that follow
    uint32_t void_slots;   // slots finished by results that do not count
                           // (zero in rows of older stores)
    uint8_t median[S_ID];  // producer of the lower median (S_VF_MEDIAN)
} s_vrow_t;

#define S_VF_EXHAUSTED 1
#define S_VF_FINAL 2
#define S_VF_MEDIAN 4

//  One result in a verdict row.
typedef struct {
    uint8_t node[S_ID]; // producer
    uint8_t flags;      // S_VM_*
    uint8_t role;       // ms_verdict_role_t (final stratum)
} s_vmark_t;

#define S_VM_RAW_COUNTED 1
#define S_VM_RAW_STRIKE 2
#define S_VM_COUNTED 4
#define S_VM_AGREES 8
#define S_VM_RAW_FORGIVEN 16 // a raw strike inside the node's clear cut

//  Per-node tally (verdict_nodes).
typedef struct {
    uint32_t n_counted; // counted in stratum 1, over tasks
    uint32_t n_strikes; // strikes in stratum 1, over tasks
    uint8_t quarantined;
    uint8_t pad[3];
    uint32_t n_forgiven; // its stratum-1 strikes inside its clears' cut
                         // (rows of older stores end before it: 0)
} s_vnode_t;

//  One counted result while evaluating.
typedef struct {
    uint8_t node[S_ID];
    char op[MS_STORE_OPERATOR_MAX + 1];
} s_vin_t;

//  --------------------------------------------------------------------------
//  The operator of a node: the stored name, else its id in hex.

static int
s_operator_of(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
              char out[MS_STORE_OPERATOR_MAX + 1])
{
    MDB_val k = {S_ID, (void *) node}, v;
    int rc = self->has_verdicts ? mdb_get(txn, self->db_operators, &k, &v)
                                : MDB_NOTFOUND;
    if (rc == 0 && v.mv_size >= 2 && v.mv_size <= MS_STORE_OPERATOR_MAX + 1) {
        memcpy(out, v.mv_data, v.mv_size);
        out[v.mv_size - 1] = 0;
        return MS_OK;
    }
    if (rc != 0 && rc != MDB_NOTFOUND)
        return s_mdb(rc, "get operator");
    ms_hash_t id; // a node id prints as a hash does (not snprintf per
    memcpy(id.bytes, node, S_ID); // byte: a fifth of the verdict's time)
    ms_hash_hex(&id, out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A node's tally (zeros when none).

static int
s_vnode_get(ms_store_t *self, MDB_txn *txn, const uint8_t *node, s_vnode_t *out)
{
    memset(out, 0, sizeof *out);
    if (!self->has_verdicts)
        return MS_OK;
    MDB_val k = {S_ID, (void *) node}, v;
    int rc = mdb_get(txn, self->db_verdict_nodes, &k, &v);
    if (rc == 0 && (v.mv_size == sizeof *out ||
                    v.mv_size == offsetof(s_vnode_t, n_forgiven)))
        memcpy(out, v.mv_data, v.mv_size);
    else if (rc != 0 && rc != MDB_NOTFOUND)
        return s_mdb(rc, "get verdict_nodes");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Writer: apply a quarantine clear of NODE with CUT (DESIGN.md
//  "Verification": "the authority can clear a quarantine with a signed
//  item"): the node's forgiven cut grows to the union with CUT (per
//  incarnation the higher seq; at most MS_STORE_MAX_CUT incarnations, the
//  lowest kept, so the union does not depend on the order of the
//  clears), and every task it has a result in is derived again, which
//  forgives the strikes of its results inside the cut (S_VM_RAW_FORGIVEN)
//  and lifts its quarantine when too few strikes are left. Strikes of
//  results above the cut still count.

static int
s_apply_clear(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
              const ms_store_cut_t *cut)
{
    if (!self->has_cuts)
        return MS_OK;
    ms_store_cut_t have, next;
    bool has;
    int rc = s_clear_cut_get(self, txn, node, &have, &has);
    if (rc != MS_OK)
        return rc;
    memset(&next, 0, sizeof next);
    size_t i = 0, j = 0;
    while ((i < have.n || j < cut->n) && next.n < MS_STORE_MAX_CUT) {
        bool take_have = j == cut->n ||
                         (i < have.n &&
                          have.upto[i].incarnation <= cut->upto[j].incarnation);
        bool take_cut = i == have.n ||
                        (j < cut->n &&
                         cut->upto[j].incarnation <= have.upto[i].incarnation);
        uint64_t inc =
            take_have ? have.upto[i].incarnation : cut->upto[j].incarnation;
        uint64_t seq = 0;
        if (take_have)
            seq = have.upto[i++].seq;
        if (take_cut && cut->upto[j].seq > seq)
            seq = cut->upto[j].seq;
        if (take_cut)
            j++;
        next.upto[next.n].incarnation = inc;
        next.upto[next.n].seq = seq;
        next.n++;
    }
    bool same = has && next.n == have.n;
    for (size_t e = 0; same && e < next.n; e++)
        same = next.upto[e].incarnation == have.upto[e].incarnation &&
               next.upto[e].seq == have.upto[e].seq;
    if (same)
        return MS_OK;
    uint8_t key[S_CLEAR_KEY];
    memcpy(key, node, S_ID);
    key[S_ID] = 'Q';
    rc = s_cut_put(self, txn, key, sizeof key, &next);
    if (rc == MS_OK && self->has_verdicts)
        rc = s_verdict_requeue_node(self, txn, node);
    return rc;
}

//  --------------------------------------------------------------------------
//  A sweep's verify parameters (defaults when not stored).

static int
s_sweep_verify_get(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                   ms_verdict_params_t *p)
{
    ms_verdict_params_default(p);
    if (!self->has_verdicts)
        return MS_OK;
    MDB_val k = {S_ID, (void *) sweep_id}, v;
    int rc = mdb_get(txn, self->db_sweep_verify, &k, &v);
    if (rc == MDB_NOTFOUND) {
        s_sweep_hdr_t sh;
        if (s_sweep_hdr_get(self, txn, sweep_id, &sh) == MS_OK &&
            sh.replicas > 0)
            p->replicas = sh.replicas;
        return MS_OK;
    }
    if (rc != 0)
        return s_mdb(rc, "get sweep_verify");
    if (v.mv_size == 20) {
        const uint8_t *b = v.mv_data;
        uint32_t r = s_get_be32(b);
        double acc, loss;
        memcpy(&acc, b + 4, 8);
        memcpy(&loss, b + 12, 8);
        if (r >= 1 && r <= MS_VERDICT_REPLICAS_MAX)
            p->replicas = r;
        if (isfinite(acc) && acc >= 0 && acc <= MS_VERDICT_TOLERANCE_MAX)
            p->accuracy_tolerance = acc;
        if (isfinite(loss) && loss >= 0 && loss <= MS_VERDICT_TOLERANCE_MAX)
            p->loss_tolerance = loss;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Store a sweep's verify parameters (sweep record apply).

static int
s_sweep_verify_put(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                   uint32_t replicas, double acc, double loss)
{
    uint8_t b[20];
    s_put_be32(b, replicas);
    memcpy(b + 4, &acc, 8);
    memcpy(b + 12, &loss, 8);
    MDB_val k = {S_ID, (void *) sweep_id}, v = {sizeof b, b};
    return s_mdb(mdb_put(txn, self->db_sweep_verify, &k, &v, 0),
                 "put sweep_verify");
}

//  --------------------------------------------------------------------------
//  Note a changed verdict for the node's events (bounded queue).

static void
s_verdict_note(ms_store_t *self, const uint8_t *task_id)
{
    pthread_mutex_lock(&self->vc_mu);
    if (ms_ring_push(self->vc_ids, task_id))
        self->vc_dropped++;
    pthread_mutex_unlock(&self->vc_mu);
}

//  --------------------------------------------------------------------------
//  The operators of a verdict's agreeing set S: the names of the results
//  whose mark agrees, sorted, unique, comma-joined into out (cap bytes, at
//  most MS_STORE_VERDICT_MAX_MARKS names). Returns the length written.

static size_t
s_agreeing_operators(const ms_verdict_result_t *res,
                     const ms_verdict_mark_t *marks, size_t n, char *out,
                     size_t cap)
{
    const char *sorted[S_VMAX];
    size_t n_ops = 0;
    for (size_t i = 0; i < n && n_ops < S_VMAX; i++)
        if (marks[i].agrees)
            sorted[n_ops++] = res[i].operator_name;
    for (size_t i = 1; i < n_ops; i++)
        for (size_t j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--) {
            const char *t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n_ops && i < MS_STORE_VERDICT_MAX_MARKS; i++) {
        if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
            continue;
        int w = snprintf(out + used, cap - used, "%s%s", used ? "," : "",
                         sorted[i]);
        if (w < 0 || (size_t) w >= cap - used) {
            out[used] = '\0';
            break;
        }
        used += (size_t) w;
    }
    return used;
}

//  --------------------------------------------------------------------------
//  Slots of a task finished by results that do not count (DESIGN.md
//  "Verification": a task needs its slots *filled* by counted results): a
//  slot is done in the lease table once any result finished it, so a slot
//  whose results are all left out (a quarantined or revoked producer, a
//  reveal without its commit, a duplicate operator) is never claimed
//  again. The scheduler looks that many slots further (ms_store_task_slots).
//  slot_of/fin: the n verdict inputs; other: the slots of the n_other
//  results that are no verdict input. A pure function of the records.

static uint32_t
s_void_slots(const uint32_t *slot_of, const ms_verdict_mark_t *fin, size_t n,
             const uint32_t *other, size_t n_other)
{
    uint32_t seen[2 * S_VMAX];
    uint32_t n_void = 0, n_seen = 0;
    for (size_t i = 0; i < n + n_other; i++) {
        bool counted = i < n && fin[i].counted;
        uint32_t slot = i < n ? slot_of[i] : other[i - n];
        if (counted)
            continue;
        bool dup = false;
        for (uint32_t j = 0; j < n_seen && !dup; j++)
            dup = seen[j] == slot;
        for (size_t j = 0; j < n && !dup; j++)
            dup = fin[j].counted && slot_of[j] == slot;
        if (dup)
            continue;
        seen[n_seen++] = slot;
        n_void++;
    }
    return n_void;
}

//  --------------------------------------------------------------------------
//  The re-evaluations of a task (up to S_RVMAX, first by key) into a new
//  array *out with their verifiers' operators in *ops (caller frees
//  both). A verifier's record above its revocation cut is left out, like
//  its results (its quarantine is read with the operator).

#define S_RVMAX 256

static int
s_reevals_load(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
               ms_verdict_reeval_t **out, s_vin_t **ops, size_t *n_out)
{
    *out = NULL;
    *ops = NULL;
    *n_out = 0;
    if (!self->has_reevals)
        return MS_OK;
    ms_verdict_reeval_t *e = calloc(S_RVMAX, sizeof *e);
    s_vin_t *in = calloc(S_RVMAX, sizeof *in);
    int status = e && in ? MS_OK : MS_ERR_NOMEM;
    s_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = s_scan_open(&it, txn, self->db_reevals, task_id, S_ID,
                             "cursor reevals");
    size_t n = 0;
    while (status == MS_OK && n < S_RVMAX && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID + S_KEY)
            break;
        if (it.v.mv_size != sizeof(s_reeval_val_t))
            continue;
        const uint8_t *rkey = (const uint8_t *) it.k.mv_data + S_ID;
        int kst = MS_OK;
        bool counts = s_key_counts(self, txn, rkey, &kst);
        if (kst != MS_OK) {
            status = kst;
            break;
        }
        if (!counts)
            continue;
        s_reeval_val_t rv;
        memcpy(&rv, it.v.mv_data, sizeof rv);
        ms_verdict_reeval_t *x = &e[n];
        memcpy(x->target, rv.target, S_ID);
        memcpy(x->verifier_node, rkey, S_ID);
        memcpy(in[n].node, rkey, S_ID);
        x->seq = s_get_be64(rkey + S_ID + 8);
        memcpy(x->record_hash, rv.record_hash, S_ID);
        x->failed = rv.failed != 0;
        x->test_accuracy = rv.test_accuracy;
        x->test_loss = rv.test_loss;
        n++;
    }
    status = s_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        status = s_operator_of(self, txn, in[i].node, in[i].op);
        e[i].verifier_operator = in[i].op;
        s_vnode_t vn = {0};
        if (status == MS_OK)
            status = s_vnode_get(self, txn, in[i].node, &vn);
        e[i].quarantined = vn.quarantined != 0;
    }
    if (status != MS_OK) {
        free(e);
        free(in);
        return status;
    }
    *out = e;
    *ops = in;
    *n_out = n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Move one verdict row from state FROM to state TO in meta
//  "verdict_counts" (-1: no row before / after), in the row's txn.

_Static_assert(MS_STORE_VERDICT_STATES == MS_VERDICT_FAILED + 1,
               "MS_STORE_VERDICT_STATES counts every ms_verdict_state_t");

static int
s_verdict_counts_add(ms_store_t *self, MDB_txn *txn, int from, int to)
{
    uint64_t c[MS_STORE_VERDICT_STATES] = {0};
    MDB_val mk = {strlen("verdict_counts"), "verdict_counts"}, mv;
    int rc = mdb_get(txn, self->db_meta, &mk, &mv);
    if (rc == 0 && mv.mv_size == sizeof c)
        memcpy(c, mv.mv_data, sizeof c);
    else if (rc != 0 && rc != MDB_NOTFOUND)
        return s_mdb(rc, "get verdict_counts");
    if (from >= 0 && from < MS_STORE_VERDICT_STATES && c[from] > 0)
        c[from]--;
    if (to >= 0 && to < MS_STORE_VERDICT_STATES)
        c[to]++;
    mv.mv_size = sizeof c;
    mv.mv_data = c;
    return s_mdb(mdb_put(txn, self->db_meta, &mk, &mv, 0),
                 "put verdict_counts");
}

//  --------------------------------------------------------------------------
//  Count the verdict rows of TXN by state (one walk of the verdicts db).

static int
s_verdict_counts_walk(ms_store_t *self, MDB_txn *txn,
                      uint64_t c[MS_STORE_VERDICT_STATES])
{
    memset(c, 0, MS_STORE_VERDICT_STATES * sizeof c[0]);
    s_scan_t it;
    int status =
        s_scan_open(&it, txn, self->db_verdicts, NULL, 0, "cursor verdicts");
    while (status == MS_OK && s_scan_next(&it)) {
        s_vrow_t hdr;
        if (it.v.mv_size < sizeof hdr)
            continue;
        memcpy(&hdr, it.v.mv_data, sizeof hdr);
        if (hdr.verdict < MS_STORE_VERDICT_STATES)
            c[hdr.verdict]++;
    }
    return s_scan_close(&it, status);
}

//  --------------------------------------------------------------------------
//  Make meta "verdict_counts" from the rows when the store has none yet.

static int
s_verdict_counts_init(ms_store_t *self, MDB_txn *txn)
{
    MDB_val mk = {strlen("verdict_counts"), "verdict_counts"}, mv;
    int rc = mdb_get(txn, self->db_meta, &mk, &mv);
    if (rc == 0)
        return MS_OK;
    if (rc != MDB_NOTFOUND)
        return s_mdb(rc, "get verdict_counts");
    uint64_t c[MS_STORE_VERDICT_STATES];
    int status = s_verdict_counts_walk(self, txn, c);
    if (status != MS_OK)
        return status;
    mv.mv_size = sizeof c;
    mv.mv_data = c;
    return s_mdb(mdb_put(txn, self->db_meta, &mk, &mv, 0),
                 "put verdict_counts");
}

//  --------------------------------------------------------------------------
//  Verdict rows by state.

int
ms_store_verdict_counts(ms_store_t *self,
                        uint64_t counts[MS_STORE_VERDICT_STATES])
{
    memset(counts, 0, MS_STORE_VERDICT_STATES * sizeof counts[0]);
    if (!self->has_verdicts)
        return MS_OK;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val mk = {strlen("verdict_counts"), "verdict_counts"}, mv;
    int mrc = mdb_get(txn, self->db_meta, &mk, &mv);
    if (mrc == 0 && mv.mv_size == MS_STORE_VERDICT_STATES * sizeof counts[0])
        memcpy(counts, mv.mv_data, mv.mv_size);
    else if (mrc == MDB_NOTFOUND)
        rc = s_verdict_counts_walk(self, txn, counts); // old, read-only
    else
        rc = s_mdb(mrc ? mrc : MDB_CORRUPTED, "get verdict_counts");
    s_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Evaluate one task and write its verdict row (see the prose above).
//  *verdict_out gets the verdict (-1: no counted result, no row kept),
//  *final_out whether the scheduler is done with the task.

static int
s_verdict_derive(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id_in,
                 int *verdict_out, bool *final_out)
{
    *verdict_out = -1; // no verdict row
    *final_out = false;
    if (!self->has_verdicts)
        return MS_OK;
    self->v_evals++;
    uint8_t task_id[S_ID];
    memcpy(task_id, task_id_in, S_ID);
    s_gen_touch_task(self, txn, task_id); // its verdict may change
    MDB_val k = {S_ID, task_id}, v;
    s_task_hdr_t th;
    ms_store_task_t view;
    int rc = s_task_read(self, txn, task_id, &th, &view);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK; // the sweep's apply derives it
    if (rc != MS_OK)
        return rc;
    ms_verdict_params_t params;
    rc = s_sweep_verify_get(self, txn, th.sweep_id, &params);
    if (rc != MS_OK)
        return rc;
    params.n_pool_operators =
        self->n_pool_operators ? self->n_pool_operators : 1;
    uint8_t traits = s_task_traits(&th, &view);
    bool noop = traits & S_TT_NOOP;
    params.regression = traits & S_TT_REGRESSION;

    ms_verdict_result_t *res = calloc(S_VMAX, sizeof *res);
    s_vin_t *in = calloc(S_VMAX, sizeof *in);
    ms_verdict_mark_t raw[S_VMAX], fin[S_VMAX];
    uint32_t slot_of[S_VMAX];  // the slot each counted result filled
    uint64_t inc_of[S_VMAX];   // the incarnation of each counted result
    bool forgiven[S_VMAX];     // its raw strike is inside a clear's cut
    uint32_t other[S_VMAX];    // slots of results left out (no commit, a
    size_t n = 0, n_other = 0; // revocation cut, ...)
    int status = res && in ? MS_OK : MS_ERR_NOMEM;
    s_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = s_scan_open(&it, txn, self->db_result_meta, task_id, S_ID,
                             "cursor result_meta");
    while (status == MS_OK && n < S_VMAX && s_scan_next(&it)) {
        if (it.k.mv_size != 2 * S_ID + 16)
            break;
        const uint8_t *m = it.v.mv_data;
        if (it.v.mv_size < S_RM_ROW + 1)
            continue;
        if (!m[0]) {
            if (n_other < S_VMAX)
                other[n_other++] = s_get_be32(m + S_RM_SLOT);
            continue;
        }
        ms_verdict_result_t *r = &res[n];
        slot_of[n] = s_get_be32(m + S_RM_SLOT);
        const uint8_t *node = (const uint8_t *) it.k.mv_data + S_ID;
        memcpy(r->node_id, node, S_ID);
        memcpy(in[n].node, node, S_ID);
        inc_of[n] = s_get_be64(node + S_ID);
        r->seq = s_get_be64(node + S_ID + 8);
        memcpy(r->record_hash, m + S_RM_HASH, 32);
        r->status = m[1] == MS_RESULT_STATUS_OK         ? MS_RUN_OK
                    : m[1] == MS_RESULT_STATUS_DIVERGED ? MS_RUN_DIVERGED
                                                        : MS_RUN_FAILED;
        // (a row that is not an object reads as all zero, as before)
        ms_store_row_verdict_t rv;
        (void) ms_store_payload_row_verdict((const char *) m + S_RM_ROW,
                                            it.v.mv_size - S_RM_ROW - 1, &rv);
        r->test_accuracy = noop ? 0.0 : rv.test_accuracy;
        r->test_loss = noop ? 0.0 : rv.test_loss;
        memcpy(r->fingerprint, rv.fingerprint, 32);
        memcpy(r->weights_digest, rv.weights_digest, 32);
        n++;
    }
    status = s_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        status = s_operator_of(self, txn, in[i].node, in[i].op);
        res[i].operator_name = in[i].op;
        s_vnode_t vn = {0};
        if (status == MS_OK)
            status = s_vnode_get(self, txn, in[i].node, &vn);
        res[i].quarantined = vn.quarantined != 0;
    }

    // The old row (tally by difference, change detection).
    s_vrow_t old = {0};
    s_vmark_t *old_marks = NULL;
    uint8_t *old_copy = NULL;
    size_t old_len = 0;
    if (status == MS_OK) {
        rc = mdb_get(txn, self->db_verdicts, &k, &v);
        if (rc == 0 && v.mv_size >= sizeof old) {
            old_copy = malloc(v.mv_size);
            if (!old_copy)
                status = MS_ERR_NOMEM;
            else {
                memcpy(old_copy, v.mv_data, v.mv_size);
                old_len = v.mv_size;
                memcpy(&old, old_copy, sizeof old);
                if (sizeof old + (size_t) old.n_marks * sizeof(s_vmark_t) <=
                    old_len)
                    old_marks = (s_vmark_t *) (old_copy + sizeof old);
                else
                    old.n_marks = 0;
            }
        } else if (rc != 0 && rc != MDB_NOTFOUND)
            status = s_mdb(rc, "get verdict");
    }

    ms_verdict_outcome_t out_raw, out;
    ms_verdict_revision_t rev = {MS_VERDICT_PENDING, 0};
    ms_verdict_reeval_t *rv = NULL;
    s_vin_t *rv_ops = NULL;
    size_t n_rv = 0;
    // A noop task has no weights: a re-evaluation of its result (from a
    // node of an older version, which sampled them) proves nothing, and
    // is no input.
    if (status == MS_OK && n > 0 && !noop)
        status = s_reevals_load(self, txn, task_id, &rv, &rv_ops, &n_rv);
    // Stratum 1 (nobody quarantined), the final evaluation (quarantine
    // applied) and the revision: the changes of the verdict's view over
    // the canonical prefixes of the counted results, then the final
    // evaluation (the rules, in ms_verdict).
    if (status == MS_OK && n > 0) {
        status = ms_verdict_evaluate_task(&params, res, n, rv, n_rv, &out_raw,
                                          raw, &out, fin, &rev.revision, NULL);
        rev.verdict = out.verdict;
        if (status == MS_ERR_INVALID) // bad stored params: defaults
            status = MS_OK, n = 0;
    }
    free(rv);
    free(rv_ops);

    // Strikes forgiven by the node's quarantine clears: those of results
    // inside the union of their cuts (a function of the records).
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        forgiven[i] = false;
        if (!raw[i].strike)
            continue;
        ms_store_cut_t cc;
        bool has;
        status = s_clear_cut_get(self, txn, in[i].node, &cc, &has);
        forgiven[i] =
            status == MS_OK && has && s_cut_counts(&cc, inc_of[i], res[i].seq);
    }

    // Tally by difference: old raw flags out, new ones in. A node's
    // quarantine flips when it differs after both passes from what it was
    // before them: a node at exactly K strikes whose struck result is
    // evaluated again drops to K - 1 between the passes, and taking that
    // for two flips would derive all its tasks again, twice, each of which
    // would do the same (a cascade that held the writer for seconds).
    // The two passes are summed per node first, so only the tallies that
    // change are read and written (a task's re-derivation leaves all but
    // the new result's producer as they were: writing each back cost two
    // LMDB operations per result per derivation).
    uint8_t touched[2 * S_VMAX][S_ID]; // nodes whose tally changed
    bool was_q[2 * S_VMAX];            // ... quarantined before
    size_t n_touched = 0;
    struct {
        const uint8_t *node;                 // the producer
        int32_t d_counted, d_strikes, d_for; // net change of its tally
    } delta[2 * S_VMAX];
    size_t n_delta = 0;
    for (int pass = 0; status == MS_OK && pass < 2; pass++) {
        size_t count = pass == 0 ? old.n_marks : n;
        for (size_t i = 0; i < count; i++) {
            const uint8_t *node = pass == 0 ? old_marks[i].node : in[i].node;
            bool counted = pass == 0 ? old_marks[i].flags & S_VM_RAW_COUNTED
                                     : raw[i].counted;
            bool strike = pass == 0 ? old_marks[i].flags & S_VM_RAW_STRIKE
                                    : raw[i].strike;
            bool forgive =
                strike && (pass == 0 ? old_marks[i].flags & S_VM_RAW_FORGIVEN
                                     : forgiven[i]);
            if (!counted && !strike)
                continue;
            size_t d = 0;
            while (d < n_delta && memcmp(delta[d].node, node, S_ID) != 0)
                d++;
            if (d == n_delta) {
                if (n_delta == 2 * S_VMAX)
                    continue; // (marks are at most S_VMAX a pass)
                delta[n_delta].node = node;
                delta[n_delta].d_counted = delta[n_delta].d_strikes =
                    delta[n_delta].d_for = 0;
                n_delta++;
            }
            int32_t sign = pass == 0 ? -1 : 1;
            delta[d].d_counted += counted ? sign : 0;
            delta[d].d_strikes += strike ? sign : 0;
            delta[d].d_for += forgive ? sign : 0;
        }
    }
    for (size_t d = 0; status == MS_OK && d < n_delta; d++) {
        if (!delta[d].d_counted && !delta[d].d_strikes && !delta[d].d_for)
            continue;
        const uint8_t *node = delta[d].node;
        s_vnode_t vn;
        status = s_vnode_get(self, txn, node, &vn);
        if (status != MS_OK)
            break;
        int64_t c = (int64_t) vn.n_counted + delta[d].d_counted;
        int64_t st = (int64_t) vn.n_strikes + delta[d].d_strikes;
        int64_t f = (int64_t) vn.n_forgiven + delta[d].d_for;
        vn.n_counted = c < 0 ? 0 : (uint32_t) c;
        vn.n_strikes = st < 0 ? 0 : (uint32_t) st;
        vn.n_forgiven = f < 0 ? 0 : (uint32_t) f;
        ms_verdict_policy_t pol;
        ms_verdict_policy_default(&pol);
        bool q = ms_verdict_quarantined(&pol, vn.n_counted, vn.n_strikes,
                                        vn.n_forgiven);
        memcpy(touched[n_touched], node, S_ID);
        was_q[n_touched++] = vn.quarantined != 0;
        vn.quarantined = q;
        self->gen_dirty_all = true; // counted and marks of many tasks
        MDB_val nk = {S_ID, (void *) node}, nv = {sizeof vn, &vn};
        status = s_mdb(mdb_put(txn, self->db_verdict_nodes, &nk, &nv, 0),
                       "put verdict_nodes");
    }

    // The new row.
    s_vrow_t row = {0};
    uint8_t *buf = NULL;
    size_t len = 0;
    if (status == MS_OK && n > 0) {
        row.version = 1;
        row.verdict = (uint8_t) out.verdict;
        row.status = (uint8_t) out.status;
        row.revision = rev.revision;
        row.n_needed = out.n_needed;
        row.n_operators = out.n_operators;
        row.n_agreeing = out.n_agreeing;
        row.slots_wanted = out.slots_wanted;
        row.n_marks = (uint32_t) n;
        row.void_slots = s_void_slots(slot_of, fin, n, other, n_other);
        bool final =
            out.verdict == MS_VERDICT_VERIFIED ||
            out.verdict == MS_VERDICT_FAILED ||
            (out.verdict == MS_VERDICT_ACCEPTED && out.n_needed <= 1) ||
            (out.verdict == MS_VERDICT_DISPUTED && out.slots_exhausted);
        row.flags = (out.slots_exhausted ? S_VF_EXHAUSTED : 0) |
                    (final ? S_VF_FINAL : 0);
        // The lower median: the agreeing ok result nearest m.
        double best = INFINITY;
        for (size_t i = 0; i < n; i++) {
            if (!fin[i].agrees || res[i].status != MS_RUN_OK)
                continue;
            double d = fabs(res[i].test_accuracy - out.median_accuracy);
            if (params.regression || isnan(d))
                d = fabs(res[i].test_loss - out.median_loss);
            if (d < best ||
                (d == best && memcmp(in[i].node, row.median, S_ID) < 0)) {
                best = d;
                memcpy(row.median, in[i].node, S_ID);
                row.flags |= S_VF_MEDIAN;
            }
        }
        // Operators of S, sorted and unique.
        char ops[MS_STORE_OPERATORS_TEXT];
        size_t used = s_agreeing_operators(res, fin, n, ops, sizeof ops);
        len = sizeof row + n * sizeof(s_vmark_t) + used + 1;
        buf = calloc(1, len);
        if (!buf)
            status = MS_ERR_NOMEM;
        else {
            memcpy(buf, &row, sizeof row);
            s_vmark_t *mk = (s_vmark_t *) (buf + sizeof row);
            for (size_t i = 0; i < n; i++) {
                memcpy(mk[i].node, in[i].node, S_ID);
                mk[i].flags = (raw[i].counted ? S_VM_RAW_COUNTED : 0) |
                              (raw[i].strike ? S_VM_RAW_STRIKE : 0) |
                              (forgiven[i] ? S_VM_RAW_FORGIVEN : 0) |
                              (fin[i].counted ? S_VM_COUNTED : 0) |
                              (fin[i].agrees ? S_VM_AGREES : 0);
                mk[i].role = (uint8_t) fin[i].role;
            }
            memcpy(buf + sizeof row + n * sizeof(s_vmark_t), ops, used + 1);
        }
    }
    if (status == MS_OK) {
        bool same = old_copy && buf && old_len == len &&
                    memcmp(old_copy, buf, len) == 0;
        if (!buf && old_copy) {
            rc = mdb_del(txn, self->db_verdicts, &k, NULL);
            status = rc == 0 || rc == MDB_NOTFOUND ? MS_OK
                                                   : s_mdb(rc, "del verdict");
            if (status == MS_OK)
                status = s_verdict_counts_add(self, txn, old.verdict, -1);
        } else if (buf && !same) {
            MDB_val nv = {len, buf};
            status = s_mdb(mdb_put(txn, self->db_verdicts, &k, &nv, 0),
                           "put verdict");
            if (status == MS_OK && (!old_copy || old.verdict != row.verdict))
                status = s_verdict_counts_add(
                    self, txn, old_copy ? (int) old.verdict : -1, row.verdict);
        }
        // An event for every change this node sees: the revision's, and
        // a change of S that no revision counts (a revoked producer's
        // result left the task: docs/VERIFICATION.md "Revision").
        const char *old_ops = "";
        size_t ops_at = sizeof old + (size_t) old.n_marks * sizeof(s_vmark_t);
        if (old_copy && ops_at < old_len && old_copy[old_len - 1] == '\0')
            old_ops = (const char *) old_copy + ops_at;
        const char *new_ops =
            buf ? (const char *) buf + sizeof row + n * sizeof(s_vmark_t) : "";
        if (status == MS_OK && (buf || old_copy) &&
            (row.verdict != old.verdict || row.revision != old.revision ||
             strcmp(old_ops, new_ops) != 0))
            s_verdict_note(self, task_id);
        if (buf) {
            *verdict_out = row.verdict;
            *final_out = row.flags & S_VF_FINAL;
        }
    }
    free(buf);
    free(old_copy);
    free(res);
    free(in);
    bool requeued = false;
    for (size_t i = 0; status == MS_OK && i < n_touched; i++) {
        s_vnode_t vn;
        status = s_vnode_get(self, txn, touched[i], &vn);
        if (status != MS_OK || (vn.quarantined != 0) == was_q[i])
            continue;
        status = s_verdict_requeue_node(self, txn, touched[i]);
        requeued = true;
    }
    // A requeue evaluated this task again (the flipped node has a result
    // in it) under the new quarantine: report the row it left.
    if (status == MS_OK && requeued && *verdict_out >= 0) {
        rc = mdb_get(txn, self->db_verdicts, &k, &v);
        if (rc == 0 && v.mv_size >= sizeof(s_vrow_t)) {
            s_vrow_t now;
            memcpy(&now, v.mv_data, sizeof now);
            *verdict_out = now.verdict;
            *final_out = now.flags & S_VF_FINAL;
        } else if (rc == 0 || rc == MDB_NOTFOUND) {
            *verdict_out = -1;
            *final_out = false;
        } else
            status = s_mdb(rc, "get verdict");
    }
    return status;
}

//  --------------------------------------------------------------------------
//  Every task with a verdict row that names NODE (or every task with a
//  verdict row when NODE is NULL; only tasks of sweeps with replicas > 1
//  when MULTI): ids collected first, then derived (a derive rewrites
//  the db under the cursor).

static int
s_verdict_tasks(ms_store_t *self, MDB_txn *txn, const uint8_t *node, bool multi,
                uint8_t **ids_out, size_t *n_out)
{
    *ids_out = NULL;
    *n_out = 0;
    uint8_t *ids = NULL;
    size_t n = 0, cap = 0;
    s_scan_t it;
    int status =
        s_scan_open(&it, txn, self->db_verdicts, NULL, 0, "cursor verdicts");
    while (status == MS_OK && s_scan_next(&it)) {
        MDB_val k = it.k, v = it.v;
        if (k.mv_size != S_ID || v.mv_size < sizeof(s_vrow_t))
            continue;
        s_vrow_t hdr;
        memcpy(&hdr, v.mv_data, sizeof hdr);
        bool take = !node && !multi;
        const s_vmark_t *mk =
            (const s_vmark_t *) ((const uint8_t *) v.mv_data + sizeof hdr);
        for (uint32_t i = 0; node && i < hdr.n_marks &&
                             sizeof hdr + (i + 1) * sizeof *mk <= v.mv_size;
             i++)
            if (memcmp(mk[i].node, node, S_ID) == 0)
                take = true;
        if (multi && !node) {
            MDB_val tv;
            s_task_hdr_t th;
            ms_verdict_params_t p;
            if (mdb_get(txn, self->db_tasks, &k, &tv) == 0 &&
                s_task_decode(k.mv_data, &tv, &th, NULL) == MS_OK &&
                s_sweep_verify_get(self, txn, th.sweep_id, &p) == MS_OK)
                take = p.replicas > 1;
        }
        if (!take)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            uint8_t *grown = realloc(ids, cap * S_ID);
            if (!grown) {
                status = MS_ERR_NOMEM;
                break;
            }
            ids = grown;
        }
        memcpy(ids + n++ * S_ID, k.mv_data, S_ID);
    }
    status = s_scan_close(&it, status);
    if (status != MS_OK)
        free(ids);
    else {
        *ids_out = ids;
        *n_out = n;
    }
    return status;
}

//  --------------------------------------------------------------------------
//  A node's quarantine flipped: evaluate every task it has a result in
//  (its verdict and task state). Bounded depth: a flip found while
//  re-evaluating is followed a few levels, then left to the next change.

static int
s_verdict_requeue_node(ms_store_t *self, MDB_txn *txn, const uint8_t *node_in)
{
    if (self->v_depth > 3)
        return MS_OK;
    uint8_t node[S_ID];
    memcpy(node, node_in, S_ID);
    uint8_t *ids = NULL;
    size_t n = 0;
    int status = s_verdict_tasks(self, txn, node, false, &ids, &n);
    self->v_depth++;
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = s_task_derive(self, txn, ids + i * S_ID);
    self->v_depth--;
    free(ids);
    return status;
}

//  --------------------------------------------------------------------------
//  Writer: the operator of a node (S_OP_OPERATOR).

static int
s_op_operator(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    if (!self->has_verdicts)
        return MS_ERR_UNSUPPORTED;
    MDB_val k = {S_ID, (void *) op->node}, v;
    int rc = mdb_get(txn, self->db_operators, &k, &v);
    if (rc == 0 && v.mv_size == op->len + 1 &&
        memcmp(v.mv_data, op->text, op->len) == 0)
        return MS_OK;
    if (rc != 0 && rc != MDB_NOTFOUND)
        return s_mdb(rc, "get operator");
    char name[MS_STORE_OPERATOR_MAX + 1];
    memcpy(name, op->text, op->len);
    name[op->len] = 0;
    v.mv_size = op->len + 1;
    v.mv_data = name;
    rc = mdb_put(txn, self->db_operators, &k, &v, 0);
    if (rc != 0)
        return s_mdb(rc, "put operator");
    self->gen_dirty_all = true; // rows show operators' names
    return s_verdict_requeue_node(self, txn, op->node);
}

//  --------------------------------------------------------------------------
//  Writer: the pool's operator count (S_OP_POOL_OPS).

static int
s_op_pool_ops(ms_store_t *self, MDB_txn *txn, s_op_t *op)
{
    uint32_t n_ops = (uint32_t) op->value;
    if (n_ops == self->n_pool_operators || !self->has_verdicts) {
        self->n_pool_operators = n_ops;
        return MS_OK;
    }
    self->n_pool_operators = n_ops;
    uint8_t *ids = NULL;
    size_t n = 0;
    int status = s_verdict_tasks(self, txn, NULL, true, &ids, &n);
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = s_task_derive(self, txn, ids + i * S_ID);
    free(ids);
    return status;
}

//  --------------------------------------------------------------------------
//  Decode a verdict row into *out.

static void
s_verdict_view(ms_store_t *self, MDB_txn *txn, const MDB_val *v,
               ms_store_verdict_t *out)
{
    memset(out, 0, sizeof *out);
    s_vrow_t hdr;
    memcpy(&hdr, v->mv_data, sizeof hdr);
    out->verdict = hdr.verdict;
    out->revision = hdr.revision;
    out->status = hdr.status;
    out->n_needed = hdr.n_needed;
    out->n_operators = hdr.n_operators;
    out->n_agreeing = hdr.n_agreeing;
    out->slots_wanted = hdr.slots_wanted;
    out->slots_exhausted = hdr.flags & S_VF_EXHAUSTED;
    out->final = hdr.flags & S_VF_FINAL;
    out->has_median = hdr.flags & S_VF_MEDIAN;
    memcpy(out->median_node, hdr.median, S_ID);
    const uint8_t *b = v->mv_data;
    size_t marks_end = sizeof hdr + (size_t) hdr.n_marks * sizeof(s_vmark_t);
    if (marks_end > v->mv_size)
        return;
    const s_vmark_t *mk = (const s_vmark_t *) (b + sizeof hdr);
    for (uint32_t i = 0; i < hdr.n_marks && i < MS_STORE_VERDICT_MAX_MARKS;
         i++) {
        ms_store_verdict_mark_t *m = &out->marks[out->n_marks++];
        memcpy(m->node_id, mk[i].node, S_ID);
        m->counted = mk[i].flags & S_VM_COUNTED;
        m->agrees = mk[i].flags & S_VM_AGREES;
        m->strike = mk[i].flags & S_VM_RAW_STRIKE;
        m->role = mk[i].role;
        s_operator_of(self, txn, m->node_id, m->operator_name);
    }
    size_t text = v->mv_size - marks_end;
    if (text > 0) {
        size_t c = text < sizeof out->operators ? text : sizeof out->operators;
        memcpy(out->operators, b + marks_end, c);
        out->operators[c - 1] = 0;
    }
}

//  --------------------------------------------------------------------------
//  The verdict row of a task.

int
ms_store_get_verdict(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                     ms_store_verdict_t *out)
{
    memset(out, 0, sizeof *out);
    if (!self->has_verdicts)
        return MS_ERR_NOTFOUND;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val k = {S_ID, (void *) task_id}, v;
    rc = mdb_get(txn, self->db_verdicts, &k, &v);
    int status = MS_OK;
    if (rc == 0 && v.mv_size >= sizeof(s_vrow_t))
        s_verdict_view(self, txn, &v, out);
    else if (rc == 0 || rc == MDB_NOTFOUND)
        status = MS_ERR_NOTFOUND;
    else
        status = s_mdb(rc, "get verdict");
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  The slots the scheduler may fill now.

int
ms_store_task_slots(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                    uint32_t *n_slots, uint32_t *replicas)
{
    *n_slots = 1;
    if (replicas)
        *replicas = 1;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    int status = MS_OK;
    MDB_val k = {S_ID, (void *) task_id}, v;
    rc = mdb_get(txn, self->db_tasks, &k, &v);
    s_task_hdr_t th;
    if (rc == 0 && s_task_decode(task_id, &v, &th, NULL) == MS_OK) {
        ms_verdict_params_t p;
        status = s_sweep_verify_get(self, txn, th.sweep_id, &p);
        if (replicas)
            *replicas = p.replicas;
        uint32_t ops = self->n_pool_operators ? self->n_pool_operators : 1;
        *n_slots = ms_verdict_needed(p.replicas, ops);
        if (*n_slots == 0)
            *n_slots = 1;
        rc = self->has_verdicts ? mdb_get(txn, self->db_verdicts, &k, &v)
                                : MDB_NOTFOUND;
        if (rc == 0 && v.mv_size >= sizeof(s_vrow_t)) {
            s_vrow_t hdr;
            memcpy(&hdr, v.mv_data, sizeof hdr);
            *n_slots = (hdr.flags & S_VF_FINAL)
                           ? 0
                           : hdr.slots_wanted + hdr.void_slots;
        } else if (rc != 0 && rc != MDB_NOTFOUND)
            status = s_mdb(rc, "get verdict");
    } else if (rc != 0 && rc != MDB_NOTFOUND)
        status = s_mdb(rc, "get task");
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  A sweep's verify.replicas.

int
ms_store_sweep_replicas(ms_store_t *self,
                        const uint8_t sweep_id[MS_STORE_ID_BYTES],
                        uint32_t *replicas)
{
    *replicas = 1;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_verdict_params_t p;
    rc = s_sweep_verify_get(self, txn, sweep_id, &p);
    if (rc == MS_OK)
        *replicas = p.replicas;
    s_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Store a node's operator.

int
ms_store_set_operator(ms_store_t *self,
                      const uint8_t node_id[MS_STORE_ID_BYTES],
                      const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > MS_STORE_OPERATOR_MAX)
        return MS_ERR_INVALID;
    s_op_t op = {
        .kind = S_OP_OPERATOR, .node = node_id, .text = name, .len = len};
    return s_submit(self, &op);
}

//  --------------------------------------------------------------------------
//  A node's operator as verdicts use it.

int
ms_store_operator(ms_store_t *self, const uint8_t node_id[MS_STORE_ID_BYTES],
                  char out[MS_STORE_OPERATOR_MAX + 1])
{
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    rc = s_operator_of(self, txn, node_id, out);
    s_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Distinct operators with a commit of a task.

int
ms_store_commit_operators(ms_store_t *self,
                          const uint8_t task_id[MS_STORE_ID_BYTES],
                          const uint8_t node_id[MS_STORE_ID_BYTES],
                          uint32_t *n_operators, bool *has_own)
{
    *n_operators = 0;
    if (has_own)
        *has_own = false;
    if (!self->has_commits)
        return MS_OK;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    enum { MAX_OPS = 64 };
    char(*ops)[MS_STORE_OPERATOR_MAX + 1] = calloc(MAX_OPS, sizeof *ops);
    int status = ops ? MS_OK : MS_ERR_NOMEM;
    s_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = s_scan_open(&it, txn, self->db_commits, task_id, S_ID,
                             "cursor commits");
    uint8_t last[S_ID];
    bool have_last = false;
    while (status == MS_OK && *n_operators < MAX_OPS && s_scan_next(&it)) {
        const uint8_t *key = it.k.mv_data;
        if (it.k.mv_size != 2 * S_ID + 16)
            break;
        if (have_last && memcmp(last, key + S_ID, S_ID) == 0)
            continue; // the same node again
        memcpy(last, key + S_ID, S_ID);
        have_last = true;
        if (has_own && node_id && memcmp(node_id, key + S_ID, S_ID) == 0)
            *has_own = true;
        char op[MS_STORE_OPERATOR_MAX + 1];
        status = s_operator_of(self, txn, key + S_ID, op);
        if (status != MS_OK)
            break;
        bool seen = false;
        for (uint32_t i = 0; i < *n_operators && !seen; i++)
            seen = strcmp(ops[i], op) == 0;
        if (!seen)
            strcpy(ops[(*n_operators)++], op);
    }
    status = s_scan_close(&it, status);
    free(ops);
    s_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Set the pool's operator count.

int
ms_store_set_pool_operators(ms_store_t *self, uint32_t n_operators)
{
    return s_submit_count(self, S_OP_POOL_OPS, n_operators);
}

//  --------------------------------------------------------------------------
//  A node's standing.

int
ms_store_node_standing(ms_store_t *self,
                       const uint8_t node_id[MS_STORE_ID_BYTES],
                       uint32_t *n_counted, uint32_t *n_strikes,
                       bool *quarantined)
{
    return ms_store_node_standing_ex(self, node_id, n_counted, n_strikes, NULL,
                                     quarantined);
}

//  --------------------------------------------------------------------------
//  A node's standing with its forgiven strikes.

int
ms_store_node_standing_ex(ms_store_t *self,
                          const uint8_t node_id[MS_STORE_ID_BYTES],
                          uint32_t *n_counted, uint32_t *n_strikes,
                          uint32_t *n_forgiven, bool *quarantined)
{
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_vnode_t vn;
    rc = s_vnode_get(self, txn, node_id, &vn);
    s_read_end(self, txn);
    if (n_counted)
        *n_counted = vn.n_counted;
    if (n_strikes)
        *n_strikes = vn.n_strikes;
    if (n_forgiven)
        *n_forgiven = vn.n_forgiven;
    if (quarantined)
        *quarantined = vn.quarantined;
    return rc;
}

//  --------------------------------------------------------------------------
//  Take the changed verdicts.

size_t
ms_store_verdict_changes(ms_store_t *self, uint8_t (*out)[MS_STORE_ID_BYTES],
                         size_t max, uint64_t *n_dropped)
{
    pthread_mutex_lock(&self->vc_mu);
    size_t n = ms_ring_take(self->vc_ids, out, max);
    if (n_dropped) {
        *n_dropped = self->vc_dropped;
        self->vc_dropped = 0;
    }
    pthread_mutex_unlock(&self->vc_mu);
    return n;
}

//  --------------------------------------------------------------------------
//  Take the queued new results.

size_t
ms_store_new_results(ms_store_t *self, ms_store_new_result_t *out, size_t max)
{
    pthread_mutex_lock(&self->nr_mu);
    size_t n = ms_ring_take(self->nr, out, max);
    pthread_mutex_unlock(&self->nr_mu);
    return n;
}

//  --------------------------------------------------------------------------
//  Re-evaluations of one target.

int
ms_store_reevals_of(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                    const uint8_t target[MS_STORE_ID_BYTES],
                    const uint8_t verifier[MS_STORE_ID_BYTES], uint32_t *n,
                    bool *by_verifier)
{
    *n = 0;
    if (by_verifier)
        *by_verifier = false;
    if (!self->has_reevals)
        return MS_OK;
    MDB_txn *txn;
    int rc = s_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_scan_t it;
    int status = s_scan_open(&it, txn, self->db_reevals, task_id, S_ID,
                             "cursor reevals");
    while (status == MS_OK && s_scan_next(&it)) {
        if (it.k.mv_size != S_ID + S_KEY)
            break;
        if (it.v.mv_size != sizeof(s_reeval_val_t) ||
            memcmp(it.v.mv_data, target, S_ID) != 0)
            continue;
        (*n)++;
        if (by_verifier && verifier &&
            memcmp((const uint8_t *) it.k.mv_data + S_ID, verifier, S_ID) == 0)
            *by_verifier = true;
    }
    status = s_scan_close(&it, status);
    s_read_end(self, txn);
    return status;
}
