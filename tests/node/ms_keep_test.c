/*  =========================================================================
    ms_keep_test - keep_weights of our own results, and weights_out_dir

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification" (keep_weights): a real store holds a sweep
    whose spec says keep_weights (and its metric), a real blob store and
    re-evaluator take the weights; ms_keep reads the policy from the spec,
    keeps an ok result's weights as a blob named in the row (for best:
    only a better metric, whose pin replaces the last), removes the
    worker's file, and ms_keep_export copies a file to weights_out_dir.
*/
#include "ms_keep.h"

#include "ms_blob_fetch.h"
#include "ms_blob_store.h"
#include "ms_hash.h"
#include "ms_reeval.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_store_fixture.h"

//  The fixture: a store, blob store, fetch and re-evaluator in a temp dir.
typedef struct {
    ms_sf_t *fx;            // the temporary dir
    ms_store_t *store;      // the node's store
    ms_blob_store_t *blobs; // its blob store
    ms_blob_fetch_t *fetch; // its blob fetch (never used)
    ms_reeval_t *reeval;    // its pins
    int n_logged;           // lines the keep logged
} fix_t;

static void
s_log(void *arg, const char *line)
{
    (void) line;
    ((fix_t *) arg)->n_logged++;
}

static int64_t
s_now_ms(void *arg)
{
    (void) arg;
    return 1000;
}

static int
s_no_send(void *arg, const uint8_t to[MS_BLOB_PEER_ID_BYTES],
          const ms_wire_envelope_t *env)
{
    (void) arg;
    (void) to;
    (void) env;
    return MS_OK;
}

static int
s_setup(void **state)
{
    fix_t *f = calloc(1, sizeof *f);
    if (!f || ms_sf_setup((void **) &f->fx, "ms_keep_test") != 0)
        return -1;
    f->store = ms_sf_open(f->fx, NULL, 4 << 20);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/blobs", f->fx->root);
    ms_diag_t diag;
    if (!f->store ||
        ms_blob_store_open(&f->blobs, dir, 64 << 20, &diag) != MS_OK)
        return -1;
    ms_blob_transport_t tr = {.arg = f, .send = s_no_send};
    f->fetch = ms_blob_fetch_new(f->blobs, NULL, &tr, NULL, NULL);
    // ms_reeval_keep asks the clock; the rest is for ticks and samples.
    ms_reeval_config_t cfg = {
        .reeval_timeout_s = 60, .keep_retention_s = 60, .seed = {1, 3}};
    ms_reeval_iface_t iface = {.arg = f, .log = s_log, .now_ms = s_now_ms};
    f->reeval = ms_reeval_new(f->store, f->blobs, f->fetch, &cfg, &iface);
    if (!f->fetch || !f->reeval)
        return -1;
    *state = f;
    return 0;
}

static int
s_teardown(void **state)
{
    fix_t *f = *state;
    ms_reeval_destroy(&f->reeval);
    ms_blob_fetch_destroy(&f->fetch);
    ms_blob_store_destroy(&f->blobs);
    ms_store_destroy(&f->store);
    void *fx = f->fx;
    ms_sf_teardown(&fx);
    free(f);
    return 0;
}

//  Store a sweep whose spec says KEEP and METRIC; its id in *SWEEP_ID.
static void
s_sweep(fix_t *f, const char *keep, const char *metric, ms_hash_t *sweep_id)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "name: keep\ndataset: fashion-mnist\nmethod: grid\n"
             "keep_weights: %s\nmetric: %s\n"
             "parameters:\n  hidden_layers: {value: 1}\n"
             "  width: {value: 8}\n  epochs: {value: 1}\n"
             "  seed: {value: 5}\n",
             keep, metric);
    ms_sf_sweep_t sw;
    ms_sf_sweep_parse(&sw, yaml);
    uint8_t origin[MS_STORE_ID_BYTES];
    ms_sf_id(origin, 0xEE, 1);
    assert_int_equal(ms_sf_append_sweep(f->store, origin, &sw, 0), MS_OK);
    memcpy(sweep_id->bytes, sw.sweep_id, MS_HASH_BYTES);
    ms_sf_sweep_free(&sw);
}

