/*  =========================================================================
    ms_weights_meta - the metadata of a trained network: its config, the
    input transform, class names and task, as the JSON of a version 2
    weights file (core/ms_weights.h) and of an ONNX file's metadata_props

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The JSON (written canonically, ms_wire_canon.h, so two nodes that
    trained the same task write the same bytes):

      {"meshsweep_weights": 1,          format of this object
       "config": {...},                 the task's config (ms_config_json)
       "input": {"features": 784,       raw inputs per row
                 "scale": "unit",       unit | standard | none
                 "shift": 0.0,          unit: one number for all features
                 "divisor": 255.0},     standard: arrays of "features"
                                        numbers; none: neither key
       "outputs": 10,                   classes (or 1 for regression)
       "classes": ["t-shirt", ...],     only when the data named them
       "task": "64 hex",                only when the run was a task
       "numerics": 3,                   only when the engine states one
       "csv": {...}}                    only when trained on CSV (below)

    The "csv" object is how the training CSV became numbers, so that
    `meshsweep predict` reads a new CSV file as training did
    (core/ms_dataset.h, ms_dataset_csv_schema_t):

      {"columns": ["sepal length", ..., "species"],  the header, in order
       "label": 4,                      index of the label column
       "categorical": [{"column": 2, "categories": ["blue", "red"]}],
                                        one-hot columns, their categories
                                        in one-hot (byte-sorted) order
       "missing": "mean",               error | zero | mean
       "fill": [5.84, ...]}             mean only: what a missing value
                                        becomes, per feature (float32)

    The class names are the top-level "classes" (string labels); without
    them a classifier's labels are the integers 0 to outputs - 1 and a
    regression's are numbers. The features (input.features) are the
    columns but the label, in header order, a categorical column as one
    feature per category. Files written before "csv" was added have
    none, and read as before.

    A raw row x maps to the network's input as x'_j = (x_j - shift_j) /
    divisor_j: for unit in float32 arithmetic, for standard in double
    rounded to float32 once (core/ms_dataset.h, ms_dataset_transform_t).
    Readers ignore keys they do not know.

    Thread rule: every function is reentrant.
*/
#ifndef MS_WEIGHTS_META_H
#define MS_WEIGHTS_META_H

#include <stdint.h>

#include "ms_config.h"
#include "ms_dataset.h"
#include "ms_err.h"
#include "ms_weights.h"

#define MS_WEIGHTS_META_FORMAT 1 // "meshsweep_weights"

//  A network's metadata. Owned by whoever made it (ms_weights_meta_new
//  or _decode); free with ms_weights_meta_destroy, which frees input's
//  arrays and the class names.
typedef struct {
    ms_train_config_t cfg;        // the task's config
    ms_dataset_transform_t input; // raw input -> network input
    int32_t n_outputs;            // classes, or 1 for regression
    int32_t n_classes;            // entries in classes (0: unnamed)
    char **classes;               // n_classes malloc'd names, or NULL
    char task_id[65];             // 64 hex, or "" when not a task
    int64_t numerics;             // engine numerics version, -1 unknown
    ms_dataset_t *csv;            // the training CSV's schema (an empty
                                  // dataset of ms_dataset_csv_reference_new,
                                  // owned), or NULL: not trained on CSV
} ms_weights_meta_t;

//  A zeroed metadata with cfg's defaults, identity input, numerics -1.
//  Caller owns the result; NULL only when memory runs out.
ms_weights_meta_t *ms_weights_meta_new(void);

//  Free; NULL-safe, nulls *self_p.
void ms_weights_meta_destroy(ms_weights_meta_t **self_p);

//  Set the class names (copied; n may be 0 to clear). Returns MS_OK or
//  MS_ERR_NOMEM.
int ms_weights_meta_set_classes(ms_weights_meta_t *self,
                                const char *const *names, int32_t n);

//  Keep the CSV schema of data (a dataset loaded from CSV, or split or
//  copied from one; deep-copied) in self->csv; for data not from CSV
//  (IDX, synthetic) clear it. Returns MS_OK or MS_ERR_NOMEM.
int ms_weights_meta_set_csv(ms_weights_meta_t *self, const ms_dataset_t *data);

//  The canonical JSON text of self (see above). Caller frees the result
//  with free(); NULL when memory runs out or a number is not finite.
char *ms_weights_meta_encode(const ms_weights_meta_t *self);

//  Parse metadata JSON text. Caller owns *out (ms_weights_meta_destroy).
//  Returns MS_OK; MS_ERR_INVALID with diag ("metadata", what is wrong:
//  not JSON, not meshsweep's, a bad config key, shift/divisor that do
//  not match the feature count, a zero divisor, a "csv" schema that is
//  malformed or does not give input.features); MS_ERR_NOMEM. *out is
//  NULL on failure.
int ms_weights_meta_decode(const char *json, ms_weights_meta_t **out,
                           ms_diag_t *diag);

//  The layer sizes of the network self describes (inputs =
//  input.n_features, each hidden width of the config, outputs =
//  n_outputs) into sizes (room for max entries). Returns how many
//  (cfg.n_hidden + 2), or 0 when max is too small.
int32_t ms_weights_meta_layer_sizes(const ms_weights_meta_t *self,
                                    uint32_t *sizes, int32_t max);

//  Check that decoded weights w are the network self describes: the same
//  layer sizes and the parameter count of ms_param_layout. Returns MS_OK
//  or MS_ERR_INVALID (diag "weights": "layer sizes 784-64-10, the config
//  says 784-32-10" or "N parameters, the network needs M").
int ms_weights_meta_match(const ms_weights_meta_t *self, const ms_weights_t *w,
                          ms_diag_t *diag);

//  Read the network in the file at path, native (core/ms_weights.h,
//  version 2: with metadata) or ONNX (proto/ms_onnx.h, ours), by its
//  first bytes. Caller owns *meta and *weights. Returns MS_OK;
//  MS_ERR_NOTFOUND or MS_ERR_IO (diag: path, reason); MS_ERR_INVALID with
//  diag where = path and the reason: truncated, damaged, a version 1
//  file ("no metadata: written before version 2; nothing says its config
//  and input scaling"), an ONNX file not written by meshsweep, a config
//  that does not match the parameters; MS_ERR_NOMEM.
int ms_weights_meta_read_file(const char *path, ms_weights_meta_t **meta,
                              ms_weights_t **weights, ms_diag_t *diag);

#endif
