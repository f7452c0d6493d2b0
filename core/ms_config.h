/*  =========================================================================
    ms_config - one task's training configuration: every sweep parameter

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The parameters and defaults are those of DESIGN.md "Sweep
    specification". A config is a plain value type (copy it freely); its
    canonical JSON form (proto/ms_config_json.h) is what task ids hash, so
    every field here has a fixed default and no field is left unset.

    Architecture: a network has n_hidden hidden layers. When the spec gave
    `hidden_layers` + `width`, explicit_sizes is false and every entry of
    hidden_sizes[0 .. n_hidden) equals width. When it gave `hidden_sizes`,
    explicit_sizes is true and width is 0. n_hidden may be 0 (a linear or
    softmax-regression model).
*/
#ifndef MS_CONFIG_H
#define MS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_MAX_HIDDEN_LAYERS 4096 // deepest network a config can describe
#define MS_MAX_WIDTH 65536        // widest hidden layer

typedef enum { MS_KIND_TRAIN, MS_KIND_NOOP } ms_task_kind_t;

typedef enum {
    MS_ACTIVATION_RELU,
    MS_ACTIVATION_LEAKY_RELU,
    MS_ACTIVATION_ELU,
    MS_ACTIVATION_SELU,
    MS_ACTIVATION_GELU,
    MS_ACTIVATION_TANH,
    MS_ACTIVATION_SIGMOID,
    MS_ACTIVATION_LINEAR,
} ms_activation_t;

typedef enum { MS_LOSS_CROSS_ENTROPY, MS_LOSS_MSE } ms_loss_kind_t;

typedef enum {
    MS_INIT_HE,
    MS_INIT_XAVIER,
    MS_INIT_LECUN,
    MS_INIT_ORTHOGONAL,
} ms_init_t;

typedef enum {
    MS_OPTIM_SGD,
    MS_OPTIM_MOMENTUM,
    MS_OPTIM_NESTEROV,
    MS_OPTIM_ADAM,
    MS_OPTIM_ADAMW,
} ms_optim_kind_t;

typedef enum {
    MS_SCHEDULE_CONSTANT,
    MS_SCHEDULE_STEP,
    MS_SCHEDULE_COSINE,
} ms_schedule_t;

typedef enum { MS_SCALE_UNIT, MS_SCALE_STANDARD, MS_SCALE_NONE } ms_scale_t;
//  Plain: dense layers in a chain. Residual: hidden layer 0 is the input
//  projection (a dense layer as in a plain network); the remaining
//  hidden layers form blocks h + s * f(h) of block_layers dense layers
//  each (the last block takes the remainder), f the pre-normalised dense
//  layers with the activation (He et al. 2016, "Identity mappings").
typedef enum { MS_ARCH_PLAIN, MS_ARCH_RESIDUAL } ms_architecture_t;
//  Normalisation of the input of every dense layer after the first
//  (layer norm, Ba et al. 2016; batch norm, Ioffe and Szegedy 2015).
typedef enum { MS_NORM_NONE, MS_NORM_LAYER, MS_NORM_BATCH } ms_norm_t;
//  The residual branch's scale s: 1, or rezero (a learnable scalar per
//  block, starting at 0; Bachlechner et al. 2020).
typedef enum {
    MS_RESIDUAL_SCALE_ONE,
    MS_RESIDUAL_SCALE_REZERO
} ms_residual_scale_t;

typedef struct {
    ms_task_kind_t kind; // train, or noop (benchmarks)
    int32_t n_hidden;    // hidden layers, 0..MS_MAX_HIDDEN_LAYERS
    int32_t width;       // uniform width; 0 when explicit_sizes
    bool explicit_sizes; // spec gave hidden_sizes
    int32_t hidden_sizes[MS_MAX_HIDDEN_LAYERS]; // units per hidden layer
    ms_activation_t activation;                 // hidden-layer activation
    double leaky_slope;                         // negative slope of leaky_relu
    ms_loss_kind_t loss;                        // output loss
    ms_init_t init;            // weight init (resolved, never "auto")
    ms_optim_kind_t optimizer; // update rule
    double learning_rate;      // base step size
    double momentum;           // momentum / nesterov coefficient
    double beta1, beta2, eps;  // Adam / AdamW moments and epsilon
    ms_schedule_t schedule;    // learning-rate schedule
    int32_t step_size;         // epochs between steps (schedule: step)
    double gamma;              // factor per step (schedule: step)
    double l2;                 // L2 weight decay (decoupled for adamw)
    double dropout;            // drop probability on hidden units, [0,1)
    int32_t batch_size;        // minibatch size, samples
    int32_t epochs;            // epochs to train (upper bound)
    bool early_stopping;       // stop when val metric stops improving
    int32_t patience;          // epochs without improvement tolerated
    ms_scale_t scale;          // input scaling
    double validation_split;   // fraction of train held out, [0,1)
    int64_t seed;              // init, split, shuffle and dropout RNG
    //  From here on, each field is written into a task's config only
    //  where it differs from its default (so older sweeps keep their ids).
    ms_architecture_t architecture;     // plain or residual
    int32_t block_layers;               // dense layers per residual block, 1..2
    ms_norm_t norm;                     // none, layer or batch
    ms_residual_scale_t residual_scale; // 1 or rezero
    double gain;          // init gain; 0 = auto (ms_activation_gain)
    double warmup_epochs; // linear learning-rate warm-up, epochs, >= 0
    double clip_norm;     // global gradient-norm clip, 0 = off
} ms_train_config_t;

