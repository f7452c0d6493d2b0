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
    are one int32 buffer. Every view is aligned to 64 bytes. So a relu
    network keeps one activation matrix per hidden layer, the least that
    backpropagation needs without recomputation. Recomputing activations
    (gradient checkpointing) would save memory for very deep networks, at
    a third more arithmetic; not done: at width 64 and batch 200 even
    4096 layers need 210 MB, and a sweep that wide is not the common case.

    What was not done: no bias folded into the GEMM as an extra input
    column (it would cost a copy of X per batch; the fused pass is
    cheaper); no weights transposed to column-major (sgemm reads W^T for
    free).
*/
#include "ms_mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ms_activation.h"
#include "ms_optim.h"

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
    int64_t *bounds;               // backend: 2L + 1 segment offsets of the
                                   // parameter block (W(0), b(0), W(1), ...)
};

//  --------------------------------------------------------------------------
//  Round a float count up to the view alignment.

static int64_t
s_align(int64_t n)
{
    return (n + S_ALIGN_FLOATS - 1) / S_ALIGN_FLOATS * S_ALIGN_FLOATS;
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
    self->fan_in = calloc((size_t) L, sizeof(int32_t));
    self->fan_out = calloc((size_t) L, sizeof(int32_t));
    self->w_off = calloc((size_t) L, sizeof(int64_t));
    size_t nh = (size_t) (H > 0 ? H : 1);
    self->a = calloc(nh, sizeof(float *));
    self->z = calloc(nh, sizeof(float *));
    self->mask = calloc(nh, sizeof(float *));
    self->d = calloc(nh, sizeof(float *));
    if (!self->fan_in || !self->fan_out || !self->w_off || !self->a ||
        !self->z || !self->mask || !self->d)
        goto nomem;

    //  Layer shapes and parameter offsets.
    int64_t off = 0, hidden_widths = 0, max_hidden = 0;
    self->max_width = n_outputs;
    for (int32_t l = 0; l < L; l++) {
        self->fan_in[l] = l == 0 ? n_inputs : self->fan_out[l - 1];
        self->fan_out[l] = l < H ? cfg->hidden_sizes[l] : n_outputs;
        self->w_off[l] = off;
        off += ((int64_t) self->fan_in[l] + 1) * self->fan_out[l];
        if (l < H) {
            hidden_widths += s_align(self->max_rows * self->fan_out[l]);
            if (self->fan_out[l] > max_hidden)
                max_hidden = self->fan_out[l];
        }
        if (self->fan_out[l] > self->max_width)
            self->max_width = self->fan_out[l];
    }
    self->n_params = off;
    self->n_state = off * ms_optim_state_per_param(cfg->optimizer);

    //  Parameters, gradients, optimizer state: one block each.
    size_t pbytes = (size_t) self->n_params * sizeof(float);
    self->params = self->ops->alloc(backend, pbytes);
    self->grads = self->ops->alloc(backend, pbytes);
    if (self->n_state)
        self->state =
            self->ops->alloc(backend, (size_t) self->n_state * sizeof(float));
    if (!self->params || !self->grads || (self->n_state && !self->state))
        goto nomem;

    //  Workspace: count, allocate, carve.
    int64_t rows = self->max_rows;
    int per_hidden = 1 + (self->keep_z ? 1 : 0) + (self->dropout ? 2 : 0);
    int64_t gwidth = max_hidden > n_outputs ? max_hidden : n_outputs;
    int64_t total = s_align(rows * n_inputs) + per_hidden * hidden_widths +
                    s_align(rows * n_outputs) + 2 * s_align(rows * gwidth) +
                    s_align(rows);
    self->work_floats = total;
    self->work = self->ops->alloc(backend, (size_t) total * sizeof(float));
    self->labels = self->ops->alloc(backend, (size_t) rows * sizeof(int32_t));
    if (!self->work || !self->labels)
        goto nomem;
    float *p = self->work;
    self->x = p;
    p += s_align(rows * n_inputs);
    for (int32_t l = 0; l < H; l++) {
        int64_t n = s_align(rows * self->fan_out[l]);
        self->a[l] = p;
        p += n;
        if (self->keep_z) {
            self->z[l] = p;
            p += n;
        }
        if (self->dropout) {
            self->mask[l] = p;
            p += n;
            self->d[l] = p;
            p += n;
        }
    }
    self->out = p;
    p += s_align(rows * n_outputs);
    self->gbuf[0] = p;
    p += s_align(rows * gwidth);
    self->gbuf[1] = p;
    p += s_align(rows * gwidth);
    self->targets = p;
    if (!self->ops->host_memory) {
        self->scalars = self->ops->alloc(backend, sizeof(s_scalars_t));
        if (!self->scalars)
            goto nomem;
    }
    //  The segment table of optim_all: W(l) starts at w_off[l], b(l) at
    //  w_off[l] + fan_in fan_out.
    int64_t *bounds = malloc((size_t) (2 * L + 1) * sizeof(int64_t));
    self->bounds =
        self->ops->alloc(backend, (size_t) (2 * L + 1) * sizeof(int64_t));
    if (!bounds || !self->bounds) {
        free(bounds);
        goto nomem;
    }
    for (int32_t l = 0; l < L; l++) {
        bounds[2 * l] = self->w_off[l];
        bounds[2 * l + 1] =
            self->w_off[l] + (int64_t) self->fan_in[l] * self->fan_out[l];
    }
    bounds[2 * L] = self->n_params;
    int up = self->ops->upload(backend, self->bounds, bounds,
                               (size_t) (2 * L + 1) * sizeof(int64_t));
    free(bounds);
    if (up != MS_OK) {
        ms_mlp_destroy(&self);
        return up;
    }
    if (self->dropout && !self->ops->host_memory) {
        //  All hidden layers' masks, drawn then uploaded layer by layer.
        self->mask_floats = hidden_widths;
        self->host_mask = malloc((size_t) hidden_widths * sizeof(float));
        if (!self->host_mask)
            goto nomem;
    }
    *out = self;
    return MS_OK;
nomem:
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
    }
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
//  Forward pass through every layer; with_masks applies the drawn dropout
//  masks.

