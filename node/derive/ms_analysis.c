/*  =========================================================================
    ms_analysis - answers to the 2015 paper's questions from result rows

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The 2015 paper ("Framework for Distributed Deep Learning Layer Design
    in Python") asked how accuracy and training time change with the
    number of hidden layers, and where accuracy stops improving. DESIGN.md
    ("Programs", `--analyze`) asks for the same per activation and width.

    Axis and metric. The analysis is laid out along x, a swept numeric
    parameter: the depth (hidden_layers, or the length of hidden_sizes;
    the default, as the paper's question is about depth), the width
    (width, or the largest entry of hidden_sizes), or any config key
    whose values are all JSON numbers and take more than one value among
    the counted rows. Anything else is refused naming the key and listing
    the swept numeric ones: an axis that is not swept gives one point per
    group, which answers nothing. A key a canonical config leaves out at
    its default (the depth parameters: warmup_epochs 0 is written nowhere,
    so task ids made before them stay) reads as that default, here and in
    the grouping. The metric is the sweep's (spec
    `metric`, val_accuracy by default) or an override, with its goal
    (maximize or minimize; by its name when not given: accuracies up,
    losses, seconds and sizes down). The axis is called "log" when every
    x is positive and the largest is at least MS_ANALYSIS_LOG_SPREAD
    times the smallest (learning rates 1e-4 to 1e-1; depths 1 to 1024):
    a statement for the plot and the reader; every rule below works on
    the x values themselves.

    Grouping. A row's group is (activation, width, depth, every other
    swept parameter) less the axis. Uniform networks (hidden_layers +
    width) use their width; networks given as hidden_sizes use their
    largest layer (so (100) and (100, 10) are one group, at depths 1 and
    2: the wide layer dominates capacity, and the label stays one
    number). "Other swept parameter": a config key (other than
    activation, width, hidden_layers, hidden_sizes, seed and the axis)
    that takes more than one value among the counted rows, unless its
    value follows from (activation, width) alone - init, which follows
    the activation, would only clutter the label. So a sweep of optimizer
    [adam, sgd] gives one group per optimizer, and inside a group the rows
    of one x differ only by seed: the seeds are what is averaged. The
    group's "params" object holds those extra keys and their values
    ("activation", "width" and, off the depth axis, "hidden_layers" are
    fields of their own).

    Counting. A row's status decides: "failed" rows (ms_results
    synthesizes them with "counted": false, as no result was stored) are
    counted as failed; an "ok" or "diverged" row with "counted": false is
    a duplicate or an extra replica and is skipped (n_not_counted).
    "diverged" and "failed" rows are counted per point but never enter a
    mean: a diverged network has no meaningful accuracy, and counting it
    as 0 would mix "cannot train" with "trains worse". Samples are tasks:
    with verify.replicas 2 a task has two counted rows of one config and
    seed, which are one measurement twice (bit-identical where the
    machines are), not two seeds, so they are collapsed to one value, the
    lower median of the task's ok rows (the rule of `results --by-task`).
    A task is ok when one of its rows is. Each mean carries its own count
    (n_metric, n_val_accuracy, n_test_accuracy): a run with
    validation_split 0 has no validation accuracy but a test accuracy.
    Times are per row: each run is one timing on one machine.

    Intervals. Per point, over its n tasks with a value: the mean, the
    sample standard deviation s (divisor n - 1) and the 95% interval
    mean +- t(0.975, n - 1) s / sqrt(n), Student's t because n is a few
    seeds (ms_analysis_t975: the table of t for df 1 to 30, the
    Cornish-Fisher expansion above). With n = 1 there is no interval
    (lo and hi null; the text says "n/a (n=1)").

    Plateau rule (stated in the output). Let B be the best point of a
    group (largest mean for maximize, smallest for minimize; the smallest
    x on a tie) and h its interval's half-width (0 without interval). A
    point is level with the best when its mean is within r = max(
    tolerance, h) of B's mean. The plateau is the range of x from
    plateau_from, the smallest x whose interval reaches that level (its
    hi for maximize, lo for minimize; its mean without interval): the
    earliest x the data cannot tell from the plateau; to plateau_to,
    the smallest x whose mean is level with the best: from there on the
    means stop improving by more than r. "accuracy stops improving at
    depth FROM to TO" (or "at depth X" when both agree). When plateau_to
    is the last x with a mean, nothing after it confirms a plateau:
    plateau_reached is false, and the sentence says "still improving at
    the largest x" (and, when plateau_from is earlier, that the interval
    there reaches the best's level: the seeds cannot rule a plateau from
    there out). Means over seeds, not single runs, so one lucky seed
    does not move the plateau, and the best point's own interval widens
    the level, so three noisy seeds cannot claim a plateau later than
    the noise allows. The tolerance (absolute, default 0.005) keeps
    exact data (no spread) from calling a gain of 0.001 an improvement.
    Validation, not test, accuracy by default: the test set stays out of
    every choice.

    Time fit. Ordinary least squares of seconds_per_epoch against x over
    every ok run with a time (each run one point, so values with more
    surviving seeds weigh more, as they are better measured), in double
    with centred sums. Needs two distinct x, else null. R^2 = 1 - SS_res
    / SS_tot, and 1 when every time is equal (the line is exact).

    Not done: significance tests between points (three seeds make them
    weak; the intervals are reported so a reader can judge), intervals
    over the time fit, and fits other than linear (the paper reported
    linear growth of time with depth, which is what a plain MLP's cost
    predicts; against width or batch size it is not linear, and R^2 says
    so).
*/
#include "ms_analysis.h"
#include "ms_config_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  One usable row, flattened.
typedef struct {
    const char *activation; // borrowed from the rows
    const json_t *config;   // borrowed from the rows
    const json_t **gv;      // values of the extra group keys (borrowed;
                            // NULL entry = key absent)
    size_t n_gv;            // number of extra group keys
    int64_t width;          // group width (largest layer)
    int64_t depth;          // hidden layers
    int status;             // S_OK, S_DIVERGED, S_FAILED
    double val, test, sec;  // metrics (valid when has_*)
    bool has_val, has_test, has_sec;
    const char *fingerprint; // backend fingerprint (borrowed; NULL: none)
    const json_t *platform;  // platform object (borrowed; NULL: none)
    const char *node_id;     // producer (borrowed; NULL: none)
    double gflops;           // platform.calibration_gflops (has_gflops)
    bool has_gflops;
    const json_t *defaults; // every parameter at its default (borrowed):
                            // what a key the config leaves out reads as
    const char *task_id;    // the task (borrowed; NULL: a task of its own)
    double x;               // the axis value
    double m;               // the chosen metric (valid when has_m)
    bool has_m;
    int64_t gw; // width as a group field; -1 when x is width
    int64_t gd; // depth as a group field; -1 when x is depth
} s_row_t;

//  The axis and metric of one analysis.
typedef enum { S_AXIS_DEPTH, S_AXIS_WIDTH, S_AXIS_KEY } s_axis_t;

typedef struct {
    s_axis_t axis;      // which x
    const char *x;      // its name ("hidden_layers", "width", a key)
    const char *metric; // the metric's name (a ms_analysis_metric_names
                        // entry)
    bool maximize;      // the metric's goal
} s_ctx_t;

enum { S_OK, S_DIVERGED, S_FAILED };

#define S_CLASS_NAME 16 // a class's short name: 12 hex characters + NUL

//  The time fits' rule, as the output states it.
#define S_TIME_RULE                                                            \
    "time per epoch against depth: least squares over the ok runs. Runs "      \
    "are classed by backend fingerprint (machines whose results are "          \
    "bit-identical); each class has its own fit (time_fits). A group "         \
    "whose runs are all of one class takes that class's fit (basis "           \
    "fingerprint:PREFIX); a group whose runs span several classes takes "      \
    "the normalised fit (basis normalised): each run's seconds x its "         \
    "node's calibration_gflops (single-thread SGEMM GFLOP/s) / the "           \
    "reference GFLOP/s, the seconds the run would take on a machine of "       \
    "the reference speed; runs without a calibration figure are left out "     \
    "of it and counted (time_fit_n_uncalibrated)."

//  Running mean and sum of squares (Welford).
typedef struct {
    int64_t n;   // values seen
    double mean; // running mean
    double m2;   // sum of squared deviations
} s_stat_t;

//  --------------------------------------------------------------------------
//  Fill the default options.

void
ms_analysis_options_default(ms_analysis_options_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->plateau_tolerance = MS_ANALYSIS_PLATEAU_TOLERANCE;
    opts->goal = MS_ANALYSIS_GOAL_AUTO;
}

const char *const ms_analysis_metric_names[] = {
    "val_accuracy",  "test_accuracy",     "val_loss", "test_loss", "train_loss",
    "train_seconds", "seconds_per_epoch", "params",   NULL};

//  --------------------------------------------------------------------------
//  Whether name is one of the metrics.

