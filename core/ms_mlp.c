/*  =========================================================================
    ms_mlp - multilayer perceptron: layout, forward, backward, step

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Shapes. A network has L = n_hidden + 1 layers. Layer l (0-based) maps
    fan_in(l) inputs to fan_out(l) outputs: fan_in(0) = n_inputs,
    fan_in(l) = fan_out(l - 1), fan_out(l) = hidden_sizes[l] for the hidden
    layers and n_outputs for the last. A minibatch is a rows x n_inputs
    row-major matrix X (one sample per row), so every activation is a
    rows x width row-major matrix too.

    Parameter block (n_params floats, one allocation): for l = 0 .. L-1,
    W(l), fan_out x fan_in row-major (row o holds the weights into output
    unit o), then b(l), fan_out floats. No padding: this is the exact
    layout of ms_trainer_params, which weights_digest hashes. The gradient
    block has the same layout; the optimizer state block holds k blocks of
    the same layout (k = 1: velocity; k = 2: first then second moment).

    Forward, per layer, with H the input (X, or the previous layer's
    output):  Z = H W^T (one sgemm, NoTrans x Trans, m = rows,
    n = fan_out, k = fan_in, so W is read as stored), then one fused pass
    Z += b; A = f(Z). The output layer has no activation (the loss applies
    softmax). With dropout in training, D = A * M with M holding 0 or
    1 / (1 - p), and D is the next layer's input.

    Backward, with G the delta of the layer's pre-activation (rows x
    fan_out; for the output layer the loss writes it):
        dW = G^T H      (sgemm Trans x NoTrans: m = fan_out, n = fan_in,
                         k = rows, written straight into the gradient
                         block in W's layout)
        db = column sums of G (rows in order)
        G' = G W        (sgemm NoTrans x NoTrans: m = rows, n = fan_in,
                         k = fan_out), skipped for layer 0 (no input grad)
        G' *= M (dropout), G' *= f'(Z) computed from A (ms_activation.h)
    G and G' ping-pong between two workspace buffers of rows x max width.

    Workspace (one allocation, sized once from the architecture and
    max_rows): the input X (rows x n_inputs); per hidden layer A(l), plus
    Z(l) only for gelu (its derivative needs z; every other activation's
    derivative is a function of a), plus M(l) and D(l) only with dropout;
    the outputs (rows x n_outputs); the two delta buffers; targets. Labels
    are one int32 buffer. Every view is aligned to 64 bytes. One function
    (s_workspace) both counts the views and carves them, and s_plan
    counts every backend buffer from it, so ms_mlp_memory_bytes, the
    estimate a node claims by, is what ms_mlp_open allocates. So a relu
    network keeps one activation matrix per hidden layer, the least that
    backpropagation needs without recomputation. Recomputing activations
    (gradient checkpointing) would save memory for very deep networks, at
    a third more arithmetic; not done: at width 64 and batch 200 even
    4096 layers need 210 MB, and a sweep that wide is not the common case.

    Residual and normalised networks (DESIGN.md "The training engine";
    the contract the ONNX exporter and the weights file code against).
    Normalisation (norm layer or batch) applies to the input of every
    dense layer l >= 1, the output layer included: Z = norm_l(H) W^T + b;
    layer 0 reads the raw input. Layer norm (Ba et al. 2016) normalises
    each row over its fan_in(l) features, batch norm (Ioffe and Szegedy
    2015) each feature over the minibatch's rows in training and with the
    running statistics in evaluation (running = 0.9 running + 0.1 batch,
    the variance unbiased: PyTorch's convention); both with the biased
    variance, eps 1e-5, and y = gamma xhat + beta. In a residual network
    hidden layer 0 is the input projection, exactly a plain layer; the
    hidden layers 1 .. n_hidden-1 form blocks of block_layers consecutive
    layers (the last block takes the remainder: block_layers 2 with an
    even n_hidden ends with a one-layer block). Block k with input h:
    u = h; for each layer l of the block u = act(norm_l(u) W^T + b) (with
    dropout after the activation, as for any hidden layer); then
    h = h + s_k u, where s_k is 1, or alpha_k under rezero (a learnable
    scalar per block starting at 0; Bachlechner et al. 2020). The output
    layer reads norm_L(h). hidden_layers counts dense hidden layers, so a
    plain and a residual network of one depth have the same GEMMs.

    The whole parameter block, in order (ms_mlp_layer, ms_mlp_norm and
    ms_mlp_block give every offset; ms_mlp_open takes them all, once,
    from ms_param_layout, the one rule the exporter and the weights file
    also read):
        W(l), b(l) for l = 0 .. L-1   as above, so a plain network with
                                      no norm has the bits and digests it
                                      always had
        gamma(l), beta(l), l = 1..L-1 fan_in(l) floats each (norm only;
                                      initialised 1 and 0)
        alpha(k) per block            rezero only; initialised 0
        running_mean(l), running_var(l), l = 1 .. L-1
                                      batch norm only; fan_in(l) each,
                                      initialised 0 and 1
    The running statistics are state, not parameters: their gradient is
    always zero, the optimizer never steps them (they are in no segment
    of optim_all) and clipping does not see them, but they live in the
    block so that checkpoints, the weights file, re-evaluation and the
    weights digest carry them. gamma, beta and alpha are stepped as
    biases are (no L2).

    Buffers of the extra layers: per normalised layer its normalised
    input nrm(l) (rows x fan_in, the GEMMs' operand forward and for dW)
    and the norm's mean and rstd (rows floats for layer norm, fan_in for
    batch norm), which the backward pass uses to recompute xhat from the
    layer's input; per block its output res(k) = h + s u (a(l) is kept
    for the activation's derivative); one more delta buffer, gstream, for
    the gradient of the residual stream. So a layer-normed residual layer
    keeps about twice the activations of a plain one.

    Backward through a block, with gstream = dL/dh at the block's end:
    the branch's delta is s gstream (times the dropout mask) and the
    scale's gradient sum(gstream u) (residual_backward); the layers run
    back as above; at the block's first layer the input gradient (through
    its norm, or its GEMM with beta 1 when there is none) is added into
    gstream, which then holds dL/dh at the block's start: the skip's
    identity costs nothing. A plain network without norm issues exactly
    the operations it always did, in the same order (ms_golden_test).

    What was not done: no bias folded into the GEMM as an extra input
    column (it would cost a copy of X per batch; the fused pass is
    cheaper); no weights transposed to column-major (sgemm reads W^T for
    free).
*/
#include "ms_mlp.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ms_activation.h"
#include "ms_optim.h"
#include "ms_param_layout.h"

