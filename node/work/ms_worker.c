/*  =========================================================================
    ms_worker - a pool of persistent worker processes that train tasks

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    How the pool works (DESIGN.md "Workers"; the protocol is in the header).

    Processes, not threads. Training code is the part of the node most
    likely to crash (a bug in a kernel, memory running out on a huge
    network), and the node must outlive it. Each worker is forked from the
    node and keeps running between tasks, so the cost of a fork, of the
    BLAS start-up and of loading the dataset is paid once, not per task.
    After the fork the child closes every descriptor it inherited except
    its own socket (the store's LMDB files, the HTTP listener, the other
    workers' sockets), so that a worker never keeps the API port bound and
    the node sees EOF on a worker's socket exactly when that worker dies.
    PR_SET_PDEATHSIG makes a worker die with the node, so a SIGKILLed node
    never leaves an orphan writing checkpoints beside its successor.

    One socketpair per worker (not two pipes): a single descriptor each
    side, and send(MSG_NOSIGNAL) turns a dead peer into EPIPE instead of
    a SIGPIPE, with no process-wide signal disposition to change.

    Frames are a 4-byte big-endian length and a JSON document. Doubles
    travel as jansson prints them (17 significant digits), so metrics
    arrive bit-exact; NaN travels as null.

    Memory. A worker holds one raw copy of the dataset (train + test) for
    reuse across tasks; per task it makes the split copy (train' + val)
    and a copy of test, and scales the three with the statistics of train'
    (ms_dataset_transform_fit and _apply). Peak: twice the dataset plus the
   trainer's buffers, within the bound the issue sets (measured on Fashion-MNIST
    with 784-100-10: 429 MiB against a bound of 485 MiB).

    Failures. A config or dataset the worker cannot use is reported as
    "failed" (bad data is deterministic: retrying it would fail the same
    way, so the node records it at once instead of crash-looping). Every
    other way a worker can go wrong ends its process, and the node sees
    the death, respawns it and decides about the task.
*/
#define _GNU_SOURCE // prctl(PR_SET_PDEATHSIG), dirfd
#include "ms_worker.h"

#include "ms_clock.h"
#include "ms_backend.h"
#include "ms_config_json.h"
#include "ms_dataset.h"
#include "ms_platform.h"
#include "ms_spec.h"
#include "ms_train.h"
#include "ms_weights.h"
#include "ms_weights_meta.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

//  One worker as the node sees it.
typedef struct {
    pid_t pid;                         // -1 when not running
    int fd;                            // node's end of the socketpair
    bool busy;                         // a task was sent, no end seen yet
    char task_id[MS_HASH_HEX_LEN + 1]; // task it runs ("" when idle)
    double gflops;    // calibration its "ready" announced (0: none yet)
    json_t *platform; // the platform its "ready" announced (NULL: none)
    bool stopped;     // SIGSTOPped by ms_worker_pool_pause
} s_worker_t;

struct ms_worker_pool {
    ms_worker_options_t opts; // copy; strings below
    char *backend;            // owned copy of opts.backend
    char *checkpoint_dir;     // owned copy of opts.checkpoint_dir
    int n_workers;            // slots in workers[]
    s_worker_t *workers;      // the workers
    int next_scan;            // round-robin start of the poll scan
    uint64_t n_crashes;       // deaths seen
};

//  ==========================================================================
//  Frames (both sides)

//  --------------------------------------------------------------------------
//  Write all n bytes to a socket; MS_OK or MS_ERR_IO.

static int
s_send_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return MS_ERR_IO;
        p += w;
        n -= (size_t) w;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read exactly n bytes; MS_OK, MS_ERR_NOTFOUND on clean EOF before any
//  byte, MS_ERR_IO otherwise.

static int
s_recv_all(int fd, void *data, size_t n)
{
    char *p = data;
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, p + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 && got == 0)
            return MS_ERR_NOTFOUND;
        if (r <= 0)
            return MS_ERR_IO;
        got += (size_t) r;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Send one JSON frame. Takes no reference.

static int
s_frame_send(int fd, const json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return MS_ERR_NOMEM;
    size_t n = strlen(text);
    uint8_t head[4] = {(uint8_t) (n >> 24), (uint8_t) (n >> 16),
                       (uint8_t) (n >> 8), (uint8_t) n};
    int rc = s_send_all(fd, head, 4);
    if (rc == MS_OK)
        rc = s_send_all(fd, text, n);
    free(text);
    return rc;
}

//  --------------------------------------------------------------------------
//  Receive one JSON frame: MS_OK with *out (an object, caller owns);
//  MS_ERR_NOTFOUND on EOF; MS_ERR_IO; MS_ERR_PROTOCOL for a bad frame.

