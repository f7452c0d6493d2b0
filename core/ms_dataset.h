/*  =========================================================================
    ms_dataset - labelled data in memory: IDX (MNIST family) and CSV loaders,
    scaling, validation split, built-in dataset names

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A dataset is n_samples rows of n_features float32 inputs, row-major,
    with one target per row. Classification data (every label an integer
    in [0, n_classes)) has labels[] and n_classes >= 2; regression data
    (a CSV whose label column holds non-integers) has n_classes == 0 and
    its targets in targets[] (one float per row). labels/targets not used
    are NULL.

    Formats:
    - IDX, as published with MNIST (LeCun et al.) and Fashion-MNIST
      (Xiao et al. 2017): big-endian magic 0x0000TTDD (TT = 0x08 unsigned
      byte, DD = number of dimensions), DD big-endian uint32 sizes, data.
      Files may be gzip-compressed (detected by magic bytes, read through
      zlib). Images: ubyte, 3 dims; labels: ubyte, 1 dim.
    - CSV (RFC 4180, read with libcsv): a header row, quoted fields
      (embedded commas, quotes, newlines), CRLF, a UTF-8 BOM; the label
      column chosen by name or index; string class labels; missing values,
      categorical (one-hot) columns and a seeded train/test split on
      request. See ms_dataset_csv_options_t and ms_dataset_csv.c.

    Errors are precise: the file path plus, where it helps, the line, the
    record index or the byte offset, in the ms_diag_t.
*/
#ifndef MS_DATASET_H
#define MS_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_config.h"
#include "ms_err.h"

typedef struct {
    int64_t n_samples;  // rows
    int32_t n_features; // inputs per row
    int32_t n_classes;  // >= 2 for classification, 0 for regression
    float *x;           // n_samples * n_features, row-major
    int32_t *labels;    // n_samples class indices, or NULL
    float *targets;     // n_samples regression targets, or NULL
    //  CSV string labels: the n_classes class names, sorted by byte value
    //  (strcmp), class i being class_names[i]; NULL for integer labels,
    //  regression and IDX. Owned by the dataset (read-only, shared with
    //  the datasets split or copied from it); ms_dataset_class_name()
    //  reads it safely.
    const char *const *class_names;
    void *owner_; // private: allocation backing x/labels/targets
} ms_dataset_t;

//  What a missing CSV value becomes (DESIGN.md "Sweep specification",
//  dataset.missing). A value is missing when its field is empty (after
//  trimming blanks, quoted or not) or is one of NA, N/A, NaN, null or ?
//  (case-insensitive).
typedef enum {
    MS_DATASET_MISSING_ERROR = 0, // refuse the file, naming row and column
    MS_DATASET_MISSING_ZERO,      // 0 (a categorical column: all-zero)
    MS_DATASET_MISSING_MEAN,      // the column's mean over the training rows
                                  // (a categorical column: each category's
                                  // frequency); the test file uses the
                                  // training means
} ms_dataset_missing_t;

//  How a CSV file becomes numbers. Borrowed strings; zero it with
//  ms_dataset_csv_options_init().
typedef struct {
    const char *label;              // label column by name; NULL: "label"
    int32_t label_index;            // >= 0: the label column by 0-based index
                                    // (label is then ignored); -1: by name
    ms_dataset_missing_t missing;   // default MS_DATASET_MISSING_ERROR
    const char *const *categorical; // columns to one-hot encode, by name
    int32_t n_categorical;          // entries in categorical
    double split;                   // > 0: one file; this fraction of its
                                    // rows is the test set (0.2: 80/20)
    uint64_t split_seed;            // seed of that split (a sweep's
                                    // sweep_seed)
} ms_dataset_csv_options_t;

//  Most categories a categorical column may hold, and most feature
//  columns a CSV may have after one-hot encoding.
#define MS_DATASET_MAX_CATEGORIES 65536
#define MS_DATASET_MAX_FEATURES (1 << 20)

