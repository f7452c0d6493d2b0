/*  =========================================================================
    ms_dishonest_node - a dishonest member of a pool, for the trust tests

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Usage: ms_dishonest_node --lie MODE --data-dir DIR [any option of
               meshsweepd but --check-config and --version]

    A real member: the node library (ms_node) as meshsweepd runs it, with
    meshsweepd's options, parsed by the daemon's own option table
    (ms_daemon_config: the same names, checks and config file), and
    DATA_DIR/identity/node.cert putting it in a pool with an authority. It
    joins with a valid certificate (or an open pool), claims, heartbeats
    and gossips as an honest node does, and every record it publishes is
    signed by its own key; only the results are false, through the test
    hooks of ms_node.h (never set by meshsweepd). --lie MODE:

      inflate      every result it publishes has test_accuracy and
                   val_accuracy raised by 0.05 (capped below 1); everything
                   else honest (it trains).
      fabricate    it never trains: each task it claims is finished at
                   once, under its claim, with made-up metrics (plausible
                   values, a random weights digest, no platform).
      copy         for every task another node finished, it publishes a
                   copy of that node's row as its own (same metrics,
                   weights digest, timings and platform) under a fresh
                   claim of its own; tasks it claims itself it trains.
      impossible   case 7: its results claim test_accuracy 1.2, or (every
                   other result) a null test_loss, as JSON writes a NaN,
                   with status ok. Its own store is told to keep them
                   (ms_store_set_unchecked_appends) so that they go out
                   in its signed blocks exactly as honest records do: a
                   dishonest node's store does what it likes; the honest
                   nodes must refuse them.
      submit       honest results, but its API submits sweeps and sweep
                   controls although its certificate lacks the `submit`
                   role: the other members must store and not apply them.
      broken-worker  not a lie: an honest node whose worker's rows are
                   impossible (as "impossible"), with its store checking
                   its own rows as every node's does: each row is refused
                   before it is signed and becomes a task-class failure.

    It prints one line per false result to stdout ("liar: MODE task
    TASK_ID ...", flushed), which the tests count. SIGTERM / SIGINT stop it
    as they stop meshsweepd. Exit codes: 0 stopped, 1 failure, 2 usage.

    Used by ms_pool_case7_test (impossible, broken-worker) and
    ms_pool_liar_test (inflate, fabricate, copy); docs/TRUST.md "Testing
    against a dishonest member".
*/
#include "ms_daemon_config.h"
#include "ms_node.h"
#include "ms_store.h"
#include "ms_wire.h"
#include "ms_wire_canon.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#define S_USAGE                                                                \
    "usage: ms_dishonest_node --lie "                                          \
    "inflate|fabricate|copy|impossible|broken-worker|submit\n"                 \
    "           --data-dir DIR [--api ADDR:PORT] [--workers N] "               \
    "[--mesh-port N]\n"                                                        \
    "           [--peer [ID@]tcp://HOST:PORT]... [--no-beacon] "               \
    "[--open-pool[=NAME]]\n"                                                   \
    "           [--lease-ttl-ms N] [--heartbeat-ms N] [--antientropy-ms N]\n"  \
    "           [--beacon-interval-ms N] [--reevaluate-fraction F]\n"          \
    "           [--reeval-timeout-s N] [--verbose]\n"

typedef enum {
    S_LIE_INFLATE,
    S_LIE_FABRICATE,
    S_LIE_COPY,
    S_LIE_IMPOSSIBLE,
    S_LIE_BROKEN_WORKER,
    S_LIE_SUBMIT,
} s_lie_t;

static const char *const s_lie_names[] = {
    "inflate", "fabricate", "copy", "impossible", "broken-worker", "submit"};

//  The liar's state.
typedef struct {
    s_lie_t mode;          // what it lies about
    ms_node_t *node;       // the node
    uint64_t n_lies;       // false results made
    uint8_t (*copied)[32]; // tasks copied already
    size_t n_copied, cap;  // used, allocated
} s_liar_t;

static ms_node_t *volatile s_node = NULL; // for the signal handler

static void
s_on_signal(int sig)
{
    (void) sig;
    ms_node_t *node = s_node;
    if (node)
        ms_node_stop(node);
}

//  --------------------------------------------------------------------------
//  The task id of a row, short (12 hex), for the log lines.

static const char *
s_task_of(const json_t *row)
{
    const char *t = json_string_value(json_object_get(row, "task_id"));
    return t ? t : "?";
}

