/*  =========================================================================
    ms_config_json - a training config as JSON, and setting one parameter
    by name (specs, the CLI)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One table lists every parameter with its type; encoding, decoding,
    setting by name and parsing command-line text all go through it, so a
    new parameter is added in one place (plus ms_config.h). The JSON form
    is what task ids hash (through ms_wire_canon), so encode always writes
    every key, floats always as reals and ints always as integers.
*/
#include "ms_config_json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Every parameter, in sorted name order.
typedef enum {
    S_P_ACTIVATION,
    S_P_ARCHITECTURE,
    S_P_BATCH_SIZE,
    S_P_BETA1,
    S_P_BETA2,
    S_P_BLOCK_LAYERS,
    S_P_CLIP_NORM,
    S_P_DROPOUT,
    S_P_EARLY_STOPPING,
    S_P_EPOCHS,
    S_P_EPS,
    S_P_GAIN,
    S_P_GAMMA,
    S_P_HIDDEN_LAYERS,
    S_P_HIDDEN_SIZES,
    S_P_INIT,
    S_P_KIND,
    S_P_L2,
    S_P_LEAKY_SLOPE,
    S_P_LEARNING_RATE,
    S_P_LOSS,
    S_P_MOMENTUM,
    S_P_NORM,
    S_P_OPTIMIZER,
    S_P_PATIENCE,
    S_P_RESIDUAL_SCALE,
    S_P_SCALE,
    S_P_SCHEDULE,
    S_P_SEED,
    S_P_STEP_SIZE,
    S_P_VALIDATION_SPLIT,
    S_P_WARMUP_EPOCHS,
    S_P_WIDTH,
    S_P_COUNT
} s_param_t;

typedef struct {
    const char *name;            // '_' spelling, as in specs and JSON
    ms_config_param_type_t type; // what a value must be
} s_param_info_t;

static const s_param_info_t s_params[S_P_COUNT] = {
    [S_P_ACTIVATION] = {"activation", MS_CONFIG_PARAM_ENUM},
    [S_P_ARCHITECTURE] = {"architecture", MS_CONFIG_PARAM_ENUM},
    [S_P_BATCH_SIZE] = {"batch_size", MS_CONFIG_PARAM_INT},
    [S_P_BETA1] = {"beta1", MS_CONFIG_PARAM_FLOAT},
    [S_P_BETA2] = {"beta2", MS_CONFIG_PARAM_FLOAT},
    [S_P_BLOCK_LAYERS] = {"block_layers", MS_CONFIG_PARAM_INT},
    [S_P_CLIP_NORM] = {"clip_norm", MS_CONFIG_PARAM_FLOAT},
    [S_P_DROPOUT] = {"dropout", MS_CONFIG_PARAM_FLOAT},
    [S_P_EARLY_STOPPING] = {"early_stopping", MS_CONFIG_PARAM_BOOL},
    [S_P_EPOCHS] = {"epochs", MS_CONFIG_PARAM_INT},
    [S_P_EPS] = {"eps", MS_CONFIG_PARAM_FLOAT},
    [S_P_GAIN] = {"gain", MS_CONFIG_PARAM_FLOAT},
    [S_P_GAMMA] = {"gamma", MS_CONFIG_PARAM_FLOAT},
    [S_P_HIDDEN_LAYERS] = {"hidden_layers", MS_CONFIG_PARAM_INT},
    [S_P_HIDDEN_SIZES] = {"hidden_sizes", MS_CONFIG_PARAM_SIZES},
    [S_P_INIT] = {"init", MS_CONFIG_PARAM_ENUM},
    [S_P_KIND] = {"kind", MS_CONFIG_PARAM_ENUM},
    [S_P_L2] = {"l2", MS_CONFIG_PARAM_FLOAT},
    [S_P_LEAKY_SLOPE] = {"leaky_slope", MS_CONFIG_PARAM_FLOAT},
    [S_P_LEARNING_RATE] = {"learning_rate", MS_CONFIG_PARAM_FLOAT},
    [S_P_LOSS] = {"loss", MS_CONFIG_PARAM_ENUM},
    [S_P_MOMENTUM] = {"momentum", MS_CONFIG_PARAM_FLOAT},
    [S_P_NORM] = {"norm", MS_CONFIG_PARAM_ENUM},
    [S_P_OPTIMIZER] = {"optimizer", MS_CONFIG_PARAM_ENUM},
    [S_P_PATIENCE] = {"patience", MS_CONFIG_PARAM_INT},
    [S_P_RESIDUAL_SCALE] = {"residual_scale", MS_CONFIG_PARAM_ENUM},
    [S_P_SCALE] = {"scale", MS_CONFIG_PARAM_ENUM},
    [S_P_SCHEDULE] = {"schedule", MS_CONFIG_PARAM_ENUM},
    [S_P_SEED] = {"seed", MS_CONFIG_PARAM_INT},
    [S_P_STEP_SIZE] = {"step_size", MS_CONFIG_PARAM_INT},
    [S_P_VALIDATION_SPLIT] = {"validation_split", MS_CONFIG_PARAM_FLOAT},
    [S_P_WARMUP_EPOCHS] = {"warmup_epochs", MS_CONFIG_PARAM_FLOAT},
    [S_P_WIDTH] = {"width", MS_CONFIG_PARAM_INT},
};

