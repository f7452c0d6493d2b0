/*  =========================================================================
    ms_store - the node's LMDB store: sweeps, tasks and their states, results

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One LMDB environment in the node's store/ directory (DESIGN.md "Store
    (LMDB)"). Every write goes through one writer thread that applies all
    queued writes in one write transaction (group commit) with sync on, so
    a write call returns only once its transaction is durable, and a node
    killed with SIGKILL reopens with every committed write intact and never
    a half-written record. Reads use their own read transactions from any
    thread and never block the writer. The map grows (doubling) when full.

    Ids (sweep, task, node) are 32 raw bytes (BLAKE2b-256 or an Ed25519
    public key). JSON values (spec, task config, result row) are stored as
    the text the caller gave; the store parses only to check a result row.

    Thread rule: one ms_store_t may be used from any number of threads at
    once (every function below is thread-safe), except ms_store_destroy.
    The store may also be opened by a second process at the same time (for
    example `meshsweep results --data-dir DIR`), read-only or read-write.

    Callbacks run inside a read transaction: the pointers they receive
    (JSON text, ids, structs) are borrowed and valid only until the callback
    returns. A callback may call the store's read functions (get, list,
    results); a write call from inside a callback is refused with
    MS_ERR_INVALID (it could wait on a map resize that waits for the
    callback's own read transaction): collect what to write, write after.
    Keep callbacks quick (copy the row out; do not wait on a network peer
    inside one): the rare map resize waits until this process has no read
    transaction open, and writes wait for the resize; an open read also
    keeps LMDB from reusing pages. Page with max_rows for slow consumers.
    Return 0 from a callback to go on; any other value stops the iteration
    and is returned by the iterating function as it is (so use a positive
    value or an MS_ERR_ code).
*/
#ifndef MS_STORE_H
#define MS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

typedef struct ms_store ms_store_t;

#define MS_STORE_ID_BYTES 32 // sweep, task and node ids: raw bytes
#define MS_DEFAULT_STORE_MAP_SIZE ((uint64_t)64 << 30) // 64 GiB
#define MS_DEFAULT_STORE_MAX_READERS 126  // LMDB's own default
#define MS_DEFAULT_STORE_MAX_BATCH 1024   // writes per group commit
#define MS_STORE_INDEX_END UINT32_MAX     // "no more tasks" in a page cursor

//  Task states (DESIGN.md "States"). The numeric values are stored on disk:
//  never reorder them.
typedef enum {
    MS_TASK_PENDING = 0,
    MS_TASK_CLAIMED = 1,
    MS_TASK_RUNNING = 2,
    MS_TASK_DONE = 3,
    MS_TASK_FAILED = 4,
    MS_TASK_CANCELLED = 5,
} ms_task_state_t;
#define MS_TASK_N_STATES 6

//  Sweep states (DESIGN.md "States"). Stored on disk: never reorder.
typedef enum {
    MS_SWEEP_ACTIVE = 0,
    MS_SWEEP_PAUSED = 1,
    MS_SWEEP_CANCELLED = 2,
    MS_SWEEP_DONE = 3,
} ms_sweep_state_t;
#define MS_SWEEP_N_STATES 4

//  Options for ms_store_open. Fill with ms_store_options_default() first.
typedef struct {
    uint64_t map_size_bytes; // initial map size; grows by doubling when full
    unsigned max_readers;    // LMDB reader table slots (used when the
                             // environment's lock file is created)
    unsigned max_batch;      // most queued writes applied in one commit
    bool read_only;          // open an existing store for reading only
    // Test hooks; leave at their defaults outside tests.
    uint32_t fs_type;        // 0: statfs the dir; else pretend f_type is
                             // this (also env MESHSWEEP_TEST_FSTYPE=0x6969)
    bool skip_reader_check;  // do not clear stale readers at open
} ms_store_options_t;