static bool
s_known_metric(const char *name)
{
    for (size_t i = 0; ms_analysis_metric_names[i]; i++)
        if (strcmp(name, ms_analysis_metric_names[i]) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  The goal a metric's name implies: accuracies are maximised, the rest
//  (losses, seconds, parameter counts) minimised.

static bool
s_maximize_by_name(const char *name)
{
    return strstr(name, "accuracy") != NULL;
}

//  --------------------------------------------------------------------------
//  The metric and goal from a sweep's metric object and an override.

void
ms_analysis_options_metric(ms_analysis_options_t *opts,
                           const json_t *spec_metric, const char *override)
{
    const char *name = json_string_value(json_object_get(spec_metric, "name"));
    const char *goal = json_string_value(json_object_get(spec_metric, "goal"));
    ms_analysis_goal_t spec_goal = MS_ANALYSIS_GOAL_AUTO;
    if (goal && strcmp(goal, "maximize") == 0)
        spec_goal = MS_ANALYSIS_GOAL_MAXIMIZE;
    else if (goal && strcmp(goal, "minimize") == 0)
        spec_goal = MS_ANALYSIS_GOAL_MINIMIZE;
    if (override && *override) {
        opts->metric = override;
        opts->goal = name && strcmp(name, override) == 0
                         ? spec_goal
                         : MS_ANALYSIS_GOAL_AUTO;
    } else if (name) {
        opts->metric = name;
        opts->goal = spec_goal;
    } else {
        opts->metric = NULL;
        opts->goal = MS_ANALYSIS_GOAL_AUTO;
    }
}

//  --------------------------------------------------------------------------
//  t(0.975, df): the table (NIST/SEMATECH e-Handbook 1.3.6.7.2) to 30
//  degrees of freedom, the Cornish-Fisher expansion (Abramowitz and
//  Stegun 26.7.5) above: t = z + g1/df + g2/df^2 + g3/df^3 with z the
//  normal quantile 1.959964, g1 = (z^3 + z)/4, g2 = (5z^5 + 16z^3 +
//  3z)/96, g3 = (3z^7 + 19z^5 + 17z^3 - 15z)/384 (2.04227 at df 30,
//  where the table says 2.0423).

double
ms_analysis_t975(long df)
{
    static const double table[30] = {
        12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
        2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
        2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
        2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
    if (df < 1)
        return NAN;
    if (df <= 30)
        return table[df - 1];
    const double z = 1.959963984540054;
    double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
    double g1 = (z3 + z) / 4.0;
    double g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
    double g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
    double v = (double) df;
    return z + g1 / v + g2 / (v * v) + g3 / (v * v * v);
}

//  --------------------------------------------------------------------------
//  Add a value to a running statistic.

static void
s_stat_add(s_stat_t *s, double v)
{
    s->n++;
    double d = v - s->mean;
    s->mean += d / (double) s->n;
    s->m2 += d * (v - s->mean);
}

//  --------------------------------------------------------------------------
//  A JSON real, or null when there are no values.

static json_t *
s_real_or_null(bool have, double v)
{
    return have && isfinite(v) ? json_real(v) : json_null();
}

//  --------------------------------------------------------------------------
//  A config key's value in a row: the config's, else its default (a
//  canonical config leaves the newer parameters out at their defaults:
//  warmup_epochs 0 is written nowhere). NULL: neither has it.

static const json_t *
s_value(const s_row_t *r, const char *key)
{
    const json_t *v = json_object_get(r->config, key);
    return v ? v : json_object_get(r->defaults, key);
}

//  --------------------------------------------------------------------------
//  The defaults of every parameter as JSON (ms_config_encode_json_all of
//  ms_train_config_defaults); NULL when memory runs out.

static json_t *
s_defaults(void)
{
    ms_train_config_t d;
    ms_train_config_defaults(&d);
    return ms_config_encode_json_all(&d);
}

//  --------------------------------------------------------------------------
//  Read an optional metric: a number, or null/missing (has = false).

static int
s_metric(const json_t *row, size_t i, const char *key, double *v, bool *has,
         ms_diag_t *diag)
{
    const json_t *m = json_object_get(row, key);
    *has = false;
    if (!m || json_is_null(m))
        return MS_OK;
    if (!json_is_number(m)) {
        char where[64];
        snprintf(where, sizeof where, "rows[%zu].%s", i, key);
        return ms_diag_set(diag, where, "must be a number or null");
    }
    *v = json_number_value(m);
    *has = isfinite(*v);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Flatten one row; *skip is set for rows that are not counted.

static int
s_parse_row(const json_t *row, size_t i, const s_ctx_t *ctx,
            const json_t *defaults, s_row_t *r, bool *skip, ms_diag_t *diag)
{
    char where[96];
    *skip = false;
    memset(r, 0, sizeof *r);
    r->defaults = defaults;
    if (!json_is_object(row)) {
        snprintf(where, sizeof where, "rows[%zu]", i);
        return ms_diag_set(diag, where, "must be an object");
    }
    const char *status = json_string_value(json_object_get(row, "status"));
    snprintf(where, sizeof where, "rows[%zu].status", i);
    if (!status)
        return ms_diag_set(diag, where, "missing (ok, diverged or failed)");
    if (strcmp(status, "ok") == 0)
        r->status = S_OK;
    else if (strcmp(status, "diverged") == 0)
        r->status = S_DIVERGED;
    else if (strcmp(status, "failed") == 0)
        r->status = S_FAILED;
    else
        return ms_diag_set(diag, where,
                           "unknown status \"%.40s\" (ok, diverged or "
                           "failed)",
                           status);
    //  The status decides: a failed task's row is synthesized with
    //  "counted": false (no result was stored) and counts as failed; an
    //  ok or diverged row that is not counted is a duplicate or replica.
    const json_t *counted = json_object_get(row, "counted");
    if (counted && json_is_false(counted) && r->status != S_FAILED) {
        *skip = true;
        return MS_OK;
    }
    const json_t *config = json_object_get(row, "config");
    snprintf(where, sizeof where, "rows[%zu].config", i);
    if (!json_is_object(config))
        return ms_diag_set(diag, where, "missing or not an object");
    r->config = config;
    r->activation = json_string_value(json_object_get(config, "activation"));
    snprintf(where, sizeof where, "rows[%zu].config.activation", i);
    if (!r->activation)
        return ms_diag_set(diag, where, "missing or not a string");
    const json_t *sizes = json_object_get(config, "hidden_sizes");
    if (sizes && !json_is_null(sizes)) {
        snprintf(where, sizeof where, "rows[%zu].config.hidden_sizes", i);
        if (!json_is_array(sizes))
            return ms_diag_set(diag, where, "must be an array of integers");
        r->depth = (int64_t) json_array_size(sizes);
        for (size_t k = 0; k < json_array_size(sizes); k++) {
            const json_t *s = json_array_get(sizes, k);
            if (!json_is_integer(s) || json_integer_value(s) < 1)
                return ms_diag_set(diag, where,
                                   "entry %zu must be a positive integer", k);
            if (json_integer_value(s) > r->width)
                r->width = json_integer_value(s);
        }
    } else {
        const json_t *layers = json_object_get(config, "hidden_layers");
        const json_t *width = json_object_get(config, "width");
        snprintf(where, sizeof where, "rows[%zu].config.hidden_layers", i);
        if (!json_is_integer(layers) || json_integer_value(layers) < 0)
            return ms_diag_set(diag, where,
                               "missing or not an integer >= 0 (and no "
                               "hidden_sizes)");
        snprintf(where, sizeof where, "rows[%zu].config.width", i);
        if (!json_is_integer(width) || json_integer_value(width) < 1)
            return ms_diag_set(diag, where,
                               "missing or not a positive integer (and no "
                               "hidden_sizes)");
        r->depth = json_integer_value(layers);
        r->width = json_integer_value(width);
    }
    int rc = s_metric(row, i, "val_accuracy", &r->val, &r->has_val, diag);
    if (rc == MS_OK)
        rc = s_metric(row, i, "test_accuracy", &r->test, &r->has_test, diag);
    if (rc == MS_OK)
        rc = s_metric(row, i, "seconds_per_epoch", &r->sec, &r->has_sec, diag);
    if (rc == MS_OK && ctx)
        rc = s_metric(row, i, ctx->metric, &r->m, &r->has_m, diag);
    //  train_loss: the row's, else its curve's last epoch (a row carries
    //  the losses of validation and test only; the curve has training's).
    if (rc == MS_OK && ctx && !r->has_m &&
        strcmp(ctx->metric, "train_loss") == 0 &&
        !json_object_get(row, "train_loss")) {
        const json_t *curve = json_object_get(row, "curve");
        size_t n_ep = json_array_size(curve);
        const json_t *last =
            n_ep
                ? json_object_get(json_array_get(curve, n_ep - 1), "train_loss")
                : NULL;
        if (json_is_number(last) && isfinite(json_number_value(last))) {
            r->m = json_number_value(last);
            r->has_m = true;
        }
    }
    const char *task = json_string_value(json_object_get(row, "task_id"));
    r->task_id = task && *task ? task : NULL;
    //  Where the run ran: descriptive fields, read leniently (a row
    //  without them, or with them of another type, has no class and no
    //  calibration; it is not refused).
    const char *fp = json_string_value(json_object_get(row, "fingerprint"));
    r->fingerprint = fp && *fp ? fp : NULL;
    r->node_id = json_string_value(json_object_get(row, "node_id"));
    const json_t *platform = json_object_get(row, "platform");
    r->platform = json_is_object(platform) ? platform : NULL;
    const json_t *gflops = json_object_get(platform, "calibration_gflops");
    if (json_is_number(gflops) && isfinite(json_number_value(gflops)) &&
        json_number_value(gflops) > 0) {
        r->gflops = json_number_value(gflops);
        r->has_gflops = true;
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  qsort callback over const char * (byte order).

static int
s_str_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

//  --------------------------------------------------------------------------
//  The member names of obj in byte order (json_object_foreach follows
//  insertion order), borrowed from obj, in a new array of *n (caller
//  frees); NULL when memory runs out.

static const char **
s_sorted_keys(const json_t *obj, size_t *n)
{
    *n = json_object_size(obj);
    const char **sorted = calloc(*n ? *n : 1, sizeof *sorted);
    if (!sorted)
        return NULL;
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *) obj, key, v) sorted[k++] = key;
    qsort(sorted, *n, sizeof *sorted, s_str_ptr_cmp);
    return sorted;
}

//  --------------------------------------------------------------------------
//  Config keys that never form a group of their own: the activation and
//  width are group fields already, depth is what a group is laid out by,
//  and the seeds are what is averaged.

static bool
s_fixed_key(const char *key)
{
    return strcmp(key, "activation") == 0 || strcmp(key, "width") == 0 ||
           strcmp(key, "hidden_layers") == 0 ||
           strcmp(key, "hidden_sizes") == 0 || strcmp(key, "seed") == 0;
}

//  --------------------------------------------------------------------------
//  Order two JSON values (NULL, absent, first; numbers by value; strings
//  by bytes; anything else by its compact dump).

static int
s_json_cmp(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (json_is_string(a) && json_is_string(b))
        return strcmp(json_string_value(a), json_string_value(b));
    if (json_typeof(a) != json_typeof(b))
        return json_typeof(a) < json_typeof(b) ? -1 : 1;
    if (json_equal((json_t *) a, (json_t *) b))
        return 0;
    char *x = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *y = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    int c = strcmp(x ? x : "", y ? y : "");
    free(x);
    free(y);
    return c;
}

//  --------------------------------------------------------------------------
//  Whether two config values are equal (both absent counts as equal).

static bool
s_json_same(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    return json_equal((json_t *) a, (json_t *) b);
}

//  --------------------------------------------------------------------------
//  Whether key's value follows from (activation, width) over rows[0 .. n)
//  (init follows the activation, for instance). NULL when memory runs
//  out is answered false: the key is then kept, which is safe.

static bool
s_key_follows(const s_row_t *rows, size_t n, const char *key)
{
    json_t *seen = json_object();
    bool follows = seen != NULL;
    for (size_t i = 0; follows && i < n; i++) {
        char id[160];
        snprintf(id, sizeof id, "%.100s|%lld", rows[i].activation,
                 (long long) rows[i].width);
        json_t *v = (json_t *) s_value(&rows[i], key);
        if (!v)
            v = json_null(); // absent reads as null here
        json_t *before = json_object_get(seen, id);
        if (before)
            follows = json_equal(before, v);
        else if (json_object_set(seen, id, v) != 0)
            follows = false;
    }
    json_decref(seen);
    return follows;
}

//  --------------------------------------------------------------------------
//  The extra group keys of rows[0 .. n): sorted names of the config keys
//  (other than the fixed ones) that take more than one value and do not
//  follow from (activation, width). New JSON array; NULL when memory runs
//  out.

static json_t *
s_group_keys(const s_row_t *rows, size_t n, const char *x)
{
    json_t *names = json_object(); // set of every config key seen
    json_t *keys = json_array();
    if (!names || !keys)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *) rows[i].config, key, v)
        {
            if (!s_fixed_key(key) && (!x || strcmp(key, x) != 0) &&
                !json_object_get(names, key) &&
                json_object_set_new(names, key, json_true()) != 0)
                goto fail;
        }
    }
    size_t n_names = 0;
    const char **sorted = s_sorted_keys(names, &n_names);
    if (!sorted)
        goto fail;
    for (size_t k = 0; k < n_names; k++) {
        const json_t *first = s_value(&rows[0], sorted[k]);
        bool varies = false;
        for (size_t i = 1; i < n && !varies; i++)
            varies = !s_json_same(first, s_value(&rows[i], sorted[k]));
        if (varies && !s_key_follows(rows, n, sorted[k]) &&
            json_array_append_new(keys, json_string(sorted[k])) != 0) {
            free(sorted);
            goto fail;
        }
    }
    free(sorted);
    json_decref(names);
    return keys;

fail:
    json_decref(names);
    json_decref(keys);
    return NULL;
}

//  --------------------------------------------------------------------------
//  Order two task ids (NULL, a task of its own, first).

static int
s_task_cmp(const char *a, const char *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

//  --------------------------------------------------------------------------
//  Order rows by group (activation, width, depth, the extra group keys),
//  then x, then task.

static int
s_row_cmp(const void *a, const void *b)
{
    const s_row_t *x = a, *y = b;
    int c = strcmp(x->activation, y->activation);
    if (c)
        return c;
    if (x->gw != y->gw)
        return x->gw < y->gw ? -1 : 1;
    if (x->gd != y->gd)
        return x->gd < y->gd ? -1 : 1;
    for (size_t k = 0; k < x->n_gv; k++)
        if ((c = s_json_cmp(x->gv[k], y->gv[k])) != 0)
            return c;
    if (x->x != y->x)
        return x->x < y->x ? -1 : 1;
    return s_task_cmp(x->task_id, y->task_id);
}

//  --------------------------------------------------------------------------
//  Whether two rows belong to the same group.

static bool
s_same_group(const s_row_t *a, const s_row_t *b)
{
    if (strcmp(a->activation, b->activation) != 0 || a->gw != b->gw ||
        a->gd != b->gd)
        return false;
    for (size_t k = 0; k < a->n_gv; k++)
        if (s_json_cmp(a->gv[k], b->gv[k]) != 0)
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  Set a key to a new value; false when memory runs out.

static bool
s_set(json_t *obj, const char *key, json_t *value)
{
    return value && json_object_set_new(obj, key, value) == 0;
}

//  --------------------------------------------------------------------------
//  Least-squares line of y against x over n points; JSON object
//  {slope, intercept, r2, n}, JSON null when fewer than two distinct x,
//  NULL when memory runs out.

static json_t *
s_fit(const double *x, const double *y, size_t n)
{
    bool distinct = false;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        if (x[i] != x[0])
            distinct = true;
        mx += x[i];
        my += y[i];
    }
    if (!distinct)
        return json_null();
    mx /= (double) n;
    my /= (double) n;
    double sxx = 0, sxy = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    double slope = sxy / sxx;
    double intercept = my - slope * mx;
    double ss_res = 0;
    for (size_t i = 0; i < n; i++) {
        double e = y[i] - (intercept + slope * x[i]);
        ss_res += e * e;
    }
    double r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
    json_t *fit = json_object();
    if (!fit || !s_set(fit, "slope", json_real(slope)) ||
        !s_set(fit, "intercept", json_real(intercept)) ||
        !s_set(fit, "r2", json_real(r2)) ||
        !s_set(fit, "n", json_integer((json_int_t) n))) {
        json_decref(fit);
        return NULL;
    }
    return fit;
}

//  --------------------------------------------------------------------------
//  Whether a row is a timed run: ok, with seconds per epoch.

static bool
s_timed(const s_row_t *r)
{
    return r->status == S_OK && r->has_sec;
}

//  --------------------------------------------------------------------------
//  Order two doubles (qsort).

static int
s_double_cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

//  --------------------------------------------------------------------------
//  Median of v[0 .. n) (sorts v); NAN when n is 0.

static double
s_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, s_double_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

//  --------------------------------------------------------------------------
//  The reference GFLOP/s of the normalised fits: the median calibration
//  of the timed runs that have one, over every group; NAN when none has.
//  *n_uncalibrated gets the number of timed runs without a figure.

static double
s_reference_gflops(const s_row_t *rows, size_t n, int64_t *n_uncalibrated)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t k = 0;
    *n_uncalibrated = 0;
    for (size_t i = 0; i < n; i++) {
        if (!s_timed(&rows[i]))
            continue;
        if (!rows[i].has_gflops)
            (*n_uncalibrated)++;
        else if (v)
            v[k++] = rows[i].gflops;
    }
    double ref = v ? s_median(v, k) : NAN;
    free(v);
    return ref;
}

//  --------------------------------------------------------------------------
//  Compare two fingerprints (NULL: none, first).

static int
s_fp_cmp(const char *a, const char *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

//  --------------------------------------------------------------------------
//  Order row pointers by fingerprint (qsort).

static int
s_row_fp_cmp(const void *a, const void *b)
{
    const s_row_t *x = *(const s_row_t *const *) a;
    const s_row_t *y = *(const s_row_t *const *) b;
    int c = s_fp_cmp(x->fingerprint, y->fingerprint);
    if (c)
        return c;
    return (x > y) - (x < y); // row order inside a class: a stable sort
}

//  --------------------------------------------------------------------------
//  The short name of a fingerprint class: its first 12 hex characters, or
//  "unknown" for runs that carry none.

static void
s_class_name(const char *fingerprint, char out[S_CLASS_NAME])
{
    snprintf(out, S_CLASS_NAME, "%.12s", fingerprint ? fingerprint : "unknown");
}

//  --------------------------------------------------------------------------
//  A readable label of a platform object: "cpu: MODEL (BLAS core)" or
//  "cuda: GPU (cc X)"; "unknown platform" without one. New JSON string.

static json_t *
s_class_label(const json_t *platform)
{
    const char *backend =
        json_string_value(json_object_get(platform, "backend"));
    if (!backend)
        return json_string("unknown platform");
    char label[320];
    if (strcmp(backend, "cuda") == 0) {
        const char *gpu = json_string_value(json_object_get(platform, "gpu"));
        const char *cc = json_string_value(json_object_get(platform, "gpu_cc"));
        snprintf(label, sizeof label, "%.16s: %.128s (cc %.8s)", backend,
                 gpu && *gpu ? gpu : "unknown GPU", cc && *cc ? cc : "?");
    } else {
        const char *cpu =
            json_string_value(json_object_get(platform, "cpu_model"));
        const char *core =
            json_string_value(json_object_get(platform, "blas_core"));
        snprintf(label, sizeof label, "%.16s: %.128s (%.32s)", backend,
                 cpu && *cpu ? cpu : "unknown CPU", core && *core ? core : "?");
    }
    return json_string(label);
}

//  --------------------------------------------------------------------------
//  One fingerprint class's entry from the timed rows p[0 .. n) (one
//  fingerprint); x, y: scratch of n doubles.

static json_t *
s_class_entry(const s_row_t *const *p, size_t n, double *x, double *y)
{
    json_t *nodes = json_array();
    json_t *c = json_object();
    char name[S_CLASS_NAME];
    s_class_name(p[0]->fingerprint, name);
    size_t n_cal = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = p[i]->x;
        y[i] = p[i]->sec;
    }
    json_t *fit = s_fit(x, y, n);
    for (size_t i = 0; i < n; i++)
        if (p[i]->has_gflops)
            x[n_cal++] = p[i]->gflops;
    double gflops = s_median(x, n_cal);
    //  Producers, sorted and unique.
    const char **ids = calloc(n, sizeof *ids);
    size_t n_ids = 0;
    for (size_t i = 0; ids && i < n; i++)
        if (p[i]->node_id)
            ids[n_ids++] = p[i]->node_id;
    if (ids)
        qsort(ids, n_ids, sizeof *ids, s_str_ptr_cmp);
    for (size_t i = 0; ids && nodes && i < n_ids; i++)
        if ((i == 0 || strcmp(ids[i], ids[i - 1]) != 0) &&
            json_array_append_new(nodes, json_string(ids[i])) != 0)
            break;
    if (!ids || !nodes || !c || !fit || !s_set(c, "class", json_string(name)) ||
        !s_set(c, "fingerprint",
               p[0]->fingerprint ? json_string(p[0]->fingerprint)
                                 : json_null()) ||
        !s_set(c, "label", s_class_label(p[0]->platform)) ||
        !s_set(c, "n_rows", json_integer((json_int_t) n)) ||
        json_object_set(c, "nodes", nodes) != 0 ||
        !s_set(c, "calibration_gflops", s_real_or_null(n_cal > 0, gflops)) ||
        !s_set(c, "n_uncalibrated", json_integer((json_int_t) (n - n_cal))) ||
        json_object_set(c, "fit", fit) != 0) {
        json_decref(c);
        c = NULL;
    }
    free(ids);
    json_decref(nodes);
    json_decref(fit);
    return c;
}

//  --------------------------------------------------------------------------
//  Order class entries: most runs first, then by fingerprint (qsort).

static int
s_class_cmp(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *) a;
    const json_t *y = *(const json_t *const *) b;
    json_int_t nx = json_integer_value(json_object_get(x, "n_rows"));
    json_int_t ny = json_integer_value(json_object_get(y, "n_rows"));
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return s_fp_cmp(json_string_value(json_object_get(x, "fingerprint")),
                    json_string_value(json_object_get(y, "fingerprint")));
}

