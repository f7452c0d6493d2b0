/*  =========================================================================
    ms_train - the training loop, early stopping, checkpoints

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One epoch: reset the sample order to 0..n-1 and shuffle it with the
    shuffle stream (so the order depends on the stream state alone, which
    a checkpoint records); then, for each minibatch of batch_size rows
    (the last one may be shorter), gather the rows into the network's
    input buffer, forward (with the dropout stream when dropout > 0),
    loss, backward, one optimizer step; then evaluate on the validation
    set. A minibatch loss that is NaN or infinite ends the run
    (MS_RUN_DIVERGED, "diverged at epoch N"): no optimizer step from that
    minibatch on; so does a non-finite validation loss, which can only
    come from weights that overflowed in the last step.

    Where the numbers live. The data sets stay on the backend for the
    whole run (uploaded once at open; on the CPU they are the host arrays
    themselves), and so do the weights; per epoch the host uploads the
    sample order and a table of the epoch's optimizer-step scalars
    (ms_optim_step_prepare for t = step + 1 ... in double on the host,
    as before, so every backend rounds them alike) and reads back one
    ms_step_cursor_t: the sum of minibatch losses, the count of steps, and
    whether and how the epoch diverged. A training step is then a fixed
    sequence of backend operations with no host value in it: gather by
    the order from cursor->first_row, forward, loss into the cursor,
    batch_end (accounting, next step's scalars, divergence), backward,
    update with the cursor's scalars (gather_xy and ms_mlp_train_step:
    on the GPU ten launches for a one-hidden-layer network, fused where
    the CPU's bits allow, docs/CUDA_NOTES.md). On the GPU that sequence
    is captured once as a CUDA Graph (at the second full minibatch, so
    the first one has loaded every kernel) and replayed for every full
   minibatch; the last, shorter one runs uncaptured. On the CPU the same
   operations run one by one, in the same order as before this design, so
   results are bit-identical to it (ms_golden_test); after a divergence the CPU
   loop stops at once (its cursor is host memory), while the GPU runs out the
    epoch's remaining steps as no-ops (batch_end set skip), rather than
    read the cursor back after every step. Dropout masks come from the
    host RNG stream, drawn for each minibatch before its step (the same
    draws in the same order as before) and uploaded outside the graph.

    Three RNG streams, all from cfg->seed: init, shuffle, dropout (the
    ASCII bytes of the names, like ms_dataset's "split"), so changing
    dropout does not change the init or the order, and a checkpoint needs
    only the shuffle and dropout states.

    Early stopping watches the validation accuracy (classification) or
    the validation loss (regression), or the training loss when the
    validation set is empty. An epoch improves when its metric is strictly
    better than the best so far; the best epoch's parameters are copied to
    a second block on the device, and after patience epochs without
    improvement the run stops and those parameters become final. Without
    early stopping the final parameters are the last epoch's.

    Checkpoints (ms_trainer_save) are a flat native-endian record, the same
    machine being the only place a bit-exact continuation is promised:
    magic "MSTRAIN1", a hash of the config and data shape (FNV-1a over
    each field, never over struct padding), counters, RNG states, the
    curve, then the parameter, optimizer state and best-parameter blocks,
    and a zlib CRC-32 of all that. Restore checks everything before it
    changes anything.

    Nothing is allocated per minibatch: the sample order, the network's
    blocks and workspace, the best-parameter block and the curve are
    sized in ms_trainer_open.
*/
#include "ms_train.h"

#include "ms_clock.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "ms_mlp.h"
#include "ms_optim.h"

#define S_STREAM_INIT 0x696e6974ULL          // "init"
#define S_STREAM_SHUFFLE 0x73687566666c65ULL // "shuffle"
#define S_STREAM_DROPOUT 0x64726f706f7574ULL // "dropout"
#define S_MAGIC "MSTRAIN1"
#define S_VERSION 1u

//  A data set on the backend: borrowed host arrays on the cpu, owned
//  device copies elsewhere.
typedef struct {
    float *x;        // n x n_features
    int32_t *labels; // n, classification
    float *targets;  // n, regression
    int64_t n;       // samples
    bool owned;      // allocated here (free with the backend)
} s_data_t;

//  Evaluation accumulators, in backend memory.
typedef struct {
    double loss_sum;   // summed row losses
    int64_t n_correct; // argmax hits
} s_eval_acc_t;

struct ms_trainer {
    ms_train_config_t cfg;        // copy of the task's config
    const ms_dataset_t *train;    // borrowed
    const ms_dataset_t *val;      // borrowed, may be empty
    const ms_dataset_t *test;     // borrowed, may be empty
    ms_backend_t *backend;        // borrowed
    const ms_backend_ops_t *ops;  // its operation table
    ms_mlp_t *mlp;                // NULL for a noop task
    int32_t n_inputs, n_outputs;  // network shape
    bool classify;                // labels (true) or targets
    uint64_t cfg_hash;            // config + data shape, for checkpoints
    int64_t *order;               // n_train sample indices
    int64_t *dev_order;           // the same on the backend (== order on cpu)
    s_data_t dtrain, dval, dtest; // the data sets on the backend
    int64_t batch;                // rows of a full minibatch
    int64_t max_steps;            // minibatches per epoch
    ms_optim_step_t *table;       // host: 2 steps (weights, biases) per
                                  // minibatch of the epoch
    ms_optim_step_t *dev_table;   // the same on the backend (== table on cpu)
    ms_step_cursor_t *cursor;     // backend: the epoch's step state
    s_eval_acc_t *eval_acc;       // backend: evaluation accumulators
    ms_backend_graph_t *graph;    // captured full training step, or NULL
    bool graph_off;               // the backend has no graphs
    bool warm;                    // one full step ran uncaptured
    bool profiled_step;           // the profiler timed a step (cuda only)
    bool profiled_graph;          // and a graph replay
    bool epoch_graph_on;          // not host, MESHSWEEP_CUDA_EPOCH_GRAPH != 0
    float *epoch_x;               // the epoch's rows in order (epoch graph)
    void *epoch_y;                // and their labels or targets
    ms_backend_graph_t *egraph;   // the epoch's full steps, or NULL
    int64_t epoch_steps;          // full minibatches in egraph
    int32_t n_epoch_graphs;       // epochs trained through egraph
    float *best;                  // device block of best params, or NULL
    float *host_params;           // host mirror (non-host backends)
    ms_rng_t shuffle_rng;         // per-epoch order
    ms_rng_t dropout_rng;         // dropout masks
    int32_t epoch;                // epochs completed
    int64_t step;                 // optimizer updates taken
    bool done;                    // no more epochs
    bool diverged;                // loss went NaN / inf
    bool stopped_early;           // early stopping fired
    bool finished;                // ms_trainer_finish was called
    double best_metric;           // best early-stopping metric (larger)
    int32_t best_epoch;           // epoch whose params are final
    int32_t bad_epochs;           // epochs since the last improvement
    double best_val_loss;         // val loss at best_epoch
    double best_val_acc;          // val accuracy at best_epoch
    ms_epoch_metrics_t *curve;    // cfg.epochs entries
    int32_t n_curve;              // filled entries
    double *grad_norms;           // per layer, after the first epoch
    bool have_grad_norms;         // grad_norms filled
};

