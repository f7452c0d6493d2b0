/*  =========================================================================
    ms_node - one meshsweep node: identity, store, worker pool, scheduler
    and (optionally) the HTTP API

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The node loop (single-node version; the pool issues add gossip and
    leases around the same loop).

    State lives in the store, not in the loop. A task is claimed in the
    store (pending -> running, holder = this node) before it is sent to a
    worker, and its result is stored together with the move to done in one
    transaction; the checkpoint is deleted only after that commit. So at
    any crash point the store says what is left: tasks still "running" for
    this node at open are moved back to pending (ms_store_reset_claims),
    and their checkpoints make the rerun resume bit-exactly. A sweep is
    done when no task is pending or running (the store keeps that count).

    One turn (ms_node_poll): start pending tasks on idle workers (the
    store's claim order: sweeps by priority, then submission time, tasks
    by index), wait for a worker message, an API command or the timeout,
    handle everything that arrived, start tasks again.

    Failures. A worker death is a crash of its task: the task goes back to
    pending and is retried at once, up to retry_cap retries (DESIGN.md
    "Defaults": 2), after which it is failed with the reason and the
    number of attempts ("worker killed by signal 6 (SIGABRT) on 3
    attempts"). The crash count lives in the node's memory, not the store:
    a restarted node gives a task a fresh set of retries, which is what one
    wants after, say, an upgrade that fixed the crash. Bad data is failed
    at once by the worker (it would fail the same way again).

    API commands. HTTP threads never write to the store themselves: a
    submission is queued as a command, the loop is woken through a pipe,
    and the HTTP thread waits (bounded) for the loop's answer. The same
    pipe carries ms_node_stop(), whose only work is a flag and a write(),
    both async-signal-safe.

    Local datasets. A canonical spec names file datasets by their hashes
    only, never by path, so that no node opens a path it was sent. A local
    runner (local_files) is the one place where paths are known: the node
    keeps them in DATA_DIR/datasets/<sweep_id>.json (0600), so the sweep
    can still resume after a restart of the same node.
*/
#define _DEFAULT_SOURCE // realpath
#include "ms_node.h"
#include "ms_api.h"
#include "ms_config_json.h"
#include "ms_dataset.h"
#include "ms_identity.h"
#include "ms_spec.h"
#include "ms_wire_canon.h"
#include "ms_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_API_WAIT_MS 60000 // longest an HTTP thread waits for the loop

//  A submission queued by an HTTP thread.
typedef struct s_command {
    struct s_command *next; // queue link
    char *text;             // spec text (owned)
    size_t n;               // bytes in text
    bool done;              // the loop answered
    bool abandoned;         // the HTTP thread gave up waiting: loop frees
    int rc;                 // answer
    ms_diag_t diag;         // answer
    char *summary;          // answer (malloc'd), taken by the HTTP thread
} s_command_t;

//  What the node knows about one sweep it serves.
typedef struct {
    ms_hash_t sweep_id;   // the sweep
    json_t *dataset;      // dataset object for workers, or NULL if unknown
    char *dataset_error;  // why the dataset is unknown (malloc'd) or NULL
    double started_at;    // monotonic seconds of its first task here; 0
    bool summed;          // train_seconds holds the stored rows' sum
    double train_seconds; // sum of train_seconds of its stored rows
} s_sweep_info_t;

//  What the node knows about the task a worker runs.
typedef struct {
    bool busy;          // a task is on this worker
    ms_hash_t task_id;  // the task
    ms_hash_t sweep_id; // its sweep
    json_t *config;     // its canonical config object (owned)
    bool train;         // kind train (not noop)
} s_running_t;

//  Crashes of one task so far (for retries).
typedef struct {
    ms_hash_t task_id; // the task
    int crashes;       // worker deaths while running it
} s_crash_t;

struct ms_node {
    // options (owned copies)
    ms_node_options_t opts;        // strings point to the copies below
    char *data_dir;                // data dir
    char *backend;                 // backend name
    char *api_bind;                // API bind address, or NULL
    char checkpoint_dir[PATH_MAX]; // DATA_DIR/checkpoints
    char datasets_dir[PATH_MAX];   // DATA_DIR/datasets
    char store_dir[PATH_MAX];      // DATA_DIR/store
    char operator_name[64];        // the local user, or "local"
    // parts
    ms_identity_t *identity;        // node key pair
    ms_store_t *store;              // the store
    ms_worker_pool_t *pool;         // worker processes
    ms_api_t *api;                  // HTTP API, or NULL
    int wake[2];                    // self-pipe: API commands and stop
    volatile sig_atomic_t stopping; // ms_node_stop was called
    ms_node_event_fn event_fn;      // progress events, or NULL
    void *event_arg;                // its argument
    s_running_t *running;           // per worker
    s_sweep_info_t *sweeps;         // sweeps seen by the scheduler
    size_t n_sweeps;                // entries in sweeps
    s_crash_t *crashes;             // tasks that crashed a worker
    size_t n_crashes;               // entries in crashes
    int64_t n_trainings;            // train attempts started
    double opened_at;               // monotonic seconds at open
    // shared with HTTP threads, under lock
    pthread_mutex_t lock;      // guards the fields below
    pthread_cond_t answered;   // a command was answered
    s_command_t *queue;        // commands to run (FIFO)
    int n_busy;                // workers running a task
    uint64_t n_trained;        // results stored (train tasks)
    double training_seconds;   // their train_seconds summed
    uint64_t n_worker_crashes; // worker deaths
    json_t *platform;          // last platform seen, or NULL
};

//  --------------------------------------------------------------------------
//  Monotonic seconds.

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