//  --------------------------------------------------------------------------
//  The time fits of a group's rows[0 .. n) into g: "time_fits" (one per
//  fingerprint class), "time_fit_normalised" (seconds scaled to ref
//  GFLOP/s), and "time_fit" with its "time_fit_basis",
//  "time_fit_reference_gflops" and "time_fit_n_uncalibrated". False when
//  memory runs out.

static bool
s_time_fits(json_t *g, const s_row_t *rows, size_t n, double ref)
{
    const s_row_t **p = malloc((n ? n : 1) * sizeof *p);
    double *x = malloc((n ? n : 1) * sizeof *x);
    double *y = malloc((n ? n : 1) * sizeof *y);
    json_t **cls = calloc(n ? n : 1, sizeof *cls);
    json_t *fits = json_array();
    json_t *norm = NULL;
    size_t n_timed = 0, n_cls = 0;
    bool done = false;
    if (!p || !x || !y || !cls || !fits)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (s_timed(&rows[i]))
            p[n_timed++] = &rows[i];
    //  Per class: the rows sorted by fingerprint, in row order inside a
    //  class (so a class's fit is bit for bit the fit of its rows).
    qsort(p, n_timed, sizeof *p, s_row_fp_cmp);
    for (size_t i = 0; i < n_timed;) {
        size_t j = i;
        while (j < n_timed &&
               s_fp_cmp(p[i]->fingerprint, p[j]->fingerprint) == 0)
            j++;
        if (!(cls[n_cls] = s_class_entry(p + i, j - i, x, y)))
            goto out;
        n_cls++;
        i = j;
    }
    qsort(cls, n_cls, sizeof *cls, s_class_cmp);
    for (size_t k = 0; k < n_cls; k++)
        if (json_array_append(fits, cls[k]) != 0)
            goto out;
    //  Normalised: every calibrated timed run, seconds x gflops / ref, in
    //  row order (as the single-class fit).
    size_t m = 0;
    for (size_t i = 0; i < n && !isnan(ref); i++)
        if (s_timed(&rows[i]) && rows[i].has_gflops) {
            x[m] = rows[i].x;
            y[m] = rows[i].sec * rows[i].gflops / ref;
            m++;
        }
    norm = m > 0 ? s_fit(x, y, m) : json_null();
    if (!norm)
        goto out;
    json_t *fit = json_null(), *basis = json_null(), *at = json_null();
    if (n_cls == 1) {
        //  One class: its own fit, in that machine's seconds.
        fit = json_incref(json_object_get(cls[0], "fit"));
        char name[S_CLASS_NAME], text[S_CLASS_NAME + 16];
        s_class_name(p[0]->fingerprint, name);
        snprintf(text, sizeof text, "fingerprint:%s", name);
        basis = json_string(text);
    } else if (n_cls > 1) {
        fit = json_incref(norm);
        basis = json_string("normalised");
        at = s_real_or_null(!isnan(ref), ref);
    }
    if (json_is_null(fit)) { // no fit: no basis either (docs/RESULTS.md)
        json_decref(basis);
        basis = json_null();
    }
    if (!s_set(g, "time_fit", fit) || !s_set(g, "time_fit_basis", basis) ||
        !s_set(g, "time_fit_reference_gflops", at) ||
        !s_set(g, "time_fit_n_uncalibrated",
               json_integer((json_int_t) (n_timed - m))) ||
        json_object_set(g, "time_fit_normalised", norm) != 0 ||
        json_object_set(g, "time_fits", fits) != 0)
        goto out;
    done = true;

out:
    for (size_t k = 0; cls && k < n_cls; k++)
        json_decref(cls[k]);
    free(cls);
    free(p);
    free(x);
    free(y);
    json_decref(fits);
    json_decref(norm);
    return done;
}