//  RNG stream of the CSV train/test split: the ASCII bytes of "csvsplit".
#define MS_DATASET_RNG_STREAM_CSV_SPLIT 0x63737673706c6974ULL

//  Defaults: label "label", missing values refused, nothing categorical,
//  no split.
void ms_dataset_csv_options_init(ms_dataset_csv_options_t *opts);

//  Load a CSV training file and its test file with opts, or (opts->split
//  > 0) one file split into both, test_path then ignored (may be NULL).
//
//  Labels: when every label of the training file is a number, today's
//  meaning holds (integers >= 0: classes 0..max, n_classes = max + 1, at
//  least 2; any other number: regression). Otherwise the labels are class
//  names: the classes are the distinct names sorted by byte value
//  (strcmp: "setosa" < "versicolor" < "virginica", "B" < "a"), kept in
//  class_names; the test file's labels must be among them. A missing label
//  is always refused.
//  Features: every other column is a number, or (named in
//  opts->categorical) one-hot encoded in place, in the header's order:
//  column "colour" with categories blue, red gives features "colour=blue",
//  "colour=red" (categories sorted by byte value, from the training data;
//  a category of the test file that training never saw is refused,
//  naming it). A non-numeric value in another column is refused naming the
//  column ("list it under categorical: to one-hot encode it").
//  Split: a permutation of the rows from ms_rng (split_seed,
//  MS_DATASET_RNG_STREAM_CSV_SPLIT), the first n - round(n * split) rows
//  train, the rest test; classes and categories come from the whole file,
//  missing-value means from the training rows only.
//  The test file must have the training file's header.
//
//  Errors name the file and the physical line in diag.where ("PATH:LINE")
//  and the row and column in the reason. Rows count as a spreadsheet counts
//  them: the header is row 1, the first data row row 2 (blank lines are
//  skipped and not counted; a quoted field with newlines is one row).
//  Caller owns both results (ms_dataset_destroy); both are NULL on
//  failure. Returns MS_OK; MS_ERR_IO (cannot open or read); MS_ERR_DATASET
//  (malformed quoting, an unterminated quote, ragged rows, a NUL byte, a
//  missing value under MISSING_ERROR, a non-numeric feature, an unknown
//  label or categorical column, a test class or category unseen in
//  training, a header that differs, too few rows for the split, one class
//  only); MS_ERR_INVALID (options out of range: split outside (0, 1));
//  MS_ERR_NOMEM.
int ms_dataset_load_csv_files(const char *train_path, const char *test_path,
                              const ms_dataset_csv_options_t *opts,
                              ms_dataset_t **train, ms_dataset_t **test,
                              ms_diag_t *diag);

//  Load a CSV file the way the CSV dataset like was loaded: its label
//  column, classes, categories and missing-value fills (data to predict
//  on, or a test file loaded later). The header's columns are found by
//  name, in any order: it must hold every column of like's header once,
//  and no other; the label column may be absent: then the file is data
//  without labels, and the result has labels and targets NULL and
//  n_classes 0, as IDX images alone (for predictions only; never hand it
//  to a trainer). A header name that
//  like's header has twice maps in order. A header that does not match
//  is refused naming the first column that is not like's, or the first
//  feature column missing. opts gives missing (label, categorical and
//  split are like's; opts may be NULL: like's missing rule, the one its
//  fills were made by). Returns
//  as ms_dataset_load_csv_files; MS_ERR_INVALID when like did not come
//  from a CSV file or ms_dataset_csv_reference_new.
int ms_dataset_load_csv_like(ms_dataset_t **out, const char *path,
                             const ms_dataset_csv_options_t *opts,
                             const ms_dataset_t *like, ms_diag_t *diag);

