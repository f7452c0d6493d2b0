/*  =========================================================================
    ms_cli_remote - meshsweep submit | status | results: talk to a node's
    HTTP API, or read a store directly (results --data-dir)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The client is thin: the node expands and validates specs, keeps the
    store and answers JSON (DESIGN.md "HTTP API"). What the client adds is
    presentation: progress bars with throughput and ETA, and the results
    table/CSV/JSON formatted locally from the JSON rows, so the three
    formats always carry the same content whichever node answers (and
    `results --data-dir` formats exactly the same rows, read from a store
    opened read-only, with no daemon running).

    Sweep ids may be typed as a unique prefix of 12 or more hex characters;
    the node (or ms_results_find_sweep for a store) resolves it.
*/
#include "ms_cli.h"
#include "ms_clock.h"
#include "ms_hash.h"
#include "ms_results.h"
#include "ms_spec.h"
#include "ms_store.h"

#include <ctype.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  Largest number of result pages followed (bounded loop).
#define S_MAX_PAGES 100000

//  ==========================================================================
//  submit

//  --------------------------------------------------------------------------
//  Help for submit.

static void
s_submit_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep submit SPEC.yaml [--priority N] [--node URL] "
            "[--json]\n"
            "\n"
            "Hand a sweep to the pool through a node's API and print its "
            "id.\nThe same spec submitted again gives the same id (\"already "
            "submitted\").\nA dataset of files (train/test) is loaded and "
            "checked here, then uploaded to\nthe node (one in a pool: "
            "meshsweepd --open-pool, or with a pool certificate);\nthe pool "
            "fetches it from there by hash.\n"
            "A file of several YAML documents (\"---\" between them) is "
            "several sweeps:\nall are checked first, data files too (a bad "
            "one stops all, nothing sent),\nevery document's files are "
            "uploaded, then the sweeps are submitted in order,\none id a "
            "line (--json: one array of the answers).\n"
            "\n"
            "  --priority N   serve this sweep before lower ones (default 0)\n"
            "  --node URL     node API (default $MESHSWEEP_NODE or %s)\n"
            "  --token T      API bearer token (default $MESHSWEEP_TOKEN)\n"
            "  --token-file F the token from file F ($MESHSWEEP_TOKEN_FILE)\n"
            "  --json         print the node's answer as JSON\n",
            MS_CLI_DEFAULT_NODE);
}

//  --------------------------------------------------------------------------
//  Parse every document of a spec file here, before the node is
//  contacted, so that a malformed one is refused with the words the node
//  would use (exit 2) and nothing is sent: the line names the file, the
//  document (when there are several) and the key. A document over a size
//  limit (MS_ERR_RANGE: tasks, parameters) or of a kind this client does
//  not know (any other code) goes on, since the node's own limits
//  decide: its entry in parsed stays NULL. On success parsed[i] owns
//  document i's spec (or NULL). Returns MS_CLI_EXIT_OK or an exit code
//  (after printing the error).