//  One task. Returned by ms_store_get_task and ms_store_claim_next (caller
//  owns it; free with ms_store_task_destroy) and passed to task callbacks
//  (borrowed, valid during the callback only).
typedef struct {
    uint8_t task_id[MS_STORE_ID_BYTES];
    uint8_t sweep_id[MS_STORE_ID_BYTES];
    uint32_t index;           // position in the sweep's task list, from 0
    ms_task_state_t state;
    uint32_t attempts;        // claims so far (ms_store_claim_next adds 1)
    int64_t updated_at_ms;    // wall clock, ms since the Unix epoch
    uint8_t holder[MS_STORE_ID_BYTES]; // node running it; zero when none
    const char *config_json;  // canonical config JSON, NUL-terminated
    size_t config_len;        // bytes in config_json, without the NUL
    const char *error;        // last error ("" when none), NUL-terminated
} ms_store_task_t;

//  One sweep with its state and task counts. Returned by ms_store_get_sweep
//  (caller owns it; free with ms_store_sweep_destroy) and passed to
//  ms_store_list_sweeps callbacks (borrowed).
typedef struct {
    uint8_t sweep_id[MS_STORE_ID_BYTES];
    ms_sweep_state_t state;
    int32_t priority;          // higher is served first; default 0
    uint64_t n_tasks;          // tasks in the sweep
    uint64_t counts[MS_TASK_N_STATES]; // tasks per ms_task_state_t
    int64_t created_at_ms;     // wall clock, ms since the Unix epoch
    int64_t updated_at_ms;     // last state or count change
    const char *spec_json;     // canonical expanded spec, NUL-terminated
    size_t spec_len;           // bytes in spec_json, without the NUL
} ms_store_sweep_t;

//  One task of a sweep to store: its id and canonical config JSON.
//  Borrowed by ms_store_put_sweep for the duration of the call.
typedef struct {
    const uint8_t *task_id;   // MS_STORE_ID_BYTES bytes
    const char *config_json;  // canonical config JSON text
    size_t config_len;        // bytes in config_json
} ms_store_task_input_t;

//  Counters for /metrics and tests. Totals since ms_store_open.
typedef struct {
    uint64_t map_size_bytes;      // current map size
    uint64_t n_commits;           // write transactions committed
    uint64_t n_writes;            // write calls applied (ok or refused)
    uint64_t max_batch;           // most writes in one commit so far
    uint64_t n_map_grows;         // map doublings after MAP_FULL
    uint64_t n_stale_readers;     // dead readers cleared (mdb_reader_check)
    uint64_t n_commits_read_open; // commits done while this process had
                                  // at least one read transaction open
    uint64_t n_reads_open;        // read transactions open right now
} ms_store_stats_t;

//  Row callback: one result row's JSON text (NUL-terminated, n bytes
//  without the NUL), borrowed during the call.
typedef int (*ms_store_row_fn)(void *arg, const char *json, size_t n);

//  Task callback: one task, borrowed during the call.
typedef int (*ms_store_task_fn)(void *arg, const ms_store_task_t *task);

//  Sweep callback: one sweep, borrowed during the call.
typedef int (*ms_store_sweep_fn)(void *arg, const ms_store_sweep_t *sweep);

//  Fill opts with the defaults: map 64 GiB, 126 readers, batches of 1024,
//  read-write, no test hooks.
void
    ms_store_options_default(ms_store_options_t *opts);

//  Open (create if missing, mode 0700, parents too) the store in DIR (the
//  data dir's store/ path). Creates the named databases and, for a new
//  store, its incarnation (64 random bits, kept for the store's life).
//  Clears stale readers, and starts the writer thread (not in read-only).
//  opts may be NULL for the defaults. On success *out owns the store
//  (free with ms_store_destroy); on failure *out is NULL and diag (if not
//  NULL) says where and why.
//  Errors: MS_ERR_STORE_NFS the dir is on NFS/SMB/CIFS; MS_ERR_NOTFOUND
//  read_only and no store in DIR; MS_ERR_IO the dir cannot be created;
//  MS_ERR_STORE any LMDB failure (mdb_strerror text in diag);
//  MS_ERR_NOMEM.
int
    ms_store_open(ms_store_t **out, const char *dir,
                  const ms_store_options_t *opts, ms_diag_t *diag);

