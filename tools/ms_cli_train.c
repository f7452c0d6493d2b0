/*  =========================================================================
    ms_cli_train - meshsweep train: train one network here and print its
    metrics (one line per epoch, then the final figures or the result row)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every parameter of DESIGN.md's table is an option spelled with dashes
    (--hidden-layers 4, --learning-rate 0.001, --hidden-sizes 100,10); the
    options are not listed here one by one: any --NAME that is not one of
    the command's own options is handed to ms_config_set_param_string,
    which knows the parameter names and their types, so a new parameter
    needs no change in the client. A boolean parameter may be given bare
    (--early-stopping). As in a spec, the init follows the activation
    (ms_init_default_for) unless --init is given.

    The data is prepared as a worker prepares it (node/work/ms_worker.h): load,
    check, split off the validation set with the task's seed, scale with
    the training part's statistics; so `meshsweep train` with a task's
    config gives that task's numbers on the same machine.

    --save FILE writes the trained network (an ok run only) with its
    metadata (proto/ms_weights_meta.h: the config and the input transform
    fitted to the training part): ONNX (proto/ms_onnx.h) when FILE ends
    in .onnx or with --format onnx, else the native weights file.

    With --json the result row (DESIGN.md "result row") goes to stdout and
    the per-epoch lines to stderr. Outside a sweep the row has no sweep
    (sweep_id null) and its task_id is H(32 zero bytes || canonical
    config), the task id the config would have in a sweep with a zero id.
*/
#include "ms_cli.h"
#include "ms_backend.h"
#include "ms_config.h"
#include "ms_config_json.h"
#include "ms_dataset.h"
#include "ms_hash.h"
#include "ms_onnx.h"
#include "ms_platform.h"
#include "ms_train.h"
#include "ms_weights.h"
#include "ms_weights_meta.h"
#include "ms_wire_canon.h"

#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  Most columns --categorical may list.
#define S_MAX_CATEGORICAL 256

//  Command-line state of one `meshsweep train`.
typedef struct {
    ms_train_config_t cfg;        // the task config being built
    bool init_given;              // --init was given (keep it)
    bool sizes_given;             // --hidden-sizes was given
    bool layers_given;            // --hidden-layers or --width was given
    const char *dataset;          // built-in name
    const char *train_path;       // --train (CSV or IDX images)
    const char *train_labels;     // --train-labels (IDX)
    const char *test_path;        // --test
    const char *test_labels;      // --test-labels (IDX)
    const char *label;            // --label (CSV column)
    const char *file;             // --file: one CSV split into train and test
    const char *backend;          // --backend
    long threads;                 // --threads (BLAS threads)
    bool json_out;                // --json
    bool quiet;                   // --quiet: no per-epoch lines
    const char *save_path;        // --save FILE: write the trained weights
    const char *save_format;      // --format native|onnx (NULL: by extension)
    ms_dataset_csv_options_t csv; // --label-index, --missing,
                                  // --categorical, --split, --split-seed
    char *categorical_text;       // --categorical's value, cut at commas
    const char *categorical[S_MAX_CATEGORICAL]; // the names, into it
} s_train_args_t;

//  --------------------------------------------------------------------------
//  Help for train.

