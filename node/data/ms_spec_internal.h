/*  =========================================================================
    ms_spec_internal - what the files of ms_spec share: the spec's
    struct, a parameter, the parse context, the YAML reading helpers
    (ms_spec_yaml.c) and the canonical form (ms_spec_canonical.c)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Private to node/data/ms_spec*.c (STYLE.md: a module's private helpers
    live in its _internal.h). ms_spec.c parses a spec and expands it;
    ms_spec_yaml.c reads typed values off a libyaml document, each error
    with its key path and line; ms_spec_canonical.c writes the canonical
    expanded spec and the ids, and reads a canonical text back.
*/
#ifndef MS_SPEC_INTERNAL_H
#define MS_SPEC_INTERNAL_H

#include "ms_spec.h"

#include "ms_config_json.h"
#include "ms_distribution.h"
#include "ms_hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <yaml.h>

#define MS_SPEC_PATH_MAX 256 // longest key path we print
#define MS_SPEC_NAME_MAX 128 // longest parameter name (nested: dotted)
#define MS_SPEC_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define MS_SPEC_N_BUILTIN_DATASETS 2
#define MS_SPEC_N_METRICS 5
#define MS_SPEC_N_METHODS 3
#define MS_SPEC_N_KEEP 4
//  Built-in dataset names, the built-in metrics, method and keep_weights
//  names, in their enums' order (defined in ms_spec.c).
extern const char *const ms_spec_builtin_datasets[MS_SPEC_N_BUILTIN_DATASETS];
extern const char *const ms_spec_metric_names[MS_SPEC_N_METRICS];
extern const char *const ms_spec_method_names[MS_SPEC_N_METHODS];
extern const char *const ms_spec_keep_names[MS_SPEC_N_KEEP];

typedef enum {
    MS_SPEC_FORM_VALUE,
    MS_SPEC_FORM_VALUES,
    MS_SPEC_FORM_DIST
} ms_spec_form_t;

//  One parameter of the spec.
typedef struct {
    char name[MS_SPEC_NAME_MAX]; // parameter name, '_' spelling; a program
                                 // sweep's nested one as "outer.inner"
    json_t *keys;                // program sweeps: the key path, outer
                                 // first (a JSON array of strings; owned)
    ms_config_param_type_t type; // its type (program sweeps: INT for a law
                                 // of integers, else FLOAT or UNKNOWN)
    ms_spec_form_t form;         // value, values or distribution
    json_t **values;             // value(s); 1 for MS_SPEC_FORM_VALUE
    size_t n_values;             // entries in values
    ms_distribution_t *law; // MS_SPEC_FORM_VALUES, MS_SPEC_FORM_DIST: the law
                            // random and sobol draw from (owned)
    size_t line;            // YAML line of the parameter
} ms_spec_param_t;

struct ms_spec {
    char *name;                     // sweep name
    ms_spec_dataset_t dataset;      // borrowed view of the fields below
    char *dataset_name;             // built-in name, or NULL
    char *train_path, *test_path;   // file dataset paths, or NULL
    char *label;                    // file dataset label, or NULL
    int32_t label_index;            // >= 0: label column by index
    ms_dataset_missing_t missing;   // dataset.missing
    char **categorical;             // dataset.categorical (owned)
    size_t n_categorical;           // entries in categorical
    double split;                   // dataset.split (0: train and test)
    ms_spec_method_t method;        // expansion method
    ms_spec_metric_t metric;        // metric to optimise
    char *metric_name;              // owns metric.name
    int64_t run_cap;                // 0 = none
    int64_t sweep_seed;             // random / sobol seed
    ms_spec_verify_t verify;        // verification parameters
    ms_keep_weights_t keep_weights; // which weights to keep
    char **warnings;                // owned strings
    size_t n_warnings;              // entries in warnings
    size_t n_tasks;                 // tasks after de-duplication
    size_t cap_tasks;               // allocated entries of task_json
    char **task_json;               // canonical config per task
    size_t *task_json_len;          // their lengths
    ms_hash_t *task_ids;            // per task, valid when ids_ready
    bool ids_ready;                 // ids and canonical computed
    ms_hash_t sweep_id;             // valid when ids_ready
    char *canonical;                // canonical expanded spec, or NULL
    size_t canonical_len;           // its length
    // program sweeps (ms_spec_program.c)
    bool is_program;           // `program` given
    char *program_path;        // the program, relative to the spec
    json_t *command;           // W&B's command list, or NULL (default)
    ms_spec_program_t program; // public view of the fields above
};

//  Parse context: the YAML document and where errors go.
typedef struct {
    yaml_document_t *doc; // the loaded document
    ms_diag_t *diag;      // caller's diagnostic (may be NULL)
    int64_t max_params;   // refuse networks with more parameters
    bool program;         // a program sweep: free-form parameters
} ms_spec_ctx_t;

//  ms_spec_yaml.c: reading a libyaml document. Each ms_spec_get_* and
//  check returns MS_OK, or MS_ERR_INVALID with ctx->diag naming PATH, the
//  reason and the line; MS_ERR_NOMEM.