//  How a CSV dataset turns text into numbers, as plain data: what a
//  weights file's metadata needs to keep (with the class names) so that
//  `meshsweep predict` can read new CSV files exactly as training did,
//  without the training file. Arrays are borrowed.
typedef struct {
    int32_t n_columns;                    // header columns
    const char *const *column_names;      // n_columns names, header order
    int32_t label_column;                 // index of the label column
    int32_t n_classes;                    // classes (0: regression)
    const char *const *class_names;       // n_classes sorted names, or NULL
                                          // (labels are numbers)
    const bool *categorical;              // per column: one-hot encoded
    const uint32_t *n_categories;         // per column: categories it has
    const char *const *const *categories; // per column: sorted names
                                          // (NULL for a numeric one)
    int32_t n_features;                   // features after encoding
    const float *fill;            // n_features: what a missing value becomes
    ms_dataset_missing_t missing; // the rule of training (the fills are
                                  // its: 0, or the training means)
} ms_dataset_csv_schema_t;

//  The schema of a dataset loaded from CSV (or split or copied from one),
//  borrowed from it (valid while it lives). Returns MS_OK or
//  MS_ERR_INVALID (not from CSV: *out zeroed).
int ms_dataset_csv_schema(const ms_dataset_t *self,
                          ms_dataset_csv_schema_t *out);

//  An empty dataset (0 rows) that carries a schema (deep-copied), to pass
//  as like to ms_dataset_load_csv_like: the reader of a weights file
//  rebuilds it from the metadata. Returns MS_OK; MS_ERR_INVALID with
//  diag "schema.FIELD" (columns, label out of range, class names or
//  categories not sorted and distinct, a feature count that does not
//  add up, a fill that is not finite); MS_ERR_NOMEM. Caller owns *out.
int ms_dataset_csv_reference_new(ms_dataset_t **out,
                                 const ms_dataset_csv_schema_t *schema,
                                 ms_diag_t *diag);

//  Name of class i of a dataset with string labels; NULL when the labels
//  are integers (or for i out of range). Borrowed from the dataset.
const char *ms_dataset_class_name(const ms_dataset_t *self, int32_t i);

//  Name of feature j of a CSV dataset: the column name, or "COLUMN=VALUE"
//  for a one-hot feature; NULL for IDX data or j out of range. Borrowed.
const char *ms_dataset_feature_name(const ms_dataset_t *self, int32_t j);

//  Load an IDX image file and its IDX label file (raw or gzip). n_classes
//  is max(label) + 1 (at least 2). labels_path NULL: the images alone,
//  as unlabelled rows (n_classes 0, labels and targets NULL: what
//  `meshsweep predict` classifies; not training data). Caller owns *out; free
//  it with ms_dataset_destroy(). Returns MS_OK; MS_ERR_IO (cannot open or read:
//  diag names the file and errno text); MS_ERR_DATASET (bad magic, wrong
//  dims, truncated data, counts that differ between the two files, a
//  label > 254: diag names the file and what); MS_ERR_NOMEM.
int ms_dataset_load_idx(ms_dataset_t **out, const char *images_path,
                        const char *labels_path, ms_diag_t *diag);

//  Load one CSV file with a header; label_column names the target column
//  (NULL: "label"); other options at their defaults (missing values
//  refused, no categorical columns): ms_dataset_load_csv_files() with one
//  file, its labels as described there. Errors as there.
int ms_dataset_load_csv(ms_dataset_t **out, const char *path,
                        const char *label_column, ms_diag_t *diag);

//  The labels file of an IDX images file, by the MNIST family's naming
//  (the first "images-idx3" in the path becomes "labels-idx1"): the one
//  rule the CLI's checks and uploads and the workers' loader share.
//  Returns a malloc'd path the caller frees, or NULL when the name has no
//  such part (a CSV file, or an IDX pair not so named) or on no memory.
char *ms_dataset_idx_labels_path(const char *images_path);

