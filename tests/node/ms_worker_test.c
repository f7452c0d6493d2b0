/*  =========================================================================
    ms_worker_test - the worker pool: real child processes training tiny
    synthetic data, checkpoints, bad data, crashes and respawns

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_config_json.h"
#include "ms_node_testdata.h"
#include "ms_worker.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char s_root[256];
static char s_ckpt[512];

#define S_TASK_A                                                               \
    "aaaa000000000000000000000000000000000000000000000000000000000001"
#define S_TASK_B                                                               \
    "bbbb000000000000000000000000000000000000000000000000000000000002"
#define S_SWEEP                                                                \
    "cccc000000000000000000000000000000000000000000000000000000000003"

//  --------------------------------------------------------------------------
//  Temp dir with data, a checkpoint dir path.

static int
s_setup(void **state)
{
    (void) state;
    if (ms_td_setup(s_root, sizeof s_root) != 0)
        return -1;
    snprintf(s_ckpt, sizeof s_ckpt, "%s/checkpoints", s_root);
    unsetenv("MESHSWEEP_FAULT_CRASH_TASK");
    return 0;
}

//  --------------------------------------------------------------------------
//  Remove the temp dir.

static int
s_teardown(void **state)
{
    (void) state;
    unsetenv("MESHSWEEP_FAULT_CRASH_TASK");
    ms_td_teardown(s_root);
    return 0;
}

//  --------------------------------------------------------------------------
//  A pool of n workers on the temp checkpoint dir.

static ms_worker_pool_t *
s_pool(int n)
{
    ms_worker_options_t opts;
    ms_worker_options_defaults(&opts);
    opts.n_workers = n;
    opts.backend = "cpu";
    opts.checkpoint_dir = s_ckpt;
    ms_worker_pool_t *pool = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_worker_pool_open(&pool, &opts, &diag), MS_OK);
    assert_int_equal(ms_worker_pool_size(pool), n);
    return pool;
}

//  --------------------------------------------------------------------------
//  The config object of a small network (kind: train or noop).

static json_t *
s_config(const char *kind, int epochs)
{
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    assert_non_null(cfg);
    ms_train_config_defaults(cfg);
    ms_task_kind_parse(kind, &cfg->kind);
    ms_train_config_set_uniform(cfg, 1, 16);
    cfg->epochs = epochs;
    cfg->batch_size = 50;
    json_t *obj = ms_config_encode_json(cfg);
    free(cfg);
    assert_non_null(obj);
    return obj;
}

//  --------------------------------------------------------------------------
//  Start a task and return the worker index.

static int
s_start(ms_worker_pool_t *pool, const char *task_id, json_t *config,
        json_t *dataset)
{
    ms_worker_task_t task = {.task_id = task_id,
                             .sweep_id = S_SWEEP,
                             .config = config,
                             .dataset = dataset,
                             .attempt = 1};
    int worker = -1;
    assert_int_equal(ms_worker_pool_start(pool, &task, &worker), MS_OK);
    return worker;
}

//  --------------------------------------------------------------------------
//  Wait (at most 30 s) for the next event.

static void
s_next(ms_worker_pool_t *pool, ms_worker_event_t *ev)
{
    for (int i = 0; i < 300; i++) {
        int rc = ms_worker_pool_poll(pool, 100, -1, ev);
        if (rc == MS_OK)
            return;
        assert_true(rc == MS_ERR_TIMEOUT || rc == MS_ERR_INTERRUPTED);
    }
    fail_msg("no worker event within 30 s");
}

//  --------------------------------------------------------------------------
//  Monotonic microseconds (the clock of the "started" event).

static int64_t
s_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

//  --------------------------------------------------------------------------
//  Wait for the next event that is not "started".

static void
s_next_work(ms_worker_pool_t *pool, ms_worker_event_t *ev)
{
    for (;;) {
        s_next(pool, ev);
        if (ev->kind != MS_WORKER_EVENT_STARTED)
            return;
        ms_worker_event_clear(ev);
    }
}

//  --------------------------------------------------------------------------
//  Run a task to its result (skipping epochs); returns the result body
//  (caller owns); *epochs_seen counts epoch events; *first_epoch gets the
//  first epoch number seen.

static json_t *
s_run_to_result(ms_worker_pool_t *pool, const char *task_id, json_t *config,
                json_t *dataset, int *epochs_seen, int *first_epoch)
{
    int64_t sent_us = s_mono_us();
    s_start(pool, task_id, config, dataset);
    *epochs_seen = 0;
    *first_epoch = 0;
    bool started = false;
    for (;;) {
        ms_worker_event_t ev;
        s_next(pool, &ev);
        assert_string_equal(ev.task_id, task_id);
        if (ev.kind == MS_WORKER_EVENT_STARTED) {
            // once, before any epoch or result, by the same clock as ours
            assert_false(started);
            started = true;
            json_int_t us =
                json_integer_value(json_object_get(ev.body, "mono_us"));
            assert_true(us >= sent_us && us <= s_mono_us());
            ms_worker_event_clear(&ev);
            continue;
        }
        assert_true(started);
        if (ev.kind == MS_WORKER_EVENT_EPOCH) {
            if (!*epochs_seen)
                *first_epoch =
                    (int) json_integer_value(json_object_get(ev.body, "epoch"));
            (*epochs_seen)++;
            ms_worker_event_clear(&ev);
            continue;
        }
        if (ev.kind != MS_WORKER_EVENT_RESULT)
            fail_msg("unexpected event %d: %s", ev.kind, ev.reason);
        json_t *body = json_incref(ev.body);
        ms_worker_event_clear(&ev);
        return body;
    }
}

//  --------------------------------------------------------------------------
//  A task trains in a child process: epochs reported, a result with the
//  right parameter count and a digest, a checkpoint left for the node,
//  peak RSS within the bound.

static void
test_task_trains_in_child_process(void **state)
{
    (void) state;
    ms_worker_pool_t *pool = s_pool(1);
    assert_int_not_equal(ms_worker_pool_pid(pool, 0), getpid());
    assert_true(ms_worker_pool_pid(pool, 0) > 0);
    json_t *config = s_config("train", 3);
    json_t *dataset = json_pack("{s:s}", "name", "fashion-mnist");
    int n_epochs = 0, first = 0;
    assert_int_equal(ms_worker_pool_idle(pool), 1);
    json_t *r =
        s_run_to_result(pool, S_TASK_A, config, dataset, &n_epochs, &first);
    // Workers run at nice +10 relative to the node (capped at 19).
    int mine = getpriority(PRIO_PROCESS, 0);
    int theirs = getpriority(PRIO_PROCESS, (id_t) ms_worker_pool_pid(pool, 0));
    assert_int_equal(theirs, mine + 10 > 19 ? 19 : mine + 10);
    assert_int_equal(n_epochs, 3);
    assert_int_equal(first, 1);
    assert_int_equal(ms_worker_pool_idle(pool), 1);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "ok");
    assert_int_equal(json_integer_value(json_object_get(r, "epochs")), 3);
    int64_t params = 784 * 16 + 16 + 16 * 10 + 10;
    assert_int_equal(json_integer_value(json_object_get(r, "params")), params);
    const char *digest =
        json_string_value(json_object_get(r, "weights_digest"));
    assert_non_null(digest);
    assert_int_equal(strlen(digest), 64);
    assert_int_equal(json_array_size(json_object_get(r, "curve")), 3);
    double acc = json_number_value(json_object_get(r, "test_accuracy"));
    assert_true(acc > 0.5); // the synthetic classes are easy
    assert_true(json_is_object(json_object_get(r, "platform")));
    // Memory bound of the issue: 2 * (data as float32 + 4 x params x 4
    // bytes) + 64 MiB.
    double data_bytes = (600.0 + 100.0) * 784 * 4;
    double bound =
        2 * (data_bytes + 4.0 * (double) params * 4) + 64.0 * 1024 * 1024;
    json_int_t rss = json_integer_value(json_object_get(r, "peak_rss_bytes"));
    assert_true(rss > 0);
    assert_true((double) rss <= bound);
    char path[700];
    ms_worker_checkpoint_path(s_ckpt, S_TASK_A, path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    // The same task again (its checkpoint is at the end): same digest, no
    // epoch trained.
    json_t *r2 =
        s_run_to_result(pool, S_TASK_A, config, dataset, &n_epochs, &first);
    assert_int_equal(n_epochs, 0);
    assert_string_equal(
        json_string_value(json_object_get(r2, "weights_digest")), digest);
    json_decref(r2);
    json_decref(r);
    json_decref(config);
    json_decref(dataset);
    ms_worker_pool_destroy(&pool);
    assert_null(pool);
}

//  --------------------------------------------------------------------------
//  A noop task finishes at once without loading any data.

static void
test_noop_needs_no_data(void **state)
{
    (void) state;
    ms_worker_pool_t *pool = s_pool(1);
    json_t *config = s_config("noop", 10);
    json_t *dataset = json_pack("{s:s, s:s}", "train", "/nonexistent/a.csv",
                                "test", "/nonexistent/b.csv");
    int n_epochs = 0, first = 0;
    json_t *r =
        s_run_to_result(pool, S_TASK_B, config, dataset, &n_epochs, &first);
    assert_int_equal(n_epochs, 0);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "ok");
    assert_int_equal(json_integer_value(json_object_get(r, "epochs")), 0);
    json_decref(r);
    json_decref(config);
    json_decref(dataset);
    ms_worker_pool_destroy(&pool);
}

//  --------------------------------------------------------------------------
//  Bad data fails the task with the loader's diag; the worker lives on.

static void
test_bad_data_fails_task_not_worker(void **state)
{
    (void) state;
    ms_worker_pool_t *pool = s_pool(1);
    int pid = ms_worker_pool_pid(pool, 0);
    json_t *config = s_config("train", 1);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/ragged.csv", s_root);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("a,b,label\n1,2,0\n3,4\n", f);
    fclose(f);
    json_t *dataset = json_pack("{s:s, s:s, s:s}", "train", bad, "test", bad,
                                "label", "label");
    s_start(pool, S_TASK_A, config, dataset);
    ms_worker_event_t ev;
    s_next(pool, &ev);
    assert_int_equal(ev.kind, MS_WORKER_EVENT_FAILED);
    assert_non_null(strstr(ev.reason, "ragged.csv"));
    ms_worker_event_clear(&ev);
    assert_int_equal(ms_worker_pool_pid(pool, 0), pid);
    assert_int_equal(ms_worker_pool_crashes(pool), 0);

    // Missing built-in files: a clear reason too.
    json_t *missing = json_pack("{s:s}", "name", "no-such-dataset");
    s_start(pool, S_TASK_B, config, missing);
    s_next(pool, &ev);
    assert_int_equal(ev.kind, MS_WORKER_EVENT_FAILED);
    assert_non_null(strstr(ev.reason, "no-such-dataset"));
    ms_worker_event_clear(&ev);
    assert_int_equal(ms_worker_pool_pid(pool, 0), pid);
    json_decref(missing);
    json_decref(dataset);
    json_decref(config);
    ms_worker_pool_destroy(&pool);
}

//  --------------------------------------------------------------------------
//  The fault hook aborts the worker: the death is reported with the
//  signal, the worker is respawned and runs the next task.

static void
test_crash_is_reported_and_worker_respawned(void **state)
{
    (void) state;
    setenv("MESHSWEEP_FAULT_CRASH_TASK", "aaaa00", 1);
    ms_worker_pool_t *pool = s_pool(1);
    int pid = ms_worker_pool_pid(pool, 0);
    json_t *config = s_config("train", 1);
    json_t *dataset = json_pack("{s:s}", "name", "fashion-mnist");
    s_start(pool, S_TASK_A, config, dataset);
    ms_worker_event_t ev;
    s_next(pool, &ev);
    assert_int_equal(ev.kind, MS_WORKER_EVENT_DIED);
    assert_string_equal(ev.task_id, S_TASK_A);
    assert_int_equal(ev.term_signal, SIGABRT);
    assert_string_equal(ev.reason, "worker killed by signal 6 (SIGABRT)");
    ms_worker_event_clear(&ev);
    assert_int_equal(ms_worker_pool_crashes(pool), 1);
    assert_true(ms_worker_pool_pid(pool, 0) > 0);
    assert_int_not_equal(ms_worker_pool_pid(pool, 0), pid);
    assert_int_equal(ms_worker_pool_idle(pool), 1);

    int n_epochs = 0, first = 0;
    json_t *r =
        s_run_to_result(pool, S_TASK_B, config, dataset, &n_epochs, &first);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "ok");
    json_decref(r);
    json_decref(config);
    json_decref(dataset);
    ms_worker_pool_destroy(&pool);
}

//  --------------------------------------------------------------------------
//  A worker killed after epoch 2 leaves a checkpoint; the rerun resumes
//  from it and ends with the same weights as an uninterrupted run.

static void
test_killed_task_resumes_bit_exact(void **state)
{
    (void) state;
    ms_worker_pool_t *pool = s_pool(1);
    json_t *config = s_config("train", 5);
    json_t *dataset = json_pack("{s:s}", "name", "fashion-mnist");
    int n_epochs = 0, first = 0;
    json_t *whole =
        s_run_to_result(pool, S_TASK_B, config, dataset, &n_epochs, &first);
    assert_int_equal(n_epochs, 5);

    s_start(pool, S_TASK_A, config, dataset);
    for (;;) {
        ms_worker_event_t ev;
        s_next_work(pool, &ev);
        assert_int_equal(ev.kind, MS_WORKER_EVENT_EPOCH);
        json_int_t epoch =
            json_integer_value(json_object_get(ev.body, "epoch"));
        ms_worker_event_clear(&ev);
        if (epoch == 2) {
            kill(ms_worker_pool_pid(pool, 0), SIGKILL);
            break;
        }
    }
    for (;;) {
        ms_worker_event_t ev;
        s_next(pool, &ev);
        ms_worker_event_kind_t kind = ev.kind;
        int sig = ev.term_signal;
        ms_worker_event_clear(&ev);
        if (kind == MS_WORKER_EVENT_DIED) {
            assert_int_equal(sig, SIGKILL);
            break;
        }
        assert_int_equal(kind, MS_WORKER_EVENT_EPOCH); // raced the kill
    }
    json_t *resumed =
        s_run_to_result(pool, S_TASK_A, config, dataset, &n_epochs, &first);
    assert_true(first >= 3); // epochs 1 and 2 were not trained again
    assert_int_equal(first + n_epochs - 1, 5);
    assert_string_equal(
        json_string_value(json_object_get(resumed, "weights_digest")),
        json_string_value(json_object_get(whole, "weights_digest")));
    assert_true(json_equal(json_object_get(resumed, "test_loss"),
                           json_object_get(whole, "test_loss")));
    json_decref(resumed);
    json_decref(whole);
    json_decref(config);
    json_decref(dataset);
    ms_worker_pool_destroy(&pool);
}

//  --------------------------------------------------------------------------
//  Several workers run tasks at once; destroy stops a busy pool.

static void
test_pool_runs_in_parallel_and_stops_busy(void **state)
{
    (void) state;
    ms_worker_pool_t *pool = s_pool(2);
    json_t *config = s_config("train", 50);
    json_t *dataset = json_pack("{s:s}", "name", "fashion-mnist");
    s_start(pool, S_TASK_A, config, dataset);
    s_start(pool, S_TASK_B, config, dataset);
    assert_int_equal(ms_worker_pool_idle(pool), 0);
    assert_string_equal(ms_worker_pool_busy_task(pool, 0), S_TASK_A);
    assert_string_equal(ms_worker_pool_busy_task(pool, 1), S_TASK_B);
    ms_worker_task_t task = {.task_id = S_TASK_A,
                             .sweep_id = S_SWEEP,
                             .config = config,
                             .dataset = dataset};
    assert_int_equal(ms_worker_pool_start(pool, &task, NULL), MS_ERR_CONFLICT);
    ms_worker_event_t ev;
    s_next_work(pool, &ev); // an epoch of one of them
    assert_int_equal(ev.kind, MS_WORKER_EVENT_EPOCH);
    ms_worker_event_clear(&ev);
    int pid0 = ms_worker_pool_pid(pool, 0), pid1 = ms_worker_pool_pid(pool, 1);
    ms_worker_pool_destroy(&pool); // SIGTERM to busy workers, reaped
    assert_int_equal(kill(pid0, 0), -1);
    assert_int_equal(kill(pid1, 0), -1);
    json_decref(config);
    json_decref(dataset);
}

//  --------------------------------------------------------------------------
//  The scheduler state letter of a process ('T' when stopped).

static char
s_proc_state(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

//  --------------------------------------------------------------------------
//  idle_only: pause stops the busy worker (state T, no events), resume
//  continues it where it was; a pool destroyed while paused still stops.

static void
test_pause_stops_and_resume_continues(void **state)
{
    (void) state;
    ms_worker_pool_t *pool = s_pool(2);
    json_t *config = s_config("train", 200);
    json_t *dataset = json_pack("{s:s}", "name", "fashion-mnist");
    s_start(pool, S_TASK_A, config, dataset);
    ms_worker_event_t ev;
    s_next_work(pool, &ev); // it trains
    assert_int_equal(ev.kind, MS_WORKER_EVENT_EPOCH);
    ms_worker_event_clear(&ev);
    int busy = ms_worker_pool_pid(pool, 0), idle = ms_worker_pool_pid(pool, 1);
    assert_int_equal(ms_worker_pool_pause(pool), 1); // the busy one only
    assert_true(ms_worker_pool_stopped(pool, 0));
    assert_false(ms_worker_pool_stopped(pool, 1));
    assert_int_equal(ms_worker_pool_pause(pool), 0); // already stopped
    char st = 0;
    for (int i = 0; i < 100 && st != 'T'; i++) {
        st = s_proc_state(busy);
        if (st != 'T')
            nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    assert_int_equal(st, 'T');
    assert_int_not_equal(s_proc_state(idle), 'T');
    // Drain what it sent before it stopped; then nothing comes.
    while (ms_worker_pool_poll(pool, 300, -1, &ev) == MS_OK)
        ms_worker_event_clear(&ev);
    assert_int_equal(ms_worker_pool_poll(pool, 1000, -1, &ev), MS_ERR_TIMEOUT);
    assert_int_equal(ms_worker_pool_resume(pool, -1), 1);
    assert_false(ms_worker_pool_stopped(pool, 0));
    s_next_work(pool, &ev); // it goes on
    assert_int_equal(ev.kind, MS_WORKER_EVENT_EPOCH);
    assert_string_equal(ev.task_id, S_TASK_A);
    ms_worker_event_clear(&ev);
    assert_int_equal(ms_worker_pool_pid(pool, 0), busy);
    assert_int_equal(ms_worker_pool_pause(pool), 1);
    ms_worker_pool_destroy(&pool); // SIGTERM + SIGCONT: reaped, no hang
    assert_int_equal(kill(busy, 0), -1);
    json_decref(config);
    json_decref(dataset);
}

//  --------------------------------------------------------------------------
//  worker_memory_mb: a network beyond the cap fails as a resource failure
//  naming the cap; the worker survives and runs the next task.

static void
test_memory_cap_fails_task_not_worker(void **state)
{
    (void) state;
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer maps its shadow memory and allocator regions as
    // private writable mappings, which RLIMIT_DATA counts (Linux >= 4.7):
    // under a 1 GiB cap the instrumented worker cannot even start.
    skip();
#endif
    ms_worker_options_t opts;
    ms_worker_options_defaults(&opts);
    opts.n_workers = 1;
    opts.backend = "cpu";
    opts.checkpoint_dir = s_ckpt;
    opts.memory_mb = 1024;
    ms_worker_pool_t *pool = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_worker_pool_open(&pool, &opts, &diag), MS_OK);
    int pid = ms_worker_pool_pid(pool, 0);
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    assert_non_null(cfg);
    ms_train_config_defaults(cfg);
    ms_train_config_set_uniform(cfg, 8,
                                6144); // 302 M parameters: 1.2 GB a block
    cfg->epochs = 1;
    cfg->batch_size = 50;
    json_t *big = ms_config_encode_json(cfg);
    free(cfg);
    assert_non_null(big);
    json_t *dataset = json_pack("{s:s}", "name", "fashion-mnist");
    s_start(pool, S_TASK_A, big, dataset);
    ms_worker_event_t ev;
    s_next_work(pool, &ev);
    assert_int_equal(ev.kind, MS_WORKER_EVENT_FAILED);
    assert_non_null(strstr(ev.reason, "worker_memory_mb (1024 MiB)"));
    ms_worker_event_clear(&ev);
    assert_int_equal(ms_worker_pool_pid(pool, 0), pid);
    assert_int_equal(ms_worker_pool_crashes(pool), 0);
    // A small task fits under the cap.
    json_t *small = s_config("train", 1);
    int epochs = 0, first = 0;
    json_t *body =
        s_run_to_result(pool, S_TASK_B, small, dataset, &epochs, &first);
    assert_string_equal(json_string_value(json_object_get(body, "status")),
                        "ok");
    json_decref(body);
    json_decref(small);
    json_decref(big);
    json_decref(dataset);
    ms_worker_pool_destroy(&pool);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_task_trains_in_child_process,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_noop_needs_no_data, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_data_fails_task_not_worker,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(
            test_crash_is_reported_and_worker_respawned, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_killed_task_resumes_bit_exact,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(
            test_pool_runs_in_parallel_and_stops_busy, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_pause_stops_and_resume_continues,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_memory_cap_fails_task_not_worker,
                                        s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