static int
s_frame_recv(int fd, json_t **out)
{
    *out = NULL;
    uint8_t head[4];
    int rc = s_recv_all(fd, head, 4);
    if (rc != MS_OK)
        return rc;
    uint32_t n = (uint32_t) head[0] << 24 | (uint32_t) head[1] << 16 |
                 (uint32_t) head[2] << 8 | head[3];
    if (n == 0 || n > MS_WORKER_MAX_FRAME)
        return MS_ERR_PROTOCOL;
    char *buf = malloc(n);
    if (!buf)
        return MS_ERR_NOMEM;
    rc = s_recv_all(fd, buf, n);
    if (rc != MS_OK) {
        free(buf);
        return rc == MS_ERR_NOTFOUND ? MS_ERR_IO : rc;
    }
    json_error_t err;
    json_t *msg = json_loadb(buf, n, 0, &err);
    free(buf);
    if (!msg || !json_is_object(msg)) {
        json_decref(msg);
        return MS_ERR_PROTOCOL;
    }
    *out = msg;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A double as JSON: a real, or null for NaN and infinities.

static json_t *
s_real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

//  ==========================================================================
//  Worker side (child process)

//  What a worker keeps between tasks.
typedef struct {
    int fd;                          // socket to the node
    const ms_worker_options_t *opts; // the pool's options (inherited copy)
    const char *backend_name;        // what this worker opens
    ms_backend_t *backend;           // opened at the first train task
    json_t *platform;                // detected once, with the backend
    double gflops;                   // calibration measured at start
    char *data_key;                  // canonical text of the cached dataset
    ms_dataset_t *train_raw;         // cached, unscaled
    ms_dataset_t *test_raw;          // cached, unscaled
} s_child_t;

//  --------------------------------------------------------------------------
//  Log a line to stderr when verbose.

static void s_child_log(const s_child_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_child_log(const s_child_t *self, const char *fmt, ...)
{
    if (!self->opts->verbose)
        return;
    fprintf(stderr, "meshsweep worker %d: ", (int) getpid());
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

//  --------------------------------------------------------------------------
//  Put the child in shape: default signals, die with the node, low
//  priority, the memory cap (MiB, 0 = none), no inherited descriptors but
//  keep_fd and stdio.

static void
s_child_setup(int keep_fd, pid_t parent, int nice_incr, int memory_mb)
{
    const int dfl[] = {SIGTERM, SIGHUP, SIGPIPE, SIGSEGV, SIGABRT,
                       SIGBUS,  SIGFPE, SIGILL,  SIGCHLD, SIGQUIT};
    for (size_t i = 0; i < sizeof dfl / sizeof dfl[0]; i++)
        signal(dfl[i], SIG_DFL);
    // Ctrl-C reaches the whole process group: the node stops its workers
    // itself, so a worker ignores SIGINT rather than die as a "crash".
    signal(SIGINT, SIG_IGN);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
    if (nice_incr > 0) {
        errno = 0;
        int prio = getpriority(PRIO_PROCESS, 0);
        if (errno == 0)
            setpriority(PRIO_PROCESS, 0, prio + nice_incr);
    }
    if (memory_mb > 0) {
        struct rlimit cap;
        cap.rlim_cur = cap.rlim_max = (rlim_t) memory_mb << 20;
        if (setrlimit(RLIMIT_DATA, &cap) != 0)
            fprintf(stderr,
                    "meshsweep worker %d: cannot cap its memory at %d MiB: "
                    "%s\n",
                    (int) getpid(), memory_mb, strerror(errno));
    }
    int fds[1024];
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        int self_fd = dirfd(d);
        struct dirent *e;
        while ((e = readdir(d)) && n < 1024) {
            int fd = atoi(e->d_name);
            if (e->d_name[0] < '0' || e->d_name[0] > '9')
                continue;
            if (fd > 2 && fd != keep_fd && fd != self_fd)
                fds[n++] = fd;
        }
        closedir(d);
        for (int i = 0; i < n; i++)
            close(fds[i]);
    } else {
        for (int fd = 3; fd < 1024; fd++)
            if (fd != keep_fd)
                close(fd);
    }
}

//  --------------------------------------------------------------------------
//  The reason of a resource failure with code rc: under a memory cap, an
//  allocation that failed names the cap (the likely cause), else the
//  detail given (may be empty) or the code's text. Returns out.

static const char *
s_resource_reason(const s_child_t *self, int rc, const char *detail, char *out,
                  size_t n)
{
    if (rc == MS_ERR_NOMEM && self->opts->memory_mb > 0)
        snprintf(out, n,
                 "out of memory: the task needs more than worker_memory_mb "
                 "(%d MiB)",
                 self->opts->memory_mb);
    else
        snprintf(out, n, "%s", detail && *detail ? detail : ms_strerror(rc));
    return out;
}

//  --------------------------------------------------------------------------
//  Send a "failed" message for a task.

static int
s_child_fail(s_child_t *self, const char *task_id, const char *klass,
             const char *reason)
{
    s_child_log(self, "task failed: %s", reason);
    json_t *msg = json_pack("{s:s, s:s, s:s, s:s}", "op", "failed", "task_id",
                            task_id, "reason", reason, "class", klass);
    int rc = msg ? s_frame_send(self->fd, msg) : MS_ERR_NOMEM;
    json_decref(msg);
    return rc;
}

//  --------------------------------------------------------------------------
//  Load one local file dataset part: IDX (an images/labels pair, given
//  or derived from the name) or CSV with a label column.

static int
s_load_file(const json_t *ds, const char *images_key, const char *labels_key,
            ms_dataset_t **out, ms_diag_t *diag)
{
    const char *images = json_string_value(json_object_get(ds, images_key));
    const char *labels = json_string_value(json_object_get(ds, labels_key));
    const char *label = json_string_value(json_object_get(ds, "label"));
    if (!images)
        return ms_diag_set(diag, "dataset", "no %s file", images_key);
    char *derived = NULL;
    if (!labels)
        labels = derived = ms_dataset_idx_labels_path(images);
    int rc = labels ? ms_dataset_load_idx(out, images, labels, diag)
                    : ms_dataset_load_csv(out, images, label, diag);
    free(derived);
    return rc;
}

//  --------------------------------------------------------------------------
//  Whether a file dataset object names IDX files: labels files given (an
//  uploaded pair, stored as blobs), or the format rule of its two file
//  names (ms_dataset_idx_pair, as the client decided it); else CSV.

static bool
s_is_idx(const json_t *ds)
{
    if (json_object_get(ds, "train_labels"))
        return true;
    char *train_labels = NULL, *test_labels = NULL;
    bool idx =
        ms_dataset_idx_pair(json_string_value(json_object_get(ds, "train")),
                            json_string_value(json_object_get(ds, "test")),
                            &train_labels, &test_labels);
    free(train_labels);
    free(test_labels);
    return idx;
}

//  --------------------------------------------------------------------------
//  Load a CSV dataset object: train and test files (the same file when
//  the options split it) parsed with the options the spec carries
//  (ms_spec_dataset_options_json), so every node gets the same classes
//  and features from the same bytes.

static int
s_load_csv(const json_t *ds, ms_dataset_t **train, ms_dataset_t **test,
           ms_diag_t *diag)
{
    const char *train_path = json_string_value(json_object_get(ds, "train"));
    const char *test_path = json_string_value(json_object_get(ds, "test"));
    if (!train_path || !test_path)
        return ms_diag_set(diag, "dataset", "no %s file",
                           train_path ? "test" : "train");
    ms_dataset_csv_options_t o;
    int rc = ms_spec_dataset_options_from_json(ds, &o, diag);
    if (rc == MS_OK)
        rc = ms_dataset_load_csv_files(train_path, test_path, &o, train, test,
                                       diag);
    free((void *) o.categorical);
    return rc;
}

//  --------------------------------------------------------------------------
//  When the dataset object carries the hash of a file (hash_key), check
//  the file still has it: a file changed after submission is refused.

static int
s_check_hash(const json_t *ds, const char *path_key, const char *hash_key,
             ms_diag_t *diag)
{
    const char *path = json_string_value(json_object_get(ds, path_key));
    const char *want = json_string_value(json_object_get(ds, hash_key));
    if (!path || !want)
        return MS_OK;
    ms_hash_t h;
    int rc = ms_hash_file(path, &h, diag);
    if (rc != MS_OK)
        return rc;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    if (strcmp(hex, want) != 0)
        return ms_diag_set_code(diag, MS_ERR_DATASET, path,
                                "file changed since the sweep was submitted "
                                "(BLAKE2b %.12s, expected %.12s)",
                                hex, want);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Load and check a dataset described by a dataset object.

int
ms_worker_load_dataset(const json_t *ds, ms_dataset_t **train,
                       ms_dataset_t **test, ms_diag_t *diag)
{
    *train = NULL;
    *test = NULL;
    int rc;
    const char *name = json_string_value(json_object_get(ds, "name"));
    if (name)
        rc = ms_dataset_load_builtin(name, train, test, diag);
    else if ((rc = s_check_hash(ds, "train", "train_hash", diag)) != MS_OK ||
             (rc = s_check_hash(ds, "test", "test_hash", diag)) != MS_OK)
        return rc;
    else if (s_is_idx(ds)) {
        rc = s_load_file(ds, "train", "train_labels", train, diag);
        if (rc == MS_OK)
            rc = s_load_file(ds, "test", "test_labels", test, diag);
    } else
        rc = s_load_csv(ds, train, test, diag);
    if (rc == MS_OK)
        rc = ms_dataset_check(*train, "train", 0, diag);
    if (rc == MS_OK)
        rc = ms_dataset_check(*test, "test", (*train)->n_classes, diag);
    if (rc == MS_OK && (*test)->n_features != (*train)->n_features)
        rc = ms_diag_set_code(diag, MS_ERR_DATASET, "dataset",
                              "test has %d features, train has %d",
                              (int) (*test)->n_features,
                              (int) (*train)->n_features);
    if (rc != MS_OK) {
        ms_dataset_destroy(train);
        ms_dataset_destroy(test);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Make sure the dataset of the task is the cached one.

static int
s_child_dataset(s_child_t *self, const json_t *ds, ms_diag_t *diag)
{
    char *key = json_dumps(ds, JSON_COMPACT | JSON_SORT_KEYS);
    if (!key)
        return MS_ERR_NOMEM;
    if (self->data_key && strcmp(key, self->data_key) == 0) {
        free(key);
        return MS_OK;
    }
    // Drop the old one first: never two datasets at once.
    ms_dataset_destroy(&self->train_raw);
    ms_dataset_destroy(&self->test_raw);
    free(self->data_key);
    self->data_key = NULL;

    int rc =
        ms_worker_load_dataset(ds, &self->train_raw, &self->test_raw, diag);
    if (rc != MS_OK) {
        ms_dataset_destroy(&self->train_raw);
        ms_dataset_destroy(&self->test_raw);
        free(key);
        return rc;
    }
    self->data_key = key;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Split and scale the cached data for one task: *train and *val from the
//  split, *test a copy of the cached test set; all three owned by the
//  caller and scaled with the statistics of *train, whose transform goes
//  to *transform (the caller clears it; the kept weights' metadata).

static int
s_child_prepare(s_child_t *self, const ms_train_config_t *cfg,
                ms_dataset_t **train, ms_dataset_t **val, ms_dataset_t **test,
                ms_dataset_transform_t *transform, ms_diag_t *diag)
{
    int rc = ms_dataset_split_checked(self->train_raw, cfg->validation_split,
                                      (uint64_t) cfg->seed, train, val, diag);
    if (rc != MS_OK)
        return rc;
    const ms_dataset_t *te = self->test_raw;
    *test = ms_dataset_new(te->n_samples, te->n_features, te->n_classes);
    if (!*test) {
        ms_dataset_destroy(train);
        ms_dataset_destroy(val);
        return MS_ERR_NOMEM;
    }
    if (te->n_samples > 0) {
        memcpy((*test)->x, te->x,
               (size_t) te->n_samples * (size_t) te->n_features *
                   sizeof(float));
        if (te->labels && (*test)->labels)
            memcpy((*test)->labels, te->labels,
                   (size_t) te->n_samples * sizeof(int32_t));
        if (te->targets && (*test)->targets)
            memcpy((*test)->targets, te->targets,
                   (size_t) te->n_samples * sizeof(float));
    }
    int rc_fit = ms_dataset_transform_fit(*train, cfg->scale, transform);
    if (rc_fit != MS_OK) {
        ms_dataset_destroy(train);
        ms_dataset_destroy(val);
        ms_dataset_destroy(test);
        return rc_fit;
    }
    ms_dataset_transform_apply(transform, *val);
    ms_dataset_transform_apply(transform, *test);
    ms_dataset_transform_apply(transform, *train);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Write a checkpoint atomically: tmp file, fsync, rename, fsync dir.

static int
s_write_checkpoint(const char *dir, const char *path, const void *bytes,
                   size_t n)
{
    char tmp[4300];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int) sizeof tmp)
        return MS_ERR_IO;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return MS_ERR_IO;
    const char *p = bytes;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return MS_ERR_IO;
        }
        p += w;
        left -= (size_t) w;
    }
    if (fsync(fd) != 0) {
        close(fd);
        unlink(tmp);
        return MS_ERR_IO;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        unlink(tmp);
        return MS_ERR_IO;
    }
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read a whole file into a malloc'd buffer; MS_ERR_NOTFOUND when absent.

static int
s_read_file(const char *path, void **bytes, size_t *n)
{
    *bytes = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return MS_ERR_IO;
    }
    char *buf = malloc((size_t) st.st_size);
    if (!buf) {
        close(fd);
        return MS_ERR_NOMEM;
    }
    size_t got = 0;
    while (got < (size_t) st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t) st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t) r;
    }
    close(fd);
    if (got != (size_t) st.st_size) {
        free(buf);
        return MS_ERR_IO;
    }
    *bytes = buf;
    *n = got;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Add one platform field to a JSON object.

static void
s_platform_field(void *arg, const char *name, const char *value)
{
    json_object_set_new((json_t *) arg, name, json_string(value));
}

//  --------------------------------------------------------------------------
//  Platform of this worker as a JSON object (detected and calibrated once):
//  the fingerprint fields, blas_config and calibration_gflops.

static json_t *
s_child_platform(s_child_t *self)
{
    if (!self->platform) {
        ms_platform_t p;
        memset(&p, 0, sizeof p);
        ms_platform_detect(&p, self->backend);
        // The figure the worker announced at start (the node publishes
        // it on /status), so rows and /status say the same.
        p.calibration_gflops =
            self->gflops > 0 ? self->gflops : ms_platform_calibrate();
        json_t *obj = json_object();
        if (obj) {
            ms_platform_fields(&p, s_platform_field, obj);
            json_object_set_new(obj, "blas_config", json_string(p.blas_config));
            json_object_set_new(obj, "calibration_gflops",
                                s_real_or_null(p.calibration_gflops));
        }
        self->platform = obj ? obj : json_object();
    }
    return self->platform;
}

//  --------------------------------------------------------------------------
//  The class names of a dataset with string labels, class i at index i
//  (a result row's "classes"), or NULL: integer labels, or more names
//  than a row should carry (S_MAX_CLASSES_ROW classes, S_MAX_CLASSES_BYTES
//  bytes of names).

#define S_MAX_CLASSES_ROW 1024
#define S_MAX_CLASSES_BYTES (64 * 1024)

static json_t *
s_classes_json(const ms_dataset_t *d)
{
    if (!d || !d->class_names || d->n_classes > S_MAX_CLASSES_ROW)
        return NULL;
    size_t bytes = 0;
    for (int32_t i = 0; i < d->n_classes; i++)
        bytes += strlen(ms_dataset_class_name(d, i)) + 4;
    if (bytes > S_MAX_CLASSES_BYTES)
        return NULL;
    json_t *list = json_array();
    for (int32_t i = 0; list && i < d->n_classes; i++)
        if (json_array_append_new(list,
                                  json_string(ms_dataset_class_name(d, i)))) {
            json_decref(list);
            return NULL;
        }
    return list;
}

//  --------------------------------------------------------------------------
//  The result message body of a finished run.

static json_t *
s_result_json(s_child_t *self, const ms_run_result_t *r, ms_trainer_t *t)
{
    int64_t n_params = 0;
    const float *params = ms_trainer_params(t, &n_params);
    ms_hash_t digest;
    ms_hash_bytes(params, (size_t) n_params * sizeof(float), &digest);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&digest, hex);

    json_t *curve = json_array();
    for (int32_t i = 0; curve && i < r->n_curve; i++) {
        const ms_epoch_metrics_t *m = &r->curve[i];
        json_array_append_new(
            curve, json_pack("{s:i, s:o, s:o, s:o, s:o}", "epoch",
                             (json_int_t) m->epoch, "train_loss",
                             s_real_or_null(m->train_loss), "val_loss",
                             s_real_or_null(m->val_loss), "val_accuracy",
                             s_real_or_null(m->val_accuracy), "seconds",
                             s_real_or_null(m->seconds)));
    }
    json_t *grad_norms = json_array();
    for (int32_t l = 0; grad_norms && l < r->n_grad_norms; l++)
        json_array_append_new(grad_norms, s_real_or_null(r->grad_norms[l]));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    json_t *platform = s_child_platform(self);
    json_t *body = json_pack(
        "{s:s, s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:s, s:O, s:o, "
        "s:o, s:I}",
        "status", ms_run_status_name(r->status), "error",
        r->status == MS_RUN_OK ? json_null() : json_string(r->error), "epochs",
        (json_int_t) r->epochs, "train_seconds",
        s_real_or_null(r->train_seconds), "seconds_per_epoch",
        s_real_or_null(r->seconds_per_epoch), "val_accuracy",
        s_real_or_null(r->val_accuracy), "val_loss",
        s_real_or_null(r->val_loss), "test_accuracy",
        s_real_or_null(r->test_accuracy), "test_loss",
        s_real_or_null(r->test_loss), "params", (json_int_t) r->params,
        "weights_digest", hex, "platform", platform, "curve", curve,
        "grad_norms", grad_norms, "peak_rss_bytes",
        (json_int_t) ru.ru_maxrss * 1024);
    json_t *classes = s_classes_json(self->train_raw);
    if (body && classes)
        json_object_set_new(body, "classes", classes);
    else
        json_decref(classes);
    return body;
}

//  --------------------------------------------------------------------------
//  Send a result message with body.

static int
s_child_send_result(s_child_t *self, const char *task_id, json_t *body)
{
    if (!body)
        return MS_ERR_NOMEM;
    json_t *msg = json_pack("{s:s, s:s, s:o}", "op", "result", "task_id",
                            task_id, "result", body);
    int rc = msg ? s_frame_send(self->fd, msg) : MS_ERR_NOMEM;
    json_decref(msg);
    return rc;
}

//  --------------------------------------------------------------------------
//  Tell the node the task's work starts now (first minibatch; for noop,
//  the moment its work would start), by CLOCK_MONOTONIC in microseconds:
//  the node compares it with its own monotonic clock (claim-to-start).

static int
s_child_started(s_child_t *self, const char *task_id)
{
    json_int_t us = (json_int_t) ms_clock_mono_us();
    json_t *msg = json_pack("{s:s, s:s, s:I}", "op", "started", "task_id",
                            task_id, "mono_us", us);
    int rc = msg ? s_frame_send(self->fd, msg) : MS_ERR_NOMEM;
    json_decref(msg);
    return rc;
}

//  --------------------------------------------------------------------------
//  Write the trained weights to path (ms_weights format, version 2 with
//  the metadata of proto/ms_weights_meta.h: the config, the input
//  transform, the task id, a CSV dataset's schema; what `meshsweep
//  weights` and GET /tasks/{id}/weights export). The metadata is a
//  function of the task and its dataset only (canonical JSON), so every
//  node that trains a task writes the same bytes. A failure is logged,
//  not fatal: the result stands without kept weights.

static void
s_child_write_weights(s_child_t *self, ms_trainer_t *trainer, const char *path,
                      const char *task_id, const ms_train_config_t *cfg,
                      const ms_dataset_transform_t *transform)
{
    uint32_t sizes[MS_MAX_HIDDEN_LAYERS + 2];
    int32_t n_sizes =
        ms_trainer_layer_sizes(trainer, sizes, MS_MAX_HIDDEN_LAYERS + 2);
    int64_t n_params = 0;
    const float *params = ms_trainer_params(trainer, &n_params);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (n_sizes < 2 || !params) {
        s_child_log(self, "weights not written: %d layer sizes", n_sizes);
        return;
    }
    ms_weights_meta_t *meta = ms_weights_meta_new();
    char *meta_json = NULL;
    if (meta) {
        meta->cfg = *cfg;
        meta->input = *transform; // borrowed: not cleared through meta
        meta->n_outputs = (int32_t) sizes[n_sizes - 1];
        snprintf(meta->task_id, sizeof meta->task_id, "%s", task_id);
        meta->numerics = MS_ENGINE_NUMERICS_VERSION;
        //  CSV string labels: class i's name, as the dataset maps them;
        //  and the CSV schema, so that predict reads files as training did.
        const ms_dataset_t *d = self->train_raw;
        if ((!d || !d->class_names ||
             ms_weights_meta_set_classes(meta, d->class_names, d->n_classes) ==
                 MS_OK) &&
            ms_weights_meta_set_csv(meta, d) ==
                MS_OK) // else out of memory: no weights
            meta_json = ms_weights_meta_encode(meta);
        memset(&meta->input, 0, sizeof meta->input);
        ms_weights_meta_destroy(&meta);
    }
    if (!meta_json)
        s_child_log(self, "weights not written: out of memory");
    else if (ms_weights_write_file(path, sizes, (uint32_t) n_sizes, params,
                                   n_params, meta_json, &diag) != MS_OK)
        s_child_log(self, "weights not written: %s: %s", diag.where,
                    diag.reason);
    free(meta_json);
}

//  --------------------------------------------------------------------------
//  Re-evaluate the weights file at path with trainer's network (opened
//  for the task's config and data): test and validation metrics, and
//  the digest of the parameter block. Returns MS_ERR_IO only when the
//  node is gone.

static int
s_child_reeval(s_child_t *self, const char *task_id, ms_trainer_t *trainer,
               const ms_dataset_t *val, const ms_dataset_t *test,
               const char *path)
{
    if (!path)
        return s_child_fail(self, task_id, "task", "no weights path");
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_weights_t *w = NULL;
    int rc = ms_weights_read_file(path, 0, &w, &diag);
    if (rc != MS_OK) {
        char reason[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 8];
        ms_diag_format(&diag, reason, sizeof reason);
        return s_child_fail(self, task_id, "task", reason);
    }
    uint32_t sizes[4096];
    int32_t n_sizes = ms_trainer_layer_sizes(trainer, sizes, 4096);
    int64_t n_params = 0;
    ms_trainer_params(trainer, &n_params);
    if (n_sizes < 2 || n_sizes > 4096 || (uint32_t) n_sizes != w->n_sizes ||
        memcmp(sizes, w->sizes, (size_t) n_sizes * sizeof *sizes) != 0 ||
        n_params != w->n_params) {
        ms_weights_destroy(&w);
        return s_child_fail(self, task_id, "task",
                            "weights: the layer sizes are not the config's");
    }
    ms_hash_t digest;
    ms_hash_bytes(w->params, (size_t) w->n_params * sizeof(float), &digest);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&digest, hex);
    double test_loss = NAN, test_acc = NAN, val_loss = NAN, val_acc = NAN;
    rc = ms_trainer_evaluate(trainer, w->params, test, &test_loss, &test_acc);
    if (rc == MS_OK && val && val->n_samples > 0)
        rc = ms_trainer_evaluate(trainer, w->params, val, &val_loss, &val_acc);
    ms_weights_destroy(&w);
    if (rc != MS_OK)
        return s_child_fail(self, task_id, "task", ms_strerror(rc));
    return s_child_send_result(
        self, task_id,
        json_pack(
            "{s:b, s:s, s:o, s:o, s:o, s:o}", "reeval", 1, "weights_digest",
            hex, "test_accuracy", s_real_or_null(test_acc), "test_loss",
            s_real_or_null(test_loss), "val_accuracy", s_real_or_null(val_acc),
            "val_loss", s_real_or_null(val_loss)));
}

