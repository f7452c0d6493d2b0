/*  =========================================================================
    ms_cli_run - meshsweep run: a whole sweep on an embedded single node,
    with a live progress display, then the results table (and --analyze)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    `meshsweep run SPEC.yaml` is a node without an HTTP API (ms_node_open
    with api_bind NULL) driven by this process: submit the spec as a local
    runner (local_files: dataset paths of the spec may be read here), then
    turn the node loop (ms_node_poll) until no task of the sweep is pending
    or running, then print the rows that ms_results_rows reads back from
    the store: the same rows the API and `results --data-dir` give.

    Bad input is refused before anything is created: the spec is parsed
    (ms_spec_parse), its dataset files hashed, and the dataset loaded and
    checked once in this process, so a bad spec or a truncated IDX file
    ends with exit 2 and one line naming the key or file, and the data dir
    is not even opened. (The node checks again at submit; the early check
    only makes the error immediate and side-effect free.)

    Ctrl-C (SIGINT) or SIGTERM calls ms_node_stop: the loop returns, the
    node is destroyed (running tasks go back to pending, their checkpoints
    stay), the results so far are printed, and the exit code is 1. Running
    the same command again finds the same sweep (ids are content hashes),
    and the node trains only the tasks without a result, resuming the
    interrupted ones from their last epoch.

    Progress goes to stderr. On a terminal: a redrawn block (a bar with
    tasks done/total, elapsed time and ETA, then one line per running task
    with its epoch); otherwise one plain line per finished, retried or
    failed task, which is what logs and tests read.
*/
#include "ms_cli.h"
#include "ms_clock.h"
#include "ms_config.h"
#include "ms_dataset.h"
#include "ms_hash.h"
#include "ms_node.h"
#include "ms_results.h"
#include "ms_spec.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_RUNNING 256    // running tasks shown at once (worker count cap)
#define S_REDRAW_MS 250      // terminal redraw interval
#define S_DRY_RUN_SHOWN 1000 // tasks --dry-run lists without --all

//  One running task, for the live display.
typedef struct {
    char task_id[MS_HASH_HEX_LEN + 1]; // hex id; "" = free slot
    int epoch;                         // last epoch finished
    int of;                            // epochs planned
    double val_accuracy;               // after that epoch (NaN: none yet)
} s_running_t;

//  One task id and its index in the spec, for the sorted id index.
typedef struct {
    ms_hash_t id; // the task id
    size_t i;     // its index in the spec
} s_id_entry_t;

//  Everything the progress display needs.
typedef struct {
    const ms_spec_t *spec;               // for task labels (borrowed)
    s_id_entry_t *by_id;                 // task ids sorted, built on first use
    char sweep_hex[MS_HASH_HEX_LEN + 1]; // the sweep run here
    int64_t trained; // results of this sweep stored by this process
    bool tty;        // stderr is a terminal
    bool quiet;      // --quiet: no progress at all
    s_running_t running[S_MAX_RUNNING];
    int lines_drawn;              // lines of the block now on screen
    double started_at;            // monotonic seconds at loop start
    double last_draw_at;          // monotonic seconds of the last redraw
    int64_t done_at_start;        // finished tasks when the loop began
    ms_sweep_progress_t progress; // last progress read
} s_display_t;

//  --keep-weights: which trained networks a run copies to --weights-dir
//  (DESIGN.md "Programs": none, best or all).
enum { S_KEEP_NONE, S_KEEP_BEST, S_KEEP_ALL };

//  What `meshsweep run` was asked, and the sweeps of its spec file.
typedef struct {
    const char *spec_path;   // the file, as given
    const char *data_dir;    // --data-dir
    const char *format;      // table, csv or json
    const char *x;           // --x (NULL: hidden_layers)
    const char *metric;      // --metric (NULL: the spec's)
    bool analyze;            // --analyze (or implied by --x, --metric)
    bool quiet;              // --quiet
    ms_cli_spec_doc_t *docs; // the file's documents, one sweep each
    ms_spec_t **specs;       // each parsed and bound (s_check_document)
    size_t n_docs;           // entries in docs and specs
    int keep;                // --keep-weights: S_KEEP_NONE, _BEST or _ALL
    const char *weights_dir; // --weights-dir: where kept networks go
    char exported[PATH_MAX]; // the node writes every ok network here
} s_run_t;

static volatile sig_atomic_t s_stop_requested = 0;
static ms_node_t *volatile s_signal_node = NULL;

//  --------------------------------------------------------------------------
//  SIGINT / SIGTERM: ask the node loop to stop (async-signal-safe).

static void
s_on_signal(int sig)
{
    (void) sig;
    s_stop_requested = 1;
    if (s_signal_node)
        ms_node_stop(s_signal_node);
}

//  --------------------------------------------------------------------------
//  Monotonic clock in seconds.

static double
s_now(void)
{
    return ms_clock_mono_s();
}

//  --------------------------------------------------------------------------
//  Seconds as "1h02m", "3m04s" or "12s".

