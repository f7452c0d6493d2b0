/*  =========================================================================
    ms_mlp - a multilayer perceptron on a backend: parameters, gradients,
    optimizer state and activation workspace, forward, backward, step

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Shapes and memory layout are described at the top of ms_mlp.c. In
    short: L = n_hidden + 1 layers; layer l maps fan_in(l) to fan_out(l);
    its weights are a fan_out x fan_in row-major matrix followed by its
    fan_out biases, and the layers follow each other in one parameter block
    (the layout of ms_trainer_params); residual and normalised networks
    append their norm gains and biases, rezero scales and batch norm's
    running statistics (ms_mlp_norm, ms_mlp_block). Every offset comes
    from ms_param_layout, the one rule the exporter also reads. Gradients
    mirror that block; the optimizer state is one block of k x n_params
    floats (k = 0, 1 or 2). Activations live in one workspace sized for
    max_rows rows. Nothing is allocated after ms_mlp_open, and
    ms_mlp_memory_bytes tells what it will allocate.

    Typical minibatch:
        upload rows of x to ms_mlp_input(), labels to ms_mlp_labels()
        ms_mlp_forward(mlp, ms_mlp_params(mlp), rows, &dropout_rng);
        ms_mlp_loss(mlp, rows, true, &loss_sum, &n_correct);
        ms_mlp_backward(mlp, rows);
        ms_mlp_step(mlp, cfg, lr, t);
    The trainer issues the same with device operations only (gather_xy
    into ms_mlp_input and ms_mlp_labels, then ms_mlp_train_step: forward,
    the fused train_loss with batch_end on an ms_step_cursor_t, backward,
    ms_mlp_update), so that a GPU can replay the step as a graph.

    Thread rule: an mlp belongs to one thread.
*/
#ifndef MS_MLP_H
#define MS_MLP_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_backend.h"
#include "ms_config.h"
#include "ms_err.h"
#include "ms_rng.h"

typedef struct ms_mlp ms_mlp_t;

//  Build the network of cfg (hidden sizes, activation, leaky slope, loss,
//  dropout, optimizer kind for the state size, architecture, block
//  layers, norm, residual scale, clip norm) for n_inputs inputs and
//  n_outputs outputs, with a workspace for max_rows rows per pass. cfg
//  must pass ms_train_config_check (asserted: every residual block keeps
//  its width). Parameters start at zero: call ms_mlp_init. backend is
//  borrowed; it must have the ops cfg needs (ms_backend_supports).
//  Returns MS_OK; MS_ERR_NOMEM (host or device memory; *out NULL).
int ms_mlp_open(ms_mlp_t **out, const ms_train_config_t *cfg, int32_t n_inputs,
                int32_t n_outputs, int64_t max_rows, ms_backend_t *backend);

//  Free the network and its buffers; NULL-safe; sets *self_p to NULL.
void ms_mlp_destroy(ms_mlp_t **self_p);

//  Estimated peak memory, in bytes, of training cfg's network for
//  n_inputs inputs and n_outputs outputs with passes of max_rows rows
//  (< 1 counts as 1, as in ms_mlp_open): what ms_mlp_open allocates on
//  its backend, counted by the same code that sizes those allocations.
//  That is the parameter block and the gradients (ms_train_config_params
//  floats each), the optimizer state (ms_optim_state_per_param times as
//  many), the workspace (input, every hidden layer's activations, z for
//  gelu, dropout masks and outputs, the network's outputs, the deltas,
//  targets; with norm the normalised inputs and their mean and rstd;
//  per residual block its output; the residual stream's delta; each view
//  rounded up to 64 bytes), the labels (int32 per row), the optimizer's
//  segment table and the scalars of a device backend. Exact for a device
//  backend; on a host-memory backend (cpu) it is above the allocation by
//  the size of the device scalars (about a hundred bytes). Not counted: the
//  mlp's host bookkeeping (about 100 bytes a layer), the host copy of the
//  dropout masks on a device backend, and the trainer's own buffers (the data,
//  the early-stopping copy of the parameters). cfg must pass
//  ms_train_config_check. No errors: a pure function, nothing allocated;
//  reentrant.
int64_t ms_mlp_memory_bytes(const ms_train_config_t *cfg, int32_t n_inputs,
                            int32_t n_outputs, int64_t max_rows);