//  Write TEXT as the worker's weights file PATH (under the fixture).
static void
s_weights_file(fix_t *f, const char *name, const char *text, char *path,
               size_t n)
{
    snprintf(path, n, "%s/%s.weights", f->fx->root, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static bool
s_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

//  A new ms_keep over F's store, blobs and re-evaluator.
static ms_keep_t *
s_keep(fix_t *f)
{
    ms_keep_iface_t iface = {.arg = f, .log = s_log};
    ms_keep_t *keep = ms_keep_new(f->store, f->blobs, f->reeval, &iface);
    assert_non_null(keep);
    return keep;
}

static ms_reeval_stats_t
s_stats(const fix_t *f)
{
    ms_reeval_stats_t st;
    ms_reeval_stats(f->reeval, &st);
    return st;
}

//  --------------------------------------------------------------------------
//  The policy comes from the stored spec; a sweep not stored is sampled.

static void
test_policy_from_spec(void **state)
{
    fix_t *f = *state;
    ms_keep_t *keep = s_keep(f);
    ms_hash_t none, all, unknown;
    s_sweep(f, "none", "{name: val_accuracy, goal: maximize}", &none);
    s_sweep(f, "all", "{name: val_loss, goal: minimize}", &all);
    memset(unknown.bytes, 0x77, MS_HASH_BYTES);
    assert_int_equal(ms_keep_policy(keep, &none), MS_KEEP_WEIGHTS_NONE);
    assert_int_equal(ms_keep_policy(keep, &all), MS_KEEP_WEIGHTS_ALL);
    assert_int_equal(ms_keep_policy(keep, &unknown), MS_KEEP_WEIGHTS_SAMPLED);
    ms_keep_destroy(&keep);
    assert_null(keep);
    ms_keep_destroy(&keep); // NULL-safe
}

//  --------------------------------------------------------------------------
//  keep_weights best (val_loss, minimize): only a better result's weights
//  are kept, and its pin replaces the last; the file goes in every case.

static void
test_best_keeps_improvements_only(void **state)
{
    fix_t *f = *state;
    ms_keep_t *keep = s_keep(f);
    ms_hash_t sid, task;
    s_sweep(f, "best", "{name: val_loss, goal: minimize}", &sid);
    memset(task.bytes, 0x42, MS_HASH_BYTES);
    char path[600];

    s_weights_file(f, "a", "weights of a", path, sizeof path);
    json_t *row = json_pack("{s:s, s:f}", "status", "ok", "val_loss", 0.5);
    assert_true(ms_keep_result(keep, &task, &sid, path, row));
    assert_false(s_exists(path));
    char hex[MS_HASH_HEX_LEN + 1]; // a copy: row is freed below
    const char *first_hex =
        json_string_value(json_object_get(row, "weights_blob"));
    assert_non_null(first_hex);
    snprintf(hex, sizeof hex, "%s", first_hex);
    ms_hash_t first;
    assert_int_equal(ms_hash_from_hex(hex, &first), MS_OK);
    assert_true(ms_blob_store_has(f->blobs, &first));
    assert_int_equal(json_integer_value(json_object_get(row, "weights_bytes")),
                     strlen("weights of a"));
    assert_int_equal(s_stats(f).n_pinned, 1);
    json_decref(row);

    s_weights_file(f, "b", "weights of b", path, sizeof path);
    row = json_pack("{s:s, s:f}", "status", "ok", "val_loss", 0.7); // worse
    assert_false(ms_keep_result(keep, &task, &sid, path, row));
    assert_false(s_exists(path));
    assert_null(json_object_get(row, "weights_blob"));
    json_decref(row);

    s_weights_file(f, "c", "weights of c", path, sizeof path);
    row = json_pack("{s:s, s:f}", "status", "failed", "val_loss", 0.1);
    assert_false(ms_keep_result(keep, &task, &sid, path, row)); // not ok
    assert_false(s_exists(path));
    json_decref(row);

    s_weights_file(f, "d", "weights of d", path, sizeof path);
    row = json_pack("{s:s, s:f}", "status", "ok", "val_loss", 0.3); // better
    assert_true(ms_keep_result(keep, &task, &sid, path, row));
    assert_string_not_equal(
        json_string_value(json_object_get(row, "weights_blob")), hex);
    assert_int_equal(s_stats(f).n_pinned, 1); // replaced, not added
    json_decref(row);
    ms_keep_destroy(&keep);
}

//  --------------------------------------------------------------------------
//  A missing weights file is logged and not kept.

static void
test_missing_file_not_kept(void **state)
{
    fix_t *f = *state;
    ms_keep_t *keep = s_keep(f);
    ms_hash_t sid, task;
    s_sweep(f, "all", "{name: val_accuracy, goal: maximize}", &sid);
    memset(task.bytes, 0x43, MS_HASH_BYTES);
    json_t *row = json_pack("{s:s}", "status", "ok");
    assert_false(ms_keep_result(keep, &task, &sid, "/nonexistent/x", row));
    assert_int_equal(f->n_logged, 1);
    assert_int_equal(s_stats(f).n_pinned, 0);
    json_decref(row);
    ms_keep_destroy(&keep);
}

//  --------------------------------------------------------------------------
//  ms_keep_export: nothing for a result that is not ok or has no file
//  (REMOVE removes the file all the same); bytes that are no weights
//  fail with the reason in the diag.

static void
test_export(void **state)
{
    fix_t *f = *state;
    char path[600];
    ms_diag_t diag;
    ms_diag_clear(&diag);
    json_t *failed = json_pack("{s:s}", "status", "failed");
    json_t *ok = json_pack("{s:s}", "status", "ok");
    s_weights_file(f, "e", "not weights", path, sizeof path);
    assert_int_equal(
        ms_keep_export(path, failed, false, f->fx->root, "out", &diag), MS_OK);
    assert_true(s_exists(path)); // kept: REMOVE false
    assert_int_equal(
        ms_keep_export(path, failed, true, f->fx->root, "out", &diag), MS_OK);
    assert_false(s_exists(path));
    assert_int_equal(ms_keep_export(path, ok, true, f->fx->root, "out", &diag),
                     MS_OK); // no file: nothing
    s_weights_file(f, "e", "not weights", path, sizeof path);
    assert_int_not_equal(
        ms_keep_export(path, ok, false, f->fx->root, "out", &diag), MS_OK);
    assert_true(diag.reason[0] != '\0');
    json_decref(failed);
    json_decref(ok);
}

//  --------------------------------------------------------------------------
//  ms_keep_own: the worker's file under the weights dir is exported when
//  an out dir is given (a failed export is reported, and the keep still
//  runs) and kept when there is a keep; alone (no keep) it is exported
//  and removed; with neither nothing happens.

static void
test_own(void **state)
{
    fix_t *f = *state;
    ms_hash_t sid, task;
    s_sweep(f, "all", "{name: val_accuracy, goal: maximize}", &sid);
    memset(task.bytes, 0x44, MS_HASH_BYTES);
    char path[600], want[600];
    ms_keep_weights_path(f->fx->root, &task, path, sizeof path);
    char thex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&task, thex);
    snprintf(want, sizeof want, "%s/%s.weights", f->fx->root, thex);
    assert_string_equal(path, want);
    ms_diag_t diag;
    bool kept = true;
    json_t *row = json_pack("{s:s}", "status", "ok");
    char out[600]; // weights_out_dir
    snprintf(out, sizeof out, "%s/out", f->fx->root);
    assert_int_equal(mkdir(out, 0700), 0);

    // Neither an out dir nor a keep: the file stays.
    s_weights_file(f, thex, "not weights", path, sizeof path);
    assert_int_equal(
        ms_keep_own(NULL, f->fx->root, NULL, &task, &sid, row, &kept, &diag),
        MS_OK);
    assert_false(kept);
    assert_true(s_exists(path));

    // Alone with an out dir: the export fails on bytes that are no
    // weights (reported), the file is removed.
    assert_int_not_equal(
        ms_keep_own(NULL, f->fx->root, out, &task, &sid, row, &kept, &diag),
        MS_OK);
    assert_true(diag.reason[0] != '\0');
    assert_false(kept);
    assert_false(s_exists(path));

    // With a keep and an out dir: the failed export does not stop the
    // keep, which names the blob in the row and removes the file.
    ms_keep_t *keep = s_keep(f);
    s_weights_file(f, thex, "not weights", path, sizeof path);
    assert_int_not_equal(
        ms_keep_own(keep, f->fx->root, out, &task, &sid, row, &kept, &diag),
        MS_OK);
    assert_true(kept);
    assert_non_null(json_object_get(row, "weights_blob"));
    assert_false(s_exists(path));
    assert_int_equal(s_stats(f).n_pinned, 1);

    // With a keep, no out dir: kept, MS_OK.
    json_decref(row);
    row = json_pack("{s:s}", "status", "ok");
    s_weights_file(f, thex, "other bytes", path, sizeof path);
    assert_int_equal(
        ms_keep_own(keep, f->fx->root, NULL, &task, &sid, row, NULL, &diag),
        MS_OK);
    assert_non_null(json_object_get(row, "weights_blob"));
    assert_false(s_exists(path));
    json_decref(row);
    ms_keep_destroy(&keep);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_policy_from_spec, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_best_keeps_improvements_only,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_not_kept, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_export, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_own, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
