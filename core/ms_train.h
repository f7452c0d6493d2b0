/*  =========================================================================
    ms_train - the training loop: one task's run from config to metrics,
    one epoch at a time, with checkpoints that resume bit-exactly

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A trainer owns the network, its optimizer state, its RNG streams and a
    borrowed view of the data. The caller drives it epoch by epoch, so a
    worker can checkpoint after every epoch and stop between epochs:

        ms_trainer_t *t;
        rc = ms_trainer_open(&t, &cfg, train, val, test, backend, &diag);
        if (have_checkpoint) rc = ms_trainer_restore(t, bytes, n);
        while (!ms_trainer_done(t)) {
            rc = ms_trainer_epoch(t, &metrics);   // one pass over train
            ms_trainer_save(t, &bytes, &n);       // checkpoint
        }
        rc = ms_trainer_finish(t, &result);        // test metrics
        ms_trainer_destroy(&t);

    Determinism: for a given config, data and backend fingerprint, weights
    and metrics are bit-identical between runs, and between a run and one
    restored from any of its checkpoints (DESIGN.md "The training engine").
    A NaN or infinite loss ends the run at once as MS_RUN_DIVERGED with its
    epoch: a result, not an error.
*/
#ifndef MS_TRAIN_H
#define MS_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_backend.h"
#include "ms_config.h"
#include "ms_dataset.h"
#include "ms_err.h"

typedef enum {
    MS_RUN_OK,       // trained to the last epoch or stopped early
    MS_RUN_DIVERGED, // loss became NaN or infinite
    MS_RUN_FAILED,   // could not train (bad data, resources); see error
} ms_run_status_t;

//  Metrics of one epoch.
typedef struct {
    int32_t epoch;        // 1-based
    double train_loss;    // mean minibatch loss over the epoch (with L2 term
                          // excluded)
    double val_loss;      // mean loss on the validation set (NaN when empty)
    double val_accuracy;  // fraction in [0, 1] (NaN when empty/regression)
    double seconds;       // wall time of the epoch, training + validation
    double learning_rate; // the schedule's rate in this epoch (before any
                          // per-step warm-up factor)
} ms_epoch_metrics_t;

//  A finished run. curve is owned by the result; ms_run_result_clear()
//  frees it.
typedef struct {
    ms_run_status_t status;
    char error[256];               // reason when not OK ("diverged at epoch 3")
    int32_t epochs;                // epochs completed
    int32_t best_epoch;            // epoch whose weights are final (early stop)
    double train_seconds;          // sum of epoch seconds
    double seconds_per_epoch;      // train_seconds / epochs
    double val_accuracy, val_loss; // at best_epoch
    double test_accuracy, test_loss; // final weights on the test set
    int64_t params;                  // trainable parameters
    int32_t n_curve;                 // entries in curve (== epochs)
    ms_epoch_metrics_t *curve;
    //  The L2 norm of each layer's weight gradient dW(l), l = 0 .. L-1
    //  (input layer first, output layer last), at the last minibatch of
    //  the first epoch, before clipping: where a deep plain network stops
    //  training shows here (vanishing or exploding; in a run that diverged
    //  in its first epoch, the diverging minibatch's, inf or NaN where
    //  they blew up). Deterministic, like the weights. Owned by the result
    //  (ms_run_result_clear frees it); n_grad_norms 0 (grad_norms NULL)
    //  for a noop task or a run resumed from a checkpoint that predates
    //  them.
    int32_t n_grad_norms;
    double *grad_norms;
} ms_run_result_t;

typedef struct ms_trainer ms_trainer_t;

//  Build the network of cfg for train's shape (inputs = n_features,
//  outputs = n_classes, or 1 for regression), initialise it from cfg->seed,
//  and allocate every buffer the run needs (parameters, gradients,
//  optimizer state, activations for one minibatch): nothing is allocated
//  per minibatch. train, val and test are borrowed and must outlive the
//  trainer; val and test may be empty (n_samples 0) but not NULL; they are
//  expected to be scaled already. backend is borrowed.
//  Returns MS_OK; MS_ERR_INVALID (config out of range, loss cross_entropy
//  on regression data, feature counts that differ: diag says which);
//  MS_ERR_NOMEM; MS_ERR_BACKEND.
int ms_trainer_open(ms_trainer_t **out, const ms_train_config_t *cfg,
                    const ms_dataset_t *train, const ms_dataset_t *val,
                    const ms_dataset_t *test, ms_backend_t *backend,
                    ms_diag_t *diag);

