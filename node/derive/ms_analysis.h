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
                               "seconds_per_epoch_mean": 0.51,
                               "n_seconds_normalised": 3,
                               "seconds_per_epoch_normalised_mean": 0.5},
                              ...],
                   "plateau_depth": 4, "best_depth": 8,
                   "best_val_accuracy": 0.861,
                   "time_fit": {"slope": 0.25, "intercept": 0.5,
                                "r2": 1.0, "n": 18} | null,
                   "time_fit_basis": "fingerprint:1a2b3c4d5e6f" |
                                     "normalised" | null,
                   "time_fit_reference_gflops": 48.2 | null,
                   "time_fit_n_uncalibrated": 0,
                   "time_fit_normalised": {"slope", "intercept", "r2",
                                           "n"} | null,
                   "time_fits": [{"class": "1a2b3c4d5e6f",
                                  "fingerprint": "1a2b...(64 hex)" | null,
                                  "label": "cpu: MODEL (Haswell)",
                                  "n_rows": 18, "nodes": ["NODE_ID", ...],
                                  "calibration_gflops": 48.2 | null,
                                  "n_uncalibrated": 0,
                                  "fit": {...} | null}, ...]}, ...],
       "verified_only": false, "time_rule": "...",
       "time_reference_gflops": 48.2 | null, "time_reference": "median",
       "n_uncalibrated": 0}
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

    Time fits (the "time_rule" says it in words). Timings from different
    machines are not mixed blindly. The timed runs (ok, with
    seconds_per_epoch) of a group are classed by the row's "fingerprint"
    (the backend fingerprint; runs without one form the class "unknown");
    "time_fits" holds one least-squares fit per class, most runs first
    ("class" is the fingerprint's first 12 hex characters, "label" the
    backend and CPU or GPU from the row's "platform", "nodes" the
    producers, "calibration_gflops" the median of the class's figures).
    "time_fit_normalised" fits every calibrated timed run with its
    seconds scaled to the reference machine: seconds x the row's
    platform.calibration_gflops / time_reference_gflops; the reference is
    the median calibration of the timed runs of the whole analysis (every
    group, so normalised slopes of groups compare), or the fixed
    opts.reference_gflops ("time_reference": "median" or "fixed"); a
    depth's seconds_per_epoch_normalised_mean is the mean of those
    scaled seconds over its n_seconds_normalised calibrated runs
    (seconds_per_epoch_mean stays the plain mean). Runs
    without a figure (missing, null or <= 0) are left out of it and
    counted in time_fit_n_uncalibrated (per group) and n_uncalibrated
    (all). "time_fit" keeps its shape: with one class it is that class's
    fit, in that machine's seconds ("time_fit_basis":
    "fingerprint:PREFIX"); with several it is the normalised fit
    ("normalised", at time_fit_reference_gflops); null (basis null) with
    no timed run.
*/
#ifndef MS_ANALYSIS_H
#define MS_ANALYSIS_H

#include <jansson.h>
#include <stdbool.h>

#include "ms_err.h"

#define MS_ANALYSIS_PLATEAU_TOLERANCE 0.005 // default, absolute accuracy

typedef struct {
    double plateau_tolerance; // absolute validation accuracy, >= 0
    double reference_gflops;  // speed the normalised fits are expressed
                              // at (GFLOP/s); 0 = the median calibration
                              // of the timed runs (the default)
    bool verified_only;       // the caller gave verified rows only (echoed
                              // as "verified_only"; rows are not filtered
                              // here)
} ms_analysis_options_t;

//  Fill opts with the defaults (plateau_tolerance 0.005, reference_gflops
//  0: the median calibration, verified_only false).
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
//  negative tolerance or reference_gflops: diag.where is the JSON path such as
//  "rows[3].config.hidden_layers"); MS_ERR_NOMEM. Thread-safe (no
//  shared state).
int ms_analysis_compute(const json_t *rows, const ms_analysis_options_t *opts,
                        json_t **out, ms_diag_t *diag);

//  Render an analysis object (from ms_analysis_compute) as plain text for
//  a terminal: the rule, then per group a table of depth, n, diverged,
//  val and test accuracy (mean +- std), seconds per epoch, then the
//  plateau and best depth and the time fit with its basis ("fit basis:
//  one machine class, fingerprint PREFIX (LABEL)" or "fit basis:
//  normalised to X GFLOP/s ..." followed by one line per machine class).
//  The header says whether the rows were verified ones only and the
//  reference GFLOP/s. A group is labelled with its
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