//  --------------------------------------------------------------------------
//  Run one task to its end. Returns MS_ERR_IO only when the node is gone.

static int
s_child_task(s_child_t *self, const json_t *msg)
{
    const char *task_id = json_string_value(json_object_get(msg, "task_id"));
    const json_t *config = json_object_get(msg, "config");
    const json_t *ds = json_object_get(msg, "dataset");
    if (!task_id || !config)
        return MS_ERR_IO; // the node broke protocol: treat as gone
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char reason[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 8];

    // ms_train_config_t is large (explicit sizes): keep it off the stack.
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return s_child_fail(
            self, task_id, "resource",
            s_resource_reason(self, MS_ERR_NOMEM, "", reason, sizeof reason));
    if (ms_config_decode_json(config, cfg, &diag) != MS_OK) {
        ms_diag_format(&diag, reason, sizeof reason);
        free(cfg);
        return s_child_fail(self, task_id, "task", reason);
    }
    if (cfg->kind == MS_KIND_NOOP) {
        free(cfg);
        if (s_child_started(self, task_id) != MS_OK)
            return MS_ERR_IO;
        return s_child_send_result(self, task_id, ms_worker_noop_result());
    }
    if (!ds) {
        free(cfg);
        return s_child_fail(self, task_id, "task", "task has no dataset");
    }
    int rc = MS_OK;
    if (!self->backend) {
        rc = ms_backend_open(&self->backend, self->backend_name,
                             self->opts->blas_threads, &diag);
        if (rc != MS_OK) {
            ms_diag_format(&diag, reason, sizeof reason);
            free(cfg);
            return s_child_fail(self, task_id, "resource", reason);
        }
    }
    rc = s_child_dataset(self, ds, &diag);
    if (rc != MS_OK) {
        ms_diag_format(&diag, reason, sizeof reason);
        free(cfg);
        char why[sizeof reason];
        return s_child_fail(
            self, task_id, rc == MS_ERR_NOMEM ? "resource" : "task",
            s_resource_reason(self, rc, reason, why, sizeof why));
    }
    ms_dataset_t *train = NULL, *val = NULL, *test = NULL;
    ms_dataset_transform_t transform;
    memset(&transform, 0, sizeof transform);
    ms_diag_clear(&diag);
    rc = s_child_prepare(self, cfg, &train, &val, &test, &transform, &diag);
    if (rc != MS_OK) {
        ms_diag_format(&diag, reason, sizeof reason);
        free(cfg);
        char why[sizeof reason];
        return s_child_fail(
            self, task_id, rc == MS_ERR_NOMEM ? "resource" : "task",
            s_resource_reason(self, rc, diag.reason[0] ? reason : "", why,
                              sizeof why));
    }
    ms_trainer_t *trainer = NULL;
    rc = ms_trainer_open(&trainer, cfg, train, val, test, self->backend, &diag);
    if (rc != MS_OK) {
        ms_diag_format(&diag, reason, sizeof reason);
        char why[sizeof reason];
        rc = s_child_fail(self, task_id,
                          rc == MS_ERR_NOMEM ? "resource" : "task",
                          s_resource_reason(self, rc, reason, why, sizeof why));
        goto done;
    }
    if (json_is_true(json_object_get(msg, "reeval"))) {
        rc = s_child_reeval(
            self, task_id, trainer, val, test,
            json_string_value(json_object_get(msg, "weights_path")));
        goto done;
    }
    char path[4200];
    ms_worker_checkpoint_path(self->opts->checkpoint_dir, task_id, path,
                              sizeof path);
    void *bytes = NULL;
    size_t n_bytes = 0;
    if (s_read_file(path, &bytes, &n_bytes) == MS_OK) {
        if (ms_trainer_restore(trainer, bytes, n_bytes) == MS_OK)
            s_child_log(self, "resumed from %s", path);
        else
            s_child_log(self, "checkpoint %s refused; starting over", path);
        free(bytes);
        bytes = NULL;
    }
    const char *crash = getenv("MESHSWEEP_FAULT_CRASH_TASK");
    if (crash && *crash && strncmp(task_id, crash, strlen(crash)) == 0)
        abort(); // test hook, see ms_worker.h

    // The first minibatch starts with the first epoch below.
    rc = s_child_started(self, task_id);
    if (rc != MS_OK)
        goto done;
    while (!ms_trainer_done(trainer)) {
        ms_epoch_metrics_t m;
        rc = ms_trainer_epoch(trainer, &m);
        if (rc != MS_OK) {
            rc = s_child_fail(
                self, task_id, "resource",
                s_resource_reason(self, rc, "", reason, sizeof reason));
            goto done;
        }
        if (ms_trainer_save(trainer, &bytes, &n_bytes) == MS_OK) {
            if (s_write_checkpoint(self->opts->checkpoint_dir, path, bytes,
                                   n_bytes) != MS_OK)
                s_child_log(self, "cannot write checkpoint %s", path);
            free(bytes);
            bytes = NULL;
        }
        json_t *ev =
            json_pack("{s:s, s:s, s:i, s:i, s:o, s:o, s:o, s:o}", "op", "epoch",
                      "task_id", task_id, "epoch", (json_int_t) m.epoch, "of",
                      (json_int_t) cfg->epochs, "train_loss",
                      s_real_or_null(m.train_loss), "val_loss",
                      s_real_or_null(m.val_loss), "val_accuracy",
                      s_real_or_null(m.val_accuracy), "seconds",
                      s_real_or_null(m.seconds));
        rc = ev ? s_frame_send(self->fd, ev) : MS_ERR_NOMEM;
        json_decref(ev);
        if (rc != MS_OK)
            goto done;
    }
    ms_run_result_t result;
    memset(&result, 0, sizeof result);
    rc = ms_trainer_finish(trainer, &result);
    const char *wpath = json_string_value(json_object_get(msg, "weights_path"));
    if (rc == MS_OK && wpath && result.status == MS_RUN_OK)
        s_child_write_weights(self, trainer, wpath, task_id, cfg, &transform);
    if (rc != MS_OK)
        rc = s_child_fail(
            self, task_id, "resource",
            s_resource_reason(self, rc, "", reason, sizeof reason));
    else
        rc = s_child_send_result(self, task_id,
                                 s_result_json(self, &result, trainer));
    ms_run_result_clear(&result);

done:
    ms_trainer_destroy(&trainer);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&val);
    ms_dataset_destroy(&test);
    ms_dataset_transform_clear(&transform);
    free(cfg);
    return rc;
}

