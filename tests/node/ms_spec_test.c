/*  =========================================================================
    ms_spec_test - sweep specs: parsing, expansion, ids, errors

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_spec.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  The example of DESIGN.md "Sweep specification": 6*2*3*2*3 = 216 tasks.
static const char *s_design_spec =
    "name: depth-vs-accuracy\n"
    "dataset: fashion-mnist          # built-in name\n"
    "method: grid                    # grid | random | sobol\n"
    "metric: {name: val_accuracy, goal: maximize}\n"
    "run_cap: 500                    # caps the number of tasks, any method\n"
    "sweep_seed: 0                   # random and sobol draws\n"
    "parameters:\n"
    "  hidden_layers: {values: [1, 2, 4, 8, 16, 32]}\n"
    "  width:         {values: [64, 256]}\n"
    "  activation:    {values: [relu, tanh, sigmoid]}\n"
    "  optimizer:     {value: adam}\n"
    "  learning_rate: {values: [0.001, 0.003]}\n"
    "  batch_size:    {value: 128}\n"
    "  epochs:        {value: 10}\n"
    "  seed:          {values: [1, 2, 3]}\n"
    "verify: {replicas: 2, accuracy_tolerance: 0.01, loss_tolerance: 0.02}\n"
    "keep_weights: sampled           # none | best | sampled | all\n";

//  The scikit-learn benchmark grid: 2 activations x 4 architectures.
static const char *s_sklearn_spec =
    "name: sklearn\n"
    "dataset: fashion-mnist\n"
    "method: grid\n"
    "parameters:\n"
    "  activation: {values: [tanh, relu]}\n"
    "  hidden_sizes: {values: [[10], [100], [10, 10], [100, 10]]}\n"
    "  optimizer: {value: adam}\n"
    "  learning_rate: {value: 0.001}\n"
    "  batch_size: {value: 200}\n"
    "  l2: {value: 0.0001}\n"
    "  epochs: {value: 10}\n";

//  --------------------------------------------------------------------------
//  Parse text, asserting success.

static ms_spec_t *
s_parse(const char *text)
{
    ms_spec_t *spec = NULL;
    ms_diag_t diag = {{0}, {0}};
    int rc = ms_spec_parse(text, strlen(text), NULL, &spec, &diag);
    if (rc != MS_OK)
        fail_msg("parse failed (%d): %s: %s", rc, diag.where, diag.reason);
    assert_non_null(spec);
    return spec;
}

//  --------------------------------------------------------------------------
//  Hex of a hash (static buffer per call site is fine in tests).

static void
s_hex(const ms_hash_t *h, char out[MS_HASH_HEX_LEN + 1])
{
    assert_non_null(h);
    ms_hash_hex(h, out);
}

//  --------------------------------------------------------------------------
//  Are all task ids of a spec distinct?

static void
s_assert_ids_distinct(const ms_spec_t *spec)
{
    size_t n = ms_spec_task_count(spec);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            assert_false(ms_hash_equal(ms_spec_task_id(spec, i),
                                       ms_spec_task_id(spec, j)));
}

//  --------------------------------------------------------------------------
//  Config of task i (heap; caller frees).

static ms_train_config_t *
s_task(const ms_spec_t *spec, size_t i)
{
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    assert_non_null(cfg);
    assert_int_equal(ms_spec_task_config(spec, i, cfg), MS_OK);
    return cfg;
}

static void
test_design_example(void **state)
{
    (void) state;
    ms_spec_t *spec = s_parse(s_design_spec);
    assert_string_equal(ms_spec_name(spec), "depth-vs-accuracy");
    assert_int_equal(ms_spec_task_count(spec), 216);
    assert_int_equal(ms_spec_method(spec), MS_SPEC_METHOD_GRID);
    assert_true(ms_spec_dataset(spec)->builtin);
    assert_string_equal(ms_spec_dataset(spec)->name, "fashion-mnist");
    assert_string_equal(ms_spec_metric(spec)->name, "val_accuracy");
    assert_true(ms_spec_metric(spec)->maximize);
    assert_int_equal(ms_spec_verify(spec)->replicas, 2);
    assert_true(ms_spec_verify(spec)->loss_tolerance == 0.02);
    assert_int_equal(ms_spec_keep_weights(spec), MS_KEEP_WEIGHTS_SAMPLED);
    assert_int_equal(ms_spec_run_cap(spec), 500);
    assert_int_equal(ms_spec_warning_count(spec), 0);
    assert_true(ms_spec_ids_ready(spec));
    s_assert_ids_distinct(spec);
    //  Order: parameters by name (activation, batch_size, epochs,
    //  hidden_layers, learning_rate, optimizer, seed, width), the first
    //  slowest: task 1 changes width, task 2 seed, task 6 learning_rate.
    ms_train_config_t *t0 = s_task(spec, 0), *t1 = s_task(spec, 1),
                      *t2 = s_task(spec, 2), *t6 = s_task(spec, 6),
                      *last = s_task(spec, 215);
    assert_int_equal(t0->activation, MS_ACTIVATION_RELU);
    assert_int_equal(t0->init, MS_INIT_HE);
    assert_int_equal(t0->n_hidden, 1);
    assert_int_equal(t0->width, 64);
    assert_true(t0->seed == 1);
    assert_int_equal(t0->batch_size, 128);
    assert_int_equal(t1->width, 256);
    assert_true(t1->seed == 1);
    assert_int_equal(t2->width, 64);
    assert_true(t2->seed == 2);
    assert_true(t6->learning_rate == 0.003);
    assert_int_equal(last->activation, MS_ACTIVATION_SIGMOID);
    assert_int_equal(last->init, MS_INIT_XAVIER);
    assert_int_equal(last->n_hidden, 32);
    assert_int_equal(last->width, 256);
    assert_true(last->seed == 3);
    assert_true(last->learning_rate == 0.003);
    free(t0);
    free(t1);
    free(t2);
    free(t6);
    free(last);
    //  Task JSON is canonical and the canonical spec holds it.
    const char *json = ms_spec_task_json(spec, 0);
    assert_non_null(strstr(json, "\"learning_rate\":0.001,"));
    assert_non_null(strstr(json, "\"eps\":1e-08,"));
    size_t len = 0;
    const char *canon = ms_spec_canonical(spec, &len);
    assert_int_equal(len, strlen(canon));
    assert_non_null(strstr(canon, json));
    assert_memory_equal(canon,
                        "{\"dataset\":{\"name\":\"fashion-mnist\"},"
                        "\"keep_weights\":\"sampled\",",
                        strlen("{\"dataset\":{\"name\":\"fashion-mnist\"},"
                               "\"keep_weights\":\"sampled\","));
    assert_non_null(strstr(canon, "],\"verify\":{\"accuracy_tolerance\":0.01,"
                                  "\"loss_tolerance\":0.02,\"replicas\":2}}"));
    //  sweep id = H(canonical); task id = H(sweep id || config).
    ms_hash_t h;
    ms_hash_bytes(canon, len, &h);
    assert_true(ms_hash_equal(&h, ms_spec_sweep_id(spec)));
    ms_hasher_t hasher;
    ms_hasher_init(&hasher);
    ms_hasher_update(&hasher, h.bytes, MS_HASH_BYTES);
    ms_hasher_update(&hasher, json, strlen(json));
    ms_hasher_final(&hasher, &h);
    assert_true(ms_hash_equal(&h, ms_spec_task_id(spec, 0)));
    //  Out of range.
    assert_null(ms_spec_task_json(spec, 216));
    assert_null(ms_spec_task_id(spec, 216));
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    assert_int_equal(ms_spec_task_config(spec, 216, cfg), MS_ERR_NOTFOUND);
    free(cfg);
    ms_spec_destroy(&spec);
    assert_null(spec);
    ms_spec_destroy(&spec);
}

static void
test_sklearn_grid(void **state)
{
    (void) state;
    ms_spec_t *spec = s_parse(s_sklearn_spec);
    assert_int_equal(ms_spec_task_count(spec), 8);
    s_assert_ids_distinct(spec);
    static const int32_t sizes[4][2] = {{10, 0}, {100, 0}, {10, 10}, {100, 10}};
    static const int32_t n_layers[4] = {1, 1, 2, 2};
    for (size_t i = 0; i < 8; i++) {
        ms_train_config_t *cfg = s_task(spec, i);
        assert_int_equal(cfg->activation,
                         i < 4 ? MS_ACTIVATION_TANH : MS_ACTIVATION_RELU);
        assert_int_equal(cfg->init, i < 4 ? MS_INIT_XAVIER : MS_INIT_HE);
        assert_true(cfg->explicit_sizes);
        assert_int_equal(cfg->n_hidden, n_layers[i % 4]);
        for (int32_t l = 0; l < cfg->n_hidden; l++)
            assert_int_equal(cfg->hidden_sizes[l], sizes[i % 4][l]);
        assert_int_equal(cfg->optimizer, MS_OPTIM_ADAM);
        assert_int_equal(cfg->batch_size, 200);
        assert_true(cfg->l2 == 0.0001);
        assert_int_equal(cfg->epochs, 10);
        free(cfg);
    }
    assert_non_null(
        strstr(ms_spec_task_json(spec, 3), "\"hidden_sizes\":[100,10]"));
    assert_null(strstr(ms_spec_task_json(spec, 3), "\"width\""));
    ms_spec_destroy(&spec);
}

static void
test_ids_stable_and_sensitive(void **state)
{
    (void) state;
    ms_spec_t *a = s_parse(s_design_spec);
    ms_spec_t *b = s_parse(s_design_spec);
    char ha[MS_HASH_HEX_LEN + 1], hb[MS_HASH_HEX_LEN + 1];
    s_hex(ms_spec_sweep_id(a), ha);
    s_hex(ms_spec_sweep_id(b), hb);
    assert_string_equal(ha, hb);
    assert_true(ms_hash_equal(ms_spec_task_id(a, 5), ms_spec_task_id(b, 5)));
    //  Another name: another sweep, and so other task ids.
    char *renamed = strdup(s_design_spec);
    memcpy(strstr(renamed, "depth-vs-accuracy"), "depth-vs-accuracz", 17);
    ms_spec_t *c = s_parse(renamed);
    assert_false(ms_hash_equal(ms_spec_sweep_id(a), ms_spec_sweep_id(c)));
    assert_false(ms_hash_equal(ms_spec_task_id(a, 0), ms_spec_task_id(c, 0)));
    assert_string_equal(ms_spec_task_json(a, 0), ms_spec_task_json(c, 0));
    //  Another sweep_seed, even for grid.
    char *reseeded = strdup(s_design_spec);
    memcpy(strstr(reseeded, "sweep_seed: 0"), "sweep_seed: 7", 13);
    ms_spec_t *d = s_parse(reseeded);
    assert_false(ms_hash_equal(ms_spec_sweep_id(a), ms_spec_sweep_id(d)));
    //  Comments, key order and flow/block style do not matter.
    const char *reordered =
        "keep_weights: sampled\n"
        "verify:\n  loss_tolerance: 0.02\n  replicas: 2\n"
        "  accuracy_tolerance: 0.01\n"
        "parameters:\n"
        "  seed: {values: [1, 2, 3]}\n"
        "  epochs: {value: 10}\n"
        "  batch_size: {value: 128}\n"
        "  learning_rate: {values: [0.001, 0.003]}\n"
        "  optimizer: {value: adam}\n"
        "  activation:\n    values: [relu, tanh, sigmoid]\n"
        "  width: {values: [64, 256]}\n"
        "  hidden_layers: {values: [1, 2, 4, 8, 16, 32]}\n"
        "sweep_seed: 0\nrun_cap: 500\n"
        "metric: {goal: maximize, name: val_accuracy}\n"
        "method: grid\ndataset: fashion-mnist\nname: depth-vs-accuracy\n";
    ms_spec_t *e = s_parse(reordered);
    assert_true(ms_hash_equal(ms_spec_sweep_id(a), ms_spec_sweep_id(e)));
    ms_spec_destroy(&a);
    ms_spec_destroy(&b);
    ms_spec_destroy(&c);
    ms_spec_destroy(&d);
    ms_spec_destroy(&e);
    free(renamed);
    free(reseeded);
}

static void
test_json_input(void **state)
{
    (void) state;
    const char *json =
        "{\"name\": \"sklearn\", \"dataset\": \"fashion-mnist\", "
        "\"method\": \"grid\", \"parameters\": {"
        "\"activation\": {\"values\": [\"tanh\", \"relu\"]}, "
        "\"hidden_sizes\": {\"values\": [[10], [100], [10, 10], [100, 10]]}, "
        "\"optimizer\": {\"value\": \"adam\"}, "
        "\"learning_rate\": {\"value\": 0.001}, "
        "\"batch_size\": {\"value\": 200}, \"l2\": {\"value\": 0.0001}, "
        "\"epochs\": {\"value\": 10}}}";
    ms_spec_t *from_json = s_parse(json);
    ms_spec_t *from_yaml = s_parse(s_sklearn_spec);
    assert_int_equal(ms_spec_task_count(from_json), 8);
    assert_true(ms_hash_equal(ms_spec_sweep_id(from_json),
                              ms_spec_sweep_id(from_yaml)));
    ms_spec_destroy(&from_json);
    ms_spec_destroy(&from_yaml);
}

static void
test_random_reproducible_in_range(void **state)
{
    (void) state;
    const char *text =
        "dataset: fashion-mnist\n"
        "method: random\n"
        "run_cap: 60\n"
        "sweep_seed: 11\n"
        "parameters:\n"
        "  learning_rate: {distribution: log_uniform_values, min: 0.0001, "
        "max: 0.1}\n"
        "  width: {distribution: int_uniform, min: 16, max: 20}\n"
        "  dropout: {distribution: uniform, min: 0.1, max: 0.5}\n"
        "  batch_size: {distribution: q_uniform, min: 32, max: 256, q: 32}\n"
        "  activation: {values: [relu, tanh, elu]}\n"
        "  epochs: {value: 2}\n";
    ms_spec_t *a = s_parse(text);
    ms_spec_t *b = s_parse(text);
    assert_int_equal(ms_spec_task_count(a), 60);
    assert_string_equal(ms_spec_canonical(a, NULL), ms_spec_canonical(b, NULL));
    bool seen_width[21] = {false};
    bool seen_act[3] = {false};
    double lr_min = 1, lr_max = 0;
    for (size_t i = 0; i < 60; i++) {
        ms_train_config_t *cfg = s_task(a, i);
        assert_true(cfg->learning_rate >= 0.0001 && cfg->learning_rate <= 0.1);
        lr_min = cfg->learning_rate < lr_min ? cfg->learning_rate : lr_min;
        lr_max = cfg->learning_rate > lr_max ? cfg->learning_rate : lr_max;
        assert_true(cfg->width >= 16 && cfg->width <= 20);
        seen_width[cfg->width] = true;
        assert_true(cfg->dropout >= 0.1 && cfg->dropout <= 0.5);
        assert_true(cfg->batch_size >= 32 && cfg->batch_size <= 256);
        assert_int_equal(cfg->batch_size % 32, 0);
        assert_int_equal(cfg->epochs, 2);
        seen_act[cfg->activation == MS_ACTIVATION_RELU   ? 0
                 : cfg->activation == MS_ACTIVATION_TANH ? 1
                                                         : 2] = true;
        free(cfg);
    }
    //  The draws spread: every width and activation, lr over decades.
    for (int w = 16; w <= 20; w++)
        assert_true(seen_width[w]);
    assert_true(seen_act[0] && seen_act[1] && seen_act[2]);
    assert_true(lr_min < 0.001 && lr_max > 0.01);
    //  Another sweep_seed draws other configs.
    char *other = strdup(text);
    memcpy(strstr(other, "sweep_seed: 11"), "sweep_seed: 12", 14);
    ms_spec_t *c = s_parse(other);
    assert_string_not_equal(ms_spec_task_json(a, 0), ms_spec_task_json(c, 0));
    free(other);
    ms_spec_destroy(&a);
    ms_spec_destroy(&b);
    ms_spec_destroy(&c);
}

static void
test_sobol_stratified_and_seeded(void **state)
{
    (void) state;
    //  8 points over 8 values: a Sobol net puts one in each eighth, so
    //  each value comes exactly once, for any digital shift (any seed).
    //  16 points over a 4 x 4 grid of two dimensions: one per cell.
#define S_ONE_DIM                                                              \
    "dataset: fashion-mnist\nmethod: sobol\nrun_cap: 8\nsweep_seed: %d\n"      \
    "parameters:\n"                                                            \
    "  width: {values: [10, 11, 12, 13, 14, 15, 16, 17]}\n"
#define S_TWO_DIM                                                              \
    "dataset: fashion-mnist\nmethod: sobol\nrun_cap: 16\nsweep_seed: %d\n"     \
    "parameters:\n"                                                            \
    "  hidden_layers: {values: [1, 2, 3, 4]}\n"                                \
    "  width: {values: [10, 11, 12, 13]}\n"                                    \
    "  learning_rate: {distribution: uniform, min: 0.001, max: 0.002}\n"
    char text[512];
    char first[2][4096];
    for (int seed = 0; seed < 2; seed++) {
        snprintf(text, sizeof text, S_ONE_DIM, seed);
        ms_spec_t *spec = s_parse(text);
        assert_int_equal(ms_spec_task_count(spec), 8);
        int count[8] = {0};
        for (size_t i = 0; i < 8; i++) {
            ms_train_config_t *cfg = s_task(spec, i);
            count[cfg->width - 10]++;
            free(cfg);
        }
        for (int v = 0; v < 8; v++)
            assert_int_equal(count[v], 1);
        ms_spec_destroy(&spec);
        snprintf(text, sizeof text, S_TWO_DIM, seed);
        spec = s_parse(text);
        assert_int_equal(ms_spec_task_count(spec), 16);
        int cells[4][4] = {{0}};
        for (size_t i = 0; i < 16; i++) {
            ms_train_config_t *cfg = s_task(spec, i);
            cells[cfg->n_hidden - 1][cfg->width - 10]++;
            assert_true(cfg->learning_rate >= 0.001 &&
                        cfg->learning_rate <= 0.002);
            free(cfg);
        }
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++)
                assert_int_equal(cells[r][c], 1);
        snprintf(first[seed], sizeof first[seed], "%s",
                 ms_spec_task_json(spec, 0));
        //  Reproducible.
        ms_spec_t *again = s_parse(text);
        assert_string_equal(ms_spec_canonical(spec, NULL),
                            ms_spec_canonical(again, NULL));
        ms_spec_destroy(&again);
        ms_spec_destroy(&spec);
    }
    //  The seed shifts the points.
    assert_string_not_equal(first[0], first[1]);
}

//  One spec that must be refused.
typedef struct {
    const char *text;  // the spec
    int rc;            // expected status
    const char *where; // expected diag.where
    const char *why;   // a part of diag.reason
} s_bad_case_t;

//  Every W&B distribution in a random sweep of built-in parameters (and
//  the normal family under sobol): accepted, each draw in the law's range
//  and on its lattice, and the sample's mean where the law's mean is
//  known (400 draws: bounds of about 4 standard errors).
typedef struct {
    const char *param; // parameter and its law, as YAML flow text
    double lo, hi;     // every draw within [lo, hi]
    double q;          // draws are multiples of q (0: any)
    double mean, tol;  // the sample mean is mean +- tol (tol 0: unchecked)
    bool log_mean;     // the mean of log(draw) instead
} s_law_case_t;

static double
s_param_of(const ms_train_config_t *cfg, const char *name)
{
    if (strcmp(name, "learning_rate") == 0)
        return cfg->learning_rate;
    if (strcmp(name, "dropout") == 0)
        return cfg->dropout;
    if (strcmp(name, "momentum") == 0)
        return cfg->momentum;
    if (strcmp(name, "l2") == 0)
        return cfg->l2;
    if (strcmp(name, "width") == 0)
        return cfg->width;
    if (strcmp(name, "batch_size") == 0)
        return cfg->batch_size;
    if (strcmp(name, "epochs") == 0)
        return cfg->epochs;
    fail_msg("no accessor for %s", name);
    return 0;
}

static void
test_wandb_distributions(void **state)
{
    (void) state;
    const s_law_case_t cases[] = {
        {"width: {distribution: int_uniform, min: 8, max: 16}", 8, 16, 1, 12,
         0.5, false},
        {"width: {min: 8, max: 16}", 8, 16, 1, 12, 0.5, false},
        {"dropout: {distribution: uniform, min: 0.1, max: 0.3}", 0.1, 0.3, 0,
         0.2, 0.006, false},
        {"dropout: {min: 0.1, max: 0.3}", 0.1, 0.3, 0, 0.2, 0.006, false},
        {"batch_size: {distribution: q_uniform, min: 16, max: 512, q: 16}", 16,
         512, 16, 264, 15, false},
        {"learning_rate: {distribution: log_uniform, min: -9.2103, max: "
         "-2.3026}",
         1e-4, 0.1, 0, -5.7565, 0.4, true},
        {"learning_rate: {distribution: log_uniform_values, min: 0.0001, max: "
         "0.1}",
         1e-4, 0.1, 0, -5.7565, 0.4, true},
        {"batch_size: {distribution: q_log_uniform, min: 2.7726, max: 6.2383, "
         "q: 8}",
         16, 512, 8, 0, 0, false},
        {"batch_size: {distribution: q_log_uniform_values, min: 16, max: 512, "
         "q: 16}",
         16, 512, 16, 0, 0, false},
        {"l2: {distribution: inv_log_uniform, min: 2.3026, max: 9.2103}", 1e-4,
         0.1, 0, -5.7565, 0.4, true},
        {"l2: {distribution: inv_log_uniform_values, min: 0.0001, max: 0.1}",
         1e-4, 0.1, 0, -5.7565, 0.4, true},
        {"momentum: {distribution: normal, mu: 0.9, sigma: 0.01}", 0.8, 1.0, 0,
         0.9, 0.002, false},
        {"momentum: {mu: 0.9, sigma: 0.01}", 0.8, 1.0, 0, 0.9, 0.002, false},
        {"epochs: {distribution: q_normal, mu: 10, sigma: 2, q: 1}", 1, 20, 1,
         10, 0.4, false},
        {"learning_rate: {distribution: log_normal, mu: -6.9, sigma: 0.5}",
         1e-5, 1, 0, -6.9, 0.1, true},
        {"width: {distribution: q_log_normal, mu: 4.16, sigma: 0.3, q: 1}", 1,
         1000, 1, 4.16, 0.06, true},
        {"dropout: {distribution: beta, a: 2, b: 5}", 0, 1, 0, 2.0 / 7, 0.02,
         false},
        {"dropout: {a: 2, b: 5}", 0, 1, 0, 2.0 / 7, 0.02, false},
        {"dropout: {distribution: q_beta, a: 2, b: 5, q: 0.05}", 0, 0.95, 0.05,
         2.0 / 7, 0.02, false},
    };
    for (int sobol = 0; sobol < 2; sobol++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            if (sobol && (strstr(cases[c].param, "beta") ||
                          strstr(cases[c].param, "a: 2")))
                continue; // beta has no quantile: refused under sobol
            char text[512];
            snprintf(text, sizeof text,
                     "dataset: fashion-mnist\nmethod: %s\nrun_cap: 400\n"
                     "sweep_seed: 5\nparameters:\n  %s\n",
                     sobol ? "sobol" : "random", cases[c].param);
            ms_spec_t *spec = NULL;
            ms_diag_t diag = {{0}, {0}};
            if (ms_spec_parse(text, strlen(text), NULL, &spec, &diag) != MS_OK)
                fail_msg("%s: %s: %s", cases[c].param, diag.where, diag.reason);
            char name[32];
            sscanf(cases[c].param, "%31[a-z_0-9]", name);
            size_t n = ms_spec_task_count(spec);
            //  Quantised and integer laws repeat values; duplicates drop.
            assert_true(n >= 8);
            double sum = 0;
            for (size_t i = 0; i < n; i++) {
                ms_train_config_t *cfg = s_task(spec, i);
                double v = s_param_of(cfg, name);
                free(cfg);
                if (!(v >= cases[c].lo && v <= cases[c].hi))
                    fail_msg("%s: draw %g outside [%g, %g]", cases[c].param, v,
                             cases[c].lo, cases[c].hi);
                if (cases[c].q > 0) {
                    double k = v / cases[c].q;
                    if (fabs(k - round(k)) > 1e-9)
                        fail_msg("%s: draw %g is not a multiple of %g",
                                 cases[c].param, v, cases[c].q);
                }
                sum += cases[c].log_mean ? log(v) : v;
            }
            //  The mean is only a fair check without de-duplication.
            if (cases[c].tol > 0 && n == 400 &&
                fabs(sum / (double) n - cases[c].mean) > cases[c].tol)
                fail_msg("%s (%s): mean %g, expected %g +- %g", cases[c].param,
                         sobol ? "sobol" : "random", sum / (double) n,
                         cases[c].mean, cases[c].tol);
            ms_spec_destroy(&spec);
        }
}

//  Categorical with probabilities: the counts follow them.
static void
test_categorical_probabilities(void **state)
{
    (void) state;
    const char *text = "dataset: fashion-mnist\nmethod: random\nrun_cap: 400\n"
                       "parameters:\n"
                       "  activation: {values: [relu, tanh], probabilities: "
                       "[0.8, 0.2]}\n"
                       "  seed: {distribution: int_uniform, min: 1, max: "
                       "1000000000}\n";
    ms_spec_t *spec = s_parse(text);
    size_t n = ms_spec_task_count(spec), relu = 0;
    assert_int_equal(n, 400);
    for (size_t i = 0; i < n; i++) {
        ms_train_config_t *cfg = s_task(spec, i);
        relu += cfg->activation == MS_ACTIVATION_RELU;
        free(cfg);
    }
    //  Binomial(400, 0.8): mean 320, sd 8.
    if (relu < 288 || relu > 352)
        fail_msg("%zu of 400 draws relu, expected about 320", relu);
    ms_spec_destroy(&spec);
}

static void
test_errors_name_key_path(void **state)
{
    (void) state;
    static const s_bad_case_t cases[] = {
        {"dataset: fashion-mnist\nparameters:\n  width: {values: []}\n",
         MS_ERR_INVALID, "parameters.width.values", "empty list (line 3)"},
        {"dataset: fashion-mnist\nparameters:\n"
         "  activation: {values: [relu, tanh, rleu]}\n",
         MS_ERR_INVALID, "parameters.activation.values[2]",
         "unknown activation 'rleu' (expected one of relu, leaky_relu, elu, "
         "selu, gelu, tanh, sigmoid, linear)"},
        {"dataset: fashion-mnist\nparameters:\n  width: {values: [64, 0]}\n",
         MS_ERR_INVALID, "parameters.width.values[1]", "1..65536"},
        {"dataset: fashion-mnist\nparameters:\n  width: {values: [64, x]}\n",
         MS_ERR_INVALID, "parameters.width.values[1]", "must be an integer"},
        {"dataset: fashion-mnist\nparameters:\n  dropout: {value: 1.5}\n",
         MS_ERR_INVALID, "parameters.dropout.value", "[0, 1)"},
        {"dataset: fashion-mnist\nparameters:\n"
         "  learning_rate: {distribution: uniform, min: 0.1, max: 0.2}\n",
         MS_ERR_INVALID, "parameters.learning_rate.distribution",
         "cannot be used with method: grid"},
        {"dataset: fashion-mnist\nparameters:\n  widht: {value: 3}\n",
         MS_ERR_INVALID, "parameters.widht", "unknown parameter 'widht'"},
        {"dataset: fashion-mnist\nparameters:\n  width: {vals: [3]}\n",
         MS_ERR_INVALID, "parameters.width.vals", "unknown key"},
        {"dataset: fashion-mnist\nparameters:\n  width: 3\n", MS_ERR_INVALID,
         "parameters.width", "must be a mapping"},
        {"dataset: fashion-mnist\nparameters:\n"
         "  width: {value: 3, values: [3]}\n",
         MS_ERR_INVALID, "parameters.width", "only one of"},
        {"dataset: fashion-mnist\nparameters:\n"
         "  hidden_sizes: {values: [[10], [10, x]]}\n",
         MS_ERR_INVALID, "parameters.hidden_sizes.values[1]",
         "hidden_sizes[1]"},
        {"dataset: fashion-mnist\nparameters:\n"
         "  hidden_sizes: {values: [[10]]}\n  width: {value: 5}\n",
         MS_ERR_INVALID, "parameters.hidden_sizes", "not both"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  width: {distribution: uniform, min: 1, max: 9}\n",
         MS_ERR_INVALID, "parameters.width.distribution", "int_uniform"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  learning_rate: {distribution: normal, min: 1, max: 9}\n",
         MS_ERR_INVALID, "parameters.learning_rate.min",
         "does not go with distribution normal"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  learning_rate: {distribution: gaussian, mu: 1}\n",
         MS_ERR_INVALID, "parameters.learning_rate.distribution",
         "unknown distribution 'gaussian'"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  width: {distribution: normal, mu: 64, sigma: 8}\n",
         MS_ERR_INVALID, "parameters.width.distribution",
         "normal gives non-integer values but width is an integer"},
        {"dataset: fashion-mnist\nmethod: sobol\nrun_cap: 3\nparameters:\n"
         "  dropout: {distribution: beta, a: 2, b: 5}\n",
         MS_ERR_INVALID, "parameters.dropout.distribution",
         "use method random"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  activation: {distribution: uniform, min: 0, max: 1}\n",
         MS_ERR_INVALID, "parameters.activation.distribution",
         "activation is not numeric"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  activation: {values: [relu, tanh], probabilities: [0.5, 0.4]}\n",
         MS_ERR_INVALID, "parameters.activation.probabilities", "sum to 0.9"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  dropout: {distribution: log_uniform, min: -3, max: 1}\n",
         MS_ERR_INVALID, "parameters.dropout.max", "[0, 1)"},
        {"dataset: fashion-mnist\nmethod: random\nrun_cap: 3\nparameters:\n"
         "  learning_rate: {distribution: uniform, min: 0.5, max: 0.1}\n",
         MS_ERR_INVALID, "parameters.learning_rate.min",
         "min 0.5 is above max 0.1"},
        {"dataset: fashion-mnist\nmethod: random\nparameters:\n"
         "  width: {values: [1, 2]}\n",
         MS_ERR_INVALID, "run_cap", "required for method random"},
        {"dataset: fashion-mnist\nmethod: bayes\n", MS_ERR_UNSUPPORTED,
         "method", "method: bayes is not yet supported"},
        {"dataset: fashion-mnist\nmethod: hyperband\n", MS_ERR_INVALID,
         "method", "unknown method 'hyperband'"},
        {"dataset: fashion-mnist\nearly_terminate: {type: hyperband}\n",
         MS_ERR_UNSUPPORTED, "early_terminate", "not yet supported"},
        {"dataset: fashion-mnist\ncolour: blue\n", MS_ERR_INVALID, "colour",
         "unknown key"},
        {"dataset: imagenet\n", MS_ERR_INVALID, "dataset",
         "unknown dataset 'imagenet'"},
        {"dataset: {train: a.csv}\n", MS_ERR_INVALID, "dataset.test",
         "needs train and test"},
        {"dataset: {train: a.csv, test: b.csv, labels: y}\n", MS_ERR_INVALID,
         "dataset.labels",
         "unknown key (expected train, test, file, label, "
         "missing, categorical, split)"},
        {"dataset: {train: a.csv, test: b.csv, missing: drop}\n",
         MS_ERR_INVALID, "dataset.missing", "must be error, zero or mean"},
        {"dataset: {train: a.csv, test: b.csv, missing: [zero]}\n",
         MS_ERR_INVALID, "dataset.missing", "must be error, zero or mean"},
        {"dataset: {train: a.csv, test: b.csv, categorical: colour}\n",
         MS_ERR_INVALID, "dataset.categorical",
         "must be a list of column "
         "names"},
        {"dataset: {train: a.csv, test: b.csv, categorical: [a, a]}\n",
         MS_ERR_INVALID, "dataset.categorical[1]", "'a' is listed twice"},
        {"dataset: {train: a.csv, test: b.csv, categorical: [[a]]}\n",
         MS_ERR_INVALID, "dataset.categorical[0]", "must be a column name"},
        {"dataset: {train: a.csv, test: b.csv, label: species, categorical: "
         "[species]}\n",
         MS_ERR_INVALID, "dataset.categorical",
         "'species' is the label "
         "column"},
        {"dataset: {train: a.csv, test: b.csv, label: -1}\n", MS_ERR_INVALID,
         "dataset.label", "must be a column name or a 0-based column index"},
        {"dataset: {file: a.csv, split: 1.2}\n", MS_ERR_INVALID,
         "dataset.split", "must be a fraction between 0 and 1"},
        {"dataset: {file: a.csv, split: 0}\n", MS_ERR_INVALID, "dataset.split",
         "must be a fraction between 0 and 1"},
        {"dataset: {file: a.csv, split: lots}\n", MS_ERR_INVALID,
         "dataset.split", "must be a number"},
        {"dataset: {train: a.csv, test: b.csv, split: 0.2}\n", MS_ERR_INVALID,
         "dataset.split", "give dataset.file instead of train and test"},
        {"dataset: {file: a.csv, train: b.csv}\n", MS_ERR_INVALID,
         "dataset.file", "give either file"},
        {"name: x\n", MS_ERR_INVALID, "dataset", "missing"},
        {"dataset: fashion-mnist\nrun_cap: many\n", MS_ERR_INVALID, "run_cap",
         "must be an integer"},
        {"dataset: fashion-mnist\nrun_cap: 0\n", MS_ERR_INVALID, "run_cap",
         ">= 1"},
        {"dataset: fashion-mnist\nname: [a, b]\n", MS_ERR_INVALID, "name",
         "must be a string"},
        {"dataset: fashion-mnist\nmetric: {name: speed}\n", MS_ERR_INVALID,
         "metric.name", "unknown metric 'speed'"},
        {"dataset: fashion-mnist\nmetric: {name: val_loss, goal: up}\n",
         MS_ERR_INVALID, "metric.goal", "unknown goal"},
        {"dataset: fashion-mnist\nverify: {replicas: 0}\n", MS_ERR_INVALID,
         "verify.replicas", "1..64"},
        {"dataset: fashion-mnist\nverify: {quorum: 2}\n", MS_ERR_INVALID,
         "verify.quorum", "unknown key"},
        {"dataset: fashion-mnist\nkeep_weights: some\n", MS_ERR_INVALID,
         "keep_weights", "unknown value 'some'"},
        {"dataset: fashion-mnist\ndataset: mnist\n", MS_ERR_INVALID, "dataset",
         "duplicate key"},
        {"- 1\n- 2\n", MS_ERR_INVALID, "", "must be a mapping"},
        {"", MS_ERR_INVALID, "", "empty"},
        {"dataset: fashion-mnist\nparameters:\n"
         "  learning_rate: {value: .nan}\n",
         MS_ERR_INVALID, "parameters.learning_rate.value", "NaN"},
        {"dataset: fashion-mnist\nparameters:\n"
         "  early_stopping: {value: 1}\n",
         MS_ERR_INVALID, "parameters.early_stopping.value", "true or false"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ms_spec_t *spec = NULL;
        ms_diag_t diag = {{0}, {0}};
        int rc = ms_spec_parse(cases[i].text, strlen(cases[i].text), NULL,
                               &spec, &diag);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d, expected %d (%s: %s)", i, rc,
                     cases[i].rc, diag.where, diag.reason);
        assert_null(spec);
        if (strcmp(diag.where, cases[i].where) != 0)
            fail_msg("case %zu: where '%s', expected '%s' (%s)", i, diag.where,
                     cases[i].where, diag.reason);
        if (!strstr(diag.reason, cases[i].why))
            fail_msg("case %zu: reason '%s' lacks '%s'", i, diag.reason,
                     cases[i].why);
    }
}

static void
test_yaml_syntax_error(void **state)
{
    (void) state;
    const char *text = "dataset: fashion-mnist\nparameters:\n"
                       "  width: {values: [1, 2}\n";
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_spec_parse(text, strlen(text), NULL, &spec, &diag),
                     MS_ERR_INVALID);
    assert_null(spec);
    assert_non_null(strstr(diag.where, "line 3, column "));
    assert_true(strlen(diag.reason) > 0);
    //  A tab in indentation, another libyaml error.
    text = "dataset: fashion-mnist\nparameters:\n\twidth: {value: 1}\n";
    assert_int_equal(ms_spec_parse(text, strlen(text), NULL, &spec, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "line 3"));
}

static void
test_wandb_keys_warn(void **state)
{
    (void) state;
    const char *text = "project: fmnist\n"
                       "entity: lab\n"
                       "command: [python, train.py]\n"
                       "description: a test\n"
                       "dataset: fashion-mnist\n"
                       "parameters:\n  width: {values: [8, 16]}\n";
    ms_spec_t *spec = s_parse(text);
    assert_int_equal(ms_spec_task_count(spec), 2);
    assert_int_equal(ms_spec_warning_count(spec), 4);
    assert_non_null(strstr(ms_spec_warning(spec, 0), "project: ignored"));
    //  A command without a program has nothing to run.
    assert_non_null(
        strstr(ms_spec_warning(spec, 2), "command: ignored without program"));
    assert_null(ms_spec_warning(spec, 4));
    assert_null(ms_spec_program(spec));
    //  Ignored keys do not change the sweep.
    ms_spec_t *plain =
        s_parse("dataset: fashion-mnist\nparameters:\n  width: {values: [8, "
                "16]}\n");
    assert_true(ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(plain)));
    ms_spec_destroy(&spec);
    ms_spec_destroy(&plain);
}

//  --------------------------------------------------------------------------
//  Parse text, asserting failure with code RC at key path WHERE; the
//  reason contains WHY.

static void
s_refused(const char *text, int rc, const char *where, const char *why)
{
    ms_spec_t *spec = NULL;
    ms_diag_t diag = {{0}, {0}};
    int got = ms_spec_parse(text, strlen(text), NULL, &spec, &diag);
    if (got != rc || strcmp(diag.where, where) != 0 ||
        !strstr(diag.reason, why))
        fail_msg("'%s': got %d at '%s': %s", text, got, diag.where,
                 diag.reason);
    assert_null(spec);
}

//  A W&B sweep file for a program (the schema of W&B's documentation, no
//  key of ours): free parameter names, no dataset, its metric; the ids
//  wait for the program's blob, which they cover; the canonical text
//  loads back to the same sweep with the same program.
static void
test_program_sweep(void **state)
{
    (void) state;
    const char *text = "program: train.py\n"
                       "method: random\n"
                       "run_cap: 12\n"
                       "metric: {name: val_loss, goal: minimize}\n"
                       "parameters:\n"
                       "  learning_rate: {distribution: log_uniform_values,"
                       " min: 0.0001, max: 0.1}\n"
                       "  optimizer: {values: [adam, sgd]}\n"
                       "  hidden-units: {distribution: q_log_uniform_values,"
                       " min: 32, max: 256, q: 1}\n";
    ms_spec_t *spec = s_parse(text);
    const ms_spec_program_t *prog = ms_spec_program(spec);
    assert_non_null(prog);
    assert_string_equal(prog->path, "train.py");
    assert_null(prog->command);
    assert_int_equal(prog->resources.cpus, 1);
    assert_int_equal(prog->resources.gpus, 0);
    assert_int_equal(prog->resources.memory_mb, 0);
    assert_string_equal(ms_spec_metric(spec)->name, "val_loss");
    assert_false(ms_spec_metric(spec)->maximize);
    assert_int_equal(ms_spec_keep_weights(spec), MS_KEEP_WEIGHTS_NONE);
    assert_int_equal(ms_spec_task_count(spec), 12);
    assert_false(ms_spec_ids_ready(spec));
    assert_null(ms_spec_sweep_id(spec));
    ms_train_config_t cfg;
    assert_int_equal(ms_spec_task_config(spec, 0, &cfg), MS_ERR_INVALID);
    for (size_t i = 0; i < 12; i++) {
        json_t *task = json_loads(ms_spec_task_json(spec, i), 0, NULL);
        assert_non_null(task);
        assert_int_equal(json_object_size(task), 3);
        double lr = json_real_value(json_object_get(task, "learning_rate"));
        assert_true(lr >= 0.0001 && lr <= 0.1);
        const char *opt = json_string_value(json_object_get(task, "optimizer"));
        assert_true(strcmp(opt, "adam") == 0 || strcmp(opt, "sgd") == 0);
        //  A q law with an integer q draws integers.
        json_t *units = json_object_get(task, "hidden-units");
        assert_true(json_is_integer(units));
        assert_true(json_integer_value(units) >= 32 &&
                    json_integer_value(units) <= 256);
        json_decref(task);
    }
    ms_hash_t blob_a, blob_b;
    memset(&blob_a, 0xa1, sizeof blob_a);
    memset(&blob_b, 0xb2, sizeof blob_b);
    assert_int_equal(ms_spec_set_program_blob(spec, &blob_a), MS_OK);
    assert_true(ms_spec_ids_ready(spec));
    ms_hash_t sweep_a = *ms_spec_sweep_id(spec),
              task_a = *ms_spec_task_id(spec, 0);
    //  An edited script (another blob) is another sweep of other tasks.
    assert_int_equal(ms_spec_set_program_blob(spec, &blob_b), MS_OK);
    assert_false(ms_hash_equal(&sweep_a, ms_spec_sweep_id(spec)));
    assert_false(ms_hash_equal(&task_a, ms_spec_task_id(spec, 0)));
    size_t len = 0;
    const char *canon = ms_spec_canonical(spec, &len);
    assert_non_null(strstr(canon, "\"program\":{\"blob\":\"b2b2"));
    assert_null(strstr(canon, "\"dataset\""));
    ms_spec_t *loaded = NULL;
    ms_diag_t diag = {{0}, {0}};
    assert_int_equal(ms_spec_load_canonical(canon, len, &loaded, &diag), MS_OK);
    assert_true(
        ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(loaded)));
    const ms_spec_program_t *back = ms_spec_program(loaded);
    assert_non_null(back);
    assert_string_equal(back->path, "train.py");
    assert_true(ms_hash_equal(&back->blob, &blob_b));
    assert_string_equal(ms_spec_metric(loaded)->name, "val_loss");
    for (size_t i = 0; i < 12; i++) {
        assert_string_equal(ms_spec_task_json(spec, i),
                            ms_spec_task_json(loaded, i));
        assert_true(ms_hash_equal(ms_spec_task_id(spec, i),
                                  ms_spec_task_id(loaded, i)));
    }
    ms_spec_destroy(&loaded);
    //  The ids do not come from anything but the blob: the same text and
    //  blob give the same sweep.
    ms_spec_t *again = s_parse(text);
    assert_int_equal(ms_spec_set_program_blob(again, &blob_b), MS_OK);
    assert_true(ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(again)));
    ms_spec_destroy(&again);
    ms_spec_destroy(&spec);
    //  Not a program sweep: no blob to set.
    ms_spec_t *plain = s_parse("dataset: fashion-mnist\n");
    assert_int_equal(ms_spec_set_program_blob(plain, &blob_a), MS_ERR_INVALID);
    ms_spec_destroy(&plain);
}

//  Nested parameters, as W&B nests them: each leaf one dimension, the
//  config nested; command and resources kept in the canonical form; a
//  file dataset's hashes and the blob are both needed for the ids.
static void
test_program_nested(void **state)
{
    (void) state;
    const char *text = "program: src/train.py\n"
                       "command:\n"
                       "  - ${env}\n"
                       "  - ${interpreter}\n"
                       "  - ${program}\n"
                       "  - --fast\n"
                       "  - ${args_no_hyphens}\n"
                       "resources: {cpus: 2, gpus: 1, memory_mb: 8192}\n"
                       "dataset: {train: /nonexistent/a.csv, test: "
                       "/nonexistent/b.csv}\n"
                       "parameters:\n"
                       "  epochs: {values: [1, 2]}\n"
                       "  optimizer:\n"
                       "    parameters:\n"
                       "      lr: {values: [0.1, 0.01]}\n"
                       "      momentum: {value: 0.9}\n";
    ms_spec_t *spec = s_parse(text);
    const ms_spec_program_t *prog = ms_spec_program(spec);
    assert_int_equal(prog->resources.cpus, 2);
    assert_int_equal(prog->resources.gpus, 1);
    assert_int_equal(prog->resources.memory_mb, 8192);
    assert_int_equal(json_array_size(prog->command), 5);
    assert_int_equal(ms_spec_task_count(spec), 4);
    assert_string_equal(ms_spec_task_json(spec, 0),
                        "{\"epochs\":1,\"optimizer\":{\"lr\":0.1,"
                        "\"momentum\":0.9}}");
    assert_string_equal(ms_spec_task_json(spec, 3),
                        "{\"epochs\":2,\"optimizer\":{\"lr\":0.01,"
                        "\"momentum\":0.9}}");
    ms_hash_t h;
    memset(&h, 7, sizeof h);
    assert_int_equal(ms_spec_set_program_blob(spec, &h), MS_OK);
    assert_false(ms_spec_ids_ready(spec)); // the files are not hashed yet
    assert_int_equal(ms_spec_set_dataset_hashes(spec, &h, &h), MS_OK);
    assert_true(ms_spec_ids_ready(spec));
    size_t len = 0;
    const char *canon = ms_spec_canonical(spec, &len);
    assert_non_null(strstr(canon, "\"resources\":{\"cpus\":2,\"gpus\":1,"
                                  "\"memory_mb\":8192}"));
    assert_non_null(strstr(canon, "\"command\":[\"${env}\""));
    ms_spec_t *loaded = NULL;
    ms_diag_t diag = {{0}, {0}};
    assert_int_equal(ms_spec_load_canonical(canon, len, &loaded, &diag), MS_OK);
    assert_true(
        ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(loaded)));
    assert_int_equal(ms_spec_program(loaded)->resources.gpus, 1);
    assert_int_equal(json_array_size(ms_spec_program(loaded)->command), 5);
    ms_spec_destroy(&loaded);
    ms_spec_destroy(&spec);
}

//  Bad program sweeps: one clear error each, with the key path.
static void
test_program_errors(void **state)
{
    (void) state;
    s_refused("program: ../train.py\n", MS_ERR_INVALID, "program",
              "not a path inside");
    s_refused("program: /usr/bin/train.py\n", MS_ERR_INVALID, "program",
              "not a path inside");
    s_refused("program: a/./b.py\n", MS_ERR_INVALID, "program",
              "not a path inside");
    s_refused("program: [a]\n", MS_ERR_INVALID, "program", "");
    s_refused("program: t.py\ncommand:\n  - ${env}\n  - ${nonsense}\n",
              MS_ERR_INVALID, "command[1]", "");
    s_refused("program: t.py\ncommand: ${args}\n", MS_ERR_INVALID, "command",
              "a list");
    s_refused("program: t.py\ncommand: [python, 3]\n", MS_ERR_INVALID,
              "command[1]", "must be a string");
    s_refused("program: t.py\nresources: {cpus: 0}\n", MS_ERR_INVALID,
              "resources.cpus", "out of range");
    s_refused("program: t.py\nresources: {disk: 1}\n", MS_ERR_INVALID,
              "resources.disk", "unknown key");
    s_refused("dataset: fashion-mnist\nresources: {cpus: 2}\n", MS_ERR_INVALID,
              "resources", "only for program sweeps");
    s_refused("program: t.py\nkeep_weights: best\n", MS_ERR_INVALID,
              "keep_weights", "no weights");
    s_refused("program: t.py\nparameters:\n  opt:\n    parameters:\n"
              "      lr: {value: 1}\n    values: [1]\n",
              MS_ERR_INVALID, "parameters.opt", "only `parameters`");
    s_refused("program: t.py\nparameters:\n  a.b: {value: 1}\n"
              "  a:\n    parameters:\n      b: {value: 2}\n",
              MS_ERR_INVALID, "parameters", "given twice");
    s_refused("program: t.py\nmethod: grid\nparameters:\n"
              "  x: {distribution: uniform, min: 0, max: 1}\n",
              MS_ERR_INVALID, "parameters.x.distribution", "grid");
    s_refused("program: t.py\nparameters:\n  opt:\n    parameters:\n"
              "      lr: {values: []}\n",
              MS_ERR_INVALID, "parameters.opt.parameters.lr.values", "");
    //  The built-in trainer's names and metrics are still checked.
    s_refused("dataset: fashion-mnist\nparameters:\n  hidden-units: "
              "{value: 1}\n",
              MS_ERR_INVALID, "parameters.hidden-units", "unknown parameter");
    s_refused("dataset: fashion-mnist\nmetric: {name: my_score}\n",
              MS_ERR_INVALID, "metric.name", "unknown metric");
    //  A canonical program sweep whose program entry is damaged.
    ms_spec_t *spec = s_parse("program: t.py\n");
    ms_hash_t h;
    memset(&h, 1, sizeof h);
    assert_int_equal(ms_spec_set_program_blob(spec, &h), MS_OK);
    size_t len = 0;
    char *canon = strdup(ms_spec_canonical(spec, &len));
    char *path = strstr(canon, "\"path\":\"t.py\"");
    assert_non_null(path);
    memcpy(path + 8, "/t", 2); // "/t.py" is not inside the folder
    ms_spec_t *loaded = NULL;
    ms_diag_t diag = {{0}, {0}};
    assert_int_equal(ms_spec_load_canonical(canon, len, &loaded, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "program");
    assert_null(loaded);
    free(canon);
    ms_spec_destroy(&spec);
}

//  The combination rules of ms_train_config_check, in a spec: the
//  residual keys with a plain network and batch norm over one row are
//  refused with the key's path; a residual sweep may still set them
//  with {value: ...} (judged in a residual network); warm-up longer than
//  training gets one warning for all its tasks.
static void
test_depth_combinations(void **state)
{
    (void) state;
    ms_spec_t *spec = NULL;
    ms_diag_t diag = {{0}, {0}};
    const char *plain_rezero = "dataset: fashion-mnist\nparameters:\n"
                               "  residual_scale: {value: rezero}\n";
    assert_int_equal(
        ms_spec_parse(plain_rezero, strlen(plain_rezero), NULL, &spec, &diag),
        MS_ERR_INVALID);
    assert_null(spec);
    assert_string_equal(diag.where, "parameters.residual_scale");
    assert_non_null(strstr(diag.reason, "architecture: plain"));
    const char *plain_blocks = "dataset: fashion-mnist\nparameters:\n"
                               "  architecture: {values: [plain, residual]}\n"
                               "  block_layers: {value: 2}\n";
    assert_int_equal(
        ms_spec_parse(plain_blocks, strlen(plain_blocks), NULL, &spec, &diag),
        MS_ERR_INVALID);
    assert_string_equal(diag.where, "parameters.block_layers");
    const char *bn1 = "dataset: fashion-mnist\nparameters:\n"
                      "  norm: {value: batch}\n"
                      "  batch_size: {values: [32, 1]}\n";
    assert_int_equal(ms_spec_parse(bn1, strlen(bn1), NULL, &spec, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "parameters.batch_size");
    assert_non_null(strstr(diag.reason, "norm: batch needs batch_size >= 2"));

    spec = s_parse("dataset: fashion-mnist\nparameters:\n"
                   "  architecture: {value: residual}\n"
                   "  hidden_layers: {value: 3}\n"
                   "  residual_scale: {value: rezero}\n"
                   "  block_layers: {value: 2}\n"
                   "  norm: {values: [none, layer, batch]}\n");
    assert_int_equal(ms_spec_task_count(spec), 3);
    assert_int_equal(ms_spec_warning_count(spec), 0);
    ms_spec_destroy(&spec);

    spec = s_parse("dataset: fashion-mnist\nparameters:\n"
                   "  epochs: {value: 1}\n"
                   "  warmup_epochs: {values: [0.5, 5, 100]}\n");
    assert_int_equal(ms_spec_task_count(spec), 3);
    assert_int_equal(ms_spec_warning_count(spec), 1);
    assert_string_equal(ms_spec_warning(spec, 0),
                        "warmup_epochs 5 is more than epochs 1 (2 tasks): "
                        "the learning rate never leaves warm-up");
    ms_spec_destroy(&spec);
}

static void
test_duplicates_dropped(void **state)
{
    (void) state;
    ms_spec_t *spec = s_parse("dataset: fashion-mnist\nparameters:\n"
                              "  width: {values: [8, 16, 8]}\n"
                              "  learning_rate: {values: [0.1, 0.1]}\n");
    assert_int_equal(ms_spec_task_count(spec), 2);
    assert_int_equal(ms_spec_warning_count(spec), 1);
    assert_non_null(strstr(ms_spec_warning(spec, 0), "4 duplicate"));
    s_assert_ids_distinct(spec);
    ms_spec_destroy(&spec);
}

static void
test_limits_and_run_cap(void **state)
{
    (void) state;
    ms_spec_options_t opts;
    ms_spec_options_defaults(&opts);
    assert_int_equal(opts.max_tasks, MS_SPEC_DEFAULT_MAX_TASKS);
    opts.max_tasks = 100;
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    //  The design grid (216) with run_cap 500 exceeds 100 tasks.
    assert_int_equal(ms_spec_parse(s_design_spec, strlen(s_design_spec), &opts,
                                   &spec, &diag),
                     MS_ERR_RANGE);
    assert_null(spec);
    assert_string_equal(diag.where, "parameters");
    //  run_cap truncates the grid in order.
    char *capped = strdup(s_design_spec);
    memcpy(strstr(capped, "run_cap: 500"), "run_cap:  10", 12);
    assert_int_equal(ms_spec_parse(capped, strlen(capped), &opts, &spec, &diag),
                     MS_OK);
    assert_int_equal(ms_spec_task_count(spec), 10);
    ms_spec_t *full = s_parse(s_design_spec);
    for (size_t i = 0; i < 10; i++)
        assert_string_equal(ms_spec_task_json(spec, i),
                            ms_spec_task_json(full, i));
    ms_spec_destroy(&spec);
    ms_spec_destroy(&full);
    free(capped);
    //  A random sweep over the limit.
    const char *big = "dataset: mnist\nmethod: random\nrun_cap: 101\n"
                      "parameters:\n  width: {values: [1, 2]}\n";
    assert_int_equal(ms_spec_parse(big, strlen(big), &opts, &spec, &diag),
                     MS_ERR_RANGE);
    assert_string_equal(diag.where, "run_cap");
}

static void
test_no_parameters_warn(void **state)
{
    (void) state;
    //  parameters: {} (or none) is one task with every default: accepted,
    //  with a warning, as it is rarely what was meant.
    const char *texts[2] = {"dataset: fashion-mnist\nparameters: {}\n",
                            "dataset: fashion-mnist\n"};
    for (int i = 0; i < 2; i++) {
        ms_spec_t *spec = s_parse(texts[i]);
        assert_int_equal(ms_spec_task_count(spec), 1);
        assert_int_equal(ms_spec_warning_count(spec), 1);
        assert_string_equal(ms_spec_warning(spec, 0),
                            "no parameters swept: one task with every "
                            "default");
        ms_spec_destroy(&spec);
    }
    ms_spec_t *spec = s_parse("dataset: fashion-mnist\nparameters:\n"
                              "  width: {value: 8}\n");
    assert_int_equal(ms_spec_warning_count(spec), 0);
    ms_spec_destroy(&spec);
}

static void
test_max_params(void **state)
{
    (void) state;
    ms_spec_options_t opts;
    ms_spec_options_defaults(&opts);
    assert_int_equal(opts.max_params, INT64_C(1) << 31);
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    //  8 x 65536 on 784 inputs, 10 outputs: 785 * 65536 + 7 * 65537 *
    //  65536 + 65537 * 10 parameters (~120 GB of float32).
    const char *huge = "dataset: fashion-mnist\nparameters:\n"
                       "  hidden_sizes: {value: [65536, 65536, 65536, 65536, "
                       "65536, 65536, 65536, 65536]}\n";
    assert_int_equal(ms_spec_parse(huge, strlen(huge), NULL, &spec, &diag),
                     MS_ERR_RANGE);
    assert_null(spec);
    assert_string_equal(diag.where, "parameters.hidden_sizes");
    long long n = 785LL * 65536 + 7LL * 65537 * 65536 + 65537LL * 10;
    char expect[200];
    snprintf(expect, sizeof expect,
             "network has %lld parameters, more than the pool limit "
             "2147483648 (line 3)",
             n);
    assert_string_equal(diag.reason, expect);
    //  A configurable limit: width 100 on 784 inputs is 78500 + 1010.
    const char *small = "dataset: fashion-mnist\nparameters:\n"
                        "  width: {values: [10, 100]}\n";
    opts.max_params = 79510 - 1;
    assert_int_equal(ms_spec_parse(small, strlen(small), &opts, &spec, &diag),
                     MS_ERR_RANGE);
    assert_string_equal(diag.where, "parameters.width");
    assert_non_null(strstr(diag.reason, "network has 79510 parameters"));
    opts.max_params = 79510;
    assert_int_equal(ms_spec_parse(small, strlen(small), &opts, &spec, &diag),
                     MS_OK);
    ms_spec_destroy(&spec);
    //  File datasets: the input size is unknown, only hidden layers count
    //  (first layer's biases, then 100 x 101 between the two layers).
    const char *files = "dataset: {train: a.csv, test: b.csv}\nparameters:\n"
                        "  hidden_sizes: {value: [100, 100]}\n";
    opts.max_params = 100 + 101 * 100 - 1;
    assert_int_equal(ms_spec_parse(files, strlen(files), &opts, &spec, &diag),
                     MS_ERR_RANGE);
    assert_string_equal(diag.where, "parameters.hidden_sizes");
    opts.max_params = 100 + 101 * 100;
    assert_int_equal(ms_spec_parse(files, strlen(files), &opts, &spec, &diag),
                     MS_OK);
    ms_spec_destroy(&spec);
}

static void
test_canonical_round_trip(void **state)
{
    (void) state;
    ms_spec_t *spec = s_parse(s_design_spec);
    size_t len;
    const char *canon = ms_spec_canonical(spec, &len);
    ms_spec_t *loaded = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_spec_load_canonical(canon, len, &loaded, &diag), MS_OK);
    assert_true(
        ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(loaded)));
    assert_int_equal(ms_spec_task_count(loaded), 216);
    for (size_t i = 0; i < 216; i++) {
        assert_true(ms_hash_equal(ms_spec_task_id(spec, i),
                                  ms_spec_task_id(loaded, i)));
        assert_string_equal(ms_spec_task_json(spec, i),
                            ms_spec_task_json(loaded, i));
    }
    assert_string_equal(ms_spec_name(loaded), "depth-vs-accuracy");
    assert_int_equal(ms_spec_verify(loaded)->replicas, 2);
    assert_int_equal(ms_spec_run_cap(loaded), 500);
    assert_string_equal(ms_spec_dataset(loaded)->name, "fashion-mnist");
    ms_spec_destroy(&loaded);
    //  The dataset object alone, read without the task list.
    json_t *ds = ms_spec_canonical_dataset(canon, len, &diag);
    assert_non_null(ds);
    assert_string_equal(json_string_value(json_object_get(ds, "name")),
                        "fashion-mnist");
    assert_int_equal(json_object_size(ds), 1);
    json_decref(ds);
    //  Not canonical (a space added): refused.
    char *spaced = malloc(len + 2);
    spaced[0] = ' ';
    memcpy(spaced + 1, canon, len + 1);
    assert_int_equal(ms_spec_load_canonical(spaced, len + 1, &loaded, &diag),
                     MS_ERR_INVALID);
    assert_null(loaded);
    assert_null(ms_spec_canonical_dataset(spaced, len + 1, &diag));
    assert_null(ms_spec_canonical_dataset("{\"dataset\":[1]}", 15, &diag));
    assert_string_equal(diag.where, "dataset");
    assert_null(ms_spec_canonical_dataset("{\"dataset\":{\"name\"", 18, &diag));
    assert_null(ms_spec_canonical_dataset(NULL, 0, &diag));
    //  A bad task config is named by its index.
    char *broken = strdup(canon);
    char *at = strstr(broken, "\"width\":64}");
    memcpy(at, "\"width\":-4}", 11);
    assert_int_equal(ms_spec_load_canonical(broken, len, &loaded, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "tasks[0].width");
    //  Not JSON at all.
    assert_int_equal(ms_spec_load_canonical("name: x", 7, &loaded, &diag),
                     MS_ERR_INVALID);
    free(spaced);
    free(broken);
    ms_spec_destroy(&spec);
}

static void
test_file_dataset_ids(void **state)
{
    (void) state;
    char train[] = "/tmp/ms_spec_train_XXXXXX";
    char test[] = "/tmp/ms_spec_test_XXXXXX";
    int fd1 = mkstemp(train), fd2 = mkstemp(test);
    assert_true(fd1 >= 0 && fd2 >= 0);
    assert_int_equal(write(fd1, "label,x\n1,2\n", 12), 12);
    assert_int_equal(write(fd2, "label,x\n0,3\n", 12), 12);
    close(fd1);
    close(fd2);
    char text[512];
    snprintf(text, sizeof text,
             "dataset: {train: %s, test: %s, label: y}\n"
             "parameters:\n  width: {values: [4, 8]}\n",
             train, test);
    ms_spec_t *spec = s_parse(text);
    const ms_spec_dataset_t *ds = ms_spec_dataset(spec);
    assert_false(ds->builtin);
    assert_string_equal(ds->train_path, train);
    assert_string_equal(ds->label, "y");
    //  No ids until the files are hashed.
    assert_false(ms_spec_ids_ready(spec));
    assert_null(ms_spec_sweep_id(spec));
    assert_null(ms_spec_canonical(spec, NULL));
    assert_null(ms_spec_task_id(spec, 0));
    assert_non_null(ms_spec_task_json(spec, 0));
    ms_diag_t diag;
    assert_int_equal(ms_spec_bind_dataset_files(spec, &diag), MS_OK);
    assert_true(ms_spec_ids_ready(spec));
    ms_hash_t h_train;
    ms_hash_bytes("label,x\n1,2\n", 12, &h_train);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h_train, hex);
    char expect[200];
    snprintf(expect, sizeof expect, "\"train\":\"%s\"", hex);
    assert_non_null(strstr(ms_spec_canonical(spec, NULL), expect));
    assert_non_null(strstr(ms_spec_canonical(spec, NULL),
                           "{\"dataset\":{\"label\":\"y\",\"test\":\""));
    size_t clen = 0;
    const char *ctext = ms_spec_canonical(spec, &clen);
    json_t *named = ms_spec_canonical_dataset(ctext, clen, &diag);
    assert_non_null(named);
    assert_null(json_object_get(named, "name")); // files, not a built-in
    assert_string_equal(json_string_value(json_object_get(named, "train")),
                        hex);
    json_decref(named);
    //  Setting the same hashes directly gives the same ids.
    ms_spec_t *other = s_parse(text);
    ms_hash_t h_test;
    ms_hash_bytes("label,x\n0,3\n", 12, &h_test);
    assert_int_equal(ms_spec_set_dataset_hashes(other, &h_train, &h_test),
                     MS_OK);
    assert_true(ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(other)));
    //  Other file content, other sweep.
    h_test.bytes[0] ^= 1;
    assert_int_equal(ms_spec_set_dataset_hashes(other, &h_train, &h_test),
                     MS_OK);
    assert_false(
        ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(other)));
    //  The canonical form loads back, without paths.
    size_t len;
    const char *canon = ms_spec_canonical(spec, &len);
    ms_spec_t *loaded = NULL;
    assert_int_equal(ms_spec_load_canonical(canon, len, &loaded, &diag), MS_OK);
    assert_null(ms_spec_dataset(loaded)->train_path);
    assert_true(ms_spec_dataset(loaded)->hashed);
    assert_true(ms_hash_equal(&ms_spec_dataset(loaded)->train_hash, &h_train));
    assert_int_equal(ms_spec_bind_dataset_files(loaded, &diag), MS_ERR_INVALID);
    //  A missing file is named.
    unlink(test);
    ms_spec_t *missing = s_parse(text);
    assert_int_equal(ms_spec_bind_dataset_files(missing, &diag), MS_ERR_IO);
    assert_string_equal(diag.where, test);
    assert_false(ms_spec_ids_ready(missing));
    //  A built-in dataset has nothing to bind and refuses hashes.
    ms_spec_t *builtin = s_parse(s_sklearn_spec);
    assert_int_equal(ms_spec_bind_dataset_files(builtin, &diag), MS_OK);
    assert_int_equal(ms_spec_set_dataset_hashes(builtin, &h_train, &h_test),
                     MS_ERR_INVALID);
    unlink(train);
    ms_spec_destroy(&spec);
    ms_spec_destroy(&other);
    ms_spec_destroy(&loaded);
    ms_spec_destroy(&missing);
    ms_spec_destroy(&builtin);
}

static void
test_file_dataset_csv_options(void **state)
{
    (void) state;
    char path[] = "/tmp/ms_spec_iris_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a,species\n1,x\n2,y\n", 18), 18);
    close(fd);
    char text[512];
    //  One file, the label by index, means, a categorical column.
    snprintf(text, sizeof text,
             "dataset: {file: %s, label: 1, missing: mean, categorical: "
             "[colour]}\nsweep_seed: 5\nparameters:\n  width: {value: 4}\n",
             path);
    ms_spec_t *spec = s_parse(text);
    const ms_spec_dataset_t *ds = ms_spec_dataset(spec);
    assert_string_equal(ds->train_path, path);
    assert_string_equal(ds->test_path, path);
    assert_int_equal(ds->label_index, 1);
    assert_int_equal(ds->missing, MS_DATASET_MISSING_MEAN);
    assert_int_equal(ds->n_categorical, 1);
    assert_string_equal(ds->categorical[0], "colour");
    assert_true(ds->split == 0.2); // the default with file:
    ms_dataset_csv_options_t o;
    ms_spec_dataset_csv_options(spec, &o);
    assert_int_equal(o.label_index, 1);
    assert_true(o.split == 0.2);
    assert_int_equal(o.split_seed, 5);
    assert_int_equal(o.n_categorical, 1);
    ms_diag_t diag;
    assert_int_equal(ms_spec_bind_dataset_files(spec, &diag), MS_OK);
    const char *canon = ms_spec_canonical(spec, NULL);
    assert_non_null(strstr(canon, "{\"dataset\":{\"categorical\":[\"colour\"],"
                                  "\"label\":1,\"missing\":\"mean\","
                                  "\"split\":0.2,\"test\":\""));
    //  The options are part of the id: another fill, another sweep.
    snprintf(text, sizeof text,
             "dataset: {file: %s, label: 1, missing: zero, categorical: "
             "[colour]}\nsweep_seed: 5\nparameters:\n  width: {value: 4}\n",
             path);
    ms_spec_t *other = s_parse(text);
    assert_int_equal(ms_spec_bind_dataset_files(other, &diag), MS_OK);
    assert_false(
        ms_hash_equal(ms_spec_sweep_id(spec), ms_spec_sweep_id(other)));
    //  Loaded back from canonical form, with the same options.
    size_t len = 0;
    canon = ms_spec_canonical(spec, &len);
    ms_spec_t *loaded = NULL;
    assert_int_equal(ms_spec_load_canonical(canon, len, &loaded, &diag), MS_OK);
    ds = ms_spec_dataset(loaded);
    assert_int_equal(ds->label_index, 1);
    assert_int_equal(ds->missing, MS_DATASET_MISSING_MEAN);
    assert_true(ds->split == 0.2);
    assert_string_equal(ds->categorical[0], "colour");
    //  Workers' objects carry the split's seed.
    json_t *obj = json_object();
    assert_int_equal(ms_spec_dataset_options_json(loaded, true, obj), MS_OK);
    assert_int_equal(json_integer_value(json_object_get(obj, "split_seed")), 5);
    assert_int_equal(ms_spec_dataset_options_from_json(obj, &o, &diag), MS_OK);
    assert_int_equal(o.label_index, 1);
    assert_int_equal(o.split_seed, 5);
    assert_string_equal(o.categorical[0], "colour");
    free((void *) o.categorical);
    json_object_set_new(obj, "missing", json_string("drop"));
    assert_int_equal(ms_spec_dataset_options_from_json(obj, &o, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "dataset.missing");
    json_decref(obj);
    //  A spec without the new keys keeps its canonical dataset (and ids).
    snprintf(text, sizeof text,
             "dataset: {train: %s, test: %s}\nparameters:\n"
             "  width: {value: 4}\n",
             path, path);
    ms_spec_t *plain = s_parse(text);
    assert_int_equal(ms_spec_bind_dataset_files(plain, &diag), MS_OK);
    assert_non_null(strstr(ms_spec_canonical(plain, NULL),
                           "{\"dataset\":{\"label\":\"label\",\"test\":\""));
    canon = ms_spec_canonical(plain, &len);
    json_t *named = ms_spec_canonical_dataset(canon, len, &diag);
    assert_int_equal(json_object_size(named), 3); // label, test, train
    json_decref(named);
    unlink(path);
    ms_spec_destroy(&spec);
    ms_spec_destroy(&other);
    ms_spec_destroy(&loaded);
    ms_spec_destroy(&plain);
}

//  --------------------------------------------------------------------------
//  Read examples/NAME from the source tree (malloc'd, NUL-terminated).

static char *
s_read_example(const char *name)
{
    const char *dir = getenv("MESHSWEEP_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/%s", dir ? dir : "..", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

static void
test_examples_parse(void **state)
{
    (void) state;
    static const struct {
        const char *file;
        size_t n_tasks;
    } examples[] = {
        {"depth-sweep.yaml", 60},
        {"sklearn-grid.yaml", 24},
        {"deep-sweep.yaml", 14},
    };
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        char *text = s_read_example(examples[i].file);
        ms_spec_t *spec = s_parse(text);
        assert_int_equal(ms_spec_task_count(spec), examples[i].n_tasks);
        assert_int_equal(ms_spec_warning_count(spec), 0);
        s_assert_ids_distinct(spec);
        ms_spec_destroy(&spec);
        free(text);
    }
}

//  --------------------------------------------------------------------------
//  Parse text, expecting an error; returns the formatted diag (static).

static const char *
s_parse_fails(const char *text, size_t n, double *seconds)
{
    static char out[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 8];
    ms_spec_t *spec = NULL;
    ms_diag_t diag = {{0}, {0}};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = ms_spec_parse(text, n, NULL, &spec, &diag);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *seconds = (double) (t1.tv_sec - t0.tv_sec) +
               (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_int_not_equal(rc, MS_OK);
    assert_null(spec);
    ms_diag_format(&diag, out, sizeof out);
    return out;
}

//  Hostile texts under the API's 1 MiB: 100,000 nested '[' (libyaml's
//  scanner is quadratic in depth: this took 45 s before the depth
//  check), a "billion laughs" of aliases, an alias inside its own
//  anchor, 100,000 keys with one duplicate at the end. Each is refused
//  with where it is, in well under a second (the bound below is 10x
//  that, for a loaded machine).
static void
test_hostile_texts(void **state)
{
    (void) state;
    double s;
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 1);
    assert_non_null(deep);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = 0;
    const char *e = s_parse_fails(deep, 2 * depth, &s);
    assert_string_equal(e, "line 1, column 65: nested deeper than 64 levels "
                           "(the most a spec may nest)");
    assert_true(s < 5.0);
    // Block style too, and 64 levels are still fine (for the depth check:
    // the spec then fails on what it says, not how deep it is).
    char nested[8192] = "dataset: fashion-mnist\nparameters:\n";
    for (int i = 0; i < 70; i++) {
        size_t len = strlen(nested);
        snprintf(nested + len, sizeof nested - len, "%*sk%d:\n", 2 * i + 2, "",
                 i);
    }
    e = s_parse_fails(nested, strlen(nested), &s);
    assert_non_null(strstr(e, "nested deeper than 64 levels"));
    assert_non_null(strstr(e, "line 66, column 129"));
    memset(deep, '[', 63);
    memset(deep + 63, ']', 63);
    snprintf(deep + 126, 64, "%s", "");
    e = s_parse_fails(deep, 126, &s);
    assert_null(strstr(e, "nested"));
    free(deep);

    // Billion laughs: 10^9 scalars through 9 levels of aliases.
    char laughs[4096] = "dataset: fashion-mnist\nparameters:\n"
                        "  hidden_sizes:\n    values:\n"
                        "      - &a0 [1,1,1,1,1,1,1,1,1,1]\n";
    for (int i = 1; i < 10; i++) {
        size_t len = strlen(laughs);
        len += (size_t) snprintf(laughs + len, sizeof laughs - len,
                                 "      - &a%d [", i);
        for (int k = 0; k < 10; k++)
            len += (size_t) snprintf(laughs + len, sizeof laughs - len,
                                     "%s*a%d", k ? "," : "", i - 1);
        snprintf(laughs + len, sizeof laughs - len, "]\n");
    }
    e = s_parse_fails(laughs, strlen(laughs), &s);
    assert_non_null(strstr(e, "aliases (*name) expand the spec to more than"));
    assert_non_null(strstr(e, "line "));
    assert_true(s < 5.0);
    static const char self_alias[] = "dataset: fashion-mnist\n"
                                     "parameters: &p {width: {values: *p}}\n";
    e = s_parse_fails(self_alias, strlen(self_alias), &s);
    assert_non_null(strstr(e, "alias *p refers to a node that contains it"));
    // A few aliases stay fine.
    ms_spec_t *spec = s_parse("dataset: fashion-mnist\n"
                              "parameters:\n"
                              "  width: {values: &w [16, 32]}\n"
                              "  seed: {values: *w}\n");
    assert_int_equal(ms_spec_task_count(spec), 4);
    ms_spec_destroy(&spec);

    // 100,000 keys, the last one a duplicate of the first: named.
    size_t cap = 100000 * 12 + 100, len = 0;
    char *keys = malloc(cap);
    assert_non_null(keys);
    len +=
        (size_t) snprintf(keys, cap, "dataset: fashion-mnist\nparameters: {");
    for (int i = 0; i < 100000; i++)
        len += (size_t) snprintf(keys + len, cap - len, "k%x: 1, ", i);
    len += (size_t) snprintf(keys + len, cap - len, "k0: 2}\n");
    e = s_parse_fails(keys, len, &s);
    assert_string_equal(e, "parameters.k0: duplicate key (line 2)");
    assert_true(s < 5.0);
    free(keys);

    // A NUL byte inside the text is named with its line, not cut off
    // there (the rest of the spec would be lost silently).
    static const char nul[] = "dataset: fashion-mnist\nname: a\0b\n"
                              "parameters: {width: {value: 8}}\n";
    e = s_parse_fails(nul, sizeof nul - 1, &s);
    assert_string_equal(e, "spec: line 2: a NUL byte (byte 31): a spec is "
                           "YAML text");
    // A second YAML document is refused, not ignored.
    static const char two[] = "dataset: fashion-mnist\n"
                              "parameters: {width: {value: 8}}\n---\n"
                              "dataset: mnist\n";
    e = s_parse_fails(two, sizeof two - 1, &s);
    assert_non_null(strstr(e, "a second YAML document"));
    assert_non_null(strstr(e, "line 3"));
    assert_non_null(strstr(e, "meshsweep submit and meshsweep run take a "
                              "file of several documents, one sweep each"));
    // One document with its markers is fine.
    spec = s_parse("---\ndataset: fashion-mnist\n"
                   "parameters: {width: {value: 8}}\n...\n");
    assert_int_equal(ms_spec_task_count(spec), 1);
    ms_spec_destroy(&spec);
}

//  --------------------------------------------------------------------------
//  Split text, asserting success and n documents.

static ms_spec_document_t *
s_split(const char *text, size_t n)
{
    ms_spec_document_t *docs = NULL;
    size_t n_docs = 0;
    ms_diag_t diag = {{0}, {0}};
    int rc = ms_spec_split_documents(text, strlen(text), &docs, &n_docs, &diag);
    if (rc != MS_OK)
        fail_msg("split failed (%d): %s: %s", rc, diag.where, diag.reason);
    assert_int_equal(n_docs, n);
    assert_non_null(docs);
    for (size_t i = 0; i < n_docs; i++) {
        assert_int_equal(docs[i].number, i + 1);
        assert_true(docs[i].offset + docs[i].length <= strlen(text));
        if (i > 0)
            assert_true(docs[i].offset >=
                        docs[i - 1].offset + docs[i - 1].length);
    }
    return docs;
}

//  --------------------------------------------------------------------------
//  Split text, asserting failure; the diag as "where: reason".

static const char *
s_split_fails(const char *text, size_t n)
{
    static char out[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 8];
    ms_spec_document_t *docs = NULL;
    size_t n_docs = 7;
    ms_diag_t diag = {{0}, {0}};
    assert_int_equal(ms_spec_split_documents(text, n, &docs, &n_docs, &diag),
                     MS_ERR_INVALID);
    assert_null(docs);
    assert_int_equal(n_docs, 0);
    return ms_diag_format(&diag, out, sizeof out);
}

//  --------------------------------------------------------------------------
//  Parse document i of text as ms_spec_document_text gives it.

static ms_spec_t *
s_parse_document(const char *text, const ms_spec_document_t *doc)
{
    size_t len = 0;
    char *one = ms_spec_document_text(text, doc, &len);
    assert_non_null(one);
    assert_int_equal(strlen(one), len);
    ms_spec_t *spec = s_parse(one);
    free(one);
    return spec;
}

//  A file of several sweeps: each document's range parses alone, with
//  its own name, in stream order; "---" in a quoted scalar, a block
//  scalar or a comment does not split; "..." ends a document; offsets
//  are bytes (multi-byte characters before a document).
static void
test_split_documents(void **state)
{
    (void) state;
    static const char two[] = "# how deep: two families\n"
                              "name: plain # --- not a marker\n"
                              "dataset: fashion-mnist\n"
                              "parameters: {width: {value: 8}}\n"
                              "---\n"
                              "name: residual\n"
                              "dataset: fashion-mnist\n"
                              "parameters: {width: {values: [8, 16]}}\n";
    ms_spec_document_t *docs = s_split(two, 2);
    assert_int_equal(docs[0].offset, strlen("# how deep: two families\n"));
    assert_int_equal(docs[0].line, 2);
    assert_int_equal(docs[1].line, 5);
    assert_memory_equal(two + docs[1].offset, "---\nname: residual", 18);
    assert_int_equal(docs[1].offset + docs[1].length, strlen(two));
    //  The range alone, as it is, is one spec.
    ms_spec_t *spec = NULL;
    ms_diag_t diag = {{0}, {0}};
    assert_int_equal(
        ms_spec_parse(two + docs[1].offset, docs[1].length, NULL, &spec, &diag),
        MS_OK);
    assert_string_equal(ms_spec_name(spec), "residual");
    assert_int_equal(ms_spec_task_count(spec), 2);
    ms_spec_destroy(&spec);
    spec = s_parse_document(two, &docs[0]);
    assert_string_equal(ms_spec_name(spec), "plain");
    ms_spec_destroy(&spec);
    free(docs);

    static const char three[] = "%YAML 1.1\n"
                                "---\n"
                                "name: \"a --- b\"\n"
                                "dataset: fashion-mnist\n"
                                "...\n"
                                "# between documents\n"
                                "--- # the second\n"
                                "name: 'caf\xc3\xa9 \xe2\x82\xac\n"
                                "  ---'\n"
                                "dataset: fashion-mnist\n"
                                "---\n"
                                "name: c\n"
                                "dataset: fashion-mnist\n"
                                "description: |\n"
                                "  ---\n"
                                "  ...\n"
                                "...\n";
    docs = s_split(three, 3);
    assert_int_equal(docs[0].offset, 0);
    assert_memory_equal(three + docs[0].offset + docs[0].length - 4, "\n...",
                        4);
    assert_int_equal(docs[1].line, 7);
    assert_memory_equal(three + docs[1].offset, "--- # the second", 16);
    assert_int_equal(docs[2].line, 11);
    assert_memory_equal(three + docs[2].offset, "---\nname: c\n", 12);
    assert_memory_equal(three + docs[2].offset + docs[2].length - 9,
                        "  ...\n...", 9);
    const char *names[3] = {"a --- b", "caf\xc3\xa9 \xe2\x82\xac ---", "c"};
    for (size_t i = 0; i < 3; i++) {
        spec = s_parse_document(three, &docs[i]);
        assert_string_equal(ms_spec_name(spec), names[i]);
        ms_spec_destroy(&spec);
    }
    free(docs);

    //  JSON is one document, the whole text.
    static const char json[] = "{\"dataset\": \"fashion-mnist\", "
                               "\"name\": \"--- x\"}\n";
    docs = s_split(json, 1);
    assert_int_equal(docs[0].offset, 0);
    assert_int_equal(docs[0].line, 1);
    free(docs);
    //  A byte order mark is not part of the first document.
    docs = s_split("\xef\xbb\xbf"
                   "name: a\n---\nname: b\n",
                   2);
    assert_int_equal(docs[0].offset, 3);
    assert_int_equal(docs[1].offset, 11);
    free(docs);
    //  The most documents a file may hold.
    char many[MS_SPEC_MAX_DOCUMENTS * 16 + 1];
    size_t len = 0;
    for (int i = 0; i < MS_SPEC_MAX_DOCUMENTS; i++)
        len += (size_t) snprintf(many + len, sizeof many - len,
                                 "---\nname: "
                                 "n%d\n",
                                 i);
    docs = s_split(many, MS_SPEC_MAX_DOCUMENTS);
    free(docs);
}

//  What ms_spec_split_documents refuses, each with where it is: a syntax
//  error in the second document names it and the stream's line, as does
//  a semantic error in a document parsed from ms_spec_document_text;
//  empty documents and texts; one document too many; deep nesting.
static void
test_split_documents_errors(void **state)
{
    (void) state;
    static const char bad2[] = "name: a\n"
                               "dataset: fashion-mnist\n"
                               "---\n"
                               "name: b\n"
                               "parameters:\n"
                               "  width: {values: [1, 2}\n";
    const char *e = s_split_fails(bad2, sizeof bad2 - 1);
    assert_non_null(strstr(e, "document 2: line 6, column "));
    //  In the first (or only) document: as ms_spec_parse says it.
    static const char bad1[] = "parameters:\n  width: {values: [1, 2}\n";
    e = s_split_fails(bad1, sizeof bad1 - 1);
    assert_non_null(strstr(e, "line 2, column "));
    assert_null(strstr(e, "document"));
    double s;
    char parse_error[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 8];
    snprintf(parse_error, sizeof parse_error, "%s",
             s_parse_fails(bad1, sizeof bad1 - 1, &s));
    assert_string_equal(e, parse_error);

    //  The stream's lines in ms_spec_parse's own errors.
    static const char unknown2[] = "name: a\n"
                                   "dataset: fashion-mnist\n"
                                   "---\n"
                                   "name: b\n"
                                   "dataset: fashion-mnist\n"
                                   "parameters:\n"
                                   "  widht: {value: 8}\n";
    ms_spec_document_t *docs = s_split(unknown2, 2);
    char *one = ms_spec_document_text(unknown2, &docs[1], NULL);
    assert_non_null(one);
    e = s_parse_fails(one, strlen(one), &s);
    assert_non_null(strstr(e, "parameters.widht"));
    assert_non_null(strstr(e, "(line 7)"));
    free(one);
    free(docs);

    e = s_split_fails("name: a\n---\n", 12);
    assert_non_null(strstr(e, "document 2: line 2, column 1: an empty YAML "
                              "document"));
    e = s_split_fails("name: a\n--- # nothing\n# at all\n---\nname: c\n", 41);
    assert_non_null(strstr(e, "document 2: line 2, column 1: an empty"));
    e = s_split_fails("---\n", 4);
    assert_string_equal(e, "line 1, column 1: an empty YAML document (each "
                           "document is one sweep: a '---' with nothing "
                           "after it?)");
    e = s_split_fails("", 0);
    assert_string_equal(e, "the spec is empty");
    e = s_split_fails("# only a comment\n\n", 18);
    assert_string_equal(e, "the spec is empty");
    //  A null written as such is a document (ms_spec_parse refuses it).
    ms_spec_document_t *null_doc = s_split("--- ~\n", 1);
    free(null_doc);

    char many[(MS_SPEC_MAX_DOCUMENTS + 1) * 16 + 1];
    size_t len = 0;
    for (int i = 0; i <= MS_SPEC_MAX_DOCUMENTS; i++)
        len += (size_t) snprintf(many + len, sizeof many - len,
                                 "---\nname: "
                                 "n%d\n",
                                 i);
    e = s_split_fails(many, len);
    char want[128];
    snprintf(want, sizeof want,
             "document %d: line %d, column 1: more than %d YAML documents",
             MS_SPEC_MAX_DOCUMENTS + 1, 2 * MS_SPEC_MAX_DOCUMENTS + 1,
             MS_SPEC_MAX_DOCUMENTS);
    assert_non_null(strstr(e, want));

    //  A NUL byte, and nesting past the limit, as ms_spec_parse says.
    static const char nul[] = "name: a\n---\nname: \0b\n";
    e = s_split_fails(nul, sizeof nul - 1);
    assert_string_equal(e, "spec: line 3: a NUL byte (byte 19): a spec is "
                           "YAML text");
    size_t deep_n = 100000;
    char *deep = malloc(deep_n + 16);
    assert_non_null(deep);
    memcpy(deep, "name: a\n---\nx: ", 15);
    memset(deep + 15, '[', deep_n);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    e = s_split_fails(deep, deep_n + 15);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(strstr(e, "document 2: line 3, column "));
    assert_non_null(strstr(e, "nested deeper than 64 levels"));
    assert_true((double) (t1.tv_sec - t0.tv_sec) < 5.0);
    free(deep);
}

static void
test_names(void **state)
{
    (void) state;
    assert_string_equal(ms_spec_method_name(MS_SPEC_METHOD_SOBOL), "sobol");
    assert_string_equal(ms_keep_weights_name(MS_KEEP_WEIGHTS_BEST), "best");
}

//  --------------------------------------------------------------------------
//  Better by the metric: its goal, finite values only, ties keep the first.

static void
test_metric_improves(void **state)
{
    (void) state;
    ms_spec_metric_t up = {"val_accuracy", true};
    ms_spec_metric_t down = {"val_loss", false};
    assert_true(ms_spec_metric_improves(&up, 0.5, false, 0));
    assert_true(ms_spec_metric_improves(&up, 0.6, true, 0.5));
    assert_false(ms_spec_metric_improves(&up, 0.4, true, 0.5));
    assert_false(ms_spec_metric_improves(&up, 0.5, true, 0.5));
    assert_true(ms_spec_metric_improves(&down, 0.4, true, 0.5));
    assert_false(ms_spec_metric_improves(&down, 0.6, true, 0.5));
    assert_false(ms_spec_metric_improves(&up, NAN, false, 0));
    assert_false(ms_spec_metric_improves(&down, INFINITY, false, 0));
    assert_false(ms_spec_metric_improves(&up, INFINITY, true, 0.5));
    json_t *row =
        json_pack("{s:f, s:s}", "val_accuracy", 0.75, "val_loss", "n/a");
    assert_true(ms_spec_metric_value(&up, row) == 0.75);
    assert_true(isnan(ms_spec_metric_value(&down, row))); // not a number
    ms_spec_metric_t absent = {"test_accuracy", true};
    assert_true(isnan(ms_spec_metric_value(&absent, row)));
    json_decref(row);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_design_example),
        cmocka_unit_test(test_metric_improves),
        cmocka_unit_test(test_sklearn_grid),
        cmocka_unit_test(test_ids_stable_and_sensitive),
        cmocka_unit_test(test_json_input),
        cmocka_unit_test(test_random_reproducible_in_range),
        cmocka_unit_test(test_sobol_stratified_and_seeded),
        cmocka_unit_test(test_wandb_distributions),
        cmocka_unit_test(test_categorical_probabilities),
        cmocka_unit_test(test_errors_name_key_path),
        cmocka_unit_test(test_yaml_syntax_error),
        cmocka_unit_test(test_wandb_keys_warn),
        cmocka_unit_test(test_program_sweep),
        cmocka_unit_test(test_program_nested),
        cmocka_unit_test(test_program_errors),
        cmocka_unit_test(test_duplicates_dropped),
        cmocka_unit_test(test_limits_and_run_cap),
        cmocka_unit_test(test_no_parameters_warn),
        cmocka_unit_test(test_max_params),
        cmocka_unit_test(test_canonical_round_trip),
        cmocka_unit_test(test_file_dataset_ids),
        cmocka_unit_test(test_file_dataset_csv_options),
        cmocka_unit_test(test_examples_parse),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_hostile_texts),
        cmocka_unit_test(test_split_documents),
        cmocka_unit_test(test_split_documents_errors),
        cmocka_unit_test(test_depth_combinations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
