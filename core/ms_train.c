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
    set. A minibatch loss that is NaN or infinite ends the run at once
    (MS_RUN_DIVERGED, "diverged at epoch N"); so does a non-finite
    validation loss, which can only come from weights that overflowed in
    the last step.

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

struct ms_trainer {
    ms_train_config_t cfg;       // copy of the task's config
    const ms_dataset_t *train;   // borrowed
    const ms_dataset_t *val;     // borrowed, may be empty
    const ms_dataset_t *test;    // borrowed, may be empty
    ms_backend_t *backend;       // borrowed
    const ms_backend_ops_t *ops; // its operation table
    ms_mlp_t *mlp;               // NULL for a noop task
    int32_t n_inputs, n_outputs; // network shape
    bool classify;               // labels (true) or targets
    uint64_t cfg_hash;           // config + data shape, for checkpoints
    int64_t *order;              // n_train sample indices
    float *stage_x;              // host staging (non-host backends)
    int32_t *stage_labels;       // host staging labels
    float *stage_targets;        // host staging targets
    float *best;                 // device block of best params, or NULL
    float *host_params;          // host mirror (non-host backends)
    ms_rng_t shuffle_rng;        // per-epoch order
    ms_rng_t dropout_rng;        // dropout masks
    int32_t epoch;               // epochs completed
    int64_t step;                // optimizer updates taken
    bool done;                   // no more epochs
    bool diverged;               // loss went NaN / inf
    bool stopped_early;          // early stopping fired
    bool finished;               // ms_trainer_finish was called
    double best_metric;          // best early-stopping metric (larger)
    int32_t best_epoch;          // epoch whose params are final
    int32_t bad_epochs;          // epochs since the last improvement
    double best_val_loss;        // val loss at best_epoch
    double best_val_acc;         // val accuracy at best_epoch
    ms_epoch_metrics_t *curve;   // cfg.epochs entries
    int32_t n_curve;             // filled entries
};