//  --------------------------------------------------------------------------
//  Result hook (inflate, impossible, broken-worker): rewrite our row.

static void
s_result_hook(void *arg, json_t *row)
{
    s_liar_t *self = arg;
    const char *status = json_string_value(json_object_get(row, "status"));
    if (self->mode == S_LIE_INFLATE) {
        if (!status || strcmp(status, "ok") != 0)
            return; // a failed or diverged run has no accuracy to raise
        const char *keys[2] = {"test_accuracy", "val_accuracy"};
        double was[2] = {NAN, NAN}, now[2] = {NAN, NAN};
        for (int i = 0; i < 2; i++) {
            json_t *v = json_object_get(row, keys[i]);
            if (!json_is_number(v))
                continue;
            was[i] = json_number_value(v);
            now[i] = was[i] + 0.05 < 1.0 ? was[i] + 0.05
                                         : (was[i] < 0.9999 ? 0.9999 : was[i]);
            json_object_set_new(row, keys[i], json_real(now[i]));
        }
        self->n_lies++;
        printf("liar: inflate task %s test_accuracy %.17g -> %.17g "
               "val_accuracy %.17g -> %.17g\n",
               s_task_of(row), was[0], now[0], was[1], now[1]);
        fflush(stdout);
        return;
    }
    // impossible / broken-worker: accuracy over 1, or a NaN loss (null
    // in JSON) with status ok, in turn.
    bool nan_loss = self->n_lies % 2 == 1;
    json_object_set_new(row, "status", json_string("ok"));
    if (nan_loss)
        json_object_set_new(row, "test_loss", json_null());
    else
        json_object_set_new(row, "test_accuracy", json_real(1.2));
    self->n_lies++;
    printf("liar: %s task %s %s\n", s_lie_names[self->mode], s_task_of(row),
           nan_loss ? "test_loss null (NaN) with status ok"
                    : "test_accuracy 1.2");
    fflush(stdout);
}

//  --------------------------------------------------------------------------
//  A uniform double in [lo, hi).

static double
s_uniform(double lo, double hi)
{
    return lo + (hi - lo) * ((double) randombytes_uniform(1u << 30) /
                             (double) (1u << 30));
}

//  --------------------------------------------------------------------------
//  Work hook (fabricate): a made-up result body instead of training.

static json_t *
s_work_hook(void *arg, const char *task_id_hex, const char *sweep_id_hex,
            const json_t *config)
{
    s_liar_t *self = arg;
    (void) sweep_id_hex;
    if (self->mode != S_LIE_FABRICATE)
        return NULL;
    json_t *ep = json_object_get(config, "epochs");
    json_int_t epochs = json_is_integer(ep) ? json_integer_value(ep) : 10;
    uint8_t digest[32];
    randombytes_buf(digest, sizeof digest);
    ms_hash_t h;
    memcpy(h.bytes, digest, sizeof digest);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    double val_acc = s_uniform(0.55, 0.95), test_acc = s_uniform(0.55, 0.95);
    double secs = s_uniform(0.5, 3.0);
    json_t *body = json_pack(
        "{s:s, s:n, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:s, s:{}, "
        "s:[]}",
        "status", "ok", "error", "epochs", epochs, "train_seconds", secs,
        "seconds_per_epoch", epochs > 0 ? secs / (double) epochs : secs,
        "val_accuracy", val_acc, "val_loss", s_uniform(0.2, 1.0),
        "test_accuracy", test_acc, "test_loss", s_uniform(0.2, 1.0), "params",
        1000, "weights_digest", hex, "platform", "curve");
    if (!body)
        return NULL;
    self->n_lies++;
    printf("liar: fabricate task %s test_accuracy %.17g (never trained)\n",
           task_id_hex, test_acc);
    fflush(stdout);
    return body;
}

//  Rows of other nodes to copy, gathered under a read txn (no write may
//  happen inside a read callback).
typedef struct {
    s_liar_t *liar;       // the liar
    const char *own;      // our node id (hex)
    char **rows;          // rows to copy (malloc'd text)
    uint8_t (*tasks)[32]; // their tasks
    size_t n, cap;        // used, allocated
} s_copy_scan_t;

//  --------------------------------------------------------------------------
//  True when TASK is in the first N entries of TASKS.