//  Initialise weights by scheme init, drawing normals from rng in layer
//  order, row-major; biases zero; norm gains 1 and biases 0, rezero
//  scales 0, running means 0 and variances 1 (no draws); gradients and
//  optimizer state zero.
//  he N(0, 2/fan_in) (He et al. 2015); xavier N(0, 2/(fan_in+fan_out))
//  (Glorot and Bengio 2010); lecun N(0, 1/fan_in) (LeCun et al. 1998);
//  orthogonal: a Gaussian matrix orthonormalised along its shorter side
//  by modified Gram-Schmidt in double, times the gain (Saxe et al. 2014).
//  The gain is the config's `gain` when set (> 0), else auto:
//  ms_activation_gain for orthogonal and the schemes' own (sqrt 2 for he,
//  1 for xavier and lecun); a set gain scales the unit-gain deviation:
//  he and lecun gain * sqrt(1/fan_in), xavier gain * sqrt(2/(fan_in +
//  fan_out)). Returns MS_OK, MS_ERR_NOMEM (orthogonal scratch) or
//  MS_ERR_BACKEND.
int ms_mlp_init(ms_mlp_t *self, ms_init_t init, ms_rng_t *rng);

//  Forward pass over the rows x n_inputs matrix in ms_mlp_input(), with
//  the given parameter block (device memory, layout of ms_mlp_params; pass
//  ms_mlp_params(self) to train). dropout_rng NULL: evaluation (no
//  dropout; batch norm with its running statistics); otherwise a training
//  pass: each hidden unit is kept with probability 1 - p and scaled by
//  1 / (1 - p) (inverted dropout, Srivastava et al. 2014), one draw per
//  unit in row-major order, layer by layer, and batch norm uses the
//  batch's statistics (moving the running ones when params is
//  ms_mlp_params(self)). The outputs are in ms_mlp_output(). rows <=
//  max_rows. Returns MS_OK or MS_ERR_BACKEND.
int ms_mlp_forward(ms_mlp_t *self, const float *params, int64_t rows,
                   ms_rng_t *dropout_rng);

//  Draw the dropout masks of every hidden layer for rows rows from rng: the
//  draws ms_mlp_forward makes with a dropout_rng, in the same order, into
//  the device mask buffers, for ms_mlp_forward_train. Nothing when the
//  network has no dropout. Returns MS_OK or MS_ERR_BACKEND.
int ms_mlp_draw_masks(ms_mlp_t *self, int64_t rows, ms_rng_t *rng);

//  Training forward pass with ms_mlp_params and the masks of the last
//  ms_mlp_draw_masks (issues device operations only, so it can be
//  captured). ms_mlp_forward(self, ms_mlp_params(self), rows, rng) is
//  ms_mlp_draw_masks then this. Returns MS_OK or MS_ERR_BACKEND.
int ms_mlp_forward_train(ms_mlp_t *self, int64_t rows);

//  Loss of the last forward pass against ms_mlp_labels() (classification)
//  or ms_mlp_targets() (regression): adds the summed per-row loss to
//  *loss_sum and argmax hits to *n_correct (classification only); with
//  want_grad, also writes the output delta for ms_mlp_backward (gradient
//  of the mean loss over rows). Returns MS_OK or MS_ERR_BACKEND.
int ms_mlp_loss(ms_mlp_t *self, int64_t rows, bool want_grad, double *loss_sum,
                int64_t *n_correct);

//  ms_mlp_loss with the accumulators in backend memory (device operations
//  only; n_correct may be NULL). Returns MS_OK or MS_ERR_BACKEND.
int ms_mlp_loss_into(ms_mlp_t *self, int64_t rows, bool want_grad,
                     double *loss_sum, int64_t *n_correct);

//  Backward pass after a training ms_mlp_forward (with ms_mlp_params and
//  a dropout_rng, or ms_mlp_forward_train) and ms_mlp_loss(want_grad):
//  overwrites the gradient block with the gradient of the mean minibatch
//  loss (the running statistics' stays zero). Without dropout and batch
//  norm an evaluation forward pass computes the same values. The input
//  gradient of the first layer is not computed. Returns MS_OK or
//  MS_ERR_BACKEND.
int ms_mlp_backward(ms_mlp_t *self, int64_t rows);

//  One optimizer step on every layer with the gradients, for update
//  number t (1-based) at learning rate lr (ms_optim.h rules; biases, norm
//  gains and biases and rezero scales not decayed; running statistics
//  never stepped), after clipping the gradient block to the config's
//  clip_norm when set. Returns MS_OK or MS_ERR_BACKEND.
int ms_mlp_step(ms_mlp_t *self, const ms_train_config_t *cfg, double lr,
                int64_t t);

//  One optimizer step on every layer with step scalars in backend memory
//  (w_step for weights, b_step for biases, read when the step runs:
//  &cursor->w_step in a captured training step). Returns MS_OK or
//  MS_ERR_BACKEND.
int ms_mlp_update(ms_mlp_t *self, const ms_optim_step_t *w_step,
                  const ms_optim_step_t *b_step);

