/*  =========================================================================
    ms_analysis - answers to the 2015 paper's questions from result rows

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The 2015 paper ("Framework for Distributed Deep Learning Layer Design
    in Python") asked how accuracy and training time change with the
    number of hidden layers, and where accuracy stops improving. DESIGN.md
    ("Programs", `--analyze`) asks for the same per activation and width.

    Grouping. A row's group is (activation, width, every other swept
    parameter). Uniform networks (hidden_layers + width) use their width;
    networks given as hidden_sizes use their largest layer (so (100) and
    (100, 10) are one group, at depths 1 and 2: the wide layer dominates
    capacity, and the label stays one number). Depth is hidden_layers, or
    the length of hidden_sizes. "Other swept parameter": a config key
    (other than activation, width, hidden_layers, hidden_sizes and seed)
    that takes more than one value among the counted rows, unless its
    value follows from (activation, width) alone - init, which follows
    the activation, would only clutter the label. So a sweep of optimizer
    [adam, sgd] gives one group per optimizer, and inside a group the rows
    of one depth differ only by seed: the seeds are what is averaged. The
    group's "params" object holds those extra keys and their values
    ("activation" and "width" stay fields of their own).

    Counting. A row's status decides: "failed" rows (ms_results
    synthesizes them with "counted": false, as no result was stored) are
    counted as failed; an "ok" or "diverged" row with "counted": false is
    a duplicate or an extra replica and is skipped (n_not_counted).
    "diverged" and "failed" rows are counted per depth but never enter a
    mean: a diverged network has no meaningful accuracy, and counting it
    as 0 would mix "cannot train" with "trains worse". Each mean carries
    its own count (n_val_accuracy, n_test_accuracy, n_seconds): a run
    with validation_split 0 has no validation accuracy but a test
    accuracy. A standard deviation over fewer than two values is null.

    Plateau rule (stated in the output): the smallest depth whose mean
    validation accuracy is within a tolerance (absolute, default 0.005)
    of the best mean validation accuracy of the group. Deeper networks
    then add no more than the tolerance. Means over seeds, not single
    runs, so one lucky seed does not move the plateau. Validation, not
    test, accuracy: the test set stays out of every choice.

    Time fit. Ordinary least squares of seconds_per_epoch against depth
    over every ok run with a time (each run one point, so depths with
    more surviving seeds weigh more, as they are better measured), in
    double with centred sums. Needs two distinct depths, else null. R^2 =
    1 - SS_res / SS_tot, and 1 when every time is equal (the line is
    exact).

    Not done: confidence intervals or significance tests for the plateau
    (three seeds make them weak; the std is reported so a reader can
    judge), and fits other than linear (the paper reported linear growth
    of time with depth, which is what a plain MLP's cost predicts).
*/
#include "ms_analysis.h"

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
} s_row_t;

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
s_parse_row(const json_t *row, size_t i, s_row_t *r, bool *skip,
            ms_diag_t *diag)
{
    char where[96];
    *skip = false;
    memset(r, 0, sizeof *r);
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
        json_t *v = json_object_get(rows[i].config, key);
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
s_group_keys(const s_row_t *rows, size_t n)
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
            if (!s_fixed_key(key) && !json_object_get(names, key) &&
                json_object_set_new(names, key, json_true()) != 0)
                goto fail;
        }
    }
    //  Sorted names: json_object_foreach follows insertion order.
    size_t n_names = json_object_size(names);
    const char **sorted = calloc(n_names ? n_names : 1, sizeof *sorted);
    if (!sorted)
        goto fail;
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(names, key, v) sorted[k++] = key;
    qsort(sorted, n_names, sizeof *sorted, s_str_ptr_cmp);
    for (k = 0; k < n_names; k++) {
        const json_t *first = json_object_get(rows[0].config, sorted[k]);
        bool varies = false;
        for (size_t i = 1; i < n && !varies; i++)
            varies =
                !s_json_same(first, json_object_get(rows[i].config, sorted[k]));
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
//  Order rows by activation, width, the extra group keys, depth.

static int
s_row_cmp(const void *a, const void *b)
{
    const s_row_t *x = a, *y = b;
    int c = strcmp(x->activation, y->activation);
    if (c)
        return c;
    if (x->width != y->width)
        return x->width < y->width ? -1 : 1;
    for (size_t k = 0; k < x->n_gv; k++)
        if ((c = s_json_cmp(x->gv[k], y->gv[k])) != 0)
            return c;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return 0;
}

//  --------------------------------------------------------------------------
//  Whether two rows belong to the same group.

static bool
s_same_group(const s_row_t *a, const s_row_t *b)
{
    if (strcmp(a->activation, b->activation) != 0 || a->width != b->width)
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
        x[i] = (double) p[i]->depth;
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
            x[m] = (double) rows[i].depth;
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
//  One depth's entry from rows[0 .. n) (all of that depth). *mean_val
//  gets the mean validation accuracy, NAN when there is none.

static json_t *
s_depth_entry(const s_row_t *rows, size_t n, double *mean_val, double ref)
{
    s_stat_t val = {0}, test = {0}, sec = {0}, norm = {0};
    int64_t n_ok = 0, n_div = 0, n_fail = 0;
    for (size_t i = 0; i < n; i++) {
        const s_row_t *r = &rows[i];
        if (r->status == S_DIVERGED) {
            n_div++;
            continue;
        }
        if (r->status == S_FAILED) {
            n_fail++;
            continue;
        }
        n_ok++;
        if (r->has_val)
            s_stat_add(&val, r->val);
        if (r->has_test)
            s_stat_add(&test, r->test);
        if (r->has_sec)
            s_stat_add(&sec, r->sec);
        if (r->has_sec && r->has_gflops && !isnan(ref))
            s_stat_add(&norm, r->sec * r->gflops / ref);
    }
    *mean_val = val.n ? val.mean : NAN;
    json_t *e = json_object();
    if (!e || !s_set(e, "depth", json_integer(rows[0].depth)) ||
        !s_set(e, "n", json_integer(n_ok)) ||
        !s_set(e, "n_diverged", json_integer(n_div)) ||
        !s_set(e, "n_failed", json_integer(n_fail)) ||
        !s_set(e, "n_val_accuracy", json_integer(val.n)) ||
        !s_set(e, "n_test_accuracy", json_integer(test.n)) ||
        !s_set(e, "n_seconds", json_integer(sec.n)) ||
        !s_set(e, "val_accuracy_mean", s_real_or_null(val.n, val.mean)) ||
        !s_set(e, "val_accuracy_std",
               s_real_or_null(val.n > 1, sqrt(val.m2 / (double) val.n))) ||
        !s_set(e, "test_accuracy_mean", s_real_or_null(test.n, test.mean)) ||
        !s_set(e, "test_accuracy_std",
               s_real_or_null(test.n > 1, sqrt(test.m2 / (double) test.n))) ||
        !s_set(e, "seconds_per_epoch_mean", s_real_or_null(sec.n, sec.mean)) ||
        !s_set(e, "n_seconds_normalised", json_integer(norm.n)) ||
        !s_set(e, "seconds_per_epoch_normalised_mean",
               s_real_or_null(norm.n, norm.mean))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

//  --------------------------------------------------------------------------
//  One group's entry from rows[0 .. n) (sorted by depth).

static json_t *
s_group_entry(const s_row_t *rows, size_t n, const json_t *keys,
              double tolerance, double ref)
{
    json_t *g = json_object();
    json_t *depths = json_array();
    json_t *params = json_object();
    double *means = malloc(n * sizeof(double));
    int64_t *ds = malloc(n * sizeof(int64_t));
    size_t n_depths = 0;
    if (!g || !depths || !params || !means || !ds)
        goto fail;
    for (size_t k = 0; k < json_array_size(keys); k++)
        if (json_object_set(params, json_string_value(json_array_get(keys, k)),
                            rows[0].gv[k] ? (json_t *) rows[0].gv[k]
                                          : json_null()) != 0)
            goto fail;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && rows[j].depth == rows[i].depth)
            j++;
        json_t *e = s_depth_entry(rows + i, j - i, &means[n_depths], ref);
        if (!e || json_array_append_new(depths, e) != 0)
            goto fail;
        ds[n_depths++] = rows[i].depth;
        i = j;
    }
    //  Best: the largest mean (the shallowest on a tie); plateau: the
    //  shallowest depth within tolerance of it.
    bool have = false;
    double best = 0;
    int64_t best_depth = 0, plateau = 0;
    for (size_t k = 0; k < n_depths; k++)
        if (!isnan(means[k]) && (!have || means[k] > best)) {
            have = true;
            best = means[k];
            best_depth = ds[k];
        }
    for (size_t k = 0; have && k < n_depths; k++)
        if (!isnan(means[k]) && means[k] >= best - tolerance - 1e-12) {
            plateau = ds[k];
            break;
        }
    if (!s_set(g, "activation", json_string(rows[0].activation)) ||
        !s_set(g, "width", json_integer(rows[0].width)) ||
        json_object_set(g, "params", params) != 0 ||
        json_object_set(g, "depths", depths) != 0 ||
        !s_set(g, "plateau_depth",
               have ? json_integer(plateau) : json_null()) ||
        !s_set(g, "best_depth",
               have ? json_integer(best_depth) : json_null()) ||
        !s_set(g, "best_val_accuracy", s_real_or_null(have, best)) ||
        !s_time_fits(g, rows, n, ref))
        goto fail;
    json_decref(depths);
    json_decref(params);
    free(means);
    free(ds);
    return g;

fail:
    json_decref(g);
    json_decref(depths);
    json_decref(params);
    free(means);
    free(ds);
    return NULL;
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
    size_t total = json_array_size(rows);
    s_row_t *flat = malloc((total ? total : 1) * sizeof(s_row_t));
    const json_t **gv = NULL;
    json_t *keys = NULL;
    json_t *result = json_object();
    json_t *groups = json_array();
    int rc = MS_ERR_NOMEM;
    if (!flat || !result || !groups)
        goto fail;
    size_t n = 0;
    int64_t n_status[3] = {0, 0, 0}, n_skipped = 0;
    for (size_t i = 0; i < total; i++) {
        bool skip;
        rc = s_parse_row(json_array_get(rows, i), i, &flat[n], &skip, diag);
        if (rc)
            goto fail;
        if (skip) {
            n_skipped++;
            continue;
        }
        n_status[flat[n].status]++;
        n++;
    }
    rc = MS_ERR_NOMEM;
    keys = s_group_keys(flat, n);
    size_t n_keys = json_array_size(keys);
    gv = calloc(n * n_keys > 0 ? n * n_keys : 1, sizeof *gv);
    if (!keys || !gv)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        flat[i].gv = gv + i * n_keys;
        flat[i].n_gv = n_keys;
        for (size_t k = 0; k < n_keys; k++)
            flat[i].gv[k] = json_object_get(
                flat[i].config, json_string_value(json_array_get(keys, k)));
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
        json_t *g =
            s_group_entry(flat + i, j - i, keys, opts->plateau_tolerance, ref);
        if (!g || json_array_append_new(groups, g) != 0)
            goto fail;
        i = j;
    }
    char rule[600];
    snprintf(rule, sizeof rule,
             "plateau depth: the smallest depth whose mean validation "
             "accuracy (over seeds, ok runs only) is within %g (absolute) "
             "of the best mean validation accuracy of its group; deeper "
             "networks add no more than that. A group is (activation, "
             "width, every other swept parameter but depth and seed). "
             "Width of a hidden_sizes network: its largest layer.",
             opts->plateau_tolerance);
    if (!s_set(result, "rule", json_string(rule)) ||
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
    free(gv);
    free(flat);
    return rc;
}

//  --------------------------------------------------------------------------
//  A fit {intercept, slope} as "A + B * depth", or "A - |B| * depth"
//  when the slope is negative.

static void
s_print_line(FILE *f, const json_t *fit)
{
    double a = json_number_value(json_object_get(fit, "intercept"));
    double b = json_number_value(json_object_get(fit, "slope"));
    fprintf(f, "%.4g %c %.4g * depth", a, signbit(b) ? '-' : '+', fabs(b));
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
s_format_group(FILE *f, const json_t *g)
{
    const char *act = json_string_value(json_object_get(g, "activation"));
    fprintf(f, "\n%s, width %lld", act ? act : "?",
            (long long) json_integer_value(json_object_get(g, "width")));
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
    fprintf(f, "  %5s %4s %4s  %-22s  %-22s  %9s%s\n", "depth", "n", "div",
            "val acc (+- std)", "test acc (+- std)", "s/epoch",
            norm ? "   s/ep@ref" : "");
    const json_t *depths = json_object_get(g, "depths");
    for (size_t i = 0; i < json_array_size(depths); i++) {
        const json_t *d = json_array_get(depths, i);
        fprintf(
            f, "  %5lld %4lld %4lld  ",
            (long long) json_integer_value(json_object_get(d, "depth")),
            (long long) json_integer_value(json_object_get(d, "n")),
            (long long) json_integer_value(json_object_get(d, "n_diverged")));
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
    const json_t *plateau = json_object_get(g, "plateau_depth");
    if (json_is_integer(plateau))
        fprintf(
            f,
            "  plateau at depth %lld; best depth %lld (val accuracy "
            "%.4f)\n",
            (long long) json_integer_value(plateau),
            (long long) json_integer_value(json_object_get(g, "best_depth")),
            json_number_value(json_object_get(g, "best_val_accuracy")));
    else
        fprintf(f, "  no plateau: no run of this group finished ok\n");
    const json_t *fit = json_object_get(g, "time_fit");
    const char *basis = json_string_value(json_object_get(g, "time_fit_basis"));
    const json_t *fits = json_object_get(g, "time_fits");
    long long n_uncal = (long long) json_integer_value(
        json_object_get(g, "time_fit_n_uncalibrated"));
    bool classes = json_array_size(fits) > 1;
    if (json_is_object(fit)) {
        fprintf(f, "  time per epoch = ");
        s_print_line(f, fit);
        fprintf(f, " s (R^2 %.3f, %lld runs)\n",
                json_number_value(json_object_get(fit, "r2")),
                (long long) json_integer_value(json_object_get(fit, "n")));
    } else if (classes)
        fprintf(f, "  time fit: needs calibrated ok runs at two or more "
                   "depths\n");
    else
        fprintf(f, "  time fit: needs ok runs at two or more depths\n");
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
                s_print_line(f, cf);
                fprintf(f, " s (R^2 %.3f)\n",
                        json_number_value(json_object_get(cf, "r2")));
            } else
                fprintf(f, "no fit (one depth)\n");
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
    if (rule)
        fprintf(f, "Rule: %s\n", rule);
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
        s_format_group(f, json_array_get(groups, i));
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
    if (!flat)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < total; i++) {
        bool skip = false;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        if (s_parse_row(json_array_get(rows, i), i, &flat[n], &skip, &diag) ==
                MS_OK &&
            !skip)
            n++;
    }
    json_t *keys = s_group_keys(flat, n);
    free(flat);
    return keys;
}