#define S_ALIGN_FLOATS 16 // 64 bytes

//  Backend-memory scratch behind the host-facing calls (ms_mlp_loss adds
//  to host numbers, ms_mlp_step takes host scalars) on a backend whose
//  memory is not host memory.
typedef struct {
    double loss_sum;        // loss accumulator
    int64_t n_correct;      // hits accumulator
    ms_optim_step_t w_step; // weight step scalars
    ms_optim_step_t b_step; // bias step scalars
} s_scalars_t;

struct ms_mlp {
    ms_backend_t *backend;         // borrowed
    const ms_backend_ops_t *ops;   // backend's operation table
    int32_t n_layers;              // L = n_hidden + 1
    int32_t n_inputs, n_outputs;   // network inputs and outputs
    int32_t *fan_in, *fan_out;     // per layer, L entries each
    int64_t *w_off;                // per layer offset of W in params, floats
    int64_t n_params;              // floats in the parameter block
    int64_t n_state;               // floats in the optimizer state block
    int64_t max_rows;              // rows the workspace holds
    int64_t max_width;             // widest fan_out of any layer
    ms_activation_t act;           // hidden activation
    float slope;                   // leaky_relu slope
    double gain;                   // the config's init gain; 0 = auto
    ms_loss_kind_t loss;           // output loss
    bool classify;                 // labels (true) or targets (false)
    float keep;                    // 1 - dropout
    uint32_t keep_threshold;       // keep a unit if 24 random bits < this
    bool dropout;                  // dropout > 0
    bool keep_z;                   // activation needs z (gelu)
    float *params, *grads, *state; // device blocks
    float *work;                   // device workspace block
    int64_t work_floats;           // its size
    int32_t *labels;               // device, max_rows
    float *x, *out, *targets;      // views into work
    float *gbuf[2];                // delta ping-pong, max_rows x max_width
    float **a, **z, **mask, **d;   // per hidden layer views (z/mask/d NULL
                                   // when unused)
    float *host_mask;              // host scratch for masks (!host_memory)
    int64_t mask_floats;           // floats in host_mask
    s_scalars_t *scalars;          // device scratch for the host-facing
                                   // ms_mlp_loss and ms_mlp_step
    int64_t *bounds;               // backend: n_segs + 1 segment offsets of
                                   // the parameter block (W(0), b(0), ...)
    int32_t n_segs;                // optimizer segments: 2L, or 2L + 2
    //  Residual and normalised networks (all NULL / 0 for a plain one).
    bool residual;        // architecture residual
    ms_norm_t norm;       // normalisation of layers 1 .. L-1
    bool rezero;          // a learnable scale per block
    float clip;           // global gradient-norm clip; 0 = off
    int32_t n_blocks;     // residual blocks
    int32_t *block_end;   // per layer: the block it ends, or -1
    int32_t *block_first; // per block: its first hidden layer
    int64_t *g_off;       // per layer: gamma offset (beta follows), or -1
    int64_t *rm_off;      // per layer: running mean offset (variance
                          // follows; batch norm), or -1
    int64_t alpha_off;    // first rezero scale, or -1
    int64_t n_plain;      // floats of the W, b part of the block
    int64_t n_train;      // trainable floats (all but running statistics)
    float **nrm;          // per layer: its normalised input, or NULL
    float **mu, **rs;     // per layer: the norm's mean and rstd
    float **res;          // per block: its output h + s u
    float *gstream;       // the residual stream's gradient
    float *clip_factor;   // backend: the last clip's factor
};

//  --------------------------------------------------------------------------
//  Round a float count up to the view alignment.

static int64_t
s_align(int64_t n)
{
    return (n + S_ALIGN_FLOATS - 1) / S_ALIGN_FLOATS * S_ALIGN_FLOATS;
}

//  --------------------------------------------------------------------------
//  Whether cfg's network has a residual stream (and its gstream buffer).

static bool
s_residual(const ms_train_config_t *cfg)
{
    return cfg->architecture == MS_ARCH_RESIDUAL && cfg->n_hidden >= 1;
}

//  --------------------------------------------------------------------------
//  The workspace, view by view in carving order (the top of this file):
//  the input, per hidden layer a (and z, mask and d when used), the
//  outputs, the two deltas, the targets, per normalised layer nrm, mean
//  and rstd, per block res, then gstream. Returns its floats for rows
//  rows; with self, also points self's views into self->work. Both the
//  size ms_mlp_open allocates and ms_mlp_memory_bytes come from here, so
//  the estimate is the allocation. *mask_floats (may be NULL): the
//  floats of every hidden layer's mask (the host copy a device backend
//  draws into).

static int64_t
s_workspace(const ms_train_config_t *cfg, int32_t n_inputs, int32_t n_outputs,
            int64_t rows, ms_mlp_t *self, int64_t *mask_floats)
{
    int32_t H = cfg->n_hidden, L = H + 1;
    bool keep_z = ms_activation_needs_z(cfg->activation);
    bool dropout = cfg->dropout > 0;
    int64_t gwidth = n_outputs, masks = 0, p = 0;
    for (int32_t l = 0; l < H; l++)
        if (cfg->hidden_sizes[l] > gwidth)
            gwidth = cfg->hidden_sizes[l];
#define S_VIEW(field, floats)                                                  \
    do {                                                                       \
        if (self)                                                              \
            self->field = self->work + p;                                      \
        p += s_align(floats);                                                  \
    } while (0)
    S_VIEW(x, rows * n_inputs);
    for (int32_t l = 0; l < H; l++) {
        int64_t n =
            rows * ms_param_layout_size(cfg, n_inputs, n_outputs, l + 1);
        S_VIEW(a[l], n);
        if (keep_z)
            S_VIEW(z[l], n);
        if (dropout) {
            S_VIEW(mask[l], n);
            S_VIEW(d[l], n);
        }
        masks += s_align(n);
    }
    S_VIEW(out, rows * n_outputs);
    S_VIEW(gbuf[0], rows * gwidth);
    S_VIEW(gbuf[1], rows * gwidth);
    S_VIEW(targets, rows);
    for (int32_t l = 1; l < L && cfg->norm != MS_NORM_NONE; l++) {
        int64_t fan_in = ms_param_layout_size(cfg, n_inputs, n_outputs, l);
        int64_t n_stats = cfg->norm == MS_NORM_LAYER ? rows : fan_in;
        S_VIEW(nrm[l], rows * fan_in);
        S_VIEW(mu[l], n_stats);
        S_VIEW(rs[l], n_stats);
    }
    for (int32_t k = 0; s_residual(cfg) && k < ms_param_layout_n_blocks(cfg);
         k++) {
        int32_t first = 0;
        ms_param_layout_block(cfg, k, &first, NULL);
        S_VIEW(res[k], rows * ms_param_layout_size(cfg, n_inputs, n_outputs,
                                                   first + 1));
    }
    if (s_residual(cfg))
        S_VIEW(gstream, rows * gwidth);
#undef S_VIEW
    if (mask_floats)
        *mask_floats = dropout ? masks : 0;
    return p;
}

