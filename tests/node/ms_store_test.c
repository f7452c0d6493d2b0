/*  =========================================================================
    ms_store_test - unit tests of the node's LMDB store

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Usage examples of every public ms_store function, plus the field cases
    of shared/cases/README.md that belong to the store: 5 (16 writers and
    concurrent readers, 10,000 results, readers never block the writer),
    6 (a) (readers killed with SIGKILL until the reader table is full) and
    6 (b) (1 MiB map, 5 MiB of rows: the map grows, nothing lost), and the
    SIGKILL durability rule of DESIGN.md "Store (LMDB)". Sweeps and results
    are written as the node writes them: a SWEEP record of a real spec
    (its ids the spec's) and RESULT records of a node (ms_store_fixture.h).
*/
#include "ms_store.h"
#include "ms_store_payload.h"

#include "ms_spec.h"
#include "ms_test_fs.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_store_fixture.h"

#define ID MS_STORE_ID_BYTES

// The sweeps of the current test, by tag: real specs (ms_sf_sweep_seeds,
// named "sweep-TAG"), so the ids are the spec's; freed at teardown.
static ms_sf_sweep_t s_sweeps[256];
static const uint8_t s_origin[ID] = {0xEE, 0xEE, 0xEE, 0xEE}; // submitter

//  --------------------------------------------------------------------------
//  Per-test fixture: a fresh temporary directory.

typedef struct {
    char root[256]; // the temporary dir
    char dir[300];  // root/data/store, not yet created
} fixture_t;

static int
s_setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    snprintf(fx->root, sizeof fx->root, "/tmp/ms_store_test.XXXXXX");
    if (!mkdtemp(fx->root))
        return -1;
    snprintf(fx->dir, sizeof fx->dir, "%s/data/store", fx->root);
    *state = fx;
    return 0;
}

static int
s_teardown(void **state)
{
    for (size_t i = 0; i < 256; i++)
        ms_sf_sweep_free(&s_sweeps[i]);
    fixture_t *fx = *state;
    ms_tf_rm_rf(fx->root);
    free(fx);
    return 0;
}

//  --------------------------------------------------------------------------
//  A deterministic 32-byte id from a tag and a number.

static void
s_id(uint8_t id[ID], uint8_t tag, uint32_t n)
{
    memset(id, 0, ID);
    id[0] = tag;
    id[28] = (uint8_t) (n >> 24);
    id[29] = (uint8_t) (n >> 16);
    id[30] = (uint8_t) (n >> 8);
    id[31] = (uint8_t) n;
}

//  --------------------------------------------------------------------------
//  Open a store with a given map size and reader count.

