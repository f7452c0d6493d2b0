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
                           "the larger of 0.005 (absolute)"));
    assert_string_equal(json_string_value(json_object_get(a, "x")),
                        "hidden_layers");
    assert_string_equal(json_string_value(json_object_get(a, "x_label")),
                        "depth");
    assert_string_equal(json_string_value(json_object_get(a, "x_scale")),
                        "linear");
    json_t *metric = json_object_get(a, "metric");
    assert_string_equal(json_string_value(json_object_get(metric, "name")),
                        "val_accuracy");
    assert_string_equal(json_string_value(json_object_get(metric, "goal")),
                        "maximize");
    assert_int_equal(s_int(a, "n_rows"), 12);
    assert_int_equal(s_int(a, "n_ok"), 12);
    json_t *groups = json_object_get(a, "groups");
    assert_int_equal(json_array_size(groups), 1);
    json_t *g = json_array_get(groups, 0);
    assert_string_equal(json_string_value(json_object_get(g, "activation")),
                        "relu");
    assert_int_equal(s_int(g, "width"), 64);
    //  Seeds at mean -0.01, mean, mean +0.01: s = 0.01, and the best
    //  point's 95% half-width t(0.975, 2) 0.01 / sqrt(3) = 0.024841 is
    //  wider than the tolerance: the level is 0.872 - 0.024841 = 0.847159,
    //  which depth 2's mean 0.85 reaches and depth 1's interval (up to
    //  0.824841) does not.
    assert_int_equal(s_int(g, "plateau_from"), 2);
    assert_int_equal(s_int(g, "plateau_to"), 2);
    assert_true(json_is_true(json_object_get(g, "plateau_reached")));
    assert_int_equal(s_int(g, "best_x"), 8);
    assert_true(fabs(s_num(g, "best_lo") - (0.872 - 0.0248417)) < 1e-6);
    assert_string_equal(
        json_string_value(json_object_get(g, "plateau_text")),
        "val_accuracy stops improving at depth 2 (best 0.872 at depth 8, 95% "
        "interval 0.8472 to 0.8968, n=3)");
    assert_true(fabs(s_num(g, "best_mean") - 0.872) < 1e-12);
    json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.25) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 0.5) < 1e-12);
    assert_true(fabs(s_num(fit, "r2") - 1.0) < 1e-12);
    assert_int_equal(s_int(fit, "n"), 12);
    json_t *depths = json_object_get(g, "points");
    assert_int_equal(json_array_size(depths), 4);
    for (int d = 0; d < 4; d++) {
        json_t *e = json_array_get(depths, d);
        assert_int_equal(s_int(e, "x"), s_depths[d]);
        assert_int_equal(s_int(e, "n"), 3);
        assert_int_equal(s_int(e, "n_diverged"), 0);
        assert_true(fabs(s_num(e, "val_accuracy_mean") - s_val[d]) < 1e-12);
        assert_true(fabs(s_num(e, "test_accuracy_mean") - (s_val[d] - 0.02)) <
                    1e-12);
        assert_true(fabs(s_num(e, "seconds_per_epoch_mean") -
                         (0.5 + 0.25 * s_depths[d])) < 1e-12);
    }
    json_decref(a);
    //  A tolerance of 0 leaves the interval's level; 0.1 is wider and
    //  reaches depth 1; a negative one is refused.
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    assert_true(opts.plateau_tolerance == 0.005);
    ms_diag_t diag;
    opts.plateau_tolerance = 0.0;
    assert_int_equal(ms_analysis_compute(rows, &opts, &a, &diag), MS_OK);
    assert_int_equal(
        s_int(json_array_get(json_object_get(a, "groups"), 0), "plateau_to"),
        2);
    json_decref(a);
    opts.plateau_tolerance = 0.1;
    assert_int_equal(ms_analysis_compute(rows, &opts, &a, &diag), MS_OK);
    assert_int_equal(
        s_int(json_array_get(json_object_get(a, "groups"), 0), "plateau_to"),
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
    //  Val 0.80, 0.82, 0.84: mean 0.82, sample std sqrt(0.0008 / 2) =
    //  0.02.
    //  Times 1, 2, 3 at one depth: no fit.
    double vals[3] = {0.80, 0.82, 0.84};
    for (int s = 0; s < 3; s++)
        json_array_append_new(rows, s_row("tanh", 32, 3, s + 1, "ok", vals[s],
                                          vals[s] - 0.1, 1.0 + s));
    json_t *a = s_analyse(rows);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    json_t *e = json_array_get(json_object_get(g, "points"), 0);
    assert_int_equal(s_int(e, "n"), 3);
    assert_true(fabs(s_num(e, "val_accuracy_mean") - 0.82) < 1e-12);
    assert_true(fabs(s_num(e, "val_accuracy_std") - 0.02) < 1e-12);
    assert_true(fabs(s_num(e, "test_accuracy_mean") - 0.72) < 1e-12);
    assert_true(fabs(s_num(e, "test_accuracy_std") - 0.02) < 1e-12);
    assert_true(fabs(s_num(e, "seconds_per_epoch_mean") - 2.0) < 1e-12);
    //  A single depth: best = that depth, no plateau stated, no time fit.
    assert_int_equal(s_int(g, "plateau_to"), 3);
    assert_true(json_is_null(json_object_get(g, "plateau_reached")));
    assert_int_equal(s_int(g, "best_x"), 3);
    assert_non_null(
        strstr(json_string_value(json_object_get(g, "plateau_text")),
               "one depth only, no plateau can be stated"));
    assert_true(json_is_null(json_object_get(g, "time_fit")));
    char *text = ms_analysis_format_text(a);
    assert_non_null(strstr(text, "time fit: needs ok runs at two or more "
                                 "values of depth"));
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
    json_t *depths = json_object_get(g, "points");
    assert_int_equal(json_array_size(depths), 2);
    assert_int_equal(s_int(json_array_get(depths, 0), "x"), 1);
    assert_int_equal(s_int(json_array_get(depths, 1), "x"), 2);
    assert_int_equal(s_int(g, "best_x"), 2);
    //  One seed: no interval, the tolerance alone; 0.85 < 0.86 - 0.005,
    //  and nothing after depth 2 shows a plateau.
    assert_int_equal(s_int(g, "plateau_to"), 2);
    assert_true(json_is_false(json_object_get(g, "plateau_reached")));
    assert_non_null(
        strstr(json_string_value(json_object_get(g, "plateau_text")),
               "still improving at depth 2, the largest"));
    json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 1.0) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 1.0) < 1e-12);
    //  Two groups of the same numbers shifted: same plateau.
    assert_int_equal(s_int(json_array_get(groups, 2), "plateau_to"), 2);
    assert_int_equal(s_int(json_array_get(groups, 3), "plateau_to"), 2);
    assert_true(fabs(s_num(json_array_get(groups, 3), "best_mean") - 0.922) <
                1e-12);
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
    assert_int_equal(s_int(g, "plateau_from"), 2);
    assert_int_equal(s_int(g, "plateau_to"), 2);
    assert_int_equal(s_int(g, "best_x"), 3);
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
    json_t *depths = json_object_get(g, "points");
    assert_int_equal(json_array_size(depths), 5);
    json_t *d2 = json_array_get(depths, 1);
    assert_int_equal(s_int(d2, "n"), 3);
    assert_int_equal(s_int(d2, "n_failed"), 1);
    json_t *d8 = json_array_get(depths, 3);
    assert_int_equal(s_int(d8, "n"), 3);
    assert_int_equal(s_int(d8, "n_diverged"), 1);
    assert_true(fabs(s_num(d8, "val_accuracy_mean") - 0.872) < 1e-12);
    json_t *d16 = json_array_get(depths, 4);
    assert_int_equal(s_int(d16, "x"), 16);
    assert_int_equal(s_int(d16, "n"), 0);
    assert_int_equal(s_int(d16, "n_diverged"), 3);
    assert_true(json_is_null(json_object_get(d16, "val_accuracy_mean")));
    assert_true(json_is_null(json_object_get(d16, "val_accuracy_std")));
    assert_true(json_is_null(json_object_get(d16, "seconds_per_epoch_mean")));
    //  Nothing of the excluded rows moved the answers.
    assert_int_equal(s_int(g, "plateau_to"), 2);
    assert_true(json_is_true(json_object_get(g, "plateau_reached")));
    assert_int_equal(s_int(g, "best_x"), 8);
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
    assert_true(json_is_null(json_object_get(g, "plateau_to")));
    assert_true(json_is_null(json_object_get(g, "plateau_from")));
    assert_true(json_is_null(json_object_get(g, "best_x")));
    assert_true(json_is_null(json_object_get(g, "best_mean")));
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
    assert_int_equal(s_int(g, "best_x"), 1);
    assert_int_equal(s_int(g, "plateau_to"), 1);
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
    fputs(text, stderr);
    assert_non_null(strstr(text, "Analysis of 13 result rows (12 ok, 1 "
                                 "diverged, 0 failed)"));
    assert_non_null(strstr(text, "Axis: depth (hidden_layers); metric: "
                                 "val_accuracy (maximize)\n"));
    assert_non_null(strstr(text, "Rule: plateau of val_accuracy (larger is "
                                 "better) against depth"));
    assert_non_null(strstr(text, "\nrelu, width 64\n"));
    assert_non_null(strstr(text, "\n         8    3    1    0.8720 [0.8472, "
                                 "0.8968]"));
    assert_non_null(strstr(text, "\n  val_accuracy stops improving at depth 2 "
                                 "(best 0.872 at depth 8, 95% interval "
                                 "0.8472 to 0.8968, n=3)\n"));
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
    json_t *d1 = json_array_get(json_object_get(g, "points"), 0);
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
    json_t *d1 = json_array_get(json_object_get(g, "points"), 0);
    assert_int_equal(s_int(d1, "n"), 3);
    assert_int_equal(s_int(d1, "n_val_accuracy"), 1);
    assert_int_equal(s_int(d1, "n_test_accuracy"), 3);
    assert_int_equal(s_int(d1, "n_seconds"), 3);
    //  A std over one value is null, not 0.
    assert_true(json_is_null(json_object_get(d1, "val_accuracy_std")));
    assert_true(json_is_number(json_object_get(d1, "test_accuracy_std")));
    char *text = ms_analysis_format_text(a);
    fputs(text, stderr);
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
    json_t *d = json_array_get(json_object_get(g1, "points"), 0);
    assert_int_equal(s_int(d, "n"), 2);
    assert_true(fabs(s_num(d, "val_accuracy_mean") - 0.5) < 1e-12);
    assert_true(fabs(s_num(g0, "best_mean") - 0.9) < 1e-12);
    char *text = ms_analysis_format_text(a);
    fputs(text, stderr);
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

