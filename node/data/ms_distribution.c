/*  =========================================================================
    ms_distribution - one sweep parameter's law, as W&B's sweep
    configuration writes it: parse with W&B's inference rules, check, draw

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Draws: uniforms from ms_rng_uniform (53-bit, [0, 1)); normals from
    ms_rng_normal; Beta(a, b) as G_a / (G_a + G_b) with gamma variates by
    Marsaglia and Tsang ("A simple method for generating gamma variables",
    ACM TOMS 26, 2000; shape < 1 boosted by U^(1/shape)); a categorical
    draw inverts the cumulative probabilities (with no probabilities it
    is ms_rng_below over the values, and int_uniform is ms_rng_below over
    the integers: the draws the sweep expander made before this module,
    so a random sweep of those laws keeps its task ids). Every law drawn
    from one uniform is its quantile at that uniform: one formula for a
    random draw and a sobol point (ms_distribution_quantile).
*/
#include "ms_distribution.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_SQRT2 1.41421356237309504880
#define S_SQRT_2PI 2.50662827463100050242

static const char *const s_names[] = {
    "constant",
    "categorical",
    "int_uniform",
    "uniform",
    "q_uniform",
    "log_uniform",
    "log_uniform_values",
    "q_log_uniform",
    "q_log_uniform_values",
    "inv_log_uniform",
    "inv_log_uniform_values",
    "normal",
    "q_normal",
    "log_normal",
    "q_log_normal",
    "beta",
    "q_beta",
};
#define S_N_KINDS (sizeof s_names / sizeof s_names[0])

struct ms_distribution {
    ms_distribution_kind_t kind;
    double min, max, q, mu, sigma, a, b;
    bool int_out;   // a quantised law whose draws are integers
    bool weighted;  // categorical with probabilities
    json_t *values; // constant: [value]; categorical: values (owned)
    double *cum;    // categorical: cumulative probabilities (n values)
};

//  Keys each law takes beyond `distribution`.
typedef enum {
    S_K_MINMAX = 1,
    S_K_Q = 2,
    S_K_MUSIGMA = 4,
    S_K_AB = 8,
    S_K_VALUES = 16,
    S_K_VALUE = 32,
} s_keys_t;

static unsigned
s_keys_of(ms_distribution_kind_t k)
{
    switch (k) {
    case MS_DISTRIBUTION_CONSTANT:
        return S_K_VALUE;
    case MS_DISTRIBUTION_CATEGORICAL:
        return S_K_VALUES;
    case MS_DISTRIBUTION_INT_UNIFORM:
    case MS_DISTRIBUTION_UNIFORM:
    case MS_DISTRIBUTION_LOG_UNIFORM:
    case MS_DISTRIBUTION_LOG_UNIFORM_VALUES:
    case MS_DISTRIBUTION_INV_LOG_UNIFORM:
    case MS_DISTRIBUTION_INV_LOG_UNIFORM_VALUES:
        return S_K_MINMAX;
    case MS_DISTRIBUTION_Q_UNIFORM:
    case MS_DISTRIBUTION_Q_LOG_UNIFORM:
    case MS_DISTRIBUTION_Q_LOG_UNIFORM_VALUES:
        return S_K_MINMAX | S_K_Q;
    case MS_DISTRIBUTION_NORMAL:
    case MS_DISTRIBUTION_LOG_NORMAL:
        return S_K_MUSIGMA;
    case MS_DISTRIBUTION_Q_NORMAL:
    case MS_DISTRIBUTION_Q_LOG_NORMAL:
        return S_K_MUSIGMA | S_K_Q;
    case MS_DISTRIBUTION_BETA:
        return S_K_AB;
    case MS_DISTRIBUTION_Q_BETA:
        return S_K_AB | S_K_Q;
    }
    return 0;
}

