/*  =========================================================================
    ms_param_layout - where each tensor of a network lives in its parameter
    block (the layout of ms_trainer_params), for every architecture

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The layout is described in the header. Each offset is a sum over the
    layers before it: O(L) per call, so walking a network of 1,024 layers
    costs about a million additions, nothing beside its GEMMs.
*/
#include "ms_param_layout.h"

#include <stdbool.h>

//  --------------------------------------------------------------------------
//  Floats of the dense weights and biases of every layer (section 1).

static int64_t
s_dense_floats(const uint32_t *sizes, int32_t n_sizes)
{
    int64_t n = 0;
    for (int32_t l = 0; l + 1 < n_sizes; l++)
        n += (int64_t) sizes[l + 1] * ((int64_t) sizes[l] + 1);
    return n;
}

//  --------------------------------------------------------------------------
//  Sum of fan_in(l) over l = 1 .. L-1: the floats of one per-input
//  tensor family (gammas, betas, means or variances).

static int64_t
s_norm_inputs(const uint32_t *sizes, int32_t n_sizes)
{
    int64_t n = 0;
    for (int32_t l = 1; l + 1 < n_sizes; l++)
        n += sizes[l];
    return n;
}

//  --------------------------------------------------------------------------
//  Whether the network has rezero scales.

static bool
s_rezero(const ms_train_config_t *cfg)
{
    return cfg->architecture == MS_ARCH_RESIDUAL &&
           cfg->residual_scale == MS_RESIDUAL_SCALE_REZERO;
}

//  --------------------------------------------------------------------------
//  Residual blocks of cfg.

int32_t
ms_param_layout_n_blocks(const ms_train_config_t *cfg)
{
    if (cfg->architecture != MS_ARCH_RESIDUAL || cfg->n_hidden < 2)
        return 0;
    int32_t per = cfg->block_layers > 0 ? cfg->block_layers : 1;
    return (cfg->n_hidden - 1 + per - 1) / per;
}

//  --------------------------------------------------------------------------
//  First layer and length of block k.

void
ms_param_layout_block(const ms_train_config_t *cfg, int32_t k,
                      int32_t *first_layer, int32_t *n_layers)
{
    int32_t per = cfg->block_layers > 0 ? cfg->block_layers : 1;
    int32_t first = 1 + k * per;
    int32_t n = cfg->n_hidden - first;
    if (n > per)
        n = per;
    if (first_layer)
        *first_layer = first;
    if (n_layers)
        *n_layers = n;
}

//  --------------------------------------------------------------------------
//  Offsets of layer l.

void
ms_param_layout_layer(const ms_train_config_t *cfg, const uint32_t *sizes,
                      int32_t n_sizes, int32_t l, ms_param_layer_t *out)
{
    int64_t off = 0;
    for (int32_t i = 0; i < l; i++)
        off += (int64_t) sizes[i + 1] * ((int64_t) sizes[i] + 1);
    out->fan_in = (int32_t) sizes[l];
    out->fan_out = (int32_t) sizes[l + 1];
    out->w = off;
    out->b = off + (int64_t) out->fan_in * out->fan_out;
    out->gamma = out->beta = out->mean = out->var = -1;
    if (cfg->norm == MS_NORM_NONE || l == 0)
        return;
    // Section 2: gamma(i), beta(i) for i = 1 .. l-1 come before layer l's.
    int64_t before = 0;
    for (int32_t i = 1; i < l; i++)
        before += sizes[i];
    int64_t norm0 = s_dense_floats(sizes, n_sizes);
    out->gamma = norm0 + 2 * before;
    out->beta = out->gamma + out->fan_in;
    if (cfg->norm != MS_NORM_BATCH)
        return;
    // Section 4, after the norm section and the rezero scales.
    int64_t stats0 = norm0 + 2 * s_norm_inputs(sizes, n_sizes) +
                     (s_rezero(cfg) ? ms_param_layout_n_blocks(cfg) : 0);
    out->mean = stats0 + 2 * before;
    out->var = out->mean + out->fan_in;
}

//  --------------------------------------------------------------------------
//  Offset of block k's rezero scale.

int64_t
ms_param_layout_alpha(const ms_train_config_t *cfg, const uint32_t *sizes,
                      int32_t n_sizes, int32_t k)
{
    if (!s_rezero(cfg) || k < 0 || k >= ms_param_layout_n_blocks(cfg))
        return -1;
    int64_t off = s_dense_floats(sizes, n_sizes);
    if (cfg->norm != MS_NORM_NONE)
        off += 2 * s_norm_inputs(sizes, n_sizes);
    return off + k;
}

//  --------------------------------------------------------------------------
//  Floats in the whole block.

int64_t
ms_param_layout_n_params(const ms_train_config_t *cfg, const uint32_t *sizes,
                         int32_t n_sizes)
{
    int64_t n = s_dense_floats(sizes, n_sizes);
    if (cfg->norm != MS_NORM_NONE)
        n += 2 * s_norm_inputs(sizes, n_sizes);
    if (s_rezero(cfg))
        n += ms_param_layout_n_blocks(cfg);
    if (cfg->norm == MS_NORM_BATCH)
        n += 2 * s_norm_inputs(sizes, n_sizes);
    return n;
}
