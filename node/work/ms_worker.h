/*  =========================================================================
    ms_worker - a pool of persistent worker processes that train tasks

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Training runs in worker processes so that a crash in one never takes
    the node down (DESIGN.md "Workers"). The pool forks N workers from the
    node; each runs at a low priority (nice +10 by default) and talks to
    the node over a pair of pipes with length-prefixed JSON frames (4-byte
    big-endian length, then that many bytes of JSON):

      node -> worker  {"op":"task","task_id","sweep_id","config":{...},
                       "dataset":{...},"attempt":N[,"weights_path":P]
                       [,"reeval":true]}
      worker -> node  {"op":"ready","pid",              once, at start
                       "calibration_gflops"}            (its figure)
                      {"op":"started","task_id","mono_us"}  once per task,
                       when its work starts (first minibatch; noop: at
                       once), CLOCK_MONOTONIC in microseconds
                      {"op":"epoch","task_id","epoch","of","train_loss",
                       "val_loss","val_accuracy","seconds"}  per epoch
                      {"op":"result","task_id","result":{...}}
                      {"op":"failed","task_id","reason","class":"task"}

    Weights (docs/VERIFICATION.md "keep_weights"): with "weights_path" a
    training task that ends ok also writes its final weights there in the
    ms_weights format (core/ms_weights.h) before it sends its result.
    With "reeval": true the task is a re-evaluation instead: the worker
    loads the weights file at weights_path, splits and scales the data
    exactly as training does (the task's seed), checks the shapes
    against the config, and answers {"op":"result","task_id","result":
    {"reeval":true,"weights_digest","test_accuracy","test_loss",
    "val_accuracy","val_loss"}} (BLAKE2b-256 of the parameter block, so
    the node can compare it with the published digest), or "failed" with
    the reason (a damaged file, other shapes).

    The dataset object is {"name":"fashion-mnist"} for a built-in dataset,
    or {"train_images","train_labels","test_images","test_labels"} (IDX)
    or {"train","test","label"} (CSV) with local file paths.

    A worker keeps the last dataset it loaded (raw, unscaled) across tasks.
    Per task it splits (ms_dataset_split, a copy), scales, opens a trainer,
    restores CHECKPOINT_DIR/<task_id>.ckpt when present, then trains epoch
    by epoch, writing the checkpoint atomically (tmp, fsync, rename) after
    each epoch before it reports the epoch. The "result" object holds
    status, error, epochs, train_seconds, seconds_per_epoch, val_accuracy,
    val_loss, test_accuracy, test_loss (null when NaN), params,
    weights_digest (BLAKE2b-256 hex of the float32 parameter block),
    platform (object, null for noop), curve, grad_norms (the per-layer
    weight-gradient norms of epoch 1, ms_run_result_t; null where not
    finite), peak_rss_bytes. The node
    deletes the checkpoint once the result is stored.

    Memory cap (opts.memory_mb, meshsweepd --worker-memory-mb): each
    worker sets RLIMIT_DATA after the fork, so an allocation beyond it
    fails instead of pushing the machine into swap or the OOM killer; the
    task then ends "failed" with class "resource" and the reason "out of
    memory: the task needs more than worker_memory_mb (N MiB)" (the node
    survives, and the task is left to nodes with more memory). RLIMIT_DATA
    rather than RLIMIT_AS: it counts what malloc and private writable
    mappings take, not address space reserved by a CUDA runtime.

    Bad data (missing or malformed dataset, config the trainer refuses)
    ends the task with "failed" and the loader's diag as reason: it is not
    a crash, and not retried (it would fail the same way). A worker that
    dies (signal, exit, EOF on its pipe) is reported as a "died" event
    with a reason such as "worker killed by signal 11 (SIGSEGV)" and is
    respawned at once; the node decides whether to retry its task.

    Test hook: when the environment variable MESHSWEEP_FAULT_CRASH_TASK is
    set to a prefix of a task id (hex), a worker calls abort() when it
    starts training that task (after opening the trainer, before the first
    epoch), every time. Tests use it to check retries and failure records
    (cases/README.md case 4). Never set it outside tests.

    Thread rule: a pool belongs to the thread that opened it; it forks from
    that thread (workers get PR_SET_PDEATHSIG SIGKILL, so they die with it).
*/
#ifndef MS_WORKER_H
#define MS_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ms_dataset.h"
#include "ms_err.h"
#include "ms_hash.h"