//  What ms_mlp_open allocates on the backend, buffer by buffer (bytes),
//  for a config, its inputs, outputs and rows: counted once by s_plan,
//  allocated by ms_mlp_open and summed by ms_mlp_memory_bytes.
typedef struct {
    ms_param_totals_t totals; // the parameter block's sections, floats
    int64_t n_state;          // optimizer state floats
    int32_t n_segs;           // optimizer segments: 2L, or 2L + 2
    int64_t work_floats;      // workspace floats (s_workspace)
    int64_t mask_floats;      // hidden layers' mask floats (dropout)
    size_t params_bytes;      // parameters; the gradients as many
    size_t state_bytes;       // optimizer state (0: none)
    size_t clip_bytes;        // the clip's factor
    size_t work_bytes;        // the workspace
    size_t labels_bytes;      // labels, int32 per row
    size_t scalars_bytes;     // s_scalars_t (device backends only)
    size_t bounds_bytes;      // the segment table
} s_plan_t;

//  --------------------------------------------------------------------------
//  Count every backend buffer of cfg's network at rows rows.

static void
s_plan(const ms_train_config_t *cfg, int32_t n_inputs, int32_t n_outputs,
       int64_t rows, s_plan_t *out)
{
    ms_param_layout_totals_of(cfg, n_inputs, n_outputs, &out->totals);
    out->n_state =
        out->totals.n_params * ms_optim_state_per_param(cfg->optimizer);
    //  W(l) and b(l) of every layer; then, when there are norm gains or
    //  rezero scales, an empty weight segment and one bias-like segment
    //  over them.
    out->n_segs = 2 * (cfg->n_hidden + 1) +
                  (out->totals.n_trainable > out->totals.n_dense ? 2 : 0);
    out->work_floats =
        s_workspace(cfg, n_inputs, n_outputs, rows, NULL, &out->mask_floats);
    out->params_bytes = (size_t) out->totals.n_params * sizeof(float);
    out->state_bytes = (size_t) out->n_state * sizeof(float);
    out->clip_bytes = sizeof(float);
    out->work_bytes = (size_t) out->work_floats * sizeof(float);
    out->labels_bytes = (size_t) rows * sizeof(int32_t);
    out->scalars_bytes = sizeof(s_scalars_t);
    out->bounds_bytes = (size_t) (out->n_segs + 1) * sizeof(int64_t);
}

//  --------------------------------------------------------------------------
//  Estimated backend memory of training cfg's network: s_plan's sum.

int64_t
ms_mlp_memory_bytes(const ms_train_config_t *cfg, int32_t n_inputs,
                    int32_t n_outputs, int64_t max_rows)
{
    s_plan_t plan;
    s_plan(cfg, n_inputs, n_outputs, max_rows < 1 ? 1 : max_rows, &plan);
    return (int64_t) (2 * plan.params_bytes + plan.state_bytes +
                      plan.clip_bytes + plan.work_bytes + plan.labels_bytes +
                      plan.scalars_bytes + plan.bounds_bytes);
}

//  --------------------------------------------------------------------------
//  Build the network and allocate every buffer.