static ms_store_t *
s_open(const char *dir, uint64_t map_size, unsigned max_readers)
{
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    if (map_size)
        opts.map_size_bytes = map_size;
    if (max_readers)
        opts.max_readers = max_readers;
    ms_store_t *store = NULL;
    ms_diag_t diag;
    int rc = ms_store_open(&store, dir, &opts, &diag);
    if (rc != MS_OK)
        fprintf(stderr, "open %s: %s: %s\n", dir, diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    assert_non_null(store);
    return store;
}

//  --------------------------------------------------------------------------
//  The sweep TAG of N tasks (parsed once; the same tag and count always
//  give the same ids, in this process or a forked one).

static const ms_sf_sweep_t *
s_sweep_of(uint8_t tag, size_t n)
{
    ms_sf_sweep_t *sw = &s_sweeps[tag];
    if (sw->spec && sw->n_tasks != n)
        ms_sf_sweep_free(sw);
    if (!sw->spec) {
        char name[32];
        snprintf(name, sizeof name, "sweep-%d", tag);
        ms_sf_sweep_seeds(sw, name, 64, (uint32_t) n);
    }
    return sw;
}

//  --------------------------------------------------------------------------
//  Sweep TAG's id, and the id of its task I (the sweep must be made).

static void
s_sweep_id(uint8_t id[ID], uint8_t tag)
{
    assert_non_null(s_sweeps[tag].spec);
    memcpy(id, s_sweeps[tag].sweep_id, ID);
}

static void
s_task(uint8_t id[ID], uint8_t tag, uint32_t i)
{
    assert_non_null(s_sweeps[tag].spec);
    memcpy(id, ms_sf_task_id(&s_sweeps[tag], i), ID);
}

//  --------------------------------------------------------------------------
//  Store the sweep TAG of N tasks as a sweep record of s_origin. Returns
//  the rc of the append.

static int
s_put_sweep(ms_store_t *store, uint8_t tag, size_t n, int32_t priority)
{
    return ms_sf_append_sweep(store, s_origin, s_sweep_of(tag, n), priority);
}

//  --------------------------------------------------------------------------
//  Store a result row of NODE for a task as a result record of NODE.

static int
s_put_result(ms_store_t *store, const uint8_t task_id[ID],
             const uint8_t node[ID], const char *row, size_t len)
{
    return ms_sf_append_result(store, node, task_id, row, len);
}

//  --------------------------------------------------------------------------
//  A result row for task index i of size about `pad` bytes.

static char *
s_row(uint32_t index, const uint8_t node[ID], size_t pad)
{
    char *row = malloc(pad + 256);
    int n = snprintf(row, 256,
                     "{\"task_index\":%u,\"node\":%u,\"status\":\"ok\","
                     "\"test_accuracy\":0.8%u,\"curve\":\"",
                     index, node[31], index % 10);
    memset(row + n, 'x', pad);
    strcpy(row + n + pad, "\"}");
    return row;
}

//  --------------------------------------------------------------------------
//  Row callback: count rows, check they parse, record task_index order.

typedef struct {
    size_t n;        // rows seen
    size_t n_bad;    // rows that do not parse as JSON objects
    long last_index; // last task_index seen
    bool ordered;    // task_index never went down
} rows_t;

static int
s_count_rows(void *arg, const char *json, size_t n)
{
    rows_t *rows = arg;
    json_error_t err;
    json_t *obj = json_loadb(json, n, 0, &err);
    if (!json_is_object(obj) || json[n] != 0) {
        rows->n_bad++;
    } else {
        long index =
            (long) json_integer_value(json_object_get(obj, "task_index"));
        if (rows->n > 0 && index < rows->last_index)
            rows->ordered = false;
        rows->last_index = index;
    }
    json_decref(obj);
    rows->n++;
    return 0;
}

static rows_t
s_rows_of_sweep(ms_store_t *store, uint8_t tag)
{
    uint8_t sweep_id[ID];
    s_sweep_id(sweep_id, tag);
    rows_t rows = {.ordered = true};
    uint32_t next = 0;
    assert_int_equal(ms_store_results_by_sweep(store, sweep_id, 0, 0,
                                               s_count_rows, &rows, &next),
                     MS_OK);
    assert_int_equal(next, MS_STORE_INDEX_END);
    return rows;
}

//  --------------------------------------------------------------------------
//  Open creates the dir 0700 with parents, and an incarnation that
//  survives a reopen and differs between stores.

static void
test_open_creates_dir_and_incarnation(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    struct stat st;
    assert_int_equal(stat(fx->dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    uint64_t inc = ms_store_incarnation(store);
    assert_true(inc != 0);
    ms_store_destroy(&store);
    assert_null(store);
    ms_store_destroy(&store); // NULL-safe

    store = s_open(fx->dir, 1 << 20, 0);
    assert_true(ms_store_incarnation(store) == inc);
    ms_store_destroy(&store);

    char other[400];
    snprintf(other, sizeof other, "%s/other", fx->root);
    store = s_open(other, 1 << 20, 0);
    assert_true(ms_store_incarnation(store) != inc);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  A data dir on NFS (injected f_type) is refused, by option and by env.

static void
test_open_refuses_nfs(void **state)
{
    fixture_t *fx = *state;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.fs_type = 0x6969;
    ms_store_t *store = (ms_store_t *) &opts; // must be reset to NULL
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_store_open(&store, fx->dir, &opts, &diag),
                     MS_ERR_STORE_NFS);
    assert_null(store);
    assert_string_equal(diag.where, fx->dir);
    assert_non_null(strstr(diag.reason, "network file system"));

    setenv("MESHSWEEP_TEST_FSTYPE", "0xFF534D42", 1); // CIFS
    assert_int_equal(ms_store_open(&store, fx->dir, NULL, &diag),
                     MS_ERR_STORE_NFS);
    setenv("MESHSWEEP_TEST_FSTYPE", "0x6969", 1);
    assert_int_equal(ms_store_open(&store, fx->dir, NULL, &diag),
                     MS_ERR_STORE_NFS);
    unsetenv("MESHSWEEP_TEST_FSTYPE");
    assert_null(store);

    opts.fs_type = 0xEF53; // ext4
    opts.map_size_bytes = 1 << 20;
    assert_int_equal(ms_store_open(&store, fx->dir, &opts, &diag), MS_OK);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Bad dirs: a file where the dir should be; read-only with no store.

static void
test_open_bad_dir(void **state)
{
    fixture_t *fx = *state;
    char file[400];
    snprintf(file, sizeof file, "%s/plain", fx->root);
    FILE *f = fopen(file, "w");
    fputs("x", f);
    fclose(f);
    ms_store_t *store = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_store_open(&store, file, NULL, &diag), MS_ERR_IO);
    assert_null(store);
    assert_string_equal(diag.where, file);

    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.read_only = true;
    assert_int_equal(ms_store_open(&store, fx->dir, &opts, &diag),
                     MS_ERR_NOTFOUND);
    assert_null(store);
}

//  --------------------------------------------------------------------------
//  A sweep record derives the sweep and its tasks (the spec's canonical
//  text and configs, the spec's ids); the same sweep record again changes
//  nothing; a sweep record whose id is not its spec's, or whose spec is
//  not JSON, is refused and leaves nothing behind. (Duplicate task ids,
//  or a task id of another sweep, cannot come in a record: the store
//  rebuilds the task list from the spec, and a task id hashes its
//  sweep's id.)

static void
test_put_get_sweep(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    assert_int_equal(s_put_sweep(store, 10, 5, 0), MS_OK);
    const ms_sf_sweep_t *sw = s_sweep_of(10, 5);

    uint8_t sweep_id[ID], task_id[ID];
    s_sweep_id(sweep_id, 10);
    ms_store_sweep_t *sweep = NULL;
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_string_equal(sweep->spec_json, ms_spec_canonical(sw->spec, NULL));
    assert_int_equal(sweep->spec_len, strlen(sweep->spec_json));
    assert_int_equal(sweep->state, MS_SWEEP_ACTIVE);
    assert_int_equal(sweep->n_tasks, 5);
    assert_int_equal(sweep->counts[MS_TASK_PENDING], 5);
    assert_int_equal(sweep->counts[MS_TASK_DONE], 0);
    assert_memory_equal(sweep->sweep_id, sweep_id, ID);
    assert_true(sweep->created_at_ms > 1600000000000LL);
    int64_t created = sweep->created_at_ms;
    ms_store_sweep_destroy(&sweep);
    assert_null(sweep);

    for (uint32_t i = 0; i < 5; i++) {
        ms_store_task_t *task = NULL;
        s_task(task_id, 10, i);
        assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
        assert_int_equal(task->index, i);
        assert_int_equal(task->state, MS_TASK_PENDING);
        assert_int_equal(task->attempts, 0);
        assert_memory_equal(task->sweep_id, sweep_id, ID);
        assert_memory_equal(task->task_id, task_id, ID);
        assert_string_equal(task->config_json, ms_spec_task_json(sw->spec, i));
        assert_string_equal(task->error, "");
        ms_store_task_destroy(&task);
    }

    // Idempotent: the same sweep record again (another seq) changes
    // nothing.
    assert_int_equal(s_put_sweep(store, 10, 5, 0), MS_OK);
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->n_tasks, 5);
    assert_int_equal(sweep->counts[MS_TASK_PENDING], 5);
    assert_int_equal(sweep->created_at_ms, created);
    ms_store_sweep_destroy(&sweep);

    // Refused: a sweep record naming another sweep's id (the id is the
    // hash of the spec), and a spec that is not JSON.
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, s_sweep_of(20, 2)->sweep_id, ID);
    p.u.sweep.spec_json = ms_spec_canonical(sw->spec, &p.u.sweep.spec_len);
    assert_int_equal(ms_sf_append(store, s_origin, &p), MS_ERR_INVALID);
    p.u.sweep.spec_json = "{nope";
    p.u.sweep.spec_len = 5;
    assert_int_equal(ms_sf_append(store, s_origin, &p), MS_ERR_INVALID);
    s_sweep_id(sweep_id, 20);
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep),
                     MS_ERR_NOTFOUND);
    s_task(task_id, 20, 0);
    assert_int_equal(ms_store_get_task(store, task_id, &(ms_store_task_t *){0}),
                     MS_ERR_NOTFOUND);
    ms_store_stats_t st;
    ms_store_stats(store, &st);
    assert_int_equal(st.n_records, 2); // the two good sweep records only
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Task callback: check index order.