//  --------------------------------------------------------------------------
//  The worker's life: announce, then run tasks until the node closes.

static void
s_child_main(int fd, const ms_worker_options_t *opts, const char *backend)
{
    s_child_t self = {.fd = fd, .opts = opts, .backend_name = backend};
    // Calibrate once, before the first task (a few ms of single-thread
    // SGEMM): the node publishes the figure, and every row this worker
    // produces carries it.
    self.gflops = ms_platform_calibrate();
    // Open the backend now, as the first task would, so that the platform
    // (what rows carry) goes out with the figure and the node's /status
    // shows it before any task ran. A backend that does not open is left
    // to the first task, which reports why (as before).
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_backend_open(&self.backend, self.backend_name, opts->blas_threads,
                        &diag) != MS_OK)
        self.backend = NULL;
    json_t *platform = self.backend ? s_child_platform(&self) : NULL;
    json_t *hello =
        json_pack("{s:s, s:i, s:o, s:O?}", "op", "ready", "pid",
                  (json_int_t) getpid(), "calibration_gflops",
                  s_real_or_null(self.gflops), "platform", platform);
    if (!hello || s_frame_send(fd, hello) != MS_OK)
        _exit(1);
    json_decref(hello);
    for (;;) {
        json_t *msg = NULL;
        int rc = s_frame_recv(fd, &msg);
        if (rc != MS_OK)
            break; // node closed or broke protocol: leave quietly
        const char *op = json_string_value(json_object_get(msg, "op"));
        if (op && strcmp(op, "task") == 0)
            rc = s_child_task(&self, msg);
        else if (op && strcmp(op, "exit") == 0)
            rc = MS_ERR_INTERRUPTED;
        json_decref(msg);
        if (rc == MS_ERR_IO || rc == MS_ERR_INTERRUPTED)
            break;
    }
    _exit(0);
}

