/*  =========================================================================
    ms_analysis - answers to the 2015 paper's questions from a sweep's
    result rows: a metric against any swept parameter (depth by default)
    with 95% intervals over seeds, where it stops improving, and time
    against that parameter

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Input is the JSON array of result rows (DESIGN.md "result row"; see
    ms_results.h). The analysis is laid out along one axis x, a swept
    numeric parameter: hidden_layers (the depth, the default; "depth" is
    read as its alias), width, or any config key whose values are all
    numbers and take more than one value (learning_rate, batch_size,
    dropout, l2, warmup_epochs, ...). Rows are grouped by (activation,
    width, depth, every other swept parameter) less the axis; inside a
    group, by x. Per x value (a "point") the chosen metric's mean over
    seeds, its sample standard deviation and its 95% Student-t interval,
    with the mean validation and test accuracy and time per epoch. Per
    group: the plateau as a range of x with its sentence, the best point,
    and the least-squares line of seconds per epoch against x. This JSON
    is what `meshsweep results --analyze` prints as text and what GET
    /api/v1/sweeps/{id}/analysis serves.

    Output object:
      {"rule": "...", "interval_rule": "...", "plateau_tolerance": 0.005,
       "x": "hidden_layers", "x_label": "depth", "x_scale": "linear"|"log",
       "axes": ["hidden_layers", "width", "learning_rate", ...],
       "metric": {"name": "val_accuracy", "goal": "maximize"},
       "metrics": ["val_accuracy", ...],
       "n_rows": N, "n_ok": N, "n_diverged": N, "n_failed": N,
       "n_not_counted": N, "group_keys": ["optimizer", ...],
       "groups": [{"activation": "relu", "width": 64 | null,
                   "hidden_layers": 4 (only when x is not the depth),
                   "params": {"optimizer": "sgd", ...},
                   "points": [{"x": 1, "n": 3, "n_diverged": 0,
                               "n_failed": 0, "n_metric": 3,
                               "mean": 0.85, "std": 0.01,
                               "lo": 0.825, "hi": 0.875,
                               "n_val_accuracy": 3,
                               "n_test_accuracy": 3, "n_seconds": 3,
                               "val_accuracy_mean": 0.85,
                               "val_accuracy_std": 0.002,
                               "test_accuracy_mean": 0.84,
                               "test_accuracy_std": 0.003,
                               "seconds_per_epoch_mean": 0.51,
                               "n_seconds_normalised": 3,
                               "seconds_per_epoch_normalised_mean": 0.5},
                              ...],
                   "best_x": 8, "best_mean": 0.861, "best_lo": 0.84,
                   "best_hi": 0.88, "plateau_from": 2, "plateau_to": 4,
                   "plateau_reached": true,
                   "plateau_text": "val_accuracy stops improving at depth
                                    2 to 4 (...)",
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
    Seeds and replicas. A point's n counts tasks, not rows: the rows of
    one task_id (verification replicas of one config and seed) are one
    sample, whose value of a metric is the lower median of its ok rows'
    values (as `results --by-task`); a row without task_id is a task of
    its own. A task is ok when one of its rows is, else diverged when one
    is, else failed. n_metric, n_val_accuracy and n_test_accuracy count
    the ok tasks with a value of that metric; seconds are per row (each
    run is one timing of one machine). Standard deviations are sample
    ones (divisor n - 1); the interval is mean +- t(0.975, n - 1) s /
    sqrt(n) (null below two values). x_scale is "log" when every x is
    positive and the largest is at least 100 times the smallest (values
    spread over orders of magnitude, as learning rates are); the fits
    stay linear in x either way.
    A group is (activation, width, depth, every other config key that
    takes more than one value among the rows and does not follow from
    activation and width), less the axis: group_keys lists those other
    keys, and each group's "params" their values (seed never groups).
    With x width, a group's "width" is null; with x other than the depth,
    the group has "hidden_layers" (its depth) as a field. A key that a
    canonical config leaves out at its default (warmup_epochs 0) reads as
    that default (ms_config_encode_json_all), as an axis and as a group
    key. A mean over no values (every run of that x diverged) is null, as
    are the best and plateau fields of a group with no usable run. The
    plateau rule is stated in the output's "rule" and in ms_analysis.c.

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

#define MS_ANALYSIS_PLATEAU_TOLERANCE 0.005 // default, absolute metric units
#define MS_ANALYSIS_LOG_SPREAD                                                 \
    100.0 // largest / smallest x that
          // makes the axis "log"

typedef enum {
    MS_ANALYSIS_GOAL_AUTO,     // by the metric's name: accuracies are
                               // maximised, losses, times and sizes
                               // minimised
    MS_ANALYSIS_GOAL_MAXIMIZE, // larger is better
    MS_ANALYSIS_GOAL_MINIMIZE  // smaller is better
} ms_analysis_goal_t;

typedef struct {
    double plateau_tolerance; // absolute, in the metric's units, >= 0
    double reference_gflops;  // speed the normalised fits are expressed
                              // at (GFLOP/s); 0 = the median calibration
                              // of the timed runs (the default)
    bool verified_only;       // the caller gave verified rows only (echoed
                              // as "verified_only"; rows are not filtered
                              // here)
    const char *x;            // the axis: NULL or "", "hidden_layers",
                              // "depth" (the depth, default), "width", or
                              // a swept numeric config key (borrowed)
    const char *metric;       // NULL = val_accuracy; one of
                              // ms_analysis_metric_names (borrowed)
    ms_analysis_goal_t goal;  // AUTO by default
} ms_analysis_options_t;

//  Fill opts with the defaults (plateau_tolerance 0.005, reference_gflops
//  0: the median calibration, verified_only false, x the depth, metric
//  val_accuracy, goal by the metric's name).
void ms_analysis_options_default(ms_analysis_options_t *opts);

//  The metrics a result row carries that the analysis can take (NULL-
//  terminated, borrowed, static): val_accuracy, test_accuracy, val_loss,
//  test_loss, train_loss (the row's, else its curve's last epoch),
//  train_seconds, seconds_per_epoch, params.
extern const char *const ms_analysis_metric_names[];

//  Set opts->metric and opts->goal from a sweep's "metric" object
//  ({"name": N, "goal": "maximize"|"minimize"}, borrowed; NULL or
//  malformed: val_accuracy, goal by name) and an override name (NULL:
//  none). The override takes the spec's goal when it names the spec's
//  metric, else the goal by its name. opts->metric borrows from spec or
//  override, which must outlive the compute call. The name is checked by
//  ms_analysis_compute, not here. No errors; thread-safe (touches opts
//  only).
void ms_analysis_options_metric(ms_analysis_options_t *opts,
                                const json_t *spec_metric,
                                const char *override);

//  The two-sided 95% Student-t quantile t(0.975, df) for df >= 1 degrees
//  of freedom: a table for df 1 to 30 (NIST/SEMATECH e-Handbook of
//  Statistical Methods, 1.3.6.7.2, to four decimals), above 30 the
//  Cornish-Fisher expansion in 1/df (Abramowitz and Stegun 26.7.5, three
//  terms; error under 1e-4 there). NAN for df < 1. Pure, thread-safe.
double ms_analysis_t975(long df);

//  Analyse a sweep's result rows (borrowed JSON array of row objects; opts
//  NULL = defaults) along opts->x for opts->metric. Each row needs
//  "status" ("ok", "diverged", "failed") and "config" with "activation" and
//  either "hidden_sizes" (array of ints; depth = its length, width = its
//  largest entry) or "hidden_layers" and "width". "failed" rows count as failed
//  whatever their "counted" (ms_results synthesizes them with "counted":
//  false); ok and diverged rows with "counted": false (duplicates, extra
//  replicas) are left out (n_not_counted). Only "ok" rows enter the
//  means; a null or missing metric is left out of that metric's mean.
//  Means, sample standard deviations (divisor n - 1) and 95% Student-t
//  intervals are over tasks (seeds), replicas of a task counted once.
//  On success *out is a new JSON object as described above (caller owns:
//  json_decref). Returns MS_OK; MS_ERR_INVALID (rows is not an array, a
//  row lacks a field or has one of the wrong type, an unknown status, a
//  negative tolerance or reference_gflops: diag.where is the JSON path
//  such as "rows[3].config.hidden_layers"; an unknown metric: where
//  "metric", the reason lists ms_analysis_metric_names; an axis that is
//  not a swept numeric parameter of the rows: where "x", the reason names
//  it and lists the swept numeric ones); MS_ERR_NOMEM. Thread-safe (no
//  shared state).
int ms_analysis_compute(const json_t *rows, const ms_analysis_options_t *opts,
                        json_t **out, ms_diag_t *diag);

//  Render an analysis object (from ms_analysis_compute) as plain text for
//  a terminal: the axis (and whether it is log-scaled), the metric and
//  its goal, the rules, then per group a table of x, n, diverged, the
//  metric's mean with its 95% interval ("n/a (n=1)" for one seed), val
//  and test accuracy (mean +- std), seconds per epoch, then the plateau
//  sentence and the time fit against x with its basis ("fit basis:
//  one machine class, fingerprint PREFIX (LABEL)" or "fit basis:
//  normalised to X GFLOP/s ..." followed by one line per machine class).
//  The header says whether the rows were verified ones only and the
//  reference GFLOP/s. A group is labelled with its keys ("relu, width 64,
//  optimizer sgd"); a std over one value reads "n/a", and a mean over
//  fewer values than ok tasks carries "(n=K)". Caller frees the result;
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