//  Finish the queued writes, stop the writer thread, close the
//  environment, free the store and set *self_p to NULL. NULL-safe. No
//  other thread may use the store during or after the call.
void
    ms_store_destroy(ms_store_t **self_p);

//  The store's incarnation: 64 random bits made when the store was
//  created; records this node originates are keyed (origin, incarnation,
//  seq), so a wiped store never reuses a key.
uint64_t
    ms_store_incarnation(ms_store_t *self);

//  Copy the store's counters into *out.
void
    ms_store_stats(ms_store_t *self, ms_store_stats_t *out);

//  Store a sweep and all its tasks in ONE transaction: the spec JSON, the
//  state (active, priority given), and per task (index = position in
//  tasks[]) its config JSON, state pending, 0 attempts. Idempotent: when
//  the sweep is already stored with the same spec text, nothing changes,
//  *existed (if not NULL) is set true and MS_OK returned.
//  Errors: MS_ERR_CONFLICT the sweep id is stored with another spec, or a
//  task id already belongs to another sweep; MS_ERR_INVALID a NULL or
//  duplicate task id in tasks[], empty spec; MS_ERR_UNSUPPORTED read-only
//  store; MS_ERR_STORE_FULL the map cannot grow; MS_ERR_STORE.
int
    ms_store_put_sweep(ms_store_t *self,
                       const uint8_t sweep_id[MS_STORE_ID_BYTES],
                       const char *spec_json, size_t spec_len,
                       int32_t priority, const ms_store_task_input_t *tasks,
                       size_t n_tasks, bool *existed);

//  Get a sweep: spec text, state, counts of tasks by state. Caller owns
//  *out (free with ms_store_sweep_destroy).
//  Errors: MS_ERR_NOTFOUND, MS_ERR_NOMEM, MS_ERR_STORE.
int
    ms_store_get_sweep(ms_store_t *self,
                       const uint8_t sweep_id[MS_STORE_ID_BYTES],
                       ms_store_sweep_t **out);

//  Free a sweep from ms_store_get_sweep; NULL-safe; nulls *sweep_p.
void
    ms_store_sweep_destroy(ms_store_sweep_t **sweep_p);

//  Call fn for every sweep, in sweep id order.
//  Errors: MS_ERR_STORE, or fn's nonzero return.
int
    ms_store_list_sweeps(ms_store_t *self, ms_store_sweep_fn fn, void *arg);

//  Set a sweep's state. Cancelling also moves its pending tasks to
//  cancelled (running ones are left to the node to stop). A sweep turns
//  done by itself when no task is pending, claimed or running.
//  Errors: MS_ERR_NOTFOUND, MS_ERR_UNSUPPORTED read-only, MS_ERR_STORE*.
int
    ms_store_set_sweep_state(ms_store_t *self,
                             const uint8_t sweep_id[MS_STORE_ID_BYTES],
                             ms_sweep_state_t state);

//  Set a sweep's priority (higher first in ms_store_claim_next).
//  Errors: as ms_store_set_sweep_state.
int
    ms_store_set_sweep_priority(ms_store_t *self,
                                const uint8_t sweep_id[MS_STORE_ID_BYTES],
                                int32_t priority);

//  Get a task. Caller owns *out (free with ms_store_task_destroy).
//  Errors: MS_ERR_NOTFOUND, MS_ERR_NOMEM, MS_ERR_STORE.
int
    ms_store_get_task(ms_store_t *self,
                      const uint8_t task_id[MS_STORE_ID_BYTES],
                      ms_store_task_t **out);

//  Free a task from ms_store_get_task or ms_store_claim_next; NULL-safe;
//  nulls *task_p.
void
    ms_store_task_destroy(ms_store_task_t **task_p);

//  Call fn for every task of a sweep, in index order.
//  Errors: MS_ERR_NOTFOUND no such sweep, MS_ERR_STORE, fn's return.
int
    ms_store_tasks_by_sweep(ms_store_t *self,
                            const uint8_t sweep_id[MS_STORE_ID_BYTES],
                            ms_store_task_fn fn, void *arg);