//  --------------------------------------------------------------------------
//  Monotonic seconds.

static double
s_now(void)
{
    return ms_clock_mono_s();
}

//  --------------------------------------------------------------------------
//  FNV-1a 64 over n bytes.

static uint64_t
s_fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define S_HASH(h, v)                                                           \
    do {                                                                       \
        __typeof__(v) s_v_ = (v);                                              \
        h = s_fnv(h, &s_v_, sizeof s_v_);                                      \
    } while (0)

//  --------------------------------------------------------------------------
//  Hash of every config field that shapes the run, and the data shape.

static uint64_t
s_config_hash(const ms_train_config_t *c, int32_t n_inputs, int32_t n_outputs,
              int64_t n_train)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    S_HASH(h, (int32_t) c->kind);
    S_HASH(h, c->n_hidden);
    for (int32_t i = 0; i < c->n_hidden; i++)
        S_HASH(h, c->hidden_sizes[i]);
    S_HASH(h, (int32_t) c->activation);
    S_HASH(h, c->leaky_slope);
    S_HASH(h, (int32_t) c->loss);
    S_HASH(h, (int32_t) c->init);
    S_HASH(h, (int32_t) c->optimizer);
    S_HASH(h, c->learning_rate);
    S_HASH(h, c->momentum);
    S_HASH(h, c->beta1);
    S_HASH(h, c->beta2);
    S_HASH(h, c->eps);
    S_HASH(h, (int32_t) c->schedule);
    S_HASH(h, c->step_size);
    S_HASH(h, c->gamma);
    S_HASH(h, c->l2);
    S_HASH(h, c->dropout);
    S_HASH(h, c->batch_size);
    S_HASH(h, c->epochs);
    S_HASH(h, (int32_t) c->early_stopping);
    S_HASH(h, c->patience);
    S_HASH(h, c->seed);
    //  The later parameters only where set, so that checkpoints of plain
    //  networks written before them still resume.
    if (c->architecture != MS_ARCH_PLAIN || c->norm != MS_NORM_NONE ||
        c->block_layers != 1 || c->residual_scale != MS_RESIDUAL_SCALE_ONE ||
        c->gain != 0.0 || c->warmup_epochs != 0.0 || c->clip_norm != 0.0) {
        S_HASH(h, (int32_t) c->architecture);
        S_HASH(h, c->block_layers);
        S_HASH(h, (int32_t) c->norm);
        S_HASH(h, (int32_t) c->residual_scale);
        S_HASH(h, c->gain);
        S_HASH(h, c->warmup_epochs);
        S_HASH(h, c->clip_norm);
    }
    S_HASH(h, n_inputs);
    S_HASH(h, n_outputs);
    S_HASH(h, n_train);
    return h;
}

//  --------------------------------------------------------------------------
//  Check one dataset against the network's shape; labels in range.

