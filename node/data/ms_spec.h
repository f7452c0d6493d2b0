/*  =========================================================================
    ms_spec - sweep specifications: parse a W&B-style YAML spec, expand it
    once into task configs, and compute the content-hash ids

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Implements DESIGN.md "Sweep specification". A spec is YAML (JSON is
    YAML too). ms_spec_parse() checks it, expands it into the ordered list
    of task configs (grid, random or sobol), drops duplicate configs (with
    a warning), and builds the canonical expanded spec:

      {"dataset": D, "keep_weights": K, "method": M, "metric": {"goal": G,
       "name": N}, "name": NAME, "run_cap": R, "sweep_seed": S,
       "tasks": [config, ...], "verify": {"accuracy_tolerance": A,
       "loss_tolerance": L, "replicas": P}}

    as canonical JSON (proto/ms_wire_canon.h), with each config the
    ms_config_encode_json object, run_cap 0 when the spec gave none, and
    D = {"name": "fashion-mnist"} for a built-in dataset or
    {"label": NAME, "test": HEX, "train": HEX} for files (BLAKE2b-256 of
    each file's bytes), plus the CSV options where they differ from their
    defaults: "label" an integer when the column is given by index,
    "missing": "zero" | "mean", "categorical": [NAMES] (as listed),
    "split": FRACTION (a dataset.file: train and test are the same hash;
    the split's seed is sweep_seed). Every node parses the uploaded bytes
    with these options, so all get the same classes and features. Then

      sweep_id = BLAKE2b-256(canonical expanded spec bytes)
      task_id  = BLAKE2b-256(sweep_id's 32 bytes || canonical config bytes)

    For a file dataset the ids exist only once the file hashes are known:
    ms_spec_bind_dataset_files() (client / local runner: hashes the
    files named in the spec) or ms_spec_set_dataset_hashes() (the hashes
    came with an upload). Until then ms_spec_ids_ready() is false and the
    id and canonical-text accessors return NULL. A node never opens paths
    from a spec received over the network.

    Expansion order (documented, and part of the id):
    - parameters are taken in sorted name order (bytes);
    - grid: the cartesian product of every parameter's value list, the
      first parameter (in name order) varying slowest, the last fastest;
      task k takes value (k / stride_p) % n_p of parameter p; run_cap
      keeps the first run_cap distinct configs;
    - random: run_cap (required) draws; per task, for each swept
      parameter in name order, one draw from ms_rng seeded with
      (sweep_seed, stream 0x5357454550 "SWEEP"): a value list takes
      ms_rng_below(n); uniform min + u (max - min); int_uniform
      min + below(max - min + 1); log_uniform_values exp(log min +
      u (log max - log min)); q_uniform round((min + u (max - min)) / q) q;
    - sobol: run_cap (required) points of a Sobol sequence with Joe & Kuo
      (2008, new-joe-kuo-6.21201) direction numbers, one dimension per
      swept parameter in name order (at most MS_SPEC_SOBOL_MAX_DIMS),
      32-bit, Gray-code order, starting at index 0, DIGITALLY SHIFTED: each
      dimension's 32-bit integers are XORed with a shift drawn from ms_rng
      seeded with (sweep_seed, stream 0x534f424f4c "SOBOL"). A point u maps
      to a value list by index floor(u n), to a distribution as for random
      with u in place of the draw.
    Each task config = ms_train_config_defaults, then the parameters; init
    = ms_init_default_for(activation) unless init is a parameter; then
    ms_train_config_check (a failure names the task's parameters).

    An ms_spec_t is immutable after parse except for the dataset hashes;
    it belongs to one thread at a time.
*/
#ifndef MS_SPEC_H
#define MS_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ms_config.h"
#include "ms_dataset.h"
#include "ms_err.h"
#include "ms_hash.h"
#include "ms_sobol.h"
#include "ms_spec_text.h"

#define MS_SPEC_DEFAULT_MAX_TASKS 1000000 // DESIGN.md max_tasks_per_sweep
#define MS_SPEC_DEFAULT_MAX_PARAMS                                             \
    (INT64_C(1) << 31) // parameters of one network (8 GiB of float32)
#define MS_SPEC_SOBOL_MAX_DIMS MS_SOBOL_MAX_DIMS // ms_sobol.h
#define MS_SPEC_MAX_DEPTH 64 // nesting levels a spec text may have
#define MS_SPEC_MAX_EXPANDED                                                   \
    (16 * 1024 * 1024)           // nodes + scalar bytes that aliases may add