//  --------------------------------------------------------------------------
//  The lower median of v[0 .. n) (sorts v); n > 0.

static double
s_lower_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, s_double_cmp);
    return v[(n - 1) / 2];
}

//  --------------------------------------------------------------------------
//  A statistic's JSON members prefix_mean and prefix_std (sample, null
//  below two values) into e; false when memory runs out.

static bool
s_set_mean_std(json_t *e, const char *mean_key, const char *std_key,
               const s_stat_t *st)
{
    return s_set(e, mean_key, s_real_or_null(st->n > 0, st->mean)) &&
           s_set(
               e, std_key,
               s_real_or_null(st->n > 1, sqrt(st->m2 / (double) (st->n - 1))));
}

//  --------------------------------------------------------------------------
//  A JSON copy of a row's x: the config's own value for a key axis
//  (integer or real as written), an integer for depth and width.

static json_t *
s_x_json(const s_row_t *r, const s_ctx_t *ctx)
{
    if (ctx->axis == S_AXIS_DEPTH)
        return json_integer(r->depth);
    if (ctx->axis == S_AXIS_WIDTH)
        return json_integer(r->width);
    return json_deep_copy(s_value(r, ctx->x));
}

//  What a point's entry hands back to its group for the plateau.
typedef struct {
    double x;      // the point's x
    json_t *xj;    // its JSON value (borrowed from the point's entry)
    double mean;   // the metric's mean over tasks; NAN: none
    double lo, hi; // its 95% interval; NAN: none (fewer than two)
    int64_t n;     // tasks with a value
} s_point_t;

//  --------------------------------------------------------------------------
//  One point's entry from rows[0 .. n) (all of one x, sorted by task):
//  the tasks' values (lower median of each task's ok rows) averaged, with
//  the 95% Student-t interval of the chosen metric; times per row. *pt
//  gets what the plateau needs. NULL when memory runs out.