//  Whether a file dataset of two files (train_path, test_path) is IDX or
//  CSV: IDX when both names give a labels file by
//  ms_dataset_idx_labels_path, CSV otherwise (an IDX pair not so named is
//  read as CSV and refused there). The one format rule of the CLI's checks
//  and uploads and of the workers' loader. When IDX, *train_labels and
//  *test_labels get the labels paths (malloc'd, the caller frees them);
//  else both are NULL. Returns true for IDX; false for CSV, or with no
//  memory (then the load that follows fails on the IDX files as CSV).
bool ms_dataset_idx_pair(const char *train_path, const char *test_path,
                         char **train_labels, char **test_labels);

//  Load either format by looking at the file: IDX (raw or gzip) when
//  labels_path is given, else CSV. Convenience for the CLI.
int ms_dataset_load(ms_dataset_t **out, const char *path,
                    const char *labels_path, const char *label_column,
                    ms_diag_t *diag);

//  RNG stream of the validation split (ms_rng_seed(&rng, seed, stream)):
//  the ASCII bytes of "split", so no other purpose's stream collides.
#define MS_DATASET_RNG_STREAM_SPLIT 0x73706c6974ULL

//  Largest label a classification dataset may hold is
//  MS_DATASET_MAX_CLASSES - 1; a CSV whose integer labels go beyond it is
//  treated as regression.
#define MS_DATASET_MAX_CLASSES 65536

//  Allocate an empty dataset of n_samples rows (>= 0) and n_features
//  columns (>= 1), zero-filled: labels[] when n_classes >= 2, else
//  targets[] (regression, n_classes 0). For synthetic data in tests and
//  tools. With n_samples 0 the arrays are NULL. Caller owns the result
//  (ms_dataset_destroy); returns NULL only when memory runs out.
ms_dataset_t *ms_dataset_new(int64_t n_samples, int32_t n_features,
                             int32_t n_classes);

//  Free a dataset and its arrays; NULL-safe; sets *self_p to NULL.
void ms_dataset_destroy(ms_dataset_t **self_p);

//  Paths of a built-in dataset ("fashion-mnist", and "mnist" when Debian
//  ships it). Files are looked up in $MESHSWEEP_DATASETS_DIR/<name>/ first,
//  then /usr/share/datasets/<name>/. Writes malloc'd paths (caller frees)
//  to the four out-pointers. Returns MS_OK; MS_ERR_NOTFOUND with diag
//  "dataset NAME: ... install the Debian package dataset-fashion-mnist"
//  when files are missing; MS_ERR_INVALID for an unknown name (diag lists
//  the known ones).
int ms_dataset_builtin_paths(const char *name, char **train_images,
                             char **train_labels, char **test_images,
                             char **test_labels, ms_diag_t *diag);

//  Load a built-in dataset's train and test sets. Caller owns both.
int ms_dataset_load_builtin(const char *name, ms_dataset_t **train,
                            ms_dataset_t **test, ms_diag_t *diag);

//  Check labels are in [0, n_classes) and features are finite; with
//  n_classes_expected > 0 also that the dataset has that many classes or
//  fewer (test sets may miss a class). Returns MS_OK or MS_ERR_DATASET with
//  diag "NAME: sample I: label L out of range [0, C)".
int ms_dataset_check(const ms_dataset_t *self, const char *name,
                     int32_t n_classes_expected, ms_diag_t *diag);

//  The input transform of a scaling, fitted to a training set: for every
//  feature j, x'_j = (x_j - shift[j]) / divisor[j]. unit: one shift (the
//  train minimum; 0 for raw 8-bit images) and one divisor (max - min;
//  255 for 8-bit images; 1 when every value is the same) for all
//  features, the arithmetic in float32. standard: the per-feature train
//  mean and biased standard deviation (1 where it is 0), in double, the
//  result rounded to float32 once. none (or an empty train): the
//  identity, shift and divisor NULL. What a weights file's metadata and
//  an exported ONNX graph carry, so that raw inputs give the numbers the
//  training run saw, bit for bit. Owned by the caller: free the arrays
//  with ms_dataset_transform_clear.
typedef struct {
    ms_scale_t scale;   // unit, standard or none
    int32_t n_features; // entries in shift and divisor
    double *shift;      // n_features, or NULL for none
    double *divisor;    // n_features (never 0), or NULL for none
} ms_dataset_transform_t;

