/*  =========================================================================
    ms_submit_test - the submission path on a real temporary store

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Drives ms_submit through its iface as the node does: the iface's
    append writes the records to a real store (ms_store_append_many, one
    durable commit), so every assertion is on what the store derived from
    them: a valid spec becomes a sweep with its tasks and a dataset record;
    a bad spec, a spec over the pool's limits, a file dataset over the API
    path and a bad local file are refused with the key path (or the file)
    in the diag and write nothing; the same spec again exists; a cancelled
    sweep submitted again is reopened through the iface; a local runner's
    dataset file is written with absolute paths (through the node's
    dataset source, a real ms_dataset_source over the same store, which
    has the dataset at once).
*/
#define _DEFAULT_SOURCE // realpath
#include "ms_submit.h"

#include "ms_dataset_source.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_spec.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ms_node_testdata.h"
#include "ms_store_fixture.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>

#define S_WALL_MS 1700000000123LL // the fake wall clock

//  The test's node: a real store, and what the iface was asked.
typedef struct {
    char root[256];                // temp dir (ms_td_setup: data/fashion-mnist)
    char datasets_dir[512];        // ROOT/datasets
    ms_store_t *store;             // ROOT/store
    ms_submit_t *submit;           // under test
    ms_dataset_source_t *datasets; // its dataset files (ROOT/datasets)
    ms_clock_fake_t fake;          // its wall clock
    ms_clock_t clock;              // readers of fake
    uint8_t origin[MS_HASH_BYTES]; // "our" key
    int n_appends;                 // append calls
    size_t n_records;              // records appended in all
    uint32_t kinds[8];             // kinds of the records appended, in order
    int64_t created_at_ms;         // created_at_ms of the last SWEEP payload
    int n_reopens;                 // reopen calls
    int n_stored, n_fresh;         // stored calls, of which fresh
    int n_log;                     // log lines
    char last_log[512];            // the last one
} s_fx_t;

//  --------------------------------------------------------------------------
//  iface: append the payloads to the store as one commit of origin.