//  --------------------------------------------------------------------------
//  Log a line to stderr when verbose.

static void s_log(const ms_node_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(const ms_node_t *self, const char *fmt, ...)
{
    if (!self->opts.verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "meshsweepd: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

//  --------------------------------------------------------------------------
//  Send an event (a JSON object, taken) to the handler.

static void
s_emit(ms_node_t *self, json_t *event)
{
    if (event && self->event_fn) {
        char *text = json_dumps(event, JSON_COMPACT);
        if (text)
            self->event_fn(self->event_arg, text);
        free(text);
    }
    json_decref(event);
}

//  --------------------------------------------------------------------------
//  Fill the defaults.

void
ms_node_options_defaults(ms_node_options_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->data_dir = "meshsweep-data";
    opts->n_workers = 0;
    opts->backend = "auto";
    opts->blas_threads = 1;
    opts->retry_cap = MS_DEFAULT_RETRY_CAP;
    opts->worker_nice = MS_DEFAULT_WORKER_NICE;
    opts->api_bind = NULL;
    opts->api_token_file = NULL;
    opts->verbose = false;
}

//  --------------------------------------------------------------------------
//  mkdir -p with mode 0700 for the last part.

static int
s_mkdirs(const char *path, ms_diag_t *diag)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int) sizeof tmp)
        return ms_diag_set(diag, path, "path too long");
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return ms_diag_set_code(diag, MS_ERR_IO, tmp, "cannot create: %s",
                                    strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return ms_diag_set_code(diag, MS_ERR_IO, tmp, "cannot create: %s",
                                strerror(errno));
    struct stat st;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
        return ms_diag_set_code(diag, MS_ERR_IO, tmp, "not a directory");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The node's id as raw bytes (the public key).

static const uint8_t *
s_node_pk(const ms_node_t *self)
{
    return ms_identity_public_key(self->identity);
}

static int s_api_submit(void *arg, const char *text, size_t n, char **summary,
                        ms_diag_t *diag);
static json_t *s_api_status(void *arg);

//  --------------------------------------------------------------------------
//  Open a node.

int
ms_node_open(ms_node_t **out, const ms_node_options_t *opts, ms_diag_t *diag)
{
    *out = NULL;
    if (!opts->data_dir || !*opts->data_dir)
        return ms_diag_set(diag, "data_dir", "no data dir given");
    if (opts->retry_cap < 0)
        return ms_diag_set(diag, "retry_cap", "must be 0 or more, not %d",
                           opts->retry_cap);
    if (opts->n_workers < 0 || opts->n_workers > 4096)
        return ms_diag_set(diag, "workers", "must be 0..4096, not %d",
                           opts->n_workers);
    const char *backend = opts->backend ? opts->backend : "auto";
    if (strcmp(backend, "auto") != 0 && strcmp(backend, "cpu") != 0 &&
        strcmp(backend, "cuda") != 0)
        return ms_diag_set(diag, "backend",
                           "unknown backend '%s' (expected auto, cpu or cuda)",
                           backend);

    ms_node_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->wake[0] = self->wake[1] = -1;
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->answered, NULL);
    self->opts = *opts;
    self->data_dir = strdup(opts->data_dir);
    self->backend = strdup(backend);
    self->api_bind = opts->api_bind ? strdup(opts->api_bind) : NULL;
    self->opts.data_dir = self->data_dir;
    self->opts.backend = self->backend;
    self->opts.api_bind = self->api_bind;
    self->opts.api_token_file = NULL;
    if (self->opts.blas_threads < 1)
        self->opts.blas_threads = 1;
    self->opened_at = s_now();
    int rc = MS_ERR_NOMEM;
    if (!self->data_dir || !self->backend ||
        (opts->api_bind && !self->api_bind))
        goto fail;

    const char *user = NULL;
    struct passwd *pw = getpwuid(geteuid());
    if (pw && pw->pw_name && *pw->pw_name)
        user = pw->pw_name;
    else if (getenv("USER") && *getenv("USER"))
        user = getenv("USER");
    snprintf(self->operator_name, sizeof self->operator_name, "%s",
             user ? user : "local");

    char path[PATH_MAX + 32];
    rc = s_mkdirs(self->data_dir, diag);
    if (rc != MS_OK)
        goto fail;
    snprintf(path, sizeof path, "%s/identity", self->data_dir);
    rc = ms_identity_open(&self->identity, path, diag);
    if (rc != MS_OK)
        goto fail;
    snprintf(self->store_dir, sizeof self->store_dir, "%s/store",
             self->data_dir);
    rc = ms_store_open(&self->store, self->store_dir, NULL, diag);
    if (rc != MS_OK)
        goto fail;
    size_t n_reset = 0;
    rc = ms_store_reset_claims(self->store, s_node_pk(self), &n_reset);
    if (rc != MS_OK) {
        ms_diag_set_code(diag, rc, self->store_dir,
                         "cannot reset running tasks: %s", ms_strerror(rc));
        goto fail;
    }
    if (n_reset)
        s_log(self,
              "%zu task(s) left running by the last run are pending "
              "again (they resume from their checkpoints)",
              n_reset);
    snprintf(self->checkpoint_dir, sizeof self->checkpoint_dir,
             "%s/checkpoints", self->data_dir);
    snprintf(self->datasets_dir, sizeof self->datasets_dir, "%s/datasets",
             self->data_dir);
    rc = s_mkdirs(self->datasets_dir, diag);
    if (rc != MS_OK)
        goto fail;

    if (pipe(self->wake) != 0) {
        rc = ms_diag_set_code(diag, MS_ERR_IO, "pipe", "%s", strerror(errno));
        goto fail;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(self->wake[i], F_SETFL,
              fcntl(self->wake[i], F_GETFL) | O_NONBLOCK);
        fcntl(self->wake[i], F_SETFD, FD_CLOEXEC);
    }

    // Workers are forked before the API starts its threads.
    ms_worker_options_t wopts;
    ms_worker_options_defaults(&wopts);
    wopts.n_workers = self->opts.n_workers;
    wopts.nice = self->opts.worker_nice;
    wopts.blas_threads = self->opts.blas_threads;
    wopts.backend = self->backend;
    wopts.checkpoint_dir = self->checkpoint_dir;
    wopts.verbose = self->opts.verbose;
    rc = ms_worker_pool_open(&self->pool, &wopts, diag);
    if (rc != MS_OK)
        goto fail;
    self->running =
        calloc((size_t) ms_worker_pool_size(self->pool), sizeof(s_running_t));
    if (!self->running) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    if (self->api_bind) {
        ms_api_hooks_t hooks = {.store = self->store,
                                .arg = self,
                                .submit = s_api_submit,
                                .status = s_api_status};
        rc = ms_api_open(&self->api, self->api_bind, &hooks, diag);
        if (rc != MS_OK)
            goto fail;
    }
    s_log(self, "node %s, %d workers, data dir %s",
          ms_identity_node_id(self->identity), ms_worker_pool_size(self->pool),
          self->data_dir);
    *out = self;
    return MS_OK;

fail:
    ms_node_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Answer every queued command with rc (at shutdown).

static void
s_fail_commands(ms_node_t *self, int rc)
{
    pthread_mutex_lock(&self->lock);
    while (self->queue) {
        s_command_t *cmd = self->queue;
        self->queue = cmd->next;
        cmd->rc = rc;
        ms_diag_set_code(&cmd->diag, rc, "node", "the node is stopping");
        cmd->done = true;
        if (cmd->abandoned) {
            free(cmd->text);
            free(cmd);
        }
    }
    pthread_cond_broadcast(&self->answered);
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  Stop everything and free.

void
ms_node_destroy(ms_node_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_node_t *self = *self_p;
    self->stopping = 1;
    s_fail_commands(self, MS_ERR_INTERRUPTED);
    ms_api_destroy(&self->api); // no HTTP thread runs after this
    s_fail_commands(self, MS_ERR_INTERRUPTED);
    int n_workers = self->pool ? ms_worker_pool_size(self->pool) : 0;
    // Tasks on workers go back to pending; checkpoints stay.
    for (int i = 0; self->running && i < n_workers; i++) {
        s_running_t *r = &self->running[i];
        if (r->busy && self->store)
            ms_store_set_task_state(self->store, r->task_id.bytes,
                                    MS_TASK_PENDING, NULL, "node stopped");
        json_decref(r->config);
    }
    free(self->running);
    ms_worker_pool_destroy(&self->pool);
    ms_store_destroy(&self->store);
    ms_identity_destroy(&self->identity);
    for (size_t i = 0; i < self->n_sweeps; i++) {
        json_decref(self->sweeps[i].dataset);
        free(self->sweeps[i].dataset_error);
    }
    free(self->sweeps);
    free(self->crashes);
    json_decref(self->platform);
    if (self->wake[0] >= 0)
        close(self->wake[0]);
    if (self->wake[1] >= 0)
        close(self->wake[1]);
    pthread_cond_destroy(&self->answered);
    pthread_mutex_destroy(&self->lock);
    free(self->data_dir);
    free(self->backend);
    free(self->api_bind);
    *self_p = NULL;
    free(self);
}

//  --------------------------------------------------------------------------
//  Path of the local dataset file of a sweep.

static void
s_dataset_file(const ms_node_t *self, const ms_hash_t *sweep_id, char *out,
               size_t n)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(sweep_id, hex);
    snprintf(out, n, "%s/%s.json", self->datasets_dir, hex);
}

//  --------------------------------------------------------------------------
//  Write a small file atomically with mode 0600.

static int
s_write_small(const char *path, const char *text)
{
    char tmp[PATH_MAX + 200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return MS_ERR_IO;
    size_t n = strlen(text);
    bool ok = write(fd, text, n) == (ssize_t) n && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return MS_ERR_IO;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  For a local file dataset: absolute paths, check the files load, and the
//  dataset object for workers (caller owns *out).

static int
s_local_dataset(const ms_spec_dataset_t *d, json_t **out, ms_diag_t *diag)
{
    *out = NULL;
    char train[PATH_MAX], test[PATH_MAX];
    if (!realpath(d->train_path, train))
        return ms_diag_set_code(diag, MS_ERR_IO, d->train_path, "%s",
                                strerror(errno));
    if (!realpath(d->test_path, test))
        return ms_diag_set_code(diag, MS_ERR_IO, d->test_path, "%s",
                                strerror(errno));
    char th[MS_HASH_HEX_LEN + 1], eh[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&d->train_hash, th);
    ms_hash_hex(&d->test_hash, eh);
    json_t *obj = json_pack("{s:s, s:s, s:s, s:s, s:s}", "train", train, "test",
                            test, "label", d->label ? d->label : "label",
                            "train_hash", th, "test_hash", eh);
    if (!obj)
        return MS_ERR_NOMEM;
    // Load once here so a bad file is refused at submission, with the
    // loader's diag, and nothing is stored.
    ms_dataset_t *tr = NULL, *te = NULL;
    int rc = ms_worker_load_dataset(obj, &tr, &te, diag);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    if (rc != MS_OK) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Submit a spec.

int
ms_node_submit(ms_node_t *self, const char *spec_text, size_t n,
               bool local_files, ms_hash_t *sweep_id, bool *existed,
               char **summary_json, ms_diag_t *diag)
{
    if (summary_json)
        *summary_json = NULL;
    if (existed)
        *existed = false;
    ms_diag_clear(diag);
    ms_spec_t *spec = NULL;
    json_t *local = NULL;
    ms_store_task_input_t *tasks = NULL;
    int rc = ms_spec_parse(spec_text, n, NULL, &spec, diag);
    if (rc != MS_OK)
        return rc;
    const ms_spec_dataset_t *d = ms_spec_dataset(spec);
    if (d->builtin) {
        char *p[4] = {NULL, NULL, NULL, NULL};
        rc =
            ms_dataset_builtin_paths(d->name, &p[0], &p[1], &p[2], &p[3], diag);
        for (int i = 0; i < 4; i++)
            free(p[i]);
        if (rc != MS_OK)
            goto done;
    } else {
        if (!local_files) {
            rc = ms_diag_set_code(
                diag, MS_ERR_UNSUPPORTED, "dataset",
                "a file dataset cannot be submitted to a node yet (dataset "
                "uploads come with the pool); use a built-in dataset, or "
                "run the sweep here with `meshsweep run`");
            goto done;
        }
        rc = ms_spec_bind_dataset_files(spec, diag);
        if (rc == MS_OK)
            rc = s_local_dataset(ms_spec_dataset(spec), &local, diag);
        if (rc != MS_OK)
            goto done;
    }
    size_t n_tasks = ms_spec_task_count(spec);
    tasks = calloc(n_tasks ? n_tasks : 1, sizeof *tasks);
    if (!tasks) {
        rc = MS_ERR_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < n_tasks; i++) {
        const char *cfg = ms_spec_task_json(spec, i);
        tasks[i].task_id = ms_spec_task_id(spec, i)->bytes;
        tasks[i].config_json = cfg;
        tasks[i].config_len = strlen(cfg);
    }
    const ms_hash_t *sid = ms_spec_sweep_id(spec);
    size_t canon_len = 0;
    const char *canon = ms_spec_canonical(spec, &canon_len);
    if (local) {
        // Paths first: a stored sweep must always find its files.
        char path[PATH_MAX + 80];
        s_dataset_file(self, sid, path, sizeof path);
        char *text = json_dumps(local, JSON_COMPACT | JSON_SORT_KEYS);
        rc = text ? s_write_small(path, text) : MS_ERR_NOMEM;
        free(text);
        if (rc != MS_OK) {
            ms_diag_set_code(diag, rc, path, "cannot write: %s",
                             strerror(errno));
            goto done;
        }
        // Forget a cached "unknown dataset" of this sweep.
        for (size_t i = 0; i < self->n_sweeps; i++)
            if (ms_hash_equal(&self->sweeps[i].sweep_id, sid)) {
                json_decref(self->sweeps[i].dataset);
                self->sweeps[i].dataset = json_incref(local);
                free(self->sweeps[i].dataset_error);
                self->sweeps[i].dataset_error = NULL;
            }
    }
    bool was = false;
    rc = ms_store_put_sweep(self->store, sid->bytes, canon, canon_len, 0, tasks,
                            n_tasks, &was);
    if (rc != MS_OK) {
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(sid, hex);
        ms_diag_set_code(diag, rc, "store",
                         rc == MS_ERR_CONFLICT
                             ? "sweep %s conflicts with stored data"
                             : "cannot store sweep %s",
                         hex);
        goto done;
    }
    if (sweep_id)
        *sweep_id = *sid;
    if (existed)
        *existed = was;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(sid, hex);
    s_log(self, "sweep %s %s: %zu tasks", hex, was ? "existed" : "stored",
          n_tasks);
    if (summary_json) {
        json_t *warnings = json_array();
        for (size_t i = 0; warnings && i < ms_spec_warning_count(spec); i++)
            json_array_append_new(warnings,
                                  json_string(ms_spec_warning(spec, i)));
        json_t *sum =
            json_pack("{s:s, s:b, s:I, s:o, s:s}", "sweep_id", hex, "existed",
                      was, "n_tasks", (json_int_t) n_tasks, "warnings",
                      warnings ? warnings : json_array(), "name",
                      ms_spec_name(spec) ? ms_spec_name(spec) : "");
        *summary_json = sum ? json_dumps(sum, JSON_COMPACT) : NULL;
        json_decref(sum);
        if (!*summary_json)
            rc = MS_ERR_NOMEM;
    }

done:
    free(tasks);
    json_decref(local);
    ms_spec_destroy(&spec);
    return rc;
}

//  --------------------------------------------------------------------------
//  The info of a sweep (dataset for workers), created on first use.

static s_sweep_info_t *
s_sweep_info(ms_node_t *self, const uint8_t *sweep_bytes)
{
    ms_hash_t sid;
    memcpy(sid.bytes, sweep_bytes, MS_HASH_BYTES);
    for (size_t i = 0; i < self->n_sweeps; i++)
        if (ms_hash_equal(&self->sweeps[i].sweep_id, &sid))
            return &self->sweeps[i];
    s_sweep_info_t *grown =
        realloc(self->sweeps, (self->n_sweeps + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    self->sweeps = grown;
    s_sweep_info_t *info = &self->sweeps[self->n_sweeps++];
    memset(info, 0, sizeof *info);
    info->sweep_id = sid;

    ms_store_sweep_t *sweep = NULL;
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char why[1200] = "";
    if (ms_store_get_sweep(self->store, sweep_bytes, &sweep) != MS_OK)
        snprintf(why, sizeof why, "sweep not found in the store");
    else if (ms_spec_load_canonical(sweep->spec_json, sweep->spec_len, &spec,
                                    &diag) != MS_OK) {
        char text[1100];
        snprintf(why, sizeof why, "stored spec unreadable: %s",
                 ms_diag_format(&diag, text, sizeof text));
    } else if (ms_spec_dataset(spec)->builtin)
        info->dataset = json_pack("{s:s}", "name", ms_spec_dataset(spec)->name);
    else {
        char path[PATH_MAX + 80];
        s_dataset_file(self, &sid, path, sizeof path);
        json_error_t err;
        info->dataset = json_load_file(path, 0, &err);
        if (!info->dataset)
            snprintf(why, sizeof why,
                     "the files of this sweep's dataset are not known to "
                     "this node (run it with `meshsweep run` where the "
                     "files are)");
    }
    if (!info->dataset && !why[0])
        snprintf(why, sizeof why, "out of memory");
    if (!info->dataset)
        info->dataset_error = strdup(why);
    ms_spec_destroy(&spec);
    ms_store_sweep_destroy(&sweep);
    return info;
}

//  --------------------------------------------------------------------------
//  Crash record of a task (created at 0).

static s_crash_t *
s_crash_of(ms_node_t *self, const ms_hash_t *task_id)
{
    for (size_t i = 0; i < self->n_crashes; i++)
        if (ms_hash_equal(&self->crashes[i].task_id, task_id))
            return &self->crashes[i];
    s_crash_t *grown =
        realloc(self->crashes, (self->n_crashes + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    self->crashes = grown;
    s_crash_t *c = &self->crashes[self->n_crashes++];
    c->task_id = *task_id;
    c->crashes = 0;
    return c;
}

//  --------------------------------------------------------------------------
//  Forget the crash record of a task (it ended).

static void
s_crash_forget(ms_node_t *self, const ms_hash_t *task_id)
{
    for (size_t i = 0; i < self->n_crashes; i++)
        if (ms_hash_equal(&self->crashes[i].task_id, task_id)) {
            self->crashes[i] = self->crashes[--self->n_crashes];
            return;
        }
}

//  --------------------------------------------------------------------------
//  Delete a task's checkpoint.

static void
s_drop_checkpoint(ms_node_t *self, const ms_hash_t *task_id)
{
    char hex[MS_HASH_HEX_LEN + 1], path[PATH_MAX + 100];
    ms_hash_hex(task_id, hex);
    ms_worker_checkpoint_path(self->checkpoint_dir, hex, path, sizeof path);
    unlink(path);
}

//  --------------------------------------------------------------------------
//  Fail a task for good with a reason, and tell the handler.

static void
s_fail_task(ms_node_t *self, const ms_hash_t *task_id,
            const ms_hash_t *sweep_id, const char *reason)
{
    int rc = ms_store_set_task_state(self->store, task_id->bytes,
                                     MS_TASK_FAILED, NULL, reason);
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(task_id, thex);
    ms_hash_hex(sweep_id, shex);
    if (rc != MS_OK)
        s_log(self, "task %.12s: cannot record failure: %s", thex,
              ms_strerror(rc));
    s_log(self, "task %.12s failed: %s", thex, reason);
    s_drop_checkpoint(self, task_id);
    s_crash_forget(self, task_id);
    s_emit(self, json_pack("{s:s, s:s, s:s, s:s}", "event", "failed", "task_id",
                           thex, "sweep_id", shex, "reason", reason));
}

//  --------------------------------------------------------------------------
//  Update the busy count shared with HTTP threads.

static void
s_update_busy(ms_node_t *self)
{
    int n = 0;
    for (int i = 0; i < ms_worker_pool_size(self->pool); i++)
        n += self->running[i].busy;
    pthread_mutex_lock(&self->lock);
    self->n_busy = n;
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  Start pending tasks on idle workers.

static int
s_schedule(ms_node_t *self)
{
    while (!self->stopping && ms_worker_pool_idle(self->pool) > 0) {
        ms_store_task_t *task = NULL;
        int rc = ms_store_claim_next(self->store, s_node_pk(self), &task);
        if (rc == MS_ERR_NOTFOUND)
            break;
        if (rc != MS_OK) {
            s_log(self, "cannot claim a task: %s", ms_strerror(rc));
            return rc;
        }
        ms_hash_t tid, sid;
        memcpy(tid.bytes, task->task_id, MS_HASH_BYTES);
        memcpy(sid.bytes, task->sweep_id, MS_HASH_BYTES);
        json_error_t err;
        json_t *config =
            json_loadb(task->config_json, task->config_len, 0, &err);
        s_sweep_info_t *info = s_sweep_info(self, task->sweep_id);
        ms_store_task_destroy(&task);
        if (!config || !info || !info->dataset) {
            s_fail_task(self, &tid, &sid,
                        !config ? "stored config is not JSON"
                        : !info ? "out of memory"
                                : info->dataset_error);
            json_decref(config);
            continue;
        }
        char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&tid, thex);
        ms_hash_hex(&sid, shex);
        s_crash_t *crash = s_crash_of(self, &tid);
        int attempt = (crash ? crash->crashes : 0) + 1;
        ms_worker_task_t wt = {.task_id = thex,
                               .sweep_id = shex,
                               .config = config,
                               .dataset = info->dataset,
                               .attempt = attempt};
        int worker = -1;
        rc = ms_worker_pool_start(self->pool, &wt, &worker);
        if (rc != MS_OK) {
            // The worker's pipe broke before the task started: put it
            // back, it will be claimed again.
            ms_store_set_task_state(self->store, tid.bytes, MS_TASK_PENDING,
                                    NULL, NULL);
            json_decref(config);
            if (rc == MS_ERR_IO)
                continue;
            return MS_OK;
        }
        const char *kind = json_string_value(json_object_get(config, "kind"));
        s_running_t *r = &self->running[worker];
        r->busy = true;
        r->task_id = tid;
        r->sweep_id = sid;
        r->config = config;
        r->train = !(kind && strcmp(kind, "noop") == 0);
        if (r->train)
            self->n_trainings++;
        if (info->started_at == 0)
            info->started_at = s_now();
        s_log(self, "task %.12s started on worker %d (attempt %d)", thex,
              worker, attempt);
        s_emit(self,
               json_pack("{s:s, s:s, s:s, s:i}", "event", "started", "task_id",
                         thex, "sweep_id", shex, "attempt", attempt));
    }
    s_update_busy(self);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The fingerprint of a platform object: BLAKE2b of its canonical form
//  without calibration_gflops; NULL for a null platform.

static json_t *
s_fingerprint(const json_t *platform)
{
    if (!json_is_object(platform) || json_object_size(platform) == 0)
        return json_null();
    json_t *copy = json_copy((json_t *) platform);
    if (!copy)
        return json_null();
    json_object_del(copy, "calibration_gflops");
    size_t len = 0;
    char *canon = ms_wire_canon_dump_len(copy, &len);
    json_decref(copy);
    if (!canon)
        return json_null();
    ms_hash_t h;
    ms_hash_bytes(canon, len, &h);
    free(canon);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    return json_string(hex);
}

//  --------------------------------------------------------------------------
//  A worker's result: build the row, store it with the move to done, drop
//  the checkpoint.

static void
s_on_result(ms_node_t *self, int worker, json_t *body)
{
    s_running_t *r = &self->running[worker];
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&r->task_id, thex);
    ms_hash_hex(&r->sweep_id, shex);
    json_t *row = json_object();
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value)
    {
        if (strcmp(key, "peak_rss_bytes") != 0)
            json_object_set(row, key, value);
    }
    json_t *platform = json_object_get(body, "platform");
    json_object_set_new(row, "task_id", json_string(thex));
    json_object_set_new(row, "sweep_id", json_string(shex));
    json_object_set(row, "config", r->config);
    json_object_set_new(row, "node_id",
                        json_string(ms_identity_node_id(self->identity)));
    json_object_set_new(row, "operator", json_string(self->operator_name));
    json_object_set_new(row, "fingerprint", s_fingerprint(platform));
    json_object_set_new(row, "verdict", json_string("pending"));
    json_object_set_new(row, "verdict_revision", json_integer(0));
    json_object_set_new(row, "counted", json_true());
    size_t len = 0;
    char *text = ms_wire_canon_dump_len(row, &len);
    int rc = text ? ms_store_put_result(self->store, r->task_id.bytes,
                                        s_node_pk(self), text, len)
                  : MS_ERR_NOMEM;
    free(text);
    if (rc == MS_OK) {
        s_drop_checkpoint(self, &r->task_id);
        s_crash_forget(self, &r->task_id);
        double secs = json_number_value(json_object_get(body, "train_seconds"));
        s_sweep_info_t *info = s_sweep_info(self, r->sweep_id.bytes);
        if (info && info->summed && isfinite(secs))
            info->train_seconds += secs;
        pthread_mutex_lock(&self->lock);
        if (r->train) {
            self->n_trained++;
            self->training_seconds += secs;
        }
        if (json_is_object(platform) && json_object_size(platform)) {
            json_decref(self->platform);
            self->platform = json_incref(platform);
        }
        pthread_mutex_unlock(&self->lock);
        s_log(self, "task %.12s done: %s (worker peak RSS %.1f MiB)", thex,
              json_string_value(json_object_get(body, "status")),
              (double) json_integer_value(
                  json_object_get(body, "peak_rss_bytes")) /
                  (1024.0 * 1024.0));
        json_t *ev = json_pack(
            "{s:s, s:s, s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "event",
            "result", "task_id", thex, "sweep_id", shex, "status",
            json_object_get(row, "status"), "epochs",
            json_object_get(row, "epochs"), "val_accuracy",
            json_object_get(row, "val_accuracy"), "test_accuracy",
            json_object_get(row, "test_accuracy"), "seconds_per_epoch",
            json_object_get(row, "seconds_per_epoch"), "weights_digest",
            json_object_get(row, "weights_digest"), "peak_rss_bytes",
            json_object_get(body, "peak_rss_bytes")
                ? json_object_get(body, "peak_rss_bytes")
                : json_null());
        s_emit(self, ev);
    } else {
        // The result could not be stored: the task goes back to pending
        // and its checkpoint (at the last epoch) makes the rerun cheap.
        s_log(self, "task %.12s: cannot store result: %s", thex,
              ms_strerror(rc));
        ms_store_set_task_state(self->store, r->task_id.bytes, MS_TASK_PENDING,
                                NULL, ms_strerror(rc));
    }
    json_decref(row);
}

//  --------------------------------------------------------------------------
//  Handle one worker event.

static void
s_on_event(ms_node_t *self, ms_worker_event_t *ev)
{
    s_running_t *r = &self->running[ev->worker];
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&r->task_id, thex);
    ms_hash_hex(&r->sweep_id, shex);
    switch (ev->kind) {
    case MS_WORKER_EVENT_EPOCH: {
        json_t *out = json_copy(ev->body);
        if (out) {
            json_object_del(out, "op");
            json_object_set_new(out, "event", json_string("epoch"));
            json_object_set_new(out, "sweep_id", json_string(shex));
        }
        s_emit(self, out);
        return;
    }
    case MS_WORKER_EVENT_RESULT:
        if (r->busy)
            s_on_result(self, ev->worker, ev->body);
        break;
    case MS_WORKER_EVENT_FAILED:
        if (r->busy)
            s_fail_task(self, &r->task_id, &r->sweep_id, ev->reason);
        break;
    case MS_WORKER_EVENT_DIED: {
        pthread_mutex_lock(&self->lock);
        self->n_worker_crashes++;
        pthread_mutex_unlock(&self->lock);
        s_log(self, "worker %d: %s%s%.12s", ev->worker, ev->reason,
              r->busy ? " while running task " : "", r->busy ? thex : "");
        if (!r->busy)
            break;
        s_crash_t *crash = s_crash_of(self, &r->task_id);
        int crashes = crash ? ++crash->crashes : self->opts.retry_cap + 1;
        if (crashes > self->opts.retry_cap) {
            char reason[700];
            snprintf(reason, sizeof reason, "%s on %d attempt%s", ev->reason,
                     crashes, crashes == 1 ? "" : "s");
            s_fail_task(self, &r->task_id, &r->sweep_id, reason);
        } else {
            ms_store_set_task_state(self->store, r->task_id.bytes,
                                    MS_TASK_PENDING, NULL, ev->reason);
            s_emit(self,
                   json_pack("{s:s, s:s, s:s, s:i, s:s}", "event", "retry",
                             "task_id", thex, "sweep_id", shex, "attempt",
                             crashes + 1, "reason", ev->reason));
        }
        break;
    }
    }
    json_decref(r->config);
    memset(r, 0, sizeof *r);
}

//  --------------------------------------------------------------------------
//  Run the queued API commands.

static void
s_run_commands(ms_node_t *self)
{
    for (;;) {
        pthread_mutex_lock(&self->lock);
        s_command_t *cmd = self->queue;
        if (cmd)
            self->queue = cmd->next;
        pthread_mutex_unlock(&self->lock);
        if (!cmd)
            return;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        char *summary = NULL;
        int rc = ms_node_submit(self, cmd->text, cmd->n, false, NULL, NULL,
                                &summary, &diag);
        pthread_mutex_lock(&self->lock);
        cmd->rc = rc;
        cmd->diag = diag;
        cmd->summary = summary;
        cmd->done = true;
        if (cmd->abandoned) {
            free(cmd->summary);
            free(cmd->text);
            free(cmd);
        }
        pthread_cond_broadcast(&self->answered);
        pthread_mutex_unlock(&self->lock);
    }
}

//  --------------------------------------------------------------------------
//  Empty the wake pipe.

static void
s_drain_wake(ms_node_t *self)
{
    char buf[256];
    while (read(self->wake[0], buf, sizeof buf) > 0)
        ;
}

//  --------------------------------------------------------------------------
//  One turn of the loop.

int
ms_node_poll(ms_node_t *self, int timeout_ms)
{
    if (self->stopping)
        return MS_ERR_INTERRUPTED;
    s_run_commands(self);
    int rc = s_schedule(self);
    if (rc != MS_OK)
        return rc;
    ms_worker_event_t ev;
    int wait = timeout_ms;
    for (;;) {
        rc = ms_worker_pool_poll(self->pool, wait, self->wake[0], &ev);
        if (rc == MS_OK) {
            s_on_event(self, &ev);
            ms_worker_event_clear(&ev);
            wait = 0; // take what else has arrived, then go on
            if (self->stopping)
                break;
            continue;
        }
        if (rc == MS_ERR_INTERRUPTED) {
            s_drain_wake(self);
            s_run_commands(self);
        }
        break;
    }
    if (self->stopping)
        return MS_ERR_INTERRUPTED;
    s_run_commands(self);
    return s_schedule(self);
}

//  --------------------------------------------------------------------------
//  Loop until stopped.

int
ms_node_run(ms_node_t *self)
{
    for (;;) {
        int rc = ms_node_poll(self, 1000);
        if (rc == MS_ERR_INTERRUPTED)
            return MS_OK;
        if (rc != MS_OK)
            return rc;
    }
}

//  --------------------------------------------------------------------------
//  Ask the loop to stop (async-signal-safe).

void
ms_node_stop(ms_node_t *self)
{
    if (!self)
        return;
    self->stopping = 1;
    if (self->wake[1] >= 0) {
        int saved = errno;
        ssize_t w = write(self->wake[1], "s", 1);
        (void) w;
        errno = saved;
    }
}

//  Sum of train_seconds over a sweep's rows.
typedef struct {
    double seconds; // sum so far
} s_sum_t;

//  --------------------------------------------------------------------------
//  Add one row's train_seconds.

static int
s_sum_row(void *arg, const char *json, size_t n)
{
    s_sum_t *sum = arg;
    json_error_t err;
    json_t *row = json_loadb(json, n, 0, &err);
    if (row) {
        json_t *v = json_object_get(row, "train_seconds");
        if (json_is_number(v))
            sum->seconds += json_number_value(v);
    }
    json_decref(row);
    return 0;
}

//  --------------------------------------------------------------------------
//  Progress of a sweep.

int
ms_node_sweep_progress(ms_node_t *self, const ms_hash_t *sweep_id,
                       ms_sweep_progress_t *out)
{
    memset(out, 0, sizeof *out);
    ms_store_sweep_t *sweep = NULL;
    int rc = ms_store_get_sweep(self->store, sweep_id->bytes, &sweep);
    if (rc != MS_OK)
        return rc;
    out->total = (int64_t) sweep->n_tasks;
    out->pending = (int64_t) (sweep->counts[MS_TASK_PENDING] +
                              sweep->counts[MS_TASK_CLAIMED]);
    out->running = (int64_t) sweep->counts[MS_TASK_RUNNING];
    out->done = (int64_t) sweep->counts[MS_TASK_DONE];
    out->failed = (int64_t) sweep->counts[MS_TASK_FAILED];
    out->cancelled = (int64_t) sweep->counts[MS_TASK_CANCELLED];
    ms_store_sweep_destroy(&sweep);
    // The rows are summed once; results stored later are added as they
    // come (s_on_result), so a progress display polling often stays cheap.
    s_sweep_info_t *info = s_sweep_info(self, sweep_id->bytes);
    if (!info)
        return MS_ERR_NOMEM;
    if (!info->summed) {
        s_sum_t sum = {0};
        rc = ms_store_results_by_sweep(self->store, sweep_id->bytes, 0, 0,
                                       s_sum_row, &sum, NULL);
        if (rc != MS_OK)
            return rc;
        info->train_seconds = sum.seconds;
        info->summed = true;
    }
    out->train_seconds = info->train_seconds;
    if (info->started_at > 0)
        out->elapsed_seconds = s_now() - info->started_at;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Set the event handler.

void
ms_node_set_event_handler(ms_node_t *self, ms_node_event_fn fn, void *arg)
{
    self->event_fn = fn;
    self->event_arg = arg;
}

//  --------------------------------------------------------------------------
//  The store.

ms_store_t *
ms_node_store(ms_node_t *self)
{
    return self->store;
}

//  --------------------------------------------------------------------------
//  The node id.

const char *
ms_node_id_hex(ms_node_t *self)
{
    return ms_identity_node_id(self->identity);
}

//  --------------------------------------------------------------------------
//  The API address.

const char *
ms_node_api_address(ms_node_t *self)
{
    return self->api ? ms_api_address(self->api) : NULL;
}

//  --------------------------------------------------------------------------
//  Workers and busy workers.

int
ms_node_worker_count(ms_node_t *self, int *n_busy)
{
    if (n_busy) {
        int n = 0;
        for (int i = 0; i < ms_worker_pool_size(self->pool); i++)
            n += self->running[i].busy;
        *n_busy = n;
    }
    return ms_worker_pool_size(self->pool);
}

//  --------------------------------------------------------------------------
//  Trainings started.

int64_t
ms_node_trainings_started(ms_node_t *self)
{
    return self->n_trainings;
}

//  ==========================================================================
//  Hooks for the HTTP threads

//  --------------------------------------------------------------------------
//  Queue a submission and wait for the loop's answer.

static int
s_api_submit(void *arg, const char *text, size_t n, char **summary,
             ms_diag_t *diag)
{
    ms_node_t *self = arg;
    *summary = NULL;
    s_command_t *cmd = calloc(1, sizeof *cmd);
    if (!cmd)
        return MS_ERR_NOMEM;
    cmd->text = malloc(n + 1);
    if (!cmd->text) {
        free(cmd);
        return MS_ERR_NOMEM;
    }
    memcpy(cmd->text, text, n);
    cmd->text[n] = 0;
    cmd->n = n;
    pthread_mutex_lock(&self->lock);
    if (self->stopping) {
        pthread_mutex_unlock(&self->lock);
        free(cmd->text);
        free(cmd);
        return ms_diag_set_code(diag, MS_ERR_INTERRUPTED, "node",
                                "the node is stopping");
    }
    s_command_t **tail = &self->queue;
    while (*tail)
        tail = &(*tail)->next;
    *tail = cmd;
    pthread_mutex_unlock(&self->lock);
    ssize_t w = write(self->wake[1], "c", 1);
    (void) w;

    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += S_API_WAIT_MS / 1000;
    pthread_mutex_lock(&self->lock);
    while (!cmd->done) {
        if (pthread_cond_timedwait(&self->answered, &self->lock, &until) ==
            ETIMEDOUT)
            break;
    }
    int rc;
    if (cmd->done) {
        rc = cmd->rc;
        *diag = cmd->diag;
        *summary = cmd->summary;
        free(cmd->text);
        free(cmd);
    } else {
        cmd->abandoned = true; // the loop frees it when it gets to it
        rc = ms_diag_set_code(diag, MS_ERR_TIMEOUT, "node",
                              "the node did not answer in time");
    }
    pthread_mutex_unlock(&self->lock);
    return rc;
}

//  --------------------------------------------------------------------------
//  Size of the store's data file in bytes.

static int64_t
s_store_bytes(const ms_node_t *self)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/data.mdb", self->store_dir);
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t) st.st_size : 0;
}

//  --------------------------------------------------------------------------
//  The node's status object for /status and /metrics.

static json_t *
s_api_status(void *arg)
{
    ms_node_t *self = arg;
    pthread_mutex_lock(&self->lock);
    json_t *obj = json_pack(
        "{s:s, s:s, s:f, s:i, s:i, s:I, s:f, s:I, s:I, s:O, s:s}", "node_id",
        ms_identity_node_id(self->identity), "version", MESHSWEEP_VERSION,
        "uptime_seconds", s_now() - self->opened_at, "workers",
        ms_worker_pool_size(self->pool), "workers_busy", self->n_busy,
        "tasks_trained_total", (json_int_t) self->n_trained,
        "training_seconds_total", self->training_seconds,
        "worker_crashes_total", (json_int_t) self->n_worker_crashes,
        "store_bytes", (json_int_t) s_store_bytes(self), "platform",
        self->platform ? self->platform : json_null(), "operator",
        self->operator_name);
    pthread_mutex_unlock(&self->lock);
    return obj;
}