//  Fit the transform of scale to train (statistics of train only) into
//  *out (overwritten; clear it after). Returns MS_OK or MS_ERR_NOMEM
//  (*out then the identity).
int ms_dataset_transform_fit(const ms_dataset_t *train, ms_scale_t scale,
                             ms_dataset_transform_t *out);

//  Apply a fitted transform to data in place. Returns MS_OK, or
//  MS_ERR_INVALID (data untouched) when data's feature count is not the
//  transform's (the identity accepts any).
int ms_dataset_transform_apply(const ms_dataset_transform_t *self,
                               ms_dataset_t *data);

//  Free a transform's arrays and make it the identity; NULL-safe.
void ms_dataset_transform_clear(ms_dataset_transform_t *self);

//  Scale train and test in place with statistics of train only: unit maps
//  the train min..max of all features to [0, 1] (for 8-bit images: x/255);
//  standard subtracts the per-feature train mean and divides by the
//  per-feature standard deviation (features with zero spread are left
//  centred); none does nothing. test may be NULL. The transform is
//  ms_dataset_transform_fit's, applied by ms_dataset_transform_apply.
//  Returns MS_OK or MS_ERR_NOMEM (nothing scaled).
int ms_dataset_scale(ms_dataset_t *train, ms_dataset_t *test, ms_scale_t scale);

//  As ms_dataset_scale, for a training set and n_others further sets
//  (validation and test, say; NULL entries are skipped), all scaled with
//  the statistics of train only. A set whose n_features differs from
//  train's is left alone (a caller bug). Returns MS_OK or MS_ERR_NOMEM.
int ms_dataset_scale_sets(ms_dataset_t *train, ms_dataset_t *const *others,
                          int n_others, ms_scale_t scale);

//  Deterministic validation split: draw a permutation of 0..n-1 from a
//  generator seeded by seed (it depends on seed and n only, never on the
//  order of earlier calls), then copy the first n - round(n * fraction)
//  permuted rows into *train and the rest into *val. self is untouched
//  (a worker keeps one pristine copy cached across tasks). Caller owns
//  both results. fraction 0 gives an empty val (n_samples 0, arrays
//  NULL). Returns MS_OK, MS_ERR_INVALID (fraction outside [0,1), or
//  rounding leaves no training row) or MS_ERR_NOMEM.
int ms_dataset_split(const ms_dataset_t *self, double fraction, uint64_t seed,
                     ms_dataset_t **train, ms_dataset_t **val);

//  Whether ms_dataset_split(self, fraction, ...) would be accepted,
//  without copying anything (a runner checks a spec's fractions before
//  any task starts). Returns MS_OK or MS_ERR_INVALID with diag (NULL:
//  none) as ms_dataset_split_checked.
int ms_dataset_split_check(const ms_dataset_t *self, double fraction,
                           ms_diag_t *diag);

//  As ms_dataset_split, with the reason of a refusal in diag (NULL: none):
//  where "validation_split", reason "0.999999 leaves no training rows
//  (60000 samples)" or "1.5 is outside [0, 1)" (the fraction in the
//  shortest text that reads back exactly). Same return codes as
//  ms_dataset_split.
int ms_dataset_split_checked(const ms_dataset_t *self, double fraction,
                             uint64_t seed, ms_dataset_t **train,
                             ms_dataset_t **val, ms_diag_t *diag);

//  Bytes held by the arrays (x + labels + targets) of a dataset.
int64_t ms_dataset_bytes(const ms_dataset_t *self);

#endif