//  A number key; false (diag set) when present and not a number.
static bool
s_number(const json_t *param, const char *key, const char *path, double *out,
         bool *is_int, bool *present, ms_diag_t *diag, int *rc)
{
    const json_t *v = json_object_get(param, key);
    *present = v != NULL;
    if (!v)
        return true;
    if (!json_is_number(v)) {
        *rc = ms_diag_set(diag, path, "%s must be a number", key);
        return false;
    }
    *out = json_number_value(v);
    if (is_int)
        *is_int = json_is_integer(v);
    if (!isfinite(*out)) {
        *rc = ms_diag_set(diag, path, "%s must be finite", key);
        return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Parse one parameter

int
ms_distribution_parse(ms_distribution_t **self_p, const json_t *param,
                      const char *path, ms_diag_t *diag)
{
    assert(self_p && path);
    *self_p = NULL;
    if (!json_is_object(param))
        return ms_diag_set(diag, path,
                           "a parameter is a mapping (value, values, or a "
                           "distribution with its keys)");
    char where[300];
    static const char *const known[] = {"value",
                                        "values",
                                        "probabilities",
                                        "distribution",
                                        "min",
                                        "max",
                                        "q",
                                        "mu",
                                        "sigma",
                                        "a",
                                        "b"};
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *) param, key, v)
    {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0] && !ok; i++)
            ok = strcmp(key, known[i]) == 0;
        if (!ok) {
            snprintf(where, sizeof where, "%s.%s", path, key);
            return ms_diag_set(diag, where,
                               "unknown key (a parameter takes value, "
                               "values, probabilities, distribution, min, "
                               "max, q, mu, sigma, a, b)");
        }
    }
    ms_distribution_t d = {.q = 1, .mu = 0, .sigma = 1, .a = 1, .b = 1};
    int rc = MS_OK;
    bool min_int = false, max_int = false, q_int = true, has_min, has_max,
         has_q, has_mu, has_sigma, has_a, has_b;
    if (!s_number(param, "min", path, &d.min, &min_int, &has_min, diag, &rc) ||
        !s_number(param, "max", path, &d.max, &max_int, &has_max, diag, &rc) ||
        !s_number(param, "q", path, &d.q, &q_int, &has_q, diag, &rc) ||
        !s_number(param, "mu", path, &d.mu, NULL, &has_mu, diag, &rc) ||
        !s_number(param, "sigma", path, &d.sigma, NULL, &has_sigma, diag,
                  &rc) ||
        !s_number(param, "a", path, &d.a, NULL, &has_a, diag, &rc) ||
        !s_number(param, "b", path, &d.b, NULL, &has_b, diag, &rc))
        return rc;
    const json_t *value = json_object_get(param, "value");
    const json_t *values = json_object_get(param, "values");
    const json_t *probs = json_object_get(param, "probabilities");
    const json_t *dist = json_object_get(param, "distribution");
    if (value && values)
        return ms_diag_set(diag, path, "give only one of value and values");
    //  The law: named, or inferred as W&B infers it.
    if (dist) {
        snprintf(where, sizeof where, "%s.distribution", path);
        if (!json_is_string(dist))
            return ms_diag_set(diag, where, "must be a name");
        size_t k = 0;
        while (k < S_N_KINDS && strcmp(s_names[k], json_string_value(dist)))
            k++;
        if (k == S_N_KINDS)
            return ms_diag_set(diag, where,
                               "unknown distribution '%.60s' (W&B's: "
                               "constant, categorical, int_uniform, "
                               "uniform, q_uniform, log_uniform, "
                               "log_uniform_values, q_log_uniform, "
                               "q_log_uniform_values, inv_log_uniform, "
                               "inv_log_uniform_values, normal, q_normal, "
                               "log_normal, q_log_normal, beta, q_beta)",
                               json_string_value(dist));
        d.kind = (ms_distribution_kind_t) k;
    } else if (values)
        d.kind = MS_DISTRIBUTION_CATEGORICAL;
    else if (value)
        d.kind = MS_DISTRIBUTION_CONSTANT;
    else if (has_min && has_max)
        d.kind = min_int && max_int ? MS_DISTRIBUTION_INT_UNIFORM
                                    : MS_DISTRIBUTION_UNIFORM;
    else if (has_mu || has_sigma)
        d.kind = MS_DISTRIBUTION_NORMAL;
    else if (has_a || has_b)
        d.kind = MS_DISTRIBUTION_BETA;
    else
        return ms_diag_set(diag, path,
                           "needs value, values, min and max, or a "
                           "distribution");
    //  Keys of another law are refused: a typo must not pass silently.
    unsigned takes = s_keys_of(d.kind);
    struct {
        const char *key;
        bool present;
        unsigned flag;
    } keys[] = {{"min", has_min, S_K_MINMAX},
                {"max", has_max, S_K_MINMAX},
                {"q", has_q, S_K_Q},
                {"mu", has_mu, S_K_MUSIGMA},
                {"sigma", has_sigma, S_K_MUSIGMA},
                {"a", has_a, S_K_AB},
                {"b", has_b, S_K_AB},
                {"values", values, S_K_VALUES},
                {"probabilities", probs, S_K_VALUES},
                {"value", value, S_K_VALUE}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].present && !(takes & keys[i].flag)) {
            snprintf(where, sizeof where, "%s.%s", path, keys[i].key);
            return ms_diag_set(diag, where, "does not go with distribution %s",
                               s_names[d.kind]);
        }
    if ((takes & S_K_MINMAX) && !(has_min && has_max))
        return ms_diag_set(diag, path, "distribution %s needs min and max",
                           s_names[d.kind]);
    if ((takes & S_K_MINMAX) && d.min > d.max) {
        snprintf(where, sizeof where, "%s.min", path);
        return ms_diag_set(diag, where, "min %g is above max %g", d.min, d.max);
    }
    if (d.kind == MS_DISTRIBUTION_INT_UNIFORM &&
        (!min_int || !max_int || fabs(d.min) > 0x1p52 || fabs(d.max) > 0x1p52))
        return ms_diag_set(diag, path,
                           "int_uniform needs integer min and max within "
                           "+-2^52");
    bool logs = d.kind == MS_DISTRIBUTION_LOG_UNIFORM_VALUES ||
                d.kind == MS_DISTRIBUTION_Q_LOG_UNIFORM_VALUES ||
                d.kind == MS_DISTRIBUTION_INV_LOG_UNIFORM_VALUES;
    if (logs && d.min <= 0) {
        snprintf(where, sizeof where, "%s.min", path);
        return ms_diag_set(diag, where,
                           "%s takes the log of the bounds: min must be > 0",
                           s_names[d.kind]);
    }
    if ((takes & S_K_Q) && !(d.q > 0)) {
        snprintf(where, sizeof where, "%s.q", path);
        return ms_diag_set(diag, where, "q must be > 0");
    }
    if ((takes & S_K_MUSIGMA) && !(d.sigma > 0)) {
        snprintf(where, sizeof where, "%s.sigma", path);
        return ms_diag_set(diag, where, "sigma must be > 0");
    }
    if ((takes & S_K_AB) && !(d.a > 0 && d.b > 0)) {
        snprintf(where, sizeof where, "%s.%s", path, d.a > 0 ? "b" : "a");
        return ms_diag_set(diag, where, "a and b must be > 0");
    }
    //  Quantised draws are integers when q (and the bounds) are.
    if (takes & S_K_Q)
        d.int_out = q_int && (!(takes & S_K_MINMAX) || (min_int && max_int) ||
                              d.kind != MS_DISTRIBUTION_Q_UNIFORM);
    //  Values.
    if (d.kind == MS_DISTRIBUTION_CONSTANT) {
        if (!value)
            return ms_diag_set(diag, path, "constant needs value");
        d.values = json_array();
        if (!d.values || json_array_append(d.values, (json_t *) value) != 0)
            rc = ms_diag_set_code(diag, MS_ERR_NOMEM, path, "out of memory");
    }
    if (d.kind == MS_DISTRIBUTION_CATEGORICAL) {
        snprintf(where, sizeof where, "%s.values", path);
        if (!json_is_array(values) || json_array_size(values) == 0)
            return ms_diag_set(diag, where, "must be a non-empty list");
        size_t n = json_array_size(values);
        d.values = json_deep_copy(values);
        d.cum = malloc(n * sizeof *d.cum);
        if (!d.values || !d.cum) {
            json_decref(d.values);
            free(d.cum);
            return ms_diag_set_code(diag, MS_ERR_NOMEM, path, "out of memory");
        }
        double sum = 0;
        bool bad = false;
        for (size_t i = 0; i < n; i++) {
            double p = 1.0 / (double) n;
            if (probs) {
                const json_t *pj = json_array_get(probs, i);
                p = json_is_number(pj) ? json_number_value(pj) : -1;
            }
            bad = bad || !(p >= 0) || !isfinite(p);
            sum += p;
            d.cum[i] = sum;
        }
        snprintf(where, sizeof where, "%s.probabilities", path);
        if (probs && (!json_is_array(probs) || json_array_size(probs) != n))
            rc = ms_diag_set(diag, where,
                             "must be a list of %zu numbers, one per value", n);
        else if (bad)
            rc = ms_diag_set(diag, where, "must be numbers >= 0");
        else if (fabs(sum - 1) > 1e-6)
            rc = ms_diag_set(diag, where, "sum to %.9g, not 1", sum);
        d.weighted = probs != NULL;
        if (rc == MS_OK)
            d.cum[n - 1] = 1; // rounding: the last value closes [0, 1)
    }
    if (rc != MS_OK) {
        json_decref(d.values);
        free(d.cum);
        return rc;
    }
    ms_distribution_t *self = malloc(sizeof *self);
    if (!self) {
        json_decref(d.values);
        free(d.cum);
        return ms_diag_set_code(diag, MS_ERR_NOMEM, path, "out of memory");
    }
    *self = d;
    *self_p = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Kind and name

