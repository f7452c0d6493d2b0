/*  =========================================================================
    ms_spec - sweep specifications: parse a W&B-style YAML spec, expand it
    once into task configs, and compute the content-hash ids

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    What it does (DESIGN.md "Sweep specification"). A spec arrives as YAML
    text (JSON is YAML). We load it with libyaml's document API, which
    keeps a line number on every node, walk the tree ourselves and refuse
    the first problem with its key path ("parameters.width.values[1]") and
    line. Then the spec is expanded ONCE into explicit task configs, and
    the sweep record carries that list: other nodes never re-expand,
    because a random draw or a float printed on another CPU could differ
    by one bit (ms_spec_load_canonical rebuilds a spec from the stored
    list without drawing anything).

    Values. Plain YAML scalars are typed as YAML 1.2's core schema does,
    plus the YAML 1.1 booleans that PyYAML (and so W&B) reads: null / ~ /
    empty; true false yes no on off (any of the three cases); decimal
    integers; decimal floats with a point and/or an exponent ("1e-8" is a
    float here, unlike PyYAML, because sweep files write it so). Quoted
    scalars are strings. Each value is checked when the spec is read, by
    setting it on a default config (ms_config_set_param: type, enum name,
    range) and running ms_train_config_check, so a bad value is reported
    at its own path, not as "task 117 is invalid".

    Expansion. Parameters are taken in sorted name order. Grid: the
    cartesian product, first parameter slowest, by integer indexing (task
    k takes value (k / stride_p) mod n_p of parameter p, where stride_p is
    the product of the list sizes of the parameters after p). Random:
    run_cap draws from one xoshiro256** stream seeded by sweep_seed, one
    draw per swept parameter per task, in name order. Sobol: the points of
    ms_sobol (Joe & Kuo's direction numbers, a digital shift drawn from
    ms_rng seeded by sweep_seed), one dimension per swept parameter in
    name order, from index 0. Each parameter's law is an ms_distribution
    (every law of W&B's sweep configuration, with its inference rules and
    checks): a
    random draw is ms_distribution_sample, a sobol point goes through
    ms_distribution_quantile (values lists: index floor(u n)); beta, which
    has no closed-form quantile, is refused under sobol. An integer
    parameter takes int_uniform or a quantised law with an integer q; the
    ends of a range the spec writes (min, max) are checked as values when
    the spec is read, a draw of an unbounded law (normal, log_normal,
    beta) with its task. The laws that existed before ms_distribution
    (values, int_uniform, uniform, log_uniform_values, q_uniform) draw
    the same numbers as they did, so those sweeps keep their ids.

    Duplicates. Two equal configs in one sweep would be one task with two
    ids in effect, so the second is dropped with a warning; the check is
    on the canonical bytes, through a hash table keyed by their BLAKE2b.

    Canonical form and ids: ms_spec_canonical.c.

    What was not done: bayes (needs results to choose the next point,
    which an expand-once design cannot hold), early_terminate (Hyperband
    needs a scheduler), metric.target and nested parameters of built-in
    sweeps (program sweeps nest theirs: ms_spec_program.c) (refused with
    the reason; issue 17).
*/
#include "ms_spec_internal.h"

#include "ms_rng.h"
#include "ms_sobol.h"
#include "ms_spec_text.h"
#include "ms_wire_canon.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_RNG_STREAM_RANDOM 0x5357454550ULL // "SWEEP"
#define S_RNG_STREAM_SOBOL 0x534f424f4cULL  // "SOBOL"

//  Built-in dataset names (DESIGN.md: resolved to Debian's files by
//  core/ms_dataset; a spec only needs to know the names).
const char *const ms_spec_builtin_datasets[MS_SPEC_N_BUILTIN_DATASETS] = {
    "fashion-mnist", "mnist"};
const char *const ms_spec_metric_names[MS_SPEC_N_METRICS] = {
    "val_accuracy", "val_loss", "test_accuracy", "test_loss", "train_loss"};
const char *const ms_spec_method_names[MS_SPEC_N_METHODS] = {"grid", "random",
                                                             "sobol"};
const char *const ms_spec_keep_names[MS_SPEC_N_KEEP] = {"none", "best",
                                                        "sampled", "all"};
//  W&B keys that mean nothing here: ignored with a warning.
static const char *s_wandb_keys[] = {"project", "entity", "description"};

//  --------------------------------------------------------------------------
//  Add a warning (printf-style).