#define S_KEY_MAX 64 // longest key we normalise

//  --------------------------------------------------------------------------
//  Find a parameter by name, '-' read as '_'; -1 when unknown.

static int
s_find(const char *key)
{
    if (!key)
        return -1;
    char norm[S_KEY_MAX];
    size_t n = strlen(key);
    if (n == 0 || n >= sizeof norm)
        return -1;
    for (size_t i = 0; i <= n; i++)
        norm[i] = key[i] == '-' ? '_' : key[i];
    for (int i = 0; i < S_P_COUNT; i++)
        if (strcmp(s_params[i].name, norm) == 0)
            return i;
    return -1;
}

//  --------------------------------------------------------------------------
//  Name of value v of an enum parameter, or NULL past its last value.

static const char *
s_enum_name(int param, int v)
{
    const char *name = "?";
    switch (param) {
    case S_P_ACTIVATION:
        name = ms_activation_name((ms_activation_t) v);
        break;
    case S_P_ARCHITECTURE:
        name = ms_architecture_name((ms_architecture_t) v);
        break;
    case S_P_NORM:
        name = ms_norm_name((ms_norm_t) v);
        break;
    case S_P_RESIDUAL_SCALE:
        name = ms_residual_scale_name((ms_residual_scale_t) v);
        break;
    case S_P_INIT:
        name = ms_init_name((ms_init_t) v);
        break;
    case S_P_KIND:
        name = ms_task_kind_name((ms_task_kind_t) v);
        break;
    case S_P_LOSS:
        name = ms_loss_name((ms_loss_kind_t) v);
        break;
    case S_P_OPTIMIZER:
        name = ms_optim_name((ms_optim_kind_t) v);
        break;
    case S_P_SCALE:
        name = ms_scale_name((ms_scale_t) v);
        break;
    case S_P_SCHEDULE:
        name = ms_schedule_name((ms_schedule_t) v);
        break;
    default:
        break;
    }
    return strcmp(name, "?") == 0 ? NULL : name;
}

//  --------------------------------------------------------------------------
//  Value of an enum parameter's name in *out; false when unknown.

static bool
s_enum_parse(int param, const char *name, int *out)
{
    for (int v = 0; v < 64; v++) {
        const char *candidate = s_enum_name(param, v);
        if (!candidate)
            return false;
        if (strcmp(candidate, name) == 0) {
            *out = v;
            return true;
        }
    }
    return false;
}

//  --------------------------------------------------------------------------
//  "a, b, c" list of an enum's names.

static const char *
s_choices(int param, char *out, size_t n)
{
    if (n == 0)
        return out;
    out[0] = '\0';
    size_t len = 0;
    for (int v = 0; v < 64; v++) {
        const char *name = s_enum_name(param, v);
        if (!name)
            break;
        int w = snprintf(out + len, n - len, "%s%s", v ? ", " : "", name);
        if (w < 0 || (size_t) w >= n - len)
            break;
        len += (size_t) w;
    }
    return out;
}

//  --------------------------------------------------------------------------
//  Current value of an enum field of cfg.