//  Fill cfg with every default of DESIGN.md: train, 1 hidden layer of 100,
//  relu, cross_entropy, he, adam 0.001 (0.9, 0.999, 1e-8), momentum 0.9,
//  constant schedule (step 10, gamma 0.1), l2 1e-4, dropout 0, batch 200,
//  10 epochs, no early stopping (patience 5), unit scaling, validation
//  0.1, seed 1; plain architecture (block_layers 1), no norm, residual
//  scale 1, gain auto (0), no warm-up, no clipping.
void ms_train_config_defaults(ms_train_config_t *cfg);

//  Default init for an activation: he for relu-like (relu, leaky_relu,
//  elu, gelu), lecun for selu, xavier otherwise.
ms_init_t ms_init_default_for(ms_activation_t activation);

//  Set a uniform architecture: n_hidden layers of width units.
//  Returns MS_OK, or MS_ERR_RANGE if either is out of bounds.
int ms_train_config_set_uniform(ms_train_config_t *cfg, int32_t n_hidden,
                                int32_t width);

//  Check every field is in range (widths >= 1, batch >= 1, epochs >= 1,
//  0 <= dropout < 1, 0 <= validation_split < 1, learning_rate > 0, ...)
//  and the combinations: norm batch needs batch_size >= 2; residual_scale
//  and block_layers away from their defaults need architecture residual
//  (in a plain network they would change only the task id); a residual
//  network needs hidden_layers >= 1 and each block as wide at its output
//  as at its input. This is the one rule that specs, the CLI, decoded
//  configs and the trainer apply. Returns MS_OK or MS_ERR_INVALID with
//  diag naming the field.
int ms_train_config_check(const ms_train_config_t *cfg, ms_diag_t *diag);

//  Size (floats) of the network's parameter block for n_inputs inputs and
//  n_outputs outputs: weights and biases, then norm gains and biases,
//  rezero scales and batch norm's running statistics (these last are
//  state, not trained, but in the block): ms_param_layout_totals_of, the
//  layout of ms_param_layout.h that ms_mlp_open allocates.
int64_t ms_train_config_params(const ms_train_config_t *cfg, int32_t n_inputs,
                               int32_t n_outputs);

//  Names, as spelled in specs and on the command line ("leaky_relu",
//  "cross_entropy", "adamw", "cosine", "standard", "noop"). The _name
//  functions return a static string; the _parse functions return MS_OK or
//  MS_ERR_INVALID for an unknown name (out unchanged).
const char *ms_task_kind_name(ms_task_kind_t kind);
const char *ms_activation_name(ms_activation_t activation);
const char *ms_loss_name(ms_loss_kind_t loss);
const char *ms_init_name(ms_init_t init);
const char *ms_optim_name(ms_optim_kind_t optimizer);
const char *ms_schedule_name(ms_schedule_t schedule);
const char *ms_scale_name(ms_scale_t scale);
const char *ms_architecture_name(ms_architecture_t architecture);
const char *ms_norm_name(ms_norm_t norm);
const char *ms_residual_scale_name(ms_residual_scale_t scale);
int ms_task_kind_parse(const char *name, ms_task_kind_t *out);
int ms_activation_parse(const char *name, ms_activation_t *out);
int ms_loss_parse(const char *name, ms_loss_kind_t *out);
int ms_init_parse(const char *name, ms_init_t *out);
int ms_optim_parse(const char *name, ms_optim_kind_t *out);
int ms_schedule_parse(const char *name, ms_schedule_t *out);
int ms_scale_parse(const char *name, ms_scale_t *out);
int ms_architecture_parse(const char *name, ms_architecture_t *out);
int ms_norm_parse(const char *name, ms_norm_t *out);
int ms_residual_scale_parse(const char *name, ms_residual_scale_t *out);

#endif