static json_t *
s_point_entry(const s_row_t *rows, size_t n, const s_ctx_t *ctx, double ref,
              s_point_t *pt)
{
    s_stat_t met = {0}, val = {0}, test = {0}, sec = {0}, norm = {0};
    int64_t n_ok = 0, n_div = 0, n_fail = 0;
    double *buf = malloc((n ? n : 1) * 3 * sizeof *buf);
    if (!buf)
        return NULL;
    double *bm = buf, *bv = buf + n, *bt = buf + 2 * n;
    for (size_t i = 0; i < n;) {
        //  One task: rows i .. j (a NULL task id is a task of its own).
        size_t j = i + 1;
        while (rows[i].task_id && j < n && rows[j].task_id &&
               strcmp(rows[i].task_id, rows[j].task_id) == 0)
            j++;
        size_t km = 0, kv = 0, kt = 0, k_ok = 0;
        bool diverged = false;
        for (size_t k = i; k < j; k++) {
            const s_row_t *r = &rows[k];
            if (r->status == S_DIVERGED)
                diverged = true;
            if (r->status != S_OK)
                continue;
            k_ok++;
            if (r->has_m)
                bm[km++] = r->m;
            if (r->has_val)
                bv[kv++] = r->val;
            if (r->has_test)
                bt[kt++] = r->test;
            if (r->has_sec)
                s_stat_add(&sec, r->sec);
            if (r->has_sec && r->has_gflops && !isnan(ref))
                s_stat_add(&norm, r->sec * r->gflops / ref);
        }
        if (k_ok > 0) {
            n_ok++;
            if (km)
                s_stat_add(&met, s_lower_median(bm, km));
            if (kv)
                s_stat_add(&val, s_lower_median(bv, kv));
            if (kt)
                s_stat_add(&test, s_lower_median(bt, kt));
        } else if (diverged)
            n_div++;
        else
            n_fail++;
        i = j;
    }
    free(buf);
    pt->x = rows[0].x;
    pt->n = met.n;
    pt->mean = met.n ? met.mean : NAN;
    pt->lo = pt->hi = NAN;
    if (met.n > 1) {
        double sd = sqrt(met.m2 / (double) (met.n - 1));
        double h =
            ms_analysis_t975((long) met.n - 1) * sd / sqrt((double) met.n);
        pt->lo = met.mean - h;
        pt->hi = met.mean + h;
    }
    json_t *e = json_object();
    if (!e || !s_set(e, "x", s_x_json(&rows[0], ctx)) ||
        !s_set(e, "n", json_integer(n_ok)) ||
        !s_set(e, "n_diverged", json_integer(n_div)) ||
        !s_set(e, "n_failed", json_integer(n_fail)) ||
        !s_set(e, "n_metric", json_integer(met.n)) ||
        !s_set_mean_std(e, "mean", "std", &met) ||
        !s_set(e, "lo", s_real_or_null(met.n > 1, pt->lo)) ||
        !s_set(e, "hi", s_real_or_null(met.n > 1, pt->hi)) ||
        !s_set(e, "n_val_accuracy", json_integer(val.n)) ||
        !s_set(e, "n_test_accuracy", json_integer(test.n)) ||
        !s_set(e, "n_seconds", json_integer(sec.n)) ||
        !s_set_mean_std(e, "val_accuracy_mean", "val_accuracy_std", &val) ||
        !s_set_mean_std(e, "test_accuracy_mean", "test_accuracy_std", &test) ||
        !s_set(e, "seconds_per_epoch_mean", s_real_or_null(sec.n, sec.mean)) ||
        !s_set(e, "n_seconds_normalised", json_integer(norm.n)) ||
        !s_set(e, "seconds_per_epoch_normalised_mean",
               s_real_or_null(norm.n, norm.mean))) {
        json_decref(e);
        return NULL;
    }
    pt->xj = json_object_get(e, "x");
    return e;
}

//  --------------------------------------------------------------------------
//  The name an axis is spoken of by: "depth" for hidden_layers.

static const char *
s_x_label(const char *x)
{
    return strcmp(x, "hidden_layers") == 0 ? "depth" : x;
}

//  --------------------------------------------------------------------------
//  Whether mean a is at least as good as level for the goal.

static bool
s_reaches(double a, double level, bool maximize)
{
    return maximize ? a >= level - 1e-12 : a <= level + 1e-12;
}

//  --------------------------------------------------------------------------
//  The plateau of a group's points pts[0 .. n) (by x) into g: best_x,
//  best_mean, best_lo, best_hi, plateau_from, plateau_to, plateau_reached
//  and plateau_text (the rule: the prose at the top of this file). False
//  when memory runs out.

static bool
s_plateau(json_t *g, const s_point_t *pts, size_t n, const s_ctx_t *ctx,
          double tolerance)
{
    size_t best = n, n_means = 0, last = n;
    for (size_t k = 0; k < n; k++) {
        if (isnan(pts[k].mean))
            continue;
        n_means++;
        last = k;
        if (best == n || (ctx->maximize ? pts[k].mean > pts[best].mean
                                        : pts[k].mean < pts[best].mean))
            best = k;
    }
    const char *label = s_x_label(ctx->x);
    char text[512];
    if (best == n) {
        snprintf(text, sizeof text, "no plateau: no run of this group has a %s",
                 ctx->metric);
        return s_set(g, "best_x", json_null()) &&
               s_set(g, "best_mean", json_null()) &&
               s_set(g, "best_lo", json_null()) &&
               s_set(g, "best_hi", json_null()) &&
               s_set(g, "plateau_from", json_null()) &&
               s_set(g, "plateau_to", json_null()) &&
               s_set(g, "plateau_reached", json_null()) &&
               s_set(g, "plateau_text", json_string(text));
    }
    const s_point_t *b = &pts[best];
    double h = isnan(b->hi) ? 0 : (b->hi - b->lo) / 2;
    double r = h > tolerance ? h : tolerance;
    double level = ctx->maximize ? b->mean - r : b->mean + r;
    size_t from = n, to = n;
    for (size_t k = 0; k < n; k++) {
        if (isnan(pts[k].mean))
            continue;
        double reach = isnan(pts[k].hi)
                           ? pts[k].mean
                           : (ctx->maximize ? pts[k].hi : pts[k].lo);
        if (from == n && s_reaches(reach, level, ctx->maximize))
            from = k;
        if (to == n && s_reaches(pts[k].mean, level, ctx->maximize))
            to = k;
    }
    //  to exists (the best reaches its own level) and from <= to (an
    //  interval's optimistic end is at least its mean).
    bool reached = n_means > 1 && to != last;
    char best_text[200];
    if (isnan(b->hi))
        snprintf(best_text, sizeof best_text,
                 "best %.4g at %s %g, n=%lld, no interval", b->mean, label,
                 b->x, (long long) b->n);
    else
        snprintf(best_text, sizeof best_text,
                 "best %.4g at %s %g, 95%% interval %.4g to %.4g, n=%lld",
                 b->mean, label, b->x, b->lo, b->hi, (long long) b->n);
    if (n_means < 2)
        snprintf(text, sizeof text,
                 "%s: one %s only, no plateau can be stated (%s)", ctx->metric,
                 label, best_text);
    else if (!reached && from == to)
        snprintf(text, sizeof text,
                 "%s still improving at %s %g, the largest with results "
                 "(%s)",
                 ctx->metric, label, pts[to].x, best_text);
    else if (!reached) // the seeds cannot rule a plateau from FROM out
        snprintf(text, sizeof text,
                 "%s still improving at %s %g, the largest with results, "
                 "though the interval at %s %g reaches the best's level "
                 "(%s)",
                 ctx->metric, label, pts[to].x, label, pts[from].x, best_text);
    else if (from == to)
        snprintf(text, sizeof text, "%s stops improving at %s %g (%s)",
                 ctx->metric, label, pts[to].x, best_text);
    else
        snprintf(text, sizeof text, "%s stops improving at %s %g to %g (%s)",
                 ctx->metric, label, pts[from].x, pts[to].x, best_text);
    return s_set(g, "best_x", json_incref(b->xj)) &&
           s_set(g, "best_mean", json_real(b->mean)) &&
           s_set(g, "best_lo", s_real_or_null(!isnan(b->lo), b->lo)) &&
           s_set(g, "best_hi", s_real_or_null(!isnan(b->hi), b->hi)) &&
           s_set(g, "plateau_from", json_incref(pts[from].xj)) &&
           s_set(g, "plateau_to", json_incref(pts[to].xj)) &&
           s_set(g, "plateau_reached",
                 n_means > 1 ? json_boolean(reached) : json_null()) &&
           s_set(g, "plateau_text", json_string(text));
}

//  --------------------------------------------------------------------------
//  One group's entry from rows[0 .. n) (sorted by x, then task).

static json_t *
s_group_entry(const s_row_t *rows, size_t n, const json_t *keys,
              const s_ctx_t *ctx, double tolerance, double ref)
{
    json_t *g = json_object();
    json_t *points = json_array();
    json_t *params = json_object();
    s_point_t *pts = malloc((n ? n : 1) * sizeof *pts);
    size_t n_pts = 0;
    if (!g || !points || !params || !pts)
        goto fail;
    for (size_t k = 0; k < json_array_size(keys); k++)
        if (json_object_set(params, json_string_value(json_array_get(keys, k)),
                            rows[0].gv[k] ? (json_t *) rows[0].gv[k]
                                          : json_null()) != 0)
            goto fail;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && rows[j].x == rows[i].x)
            j++;
        json_t *e = s_point_entry(rows + i, j - i, ctx, ref, &pts[n_pts]);
        if (!e || json_array_append_new(points, e) != 0)
            goto fail;
        n_pts++;
        i = j;
    }
    if (!s_set(g, "activation", json_string(rows[0].activation)) ||
        !s_set(g, "width",
               rows[0].gw >= 0 ? json_integer(rows[0].gw) : json_null()) ||
        (rows[0].gd >= 0 &&
         !s_set(g, "hidden_layers", json_integer(rows[0].gd))) ||
        json_object_set(g, "params", params) != 0 ||
        json_object_set(g, "points", points) != 0 ||
        !s_plateau(g, pts, n_pts, ctx, tolerance) ||
        !s_time_fits(g, rows, n, ref))
        goto fail;
    json_decref(points);
    json_decref(params);
    free(pts);
    return g;