static int
s_append(void *arg, size_t n, const ms_store_payload_t *payloads)
{
    s_fx_t *fx = arg;
    fx->n_appends++;
    uint32_t kinds[8];
    uint8_t *bufs[8] = {NULL};
    size_t lens[8];
    assert_true(n >= 1 && n <= 8);
    int rc = MS_OK;
    for (size_t i = 0; i < n && rc == MS_OK; i++) {
        kinds[i] = payloads[i].kind;
        if (payloads[i].kind == MS_RECORD_SWEEP)
            fx->created_at_ms = payloads[i].u.sweep.created_at_ms;
        rc = ms_store_payload_encode(&payloads[i], &bufs[i], &lens[i]);
    }
    if (rc == MS_OK)
        rc = ms_store_append_many(fx->store, fx->origin, n, kinds,
                                  (const void *const *) bufs, lens, NULL);
    for (size_t i = 0; i < n; i++) {
        free(bufs[i]);
        if (rc == MS_OK && fx->n_records < 8)
            fx->kinds[fx->n_records++] = kinds[i];
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  A sweep-control record of ACTION on the sweep (one above the highest
//  lamport time the store has seen of it), appended by the fixture.

static int
s_control(s_fx_t *fx, const ms_hash_t *sweep_id, uint32_t action)
{
    uint64_t seen = 0;
    int rc = ms_store_sweep_control_time(fx->store, sweep_id->bytes, &seen);
    ms_store_payload_t p = {
        .kind = MS_RECORD_SWEEP_CONTROL,
        .u.control = {.action = action, .lamport = seen + 1}};
    memcpy(p.u.control.sweep_id, sweep_id->bytes, MS_HASH_BYTES);
    return rc == MS_OK ? ms_sf_append(fx->store, fx->origin, &p) : rc;
}

//  --------------------------------------------------------------------------
//  iface: reopen a cancelled sweep (the record the node writes).

static int
s_reopen(void *arg, const ms_hash_t *sweep_id)
{
    s_fx_t *fx = arg;
    fx->n_reopens++;
    return s_control(fx, sweep_id, MS_SWEEP_CONTROL_REOPEN);
}

static void
s_stored(void *arg, const ms_hash_t *sweep_id, bool fresh)
{
    (void) sweep_id;
    s_fx_t *fx = arg;
    fx->n_stored++;
    fx->n_fresh += fresh;
}

static void
s_log(void *arg, const char *line)
{
    s_fx_t *fx = arg;
    fx->n_log++;
    snprintf(fx->last_log, sizeof fx->last_log, "%s", line);
}

//  --------------------------------------------------------------------------
//  Make the submission path with max_tasks per sweep.

static void
s_make(s_fx_t *fx, int64_t max_tasks)
{
    ms_submit_destroy(&fx->submit);
    ms_submit_config_t cfg = {.max_tasks_per_sweep = max_tasks,
                              .max_dataset_bytes = (int64_t) 1 << 32,
                              .clock = &fx->clock};
    ms_submit_iface_t iface = {.arg = fx,
                               .log = s_log,
                               .append = s_append,
                               .reopen = s_reopen,
                               .stored = s_stored,
                               .blobs = NULL};
    fx->submit = ms_submit_new(fx->store, fx->datasets, &cfg, &iface);
    assert_non_null(fx->submit);
}

static int
s_setup(void **state)
{
    s_fx_t *fx = calloc(1, sizeof *fx);
    if (!fx || ms_sf_node_dir(fx->root, fx->datasets_dir, &fx->store, 0) != 0)
        return -1;
    memset(fx->origin, 0x5a, sizeof fx->origin);
    fx->fake.wall_ms = S_WALL_MS;
    ms_clock_fake(&fx->fake, &fx->clock);
    ms_dataset_source_config_t dcfg = {.datasets_dir = fx->datasets_dir,
                                       .max_dataset_bytes = (int64_t) 1 << 32,
                                       .clock = &fx->clock};
    ms_dataset_source_iface_t diface = {.arg = fx, .log = s_log};
    fx->datasets = ms_dataset_source_new(fx->store, &dcfg, &diface);
    if (!fx->datasets)
        return -1;
    s_make(fx, 1000000);
    *state = fx;
    return 0;
}

static int
s_teardown(void **state)
{
    s_fx_t *fx = *state;
    ms_submit_destroy(&fx->submit);
    ms_dataset_source_destroy(&fx->datasets);
    ms_store_destroy(&fx->store);
    ms_td_teardown(fx->root);
    free(fx);
    return 0;
}

//  Count one sweep (ms_store_list_sweeps).
static int
s_count_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    (void) sweep;
    (*(int *) arg)++;
    return 0;
}

//  Sweeps in the store.
static int
s_n_sweeps(s_fx_t *fx)
{
    int n = 0;
    assert_int_equal(ms_store_list_sweeps(fx->store, s_count_sweep, &n), MS_OK);
    return n;
}

//  Entries of the datasets dir (but . and ..).
static int
s_n_dataset_files(s_fx_t *fx)
{
    DIR *d = opendir(fx->datasets_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

//  Assert nothing was written: no append, no sweep, no dataset file.
static void
s_assert_nothing_written(s_fx_t *fx)
{
    assert_int_equal(fx->n_appends, 0);
    assert_int_equal(fx->n_stored, 0);
    assert_int_equal(s_n_sweeps(fx), 0);
    assert_int_equal(s_n_dataset_files(fx), 0);
}

//  --------------------------------------------------------------------------
//  A valid spec becomes a SWEEP and a DATASET record in one commit: the
//  store derives the sweep with its 6 tasks, all pending, and the dataset
//  record under the hash every node derives; the summary says so.

static void
test_valid_spec_becomes_records(void **state)
{
    s_fx_t *fx = *state;
    const char *spec = ms_td_spec("grid6", 2, 3, 1);
    ms_hash_t sid;
    bool existed = true;
    char *summary = NULL;
    ms_diag_t diag;
    int rc = ms_submit_spec(fx->submit, spec, strlen(spec), NULL, false, NULL,
                            &sid, &existed, &summary, &diag);
    if (rc != MS_OK)
        fail_msg("submit: %s: %s", diag.where, diag.reason);
    assert_false(existed);
    assert_int_equal(fx->n_appends, 1);
    assert_int_equal(fx->n_records, 2);
    assert_int_equal(fx->kinds[0], MS_RECORD_SWEEP);
    assert_int_equal(fx->kinds[1], MS_RECORD_DATASET);
    assert_int_equal(fx->created_at_ms, S_WALL_MS);
    assert_int_equal(fx->n_stored, 1);
    assert_int_equal(fx->n_fresh, 1);
    assert_int_equal(fx->n_reopens, 0);
    assert_non_null(strstr(fx->last_log, "stored: 6 tasks"));

    ms_store_sweep_t *sw = NULL;
    assert_int_equal(ms_store_get_sweep(fx->store, sid.bytes, &sw), MS_OK);
    assert_int_equal(sw->n_tasks, 6);
    assert_int_equal(sw->counts[MS_TASK_PENDING], 6);
    assert_int_equal(sw->state, MS_SWEEP_ACTIVE);
    ms_store_sweep_destroy(&sw);
    assert_int_equal(s_n_sweeps(fx), 1);

    ms_spec_t *parsed = NULL;
    assert_int_equal(ms_spec_parse(spec, strlen(spec), NULL, &parsed, &diag),
                     MS_OK);
    assert_memory_equal(ms_spec_sweep_id(parsed)->bytes, sid.bytes,
                        MS_HASH_BYTES);
    ms_hash_t dh;
    assert_int_equal(ms_dataset_source_hash(ms_spec_dataset(parsed), &dh, NULL),
                     MS_OK);
    uint8_t *payload = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_get_dataset(fx->store, dh.bytes, &payload, &len),
                     MS_OK);
    ms_store_payload_t *rec = NULL;
    assert_int_equal(
        ms_store_payload_decode(MS_RECORD_DATASET, payload, len, &rec), MS_OK);
    assert_string_equal(rec->u.dataset.name, "fashion-mnist");
    assert_int_equal(rec->u.dataset.n_files, 4);
    assert_string_equal(rec->u.dataset.files[0].role, "train-images");
    assert_true(rec->u.dataset.files[0].size > 0);
    ms_store_payload_destroy(&rec);
    free(payload);
    for (size_t i = 0; i < 6; i++) {
        ms_store_task_t *t = NULL;
        assert_int_equal(
            ms_store_get_task(fx->store, ms_spec_task_id(parsed, i)->bytes, &t),
            MS_OK);
        assert_int_equal(t->state, MS_TASK_PENDING);
        assert_int_equal(t->index, i);
        ms_store_task_destroy(&t);
    }
    ms_spec_destroy(&parsed);

    json_error_t err;
    json_t *sum = json_loads(summary, 0, &err);
    assert_non_null(sum);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&sid, hex);
    assert_string_equal(json_string_value(json_object_get(sum, "sweep_id")),
                        hex);
    assert_int_equal(json_integer_value(json_object_get(sum, "n_tasks")), 6);
    assert_true(json_is_false(json_object_get(sum, "existed")));
    assert_string_equal(json_string_value(json_object_get(sum, "name")),
                        "grid6");
    json_decref(sum);
    free(summary);
}

//  --------------------------------------------------------------------------
//  The same spec again exists (nothing appended); of a cancelled sweep it
//  is reopened through the iface, and the store has it active again.

static void
test_again_exists_and_reopens(void **state)
{
    s_fx_t *fx = *state;
    const char *spec = ms_td_spec("again", 1, 2, 1);
    ms_hash_t sid;
    bool existed = true;
    ms_diag_t diag;
    assert_int_equal(ms_submit_spec(fx->submit, spec, strlen(spec), NULL, false,
                                    NULL, &sid, &existed, NULL, &diag),
                     MS_OK);
    assert_false(existed);
    assert_int_equal(fx->n_appends, 1);

    assert_int_equal(ms_submit_spec(fx->submit, spec, strlen(spec), NULL, false,
                                    NULL, &sid, &existed, NULL, &diag),
                     MS_OK);
    assert_true(existed);
    assert_int_equal(fx->n_appends, 1); // nothing new written
    assert_int_equal(fx->n_stored, 2);
    assert_int_equal(fx->n_fresh, 1);
    assert_int_equal(fx->n_reopens, 0);

    assert_int_equal(s_control(fx, &sid, MS_SWEEP_CONTROL_CANCEL), MS_OK);
    ms_store_sweep_t *sw = NULL;
    assert_int_equal(ms_store_get_sweep(fx->store, sid.bytes, &sw), MS_OK);
    assert_int_equal(sw->state, MS_SWEEP_CANCELLED);
    ms_store_sweep_destroy(&sw);

    char *summary = NULL;
    assert_int_equal(ms_submit_spec(fx->submit, spec, strlen(spec), NULL, false,
                                    NULL, &sid, &existed, &summary, &diag),
                     MS_OK);
    assert_true(existed);
    assert_int_equal(fx->n_reopens, 1);
    assert_non_null(strstr(summary, "\"reopened\":true"));
    free(summary);
    assert_int_equal(ms_store_get_sweep(fx->store, sid.bytes, &sw), MS_OK);
    assert_int_equal(sw->state, MS_SWEEP_ACTIVE);
    ms_store_sweep_destroy(&sw);
    assert_non_null(strstr(fx->last_log, "reopened"));
}

//  --------------------------------------------------------------------------
//  A bad spec is refused with the key path in the diag and writes
//  nothing; a parsed spec handed in is taken either way.

static void
test_bad_spec_refused_writes_nothing(void **state)
{
    s_fx_t *fx = *state;
    const char *bad = "name: x\ndataset: fashion-mnist\nmethod: grid\n"
                      "parameters:\n  width: {values: []}\n";
    ms_hash_t sid;
    bool existed = true;
    char *summary = (char *) "untouched";
    ms_diag_t diag;
    int rc = ms_submit_spec(fx->submit, bad, strlen(bad), NULL, false, NULL,
                            &sid, &existed, &summary, &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "width"));
    assert_null(summary);
    assert_false(existed);

    const char *unknown = "name: x\ndataset: fashion-mnist\nbogus_key: 1\n"
                          "parameters:\n  width: {value: 8}\n";
    rc = ms_submit_spec(fx->submit, unknown, strlen(unknown), NULL, false, NULL,
                        &sid, &existed, NULL, &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "bogus_key"));

    // Over the pool's task limit: "parameters", nothing stored.
    s_make(fx, 5);
    const char *six = ms_td_spec("six", 2, 3, 1);
    ms_spec_t *parsed = NULL;
    assert_int_equal(ms_spec_parse(six, strlen(six), NULL, &parsed, &diag),
                     MS_OK);
    rc = ms_submit_spec(fx->submit, six, strlen(six), parsed, false, NULL, &sid,
                        &existed, NULL, &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_string_equal(diag.where, "parameters");
    assert_non_null(strstr(diag.reason, "max_tasks_per_sweep"));

    // A file dataset over the API path (no local files, no uploads).
    const char *files = "name: x\ndataset: {train: /tmp/a.csv, test: "
                        "/tmp/b.csv, label: y}\nparameters:\n"
                        "  width: {value: 8}\n";
    rc = ms_submit_spec(fx->submit, files, strlen(files), NULL, false, NULL,
                        &sid, &existed, NULL, &diag);
    assert_int_equal(rc, MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "dataset");

    // Uploaded files, but the node keeps no blobs.
    char upload[200];
    snprintf(upload, sizeof upload, "train:%064d,test:%064d", 0, 0);
    rc = ms_submit_spec(fx->submit, files, strlen(files), NULL, false, upload,
                        &sid, &existed, NULL, &diag);
    assert_int_equal(rc, MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "files");

    // A valid program sweep: not run by this version, said so, not stored.
    const char *program = "program: train.py\nparameters:\n"
                          "  lr: {values: [0.1, 0.01]}\n";
    rc = ms_submit_spec(fx->submit, program, strlen(program), NULL, false, NULL,
                        &sid, &existed, NULL, &diag);
    assert_int_equal(rc, MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "program");
    assert_non_null(strstr(diag.reason, "not run by this version"));
    s_assert_nothing_written(fx);
}

//  --------------------------------------------------------------------------
//  A local runner's file dataset: a bad file is refused with its path and
//  writes nothing; good files give a dataset file with absolute paths
//  (written before the records) and the dataset source has it at once.

static void
test_local_files(void **state)
{
    s_fx_t *fx = *state;
    char train[600], test[600], bad[600];
    assert_int_equal(ms_tf_write_in(fx->root, "train.csv",
                                    "y,a,b\n0,1,2\n1,3,4\n0,1,3\n1,4,4\n",
                                    train, sizeof train),
                     0);
    assert_int_equal(ms_tf_write_in(fx->root, "test.csv",
                                    "y,a,b\n0,1,2\n1,3,5\n", test, sizeof test),
                     0);
    assert_int_equal(ms_tf_write_in(fx->root, "bad.csv", "y,a,b\n1,2,abc\n",
                                    bad, sizeof bad),
                     0);
    char spec[2000];
    snprintf(spec, sizeof spec,
             "name: local\ndataset: {train: %s, test: %s, label: y}\n"
             "parameters:\n  width: {values: [4, 8]}\n  epochs: {value: 1}\n",
             bad, test);
    ms_hash_t sid;
    bool existed;
    ms_diag_t diag;
    int rc = ms_submit_spec(fx->submit, spec, strlen(spec), NULL, true, NULL,
                            &sid, &existed, NULL, &diag);
    assert_int_not_equal(rc, MS_OK);
    assert_non_null(strstr(diag.where, "bad.csv"));
    s_assert_nothing_written(fx);

    snprintf(spec, sizeof spec,
             "name: local\ndataset: {train: %s, test: %s, label: y}\n"
             "parameters:\n  width: {values: [4, 8]}\n  epochs: {value: 1}\n",
             train, test);
    // Asked about before it is stored: no dataset (and no pool, so it is
    // not looked for again): the submission's save is what gives it one.
    ms_spec_t *parsed = NULL;
    assert_int_equal(ms_spec_parse(spec, strlen(spec), NULL, &parsed, &diag),
                     MS_OK);
    assert_int_equal(ms_spec_bind_dataset_files(parsed, &diag), MS_OK);
    sid = *ms_spec_sweep_id(parsed);
    ms_spec_destroy(&parsed);
    assert_null(ms_dataset_source_dataset(fx->datasets, &sid));
    rc = ms_submit_spec(fx->submit, spec, strlen(spec), NULL, true, NULL, &sid,
                        &existed, NULL, &diag);
    if (rc != MS_OK)
        fail_msg("submit: %s: %s", diag.where, diag.reason);
    assert_int_equal(fx->n_records, 2); // sweep and dataset
    ms_store_sweep_t *sw = NULL;
    assert_int_equal(ms_store_get_sweep(fx->store, sid.bytes, &sw), MS_OK);
    assert_int_equal(sw->n_tasks, 2);
    ms_store_sweep_destroy(&sw);

    char path[PATH_MAX + 80];
    ms_dataset_source_path(fx->datasets, &sid, path, sizeof path);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&sid, hex);
    assert_non_null(strstr(path, hex));
    json_error_t err;
    json_t *obj = json_load_file(path, 0, &err);
    assert_non_null(obj);
    char real[PATH_MAX];
    assert_non_null(realpath(train, real));
    assert_string_equal(json_string_value(json_object_get(obj, "train")), real);
    assert_string_equal(json_string_value(json_object_get(obj, "label")), "y");
    json_decref(obj);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    const json_t *known = ms_dataset_source_dataset(fx->datasets, &sid);
    assert_non_null(known);
    assert_string_equal(json_string_value(json_object_get(known, "train")),
                        real);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_valid_spec_becomes_records,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_again_exists_and_reopens, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_spec_refused_writes_nothing,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_local_files, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
