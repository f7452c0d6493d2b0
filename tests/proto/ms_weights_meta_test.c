/*  =========================================================================
    ms_weights_meta_test - the metadata JSON of a saved network: canonical
    round trip, refusals, the sizes check, reading either file format

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_onnx.h"
#include "ms_param_layout.h"
#include "ms_weights.h"
#include "ms_weights_meta.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

//  --------------------------------------------------------------------------
//  A metadata of a 3-feature standard-scaled network 3-4-2.

static ms_weights_meta_t *
s_meta(void)
{
    ms_weights_meta_t *m = ms_weights_meta_new();
    assert_non_null(m);
    assert_int_equal(ms_train_config_set_uniform(&m->cfg, 1, 4), MS_OK);
    m->n_outputs = 2;
    m->input.scale = MS_SCALE_STANDARD;
    m->input.n_features = 3;
    m->input.shift = malloc(3 * sizeof(double));
    m->input.divisor = malloc(3 * sizeof(double));
    for (int j = 0; j < 3; j++) {
        m->input.shift[j] = 0.1 * j + 1.0 / 3.0;
        m->input.divisor[j] = 1.0 + j;
    }
    return m;
}

//  --------------------------------------------------------------------------
//  Encode, decode, encode: the same bytes; the numbers exact.

static void
test_round_trip(void **state)
{
    (void) state;
    ms_weights_meta_t *m = s_meta();
    snprintf(m->task_id, sizeof m->task_id, "%064x", 0xab);
    m->numerics = 3;
    char *text = ms_weights_meta_encode(m);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"meshsweep_weights\":1"));
    ms_weights_meta_t *back = NULL;
    assert_int_equal(ms_weights_meta_decode(text, &back, NULL), MS_OK);
    assert_int_equal(back->input.n_features, 3);
    assert_true(back->input.shift[0] == 1.0 / 3.0);
    assert_true(back->input.divisor[2] == 3.0);
    assert_string_equal(back->task_id, m->task_id);
    assert_int_equal(back->numerics, 3);
    assert_int_equal(back->n_outputs, 2);
    assert_null(back->csv); // not trained on CSV: no schema
    char *again = ms_weights_meta_encode(back);
    assert_string_equal(text, again);
    free(again);
    free(text);
    ms_weights_meta_destroy(&back);
    ms_weights_meta_destroy(&m);
    assert_null(m);
}

//  --------------------------------------------------------------------------
//  One edit of good metadata text (the first from becomes to) that decode
//  refuses, its reason holding reason.

typedef struct {
    const char *from, *to, *reason;
} s_edit_t;

static void
s_expect_refused(const char *good, const s_edit_t *edits, size_t n)
{
    for (size_t c = 0; c < n; c++) {
        char *bad = malloc(strlen(good) + 64);
        const char *at = strstr(good, edits[c].from);
        assert_non_null(at);
        size_t head = (size_t) (at - good);
        memcpy(bad, good, head);
        strcpy(bad + head, edits[c].to);
        strcat(bad, at + strlen(edits[c].from));
        ms_weights_meta_t *out = NULL;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        assert_int_equal(ms_weights_meta_decode(bad, &out, &diag),
                         MS_ERR_INVALID);
        assert_null(out);
        if (!strstr(diag.reason, edits[c].reason))
            fail_msg("edit %zu: reason '%s'", c, diag.reason);
        free(bad);
    }
}

//  --------------------------------------------------------------------------
//  Refusals, each naming what is wrong.

static void
test_refusals(void **state)
{
    (void) state;
    ms_weights_meta_t *m = s_meta();
    char *good = ms_weights_meta_encode(m);
    ms_weights_meta_destroy(&m);
    const s_edit_t cases[] = {
        {"\"meshsweep_weights\":1", "\"meshsweep_weights\":9",
         "not meshsweep's"},
        {"\"divisor\":[1.0", "\"divisor\":[0.0", "divisor 0"},
        {"\"features\":3", "\"features\":4", "not an array of 4"},
        {"\"activation\":\"relu\"", "\"activation\":\"rleu\"", "config."},
        {"\"outputs\":2", "\"outputs\":0", "outputs"},
    };
    s_expect_refused(good, cases, sizeof cases / sizeof *cases);
    ms_weights_meta_t *out = NULL;
    assert_int_equal(ms_weights_meta_decode("{", &out, NULL), MS_ERR_INVALID);
    free(good);
}

//  --------------------------------------------------------------------------
//  The CSV schema travels: encoded under "csv", decoded into a reference
//  dataset with the same columns, categories, rule and fills (the class
//  names from "classes"); a damaged schema is refused naming it; a file
//  without one decodes with csv NULL.

static void
test_csv_schema(void **state)
{
    (void) state;
    ms_weights_meta_t *m = s_meta();
    const char *cols[3] = {"a", "colour", "y"};
    const char *classes[2] = {"no", "yes"};
    const char *colours[2] = {"blue", "red"};
    const char *const *cats[3] = {NULL, colours, NULL};
    bool categorical[3] = {false, true, false};
    uint32_t n_cats[3] = {0, 2, 0};
    float fill[3] = {2.5f, 0.25f, 0.75f};
    ms_dataset_csv_schema_t sc = {
        .n_columns = 3,
        .column_names = cols,
        .label_column = 2,
        .n_classes = 2,
        .class_names = classes,
        .categorical = categorical,
        .n_categories = n_cats,
        .categories = cats,
        .n_features = 3,
        .fill = fill,
        .missing = MS_DATASET_MISSING_MEAN,
    };
    ms_dataset_t *ref = NULL;
    assert_int_equal(ms_dataset_csv_reference_new(&ref, &sc, NULL), MS_OK);
    assert_int_equal(ms_weights_meta_set_classes(m, classes, 2), MS_OK);
    assert_int_equal(ms_weights_meta_set_csv(m, ref), MS_OK);
    ms_dataset_destroy(&ref);
    char *text = ms_weights_meta_encode(m);
    assert_non_null(text);
    assert_non_null(strstr(
        text, "\"csv\":{\"categorical\":[{\"categories\":[\"blue\",\"red\"],"
              "\"column\":1}],\"columns\":[\"a\",\"colour\",\"y\"],"
              "\"fill\":[2.5,0.25,0.75],\"label\":2,\"missing\":\"mean\"}"));
    ms_weights_meta_t *back = NULL;
    assert_int_equal(ms_weights_meta_decode(text, &back, NULL), MS_OK);
    assert_non_null(back->csv);
    ms_dataset_csv_schema_t got;
    assert_int_equal(ms_dataset_csv_schema(back->csv, &got), MS_OK);
    assert_int_equal(got.label_column, 2);
    assert_int_equal(got.n_classes, 2);
    assert_string_equal(got.class_names[1], "yes");
    assert_true(got.categorical[1]);
    assert_string_equal(got.categories[1][1], "red");
    assert_true(got.fill[1] == 0.25f);
    assert_int_equal(got.missing, MS_DATASET_MISSING_MEAN);
    assert_string_equal(ms_dataset_feature_name(back->csv, 2), "colour=red");
    char *again = ms_weights_meta_encode(back);
    assert_string_equal(text, again);
    free(again);
    ms_weights_meta_destroy(&back);
    const s_edit_t cases[] = {
        {"\"red\"],", "\"red\",\"x\"],", "csv: schema.features"},
        {"[\"blue\",\"red\"]", "[\"red\",\"blue\"]", "sorted"},
        {"\"mean\"", "\"average\"", "csv.missing"},
        {"[2.5,0.25,0.75]", "[2.5]", "csv.fill"},
        {"\"label\":2", "\"label\":7", "csv: schema"},
        {"\"column\":1", "\"column\":2", "csv: schema"},
    };
    s_expect_refused(text, cases, sizeof cases / sizeof *cases);
    free(text);
    //  Data not from CSV: nothing kept.
    ms_dataset_t *idx = ms_dataset_new(1, 3, 2);
    assert_int_equal(ms_weights_meta_set_csv(m, idx), MS_OK);
    assert_null(m->csv);
    ms_dataset_destroy(&idx);
    ms_weights_meta_destroy(&m);
}

//  --------------------------------------------------------------------------
//  Reading files: a native version 2 file and an ONNX file give the same
//  network; a version 1 file and a truncated one are refused naming the
//  path; weights of other sizes do not match.

static void
test_read_file(void **state)
{
    (void) state;
    ms_weights_meta_t *m = s_meta();
    uint32_t sizes[3];
    assert_int_equal(ms_weights_meta_layer_sizes(m, sizes, 3), 3);
    int64_t n = ms_param_layout_n_params(&m->cfg, sizes, 3);
    assert_int_equal(n, 3 * 4 + 4 + 4 * 2 + 2);
    float params[26];
    for (int k = 0; k < 26; k++)
        params[k] = (float) k - 3.5f;
    char dir[] = "/tmp/ms_weights_meta_testXXXXXX";
    assert_non_null(mkdtemp(dir));
    char native[256], onnx[256], v1[256], cut[256];
    snprintf(native, sizeof native, "%s/n.weights", dir);
    snprintf(onnx, sizeof onnx, "%s/n.onnx", dir);
    snprintf(v1, sizeof v1, "%s/v1.weights", dir);
    snprintf(cut, sizeof cut, "%s/cut.weights", dir);
    char *text = ms_weights_meta_encode(m);
    assert_int_equal(
        ms_weights_write_file(native, sizes, 3, params, n, text, NULL), MS_OK);
    assert_int_equal(ms_onnx_write_file(onnx, m, params, n, NULL), MS_OK);
    assert_int_equal(ms_weights_write_file(v1, sizes, 3, params, n, NULL, NULL),
                     MS_OK);
    const char *paths[] = {native, onnx};
    for (int p = 0; p < 2; p++) {
        ms_weights_meta_t *got = NULL;
        ms_weights_t *w = NULL;
        assert_int_equal(ms_weights_meta_read_file(paths[p], &got, &w, NULL),
                         MS_OK);
        assert_memory_equal(w->params, params, sizeof params);
        assert_int_equal(got->input.scale, MS_SCALE_STANDARD);
        ms_weights_destroy(&w);
        ms_weights_meta_destroy(&got);
    }
    ms_weights_meta_t *got = NULL;
    ms_weights_t *w = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_weights_meta_read_file(v1, &got, &w, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, v1);
    assert_non_null(strstr(diag.reason, "no metadata"));
    assert_int_equal(truncate(native, 40), 0);
    ms_diag_clear(&diag);
    assert_int_equal(ms_weights_meta_read_file(native, &got, &w, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, native);
    assert_non_null(strstr(diag.reason, "truncated"));
    // The metadata says width 4; weights of width 5 do not match.
    ms_weights_t other = {
        .n_sizes = 3, .sizes = (uint32_t[]){3, 5, 2}, .n_params = 32};
    ms_diag_clear(&diag);
    assert_int_equal(ms_weights_meta_match(m, &other, &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "3-5-2"));
    assert_non_null(strstr(diag.reason, "3-4-2"));
    unlink(native);
    unlink(onnx);
    unlink(v1);
    rmdir(dir);
    free(text);
    ms_weights_meta_destroy(&m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_csv_schema),
        cmocka_unit_test(test_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