static int
s_parse_documents(const char *spec_path, const ms_cli_spec_doc_t *docs,
                  size_t n_docs, ms_spec_t **parsed)
{
    for (size_t i = 0; i < n_docs; i++) {
        ms_diag_t diag;
        ms_diag_clear(&diag);
        parsed[i] = NULL;
        int rc =
            ms_spec_parse(docs[i].text, docs[i].n, NULL, &parsed[i], &diag);
        if (rc == MS_ERR_INVALID) {
            char where[MS_DIAG_WHERE_MAX + 600];
            fprintf(stderr, "meshsweep: %s: %s\n",
                    ms_cli_spec_where(where, sizeof where, spec_path,
                                      docs[i].number, n_docs, diag.where),
                    diag.reason);
            return MS_CLI_EXIT_USAGE;
        }
    }
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  A file dataset travels with its files (DESIGN.md "Datasets": the client
//  reads them and uploads them; no node opens a path from a spec): hash
//  each file, PUT it to /api/v1/blobs/HEX, and append the roles and
//  hashes to *query ("&files=train:HEX,test:HEX[,train_labels:HEX,
//  test_labels:HEX]"; IDX labels files are found as the node's loader
//  does: "images-idx3" in the name becomes "labels-idx1"). Built-in
//  datasets, and a spec not parsed here (NULL: the node decides):
//  nothing to do. Returns MS_CLI_EXIT_OK or an exit code (after printing
//  the error).

static int
s_upload_dataset(const char *node, const ms_spec_t *parsed, char *query,
                 size_t query_size)
{
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc;
    if (!parsed)
        return MS_CLI_EXIT_OK;
    const ms_spec_dataset_t *d = ms_spec_dataset(parsed);
    int code = MS_CLI_EXIT_OK;
    if (d->builtin || !d->train_path || !d->test_path)
        return code;
    const char *roles[4] = {"train", "test", "train_labels", "test_labels"};
    char *paths[4] = {strdup(d->train_path), strdup(d->test_path), NULL, NULL};
    (void) ms_dataset_idx_pair(d->train_path, d->test_path, &paths[2],
                               &paths[3]); // CSV: no labels files
    size_t len = strlen(query);
    len += (size_t) snprintf(query + len, query_size - len,
                             "%sfiles=", strchr(query, '?') ? "&" : "?");
    for (int i = 0; i < 4 && code == MS_CLI_EXIT_OK; i++) {
        if (!paths[i])
            continue;
        char *data = NULL;
        size_t n = 0;
        ms_hash_t h;
        char hex[MS_HASH_HEX_LEN + 1];
        rc = ms_cli_read_file(paths[i], &data, &n, &diag);
        if (rc != MS_OK) {
            code = ms_cli_diag_exit(&diag, rc, paths[i]);
            break;
        }
        ms_hash_bytes(data, n, &h);
        ms_hash_hex(&h, hex);
        char path[128];
        snprintf(path, sizeof path, "/api/v1/blobs/%s", hex);
        long status = 0;
        char *body = NULL;
        rc = ms_cli_http("PUT", node, path, "application/octet-stream", data, n,
                         &status, &body, &diag);
        free(data);
        if (rc != MS_OK)
            code = ms_cli_diag_exit(&diag, rc, node);
        else if (status < 200 || status > 299) {
            code = ms_cli_http_error(status, body, paths[i], &diag);
            //  501: the node keeps no blobs; say which nodes do.
            fprintf(stderr, "meshsweep: %s: upload: %s%s\n", paths[i],
                    diag.reason,
                    status == 501 ? " (a file dataset needs a node in a "
                                    "pool: meshsweepd --open-pool, or one "
                                    "holding a pool certificate)"
                                  : "");
        }
        free(body);
        len += (size_t) snprintf(query + len, query_size - len, "%s%s:%s",
                                 i ? "," : "", roles[i], hex);
    }
    for (int i = 0; i < 4; i++)
        free(paths[i]);
    return code;
}

//  --------------------------------------------------------------------------
//  Check every document's file dataset here, as `run` does, before
//  anything is sent: a bad CSV in document 2 stops document 1 too. The
//  error line names the file (and the document, of several). Returns an
//  exit code.

static int
s_check_datasets(const char *spec_path, const ms_cli_spec_doc_t *docs,
                 size_t n_docs, ms_spec_t *const *parsed)
{
    for (size_t i = 0; i < n_docs; i++) {
        if (!parsed[i])
            continue;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_cli_spec_check_dataset(parsed[i], false, &diag);
        if (rc == MS_OK)
            continue;
        char where[MS_DIAG_WHERE_MAX + 600];
        ms_cli_spec_where(where, sizeof where, spec_path, docs[i].number,
                          n_docs, diag.where);
        if (n_docs == 1 && strcmp(diag.where, "validation_split") != 0)
            snprintf(where, sizeof where, "%s",
                     diag.where[0] ? diag.where : spec_path);
        fprintf(stderr, "meshsweep: %s: %s\n", where,
                diag.reason[0] ? diag.reason : ms_strerror(rc));
        //  A data file named by the user is missing, or bad: bad input.
        return rc == MS_ERR_NOMEM ? MS_CLI_EXIT_FAILURE : MS_CLI_EXIT_USAGE;
    }
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Submit one document of a spec file to node: path is the request
//  (with the priority and the uploaded files' hashes, s_upload_dataset).
//  Prints the sweep id on stdout (or the node's answer with json_out)
//  and what the node said on stderr. Returns an exit code.

static int
s_submit_one(const char *node, const char *path, const char *spec_path,
             const ms_cli_spec_doc_t *doc, size_t n_docs, bool json_out)
{
    ms_diag_t diag;
    ms_diag_clear(&diag);
    long status = 0;
    char *body = NULL;
    int rc = ms_cli_http("POST", node, path, "application/yaml", doc->text,
                         doc->n, &status, &body, &diag);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&diag, rc, node);
    if (status < 200 || status > 299) {
        int code = ms_cli_http_error(status, body, spec_path, &diag);
        free(body);
        // The node names the key; the file name (and the document of
        // several) says which spec.
        char where[MS_DIAG_WHERE_MAX + 600];
        fprintf(stderr, "meshsweep: %s: %s\n",
                ms_cli_spec_where(where, sizeof where, spec_path, doc->number,
                                  n_docs, diag.where),
                diag.reason);
        return code;
    }
    json_error_t jerr;
    json_t *answer = json_loads(body, 0, &jerr);
    if (!answer) {
        int code = ms_cli_failure(node, "the node's answer is not JSON: %s",
                                  jerr.text);
        free(body);
        return code;
    }
    free(body);
    const char *id = json_string_value(json_object_get(answer, "sweep_id"));
    if (!id)
        id = json_string_value(json_object_get(answer, "id"));
    const json_t *existed_v = json_object_get(answer, "existed");
    bool existed =
        json_is_boolean(existed_v) ? json_is_true(existed_v) : status == 200;
    if (json_out)
        ms_cli_json_print(stdout, answer);
    else if (id) {
        printf("%s\n", id);
        json_int_t n_tasks =
            json_integer_value(json_object_get(answer, "tasks"));
        if (!n_tasks)
            n_tasks = json_integer_value(json_object_get(answer, "n_tasks"));
        const json_t *warnings = json_object_get(answer, "warnings");
        size_t k;
        const json_t *w;
        json_array_foreach(warnings, k, w)
        {
            if (json_is_string(w))
                fprintf(stderr, "meshsweep: warning: %s\n",
                        json_string_value(w));
        }
        if (json_is_true(json_object_get(answer, "reopened")))
            fprintf(stderr,
                    "reopened: sweep %.12s was cancelled and is active "
                    "again (%lld task%s; finished ones are kept)\n",
                    id, (long long) n_tasks, n_tasks == 1 ? "" : "s");
        else if (existed)
            fprintf(stderr,
                    "already submitted: the same spec is sweep %.12s "
                    "(%lld task%s)\n",
                    id, (long long) n_tasks, n_tasks == 1 ? "" : "s");
        else
            fprintf(stderr, "submitted: sweep %.12s, %lld task%s\n", id,
                    (long long) n_tasks, n_tasks == 1 ? "" : "s");
    }
    json_decref(answer);
    if (!id && !json_out)
        return ms_cli_failure(node, "the node's answer has no sweep_id");
    return MS_CLI_EXIT_OK;
}

//  meshsweep submit SPEC.yaml

int
ms_cli_submit_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_submit_usage(stdout), MS_CLI_EXIT_OK;
    const char *spec_path = NULL, *node_opt = NULL, *priority = NULL;
    bool json_out = false;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_opt, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (ms_cli_arg_value(argc, argv, &i, "--priority", &v,
                                    &missing)) {
            long p;
            if (missing)
                return ms_cli_usage_error("--priority", "needs a number");
            if (ms_cli_parse_int("--priority", v, -1000000, 1000000, &p))
                return MS_CLI_EXIT_USAGE;
            priority = v;
        } else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of submit");
        else if (!spec_path)
            spec_path = argv[i];
        else
            return ms_cli_usage_error(argv[i], "one spec file at a time");
    }
    if (!spec_path)
        return ms_cli_usage_error(
            "submit", "missing SPEC.yaml (meshsweep submit --help)");
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char *spec = NULL;
    size_t n_spec = 0;
    int rc = ms_cli_read_file(spec_path, &spec, &n_spec, &diag);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&diag, rc, spec_path);
    //  Every document is parsed before any is sent: a bad one stops all.
    ms_cli_spec_doc_t *docs = NULL;
    size_t n_docs = 0;
    int code = ms_cli_spec_docs(spec_path, spec, n_spec, &docs, &n_docs);
    free(spec);
    if (code != MS_CLI_EXIT_OK)
        return code;
    ms_spec_t **parsed = calloc(n_docs, sizeof *parsed);
    if (!parsed) {
        ms_cli_spec_docs_destroy(&docs, n_docs);
        return ms_cli_failure(NULL, "out of memory");
    }
    code = s_parse_documents(spec_path, docs, n_docs, parsed);
    //  Every document's data files, loaded and checked here.
    if (code == MS_CLI_EXIT_OK)
        code = s_check_datasets(spec_path, docs, n_docs, parsed);
    //  Every document's files uploaded before any sweep is submitted, so
    //  a node that refuses them (one in no pool) gets no sweep at all.
    const char *node = ms_cli_node_url(node_opt);
    char(*paths)[600] = calloc(n_docs, sizeof *paths);
    if (!paths && code == MS_CLI_EXIT_OK)
        code = ms_cli_failure(NULL, "out of memory");
    for (size_t i = 0; i < n_docs && code == MS_CLI_EXIT_OK; i++) {
        if (priority)
            snprintf(paths[i], sizeof paths[i], "/api/v1/sweeps?priority=%s",
                     priority);
        else
            snprintf(paths[i], sizeof paths[i], "/api/v1/sweeps");
        code = s_upload_dataset(node, parsed[i], paths[i], sizeof paths[i]);
    }
    //  Then each in order; with --json, several answers form one array.
    bool array = json_out && n_docs > 1 && code == MS_CLI_EXIT_OK;
    if (array)
        printf("[\n");
    size_t n_sent = 0;
    for (size_t i = 0; i < n_docs && code == MS_CLI_EXIT_OK; i++) {
        if (array && i > 0)
            printf(",\n");
        code =
            s_submit_one(node, paths[i], spec_path, &docs[i], n_docs, json_out);
        if (code == MS_CLI_EXIT_OK)
            n_sent++;
    }
    if (array)
        printf("]\n");
    //  Refused by the node after some were taken: say which are in.
    if (code != MS_CLI_EXIT_OK && n_sent > 0) {
        char sent[64], rest[64];
        if (n_sent == 1)
            snprintf(sent, sizeof sent, "document 1 was");
        else
            snprintf(sent, sizeof sent, "documents 1 to %zu were", n_sent);
        if (n_sent + 1 == n_docs)
            snprintf(rest, sizeof rest, "document %zu was", n_docs);
        else
            snprintf(rest, sizeof rest, "documents %zu to %zu were", n_sent + 1,
                     n_docs);
        fprintf(stderr, "meshsweep: %s: %s submitted (the ids above); %s not\n",
                spec_path, sent, rest);
    }
    free(paths);
    for (size_t i = 0; i < n_docs; i++)
        ms_spec_destroy(&parsed[i]);
    free(parsed);
    ms_cli_spec_docs_destroy(&docs, n_docs);
    return code;
}