//  --------------------------------------------------------------------------
//  Monotonic seconds.

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
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
    if (!self->order || !self->curve)
        goto fail;
    if (cfg->early_stopping) {
        self->best =
            self->ops->alloc(backend, (size_t) n_params * sizeof(float));
        if (!self->best)
            goto fail;
    }
    if (!self->ops->host_memory) {
        self->stage_x =
            malloc((size_t) (rows * self->n_inputs) * sizeof(float));
        self->stage_labels = malloc((size_t) rows * sizeof(int32_t));
        self->stage_targets = malloc((size_t) rows * sizeof(float));
        self->host_params = malloc((size_t) n_params * sizeof(float));
        if (!self->stage_x || !self->stage_labels || !self->stage_targets ||
            !self->host_params)
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
    if (self->best)
        self->ops->free_buf(self->backend, self->best);
    ms_mlp_destroy(&self->mlp);
    free(self->order);
    free(self->stage_x);
    free(self->stage_labels);
    free(self->stage_targets);
    free(self->host_params);
    free(self->curve);
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
//  Copy rows of data into the network's input: sample idx[i] (or start + i
//  when idx is NULL) for i < rows.

static int
s_load_batch(ms_trainer_t *self, const ms_dataset_t *data, const int64_t *idx,
             int64_t start, int64_t rows)
{
    bool host = self->ops->host_memory;
    float *x = host ? ms_mlp_input(self->mlp) : self->stage_x;
    int32_t *labels = host ? ms_mlp_labels(self->mlp) : self->stage_labels;
    float *targets = host ? ms_mlp_targets(self->mlp) : self->stage_targets;
    size_t row_bytes = (size_t) data->n_features * sizeof(float);
    if (!idx) {
        memcpy(x, data->x + start * data->n_features, row_bytes * rows);
        if (self->classify)
            memcpy(labels, data->labels + start,
                   (size_t) rows * sizeof(int32_t));
        else
            memcpy(targets, data->targets + start,
                   (size_t) rows * sizeof(float));
    } else
        for (int64_t i = 0; i < rows; i++) {
            int64_t r = idx[start + i];
            if (i + 4 < rows) { // rows are scattered: hide the miss latency
                const float *ahead =
                    data->x + idx[start + i + 4] * data->n_features;
                for (size_t k = 0; k < row_bytes; k += 64)
                    __builtin_prefetch((const char *) ahead + k);
            }
            memcpy(x + i * data->n_features, data->x + r * data->n_features,
                   row_bytes);
            if (self->classify)
                labels[i] = data->labels[r];
            else
                targets[i] = data->targets[r];
        }
    if (host)
        return MS_OK;
    int rc = self->ops->upload(self->backend, ms_mlp_input(self->mlp), x,
                               row_bytes * rows);
    if (rc == MS_OK && self->classify)
        rc = self->ops->upload(self->backend, ms_mlp_labels(self->mlp), labels,
                               (size_t) rows * sizeof(int32_t));
    if (rc == MS_OK && !self->classify)
        rc = self->ops->upload(self->backend, ms_mlp_targets(self->mlp),
                               targets, (size_t) rows * sizeof(float));
    return rc;
}

//  --------------------------------------------------------------------------
//  Mean loss and accuracy of params (device block) on data; NaN when
//  data is empty (accuracy NaN for regression).

static int
s_evaluate(ms_trainer_t *self, const float *params, const ms_dataset_t *data,
           double *loss, double *accuracy)
{
    *loss = NAN;
    *accuracy = NAN;
    if (data->n_samples == 0)
        return MS_OK;
    int64_t max_rows = ms_mlp_max_rows(self->mlp);
    double sum = 0;
    int64_t correct = 0;
    int rc = MS_OK;
    for (int64_t start = 0; start < data->n_samples && rc == MS_OK;
         start += max_rows) {
        int64_t rows = data->n_samples - start;
        if (rows > max_rows)
            rows = max_rows;
        rc = s_load_batch(self, data, NULL, start, rows);
        if (rc == MS_OK)
            rc = ms_mlp_forward(self->mlp, params, rows, NULL);
        if (rc == MS_OK)
            rc = ms_mlp_loss(self->mlp, rows, false, &sum, &correct);
    }
    if (rc != MS_OK)
        return rc;
    *loss = sum / (double) data->n_samples;
    if (self->classify)
        *accuracy = (double) correct / (double) data->n_samples;
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

    ms_rng_t *drop = cfg->dropout > 0 ? &self->dropout_rng : NULL;
    int64_t batch = ms_mlp_max_rows(self->mlp);
    if (batch > cfg->batch_size)
        batch = cfg->batch_size;
    double loss_acc = 0, bad_loss = 0;
    int64_t n_batches = 0;
    int rc = MS_OK;
    for (int64_t start = 0; start < n; start += batch) {
        int64_t rows = n - start < batch ? n - start : batch;
        double sum = 0;
        int64_t correct = 0;
        rc = s_load_batch(self, self->train, self->order, start, rows);
        if (rc == MS_OK)
            rc =
                ms_mlp_forward(self->mlp, ms_mlp_params(self->mlp), rows, drop);
        if (rc == MS_OK)
            rc = ms_mlp_loss(self->mlp, rows, true, &sum, &correct);
        if (rc != MS_OK)
            return rc;
        double bl = sum / (double) rows;
        if (!isfinite(bl)) {
            self->diverged = true;
            bad_loss = bl;
            break;
        }
        rc = ms_mlp_backward(self->mlp, rows);
        if (rc == MS_OK)
            rc = ms_mlp_step(self->mlp, cfg, lr, ++self->step);
        if (rc != MS_OK)
            return rc;
        loss_acc += bl;
        n_batches++;
    }

    ms_epoch_metrics_t m = {.epoch = e, .learning_rate = lr};
    m.val_loss = NAN;
    m.val_accuracy = NAN;
    if (self->diverged)
        m.train_loss = bad_loss;
    else {
        m.train_loss = loss_acc / (double) n_batches;
        rc = s_evaluate(self, ms_mlp_params(self->mlp), self->val, &m.val_loss,
                        &m.val_accuracy);
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
    uint32_t flags;       // 1 done, 2 diverged, 4 stopped early, 8 best
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
              (self->stopped_early ? 4u : 0u) | (self->best ? 8u : 0u);
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
    if (h.version != S_VERSION || h.cfg_hash != self->cfg_hash ||
        h.n_params != ms_mlp_n_params(self->mlp) ||
        h.n_state != ms_mlp_state_floats(self->mlp) ||
        has_best != (self->best != NULL) || h.n_curve < 0 ||
        h.n_curve > self->cfg.epochs || h.epoch != h.n_curve || h.step < 0)
        return MS_ERR_INVALID;
    size_t entry = sizeof(int32_t) + 5 * sizeof(double);
    size_t pbytes = (size_t) h.n_params * sizeof(float);
    size_t need = 8 + sizeof h + (size_t) h.n_curve * entry + pbytes +
                  (size_t) h.n_state * sizeof(float) + (has_best ? pbytes : 0) +
                  4;
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
        int rc = s_evaluate(self, ms_mlp_params(self->mlp), self->test,
                            &result->test_loss, &result->test_accuracy);
        if (rc != MS_OK)
            return rc;
    }
    result->n_curve = self->n_curve;
    result->curve = self->curve;
    self->curve = NULL;
    self->n_curve = 0;
    return MS_OK;
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
    return s_evaluate(self, scratch, data, loss, accuracy);
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