//  --------------------------------------------------------------------------
//  A timed ok row of relu width 32 run on a machine: fingerprint fp (NULL:
//  none), producer node, calibration gflops (<= 0: the platform has no
//  figure), seconds per epoch sec. counted false marks a duplicate.

static json_t *
s_row_on(int depth, int seed, double sec, const char *fp, const char *node,
         const char *cpu, double gflops, bool counted)
{
    json_t *platform = json_pack("{s:s, s:s, s:s}", "backend", "cpu",
                                 "cpu_model", cpu, "blas_core", "Haswell");
    assert_non_null(platform);
    if (gflops > 0)
        json_object_set_new(platform, "calibration_gflops", json_real(gflops));
    else
        json_object_set_new(platform, "calibration_gflops", json_null());
    json_t *row = json_pack(
        "{s:{s:s, s:i, s:i, s:i}, s:s, s:f, s:f, s:f, s:o, s:o, s:s, s:b}",
        "config", "activation", "relu", "width", 32, "hidden_layers", depth,
        "seed", seed, "status", "ok", "val_accuracy", 0.8, "test_accuracy",
        0.79, "seconds_per_epoch", sec, "fingerprint",
        fp ? json_string(fp) : json_null(), "platform", platform, "node_id",
        node, "counted", counted);
    assert_non_null(row);
    return row;
}

#define S_FP_A                                                                 \
    "aaaaaaaaaaaa1111111111111111111111111111111111111111111111111111"
#define S_FP_B                                                                 \
    "bbbbbbbbbbbb2222222222222222222222222222222222222222222222222222"

//  The class entry of a group with short name cls.

static const json_t *
s_class(const json_t *g, const char *cls)
{
    const json_t *fits = json_object_get(g, "time_fits");
    for (size_t i = 0; i < json_array_size(fits); i++) {
        const json_t *c = json_array_get(fits, i);
        if (strcmp(json_string_value(json_object_get(c, "class")), cls) == 0)
            return c;
    }
    fail_msg("no class %s", cls);
    return NULL;
}

