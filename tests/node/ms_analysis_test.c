/*  =========================================================================
    ms_analysis_test - grouping, seed averages, plateau rule and the time
    fit on hand-built result rows whose answers are known exactly

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_analysis.h"

//  --------------------------------------------------------------------------
//  A result row of a uniform network.

static json_t *
s_row(const char *act, int width, int depth, int seed, const char *status,
      double val, double test, double sec)
{
    json_t *row =
        json_pack("{s:{s:s, s:i, s:i, s:i, s:s}, s:s, s:f, s:f, s:f, s:i, s:b}",
                  "config", "activation", act, "width", width, "hidden_layers",
                  depth, "seed", seed, "optimizer", "adam", "status", status,
                  "val_accuracy", val, "test_accuracy", test,
                  "seconds_per_epoch", sec, "params", 1000, "counted", 1);
    assert_non_null(row);
    return row;
}

//  --------------------------------------------------------------------------
//  A result row of a network given as hidden_sizes (a JSON array text).

static json_t *
s_row_sizes(const char *act, const char *sizes, int seed, double val,
            double sec)
{
    json_t *hs = json_loads(sizes, 0, NULL);
    assert_non_null(hs);
    json_t *row = json_pack(
        "{s:{s:s, s:o, s:i}, s:s, s:f, s:f, s:f}", "config", "activation", act,
        "hidden_sizes", hs, "seed", seed, "status", "ok", "val_accuracy", val,
        "test_accuracy", val - 0.01, "seconds_per_epoch", sec);
    assert_non_null(row);
    return row;
}

//  --------------------------------------------------------------------------
//  Analyse with the default options; the call must succeed.

static json_t *
s_analyse(const json_t *rows)
{
    json_t *out = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_analysis_compute(rows, NULL, &out, &diag);
    if (rc)
        print_error("%s: %s\n", diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    assert_non_null(out);
    return out;
}

//  --------------------------------------------------------------------------
//  A number field of an object.

static double
s_num(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

//  --------------------------------------------------------------------------
//  An integer field of an object.

static long long
s_int(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    assert_true(json_is_integer(v));
    return (long long) json_integer_value(v);
}

//  The depth sweep of most cases: depths 1, 2, 4, 8 with three seeds;
//  mean val accuracy 0.80, 0.85, 0.87, 0.872 (seeds at mean -0.01, mean,
//  mean +0.01); seconds = 0.5 + 0.25 * depth exactly.
static const int s_depths[4] = {1, 2, 4, 8};
static const double s_val[4] = {0.80, 0.85, 0.87, 0.872};

//  --------------------------------------------------------------------------
//  Append the depth sweep for one (activation, width) to rows.

static void
s_add_sweep(json_t *rows, const char *act, int width, double shift)
{
    for (int d = 0; d < 4; d++)
        for (int seed = 1; seed <= 3; seed++) {
            double val = s_val[d] + shift + 0.01 * (seed - 2);
            double sec = 0.5 + 0.25 * s_depths[d];
            json_array_append_new(rows, s_row(act, width, s_depths[d], seed,
                                              "ok", val, val - 0.02, sec));
        }
}

static void
test_plateau_and_exact_fit(void **state)
{
    (void) state;
    json_t *rows = json_array();
    s_add_sweep(rows, "relu", 64, 0.0);
    json_t *a = s_analyse(rows);
    assert_non_null(strstr(json_string_value(json_object_get(a, "rule")),
                           "within 0.005 (absolute)"));
    assert_int_equal(s_int(a, "n_rows"), 12);
    assert_int_equal(s_int(a, "n_ok"), 12);
    json_t *groups = json_object_get(a, "groups");
    assert_int_equal(json_array_size(groups), 1);
    json_t *g = json_array_get(groups, 0);
    assert_string_equal(json_string_value(json_object_get(g, "activation")),
                        "relu");
    assert_int_equal(s_int(g, "width"), 64);
    //  0.87 is within 0.005 of the best 0.872; 0.85 is not.
    assert_int_equal(s_int(g, "plateau_depth"), 4);
    assert_int_equal(s_int(g, "best_depth"), 8);
    assert_true(fabs(s_num(g, "best_val_accuracy") - 0.872) < 1e-12);
    json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.25) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 0.5) < 1e-12);
    assert_true(fabs(s_num(fit, "r2") - 1.0) < 1e-12);
    assert_int_equal(s_int(fit, "n"), 12);
    json_t *depths = json_object_get(g, "depths");
    assert_int_equal(json_array_size(depths), 4);
    for (int d = 0; d < 4; d++) {
        json_t *e = json_array_get(depths, d);
        assert_int_equal(s_int(e, "depth"), s_depths[d]);
        assert_int_equal(s_int(e, "n"), 3);
        assert_int_equal(s_int(e, "n_diverged"), 0);
        assert_true(fabs(s_num(e, "val_accuracy_mean") - s_val[d]) < 1e-12);
        assert_true(fabs(s_num(e, "test_accuracy_mean") - (s_val[d] - 0.02)) <
                    1e-12);
        assert_true(fabs(s_num(e, "seconds_per_epoch_mean") -
                         (0.5 + 0.25 * s_depths[d])) < 1e-12);
    }
    json_decref(a);
    //  A tolerance of 0 puts the plateau at the best depth, 0.1 at the
    //  first; a negative one is refused.
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    assert_true(opts.plateau_tolerance == 0.005);
    ms_diag_t diag;
    opts.plateau_tolerance = 0.0;
    assert_int_equal(ms_analysis_compute(rows, &opts, &a, &diag), MS_OK);
    assert_int_equal(
        s_int(json_array_get(json_object_get(a, "groups"), 0), "plateau_depth"),
        8);
    json_decref(a);
    opts.plateau_tolerance = 0.1;
    assert_int_equal(ms_analysis_compute(rows, &opts, &a, &diag), MS_OK);
    assert_int_equal(
        s_int(json_array_get(json_object_get(a, "groups"), 0), "plateau_depth"),
        1);
    json_decref(a);
    opts.plateau_tolerance = -1;
    assert_int_equal(ms_analysis_compute(rows, &opts, &a, &diag),
                     MS_ERR_INVALID);
    assert_null(a);
    assert_string_equal(diag.where, "plateau_tolerance");
    json_decref(rows);
}

static void
test_seed_averaging(void **state)
{
    (void) state;
    json_t *rows = json_array();
    //  Val 0.80, 0.82, 0.84: mean 0.82, population std sqrt(0.0008 / 3).
    //  Times 1, 2, 3 at one depth: no fit.
    double vals[3] = {0.80, 0.82, 0.84};
    for (int s = 0; s < 3; s++)
        json_array_append_new(rows, s_row("tanh", 32, 3, s + 1, "ok", vals[s],
                                          vals[s] - 0.1, 1.0 + s));
    json_t *a = s_analyse(rows);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    json_t *e = json_array_get(json_object_get(g, "depths"), 0);
    assert_int_equal(s_int(e, "n"), 3);
    assert_true(fabs(s_num(e, "val_accuracy_mean") - 0.82) < 1e-12);
    assert_true(fabs(s_num(e, "val_accuracy_std") - sqrt(0.0008 / 3)) < 1e-12);
    assert_true(fabs(s_num(e, "test_accuracy_mean") - 0.72) < 1e-12);
    assert_true(fabs(s_num(e, "test_accuracy_std") - sqrt(0.0008 / 3)) < 1e-12);
    assert_true(fabs(s_num(e, "seconds_per_epoch_mean") - 2.0) < 1e-12);
    //  A single depth: plateau = best = that depth, and no time fit.
    assert_int_equal(s_int(g, "plateau_depth"), 3);
    assert_int_equal(s_int(g, "best_depth"), 3);
    assert_true(json_is_null(json_object_get(g, "time_fit")));
    char *text = ms_analysis_format_text(a);
    assert_non_null(strstr(text, "time fit: needs ok runs at two or more "
                                 "depths"));
    free(text);
    json_decref(a);
    json_decref(rows);
}

static void
test_groups_and_hidden_sizes(void **state)
{
    (void) state;
    json_t *rows = json_array();
    s_add_sweep(rows, "tanh", 256, 0.0);
    s_add_sweep(rows, "relu", 256, 0.05);
    s_add_sweep(rows, "relu", 64, -0.05);
    //  The scikit-learn grid's sizes: (10), (100), (10,10), (100,10).
    json_array_append_new(rows, s_row_sizes("elu", "[10]", 1, 0.80, 1.0));
    json_array_append_new(rows, s_row_sizes("elu", "[100]", 1, 0.85, 2.0));
    json_array_append_new(rows, s_row_sizes("elu", "[10, 10]", 1, 0.81, 1.5));
    json_array_append_new(rows, s_row_sizes("elu", "[100, 10]", 1, 0.86, 3.0));
    json_t *a = s_analyse(rows);
    json_t *groups = json_object_get(a, "groups");
    assert_int_equal(json_array_size(groups), 5);
    //  Sorted by activation, then width.
    const char *acts[5] = {"elu", "elu", "relu", "relu", "tanh"};
    int widths[5] = {10, 100, 64, 256, 256};
    for (int i = 0; i < 5; i++) {
        json_t *g = json_array_get(groups, i);
        assert_string_equal(json_string_value(json_object_get(g, "activation")),
                            acts[i]);
        assert_int_equal(s_int(g, "width"), widths[i]);
    }
    //  (100) and (100, 10): one group of width 100 at depths 1 and 2.
    json_t *g = json_array_get(groups, 1);
    json_t *depths = json_object_get(g, "depths");
    assert_int_equal(json_array_size(depths), 2);
    assert_int_equal(s_int(json_array_get(depths, 0), "depth"), 1);
    assert_int_equal(s_int(json_array_get(depths, 1), "depth"), 2);
    assert_int_equal(s_int(g, "best_depth"), 2);
    assert_int_equal(s_int(g, "plateau_depth"), 2); // 0.85 < 0.86 - 0.005
    json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 1.0) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 1.0) < 1e-12);
    //  Two groups of the same numbers shifted: same plateau.
    assert_int_equal(s_int(json_array_get(groups, 2), "plateau_depth"), 4);
    assert_int_equal(s_int(json_array_get(groups, 3), "plateau_depth"), 4);
    assert_true(fabs(s_num(json_array_get(groups, 3), "best_val_accuracy") -
                     0.922) < 1e-12);
    json_decref(a);
    json_decref(rows);
}

static void
test_plateau_tolerance_boundary(void **state)
{
    (void) state;
    //  0.895 is exactly 0.005 below 0.9: within the rule ("no more than").
    json_t *rows = json_array();
    json_array_append_new(rows, s_row("relu", 8, 1, 1, "ok", 0.5, 0.5, 1));
    json_array_append_new(rows, s_row("relu", 8, 2, 1, "ok", 0.895, 0.8, 2));
    json_array_append_new(rows, s_row("relu", 8, 3, 1, "ok", 0.9, 0.8, 3));
    json_array_append_new(rows, s_row("relu", 8, 5, 1, "ok", 0.894, 0.8, 5));
    json_t *a = s_analyse(rows);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    assert_int_equal(s_int(g, "plateau_depth"), 2);
    assert_int_equal(s_int(g, "best_depth"), 3);
    json_decref(a);
    json_decref(rows);
}

static void
test_diverged_and_failed_excluded(void **state)
{
    (void) state;
    json_t *rows = json_array();
    s_add_sweep(rows, "sigmoid", 64, 0.0);
    //  Diverged runs with junk metrics, at depth 8 and at a new depth 16
    //  where nothing trained; a failed run; an uncounted replica.
    json_array_append_new(rows,
                          s_row("sigmoid", 64, 8, 4, "diverged", 0.1, 0.1, 99));
    json_array_append_new(
        rows, s_row("sigmoid", 64, 16, 1, "diverged", 0.99, 0.99, 99));
    json_array_append_new(
        rows, s_row("sigmoid", 64, 16, 2, "diverged", 0.99, 0.99, 99));
    json_array_append_new(rows,
                          s_row("sigmoid", 64, 2, 9, "failed", 0.0, 0.0, 99));
    json_t *replica = s_row("sigmoid", 64, 1, 1, "ok", 0.0, 0.0, 99);
    json_object_set_new(replica, "counted", json_false());
    json_array_append_new(rows, replica);
    //  A diverged row may carry null metrics.
    json_t *nulls = s_row("sigmoid", 64, 16, 3, "diverged", 0, 0, 0);
    json_object_set_new(nulls, "val_accuracy", json_null());
    json_object_set_new(nulls, "seconds_per_epoch", json_null());
    json_array_append_new(rows, nulls);
    json_t *a = s_analyse(rows);
    assert_int_equal(s_int(a, "n_rows"), 18);
    assert_int_equal(s_int(a, "n_ok"), 12);
    assert_int_equal(s_int(a, "n_diverged"), 4);
    assert_int_equal(s_int(a, "n_failed"), 1);
    assert_int_equal(s_int(a, "n_not_counted"), 1);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    json_t *depths = json_object_get(g, "depths");
    assert_int_equal(json_array_size(depths), 5);
    json_t *d2 = json_array_get(depths, 1);
    assert_int_equal(s_int(d2, "n"), 3);
    assert_int_equal(s_int(d2, "n_failed"), 1);
    json_t *d8 = json_array_get(depths, 3);
    assert_int_equal(s_int(d8, "n"), 3);
    assert_int_equal(s_int(d8, "n_diverged"), 1);
    assert_true(fabs(s_num(d8, "val_accuracy_mean") - 0.872) < 1e-12);
    json_t *d16 = json_array_get(depths, 4);
    assert_int_equal(s_int(d16, "depth"), 16);
    assert_int_equal(s_int(d16, "n"), 0);
    assert_int_equal(s_int(d16, "n_diverged"), 3);
    assert_true(json_is_null(json_object_get(d16, "val_accuracy_mean")));
    assert_true(json_is_null(json_object_get(d16, "val_accuracy_std")));
    assert_true(json_is_null(json_object_get(d16, "seconds_per_epoch_mean")));
    //  Nothing of the excluded rows moved the answers.
    assert_int_equal(s_int(g, "plateau_depth"), 4);
    assert_int_equal(s_int(g, "best_depth"), 8);
    json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.25) < 1e-12);
    assert_true(fabs(s_num(fit, "r2") - 1.0) < 1e-12);
    json_decref(a);
    //  A group where every run diverged has no plateau and no fit.
    json_t *bad = json_array();
    json_array_append_new(bad, s_row("linear", 4, 1, 1, "diverged", 0, 0, 1));
    json_array_append_new(bad, s_row("linear", 4, 2, 1, "diverged", 0, 0, 2));
    a = s_analyse(bad);
    g = json_array_get(json_object_get(a, "groups"), 0);
    assert_true(json_is_null(json_object_get(g, "plateau_depth")));
    assert_true(json_is_null(json_object_get(g, "best_depth")));
    assert_true(json_is_null(json_object_get(g, "best_val_accuracy")));
    assert_true(json_is_null(json_object_get(g, "time_fit")));
    char *text = ms_analysis_format_text(a);
    assert_non_null(strstr(text, "no plateau: no run of this group"));
    free(text);
    json_decref(a);
    json_decref(bad);
    json_decref(rows);
}

static void
test_noisy_fit(void **state)
{
    (void) state;
    //  Points (1,1), (2,3), (3,2): slope 0.5, intercept 1, R^2 0.25.
    json_t *rows = json_array();
    json_array_append_new(rows, s_row("gelu", 16, 1, 1, "ok", 0.5, 0.5, 1));
    json_array_append_new(rows, s_row("gelu", 16, 2, 1, "ok", 0.5, 0.5, 3));
    json_array_append_new(rows, s_row("gelu", 16, 3, 1, "ok", 0.5, 0.5, 2));
    json_t *a = s_analyse(rows);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.5) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 1.0) < 1e-12);
    assert_true(fabs(s_num(fit, "r2") - 0.25) < 1e-12);
    //  Equal accuracies: the shallowest depth is both best and plateau.
    assert_int_equal(s_int(g, "best_depth"), 1);
    assert_int_equal(s_int(g, "plateau_depth"), 1);
    json_decref(a);
    json_decref(rows);
}

static void
test_empty_input(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_t *a = s_analyse(rows);
    assert_int_equal(json_array_size(json_object_get(a, "groups")), 0);
    assert_int_equal(s_int(a, "n_rows"), 0);
    char *text = ms_analysis_format_text(a);
    assert_non_null(text);
    assert_non_null(strstr(text, "Analysis of 0 result rows"));
    assert_non_null(strstr(text, "No results to analyse yet."));
    free(text);
    //  The JSON serialises (no NaN anywhere).
    char *dump = json_dumps(a, JSON_SORT_KEYS);
    assert_non_null(dump);
    free(dump);
    json_decref(a);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Expect rows (JSON text) to be refused with where and a reason part.

static void
s_expect_invalid(const char *text, const char *where, const char *reason)
{
    json_t *rows = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(rows);
    json_t *out = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_analysis_compute(rows, NULL, &out, &diag);
    if (rc != MS_ERR_INVALID || strcmp(diag.where, where) != 0 ||
        !strstr(diag.reason, reason))
        print_error("rc %d where \"%s\" reason \"%s\"\n", rc, diag.where,
                    diag.reason);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_null(out);
    assert_string_equal(diag.where, where);
    assert_non_null(strstr(diag.reason, reason));
    json_decref(rows);
}

static void
test_bad_rows(void **state)
{
    (void) state;
    s_expect_invalid("{}", "rows", "must be a JSON array");
    s_expect_invalid("[1]", "rows[0]", "must be an object");
    s_expect_invalid("[{\"status\":\"ok\",\"config\":{\"activation\":\"relu\","
                     "\"width\":4,\"hidden_layers\":1}},{\"status\":\"ok\"}]",
                     "rows[1].config", "missing or not an object");
    s_expect_invalid("[{\"status\":\"done\",\"config\":{}}]", "rows[0].status",
                     "unknown status \"done\"");
    s_expect_invalid("[{\"config\":{}}]", "rows[0].status", "missing");
    s_expect_invalid("[{\"status\":\"ok\",\"config\":{\"width\":4,"
                     "\"hidden_layers\":1}}]",
                     "rows[0].config.activation", "missing");
    s_expect_invalid("[{\"status\":\"ok\",\"config\":{\"activation\":\"relu\","
                     "\"width\":4}}]",
                     "rows[0].config.hidden_layers", "not an integer");
    s_expect_invalid("[{\"status\":\"ok\",\"config\":{\"activation\":\"relu\","
                     "\"hidden_layers\":2}}]",
                     "rows[0].config.width", "not a positive integer");
    s_expect_invalid("[{\"status\":\"ok\",\"config\":{\"activation\":\"relu\","
                     "\"hidden_sizes\":[10,\"x\"]}}]",
                     "rows[0].config.hidden_sizes",
                     "entry 1 must be a positive integer");
    s_expect_invalid("[{\"status\":\"ok\",\"config\":{\"activation\":\"relu\","
                     "\"hidden_layers\":1,\"width\":4},"
                     "\"val_accuracy\":\"high\"}]",
                     "rows[0].val_accuracy", "must be a number or null");
}

static void
test_format_text(void **state)
{
    (void) state;
    json_t *rows = json_array();
    s_add_sweep(rows, "relu", 64, 0.0);
    json_array_append_new(rows,
                          s_row("relu", 64, 8, 4, "diverged", 0.1, 0.1, 99));
    json_t *a = s_analyse(rows);
    char *text = ms_analysis_format_text(a);
    assert_non_null(text);
    print_message("%s", text);
    assert_non_null(strstr(text, "Analysis of 13 result rows (12 ok, 1 "
                                 "diverged, 0 failed)"));
    assert_non_null(strstr(text, "Rule: plateau depth: the smallest depth"));
    assert_non_null(strstr(text, "\nrelu, width 64\n"));
    assert_non_null(strstr(text, "      8    3    1    0.8720 +- "));
    assert_non_null(strstr(text, "plateau at depth 4; best depth 8 (val "
                                 "accuracy 0.8720)"));
    assert_non_null(strstr(text, "time per epoch = 0.5 + 0.25 * depth s "
                                 "(R^2 1.000, 12 runs)"));
    free(text);
    json_decref(a);
    json_decref(rows);
}

static void
test_failed_rows_counted(void **state)
{
    (void) state;
    //  As ms_results gives them: 12 tasks, 4 failed, each failed task a
    //  synthesized row with "counted": false and null metrics.
    json_t *rows = json_array();
    for (int i = 0; i < 12; i++) {
        bool failed = i % 3 == 0;
        json_t *row = s_row("relu", 64, 1 + i % 2, i, failed ? "failed" : "ok",
                            0.8, 0.79, 0.5);
        if (failed) {
            json_object_set_new(row, "counted", json_false());
            json_object_set_new(row, "val_accuracy", json_null());
            json_object_set_new(row, "test_accuracy", json_null());
        }
        json_array_append_new(rows, row);
    }
    //  An ok duplicate that is not counted stays out.
    json_t *dup = s_row("relu", 64, 1, 1, "ok", 0.1, 0.1, 9);
    json_object_set_new(dup, "counted", json_false());
    json_array_append_new(rows, dup);
    json_t *a = s_analyse(rows);
    assert_int_equal(s_int(a, "n_rows"), 13);
    assert_int_equal(s_int(a, "n_ok"), 8);
    assert_int_equal(s_int(a, "n_failed"), 4);
    assert_int_equal(s_int(a, "n_not_counted"), 1);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    json_t *d1 = json_array_get(json_object_get(g, "depths"), 0);
    assert_int_equal(s_int(d1, "n_failed"), 2);
    assert_int_equal(s_int(d1, "n"), 4);
    char *text = ms_analysis_format_text(a);
    assert_non_null(strstr(text, "Analysis of 13 result rows (8 ok, 0 "
                                 "diverged, 4 failed)"));
    assert_non_null(strstr(text, "(2 failed)"));
    free(text);
    json_decref(a);
    json_decref(rows);
}

static void
test_counts_per_mean(void **state)
{
    (void) state;
    //  Depth 1: three ok runs, two without validation accuracy
    //  (validation_split 0); depth 2: one run.
    json_t *rows = json_array();
    for (int seed = 1; seed <= 3; seed++) {
        json_t *row =
            s_row("relu", 8, 1, seed, "ok", 0.9, 0.8 + 0.01 * seed, 1.0);
        if (seed > 1)
            json_object_set_new(row, "val_accuracy", json_null());
        json_array_append_new(rows, row);
    }
    json_array_append_new(rows, s_row("relu", 8, 2, 1, "ok", 0.91, 0.9, 2.0));
    json_t *a = s_analyse(rows);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    json_t *d1 = json_array_get(json_object_get(g, "depths"), 0);
    assert_int_equal(s_int(d1, "n"), 3);
    assert_int_equal(s_int(d1, "n_val_accuracy"), 1);
    assert_int_equal(s_int(d1, "n_test_accuracy"), 3);
    assert_int_equal(s_int(d1, "n_seconds"), 3);
    //  A std over one value is null, not 0.
    assert_true(json_is_null(json_object_get(d1, "val_accuracy_std")));
    assert_true(json_is_number(json_object_get(d1, "test_accuracy_std")));
    char *text = ms_analysis_format_text(a);
    print_message("%s", text);
    assert_non_null(strstr(text, "0.9000 +-    n/a (n=1)"));
    assert_null(strstr(text, "+- 0.0000"));
    free(text);
    json_decref(a);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Set a config key of a row to a string.

static json_t *
s_with(json_t *row, const char *key, const char *value)
{
    json_object_set_new(json_object_get(row, "config"), key,
                        json_string(value));
    return row;
}

static void
test_swept_parameters_group(void **state)
{
    (void) state;
    //  optimizer [adam, sgd] x depth [1, 2] x 2 seeds, init following the
    //  activation: adam reaches 0.9, sgd 0.5; pooled they would read 0.7.
    json_t *rows = json_array();
    const char *opt[2] = {"adam", "sgd"};
    for (int o = 0; o < 2; o++)
        for (int d = 1; d <= 2; d++)
            for (int seed = 1; seed <= 2; seed++) {
                double val = o == 0 ? 0.9 : 0.5;
                json_t *row = s_row("relu", 64, d, seed, "ok", val, val, 1.0);
                s_with(s_with(row, "optimizer", opt[o]), "init", "he_normal");
                json_array_append_new(rows, row);
            }
    for (int seed = 1; seed <= 2; seed++)
        json_array_append_new(
            rows, s_with(s_with(s_row("tanh", 64, 1, seed, "ok", 0.6, 0.6, 1.0),
                                "optimizer", "sgd"),
                         "init", "xavier_uniform"));
    json_t *a = s_analyse(rows);
    json_t *keys = json_object_get(a, "group_keys");
    assert_int_equal(json_array_size(keys), 1);
    assert_string_equal(json_string_value(json_array_get(keys, 0)),
                        "optimizer");
    json_t *groups = json_object_get(a, "groups");
    assert_int_equal(json_array_size(groups), 3);
    json_t *g0 = json_array_get(groups, 0), *g1 = json_array_get(groups, 1);
    assert_string_equal(json_string_value(json_object_get(g0, "activation")),
                        "relu");
    assert_int_equal(s_int(g0, "width"), 64);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(g0, "params"), "optimizer")),
                        "adam");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(g1, "params"), "optimizer")),
                        "sgd");
    json_t *d = json_array_get(json_object_get(g1, "depths"), 0);
    assert_int_equal(s_int(d, "n"), 2);
    assert_true(fabs(s_num(d, "val_accuracy_mean") - 0.5) < 1e-12);
    assert_true(fabs(s_num(g0, "best_val_accuracy") - 0.9) < 1e-12);
    char *text = ms_analysis_format_text(a);
    print_message("%s", text);
    assert_non_null(strstr(text, "\nrelu, width 64, optimizer adam\n"));
    assert_non_null(strstr(text, "\nrelu, width 64, optimizer sgd\n"));
    assert_non_null(strstr(text, "\ntanh, width 64, optimizer sgd\n"));
    assert_non_null(strstr(text, "every other swept parameter"));
    free(text);
    json_t *same = ms_analysis_group_keys(rows);
    assert_true(json_equal(same, keys));
    json_decref(same);
    json_decref(a);
    json_decref(rows);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plateau_and_exact_fit),
        cmocka_unit_test(test_seed_averaging),
        cmocka_unit_test(test_groups_and_hidden_sizes),
        cmocka_unit_test(test_plateau_tolerance_boundary),
        cmocka_unit_test(test_diverged_and_failed_excluded),
        cmocka_unit_test(test_noisy_fit),
        cmocka_unit_test(test_empty_input),
        cmocka_unit_test(test_bad_rows),
        cmocka_unit_test(test_format_text),
        cmocka_unit_test(test_failed_rows_counted),
        cmocka_unit_test(test_counts_per_mean),
        cmocka_unit_test(test_swept_parameters_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