static int
s_forward(ms_mlp_t *self, const float *params, int64_t rows, bool with_masks,
          bool out_bias)
{
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    const float *in = self->x;
    int rc = MS_OK;
    for (int32_t l = 0; l < self->n_layers && rc == MS_OK; l++) {
        int64_t fi = self->fan_in[l], fo = self->fan_out[l];
        const float *w = params + self->w_off[l];
        const float *bias = w + fi * fo;
        bool hidden = l < self->n_layers - 1;
        float *h = !hidden ? self->out : self->keep_z ? self->z[l] : self->a[l];
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
        if (rc == MS_OK && self->dropout && with_masks) {
            rc = ops->mul(b, rows * fo, self->mask[l], self->a[l], self->d[l]);
            in = self->d[l];
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
    bool masks = self->dropout && dropout_rng;
    if (masks) {
        int rc = ms_mlp_draw_masks(self, rows, dropout_rng);
        if (rc != MS_OK)
            return rc;
    }
    return s_forward(self, params, rows, masks, true);
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
    int cur = 0;
    int rc = MS_OK;
    for (int32_t l = self->n_layers - 1; l >= 0 && rc == MS_OK; l--) {
        int64_t fi = self->fan_in[l], fo = self->fan_out[l];
        const float *w = self->params + self->w_off[l];
        float *dw = self->grads + self->w_off[l];
        const float *g = self->gbuf[cur];
        const float *in = l == 0          ? self->x
                          : self->dropout ? self->d[l - 1]
                                          : self->a[l - 1];
        rc = ops->gemm(b, true, false, fo, fi, rows, 1.0f, g, fo, in, fi, 0.0f,
                       dw, fi);
        if (rc == MS_OK && out_db && l == self->n_layers - 1)
            rc = ops->col_sum(b, rows, fo, g, dw + fi * fo);
        if (rc != MS_OK || l == 0)
            break;
        float *gn = self->gbuf[1 - cur];
        rc = ops->gemm(b, false, false, rows, fi, fo, 1.0f, g, fo, w, fi, 0.0f,
                       gn, fi);
        if (rc == MS_OK && self->dropout)
            rc = ops->mul(b, rows * fi, self->mask[l - 1], gn, gn);
        //  Layer l - 1's delta and its bias gradient (fan_out(l - 1) = fi).
        float *db_prev = self->grads + self->w_off[l - 1] +
                         (int64_t) self->fan_in[l - 1] * fi;
        if (rc == MS_OK)
            rc = ops->act_backward_col_sum(b, self->act, self->slope, rows, fi,
                                           self->z[l - 1], self->a[l - 1], gn,
                                           db_prev);
        cur = 1 - cur;
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
    return self->ops->optim_all(
        self->backend, w_step, b_step, 2 * self->n_layers, self->bounds,
        self->n_params, self->params, self->grads, m, v);
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