static void
s_fmt_duration(char *out, size_t n, double seconds)
{
    if (!(seconds >= 0) || seconds > 1e9) {
        snprintf(out, n, "?");
        return;
    }
    long s = (long) (seconds + 0.5);
    if (s >= 3600)
        snprintf(out, n, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        snprintf(out, n, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(out, n, "%lds", s);
}

//  --------------------------------------------------------------------------
//  A short label of task i's network ("relu 4x64 seed 1", with the
//  depth keys away from their defaults: "... residual norm layer").

static void
s_task_label_at(const ms_spec_t *spec, size_t i, char *out, size_t n)
{
    snprintf(out, n, "?");
    static ms_train_config_t cfg; // large (hidden_sizes): not on stack
    if (!spec || ms_spec_task_config(spec, i, &cfg) != MS_OK)
        return;
    char arch[128];
    if (cfg.explicit_sizes) {
        size_t used = 0;
        arch[0] = '\0';
        for (int32_t l = 0; l < cfg.n_hidden && used < 100; l++) {
            int w = snprintf(arch + used, sizeof arch - used, "%s%d",
                             l ? "," : "(", (int) cfg.hidden_sizes[l]);
            if (w < 0)
                break;
            used += (size_t) w;
        }
        snprintf(arch + used, sizeof arch - used, "%s",
                 cfg.n_hidden ? ")" : "()");
    } else
        snprintf(arch, sizeof arch, "%dx%d", (int) cfg.n_hidden,
                 (int) cfg.width);
    int used =
        snprintf(out, n, "%s %s seed %lld", ms_activation_name(cfg.activation),
                 arch, (long long) cfg.seed);
    //  The depth keys where they are not at their defaults, so tasks
    //  that differ only in them do not look alike.
    if (used > 0 && (size_t) used < n && cfg.architecture != MS_ARCH_PLAIN)
        used += snprintf(out + used, n - (size_t) used, " %s",
                         ms_architecture_name(cfg.architecture));
    if (used > 0 && (size_t) used < n && cfg.block_layers != 1)
        used += snprintf(out + used, n - (size_t) used, " block_layers %d",
                         (int) cfg.block_layers);
    if (used > 0 && (size_t) used < n && cfg.norm != MS_NORM_NONE)
        used += snprintf(out + used, n - (size_t) used, " norm %s",
                         ms_norm_name(cfg.norm));
    if (used > 0 && (size_t) used < n &&
        cfg.residual_scale != MS_RESIDUAL_SCALE_ONE)
        snprintf(out + used, n - (size_t) used, " residual_scale %s",
                 ms_residual_scale_name(cfg.residual_scale));
}

//  --------------------------------------------------------------------------
//  qsort / bsearch callback over s_id_entry_t: by id bytes.

static int
s_id_entry_cmp(const void *a, const void *b)
{
    return memcmp(((const s_id_entry_t *) a)->id.bytes,
                  ((const s_id_entry_t *) b)->id.bytes,
                  sizeof((const s_id_entry_t *) a)->id.bytes);
}

//  --------------------------------------------------------------------------
//  A short label of a task given by its hex id. The events name tasks by
//  id, so the spec's ids are sorted once (n log n, on the first call) and
//  each lookup is a binary search: a scan per event or per redrawn line
//  made a large sweep quadratic.

static void
s_task_label(s_display_t *d, const char *task_hex, char *out, size_t n)
{
    snprintf(out, n, "?");
    ms_hash_t id;
    if (!d->spec || ms_hash_from_hex(task_hex, &id) != MS_OK)
        return;
    size_t count = ms_spec_task_count(d->spec);
    if (!d->by_id && count > 0) {
        d->by_id = malloc(count * sizeof *d->by_id);
        if (!d->by_id)
            return;
        for (size_t i = 0; i < count; i++) {
            const ms_hash_t *tid = ms_spec_task_id(d->spec, i);
            if (tid)
                d->by_id[i].id = *tid;
            else
                memset(&d->by_id[i].id, 0, sizeof d->by_id[i].id);
            d->by_id[i].i = i;
        }
        qsort(d->by_id, count, sizeof *d->by_id, s_id_entry_cmp);
    }
    s_id_entry_t key;
    key.id = id;
    key.i = 0;
    const s_id_entry_t *hit =
        d->by_id
            ? bsearch(&key, d->by_id, count, sizeof *d->by_id, s_id_entry_cmp)
            : NULL;
    if (hit)
        s_task_label_at(d->spec, hit->i, out, n);
}

//  --------------------------------------------------------------------------
//  Erase the live block from the terminal.

static void
s_clear_block(s_display_t *d)
{
    if (!d->tty || d->lines_drawn == 0)
        return;
    // Cursor is at the start of the line after the block.
    for (int i = 0; i < d->lines_drawn; i++)
        fputs("\033[1A\r\033[K", stderr);
    d->lines_drawn = 0;
}

//  --------------------------------------------------------------------------
//  Draw the live block: bar line, then one line per running task.

static void
s_draw_block(s_display_t *d)
{
    if (!d->tty || d->quiet)
        return;
    s_clear_block(d);
    const ms_sweep_progress_t *p = &d->progress;
    int64_t finished = p->done + p->failed + p->cancelled;
    int width = 30;
    char bar[64];
    int filled = p->total > 0 ? (int) (finished * width / p->total) : 0;
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    double elapsed = s_now() - d->started_at;
    // Work done in this run: finished tasks plus the finished fraction of
    // the running ones (epochs done / planned), so the ETA appears during
    // the first tasks already.
    double work = (double) (finished - d->done_at_start);
    for (int i = 0; i < S_MAX_RUNNING; i++)
        if (d->running[i].task_id[0] && d->running[i].of > 0)
            work += (double) d->running[i].epoch / d->running[i].of;
    double remaining = (double) (p->total - finished);
    for (int i = 0; i < S_MAX_RUNNING; i++)
        if (d->running[i].task_id[0] && d->running[i].of > 0)
            remaining -= (double) d->running[i].epoch / d->running[i].of;
    char el[32], eta[32];
    s_fmt_duration(el, sizeof el, elapsed);
    if (work > 0.05 && p->total > finished)
        s_fmt_duration(eta, sizeof eta,
                       elapsed / work * (remaining > 0 ? remaining : 0));
    else
        snprintf(eta, sizeof eta, p->total > finished ? "?" : "0s");
    fprintf(stderr,
            "[%s] %lld/%lld tasks  running %lld  failed %lld  elapsed %s  "
            "ETA %s\033[K\n",
            bar, (long long) finished, (long long) p->total,
            (long long) p->running, (long long) p->failed, el, eta);
    d->lines_drawn = 1;
    for (int i = 0; i < S_MAX_RUNNING; i++) {
        s_running_t *r = &d->running[i];
        if (!r->task_id[0])
            continue;
        char label[160];
        s_task_label(d, r->task_id, label, sizeof label);
        if (r->epoch > 0) {
            char acc[32];
            if (isfinite(r->val_accuracy))
                snprintf(acc, sizeof acc, "%.4f", r->val_accuracy);
            else
                snprintf(acc, sizeof acc, "-");
            fprintf(stderr, "  %.12s  %-28s epoch %d/%d  val_acc %s\033[K\n",
                    r->task_id, label, r->epoch, r->of, acc);
        } else
            fprintf(stderr, "  %.12s  %-28s starting\033[K\n", r->task_id,
                    label);
        d->lines_drawn++;
        if (d->lines_drawn > 32)
            break;
    }
    fflush(stderr);
    d->last_draw_at = s_now();
}

//  --------------------------------------------------------------------------
//  Find (or with create, make) the running slot of a task.

static s_running_t *
s_running_slot(s_display_t *d, const char *task_id, bool create)
{
    s_running_t *free_slot = NULL;
    for (int i = 0; i < S_MAX_RUNNING; i++) {
        if (strcmp(d->running[i].task_id, task_id) == 0)
            return &d->running[i];
        if (!free_slot && !d->running[i].task_id[0])
            free_slot = &d->running[i];
    }
    if (!create || !free_slot)
        return NULL;
    snprintf(free_slot->task_id, sizeof free_slot->task_id, "%s", task_id);
    free_slot->epoch = 0;
    free_slot->of = 0;
    free_slot->val_accuracy = NAN;
    return free_slot;
}

//  --------------------------------------------------------------------------
//  Node event handler: update the display; plain lines when not a tty.

static void
s_on_event(void *arg, const char *event_json)
{
    s_display_t *d = arg;
    json_t *ev = json_loads(event_json, 0, NULL);
    if (!ev)
        return;
    const char *kind = json_string_value(json_object_get(ev, "event"));
    const char *task = json_string_value(json_object_get(ev, "task_id"));
    if (!kind || !task) {
        json_decref(ev);
        return;
    }
    char label[160];
    //  "result" is emitted when this node stored the result of a task its
    //  own worker trained: exactly "trained in this run" (a failed task,
    //  a retry, or a result another process stored emit no "result").
    const char *sweep = json_string_value(json_object_get(ev, "sweep_id"));
    if (strcmp(kind, "result") == 0 &&
        (!sweep || strcmp(sweep, d->sweep_hex) == 0))
        d->trained++;
    if (strcmp(kind, "started") == 0) {
        s_running_slot(d, task, true);
    } else if (strcmp(kind, "epoch") == 0) {
        s_running_t *r = s_running_slot(d, task, true);
        if (r) {
            r->epoch = (int) json_integer_value(json_object_get(ev, "epoch"));
            r->of = (int) json_integer_value(json_object_get(ev, "of"));
            const json_t *acc = json_object_get(ev, "val_accuracy");
            r->val_accuracy =
                json_is_number(acc) ? json_number_value(acc) : NAN;
        }
    } else if (strcmp(kind, "result") == 0 || strcmp(kind, "failed") == 0 ||
               strcmp(kind, "retry") == 0) {
        s_running_t *r = s_running_slot(d, task, false);
        if (r)
            r->task_id[0] = '\0';
        if (!d->quiet) {
            s_clear_block(d);
            s_task_label(d, task, label, sizeof label);
            const char *status =
                json_string_value(json_object_get(ev, "status"));
            const char *reason =
                json_string_value(json_object_get(ev, "reason"));
            if (strcmp(kind, "result") == 0) {
                const json_t *acc = json_object_get(ev, "test_accuracy");
                const json_t *spe = json_object_get(ev, "seconds_per_epoch");
                char acc_text[32] = "-", spe_text[32] = "";
                if (json_is_number(acc))
                    snprintf(acc_text, sizeof acc_text, "%.4f",
                             json_number_value(acc));
                if (json_is_number(spe))
                    snprintf(spe_text, sizeof spe_text, "  %.3f s/epoch",
                             json_number_value(spe));
                fprintf(stderr, "done    %.12s  %-28s %s  test_acc %s%s\n",
                        task, label, status ? status : "ok", acc_text,
                        spe_text);
            } else if (strcmp(kind, "failed") == 0)
                fprintf(stderr, "failed  %.12s  %-28s %s\n", task, label,
                        reason ? reason : "");
            else
                fprintf(stderr, "retry   %.12s  %-28s %s\n", task, label,
                        reason ? reason : "");
            fflush(stderr);
        }
    }
    json_decref(ev);
}

//  --------------------------------------------------------------------------
//  --dry-run: list the tasks. Linear in the task count (task i's label
//  comes from its own config, no lookup by id). A large sweep is
//  summarised: the first S_DRY_RUN_SHOWN tasks and a count of the rest,
//  unless --all; --json lists every task as one JSON document, the
//  configs being the spec's canonical JSON texts.

static int
s_dry_run(const ms_spec_t *spec, bool json_list, bool all)
{
    char hex[MS_HASH_HEX_LEN + 1], label[160];
    size_t count = ms_spec_task_count(spec);
    ms_hash_hex(ms_spec_sweep_id(spec), hex);
    if (json_list) {
        printf("{\"sweep_id\": \"%s\", \"n_tasks\": %zu, \"tasks\": [", hex,
               count);
        for (size_t i = 0; i < count; i++) {
            ms_hash_hex(ms_spec_task_id(spec, i), hex);
            printf("%s\n  {\"task_id\": \"%s\", \"config\": %s}", i ? "," : "",
                   hex, ms_spec_task_json(spec, i));
        }
        printf("%s]}\n", count ? "\n" : "");
        return fflush(stdout) == 0 ? MS_CLI_EXIT_OK : MS_CLI_EXIT_FAILURE;
    }
    printf("sweep %s: %zu task%s\n", hex, count, count == 1 ? "" : "s");
    size_t shown = all || count <= S_DRY_RUN_SHOWN ? count : S_DRY_RUN_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        ms_hash_hex(ms_spec_task_id(spec, i), hex);
        s_task_label_at(spec, i, label, sizeof label);
        printf("%s  %s\n", hex, label);
    }
    if (shown < count)
        printf("... and %zu more task%s (--all lists every task, --json "
               "too)\n",
               count - shown, count - shown == 1 ? "" : "s");
    return fflush(stdout) == 0 ? MS_CLI_EXIT_OK : MS_CLI_EXIT_FAILURE;
}

//  --------------------------------------------------------------------------
//  Help for run.

static void
s_run_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep run SPEC.yaml [--workers N] [--data-dir DIR] "
            "[--analyze]\n"
            "                     [--x PARAM] [--metric NAME]\n"
            "                     [--format table|csv|json] [--backend "
            "auto|cpu|cuda]\n"
            "                     [--threads N] [--dry-run [--all]] "
            "[--quiet] [--verbose]\n"
            "                     [--keep-weights none|best|all "
            "[--weights-dir DIR]]\n"
            "\n"
            "Run a whole sweep on this machine (an embedded node, no daemon) "
            "and print\nthe results table. Ctrl-C stops cleanly; the same "
            "command resumes (only\nmissing tasks are trained).\n"
            "A file of several YAML documents (\"---\" between them) is "
            "several sweeps:\nall are checked before the data dir is "
            "touched, then run one after another,\neach table after a line "
            "\"== sweep ID NAME (document K of N)\" (--format json:\none "
            "array, the lines on stderr). Ctrl-C starts no further sweep.\n"
            "\n"
            "  --workers N    worker processes (default: one per core)\n"
            "  --data-dir D   node data dir (default ./meshsweep-data)\n"
            "  --analyze      print each point's mean over seeds and 95%%\n"
            "                 interval, where the metric stops improving\n"
            "                 and the time fit against the axis (with\n"
            "                 --format csv the analysis goes to stderr,\n"
            "                 so stdout stays CSV)\n"
            "  --x PARAM      analyse against PARAM, a swept numeric\n"
            "                 parameter (default hidden_layers)\n"
            "  --metric NAME  the metric analysed (default: the spec's);\n"
            "                 each implies --analyze (see results --help)\n"
            "  --format F     table (default), csv or json\n"
            "  --json         same as --format json\n"
            "  --backend B    auto (default), cpu or cuda\n"
            "  --keep-weights K  none (default), best or all: copy the "
            "network of\n"
            "                 the sweep's best ok result (by its metric), or "
            "of every\n"
            "                 ok result, to --weights-dir as TASK.weights and "
            "TASK.onnx\n"
            "                 (meshsweep predict reads both); networks "
            "trained while\n"
            "                 it was none are not kept\n"
            "  --weights-dir D  where they go (default ./meshsweep-weights)\n"
            "  --threads N    BLAS threads per worker (default 1)\n"
            "  --dry-run      check the spec and data, list the tasks "
            "(id, network);\n"
            "                 nothing is stored or trained; the first 1000 "
            "tasks\n"
            "                 and a count of the rest (--json: every task, "
            "as JSON)\n"
            "  --all          with --dry-run: list every task\n"
            "  --quiet        no progress display\n"
            "  --verbose      node log on stderr\n");
}