int
ms_spec_warn(ms_spec_t *self, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char **warnings =
        realloc(self->warnings, (self->n_warnings + 1) * sizeof *warnings);
    if (!warnings)
        return MS_ERR_NOMEM;
    self->warnings = warnings;
    self->warnings[self->n_warnings] = strdup(text);
    if (!self->warnings[self->n_warnings])
        return MS_ERR_NOMEM;
    self->n_warnings++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a parameter's values.

void
ms_spec_param_free(ms_spec_param_t *param)
{
    json_decref(param->keys);
    param->keys = NULL;
    for (size_t i = 0; i < param->n_values; i++)
        json_decref(param->values[i]);
    free(param->values);
    param->values = NULL;
    param->n_values = 0;
    ms_distribution_destroy(&param->law);
}

//  --------------------------------------------------------------------------
//  Check one value of a parameter by setting it on a default config.

static int
s_check_value(ms_spec_ctx_t *ctx, const ms_spec_param_t *param,
              const json_t *value, const yaml_node_t *node, const char *path)
{
    if (ctx->program) // the program judges its own values
        return MS_OK;
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return MS_ERR_NOMEM;
    ms_train_config_defaults(cfg);
    //  A residual-only key's value is judged where it has an effect (the
    //  combination with architecture is checked per task, s_emit).
    if (strcmp(param->name, "residual_scale") == 0 ||
        strcmp(param->name, "block_layers") == 0)
        cfg->architecture = MS_ARCH_RESIDUAL;
    ms_diag_t local;
    int rc = ms_config_set_param(cfg, param->name, value, &local);
    if (rc == MS_OK) {
        if (strcmp(param->name, "init") != 0)
            cfg->init = ms_init_default_for(cfg->activation);
        if (ms_train_config_check(cfg, &local) != MS_OK)
            rc = MS_ERR_INVALID;
    }
    free(cfg);
    if (rc)
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, path, "%s",
                            local.reason);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A parameter's `value` (the constant form) at path.

static int
s_value_form(ms_spec_ctx_t *ctx, ms_spec_param_t *param,
             const yaml_node_t *value_node, const char *path)
{
    char sub[MS_SPEC_PATH_MAX];
    param->form = MS_SPEC_FORM_VALUE;
    param->values = calloc(1, sizeof *param->values);
    if (!param->values)
        return MS_ERR_NOMEM;
    ms_spec_pathf(sub, "%s.value", path);
    int rc = ms_spec_node_json(ctx, value_node, sub, 0, &param->values[0]);
    if (rc)
        return rc;
    param->n_values = 1;
    return s_check_value(ctx, param, param->values[0], value_node, sub);
}

//  --------------------------------------------------------------------------
//  Parse one parameter's definition.

int
ms_spec_parse_param(ms_spec_ctx_t *ctx, ms_spec_t *spec, const char *name,
                    const char *path, const yaml_node_t *key_node,
                    const yaml_node_t *node, ms_spec_param_t *param)
{
    char sub[MS_SPEC_PATH_MAX];
    memset(param, 0, sizeof *param);
    param->line = key_node->start_mark.line + 1;
    param->type =
        ctx->program ? MS_CONFIG_PARAM_UNKNOWN : ms_config_param_type(name);
    if (ctx->program && strlen(name) >= sizeof param->name)
        return ms_spec_fail(ctx, MS_ERR_INVALID, key_node, path,
                            "a parameter name of more than %d bytes",
                            (int) sizeof param->name - 1);
    if (!ctx->program &&
        (param->type == MS_CONFIG_PARAM_UNKNOWN || strchr(name, '-') ||
         strlen(name) >= sizeof param->name)) {
        char names[600];
        size_t len = 0;
        names[0] = '\0';
        for (int i = 0; i < ms_config_param_count(); i++) {
            int w = snprintf(names + len, sizeof names - len, "%s%s",
                             i ? ", " : "", ms_config_param_name(i));
            if (w < 0 || (size_t) w >= sizeof names - len)
                break;
            len += (size_t) w;
        }
        return ms_spec_fail(ctx, MS_ERR_INVALID, key_node, path,
                            "unknown parameter '%s' (expected one of %s)", name,
                            names);
    }
    snprintf(param->name, sizeof param->name, "%s", name);
    ms_spec_method_t method = spec->method;
    int rc = ms_spec_check_mapping(ctx, node, path);
    if (rc)
        return rc;
    //  W&B's keys of a parameter; their nodes give errors their lines.
    static const char *const keys[] = {"value",
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
    const yaml_node_t *found[MS_SPEC_COUNT(keys)] = {0};
    size_t n_keys = 0;
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++, n_keys++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        int i = ms_spec_index_of(keys, MS_SPEC_COUNT(keys), ms_spec_scalar(k));
        if (i < 0) {
            ms_spec_pathf(sub, "%s.%s", path, ms_spec_scalar(k));
            return ms_spec_fail(
                ctx, MS_ERR_INVALID, k, sub,
                "unknown key (a parameter takes value, values "
                "with probabilities, or a distribution with min, "
                "max, q, mu, sigma, a, b)");
        }
        found[i] = ms_spec_node(ctx, pair->value);
    }
    const yaml_node_t *value_node = found[0], *values_node = found[1],
                      *probs_node = found[2], *min_node = found[4],
                      *max_node = found[5];
    if (value_node && n_keys == 1)
        return s_value_form(ctx, param, value_node, path);
    //  Anything else is a law, with W&B's inference rules and checks.
    json_t *obj;
    rc = ms_spec_node_json(ctx, node, path, 0, &obj);
    if (rc)
        return rc;
    ms_diag_t local;
    ms_diag_clear(&local);
    rc = ms_distribution_parse(&param->law, obj, path, &local);
    json_decref(obj);
    if (rc)
        return ms_spec_fail(ctx, rc, node, local.where, "%s", local.reason);
    ms_distribution_kind_t kind = ms_distribution_kind(param->law);
    const char *dist = ms_distribution_name(param->law);
    if (kind == MS_DISTRIBUTION_CONSTANT) {
        //  distribution: constant with its value: the value form.
        ms_distribution_destroy(&param->law);
        return s_value_form(ctx, param, value_node, path);
    }
    if (kind == MS_DISTRIBUTION_CATEGORICAL) {
        param->form = MS_SPEC_FORM_VALUES;
        ms_spec_pathf(sub, "%s.values", path);
        size_t n = (size_t) (values_node->data.sequence.items.top -
                             values_node->data.sequence.items.start);
        param->values = calloc(n, sizeof *param->values);
        if (!param->values)
            return MS_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *item =
                ms_spec_node(ctx, values_node->data.sequence.items.start[i]);
            char elem[MS_SPEC_PATH_MAX];
            ms_spec_pathf(elem, "%s[%zu]", sub, i);
            rc = ms_spec_node_json(ctx, item, elem, 0, &param->values[i]);
            if (rc)
                return rc;
            param->n_values = i + 1;
            rc = s_check_value(ctx, param, param->values[i], item, elem);
            if (rc)
                return rc;
        }
        if (probs_node && method == MS_SPEC_METHOD_GRID) {
            ms_spec_pathf(sub, "%s.probabilities", path);
            return ms_spec_warn(
                spec, "%s: ignored by method grid (every value runs)", sub);
        }
        return MS_OK;
    }
    //  A distribution.
    param->form = MS_SPEC_FORM_DIST;
    ms_spec_pathf(sub, "%s.distribution", path);
    const yaml_node_t *at = found[3] ? found[3] : node;
    if (method == MS_SPEC_METHOD_GRID)
        return ms_spec_fail(
            ctx, MS_ERR_INVALID, at, sub,
            "a distribution (%s) cannot be used with method: grid "
            "(give values, or use random or sobol)",
            dist);
    if (ctx->program) // a program's number: an integer where the law is
        param->type = ms_distribution_integral(param->law)
                          ? MS_CONFIG_PARAM_INT
                          : MS_CONFIG_PARAM_FLOAT;
    if (param->type != MS_CONFIG_PARAM_INT &&
        param->type != MS_CONFIG_PARAM_FLOAT)
        return ms_spec_fail(ctx, MS_ERR_INVALID, at, sub,
                            "%s is not numeric: give values instead", name);
    bool int_param = param->type == MS_CONFIG_PARAM_INT;
    if (int_param && !ms_distribution_integral(param->law))
        return ms_spec_fail(ctx, MS_ERR_INVALID, at, sub,
                            "%s gives non-integer values but %s is an integer "
                            "(use int_uniform, or a q_ distribution with an "
                            "integer q)",
                            dist, name);
    if (method == MS_SPEC_METHOD_SOBOL &&
        !ms_distribution_has_quantile(param->law))
        return ms_spec_fail(
            ctx, MS_ERR_INVALID, at, sub,
            "method sobol maps its points through a law's "
            "quantile, which %s has not here (use method random)",
            dist);
    //  Check both ends of a range the spec wrote (min and max) as values;
    //  a draw of any other law (normal, beta ...) is checked with its task
    //  (s_emit).
    double ends[2];
    if (!min_node || !max_node ||
        !ms_distribution_support(param->law, &ends[0], &ends[1]))
        return MS_OK;
    for (int end = 0; end < 2; end++) {
        double v = ends[end];
        if (!isfinite(v))
            continue;
        json_t *value =
            int_param ? json_integer((json_int_t) llround(v)) : json_real(v);
        if (!value)
            return MS_ERR_NOMEM;
        ms_spec_pathf(sub, "%s.%s", path, end ? "max" : "min");
        rc = s_check_value(ctx, param, value, end ? max_node : min_node, sub);
        json_decref(value);
        if (rc)
            return rc;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Order parameters by name.

static int
s_param_compare(const void *a, const void *b)
{
    return strcmp(((const ms_spec_param_t *) a)->name,
                  ((const ms_spec_param_t *) b)->name);
}

//  --------------------------------------------------------------------------
//  Parse dataset.label: a name, or (a plain integer) a 0-based index.

static int
s_parse_dataset_label(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *v)
{
    if (v && v->type == YAML_SCALAR_NODE &&
        v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        ms_spec_looks_int(ms_spec_scalar(v))) {
        errno = 0;
        long long index = strtoll(ms_spec_scalar(v), NULL, 10);
        if (errno == ERANGE || index < 0 || index >= MS_DATASET_MAX_FEATURES)
            return ms_spec_fail(
                ctx, MS_ERR_INVALID, v, "dataset.label",
                "must be a column name or a 0-based column index, "
                "not %s",
                ms_spec_scalar(v));
        self->label_index = (int32_t) index;
        return ms_spec_strdup_to(&self->label, "") ? MS_OK : MS_ERR_NOMEM;
    }
    const char *label;
    int rc = ms_spec_get_string(ctx, v, "dataset.label", &label);
    if (rc)
        return rc;
    return ms_spec_strdup_to(&self->label, label) ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  Parse dataset.categorical: a list of distinct column names.

static int
s_parse_dataset_categorical(ms_spec_ctx_t *ctx, ms_spec_t *self,
                            const yaml_node_t *v)
{
    if (!v || v->type != YAML_SEQUENCE_NODE)
        return ms_spec_fail(ctx, MS_ERR_INVALID, v, "dataset.categorical",
                            "must be a list of column names, not %s",
                            ms_spec_node_kind(v));
    size_t n =
        (size_t) (v->data.sequence.items.top - v->data.sequence.items.start);
    self->categorical = calloc(n ? n : 1, sizeof *self->categorical);
    if (!self->categorical)
        return MS_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = ms_spec_node(ctx, v->data.sequence.items.start[i]);
        char sub[MS_SPEC_PATH_MAX];
        ms_spec_pathf(sub, "dataset.categorical[%zu]", i);
        const char *name;
        if (!item || item->type != YAML_SCALAR_NODE)
            return ms_spec_fail(ctx, MS_ERR_INVALID, item ? item : v, sub,
                                "must be a column name, not %s",
                                ms_spec_node_kind(item));
        int rc = ms_spec_get_string(ctx, item, sub, &name);
        if (rc)
            return rc;
        for (size_t k = 0; k < self->n_categorical; k++)
            if (strcmp(self->categorical[k], name) == 0)
                return ms_spec_fail(ctx, MS_ERR_INVALID, item, sub,
                                    "'%s' is listed twice", name);
        if (!(self->categorical[self->n_categorical] = strdup(name)))
            return MS_ERR_NOMEM;
        self->n_categorical++;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Parse the dataset key.

static int
s_parse_dataset(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *node)
{
    char names[200];
    if (node->type == YAML_SCALAR_NODE) {
        const char *name;
        int rc = ms_spec_get_string(ctx, node, "dataset", &name);
        if (rc)
            return rc;
        if (ms_spec_index_of(ms_spec_builtin_datasets,
                             MS_SPEC_COUNT(ms_spec_builtin_datasets), name) < 0)
            return ms_spec_fail(
                ctx, MS_ERR_INVALID, node, "dataset",
                "unknown dataset '%s' (built-in: %s; or give "
                "{train: PATH, test: PATH, label: NAME})",
                name,
                ms_spec_join(ms_spec_builtin_datasets,
                             MS_SPEC_COUNT(ms_spec_builtin_datasets), names,
                             sizeof names));
        return ms_spec_strdup_to(&self->dataset_name, name) ? MS_OK
                                                            : MS_ERR_NOMEM;
    }
    int rc = ms_spec_check_mapping(ctx, node, "dataset");
    if (rc)
        return rc;
    const char *train = NULL, *test = NULL, *file = NULL;
    const yaml_node_t *file_node = NULL, *split_node = NULL;
    const yaml_node_t *label_node = NULL;
    self->label_index = -1;
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        yaml_node_t *v = ms_spec_node(ctx, pair->value);
        const char *key = ms_spec_scalar(k);
        char sub[MS_SPEC_PATH_MAX];
        ms_spec_pathf(sub, "dataset.%s", key);
        if (strcmp(key, "label") == 0) {
            label_node = v;
            if ((rc = s_parse_dataset_label(ctx, self, v)))
                return rc;
            continue;
        }
        if (strcmp(key, "categorical") == 0) {
            if ((rc = s_parse_dataset_categorical(ctx, self, v)))
                return rc;
            continue;
        }
        if (strcmp(key, "missing") == 0) {
            static const char *s_missing[] = {"error", "zero", "mean"};
            int m = v && v->type == YAML_SCALAR_NODE
                        ? ms_spec_index_of(s_missing, MS_SPEC_COUNT(s_missing),
                                           ms_spec_scalar(v))
                        : -1;
            if (m < 0)
                return ms_spec_fail(ctx, MS_ERR_INVALID, v ? v : k, sub,
                                    "must be error, zero or mean");
            self->missing = (ms_dataset_missing_t) m;
            continue;
        }
        if (strcmp(key, "split") == 0) {
            double real = 0;
            int64_t integer = 0;
            split_node = v;
            if ((rc = ms_spec_get_number(ctx, v, sub, false, &real, &integer)))
                return rc;
            if (!(real > 0 && real < 1))
                return ms_spec_fail(ctx, MS_ERR_INVALID, v, sub,
                                    "must be a fraction between 0 and 1 (0.2: "
                                    "80%% train, 20%% test), not %s",
                                    ms_spec_scalar(v));
            self->split = real;
            continue;
        }
        const char **slot = strcmp(key, "train") == 0  ? &train
                            : strcmp(key, "test") == 0 ? &test
                            : strcmp(key, "file") == 0 ? &file
                                                       : NULL;
        if (!slot)
            return ms_spec_fail(
                ctx, MS_ERR_INVALID, k, sub,
                "unknown key (expected train, test, file, label, "
                "missing, categorical, split)");
        if (slot == &file)
            file_node = v;
        rc = ms_spec_get_string(ctx, v, sub, slot);
        if (rc)
            return rc;
    }
    if (file && (train || test))
        return ms_spec_fail(ctx, MS_ERR_INVALID, file_node, "dataset.file",
                            "give either file (one file, split into train and "
                            "test) or train and test");
    if (split_node && !file)
        return ms_spec_fail(
            ctx, MS_ERR_INVALID, split_node, "dataset.split",
            "splits one file: give dataset.file instead of train "
            "and test");
    if (!file && (!train || !test))
        return ms_spec_fail(ctx, MS_ERR_INVALID, node,
                            train ? "dataset.test" : "dataset.train",
                            "missing: a file dataset needs train and test (or "
                            "file and split)");
    if (file) {
        train = test = file;
        if (self->split == 0)
            self->split = 0.2; // the 2015 system's 80/20
    }
    if (!self->label && !ms_spec_strdup_to(&self->label, "label"))
        return MS_ERR_NOMEM;
    for (size_t i = 0; i < self->n_categorical; i++)
        if (self->label_index < 0 &&
            strcmp(self->categorical[i], self->label) == 0)
            return ms_spec_fail(ctx, MS_ERR_INVALID,
                                label_node ? label_node : node,
                                "dataset.categorical",
                                "'%s' is the label column; it cannot also be "
                                "categorical",
                                self->label);
    if (!ms_spec_strdup_to(&self->train_path, train) ||
        !ms_spec_strdup_to(&self->test_path, test))
        return MS_ERR_NOMEM;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Parse metric {name, goal}.

static int
s_parse_metric(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *node)
{
    int rc = ms_spec_check_mapping(ctx, node, "metric");
    if (rc)
        return rc;
    char names[200];
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        yaml_node_t *v = ms_spec_node(ctx, pair->value);
        const char *key = ms_spec_scalar(k), *text;
        char sub[MS_SPEC_PATH_MAX];
        ms_spec_pathf(sub, "metric.%s", key);
        if (strcmp(key, "name") == 0) {
            if ((rc = ms_spec_get_string(ctx, v, sub, &text)))
                return rc;
            //  A program logs keys of its own choosing.
            if (ctx->program && (!text[0] || strlen(text) >= MS_SPEC_NAME_MAX))
                return ms_spec_fail(ctx, MS_ERR_INVALID, v, sub,
                                    "a metric name of 1 to %d bytes",
                                    MS_SPEC_NAME_MAX - 1);
            if (!ctx->program &&
                ms_spec_index_of(ms_spec_metric_names,
                                 MS_SPEC_COUNT(ms_spec_metric_names), text) < 0)
                return ms_spec_fail(
                    ctx, MS_ERR_INVALID, v, sub,
                    "unknown metric '%s' (expected one of %s)", text,
                    ms_spec_join(ms_spec_metric_names,
                                 MS_SPEC_COUNT(ms_spec_metric_names), names,
                                 sizeof names));
            if (!ms_spec_strdup_to(&self->metric_name, text))
                return MS_ERR_NOMEM;
        } else if (strcmp(key, "goal") == 0) {
            if ((rc = ms_spec_get_string(ctx, v, sub, &text)))
                return rc;
            if (strcmp(text, "maximize") == 0)
                self->metric.maximize = true;
            else if (strcmp(text, "minimize") == 0)
                self->metric.maximize = false;
            else
                return ms_spec_fail(ctx, MS_ERR_INVALID, v, sub,
                                    "unknown goal '%s' (expected maximize or "
                                    "minimize)",
                                    text);
        } else
            return ms_spec_fail(ctx, MS_ERR_INVALID, k, sub,
                                "unknown key (expected name, goal)");
    }
    self->metric.name = self->metric_name;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Parse verify {replicas, accuracy_tolerance, loss_tolerance}.

static int
s_parse_verify(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *node)
{
    int rc = ms_spec_check_mapping(ctx, node, "verify");
    if (rc)
        return rc;
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        yaml_node_t *v = ms_spec_node(ctx, pair->value);
        const char *key = ms_spec_scalar(k);
        char sub[MS_SPEC_PATH_MAX];
        ms_spec_pathf(sub, "verify.%s", key);
        double real = 0;
        int64_t integer = 0;
        if (strcmp(key, "replicas") == 0) {
            if ((rc = ms_spec_get_number(ctx, v, sub, true, &real, &integer)))
                return rc;
            if (integer < 1 || integer > 64)
                return ms_spec_fail(ctx, MS_ERR_INVALID, v, sub,
                                    "must be 1..64, not %lld",
                                    (long long) integer);
            self->verify.replicas = (int32_t) integer;
        } else if (strcmp(key, "accuracy_tolerance") == 0 ||
                   strcmp(key, "loss_tolerance") == 0) {
            if ((rc = ms_spec_get_number(ctx, v, sub, false, &real, &integer)))
                return rc;
            if (!(real >= 0 && real <= 1e6))
                return ms_spec_fail(ctx, MS_ERR_INVALID, v, sub,
                                    "must be >= 0");
            if (key[0] == 'a')
                self->verify.accuracy_tolerance = real;
            else
                self->verify.loss_tolerance = real;
        } else
            return ms_spec_fail(ctx, MS_ERR_INVALID, k, sub,
                                "unknown key (expected replicas, "
                                "accuracy_tolerance, loss_tolerance)");
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Set the defaults of every spec field.

static int
s_spec_defaults(ms_spec_t *self)
{
    self->method = MS_SPEC_METHOD_GRID;
    self->label_index = -1;
    self->metric.maximize = true;
    self->verify.replicas = 1;
    self->verify.accuracy_tolerance = 0.01;
    self->verify.loss_tolerance = 0.02;
    self->keep_weights = MS_KEEP_WEIGHTS_SAMPLED;
    if (!ms_spec_strdup_to(&self->name, "sweep") ||
        !ms_spec_strdup_to(&self->metric_name, "val_accuracy"))
        return MS_ERR_NOMEM;
    self->metric.name = self->metric_name;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Point the public dataset view at the owned strings.

void
ms_spec_dataset_view(ms_spec_t *self)
{
    ms_spec_dataset_t *d = &self->dataset;
    d->builtin = self->dataset_name != NULL;
    d->name = self->dataset_name;
    d->train_path = self->train_path;
    d->test_path = self->test_path;
    d->label = self->label;
    d->label_index = self->label_index;
    d->missing = self->missing;
    d->categorical = (const char *const *) self->categorical;
    d->n_categorical = self->n_categorical;
    d->split = self->split;
}

//  ==========================================================================
//  Expansion

//  De-duplication table: open addressing over task indices.
typedef struct {
    size_t *slots;   // task index + 1, 0 = empty
    ms_hash_t *keys; // hash of each task's config bytes, by task index
    size_t mask;     // slots - 1 (power of two)
} s_dedup_t;

//  --------------------------------------------------------------------------
//  A distribution's draw (taken) as the parameter's type: an integer
//  parameter takes a quantised real as its nearest integer.

static json_t *
s_typed(const ms_spec_param_t *param, json_t *drawn)
{
    if (drawn && param->type == MS_CONFIG_PARAM_INT && json_is_real(drawn)) {
        json_t *i = json_integer((json_int_t) llround(json_real_value(drawn)));
        json_decref(drawn);
        return i;
    }
    return drawn;
}

//  --------------------------------------------------------------------------
//  Append a task (canonical config text, taking ownership) unless it is a
//  duplicate. *added says which.

static int
s_add_task(ms_spec_t *self, s_dedup_t *dedup, char *json, size_t len,
           bool *added)
{
    ms_hash_t key;
    ms_hash_bytes(json, len, &key);
    uint64_t h;
    memcpy(&h, key.bytes, sizeof h);
    size_t slot = (size_t) h & dedup->mask;
    while (dedup->slots[slot]) {
        size_t other = dedup->slots[slot] - 1;
        if (ms_hash_equal(&dedup->keys[other], &key) &&
            self->task_json_len[other] == len &&
            memcmp(self->task_json[other], json, len) == 0) {
            free(json);
            *added = false;
            return MS_OK;
        }
        slot = (slot + 1) & dedup->mask;
    }
    size_t i = self->n_tasks;
    if (i >= self->cap_tasks) {
        free(json);
        return MS_ERR_RANGE;
    }
    self->task_json[i] = json;
    self->task_json_len[i] = len;
    dedup->keys[i] = key;
    dedup->slots[slot] = i + 1;
    self->n_tasks++;
    *added = true;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Refuse a network with more than ctx->max_params parameters (weights and
//  biases). The input size is known only once the data is loaded, so it
//  is assumed: 784 inputs and 10 outputs for the built-in image datasets
//  (fashion-mnist, mnist); for file datasets only the hidden layers are
//  counted (0 inputs, 0 outputs: the first layer's biases, the weights and
//  biases between hidden layers), a lower bound. The error names the
//  parameter that sets the architecture.

static int
s_check_size(ms_spec_ctx_t *ctx, const ms_spec_t *self,
             const ms_spec_param_t *params, size_t n_params,
             const ms_train_config_t *cfg)
{
    bool images = self->dataset_name &&
                  (strcmp(self->dataset_name, "fashion-mnist") == 0 ||
                   strcmp(self->dataset_name, "mnist") == 0);
    int64_t n = ms_train_config_params(cfg, images ? 784 : 0, images ? 10 : 0);
    if (n <= ctx->max_params)
        return MS_OK;
    const char *key = NULL;
    size_t line = 0;
    static const char *arch[] = {"hidden_sizes", "width", "hidden_layers"};
    for (size_t a = 0; a < 3 && !key; a++)
        for (size_t p = 0; p < n_params; p++)
            if (strcmp(params[p].name, arch[a]) == 0) {
                key = arch[a];
                line = params[p].line;
                break;
            }
    char where[MS_SPEC_PATH_MAX];
    ms_spec_pathf(where, "parameters.%s", key ? key : "hidden_sizes");
    return ms_diag_set_code(ctx->diag, MS_ERR_RANGE, where,
                            "network has %lld parameters, more than the pool "
                            "limit %lld (line %zu)",
                            (long long) n, (long long) ctx->max_params, line);
}

//  --------------------------------------------------------------------------
//  Build, check and add the task whose parameter values are given.

static int
s_emit(ms_spec_ctx_t *ctx, ms_spec_t *self, s_dedup_t *dedup,
       const ms_spec_param_t *params, size_t n_params, json_t **values,
       ms_train_config_t *cfg, bool *added)
{
    ms_train_config_defaults(cfg);
    if (ctx->program) {
        char *json = NULL;
        size_t len = 0;
        int prc = ms_spec_program_task(params, n_params, values, &json, &len);
        return prc ? prc : s_add_task(self, dedup, json, len, added);
    }
    bool init_given = false;
    ms_diag_t local;
    int rc;
    for (size_t p = 0; p < n_params; p++) {
        if (strcmp(params[p].name, "init") == 0)
            init_given = true;
        if (ms_config_set_param(cfg, params[p].name, values[p], &local)) {
            char where[MS_SPEC_PATH_MAX];
            ms_spec_pathf(where, "parameters.%s", params[p].name);
            if (params[p].form != MS_SPEC_FORM_DIST)
                return ms_diag_set(ctx->diag, where, "%s (line %zu)",
                                   local.reason, params[p].line);
            //  A draw of an unbounded law (normal, beta ...) out of range.
            char *drawn = json_dumps(values[p], JSON_ENCODE_ANY);
            rc =
                ms_diag_set(ctx->diag, where,
                            "%s (distribution %s drew %s for task %zu; "
                            "line %zu)",
                            local.reason, ms_distribution_name(params[p].law),
                            drawn ? drawn : "?", self->n_tasks, params[p].line);
            free(drawn);
            return rc;
        }
    }
    if (!init_given)
        cfg->init = ms_init_default_for(cfg->activation);
    if (ms_train_config_check(cfg, &local)) {
        char where[MS_SPEC_PATH_MAX];
        ms_spec_pathf(where, "parameters.%s", local.where);
        return ms_diag_set(ctx->diag, where,
                           "%s (in the combination of task %zu)", local.reason,
                           self->n_tasks);
    }
    rc = s_check_size(ctx, self, params, n_params, cfg);
    if (rc)
        return rc;
    json_t *obj = ms_config_encode_json(cfg);
    if (!obj)
        return MS_ERR_NOMEM;
    size_t len = 0;
    char *json = ms_wire_canon_dump_len(obj, &len);
    json_decref(obj);
    if (!json)
        return MS_ERR_NOMEM;
    return s_add_task(self, dedup, json, len, added);
}

//  Tasks whose warm-up outlasts their training (one warning line for
//  all of them, with the first one's values).
typedef struct {
    size_t n_tasks;       // tasks with warmup_epochs > epochs
    double warmup_epochs; // the first one's
    int32_t epochs;       // the first one's
} s_warmup_t;

//  --------------------------------------------------------------------------
//  Count task cfg (just emitted; added: not a duplicate) in *warmup when
//  its warm-up is longer than its training.

static void
s_note_warmup(const ms_train_config_t *cfg, bool added, s_warmup_t *warmup)
{
    if (!added || !(cfg->warmup_epochs > cfg->epochs))
        return;
    if (warmup->n_tasks++ == 0) {
        warmup->warmup_epochs = cfg->warmup_epochs;
        warmup->epochs = cfg->epochs;
    }
}

//  --------------------------------------------------------------------------
//  Expand the parameters into tasks.

static int
s_expand(ms_spec_ctx_t *ctx, ms_spec_t *self, const ms_spec_param_t *params,
         size_t n_params, const yaml_node_t *root, int64_t max_tasks)
{
    //  How many tasks, before de-duplication.
    uint64_t n_wanted;
    uint64_t product = 1;
    bool huge = false;
    for (size_t p = 0; p < n_params; p++) {
        uint64_t n =
            params[p].form == MS_SPEC_FORM_VALUES ? params[p].n_values : 1;
        if (product > UINT64_MAX / n)
            huge = true;
        else
            product *= n;
    }
    if (self->method == MS_SPEC_METHOD_GRID) {
        n_wanted = huge ? UINT64_MAX : product;
        if (self->run_cap > 0 && (uint64_t) self->run_cap < n_wanted)
            n_wanted = (uint64_t) self->run_cap;
    } else {
        if (self->run_cap <= 0)
            return ms_spec_fail(ctx, MS_ERR_INVALID, root, "run_cap",
                                "required for method %s",
                                ms_spec_method_name(self->method));
        n_wanted = (uint64_t) self->run_cap;
    }
    if (n_wanted > (uint64_t) max_tasks) {
        if (self->method == MS_SPEC_METHOD_GRID)
            return ms_diag_set_code(
                ctx->diag, MS_ERR_RANGE, "parameters",
                "the grid has %s%llu tasks, more than "
                "the limit of %lld (set a smaller "
                "run_cap or remove values)",
                huge ? "over " : "",
                (unsigned long long) (huge ? UINT64_MAX : product),
                (long long) max_tasks);
        return ms_diag_set_code(ctx->diag, MS_ERR_RANGE, "run_cap",
                                "%llu tasks is more than the limit of %lld",
                                (unsigned long long) n_wanted,
                                (long long) max_tasks);
    }
    size_t cap = (size_t) n_wanted;
    self->cap_tasks = cap;
    self->task_json = calloc(cap, sizeof *self->task_json);
    self->task_json_len = calloc(cap, sizeof *self->task_json_len);
    s_dedup_t dedup = {0};
    size_t n_slots = 16;
    while (n_slots < 2 * cap)
        n_slots *= 2;
    dedup.slots = calloc(n_slots, sizeof *dedup.slots);
    dedup.keys = calloc(cap, sizeof *dedup.keys);
    dedup.mask = n_slots - 1;
    json_t **values = calloc(n_params ? n_params : 1, sizeof *values);
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    int rc = MS_OK;
    if (!self->task_json || !self->task_json_len || !dedup.slots ||
        !dedup.keys || !values || !cfg) {
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    size_t n_dropped = 0, first_dropped = 0;
    s_warmup_t warmup = {0};
    bool added;
    if (self->method == MS_SPEC_METHOD_GRID) {
        //  Task k: value (k / stride_p) % n_p, the last parameter fastest.
        //  Duplicates are skipped and do not count against run_cap; stop
        //  after 4 x max_tasks candidates whatever happens.
        uint64_t limit = huge ? UINT64_MAX : product;
        uint64_t budget = 4 * (uint64_t) max_tasks;
        for (uint64_t k = 0; k < limit && self->n_tasks < cap && k < budget;
             k++) {
            uint64_t rest = k;
            for (size_t p = n_params; p-- > 0;) {
                size_t n = params[p].n_values;
                values[p] = params[p].values[rest % n];
                rest /= n;
            }
            rc = s_emit(ctx, self, &dedup, params, n_params, values, cfg,
                        &added);
            if (rc)
                goto cleanup;
            if (!added && n_dropped++ == 0)
                first_dropped = (size_t) k;
            if (!ctx->program)
                s_note_warmup(cfg, added, &warmup);
        }
    } else {
        ms_rng_t rng;
        ms_sobol_t *sobol = NULL;
        size_t dims = 0;
        for (size_t p = 0; p < n_params; p++)
            if (params[p].form != MS_SPEC_FORM_VALUE)
                dims++;
        if (self->method == MS_SPEC_METHOD_SOBOL) {
            if (dims > MS_SPEC_SOBOL_MAX_DIMS) {
                rc = ms_spec_fail(ctx, MS_ERR_INVALID, root, "parameters",
                                  "sobol supports at most %d swept parameters, "
                                  "not %zu",
                                  MS_SPEC_SOBOL_MAX_DIMS, dims);
                goto cleanup;
            }
            sobol = malloc(sizeof *sobol);
            if (!sobol) {
                rc = MS_ERR_NOMEM;
                goto cleanup;
            }
            ms_rng_seed(&rng, (uint64_t) self->sweep_seed, S_RNG_STREAM_SOBOL);
            ms_sobol_init(sobol, dims, &rng);
        } else
            ms_rng_seed(&rng, (uint64_t) self->sweep_seed, S_RNG_STREAM_RANDOM);
        for (size_t t = 0; t < cap; t++) {
            json_t **made = calloc(n_params ? n_params : 1, sizeof *made);
            if (!made) {
                rc = MS_ERR_NOMEM;
                free(sobol);
                goto cleanup;
            }
            size_t d = 0;
            for (size_t p = 0; p < n_params && rc == MS_OK; p++) {
                const ms_spec_param_t *param = &params[p];
                if (param->form == MS_SPEC_FORM_VALUE) {
                    values[p] = param->values[0];
                    continue;
                }
                double u = sobol ? ms_sobol_coord(sobol, d++) : 0;
                made[p] = s_typed(
                    param, sobol ? ms_distribution_quantile(param->law, u)
                                 : ms_distribution_sample(param->law, &rng));
                values[p] = made[p];
                if (!made[p])
                    rc = MS_ERR_NOMEM;
            }
            if (rc == MS_OK)
                rc = s_emit(ctx, self, &dedup, params, n_params, values, cfg,
                            &added);
            for (size_t p = 0; p < n_params; p++)
                json_decref(made[p]);
            free(made);
            if (rc) {
                free(sobol);
                goto cleanup;
            }
            if (!added && n_dropped++ == 0)
                first_dropped = t;
            if (!ctx->program)
                s_note_warmup(cfg, added, &warmup);
            if (sobol)
                ms_sobol_next(sobol);
        }
        free(sobol);
    }
    if (n_dropped)
        rc = ms_spec_warn(self,
                          "%zu duplicate task config%s dropped (the first at "
                          "expansion index %zu)",
                          n_dropped, n_dropped == 1 ? "" : "s", first_dropped);
    if (rc == MS_OK && warmup.n_tasks)
        rc = ms_spec_warn(
            self,
            "warmup_epochs %g is more than epochs %d (%zu task%s): "
            "the learning rate never leaves warm-up",
            warmup.warmup_epochs, (int) warmup.epochs, warmup.n_tasks,
            warmup.n_tasks == 1 ? "" : "s");
cleanup:
    free(dedup.slots);
    free(dedup.keys);
    free(values);
    free(cfg);
    return rc;
}

//  ==========================================================================
//  Public API

//  --------------------------------------------------------------------------
//  Default options.

void
ms_spec_options_defaults(ms_spec_options_t *opts)
{
    opts->max_tasks = MS_SPEC_DEFAULT_MAX_TASKS;
    opts->max_params = MS_SPEC_DEFAULT_MAX_PARAMS;
}

//  --------------------------------------------------------------------------
//  Walk the top-level mapping of a loaded spec.

static int
s_parse_document(ms_spec_ctx_t *ctx, ms_spec_t *self, int64_t max_tasks)
{
    yaml_node_t *root = yaml_document_get_root_node(ctx->doc);
    if (!root)
        return ms_diag_set(ctx->diag, "", "the spec is empty");
    int rc = ms_spec_check_mapping(ctx, root, "");
    if (rc)
        return rc;
    if ((rc = s_spec_defaults(self)))
        return rc;
    //  method first: how parameters are read depends on it.
    const yaml_node_t *params_node = NULL, *params_key = NULL;
    bool have_dataset = false;
    char names[200];
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        yaml_node_t *v = ms_spec_node(ctx, pair->value);
        if (strcmp(ms_spec_scalar(k), "program") == 0) {
            //  A program sweep: free-form parameters, no weights.
            ctx->program = true;
            self->is_program = true;
            self->keep_weights = MS_KEEP_WEIGHTS_NONE;
            self->program.resources.cpus = 1; // resources' defaults
        }
        if (strcmp(ms_spec_scalar(k), "method") != 0)
            continue;
        const char *method;
        if ((rc = ms_spec_get_string(ctx, v, "method", &method)))
            return rc;
        int m = ms_spec_index_of(ms_spec_method_names,
                                 MS_SPEC_COUNT(ms_spec_method_names), method);
        if (strcmp(method, "bayes") == 0)
            return ms_spec_fail(ctx, MS_ERR_UNSUPPORTED, v, "method",
                                "method: bayes is not yet supported (use grid, "
                                "random or sobol)");
        if (m < 0)
            return ms_spec_fail(
                ctx, MS_ERR_INVALID, v, "method",
                "unknown method '%s' (expected one of %s)", method,
                ms_spec_join(ms_spec_method_names,
                             MS_SPEC_COUNT(ms_spec_method_names), names,
                             sizeof names));
        self->method = (ms_spec_method_t) m;
    }
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        yaml_node_t *v = ms_spec_node(ctx, pair->value);
        const char *key = ms_spec_scalar(k);
        double real;
        int64_t integer;
        if (strcmp(key, "method") == 0)
            continue;
        else if (strcmp(key, "name") == 0) {
            const char *name;
            if ((rc = ms_spec_get_string(ctx, v, "name", &name)))
                return rc;
            if (!ms_spec_strdup_to(&self->name, name))
                return MS_ERR_NOMEM;
        } else if (strcmp(key, "dataset") == 0) {
            if ((rc = s_parse_dataset(ctx, self, v)))
                return rc;
            have_dataset = true;
        } else if (strcmp(key, "metric") == 0) {
            if ((rc = s_parse_metric(ctx, self, v)))
                return rc;
        } else if (strcmp(key, "run_cap") == 0) {
            if ((rc = ms_spec_get_number(ctx, v, "run_cap", true, &real,
                                         &integer)))
                return rc;
            if (integer < 1)
                return ms_spec_fail(ctx, MS_ERR_INVALID, v, "run_cap",
                                    "must be >= 1, not %lld",
                                    (long long) integer);
            self->run_cap = integer;
        } else if (strcmp(key, "sweep_seed") == 0) {
            if ((rc = ms_spec_get_number(ctx, v, "sweep_seed", true, &real,
                                         &integer)))
                return rc;
            self->sweep_seed = integer;
        } else if (strcmp(key, "parameters") == 0) {
            params_node = v;
            params_key = k;
        } else if (strcmp(key, "verify") == 0) {
            if ((rc = s_parse_verify(ctx, self, v)))
                return rc;
        } else if (strcmp(key, "program") == 0 ||
                   strcmp(key, "resources") == 0 ||
                   (strcmp(key, "command") == 0 && ctx->program)) {
            if ((rc = ms_spec_program_key(ctx, self, key, v)))
                return rc;
        } else if (strcmp(key, "command") == 0) {
            if ((rc = ms_spec_warn(self,
                                   "command: ignored without program (line "
                                   "%zu)",
                                   k->start_mark.line + 1)))
                return rc;
        } else if (strcmp(key, "keep_weights") == 0 && ctx->program) {
            return ms_spec_fail(ctx, MS_ERR_INVALID, k, key,
                                "a program sweep has no weights to keep (the "
                                "files a run leaves in outputs/ are kept)");
        } else if (strcmp(key, "keep_weights") == 0) {
            const char *keep;
            if ((rc = ms_spec_get_string(ctx, v, "keep_weights", &keep)))
                return rc;
            int i = ms_spec_index_of(ms_spec_keep_names,
                                     MS_SPEC_COUNT(ms_spec_keep_names), keep);
            if (i < 0)
                return ms_spec_fail(
                    ctx, MS_ERR_INVALID, v, "keep_weights",
                    "unknown value '%s' (expected one of %s)", keep,
                    ms_spec_join(ms_spec_keep_names,
                                 MS_SPEC_COUNT(ms_spec_keep_names), names,
                                 sizeof names));
            self->keep_weights = (ms_keep_weights_t) i;
        } else if (strcmp(key, "early_terminate") == 0)
            return ms_spec_fail(ctx, MS_ERR_UNSUPPORTED, k, "early_terminate",
                                "early_terminate is not yet supported");
        else if (ms_spec_index_of(s_wandb_keys, MS_SPEC_COUNT(s_wandb_keys),
                                  key) >= 0) {
            if ((rc =
                     ms_spec_warn(self,
                                  "%s: ignored (a Weights & Biases key with no "
                                  "meaning here; line %zu)",
                                  key, k->start_mark.line + 1)))
                return rc;
        } else
            return ms_spec_fail(ctx, MS_ERR_INVALID, k, key,
                                "unknown key (expected name, dataset, method, "
                                "metric, run_cap, sweep_seed, parameters, "
                                "verify, keep_weights, program, command, "
                                "resources)");
    }
    if (!have_dataset && !ctx->program)
        return ms_diag_set(ctx->diag, "dataset",
                           "missing: name a built-in dataset (fashion-mnist) "
                           "or give {train: PATH, test: PATH}");
    ms_spec_dataset_view(self);
    //  Parameters.
    ms_spec_param_t *params = NULL;
    size_t n_params = 0;
    if (params_node && ctx->program)
        rc = ms_spec_program_params(ctx, self, params_node, &params, &n_params);
    else if (params_node) {
        if ((rc = ms_spec_check_mapping(ctx, params_node, "parameters")))
            return rc;
        size_t n = (size_t) (params_node->data.mapping.pairs.top -
                             params_node->data.mapping.pairs.start);
        params = calloc(n ? n : 1, sizeof *params);
        if (!params)
            return MS_ERR_NOMEM;
        for (size_t i = 0; i < n && rc == MS_OK; i++) {
            yaml_node_pair_t *pair = &params_node->data.mapping.pairs.start[i];
            yaml_node_t *k = ms_spec_node(ctx, pair->key);
            char path[MS_SPEC_PATH_MAX];
            ms_spec_pathf(path, "parameters.%s", ms_spec_scalar(k));
            rc =
                ms_spec_parse_param(ctx, self, ms_spec_scalar(k), path, k,
                                    ms_spec_node(ctx, pair->value), &params[i]);
            n_params = i + 1;
        }
        if (rc == MS_OK) {
            qsort(params, n_params, sizeof *params, s_param_compare);
            bool sizes = false, uniform = false;
            for (size_t i = 0; i < n_params; i++) {
                if (strcmp(params[i].name, "hidden_sizes") == 0)
                    sizes = true;
                if (strcmp(params[i].name, "hidden_layers") == 0 ||
                    strcmp(params[i].name, "width") == 0)
                    uniform = true;
            }
            if (sizes && uniform)
                rc = ms_spec_fail(
                    ctx, MS_ERR_INVALID, params_key, "parameters.hidden_sizes",
                    "give either hidden_sizes or hidden_layers/width, "
                    "not both");
        }
    }
    if (rc == MS_OK && n_params == 0)
        rc = ms_spec_warn(self, ctx->program
                                    ? "no parameters swept: one run"
                                    : "no parameters swept: one task with "
                                      "every default");
    if (rc == MS_OK)
        rc = s_expand(ctx, self, params, n_params,
                      params_key ? params_key : root, max_tasks);
    for (size_t i = 0; i < n_params; i++)
        ms_spec_param_free(&params[i]);
    free(params);
    if (rc)
        return rc;
    if (ms_spec_inputs_hashed(self))
        return ms_spec_compute_ids(self);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Parse and expand a spec.

int
ms_spec_parse(const char *text, size_t n, const ms_spec_options_t *opts,
              ms_spec_t **out, ms_diag_t *diag)
{
    *out = NULL;
    ms_diag_clear(diag);
    int64_t max_tasks = opts && opts->max_tasks > 0 ? opts->max_tasks
                                                    : MS_SPEC_DEFAULT_MAX_TASKS;
    int prc = ms_spec_text_check(text, n, diag);
    if (prc != MS_OK)
        return prc;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return MS_ERR_NOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *) text, n);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = ms_spec_text_yaml_error(&parser, diag);
        yaml_parser_delete(&parser);
        return rc;
    }
    ms_spec_t *self = calloc(1, sizeof *self);
    ms_spec_ctx_t ctx = {&doc, diag,
                         opts && opts->max_params > 0
                             ? opts->max_params
                             : MS_SPEC_DEFAULT_MAX_PARAMS,
                         false};
    int rc = self ? s_parse_document(&ctx, self, max_tasks) : MS_ERR_NOMEM;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc) {
        ms_spec_destroy(&self);
        return rc;
    }
    *out = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a spec.

void
ms_spec_destroy(ms_spec_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_spec_t *self = *self_p;
    free(self->name);
    free(self->dataset_name);
    free(self->train_path);
    free(self->test_path);
    free(self->label);
    for (size_t i = 0; self->categorical && i < self->n_categorical; i++)
        free(self->categorical[i]);
    free(self->categorical);
    free(self->metric_name);
    free(self->program_path);
    json_decref(self->command);
    for (size_t i = 0; i < self->n_warnings; i++)
        free(self->warnings[i]);
    free(self->warnings);
    for (size_t i = 0; i < self->n_tasks; i++)
        free(self->task_json[i]);
    free(self->task_json);
    free(self->task_json_len);
    free(self->task_ids);
    free(self->canonical);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Hash the dataset files named in the spec.

int
ms_spec_bind_dataset_files(ms_spec_t *self, ms_diag_t *diag)
{
    if (self->dataset_name)
        return MS_OK;
    if (self->is_program && !self->train_path && !self->dataset.hashed)
        return MS_OK; // a program sweep without a dataset
    if (!self->train_path || !self->test_path)
        return ms_diag_set(diag, "dataset",
                           "this spec names no files (loaded from its "
                           "canonical form)");
    ms_hash_t train, test;
    int rc = ms_hash_file(self->train_path, &train, diag);
    if (rc == MS_OK)
        rc = ms_hash_file(self->test_path, &test, diag);
    if (rc)
        return rc;
    return ms_spec_set_dataset_hashes(self, &train, &test);
}

//  --------------------------------------------------------------------------
//  Set the dataset file hashes and compute the ids.

int
ms_spec_set_dataset_hashes(ms_spec_t *self, const ms_hash_t *train,
                           const ms_hash_t *test)
{
    if (self->dataset_name)
        return MS_ERR_INVALID;
    self->dataset.train_hash = *train;
    self->dataset.test_hash = *test;
    self->dataset.hashed = true;
    return ms_spec_inputs_hashed(self) ? ms_spec_compute_ids(self) : MS_OK;
}

//  --------------------------------------------------------------------------
//  Every input hash the ids cover is known.

bool
ms_spec_inputs_hashed(const ms_spec_t *self)
{
    bool dataset = self->dataset_name || self->dataset.hashed ||
                   (self->is_program && !self->train_path);
    return dataset && (!self->is_program || self->program.hashed);
}

//  --------------------------------------------------------------------------
//  A program sweep's program.

const ms_spec_program_t *
ms_spec_program(const ms_spec_t *self)
{
    return self->is_program ? &self->program : NULL;
}

//  --------------------------------------------------------------------------
//  Set a program sweep's blob hash.

int
ms_spec_set_program_blob(ms_spec_t *self, const ms_hash_t *blob)
{
    if (!self->is_program)
        return MS_ERR_INVALID;
    self->program.blob = *blob;
    self->program.hashed = true;
    return ms_spec_inputs_hashed(self) ? ms_spec_compute_ids(self) : MS_OK;
}

//  --------------------------------------------------------------------------
//  Are ids available?

bool
ms_spec_ids_ready(const ms_spec_t *self)
{
    return self->ids_ready;
}

//  --------------------------------------------------------------------------
//  Sweep name.

const char *
ms_spec_name(const ms_spec_t *self)
{
    return self->name;
}

//  --------------------------------------------------------------------------
//  Dataset descriptor.

const ms_spec_dataset_t *
ms_spec_dataset(const ms_spec_t *self)
{
    return &self->dataset;
}

//  --------------------------------------------------------------------------
//  Expansion method.

ms_spec_method_t
ms_spec_method(const ms_spec_t *self)
{
    return self->method;
}

//  --------------------------------------------------------------------------
//  Metric.

const ms_spec_metric_t *
ms_spec_metric(const ms_spec_t *self)
{
    return &self->metric;
}

//  --------------------------------------------------------------------------
//  Better by the metric.

bool
ms_spec_metric_improves(const ms_spec_metric_t *m, double value, bool have_best,
                        double best)
{
    if (!isfinite(value))
        return false;
    return !have_best || (m->maximize ? value > best : value < best);
}

//  --------------------------------------------------------------------------
//  A row's value of the metric.

double
ms_spec_metric_value(const ms_spec_metric_t *m, const json_t *row)
{
    const json_t *v = json_object_get(row, m->name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

//  --------------------------------------------------------------------------
//  Verification parameters.

const ms_spec_verify_t *
ms_spec_verify(const ms_spec_t *self)
{
    return &self->verify;
}

//  --------------------------------------------------------------------------
//  Which weights to keep.

ms_keep_weights_t
ms_spec_keep_weights(const ms_spec_t *self)
{
    return self->keep_weights;
}

//  --------------------------------------------------------------------------
//  run_cap as given.

int64_t
ms_spec_run_cap(const ms_spec_t *self)
{
    return self->run_cap;
}

//  --------------------------------------------------------------------------
//  sweep_seed.

int64_t
ms_spec_sweep_seed(const ms_spec_t *self)
{
    return self->sweep_seed;
}

//  --------------------------------------------------------------------------
//  Number of warnings.

size_t
ms_spec_warning_count(const ms_spec_t *self)
{
    return self->n_warnings;
}

//  --------------------------------------------------------------------------
//  The i-th warning.

const char *
ms_spec_warning(const ms_spec_t *self, size_t i)
{
    return i < self->n_warnings ? self->warnings[i] : NULL;
}

//  --------------------------------------------------------------------------
//  Number of tasks.

size_t
ms_spec_task_count(const ms_spec_t *self)
{
    return self->n_tasks;
}

//  --------------------------------------------------------------------------
//  Task i's config, decoded from its canonical JSON.

int
ms_spec_task_config(const ms_spec_t *self, size_t i, ms_train_config_t *cfg)
{
    if (i >= self->n_tasks)
        return MS_ERR_NOTFOUND;
    if (self->is_program) // a program's config is its own
        return MS_ERR_INVALID;
    json_t *obj =
        json_loadb(self->task_json[i], self->task_json_len[i], 0, NULL);
    if (!obj)
        return MS_ERR_NOMEM;
    int rc = ms_config_decode_json(obj, cfg, NULL);
    json_decref(obj);
    return rc;
}

//  --------------------------------------------------------------------------
//  Task i's canonical JSON.

const char *
ms_spec_task_json(const ms_spec_t *self, size_t i)
{
    return i < self->n_tasks ? self->task_json[i] : NULL;
}

//  --------------------------------------------------------------------------
//  Task i's id.

const ms_hash_t *
ms_spec_task_id(const ms_spec_t *self, size_t i)
{
    return self->ids_ready && i < self->n_tasks ? &self->task_ids[i] : NULL;
}

//  --------------------------------------------------------------------------
//  The sweep id.

const ms_hash_t *
ms_spec_sweep_id(const ms_spec_t *self)
{
    return self->ids_ready ? &self->sweep_id : NULL;
}

//  --------------------------------------------------------------------------
//  The canonical expanded spec.

const char *
ms_spec_canonical(const ms_spec_t *self, size_t *len)
{
    if (!self->ids_ready)
        return NULL;
    if (len)
        *len = self->canonical_len;
    return self->canonical;
}

//  --------------------------------------------------------------------------
//  Method name.

const char *
ms_spec_method_name(ms_spec_method_t method)
{
    return (size_t) method < MS_SPEC_COUNT(ms_spec_method_names)
               ? ms_spec_method_names[method]
               : "?";
}

//  --------------------------------------------------------------------------
//  keep_weights name.

const char *
ms_keep_weights_name(ms_keep_weights_t keep)
{
    return (size_t) keep < MS_SPEC_COUNT(ms_spec_keep_names)
               ? ms_spec_keep_names[keep]
               : "?";
}
