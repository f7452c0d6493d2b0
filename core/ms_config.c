/*  =========================================================================
    ms_config - one task's training configuration: every sweep parameter

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_config.h"
#include "ms_param_layout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

//  One name table per enum; index = enum value.
static const char *s_kind_names[] = {"train", "noop"};
static const char *s_activation_names[] = {
    "relu", "leaky_relu", "elu", "selu", "gelu", "tanh", "sigmoid", "linear"};
static const char *s_loss_names[] = {"cross_entropy", "mse"};
static const char *s_init_names[] = {"he", "xavier", "lecun", "orthogonal"};
static const char *s_optim_names[] = {"sgd", "momentum", "nesterov", "adam",
                                      "adamw"};
static const char *s_schedule_names[] = {"constant", "step", "cosine"};
static const char *s_scale_names[] = {"unit", "standard", "none"};
static const char *s_architecture_names[] = {"plain", "residual"};
static const char *s_norm_names[] = {"none", "layer", "batch"};
static const char *s_residual_scale_names[] = {"1", "rezero"};

#define S_COUNT(a) ((int) (sizeof(a) / sizeof((a)[0])))

//  --------------------------------------------------------------------------
//  Look a name up in a table; returns its index or -1.

static int
s_lookup(const char *const *table, int n, const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(table[i], name) == 0)
            return i;
    return -1;
}

//  --------------------------------------------------------------------------
//  Name of a table entry, or "?" when out of range.

static const char *
s_name(const char *const *table, int n, int value)
{
    return value >= 0 && value < n ? table[value] : "?";
}

#define S_NAME_PARSE(fn_name, fn_parse, type, table)                           \
    const char *fn_name(type v)                                                \
    {                                                                          \
        return s_name(table, S_COUNT(table), (int) v);                         \
    }                                                                          \
    int fn_parse(const char *name, type *out)                                  \
    {                                                                          \
        int i = s_lookup(table, S_COUNT(table), name);                         \
        if (i < 0)                                                             \
            return MS_ERR_INVALID;                                             \
        *out = (type) i;                                                       \
        return MS_OK;                                                          \
    }

S_NAME_PARSE(ms_task_kind_name, ms_task_kind_parse, ms_task_kind_t,
             s_kind_names)
S_NAME_PARSE(ms_activation_name, ms_activation_parse, ms_activation_t,
             s_activation_names)
S_NAME_PARSE(ms_loss_name, ms_loss_parse, ms_loss_kind_t, s_loss_names)
S_NAME_PARSE(ms_init_name, ms_init_parse, ms_init_t, s_init_names)
S_NAME_PARSE(ms_optim_name, ms_optim_parse, ms_optim_kind_t, s_optim_names)
S_NAME_PARSE(ms_schedule_name, ms_schedule_parse, ms_schedule_t,
             s_schedule_names)
S_NAME_PARSE(ms_scale_name, ms_scale_parse, ms_scale_t, s_scale_names)
S_NAME_PARSE(ms_architecture_name, ms_architecture_parse, ms_architecture_t,
             s_architecture_names)
S_NAME_PARSE(ms_norm_name, ms_norm_parse, ms_norm_t, s_norm_names)
S_NAME_PARSE(ms_residual_scale_name, ms_residual_scale_parse,
             ms_residual_scale_t, s_residual_scale_names)

//  --------------------------------------------------------------------------
//  Default init for an activation.

ms_init_t
ms_init_default_for(ms_activation_t activation)
{
    switch (activation) {
    case MS_ACTIVATION_RELU:
    case MS_ACTIVATION_LEAKY_RELU:
    case MS_ACTIVATION_ELU:
    case MS_ACTIVATION_GELU:
        return MS_INIT_HE;
    case MS_ACTIVATION_SELU:
        return MS_INIT_LECUN;
    default:
        return MS_INIT_XAVIER;
    }
}

//  --------------------------------------------------------------------------
//  Fill every default.

void
ms_train_config_defaults(ms_train_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = MS_KIND_TRAIN;
    ms_train_config_set_uniform(cfg, 1, 100);
    cfg->activation = MS_ACTIVATION_RELU;
    cfg->leaky_slope = 0.01;
    cfg->loss = MS_LOSS_CROSS_ENTROPY;
    cfg->init = MS_INIT_HE;
    cfg->optimizer = MS_OPTIM_ADAM;
    cfg->learning_rate = 0.001;
    cfg->momentum = 0.9;
    cfg->beta1 = 0.9;
    cfg->beta2 = 0.999;
    cfg->eps = 1e-8;
    cfg->schedule = MS_SCHEDULE_CONSTANT;
    cfg->step_size = 10;
    cfg->gamma = 0.1;
    cfg->l2 = 0.0001;
    cfg->dropout = 0.0;
    cfg->batch_size = 200;
    cfg->epochs = 10;
    cfg->early_stopping = false;
    cfg->patience = 5;
    cfg->scale = MS_SCALE_UNIT;
    cfg->validation_split = 0.1;
    cfg->seed = 1;
    cfg->architecture = MS_ARCH_PLAIN;
    cfg->block_layers = 1;
    cfg->norm = MS_NORM_NONE;
    cfg->residual_scale = MS_RESIDUAL_SCALE_ONE;
    cfg->gain = 0.0;
    cfg->warmup_epochs = 0.0;
    cfg->clip_norm = 0.0;
}

//  --------------------------------------------------------------------------
//  Set n_hidden layers of width units.

int
ms_train_config_set_uniform(ms_train_config_t *cfg, int32_t n_hidden,
                            int32_t width)
{
    if (n_hidden < 0 || n_hidden > MS_MAX_HIDDEN_LAYERS || width < 1 ||
        width > MS_MAX_WIDTH)
        return MS_ERR_RANGE;
    cfg->n_hidden = n_hidden;
    cfg->width = width;
    cfg->explicit_sizes = false;
    for (int32_t i = 0; i < n_hidden; i++)
        cfg->hidden_sizes[i] = width;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Range checks, one diagnostic for the first bad field.

int
ms_train_config_check(const ms_train_config_t *cfg, ms_diag_t *diag)
{
    if (cfg->n_hidden < 0 || cfg->n_hidden > MS_MAX_HIDDEN_LAYERS)
        return ms_diag_set(diag, "hidden_layers", "must be 0..%d, not %d",
                           MS_MAX_HIDDEN_LAYERS, (int) cfg->n_hidden);
    for (int32_t i = 0; i < cfg->n_hidden; i++)
        if (cfg->hidden_sizes[i] < 1 || cfg->hidden_sizes[i] > MS_MAX_WIDTH)
            return ms_diag_set(diag,
                               cfg->explicit_sizes ? "hidden_sizes" : "width",
                               "layer width must be 1..%d, not %d",
                               MS_MAX_WIDTH, (int) cfg->hidden_sizes[i]);
    if (!(cfg->learning_rate > 0) || !isfinite(cfg->learning_rate))
        return ms_diag_set(diag, "learning_rate", "must be > 0");
    if (!(cfg->momentum >= 0 && cfg->momentum < 1))
        return ms_diag_set(diag, "momentum", "must be in [0, 1)");
    if (!(cfg->beta1 >= 0 && cfg->beta1 < 1))
        return ms_diag_set(diag, "beta1", "must be in [0, 1)");
    if (!(cfg->beta2 >= 0 && cfg->beta2 < 1))
        return ms_diag_set(diag, "beta2", "must be in [0, 1)");
    if (!(cfg->eps > 0))
        return ms_diag_set(diag, "eps", "must be > 0");
    if (cfg->step_size < 1)
        return ms_diag_set(diag, "step_size", "must be >= 1");
    if (!(cfg->gamma > 0) || !isfinite(cfg->gamma))
        return ms_diag_set(diag, "gamma", "must be > 0");
    if (!(cfg->l2 >= 0) || !isfinite(cfg->l2))
        return ms_diag_set(diag, "l2", "must be >= 0");
    if (!(cfg->dropout >= 0 && cfg->dropout < 1))
        return ms_diag_set(diag, "dropout", "must be in [0, 1)");
    if (!(cfg->leaky_slope >= 0) || !isfinite(cfg->leaky_slope))
        return ms_diag_set(diag, "leaky_slope", "must be >= 0");
    if (cfg->batch_size < 1 || cfg->batch_size > 1 << 20)
        return ms_diag_set(diag, "batch_size", "must be 1..1048576");
    if (cfg->epochs < 1 || cfg->epochs > 100000)
        return ms_diag_set(diag, "epochs", "must be 1..100000");
    if (cfg->patience < 1)
        return ms_diag_set(diag, "patience", "must be >= 1");
    if (!(cfg->validation_split >= 0 && cfg->validation_split < 1))
        return ms_diag_set(diag, "validation_split", "must be in [0, 1)");
    if (cfg->block_layers < 1 || cfg->block_layers > 2)
        return ms_diag_set(diag, "block_layers", "must be 1 or 2, not %d",
                           (int) cfg->block_layers);
    //  Batch statistics of one row are its own values: every unit is
    //  normalised to 0 and nothing trains (PyTorch refuses this too).
    if (cfg->norm == MS_NORM_BATCH && cfg->batch_size < 2)
        return ms_diag_set(diag, "batch_size",
                           "norm: batch needs batch_size >= 2 (the batch "
                           "statistics of one row normalise every unit to "
                           "0); use norm: layer, or a larger batch_size");
    //  The residual keys mean nothing in a plain network; accepted, they
    //  would only change the task id (the same network under two ids).
    if (cfg->architecture == MS_ARCH_PLAIN &&
        cfg->residual_scale != MS_RESIDUAL_SCALE_ONE)
        return ms_diag_set(diag, "residual_scale",
                           "'%s' has no effect with architecture: plain; "
                           "give architecture: residual, or leave "
                           "residual_scale out",
                           ms_residual_scale_name(cfg->residual_scale));
    if (cfg->architecture == MS_ARCH_PLAIN && cfg->block_layers != 1)
        return ms_diag_set(diag, "block_layers",
                           "%d has no effect with architecture: plain; give "
                           "architecture: residual, or leave block_layers out",
                           (int) cfg->block_layers);
    if (!(cfg->gain >= 0) || !isfinite(cfg->gain))
        return ms_diag_set(diag, "gain", "must be auto or a number > 0");
    if (!(cfg->warmup_epochs >= 0) || !isfinite(cfg->warmup_epochs))
        return ms_diag_set(diag, "warmup_epochs", "must be >= 0");
    if (!(cfg->clip_norm >= 0) || !isfinite(cfg->clip_norm))
        return ms_diag_set(diag, "clip_norm", "must be >= 0 (0: off)");
    if (cfg->architecture == MS_ARCH_RESIDUAL) {
        if (cfg->n_hidden < 1)
            return ms_diag_set(diag, "architecture",
                               "a residual network needs hidden_layers >= 1 "
                               "(layer 0 is its input projection)");
        //  Each block must keep its width: h + f(h).
        for (int32_t first = 1; first < cfg->n_hidden;) {
            int32_t last = first + cfg->block_layers - 1;
            if (last >= cfg->n_hidden)
                last = cfg->n_hidden - 1;
            //  The block h + f(h) takes hidden layer first - 1's units
            //  and gives back hidden layer last's.
            if (cfg->hidden_sizes[last] != cfg->hidden_sizes[first - 1]) {
                char span[64] = "";
                if (last > first)
                    snprintf(span, sizeof span,
                             " (the block of hidden layers %d and %d)",
                             (int) first, (int) last);
                return ms_diag_set(
                    diag, "hidden_sizes",
                    "hidden layer %d has %d units, hidden layer %d has %d: a "
                    "residual block needs equal widths%s",
                    (int) first - 1, (int) cfg->hidden_sizes[first - 1],
                    (int) last, (int) cfg->hidden_sizes[last], span);
            }
            first = last + 1;
        }
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The parameter block's size: ms_param_layout's count, the one rule
//  that ms_mlp_open and the exporter also lay the block out by.

int64_t
ms_train_config_params(const ms_train_config_t *cfg, int32_t n_inputs,
                       int32_t n_outputs)
{
    ms_param_totals_t totals;
    ms_param_layout_totals_of(cfg, n_inputs, n_outputs, &totals);
    return totals.n_params;
}