typedef struct {
    uint32_t n;              // tasks seen
    bool ordered;            // indexes 0, 1, 2, ... with their configs
    const ms_sf_sweep_t *sw; // the sweep listed
} tasks_seen_t;

static int
s_task_seen(void *arg, const ms_store_task_t *task)
{
    tasks_seen_t *seen = arg;
    if (task->index != seen->n ||
        strcmp(ms_spec_task_json(seen->sw->spec, task->index),
               task->config_json) != 0)
        seen->ordered = false;
    seen->n++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Sweep callback: count sweeps; stop at a given count.

typedef struct {
    int n;            // sweeps seen
    int stop_at;      // return 7 when n reaches it (0: never)
    uint64_t n_tasks; // total tasks seen
} sweeps_seen_t;

static int
s_sweep_seen(void *arg, const ms_store_sweep_t *sweep)
{
    sweeps_seen_t *seen = arg;
    seen->n++;
    seen->n_tasks += sweep->n_tasks;
    assert_int_equal(strlen(sweep->spec_json), sweep->spec_len);
    return seen->n == seen->stop_at ? 7 : 0;
}

//  --------------------------------------------------------------------------
//  List sweeps and tasks by callback; a nonzero callback return stops.

static void
test_list_sweeps_and_tasks(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    assert_int_equal(s_put_sweep(store, 10, 3, 0), MS_OK);
    assert_int_equal(s_put_sweep(store, 20, 300, 0), MS_OK);
    assert_int_equal(s_put_sweep(store, 30, 1, 0), MS_OK);
    sweeps_seen_t seen = {0};
    assert_int_equal(ms_store_list_sweeps(store, s_sweep_seen, &seen), MS_OK);
    assert_int_equal(seen.n, 3);
    assert_int_equal(seen.n_tasks, 304);
    sweeps_seen_t stop = {.stop_at = 2};
    assert_int_equal(ms_store_list_sweeps(store, s_sweep_seen, &stop), 7);
    assert_int_equal(stop.n, 2);

    uint8_t sweep_id[ID];
    s_sweep_id(sweep_id, 20);
    tasks_seen_t tasks = {.ordered = true, .sw = s_sweep_of(20, 300)};
    assert_int_equal(
        ms_store_tasks_by_sweep(store, sweep_id, s_task_seen, &tasks), MS_OK);
    assert_int_equal(tasks.n, 300);
    assert_true(tasks.ordered);
    s_id(sweep_id, 99, 0);
    assert_int_equal(
        ms_store_tasks_by_sweep(store, sweep_id, s_task_seen, &tasks),
        MS_ERR_NOTFOUND);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Task state changes (the node's local display of its runs): running
//  here, back to pending with the reason; failed with reason; done is
//  refused here; counts follow.

static void
test_task_states(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    uint8_t node[ID], sweep_id[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    assert_int_equal(s_put_sweep(store, 10, 2, 0), MS_OK);
    s_sweep_id(sweep_id, 10);
    s_task(task_id, 10, 0);
    ms_store_task_t *task = NULL;
    assert_int_equal(
        ms_store_set_task_state(store, task_id, MS_TASK_RUNNING, node, NULL),
        MS_OK);
    assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_RUNNING);
    assert_memory_equal(task->holder, node, ID);
    ms_store_task_destroy(&task);

    assert_int_equal(ms_store_set_task_state(store, task_id, MS_TASK_PENDING,
                                             NULL, "worker crashed (SIGSEGV)"),
                     MS_OK);
    assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_PENDING);
    assert_int_equal(task->attempts, 0); // no store claims since records
    assert_string_equal(task->error, "worker crashed (SIGSEGV)");
    assert_memory_equal(task->holder, (uint8_t[ID]){0}, ID);
    ms_store_task_destroy(&task);

    assert_int_equal(
        ms_store_set_task_state(store, task_id, MS_TASK_RUNNING, node, NULL),
        MS_OK);
    assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
    assert_string_equal(task->error, "worker crashed (SIGSEGV)"); // kept
    ms_store_task_destroy(&task);

    assert_int_equal(ms_store_set_task_state(store, task_id, MS_TASK_FAILED,
                                             NULL, "dataset: truncated"),
                     MS_OK);
    assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_FAILED);
    assert_string_equal(task->error, "dataset: truncated");
    ms_store_task_destroy(&task);

    ms_store_sweep_t *sweep;
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->counts[MS_TASK_FAILED], 1);
    assert_int_equal(sweep->counts[MS_TASK_PENDING], 1);
    assert_int_equal(sweep->counts[MS_TASK_RUNNING], 0);
    assert_int_equal(sweep->state, MS_SWEEP_ACTIVE);
    ms_store_sweep_destroy(&sweep);

    // Claimed by an explicit node; running keeps the holder.
    uint8_t other[ID];
    s_id(other, 0xAA, 2);
    assert_int_equal(
        ms_store_set_task_state(store, task_id, MS_TASK_CLAIMED, other, NULL),
        MS_OK);
    assert_int_equal(
        ms_store_set_task_state(store, task_id, MS_TASK_RUNNING, NULL, NULL),
        MS_OK);
    assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_RUNNING);
    assert_memory_equal(task->holder, other, ID);
    assert_string_equal(task->error, "dataset: truncated"); // kept
    ms_store_task_destroy(&task);

    assert_int_equal(
        ms_store_set_task_state(store, task_id, MS_TASK_DONE, NULL, NULL),
        MS_ERR_INVALID);
    assert_int_equal(ms_store_set_task_state(store, task_id,
                                             (ms_task_state_t) 42, NULL, NULL),
                     MS_ERR_INVALID);
    uint8_t unknown[ID];
    s_id(unknown, 0x55, 5);
    assert_int_equal(
        ms_store_set_task_state(store, unknown, MS_TASK_FAILED, NULL, "x"),
        MS_ERR_NOTFOUND);
    char *row = s_row(0, node, 10);
    assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                     MS_OK);
    free(row);
    assert_int_equal(
        ms_store_set_task_state(store, task_id, MS_TASK_PENDING, NULL, NULL),
        MS_ERR_CONFLICT);
    assert_string_equal(ms_task_state_name(MS_TASK_CANCELLED), "cancelled");
    assert_string_equal(ms_task_state_name((ms_task_state_t) 99), "unknown");
    assert_string_equal(ms_sweep_state_name(MS_SWEEP_PAUSED), "paused");
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Row callback: count rows, and whether the first is the row wanted.