//  Write a key path into OUT (truncated at MS_SPEC_PATH_MAX - 1 bytes).
void ms_spec_pathf(char out[MS_SPEC_PATH_MAX], const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//  Set ctx->diag to WHERE and the reason, with NODE's line when NODE is
//  not NULL; returns CODE.
int ms_spec_fail(ms_spec_ctx_t *ctx, int code, const yaml_node_t *node,
                 const char *where, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

//  Replace *DST with a copy of SRC (NULL: none). False when out of memory.
bool ms_spec_strdup_to(char **dst, const char *src);

//  Index of NAME in TABLE[0 .. N), or -1.
int ms_spec_index_of(const char *const *table, size_t n, const char *name);

//  "a, b, c" of TABLE[0 .. N) in OUT (truncated at SIZE); returns OUT.
const char *ms_spec_join(const char *const *table, size_t n, char *out,
                         size_t size);

//  Is S a decimal integer (YAML 1.2 core schema)?
bool ms_spec_looks_int(const char *s);

//  The node ID of ctx's document (NULL when there is none).
yaml_node_t *ms_spec_node(ms_spec_ctx_t *ctx, int id);

//  The text of a scalar NODE; NULL for any other node (or NULL).
const char *ms_spec_scalar(const yaml_node_t *node);

//  "a mapping", "a list", "a scalar" or "nothing", for messages.
const char *ms_spec_node_kind(const yaml_node_t *node);

//  NODE as a JSON value in *OUT (new reference): scalars typed as the
//  prose of ms_spec.c says, mappings with scalar keys, at most a few
//  levels deep (DEPTH: the caller's level, 0 at the top).
int ms_spec_node_json(ms_spec_ctx_t *ctx, const yaml_node_t *node,
                      const char *path, int depth, json_t **out);

//  NODE is a mapping with scalar keys, none twice.
int ms_spec_check_mapping(ms_spec_ctx_t *ctx, const yaml_node_t *node,
                          const char *path);

//  NODE as a string (*OUT borrowed from the document).
int ms_spec_get_string(ms_spec_ctx_t *ctx, const yaml_node_t *node,
                       const char *path, const char **out);

//  NODE as a number; WANT_INT: an integer (in *INTEGER), else any number
//  (in *REAL).
int ms_spec_get_number(ms_spec_ctx_t *ctx, const yaml_node_t *node,
                       const char *path, bool want_int, double *real,
                       int64_t *integer);

//  ms_spec.c: add a warning line to SELF. MS_OK or MS_ERR_NOMEM.
int ms_spec_warn(ms_spec_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//  ms_spec.c: point self->dataset (the public view) at the owned strings.
void ms_spec_dataset_view(ms_spec_t *self);

//  ms_spec.c: parse the definition NODE of parameter NAME (key KEY_NODE)
//  into *PARAM, errors at PATH (its key path). Program sweeps
//  (ctx->program) take any name, and values unchecked.
int ms_spec_parse_param(ms_spec_ctx_t *ctx, ms_spec_t *spec, const char *name,
                        const char *path, const yaml_node_t *key_node,
                        const yaml_node_t *node, ms_spec_param_t *param);

//  ms_spec.c: free what PARAM owns.
void ms_spec_param_free(ms_spec_param_t *param);

//  ms_spec_program.c: the top-level keys of a program sweep: `program`
//  (a relative path without ".."), `command` (W&B's list; each macro
//  known) and `resources` ({cpus, gpus, memory_mb}). KEY is the key's
//  text; returns MS_OK, or MS_ERR_INVALID with the path, or MS_ERR_NOMEM.
int ms_spec_program_key(ms_spec_ctx_t *ctx, ms_spec_t *self, const char *key,
                        const yaml_node_t *node);

//  ms_spec_program.c: a program sweep's `parameters` NODE, nested
//  mappings (`name: {parameters: {...}}`, as W&B nests them) flattened
//  into *PARAMS (malloc'd, *N_PARAMS entries, each with its key path;
//  the caller frees each with ms_spec_param_free, then the array).
int ms_spec_program_params(ms_spec_ctx_t *ctx, ms_spec_t *self,
                           const yaml_node_t *node, ms_spec_param_t **params,
                           size_t *n_params);

//  ms_spec_program.c: the canonical config of one program task: an object
//  with each parameter's VALUES[p] at its key path, nested; *JSON the
//  canonical text (malloc'd), *LEN its length. MS_OK or MS_ERR_NOMEM.
int ms_spec_program_task(const ms_spec_param_t *params, size_t n_params,
                         json_t *const *values, char **json, size_t *len);

//  ms_spec_program.c: add "command", "program" and "resources" to HEAD
//  (the canonical object without its tasks). MS_OK or MS_ERR_NOMEM.
int ms_spec_program_canonical(const ms_spec_t *self, json_t *head);

//  ms_spec_program.c: read those keys back from a canonical ROOT into
//  SELF (a program sweep: ROOT has "program"). MS_OK, MS_ERR_INVALID
//  (diag: which key and why) or MS_ERR_NOMEM.
int ms_spec_program_load(ms_spec_t *self, const json_t *root, ms_diag_t *diag);

//  ms_spec.c: every input hash the ids cover is known (the dataset files'
//  when the sweep names files, the program's blob for a program sweep).
bool ms_spec_inputs_hashed(const ms_spec_t *self);

//  ms_spec_canonical.c: write the canonical expanded spec of SELF and
//  every id (sweep and tasks); sets ids_ready. MS_OK or MS_ERR_NOMEM.
int ms_spec_compute_ids(ms_spec_t *self);

#endif