#define MS_SPEC_MAX_DOCUMENTS 64 // YAML documents (sweeps) in one spec file

typedef struct ms_spec ms_spec_t;

typedef enum {
    MS_SPEC_METHOD_GRID,
    MS_SPEC_METHOD_RANDOM,
    MS_SPEC_METHOD_SOBOL,
} ms_spec_method_t;

typedef enum {
    MS_KEEP_WEIGHTS_NONE,
    MS_KEEP_WEIGHTS_BEST,
    MS_KEEP_WEIGHTS_SAMPLED,
    MS_KEEP_WEIGHTS_ALL,
} ms_keep_weights_t;

typedef struct {
    int64_t max_tasks;  // refuse sweeps with more tasks; <= 0 means default
    int64_t max_params; // refuse networks with more parameters (weights and
                        // biases); <= 0 means MS_SPEC_DEFAULT_MAX_PARAMS.
                        // Counted with 784 inputs and 10 outputs for the
                        // built-in image datasets; for file datasets (input
                        // size unknown at parse) the hidden layers only.
} ms_spec_options_t;

//  The dataset a spec names. Borrowed from the spec (valid until it is
//  destroyed or its hashes are set).
typedef struct {
    bool builtin;           // a built-in name, or train/test files
    const char *name;       // built-in name ("fashion-mnist"); NULL for files
    const char *train_path; // files as written in the spec; NULL for a
    const char *test_path;  //   built-in, and after load_canonical
    const char *label;      // label column / name for files ("label";
                            // "" when chosen by index)
    int32_t label_index;    // >= 0: the label column by 0-based index
    ms_dataset_missing_t missing;   // dataset.missing (default error)
    const char *const *categorical; // dataset.categorical column names
    size_t n_categorical;           // entries in categorical
    double split;                   // > 0: dataset.file split, this fraction to
                  // test (train_path == test_path == the file)
    bool hashed;          // train_hash / test_hash are set
    ms_hash_t train_hash; // BLAKE2b-256 of the train file's bytes
    ms_hash_t test_hash;  // BLAKE2b-256 of the test file's bytes
} ms_spec_dataset_t;

typedef struct {
    int32_t replicas;          // result slots per task, >= 1 (default 1)
    double accuracy_tolerance; // absolute, default 0.01
    double loss_tolerance;     // relative, default 0.02
} ms_spec_verify_t;

typedef struct {
    const char *name; // val_accuracy (default), val_loss,
                      // test_accuracy, test_loss, train_loss
    bool maximize;    // goal: maximize (default) / minimize
} ms_spec_metric_t;

//  What a program task may use (DESIGN.md "Program tasks": `resources`,
//  as Ray Tune's): a node claims only runs that fit.
typedef struct {
    int32_t cpus;      // cores per run, >= 1 (default 1)
    int32_t gpus;      // GPUs per run, >= 0 (default 0)
    int64_t memory_mb; // memory per run in MiB; 0: the node's
                       // program_memory_mb (default)
} ms_spec_resources_t;

//  A program sweep's program. Borrowed from the spec.
typedef struct {
    const char *path;              // as the spec names it, relative to the
                                   // spec's folder ("train.py")
    const json_t *command;         // W&B's `command` list, or NULL: its
                                   // default (ms_program_command.h)
    ms_spec_resources_t resources; // per run
    bool hashed;                   // blob is set
    ms_hash_t blob;                // BLAKE2b-256 of the packed folder
                                   // (ms_program_archive_pack)
} ms_spec_program_t;

//  Set the CSV options of a file dataset on obj (a canonical dataset
//  object, or a worker's): "label" (name or index), and "missing",
//  "categorical", "split" where they differ from the defaults; with_seed
//  adds "split_seed" (the sweep_seed) when there is a split. Nothing for
//  a built-in dataset. Returns MS_OK or MS_ERR_NOMEM.
int ms_spec_dataset_options_json(const ms_spec_t *self, bool with_seed,
                                 json_t *obj);

//  The CSV options of a file dataset as ms_dataset_load_csv_files takes
//  them (split_seed: the sweep_seed); defaults for a built-in dataset.
//  Strings borrowed from the spec.
void ms_spec_dataset_csv_options(const ms_spec_t *self,
                                 ms_dataset_csv_options_t *out);

//  Read those options back from a dataset object into out (defaults for
//  keys absent). Strings are borrowed from obj; out->categorical is
//  malloc'd when set (caller frees it: free((void *) out->categorical)).
//  Returns MS_OK, MS_ERR_INVALID (a value of the wrong type or range;
//  diag names the key) or MS_ERR_NOMEM.
int ms_spec_dataset_options_from_json(const json_t *obj,
                                      ms_dataset_csv_options_t *out,
                                      ms_diag_t *diag);

