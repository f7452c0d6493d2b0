/*  =========================================================================
    ms_param_layout - where each tensor of a network lives in its parameter
    block (the layout of ms_trainer_params), for every architecture

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One rule, one place: the exporter (proto/ms_onnx), the weights
    metadata, the engine (ms_mlp_open takes every offset from here) and
    ms_train_config_params read the layout from here. A pure function of
    the config and the layer sizes; nothing is allocated. The sizes come
    as an array (inputs, each hidden width, outputs: what a weights file
    records), or, in the calls ending in _of, from the config itself with
    the numbers of inputs and outputs (ms_param_layout_size); both forms
    go through the same code.

    L = n_hidden + 1 dense layers; layer l maps fan_in(l) = sizes[l] to
    fan_out(l) = sizes[l + 1]. The block holds, in this order:

      1. for l = 0 .. L-1: W(l), fan_out x fan_in row-major, then b(l),
         fan_out (exactly the plain layout);
      2. norm != none: for l = 1 .. L-1: gamma(l) then beta(l), fan_in(l)
         each (the input of every dense layer but the first is
         normalised);
      3. residual with rezero: alpha(k), one float per block k;
      4. batch norm: for l = 1 .. L-1: running_mean(l) then running_var(l),
         fan_in(l) each (evaluation statistics).

    Residual blocks: hidden layer 0 is the input projection; hidden layers
    1 .. n_hidden-1 form blocks of block_layers consecutive layers, the
    last block taking the remainder; the output layer follows the blocks.
    A plain network has no blocks.

    Thread rule: every function is reentrant.
*/
#ifndef MS_PARAM_LAYOUT_H
#define MS_PARAM_LAYOUT_H

#include <stdint.h>

#include "ms_config.h"

//  Offsets (in floats) of one dense layer's tensors; -1 where a tensor
//  does not exist (no norm on layer 0 or without norm; no statistics
//  without batch norm).
typedef struct {
    int32_t fan_in;  // inputs of the layer
    int32_t fan_out; // outputs of the layer
    int64_t w;       // weights, fan_out x fan_in row-major
    int64_t b;       // bias, fan_out
    int64_t gamma;   // norm gain of the input, fan_in, or -1
    int64_t beta;    // norm bias of the input, fan_in, or -1
    int64_t mean;    // batch-norm running mean, fan_in, or -1
    int64_t var;     // batch-norm running variance, fan_in, or -1
} ms_param_layer_t;

//  The sizes of a block's sections, in floats.
typedef struct {
    int64_t n_dense;     // section 1: W(l), b(l) of every layer
    int64_t n_trainable; // sections 1 to 3: what the optimizer steps
    int64_t n_params;    // the whole block (n_trainable + the statistics)
} ms_param_totals_t;

//  Size i (0 .. cfg->n_hidden + 1) of the network of cfg with n_inputs
//  inputs and n_outputs outputs: n_inputs for i 0, hidden_sizes[i - 1]
//  for a hidden layer, n_outputs for the last. The sizes array the other
//  calls take is this for every i.
uint32_t ms_param_layout_size(const ms_train_config_t *cfg, int32_t n_inputs,
                              int32_t n_outputs, int32_t i);

//  The number of residual blocks of cfg (0 for a plain network or one
//  with fewer than two hidden layers).
int32_t ms_param_layout_n_blocks(const ms_train_config_t *cfg);

//  Block k (0-based, < ms_param_layout_n_blocks): its first dense layer
//  (1-based among hidden layers, so also its layer index l) and how many
//  layers it has (block_layers, or fewer for the last).
void ms_param_layout_block(const ms_train_config_t *cfg, int32_t k,
                           int32_t *first_layer, int32_t *n_layers);

//  The offsets of layer l (0 .. n_sizes - 2) of a network with n_sizes
//  layer sizes (inputs, each hidden width, outputs; n_sizes must be
//  cfg->n_hidden + 2) into *out.
void ms_param_layout_layer(const ms_train_config_t *cfg, const uint32_t *sizes,
                           int32_t n_sizes, int32_t l, ms_param_layer_t *out);

//  The offsets of every layer, out[0 .. n_sizes - 2], in one pass: the
//  same records as ms_param_layout_layer for each l, in O(L) instead of
//  O(L^2) (ms_mlp_open uses it).
void ms_param_layout_layers(const ms_train_config_t *cfg, const uint32_t *sizes,
                            int32_t n_sizes, ms_param_layer_t *out);

//  The offset of block k's rezero scale alpha(k), or -1 when the network
//  has no such scale (plain, or residual_scale 1).
int64_t ms_param_layout_alpha(const ms_train_config_t *cfg,
                              const uint32_t *sizes, int32_t n_sizes,
                              int32_t k);

//  Floats in the whole block: the layers, then norm gains and biases,
//  rezero scales and batch-norm statistics as above.
int64_t ms_param_layout_n_params(const ms_train_config_t *cfg,
                                 const uint32_t *sizes, int32_t n_sizes);

//  The sizes of the block's sections into *out: of the network with
//  layer sizes sizes, or (_of) of cfg's network with n_inputs inputs and
//  n_outputs outputs. out->n_params is ms_param_layout_n_params.
void ms_param_layout_totals(const ms_train_config_t *cfg, const uint32_t *sizes,
                            int32_t n_sizes, ms_param_totals_t *out);
void ms_param_layout_totals_of(const ms_train_config_t *cfg, int32_t n_inputs,
                               int32_t n_outputs, ms_param_totals_t *out);

#endif