//  Two machine classes: A (40 GFLOP/s, seconds 0.5 + 0.25 d) and B, twice
//  as slow with half the GFLOP/s (seconds 1 + 0.5 d), on depths that do
//  not match (B alone runs the deep ones, so a blind fit over both would
//  be steeper than either machine's cost). Each class gets its own exact
//  fit; the normalised fit (reference: the median figure, 40) is exactly
//  A's line; a run without calibration (a wild time) is left out of it
//  and counted; a not-counted row changes nothing.

static void
test_two_fingerprint_classes(void **state)
{
    (void) state;
    json_t *rows = json_array();
    static const int da[3] = {1, 2, 4}, db[4] = {2, 4, 8, 16};
    for (int seed = 1; seed <= 2; seed++)
        for (int k = 0; k < 3; k++)
            json_array_append_new(rows, s_row_on(da[k], seed,
                                                 0.5 + 0.25 * da[k], S_FP_A,
                                                 seed == 1 ? "node1" : "node2",
                                                 "Fast CPU", 40.0, true));
    for (int k = 0; k < 4; k++)
        json_array_append_new(rows, s_row_on(db[k], 1, 2 * (0.5 + 0.25 * db[k]),
                                             S_FP_B, "node3", "Slow CPU", 20.0,
                                             true));
    // Machine B once without a figure: 100 s would wreck any fit.
    json_array_append_new(
        rows, s_row_on(8, 2, 100.0, S_FP_B, "node3", "Slow CPU", 0, true));
    // A duplicate (not counted): never in a fit.
    json_array_append_new(
        rows, s_row_on(16, 3, 500.0, S_FP_A, "node9", "Fast CPU", 1.0, false));
    json_t *a = s_analyse(rows);
    assert_int_equal(s_int(a, "n_not_counted"), 1);
    assert_int_equal(s_int(a, "n_uncalibrated"), 1);
    assert_string_equal(json_string_value(json_object_get(a, "time_reference")),
                        "median");
    // Figures of the 11 calibrated timed runs: six 40s and five 20s.
    assert_true(fabs(s_num(a, "time_reference_gflops") - 40.0) < 1e-12);
    const json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    assert_int_equal(json_array_size(json_object_get(a, "groups")), 1);
    assert_int_equal(json_array_size(json_object_get(g, "time_fits")), 2);

    const json_t *ca = s_class(g, "aaaaaaaaaaaa");
    assert_string_equal(json_string_value(json_object_get(ca, "fingerprint")),
                        S_FP_A);
    assert_string_equal(json_string_value(json_object_get(ca, "label")),
                        "cpu: Fast CPU (Haswell)");
    assert_int_equal(s_int(ca, "n_rows"), 6);
    assert_int_equal(json_array_size(json_object_get(ca, "nodes")), 2);
    assert_true(fabs(s_num(ca, "calibration_gflops") - 40.0) < 1e-12);
    const json_t *fa = json_object_get(ca, "fit");
    assert_true(fabs(s_num(fa, "slope") - 0.25) < 1e-12);
    assert_true(fabs(s_num(fa, "intercept") - 0.5) < 1e-12);
    // The class with most runs comes first.
    assert_ptr_equal(json_array_get(json_object_get(g, "time_fits"), 0), ca);

    const json_t *cb = s_class(g, "bbbbbbbbbbbb");
    assert_int_equal(s_int(cb, "n_rows"), 5);
    assert_int_equal(s_int(cb, "n_uncalibrated"), 1);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(cb, "nodes"), 0)),
        "node3");
    // B's own fit includes its uncalibrated run (a class needs no figure).
    assert_int_equal(s_int(json_object_get(cb, "fit"), "n"), 5);

    // time_fit: the normalised fit, in A's seconds (the true cost).
    assert_string_equal(json_string_value(json_object_get(g, "time_fit_basis")),
                        "normalised");
    assert_true(fabs(s_num(g, "time_fit_reference_gflops") - 40.0) < 1e-12);
    assert_int_equal(s_int(g, "time_fit_n_uncalibrated"), 1);
    const json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.25) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 0.5) < 1e-12);
    assert_true(fabs(s_num(fit, "r2") - 1.0) < 1e-12);
    assert_int_equal(s_int(fit, "n"), 10);
    assert_true(json_equal(fit, json_object_get(g, "time_fit_normalised")));
    // Per depth: the plain mean mixes machines; the normalised one is
    // the true cost at the reference speed, over the calibrated runs.
    const json_t *d2 = json_array_get(json_object_get(g, "points"), 1);
    const json_t *d8 = json_array_get(json_object_get(g, "points"), 3);
    assert_int_equal(s_int(d2, "x"), 2);
    assert_true(fabs(s_num(d2, "seconds_per_epoch_mean") - 4.0 / 3) < 1e-12);
    assert_true(fabs(s_num(d2, "seconds_per_epoch_normalised_mean") - 1.0) <
                1e-12);
    assert_int_equal(s_int(d2, "n_seconds_normalised"), 3);
    assert_int_equal(s_int(d8, "x"), 8);
    assert_true(fabs(s_num(d8, "seconds_per_epoch_mean") - 52.5) < 1e-12);
    assert_true(fabs(s_num(d8, "seconds_per_epoch_normalised_mean") - 2.5) <
                1e-12);
    assert_int_equal(s_int(d8, "n_seconds_normalised"), 1);

    char *text = ms_analysis_format_text(a);
    assert_non_null(text);
    fputs(text, stderr);
    assert_non_null(strstr(text, "time per epoch = 0.5 + 0.25 * depth s "
                                 "(R^2 1.000, 10 runs)"));
    assert_non_null(strstr(text, "fit basis: normalised to 40.00 GFLOP/s (2 "
                                 "machine classes"));
    assert_non_null(strstr(text, "1 run without calibration left out"));
    assert_non_null(strstr(text, "s/epoch   s/ep@ref\n"));
    assert_non_null(strstr(text, "   52.500      2.500\n"));
    assert_non_null(strstr(text, "class aaaaaaaaaaaa cpu: Fast CPU (Haswell), "
                                 "40.00 GFLOP/s, 6 runs on 2 nodes: 0.5 + "
                                 "0.25 * depth s"));
    assert_non_null(strstr(text, "class bbbbbbbbbbbb cpu: Slow CPU"));
    assert_non_null(strstr(text, "normalised to 40.00 GFLOP/s (the median"));
    free(text);
    json_decref(a);

    // A fixed reference of 20 GFLOP/s: the fit in B's seconds.
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    opts.reference_gflops = 20.0;
    opts.verified_only = true;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_analysis_compute(rows, &opts, &a, &diag), MS_OK);
    assert_true(json_is_true(json_object_get(a, "verified_only")));
    assert_string_equal(json_string_value(json_object_get(a, "time_reference")),
                        "fixed");
    g = json_array_get(json_object_get(a, "groups"), 0);
    fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.5) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 1.0) < 1e-12);
    text = ms_analysis_format_text(a);
    assert_non_null(strstr(text, "Rows: verified results only"));
    assert_non_null(strstr(text, "20.00 GFLOP/s (a fixed single-thread"));
    free(text);
    json_decref(a);
    opts.reference_gflops = -1;
    assert_int_equal(ms_analysis_compute(rows, &opts, &a, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "reference_gflops");
    json_decref(rows);
}