//  --------------------------------------------------------------------------
//  --x and --metric checked before anything runs: the analysis of the
//  spec's task configs, as if each had finished ok, refuses what the
//  analysis of the results would (an axis that is not swept or not
//  numeric, an unknown metric), with the same line and exit code.

static int
s_check_analysis(const ms_spec_t *spec, const char *x, const char *metric)
{
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < ms_spec_task_count(spec); i++) {
        json_error_t err;
        json_t *config = json_loads(ms_spec_task_json(spec, i), 0, &err);
        json_t *row =
            config ? json_pack("{s:s, s:o}", "status", "ok", "config", config)
                   : NULL;
        if (!row || json_array_append_new(rows, row) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    }
    if (!rows)
        return ms_cli_failure(NULL, "out of memory");
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    opts.x = x;
    opts.metric = metric;
    json_t *analysis = NULL;
    int rc = ms_cli_compute_analysis(rows, &opts, &analysis);
    json_decref(analysis);
    json_decref(rows);
    return rc;
}

//  --------------------------------------------------------------------------
//  The where of an error in document i of run's file (see
//  ms_cli_spec_where).

static const char *
s_where(const s_run_t *run, size_t i, const char *key, char *out, size_t size)
{
    return ms_cli_spec_where(out, size, run->spec_path, run->docs[i].number,
                             run->n_docs, key);
}