//  ==========================================================================
//  status

//  Task counts of one sweep.
typedef struct {
    long long total, pending, running, done, failed, cancelled;
} s_counts_t;

//  --------------------------------------------------------------------------
//  Integer field of an object, -1 when absent.

static long long
s_int_field(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (long long) json_real_value(v);
    return -1;
}

//  --------------------------------------------------------------------------
//  Find the task counts of a sweep object: in "progress", "tasks" (an
//  object) or "counts", else at the top level.

static s_counts_t
s_sweep_counts(const json_t *sweep)
{
    const json_t *src = sweep;
    const char *holders[] = {"progress", "tasks", "counts", "task_states"};
    for (size_t i = 0; i < sizeof holders / sizeof *holders; i++) {
        const json_t *v = json_object_get(sweep, holders[i]);
        if (json_is_object(v)) {
            src = v;
            break;
        }
    }
    s_counts_t c;
    c.total = s_int_field(src, "total");
    c.pending = s_int_field(src, "pending");
    long long claimed = s_int_field(src, "claimed");
    c.running = s_int_field(src, "running");
    if (claimed > 0)
        c.running = (c.running > 0 ? c.running : 0) + claimed;
    c.done = s_int_field(src, "done");
    c.failed = s_int_field(src, "failed");
    c.cancelled = s_int_field(src, "cancelled");
    long long *fields[] = {&c.pending, &c.running, &c.done, &c.failed,
                           &c.cancelled};
    long long sum = 0;
    for (size_t i = 0; i < 5; i++) {
        if (*fields[i] < 0)
            *fields[i] = 0;
        sum += *fields[i];
    }
    if (c.total < 0) {
        long long t = s_int_field(sweep, "n_tasks");
        c.total = t >= 0 ? t : sum;
    }
    return c;
}