typedef struct {
    const char *want; // the row expected first
    size_t n;         // rows seen
    bool same;        // the first row seen is WANT
} first_row_t;

static int
s_first_row(void *arg, const char *json, size_t n)
{
    first_row_t *first = arg;
    if (first->n++ == 0)
        first->same =
            n == strlen(first->want) && memcmp(json, first->want, n) == 0;
    return 0;
}

//  --------------------------------------------------------------------------
//  A result record makes its task done in the commit that applies it; a
//  row that is not a JSON object is refused; rows are keyed (task, node),
//  the node's first result counts; the last task done makes the sweep
//  done.

static void
test_result_marks_done(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    uint8_t node[ID], node2[ID], sweep_id[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    s_id(node2, 0xAA, 2);
    assert_int_equal(s_put_sweep(store, 10, 2, 0), MS_OK);
    s_sweep_id(sweep_id, 10);
    s_task(task_id, 10, 0);
    ms_store_task_t *task = NULL;
    assert_int_equal(
        ms_store_set_task_state(store, task_id, MS_TASK_RUNNING, node, NULL),
        MS_OK);

    assert_int_equal(s_put_result(store, task_id, node, "[1,2]", 5),
                     MS_ERR_INVALID);
    assert_int_equal(s_put_result(store, task_id, node, "{\"a\":", 5),
                     MS_ERR_INVALID);
    assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_RUNNING); // unchanged
    ms_store_task_destroy(&task);

    char *row = s_row(0, node, 100);
    assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                     MS_OK);
    assert_int_equal(ms_store_get_task(store, task_id, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_DONE);
    assert_memory_equal(task->holder, (uint8_t[ID]){0}, ID);
    ms_store_task_destroy(&task);
    // The same row again, and another row by the same node, are records
    // of their own: stored, but the node's first result is the one that
    // counts (its row stays).
    assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                     MS_OK);
    char *row_b = s_row(0, node, 50);
    assert_int_equal(s_put_result(store, task_id, node, row_b, strlen(row_b)),
                     MS_OK);
    free(row_b);
    first_row_t first = {.want = row};
    assert_int_equal(
        ms_store_results_by_task(store, task_id, s_first_row, &first), MS_OK);
    assert_int_equal(first.n, 1);
    assert_true(first.same);
    // Another node's result of the same task (replicas 1): stored, an
    // extra replica, never a second row (ms_store_replica_test has the
    // rows of replicas 2).
    char *row2 = s_row(0, node2, 60);
    assert_int_equal(s_put_result(store, task_id, node2, row2, strlen(row2)),
                     MS_OK);
    free(row2);
    rows_t rows = {.ordered = true};
    assert_int_equal(
        ms_store_results_by_task(store, task_id, s_count_rows, &rows), MS_OK);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.n_bad, 0);
    // A result of a task not known here is kept (records may come before
    // their sweep): its row waits under its task id, no sweep counts it.
    uint8_t unknown[ID];
    s_id(unknown, 0x55, 5);
    rows = (rows_t){.ordered = true};
    assert_int_equal(
        ms_store_results_by_task(store, unknown, s_count_rows, &rows), MS_OK);
    assert_int_equal(rows.n, 0);
    assert_int_equal(s_put_result(store, unknown, node, row, strlen(row)),
                     MS_OK);
    assert_int_equal(
        ms_store_results_by_task(store, unknown, s_count_rows, &rows), MS_OK);
    assert_int_equal(rows.n, 1);

    ms_store_sweep_t *sweep;
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->counts[MS_TASK_DONE], 1);
    assert_int_equal(sweep->state, MS_SWEEP_ACTIVE);
    ms_store_sweep_destroy(&sweep);
    // A result for a pending task (never claimed) also finishes it; the
    // sweep is then done.
    s_task(task_id, 10, 1);
    assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                     MS_OK);
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->counts[MS_TASK_DONE], 2);
    assert_int_equal(sweep->counts[MS_TASK_PENDING], 0);
    assert_int_equal(sweep->state, MS_SWEEP_DONE);
    ms_store_sweep_destroy(&sweep);
    free(row);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Row callback that stops with an error code after N rows.

static int
s_stop_after_3(void *arg, const char *json, size_t n)
{
    (void) json;
    (void) n;
    return ++*(int *) arg == 3 ? MS_ERR_INTERRUPTED : 0;
}

//  --------------------------------------------------------------------------
//  Results by sweep come in task index order, whatever the write order,
//  and page with max_rows / next_index.