static int
s_check_data(const ms_dataset_t *d, const char *name, int32_t n_inputs,
             bool classify, int32_t n_outputs, ms_diag_t *diag)
{
    if (d->n_samples == 0)
        return MS_OK;
    if (d->n_samples < 0 || !d->x)
        return ms_diag_set(diag, name, "no feature matrix");
    if (d->n_features != n_inputs)
        return ms_diag_set(diag, name,
                           "has %d features, the training set has %d",
                           (int) d->n_features, (int) n_inputs);
    if (classify) {
        if (!d->labels || d->n_classes < 2)
            return ms_diag_set(diag, name,
                               "regression data, but the training set is "
                               "classification data");
        for (int64_t i = 0; i < d->n_samples; i++)
            if (d->labels[i] < 0 || d->labels[i] >= n_outputs)
                return ms_diag_set(diag, name,
                                   "sample %lld: label %d out of range "
                                   "[0, %d)",
                                   (long long) i, (int) d->labels[i],
                                   (int) n_outputs);
    } else if (!d->targets)
        return ms_diag_set(diag, name,
                           "classification data, but the training set is "
                           "regression data");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Put a data set on the backend: the host arrays themselves on the cpu, a
//  device copy elsewhere. Returns MS_OK, MS_ERR_NOMEM or MS_ERR_BACKEND.

static int
s_data_open(ms_trainer_t *self, const ms_dataset_t *data, s_data_t *out)
{
    memset(out, 0, sizeof *out);
    out->n = data->n_samples;
    if (out->n == 0)
        return MS_OK;
    const ms_backend_ops_t *ops = self->ops;
    if (ops->host_memory) {
        out->x = data->x;
        out->labels = self->classify ? data->labels : NULL;
        out->targets = self->classify ? NULL : data->targets;
        return MS_OK;
    }
    ms_backend_t *b = self->backend;
    size_t xb = (size_t) (out->n * self->n_inputs) * sizeof(float);
    size_t yb = (size_t) out->n * 4; // int32 labels or float targets
    out->owned = true;
    out->x = ops->alloc(b, xb);
    void *y = ops->alloc(b, yb);
    if (self->classify)
        out->labels = y;
    else
        out->targets = y;
    if (!out->x || !y)
        return MS_ERR_NOMEM;
    int rc = ops->upload(b, out->x, data->x, xb);
    if (rc == MS_OK)
        rc = ops->upload(b, y,
                         self->classify ? (const void *) data->labels
                                        : (const void *) data->targets,
                         yb);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free a data set's device copy; safe on a borrowed or empty one.

static void
s_data_close(ms_trainer_t *self, s_data_t *data)
{
    if (data->owned) {
        self->ops->free_buf(self->backend, data->x);
        self->ops->free_buf(self->backend, data->labels);
        self->ops->free_buf(self->backend, data->targets);
    }
    memset(data, 0, sizeof *data);
}

//  --------------------------------------------------------------------------
//  Build the trainer.

int
ms_trainer_open(ms_trainer_t **out, const ms_train_config_t *cfg,
                const ms_dataset_t *train, const ms_dataset_t *val,
                const ms_dataset_t *test, ms_backend_t *backend,
                ms_diag_t *diag)
{
    *out = NULL;
    int rc = ms_train_config_check(cfg, diag);
    if (rc != MS_OK)
        return rc;
    rc = ms_backend_supports(backend, cfg, diag);
    if (rc != MS_OK)
        return rc;
    ms_trainer_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->cfg = *cfg;
    self->train = train;
    self->val = val;
    self->test = test;
    self->backend = backend;
    self->ops = ms_backend_ops(backend);
    self->best_epoch = 0;
    self->best_val_loss = NAN;
    self->best_val_acc = NAN;
    self->classify = train->n_classes >= 2;
    self->n_inputs = train->n_features;
    self->n_outputs = self->classify ? train->n_classes : 1;
    if (cfg->kind == MS_KIND_NOOP) {
        self->done = true;
        *out = self;
        return MS_OK;
    }

    //  Data against config.
    rc = MS_ERR_INVALID;
    if (train->n_samples < 1) {
        ms_diag_set(diag, "train", "the training set is empty");
        goto fail;
    }
    if (train->n_features < 1) {
        ms_diag_set(diag, "train", "no features");
        goto fail;
    }
    if (!self->classify && cfg->loss == MS_LOSS_CROSS_ENTROPY) {
        ms_diag_set(diag, "loss",
                    "cross_entropy needs classification data; the "
                    "training set is regression data (use mse)");
        goto fail;
    }
    if ((rc = s_check_data(train, "train", self->n_inputs, self->classify,
                           self->n_outputs, diag)) != MS_OK ||
        (rc = s_check_data(val, "validation", self->n_inputs, self->classify,
                           self->n_outputs, diag)) != MS_OK ||
        (rc = s_check_data(test, "test", self->n_inputs, self->classify,
                           self->n_outputs, diag)) != MS_OK)
        goto fail;

    //  Network, buffers.
    int64_t rows = cfg->batch_size;
    int64_t most = train->n_samples;
    if (val->n_samples > most)
        most = val->n_samples;
    if (test->n_samples > most)
        most = test->n_samples;
    if (rows > most)
        rows = most;
    //  Minibatches are of rows samples (self->batch below), the last one
    //  of the remainder. Batch norm over a minibatch of one row
    //  normalises every unit to 0: that step would train nothing and
    //  ruin the running statistics. Refused, naming what to change.
    int64_t last_rows = train->n_samples % rows;
    if (cfg->norm == MS_NORM_BATCH && (rows == 1 || last_rows == 1)) {
        rc = ms_diag_set(diag, "batch_size",
                         "norm: batch: the training split has %lld row%s; "
                         "with batch_size %d its last minibatch has 1 row, "
                         "whose batch statistics normalise every unit to 0 "
                         "(change batch_size or validation_split)",
                         (long long) train->n_samples,
                         train->n_samples == 1 ? "" : "s",
                         (int) cfg->batch_size);
        goto fail;
    }
    rc = ms_mlp_open(&self->mlp, cfg, self->n_inputs, self->n_outputs, rows,
                     backend);
    if (rc != MS_OK) {
        ms_diag_set_code(diag, rc, "train", "cannot allocate the network: %s",
                         ms_strerror(rc));
        goto fail;
    }
    rc = MS_ERR_NOMEM;
    int64_t n_params = ms_mlp_n_params(self->mlp);
    self->order = malloc((size_t) train->n_samples * sizeof(int64_t));
    self->curve = calloc((size_t) cfg->epochs, sizeof(ms_epoch_metrics_t));
    self->grad_norms =
        calloc((size_t) ms_mlp_n_layers(self->mlp), sizeof(double));
    if (!self->order || !self->curve || !self->grad_norms)
        goto fail;
    if (cfg->early_stopping) {
        self->best =
            self->ops->alloc(backend, (size_t) n_params * sizeof(float));
        if (!self->best)
            goto fail;
    }
    self->batch = ms_mlp_max_rows(self->mlp);
    if (self->batch > cfg->batch_size)
        self->batch = cfg->batch_size;
    self->max_steps = (train->n_samples + self->batch - 1) / self->batch;
    self->table =
        malloc((size_t) (2 * self->max_steps) * sizeof(ms_optim_step_t));
    self->cursor = self->ops->alloc(backend, sizeof(ms_step_cursor_t));
    self->eval_acc = self->ops->alloc(backend, sizeof(s_eval_acc_t));
    if (!self->table || !self->cursor || !self->eval_acc)
        goto fail;
    if (self->ops->host_memory) {
        self->dev_order = self->order;
        self->dev_table = self->table;
    } else {
        self->host_params = malloc((size_t) n_params * sizeof(float));
        self->dev_order = self->ops->alloc(backend, (size_t) train->n_samples *
                                                        sizeof(int64_t));
        self->dev_table = self->ops->alloc(
            backend, (size_t) (2 * self->max_steps) * sizeof(ms_optim_step_t));
        if (!self->host_params || !self->dev_order || !self->dev_table)
            goto fail;
        const char *eg = getenv("MESHSWEEP_CUDA_EPOCH_GRAPH");
        self->epoch_graph_on = !(eg && strcmp(eg, "0") == 0);
    }
    if ((rc = s_data_open(self, train, &self->dtrain)) != MS_OK ||
        (rc = s_data_open(self, val, &self->dval)) != MS_OK ||
        (rc = s_data_open(self, test, &self->dtest)) != MS_OK) {
        ms_diag_set_code(diag, rc, "train",
                         "cannot put the data sets on the %s backend: %s",
                         self->ops->name, ms_strerror(rc));
        goto fail;
    }

    //  Initialise from the seed.
    uint64_t seed = (uint64_t) cfg->seed;
    ms_rng_t init_rng;
    ms_rng_seed(&init_rng, seed, S_STREAM_INIT);
    ms_rng_seed(&self->shuffle_rng, seed, S_STREAM_SHUFFLE);
    ms_rng_seed(&self->dropout_rng, seed, S_STREAM_DROPOUT);
    rc = ms_mlp_init(self->mlp, cfg->init, &init_rng);
    if (rc != MS_OK) {
        ms_diag_set_code(diag, rc, "init", "cannot initialise: %s",
                         ms_strerror(rc));
        goto fail;
    }
    self->cfg_hash =
        s_config_hash(cfg, self->n_inputs, self->n_outputs, train->n_samples);
    *out = self;
    return MS_OK;
fail:
    ms_trainer_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free the trainer.

void
ms_trainer_destroy(ms_trainer_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_trainer_t *self = *self_p;
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    if (self->best)
        ops->free_buf(b, self->best);
    if (self->graph)
        ops->graph_destroy(b, self->graph);
    if (self->egraph)
        ops->graph_destroy(b, self->egraph);
    if (self->epoch_x)
        ops->free_buf(b, self->epoch_x);
    if (self->epoch_y)
        ops->free_buf(b, self->epoch_y);
    if (self->mlp) {
        ops->free_buf(b, self->cursor);
        ops->free_buf(b, self->eval_acc);
        if (!ops->host_memory) {
            ops->free_buf(b, self->dev_order);
            ops->free_buf(b, self->dev_table);
        }
        s_data_close(self, &self->dtrain);
        s_data_close(self, &self->dval);
        s_data_close(self, &self->dtest);
    }
    ms_mlp_destroy(&self->mlp);
    free(self->order);
    free(self->table);
    free(self->host_params);
    free(self->curve);
    free(self->grad_norms);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  No more epochs?

bool
ms_trainer_done(const ms_trainer_t *self)
{
    return self->done;
}

//  --------------------------------------------------------------------------
//  Mean loss and accuracy of params (device block) on a data set on the
//  backend; NaN when it is empty (accuracy NaN for regression). The
//  accumulators stay on the backend until the last chunk.

static int
s_evaluate(ms_trainer_t *self, const float *params, const s_data_t *data,
           double *loss, double *accuracy)
{
    *loss = NAN;
    *accuracy = NAN;
    if (data->n == 0)
        return MS_OK;
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    int64_t max_rows = ms_mlp_max_rows(self->mlp);
    int64_t nf = self->n_inputs;
    s_eval_acc_t acc;
    memset(&acc, 0, sizeof acc);
    int rc = ops->upload(b, self->eval_acc, &acc, sizeof acc);
    for (int64_t start = 0; start < data->n && rc == MS_OK; start += max_rows) {
        int64_t rows = data->n - start;
        if (rows > max_rows)
            rows = max_rows;
        rc = ops->copy(b, ms_mlp_input(self->mlp), data->x + start * nf,
                       (size_t) (rows * nf) * sizeof(float));
        if (rc == MS_OK && self->classify)
            rc = ops->copy(b, ms_mlp_labels(self->mlp), data->labels + start,
                           (size_t) rows * sizeof(int32_t));
        if (rc == MS_OK && !self->classify)
            rc = ops->copy(b, ms_mlp_targets(self->mlp), data->targets + start,
                           (size_t) rows * sizeof(float));
        if (rc == MS_OK)
            rc = ms_mlp_forward(self->mlp, params, rows, NULL);
        if (rc == MS_OK)
            rc = ms_mlp_loss_into(self->mlp, rows, false,
                                  &self->eval_acc->loss_sum,
                                  &self->eval_acc->n_correct);
    }
    if (rc == MS_OK)
        rc = ops->download(b, &acc, self->eval_acc, sizeof acc);
    if (rc != MS_OK)
        return rc;
    *loss = acc.loss_sum / (double) data->n;
    if (self->classify)
        *accuracy = (double) acc.n_correct / (double) data->n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  One training step of rows rows, from the cursor's place in the order:
//  device operations only (captured as a graph on the GPU).

static int
s_step(ms_trainer_t *self, int64_t rows)
{
    ms_mlp_t *mlp = self->mlp;
    int rc = self->ops->gather_xy(
        self->backend, rows, self->n_inputs, self->dtrain.x,
        self->classify ? (const void *) self->dtrain.labels
                       : (const void *) self->dtrain.targets,
        self->dev_order, self->cursor, ms_mlp_input(mlp),
        self->classify ? (void *) ms_mlp_labels(mlp)
                       : (void *) ms_mlp_targets(mlp));
    if (rc == MS_OK)
        rc = ms_mlp_train_step(mlp, rows, self->dev_table, self->cursor);
    return rc;
}

//  --------------------------------------------------------------------------
//  A full minibatch's step, for capture.

static int
s_full_step_fn(void *arg)
{
    ms_trainer_t *self = arg;
    return s_step(self, self->batch);
}

//  --------------------------------------------------------------------------
//  A full minibatch: replay the captured step; capture it at the second
//  full minibatch (the first one ran every kernel once); run it directly
//  on a backend without graphs.

static int
s_full_step(ms_trainer_t *self)
{
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    if (self->graph) {
        //  Profiling: the first replay alone, timed on the device.
        bool prof = !self->profiled_graph && ops->profile_begin &&
                    ops->profile_begin(b, "graph") == MS_OK;
        self->profiled_graph = true;
        int rc = ops->graph_launch(b, self->graph);
        if (prof && ops->profile_end(b) != MS_OK && rc == MS_OK)
            rc = MS_ERR_BACKEND;
        return rc;
    }
    if (!self->graph_off && self->warm) {
        //  Profiling: this step uncaptured, op by op, timed on the device
        //  (MESHSWEEP_CUDA_PROFILE=1; ms_backend_profile_report); the
        //  capture is then at the next full minibatch.
        if (!self->profiled_step && ops->profile_begin &&
            ops->profile_begin(b, "step") == MS_OK) {
            self->profiled_step = true;
            int rc = s_step(self, self->batch);
            int rc2 = ops->profile_end(b);
            return rc != MS_OK ? rc : rc2;
        }
        int rc = ops->capture(b, s_full_step_fn, self, &self->graph);
        if (rc == MS_OK)
            return ops->graph_launch(b, self->graph);
        if (rc != MS_ERR_UNSUPPORTED)
            return rc;
        self->graph_off = true;
    }
    self->warm = true;
    return s_step(self, self->batch);
}

//  --------------------------------------------------------------------------
//  The epoch's full minibatches, for capture as one graph: step k reads
//  rows k * batch ... of the epoch's gathered copy (fixed pointers).

static int
s_epoch_steps_fn(void *arg)
{
    ms_trainer_t *self = arg;
    int64_t nf = self->n_inputs, batch = self->batch;
    int rc = MS_OK;
    for (int64_t k = 0; k < self->epoch_steps && rc == MS_OK; k++) {
        int64_t r0 = k * batch;
        //  epoch_y holds 32-bit labels or targets: row r0 at 4 r0 bytes.
        rc = ms_mlp_train_step_at(self->mlp, batch, self->epoch_x + r0 * nf,
                                  (const int32_t *) self->epoch_y + r0,
                                  self->dev_table, self->cursor);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Turn the epoch graph off for this trainer, saying why on stderr.

static void
s_epoch_graph_off(ms_trainer_t *self, const char *why)
{
    fprintf(stderr, "meshsweep: epoch graph off (%s): per-step graphs\n", why);
    self->epoch_graph_on = false;
    if (self->epoch_x)
        self->ops->free_buf(self->backend, self->epoch_x);
    if (self->epoch_y)
        self->ops->free_buf(self->backend, self->epoch_y);
    self->epoch_x = NULL;
    self->epoch_y = NULL;
}

//  --------------------------------------------------------------------------
//  Whole-epoch replay (on by default on a non-host backend;
//  MESHSWEEP_CUDA_EPOCH_GRAPH=0 turns it off; docs/CUDA_NOTES.md):
//  after the epoch's order is uploaded, gather all its rows in order into
//  one device copy (one launch), then replay one graph of the epoch's
//  full minibatches (captured once per trainer, at the first epoch after
//  a full step ran uncaptured, so every kernel is loaded). The same
//  kernels on the same values in the same order as the per-step path,
//  so the same bits. Not with dropout (masks are drawn on the host per
//  step). *rows_done gets the rows trained (0: the caller runs the
//  per-step path; the shorter last minibatch is always the caller's:
//  the cursor's first_row points at it). Falls back, with one stderr
//  line, when the copy does not fit or the capture fails.

static int
s_epoch_graph(ms_trainer_t *self, int64_t n, int64_t *rows_done)
{
    *rows_done = 0;
    int64_t batch = self->batch, nf = self->n_inputs;
    int64_t k = n / batch;
    if (!self->epoch_graph_on || !self->warm || self->cfg.dropout > 0 || k < 1)
        return MS_OK;
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    //  cuBLAS may pick its kernel by the pointer's alignment: keep every
    //  step's x 256-byte aligned, like the network's input buffer.
    if ((batch * nf * (int64_t) sizeof(float)) % 256 != 0) {
        s_epoch_graph_off(self, "a minibatch is not a multiple of 256 bytes");
        return MS_OK;
    }
    if (!self->epoch_x) {
        self->epoch_x = ops->alloc(b, (size_t) (n * nf) * sizeof(float));
        self->epoch_y = ops->alloc(b, (size_t) n * sizeof(int32_t));
        if (!self->epoch_x || !self->epoch_y) {
            s_epoch_graph_off(self, "no device memory for a copy of the "
                                    "training set");
            return MS_OK;
        }
    }
    int rc =
        ops->gather_xy(b, n, nf, self->dtrain.x,
                       self->classify ? (const void *) self->dtrain.labels
                                      : (const void *) self->dtrain.targets,
                       self->dev_order, NULL, self->epoch_x, self->epoch_y);
    if (rc != MS_OK)
        return rc;
    if (self->egraph && self->epoch_steps != k) {
        ops->graph_destroy(b, self->egraph);
        self->egraph = NULL;
    }
    if (!self->egraph) {
        self->epoch_steps = k;
        rc = ops->capture(b, s_epoch_steps_fn, self, &self->egraph);
        if (rc != MS_OK) {
            char why[300];
            snprintf(why, sizeof why, "capture failed: %s%s%s", ms_strerror(rc),
                     ms_backend_last_error(b)[0] ? ", " : "",
                     ms_backend_last_error(b));
            s_epoch_graph_off(self, why);
            return MS_OK;
        }
    }
    rc = ops->graph_launch(b, self->egraph);
    if (rc != MS_OK)
        return rc;
    self->n_epoch_graphs++;
    *rows_done = k * batch;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Record the current params as the best ones.

static int
s_keep_best(ms_trainer_t *self)
{
    if (!self->best)
        return MS_OK;
    return self->ops->copy(self->backend, self->best, ms_mlp_params(self->mlp),
                           (size_t) ms_mlp_n_params(self->mlp) * sizeof(float));
}

//  --------------------------------------------------------------------------
//  Train one epoch.

int
ms_trainer_epoch(ms_trainer_t *self, ms_epoch_metrics_t *metrics)
{
    if (self->done || self->finished)
        return MS_ERR_INVALID;
    const ms_train_config_t *cfg = &self->cfg;
    int32_t e = self->epoch + 1;
    double lr = ms_optim_schedule_lr(cfg, e);
    double t0 = s_now();
    int64_t n = self->train->n_samples;
    for (int64_t i = 0; i < n; i++)
        self->order[i] = i;
    ms_rng_shuffle_i64(&self->shuffle_rng, self->order, n);

    //  The epoch's order, step scalars and a zero cursor, uploaded once.
    const ms_backend_ops_t *ops = self->ops;
    ms_backend_t *b = self->backend;
    int64_t batch = self->batch;
    int64_t n_steps = (n + batch - 1) / batch;
    for (int64_t k = 0; k < n_steps; k++) {
        int64_t t = self->step + 1 + k;
        double lr_t = lr * ms_optim_warmup_factor(cfg, t, self->max_steps);
        ms_optim_step_prepare(&self->table[2 * k], cfg, lr_t, t, false);
        ms_optim_step_prepare(&self->table[2 * k + 1], cfg, lr_t, t, true);
    }
    ms_step_cursor_t c;
    memset(&c, 0, sizeof c);
    int rc = ops->upload(b, self->dev_order, self->order,
                         (size_t) n * sizeof(int64_t));
    if (rc == MS_OK)
        rc = ops->upload(b, self->dev_table, self->table,
                         (size_t) (2 * n_steps) * sizeof(ms_optim_step_t));
    if (rc == MS_OK)
        rc = ops->upload(b, self->cursor, &c, sizeof c);
    if (rc != MS_OK)
        return rc;

    int64_t first = 0;
    rc = s_epoch_graph(self, n, &first);
    if (rc != MS_OK)
        return rc;
    ms_rng_t *drop = cfg->dropout > 0 ? &self->dropout_rng : NULL;
    for (int64_t start = first; start < n; start += batch) {
        int64_t rows = n - start < batch ? n - start : batch;
        if (drop)
            rc = ms_mlp_draw_masks(self->mlp, rows, drop);
        if (rc == MS_OK)
            rc = rows == batch ? s_full_step(self) : s_step(self, rows);
        if (rc != MS_OK)
            return rc;
        if (ops->host_memory && self->cursor->diverged)
            break; // the cursor is host memory: stop at once
    }
    rc = ops->download(b, &c, self->cursor, sizeof c);
    if (rc != MS_OK)
        return rc;
    self->step += c.n_steps;
    self->diverged = c.diverged != 0;
    //  The first epoch's per-layer gradient norms, from its last
    //  minibatch's gradients (before validation, which leaves them
    //  alone); after a divergence, the diverging minibatch's (inf or NaN
    //  where they blew up).
    if (e == 1) {
        rc = ms_mlp_grad_norms(self->mlp, self->grad_norms);
        if (rc != MS_OK)
            return rc;
        self->have_grad_norms = true;
    }
    double loss_acc = c.loss_acc, bad_loss = c.bad_loss;
    int64_t n_batches = c.n_steps;

    ms_epoch_metrics_t m = {.epoch = e, .learning_rate = lr};
    m.val_loss = NAN;
    m.val_accuracy = NAN;
    if (self->diverged)
        m.train_loss = bad_loss;
    else {
        m.train_loss = loss_acc / (double) n_batches;
        rc = s_evaluate(self, ms_mlp_params(self->mlp), &self->dval,
                        &m.val_loss, &m.val_accuracy);
        if (rc != MS_OK)
            return rc;
        if (self->val->n_samples > 0 && !isfinite(m.val_loss))
            self->diverged = true;
    }
    m.seconds = s_now() - t0;
    self->epoch = e;
    self->curve[self->n_curve++] = m;
    if (metrics)
        *metrics = m;
    if (self->diverged) {
        self->done = true;
        return MS_OK;
    }

    //  Early stopping bookkeeping (also tracks the last epoch without it).
    double metric = self->val->n_samples == 0 ? -m.train_loss
                    : self->classify          ? m.val_accuracy
                                              : -m.val_loss;
    if (!cfg->early_stopping || self->best_epoch == 0 ||
        metric > self->best_metric) {
        self->best_metric = metric;
        self->best_epoch = e;
        self->bad_epochs = 0;
        self->best_val_loss = m.val_loss;
        self->best_val_acc = m.val_accuracy;
        rc = s_keep_best(self);
        if (rc != MS_OK)
            return rc;
    } else if (++self->bad_epochs >= cfg->patience) {
        self->stopped_early = true;
        self->done = true;
    }
    if (e >= cfg->epochs)
        self->done = true;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Append n bytes to a checkpoint buffer (NULL buffer: only count).

static void
s_put(unsigned char *buf, size_t *off, const void *src, size_t n)
{
    if (buf && n)
        memcpy(buf + *off, src, n);
    *off += n;
}

//  Fixed part of a checkpoint, after the magic.
typedef struct {
    uint32_t version;     // S_VERSION
    uint32_t flags;       // 1 done, 2 diverged, 4 stopped early, 8 best,
                          // 16 gradient norms (L doubles) follow the curve
    uint64_t cfg_hash;    // s_config_hash
    int64_t n_params;     // parameter floats
    int64_t n_state;      // optimizer state floats
    int64_t step;         // optimizer updates taken
    int32_t epoch;        // epochs completed
    int32_t n_curve;      // curve entries
    int32_t best_epoch;   // epoch of the best params
    int32_t bad_epochs;   // epochs since last improvement
    double best_metric;   // early-stopping metric at best_epoch
    double best_val_loss; // val loss at best_epoch
    double best_val_acc;  // val accuracy at best_epoch
    ms_rng_t shuffle_rng; // stream states
    ms_rng_t dropout_rng;
} s_ckpt_head_t;

//  --------------------------------------------------------------------------
//  Write the checkpoint into buf (NULL: measure). Device blocks are
//  downloaded straight into the buffer.

static int
s_serialize(const ms_trainer_t *self, unsigned char *buf, size_t *n_bytes)
{
    s_ckpt_head_t h;
    memset(&h, 0, sizeof h); // padding bytes too: checkpoints compare equal
    h.version = S_VERSION;
    h.flags = (self->done ? 1u : 0u) | (self->diverged ? 2u : 0u) |
              (self->stopped_early ? 4u : 0u) | (self->best ? 8u : 0u) |
              (self->have_grad_norms ? 16u : 0u);
    h.cfg_hash = self->cfg_hash;
    h.n_params = ms_mlp_n_params(self->mlp);
    h.n_state = ms_mlp_state_floats(self->mlp);
    h.step = self->step;
    h.epoch = self->epoch;
    h.n_curve = self->n_curve;
    h.best_epoch = self->best_epoch;
    h.bad_epochs = self->bad_epochs;
    h.best_metric = self->best_metric;
    h.best_val_loss = self->best_val_loss;
    h.best_val_acc = self->best_val_acc;
    h.shuffle_rng = self->shuffle_rng;
    h.dropout_rng = self->dropout_rng;
    size_t off = 0;
    s_put(buf, &off, S_MAGIC, 8);
    s_put(buf, &off, &h, sizeof h);
    for (int32_t i = 0; i < self->n_curve; i++) {
        const ms_epoch_metrics_t *c = &self->curve[i];
        s_put(buf, &off, &c->epoch, sizeof c->epoch);
        s_put(buf, &off, &c->train_loss, sizeof c->train_loss);
        s_put(buf, &off, &c->val_loss, sizeof c->val_loss);
        s_put(buf, &off, &c->val_accuracy, sizeof c->val_accuracy);
        s_put(buf, &off, &c->seconds, sizeof c->seconds);
        s_put(buf, &off, &c->learning_rate, sizeof c->learning_rate);
    }
    if (self->have_grad_norms)
        s_put(buf, &off, self->grad_norms,
              (size_t) ms_mlp_n_layers(self->mlp) * sizeof(double));
    const float *blocks[3] = {ms_mlp_params(self->mlp), ms_mlp_state(self->mlp),
                              self->best};
    size_t sizes[3] = {(size_t) h.n_params * sizeof(float),
                       (size_t) h.n_state * sizeof(float),
                       self->best ? (size_t) h.n_params * sizeof(float) : 0};
    for (int i = 0; i < 3; i++) {
        if (buf && sizes[i]) {
            int rc = self->ops->download(self->backend, buf + off, blocks[i],
                                         sizes[i]);
            if (rc != MS_OK)
                return rc;
        }
        off += sizes[i];
    }
    if (buf) {
        uint32_t crc = (uint32_t) crc32(0L, buf, (uInt) off);
        s_put(buf, &off, &crc, sizeof crc);
    } else
        off += sizeof(uint32_t);
    *n_bytes = off;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Serialize the whole state.

int
ms_trainer_save(const ms_trainer_t *self, void **bytes, size_t *n_bytes)
{
    *bytes = NULL;
    *n_bytes = 0;
    if (!self->mlp || self->finished)
        return MS_ERR_INVALID; // noop: nothing to save; finished: no curve
    size_t n;
    s_serialize(self, NULL, &n);
    unsigned char *buf = malloc(n);
    if (!buf)
        return MS_ERR_NOMEM;
    int rc = s_serialize(self, buf, &n);
    if (rc != MS_OK) {
        free(buf);
        return rc;
    }
    *bytes = buf;
    *n_bytes = n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Restore a checkpoint; everything is checked before anything changes.

int
ms_trainer_restore(ms_trainer_t *self, const void *bytes, size_t n_bytes)
{
    const unsigned char *p = bytes;
    if (!self->mlp || self->finished || !p ||
        n_bytes < 8 + sizeof(s_ckpt_head_t) + 4)
        return MS_ERR_INVALID;
    if (memcmp(p, S_MAGIC, 8) != 0)
        return MS_ERR_INVALID;
    uint32_t crc;
    memcpy(&crc, p + n_bytes - 4, 4);
    if ((uint32_t) crc32(0L, p, (uInt) (n_bytes - 4)) != crc)
        return MS_ERR_INVALID;
    s_ckpt_head_t h;
    memcpy(&h, p + 8, sizeof h);
    bool has_best = (h.flags & 8u) != 0;
    bool has_norms = (h.flags & 16u) != 0;
    size_t norms_bytes =
        has_norms ? (size_t) ms_mlp_n_layers(self->mlp) * sizeof(double) : 0;
    if (h.version != S_VERSION || h.cfg_hash != self->cfg_hash ||
        h.n_params != ms_mlp_n_params(self->mlp) ||
        h.n_state != ms_mlp_state_floats(self->mlp) ||
        has_best != (self->best != NULL) || h.n_curve < 0 ||
        h.n_curve > self->cfg.epochs || h.epoch != h.n_curve || h.step < 0)
        return MS_ERR_INVALID;
    size_t entry = sizeof(int32_t) + 5 * sizeof(double);
    size_t pbytes = (size_t) h.n_params * sizeof(float);
    size_t need = 8 + sizeof h + (size_t) h.n_curve * entry + norms_bytes +
                  pbytes + (size_t) h.n_state * sizeof(float) +
                  (has_best ? pbytes : 0) + 4;
    if (need != n_bytes)
        return MS_ERR_INVALID;

    size_t off = 8 + sizeof h;
    for (int32_t i = 0; i < h.n_curve; i++) {
        ms_epoch_metrics_t *c = &self->curve[i];
        memcpy(&c->epoch, p + off, sizeof c->epoch);
        off += sizeof c->epoch;
        double *fields[5] = {&c->train_loss, &c->val_loss, &c->val_accuracy,
                             &c->seconds, &c->learning_rate};
        for (int k = 0; k < 5; k++) {
            memcpy(fields[k], p + off, sizeof(double));
            off += sizeof(double);
        }
    }
    if (has_norms)
        memcpy(self->grad_norms, p + off, norms_bytes);
    off += norms_bytes;
    self->have_grad_norms = has_norms;
    int rc = self->ops->upload(self->backend, ms_mlp_params(self->mlp), p + off,
                               pbytes);
    off += pbytes;
    if (rc == MS_OK && h.n_state)
        rc = self->ops->upload(self->backend, ms_mlp_state(self->mlp), p + off,
                               (size_t) h.n_state * sizeof(float));
    off += (size_t) h.n_state * sizeof(float);
    if (rc == MS_OK && has_best)
        rc = self->ops->upload(self->backend, self->best, p + off, pbytes);
    if (rc != MS_OK)
        return rc;
    self->n_curve = h.n_curve;
    self->epoch = h.epoch;
    self->step = h.step;
    self->done = (h.flags & 1u) != 0;
    self->diverged = (h.flags & 2u) != 0;
    self->stopped_early = (h.flags & 4u) != 0;
    self->best_epoch = h.best_epoch;
    self->bad_epochs = h.bad_epochs;
    self->best_metric = h.best_metric;
    self->best_val_loss = h.best_val_loss;
    self->best_val_acc = h.best_val_acc;
    self->shuffle_rng = h.shuffle_rng;
    self->dropout_rng = h.dropout_rng;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Final weights, test metrics, the result.

int
ms_trainer_finish(ms_trainer_t *self, ms_run_result_t *result)
{
    memset(result, 0, sizeof *result);
    if (self->finished)
        return MS_ERR_INVALID;
    self->finished = true;
    result->status = MS_RUN_OK;
    if (!self->mlp) { // noop: ok, zero metrics
        result->params =
            ms_train_config_params(&self->cfg, self->n_inputs, self->n_outputs);
        return MS_OK;
    }
    result->params = ms_mlp_n_params(self->mlp);
    result->epochs = self->epoch;
    for (int32_t i = 0; i < self->n_curve; i++)
        result->train_seconds += self->curve[i].seconds;
    result->seconds_per_epoch =
        self->epoch ? result->train_seconds / self->epoch : 0.0;
    result->test_loss = NAN;
    result->test_accuracy = NAN;
    if (self->diverged) {
        result->status = MS_RUN_DIVERGED;
        snprintf(result->error, sizeof result->error, "diverged at epoch %d",
                 (int) self->epoch);
        result->best_epoch = self->best_epoch;
        result->val_loss = NAN;
        result->val_accuracy = NAN;
    } else {
        if (self->best && self->best_epoch > 0) {
            int rc = self->ops->copy(self->backend, ms_mlp_params(self->mlp),
                                     self->best,
                                     (size_t) result->params * sizeof(float));
            if (rc != MS_OK)
                return rc;
        }
        result->best_epoch = self->best_epoch;
        result->val_loss = self->best_val_loss;
        result->val_accuracy = self->best_val_acc;
        int rc = s_evaluate(self, ms_mlp_params(self->mlp), &self->dtest,
                            &result->test_loss, &result->test_accuracy);
        if (rc != MS_OK)
            return rc;
    }
    result->n_curve = self->n_curve;
    result->curve = self->curve;
    self->curve = NULL;
    self->n_curve = 0;
    if (self->have_grad_norms) {
        result->n_grad_norms = ms_mlp_n_layers(self->mlp);
        result->grad_norms = self->grad_norms;
        self->grad_norms = NULL;
        self->have_grad_norms = false;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Epochs trained through the epoch graph.

int32_t
ms_trainer_epoch_graphs(const ms_trainer_t *self)
{
    return self->n_epoch_graphs;
}

//  --------------------------------------------------------------------------
//  Parameters as one host block.

const float *
ms_trainer_params(const ms_trainer_t *self, int64_t *n_params)
{
    if (!self->mlp) {
        if (n_params)
            *n_params = 0;
        return NULL;
    }
    int64_t n = ms_mlp_n_params(self->mlp);
    if (n_params)
        *n_params = n;
    float *dev = ms_mlp_params(self->mlp);
    if (self->ops->host_memory)
        return dev;
    if (self->ops->download(self->backend, self->host_params, dev,
                            (size_t) n * sizeof(float)) != MS_OK)
        return NULL;
    return self->host_params;
}

//  --------------------------------------------------------------------------
//  Layer sizes from the network's layers.

int32_t
ms_trainer_layer_sizes(const ms_trainer_t *self, uint32_t *sizes, int32_t max)
{
    if (!self->mlp)
        return 0;
    int32_t n_layers = ms_mlp_n_layers(self->mlp);
    for (int32_t l = 0; l < n_layers; l++) {
        int32_t fan_in = 0, fan_out = 0;
        ms_mlp_layer(self->mlp, l, NULL, NULL, &fan_in, &fan_out);
        if (l == 0 && max > 0)
            sizes[0] = (uint32_t) fan_in;
        if (l + 1 < max)
            sizes[l + 1] = (uint32_t) fan_out;
    }
    return n_layers + 1;
}

//  --------------------------------------------------------------------------
//  Evaluate given parameters: uploaded into the gradient block, which is
//  scratch between minibatches and has the parameters' layout.

int
ms_trainer_evaluate(ms_trainer_t *self, const float *params,
                    const ms_dataset_t *data, double *loss, double *accuracy)
{
    if (!self->mlp || !params || !data)
        return MS_ERR_INVALID;
    int rc = s_check_data(data, "data", self->n_inputs, self->classify,
                          self->n_outputs, NULL);
    if (rc != MS_OK)
        return rc;
    float *scratch = ms_mlp_grads(self->mlp);
    rc = self->ops->upload(self->backend, scratch, params,
                           (size_t) ms_mlp_n_params(self->mlp) * sizeof(float));
    if (rc != MS_OK)
        return rc;
    //  The trainer's own sets are on the backend already; another is put
    //  there for this call.
    if (data == self->train || data == self->val || data == self->test) {
        const s_data_t *d = data == self->train ? &self->dtrain
                            : data == self->val ? &self->dval
                                                : &self->dtest;
        return s_evaluate(self, scratch, d, loss, accuracy);
    }
    s_data_t tmp;
    rc = s_data_open(self, data, &tmp);
    if (rc == MS_OK)
        rc = s_evaluate(self, scratch, &tmp, loss, accuracy);
    s_data_close(self, &tmp);
    return rc;
}

//  --------------------------------------------------------------------------
//  Open, train every epoch, finish.

int
ms_train_run(const ms_train_config_t *cfg, const ms_dataset_t *train,
             const ms_dataset_t *val, const ms_dataset_t *test,
             ms_backend_t *backend, ms_train_progress_fn progress, void *arg,
             ms_run_result_t *result, ms_diag_t *diag)
{
    memset(result, 0, sizeof *result);
    ms_trainer_t *t = NULL;
    int rc = ms_trainer_open(&t, cfg, train, val, test, backend, diag);
    if (rc != MS_OK) {
        result->status = MS_RUN_FAILED;
        char text[sizeof result->error];
        snprintf(result->error, sizeof result->error, "%s",
                 ms_diag_format(diag, text, sizeof text));
        if (!diag)
            snprintf(result->error, sizeof result->error, "%s",
                     ms_strerror(rc));
        return rc;
    }
    bool stopped = false;
    while (!ms_trainer_done(t)) {
        ms_epoch_metrics_t m;
        rc = ms_trainer_epoch(t, &m);
        if (rc != MS_OK)
            break;
        if (progress && progress(arg, &m, cfg->epochs) != 0) {
            stopped = true;
            break;
        }
    }
    if (rc == MS_OK)
        rc = ms_trainer_finish(t, result);
    if (rc != MS_OK) {
        ms_run_result_clear(result);
        result->status = MS_RUN_FAILED;
        snprintf(result->error, sizeof result->error, "%s", ms_strerror(rc));
    } else if (stopped) {
        result->status = MS_RUN_FAILED;
        snprintf(result->error, sizeof result->error, "stopped");
    }
    ms_trainer_destroy(&t);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free a result's curve.

void
ms_run_result_clear(ms_run_result_t *result)
{
    if (!result)
        return;
    free(result->curve);
    free(result->grad_norms);
    memset(result, 0, sizeof *result);
}

//  --------------------------------------------------------------------------
//  Status names.

const char *
ms_run_status_name(ms_run_status_t status)
{
    switch (status) {
    case MS_RUN_OK:
        return "ok";
    case MS_RUN_DIVERGED:
        return "diverged";
    case MS_RUN_FAILED:
        return "failed";
    }
    return "?";
}
