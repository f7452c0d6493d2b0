/*  =========================================================================
    ms_param_layout - where each tensor of a network lives in its parameter
    block (the layout of ms_trainer_params), for every architecture

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The layout is described in the header. Every answer comes from two
    static functions: s_totals (where each section starts) and s_walk
    (the offsets of a run of layers, as prefix sums over the layers
    before them). A network's sizes are read through s_size, from an
    array or from a config, so the array calls (the exporter) and the
    config calls (the engine, ms_train_config_params) cannot drift apart.
    ms_param_layout_layer walks from layer 0, O(L) per call;
    ms_param_layout_layers fills every layer in one O(L) walk.
*/
#include "ms_param_layout.h"

#include <stdbool.h>
#include <stddef.h>

//  A network's layer sizes: an array, or a config's hidden sizes between
//  n_inputs and n_outputs.
typedef struct {
    const ms_train_config_t *cfg; // the architecture
    const uint32_t *sizes;        // n_sizes sizes, or NULL: from cfg
    int32_t n_sizes;              // layers + 1
    int32_t n_inputs;             // without sizes: size 0
    int32_t n_outputs;            // without sizes: the last size
} s_net_t;

//  --------------------------------------------------------------------------
//  Size i of a network.

static int64_t
s_size(const s_net_t *net, int32_t i)
{
    if (net->sizes)
        return net->sizes[i];
    return ms_param_layout_size(net->cfg, net->n_inputs, net->n_outputs, i);
}

//  --------------------------------------------------------------------------
//  A network read from an array.

static s_net_t
s_net_array(const ms_train_config_t *cfg, const uint32_t *sizes,
            int32_t n_sizes)
{
    return (s_net_t){.cfg = cfg, .sizes = sizes, .n_sizes = n_sizes};
}

//  --------------------------------------------------------------------------
//  A network read from a config.

static s_net_t
s_net_config(const ms_train_config_t *cfg, int32_t n_inputs, int32_t n_outputs)
{
    return (s_net_t){.cfg = cfg,
                     .n_sizes = cfg->n_hidden + 2,
                     .n_inputs = n_inputs,
                     .n_outputs = n_outputs};
}

//  --------------------------------------------------------------------------
//  Whether the network has rezero scales.

static bool
s_rezero(const ms_train_config_t *cfg)
{
    return cfg->architecture == MS_ARCH_RESIDUAL &&
           cfg->residual_scale == MS_RESIDUAL_SCALE_REZERO;
}

//  Where the sections start (floats).
typedef struct {
    int64_t norm0;  // section 2: gamma(1), or where it would be
    int64_t alpha0; // section 3: alpha(0), or where it would be
    int64_t stats0; // section 4: running_mean(1), or where it would be
    ms_param_totals_t totals; // the sections' sizes
} s_sections_t;

//  --------------------------------------------------------------------------
//  The sections of a network's block: one pass over its sizes.

static void
s_sections(const s_net_t *net, s_sections_t *out)
{
    const ms_train_config_t *cfg = net->cfg;
    int64_t dense = 0, normed = 0; // normed: sum of fan_in(l), l >= 1
    for (int32_t l = 0; l + 1 < net->n_sizes; l++) {
        int64_t fan_in = s_size(net, l);
        dense += s_size(net, l + 1) * (fan_in + 1);
        if (l >= 1)
            normed += fan_in;
    }
    out->norm0 = dense;
    out->alpha0 = out->norm0 + (cfg->norm != MS_NORM_NONE ? 2 * normed : 0);
    out->stats0 =
        out->alpha0 + (s_rezero(cfg) ? ms_param_layout_n_blocks(cfg) : 0);
    out->totals.n_dense = dense;
    out->totals.n_trainable = out->stats0;
    out->totals.n_params =
        out->stats0 + (cfg->norm == MS_NORM_BATCH ? 2 * normed : 0);
}

//  --------------------------------------------------------------------------
//  The offsets of layers first .. last into out[0 .. last - first]: W and
//  b follow the W, b of the layers before; gamma and beta (section 2)
//  and the running statistics (section 4) follow the fan_in pairs of the
//  normalised layers before (1 .. l-1).