ms_distribution_kind_t
ms_distribution_kind(const ms_distribution_t *self)
{
    assert(self);
    return self->kind;
}

const char *
ms_distribution_name(const ms_distribution_t *self)
{
    assert(self);
    return s_names[self->kind];
}

//  A Gamma(shape, 1) variate (Marsaglia and Tsang).
static double
s_gamma(ms_rng_t *rng, double shape)
{
    if (shape < 1) {
        double u = ms_rng_uniform(rng);
        return s_gamma(rng, shape + 1) * pow(u > 0 ? u : 0x1p-53, 1 / shape);
    }
    double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = ms_rng_normal(rng), v = 1 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = ms_rng_uniform(rng);
        if (u < 1 - 0.0331 * x * x * x * x)
            return d * v;
        if (u > 0 && log(u) < 0.5 * x * x + d * (1 - v + log(v)))
            return d * v;
    }
}

//  The standard normal quantile: Acklam's rational approximation
//  ("An algorithm for computing the inverse normal cumulative
//  distribution function", 2003; relative error 1.15e-9) and one step of
//  Halley's method on Phi(x) - p with erfc, which brings it to about
//  1e-15. p in (0, 1).
static double
s_normal_quantile(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                               2.445134137142996e+00, 3.754408661907416e+00};
    const double p_low = 0.02425;
    double x;
    if (p < p_low || p > 1 - p_low) {
        double q = sqrt(-2 * log(p < p_low ? p : 1 - p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q +
             c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
        if (p > 1 - p_low)
            x = -x;
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r +
             a[5]) *
            q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    }
    double e = 0.5 * erfc(-x / S_SQRT2) - p;
    double u = e * S_SQRT_2PI * exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

//  A draw x of the law, as W&B's agent writes it: quantised laws round to
//  multiples of q (integers when int_out), every other law a real.
static json_t *
s_finish(const ms_distribution_t *d, double x)
{
    if (s_keys_of(d->kind) & S_K_Q) {
        x = round(x / d->q) * d->q;
        if (d->int_out)
            return json_integer((json_int_t) llround(x));
    }
    return json_real(x);
}

//  The categorical index of u in [0, 1).
static size_t
s_category(const ms_distribution_t *d, double u)
{
    size_t n = json_array_size(d->values), i = 0;
    if (!d->weighted) {
        i = (size_t) floor(u * (double) n);
        return i < n ? i : n - 1;
    }
    while (i + 1 < n && u >= d->cum[i])
        i++;
    return i;
}

//  --------------------------------------------------------------------------
//  The value at u

json_t *
ms_distribution_quantile(const ms_distribution_t *self, double u)
{
    assert(self);
    const ms_distribution_t *d = self;
    u = u < 0 ? 0 : u >= 1 ? 1 - 0x1p-53 : u;
    double x = 0;
    switch (d->kind) {
    case MS_DISTRIBUTION_CONSTANT:
        return json_deep_copy(json_array_get(d->values, 0));
    case MS_DISTRIBUTION_CATEGORICAL:
        return json_deep_copy(json_array_get(d->values, s_category(d, u)));
    case MS_DISTRIBUTION_INT_UNIFORM: {
        uint64_t span = (uint64_t) (d->max - d->min) + 1;
        uint64_t k = (uint64_t) floor(u * (double) span);
        return json_integer(
            (json_int_t) (d->min + (double) (k < span ? k : span - 1)));
    }
    case MS_DISTRIBUTION_UNIFORM:
    case MS_DISTRIBUTION_Q_UNIFORM:
        x = d->min + u * (d->max - d->min);
        break;
    case MS_DISTRIBUTION_LOG_UNIFORM:
    case MS_DISTRIBUTION_Q_LOG_UNIFORM:
        x = exp(d->min + u * (d->max - d->min));
        break;
    case MS_DISTRIBUTION_LOG_UNIFORM_VALUES:
    case MS_DISTRIBUTION_Q_LOG_UNIFORM_VALUES:
        x = exp(log(d->min) + u * (log(d->max) - log(d->min)));
        x = x < d->min ? d->min : x > d->max ? d->max : x;
        break;
    case MS_DISTRIBUTION_INV_LOG_UNIFORM:
        x = 1 / exp(d->min + u * (d->max - d->min));
        break;
    case MS_DISTRIBUTION_INV_LOG_UNIFORM_VALUES:
        x = 1 / exp(log(1 / d->max) + u * (log(1 / d->min) - log(1 / d->max)));
        x = x < d->min ? d->min : x > d->max ? d->max : x;
        break;
    case MS_DISTRIBUTION_NORMAL:
    case MS_DISTRIBUTION_Q_NORMAL:
    case MS_DISTRIBUTION_LOG_NORMAL:
    case MS_DISTRIBUTION_Q_LOG_NORMAL: {
        //  Keep u off 0 (the quantile is -inf there).
        double z = s_normal_quantile(u > 0x1p-60 ? u : 0x1p-60);
        x = d->mu + d->sigma * z;
        if (d->kind == MS_DISTRIBUTION_LOG_NORMAL ||
            d->kind == MS_DISTRIBUTION_Q_LOG_NORMAL)
            x = exp(x);
        break;
    }
    case MS_DISTRIBUTION_BETA:
    case MS_DISTRIBUTION_Q_BETA:
        return NULL; // ms_distribution_has_quantile
    }
    return s_finish(d, x);
}

bool
ms_distribution_has_quantile(const ms_distribution_t *self)
{
    assert(self);
    return self->kind != MS_DISTRIBUTION_BETA &&
           self->kind != MS_DISTRIBUTION_Q_BETA;
}

//  --------------------------------------------------------------------------
//  Draw one value

json_t *
ms_distribution_sample(const ms_distribution_t *self, ms_rng_t *rng)
{
    assert(self && rng);
    const ms_distribution_t *d = self;
    switch (d->kind) {
    case MS_DISTRIBUTION_CONSTANT:
        return json_deep_copy(json_array_get(d->values, 0));
    case MS_DISTRIBUTION_CATEGORICAL:
        if (!d->weighted) {
            size_t n = json_array_size(d->values);
            return json_deep_copy(
                json_array_get(d->values, (size_t) ms_rng_below(rng, n)));
        }
        break;
    case MS_DISTRIBUTION_INT_UNIFORM: {
        uint64_t span = (uint64_t) (d->max - d->min) + 1;
        return json_integer(
            (json_int_t) (d->min + (double) ms_rng_below(rng, span)));
    }
    case MS_DISTRIBUTION_NORMAL:
    case MS_DISTRIBUTION_Q_NORMAL:
        return s_finish(d, d->mu + d->sigma * ms_rng_normal(rng));
    case MS_DISTRIBUTION_LOG_NORMAL:
    case MS_DISTRIBUTION_Q_LOG_NORMAL:
        return s_finish(d, exp(d->mu + d->sigma * ms_rng_normal(rng)));
    case MS_DISTRIBUTION_BETA:
    case MS_DISTRIBUTION_Q_BETA: {
        double ga = s_gamma(rng, d->a), gb = s_gamma(rng, d->b);
        return s_finish(d, ga + gb > 0 ? ga / (ga + gb) : 0.5);
    }
    default:
        break;
    }
    //  Every other law is its quantile at a uniform draw.
    return ms_distribution_quantile(d, ms_rng_uniform(rng));
}

//  --------------------------------------------------------------------------
//  What the draws can be

bool
ms_distribution_integral(const ms_distribution_t *self)
{
    assert(self);
    return self->kind == MS_DISTRIBUTION_INT_UNIFORM ||
           ((s_keys_of(self->kind) & S_K_Q) && self->q == floor(self->q));
}

bool
ms_distribution_support(const ms_distribution_t *self, double *lo, double *hi)
{
    assert(self && lo && hi);
    const ms_distribution_t *d = self;
    switch (d->kind) {
    case MS_DISTRIBUTION_CONSTANT:
    case MS_DISTRIBUTION_CATEGORICAL:
        return false;
    case MS_DISTRIBUTION_INT_UNIFORM:
    case MS_DISTRIBUTION_UNIFORM:
    case MS_DISTRIBUTION_Q_UNIFORM:
    case MS_DISTRIBUTION_LOG_UNIFORM_VALUES:
    case MS_DISTRIBUTION_Q_LOG_UNIFORM_VALUES:
    case MS_DISTRIBUTION_INV_LOG_UNIFORM_VALUES:
        *lo = d->min, *hi = d->max;
        break;
    case MS_DISTRIBUTION_LOG_UNIFORM:
    case MS_DISTRIBUTION_Q_LOG_UNIFORM:
        *lo = exp(d->min), *hi = exp(d->max);
        break;
    case MS_DISTRIBUTION_INV_LOG_UNIFORM:
        *lo = 1 / exp(d->max), *hi = 1 / exp(d->min);
        break;
    case MS_DISTRIBUTION_NORMAL:
    case MS_DISTRIBUTION_Q_NORMAL:
        *lo = -INFINITY, *hi = INFINITY;
        break;
    case MS_DISTRIBUTION_LOG_NORMAL:
    case MS_DISTRIBUTION_Q_LOG_NORMAL:
        *lo = 0, *hi = INFINITY;
        break;
    case MS_DISTRIBUTION_BETA:
    case MS_DISTRIBUTION_Q_BETA:
        *lo = 0, *hi = 1;
        break;
    }
    if (s_keys_of(d->kind) & S_K_Q) {
        *lo = isfinite(*lo) ? round(*lo / d->q) * d->q : *lo;
        *hi = isfinite(*hi) ? round(*hi / d->q) * d->q : *hi;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Free

void
ms_distribution_destroy(ms_distribution_t **self_p)
{
    assert(self_p);
    ms_distribution_t *self = *self_p;
    if (!self)
        return;
    json_decref(self->values);
    free(self->cum);
    free(self);
    *self_p = NULL;
}