//  --------------------------------------------------------------------------
//  The sweep objects of an API answer: an array, {"sweeps": [...]}, or one
//  sweep object. Returns a new reference to an array.

static json_t *
s_sweep_list(json_t *doc)
{
    if (json_is_array(doc))
        return json_incref(doc);
    const json_t *list = json_object_get(doc, "sweeps");
    if (json_is_array(list))
        return json_incref((json_t *) list);
    json_t *one = json_array();
    json_array_append(one, doc);
    return one;
}

//  --------------------------------------------------------------------------
//  Format seconds as "1h02m", "3m04s" or "12s".

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

//  Throughput memory for --watch: first sight of each sweep.
typedef struct {
    char id[65];          // sweep id
    double first_at;      // monotonic seconds at first sight
    long long first_done; // finished tasks then
} s_seen_t;

#define S_MAX_SEEN 256

//  --------------------------------------------------------------------------
//  Monotonic clock in seconds.

static double
s_now(void)
{
    return ms_clock_mono_s();
}

//  --------------------------------------------------------------------------
//  Print one sweep's progress line. Returns true when it is finished.

static bool
s_print_sweep(const json_t *sweep, s_seen_t *seen, int *n_seen, bool tty)
{
    const char *id = json_string_value(json_object_get(sweep, "sweep_id"));
    if (!id)
        id = json_string_value(json_object_get(sweep, "id"));
    const char *name = json_string_value(json_object_get(sweep, "name"));
    const char *state = json_string_value(json_object_get(sweep, "state"));
    s_counts_t c = s_sweep_counts(sweep);
    long long finished = c.done + c.failed + c.cancelled;

    // Throughput: the node's figure when it gives one, else what this
    // client has seen since it started watching.
    double rate = -1;
    const json_t *tp = json_object_get(sweep, "throughput");
    const json_t *per_hour = json_object_get(tp, "tasks_per_hour");
    const json_t *created = json_object_get(sweep, "created_at_ms");
    if (json_is_number(tp))
        rate = json_number_value(tp);
    else if (json_is_number(per_hour) && json_number_value(per_hour) > 0)
        rate = json_number_value(per_hour) / 3600.0;
    else if (json_is_number(json_object_get(sweep, "tasks_per_second")))
        rate = json_number_value(json_object_get(sweep, "tasks_per_second"));
    else if (json_is_integer(created) && finished > 0 && c.total > finished) {
        // Since the sweep was created (wall clock of the node's host).
        double elapsed =
            (double) (ms_clock_wall_ms() - json_integer_value(created)) /
            1000.0;
        if (elapsed > 1)
            rate = (double) finished / elapsed;
    }
    if (rate < 0 && id && seen) {
        int k = 0;
        while (k < *n_seen && strcmp(seen[k].id, id) != 0)
            k++;
        if (k == *n_seen && k < S_MAX_SEEN) {
            snprintf(seen[k].id, sizeof seen[k].id, "%s", id);
            seen[k].first_at = s_now();
            seen[k].first_done = finished;
            (*n_seen)++;
        }
        if (k < *n_seen) {
            double dt = s_now() - seen[k].first_at;
            if (dt > 2 && finished > seen[k].first_done)
                rate = (double) (finished - seen[k].first_done) / dt;
        }
    }
    char bar[41];
    int width = 30;
    int filled = c.total > 0 ? (int) (finished * width / c.total) : 0;
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    char short_id[13], eta[32], rate_text[48];
    ms_cli_short_id(id ? id : "?", short_id);
    long long remaining = c.total - finished;
    // A paused or cancelled sweep says so: its counts alone look like a
    // stalled one.
    bool paused = state && strcmp(state, "paused") == 0;
    bool cancelled = state && strcmp(state, "cancelled") == 0;
    char cancelled_text[48] = "";
    if (c.cancelled)
        snprintf(cancelled_text, sizeof cancelled_text, " cancelled %lld",
                 c.cancelled);
    if (remaining <= 0)
        snprintf(eta, sizeof eta, "done");
    else if (paused || cancelled)
        snprintf(eta, sizeof eta, "-");
    else if (rate > 0)
        s_fmt_duration(eta, sizeof eta, (double) remaining / rate);
    else
        snprintf(eta, sizeof eta, "?");
    if (rate > 0)
        snprintf(rate_text, sizeof rate_text, "%.2f tasks/s", rate);
    else
        snprintf(rate_text, sizeof rate_text, "- tasks/s");
    printf("%s %-20.20s [%s] %lld/%lld  pending %lld running %lld done %lld "
           "failed %lld%s  %s  ETA %s%s%s\n",
           short_id, name ? name : (state ? state : ""), bar, finished, c.total,
           c.pending, c.running, c.done, c.failed, cancelled_text, rate_text,
           eta,
           paused      ? "  PAUSED (meshsweep resume to go on)"
           : cancelled ? "  CANCELLED"
                       : "",
           tty ? "\033[K" : "");
    if (state &&
        (strcmp(state, "done") == 0 || strcmp(state, "cancelled") == 0))
        return true;
    return c.total > 0 && remaining <= 0;
}