//  The "dataset" object of a canonical expanded spec text[0 .. n) (as
//  ms_spec_canonical returns it: {"name": N} for a built-in, {"label",
//  "test", "train"} with the files' hashes otherwise), read WITHOUT
//  parsing the task list: canonical form puts "dataset" first, so this
//  costs the same for a sweep of 100,000 tasks as for one. Caller owns
//  the result; NULL when the text does not start like a canonical spec
//  or the object is malformed (diag says where), or out of memory.
json_t *ms_spec_canonical_dataset(const char *text, size_t n, ms_diag_t *diag);

//  Fill opts with the defaults (max_tasks MS_SPEC_DEFAULT_MAX_TASKS,
//  max_params MS_SPEC_DEFAULT_MAX_PARAMS).
void ms_spec_options_defaults(ms_spec_options_t *opts);

//  Parse the YAML (or JSON) spec text[0 .. n) and expand it. opts NULL =
//  defaults. On success *out owns a new spec (free it with
//  ms_spec_destroy) and warnings (W&B keys ignored, duplicates dropped)
//  are available through ms_spec_warning(). Returns MS_OK;
//  MS_ERR_INVALID with diag: YAML syntax error (where "line L, column C",
//  reason from libyaml), nesting deeper than MS_SPEC_MAX_DEPTH levels or
//  aliases that expand past MS_SPEC_MAX_EXPANDED (where "line L, column
//  C", checked on the parser's events before any tree is built, so a
//  hostile text costs about what its size does), unknown key, wrong type, empty
//  list, a distribution under grid, unknown parameter or enum name, unknown
//  dataset, a config failing ms_train_config_check (where = the key path
//  such as "parameters.width.values[1]", reason with "(line N)" when
//  known); MS_ERR_UNSUPPORTED with diag for method bayes and
//  early_terminate ("not yet supported"); MS_ERR_RANGE with diag
//  (where "run_cap" or "parameters") when the sweep has more than
//  max_tasks tasks; MS_ERR_RANGE with diag (where "parameters.hidden_sizes",
//  ".width" or ".hidden_layers", reason "network has N parameters, more
//  than the pool limit M") when a task's network has more than
//  max_params parameters; MS_ERR_NOMEM. *out stays NULL on error. A spec
//  that sweeps no parameter is accepted with the warning "no parameters
//  swept: one task with every default". A spec is one sweep: a second
//  YAML document is refused (MS_ERR_INVALID, where "line L, column C" of
//  its start); a file of several is split with ms_spec_split_documents
//  first.
int ms_spec_parse(const char *text, size_t n, const ms_spec_options_t *opts,
                  ms_spec_t **out, ms_diag_t *diag);

//  Rebuild a spec from its canonical expanded text (as returned by
//  ms_spec_canonical) WITHOUT re-expanding: the task list is read as
//  stored. Recomputes the sweep id from text and checks that
//  re-encoding gives the same bytes (so the id is the one the submitter
//  computed). The result has no paths and no warnings. Returns MS_OK;
//  MS_ERR_INVALID with diag when the text is not canonical JSON of an
//  expanded spec (where = key path, e.g. "tasks[3].width");
//  MS_ERR_NOMEM.
int ms_spec_load_canonical(const char *text, size_t n, ms_spec_t **out,
                           ms_diag_t *diag);

//  Free a spec; NULL-safe; sets *self_p to NULL.
void ms_spec_destroy(ms_spec_t **self_p);

//  For a file dataset: hash the train and test files named in the spec
//  (streamed BLAKE2b-256) and compute the ids. Only the client or the
//  local runner calls this. Returns MS_OK (also for a built-in dataset,
//  or a program sweep without one: nothing to do); MS_ERR_IO with diag (where =
//  the path) when a file cannot be read; MS_ERR_INVALID when the spec has no
//  paths (loaded from canonical text).
int ms_spec_bind_dataset_files(ms_spec_t *self, ms_diag_t *diag);

//  For a file dataset: set the file hashes directly (they came with an
//  upload) and compute the ids (for a program sweep, once its blob is
//  set too). Returns MS_OK, or MS_ERR_INVALID for a
//  built-in dataset.
int ms_spec_set_dataset_hashes(ms_spec_t *self, const ms_hash_t *train,
                               const ms_hash_t *test);