int
ms_mlp_open(ms_mlp_t **out, const ms_train_config_t *cfg, int32_t n_inputs,
            int32_t n_outputs, int64_t max_rows, ms_backend_t *backend)
{
    *out = NULL;
    ms_mlp_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    uint32_t *sizes = NULL;
    ms_param_layer_t *layers = NULL;
    self->backend = backend;
    self->ops = ms_backend_ops(backend);
    int32_t L = cfg->n_hidden + 1;
    int32_t H = cfg->n_hidden;
    self->n_layers = L;
    self->n_inputs = n_inputs;
    self->n_outputs = n_outputs;
    self->max_rows = max_rows < 1 ? 1 : max_rows;
    self->act = cfg->activation;
    self->slope = (float) cfg->leaky_slope;
    self->gain = cfg->gain;
    self->loss = cfg->loss;
    self->classify = n_outputs >= 2;
    self->dropout = cfg->dropout > 0;
    self->keep = (float) (1.0 - cfg->dropout);
    self->keep_threshold = (uint32_t) ((1.0 - cfg->dropout) * 16777216.0);
    self->keep_z = ms_activation_needs_z(cfg->activation);
    self->residual = s_residual(cfg);
    self->norm = cfg->norm;
    self->rezero =
        self->residual && cfg->residual_scale == MS_RESIDUAL_SCALE_REZERO;
    self->clip = (float) cfg->clip_norm;
    self->n_blocks = self->residual ? ms_param_layout_n_blocks(cfg) : 0;
    s_plan_t plan;
    s_plan(cfg, n_inputs, n_outputs, self->max_rows, &plan);
    self->fan_in = calloc((size_t) L, sizeof(int32_t));
    self->fan_out = calloc((size_t) L, sizeof(int32_t));
    self->w_off = calloc((size_t) L, sizeof(int64_t));
    self->g_off = calloc((size_t) L, sizeof(int64_t));
    self->rm_off = calloc((size_t) L, sizeof(int64_t));
    self->block_end = calloc((size_t) L, sizeof(int32_t));
    self->block_first =
        calloc((size_t) (self->n_blocks ? self->n_blocks : 1), sizeof(int32_t));
    self->nrm = calloc((size_t) L, sizeof(float *));
    self->mu = calloc((size_t) L, sizeof(float *));
    self->rs = calloc((size_t) L, sizeof(float *));
    self->res =
        calloc((size_t) (self->n_blocks ? self->n_blocks : 1), sizeof(float *));
    size_t nh = (size_t) (H > 0 ? H : 1);
    self->a = calloc(nh, sizeof(float *));
    self->z = calloc(nh, sizeof(float *));
    self->mask = calloc(nh, sizeof(float *));
    self->d = calloc(nh, sizeof(float *));
    sizes = malloc((size_t) (L + 1) * sizeof(uint32_t));
    layers = malloc((size_t) L * sizeof(ms_param_layer_t));
    if (!self->fan_in || !self->fan_out || !self->w_off || !self->g_off ||
        !self->rm_off || !self->block_end || !self->block_first || !self->nrm ||
        !self->mu || !self->rs || !self->res || !self->a || !self->z ||
        !self->mask || !self->d || !sizes || !layers)
        goto nomem;

    //  Layer shapes and parameter offsets, all from ms_param_layout (the
    //  one rule the exporter and the weights file read too). The hot
    //  paths keep b = w + fan_in fan_out, beta = gamma + fan_in,
    //  var = mean + fan_in and alpha(k) = alpha(0) + k: asserted here.
    for (int32_t i = 0; i <= L; i++)
        sizes[i] = ms_param_layout_size(cfg, n_inputs, n_outputs, i);
    ms_param_layout_layers(cfg, sizes, L + 1, layers);
    for (int32_t l = 0; l < L; l++) {
        const ms_param_layer_t *pl = &layers[l];
        self->fan_in[l] = pl->fan_in;
        self->fan_out[l] = pl->fan_out;
        self->w_off[l] = pl->w;
        self->g_off[l] = pl->gamma;
        self->rm_off[l] = pl->mean;
        self->block_end[l] = -1;
        assert(pl->b == pl->w + (int64_t) pl->fan_in * pl->fan_out);
        assert(pl->gamma < 0 || pl->beta == pl->gamma + pl->fan_in);
        assert(pl->mean < 0 || pl->var == pl->mean + pl->fan_in);
    }
    self->n_plain = plan.totals.n_dense;
    self->n_train = plan.totals.n_trainable;
    self->n_params = plan.totals.n_params;
    self->n_state = plan.n_state;
    self->alpha_off =
        self->rezero ? ms_param_layout_alpha(cfg, sizes, L + 1, 0) : -1;
    self->max_width = n_outputs;
    for (int32_t l = 0; l < L; l++)
        if (self->fan_out[l] > self->max_width)
            self->max_width = self->fan_out[l];
    for (int32_t k = 0; k < self->n_blocks; k++) {
        int32_t first = 0, n = 0;
        ms_param_layout_block(cfg, k, &first, &n);
        int32_t last = first + n - 1;
        self->block_first[k] = first;
        self->block_end[last] = k;
        //  h + s u needs u as wide as h (ms_train_config_check refuses
        //  configs that break this; here it is the caller's contract).
        assert(self->fan_out[last] == self->fan_out[first - 1]);
        assert(!self->rezero || ms_param_layout_alpha(cfg, sizes, L + 1, k) ==
                                    self->alpha_off + k);
    }

    //  Parameters, gradients, optimizer state: one block each.
    self->params = self->ops->alloc(backend, plan.params_bytes);
    self->grads = self->ops->alloc(backend, plan.params_bytes);
    if (plan.state_bytes)
        self->state = self->ops->alloc(backend, plan.state_bytes);
    self->clip_factor = self->ops->alloc(backend, plan.clip_bytes);
    if (!self->params || !self->grads || (plan.state_bytes && !self->state) ||
        !self->clip_factor)
        goto nomem;

    //  Workspace: counted by s_plan, allocated, carved by s_workspace.
    self->work_floats = plan.work_floats;
    self->work = self->ops->alloc(backend, plan.work_bytes);
    self->labels = self->ops->alloc(backend, plan.labels_bytes);
    if (!self->work || !self->labels)
        goto nomem;
    int64_t carved =
        s_workspace(cfg, n_inputs, n_outputs, self->max_rows, self, NULL);
    assert(carved == self->work_floats);
    (void) carved;
    if (!self->ops->host_memory) {
        self->scalars = self->ops->alloc(backend, plan.scalars_bytes);
        if (!self->scalars)
            goto nomem;
    }
    //  The segment table of optim_all: W(l) starts at w_off[l], b(l) at
    //  w_off[l] + fan_in fan_out; then, when there are norm gains or
    //  rezero scales, an empty weight segment and one bias-like segment
    //  over them (stepped as biases: no L2). The running statistics are
    //  in no segment: never stepped.
    int32_t n_segs = plan.n_segs;
    self->n_segs = n_segs;
    int64_t *bounds = malloc(plan.bounds_bytes);
    self->bounds = self->ops->alloc(backend, plan.bounds_bytes);
    if (!bounds || !self->bounds) {
        free(bounds);
        goto nomem;
    }
    for (int32_t l = 0; l < L; l++) {
        bounds[2 * l] = layers[l].w;
        bounds[2 * l + 1] = layers[l].b;
    }
    bounds[2 * L] = self->n_plain;
    if (n_segs > 2 * L) {
        bounds[2 * L + 1] = self->n_plain;
        bounds[2 * L + 2] = self->n_train;
    }
    int up =
        self->ops->upload(backend, self->bounds, bounds, plan.bounds_bytes);
    free(bounds);
    if (up != MS_OK) {
        free(sizes);
        free(layers);
        ms_mlp_destroy(&self);
        return up;
    }
    if (self->dropout && !self->ops->host_memory) {
        //  All hidden layers' masks, drawn then uploaded layer by layer.
        self->mask_floats = plan.mask_floats;
        self->host_mask = malloc((size_t) plan.mask_floats * sizeof(float));
        if (!self->host_mask)
            goto nomem;
    }
    free(sizes);
    free(layers);
    *out = self;
    return MS_OK;
nomem:
    free(sizes);
    free(layers);
    ms_mlp_destroy(&self);
    return MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  Free everything.

void
ms_mlp_destroy(ms_mlp_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_mlp_t *self = *self_p;
    if (self->ops) {
        self->ops->free_buf(self->backend, self->params);
        self->ops->free_buf(self->backend, self->grads);
        self->ops->free_buf(self->backend, self->state);
        self->ops->free_buf(self->backend, self->work);
        self->ops->free_buf(self->backend, self->labels);
        self->ops->free_buf(self->backend, self->scalars);
        self->ops->free_buf(self->backend, self->bounds);
        self->ops->free_buf(self->backend, self->clip_factor);
    }
    free(self->g_off);
    free(self->rm_off);
    free(self->block_end);
    free(self->block_first);
    free(self->nrm);
    free(self->mu);
    free(self->rs);
    free(self->res);
    free(self->host_mask);
    free(self->fan_in);
    free(self->fan_out);
    free(self->w_off);
    free(self->a);
    free(self->z);
    free(self->mask);
    free(self->d);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Orthonormalise the r rows (length c, r <= c) of q by modified
//  Gram-Schmidt (Bjorck 1967), in place.

static void
s_gram_schmidt(double *q, int64_t r, int64_t c)
{
    for (int64_t i = 0; i < r; i++) {
        double *qi = q + i * c;
        for (int64_t j = 0; j < i; j++) {
            const double *qj = q + j * c;
            double dot = 0;
            for (int64_t k = 0; k < c; k++)
                dot += qi[k] * qj[k];
            for (int64_t k = 0; k < c; k++)
                qi[k] -= dot * qj[k];
        }
        double norm = 0;
        for (int64_t k = 0; k < c; k++)
            norm += qi[k] * qi[k];
        norm = sqrt(norm);
        if (norm < 1e-300) { // measure zero for a Gaussian; be safe
            memset(qi, 0, (size_t) c * sizeof(double));
            qi[i] = 1.0;
            continue;
        }
        for (int64_t k = 0; k < c; k++)
            qi[k] /= norm;
    }
}

//  --------------------------------------------------------------------------
//  Orthogonal init of one fan_out x fan_in matrix into w (host floats).

static int
s_init_orthogonal(float *w, int64_t fan_out, int64_t fan_in, double gain,
                  ms_rng_t *rng)
{
    double *q = malloc((size_t) (fan_out * fan_in) * sizeof(double));
    if (!q)
        return MS_ERR_NOMEM;
    for (int64_t i = 0; i < fan_out * fan_in; i++)
        q[i] = ms_rng_normal(rng); // drawn in W's row-major order
    if (fan_out <= fan_in) {
        s_gram_schmidt(q, fan_out, fan_in); // orthonormal rows
        for (int64_t i = 0; i < fan_out * fan_in; i++)
            w[i] = (float) (gain * q[i]);
    } else {
        //  Orthonormal columns: transpose, orthonormalise rows, back.
        double *t = malloc((size_t) (fan_out * fan_in) * sizeof(double));
        if (!t) {
            free(q);
            return MS_ERR_NOMEM;
        }
        for (int64_t o = 0; o < fan_out; o++)
            for (int64_t i = 0; i < fan_in; i++)
                t[i * fan_out + o] = q[o * fan_in + i];
        s_gram_schmidt(t, fan_in, fan_out);
        for (int64_t o = 0; o < fan_out; o++)
            for (int64_t i = 0; i < fan_in; i++)
                w[o * fan_in + i] = (float) (gain * t[i * fan_out + o]);
        free(t);
    }
    free(q);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Initialise parameters, zero gradients and state.

int
ms_mlp_init(ms_mlp_t *self, ms_init_t init, ms_rng_t *rng)
{
    float *host = self->params;
    if (!self->ops->host_memory) {
        host = calloc((size_t) self->n_params, sizeof(float));
        if (!host)
            return MS_ERR_NOMEM;
    }
    memset(host, 0, (size_t) self->n_params * sizeof(float));
    double gain = self->gain > 0 ? self->gain
                                 : ms_activation_gain(self->act, self->slope);
    int rc = MS_OK;
    for (int32_t l = 0; l < self->n_layers && rc == MS_OK; l++) {
        int64_t fi = self->fan_in[l], fo = self->fan_out[l];
        float *w = host + self->w_off[l];
        //  A set gain scales the scheme's unit-gain deviation (as
        //  torch.nn.init does): he sqrt(1/fan_in) (auto gain sqrt 2),
        //  xavier sqrt(2/(fan_in+fan_out)), lecun sqrt(1/fan_in) (auto 1).
        double set = self->gain > 0 ? self->gain : 0.0;
        double std;
        switch (init) {
        case MS_INIT_XAVIER:
            std = (set > 0 ? set : 1.0) * sqrt(2.0 / (double) (fi + fo));
            break;
        case MS_INIT_LECUN:
            std = (set > 0 ? set : 1.0) * sqrt(1.0 / (double) fi);
            break;
        case MS_INIT_ORTHOGONAL:
            std = 0;
            break;
        default:
            std = set > 0 ? set * sqrt(1.0 / (double) fi)
                          : sqrt(2.0 / (double) fi);
            break;
        }
        if (init == MS_INIT_ORTHOGONAL) {
            //  The output layer feeds the loss, not an activation: gain 1.
            double g = l < self->n_layers - 1 ? gain : 1.0;
            rc = s_init_orthogonal(w, fo, fi, g, rng);
        } else
            for (int64_t i = 0; i < fo * fi; i++)
                w[i] = (float) (std * ms_rng_normal(rng));
    }
    //  Norm gains 1 (biases 0), rezero scales 0, running variances 1
    //  (means 0): after the weights, no draws.
    for (int32_t l = 1; l < self->n_layers; l++) {
        for (int64_t j = 0; self->g_off[l] >= 0 && j < self->fan_in[l]; j++)
            host[self->g_off[l] + j] = 1.0f;
        for (int64_t j = 0; self->rm_off[l] >= 0 && j < self->fan_in[l]; j++)
            host[self->rm_off[l] + self->fan_in[l] + j] = 1.0f;
    }
    size_t pbytes = (size_t) self->n_params * sizeof(float);
    if (rc == MS_OK && !self->ops->host_memory)
        rc = self->ops->upload(self->backend, self->params, host, pbytes);
    if (host != self->params)
        free(host);
    if (rc != MS_OK)
        return rc;
    //  Zero gradients and state by copying from a zero region: the CPU
    //  path just clears host memory.
    if (self->ops->host_memory) {
        memset(self->grads, 0, pbytes);
        if (self->state)
            memset(self->state, 0, (size_t) self->n_state * sizeof(float));
        return MS_OK;
    }
    float *zero = calloc((size_t) self->n_params, sizeof(float));
    if (!zero)
        return MS_ERR_NOMEM;
    rc = self->ops->upload(self->backend, self->grads, zero, pbytes);
    for (int64_t s = 0; rc == MS_OK && s < self->n_state; s += self->n_params)
        rc = self->ops->upload(self->backend, self->state + s, zero, pbytes);
    free(zero);
    return rc;
}

//  --------------------------------------------------------------------------
//  Draw one layer's dropout mask (n units) into host memory.

static void
s_draw_mask(const ms_mlp_t *self, float *mask, int64_t n, ms_rng_t *rng)
{
    float scale = 1.0f / self->keep;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t) (ms_rng_next(rng) >> 40); // 24 bits
        mask[i] = bits < self->keep_threshold ? scale : 0.0f;
    }
}

//  --------------------------------------------------------------------------
//  Draw every hidden layer's dropout mask for rows rows.

int
ms_mlp_draw_masks(ms_mlp_t *self, int64_t rows, ms_rng_t *rng)
{
    if (!self->dropout)
        return MS_OK;
    int32_t H = self->n_layers - 1;
    if (self->ops->host_memory) {
        for (int32_t l = 0; l < H; l++)
            s_draw_mask(self, self->mask[l], rows * self->fan_out[l], rng);
        return MS_OK;
    }
    //  Draw all layers into host scratch first (the same draws, in the same
    //  order), then upload each layer's mask.
    float *p = self->host_mask;
    for (int32_t l = 0; l < H; l++) {
        s_draw_mask(self, p, rows * self->fan_out[l], rng);
        p += rows * self->fan_out[l];
    }
    p = self->host_mask;
    for (int32_t l = 0; l < H; l++) {
        size_t n = (size_t) (rows * self->fan_out[l]);
        int rc = self->ops->upload(self->backend, self->mask[l], p,
                                   n * sizeof(float));
        if (rc != MS_OK)
            return rc;
        p += n;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  h(l): what hidden layer l hands on (the input of layer l + 1): its
//  activation, after dropout when masks apply; in a residual network the
//  stream at the input projection (l = 0) and at each block's end.

static const float *
s_h(const ms_mlp_t *self, int32_t l, bool masks)
{
    if (self->residual && self->block_end[l] >= 0)
        return self->res[self->block_end[l]];
    return masks && self->dropout ? self->d[l] : self->a[l];
}

//  --------------------------------------------------------------------------
//  Normalise layer l's input in into nrm[l] (training: batch statistics,
//  and the running ones moved when params is the network's own block).

static int
s_norm_forward(ms_mlp_t *self, const float *params, int32_t l, int64_t rows,
               bool training, const float *in)
{
    int64_t fi = self->fan_in[l];
    const float *gamma = params + self->g_off[l], *beta = gamma + fi;
    if (self->norm == MS_NORM_LAYER)
        return self->ops->layer_norm_forward(self->backend, rows, fi, in, gamma,
                                             beta, self->nrm[l], self->mu[l],
                                             self->rs[l]);
    //  The running statistics are state, not inputs: a training pass
    //  moves them in the block it trains (the const is the caller's
    //  promise for evaluation, where they are only read).
    float *run = (float *) params + self->rm_off[l];
    bool keep = training && params != self->params;
    return self->ops->batch_norm_forward(
        self->backend, training, rows, fi, in, gamma, beta, keep ? NULL : run,
        keep ? NULL : run + fi, self->nrm[l], self->mu[l], self->rs[l]);
}

//  --------------------------------------------------------------------------
//  Forward pass through every layer; training applies the drawn dropout
//  masks (when the network has dropout) and batch statistics.

static int
s_forward(ms_mlp_t *self, const float *params, int64_t rows, bool training,
          bool out_bias)
{
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    const float *in = self->x;
    bool masks = training && self->dropout;
    int rc = MS_OK;
    for (int32_t l = 0; l < self->n_layers && rc == MS_OK; l++) {
        int64_t fi = self->fan_in[l], fo = self->fan_out[l];
        const float *w = params + self->w_off[l];
        const float *bias = w + fi * fo;
        bool hidden = l < self->n_layers - 1;
        float *h = !hidden ? self->out : self->keep_z ? self->z[l] : self->a[l];
        if (self->g_off[l] >= 0) {
            rc = s_norm_forward(self, params, l, rows, training, in);
            in = self->nrm[l];
            if (rc != MS_OK)
                break;
        }
        rc = ops->gemm(b, false, true, rows, fo, fi, 1.0f, in, fi, w, fi, 0.0f,
                       h, fo);
        if (rc != MS_OK)
            break;
        if (!hidden) {
            if (out_bias)
                rc = ops->bias_act_forward(b, MS_ACTIVATION_LINEAR, 0.0f, rows,
                                           fo, bias, h, h);
            break;
        }
        rc = ops->bias_act_forward(b, self->act, self->slope, rows, fo, bias, h,
                                   self->a[l]);
        in = self->a[l];
        if (rc == MS_OK && masks) {
            rc = ops->mul(b, rows * fo, self->mask[l], self->a[l], self->d[l]);
            in = self->d[l];
        }
        int32_t k = self->residual ? self->block_end[l] : -1;
        if (rc == MS_OK && k >= 0) {
            //  Block k ends: h = h(first - 1) + s_k u.
            const float *skip = s_h(self, self->block_first[k] - 1, masks);
            const float *scale =
                self->rezero ? params + self->alpha_off + k : NULL;
            rc = ops->residual_forward(b, rows * fo, skip, scale, in,
                                       self->res[k]);
            in = self->res[k];
        }
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Forward pass.

int
ms_mlp_forward(ms_mlp_t *self, const float *params, int64_t rows,
               ms_rng_t *dropout_rng)
{
    if (dropout_rng) {
        int rc = ms_mlp_draw_masks(self, rows, dropout_rng);
        if (rc != MS_OK)
            return rc;
    }
    return s_forward(self, params, rows, dropout_rng != NULL, true);
}

//  --------------------------------------------------------------------------
//  Training forward pass with the drawn masks.

int
ms_mlp_forward_train(ms_mlp_t *self, int64_t rows)
{
    return s_forward(self, self->params, rows, true, true);
}

//  --------------------------------------------------------------------------
//  Loss of the last forward pass into backend-memory accumulators, and the
//  output delta.

int
ms_mlp_loss_into(ms_mlp_t *self, int64_t rows, bool want_grad, double *loss_sum,
                 int64_t *n_correct)
{
    float scale = 1.0f / (float) rows;
    float *delta = want_grad ? self->gbuf[0] : NULL;
    if (self->loss == MS_LOSS_CROSS_ENTROPY)
        return self->ops->softmax_xent(self->backend, rows, self->n_outputs,
                                       self->out, self->labels, scale, delta,
                                       loss_sum, n_correct);
    return self->ops->mse(self->backend, rows, self->n_outputs, self->out,
                          self->classify ? self->labels : NULL,
                          self->classify ? NULL : self->targets, scale, delta,
                          loss_sum, self->classify ? n_correct : NULL);
}

//  --------------------------------------------------------------------------
//  Loss of the last forward pass into host numbers.

int
ms_mlp_loss(ms_mlp_t *self, int64_t rows, bool want_grad, double *loss_sum,
            int64_t *n_correct)
{
    if (self->ops->host_memory)
        return ms_mlp_loss_into(self, rows, want_grad, loss_sum, n_correct);
    s_scalars_t zero, back;
    memset(&zero, 0, sizeof zero);
    ms_backend_t *b = self->backend;
    int rc = self->ops->upload(b, self->scalars, &zero, sizeof zero);
    if (rc == MS_OK)
        rc = ms_mlp_loss_into(self, rows, want_grad, &self->scalars->loss_sum,
                              &self->scalars->n_correct);
    if (rc == MS_OK)
        rc = self->ops->download(b, &back, self->scalars, sizeof back);
    if (rc != MS_OK)
        return rc;
    *loss_sum += back.loss_sum;
    if (n_correct)
        *n_correct += back.n_correct;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Backward pass into the gradient block; the output layer's bias
//  gradient only when out_db (train_loss wrote it otherwise). A hidden
//  layer's delta and bias gradient come from one act_backward_col_sum
//  (act_backward then col_sum: the same bits as the two).

static int
s_backward(ms_mlp_t *self, int64_t rows, bool out_db)
{
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    float *g = self->gbuf[0]; // delta of layer l (the loss wrote the output's)
    int rc = MS_OK;
    for (int32_t l = self->n_layers - 1; l >= 0 && rc == MS_OK; l--) {
        int64_t fi = self->fan_in[l], fo = self->fan_out[l];
        const float *w = self->params + self->w_off[l];
        float *dw = self->grads + self->w_off[l];
        const float *hin = l == 0 ? self->x : s_h(self, l - 1, true);
        bool normed = self->g_off[l] >= 0;
        rc = ops->gemm(b, true, false, fo, fi, rows, 1.0f, g, fo,
                       normed ? self->nrm[l] : hin, fi, 0.0f, dw, fi);
        if (rc == MS_OK && out_db && l == self->n_layers - 1)
            rc = ops->col_sum(b, rows, fo, g, dw + fi * fo);
        if (rc != MS_OK || l == 0)
            break;
        //  The gradient of h(l - 1): into the stream's buffer where h(l -
        //  1) is the residual stream (added to the skip's share when
        //  layer l starts a block), else into the other ping-pong buffer.
        float *other = g == self->gbuf[0] ? self->gbuf[1] : self->gbuf[0];
        bool stream = self->residual && (l == 1 || self->block_end[l - 1] >= 0);
        bool add = stream && l < self->n_layers - 1;
        float *gh = stream ? self->gstream : other;
        if (normed) {
            rc = ops->gemm(b, false, false, rows, fi, fo, 1.0f, g, fo, w, fi,
                           0.0f, other, fi);
            float *dgamma = self->grads + self->g_off[l];
            const float *gamma = self->params + self->g_off[l];
            if (rc == MS_OK)
                rc = (self->norm == MS_NORM_LAYER ? ops->layer_norm_backward
                                                  : ops->batch_norm_backward)(
                    b, rows, fi, hin, gamma, self->mu[l], self->rs[l], other,
                    gh, dgamma, dgamma + fi, add);
        } else
            rc = ops->gemm(b, false, false, rows, fi, fo, 1.0f, g, fo, w, fi,
                           add ? 1.0f : 0.0f, gh, fi);
        //  Layer l - 1's delta and its bias gradient (fan_out(l - 1) = fi):
        //  at a block's end through the branch's scale (and the rezero
        //  scale's gradient), else straight through the dropout mask.
        int32_t k = self->residual ? self->block_end[l - 1] : -1;
        float *gd = gh;
        if (rc == MS_OK && k >= 0) {
            gd = other;
            bool rz = self->rezero;
            rc = ops->residual_backward(
                b, rows * fi, gh,
                rz ? self->params + self->alpha_off + k : NULL,
                self->dropout ? self->d[l - 1] : self->a[l - 1],
                self->dropout ? self->mask[l - 1] : NULL, gd,
                rz ? self->grads + self->alpha_off + k : NULL);
        } else if (rc == MS_OK && self->dropout)
            rc = ops->mul(b, rows * fi, self->mask[l - 1], gd, gd);
        float *db_prev = self->grads + self->w_off[l - 1] +
                         (int64_t) self->fan_in[l - 1] * fi;
        if (rc == MS_OK)
            rc = ops->act_backward_col_sum(b, self->act, self->slope, rows, fi,
                                           self->z[l - 1], self->a[l - 1], gd,
                                           db_prev);
        g = gd;
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Backward pass into the gradient block.

int
ms_mlp_backward(ms_mlp_t *self, int64_t rows)
{
    return s_backward(self, rows, true);
}

//  --------------------------------------------------------------------------
//  Optimizer step on every layer with step scalars in backend memory.

int
ms_mlp_update(ms_mlp_t *self, const ms_optim_step_t *w_step,
              const ms_optim_step_t *b_step)
{
    int k = self->n_params ? (int) (self->n_state / self->n_params) : 0;
    float *m = k >= 1 ? self->state : NULL;
    float *v = k >= 2 ? self->state + self->n_params : NULL;
    if (self->clip > 0) {
        int rc = self->ops->clip_norm(self->backend, self->n_train, self->grads,
                                      self->clip, self->clip_factor);
        if (rc != MS_OK)
            return rc;
    }
    return self->ops->optim_all(self->backend, w_step, b_step, self->n_segs,
                                self->bounds, self->n_train, self->params,
                                self->grads, m, v);
}

//  --------------------------------------------------------------------------
//  One training step on the minibatch in the input buffers.

int
ms_mlp_train_step(ms_mlp_t *self, int64_t rows, const ms_optim_step_t *table,
                  ms_step_cursor_t *cursor)
{
    int32_t L = self->n_layers;
    int rc = s_forward(self, self->params, rows, true, false);
    if (rc == MS_OK) {
        int64_t fi = self->fan_in[L - 1], fo = self->fan_out[L - 1];
        float *bias = self->params + self->w_off[L - 1] + fi * fo;
        float *db = self->grads + self->w_off[L - 1] + fi * fo;
        rc = self->ops->train_loss(self->backend, self->loss, rows, fo, bias,
                                   self->out,
                                   self->classify ? self->labels : NULL,
                                   self->classify ? NULL : self->targets,
                                   self->gbuf[0], db, table, cursor);
    }
    if (rc == MS_OK)
        rc = s_backward(self, rows, false);
    if (rc == MS_OK)
        rc = ms_mlp_update(self, &cursor->w_step, &cursor->b_step);
    return rc;
}

//  --------------------------------------------------------------------------
//  A training step on rows from given buffers: the step reads the input,
//  label and target pointers when it issues its operations, so they are
//  swapped in for it and restored.

int
ms_mlp_train_step_at(ms_mlp_t *self, int64_t rows, const float *x,
                     const void *y, const ms_optim_step_t *table,
                     ms_step_cursor_t *cursor)
{
    float *x0 = self->x, *t0 = self->targets;
    int32_t *l0 = self->labels;
    self->x = (float *) x;
    if (self->classify)
        self->labels = (int32_t *) y;
    else
        self->targets = (float *) y;
    int rc = ms_mlp_train_step(self, rows, table, cursor);
    self->x = x0;
    self->labels = l0;
    self->targets = t0;
    return rc;
}

//  --------------------------------------------------------------------------
//  Optimizer step on every layer.

int
ms_mlp_step(ms_mlp_t *self, const ms_train_config_t *cfg, double lr, int64_t t)
{
    ms_optim_step_t ws, bs;
    ms_optim_step_prepare(&ws, cfg, lr, t, false);
    ms_optim_step_prepare(&bs, cfg, lr, t, true);
    if (self->ops->host_memory)
        return ms_mlp_update(self, &ws, &bs);
    s_scalars_t host;
    memset(&host, 0, sizeof host);
    host.w_step = ws;
    host.b_step = bs;
    int rc =
        self->ops->upload(self->backend, self->scalars, &host, sizeof host);
    if (rc != MS_OK)
        return rc;
    return ms_mlp_update(self, &self->scalars->w_step, &self->scalars->b_step);
}

//  --------------------------------------------------------------------------
//  Parameter block (device).

float *
ms_mlp_params(ms_mlp_t *self)
{
    return self->params;
}

//  --------------------------------------------------------------------------
//  Gradient block (device).

float *
ms_mlp_grads(ms_mlp_t *self)
{
    return self->grads;
}

//  --------------------------------------------------------------------------
//  Optimizer state block (device), or NULL for sgd.

float *
ms_mlp_state(ms_mlp_t *self)
{
    return self->state;
}

//  --------------------------------------------------------------------------
//  Input matrix of the next pass (device).

float *
ms_mlp_input(ms_mlp_t *self)
{
    return self->x;
}

//  --------------------------------------------------------------------------
//  Labels of the next pass (device).

int32_t *
ms_mlp_labels(ms_mlp_t *self)
{
    return self->labels;
}

//  --------------------------------------------------------------------------
//  Regression targets of the next pass (device).

float *
ms_mlp_targets(ms_mlp_t *self)
{
    return self->targets;
}

//  --------------------------------------------------------------------------
//  Outputs of the last forward pass (device).

const float *
ms_mlp_output(const ms_mlp_t *self)
{
    return self->out;
}

//  --------------------------------------------------------------------------
//  Parameter count.

int64_t
ms_mlp_n_params(const ms_mlp_t *self)
{
    return self->n_params;
}

//  --------------------------------------------------------------------------
//  Optimizer state floats.

int64_t
ms_mlp_state_floats(const ms_mlp_t *self)
{
    return self->n_state;
}

//  --------------------------------------------------------------------------
//  Layers, hidden plus output.

int32_t
ms_mlp_n_layers(const ms_mlp_t *self)
{
    return self->n_layers;
}

//  --------------------------------------------------------------------------
//  Rows the workspace holds.

int64_t
ms_mlp_max_rows(const ms_mlp_t *self)
{
    return self->max_rows;
}

//  --------------------------------------------------------------------------
//  Workspace bytes.

int64_t
ms_mlp_workspace_bytes(const ms_mlp_t *self)
{
    return self->work_floats * (int64_t) sizeof(float) +
           self->max_rows * (int64_t) sizeof(int32_t);
}

//  --------------------------------------------------------------------------
//  Layer l's place in the parameter block.

void
ms_mlp_layer(const ms_mlp_t *self, int32_t l, int64_t *w_offset,
             int64_t *b_offset, int32_t *fan_in, int32_t *fan_out)
{
    if (w_offset)
        *w_offset = self->w_off[l];
    if (b_offset)
        *b_offset =
            self->w_off[l] + (int64_t) self->fan_in[l] * self->fan_out[l];
    if (fan_in)
        *fan_in = self->fan_in[l];
    if (fan_out)
        *fan_out = self->fan_out[l];
}

//  --------------------------------------------------------------------------
//  Layer l's normalisation in the parameter block.

ms_norm_t
ms_mlp_norm(const ms_mlp_t *self, int32_t l, int64_t *gamma_off,
            int64_t *beta_off, int64_t *mean_off, int64_t *var_off)
{
    int64_t g = self->g_off[l], m = self->rm_off[l], fi = self->fan_in[l];
    if (gamma_off)
        *gamma_off = g;
    if (beta_off)
        *beta_off = g >= 0 ? g + fi : -1;
    if (mean_off)
        *mean_off = m;
    if (var_off)
        *var_off = m >= 0 ? m + fi : -1;
    return g >= 0 ? self->norm : MS_NORM_NONE;
}

//  --------------------------------------------------------------------------
//  Residual blocks.

int32_t
ms_mlp_n_blocks(const ms_mlp_t *self)
{
    return self->n_blocks;
}

//  --------------------------------------------------------------------------
//  Block k's layers and scale.

void
ms_mlp_block(const ms_mlp_t *self, int32_t k, int32_t *first, int32_t *last,
             int64_t *alpha_off)
{
    int32_t f = self->block_first[k], e = f;
    while (self->block_end[e] != k)
        e++;
    if (first)
        *first = f;
    if (last)
        *last = e;
    if (alpha_off)
        *alpha_off = self->rezero ? self->alpha_off + k : -1;
}

//  --------------------------------------------------------------------------
//  Trainable floats.

int64_t
ms_mlp_n_trainable(const ms_mlp_t *self)
{
    return self->n_train;
}

//  --------------------------------------------------------------------------
//  Per-layer weight-gradient norms of the last backward pass, before
//  clipping (the clip's factor divided out).

int
ms_mlp_grad_norms(ms_mlp_t *self, double *out)
{
    const float *g = self->grads;
    float *host = NULL;
    float factor = 1.0f;
    int rc = MS_OK;
    if (!self->ops->host_memory) {
        host = malloc((size_t) self->n_plain * sizeof(float));
        if (!host)
            return MS_ERR_NOMEM;
        rc = self->ops->download(self->backend, host, self->grads,
                                 (size_t) self->n_plain * sizeof(float));
        g = host;
    }
    if (rc == MS_OK && self->clip > 0)
        rc = self->ops->download(self->backend, &factor, self->clip_factor,
                                 sizeof factor);
    for (int32_t l = 0; rc == MS_OK && l < self->n_layers; l++) {
        const float *w = g + self->w_off[l];
        int64_t n = (int64_t) self->fan_in[l] * self->fan_out[l];
        double sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += (double) w[i] * (double) w[i];
        out[l] = sqrt(sum) / (factor > 0 ? (double) factor : 1.0);
    }
    free(host);
    return rc;
}