//  --------------------------------------------------------------------------
//  Check document i of the file before anything is stored: parse it into
//  run->specs[i], hash its dataset files, load and check its dataset,
//  and check --x and --metric against its tasks. Errors and warnings name
//  the file (and the document, of several). Returns an exit code.

static int
s_check_document(s_run_t *run, size_t i)
{
    const ms_cli_spec_doc_t *doc = &run->docs[i];
    char where[MS_DIAG_WHERE_MAX + PATH_MAX + 64];
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_spec_t *spec = NULL;
    int rc = ms_spec_parse(doc->text, doc->n, NULL, &spec, &diag);
    run->specs[i] = spec;
    if (rc == MS_OK && ms_spec_program(spec))
        rc = ms_diag_set(&diag, "program",
                         "program sweeps are not run by this version of "
                         "meshsweep yet (the spec itself is valid)");
    if (rc == MS_OK)
        rc = ms_spec_bind_dataset_files(spec, &diag);
    if (rc != MS_OK) {
        fprintf(stderr, "meshsweep: %s: %s\n",
                s_where(run, i, diag.where, where, sizeof where),
                diag.reason[0] ? diag.reason : ms_strerror(rc));
        return rc == MS_ERR_NOMEM ? MS_CLI_EXIT_FAILURE : MS_CLI_EXIT_USAGE;
    }
    for (size_t w = 0; w < ms_spec_warning_count(spec); w++)
        fprintf(stderr, "meshsweep: %s: warning: %s\n",
                s_where(run, i, NULL, where, sizeof where),
                ms_spec_warning(spec, w));
    rc = ms_cli_spec_check_dataset(spec, true, &diag);
    if (rc == MS_ERR_INVALID && strcmp(diag.where, "validation_split") == 0)
        return ms_cli_usage_error(
            s_where(run, i, diag.where, where, sizeof where), "%s",
            diag.reason);
    if (rc != MS_OK) {
        //  The diag names a data file; of several documents, which one
        //  named it.
        int exit_code;
        if (run->n_docs > 1) {
            fprintf(stderr, "meshsweep: %s: %s\n",
                    s_where(run, i, diag.where, where, sizeof where),
                    diag.reason[0] ? diag.reason : ms_strerror(rc));
            exit_code = ms_cli_exit_code(rc);
        } else
            exit_code = ms_cli_diag_exit(&diag, rc, run->spec_path);
        // A dataset file named by the user is missing: bad input.
        return rc == MS_ERR_IO ? MS_CLI_EXIT_USAGE : exit_code;
    }
    if (run->x || run->metric)
        return s_check_analysis(spec, run->x, run->metric);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Of several documents, the line that says which sweep follows:
//  "== sweep HEX12 NAME (document K of N)", on stdout before a table or
//  CSV, on stderr with --format json (stdout stays one JSON document).

static void
s_heading(const s_run_t *run, size_t i)
{
    if (run->n_docs < 2)
        return;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(ms_spec_sweep_id(run->specs[i]), hex);
    FILE *out = strcmp(run->format, "json") == 0 ? stderr : stdout;
    fflush(stdout);
    fprintf(out, "%s== sweep %.12s %s (document %zu of %zu)\n",
            i > 0 && out == stdout ? "\n" : "", hex,
            ms_spec_name(run->specs[i]), run->docs[i].number, run->n_docs);
    fflush(out);
}

//  --------------------------------------------------------------------------
//  Copy one exported file, run->exported/TASK.EXT, to --weights-dir.
//  False when it is not there (trained before --keep-weights was given
//  in this data dir) or cannot be copied (said on stderr).

static bool
s_copy_one(const s_run_t *run, const char *task, const char *ext)
{
    char from[PATH_MAX + 100], to[PATH_MAX + 100];
    snprintf(from, sizeof from, "%s/%s.%s", run->exported, task, ext);
    snprintf(to, sizeof to, "%s/%s.%s", run->weights_dir, task, ext);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char *bytes = NULL;
    size_t n = 0;
    if (access(from, R_OK) != 0 ||
        ms_cli_read_file(from, &bytes, &n, &diag) != MS_OK)
        return false;
    FILE *f = fopen(to, "wb");
    bool ok = f && fwrite(bytes, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = false;
    free(bytes);
    if (!ok)
        fprintf(stderr, "meshsweep: %s: cannot write: %s\n", to,
                strerror(errno));
    return ok;
}

//  --------------------------------------------------------------------------
//  --keep-weights best or all: copy the networks of the sweep's rows to
//  --weights-dir. best: the ok row with the best value of the sweep's
//  metric (its goal; the first of equal ones), as the pool's
//  keep_weights best keeps it. Said on stderr unless --quiet; a network
//  not exported (trained earlier, before --keep-weights) is named.

static void
s_copy_weights(const s_run_t *run, const json_t *rows,
               const ms_spec_metric_t *metric)
{
    size_t i, best = SIZE_MAX, n_copied = 0, n_missing = 0;
    double best_value = 0;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *st = json_string_value(json_object_get(row, "status"));
        if (!st || strcmp(st, "ok") != 0)
            continue;
        if (run->keep == S_KEEP_BEST) {
            double x = ms_spec_metric_value(metric, row);
            if (ms_spec_metric_improves(metric, x, best != SIZE_MAX,
                                        best_value)) {
                best = i;
                best_value = x;
            }
            continue;
        }
        const char *task = json_string_value(json_object_get(row, "task_id"));
        if (task && s_copy_one(run, task, "weights") &&
            s_copy_one(run, task, "onnx"))
            n_copied++;
        else
            n_missing++;
    }
    if (run->keep == S_KEEP_BEST && best != SIZE_MAX) {
        row = json_array_get(rows, best);
        const char *task = json_string_value(json_object_get(row, "task_id"));
        if (task && s_copy_one(run, task, "weights") &&
            s_copy_one(run, task, "onnx")) {
            if (!run->quiet)
                fprintf(stderr,
                        "best network: task %.12s (%s %.4f): %s/%s.onnx "
                        "and .weights\n",
                        task, metric->name, best_value, run->weights_dir, task);
            return;
        }
        n_missing++;
    }
    if (run->keep == S_KEEP_ALL && !run->quiet)
        fprintf(stderr, "kept %zu network%s in %s\n", n_copied,
                n_copied == 1 ? "" : "s", run->weights_dir);
    if (n_missing)
        fprintf(stderr,
                "meshsweep: %s: warning: %zu network%s not kept: trained in "
                "this data dir before --keep-weights was given\n",
                run->weights_dir, n_missing, n_missing == 1 ? "" : "s");
}

//  --------------------------------------------------------------------------
//  Run document i's sweep (checked) on the node: submit it, turn the loop
//  until nothing of it is pending or running, read its rows back, print
//  them (after the heading, of several documents). The node is destroyed
//  (*node_p NULL) after the last sweep or an interruption, before the
//  rows are printed, so that its workers are gone. Returns an exit code:
//  MS_CLI_EXIT_FAILURE when interrupted, after printing the results so
//  far.

static int
s_run_sweep(const s_run_t *run, size_t i, ms_node_t **node_p)
{
    ms_node_t *node = *node_p;
    const ms_cli_spec_doc_t *doc = &run->docs[i];
    const ms_spec_t *spec = run->specs[i];
    bool last = i + 1 == run->n_docs;
    char where[MS_DIAG_WHERE_MAX + PATH_MAX + 64];
    int exit_code = MS_CLI_EXIT_FAILURE;
    json_t *rows = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    s_display_t *display = calloc(1, sizeof *display);
    if (!display)
        return ms_cli_failure(NULL, "out of memory");
    ms_hash_t sweep_id;
    bool existed = false;
    int rc = ms_node_submit(node, doc->text, doc->n, true, &sweep_id, &existed,
                            NULL, &diag);
    if (rc != MS_OK) {
        fprintf(stderr, "meshsweep: %s: %s\n",
                s_where(run, i, diag.where, where, sizeof where),
                diag.reason[0] ? diag.reason : ms_strerror(rc));
        exit_code = ms_cli_exit_code(rc);
        if (exit_code == MS_CLI_EXIT_OK)
            exit_code = MS_CLI_EXIT_FAILURE;
        goto cleanup;
    }
    char sweep_hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&sweep_id, sweep_hex);

    // Turn the loop until the sweep has nothing pending or running.
    display->spec = spec;
    snprintf(display->sweep_hex, sizeof display->sweep_hex, "%s", sweep_hex);
    display->tty = isatty(STDERR_FILENO);
    display->quiet = run->quiet;
    ms_node_set_event_handler(node, s_on_event, display);
    rc = ms_node_sweep_progress(node, &sweep_id, &display->progress);
    if (rc != MS_OK) {
        exit_code = ms_cli_failure(sweep_hex, "cannot read progress: %s",
                                   ms_strerror(rc));
        goto cleanup;
    }
    display->done_at_start = display->progress.done + display->progress.failed +
                             display->progress.cancelled;
    display->started_at = s_now();
    if (!run->quiet)
        fprintf(stderr, "sweep %s: %lld task%s%s, %lld already finished\n",
                sweep_hex, (long long) display->progress.total,
                display->progress.total == 1 ? "" : "s",
                existed ? " (resumed)" : "",
                (long long) display->done_at_start);
    bool interrupted = false;
    while (display->progress.pending > 0 || display->progress.running > 0) {
        if (s_stop_requested) {
            interrupted = true;
            break;
        }
        rc = ms_node_poll(node, 200);
        if (rc == MS_ERR_INTERRUPTED || s_stop_requested) {
            interrupted = true;
            break;
        }
        if (rc != MS_OK) {
            s_clear_block(display);
            exit_code = ms_cli_failure(run->data_dir, "node stopped: %s",
                                       ms_strerror(rc));
            goto cleanup;
        }
        rc = ms_node_sweep_progress(node, &sweep_id, &display->progress);
        if (rc != MS_OK) {
            s_clear_block(display);
            exit_code = ms_cli_failure(sweep_hex, "cannot read progress: %s",
                                       ms_strerror(rc));
            goto cleanup;
        }
        if (display->tty && !run->quiet &&
            (s_now() - display->last_draw_at) * 1000 >= S_REDRAW_MS)
            s_draw_block(display);
    }
    s_clear_block(display);
    int64_t trained = display->trained;

    // The rows, read back from the store; then, after the last sweep or
    // an interruption, the node goes away (workers stopped, running
    // tasks back to pending).
    rc = ms_results_rows(ms_node_store(node), &sweep_id, &rows, &diag);
    ms_node_sweep_progress(node, &sweep_id, &display->progress);
    ms_node_set_event_handler(node, NULL, NULL);
    if (last || interrupted) {
        s_signal_node = NULL;
        ms_node_destroy(node_p);
    }
    if (rc != MS_OK) {
        exit_code = ms_cli_diag_exit(&diag, rc, sweep_hex);
        goto cleanup;
    }
    const ms_sweep_progress_t *p = &display->progress;
    char el[32];
    s_fmt_duration(el, sizeof el, s_now() - display->started_at);
    if (!run->quiet || interrupted)
        fprintf(stderr,
                "sweep %s: %lld of %lld task%s done, %lld failed; %lld "
                "trained in this run, %s%s\n",
                sweep_hex, (long long) p->done, (long long) p->total,
                p->total == 1 ? "" : "s", (long long) p->failed,
                (long long) trained, el,
                interrupted ? " (interrupted: run the same command again to "
                              "resume)"
                            : "");
    // The analysis: the spec's metric with its goal, unless --metric.
    const ms_spec_metric_t *sm = ms_spec_metric(spec);
    json_t *spec_metric = json_pack("{s:s, s:s}", "name", sm->name, "goal",
                                    sm->maximize ? "maximize" : "minimize");
    ms_analysis_options_t aopts;
    ms_analysis_options_default(&aopts);
    ms_analysis_options_metric(&aopts, spec_metric, run->metric);
    aopts.x = run->x;
    s_heading(run, i);
    if (run->keep != S_KEEP_NONE)
        s_copy_weights(run, rows, sm);
    exit_code = ms_cli_print_results_opts(rows, run->format,
                                          run->analyze ? &aopts : NULL);
    json_decref(spec_metric);
    if (interrupted && exit_code == MS_CLI_EXIT_OK)
        exit_code = MS_CLI_EXIT_FAILURE;
cleanup:
    if (*node_p)
        ms_node_set_event_handler(*node_p, NULL, NULL);
    json_decref(rows);
    free(display->by_id);
    free(display);
    return exit_code;
}

