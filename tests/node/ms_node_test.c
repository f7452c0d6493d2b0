/*  =========================================================================
    ms_node_test - one node: submission, scheduling, retries and failure
    records (case 4), restart after 6 of 10 tasks (case 3), resume from a
    checkpoint after the node is SIGKILLed (bit-exact)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_node.h"
#include "ms_backend.h"
#include "ms_node_testdata.h"
#include "ms_results.h"
#include "ms_spec.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char s_root[256];

//  Events seen by a test.
typedef struct {
    int n_started, n_epochs, n_results, n_retries, n_failed;
    int first_epoch;        // epoch number of the first epoch event
    int kill_at_epoch;      // > 0: SIGKILL this process at that epoch
    int stop_after_results; // > 0: ms_node_stop after that many results
    ms_node_t *node;        // for stop
    char last_reason[512];  // of the last retry/failed event
    char digest[65];        // of the last result
} s_events_t;

//  --------------------------------------------------------------------------
//  Count events.

static void
s_on_event(void *arg, const char *text)
{
    s_events_t *ev = arg;
    json_error_t err;
    json_t *obj = json_loads(text, 0, &err);
    assert_non_null(obj);
    const char *kind = json_string_value(json_object_get(obj, "event"));
    assert_non_null(kind);
    if (strcmp(kind, "started") == 0)
        ev->n_started++;
    else if (strcmp(kind, "epoch") == 0) {
        int epoch = (int) json_integer_value(json_object_get(obj, "epoch"));
        if (ev->n_epochs++ == 0)
            ev->first_epoch = epoch;
        if (ev->kill_at_epoch && epoch == ev->kill_at_epoch)
            raise(SIGKILL); // the node dies hard, mid-task
    } else if (strcmp(kind, "result") == 0) {
        ev->n_results++;
        const char *d =
            json_string_value(json_object_get(obj, "weights_digest"));
        snprintf(ev->digest, sizeof ev->digest, "%s", d ? d : "");
        if (ev->stop_after_results && ev->n_results == ev->stop_after_results)
            ms_node_stop(ev->node);
    } else if (strcmp(kind, "retry") == 0 || strcmp(kind, "failed") == 0) {
        if (kind[0] == 'r')
            ev->n_retries++;
        else
            ev->n_failed++;
        snprintf(ev->last_reason, sizeof ev->last_reason, "%s",
                 json_string_value(json_object_get(obj, "reason")));
    }
    json_decref(obj);
}

//  --------------------------------------------------------------------------
//  Temp dir with data.

static int
s_setup(void **state)
{
    (void) state;
    unsetenv("MESHSWEEP_FAULT_CRASH_TASK");
    return ms_td_setup(s_root, sizeof s_root);
}

//  --------------------------------------------------------------------------
//  Remove it.

static int
s_teardown(void **state)
{
    (void) state;
    unsetenv("MESHSWEEP_FAULT_CRASH_TASK");
    ms_td_teardown(s_root);
    return 0;
}

//  --------------------------------------------------------------------------
//  Open a node on ROOT/NAME with n workers.

static ms_node_t *
s_open(const char *name, int n_workers)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", s_root, name);
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.data_dir = dir;
    opts.n_workers = n_workers;
    opts.backend = "cpu";
    ms_node_t *node = NULL;
    ms_diag_t diag;
    int rc = ms_node_open(&node, &opts, &diag);
    if (rc != MS_OK)
        fail_msg("ms_node_open: %s: %s", diag.where, diag.reason);
    return node;
}

//  --------------------------------------------------------------------------
//  Submit a spec, expecting success.

static ms_hash_t
s_submit(ms_node_t *node, const char *spec, bool *existed)
{
    ms_hash_t id;
    ms_diag_t diag;
    bool was = false;
    int rc =
        ms_node_submit(node, spec, strlen(spec), false, &id, &was, NULL, &diag);
    if (rc != MS_OK)
        fail_msg("submit: %s: %s", diag.where, diag.reason);
    if (existed)
        *existed = was;
    return id;
}

//  --------------------------------------------------------------------------
//  Poll until the sweep has no pending or running task (at most 60 s).

static void
s_run_sweep(ms_node_t *node, const ms_hash_t *id, ms_sweep_progress_t *p)
{
    for (int i = 0; i < 600; i++) {
        assert_int_equal(ms_node_sweep_progress(node, id, p), MS_OK);
        if (p->pending == 0 && p->running == 0)
            return;
        int rc = ms_node_poll(node, 100);
        assert_true(rc == MS_OK || rc == MS_ERR_INTERRUPTED);
        if (rc == MS_ERR_INTERRUPTED)
            return;
    }
    fail_msg("sweep did not finish in 60 s");
}

//  --------------------------------------------------------------------------
//  A sweep runs to done; rows carry every field; a second submission says
//  it existed.

static void
test_sweep_runs_to_done_with_full_rows(void **state)
{
    (void) state;
    ms_node_t *node = s_open("node", 2);
    assert_int_equal(strlen(ms_node_id_hex(node)), 64);
    assert_null(ms_node_api_address(node));
    int busy = -1;
    assert_int_equal(ms_node_worker_count(node, &busy), 2);
    assert_int_equal(busy, 0);
    s_events_t ev = {0};
    ms_node_set_event_handler(node, s_on_event, &ev);
    const char *spec = ms_td_spec("full-rows", 2, 2, 2);
    bool existed = true;
    ms_hash_t id = s_submit(node, spec, &existed);
    assert_false(existed);
    ms_sweep_progress_t p;
    s_run_sweep(node, &id, &p);
    assert_int_equal(p.total, 4);
    assert_int_equal(p.done, 4);
    assert_int_equal(p.failed, 0);
    assert_true(p.train_seconds > 0);
    assert_int_equal(ev.n_results, 4);
    assert_int_equal(ev.n_started, 4);
    assert_int_equal(ev.n_epochs, 8);
    assert_int_equal(ms_node_trainings_started(node), 4);

    json_t *rows = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_results_rows(ms_node_store(node), &id, &rows, &diag),
                     MS_OK);
    assert_int_equal(json_array_size(rows), 4);
    const char *fields[] = {"task_id",       "sweep_id",
                            "config",        "node_id",
                            "operator",      "status",
                            "error",         "epochs",
                            "train_seconds", "seconds_per_epoch",
                            "val_accuracy",  "val_loss",
                            "test_accuracy", "test_loss",
                            "params",        "platform",
                            "fingerprint",   "weights_digest",
                            "verdict",       "verdict_revision",
                            "counted",       "curve"};
    for (size_t r = 0; r < json_array_size(rows); r++) {
        json_t *row = json_array_get(rows, r);
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            if (!json_object_get(row, fields[f]))
                fail_msg("row %zu lacks %s", r, fields[f]);
        assert_string_equal(json_string_value(json_object_get(row, "node_id")),
                            ms_node_id_hex(node));
        assert_string_equal(json_string_value(json_object_get(row, "status")),
                            "ok");
        // One node, replicas 1: one counted result, checked by nobody
        // else yet (DESIGN.md: accepted is not verified).
        assert_string_equal(json_string_value(json_object_get(row, "verdict")),
                            "accepted");
        assert_true(json_is_true(json_object_get(row, "counted")));
        assert_int_equal(
            strlen(json_string_value(json_object_get(row, "fingerprint"))), 64);
        assert_int_equal(json_array_size(json_object_get(row, "curve")), 2);
        assert_null(json_object_get(json_object_get(row, "platform"),
                                    "peak_rss_bytes"));
    }
    // Checkpoints are deleted once results are stored.
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s/node/checkpoints", s_root);
    int n_files = 0;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", ckpt);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &n_files), 1);
    pclose(f);
    assert_int_equal(n_files, 0);
    json_decref(rows);

    ms_hash_t again = s_submit(node, spec, &existed);
    assert_true(existed);
    assert_memory_equal(again.bytes, id.bytes, MS_HASH_BYTES);
    ms_node_destroy(&node);
    assert_null(node);
}

//  Sweeps counted by a store listing.
static int
s_count_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    (void) sweep;
    (*(int *) arg)++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Bad specs are refused with a diag and store nothing; a missing
//  dataset package is named; a file dataset is refused over the API path.

static void
test_bad_submissions_store_nothing(void **state)
{
    (void) state;
    ms_node_t *node = s_open("node", 1);
    ms_hash_t id;
    bool existed;
    ms_diag_t diag;
    const char *bad = "name: x\ndataset: fashion-mnist\nmethod: grid\n"
                      "parameters:\n  width: {values: []}\n";
    int rc = ms_node_submit(node, bad, strlen(bad), false, &id, &existed, NULL,
                            &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "width"));

    const char *unknown = "name: x\ndataset: fashion-mnist\nbogus_key: 1\n"
                          "parameters:\n  width: {value: 8}\n";
    rc = ms_node_submit(node, unknown, strlen(unknown), false, &id, &existed,
                        NULL, &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "bogus_key"));

    const char *files = "name: x\ndataset: {train: /tmp/a.csv, test: "
                        "/tmp/b.csv, label: y}\nparameters:\n"
                        "  width: {value: 8}\n";
    rc = ms_node_submit(node, files, strlen(files), false, &id, &existed, NULL,
                        &diag);
    assert_int_equal(rc, MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "dataset");

    // A local runner may use files, but they must load.
    rc = ms_node_submit(node, files, strlen(files), true, &id, &existed, NULL,
                        &diag);
    assert_int_not_equal(rc, MS_OK);
    assert_non_null(strstr(diag.where, "/tmp/a.csv"));

    // A built-in whose files are missing names the package.
    setenv("MESHSWEEP_DATASETS_DIR", "/nonexistent", 1);
    const char *mnist = "name: x\ndataset: mnist\nparameters:\n"
                        "  width: {value: 8}\n";
    rc = ms_node_submit(node, mnist, strlen(mnist), false, &id, &existed, NULL,
                        &diag);
    if (rc != MS_ERR_NOTFOUND)
        print_message("mnist: rc %d %s: %s\n", rc, diag.where, diag.reason);
    assert_true(rc == MS_ERR_NOTFOUND || rc == MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "mnist"));

    int n = 0;
    assert_int_equal(
        ms_store_list_sweeps(ms_node_store(node), s_count_sweep, &n), MS_OK);
    assert_int_equal(n, 0);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Case 4: a task whose worker crashes every time is retried retry_cap
//  times, then failed with the reason; the other tasks finish; the node
//  goes on.

static void
test_crashing_task_is_failed_after_retries(void **state)
{
    (void) state;
    const char *spec = ms_td_spec("crashing", 3, 1, 1);
    ms_spec_t *parsed = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_spec_parse(spec, strlen(spec), NULL, &parsed, &diag),
                     MS_OK);
    char crash_id[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(ms_spec_task_id(parsed, 1), crash_id);
    crash_id[16] = 0;
    ms_spec_destroy(&parsed);
    setenv("MESHSWEEP_FAULT_CRASH_TASK", crash_id, 1);

    ms_node_t *node = s_open("node", 2);
    s_events_t ev = {0};
    ms_node_set_event_handler(node, s_on_event, &ev);
    ms_hash_t id = s_submit(node, spec, NULL);
    ms_sweep_progress_t p;
    s_run_sweep(node, &id, &p);
    assert_int_equal(p.done, 2);
    assert_int_equal(p.failed, 1);
    assert_int_equal(ev.n_retries, 2);
    assert_int_equal(ev.n_failed, 1);
    assert_string_equal(ev.last_reason,
                        "worker killed by signal 6 (SIGABRT) on 3 attempts");

    json_t *rows = NULL;
    assert_int_equal(ms_results_rows(ms_node_store(node), &id, &rows, &diag),
                     MS_OK);
    assert_int_equal(json_array_size(rows), 3);
    json_t *failed = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(failed, "status")),
                        "failed");
    assert_string_equal(json_string_value(json_object_get(failed, "error")),
                        "worker killed by signal 6 (SIGABRT) on 3 attempts");
    assert_non_null(strstr(
        json_string_value(json_object_get(failed, "task_id")), crash_id));
    json_decref(rows);
    // The node still works: a new sweep runs.
    unsetenv("MESHSWEEP_FAULT_CRASH_TASK");
    ms_hash_t id2 = s_submit(node, ms_td_spec("after-crash", 1, 1, 1), NULL);
    s_run_sweep(node, &id2, &p);
    assert_int_equal(p.done, 1);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Case 3: a 10-task sweep, the node stopped after 6 results, reopened:
//  only the missing tasks are trained.

static void
test_restart_trains_only_missing_tasks(void **state)
{
    (void) state;
    ms_node_t *node = s_open("node", 2);
    s_events_t ev = {0};
    ev.stop_after_results = 6;
    ev.node = node;
    ms_node_set_event_handler(node, s_on_event, &ev);
    ms_hash_t id = s_submit(node, ms_td_spec("case3", 5, 2, 2), NULL);
    ms_sweep_progress_t p;
    s_run_sweep(node, &id, &p); // returns when stopped
    assert_int_equal(ms_node_poll(node, 0), MS_ERR_INTERRUPTED);
    assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
    int64_t done_before = p.done;
    assert_true(done_before >= 6);
    assert_true(done_before < 10);
    ms_node_destroy(&node); // running tasks go back to pending

    node = s_open("node", 2);
    assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
    assert_int_equal(p.running, 0);
    assert_int_equal(p.done, done_before);
    s_events_t ev2 = {0};
    ms_node_set_event_handler(node, s_on_event, &ev2);
    s_run_sweep(node, &id, &p);
    assert_int_equal(p.done, 10);
    assert_int_equal(ms_node_trainings_started(node), 10 - done_before);
    assert_int_equal(ev2.n_results, 10 - done_before);
    json_t *rows = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_results_rows(ms_node_store(node), &id, &rows, &diag),
                     MS_OK);
    assert_int_equal(json_array_size(rows), 10);
    json_decref(rows);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Run a one-task sweep in a child process that SIGKILLs itself (the
//  whole node) at epoch kill_at; returns the child's wait status.

static int
s_run_killed_child(const char *name, const char *spec, int kill_at)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", s_root, name);
        ms_node_options_t opts;
        ms_node_options_defaults(&opts);
        opts.data_dir = dir;
        opts.n_workers = 1;
        opts.backend = "cpu";
        ms_node_t *node = NULL;
        ms_diag_t diag;
        if (ms_node_open(&node, &opts, &diag) != MS_OK)
            _exit(3);
        s_events_t ev = {0};
        ev.kill_at_epoch = kill_at;
        ms_node_set_event_handler(node, s_on_event, &ev);
        ms_hash_t id;
        bool existed;
        if (ms_node_submit(node, spec, strlen(spec), false, &id, &existed, NULL,
                           &diag) != MS_OK)
            _exit(4);
        for (int i = 0; i < 600; i++)
            ms_node_poll(node, 100);
        _exit(5); // never reached the kill
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

//  --------------------------------------------------------------------------
//  A node SIGKILLed in the middle of a task is reopened: the task is
//  pending again, resumes from its checkpoint (later epochs only), and
//  ends with the same weights as an uninterrupted run.

static void
test_killed_node_resumes_task_bit_exact(void **state)
{
    (void) state;
    const char *spec = ms_td_spec("resume", 1, 1, 6);
    int status = s_run_killed_child("killed", spec, 2);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    ms_node_t *node = s_open("killed", 1);
    s_events_t ev = {0};
    ms_node_set_event_handler(node, s_on_event, &ev);
    ms_hash_t id = s_submit(node, spec, NULL); // same spec: existed
    ms_sweep_progress_t p;
    assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
    assert_int_equal(p.pending, 1); // reset from running at open
    s_run_sweep(node, &id, &p);
    assert_int_equal(p.done, 1);
    assert_true(ev.first_epoch >= 3);
    char resumed[65];
    snprintf(resumed, sizeof resumed, "%s", ev.digest);
    ms_node_destroy(&node);

    node = s_open("whole", 1);
    s_events_t ev2 = {0};
    ms_node_set_event_handler(node, s_on_event, &ev2);
    id = s_submit(node, spec, NULL);
    s_run_sweep(node, &id, &p);
    assert_int_equal(ev2.first_epoch, 1);
    assert_int_equal(ev2.n_epochs, 6);
    assert_int_equal(strlen(resumed), 64);
    assert_string_equal(resumed, ev2.digest);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  A local runner's file dataset (an IDX pair named as Debian names it)
//  runs, and still runs after a restart without a new submission; a file
//  changed after submission fails its tasks with a clear reason.

static void
test_local_file_dataset_runs(void **state)
{
    (void) state;
    char spec[1400];
    snprintf(spec, sizeof spec,
             "name: files\n"
             "dataset: {train: %s/data/fashion-mnist/"
             "train-images-idx3-ubyte.gz, test: %s/data/fashion-mnist/"
             "t10k-images-idx3-ubyte.gz, label: label}\n"
             "parameters:\n"
             "  width: {value: 8}\n  epochs: {value: 1}\n"
             "  seed: {values: [1, 2]}\n",
             s_root, s_root);
    ms_node_t *node = s_open("node", 1);
    ms_hash_t id;
    bool existed;
    ms_diag_t diag;
    int rc = ms_node_submit(node, spec, strlen(spec), true, &id, &existed, NULL,
                            &diag);
    if (rc != MS_OK)
        fail_msg("submit: %s: %s", diag.where, diag.reason);
    s_events_t ev = {0};
    ev.stop_after_results = 1;
    ev.node = node;
    ms_node_set_event_handler(node, s_on_event, &ev);
    ms_sweep_progress_t p;
    s_run_sweep(node, &id, &p);
    ms_node_destroy(&node);

    node = s_open("node", 1); // no new submission: paths were kept
    s_run_sweep(node, &id, &p);
    assert_int_equal(p.done, 2);
    ms_node_destroy(&node);

    // Change the train file after submitting a new sweep: its task fails.
    snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "run_cap: 1\n");
    node = s_open("node", 1);
    rc = ms_node_submit(node, spec, strlen(spec), true, &id, &existed, NULL,
                        &diag);
    assert_int_equal(rc, MS_OK);
    char path[600];
    snprintf(path, sizeof path,
             "%s/data/fashion-mnist/train-images-idx3-ubyte.gz", s_root);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputc(0, f);
    fclose(f);
    s_events_t ev2 = {0};
    ms_node_set_event_handler(node, s_on_event, &ev2);
    s_run_sweep(node, &id, &p);
    assert_int_equal(p.failed, 1);
    assert_non_null(strstr(ev2.last_reason, "changed since"));
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Options are checked.

static void
test_bad_options_refused(void **state)
{
    (void) state;
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    assert_int_equal(opts.retry_cap, 2);
    assert_int_equal(opts.blas_threads, 1);
    assert_int_equal(opts.worker_nice, 10);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/x", s_root);
    opts.data_dir = dir;
    opts.backend = "tpu";
    ms_node_t *node = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_ERR_INVALID);
    assert_null(node);
    assert_string_equal(diag.where, "backend");
    opts.backend = "cpu";
    opts.retry_cap = -1;
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "retry_cap");
    opts.retry_cap = 2;
    opts.api_bind = "nonsense";
    opts.n_workers = 1;
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_ERR_INVALID);
    assert_null(node);
}

//  --------------------------------------------------------------------------
//  One node per data dir: a second node (or a second `meshsweep run`) on
//  the same dir is refused while the first is open, and allowed after.
//  An explicit --backend cuda with no usable CUDA is refused at open.

static void
test_one_node_per_data_dir(void **state)
{
    (void) state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/shared", s_root);
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.data_dir = dir;
    opts.n_workers = 1;
    ms_node_t *a = NULL, *b = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_node_open(&a, &opts, &diag), MS_OK);
    // The lock is per process (POSIX): the second node is another process.
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int rc = ms_node_open(&b, &opts, &diag);
        char expect[64];
        snprintf(expect, sizeof expect, "in use by another node (pid %ld)",
                 (long) getppid());
        _exit(rc == MS_ERR_CONFLICT && !b && strcmp(diag.where, dir) == 0 &&
                      strstr(diag.reason, expect)
                  ? 0
                  : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    ms_node_destroy(&a);
    assert_int_equal(ms_node_open(&b, &opts, &diag), MS_OK);
    ms_node_destroy(&b);

    ms_backend_t *probe = NULL;
    if (ms_backend_open(&probe, "cuda", 1, NULL) == MS_OK) {
        ms_backend_destroy(&probe);
        return; // a GPU is here: nothing to refuse
    }
    opts.backend = "cuda";
    assert_int_equal(ms_node_open(&b, &opts, &diag), MS_ERR_INVALID);
    assert_null(b);
    assert_string_equal(diag.where, "backend");
    assert_non_null(strstr(diag.reason, "cuda: "));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sweep_runs_to_done_with_full_rows,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_submissions_store_nothing,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(
            test_crashing_task_is_failed_after_retries, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_restart_trains_only_missing_tasks,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_killed_node_resumes_task_bit_exact,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_local_file_dataset_runs, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_options_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_one_node_per_data_dir, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