static bool
s_has_task(const uint8_t (*tasks)[32], size_t n, const uint8_t task[32])
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(tasks[i], task, 32) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  One result row: keep another node's row of a task not copied yet (one
//  per task).

static int
s_copy_row(void *arg, const char *json, size_t n)
{
    s_copy_scan_t *scan = arg;
    s_liar_t *liar = scan->liar;
    json_error_t err;
    json_t *row = json_loadb(json, n, 0, &err);
    const char *node = json_string_value(json_object_get(row, "node_id"));
    const char *task = json_string_value(json_object_get(row, "task_id"));
    ms_hash_t tid;
    bool take =
        node && task && strcmp(node, scan->own) != 0 &&
        ms_hash_from_hex(task, &tid) == MS_OK &&
        !s_has_task((const uint8_t(*)[32]) liar->copied, liar->n_copied,
                    tid.bytes) &&
        !s_has_task((const uint8_t(*)[32]) scan->tasks, scan->n, tid.bytes);
    json_decref(row);
    if (!take)
        return 0;
    if (scan->n == scan->cap) {
        size_t cap = scan->cap ? scan->cap * 2 : 16;
        char **rows = realloc(scan->rows, cap * sizeof *rows);
        if (rows)
            scan->rows = rows;
        uint8_t(*tasks)[32] = realloc(scan->tasks, cap * sizeof *tasks);
        if (tasks)
            scan->tasks = tasks;
        if (!rows || !tasks)
            return 0;
        scan->cap = cap;
    }
    scan->rows[scan->n] = strndup(json, n);
    if (scan->rows[scan->n])
        memcpy(scan->tasks[scan->n++], tid.bytes, 32);
    return 0;
}

//  --------------------------------------------------------------------------
//  One sweep: scan its rows.

static int
s_copy_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    s_copy_scan_t *scan = arg;
    ms_store_t *store = ms_node_store(scan->liar->node);
    ms_store_results_by_sweep(store, sweep->sweep_id, 0, 0, s_copy_row, scan,
                              NULL);
    return 0;
}

//  --------------------------------------------------------------------------
//  Publish a copy of ROW (another node's) as ours: node_id and operator
//  ours, everything else theirs. Returns the node's code.

static int
s_copy_publish(s_liar_t *self, const char *row_text, const uint8_t task[32])
{
    json_error_t err;
    json_t *row = json_loads(row_text, 0, &err);
    if (!row)
        return MS_ERR_NOMEM;
    const char *from = json_string_value(json_object_get(row, "node_id"));
    const char *task_hex = json_string_value(json_object_get(row, "task_id"));
    printf("liar: copy task %s from node %.12s", task_hex ? task_hex : "?",
           from ? from : "?");
    json_object_set_new(row, "node_id",
                        json_string(ms_node_id_hex(self->node)));
    json_object_set_new(row, "operator",
                        json_string(ms_node_operator(self->node)));
    size_t len = 0;
    char *text = ms_wire_canon_dump_len(row, &len);
    json_decref(row);
    int rc = text ? ms_node_publish_result(self->node, task, text, len)
                  : MS_ERR_NOMEM;
    free(text);
    printf("%s%s\n", rc == MS_OK ? "" : ": cannot publish: ",
           rc == MS_OK ? "" : ms_strerror(rc));
    fflush(stdout);
    return rc;
}

//  --------------------------------------------------------------------------
//  copy: publish a copy of every row of another node not copied yet.

static void
s_copy_round(s_liar_t *self)
{
    s_copy_scan_t scan = {.liar = self, .own = ms_node_id_hex(self->node)};
    ms_store_list_sweeps(ms_node_store(self->node), s_copy_sweep, &scan);
    for (size_t i = 0; i < scan.n; i++) {
        if (self->n_copied == self->cap) {
            size_t cap = self->cap ? self->cap * 2 : 16;
            uint8_t(*grown)[32] = realloc(self->copied, cap * sizeof *grown);
            if (!grown)
                break;
            self->copied = grown;
            self->cap = cap;
        }
        // Tried once per task, published or not.
        memcpy(self->copied[self->n_copied++], scan.tasks[i], 32);
        if (s_copy_publish(self, scan.rows[i], scan.tasks[i]) == MS_OK)
            self->n_lies++;
    }
    for (size_t i = 0; i < scan.n; i++)
        free(scan.rows[i]);
    free(scan.rows);
    free(scan.tasks);
}