static int
s_enum_get(const ms_train_config_t *cfg, int param)
{
    switch (param) {
    case S_P_ACTIVATION:
        return (int) cfg->activation;
    case S_P_ARCHITECTURE:
        return (int) cfg->architecture;
    case S_P_NORM:
        return (int) cfg->norm;
    case S_P_RESIDUAL_SCALE:
        return (int) cfg->residual_scale;
    case S_P_INIT:
        return (int) cfg->init;
    case S_P_KIND:
        return (int) cfg->kind;
    case S_P_LOSS:
        return (int) cfg->loss;
    case S_P_OPTIMIZER:
        return (int) cfg->optimizer;
    case S_P_SCALE:
        return (int) cfg->scale;
    case S_P_SCHEDULE:
        return (int) cfg->schedule;
    default:
        return 0;
    }
}

//  --------------------------------------------------------------------------
//  Address of a float field of cfg.

static double *
s_float_field(ms_train_config_t *cfg, int param)
{
    switch (param) {
    case S_P_BETA1:
        return &cfg->beta1;
    case S_P_BETA2:
        return &cfg->beta2;
    case S_P_CLIP_NORM:
        return &cfg->clip_norm;
    case S_P_GAIN:
        return &cfg->gain;
    case S_P_DROPOUT:
        return &cfg->dropout;
    case S_P_EPS:
        return &cfg->eps;
    case S_P_GAMMA:
        return &cfg->gamma;
    case S_P_L2:
        return &cfg->l2;
    case S_P_LEAKY_SLOPE:
        return &cfg->leaky_slope;
    case S_P_LEARNING_RATE:
        return &cfg->learning_rate;
    case S_P_MOMENTUM:
        return &cfg->momentum;
    case S_P_VALIDATION_SPLIT:
        return &cfg->validation_split;
    case S_P_WARMUP_EPOCHS:
        return &cfg->warmup_epochs;
    default:
        return NULL;
    }
}

//  --------------------------------------------------------------------------
//  Address of an int32 field of cfg (not the architecture ones).

static int32_t *
s_int32_field(ms_train_config_t *cfg, int param)
{
    switch (param) {
    case S_P_BATCH_SIZE:
        return &cfg->batch_size;
    case S_P_BLOCK_LAYERS:
        return &cfg->block_layers;
    case S_P_EPOCHS:
        return &cfg->epochs;
    case S_P_PATIENCE:
        return &cfg->patience;
    case S_P_STEP_SIZE:
        return &cfg->step_size;
    default:
        return NULL;
    }
}

//  --------------------------------------------------------------------------
//  Read an integral JSON number (integer, or real with integral value).

static bool
s_json_int(const json_t *value, int64_t *out)
{
    if (json_is_integer(value)) {
        *out = (int64_t) json_integer_value(value);
        return true;
    }
    if (json_is_real(value)) {
        double v = json_real_value(value);
        if (isfinite(v) && v == floor(v) && v >= -9.2e18 && v <= 9.2e18) {
            *out = (int64_t) v;
            return true;
        }
    }
    return false;
}

//  --------------------------------------------------------------------------
//  Short description of a JSON value's type, for messages.