static void
s_train_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep train [--dataset NAME | --train FILE --test "
            "FILE\n"
            "                        [--train-labels FILE --test-labels "
            "FILE] [--label NAME]\n"
            "                        | --file FILE [--split F]]\n"
            "                       [--hidden-layers N] [--width W] "
            "[--hidden-sizes 100,10]\n"
            "                       [--activation A] [--PARAMETER VALUE]... "
            "[--backend auto|cpu|cuda]\n"
            "                       [--threads N] [--json] [--quiet]\n"
            "                       [--save FILE [--format native|onnx]]\n"
            "\n"
            "Train one network here: a line per epoch (epoch, train loss, "
            "val loss,\nval accuracy, seconds), then test accuracy and loss, "
            "parameters and time\nper epoch. --json prints the result row "
            "instead (epoch lines go to stderr).\n"
            "\n"
            "data:\n"
            "  --dataset NAME        built-in dataset (default "
            "fashion-mnist)\n"
            "  --train/--test FILE   CSV files with a header (label column "
            "--label,\n"
            "                        default \"label\"), or IDX image files "
            "with\n"
            "  --train-labels/--test-labels FILE  their IDX label files\n"
            "  --file FILE           one CSV, split into train and test "
            "(--split)\n"
            "CSV (quoted fields, string class labels sorted by name):\n"
            "  --label NAME          the label column (default \"label\")\n"
            "  --label-index N       the label column by 0-based index\n"
            "  --missing M           error (default), zero or mean (the "
            "training mean)\n"
            "  --categorical A,B     columns to one-hot encode\n"
            "  --split F             with --file: this fraction is the test "
            "set (0.2)\n"
            "  --split-seed N        seed of that split (default 0)\n"
            "run:\n"
            "  --backend NAME        auto (default), cpu or cuda\n"
            "  --threads N           BLAS threads (default 1)\n"
            "  --save FILE           write the trained network: ONNX when "
            "FILE ends in\n"
            "                        .onnx, else the native weights file "
            "(both with\n"
            "                        the config and input scaling; see "
            "meshsweep predict)\n"
            "  --format F            native or onnx, whatever FILE's name\n"
            "parameters (DESIGN.md table; '_' written '-'):\n");
    int n = ms_config_param_count();
    for (int i = 0; i < n; i++) {
        const char *name = ms_config_param_name(i);
        char flag[64], choices[256];
        snprintf(flag, sizeof flag, "--%s", name);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        ms_config_param_choices(name, choices, sizeof choices);
        const char *type = "";
        switch (ms_config_param_type(name)) {
        case MS_CONFIG_PARAM_INT:
            type = "integer";
            break;
        case MS_CONFIG_PARAM_FLOAT:
            type = "number";
            break;
        case MS_CONFIG_PARAM_BOOL:
            type = "true|false (bare flag: true)";
            break;
        case MS_CONFIG_PARAM_SIZES:
            type = "sizes, e.g. 100,10";
            break;
        default:
            type = choices;
            break;
        }
        fprintf(out, "  %-20s  %s\n", flag, type);
    }
}

//  --------------------------------------------------------------------------
//  --save PATH, before any training: a file name (not empty, not a
//  directory) in a directory that exists and can be written, and not an
//  existing file that cannot be. A long run is not lost to a typo.
//  Returns an exit code (0 = go on).