typedef struct ms_worker_pool ms_worker_pool_t;

#define MS_WORKER_MAX_FRAME (64u << 20) // largest frame either side accepts

typedef struct {
    int n_workers;              // processes; < 1 = one per online core
    int nice;                   // nice increment in each worker (10)
    int blas_threads;           // BLAS threads per worker (1)
    const char *backend;        // "auto" | "cpu" | "cuda"
    int n_gpu_workers;          // workers 0..n_gpu_workers-1 open backend,
                                // the others "cpu"; < 0 = every worker
                                // opens backend (-1, the default)
    const char *checkpoint_dir; // where <task_id>.ckpt files live
    bool verbose;               // workers log to stderr
    int memory_mb;              // cap of each worker's data memory in MiB
                                // (RLIMIT_DATA: heap and private
                                // mappings); 0 = none (the default)
} ms_worker_options_t;

//  One task to run. Borrowed by ms_worker_pool_start for the call.
typedef struct {
    const char *task_id;      // 64 hex
    const char *sweep_id;     // 64 hex
    const json_t *config;     // canonical config object
    const json_t *dataset;    // dataset object (see above)
    int attempt;              // 1 for the first try on this node
    const char *weights_path; // NULL, or where to write (train) or read
                              // (reeval) the weights file
    bool reeval;              // re-evaluate the weights at weights_path
} ms_worker_task_t;

typedef enum {
    MS_WORKER_EVENT_EPOCH,   // body: the epoch message
    MS_WORKER_EVENT_STARTED, // body: the started message (mono_us)
    MS_WORKER_EVENT_RESULT,  // body: the result object
    MS_WORKER_EVENT_FAILED,  // reason: why the task cannot run (bad data)
    MS_WORKER_EVENT_DIED,    // reason: how the worker died; it was respawned
} ms_worker_event_kind_t;

//  What ms_worker_pool_poll returns. Clear it with ms_worker_event_clear.
typedef struct {
    ms_worker_event_kind_t kind;
    int worker;                        // index of the worker, 0..n-1
    char task_id[MS_HASH_HEX_LEN + 1]; // task concerned; "" when idle
    json_t *body;                      // owned; NULL for FAILED/DIED
    char reason[512];                  // FAILED and DIED
    int term_signal;                   // DIED: the signal, 0 if it exited
} ms_worker_event_t;

//  Fill opts with the defaults: one worker per online core, nice 10,
//  1 BLAS thread, backend "auto" for every worker (n_gpu_workers -1),
//  checkpoint_dir "checkpoints", quiet.
void ms_worker_options_defaults(ms_worker_options_t *opts);

//  Create checkpoint_dir (0700) and fork the workers. opts is copied.
//  Caller owns *out; free it with ms_worker_pool_destroy(). Returns MS_OK;
//  MS_ERR_IO (fork, pipe or mkdir failed: diag); MS_ERR_NOMEM.
int ms_worker_pool_open(ms_worker_pool_t **out, const ms_worker_options_t *opts,
                        ms_diag_t *diag);

//  Stop every worker (idle ones by closing their pipe, busy ones by
//  SIGTERM; checkpoints stay), reap them and free the pool. NULL-safe;
//  nulls *self_p. The ids of tasks that were running are NOT reported:
//  call ms_worker_pool_busy_task first if you need them.
void ms_worker_pool_destroy(ms_worker_pool_t **self_p);

//  Number of workers.
int ms_worker_pool_size(const ms_worker_pool_t *self);

//  The worker calibration figure: the median of the single-thread SGEMM
//  GFLOP/s (ms_platform_calibrate) that the workers measured at start and
//  announced in "ready" (a worker's rows carry its own figure in
//  platform.calibration_gflops); 0 before any has. Read as messages are
//  polled (ms_worker_pool_poll): call from the thread that polls.
double ms_worker_pool_calibration(const ms_worker_pool_t *self);

//  The platform (the JSON object a row's "platform" holds: the fingerprint
//  fields, blas_config, calibration_gflops) that a worker announced in
//  "ready" at start, the first worker's that has one; NULL before any has
//  (or when no worker's backend opened at start). Borrowed: valid until
//  the next ms_worker_pool_poll or destroy. Call from the polling thread.
const json_t *ms_worker_pool_platform(const ms_worker_pool_t *self);