static volatile sig_atomic_t s_interrupted = 0;

//  --------------------------------------------------------------------------
//  SIGINT handler for --watch: stop at the next redraw.

static void
s_on_sigint(int sig)
{
    (void) sig;
    s_interrupted = 1;
}

//  --------------------------------------------------------------------------
//  Help for status.

static void
s_status_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep status [SWEEP] [--watch] [--node URL] "
            "[--json]\n"
            "\n"
            "Progress of the sweeps a node knows (or of one SWEEP, a unique "
            "id prefix\nof 12+ hex characters): a bar, tasks by state, "
            "throughput and ETA.\n"
            "\n"
            "  --watch      redraw every second until done or Ctrl-C\n"
            "  --node URL   node API (default $MESHSWEEP_NODE or %s)\n"
            "  --token T    API bearer token (default $MESHSWEEP_TOKEN)\n"
            "  --token-file F the token from file F ($MESHSWEEP_TOKEN_FILE)\n"
            "  --json       print the node's answer as JSON\n",
            MS_CLI_DEFAULT_NODE);
}

//  --------------------------------------------------------------------------
//  meshsweep status [SWEEP] [--watch]

int
ms_cli_status_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_status_usage(stdout), MS_CLI_EXIT_OK;
    const char *sweep = NULL, *node_opt = NULL;
    bool watch = false, json_out = false;
    for (int i = 1; i < argc; i++) {
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_opt, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (strcmp(argv[i], "--watch") == 0)
            watch = true;
        else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of status");
        else if (!sweep)
            sweep = argv[i];
        else
            return ms_cli_usage_error(argv[i], "one sweep at a time");
    }
    if (sweep && ms_cli_check_sweep_id(sweep) != MS_CLI_EXIT_OK)
        return MS_CLI_EXIT_USAGE;
    const char *node = ms_cli_node_url(node_opt);
    char path[160];
    if (sweep)
        snprintf(path, sizeof path, "/api/v1/sweeps/%s", sweep);
    else
        snprintf(path, sizeof path, "/api/v1/sweeps");

    bool tty = isatty(STDOUT_FILENO) && watch && !json_out;
    if (watch)
        signal(SIGINT, s_on_sigint);
    static s_seen_t seen[S_MAX_SEEN];
    int n_seen = 0, lines_drawn = 0;
    // --watch is bounded by Ctrl-C or the sweeps finishing; a lost node
    // ends it with exit 1.
    for (;;) {
        json_t *doc = NULL;
        int rc = ms_cli_api_json("GET", node, path, NULL, sweep ? sweep : node,
                                 &doc);
        if (rc != MS_CLI_EXIT_OK)
            return rc;
        if (json_out) {
            ms_cli_json_print(stdout, doc);
            json_decref(doc);
            if (!watch)
                return MS_CLI_EXIT_OK;
            fflush(stdout);
            struct timespec second = {1, 0};
            nanosleep(&second, NULL);
            if (s_interrupted)
                return MS_CLI_EXIT_OK;
            continue;
        }
        json_t *list = s_sweep_list(doc);
        if (tty && lines_drawn > 0)
            printf("\033[%dA", lines_drawn);
        bool all_done = true;
        size_t i;
        json_t *one;
        if (json_array_size(list) == 0)
            printf("no sweeps%s\n", tty ? "\033[K" : "");
        json_array_foreach(list, i, one)
        {
            if (!s_print_sweep(one, seen, &n_seen, tty))
                all_done = false;
        }
        lines_drawn = json_array_size(list) ? (int) json_array_size(list) : 1;
        fflush(stdout);
        json_decref(list);
        json_decref(doc);
        if (!watch || all_done || s_interrupted)
            return MS_CLI_EXIT_OK;
        for (int t = 0; t < 10 && !s_interrupted; t++) {
            struct timespec tenth = {0, 100 * 1000 * 1000};
            nanosleep(&tenth, NULL);
        }
        if (s_interrupted)
            return MS_CLI_EXIT_OK;
    }
}