static const char *
s_json_type_name(const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT:
        return "a mapping";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a float";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

//  --------------------------------------------------------------------------
//  True for a parameter added after the first sweeps were made (DESIGN.md:
//  "architecture" down) whose value in cfg is its default: such a key is
//  left out of the JSON, so the task ids of older sweeps do not change.

static bool
s_omitted_at_default(const ms_train_config_t *cfg, int param)
{
    ms_train_config_t d;
    ms_train_config_defaults(&d);
    switch (param) {
    case S_P_ARCHITECTURE:
        return cfg->architecture == d.architecture;
    case S_P_BLOCK_LAYERS:
        return cfg->block_layers == d.block_layers;
    case S_P_NORM:
        return cfg->norm == d.norm;
    case S_P_RESIDUAL_SCALE:
        return cfg->residual_scale == d.residual_scale;
    case S_P_GAIN:
        return cfg->gain == d.gain;
    case S_P_WARMUP_EPOCHS:
        return cfg->warmup_epochs == d.warmup_epochs;
    case S_P_CLIP_NORM:
        return cfg->clip_norm == d.clip_norm;
    default:
        return false;
    }
}

//  --------------------------------------------------------------------------
//  Encode a config as a JSON object; all: the parameters omitted at their
//  defaults too.

static json_t *
s_encode(const ms_train_config_t *cfg, bool all)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    ms_train_config_t copy = *cfg;
    bool ok = true;
    for (int p = 0; p < S_P_COUNT && ok; p++) {
        const char *name = s_params[p].name;
        json_t *value = NULL;
        if (!all && s_omitted_at_default(cfg, p))
            continue;
        switch (s_params[p].type) {
        case MS_CONFIG_PARAM_ENUM: {
            const char *v = s_enum_name(p, s_enum_get(cfg, p));
            value = v ? json_string(v) : NULL;
            break;
        }
        case MS_CONFIG_PARAM_FLOAT: {
            double v = *s_float_field(&copy, p);
            value = isfinite(v) ? json_real(v) : NULL;
            break;
        }
        case MS_CONFIG_PARAM_BOOL:
            value = json_boolean(cfg->early_stopping);
            break;
        case MS_CONFIG_PARAM_INT:
            if (p == S_P_HIDDEN_LAYERS || p == S_P_WIDTH) {
                if (cfg->explicit_sizes)
                    continue;
                value =
                    json_integer(p == S_P_WIDTH ? cfg->width : cfg->n_hidden);
            } else if (p == S_P_SEED)
                value = json_integer((json_int_t) cfg->seed);
            else
                value = json_integer(*s_int32_field(&copy, p));
            break;
        case MS_CONFIG_PARAM_SIZES:
            if (!cfg->explicit_sizes)
                continue;
            value = json_array();
            for (int32_t i = 0; value && i < cfg->n_hidden; i++)
                if (json_array_append_new(value,
                                          json_integer(cfg->hidden_sizes[i])))
                    ok = false;
            break;
        case MS_CONFIG_PARAM_UNKNOWN:
            break;
        }
        if (!value || json_object_set_new(obj, name, value) != 0)
            ok = false;
    }
    if (!ok) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

//  --------------------------------------------------------------------------
//  Encode a config as a JSON object (the canonical form).

json_t *
ms_config_encode_json(const ms_train_config_t *cfg)
{
    return s_encode(cfg, false);
}

//  --------------------------------------------------------------------------
//  Encode a config with every parameter, those at their defaults too.

json_t *
ms_config_encode_json_all(const ms_train_config_t *cfg)
{
    return s_encode(cfg, true);
}

//  --------------------------------------------------------------------------
//  Set a parameter by table index (value type-checked).

static int
s_set(ms_train_config_t *cfg, int p, const char *key, const json_t *value,
      ms_diag_t *diag)
{
    const char *name = s_params[p].name;
    switch (s_params[p].type) {
    case MS_CONFIG_PARAM_ENUM: {
        char choices[256];
        if (p == S_P_RESIDUAL_SCALE && json_is_number(value) &&
            json_number_value(value) == 1.0) {
            cfg->residual_scale = MS_RESIDUAL_SCALE_ONE; // YAML's 1
            return MS_OK;
        }
        if (!json_is_string(value))
            return ms_diag_set(diag, key, "%s must be one of %s, not %s", name,
                               s_choices(p, choices, sizeof choices),
                               s_json_type_name(value));
        int v;
        if (!s_enum_parse(p, json_string_value(value), &v))
            return ms_diag_set(diag, key,
                               "unknown %s '%s' (expected one of %s)", name,
                               json_string_value(value),
                               s_choices(p, choices, sizeof choices));
        switch (p) {
        case S_P_ACTIVATION:
            cfg->activation = (ms_activation_t) v;
            break;
        case S_P_INIT:
            cfg->init = (ms_init_t) v;
            break;
        case S_P_KIND:
            cfg->kind = (ms_task_kind_t) v;
            break;
        case S_P_LOSS:
            cfg->loss = (ms_loss_kind_t) v;
            break;
        case S_P_OPTIMIZER:
            cfg->optimizer = (ms_optim_kind_t) v;
            break;
        case S_P_SCALE:
            cfg->scale = (ms_scale_t) v;
            break;
        case S_P_SCHEDULE:
            cfg->schedule = (ms_schedule_t) v;
            break;
        case S_P_ARCHITECTURE:
            cfg->architecture = (ms_architecture_t) v;
            break;
        case S_P_NORM:
            cfg->norm = (ms_norm_t) v;
            break;
        case S_P_RESIDUAL_SCALE:
            cfg->residual_scale = (ms_residual_scale_t) v;
            break;
        default:
            break;
        }
        return MS_OK;
    }
    case MS_CONFIG_PARAM_FLOAT: {
        if (p == S_P_GAIN && json_is_string(value) &&
            strcmp(json_string_value(value), "auto") == 0) {
            cfg->gain = 0.0; // auto: the activation's gain
            return MS_OK;
        }
        if (!json_is_number(value))
            return ms_diag_set(diag, key, "%s must be a number, not %s", name,
                               s_json_type_name(value));
        double v = json_number_value(value);
        if (!isfinite(v))
            return ms_diag_set(diag, key, "%s must be finite", name);
        if (p == S_P_GAIN && !(v > 0))
            return ms_diag_set(diag, key, "gain must be auto or > 0, not %g",
                               v);
        *s_float_field(cfg, p) = v;
        return MS_OK;
    }
    case MS_CONFIG_PARAM_BOOL:
        if (!json_is_boolean(value))
            return ms_diag_set(diag, key, "%s must be true or false, not %s",
                               name, s_json_type_name(value));
        cfg->early_stopping = json_is_true(value);
        return MS_OK;
    case MS_CONFIG_PARAM_INT: {
        int64_t v;
        if (!s_json_int(value, &v) && json_is_real(value)) {
            //  The shortest text that reads back as the value (2.5, 0.1).
            char text[40];
            double r = json_real_value(value);
            for (int prec = 1; prec <= 17; prec++) {
                snprintf(text, sizeof text, "%.*g", prec, r);
                if (strtod(text, NULL) == r)
                    break;
            }
            return ms_diag_set(diag, key,
                               "%s must be an integer, not the non-integral "
                               "number %s",
                               name, text);
        }
        if (!s_json_int(value, &v))
            return ms_diag_set(diag, key, "%s must be an integer, not %s", name,
                               s_json_type_name(value));
        if (p == S_P_SEED) {
            cfg->seed = v;
            return MS_OK;
        }
        if (p == S_P_HIDDEN_LAYERS || p == S_P_WIDTH) {
            int64_t layers = p == S_P_HIDDEN_LAYERS ? v : cfg->n_hidden;
            int64_t width = p == S_P_WIDTH        ? v
                            : cfg->explicit_sizes ? 100
                                                  : cfg->width;
            if (layers < 0 || layers > MS_MAX_HIDDEN_LAYERS)
                return ms_diag_set_code(diag, MS_ERR_RANGE, key,
                                        "hidden_layers must be 0..%d, not %lld",
                                        MS_MAX_HIDDEN_LAYERS, (long long) v);
            if (width < 1 || width > MS_MAX_WIDTH)
                return ms_diag_set_code(diag, MS_ERR_RANGE, key,
                                        "width must be 1..%d, not %lld",
                                        MS_MAX_WIDTH, (long long) v);
            ms_train_config_set_uniform(cfg, (int32_t) layers, (int32_t) width);
            return MS_OK;
        }
        if (v < INT32_MIN || v > INT32_MAX)
            return ms_diag_set_code(diag, MS_ERR_RANGE, key,
                                    "%s %lld does not fit in 32 bits", name,
                                    (long long) v);
        *s_int32_field(cfg, p) = (int32_t) v;
        return MS_OK;
    }
    case MS_CONFIG_PARAM_SIZES: {
        if (!json_is_array(value))
            return ms_diag_set(diag, key,
                               "hidden_sizes must be a list of integers, "
                               "not %s",
                               s_json_type_name(value));
        size_t n = json_array_size(value);
        if (n > MS_MAX_HIDDEN_LAYERS)
            return ms_diag_set_code(diag, MS_ERR_RANGE, key,
                                    "hidden_sizes has %zu layers, at most %d",
                                    n, MS_MAX_HIDDEN_LAYERS);
        for (size_t i = 0; i < n; i++) {
            int64_t w;
            if (!s_json_int(json_array_get(value, i), &w))
                return ms_diag_set(diag, key,
                                   "hidden_sizes[%zu] must be an integer, "
                                   "not %s",
                                   i,
                                   s_json_type_name(json_array_get(value, i)));
            if (w < 1 || w > MS_MAX_WIDTH)
                return ms_diag_set_code(diag, MS_ERR_RANGE, key,
                                        "hidden_sizes[%zu] must be 1..%d, "
                                        "not %lld",
                                        i, MS_MAX_WIDTH, (long long) w);
        }
        for (size_t i = 0; i < n; i++) {
            int64_t w = 0;
            s_json_int(json_array_get(value, i), &w);
            cfg->hidden_sizes[i] = (int32_t) w;
        }
        cfg->n_hidden = (int32_t) n;
        cfg->width = 0;
        cfg->explicit_sizes = true;
        return MS_OK;
    }
    case MS_CONFIG_PARAM_UNKNOWN:
        break;
    }
    return ms_diag_set(diag, key, "unknown parameter");
}

//  --------------------------------------------------------------------------
//  Set one parameter by name.

int
ms_config_set_param(ms_train_config_t *cfg, const char *key,
                    const json_t *value, ms_diag_t *diag)
{
    int p = s_find(key);
    if (p < 0)
        return ms_diag_set(diag, key ? key : "", "unknown parameter");
    if (!value)
        return ms_diag_set(diag, key, "missing value");
    return s_set(cfg, p, key, value, diag);
}

//  --------------------------------------------------------------------------
//  Decode a JSON object into a config.

int
ms_config_decode_json(const json_t *obj, ms_train_config_t *cfg,
                      ms_diag_t *diag)
{
    if (!json_is_object(obj))
        return ms_diag_set(diag, "", "a config must be a JSON object");
    ms_train_config_defaults(cfg);
    const char *key;
    json_t *value;
    json_t *mutable_obj = (json_t *) obj;
    json_object_foreach(mutable_obj, key, value)
    {
        int p = s_find(key);
        if (p < 0 || strchr(key, '-'))
            return ms_diag_set(diag, key, "unknown parameter");
    }
    bool sizes = json_object_get(obj, "hidden_sizes") != NULL;
    if (sizes && (json_object_get(obj, "hidden_layers") ||
                  json_object_get(obj, "width")))
        return ms_diag_set(diag, "hidden_sizes",
                           "give either hidden_sizes or hidden_layers/width, "
                           "not both");
    //  Architecture first, then the rest in table order.
    static const int s_first[] = {S_P_HIDDEN_SIZES, S_P_HIDDEN_LAYERS,
                                  S_P_WIDTH};
    for (size_t i = 0; i < sizeof s_first / sizeof s_first[0]; i++) {
        const char *name = s_params[s_first[i]].name;
        json_t *v = json_object_get(obj, name);
        if (v) {
            int rc = s_set(cfg, s_first[i], name, v, diag);
            if (rc)
                return rc;
        }
    }
    for (int p = 0; p < S_P_COUNT; p++) {
        if (p == S_P_HIDDEN_SIZES || p == S_P_HIDDEN_LAYERS || p == S_P_WIDTH)
            continue;
        json_t *v = json_object_get(obj, s_params[p].name);
        if (v) {
            int rc = s_set(cfg, p, s_params[p].name, v, diag);
            if (rc)
                return rc;
        }
    }
    if (!json_object_get(obj, "init"))
        cfg->init = ms_init_default_for(cfg->activation);
    return ms_train_config_check(cfg, diag);
}

//  --------------------------------------------------------------------------
//  Copy text without surrounding blanks into out; false if too long.

static bool
s_trim(const char *text, char *out, size_t n)
{
    while (*text == ' ' || *text == '\t')
        text++;
    size_t len = strlen(text);
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    if (len >= n)
        return false;
    memcpy(out, text, len);
    out[len] = '\0';
    return true;
}

//  --------------------------------------------------------------------------
//  Parse a whole string as an integer.

static bool
s_parse_int(const char *text, int64_t *out)
{
    char buf[64];
    if (!s_trim(text, buf, sizeof buf) || !buf[0])
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

//  --------------------------------------------------------------------------
//  Set one parameter from command-line text.

int
ms_config_set_param_string(ms_train_config_t *cfg, const char *key,
                           const char *text, ms_diag_t *diag)
{
    int p = s_find(key);
    if (p < 0)
        return ms_diag_set(diag, key ? key : "", "unknown parameter");
    if (!text)
        return ms_diag_set(diag, key, "missing value");
    json_t *value = NULL;
    int rc = MS_OK;
    switch (s_params[p].type) {
    case MS_CONFIG_PARAM_INT: {
        int64_t v;
        if (!s_parse_int(text, &v))
            return ms_diag_set(diag, key, "'%s' is not an integer", text);
        value = json_integer((json_int_t) v);
        break;
    }
    case MS_CONFIG_PARAM_FLOAT: {
        char buf[64];
        char *end;
        if (!s_trim(text, buf, sizeof buf) || !buf[0])
            return ms_diag_set(diag, key, "'%s' is not a number", text);
        if (p == S_P_GAIN && strcmp(buf, "auto") == 0) {
            value = json_string("auto");
            break;
        }
        errno = 0;
        double v = strtod(buf, &end);
        if (*end || !isfinite(v) || errno == ERANGE)
            return ms_diag_set(diag, key, "'%s' is not a finite number", text);
        value = json_real(v);
        break;
    }
    case MS_CONFIG_PARAM_BOOL: {
        static const char *s_true[] = {"", "true", "yes", "on", "1"};
        static const char *s_false[] = {"false", "no", "off", "0"};
        for (size_t i = 0; !value && i < sizeof s_true / sizeof *s_true; i++)
            if (strcmp(text, s_true[i]) == 0)
                value = json_true();
        for (size_t i = 0; !value && i < sizeof s_false / sizeof *s_false; i++)
            if (strcmp(text, s_false[i]) == 0)
                value = json_false();
        if (!value)
            return ms_diag_set(diag, key,
                               "'%s' is not a boolean (true or false)", text);
        break;
    }
    case MS_CONFIG_PARAM_ENUM:
        value = json_string(text);
        if (!value)
            return ms_diag_set(diag, key, "'%s' is not valid UTF-8", text);
        break;
    case MS_CONFIG_PARAM_SIZES: {
        value = json_array();
        if (!value)
            return MS_ERR_NOMEM;
        const char *at = text;
        char buf[64];
        bool blank = s_trim(text, buf, sizeof buf) && !buf[0];
        while (!blank) {
            const char *comma = strchr(at, ',');
            size_t len = comma ? (size_t) (comma - at) : strlen(at);
            char item[32];
            int64_t w;
            if (len >= sizeof item) {
                rc = ms_diag_set(diag, key,
                                 "'%s' is not a comma-separated list of "
                                 "integers",
                                 text);
                goto fail;
            }
            memcpy(item, at, len);
            item[len] = '\0';
            if (!s_parse_int(item, &w)) {
                rc = ms_diag_set(diag, key,
                                 "'%s' is not a comma-separated list of "
                                 "integers",
                                 text);
                goto fail;
            }
            json_array_append_new(value, json_integer((json_int_t) w));
            if (!comma)
                break;
            at = comma + 1;
        }
        break;
    }
    case MS_CONFIG_PARAM_UNKNOWN:
        break;
    }
    if (!value)
        return MS_ERR_NOMEM;
    ms_train_config_t scratch = *cfg;
    rc = s_set(&scratch, p, key, value, diag);
    if (rc == MS_OK)
        *cfg = scratch;
fail:
    json_decref(value);
    return rc;
}

//  --------------------------------------------------------------------------
//  Type of a parameter.

ms_config_param_type_t
ms_config_param_type(const char *key)
{
    int p = s_find(key);
    return p < 0 ? MS_CONFIG_PARAM_UNKNOWN : s_params[p].type;
}

//  --------------------------------------------------------------------------
//  Number of parameters.

int
ms_config_param_count(void)
{
    return S_P_COUNT;
}

//  --------------------------------------------------------------------------
//  The i-th parameter name, in sorted order.

const char *
ms_config_param_name(int i)
{
    return i >= 0 && i < S_P_COUNT ? s_params[i].name : NULL;
}

//  --------------------------------------------------------------------------
//  Allowed names of an enum parameter.

const char *
ms_config_param_choices(const char *key, char *out, size_t n)
{
    int p = s_find(key);
    if (n > 0)
        out[0] = '\0';
    if (p >= 0 && s_params[p].type == MS_CONFIG_PARAM_ENUM)
        s_choices(p, out, n);
    return out;
}