//  ==========================================================================
//  Node side

//  --------------------------------------------------------------------------
//  Fill the defaults.

void
ms_worker_options_defaults(ms_worker_options_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->n_workers = 0;
    opts->nice = 10;
    opts->blas_threads = 1;
    opts->backend = "auto";
    opts->n_gpu_workers = -1;
    opts->checkpoint_dir = "checkpoints";
}

//  --------------------------------------------------------------------------
//  The result object of a noop task.

json_t *
ms_worker_noop_result(void)
{
    return json_pack("{s:s, s:n, s:i, s:f, s:f, s:n, s:n, s:n, s:n, s:i, s:n, "
                     "s:n, s:[], s:[]}",
                     "status", "ok", "error", "epochs", 0, "train_seconds", 0.0,
                     "seconds_per_epoch", 0.0, "val_accuracy", "val_loss",
                     "test_accuracy", "test_loss", "params", 0,
                     "weights_digest", "platform", "curve", "grad_norms");
}

//  --------------------------------------------------------------------------
//  Checkpoint path of a task.

void
ms_worker_checkpoint_path(const char *dir, const char *task_id, char *out,
                          size_t n)
{
    snprintf(out, n, "%s/%s.ckpt", dir, task_id);
}

//  --------------------------------------------------------------------------
//  Fork worker i. MS_OK or MS_ERR_IO.