//  Free the trainer and everything it allocated; NULL-safe.
void ms_trainer_destroy(ms_trainer_t **self_p);

//  True when no more epochs are to run: the last epoch is done, early
//  stopping fired, or the run diverged.
bool ms_trainer_done(const ms_trainer_t *self);

//  Train one epoch (shuffle, every minibatch, then validation) and write
//  its metrics to *metrics. Returns MS_OK (also when the epoch diverged:
//  see ms_trainer_done and the final status); MS_ERR_INVALID if called
//  when done; MS_ERR_BACKEND.
int ms_trainer_epoch(ms_trainer_t *self, ms_epoch_metrics_t *metrics);

//  Serialize the whole state (config hash, epoch, weights, optimizer
//  state, RNG states, best weights and early-stopping counters, the curve
//  so far) into a new malloc'd buffer (caller frees). Returns MS_OK or
//  MS_ERR_NOMEM.
int ms_trainer_save(const ms_trainer_t *self, void **bytes, size_t *n_bytes);

//  Restore a state written by ms_trainer_save for the same config and data
//  shape. Returns MS_OK; MS_ERR_INVALID when the bytes are truncated,
//  corrupt (checksum) or belong to another config (the trainer is then
//  unchanged and the caller starts from scratch).
int ms_trainer_restore(ms_trainer_t *self, const void *bytes, size_t n_bytes);

//  Evaluate on the test set and fill *result (ownership of the curve
//  passes to result). Call once, after ms_trainer_done is true. Returns
//  MS_OK or MS_ERR_NOMEM.
int ms_trainer_finish(ms_trainer_t *self, ms_run_result_t *result);

//  The network's parameters as one contiguous float32 block (borrowed,
//  valid while the trainer lives): what weights_digest hashes and
//  re-evaluation loads. Layer l's weights (fan_out x fan_in, row-major)
//  then its bias, for l = 1..L; then, for residual and normalised
//  networks, the norm gains and biases, rezero scales and batch norm's
//  running statistics (the layout at the top of core/ms_mlp.c): the whole
//  block, ms_train_config_params floats.
const float *ms_trainer_params(const ms_trainer_t *self, int64_t *n_params);

//  How many epochs trained their full minibatches as one replayed graph
//  (on a non-host backend by default, no dropout;
//  MESHSWEEP_CUDA_EPOCH_GRAPH=0 turns it off; read
//  at ms_trainer_open): 0 on the cpu, with the option off, or after a
//  fallback (one stderr line says why). Results are the same bits.
int32_t ms_trainer_epoch_graphs(const ms_trainer_t *self);

//  The network's layer sizes (inputs, each hidden width, outputs) into
//  sizes (up to max entries); returns how many there are (layers + 1;
//  0 for a noop task). What ms_weights records beside the parameters.
int32_t ms_trainer_layer_sizes(const ms_trainer_t *self, uint32_t *sizes,
                               int32_t max);

//  Evaluate given parameters (layout as ms_trainer_params) on a dataset:
//  mean loss and accuracy. For re-evaluation by a verifier.
int ms_trainer_evaluate(ms_trainer_t *self, const float *params,
                        const ms_dataset_t *data, double *loss,
                        double *accuracy);

//  Convenience: open, run every epoch, finish. progress (may be NULL) is
//  called after each epoch with arg; a non-zero return stops the run
//  with status MS_RUN_FAILED and error "stopped".
typedef int (*ms_train_progress_fn)(void *arg, const ms_epoch_metrics_t *m,
                                    int32_t n_epochs);
int ms_train_run(const ms_train_config_t *cfg, const ms_dataset_t *train,
                 const ms_dataset_t *val, const ms_dataset_t *test,
                 ms_backend_t *backend, ms_train_progress_fn progress,
                 void *arg, ms_run_result_t *result, ms_diag_t *diag);

//  Free a result's curve and zero it; NULL-safe.
void ms_run_result_clear(ms_run_result_t *result);

//  "ok", "diverged", "failed".
const char *ms_run_status_name(ms_run_status_t status);

#endif