int
main(int argc, char **argv)
{
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.api_bind = "127.0.0.1:0";
    opts.data_dir = NULL;
    //  --lie MODE is ours; every other option is meshsweepd's, parsed by
    //  the daemon's own table (ms_daemon_config).
    int lie = -1;
    char **rest = calloc((size_t) argc + 1, sizeof *rest);
    int n_rest = 0;
    if (!rest)
        return 1;
    rest[n_rest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(S_USAGE, stdout);
            free(rest);
            return 0;
        }
        if (strcmp(argv[i], "--lie") != 0) {
            rest[n_rest++] = argv[i];
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : "";
        for (int k = 0; k < 6; k++)
            if (strcmp(v, s_lie_names[k]) == 0)
                lie = k;
        if (lie < 0) {
            fprintf(stderr,
                    "ms_dishonest_node: --lie '%s': expected inflate, "
                    "fabricate, copy, impossible, broken-worker or submit\n",
                    v);
            free(rest);
            return 2;
        }
    }
    ms_daemon_config_t *config = NULL;
    char error[1200];
    int crc = ms_daemon_config_open(&config, n_rest, rest, &opts, error,
                                    sizeof error);
    free(rest);
    if (crc != MS_OK || lie < 0 ||
        ms_daemon_config_action(config) != MS_DAEMON_CONFIG_RUN) {
        fprintf(stderr, "ms_dishonest_node: %s\n%s",
                crc != MS_OK ? error
                : lie < 0    ? "--lie MODE is required"
                             : "--check-config, --version: not here",
                S_USAGE);
        ms_daemon_config_destroy(&config);
        return 2;
    }
    if (sodium_init() < 0)
        return 1;

    signal(SIGPIPE, SIG_IGN);
    s_liar_t liar = {.mode = (s_lie_t) lie};
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_node_open(&liar.node, &opts, &diag);
    if (rc != MS_OK) {
        char text[1100];
        fprintf(stderr, "ms_dishonest_node: %s\n",
                diag.reason[0] ? ms_diag_format(&diag, text, sizeof text)
                               : ms_strerror(rc));
        ms_daemon_config_destroy(&config);
        return rc == MS_ERR_INVALID ? 2 : 1;
    }
    if (liar.mode == S_LIE_INFLATE || liar.mode == S_LIE_IMPOSSIBLE ||
        liar.mode == S_LIE_BROKEN_WORKER)
        ms_node_set_result_hook(liar.node, s_result_hook, &liar);
    if (liar.mode == S_LIE_FABRICATE)
        ms_node_set_work_hook(liar.node, s_work_hook, &liar);
    if (liar.mode == S_LIE_SUBMIT)
        ms_node_set_ignore_roles(liar.node, true);
    if (liar.mode == S_LIE_IMPOSSIBLE)
        ms_store_set_unchecked_appends(ms_node_store(liar.node), true);
    s_node = liar.node;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int n_busy = 0;
    printf("meshsweepd: node %s\n", ms_node_id_hex(liar.node));
    printf("meshsweepd: API http://%s/api/v1\n",
           ms_node_api_address(liar.node));
    {
        int n_w = ms_node_worker_count(liar.node, &n_busy);
        printf("meshsweepd: %d worker%s, data dir %s\n", n_w,
               n_w == 1 ? "" : "s", opts.data_dir);
    }
    printf("liar: mode %s, operator '%s', pool %.12s, mesh port %d\n",
           s_lie_names[liar.mode], ms_node_operator(liar.node),
           ms_node_pool_id_hex(liar.node) ? ms_node_pool_id_hex(liar.node)
                                          : "(none)",
           ms_node_mesh_port(liar.node));
    fflush(stdout);

    for (;;) {
        rc = ms_node_poll(liar.node, liar.mode == S_LIE_COPY ? 200 : 1000);
        if (rc != MS_OK)
            break;
        if (liar.mode == S_LIE_COPY)
            s_copy_round(&liar);
    }
    s_node = NULL;
    printf("liar: stopped after %" PRIu64 " false result(s)\n", liar.n_lies);
    ms_node_destroy(&liar.node);
    ms_daemon_config_destroy(&config);
    free(liar.copied);
    if (rc != MS_ERR_INTERRUPTED) {
        fprintf(stderr, "ms_dishonest_node: stopped on error: %s\n",
                ms_strerror(rc));
        return 1;
    }
    return 0;
}