static int
s_spawn(ms_worker_pool_t *self, int i)
{
    s_worker_t *w = &self->workers[i];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return MS_ERR_IO;
    fflush(NULL); // no buffered output duplicated into the child
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return MS_ERR_IO;
    }
    if (pid == 0) {
        s_child_setup(sv[1], parent, self->opts.nice, self->opts.memory_mb);
        s_child_main(sv[1], &self->opts, ms_worker_pool_backend(self, i));
        _exit(0);
    }
    close(sv[1]);
    fcntl(sv[0], F_SETFD, FD_CLOEXEC);
    w->pid = pid;
    w->fd = sv[0];
    w->busy = false;
    w->task_id[0] = 0;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open the pool.

int
ms_worker_pool_open(ms_worker_pool_t **out, const ms_worker_options_t *opts,
                    ms_diag_t *diag)
{
    *out = NULL;
    ms_worker_pool_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->opts = *opts;
    self->backend = strdup(opts->backend ? opts->backend : "auto");
    self->checkpoint_dir =
        strdup(opts->checkpoint_dir ? opts->checkpoint_dir : "checkpoints");
    self->opts.backend = self->backend;
    self->opts.checkpoint_dir = self->checkpoint_dir;
    self->n_workers = opts->n_workers;
    if (self->n_workers < 1) {
        self->n_workers = ms_platform_usable_cpus();
    }
    if (self->opts.blas_threads < 1)
        self->opts.blas_threads = 1;
    self->workers = calloc((size_t) self->n_workers, sizeof(s_worker_t));
    if (!self->backend || !self->checkpoint_dir || !self->workers) {
        ms_worker_pool_destroy(&self);
        return MS_ERR_NOMEM;
    }
    for (int i = 0; i < self->n_workers; i++) {
        self->workers[i].pid = -1;
        self->workers[i].fd = -1;
    }
    if (mkdir(self->checkpoint_dir, 0700) != 0 && errno != EEXIST) {
        int rc = ms_diag_set_code(diag, MS_ERR_IO, self->checkpoint_dir,
                                  "cannot create: %s", strerror(errno));
        ms_worker_pool_destroy(&self);
        return rc;
    }
    for (int i = 0; i < self->n_workers; i++) {
        if (s_spawn(self, i) != MS_OK) {
            int rc = ms_diag_set_code(diag, MS_ERR_IO, "workers",
                                      "cannot start worker %d: %s", i,
                                      strerror(errno));
            ms_worker_pool_destroy(&self);
            return rc;
        }
    }
    *out = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Stop every worker and free the pool.

void
ms_worker_pool_destroy(ms_worker_pool_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_worker_pool_t *self = *self_p;
    for (int i = 0; self->workers && i < self->n_workers; i++) {
        s_worker_t *w = &self->workers[i];
        if (w->pid > 0 && w->busy)
            kill(w->pid, SIGTERM);
        if (w->pid > 0 && w->stopped)
            kill(w->pid, SIGCONT); // SIGTERM is delivered once it runs
        w->stopped = false;
        if (w->fd >= 0)
            close(w->fd); // an idle worker reads EOF and exits
        w->fd = -1;
    }
    for (int i = 0; self->workers && i < self->n_workers; i++) {
        s_worker_t *w = &self->workers[i];
        if (w->pid > 0) {
            int status;
            while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
                ;
        }
        w->pid = -1;
        json_decref(w->platform);
        w->platform = NULL;
    }
    free(self->workers);
    free(self->backend);
    free(self->checkpoint_dir);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Number of workers.

int
ms_worker_pool_size(const ms_worker_pool_t *self)
{
    return self->n_workers;
}

//  --------------------------------------------------------------------------
//  Order two doubles (qsort).

static int
s_double_cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

//  --------------------------------------------------------------------------
//  Median of the calibration figures the workers announced.

double
ms_worker_pool_calibration(const ms_worker_pool_t *self)
{
    double v[256];
    size_t n = 0;
    for (int i = 0; i < self->n_workers && n < 256; i++)
        if (self->workers[i].gflops > 0)
            v[n++] = self->workers[i].gflops;
    if (n == 0)
        return 0;
    qsort(v, n, sizeof v[0], s_double_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

//  --------------------------------------------------------------------------
//  The platform the first worker that has one announced.

const json_t *
ms_worker_pool_platform(const ms_worker_pool_t *self)
{
    for (int i = 0; i < self->n_workers; i++)
        if (self->workers[i].platform)
            return self->workers[i].platform;
    return NULL;
}

//  --------------------------------------------------------------------------
//  The backend worker i opens.

const char *
ms_worker_pool_backend(const ms_worker_pool_t *self, int i)
{
    if (self->opts.n_gpu_workers < 0 || i < self->opts.n_gpu_workers)
        return self->backend;
    return "cpu";
}

//  --------------------------------------------------------------------------
//  Number of idle workers.

int
ms_worker_pool_idle(const ms_worker_pool_t *self)
{
    int n = 0;
    for (int i = 0; i < self->n_workers; i++)
        if (self->workers[i].pid > 0 && !self->workers[i].busy)
            n++;
    return n;
}

//  --------------------------------------------------------------------------
//  Stop the busy workers (idle_only pause).

int
ms_worker_pool_pause(ms_worker_pool_t *self)
{
    int n = 0;
    for (int i = 0; i < self->n_workers; i++) {
        s_worker_t *w = &self->workers[i];
        if (w->pid > 0 && w->busy && !w->stopped &&
            kill(w->pid, SIGSTOP) == 0) {
            w->stopped = true;
            n++;
        }
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Continue stopped workers (one, or all when i < 0).

int
ms_worker_pool_resume(ms_worker_pool_t *self, int i)
{
    int n = 0;
    for (int k = i < 0 ? 0 : i; k < self->n_workers && (i < 0 || k == i); k++) {
        s_worker_t *w = &self->workers[k];
        if (w->stopped) {
            w->stopped = false;
            if (w->pid > 0 && kill(w->pid, SIGCONT) == 0)
                n++;
        }
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Whether worker i is stopped.

bool
ms_worker_pool_stopped(const ms_worker_pool_t *self, int i)
{
    return i >= 0 && i < self->n_workers && self->workers[i].stopped;
}

//  --------------------------------------------------------------------------
//  Task of worker i, or NULL.

const char *
ms_worker_pool_busy_task(const ms_worker_pool_t *self, int i)
{
    if (i < 0 || i >= self->n_workers || !self->workers[i].busy)
        return NULL;
    return self->workers[i].task_id;
}

//  --------------------------------------------------------------------------
//  Pid of worker i.

int
ms_worker_pool_pid(const ms_worker_pool_t *self, int i)
{
    if (i < 0 || i >= self->n_workers)
        return -1;
    return (int) self->workers[i].pid;
}

//  --------------------------------------------------------------------------
//  The workers' socket fds.

int
ms_worker_pool_fds(const ms_worker_pool_t *self, int *fds, int max)
{
    int n = 0;
    for (int i = 0; i < self->n_workers && n < max; i++)
        fds[n++] = self->workers[i].fd;
    return n;
}

//  --------------------------------------------------------------------------
//  Total deaths.

uint64_t
ms_worker_pool_crashes(const ms_worker_pool_t *self)
{
    return self->n_crashes;
}

//  --------------------------------------------------------------------------
//  Name of a signal ("SIGSEGV"), or "" when not a common one.

static const char *
s_signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGABRT:
        return "SIGABRT";
    case SIGKILL:
        return "SIGKILL";
    case SIGTERM:
        return "SIGTERM";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SIGINT:
        return "SIGINT";
    case SIGHUP:
        return "SIGHUP";
    case SIGPIPE:
        return "SIGPIPE";
    case SIGQUIT:
        return "SIGQUIT";
    case SIGTRAP:
        return "SIGTRAP";
    case SIGXCPU:
        return "SIGXCPU";
    default:
        return "";
    }
}

//  --------------------------------------------------------------------------
//  Worker i is gone (or must go): kill, reap, fill a DIED event, respawn.

static void
s_reap(ms_worker_pool_t *self, int i, bool force, ms_worker_event_t *ev)
{
    s_worker_t *w = &self->workers[i];
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    int status = 0;
    if (w->pid > 0) {
        if (force)
            kill(w->pid, SIGKILL);
        while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = MS_WORKER_EVENT_DIED;
    ev->worker = i;
    snprintf(ev->task_id, sizeof ev->task_id, "%s", w->busy ? w->task_id : "");
    if (force)
        snprintf(ev->reason, sizeof ev->reason,
                 "worker broke the protocol (killed)");
    else if (WIFSIGNALED(status)) {
        ev->term_signal = WTERMSIG(status);
        const char *name = s_signal_name(ev->term_signal);
        if (*name)
            snprintf(ev->reason, sizeof ev->reason,
                     "worker killed by signal %d (%s)", ev->term_signal, name);
        else
            snprintf(ev->reason, sizeof ev->reason,
                     "worker killed by signal %d", ev->term_signal);
    } else if (WIFEXITED(status))
        snprintf(ev->reason, sizeof ev->reason, "worker exited with status %d",
                 WEXITSTATUS(status));
    else
        snprintf(ev->reason, sizeof ev->reason, "worker died");
    self->n_crashes++;
    w->pid = -1;
    w->busy = false;
    w->stopped = false;
    w->task_id[0] = 0;
    s_spawn(self, i); // when it fails, ms_worker_pool_poll tries again
}

//  --------------------------------------------------------------------------
//  Start a task on an idle worker.

int
ms_worker_pool_start(ms_worker_pool_t *self, const ms_worker_task_t *task,
                     int *worker)
{
    int i;
    for (i = 0; i < self->n_workers; i++)
        if (self->workers[i].pid > 0 && !self->workers[i].busy)
            break;
    if (i == self->n_workers)
        return MS_ERR_CONFLICT;
    json_t *msg = json_pack("{s:s, s:s, s:s, s:O, s:O, s:i}", "op", "task",
                            "task_id", task->task_id, "sweep_id",
                            task->sweep_id, "config", task->config, "dataset",
                            task->dataset ? task->dataset : json_null(),
                            "attempt", (json_int_t) task->attempt);
    if (!msg)
        return MS_ERR_NOMEM;
    if (task->weights_path)
        json_object_set_new(msg, "weights_path",
                            json_string(task->weights_path));
    if (task->reeval)
        json_object_set_new(msg, "reeval", json_true());
    int rc = s_frame_send(self->workers[i].fd, msg);
    json_decref(msg);
    if (rc != MS_OK) {
        ms_worker_event_t ev;
        s_reap(self, i, false, &ev); // respawns; the task never started
        return MS_ERR_IO;
    }
    self->workers[i].busy = true;
    snprintf(self->workers[i].task_id, sizeof self->workers[i].task_id, "%s",
             task->task_id);
    if (worker)
        *worker = i;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read one message from worker i into ev. MS_OK: an event; MS_ERR_NOTFOUND:
//  a message with no event (ready).

static int
s_read_event(ms_worker_pool_t *self, int i, ms_worker_event_t *ev)
{
    s_worker_t *w = &self->workers[i];
    json_t *msg = NULL;
    int rc = s_frame_recv(w->fd, &msg);
    if (rc != MS_OK) {
        s_reap(self, i, rc == MS_ERR_PROTOCOL, ev);
        return MS_OK;
    }
    const char *op = json_string_value(json_object_get(msg, "op"));
    const char *task_id = json_string_value(json_object_get(msg, "task_id"));
    if (op && strcmp(op, "ready") == 0) {
        const json_t *gf = json_object_get(msg, "calibration_gflops");
        if (json_is_number(gf) && isfinite(json_number_value(gf)) &&
            json_number_value(gf) > 0)
            w->gflops = json_number_value(gf);
        json_t *platform = json_object_get(msg, "platform");
        if (json_is_object(platform)) {
            json_decref(w->platform);
            w->platform = json_incref(platform);
        }
        json_decref(msg);
        return MS_ERR_NOTFOUND;
    }
    if (!op || !task_id || !w->busy || strcmp(task_id, w->task_id) != 0) {
        json_decref(msg);
        s_reap(self, i, true, ev);
        return MS_OK;
    }
    memset(ev, 0, sizeof *ev);
    ev->worker = i;
    snprintf(ev->task_id, sizeof ev->task_id, "%s", w->task_id);
    if (strcmp(op, "epoch") == 0) {
        ev->kind = MS_WORKER_EVENT_EPOCH;
        ev->body = msg;
        return MS_OK;
    }
    if (strcmp(op, "started") == 0 &&
        json_is_integer(json_object_get(msg, "mono_us"))) {
        ev->kind = MS_WORKER_EVENT_STARTED;
        ev->body = msg;
        return MS_OK;
    }
    if (strcmp(op, "result") == 0 &&
        json_is_object(json_object_get(msg, "result"))) {
        ev->kind = MS_WORKER_EVENT_RESULT;
        ev->body = json_incref(json_object_get(msg, "result"));
        json_decref(msg);
        w->busy = false;
        w->task_id[0] = 0;
        return MS_OK;
    }
    if (strcmp(op, "failed") == 0) {
        ev->kind = MS_WORKER_EVENT_FAILED;
        const char *reason = json_string_value(json_object_get(msg, "reason"));
        snprintf(ev->reason, sizeof ev->reason, "%s",
                 reason ? reason : "failed");
        ev->body = msg;
        w->busy = false;
        w->task_id[0] = 0;
        return MS_OK;
    }
    json_decref(msg);
    s_reap(self, i, true, ev);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Wait for the next event.

int
ms_worker_pool_poll(ms_worker_pool_t *self, int timeout_ms, int wake_fd,
                    ms_worker_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    for (int i = 0; i < self->n_workers; i++)
        if (self->workers[i].pid < 0)
            s_spawn(self, i); // a respawn that failed earlier
    struct pollfd fds[self->n_workers + 1];
    for (;;) {
        int n = 0;
        for (int i = 0; i < self->n_workers; i++) {
            fds[i].fd = self->workers[i].fd; // -1 is ignored by poll
            fds[i].events = POLLIN;
            fds[i].revents = 0;
        }
        n = self->n_workers;
        fds[n].fd = wake_fd;
        fds[n].events = POLLIN;
        fds[n].revents = 0;
        int ready = poll(fds, (nfds_t) n + 1, timeout_ms);
        if (ready < 0)
            return errno == EINTR ? MS_ERR_INTERRUPTED : MS_ERR_IO;
        if (ready == 0)
            return MS_ERR_TIMEOUT;
        for (int k = 0; k < self->n_workers; k++) {
            int i = (self->next_scan + k) % self->n_workers;
            if (fds[i].fd < 0 || !fds[i].revents)
                continue;
            if (s_read_event(self, i, ev) == MS_OK) {
                self->next_scan = (i + 1) % self->n_workers;
                return MS_OK;
            }
        }
        if (wake_fd >= 0 && fds[n].revents)
            return MS_ERR_INTERRUPTED;
        timeout_ms = 0; // only "ready" messages were read: look again
    }
}

//  --------------------------------------------------------------------------
//  Free an event's body.

void
ms_worker_event_clear(ms_worker_event_t *ev)
{
    if (!ev)
        return;
    json_decref(ev->body);
    memset(ev, 0, sizeof *ev);
}