//  ==========================================================================
//  results

//  --------------------------------------------------------------------------
//  Fetch every result row of a sweep from the API, following pages.

static int
s_api_rows(const char *node, const char *sweep, unsigned flags, json_t **rows)
{
    *rows = json_array();
    char cursor[256] = "";
    char all_arg[64];
    snprintf(all_arg, sizeof all_arg, "%s%s%s",
             flags & MS_RESULTS_ALL ? "&all=1" : "",
             flags & MS_RESULTS_VERIFIED ? "&verified=1" : "",
             flags & MS_RESULTS_BY_TASK ? "&by_task=1" : "");
    for (int page = 0; page < S_MAX_PAGES; page++) {
        char path[512];
        if (cursor[0])
            snprintf(path, sizeof path,
                     "/api/v1/sweeps/%s/results?format=json%s&after=%s", sweep,
                     all_arg, cursor);
        else
            snprintf(path, sizeof path,
                     "/api/v1/sweeps/%s/results?format=json%s", sweep, all_arg);
        json_t *doc = NULL;
        int rc = ms_cli_api_json("GET", node, path, NULL, sweep, &doc);
        if (rc != MS_CLI_EXIT_OK) {
            json_decref(*rows);
            *rows = NULL;
            return rc;
        }
        const json_t *page_rows =
            json_is_array(doc) ? doc : json_object_get(doc, "rows");
        if (!page_rows)
            page_rows = json_object_get(doc, "results");
        if (!json_is_array(page_rows)) {
            json_decref(doc);
            json_decref(*rows);
            *rows = NULL;
            return ms_cli_failure(node, "%s: no rows in the node's answer",
                                  path);
        }
        json_array_extend(*rows, (json_t *) page_rows);
        const char *next = json_string_value(json_object_get(doc, "next"));
        bool more = next && *next && json_array_size(page_rows) > 0;
        if (more)
            snprintf(cursor, sizeof cursor, "%s", next);
        json_decref(doc);
        if (!more)
            return MS_CLI_EXIT_OK;
    }
    return ms_cli_failure(node, "too many result pages");
}