fail:
    json_decref(g);
    json_decref(points);
    json_decref(params);
    free(pts);
    return NULL;
}

//  --------------------------------------------------------------------------
//  Append name to a comma-separated list in out (size out_n).

static void
s_list_add(char *out, size_t out_n, const char *name)
{
    size_t used = strlen(out);
    if (used < out_n)
        snprintf(out + used, out_n - used, "%s%s", used ? ", " : "", name);
}

//  --------------------------------------------------------------------------
//  The swept numeric parameters of rows[0 .. n): "hidden_layers" first
//  (the default axis, always), "width" when it takes more than one
//  value, then the config keys (not fixed ones) whose values are all
//  numbers and take more than one value, sorted. *why_key (for a key
//  that is not among them) gets why: 0 absent, 1 not numeric, 2 not
//  swept. New JSON array; NULL when memory runs out.

static json_t *
s_axes(const s_row_t *rows, size_t n, const char *key, int *why_key)
{
    json_t *axes = json_array();
    json_t *keys = json_object(); // key -> true (numeric so far) / false
    if (!axes || !keys ||
        json_array_append_new(axes, json_string("hidden_layers")))
        goto fail;
    bool width_varies = false;
    for (size_t i = 1; i < n; i++)
        if (rows[i].width != rows[0].width)
            width_varies = true;
    if (width_varies && json_array_append_new(axes, json_string("width")))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) rows[i].config, k, v)
        {
            if (s_fixed_key(k))
                continue;
            json_t *before = json_object_get(keys, k);
            bool numeric =
                json_is_number(v) && (!before || json_is_true(before));
            if ((!before || json_is_true(before) != numeric) &&
                json_object_set_new(keys, k, json_boolean(numeric)))
                goto fail;
        }
    }
    size_t n_names = 0;
    const char **sorted = s_sorted_keys(keys, &n_names);
    if (!sorted)
        goto fail;
    *why_key = 0;
    for (size_t m = 0; m < n_names; m++) {
        //  Numeric in every row (a row without the key is not), and more
        //  than one value.
        bool numeric = json_is_true(json_object_get(keys, sorted[m]));
        bool varies = false;
        const json_t *first = s_value(&rows[0], sorted[m]);
        for (size_t i = 0; numeric && i < n; i++) {
            const json_t *x = s_value(&rows[i], sorted[m]);
            if (!json_is_number(x))
                numeric = false;
            else if (json_number_value(x) != json_number_value(first))
                varies = true;
        }
        if (key && strcmp(key, sorted[m]) == 0)
            *why_key = !numeric ? 1 : !varies ? 2 : 3;
        if (numeric && varies &&
            json_array_append_new(axes, json_string(sorted[m]))) {
            free(sorted);
            goto fail;
        }
    }
    free(sorted);
    json_decref(keys);
    return axes;

fail:
    json_decref(axes);
    json_decref(keys);
    return NULL;
}

//  --------------------------------------------------------------------------
//  Check the axis name against the rows' swept numeric parameters and
//  fill ctx->axis and ctx->x. MS_ERR_INVALID (where "x") naming it and
//  listing the swept numeric ones; MS_ERR_NOMEM.

static int
s_check_axis(const s_row_t *rows, size_t n, const char *x, s_ctx_t *ctx,
             json_t **axes, ms_diag_t *diag)
{
    int why = 0;
    bool depth = !x || !*x || strcmp(x, "hidden_layers") == 0 ||
                 strcmp(x, "depth") == 0 || strcmp(x, "hidden_sizes") == 0;
    bool width = !depth && strcmp(x, "width") == 0;
    *axes = s_axes(rows, n, depth || width ? NULL : x, &why);
    if (!*axes)
        return ms_diag_set_code(diag, MS_ERR_NOMEM, "x", "out of memory");
    char list[400] = "";
    for (size_t i = 0; i < json_array_size(*axes); i++)
        s_list_add(list, sizeof list,
                   json_string_value(json_array_get(*axes, i)));
    ctx->axis = depth ? S_AXIS_DEPTH : width ? S_AXIS_WIDTH : S_AXIS_KEY;
    ctx->x = depth ? "hidden_layers" : width ? "width" : x;
    if (depth)
        return MS_OK;
    if (width) {
        for (size_t i = 0; i < json_array_size(*axes); i++)
            if (strcmp(json_string_value(json_array_get(*axes, i)), "width") ==
                0)
                return MS_OK;
        why = 2;
    } else if (why == 3)
        return MS_OK;
    if (!width && strcmp(x, "seed") == 0)
        return ms_diag_set(diag, "x",
                           "'seed' is what the analysis averages over, not "
                           "an axis (swept numeric parameters: %s)",
                           list);
    if (!width && (strcmp(x, "activation") == 0 || why == 1))
        return ms_diag_set(diag, "x",
                           "'%.64s' is not numeric (swept numeric "
                           "parameters: %s)",
                           x, list);
    if (why == 2)
        return ms_diag_set(diag, "x",
                           "'%.64s' is not swept: it takes one value%s "
                           "(swept numeric parameters: %s)",
                           x, n ? "" : " (no results yet)", list);
    return ms_diag_set(diag, "x",
                       "'%.64s' is not a parameter of this sweep%s (swept "
                       "numeric parameters: %s)",
                       x, n ? "" : " (no results yet)", list);
}

//  --------------------------------------------------------------------------
//  Analyse a sweep's result rows.