//  One class whose workers measured different figures (30 and 36 GFLOP/s,
//  noise): time_fit is the class's own fit in its seconds, exact, basis
//  fingerprint:PREFIX; the normalised fit is there too but is not the
//  time_fit. Rows without a fingerprint form the class "unknown".

static void
test_one_fingerprint_class(void **state)
{
    (void) state;
    json_t *rows = json_array();
    for (int seed = 1; seed <= 2; seed++)
        for (int k = 0; k < 4; k++)
            json_array_append_new(
                rows, s_row_on(s_depths[k], seed, 0.5 + 0.25 * s_depths[k],
                               S_FP_A, seed == 1 ? "node1" : "node2",
                               "Fast CPU", seed == 1 ? 30.0 : 36.0, true));
    json_t *a = s_analyse(rows);
    const json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    assert_string_equal(json_string_value(json_object_get(g, "time_fit_basis")),
                        "fingerprint:aaaaaaaaaaaa");
    assert_true(json_is_null(json_object_get(g, "time_fit_reference_gflops")));
    assert_int_equal(json_array_size(json_object_get(g, "time_fits")), 1);
    const json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.25) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 0.5) < 1e-12);
    assert_true(json_equal(
        fit, json_object_get(json_array_get(json_object_get(g, "time_fits"), 0),
                             "fit")));
    assert_true(fabs(s_num(s_class(g, "aaaaaaaaaaaa"), "calibration_gflops") -
                     33.0) < 1e-12);
    assert_true(json_is_object(json_object_get(g, "time_fit_normalised")));
    assert_false(json_equal(fit, json_object_get(g, "time_fit_normalised")));
    char *text = ms_analysis_format_text(a);
    assert_non_null(text);
    assert_non_null(strstr(text, "fit basis: one machine class, fingerprint "
                                 "aaaaaaaaaaaa (cpu: Fast CPU (Haswell))"));
    assert_null(strstr(text, "    class "));
    free(text);
    json_decref(a);
    json_decref(rows);

    // No fingerprint, no calibration (rows of older nodes).
    rows = json_array();
    s_add_sweep(rows, "relu", 64, 0.0);
    a = s_analyse(rows);
    g = json_array_get(json_object_get(a, "groups"), 0);
    assert_string_equal(json_string_value(json_object_get(g, "time_fit_basis")),
                        "fingerprint:unknown");
    assert_true(json_is_null(json_object_get(a, "time_reference_gflops")));
    assert_true(json_is_null(json_object_get(g, "time_fit_normalised")));
    assert_int_equal(s_int(g, "time_fit_n_uncalibrated"), 12);
    assert_int_equal(s_int(a, "n_uncalibrated"), 12);
    assert_true(fabs(s_num(json_object_get(g, "time_fit"), "slope") - 0.25) <
                1e-12);
    assert_true(json_is_null(json_object_get(
        json_array_get(json_object_get(g, "time_fits"), 0), "fingerprint")));
    json_decref(a);
    json_decref(rows);
}

//  Several classes and no calibration anywhere: no time_fit (timings of
//  different machines are not mixed), the per-class fits stand.

static void
test_classes_without_calibration(void **state)
{
    (void) state;
    json_t *rows = json_array();
    for (int k = 0; k < 4; k++) {
        json_array_append_new(rows, s_row_on(s_depths[k], 1, 1.0 + s_depths[k],
                                             S_FP_A, "n1", "A", 0, true));
        json_array_append_new(rows,
                              s_row_on(s_depths[k], 2, 2.0 + 2 * s_depths[k],
                                       S_FP_B, "n2", "B", 0, true));
    }
    json_t *a = s_analyse(rows);
    const json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    // No fit, so no basis (docs/RESULTS.md).
    assert_true(json_is_null(json_object_get(g, "time_fit_basis")));
    assert_true(json_is_null(json_object_get(g, "time_fit")));
    assert_true(json_is_null(json_object_get(g, "time_fit_reference_gflops")));
    assert_int_equal(s_int(g, "time_fit_n_uncalibrated"), 8);
    assert_true(fabs(s_num(json_object_get(s_class(g, "bbbbbbbbbbbb"), "fit"),
                           "slope") -
                     2.0) < 1e-12);
    char *text = ms_analysis_format_text(a);
    assert_non_null(strstr(text, "time fit: needs calibrated ok runs"));
    assert_non_null(strstr(text, "no run has a calibration figure"));
    assert_non_null(strstr(text, "no calibration, 4 runs on 1 node: 2 + 2 * "
                                 "depth s"));
    free(text);
    json_decref(a);
    json_decref(rows);
}

//  A fit with a negative slope prints "A - B * depth", not "A + -B";
//  a group without a time fit has no basis either (time_fit and
//  time_fit_basis null): one class at one depth, and two classes of
//  which no run has a calibration figure (the per-class fits still print).