//  --------------------------------------------------------------------------
//  The "metric" object of a sweep ({name, goal}) from a node's API, into
//  *metric (caller decrefs; NULL when the node's answer has none).

static int
s_api_metric(const char *node, const char *sweep, json_t **metric)
{
    *metric = NULL;
    char path[256];
    snprintf(path, sizeof path, "/api/v1/sweeps/%s", sweep);
    json_t *doc = NULL;
    int rc = ms_cli_api_json("GET", node, path, NULL, sweep, &doc);
    if (rc != MS_CLI_EXIT_OK)
        return rc;
    json_t *m = json_object_get(doc, "metric");
    *metric = json_is_object(m) ? json_incref(m) : NULL;
    json_decref(doc);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Read every result row of a sweep from a store opened read-only, and
//  (metric not NULL) its spec's "metric" object into *metric (caller
//  decrefs; NULL when the spec has none).

static int
s_store_rows(const char *data_dir, const char *sweep, unsigned flags,
             json_t **rows, json_t **metric)
{
    *rows = NULL;
    if (metric)
        *metric = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_store_t *store = NULL;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.read_only = true;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/store", data_dir);
    int rc = ms_store_open(&store, dir, &opts, &diag);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&diag, rc, data_dir);
    ms_hash_t sweep_id;
    rc = ms_results_find_sweep(store, sweep, &sweep_id, &diag);
    if (rc == MS_OK)
        rc = ms_results_page_ex(store, &sweep_id, flags, NULL, 0, rows, NULL,
                                &diag);
    ms_store_sweep_t *record = NULL;
    if (rc == MS_OK && metric &&
        ms_store_get_sweep(store, sweep_id.bytes, &record) == MS_OK) {
        const char *v;
        size_t n;
        json_error_t err;
        if (ms_results_row_member(record->spec_json, record->spec_len, "metric",
                                  &v, &n) == MS_OK)
            *metric = json_loadb(v, n, JSON_DECODE_ANY, &err);
        ms_store_sweep_destroy(&record);
    }
    ms_store_destroy(&store);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&diag, rc, sweep);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Help for results.