static void
test_results_by_sweep_pages(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    uint8_t node[ID], sweep_id[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    assert_int_equal(s_put_sweep(store, 10, 50, 0), MS_OK);
    s_sweep_id(sweep_id, 10);
    for (int i = 49; i >= 0; i--) {
        if (i == 7)
            continue; // one task without a result
        s_task(task_id, 10, (uint32_t) i);
        char *row = s_row((uint32_t) i, node, 20);
        assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                         MS_OK);
        free(row);
    }
    rows_t all = s_rows_of_sweep(store, 10);
    assert_int_equal(all.n, 49);
    assert_int_equal(all.n_bad, 0);
    assert_true(all.ordered);

    uint32_t next = 0;
    size_t total = 0;
    int pages = 0;
    rows_t rows = {.ordered = true};
    while (next != MS_STORE_INDEX_END) {
        size_t before = rows.n;
        assert_int_equal(ms_store_results_by_sweep(store, sweep_id, next, 10,
                                                   s_count_rows, &rows, &next),
                         MS_OK);
        assert_true(rows.n - before <= 10);
        total = rows.n;
        pages++;
        assert_true(pages < 10);
    }
    assert_int_equal(total, 49);
    assert_int_equal(pages, 5);
    assert_true(rows.ordered);
    int seen = 0;
    assert_int_equal(ms_store_results_by_sweep(store, sweep_id, 0, 0,
                                               s_stop_after_3, &seen, NULL),
                     MS_ERR_INTERRUPTED);
    assert_int_equal(seen, 3);
    s_id(sweep_id, 99, 0);
    assert_int_equal(ms_store_results_by_sweep(store, sweep_id, 0, 0,
                                               s_count_rows, &rows, NULL),
                     MS_ERR_NOTFOUND);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  After a restart, tasks left claimed/running by this node go back to
//  pending; other nodes' claims stay.

static void
test_reset_claims(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    uint8_t me[ID], other[ID], sweep_id[ID];
    s_id(me, 0xAA, 1);
    s_id(other, 0xAA, 2);
    assert_int_equal(s_put_sweep(store, 10, 6, 0), MS_OK);
    s_sweep_id(sweep_id, 10);
    for (uint32_t i = 0; i < 4; i++) {
        uint8_t t[ID];
        s_task(t, 10, i);
        assert_int_equal(ms_store_set_task_state(store, t, MS_TASK_RUNNING,
                                                 i < 3 ? me : other, NULL),
                         MS_OK);
    }
    uint8_t t4[ID];
    s_task(t4, 10, 4);
    assert_int_equal(
        ms_store_set_task_state(store, t4, MS_TASK_CLAIMED, me, NULL), MS_OK);
    ms_store_destroy(&store); // "crash"

    store = s_open(fx->dir, 1 << 20, 0);
    size_t n = 0;
    assert_int_equal(ms_store_reset_claims(store, me, &n), MS_OK);
    assert_int_equal(n, 4);
    ms_store_sweep_t *sweep;
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->counts[MS_TASK_PENDING], 5);
    assert_int_equal(sweep->counts[MS_TASK_RUNNING], 1);
    assert_int_equal(sweep->counts[MS_TASK_CLAIMED], 0);
    ms_store_sweep_destroy(&sweep);
    assert_int_equal(ms_store_reset_claims(store, me, &n), MS_OK);
    assert_int_equal(n, 0);
    ms_store_task_t *task;
    s_task(t4, 10, 0);
    assert_int_equal(ms_store_get_task(store, t4, &task), MS_OK);
    assert_int_equal(task->state, MS_TASK_PENDING);
    assert_memory_equal(task->holder, (uint8_t[ID]){0}, ID);
    ms_store_task_destroy(&task);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Case 3 (the store's part): a 10-task sweep, 6 finished and 2 running
//  when the node stops; after the restart the 2 left running are pending
//  again beside the 2 never started, and the 6 rows stay.

static void
test_case3_restart_runs_only_missing(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    uint8_t node[ID], sweep_id[ID];
    s_id(node, 0xAA, 1);
    assert_int_equal(s_put_sweep(store, 10, 10, 0), MS_OK);
    s_sweep_id(sweep_id, 10);
    for (uint32_t i = 0; i < 8; i++) {
        uint8_t t[ID];
        s_task(t, 10, i);
        assert_int_equal(
            ms_store_set_task_state(store, t, MS_TASK_RUNNING, node, NULL),
            MS_OK);
        if (i < 6) {
            char *row = s_row(i, node, 10);
            assert_int_equal(s_put_result(store, t, node, row, strlen(row)),
                             MS_OK);
            free(row);
        }
    }
    ms_store_destroy(&store); // the node stops (tasks 6, 7 left running)

    store = s_open(fx->dir, 1 << 20, 0);
    size_t n_reset = 0;
    assert_int_equal(ms_store_reset_claims(store, node, &n_reset), MS_OK);
    assert_int_equal(n_reset, 2);
    ms_store_sweep_t *sweep;
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->counts[MS_TASK_PENDING], 4);
    assert_int_equal(sweep->counts[MS_TASK_DONE], 6);
    assert_int_equal(sweep->counts[MS_TASK_RUNNING], 0);
    ms_store_sweep_destroy(&sweep);
    rows_t rows = s_rows_of_sweep(store, 10);
    assert_int_equal(rows.n, 6);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Case 5: 16 writer threads put 10,000 results while 4 reader threads
//  iterate the results; the map starts small so it also grows under load.

#define C5_TASKS 10000
#define C5_WRITERS 16
#ifndef C5_READERS
#define C5_READERS 4
#endif

typedef struct {
    ms_store_t *store;     // shared
    int id;                // thread number
    int failures;          // writes that did not return MS_OK
    int bad_reads;         // read errors or unparsable rows
    int reads;             // full iterations done
    volatile int *writing; // writers still running
    pthread_mutex_t *mu;   // guards *writing
} c5_thread_t;

static void *
s_c5_writer(void *arg)
{
    c5_thread_t *me = arg;
    uint8_t node[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    for (uint32_t i = (uint32_t) me->id; i < C5_TASKS; i += C5_WRITERS) {
        s_task(task_id, 10, i);
        char *row = s_row(i, node, 200);
        if (s_put_result(me->store, task_id, node, row, strlen(row)) != MS_OK)
            me->failures++;
        free(row);
    }
    pthread_mutex_lock(me->mu);
    (*me->writing)--;
    pthread_mutex_unlock(me->mu);
    return NULL;
}

static void *
s_c5_reader(void *arg)
{
    c5_thread_t *me = arg;
    size_t last = 0;
    for (;;) {
        pthread_mutex_lock(me->mu);
        int writing = *me->writing;
        pthread_mutex_unlock(me->mu);
        uint8_t sweep_id[ID];
        s_sweep_id(sweep_id, 10);
        rows_t rows = {.ordered = true};
        int rc = ms_store_results_by_sweep(me->store, sweep_id, 0, 0,
                                           s_count_rows, &rows, NULL);
        if (rc != MS_OK || rows.n_bad || !rows.ordered || rows.n < last)
            me->bad_reads++;
        last = rows.n;
        me->reads++;
        if (!writing)
            break;
        // Pace the passes: 2 cores are shared with the 16 writers.
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    return NULL;
}

static void
test_case5_writers_and_readers(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 4 << 20, 0);
    assert_int_equal(s_put_sweep(store, 10, C5_TASKS, 0), MS_OK);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    volatile int writing = C5_WRITERS;
    c5_thread_t th[C5_WRITERS + C5_READERS];
    pthread_t tid[C5_WRITERS + C5_READERS];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < C5_WRITERS + C5_READERS; i++) {
        th[i] = (c5_thread_t){
            .store = store, .id = i, .writing = &writing, .mu = &mu};
        pthread_create(&tid[i], NULL,
                       i < C5_WRITERS ? s_c5_writer : s_c5_reader, &th[i]);
    }
    for (int i = 0; i < C5_WRITERS + C5_READERS; i++)
        pthread_join(tid[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int reads = 0;
    for (int i = 0; i < C5_WRITERS + C5_READERS; i++) {
        assert_int_equal(th[i].failures, 0);
        assert_int_equal(th[i].bad_reads, 0);
        reads += th[i].reads;
    }
    rows_t rows = s_rows_of_sweep(store, 10);
    assert_int_equal(rows.n, C5_TASKS);
    assert_int_equal(rows.n_bad, 0);
    assert_true(rows.ordered);
    uint8_t sweep_id[ID];
    s_sweep_id(sweep_id, 10);
    ms_store_sweep_t *sweep;
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->counts[MS_TASK_DONE], C5_TASKS);
    assert_int_equal(sweep->state, MS_SWEEP_DONE);
    ms_store_sweep_destroy(&sweep);
    ms_store_stats_t stats;
    ms_store_stats(store, &stats);
    double secs = (double) (t1.tv_sec - t0.tv_sec) +
                  (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr,
            "case 5: %d results in %.2f s, %llu commits (max batch %llu), "
            "%llu commits with reads open, %d reader passes, %llu map "
            "grows, map %llu bytes\n",
            C5_TASKS, secs, (unsigned long long) stats.n_commits,
            (unsigned long long) stats.max_batch,
            (unsigned long long) stats.n_commits_read_open, reads,
            (unsigned long long) stats.n_map_grows,
            (unsigned long long) stats.map_size_bytes);
    assert_true(stats.max_batch > 1);            // group commit happened
    assert_true(stats.n_commits < C5_TASKS + 2); // fewer fsyncs than writes
    assert_true(stats.n_commits_read_open > 0);  // commits beside readers
    assert_true(stats.n_map_grows > 0);
    assert_int_equal(stats.n_reads_open, 0);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  A reader parked inside a read txn does not block the writer: writes
//  commit while it is parked.

typedef struct {
    ms_store_t *store;  // shared
    pthread_mutex_t mu; // guards the flags
    pthread_cond_t cv;  // flag changes
    bool parked;        // reader is inside its callback
    bool release;       // main says: leave
    bool timed_out;     // the reader gave up waiting
} park_t;

static int
s_park_row(void *arg, const char *json, size_t n)
{
    (void) json;
    (void) n;
    park_t *park = arg;
    pthread_mutex_lock(&park->mu);
    if (!park->parked) {
        park->parked = true;
        pthread_cond_broadcast(&park->cv);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        while (!park->release && !park->timed_out)
            if (pthread_cond_timedwait(&park->cv, &park->mu, &until) ==
                ETIMEDOUT)
                park->timed_out = true;
    }
    pthread_mutex_unlock(&park->mu);
    return 0;
}

static void *
s_parked_reader(void *arg)
{
    park_t *park = arg;
    uint8_t sweep_id[ID];
    s_sweep_id(sweep_id, 10);
    ms_store_results_by_sweep(park->store, sweep_id, 0, 0, s_park_row, park,
                              NULL);
    return NULL;
}

static void
test_reader_never_blocks_writer(void **state)
{
    fixture_t *fx = *state;
    park_t park = {.store = s_open(fx->dir, 64 << 20, 0)};
    pthread_mutex_init(&park.mu, NULL);
    pthread_cond_init(&park.cv, NULL);
    assert_int_equal(s_put_sweep(park.store, 10, 100, 0), MS_OK);
    uint8_t node[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    s_task(task_id, 10, 0);
    char *row = s_row(0, node, 10);
    assert_int_equal(s_put_result(park.store, task_id, node, row, strlen(row)),
                     MS_OK);
    free(row);
    pthread_t reader;
    pthread_create(&reader, NULL, s_parked_reader, &park);
    pthread_mutex_lock(&park.mu);
    while (!park.parked)
        pthread_cond_wait(&park.cv, &park.mu);
    pthread_mutex_unlock(&park.mu);

    for (uint32_t i = 1; i < 100; i++) {
        s_task(task_id, 10, i);
        row = s_row(i, node, 10);
        assert_int_equal(
            s_put_result(park.store, task_id, node, row, strlen(row)), MS_OK);
        free(row);
    }
    ms_store_stats_t stats;
    ms_store_stats(park.store, &stats);
    assert_int_equal(stats.n_reads_open, 1);
    pthread_mutex_lock(&park.mu);
    bool timed_out = park.timed_out;
    park.release = true;
    pthread_cond_broadcast(&park.cv);
    pthread_mutex_unlock(&park.mu);
    pthread_join(reader, NULL);
    assert_false(timed_out); // the writes finished while the read was open
    assert_true(stats.n_commits_read_open >= 99);
    rows_t rows = s_rows_of_sweep(park.store, 10);
    assert_int_equal(rows.n, 100);
    ms_store_destroy(&park.store);
    pthread_cond_destroy(&park.cv);
    pthread_mutex_destroy(&park.mu);
}

//  --------------------------------------------------------------------------
//  Child of case 6 (a): open the store, hold a read txn, tell the parent,
//  wait to be killed.

typedef struct {
    int fd; // pipe to the parent
} hold_t;

static int
s_hold_row(void *arg, const char *json, size_t n)
{
    (void) json;
    (void) n;
    hold_t *hold = arg;
    char c = 'r';
    if (write(hold->fd, &c, 1) != 1)
        _exit(3);
    for (;;)
        pause();
    return 0;
}

static void
s_reader_child(const void *arg, int fd)
{
    const char *dir = arg;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.read_only = true;
    opts.skip_reader_check = true; // leave the stale slots to the parent
    opts.map_size_bytes = 1 << 20; // LMDB maps max(this, the file's size)
    ms_store_t *store = NULL;
    if (ms_store_open(&store, dir, &opts, NULL) != MS_OK)
        _exit(2);
    uint8_t sweep_id[ID];
    s_sweep_id(sweep_id, 10);
    hold_t hold = {fd};
    int rc = ms_store_results_by_sweep(store, sweep_id, 0, 0, s_hold_row, &hold,
                                       NULL);
    char c = rc == MS_OK ? 'e' : 'f'; // no rows, or the read failed
    if (write(fd, &c, 1) != 1)
        _exit(3);
    _exit(4);
}

//  --------------------------------------------------------------------------
//  Case 6 (a): readers in other processes are SIGKILLed while they hold
//  read txns, 3 times the reader table size; stale slots are cleared and
//  the node keeps serving reads and writes.

static void
test_case6a_stale_readers(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 16);
    assert_int_equal(s_put_sweep(store, 10, 200, 0), MS_OK);
    uint8_t node[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    s_task(task_id, 10, 0);
    char *row = s_row(0, node, 10);
    assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                     MS_OK);
    free(row);

    int killed = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 16; i++) {
            int fd = -1;
            pid_t pid = ms_tf_fork_piped(s_reader_child, fx->dir, &fd);
            assert_true(pid >= 0);
            char c = 0;
            ssize_t got = read(fd, &c, 1);
            close(fd);
            kill(pid, SIGKILL);
            int status;
            waitpid(pid, &status, 0);
            assert_int_equal(got, 1);
            assert_int_equal(c, 'r'); // it held a read txn when killed
            killed++;
        }
        // The table is now full of dead readers: we must still serve.
        rows_t rows = s_rows_of_sweep(store, 10);
        assert_int_equal(rows.n, 1 + round);
        s_task(task_id, 10, (uint32_t) (1 + round));
        row = s_row((uint32_t) (1 + round), node, 10);
        assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                         MS_OK);
        free(row);
    }
    ms_store_stats_t stats;
    ms_store_stats(store, &stats);
    fprintf(stderr, "case 6a: %d readers killed, %llu stale slots cleared\n",
            killed, (unsigned long long) stats.n_stale_readers);
    assert_true(killed > 16);
    assert_true(stats.n_stale_readers >= 16);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Case 6 (b): a 1 MiB map, 5 MiB of result rows: the map grows, every
//  write returns MS_OK, nothing is lost, and a reopen sees it all.

static void
test_case6b_map_grows(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    const uint32_t n = 2000; // rows of about 2.5 KiB: 5 MiB
    assert_int_equal(s_put_sweep(store, 10, n, 0), MS_OK);
    uint8_t node[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    for (uint32_t i = 0; i < n; i++) {
        s_task(task_id, 10, i);
        char *row = s_row(i, node, 2500);
        assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                         MS_OK);
        free(row);
    }
    ms_store_stats_t stats;
    ms_store_stats(store, &stats);
    fprintf(stderr, "case 6b: map %llu bytes after %llu grows\n",
            (unsigned long long) stats.map_size_bytes,
            (unsigned long long) stats.n_map_grows);
    assert_true(stats.n_map_grows >= 3);
    assert_true(stats.map_size_bytes >= (5u << 20));
    rows_t rows = s_rows_of_sweep(store, 10);
    assert_int_equal(rows.n, n);
    assert_int_equal(rows.n_bad, 0);
    ms_store_destroy(&store);

    store = s_open(fx->dir, 1 << 20, 0); // the grown size is kept
    rows = s_rows_of_sweep(store, 10);
    assert_int_equal(rows.n, n);
    assert_true(rows.ordered);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Child of the SIGKILL test: 4 threads write results and report each
//  index whose write call returned MS_OK.

typedef struct {
    ms_store_t *store; // shared
    int fd;            // pipe to the parent
    int id;            // thread number
} killee_t;

static void *
s_killee_writer(void *arg)
{
    killee_t *me = arg;
    uint8_t node[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    for (uint32_t i = (uint32_t) me->id; i < 5000; i += 4) {
        s_task(task_id, 10, i);
        char *row = s_row(i, node, 500);
        if (s_put_result(me->store, task_id, node, row, strlen(row)) != MS_OK)
            _exit(5);
        free(row);
        if (write(me->fd, &i, sizeof i) != sizeof i) // atomic on a pipe
            _exit(6);
    }
    return NULL;
}

static void
s_killee(const void *arg, int fd)
{
    const char *dir = arg;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.map_size_bytes = 1 << 20; // grows while we write, too
    ms_store_t *store = NULL;
    if (ms_store_open(&store, dir, &opts, NULL) != MS_OK)
        _exit(2);
    if (s_put_sweep(store, 10, 5000, 0) != MS_OK)
        _exit(3);
    uint32_t ready = UINT32_MAX;
    if (write(fd, &ready, sizeof ready) != sizeof ready)
        _exit(4);
    pthread_t threads[4];
    killee_t me[4];
    for (int i = 0; i < 4; i++) {
        me[i] = (killee_t){store, fd, i};
        pthread_create(&threads[i], NULL, s_killee_writer, &me[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    _exit(0);
}

//  --------------------------------------------------------------------------
//  SIGKILL durability: a child writes results and is killed mid-way;
//  after reopening, every result whose write had returned is there, every
//  row parses, and the counts match the rows.

static void
test_sigkill_durability(void **state)
{
    fixture_t *fx = *state;
    int fd = -1;
    pid_t pid = ms_tf_fork_piped(s_killee, fx->dir, &fd);
    assert_true(pid >= 0);
    bool *reported = calloc(5000, 1);
    uint32_t index;
    int n_reported = 0;
    bool ready = false, killed = false;
    while (read(fd, &index, sizeof index) == sizeof index) {
        if (index == UINT32_MAX) {
            ready = true;
            continue;
        }
        assert_true(index < 5000);
        reported[index] = true;
        n_reported++;
        if (n_reported == 400 && !killed) {
            kill(pid, SIGKILL);
            killed = true;
        }
    }
    close(fd);
    int status;
    waitpid(pid, &status, 0);
    assert_true(ready);
    assert_true(killed);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    uint8_t node[ID], task_id[ID], sweep_id[ID];
    s_id(node, 0xAA, 1);
    s_sweep_of(10, 5000); // the child's sweep: the same spec, the same ids
    s_sweep_id(sweep_id, 10);
    int present = 0;
    for (uint32_t i = 0; i < 5000; i++) {
        if (!reported[i])
            continue;
        s_task(task_id, 10, i);
        rows_t rows = {.ordered = true};
        assert_int_equal(
            ms_store_results_by_task(store, task_id, s_count_rows, &rows),
            MS_OK);
        assert_int_equal(rows.n, 1);
        assert_int_equal(rows.n_bad, 0);
        present++;
    }
    rows_t all = s_rows_of_sweep(store, 10);
    assert_int_equal(all.n_bad, 0);
    assert_true(all.n >= (size_t) n_reported);
    ms_store_sweep_t *sweep;
    assert_int_equal(ms_store_get_sweep(store, sweep_id, &sweep), MS_OK);
    assert_int_equal(sweep->counts[MS_TASK_DONE], all.n);
    assert_int_equal(
        sweep->counts[MS_TASK_PENDING] + sweep->counts[MS_TASK_DONE], 5000);
    ms_store_sweep_destroy(&sweep);
    fprintf(stderr, "sigkill: %d results reported, %d present, %zu rows\n",
            n_reported, present, all.n);
    assert_int_equal(present, n_reported);
    free(reported);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  A second process reads the store read-only while the node runs;
//  writes through a read-only store are refused.

static void
test_read_only_second_process(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    assert_int_equal(s_put_sweep(store, 10, 20, 0), MS_OK);
    uint8_t node[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    for (uint32_t i = 0; i < 5; i++) {
        s_task(task_id, 10, i);
        char *row = s_row(i, node, 10);
        assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                         MS_OK);
        free(row);
    }
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ms_store_options_t opts;
        ms_store_options_default(&opts);
        opts.read_only = true;
        opts.map_size_bytes = 1 << 20; // small: valgrind's address space
        ms_store_t *ro = NULL;
        if (ms_store_open(&ro, fx->dir, &opts, NULL) != MS_OK)
            _exit(10);
        uint8_t sweep_id[ID];
        s_sweep_id(sweep_id, 10);
        rows_t rows = {.ordered = true};
        if (ms_store_results_by_sweep(ro, sweep_id, 0, 0, s_count_rows, &rows,
                                      NULL) != MS_OK)
            _exit(11);
        if (s_put_result(ro, task_id, node, "{}", 2) != MS_ERR_UNSUPPORTED)
            _exit(12);
        if (ms_store_set_task_state(ro, task_id, MS_TASK_RUNNING, node, NULL) !=
            MS_ERR_UNSUPPORTED)
            _exit(13);
        ms_store_destroy(&ro);
        _exit((int) rows.n); // 5
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 5);
    // The node goes on writing after the reader left.
    s_task(task_id, 10, 10);
    char *row = s_row(10, node, 10);
    assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                     MS_OK);
    free(row);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  A truncated data.mdb (a partial copy) is refused with a clear error at
//  open, by the node and by read-only readers alike; it must never fault
//  (SIGBUS) on the first read through the map.

static void
test_truncated_store_refused(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    assert_int_equal(s_put_sweep(store, 10, 400, 0), MS_OK);
    ms_store_destroy(&store);
    char data[400];
    snprintf(data, sizeof data, "%s/data.mdb", fx->dir);
    struct stat st;
    assert_int_equal(stat(data, &st), 0);
    assert_true(st.st_size > 5 * 4096);
    assert_int_equal(truncate(data, 5 * 4096), 0);
    for (int read_only = 0; read_only <= 1; read_only++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            ms_store_options_t opts;
            ms_store_options_default(&opts);
            opts.map_size_bytes = 1 << 20;
            opts.read_only = read_only;
            ms_store_t *s = NULL;
            ms_diag_t diag;
            int rc = ms_store_open(&s, fx->dir, &opts, &diag);
            if (rc != MS_ERR_STORE || s)
                _exit(10);
            if (!strstr(diag.reason, "truncated") ||
                strcmp(diag.where, fx->dir) != 0)
                _exit(11);
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status)); // not killed by SIGBUS
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

//  --------------------------------------------------------------------------
//  A reader without write access to the store's lock file (another user's
//  store) can still read the committed results.

static void
test_read_only_without_lock_access(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = s_open(fx->dir, 1 << 20, 0);
    assert_int_equal(s_put_sweep(store, 10, 20, 0), MS_OK);
    uint8_t node[ID], task_id[ID];
    s_id(node, 0xAA, 1);
    for (uint32_t i = 0; i < 3; i++) {
        s_task(task_id, 10, i);
        char *row = s_row(i, node, 10);
        assert_int_equal(s_put_result(store, task_id, node, row, strlen(row)),
                         MS_OK);
        free(row);
    }
    ms_store_destroy(&store);
    if (geteuid() != 0)
        skip(); // needs root to become another user
    // World-readable, writable by its owner (root) only.
    assert_int_equal(chmod(fx->root, 0755), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/data", fx->root);
    assert_int_equal(chmod(path, 0755), 0);
    assert_int_equal(chmod(fx->dir, 0755), 0);
    snprintf(path, sizeof path, "%s/data.mdb", fx->dir);
    assert_int_equal(chmod(path, 0644), 0);
    snprintf(path, sizeof path, "%s/lock.mdb", fx->dir);
    assert_int_equal(chmod(path, 0644), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) // nobody
            _exit(20);
        ms_store_options_t opts;
        ms_store_options_default(&opts);
        opts.read_only = true;
        opts.map_size_bytes = 1 << 20;
        ms_store_t *ro = NULL;
        ms_diag_t diag;
        if (ms_store_open(&ro, fx->dir, &opts, &diag) != MS_OK)
            _exit(10);
        uint8_t sweep_id[ID];
        s_sweep_id(sweep_id, 10);
        rows_t rows = {.ordered = true};
        if (ms_store_results_by_sweep(ro, sweep_id, 0, 0, s_count_rows, &rows,
                                      NULL) != MS_OK)
            _exit(11);
        ms_store_destroy(&ro);
        _exit((int) rows.n); // 3
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
}

int
main(void)
{
    // MS_TEST_FILTER=test_case5* runs only the matching cases.
    if (getenv("MS_TEST_FILTER"))
        cmocka_set_test_filter(getenv("MS_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_creates_dir_and_incarnation,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_nfs, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_open_bad_dir, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_put_get_sweep, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_list_sweeps_and_tasks, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_task_states, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_result_marks_done, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_results_by_sweep_pages, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_reset_claims, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_case3_restart_runs_only_missing,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_case5_writers_and_readers, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_reader_never_blocks_writer,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_case6a_stale_readers, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_case6b_map_grows, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_sigkill_durability, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_store_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_read_only_without_lock_access,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_read_only_second_process, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests_name("ms_store", tests, NULL, NULL);
}