static int
s_check_save_path(const char *path)
{
    if (!*path)
        return ms_cli_usage_error("--save", "needs a file name");
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return ms_cli_usage_error(
                "--save", "%s: is a directory; give a file name", path);
        if (access(path, W_OK) != 0)
            return ms_cli_usage_error("--save", "%s: cannot write: %s", path,
                                      strerror(errno));
        return MS_CLI_EXIT_OK;
    }
    if (path[strlen(path) - 1] == '/')
        return ms_cli_usage_error(
            "--save", "%s: names a directory; give a file name", path);
    //  The directory the file would go in.
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int) (slash - path), path);
    if (stat(dir, &st) != 0)
        return ms_cli_usage_error("--save", "%s: no directory %s: %s", path,
                                  dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return ms_cli_usage_error("--save", "%s: %s is not a directory", path,
                                  dir);
    if (access(dir, W_OK | X_OK) != 0)
        return ms_cli_usage_error("--save", "%s: cannot write in %s: %s", path,
                                  dir, strerror(errno));
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Parse the command line into args. Returns an exit code (0 = go on).

static int
s_parse_args(int argc, char **argv, s_train_args_t *args)
{
    ms_train_config_defaults(&args->cfg);
    args->dataset = NULL;
    args->backend = "auto";
    args->threads = 1;
    ms_dataset_csv_options_init(&args->csv);
    const ms_cli_value_opt_t paths[] = {{"--dataset", &args->dataset},
                                        {"--train", &args->train_path},
                                        {"--train-labels", &args->train_labels},
                                        {"--test", &args->test_path},
                                        {"--test-labels", &args->test_labels},
                                        {"--label", &args->label},
                                        {"--file", &args->file},
                                        {"--backend", &args->backend},
                                        {"--save", &args->save_path},
                                        {"--format", &args->save_format}};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool missing = false;
        const char *v = NULL;
        int bad = MS_CLI_EXIT_OK;
        if (ms_cli_value_option(argc, argv, &i, paths,
                                sizeof paths / sizeof *paths, &bad)) {
            if (bad != MS_CLI_EXIT_OK)
                return bad;
            continue;
        }
        if (ms_cli_arg_value(argc, argv, &i, "--threads", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--threads", "needs a number");
            if (ms_cli_parse_int("--threads", v, 1, 256, &args->threads))
                return MS_CLI_EXIT_USAGE;
            continue;
        }
        if (ms_cli_arg_value(argc, argv, &i, "--label-index", &v, &missing)) {
            long index = 0;
            if (missing)
                return ms_cli_usage_error("--label-index", "needs a number");
            if (ms_cli_parse_int("--label-index", v, 0,
                                 MS_DATASET_MAX_FEATURES - 1, &index))
                return MS_CLI_EXIT_USAGE;
            args->csv.label_index = (int32_t) index;
            continue;
        }
        if (ms_cli_arg_value(argc, argv, &i, "--split-seed", &v, &missing)) {
            long seed = 0;
            if (missing)
                return ms_cli_usage_error("--split-seed", "needs a number");
            if (ms_cli_parse_int("--split-seed", v, 0, INT32_MAX, &seed))
                return MS_CLI_EXIT_USAGE;
            args->csv.split_seed = (uint64_t) seed;
            continue;
        }
        if (ms_cli_arg_value(argc, argv, &i, "--missing", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--missing", "needs a value");
            if (strcmp(v, "error") == 0)
                args->csv.missing = MS_DATASET_MISSING_ERROR;
            else if (strcmp(v, "zero") == 0)
                args->csv.missing = MS_DATASET_MISSING_ZERO;
            else if (strcmp(v, "mean") == 0)
                args->csv.missing = MS_DATASET_MISSING_MEAN;
            else
                return ms_cli_usage_error("--missing",
                                          "must be error, zero or mean");
            continue;
        }
        if (ms_cli_arg_value(argc, argv, &i, "--split", &v, &missing)) {
            char *end = NULL;
            double f = missing ? 0 : strtod(v, &end);
            if (missing || end == v || *end || !(f > 0 && f < 1))
                return ms_cli_usage_error("--split",
                                          "must be a fraction between 0 and "
                                          "1 (0.2: 80%% train, 20%% test)");
            args->csv.split = f;
            continue;
        }
        if (ms_cli_arg_value(argc, argv, &i, "--categorical", &v, &missing)) {
            if (missing || !*v)
                return ms_cli_usage_error("--categorical",
                                          "needs column names (A,B)");
            free(args->categorical_text);
            args->categorical_text = strdup(v);
            if (!args->categorical_text)
                return ms_cli_failure("train", "out of memory");
            args->csv.n_categorical = 0;
            char *save = NULL;
            for (char *t = strtok_r(args->categorical_text, ",", &save); t;
                 t = strtok_r(NULL, ",", &save)) {
                if (args->csv.n_categorical == S_MAX_CATEGORICAL)
                    return ms_cli_usage_error("--categorical",
                                              "at most %d columns",
                                              S_MAX_CATEGORICAL);
                for (int32_t k = 0; k < args->csv.n_categorical; k++)
                    if (strcmp(args->categorical[k], t) == 0)
                        return ms_cli_usage_error("--categorical",
                                                  "'%s' is listed twice", t);
                args->categorical[args->csv.n_categorical++] = t;
            }
            args->csv.categorical = args->categorical;
            continue;
        }
        if (strcmp(arg, "--json") == 0) {
            args->json_out = true;
            continue;
        }
        if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            args->quiet = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return ms_cli_usage_error(arg, "unexpected argument (train "
                                           "takes options only)");
        // A training parameter: --name VALUE, --name=VALUE, or a bare
        // boolean flag.
        char key[128];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t) (eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof key)
            return ms_cli_usage_error(arg, "unknown option");
        memcpy(key, arg + 2, len);
        key[len] = '\0';
        ms_config_param_type_t type = ms_config_param_type(key);
        if (type == MS_CONFIG_PARAM_UNKNOWN)
            return ms_cli_usage_error(
                arg, "unknown option (see meshsweep train --help)");
        const char *text;
        if (eq)
            text = eq + 1;
        else if (type == MS_CONFIG_PARAM_BOOL &&
                 (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0))
            text = "";
        else if (i + 1 >= argc)
            return ms_cli_usage_error(arg, "needs a value");
        else
            text = argv[++i];
        char name[128]; // the key in the table's spelling
        snprintf(name, sizeof name, "%s", key);
        for (char *p = name; *p; p++)
            if (*p == '-')
                *p = '_';
        if (strcmp(name, "hidden_sizes") == 0) {
            if (!text[strspn(text, " ")])
                return ms_cli_usage_error("--hidden-sizes",
                                          "needs at least one size (100,10); "
                                          "for no hidden layer give "
                                          "--hidden-layers 0");
            args->sizes_given = true;
        }
        if (strcmp(name, "hidden_layers") == 0 || strcmp(name, "width") == 0)
            args->layers_given = true;
        if (args->sizes_given && args->layers_given)
            return ms_cli_usage_error("--hidden-sizes",
                                      "give either --hidden-sizes or "
                                      "--hidden-layers/--width, not both");
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_config_set_param_string(&args->cfg, key, text, &diag);
        if (rc != MS_OK) {
            char where[160];
            snprintf(where, sizeof where, "--%s", key);
            for (char *p = where; *p; p++)
                if (*p == '_')
                    *p = '-';
            return ms_cli_usage_error(
                where, "%s", diag.reason[0] ? diag.reason : ms_strerror(rc));
        }
        if (strcmp(name, "init") == 0)
            args->init_given = true;
    }
    if (!args->init_given)
        args->cfg.init = ms_init_default_for(args->cfg.activation);
    if (args->dataset && (args->train_path || args->test_path || args->file))
        return ms_cli_usage_error("--dataset", "give either --dataset or "
                                               "--train/--test or --file");
    if (args->file && (args->train_path || args->test_path))
        return ms_cli_usage_error("--file",
                                  "give either --file or --train/--test");
    if (args->csv.split > 0 && !args->file)
        return ms_cli_usage_error("--split", "splits one file: give --file");
    if (args->file) {
        args->train_path = args->test_path = args->file;
        if (args->csv.split == 0)
            args->csv.split = 0.2; // the 2015 system's 80/20
    }
    if (args->label && args->csv.label_index >= 0)
        return ms_cli_usage_error("--label-index",
                                  "give either --label or --label-index, "
                                  "not both");
    args->csv.label = args->label;
    if ((args->train_path != NULL) != (args->test_path != NULL))
        return ms_cli_usage_error(args->train_path ? "--test" : "--train",
                                  "--train and --test go together");
    if ((args->train_labels != NULL) != (args->test_labels != NULL))
        return ms_cli_usage_error(
            args->train_labels ? "--test-labels" : "--train-labels",
            "--train-labels and --test-labels go together");
    if (args->train_labels && !args->train_path)
        return ms_cli_usage_error("--train-labels", "needs --train");
    if (!args->train_path && !args->dataset)
        args->dataset = "fashion-mnist";
    if (args->save_format && strcmp(args->save_format, "native") != 0 &&
        strcmp(args->save_format, "onnx") != 0)
        return ms_cli_usage_error("--format", "'%s': native or onnx",
                                  args->save_format);
    if (args->save_format && !args->save_path)
        return ms_cli_usage_error("--format", "needs --save FILE");
    if (args->save_path && args->cfg.kind == MS_KIND_NOOP)
        return ms_cli_usage_error("--save",
                                  "a noop run trains no network to save");
    if (args->save_path) {
        int bad = s_check_save_path(args->save_path);
        if (bad != MS_CLI_EXIT_OK)
            return bad;
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_train_config_check(&args->cfg, &diag);
    if (rc != MS_OK) {
        char where[MS_DIAG_WHERE_MAX + 8];
        snprintf(where, sizeof where, "--%s", diag.where);
        for (char *p = where; *p; p++)
            if (*p == '_')
                *p = '-';
        return ms_cli_usage_error(diag.where[0] ? where : "train", "%s",
                                  diag.reason);
    }
    if (args->cfg.warmup_epochs > args->cfg.epochs)
        fprintf(stderr,
                "meshsweep: warning: --warmup-epochs %g is more than --epochs "
                "%d: the learning rate never leaves warm-up\n",
                args->cfg.warmup_epochs, (int) args->cfg.epochs);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Load and prepare train / val / test as a worker does; *transform gets
//  the input scaling (fitted to the training part; caller clears it).
//  Returns MS_OK or an error with diag.

static int
s_load_data(const s_train_args_t *args, ms_dataset_t **train,
            ms_dataset_t **val, ms_dataset_t **test,
            ms_dataset_transform_t *transform, ms_diag_t *diag)
{
    memset(transform, 0, sizeof *transform);
    ms_dataset_t *full = NULL;
    *train = *val = *test = NULL;
    int rc;
    if (args->train_path && args->train_labels) {
        rc = ms_dataset_load(&full, args->train_path, args->train_labels,
                             args->label, diag);
        if (rc == MS_OK)
            rc = ms_dataset_load(test, args->test_path, args->test_labels,
                                 args->label, diag);
    } else if (args->train_path)
        rc = ms_dataset_load_csv_files(args->train_path, args->test_path,
                                       &args->csv, &full, test, diag);
    else
        rc = ms_dataset_load_builtin(args->dataset, &full, test, diag);
    if (rc == MS_OK)
        rc = ms_dataset_check(
            full, args->train_path ? args->train_path : args->dataset, 0, diag);
    if (rc == MS_OK)
        rc = ms_dataset_check(*test,
                              args->test_path ? args->test_path : args->dataset,
                              full->n_classes, diag);
    if (rc == MS_OK && full->n_features != (*test)->n_features)
        rc = ms_diag_set_code(diag, MS_ERR_DATASET,
                              args->test_path ? args->test_path : args->dataset,
                              "%d features, the training set has %d",
                              (*test)->n_features, full->n_features);
    if (rc == MS_OK)
        rc = ms_dataset_split_checked(full, args->cfg.validation_split,
                                      (uint64_t) args->cfg.seed, train, val,
                                      diag);
    if (rc == MS_OK) // statistics of the training part only
        rc = ms_dataset_transform_fit(*train, args->cfg.scale, transform);
    if (rc == MS_OK) {
        ms_dataset_transform_apply(transform, *val);
        ms_dataset_transform_apply(transform, *test);
        ms_dataset_transform_apply(transform, *train);
    }
    ms_dataset_destroy(&full);
    if (rc != MS_OK) {
        ms_dataset_destroy(train);
        ms_dataset_destroy(val);
        ms_dataset_destroy(test);
        ms_dataset_transform_clear(transform);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  --save: write the trained network with its metadata (the config and
//  the input transform, which moves into the metadata). Returns an exit
//  code.

static int
s_save(const s_train_args_t *args, const ms_trainer_t *trainer,
       const ms_dataset_t *train, ms_dataset_transform_t *transform)
{
    uint32_t sizes[MS_MAX_HIDDEN_LAYERS + 2];
    int32_t n_sizes =
        ms_trainer_layer_sizes(trainer, sizes, MS_MAX_HIDDEN_LAYERS + 2);
    int64_t n_params = 0;
    const float *params = ms_trainer_params(trainer, &n_params);
    ms_weights_meta_t *meta = ms_weights_meta_new();
    if (!meta)
        return ms_cli_failure("--save", "out of memory");
    meta->cfg = args->cfg;
    meta->numerics = MS_ENGINE_NUMERICS_VERSION;
    if ((train->class_names &&
         ms_weights_meta_set_classes(meta, train->class_names,
                                     train->n_classes) != MS_OK) ||
        ms_weights_meta_set_csv(meta, train) != MS_OK) {
        ms_weights_meta_destroy(&meta);
        return ms_cli_failure("--save", "out of memory");
    }
    meta->input = *transform;
    memset(transform, 0, sizeof *transform);
    meta->n_outputs = n_sizes >= 2 ? (int32_t) sizes[n_sizes - 1] : 0;
    const char *ext = strrchr(args->save_path, '.');
    bool onnx = args->save_format ? strcmp(args->save_format, "onnx") == 0
                                  : ext && strcmp(ext, ".onnx") == 0;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = MS_ERR_NOMEM;
    char *meta_json = NULL;
    if (n_sizes < 2 || !params)
        rc = ms_diag_set(&diag, "--save", "the run has no network");
    else if (onnx)
        rc = ms_onnx_write_file(args->save_path, meta, params, n_params, &diag);
    else if ((meta_json = ms_weights_meta_encode(meta)))
        rc = ms_weights_write_file(args->save_path, sizes, (uint32_t) n_sizes,
                                   params, n_params, meta_json, &diag);
    free(meta_json);
    ms_weights_meta_destroy(&meta);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&diag, rc, args->save_path);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  JSON number for a metric, null when NaN or infinite.

static json_t *
s_metric(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

//  --------------------------------------------------------------------------
//  ms_platform_fields callback: add one field to a JSON object.

static void
s_platform_field(void *arg, const char *name, const char *value)
{
    json_object_set_new((json_t *) arg, name, json_string(value));
}

//  --------------------------------------------------------------------------
//  The row's platform object (fingerprint fields, blas_config and
//  calibration_gflops) and its fingerprint: BLAKE2b-256 of the canonical
//  object without calibration_gflops (DESIGN.md "Verification"), so a
//  row of `meshsweep train` and a worker's row on one machine agree.

static void
s_platform_row_fields(const ms_backend_t *backend, json_t **platform,
                      json_t **fingerprint)
{
    ms_platform_t p;
    ms_platform_detect(&p, backend);
    json_t *obj = json_object();
    ms_platform_fields(&p, s_platform_field, obj);
    // As a worker records it (node/work/ms_worker.c): the fingerprint fields
    // plus blas_config, all hashed; calibration_gflops added after.
    json_object_set_new(obj, "blas_config", json_string(p.blas_config));
    char *canon = ms_wire_canon_dump(obj);
    if (canon) {
        ms_hash_t h;
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_bytes(canon, strlen(canon), &h);
        ms_hash_hex(&h, hex);
        *fingerprint = json_string(hex);
        free(canon);
    } else
        *fingerprint = json_null();
    json_object_set_new(obj, "calibration_gflops",
                        json_real(ms_platform_calibrate()));
    *platform = obj;
}

//  --------------------------------------------------------------------------
//  Build the result row of a finished run.

static json_t *
s_result_row(const s_train_args_t *args, const ms_run_result_t *res,
             const char *weights_hex, ms_backend_t *backend)
{
    json_t *config = ms_config_encode_json(&args->cfg);
    if (!config)
        return NULL;
    size_t n_canon = 0;
    char *canon = ms_wire_canon_dump_len(config, &n_canon);
    ms_hasher_t hasher;
    ms_hash_t task_id, zero = {{0}};
    ms_hasher_init(&hasher);
    ms_hasher_update(&hasher, zero.bytes, sizeof zero.bytes);
    ms_hasher_update(&hasher, canon, canon ? n_canon : 0);
    ms_hasher_final(&hasher, &task_id);
    free(canon);
    char task_hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&task_id, task_hex);

    json_t *curve = json_array();
    for (int32_t e = 0; e < res->n_curve; e++) {
        const ms_epoch_metrics_t *m = &res->curve[e];
        json_array_append_new(
            curve,
            json_pack("{s:i, s:o, s:o, s:o, s:f}", "epoch", (int) m->epoch,
                      "train_loss", s_metric(m->train_loss), "val_loss",
                      s_metric(m->val_loss), "val_accuracy",
                      s_metric(m->val_accuracy), "seconds", m->seconds));
    }
    json_t *grad_norms = json_array();
    for (int32_t l = 0; l < res->n_grad_norms; l++)
        json_array_append_new(grad_norms, s_metric(res->grad_norms[l]));
    const struct passwd *pw = getpwuid(getuid());
    const char *user = pw && pw->pw_name ? pw->pw_name : getenv("USER");
    json_t *platform = NULL, *fingerprint = NULL;
    s_platform_row_fields(backend, &platform, &fingerprint);
    json_t *row = json_pack(
        "{s:s, s:n, s:o, s:n, s:s, s:s, s:o, s:i, s:f, s:f, s:o, s:o, s:o, "
        "s:o, s:I, s:o, s:o, s:s, s:s, s:i, s:b, s:o, s:o}",
        "task_id", task_hex, "sweep_id", "config", config, "node_id",
        "operator", user && *user ? user : "local", "status",
        ms_run_status_name(res->status), "error",
        res->status == MS_RUN_OK ? json_null() : json_string(res->error),
        "epochs", (int) res->epochs, "train_seconds", res->train_seconds,
        "seconds_per_epoch", res->seconds_per_epoch, "val_accuracy",
        s_metric(res->val_accuracy), "val_loss", s_metric(res->val_loss),
        "test_accuracy", s_metric(res->test_accuracy), "test_loss",
        s_metric(res->test_loss), "params", (json_int_t) res->params,
        "platform", platform, "fingerprint", fingerprint, "weights_digest",
        weights_hex, "verdict", "pending", "verdict_revision", 0, "counted", 1,
        "curve", curve, "grad_norms", grad_norms);
    return row;
}

//  --------------------------------------------------------------------------
//  A number with prec decimals; a non-finite one as "nan", "inf" or
//  "-inf" (printf would write "-nan" for some NaNs: the sign of a NaN
//  means nothing to a reader).

static const char *
s_fmt_num(char *out, size_t n, double v, int prec)
{
    if (isnan(v))
        snprintf(out, n, "nan");
    else if (isinf(v))
        snprintf(out, n, "%sinf", v < 0 ? "-" : "");
    else
        snprintf(out, n, "%.*f", prec, v);
    return out;
}

//  --------------------------------------------------------------------------
//  An accuracy as s_fmt_num writes it, or "-" for a regression run (it
//  has none; the engine's NaN would read as a failure).

static const char *
s_fmt_accuracy(char *out, size_t n, double v, bool classify)
{
    if (!classify) {
        snprintf(out, n, "-");
        return out;
    }
    return s_fmt_num(out, n, v, 4);
}

//  --------------------------------------------------------------------------
//  Print one epoch line.

static void
s_print_epoch(FILE *out, const ms_epoch_metrics_t *m, int32_t n_epochs,
              bool classify)
{
    char tl[32], vl[32], va[32];
    fprintf(out,
            "epoch %3d/%-3d  train_loss %s  val_loss %s  val_acc %s  "
            "%.2f s\n",
            (int) m->epoch, (int) n_epochs,
            s_fmt_num(tl, sizeof tl, m->train_loss, 4),
            s_fmt_num(vl, sizeof vl, m->val_loss, 4),
            s_fmt_accuracy(va, sizeof va, m->val_accuracy, classify),
            m->seconds);
    fflush(out);
}

//  --------------------------------------------------------------------------
//  The status line's text: "ok", "diverged at epoch 3 (train loss nan)"
//  (the engine's reason already names the status, so it is not repeated),
//  or "failed: REASON".

static void
s_status_text(const ms_run_result_t *res, char *out, size_t n)
{
    if (res->status == MS_RUN_OK) {
        snprintf(out, n, "%s", ms_run_status_name(res->status));
        return;
    }
    if (res->status != MS_RUN_DIVERGED) {
        snprintf(out, n, "%s: %s", ms_run_status_name(res->status), res->error);
        return;
    }
    snprintf(out, n, "%s", res->error[0] ? res->error : "diverged");
    if (res->n_curve > 0) {
        const ms_epoch_metrics_t *last = &res->curve[res->n_curve - 1];
        bool train_bad = !isfinite(last->train_loss);
        char num[32];
        size_t used = strlen(out);
        snprintf(out + used, n - used, " (%s loss %s)",
                 train_bad ? "train" : "val",
                 s_fmt_num(num, sizeof num,
                           train_bad ? last->train_loss : last->val_loss, 4));
    }
}

//  --------------------------------------------------------------------------
//  meshsweep train

int
ms_cli_train_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_train_usage(stdout), MS_CLI_EXIT_OK;
    s_train_args_t *args = calloc(1, sizeof *args);
    if (!args)
        return ms_cli_failure(NULL, "out of memory");
    int exit_code = s_parse_args(argc, argv, args);
    if (exit_code != MS_CLI_EXIT_OK) {
        free(args->categorical_text);
        free(args);
        return exit_code;
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_dataset_t *train = NULL, *val = NULL, *test = NULL;
    ms_dataset_transform_t transform;
    memset(&transform, 0, sizeof transform);
    ms_backend_t *backend = NULL;
    ms_trainer_t *trainer = NULL;
    ms_run_result_t result;
    memset(&result, 0, sizeof result);
    json_t *row = NULL;
    FILE *progress = args->json_out ? stderr : stdout;
    bool classify = false; // classification data (else regression)

    int rc = s_load_data(args, &train, &val, &test, &transform, &diag);
    if (rc != MS_OK) {
        exit_code = ms_cli_diag_exit(&diag, rc, "dataset");
        if (rc == MS_ERR_IO)
            exit_code = MS_CLI_EXIT_USAGE; // a data file named by the user
                                           // is missing or not a file: bad
                                           // input (DESIGN.md: exit 2)
        goto cleanup;
    }
    classify = train->n_classes >= 2;
    rc = ms_backend_open(&backend, args->backend, (int) args->threads, &diag);
    if (rc != MS_OK) {
        exit_code = ms_cli_diag_exit(&diag, rc, "--backend");
        goto cleanup;
    }
    rc =
        ms_trainer_open(&trainer, &args->cfg, train, val, test, backend, &diag);
    if (rc != MS_OK) {
        exit_code = ms_cli_diag_exit(&diag, rc, "train");
        goto cleanup;
    }
    if (!args->quiet)
        fprintf(progress,
                "training %lld samples (%lld validation), %d "
                "features, %d classes, %s backend\n",
                (long long) train->n_samples, (long long) val->n_samples,
                (int) train->n_features, (int) train->n_classes,
                ms_backend_name(backend));
    while (!ms_trainer_done(trainer)) {
        ms_epoch_metrics_t m;
        rc = ms_trainer_epoch(trainer, &m);
        if (rc != MS_OK) {
            exit_code =
                ms_cli_failure("train", "epoch failed: %s", ms_strerror(rc));
            goto cleanup;
        }
        if (!args->quiet)
            s_print_epoch(progress, &m, args->cfg.epochs, classify);
    }
    rc = ms_trainer_finish(trainer, &result);
    if (rc != MS_OK) {
        exit_code = ms_cli_failure("train", "%s", ms_strerror(rc));
        goto cleanup;
    }
    int64_t n_params = 0;
    const float *params = ms_trainer_params(trainer, &n_params);
    ms_hash_t digest;
    ms_hash_bytes(params, (size_t) n_params * sizeof(float), &digest);
    char digest_hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&digest, digest_hex);

    if (args->json_out) {
        row = s_result_row(args, &result, digest_hex, backend);
        //  String labels: the class names, class i at index i.
        json_t *classes = row && train->class_names ? json_array() : NULL;
        for (int32_t c = 0; classes && c < train->n_classes; c++)
            json_array_append_new(classes,
                                  json_string(ms_dataset_class_name(train, c)));
        if (classes)
            json_object_set_new(row, "classes", classes);
        if (!row) {
            exit_code = ms_cli_failure("train", "out of memory");
            goto cleanup;
        }
        exit_code = ms_cli_json_print(stdout, row);
        if (exit_code != MS_CLI_EXIT_OK)
            goto cleanup;
    } else {
        char status[sizeof result.error + 64], num[32];
        s_status_text(&result, status, sizeof status);
        printf("status         %s\n", status);
        printf("test_accuracy  %s\n",
               s_fmt_accuracy(num, sizeof num, result.test_accuracy, classify));
        printf("test_loss      %s\n",
               s_fmt_num(num, sizeof num, result.test_loss, 4));
        printf("val_accuracy   %s\n",
               s_fmt_accuracy(num, sizeof num, result.val_accuracy, classify));
        printf("params         %lld\n", (long long) result.params);
        printf("epochs         %d\n", (int) result.epochs);
        printf("s/epoch        %.3f\n", result.seconds_per_epoch);
        printf("weights        %.12s\n", digest_hex);
        if (train->class_names) {
            printf("classes        ");
            for (int32_t c = 0; c < train->n_classes; c++)
                printf("%s%s", c ? ", " : "", ms_dataset_class_name(train, c));
            printf("\n");
        }
        //  Epoch 1's weight-gradient norms at the first and the last
        //  layer (all of them in --json): a vanishing gradient shows.
        if (result.n_grad_norms > 0) {
            char g[2][32];
            int32_t last = result.n_grad_norms - 1;
            double v[2] = {result.grad_norms[0], result.grad_norms[last]};
            for (int k = 0; k < 2; k++)
                if (isfinite(v[k]))
                    snprintf(g[k], sizeof g[k], "%.3g", v[k]);
                else
                    s_fmt_num(g[k], sizeof g[k], v[k], 0);
            printf("grad_norms     %s (layer 0) .. %s (layer %d), epoch 1\n",
                   g[0], g[1], (int) last);
        }
    }
    exit_code =
        result.status == MS_RUN_FAILED ? MS_CLI_EXIT_FAILURE : MS_CLI_EXIT_OK;
    if (args->save_path && result.status == MS_RUN_OK)
        exit_code = s_save(args, trainer, train, &transform);
    else if (args->save_path) {
        //  The file asked for is not there: not a success.
        fprintf(stderr, "meshsweep: --save: not written: the run is %s\n",
                ms_run_status_name(result.status));
        exit_code = MS_CLI_EXIT_FAILURE;
    }
cleanup:
    ms_dataset_transform_clear(&transform);
    json_decref(row);
    ms_run_result_clear(&result);
    ms_trainer_destroy(&trainer);
    ms_backend_destroy(&backend);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&val);
    ms_dataset_destroy(&test);
    if (args)
        free(args->categorical_text);
    free(args);
    return exit_code;
}
