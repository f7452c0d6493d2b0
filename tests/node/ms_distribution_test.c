/*  =========================================================================
    ms_distribution_test - each of W&B's distributions draws by its law
    (Kolmogorov-Smirnov against the CDF, moments, bucket frequencies), W&B's
    inference rules, and the errors with their key paths

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_distribution.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_N 20000

static ms_distribution_t *
s_parse(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    ms_distribution_t *d = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_distribution_parse(&d, j, "parameters.p", &diag);
    json_decref(j);
    if (rc != MS_OK)
        fail_msg("%s: %s: %s", text, diag.where, diag.reason);
    return d;
}

static int
s_cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

//  S_N draws as doubles (sorted); *ints counts draws that were integers.
static double *
s_draw(const ms_distribution_t *d, uint64_t seed, int *ints)
{
    ms_rng_t rng;
    ms_rng_seed(&rng, seed, 1);
    double *x = malloc(S_N * sizeof *x);
    *ints = 0;
    for (int i = 0; i < S_N; i++) {
        json_t *v = ms_distribution_sample(d, &rng);
        assert_true(json_is_number(v));
        *ints += json_is_integer(v);
        x[i] = json_number_value(v);
        json_decref(v);
    }
    qsort(x, S_N, sizeof *x, s_cmp);
    return x;
}

//  Kolmogorov-Smirnov statistic of sorted x against cdf.
static double
s_ks(const double *x, double (*cdf)(double, const double *), const double *p)
{
    double dmax = 0;
    for (int i = 0; i < S_N; i++) {
        double f = cdf(x[i], p);
        double a = fabs(f - (double) i / S_N),
               b = fabs((double) (i + 1) / S_N - f);
        dmax = fmax(dmax, fmax(a, b));
    }
    return dmax;
}

//  The KS bound at significance 0.001.
#define S_KS_MAX (1.95 / sqrt((double) S_N))

static double
cdf_uniform(double x, const double *p) // p: lo, hi
{
    return x <= p[0] ? 0 : x >= p[1] ? 1 : (x - p[0]) / (p[1] - p[0]);
}
static double
cdf_log_uniform(double x, const double *p) // log x uniform on [p0, p1]
{
    return cdf_uniform(log(x), p);
}
static double
cdf_inv_log_uniform(double x, const double *p) // log(1/x) uniform [p0, p1]
{
    return 1 - cdf_uniform(-log(x), p);
}
static double
cdf_normal(double x, const double *p) // mu, sigma
{
    return 0.5 * erfc(-(x - p[0]) / (p[1] * sqrt(2)));
}
static double
cdf_log_normal(double x, const double *p)
{
    return x <= 0 ? 0 : cdf_normal(log(x), p);
}

static void
s_expect_ks(const char *spec, double (*cdf)(double, const double *), double p0,
            double p1, double lo, double hi)
{
    ms_distribution_t *d = s_parse(spec);
    int ints = 0;
    double *x = s_draw(d, 42, &ints);
    double p[2] = {p0, p1};
    double ks = s_ks(x, cdf, p);
    if (ks > S_KS_MAX)
        fail_msg("%s: KS %.4f > %.4f", spec, ks, S_KS_MAX);
    if (x[0] < lo || x[S_N - 1] > hi)
        fail_msg("%s: drawn %g..%g, outside %g..%g", spec, x[0], x[S_N - 1], lo,
                 hi);
    assert_int_equal(ints, 0);
    //  The test can tell laws apart: the same draws against a uniform on
    //  their own range fail for every non-uniform law here.
    free(x);
    ms_distribution_destroy(&d);
}

//  --------------------------------------------------------------------------
static void
test_continuous_laws(void **state)
{
    (void) state;
    s_expect_ks("{\"distribution\": \"uniform\", \"min\": -2, \"max\": 3.5}",
                cdf_uniform, -2, 3.5, -2, 3.5);
    s_expect_ks("{\"min\": 0.5, \"max\": 1.5}", cdf_uniform, 0.5, 1.5, 0.5,
                1.5);
    s_expect_ks("{\"distribution\": \"log_uniform\", \"min\": -9.2, "
                "\"max\": -2.3}",
                cdf_log_uniform, -9.2, -2.3, exp(-9.2), exp(-2.3));
    s_expect_ks("{\"distribution\": \"log_uniform_values\", \"min\": 1e-5, "
                "\"max\": 0.1}",
                cdf_log_uniform, log(1e-5), log(0.1), 1e-5, 0.1);
    s_expect_ks("{\"distribution\": \"inv_log_uniform\", \"min\": 1, "
                "\"max\": 5}",
                cdf_inv_log_uniform, 1, 5, exp(-5), exp(-1));
    s_expect_ks("{\"distribution\": \"inv_log_uniform_values\", \"min\": "
                "0.001, \"max\": 10}",
                cdf_log_uniform, log(0.001), log(10), 0.001, 10);
    s_expect_ks("{\"distribution\": \"normal\", \"mu\": 3, \"sigma\": 0.5}",
                cdf_normal, 3, 0.5, -INFINITY, INFINITY);
    s_expect_ks("{\"distribution\": \"normal\"}", cdf_normal, 0, 1, -INFINITY,
                INFINITY);
    s_expect_ks("{\"mu\": -1}", cdf_normal, -1, 1, -INFINITY, INFINITY);
    s_expect_ks("{\"distribution\": \"log_normal\", \"mu\": 0.5, \"sigma\": "
                "0.3}",
                cdf_log_normal, 0.5, 0.3, 0, INFINITY);
    //  The KS test has power: normal draws are not uniform on their range.
    ms_distribution_t *d = s_parse("{\"distribution\": \"normal\"}");
    int ints;
    double *x = s_draw(d, 42, &ints);
    double p[2] = {x[0], x[S_N - 1]};
    assert_true(s_ks(x, cdf_uniform, p) > 10 * S_KS_MAX);
    free(x);
    ms_distribution_destroy(&d);
}

//  --------------------------------------------------------------------------
//  Beta: mean a / (a + b), variance ab / ((a + b)^2 (a + b + 1)).
static void
s_expect_beta(double a, double b)
{
    char spec[128];
    snprintf(spec, sizeof spec,
             "{\"distribution\": \"beta\", \"a\": %g, "
             "\"b\": %g}",
             a, b);
    ms_distribution_t *d = s_parse(spec);
    int ints;
    double *x = s_draw(d, 7, &ints);
    double mean = 0, var = 0;
    for (int i = 0; i < S_N; i++)
        mean += x[i] / S_N;
    for (int i = 0; i < S_N; i++)
        var += (x[i] - mean) * (x[i] - mean) / (S_N - 1);
    double m = a / (a + b), v = a * b / ((a + b) * (a + b) * (a + b + 1));
    double se = sqrt(v / S_N);
    if (fabs(mean - m) > 5 * se || fabs(var - v) > 0.05 * v)
        fail_msg("beta(%g, %g): mean %g (want %g), var %g (want %g)", a, b,
                 mean, m, var, v);
    assert_true(x[0] >= 0 && x[S_N - 1] <= 1);
    free(x);
    ms_distribution_destroy(&d);
}

static void
test_beta(void **state)
{
    (void) state;
    s_expect_beta(2, 5);
    s_expect_beta(0.5, 0.5);
    s_expect_beta(1, 1);
    s_expect_beta(30, 3);
}

//  --------------------------------------------------------------------------
//  Discrete laws: every draw on the lattice, bucket frequencies within 5
//  standard errors of the law's probabilities.
static void
s_expect_buckets(const char *spec, int n_buckets, const double *values,
                 const double *probs, bool want_ints)
{
    ms_distribution_t *d = s_parse(spec);
    int ints;
    double *x = s_draw(d, 11, &ints);
    assert_int_equal(ints, want_ints ? S_N : 0);
    int counts[64] = {0};
    for (int i = 0; i < S_N; i++) {
        int k = 0;
        while (k < n_buckets && fabs(x[i] - values[k]) > 1e-9)
            k++;
        if (k == n_buckets)
            fail_msg("%s: drew %.17g, not a value of the law", spec, x[i]);
        counts[k]++;
    }
    for (int k = 0; k < n_buckets; k++) {
        double f = (double) counts[k] / S_N, p = probs[k];
        double se = sqrt(p * (1 - p) / S_N);
        if (fabs(f - p) > 5 * se + 1e-12)
            fail_msg("%s: value %g drawn %.4f of the time, want %.4f", spec,
                     values[k], f, p);
    }
    free(x);
    ms_distribution_destroy(&d);
}

static void
test_discrete_laws(void **state)
{
    (void) state;
    double ints5[] = {1, 2, 3, 4, 5}, fifth[] = {.2, .2, .2, .2, .2};
    s_expect_buckets("{\"min\": 1, \"max\": 5}", 5, ints5, fifth, true);
    s_expect_buckets("{\"distribution\": \"int_uniform\", \"min\": 1, "
                     "\"max\": 5}",
                     5, ints5, fifth, true);
    //  q_uniform on [0, 10], q 5: round(U/5)*5 is 0 a quarter of [0, 2.5),
    //  5 on [2.5, 7.5), 10 on [7.5, 10].
    double q5[] = {0, 5, 10}, pq5[] = {0.25, 0.5, 0.25};
    s_expect_buckets("{\"distribution\": \"q_uniform\", \"min\": 0, \"max\": "
                     "10, \"q\": 5}",
                     3, q5, pq5, true);
    double q25[] = {0, 2.5, 5}, pq25[] = {0.3125, 0.625, 0.0625};
    s_expect_buckets("{\"distribution\": \"q_uniform\", \"min\": 0, \"max\": "
                     "4, \"q\": 2.5}",
                     3, q25, pq25, false);
    //  q_log_uniform_values on [1, 100], q 50: 0 below 25, 50 on [25, 75),
    //  100 on [75, 100]: log-uniform probabilities.
    double ql[] = {0, 50, 100};
    double pql[] = {log(25) / log(100), (log(75) - log(25)) / log(100),
                    (log(100) - log(75)) / log(100)};
    s_expect_buckets("{\"distribution\": \"q_log_uniform_values\", \"min\": "
                     "1, \"max\": 100, \"q\": 50}",
                     3, ql, pql, true);
    //  q_log_uniform: min and max are logs.
    s_expect_buckets("{\"distribution\": \"q_log_uniform\", \"min\": 0, "
                     "\"max\": 4.605170185988092, \"q\": 50}",
                     3, ql, pql, true);
    //  q_normal(0, 1), q 1: P(round(X) = k) = Phi(k + .5) - Phi(k - .5).
    double qn[] = {-4, -3, -2, -1, 0, 1, 2, 3, 4}, pqn[9];
    double np[2] = {0, 1};
    for (int k = 0; k < 9; k++)
        pqn[k] = cdf_normal(qn[k] + 0.5, np) - cdf_normal(qn[k] - 0.5, np);
    s_expect_buckets("{\"distribution\": \"q_normal\"}", 9, qn, pqn, true);
    //  q_log_normal(0, 0.8), q 1.
    double qln[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                    14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
                    28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40};
    double pqln[41], lnp[2] = {0, 0.8};
    for (int k = 0; k < 41; k++)
        pqln[k] = cdf_log_normal(k + 0.5, lnp) - cdf_log_normal(k - 0.5, lnp);
    s_expect_buckets("{\"distribution\": \"q_log_normal\", \"sigma\": 0.8}", 41,
                     qln, pqln, true);
    //  q_beta(1, 1), q 0.5: 0 on [0, .25), .5 on [.25, .75), 1 on [.75, 1].
    double qb[] = {0, 0.5, 1}, pqb[] = {0.25, 0.5, 0.25};
    s_expect_buckets("{\"distribution\": \"q_beta\", \"q\": 0.5}", 3, qb, pqb,
                     false);
}

//  --------------------------------------------------------------------------
static void
test_categorical_and_constant(void **state)
{
    (void) state;
    double v[] = {16, 32, 64}, third[] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
    s_expect_buckets("{\"values\": [16, 32, 64]}", 3, v, third, true);
    double pr[] = {0.7, 0.2, 0.1};
    s_expect_buckets("{\"values\": [16, 32, 64], \"probabilities\": [0.7, "
                     "0.2, 0.1]}",
                     3, v, pr, true);
    double zero[] = {0, 1, 0};
    s_expect_buckets("{\"distribution\": \"categorical\", \"values\": [16, "
                     "32, 64], \"probabilities\": [0, 1, 0]}",
                     3, v, zero, true);
    //  Values of any JSON kind come back as they are.
    ms_distribution_t *d =
        s_parse("{\"values\": [\"adam\", {\"w\": 1}, [1, 2]]}");
    assert_int_equal(ms_distribution_kind(d), MS_DISTRIBUTION_CATEGORICAL);
    ms_rng_t rng;
    ms_rng_seed(&rng, 3, 1);
    int kinds[3] = {0};
    for (int i = 0; i < 300; i++) {
        json_t *x = ms_distribution_sample(d, &rng);
        kinds[json_is_string(x) ? 0 : json_is_object(x) ? 1 : 2]++;
        json_decref(x);
    }
    assert_true(kinds[0] > 50 && kinds[1] > 50 && kinds[2] > 50);
    ms_distribution_destroy(&d);
    d = s_parse("{\"value\": \"sgd\"}");
    assert_string_equal(ms_distribution_name(d), "constant");
    json_t *x = ms_distribution_sample(d, &rng);
    assert_string_equal(json_string_value(x), "sgd");
    json_decref(x);
    ms_distribution_destroy(&d);
}

//  --------------------------------------------------------------------------
//  W&B's inference rules.
static void
test_inference(void **state)
{
    (void) state;
    struct {
        const char *spec;
        ms_distribution_kind_t kind;
    } cases[] = {
        {"{\"values\": [1, 2]}", MS_DISTRIBUTION_CATEGORICAL},
        {"{\"value\": 3}", MS_DISTRIBUTION_CONSTANT},
        {"{\"min\": 1, \"max\": 8}", MS_DISTRIBUTION_INT_UNIFORM},
        {"{\"min\": 1, \"max\": 8.0}", MS_DISTRIBUTION_UNIFORM},
        {"{\"min\": 0.001, \"max\": 0.1}", MS_DISTRIBUTION_UNIFORM},
        {"{\"sigma\": 2}", MS_DISTRIBUTION_NORMAL},
        {"{\"a\": 2, \"b\": 3}", MS_DISTRIBUTION_BETA},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ms_distribution_t *d = s_parse(cases[i].spec);
        if (ms_distribution_kind(d) != cases[i].kind)
            fail_msg("%s: inferred %s", cases[i].spec, ms_distribution_name(d));
        ms_distribution_destroy(&d);
    }
}

//  --------------------------------------------------------------------------
static void
test_errors(void **state)
{
    (void) state;
    struct {
        const char *spec, *where, *why;
    } cases[] = {
        {"{\"distribution\": \"gauss\"}", "parameters.p.distribution",
         "unknown distribution 'gauss'"},
        {"{\"min\": 1, \"max\": 2, \"step\": 1}", "parameters.p.step",
         "unknown key"},
        {"{\"distribution\": \"uniform\", \"min\": 0, \"max\": 1, \"q\": 1}",
         "parameters.p.q", "does not go with distribution uniform"},
        {"{\"distribution\": \"normal\", \"min\": 0}", "parameters.p.min",
         "does not go with distribution normal"},
        {"{\"min\": 5, \"max\": 1}", "parameters.p.min", "above max"},
        {"{\"distribution\": \"log_uniform_values\", \"min\": 0, \"max\": 1}",
         "parameters.p.min", "min must be > 0"},
        {"{\"distribution\": \"q_uniform\", \"min\": 0, \"max\": 1, \"q\": 0}",
         "parameters.p.q", "q must be > 0"},
        {"{\"distribution\": \"normal\", \"sigma\": 0}", "parameters.p.sigma",
         "sigma must be > 0"},
        {"{\"distribution\": \"beta\", \"a\": -1}", "parameters.p.a",
         "a and b must be > 0"},
        {"{\"values\": [1, 2], \"probabilities\": [0.5]}",
         "parameters.p.probabilities", "one per value"},
        {"{\"values\": [1, 2], \"probabilities\": [0.5, 0.6]}",
         "parameters.p.probabilities", "sum to 1.1"},
        {"{\"values\": [1, 2], \"probabilities\": [1.5, -0.5]}",
         "parameters.p.probabilities", ">= 0"},
        {"{\"values\": []}", "parameters.p.values", "non-empty"},
        {"{\"distribution\": \"int_uniform\", \"min\": 0.5, \"max\": 3}",
         "parameters.p", "integer min and max"},
        {"{\"distribution\": \"uniform\", \"max\": 3}", "parameters.p",
         "needs min and max"},
        {"{}", "parameters.p", "needs value, values"},
        {"{\"min\": \"a\", \"max\": 2}", "parameters.p",
         "min must be a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_loads(cases[i].spec, 0, NULL);
        ms_distribution_t *d = NULL;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_distribution_parse(&d, j, "parameters.p", &diag);
        json_decref(j);
        if (rc != MS_ERR_INVALID || strcmp(diag.where, cases[i].where) != 0 ||
            !strstr(diag.reason, cases[i].why))
            fail_msg("%s: rc %d, '%s': '%s' (want '%s': '%s')", cases[i].spec,
                     rc, diag.where, diag.reason, cases[i].where, cases[i].why);
        assert_null(d);
    }
}

//  The quantile: the standard normal's inverts Phi to near double
//  precision over the whole range; every law's quantile is monotone in
//  u and stays in its support; beta has none.
static void
test_quantile(void **state)
{
    (void) state;
    ms_distribution_t *d = s_parse("{\"distribution\": \"normal\"}");
    double worst = 0;
    for (int i = 1; i < 2000; i++) {
        //  u over (0, 1), denser in both tails (down to 2e-20: the
        //  quantile keeps u above 2^-60 = 8.7e-19).
        double t = (double) i / 2000, u;
        if (t < 0.1)
            u = pow(10, -18 * (0.1 - t) / 0.1) * 0.02;
        else if (t > 0.9)
            u = 1 - pow(10, -13 * (t - 0.9) / 0.1) * 0.02;
        else
            u = 0.02 + (t - 0.1) / 0.8 * 0.96;
        u = u > 0x1p-60 ? u : 0x1p-60;
        json_t *x = ms_distribution_quantile(d, u);
        assert_true(json_is_real(x));
        double z = json_real_value(x);
        json_decref(x);
        //  Relative error in the lower half (the tail holds u down to
        //  1e-300), absolute in the upper (1 - u is rounded there).
        double err = u < 0.5 ? fabs(0.5 * erfc(-z / sqrt(2)) - u) / u
                             : fabs(0.5 * erfc(-z / sqrt(2)) - u) / 1e-3;
        worst = err > worst ? err : worst;
    }
    if (worst > 1e-12)
        fail_msg("normal quantile: worst relative error %g", worst);
    ms_distribution_destroy(&d);
    const char *laws[] = {
        "{\"distribution\": \"uniform\", \"min\": -1, \"max\": 2}",
        "{\"distribution\": \"int_uniform\", \"min\": 3, \"max\": 9}",
        "{\"distribution\": \"q_uniform\", \"min\": 0, \"max\": 1, \"q\": 0.1}",
        "{\"distribution\": \"log_uniform\", \"min\": -3, \"max\": 1}",
        "{\"distribution\": \"log_uniform_values\", \"min\": 0.01, \"max\": 1}",
        "{\"distribution\": \"inv_log_uniform\", \"min\": -3, \"max\": 1}",
        "{\"distribution\": \"inv_log_uniform_values\", \"min\": 0.01, "
        "\"max\": 1}",
        "{\"distribution\": \"q_log_normal\", \"mu\": 1, \"sigma\": 2, \"q\": "
        "0.5}",
        "{\"distribution\": \"q_normal\", \"mu\": 1, \"sigma\": 2}",
    };
    for (size_t l = 0; l < sizeof laws / sizeof laws[0]; l++) {
        d = s_parse(laws[l]);
        assert_true(ms_distribution_has_quantile(d));
        double lo, hi, prev = -INFINITY;
        assert_true(ms_distribution_support(d, &lo, &hi));
        for (int i = 0; i <= 1000; i++) {
            json_t *x = ms_distribution_quantile(d, i / 1000.0);
            double v = json_number_value(x);
            json_decref(x);
            if (!(v >= lo && v <= hi))
                fail_msg("%s: quantile(%g) = %g outside [%g, %g]", laws[l],
                         i / 1000.0, v, lo, hi);
            bool inv = strstr(laws[l], "inv_") != NULL;
            if (i > 0 && (inv ? v > prev : v < prev))
                fail_msg("%s: quantile not monotone at %g", laws[l],
                         i / 1000.0);
            prev = v;
        }
        ms_distribution_destroy(&d);
    }
    d = s_parse("{\"distribution\": \"beta\", \"a\": 2, \"b\": 3}");
    assert_false(ms_distribution_has_quantile(d));
    assert_null(ms_distribution_quantile(d, 0.5));
    ms_distribution_destroy(&d);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_continuous_laws),
        cmocka_unit_test(test_beta),
        cmocka_unit_test(test_discrete_laws),
        cmocka_unit_test(test_categorical_and_constant),
        cmocka_unit_test(test_inference),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_quantile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