static void
s_walk(const s_net_t *net, int32_t first, int32_t last, ms_param_layer_t *out)
{
    const ms_train_config_t *cfg = net->cfg;
    s_sections_t sec;
    s_sections(net, &sec);
    int64_t off = 0, before = 0; // W, b floats and normed inputs so far
    for (int32_t l = 0; l <= last; l++) {
        int64_t fan_in = s_size(net, l), fan_out = s_size(net, l + 1);
        if (l >= first) {
            ms_param_layer_t *p = out + (l - first);
            p->fan_in = (int32_t) fan_in;
            p->fan_out = (int32_t) fan_out;
            p->w = off;
            p->b = off + fan_in * fan_out;
            p->gamma = p->beta = p->mean = p->var = -1;
            if (cfg->norm != MS_NORM_NONE && l > 0) {
                p->gamma = sec.norm0 + 2 * before;
                p->beta = p->gamma + fan_in;
            }
            if (cfg->norm == MS_NORM_BATCH && l > 0) {
                p->mean = sec.stats0 + 2 * before;
                p->var = p->mean + fan_in;
            }
        }
        off += fan_out * (fan_in + 1);
        if (l >= 1)
            before += fan_in;
    }
}

//  --------------------------------------------------------------------------
//  Size i of cfg's network.

uint32_t
ms_param_layout_size(const ms_train_config_t *cfg, int32_t n_inputs,
                     int32_t n_outputs, int32_t i)
{
    if (i == 0)
        return (uint32_t) n_inputs;
    if (i <= cfg->n_hidden)
        return (uint32_t) cfg->hidden_sizes[i - 1];
    return (uint32_t) n_outputs;
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
    s_net_t net = s_net_array(cfg, sizes, n_sizes);
    s_walk(&net, l, l, out);
}

//  --------------------------------------------------------------------------
//  Offsets of every layer.

void
ms_param_layout_layers(const ms_train_config_t *cfg, const uint32_t *sizes,
                       int32_t n_sizes, ms_param_layer_t *out)
{
    s_net_t net = s_net_array(cfg, sizes, n_sizes);
    s_walk(&net, 0, n_sizes - 2, out);
}

//  --------------------------------------------------------------------------
//  Offset of block k's rezero scale.

int64_t
ms_param_layout_alpha(const ms_train_config_t *cfg, const uint32_t *sizes,
                      int32_t n_sizes, int32_t k)
{
    if (!s_rezero(cfg) || k < 0 || k >= ms_param_layout_n_blocks(cfg))
        return -1;
    s_net_t net = s_net_array(cfg, sizes, n_sizes);
    s_sections_t sec;
    s_sections(&net, &sec);
    return sec.alpha0 + k;
}

//  --------------------------------------------------------------------------
//  Floats in the whole block.

int64_t
ms_param_layout_n_params(const ms_train_config_t *cfg, const uint32_t *sizes,
                         int32_t n_sizes)
{
    ms_param_totals_t t;
    ms_param_layout_totals(cfg, sizes, n_sizes, &t);
    return t.n_params;
}

//  --------------------------------------------------------------------------
//  Section sizes of the network with layer sizes sizes.

void
ms_param_layout_totals(const ms_train_config_t *cfg, const uint32_t *sizes,
                       int32_t n_sizes, ms_param_totals_t *out)
{
    s_net_t net = s_net_array(cfg, sizes, n_sizes);
    s_sections_t sec;
    s_sections(&net, &sec);
    *out = sec.totals;
}

//  --------------------------------------------------------------------------
//  Section sizes of cfg's network.

void
ms_param_layout_totals_of(const ms_train_config_t *cfg, int32_t n_inputs,
                          int32_t n_outputs, ms_param_totals_t *out)
{
    s_net_t net = s_net_config(cfg, n_inputs, n_outputs);
    s_sections_t sec;
    s_sections(&net, &sec);
    *out = sec.totals;
}