//  Number of idle workers (ready for a task).
int ms_worker_pool_idle(const ms_worker_pool_t *self);

//  Stop (SIGSTOP) every worker that runs a task, for an idle_only node
//  whose machine's owner is busy (docs/VOLUNTEER.md). A stopped worker
//  keeps its memory and its task, and goes on where it was at
//  ms_worker_pool_resume. Idle workers are left alone (they use no CPU;
//  the caller starts no task while paused). Returns how many workers
//  were stopped by this call.
int ms_worker_pool_pause(ms_worker_pool_t *self);

//  Continue (SIGCONT) worker i if it is stopped, or every stopped worker
//  when i < 0. Call it after sending a stopped worker SIGTERM too: the
//  signal is delivered only once it runs. Returns how many workers were
//  continued.
int ms_worker_pool_resume(ms_worker_pool_t *self, int i);

//  Whether worker i is stopped by ms_worker_pool_pause.
bool ms_worker_pool_stopped(const ms_worker_pool_t *self, int i);

//  The task id (hex) worker i is running, or NULL when it is idle.
//  Borrowed until the next pool call.
const char *ms_worker_pool_busy_task(const ms_worker_pool_t *self, int i);

//  The backend worker i opens: opts.backend for the first n_gpu_workers
//  workers (all when negative), "cpu" for the others. Static or owned
//  by the pool.
const char *ms_worker_pool_backend(const ms_worker_pool_t *self, int i);

//  Pid of worker i (for tests and /status).
int ms_worker_pool_pid(const ms_worker_pool_t *self, int i);

//  Send task to an idle worker. *worker (may be NULL) gets its index.
//  Returns MS_OK; MS_ERR_CONFLICT (no idle worker); MS_ERR_NOMEM;
//  MS_ERR_IO (the worker's pipe broke: it is reaped and respawned, and
//  the call may be retried).
int ms_worker_pool_start(ms_worker_pool_t *self, const ms_worker_task_t *task,
                         int *worker);

//  Wait up to timeout_ms (0: do not wait; < 0: forever) for a message
//  from a worker or for wake_fd (>= 0; -1 for none) to become readable.
//  Returns MS_OK with *ev filled (clear it with ms_worker_event_clear);
//  MS_ERR_TIMEOUT nothing arrived; MS_ERR_INTERRUPTED wake_fd is readable
//  (the caller drains it) or a signal interrupted the wait. A malformed
//  frame from a worker is treated as its death (it is killed and
//  respawned, event DIED).
int ms_worker_pool_poll(ms_worker_pool_t *self, int timeout_ms, int wake_fd,
                        ms_worker_event_t *ev);

//  Free what an event owns and zero it; NULL-safe.
void ms_worker_event_clear(ms_worker_event_t *ev);

//  The node's ends of the workers' sockets (one per running worker; -1
//  for a worker being respawned), for a caller that polls them together
//  with its own sockets (zmq_poll) and then calls ms_worker_pool_poll
//  with timeout 0. Writes up to max into fds; returns how many.
int ms_worker_pool_fds(const ms_worker_pool_t *self, int *fds, int max);

//  Total worker deaths seen since the pool opened.
uint64_t ms_worker_pool_crashes(const ms_worker_pool_t *self);

//  Load and check (ms_dataset_check, same feature count) the train and
//  test sets described by a dataset object (see above). A file part
//  whose name contains "images-idx3" is IDX, its labels file named with
//  "labels-idx1" in place of that (or given as train_labels/test_labels);
//  any other file is CSV with the "label" column. Caller owns *train and
//  *test. Returns MS_OK or the loader's code (MS_ERR_IO, MS_ERR_DATASET,
//  MS_ERR_NOTFOUND, MS_ERR_INVALID, MS_ERR_NOMEM) with diag naming the
//  file; both are NULL on failure.
int ms_worker_load_dataset(const json_t *dataset, ms_dataset_t **train,
                           ms_dataset_t **test, ms_diag_t *diag);

//  The result object of a task of kind noop (status ok, zero epochs, null
//  metrics, no platform): what a worker sends for one, and what a node
//  that completes a noop task itself stores. Caller owns it; NULL when
//  out of memory.
json_t *ms_worker_noop_result(void);

//  Path of the checkpoint of task_id in dir into out (size n).
void ms_worker_checkpoint_path(const char *dir, const char *task_id, char *out,
                               size_t n);

#endif