//  One training step on the minibatch already in the input, label or
//  target buffers (rows rows): forward with the drawn dropout masks;
//  train_loss (output bias, loss into cursor->loss_sum and n_correct, the
//  output delta and bias gradient, batch_end with table, ms_backend.h);
//  backward; the optimizer step with the cursor's w_step and b_step. The
//  same values as ms_mlp_forward_train, ms_mlp_loss_into, batch_end,
//  ms_mlp_backward and ms_mlp_update in turn, in fewer operations (each
//  a device launch on the GPU). Device operations only: capturable.
//  MS_OK or the backend's error.
int ms_mlp_train_step(ms_mlp_t *self, int64_t rows,
                      const ms_optim_step_t *table, ms_step_cursor_t *cursor);

//  ms_mlp_train_step on rows rows read from x (rows x n_inputs) and y
//  (rows labels, int32, or targets, float) in backend memory instead of
//  the input, label and target buffers: the same operations and bits;
//  for a graph of many steps, each with its own fixed rows of one
//  gathered copy of the epoch. x should be aligned like ms_mlp_input
//  (256 bytes) so that the GEMMs see the same alignment. Borrowed; MS_OK
//  or the backend's error.
int ms_mlp_train_step_at(ms_mlp_t *self, int64_t rows, const float *x,
                         const void *y, const ms_optim_step_t *table,
                         ms_step_cursor_t *cursor);

//  Device buffers (borrowed, valid while the mlp lives): parameters,
//  gradients (n_params each), optimizer state (ms_mlp_state_floats),
//  the input matrix (max_rows x n_inputs), labels (max_rows int32),
//  targets (max_rows floats), outputs (max_rows x n_outputs).
float *ms_mlp_params(ms_mlp_t *self);
float *ms_mlp_grads(ms_mlp_t *self);
float *ms_mlp_state(ms_mlp_t *self);
float *ms_mlp_input(ms_mlp_t *self);
int32_t *ms_mlp_labels(ms_mlp_t *self);
float *ms_mlp_targets(ms_mlp_t *self);
const float *ms_mlp_output(const ms_mlp_t *self);

//  Sizes: parameters, optimizer state floats, layers (n_hidden + 1),
//  rows the workspace holds, and workspace bytes (activations, deltas,
//  masks, input and label buffers).
int64_t ms_mlp_n_params(const ms_mlp_t *self);
int64_t ms_mlp_state_floats(const ms_mlp_t *self);
int32_t ms_mlp_n_layers(const ms_mlp_t *self);
int64_t ms_mlp_max_rows(const ms_mlp_t *self);
int64_t ms_mlp_workspace_bytes(const ms_mlp_t *self);

//  Where layer l (0-based) lives in the parameter block: weight offset,
//  bias offset (floats), fan_in and fan_out. Any pointer may be NULL.
void ms_mlp_layer(const ms_mlp_t *self, int32_t l, int64_t *w_offset,
                  int64_t *b_offset, int32_t *fan_in, int32_t *fan_out);

//  Where layer l's normalisation lives (norm applies to the input of
//  every layer l >= 1; ms_mlp.c's top comment has the whole layout):
//  the offsets (floats) of its gamma and beta (fan_in(l) floats each)
//  and, with batch norm, of its running mean and variance (fan_in(l)
//  each, not trained); -1 for what the layer does not have. Any pointer
//  may be NULL. Returns the layer's norm (MS_NORM_NONE for layer 0).
ms_norm_t ms_mlp_norm(const ms_mlp_t *self, int32_t l, int64_t *gamma_off,
                      int64_t *beta_off, int64_t *mean_off, int64_t *var_off);

//  Residual blocks: how many (0 for a plain network); block k's first and
//  last hidden layer (0-based layer indices, as ms_mlp_layer's) and the
//  offset of its rezero scale (-1 when the scale is the constant 1). Any
//  pointer may be NULL. The block's output is h(first - 1) + s_k u, u the
//  last layer's output after dropout.
int32_t ms_mlp_n_blocks(const ms_mlp_t *self);
void ms_mlp_block(const ms_mlp_t *self, int32_t k, int32_t *first,
                  int32_t *last, int64_t *alpha_off);

//  Floats the optimizer trains: the parameter block before the batch-norm
//  running statistics (n_params without batch norm).
int64_t ms_mlp_n_trainable(const ms_mlp_t *self);

//  The L2 norm of each layer's weight gradient dW(l) (L doubles into out)
//  from the last backward pass, before clipping (a clip's factor is
//  divided out), summed in double in index order. Returns MS_OK,
//  MS_ERR_NOMEM (host scratch for a device backend) or MS_ERR_BACKEND.
int ms_mlp_grad_norms(ms_mlp_t *self, double *out);

#endif