int
ms_analysis_compute(const json_t *rows, const ms_analysis_options_t *opts,
                    json_t **out, ms_diag_t *diag)
{
    *out = NULL;
    ms_analysis_options_t defaults;
    ms_analysis_options_default(&defaults);
    if (!opts)
        opts = &defaults;
    if (!(opts->plateau_tolerance >= 0) || !isfinite(opts->plateau_tolerance))
        return ms_diag_set(diag, "plateau_tolerance",
                           "must be a finite number >= 0");
    if (!(opts->reference_gflops >= 0) || !isfinite(opts->reference_gflops))
        return ms_diag_set(diag, "reference_gflops",
                           "must be a finite number >= 0 (0: the median "
                           "calibration)");
    if (!json_is_array(rows))
        return ms_diag_set(diag, "rows",
                           "must be a JSON array of result "
                           "rows");
    s_ctx_t ctx = {.metric = opts->metric ? opts->metric : "val_accuracy"};
    if (!s_known_metric(ctx.metric)) {
        char list[300] = "";
        for (size_t i = 0; ms_analysis_metric_names[i]; i++)
            s_list_add(list, sizeof list, ms_analysis_metric_names[i]);
        return ms_diag_set(diag, "metric", "unknown metric '%.64s' (one of %s)",
                           ctx.metric, list);
    }
    ctx.maximize = opts->goal == MS_ANALYSIS_GOAL_AUTO
                       ? s_maximize_by_name(ctx.metric)
                       : opts->goal == MS_ANALYSIS_GOAL_MAXIMIZE;
    size_t total = json_array_size(rows);
    s_row_t *flat = malloc((total ? total : 1) * sizeof(s_row_t));
    const json_t **gv = NULL;
    json_t *keys = NULL, *axes = NULL, *metrics = NULL, *metric = NULL;
    json_t *param_defaults = s_defaults();
    json_t *result = json_object();
    json_t *groups = json_array();
    int rc = MS_ERR_NOMEM;
    if (!flat || !param_defaults || !result || !groups)
        goto fail;
    size_t n = 0;
    int64_t n_status[3] = {0, 0, 0}, n_skipped = 0;
    for (size_t i = 0; i < total; i++) {
        bool skip;
        rc = s_parse_row(json_array_get(rows, i), i, &ctx, param_defaults,
                         &flat[n], &skip, diag);
        if (rc)
            goto fail;
        if (skip) {
            n_skipped++;
            continue;
        }
        n_status[flat[n].status]++;
        n++;
    }
    rc = s_check_axis(flat, n, opts->x, &ctx, &axes, diag);
    if (rc)
        goto fail;
    //  x, and the width and depth as group fields where they are not it.
    double x_min = INFINITY, x_max = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        s_row_t *r = &flat[i];
        r->gw = ctx.axis == S_AXIS_WIDTH ? -1 : r->width;
        r->gd = ctx.axis == S_AXIS_DEPTH ? -1 : r->depth;
        r->x = ctx.axis == S_AXIS_DEPTH ? (double) r->depth
               : ctx.axis == S_AXIS_WIDTH
                   ? (double) r->width
                   : json_number_value(s_value(r, ctx.x));
        if (r->x < x_min)
            x_min = r->x;
        if (r->x > x_max)
            x_max = r->x;
    }
    bool log_scale =
        n > 0 && x_min > 0 && x_max >= MS_ANALYSIS_LOG_SPREAD * x_min;
    rc = MS_ERR_NOMEM;
    metrics = json_array();
    for (size_t i = 0; metrics && ms_analysis_metric_names[i]; i++)
        if (json_array_append_new(metrics,
                                  json_string(ms_analysis_metric_names[i])))
            goto fail;
    metric = json_pack("{s:s, s:s}", "name", ctx.metric, "goal",
                       ctx.maximize ? "maximize" : "minimize");
    if (!metrics || !metric)
        goto fail;
    keys = s_group_keys(flat, n, ctx.axis == S_AXIS_KEY ? ctx.x : NULL);
    size_t n_keys = json_array_size(keys);
    gv = calloc(n * n_keys > 0 ? n * n_keys : 1, sizeof *gv);
    if (!keys || !gv)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        flat[i].gv = gv + i * n_keys;
        flat[i].n_gv = n_keys;
        for (size_t k = 0; k < n_keys; k++)
            flat[i].gv[k] =
                s_value(&flat[i], json_string_value(json_array_get(keys, k)));
    }
    qsort(flat, n, sizeof *flat, s_row_cmp);
    int64_t n_uncalibrated = 0;
    double ref = s_reference_gflops(flat, n, &n_uncalibrated);
    if (opts->reference_gflops > 0)
        ref = opts->reference_gflops;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s_same_group(&flat[i], &flat[j]))
            j++;
        json_t *g = s_group_entry(flat + i, j - i, keys, &ctx,
                                  opts->plateau_tolerance, ref);
        if (!g || json_array_append_new(groups, g) != 0)
            goto fail;
        i = j;
    }
    char rule[1200];
    const char *label = s_x_label(ctx.x);
    snprintf(rule, sizeof rule,
             "plateau of %s (%s is better) against %s: B is a group's best "
             "point (mean over seeds, ok runs only), r the larger of %g "
             "(absolute) and the half-width of B's 95%% interval; a point "
             "is level with B when its mean is within r of B's. %s "
             "stops improving from the smallest %s whose interval reaches "
             "that level (plateau_from) to the smallest %s whose mean does "
             "(plateau_to); when that is the largest %s with results it is "
             "still improving. A group is (activation, width, depth, every "
             "other swept parameter) but %s and seed. Width of a "
             "hidden_sizes network: its largest layer.",
             ctx.metric, ctx.maximize ? "larger" : "smaller", label,
             opts->plateau_tolerance, ctx.metric, label, label, label, label);
    if (!s_set(result, "rule", json_string(rule)) ||
        !s_set(result, "interval_rule",
               json_string("per point: mean over tasks (seeds; the replicas "
                           "of a task are one value, their lower median), "
                           "sample standard deviation s (divisor n - 1), "
                           "95% interval mean +- t(0.975, n - 1) s / "
                           "sqrt(n) (Student's t); none for n = 1")) ||
        !s_set(result, "x", json_string(ctx.x)) ||
        !s_set(result, "x_label", json_string(label)) ||
        !s_set(result, "x_scale", json_string(log_scale ? "log" : "linear")) ||
        json_object_set(result, "axes", axes) != 0 ||
        json_object_set(result, "metric", metric) != 0 ||
        json_object_set(result, "metrics", metrics) != 0 ||
        !s_set(result, "plateau_tolerance",
               json_real(opts->plateau_tolerance)) ||
        !s_set(result, "n_rows", json_integer((json_int_t) total)) ||
        !s_set(result, "n_ok", json_integer(n_status[S_OK])) ||
        !s_set(result, "n_diverged", json_integer(n_status[S_DIVERGED])) ||
        !s_set(result, "n_failed", json_integer(n_status[S_FAILED])) ||
        !s_set(result, "n_not_counted", json_integer(n_skipped)) ||
        !s_set(result, "verified_only", json_boolean(opts->verified_only)) ||
        !s_set(result, "time_rule", json_string(S_TIME_RULE)) ||
        !s_set(result, "time_reference_gflops",
               s_real_or_null(!isnan(ref), ref)) ||
        !s_set(result, "time_reference",
               json_string(opts->reference_gflops > 0 ? "fixed" : "median")) ||
        !s_set(result, "n_uncalibrated", json_integer(n_uncalibrated)) ||
        json_object_set(result, "group_keys", keys) != 0 ||
        json_object_set(result, "groups", groups) != 0)
        goto fail;
    json_decref(groups);
    json_decref(keys);
    json_decref(axes);
    json_decref(metrics);
    json_decref(metric);
    json_decref(param_defaults);
    free(gv);
    free(flat);
    *out = result;
    return MS_OK;

fail:
    if (rc == MS_ERR_NOMEM)
        ms_diag_set_code(diag, rc, "rows", "out of memory");
    json_decref(result);
    json_decref(groups);
    json_decref(keys);
    json_decref(axes);
    json_decref(metrics);
    json_decref(metric);
    json_decref(param_defaults);
    free(gv);
    free(flat);
    return rc;
}

//  --------------------------------------------------------------------------
//  A fit {intercept, slope} as "A + B * X", or "A - |B| * X" when the
//  slope is negative (X: the axis's label).

static void
s_print_line(FILE *f, const json_t *fit, const char *label)
{
    double a = json_number_value(json_object_get(fit, "intercept"));
    double b = json_number_value(json_object_get(fit, "slope"));
    fprintf(f, "%.4g %c %.4g * %s", a, signbit(b) ? '-' : '+', fabs(b), label);
}

//  --------------------------------------------------------------------------
//  Print a point's metric: "MEAN [LO, HI]", "MEAN n/a (n=1)" without an
//  interval, "-" without a mean.

static void
s_print_interval(FILE *f, const json_t *d)
{
    const json_t *mean = json_object_get(d, "mean");
    const json_t *lo = json_object_get(d, "lo");
    const json_t *hi = json_object_get(d, "hi");
    char cell[64];
    if (!json_is_number(mean))
        snprintf(cell, sizeof cell, "%8s", "-");
    else if (json_is_number(lo) && json_is_number(hi))
        snprintf(cell, sizeof cell, "%8.4f [%.4f, %.4f]",
                 json_number_value(mean), json_number_value(lo),
                 json_number_value(hi));
    else
        snprintf(
            cell, sizeof cell, "%8.4f n/a (n=%lld)", json_number_value(mean),
            (long long) json_integer_value(json_object_get(d, "n_metric")));
    fprintf(f, "%-28s", cell);
}

//  --------------------------------------------------------------------------
//  Print a number field of width w with prec decimals, or "-" for null.

static void
s_print_num(FILE *f, const json_t *obj, const char *key, int w, int prec)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_number(v))
        fprintf(f, "%*.*f", w, prec, json_number_value(v));
    else
        fprintf(f, "%*s", w, "-");
}

//  --------------------------------------------------------------------------
//  Print "MEAN +- STD" of a metric: "-" without a mean, "n/a" for the std
//  of a single value, and "(n=K)" when fewer values than ok runs entered
//  it (a run without validation set has no validation accuracy).

static void
s_print_mean_std(FILE *f, const json_t *d, const char *mean_key,
                 const char *std_key, const char *n_key)
{
    const json_t *mean = json_object_get(d, mean_key);
    long long n_ok = (long long) json_integer_value(json_object_get(d, "n"));
    const json_t *count = json_object_get(d, n_key);
    long long n = json_is_integer(count) ? json_integer_value(count) : n_ok;
    char cell[48];
    if (!json_is_number(mean))
        snprintf(cell, sizeof cell, "%8s", "-");
    else if (json_is_number(json_object_get(d, std_key)))
        snprintf(cell, sizeof cell, "%8.4f +- %6.4f", json_number_value(mean),
                 json_number_value(json_object_get(d, std_key)));
    else
        snprintf(cell, sizeof cell, "%8.4f +- %6s", json_number_value(mean),
                 "n/a");
    if (json_is_number(mean) && n != n_ok) {
        size_t used = strlen(cell);
        snprintf(cell + used, sizeof cell - used, " (n=%lld)", n);
    }
    fprintf(f, "%-22s", cell);
}

//  --------------------------------------------------------------------------
//  Print a config value the way a person writes it.

static void
s_print_value(FILE *f, const json_t *v)
{
    if (json_is_string(v))
        fputs(json_string_value(v), f);
    else if (json_is_integer(v))
        fprintf(f, "%lld", (long long) json_integer_value(v));
    else if (json_is_real(v))
        fprintf(f, "%g", json_real_value(v));
    else if (json_is_true(v) || json_is_false(v))
        fputs(json_is_true(v) ? "true" : "false", f);
    else if (!v || json_is_null(v))
        fputs("-", f);
    else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        fputs(text ? text : "?", f);
        free(text);
    }
}

//  --------------------------------------------------------------------------
//  Render one group.