static void
test_negative_slope_and_null_basis(void **state)
{
    (void) state;
    json_t *rows = json_array();
    for (int d = 1; d <= 4; d *= 2)
        for (int seed = 1; seed <= 2; seed++)
            json_array_append_new(rows, s_row("relu", 64, d, seed, "ok", 0.8,
                                              0.79, 0.1585 - 0.01788 * d));
    json_t *a = s_analyse(rows);
    char *text = ms_analysis_format_text(a);
    assert_non_null(
        strstr(text, "time per epoch = 0.1585 - 0.01788 * depth s"));
    assert_null(strstr(text, "+ -"));
    free(text);
    json_decref(a);
    json_decref(rows);

    rows = json_array();
    json_array_append_new(
        rows, s_row_on(2, 1, 1.0, S_FP_A, "n1", "Fast CPU", 40.0, true));
    json_array_append_new(
        rows, s_row_on(2, 2, 1.1, S_FP_A, "n1", "Fast CPU", 40.0, true));
    a = s_analyse(rows);
    const json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    assert_true(json_is_null(json_object_get(g, "time_fit")));
    assert_true(json_is_null(json_object_get(g, "time_fit_basis")));
    json_decref(a);
    json_decref(rows);

    rows = json_array();
    for (int d = 1; d <= 4; d *= 2) {
        json_array_append_new(rows, s_row_on(d, 1, 0.5 + 0.25 * d, S_FP_A, "n1",
                                             "Fast CPU", 0, true));
        json_array_append_new(rows, s_row_on(d, 1, 1.0 + 0.5 * d, S_FP_B, "n2",
                                             "Slow CPU", 0, true));
    }
    a = s_analyse(rows);
    g = json_array_get(json_object_get(a, "groups"), 0);
    assert_true(json_is_null(json_object_get(g, "time_fit")));
    assert_true(json_is_null(json_object_get(g, "time_fit_basis")));
    assert_int_equal(json_array_size(json_object_get(g, "time_fits")), 2);
    text = ms_analysis_format_text(a);
    fputs(text, stderr);
    assert_non_null(strstr(text, "time fit: needs calibrated ok runs"));
    assert_non_null(strstr(text, "fit basis: none (2 machine classes; no run "
                                 "has a calibration figure)"));
    assert_non_null(strstr(text, "0.5 + 0.25 * depth s"));
    free(text);
    json_decref(a);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Analyse with opts; the call must succeed.

static json_t *
s_analyse_opts(const json_t *rows, const ms_analysis_options_t *opts)
{
    json_t *out = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_analysis_compute(rows, opts, &out, &diag);
    if (rc)
        print_error("%s: %s\n", diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    return out;
}

//  --------------------------------------------------------------------------
//  One ok row of relu at depth d (width 16) with val accuracy val, one
//  per seed.

static void
s_add_point(json_t *rows, int depth, const double *vals, int n)
{
    for (int s = 0; s < n; s++)
        json_array_append_new(rows, s_row("relu", 16, depth, s + 1, "ok",
                                          vals[s], vals[s], 1.0 + depth));
}

static void
test_t_quantile(void **state)
{
    (void) state;
    //  The table (NIST/SEMATECH 1.3.6.7.2) and, past 30, the expansion
    //  against the printed table values for 40, 60 and 120 degrees of
    //  freedom (2.021, 2.000, 1.980) and the normal quantile in the limit.
    assert_true(ms_analysis_t975(1) == 12.7062);
    assert_true(ms_analysis_t975(2) == 4.3027);
    assert_true(ms_analysis_t975(30) == 2.0423);
    assert_true(fabs(ms_analysis_t975(40) - 2.0211) < 2e-4);
    assert_true(fabs(ms_analysis_t975(60) - 2.0003) < 2e-4);
    assert_true(fabs(ms_analysis_t975(120) - 1.9799) < 2e-4);
    assert_true(fabs(ms_analysis_t975(1000000) - 1.95996) < 1e-4);
    //  Continuous across the table's end, and decreasing.
    assert_true(ms_analysis_t975(31) < ms_analysis_t975(30));
    assert_true(ms_analysis_t975(30) - ms_analysis_t975(31) < 0.005);
    assert_true(isnan(ms_analysis_t975(0)));
}

static void
test_interval_values(void **state)
{
    (void) state;
    //  Depth 1: 0.80, 0.82, 0.84: mean 0.82, s 0.02, half-width
    //  4.3027 x 0.02 / sqrt(3) = 0.0496833 (by hand). Depth 2: 0.8, 0.9:
    //  mean 0.85, s 0.0707107, half-width 12.7062 x 0.0707107 / sqrt(2) =
    //  0.63531. Depth 4: one seed: no interval.
    json_t *rows = json_array();
    s_add_point(rows, 1, (double[]){0.80, 0.82, 0.84}, 3);
    s_add_point(rows, 2, (double[]){0.8, 0.9}, 2);
    s_add_point(rows, 4, (double[]){0.7}, 1);
    json_t *a = s_analyse(rows);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    json_t *pts = json_object_get(g, "points");
    json_t *p1 = json_array_get(pts, 0), *p2 = json_array_get(pts, 1),
           *p4 = json_array_get(pts, 2);
    assert_int_equal(s_int(p1, "n_metric"), 3);
    assert_true(fabs(s_num(p1, "mean") - 0.82) < 1e-12);
    assert_true(fabs(s_num(p1, "std") - 0.02) < 1e-12);
    assert_true(fabs(s_num(p1, "lo") - (0.82 - 0.0496833)) < 1e-6);
    assert_true(fabs(s_num(p1, "hi") - (0.82 + 0.0496833)) < 1e-6);
    assert_true(fabs(s_num(p2, "lo") - (0.85 - 0.63531)) < 1e-5);
    assert_true(fabs(s_num(p2, "hi") - (0.85 + 0.63531)) < 1e-5);
    assert_int_equal(s_int(p4, "n"), 1);
    assert_true(fabs(s_num(p4, "mean") - 0.7) < 1e-12);
    assert_true(json_is_null(json_object_get(p4, "lo")));
    assert_true(json_is_null(json_object_get(p4, "hi")));
    assert_true(json_is_null(json_object_get(p4, "std")));
    char *text = ms_analysis_format_text(a);
    fputs(text, stderr);
    assert_non_null(strstr(text, "0.8200 [0.7703, 0.8697]"));
    assert_non_null(strstr(text, "0.7000 n/a (n=1)"));
    free(text);
    json_decref(a);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  The group's plateau fields of rows analysed with opts (NULL: defaults).

static void
s_expect_plateau(const json_t *rows, const ms_analysis_options_t *opts,
                 double from, double to, int reached, const char *text)
{
    json_t *a = s_analyse_opts(rows, opts);
    json_t *g = json_array_get(json_object_get(a, "groups"), 0);
    const char *said = json_string_value(json_object_get(g, "plateau_text"));
    if (fabs(s_num(g, "plateau_from") - from) > 1e-12 ||
        fabs(s_num(g, "plateau_to") - to) > 1e-12 || !strstr(said, text))
        print_error("plateau %g to %g: %s\n", s_num(g, "plateau_from"),
                    s_num(g, "plateau_to"), said);
    assert_true(fabs(s_num(g, "plateau_from") - from) < 1e-12);
    assert_true(fabs(s_num(g, "plateau_to") - to) < 1e-12);
    assert_int_equal(json_is_true(json_object_get(g, "plateau_reached")),
                     reached);
    assert_non_null(strstr(said, text));
    json_decref(a);
}

//  Plateau cases on constructed data whose answer is known: per case the
//  depths, each depth's seed values (n_seeds of them), the goal, and the
//  expected range, whether it is reached and a part of the sentence.
typedef struct {
    int n_points;
    int depths[6];
    int n_seeds;
    double vals[6][3];
    ms_analysis_goal_t goal;
    double from, to;
    int reached;
    const char *text;
} s_plateau_case_t;

static const s_plateau_case_t s_plateau_cases[] = {
    //  Exact data, one seed: the tolerance alone. 0.9 at 16 and 32: it
    //  stops improving at 16.
    {6,
     {1, 2, 4, 8, 16, 32},
     1,
     {{0.5}, {0.7}, {0.8}, {0.85}, {0.9}, {0.9}},
     MS_ANALYSIS_GOAL_AUTO,
     16,
     16,
     1,
     "val_accuracy stops improving at depth 16 (best 0.9 at depth 16, n=1, "
     "no interval)"},
    //  A range: depth 16 (mean 0.88, s 0.01: its interval reaches 0.9048)
    //  can not be told from the plateau, whose level is 0.9 - 0.005 (the
    //  best point's half-width 4.3027 x 0.001 / sqrt(3) = 0.0025 is
    //  narrower than the tolerance); depth 32's mean 0.9 is level.
    {4,
     {8, 16, 32, 64},
     3,
     {{0.84, 0.85, 0.86},
      {0.87, 0.88, 0.89},
      {0.899, 0.900, 0.901},
      {0.898, 0.899, 0.900}},
     MS_ANALYSIS_GOAL_AUTO,
     16,
     32,
     1,
     "val_accuracy stops improving at depth 16 to 32 (best 0.9 at depth 32, "
     "95% interval 0.8975 to 0.9025, n=3)"},
    //  No plateau: still improving at the largest depth.
    {4,
     {1, 2, 4, 8},
     1,
     {{0.5}, {0.6}, {0.7}, {0.8}},
     MS_ANALYSIS_GOAL_AUTO,
     8,
     8,
     0,
     "val_accuracy still improving at depth 8, the largest with results "
     "(best 0.8 at depth 8"},
    //  Still improving, but a noisy earlier point cannot be told from the
    //  best: depth 2's seeds 0.5, 0.7, 0.9 (interval up to 1.197) reach
    //  the level 0.85 - 0.0248; its mean 0.7 does not.
    {3,
     {1, 2, 4},
     3,
     {{0.49, 0.50, 0.51}, {0.5, 0.7, 0.9}, {0.84, 0.85, 0.86}},
     MS_ANALYSIS_GOAL_AUTO,
     2,
     4,
     0,
     "val_accuracy still improving at depth 4, the largest with results, "
     "though the interval at depth 2 reaches the best's level"},
    //  Noisy: depth 2's seeds 0.7, 0.8, 0.9 (s 0.1, interval up to 1.048)
    //  reach the level 0.85 - 0.0248 although its mean 0.80 does not;
    //  depth 4 (0.85, the best) is the first level mean, depth 8 (0.84)
    //  confirms.
    {4,
     {1, 2, 4, 8},
     3,
     {{0.69, 0.70, 0.71},
      {0.7, 0.8, 0.9},
      {0.84, 0.85, 0.86},
      {0.83, 0.84, 0.85}},
     MS_ANALYSIS_GOAL_AUTO,
     2,
     4,
     1,
     "val_accuracy stops improving at depth 2 to 4"},
    //  Minimised (the goal forced, so these values read as a loss): the
    //  best is the smallest mean, 0.41 at depth 4 (half-width 0.0248),
    //  the level 0.4348 from above; depth 2's seeds 0.4, 0.5, 0.6 reach it
    //  with their interval's low end (0.252), not their mean.
    {4,
     {1, 2, 4, 8},
     3,
     {{1.0, 1.1, 1.2}, {0.4, 0.5, 0.6}, {0.40, 0.41, 0.42}, {0.41, 0.42, 0.43}},
     MS_ANALYSIS_GOAL_MINIMIZE,
     2,
     4,
     1,
     "val_accuracy stops improving at depth 2 to 4 (best 0.41 at depth 4"},
};

static void
test_plateau_cases(void **state)
{
    (void) state;
    for (size_t c = 0; c < sizeof s_plateau_cases / sizeof *s_plateau_cases;
         c++) {
        const s_plateau_case_t *pc = &s_plateau_cases[c];
        json_t *rows = json_array();
        for (int k = 0; k < pc->n_points; k++)
            s_add_point(rows, pc->depths[k], pc->vals[k], pc->n_seeds);
        ms_analysis_options_t opts;
        ms_analysis_options_default(&opts);
        opts.goal = pc->goal;
        s_expect_plateau(rows, &opts, pc->from, pc->to, pc->reached, pc->text);
        json_decref(rows);
    }
}

//  --------------------------------------------------------------------------
//  A row of relu with the given width, depth, learning rate and seed;
//  val_loss and test_loss as given, seconds = 0.1 + 0.01 width.

static json_t *
s_row_lr(int width, int depth, double lr, int seed, double val_loss,
         double test_loss)
{
    json_t *row = s_row("relu", width, depth, seed, "ok", 0.9 - val_loss / 10,
                        0.9 - test_loss / 10, 0.1 + 0.01 * width);
    json_object_set_new(json_object_get(row, "config"), "learning_rate",
                        json_real(lr));
    json_object_set_new(json_object_get(row, "config"), "epochs",
                        json_integer(3));
    json_object_set_new(row, "val_loss", json_real(val_loss));
    json_object_set_new(row, "test_loss", json_real(test_loss));
    return row;
}

//  width [16, 64] x learning_rate [0.001, 0.01, 0.1] x depth 2 x seeds
//  1..3; val_loss 1.0, 0.5, 0.3 by rate (less at width 64 by 0.1), the
//  seed adding -0.01, 0, 0.01; test_loss = val_loss + 0.05.
static json_t *
s_lr_sweep(void)
{
    json_t *rows = json_array();
    const double lrs[3] = {0.001, 0.01, 0.1}, loss[3] = {1.0, 0.5, 0.3};
    const int widths[2] = {16, 64};
    for (int w = 0; w < 2; w++)
        for (int l = 0; l < 3; l++)
            for (int seed = 1; seed <= 3; seed++) {
                double v = loss[l] - 0.1 * w + 0.01 * (seed - 2);
                json_array_append_new(
                    rows, s_row_lr(widths[w], 2, lrs[l], seed, v, v + 0.05));
            }
    return rows;
}

static void
test_axis_width_and_learning_rate(void **state)
{
    (void) state;
    json_t *rows = s_lr_sweep();
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    //  The swept numeric parameters: depth first (the default), width,
    //  learning_rate; not epochs (one value), not seed.
    json_t *a = s_analyse(rows);
    json_t *axes = json_object_get(a, "axes");
    assert_int_equal(json_array_size(axes), 3);
    assert_string_equal(json_string_value(json_array_get(axes, 0)),
                        "hidden_layers");
    assert_string_equal(json_string_value(json_array_get(axes, 1)), "width");
    assert_string_equal(json_string_value(json_array_get(axes, 2)),
                        "learning_rate");
    json_decref(a);

    //  Against width: a group per (relu, depth 2, learning rate), width
    //  null in the group and its depth a field; the time fit against
    //  width: 0.1 + 0.01 w exactly.
    opts.x = "width";
    a = s_analyse_opts(rows, &opts);
    assert_string_equal(json_string_value(json_object_get(a, "x")), "width");
    assert_string_equal(json_string_value(json_object_get(a, "x_scale")),
                        "linear");
    json_t *groups = json_object_get(a, "groups");
    assert_int_equal(json_array_size(groups), 3);
    json_t *g = json_array_get(groups, 0);
    assert_true(json_is_null(json_object_get(g, "width")));
    assert_int_equal(s_int(g, "hidden_layers"), 2);
    assert_true(fabs(json_number_value(json_object_get(
                         json_object_get(g, "params"), "learning_rate")) -
                     0.001) < 1e-15);
    json_t *pts = json_object_get(g, "points");
    assert_int_equal(json_array_size(pts), 2);
    assert_int_equal(s_int(json_array_get(pts, 0), "x"), 16);
    assert_int_equal(s_int(json_array_get(pts, 1), "x"), 64);
    json_t *fit = json_object_get(g, "time_fit");
    assert_true(fabs(s_num(fit, "slope") - 0.01) < 1e-12);
    assert_true(fabs(s_num(fit, "intercept") - 0.1) < 1e-12);
    char *text = ms_analysis_format_text(a);
    fputs(text, stderr);
    assert_non_null(strstr(text, "Axis: width (width); metric: val_accuracy"));
    assert_non_null(strstr(text, "\nrelu, depth 2, learning_rate 0.001\n"));
    assert_non_null(strstr(text, "time per epoch = 0.1 + 0.01 * width s"));
    free(text);
    json_decref(a);

    //  Against the learning rate, for test_loss (minimised by its name):
    //  log scale (0.1 / 0.001 = 100); a group per width; the best is the
    //  smallest loss, 0.35 at 0.1 for width 16, and the plateau is stated
    //  there (nothing after it).
    opts.x = "learning_rate";
    opts.metric = "test_loss";
    a = s_analyse_opts(rows, &opts);
    assert_string_equal(json_string_value(json_object_get(a, "x_scale")),
                        "log");
    json_t *metric = json_object_get(a, "metric");
    assert_string_equal(json_string_value(json_object_get(metric, "name")),
                        "test_loss");
    assert_string_equal(json_string_value(json_object_get(metric, "goal")),
                        "minimize");
    groups = json_object_get(a, "groups");
    assert_int_equal(json_array_size(groups), 2);
    g = json_array_get(groups, 0);
    assert_int_equal(s_int(g, "width"), 16);
    assert_true(fabs(s_num(g, "best_x") - 0.1) < 1e-15);
    assert_true(fabs(s_num(g, "best_mean") - 0.35) < 1e-12);
    pts = json_object_get(g, "points");
    assert_true(fabs(s_num(json_array_get(pts, 0), "mean") - 1.05) < 1e-12);
    assert_true(json_is_false(json_object_get(g, "plateau_reached")));
    text = ms_analysis_format_text(a);
    assert_non_null(strstr(text, "log scale: the values span orders of "
                                 "magnitude"));
    assert_non_null(strstr(text, "test_loss still improving at "
                                 "learning_rate 0.1"));
    free(text);
    json_decref(a);

    //  The goal may be forced: maximising test_loss picks 0.001.
    opts.goal = MS_ANALYSIS_GOAL_MAXIMIZE;
    a = s_analyse_opts(rows, &opts);
    g = json_array_get(json_object_get(a, "groups"), 0);
    assert_true(fabs(s_num(g, "best_x") - 0.001) < 1e-15);
    json_decref(a);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Expect opts on rows to be refused at where, the reason holding part.

static void
s_expect_refused(const json_t *rows, const ms_analysis_options_t *opts,
                 const char *where, const char *part)
{
    json_t *out = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_analysis_compute(rows, opts, &out, &diag);
    if (rc != MS_ERR_INVALID || !strstr(diag.reason, part))
        print_error("rc %d %s: %s\n", rc, diag.where, diag.reason);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_null(out);
    assert_string_equal(diag.where, where);
    assert_non_null(strstr(diag.reason, part));
}

static void
test_axis_omitted_default(void **state)
{
    (void) state;
    //  A canonical config leaves warmup_epochs out at its default (0): a
    //  sweep of warmup_epochs [0, 2] has it in half the rows. It is a
    //  swept numeric axis all the same, its absent value read as 0, and
    //  as a group key (against depth) the group says 0, not null.
    json_t *rows = json_array();
    for (int w = 0; w < 2; w++)
        for (int d = 1; d <= 2; d++)
            for (int seed = 1; seed <= 2; seed++) {
                json_t *row = s_row("relu", 16, d, seed, "ok",
                                    0.8 + 0.05 * w + 0.01 * d, 0.8, 1.0);
                if (w)
                    json_object_set_new(json_object_get(row, "config"),
                                        "warmup_epochs", json_real(2.0));
                json_array_append_new(rows, row);
            }
    json_t *a = s_analyse(rows);
    json_t *axes = json_object_get(a, "axes");
    assert_int_equal(json_array_size(axes), 2);
    assert_string_equal(json_string_value(json_array_get(axes, 1)),
                        "warmup_epochs");
    json_t *g0 = json_array_get(json_object_get(a, "groups"), 0);
    json_t *w0 =
        json_object_get(json_object_get(g0, "params"), "warmup_epochs");
    assert_true(json_is_number(w0) && json_number_value(w0) == 0.0);
    json_decref(a);
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    opts.x = "warmup_epochs";
    a = s_analyse_opts(rows, &opts);
    json_t *groups = json_object_get(a, "groups");
    assert_int_equal(json_array_size(groups), 2); // one per depth
    json_t *pts = json_object_get(json_array_get(groups, 0), "points");
    assert_int_equal(json_array_size(pts), 2);
    assert_true(s_num(json_array_get(pts, 0), "x") == 0.0);
    assert_true(s_num(json_array_get(pts, 1), "x") == 2.0);
    assert_true(fabs(s_num(json_array_get(pts, 1), "mean") - 0.86) < 1e-12);
    json_decref(a);
    json_decref(rows);
}

static void
test_bad_axis_and_metric(void **state)
{
    (void) state;
    json_t *rows = s_lr_sweep();
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    const char *list = "(swept numeric parameters: hidden_layers, width, "
                       "learning_rate)";
    opts.x = "activation";
    s_expect_refused(rows, &opts, "x", "'activation' is not numeric");
    s_expect_refused(rows, &opts, "x", list);
    opts.x = "optimizer";
    s_expect_refused(rows, &opts, "x", "'optimizer' is not numeric");
    opts.x = "epochs";
    s_expect_refused(rows, &opts, "x", "'epochs' is not swept");
    s_expect_refused(rows, &opts, "x", list);
    opts.x = "momentum";
    s_expect_refused(rows, &opts, "x",
                     "'momentum' is not a parameter of this sweep");
    opts.x = "seed";
    s_expect_refused(rows, &opts, "x", "'seed' is what the analysis averages");
    //  The depth is the default axis and is never refused; "depth" reads
    //  as hidden_layers.
    opts.x = "depth";
    json_t *a = s_analyse_opts(rows, &opts);
    assert_string_equal(json_string_value(json_object_get(a, "x")),
                        "hidden_layers");
    json_decref(a);
    opts.x = ""; // ?x= with no value: the default
    a = s_analyse_opts(rows, &opts);
    assert_string_equal(json_string_value(json_object_get(a, "x")),
                        "hidden_layers");
    json_decref(a);
    opts.x = NULL;
    opts.metric = "accuracy";
    s_expect_refused(rows, &opts, "metric",
                     "unknown metric 'accuracy' (one of val_accuracy, "
                     "test_accuracy, val_loss, test_loss, train_loss, "
                     "train_seconds, seconds_per_epoch, params)");
    json_decref(rows);
    //  No results yet: any axis but the depth is not swept.
    rows = json_array();
    opts.metric = NULL;
    opts.x = "width";
    s_expect_refused(rows, &opts, "x", "(no results yet)");
    json_decref(rows);
}

static void
test_replicas_count_once(void **state)
{
    (void) state;
    //  Task A has two counted replicas (0.80 and 0.81: their lower median
    //  is 0.80), task B one (0.90): n 2, mean 0.85, not 0.8367 over three
    //  rows. Times stay per row (3 timed runs).
    json_t *rows = json_array();
    const char *task[3] = {"aaaa", "aaaa", "bbbb"};
    double val[3] = {0.81, 0.80, 0.90};
    for (int i = 0; i < 3; i++) {
        json_t *row =
            s_row("relu", 8, 1, i == 2 ? 2 : 1, "ok", val[i], val[i], 1.0);
        json_object_set_new(row, "task_id", json_string(task[i]));
        json_array_append_new(rows, row);
    }
    //  A task whose one replica diverged and the other is ok is ok.
    json_t *d = s_row("relu", 8, 1, 3, "diverged", 0.1, 0.1, 1.0);
    json_object_set_new(d, "task_id", json_string("cccc"));
    json_array_append_new(rows, d);
    json_t *ok = s_row("relu", 8, 1, 3, "ok", 0.85, 0.85, 1.0);
    json_object_set_new(ok, "task_id", json_string("cccc"));
    json_array_append_new(rows, ok);
    json_t *a = s_analyse(rows);
    json_t *p = json_array_get(
        json_object_get(json_array_get(json_object_get(a, "groups"), 0),
                        "points"),
        0);
    assert_int_equal(s_int(p, "n"), 3);
    assert_int_equal(s_int(p, "n_diverged"), 0);
    assert_int_equal(s_int(p, "n_metric"), 3);
    assert_true(fabs(s_num(p, "mean") - (0.80 + 0.90 + 0.85) / 3) < 1e-12);
    assert_int_equal(s_int(p, "n_seconds"), 4);
    json_decref(a);
    json_decref(rows);
}

static void
test_options_metric(void **state)
{
    (void) state;
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    json_t *spec =
        json_pack("{s:s, s:s}", "name", "test_loss", "goal", "minimize");
    ms_analysis_options_metric(&opts, spec, NULL);
    assert_string_equal(opts.metric, "test_loss");
    assert_int_equal(opts.goal, MS_ANALYSIS_GOAL_MINIMIZE);
    ms_analysis_options_metric(&opts, spec, "val_accuracy");
    assert_string_equal(opts.metric, "val_accuracy");
    assert_int_equal(opts.goal, MS_ANALYSIS_GOAL_AUTO);
    ms_analysis_options_metric(&opts, spec, "test_loss");
    assert_int_equal(opts.goal, MS_ANALYSIS_GOAL_MINIMIZE);
    ms_analysis_options_metric(&opts, NULL, NULL);
    assert_null(opts.metric);
    json_decref(spec);
    //  train_loss: the row's, else the curve's last epoch.
    json_t *rows = json_array();
    json_t *row = s_row("relu", 8, 1, 1, "ok", 0.8, 0.8, 1.0);
    json_object_set_new(
        row, "curve",
        json_pack("[{s:f}, {s:f}]", "train_loss", 0.9, "train_loss", 0.4));
    json_array_append_new(rows, row);
    opts.metric = "train_loss";
    json_t *a = s_analyse_opts(rows, &opts);
    json_t *p = json_array_get(
        json_object_get(json_array_get(json_object_get(a, "groups"), 0),
                        "points"),
        0);
    assert_true(fabs(s_num(p, "mean") - 0.4) < 1e-12);
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
        cmocka_unit_test(test_two_fingerprint_classes),
        cmocka_unit_test(test_one_fingerprint_class),
        cmocka_unit_test(test_negative_slope_and_null_basis),
        cmocka_unit_test(test_classes_without_calibration),
        cmocka_unit_test(test_t_quantile),
        cmocka_unit_test(test_interval_values),
        cmocka_unit_test(test_plateau_cases),
        cmocka_unit_test(test_axis_width_and_learning_rate),
        cmocka_unit_test(test_bad_axis_and_metric),
        cmocka_unit_test(test_axis_omitted_default),
        cmocka_unit_test(test_replicas_count_once),
        cmocka_unit_test(test_options_metric),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