//  Claim the next pending task for node NODE_ID, atomically: pending ->
//  running, attempts + 1, holder = node. Order: active sweeps by priority
//  (higher first), then by creation time, then sweep id; inside a sweep,
//  by task index. Caller owns *out (the task after the claim; free with
//  ms_store_task_destroy); out may be NULL.
//  Errors: MS_ERR_NOTFOUND no pending task in any active sweep;
//  MS_ERR_UNSUPPORTED read-only; MS_ERR_STORE_FULL; MS_ERR_STORE.
int
    ms_store_claim_next(ms_store_t *self,
                        const uint8_t node_id[MS_STORE_ID_BYTES],
                        ms_store_task_t **out);

//  Move a task to STATE (any state but done: done comes with a result,
//  ms_store_put_result). REASON (may be NULL) becomes the last error when
//  not NULL. NODE_ID (may be NULL) becomes the holder for claimed/running;
//  other states clear the holder. Typical uses: back to pending for a
//  retry, failed with the reason, cancelled.
//  Errors: MS_ERR_NOTFOUND no such task; MS_ERR_CONFLICT the task is done;
//  MS_ERR_INVALID state is MS_TASK_DONE or out of range;
//  MS_ERR_UNSUPPORTED read-only; MS_ERR_STORE_FULL; MS_ERR_STORE.
int
    ms_store_set_task_state(ms_store_t *self,
                            const uint8_t task_id[MS_STORE_ID_BYTES],
                            ms_task_state_t state,
                            const uint8_t *node_id, const char *reason);

//  After a restart: move every task left claimed or running by NODE_ID
//  back to pending (attempts kept). *n_reset (if not NULL) gets the count.
//  Errors: MS_ERR_UNSUPPORTED read-only; MS_ERR_STORE_FULL; MS_ERR_STORE.
int
    ms_store_reset_claims(ms_store_t *self,
                          const uint8_t node_id[MS_STORE_ID_BYTES],
                          size_t *n_reset);

//  Store the result row of TASK_ID by NODE_ID (row_json: a JSON object,
//  the result row of DESIGN.md, stored as given) and mark the task done,
//  in ONE transaction. Keyed (task, node), so several nodes' results of
//  one task can be kept. The same row again is MS_OK (no change).
//  Errors: MS_ERR_INVALID row_json is not a JSON object; MS_ERR_NOTFOUND
//  no such task; MS_ERR_CONFLICT this node already has another row for
//  the task (the first one counts); MS_ERR_UNSUPPORTED read-only;
//  MS_ERR_STORE_FULL; MS_ERR_STORE.
int
    ms_store_put_result(ms_store_t *self,
                        const uint8_t task_id[MS_STORE_ID_BYTES],
                        const uint8_t node_id[MS_STORE_ID_BYTES],
                        const char *row_json, size_t row_len);

//  Call fn for the result rows of a sweep, in task index order (rows of
//  one task in node id order), from task index FIRST_INDEX on. When
//  MAX_ROWS > 0, stops at the end of the task whose rows reach MAX_ROWS
//  (a page); *next_index (if not NULL) gets the index to pass next time,
//  or MS_STORE_INDEX_END when every task was visited. One read txn: the
//  page is a consistent snapshot; rows are never all in memory at once.
//  Errors: MS_ERR_NOTFOUND no such sweep; MS_ERR_STORE; fn's return.
int
    ms_store_results_by_sweep(ms_store_t *self,
                              const uint8_t sweep_id[MS_STORE_ID_BYTES],
                              uint32_t first_index, size_t max_rows,
                              ms_store_row_fn fn, void *arg,
                              uint32_t *next_index);

//  Call fn for every result row of one task, in node id order.
//  Errors: MS_ERR_STORE; fn's return. A task with no rows is MS_OK.
int
    ms_store_results_by_task(ms_store_t *self,
                             const uint8_t task_id[MS_STORE_ID_BYTES],
                             ms_store_row_fn fn, void *arg);

//  Name of a task state ("pending", ...); "unknown" when out of range.
const char *
    ms_task_state_name(ms_task_state_t state);

//  Name of a sweep state ("active", ...); "unknown" when out of range.
const char *
    ms_sweep_state_name(ms_sweep_state_t state);

#endif