static void
s_results_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep results SWEEP [--format table|csv|json] "
            "[--analyze] [--all]\n"
            "                         [--x PARAM] [--metric NAME] "
            "[--verified] [--by-task]\n"
            "                         [--data-dir DIR | --node URL] "
            "[--json]\n"
            "\n"
            "The results of a sweep (a unique id prefix of 12+ hex "
            "characters is\naccepted), from a node's API or, with --data-dir, "
            "straight from a store\n(read-only; no daemon needed).\n"
            "\n"
            "  --format F   table (default), csv (config.* flattened, no "
            "curve) or json\n"
            "  --analyze    also print the analysis: each point's mean over "
            "seeds and\n               95%% interval, where the metric "
            "stops improving, and the\n               time fit against "
            "the axis, per machine class (fingerprint),\n               "
            "normalised by the nodes' calibration when runs span "
            "classes\n               (its basis is printed); with --format "
            "csv the analysis\n               goes to stderr\n"
            "  --x PARAM    analyse against PARAM, any swept numeric "
            "parameter (default\n               hidden_layers, the depth; "
            "width, learning_rate, ...); implies\n               --analyze"
            "; a log-spread axis is said to be one\n"
            "  --metric NAME the metric analysed (default: the sweep's "
            "metric, with its\n               goal): val_accuracy, "
            "test_accuracy, val_loss, test_loss,\n               "
            "train_loss, train_seconds, seconds_per_epoch, params; implies\n"
            "               --analyze\n"
            "  --all        also list extra replicas (a node's result for a "
            "slot another\n               node holds: \"replica\": "
            "\"extra\", counted false); never\n               in the "
            "analysis\n"
            "  --verified   only verified rows (results in the agreeing set "
            "of a verified\n               task; with replicas 1, accepted "
            "is not verified); with\n               --analyze, the "
            "analysis of those rows only\n"
            "  --by-task    one row per task: the lower-median counted "
            "result, with the\n               operators behind the verdict\n"
            "  --data-dir D read the store in D instead of asking a node\n"
            "  --node URL   node API (default $MESHSWEEP_NODE or %s)\n"
            "  --token T    API bearer token (default $MESHSWEEP_TOKEN)\n"
            "  --token-file F the token from file F ($MESHSWEEP_TOKEN_FILE)\n"
            "  --json       same as --format json (with --analyze: the "
            "analysis too)\n"
            "\n"
            "The table ends with each row's verdict and revision (verified "
            "r2) and the\noperators behind it; a row that does not count is "
            "marked * (CSV and JSON:\nverdict, verdict_revision, "
            "verdict_operators, counted).\n",
            MS_CLI_DEFAULT_NODE);
}

//  --------------------------------------------------------------------------
//  meshsweep results SWEEP

int
ms_cli_results_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_results_usage(stdout), MS_CLI_EXIT_OK;
    const char *sweep = NULL, *node_opt = NULL, *data_dir = NULL;
    const char *format = "table", *x = NULL, *metric_name = NULL;
    bool analyze = false, json_out = false, all = false;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_opt, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
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
        } else if (ms_cli_analysis_arg(argc, argv, &i, &x, &metric_name,
                                       &analyze, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (strcmp(argv[i], "--analyze") == 0)
            analyze = true;
        else if (strcmp(argv[i], "--all") == 0)
            all = true;
        else if (strcmp(argv[i], "--verified") == 0)
            flags |= MS_RESULTS_VERIFIED;
        else if (strcmp(argv[i], "--by-task") == 0)
            flags |= MS_RESULTS_BY_TASK;
        else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of results");
        else if (!sweep)
            sweep = argv[i];
        else
            return ms_cli_usage_error(argv[i], "one sweep at a time");
    }
    if (json_out)
        format = "json";
    if (strcmp(format, "table") && strcmp(format, "csv") &&
        strcmp(format, "json"))
        return ms_cli_usage_error(
            "--format", "unknown format '%s' (table, csv or json)", format);
    if (!sweep)
        return ms_cli_usage_error("results",
                                  "missing SWEEP (meshsweep results --help)");
    if (ms_cli_check_sweep_id(sweep) != MS_CLI_EXIT_OK)
        return MS_CLI_EXIT_USAGE;
    json_t *rows = NULL, *spec_metric = NULL;
    if (all)
        flags |= MS_RESULTS_ALL;
    int rc = data_dir
                 ? s_store_rows(data_dir, sweep, flags, &rows,
                                analyze ? &spec_metric : NULL)
                 : s_api_rows(ms_cli_node_url(node_opt), sweep, flags, &rows);
    if (rc == MS_CLI_EXIT_OK && analyze && !data_dir)
        rc = s_api_metric(ms_cli_node_url(node_opt), sweep, &spec_metric);
    if (rc != MS_CLI_EXIT_OK) {
        json_decref(rows);
        return rc;
    }
    // Extra replicas carry "counted": false: the analysis leaves them out.
    // The metric is the sweep's (with its goal) unless --metric names one.
    ms_analysis_options_t aopts;
    ms_analysis_options_default(&aopts);
    aopts.verified_only = (flags & MS_RESULTS_VERIFIED) != 0;
    ms_analysis_options_metric(&aopts, spec_metric, metric_name);
    aopts.x = x;
    rc = ms_cli_print_results_opts(rows, format, analyze ? &aopts : NULL);
    json_decref(rows);
    json_decref(spec_metric);
    return rc;
}