//  The program of a program sweep (a spec with `program`), or NULL for a
//  sweep of the built-in trainer.
const ms_spec_program_t *ms_spec_program(const ms_spec_t *self);

//  Set a program sweep's blob hash (of ms_program_archive_pack's archive
//  of the spec's folder): it is part of the sweep id and of every task
//  id, so an edited script is a new sweep. Computes the ids once every
//  input is hashed (the dataset files too, if the sweep names files).
//  Returns MS_OK; MS_ERR_INVALID (not a program sweep); MS_ERR_NOMEM.
int ms_spec_set_program_blob(ms_spec_t *self, const ms_hash_t *blob);

//  True when the ids and the canonical text are available: every input
//  the ids cover is hashed (at once for a built-in dataset; after
//  bind/set_dataset_hashes for files; after set_program_blob for a
//  program sweep).
bool ms_spec_ids_ready(const ms_spec_t *self);

//  The sweep name ("sweep" when the spec gave none). Borrowed.
const char *ms_spec_name(const ms_spec_t *self);

//  The dataset: built-in name, or paths + label (+ hashes once bound).
//  Borrowed; valid until the spec is destroyed.
const ms_spec_dataset_t *ms_spec_dataset(const ms_spec_t *self);

//  The expansion method (grid by default).
ms_spec_method_t ms_spec_method(const ms_spec_t *self);

//  The metric to optimise (val_accuracy, maximize by default). Borrowed.
const ms_spec_metric_t *ms_spec_metric(const ms_spec_t *self);

//  Whether value is a better result than best by metric m (its goal):
//  value must be finite; with no best yet (have_best false) any finite
//  value is; a tie is not (the first of equal results stays the best).
//  The one "best by the metric" rule: keep_weights best in the pool and
//  `meshsweep run --keep-weights best` both use it.
bool ms_spec_metric_improves(const ms_spec_metric_t *m, double value,
                             bool have_best, double best);

//  The value of metric m in a result row (a JSON object, borrowed): its
//  member m->name when that is a number, else NaN (no value: never an
//  improvement by ms_spec_metric_improves).
double ms_spec_metric_value(const ms_spec_metric_t *m, const json_t *row);

//  Verification parameters (replicas 1, tolerances 0.01 and 0.02 by
//  default). Borrowed.
const ms_spec_verify_t *ms_spec_verify(const ms_spec_t *self);

//  Which trained weights to keep (sampled by default).
ms_keep_weights_t ms_spec_keep_weights(const ms_spec_t *self);

//  run_cap as given (0 = none).
int64_t ms_spec_run_cap(const ms_spec_t *self);

//  sweep_seed as given (0 by default).
int64_t ms_spec_sweep_seed(const ms_spec_t *self);

//  Number of warnings of the parse (W&B keys ignored, duplicate configs
//  dropped).
size_t ms_spec_warning_count(const ms_spec_t *self);

//  The i-th warning, one line of English (borrowed; NULL when out of
//  range).
const char *ms_spec_warning(const ms_spec_t *self, size_t i);

//  Number of tasks after expansion and de-duplication.
size_t ms_spec_task_count(const ms_spec_t *self);

//  Copy task i's config into *cfg. Returns MS_OK, MS_ERR_NOTFOUND when
//  i >= ms_spec_task_count, or MS_ERR_INVALID for a program sweep (its
//  configs are the program's own: ms_spec_task_json).
int ms_spec_task_config(const ms_spec_t *self, size_t i,
                        ms_train_config_t *cfg);

//  Task i's canonical config JSON (borrowed, NUL-terminated), or NULL
//  when i is out of range.
const char *ms_spec_task_json(const ms_spec_t *self, size_t i);

//  Task i's id, or NULL when out of range or !ms_spec_ids_ready.
//  Borrowed.
const ms_hash_t *ms_spec_task_id(const ms_spec_t *self, size_t i);

//  The sweep id, or NULL when !ms_spec_ids_ready. Borrowed.
const ms_hash_t *ms_spec_sweep_id(const ms_spec_t *self);

//  The canonical expanded spec text (borrowed, NUL-terminated) and its
//  length in *len (may be NULL), or NULL when !ms_spec_ids_ready.
const char *ms_spec_canonical(const ms_spec_t *self, size_t *len);

//  Name of a method: "grid", "random", "sobol" (static; "?" if unknown).
const char *ms_spec_method_name(ms_spec_method_t method);

//  Name of a keep_weights value: "none", "best", "sampled", "all"
//  (static; "?" if unknown).
const char *ms_keep_weights_name(ms_keep_weights_t keep);

#endif