static void
s_format_group(FILE *f, const json_t *g, const char *label, const char *metric)
{
    const char *act = json_string_value(json_object_get(g, "activation"));
    fprintf(f, "\n%s", act ? act : "?");
    if (json_is_integer(json_object_get(g, "width")))
        fprintf(f, ", width %lld",
                (long long) json_integer_value(json_object_get(g, "width")));
    if (json_is_integer(json_object_get(g, "hidden_layers")))
        fprintf(f, ", depth %lld",
                (long long) json_integer_value(
                    json_object_get(g, "hidden_layers")));
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(g, "params"), key, value)
    {
        fprintf(f, ", %s ", key);
        s_print_value(f, value);
    }
    fprintf(f, "\n");
    //  Runs of several machine classes: the seconds at the reference speed
    //  too (what the normalised fit is over).
    bool norm = json_array_size(json_object_get(g, "time_fits")) > 1;
    char head[40];
    snprintf(head, sizeof head, "%.20s (95%% interval)", metric);
    int w = strlen(label) > 8 ? (int) strlen(label) : 8; // x's column
    fprintf(f, "  %*s %4s %4s  %-28s  %-22s  %-22s  %9s%s\n", w, label, "n",
            "div", head, "val acc (+- std)", "test acc (+- std)", "s/epoch",
            norm ? "   s/ep@ref" : "");
    const json_t *points = json_object_get(g, "points");
    for (size_t i = 0; i < json_array_size(points); i++) {
        const json_t *d = json_array_get(points, i);
        fprintf(f, "  ");
        const json_t *x = json_object_get(d, "x");
        if (json_is_integer(x))
            fprintf(f, "%*lld", w, (long long) json_integer_value(x));
        else
            fprintf(f, "%*.3g", w, json_number_value(x));
        fprintf(
            f, " %4lld %4lld  ",
            (long long) json_integer_value(json_object_get(d, "n")),
            (long long) json_integer_value(json_object_get(d, "n_diverged")));
        s_print_interval(f, d);
        fprintf(f, "  ");
        s_print_mean_std(f, d, "val_accuracy_mean", "val_accuracy_std",
                         "n_val_accuracy");
        fprintf(f, "  ");
        s_print_mean_std(f, d, "test_accuracy_mean", "test_accuracy_std",
                         "n_test_accuracy");
        fprintf(f, "  ");
        s_print_num(f, d, "seconds_per_epoch_mean", 9, 3);
        if (norm) {
            fprintf(f, "  ");
            s_print_num(f, d, "seconds_per_epoch_normalised_mean", 9, 3);
        }
        long long n_failed =
            (long long) json_integer_value(json_object_get(d, "n_failed"));
        if (n_failed > 0)
            fprintf(f, "  (%lld failed)", n_failed);
        fprintf(f, "\n");
    }
    const char *plateau = json_string_value(json_object_get(g, "plateau_text"));
    fprintf(f, "  %s\n", plateau ? plateau : "no plateau");
    const json_t *fit = json_object_get(g, "time_fit");
    const char *basis = json_string_value(json_object_get(g, "time_fit_basis"));
    const json_t *fits = json_object_get(g, "time_fits");
    long long n_uncal = (long long) json_integer_value(
        json_object_get(g, "time_fit_n_uncalibrated"));
    bool classes = json_array_size(fits) > 1;
    if (json_is_object(fit)) {
        fprintf(f, "  time per epoch = ");
        s_print_line(f, fit, label);
        fprintf(f, " s (R^2 %.3f, %lld runs)\n",
                json_number_value(json_object_get(fit, "r2")),
                (long long) json_integer_value(json_object_get(fit, "n")));
    } else if (classes)
        fprintf(f,
                "  time fit: needs calibrated ok runs at two or more values "
                "of %s\n",
                label);
    else
        fprintf(f, "  time fit: needs ok runs at two or more values of %s\n",
                label);
    if (basis && strncmp(basis, "fingerprint:", 12) == 0) {
        const json_t *c = json_array_get(fits, 0);
        fprintf(f, "  fit basis: one machine class, fingerprint %s (%s)\n",
                basis + 12,
                json_string_value(json_object_get(c, "label"))
                    ? json_string_value(json_object_get(c, "label"))
                    : "?");
    } else if (classes) {
        const json_t *ref = json_object_get(g, "time_fit_reference_gflops");
        if (!basis)
            fprintf(f, "  fit basis: none (%zu machine classes; %s)",
                    json_array_size(fits),
                    json_is_number(ref)
                        ? "too few calibrated ok runs for a normalised fit"
                        : "no run has a calibration figure");
        else if (json_is_number(ref))
            fprintf(f,
                    "  fit basis: normalised to %.2f GFLOP/s (%zu machine "
                    "classes: seconds x calibration / reference)",
                    json_number_value(ref), json_array_size(fits));
        else
            fprintf(f,
                    "  fit basis: normalised (%zu machine classes; no run "
                    "has a calibration figure)",
                    json_array_size(fits));
        if (n_uncal > 0)
            fprintf(f, "; %lld run%s without calibration left out", n_uncal,
                    n_uncal == 1 ? "" : "s");
        fprintf(f, "\n");
        for (size_t k = 0; k < json_array_size(fits); k++) {
            const json_t *c = json_array_get(fits, k);
            const json_t *cf = json_object_get(c, "fit");
            const json_t *gf = json_object_get(c, "calibration_gflops");
            size_t n_nodes = json_array_size(json_object_get(c, "nodes"));
            fprintf(f, "    class %s %s, ",
                    json_string_value(json_object_get(c, "class"))
                        ? json_string_value(json_object_get(c, "class"))
                        : "?",
                    json_string_value(json_object_get(c, "label"))
                        ? json_string_value(json_object_get(c, "label"))
                        : "?");
            if (json_is_number(gf))
                fprintf(f, "%.2f GFLOP/s, ", json_number_value(gf));
            else
                fprintf(f, "no calibration, ");
            fprintf(
                f, "%lld runs on %zu node%s: ",
                (long long) json_integer_value(json_object_get(c, "n_rows")),
                n_nodes, n_nodes == 1 ? "" : "s");
            if (json_is_object(cf)) {
                s_print_line(f, cf, label);
                fprintf(f, " s (R^2 %.3f)\n",
                        json_number_value(json_object_get(cf, "r2")));
            } else
                fprintf(f, "no fit (one value of %s)\n", label);
        }
    }
}

//  --------------------------------------------------------------------------
//  Render an analysis as plain text.

char *
ms_analysis_format_text(const json_t *analysis)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    const char *rule = json_string_value(json_object_get(analysis, "rule"));
    const json_t *groups = json_object_get(analysis, "groups");
    fprintf(
        f,
        "Analysis of %lld result rows (%lld ok, %lld diverged, %lld "
        "failed)\n",
        (long long) json_integer_value(json_object_get(analysis, "n_rows")),
        (long long) json_integer_value(json_object_get(analysis, "n_ok")),
        (long long) json_integer_value(json_object_get(analysis, "n_diverged")),
        (long long) json_integer_value(json_object_get(analysis, "n_failed")));
    const char *x = json_string_value(json_object_get(analysis, "x"));
    const char *label = json_string_value(json_object_get(analysis, "x_label"));
    const char *scale = json_string_value(json_object_get(analysis, "x_scale"));
    const json_t *metric = json_object_get(analysis, "metric");
    const char *mname = json_string_value(json_object_get(metric, "name"));
    const char *goal = json_string_value(json_object_get(metric, "goal"));
    label = label ? label : "depth";
    mname = mname ? mname : "val_accuracy";
    fprintf(f, "Axis: %s (%s)%s; metric: %s (%s)\n", label, x ? x : "?",
            scale && strcmp(scale, "log") == 0
                ? ", log scale: the values span orders of magnitude"
                : "",
            mname, goal ? goal : "?");
    if (rule)
        fprintf(f, "Rule: %s\n", rule);
    const char *irule =
        json_string_value(json_object_get(analysis, "interval_rule"));
    if (irule)
        fprintf(f, "Intervals: %s\n", irule);
    long long n_not = (long long) json_integer_value(
        json_object_get(analysis, "n_not_counted"));
    if (json_is_true(json_object_get(analysis, "verified_only")))
        fprintf(f, "Rows: verified results only (%lld not counted left out)\n",
                n_not);
    else
        fprintf(f, "Rows: counted results (%lld not counted left out)\n",
                n_not);
    const json_t *ref = json_object_get(analysis, "time_reference_gflops");
    const char *how =
        json_string_value(json_object_get(analysis, "time_reference"));
    if (json_is_number(ref))
        fprintf(f,
                "Time fits: per machine class (backend fingerprint); a group "
                "run on several classes is fitted normalised to %.2f GFLOP/s "
                "(%s single-thread SGEMM calibration%s)\n",
                json_number_value(ref),
                how && strcmp(how, "fixed") == 0 ? "a fixed" : "the median",
                how && strcmp(how, "fixed") == 0 ? "" : " of the timed runs");
    else
        fprintf(f, "Time fits: per machine class (backend fingerprint); no "
                   "run has a calibration figure to normalise with\n");
    if (json_array_size(groups) == 0)
        fprintf(f, "\nNo results to analyse yet.\n");
    for (size_t i = 0; i < json_array_size(groups); i++)
        s_format_group(f, json_array_get(groups, i), label, mname);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

//  --------------------------------------------------------------------------
//  The extra group keys of a set of result rows.

json_t *
ms_analysis_group_keys(const json_t *rows)
{
    size_t total = json_array_size(rows);
    s_row_t *flat = malloc((total ? total : 1) * sizeof(s_row_t));
    json_t *defaults = s_defaults();
    if (!flat || !defaults) {
        free(flat);
        json_decref(defaults);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < total; i++) {
        bool skip = false;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        if (s_parse_row(json_array_get(rows, i), i, NULL, defaults, &flat[n],
                        &skip, &diag) == MS_OK &&
            !skip)
            n++;
    }
    json_t *keys = s_group_keys(flat, n, NULL);
    free(flat);
    json_decref(defaults);
    return keys;
}
