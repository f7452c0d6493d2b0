/*  =========================================================================
    ms_analysis - answers to the 2015 paper's questions from a sweep's
    result rows: accuracy by depth, the plateau depth, time against depth

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Input is the JSON array of result rows (DESIGN.md "result row"; see
    ms_results.h). Rows are grouped by (activation, width) and, inside a
    group, by depth; per depth the means and standard deviations over
    seeds of validation and test accuracy are reported, with the mean
    time per epoch. Per group: the plateau depth (the rule is stated in
    the output's "rule"), the best depth, and the least-squares line of
    seconds per epoch against depth. This JSON is what `meshsweep results
    --analyze` prints as text and what GET /api/v1/sweeps/{id}/analysis
    serves.

    Output object:
      {"rule": "...", "plateau_tolerance": 0.005,
       "n_rows": N, "n_ok": N, "n_diverged": N, "n_failed": N,
       "n_not_counted": N, "group_keys": ["optimizer", ...],
       "groups": [{"activation": "relu", "width": 64,
                   "params": {"optimizer": "sgd", ...},
                   "depths": [{"depth": 1, "n": 3, "n_diverged": 0,
                               "n_failed": 0, "n_val_accuracy": 3,
                               "n_test_accuracy": 3, "n_seconds": 3,
                               "val_accuracy_mean": 0.85,
                               "val_accuracy_std": 0.002,
                               "test_accuracy_mean": 0.84,
                               "test_accuracy_std": 0.003,
                               "seconds_per_epoch_mean": 0.51}, ...],
                   "plateau_depth": 4, "best_depth": 8,
                   "best_val_accuracy": 0.861,
                   "time_fit": {"slope": 0.25, "intercept": 0.5,
                                "r2": 1.0, "n": 18} | null}, ...]}
    A group is (activation, width, every other config key that takes more
    than one value among the rows and does not follow from activation and
    width): group_keys lists those other keys, and each group's "params"
    their values (depth and seed never group). "n" counts the ok runs of
    a depth; n_val_accuracy, n_test_accuracy and n_seconds the values
    each mean is over (a run with validation_split 0 has no validation
    accuracy). A mean over no values (every run of that depth diverged)
    is null, as are plateau_depth, best_depth and best_val_accuracy of a
    group with no usable run; a standard deviation over fewer than two
    values is null.
*/
#ifndef MS_ANALYSIS_H
#define MS_ANALYSIS_H

#include <jansson.h>

#include "ms_err.h"

#define MS_ANALYSIS_PLATEAU_TOLERANCE 0.005 // default, absolute accuracy

typedef struct {
    double plateau_tolerance; // absolute validation accuracy, >= 0
} ms_analysis_options_t;

//  Fill opts with the defaults (plateau_tolerance 0.005).
void ms_analysis_options_default(ms_analysis_options_t *opts);

//  Analyse a sweep's result rows (borrowed JSON array of row objects; opts
//  NULL = defaults). Each row needs "status" ("ok", "diverged", "failed")
//  and "config" with "activation" and either "hidden_sizes" (array of
//  ints; depth = its length, width = its largest entry) or
//  "hidden_layers" and "width". "failed" rows count as failed whatever
//  their "counted" (ms_results synthesizes them with "counted": false);
//  ok and diverged rows with "counted": false (duplicates, extra
//  replicas) are left out (n_not_counted). Only "ok" rows enter the
//  means; a null
//  or missing metric is left out of that metric's mean. Standard
//  deviations are population ones (over the n seeds, divisor n).
//  On success *out is a new JSON object as described above (caller owns:
//  json_decref). Returns MS_OK; MS_ERR_INVALID (rows is not an array, a
//  row lacks a field or has one of the wrong type, an unknown status, a
//  negative tolerance: diag.where is the JSON path such as
//  "rows[3].config.hidden_layers"); MS_ERR_NOMEM. Thread-safe (no
//  shared state).
int ms_analysis_compute(const json_t *rows, const ms_analysis_options_t *opts,
                        json_t **out, ms_diag_t *diag);

//  Render an analysis object (from ms_analysis_compute) as plain text for
//  a terminal: the rule, then per group a table of depth, n, diverged,
//  val and test accuracy (mean +- std), seconds per epoch, then the
//  plateau and best depth and the time fit. A group is labelled with its
//  keys ("relu, width 64, optimizer sgd"); a std over one value reads
//  "n/a", and a mean over fewer values than ok runs carries "(n=K)".
//  Caller frees the result;
//  NULL only when memory runs out.
char *ms_analysis_format_text(const json_t *analysis);

//  The extra group keys of rows (as "group_keys" of ms_analysis_compute:
//  sorted names of the config keys other than activation, width,
//  hidden_layers, hidden_sizes and seed that take more than one value and
//  do not follow from activation and width). Rows that would be refused
//  or skipped by ms_analysis_compute are ignored. New JSON array of
//  strings (caller owns: json_decref); NULL only when memory runs out.
json_t *ms_analysis_group_keys(const json_t *rows);

#endif