//  --------------------------------------------------------------------------
//  meshsweep run SPEC.yaml

int
ms_cli_run_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_run_usage(stdout), MS_CLI_EXIT_OK;
    const char *spec_path = NULL, *data_dir = "meshsweep-data";
    const char *format = "table", *backend = "auto";
    const char *weights_dir = "meshsweep-weights";
    int keep = S_KEEP_NONE;
    long n_workers = 0, threads = 1;
    bool analyze = false, quiet = false, verbose = false, dry_run = false;
    bool all = false;
    const char *x = NULL, *metric_name = NULL; // --x, --metric
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_arg_value(argc, argv, &i, "--workers", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--workers", "needs a number");
            if (ms_cli_parse_int("--workers", v, 0, 1024, &n_workers))
                return MS_CLI_EXIT_USAGE;
        } else if (ms_cli_arg_value(argc, argv, &i, "--threads", &v,
                                    &missing)) {
            if (missing)
                return ms_cli_usage_error("--threads", "needs a number");
            if (ms_cli_parse_int("--threads", v, 1, 256, &threads))
                return MS_CLI_EXIT_USAGE;
        } else if (ms_cli_arg_value(argc, argv, &i, "--data-dir", &v,
                                    &missing)) {
            if (missing)
                return ms_cli_usage_error("--data-dir", "needs a directory");
            data_dir = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--format", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--format",
                                          "needs table, csv or json");
            format = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--backend", &v,
                                    &missing)) {
            if (missing)
                return ms_cli_usage_error("--backend", "needs a name");
            backend = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--keep-weights", &v,
                                    &missing)) {
            if (missing)
                return ms_cli_usage_error("--keep-weights",
                                          "needs none, best or all");
            if (strcmp(v, "none") == 0)
                keep = S_KEEP_NONE;
            else if (strcmp(v, "best") == 0)
                keep = S_KEEP_BEST;
            else if (strcmp(v, "all") == 0)
                keep = S_KEEP_ALL;
            else
                return ms_cli_usage_error(
                    "--keep-weights",
                    "'%s' is not none, best or all (the directory is "
                    "--weights-dir DIR)",
                    v);
        } else if (ms_cli_arg_value(argc, argv, &i, "--weights-dir", &v,
                                    &missing)) {
            if (missing)
                return ms_cli_usage_error("--weights-dir", "needs a directory");
            weights_dir = v;
        } else if (strcmp(argv[i], "--analyze") == 0)
            analyze = true;
        else if (ms_cli_analysis_arg(argc, argv, &i, &x, &metric_name, &analyze,
                                     &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (strcmp(argv[i], "--json") == 0)
            format = "json";
        else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0)
            quiet = true;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else if (strcmp(argv[i], "--dry-run") == 0)
            dry_run = true;
        else if (strcmp(argv[i], "--all") == 0)
            all = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of run");
        else if (!spec_path)
            spec_path = argv[i];
        else
            return ms_cli_usage_error(argv[i], "one spec file at a time");
    }
    if (strcmp(format, "table") && strcmp(format, "csv") &&
        strcmp(format, "json"))
        return ms_cli_usage_error(
            "--format", "unknown format '%s' (table, csv or json)", format);
    if (!spec_path)
        return ms_cli_usage_error("run",
                                  "missing SPEC.yaml (meshsweep run --help)");

    s_run_t run = {.spec_path = spec_path,
                   .data_dir = data_dir,
                   .format = format,
                   .x = x,
                   .metric = metric_name,
                   .analyze = analyze,
                   .quiet = quiet,
                   .keep = keep,
                   .weights_dir = weights_dir};
    int exit_code = MS_CLI_EXIT_FAILURE;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char *text = NULL;
    size_t n_text = 0;
    ms_node_t *node = NULL;
    bool json = strcmp(format, "json") == 0;

    // 1. Everything that can be refused, in every document, is checked
    //    before the data dir is touched.
    int rc = ms_cli_read_file(spec_path, &text, &n_text, &diag);
    if (rc != MS_OK) {
        exit_code = ms_cli_usage_error(diag.where, "%s", diag.reason);
        goto cleanup;
    }
    exit_code =
        ms_cli_spec_docs(spec_path, text, n_text, &run.docs, &run.n_docs);
    if (exit_code != MS_CLI_EXIT_OK)
        goto cleanup;
    run.specs = calloc(run.n_docs, sizeof *run.specs);
    if (!run.specs) {
        exit_code = ms_cli_failure(NULL, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < run.n_docs; i++) {
        exit_code = s_check_document(&run, i);
        if (exit_code != MS_CLI_EXIT_OK)
            goto cleanup;
    }
    //  Several documents with --format json: one array of what each
    //  would print alone.
    bool array = json && run.n_docs > 1;
    if (dry_run) {
        if (array)
            printf("[\n");
        for (size_t i = 0; i < run.n_docs && exit_code == MS_CLI_EXIT_OK; i++) {
            if (array && i > 0)
                printf(",\n");
            s_heading(&run, i);
            exit_code = s_dry_run(run.specs[i], json, all);
        }
        if (array)
            printf("]\n");
        goto cleanup;
    }
    exit_code = MS_CLI_EXIT_FAILURE;

    // 2. The node, once for all the sweeps. A --data-dir that exists and
    //    is not a directory is bad input (exit 2), not a failure.
    struct stat st;
    if (stat(data_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        exit_code = ms_cli_usage_error(data_dir, "not a directory");
        goto cleanup;
    }
    if (keep != S_KEEP_NONE && mkdir(weights_dir, 0755) != 0 &&
        (stat(weights_dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        exit_code = ms_cli_usage_error("--weights-dir",
                                       "%s: not a directory that "
                                       "can be made",
                                       weights_dir);
        goto cleanup;
    }
    //  The node exports every ok network into the data dir (kept across
    //  runs, so a resumed sweep still has the networks trained before);
    //  each sweep's best or all are copied out when it ends.
    snprintf(run.exported, sizeof run.exported, "%s/exported-weights",
             data_dir);
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.data_dir = data_dir;
    opts.n_workers = (int) n_workers;
    opts.backend = backend;
    opts.blas_threads = (int) threads;
    opts.api_bind = NULL;
    opts.verbose = verbose;
    opts.weights_out_dir = keep != S_KEEP_NONE ? run.exported : NULL;
    rc = ms_node_open(&node, &opts, &diag);
    if (rc != MS_OK) {
        exit_code = ms_cli_diag_exit(&diag, rc, data_dir);
        goto cleanup;
    }
    if (keep != S_KEEP_NONE && mkdir(run.exported, 0755) != 0 &&
        errno != EEXIST) {
        exit_code =
            ms_cli_failure(run.exported, "cannot make it: %s", strerror(errno));
        goto cleanup;
    }

    // 3. The sweeps, one after another. Ctrl-C stops the one running and
    //    starts no other.
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    s_signal_node = node;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    if (array)
        printf("[\n");
    for (size_t i = 0; i < run.n_docs; i++) {
        if (s_stop_requested) {
            exit_code = MS_CLI_EXIT_FAILURE;
            break;
        }
        if (array && i > 0)
            printf(",\n");
        exit_code = s_run_sweep(&run, i, &node);
        if (exit_code != MS_CLI_EXIT_OK)
            break;
    }
    if (array)
        printf("]\n");
    s_signal_node = NULL;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
cleanup:
    if (node) {
        s_signal_node = NULL;
        ms_node_set_event_handler(node, NULL, NULL);
        ms_node_destroy(&node);
    }
    for (size_t i = 0; run.specs && i < run.n_docs; i++)
        ms_spec_destroy(&run.specs[i]);
    free(run.specs);
    ms_cli_spec_docs_destroy(&run.docs, run.n_docs);
    free(text);
    return exit_code;
}
