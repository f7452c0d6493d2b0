/*  =========================================================================
    ms_cli_predict - meshsweep predict: evaluate a saved network (native
    weights file or ONNX) on data, printing accuracy or predictions

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Both formats are evaluated by the engine: the file's metadata
    (proto/ms_weights_meta.h) gives the config, the input scaling and the
    class names; the parameter block comes from the native file, or from
    the initializers of an ONNX file that meshsweep wrote
    (ms_onnx_decode; an ONNX file of another tool is refused, since
    nothing in it says which of our networks it is). The raw data is
    scaled with the saved transform, then:

    - accuracy and mean loss by ms_trainer_evaluate, the function a run's
      test metrics and a verifier's re-evaluation use, so the figures are
      the run's own for the same data;
    - with --predictions, each row's predicted class (its name when the
      data named them) and its probability, from ms_mlp_forward.

    A CSV file is read as the training CSV was: the metadata keeps its
    schema (the header, the label column, the classes, the one-hot
    categories, the missing-value rule and fills), and
    ms_dataset_load_csv_like reads the file with it. Columns are matched
    by name (another order is fine; a column training did not have, or a
    feature column missing, is refused naming it); labels map to the
    training classes (an unknown one is refused naming row, column and
    the classes), so a file that lacks a class scores as `train --test`
    scores it. A file whose metadata has no schema (written before it was
    kept, or trained on IDX) is read as a new CSV file, its classes and
    columns its own, with a note on stderr.

    Data with labels (an IDX pair, or a CSV with its label column) gives
    the accuracy; IDX images alone (--data without --labels) and a CSV
    without the label column are unlabelled rows, and then each row's
    prediction is printed.
*/
#include "ms_cli.h"
#include "ms_backend.h"
#include "ms_dataset.h"
#include "ms_mlp.h"
#include "ms_platform.h"
#include "ms_train.h"
#include "ms_weights.h"
#include "ms_weights_meta.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_PREDICT_ROWS 256 // rows per forward pass of --predictions

//  Command-line state of one `meshsweep predict`.
typedef struct {
    const char *weights; // --weights FILE
    const char *data;    // --data FILE (CSV or IDX images)
    const char *labels;  // --labels FILE (IDX labels)
    const char *label;   // --label NAME (CSV column)
    const char *dataset; // --dataset NAME (its test set)
    const char *backend; // --backend
    long threads;        // --threads
    bool predictions;    // --predictions: one line per row
    bool json_out;       // --json
} s_predict_args_t;

//  --------------------------------------------------------------------------
//  Help for predict.

static void
s_usage(FILE *out)
{
    fprintf(out, "usage: meshsweep predict --weights FILE (--data FILE "
                 "[--labels FILE] [--label NAME]\n"
                 "                         | --dataset NAME) [--predictions] "
                 "[--json]\n"
                 "                         [--backend auto|cpu|cuda] "
                 "[--threads N]\n"
                 "\n"
                 "Evaluate a saved network (meshsweep train --save, meshsweep "
                 "weights):\nthe native weights file or meshsweep's ONNX file. "
                 "The raw data is\nscaled as the training run scaled it (the "
                 "file's metadata), then the\naccuracy and mean loss are "
                 "printed; --predictions adds one line per\nrow: its index, "
                 "the predicted class (its name when known) and the\n"
                 "probability.\n"
                 "\n"
                 "  --weights FILE   the network (.onnx or native)\n"
                 "  --data FILE      CSV with a header, read as the training "
                 "CSV was (the\n"
                 "                   weights keep its columns, classes, "
                 "categories and\n"
                 "                   missing-value rule; columns match by "
                 "name); without\n"
                 "                   the label column: predictions only. Or "
                 "IDX images with\n"
                 "  --labels FILE    their IDX labels (without: predictions "
                 "only)\n"
                 "  --label NAME     the CSV label column, for weights that "
                 "keep no CSV\n"
                 "                   schema (default \"label\")\n"
                 "  --dataset NAME   the test set of a built-in dataset\n"
                 "  --predictions    print each row's prediction\n"
                 "  --json           one JSON document\n");
}

//  --------------------------------------------------------------------------
//  Parse the command line. Returns an exit code (0 = go on).

static int
s_parse(int argc, char **argv, s_predict_args_t *a)
{
    a->backend = "auto";
    a->threads = 1;
    const ms_cli_value_opt_t opts[] = {
        {"--weights", &a->weights}, {"--data", &a->data},
        {"--labels", &a->labels},   {"--label", &a->label},
        {"--dataset", &a->dataset}, {"--backend", &a->backend}};
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        int bad = MS_CLI_EXIT_OK;
        if (ms_cli_value_option(argc, argv, &i, opts,
                                sizeof opts / sizeof *opts, &bad)) {
            if (bad != MS_CLI_EXIT_OK)
                return bad;
            continue;
        }
        if (ms_cli_arg_value(argc, argv, &i, "--threads", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--threads", "needs a number");
            if (ms_cli_parse_int("--threads", v, 1, 256, &a->threads))
                return MS_CLI_EXIT_USAGE;
        } else if (strcmp(argv[i], "--predictions") == 0)
            a->predictions = true;
        else if (strcmp(argv[i], "--json") == 0)
            a->json_out = true;
        else
            return ms_cli_usage_error(argv[i], "unknown option (see meshsweep "
                                               "predict --help)");
    }
    if (!a->weights)
        return ms_cli_usage_error("predict", "--weights FILE is required");
    if (!a->data && !a->dataset)
        return ms_cli_usage_error("predict", "give --data FILE or --dataset "
                                             "NAME");
    if (a->data && a->dataset)
        return ms_cli_usage_error("--dataset", "give either --data or "
                                               "--dataset");
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Load the data named by the arguments. Returns MS_OK or an error (diag).

static int
s_load_data(const s_predict_args_t *a, const ms_weights_meta_t *meta,
            ms_dataset_t **data, ms_diag_t *diag)
{
    *data = NULL;
    if (a->data && !a->labels) {
        // IDX images alone (raw: 00 00 08, or gzip: 1f 8b) are unlabelled.
        unsigned char head[4] = {0};
        FILE *f = fopen(a->data, "rb");
        size_t got = f ? fread(head, 1, sizeof head, f) : 0;
        if (f)
            fclose(f);
        if (got == 4 && ((head[0] == 0x1f && head[1] == 0x8b) ||
                         (head[0] == 0 && head[1] == 0 && head[2] == 0x08)))
            return ms_dataset_load_idx(data, a->data, NULL, diag);
    }
    if (a->data && !a->labels && meta->csv) {
        //  The training CSV's schema: its columns, classes, categories
        //  and missing-value rule.
        ms_dataset_csv_schema_t sc;
        ms_dataset_csv_schema(meta->csv, &sc);
        const char *label = sc.column_names[sc.label_column];
        if (a->label && strcmp(a->label, label) != 0)
            return ms_diag_set_code(diag, MS_ERR_DATASET, "--label",
                                    "the network was trained with label "
                                    "column \"%s\", not \"%s\" (the "
                                    "weights file keeps it; --label is not "
                                    "needed)",
                                    label, a->label);
        return ms_dataset_load_csv_like(data, a->data, NULL, meta->csv, diag);
    }
    if (a->data && !a->labels)
        fprintf(stderr,
                "meshsweep: note: %s keeps no CSV schema (written before "
                "weights files kept it, or not trained on CSV): %s is read "
                "as a new CSV file, its classes and columns its own\n",
                a->weights, a->data);
    if (a->data)
        return ms_dataset_load(data, a->data, a->labels, a->label, diag);
    ms_dataset_t *train = NULL;
    int rc = ms_dataset_load_builtin(a->dataset, &train, data, diag);
    ms_dataset_destroy(&train);
    return rc;
}

//  --------------------------------------------------------------------------
//  The predicted class and its probability for each row (--predictions),
//  through the engine's forward pass. Caller frees *classes and *probs.

static int
s_predict_rows(const ms_weights_meta_t *meta, const ms_weights_t *w,
               const ms_dataset_t *data, ms_backend_t *backend,
               int32_t **classes, float **probs)
{
    int32_t n_out = meta->n_outputs;
    ms_mlp_t *mlp = NULL;
    int rc = ms_mlp_open(&mlp, &meta->cfg, data->n_features, n_out,
                         S_PREDICT_ROWS, backend);
    if (rc != MS_OK)
        return rc;
    const ms_backend_ops_t *ops = ms_backend_ops(backend);
    *classes = malloc((size_t) (data->n_samples + 1) * sizeof **classes);
    *probs = malloc((size_t) (data->n_samples + 1) * sizeof **probs);
    float *out = malloc((size_t) S_PREDICT_ROWS * (size_t) n_out * sizeof *out);
    if (!*classes || !*probs || !out)
        rc = MS_ERR_NOMEM;
    if (rc == MS_OK)
        rc = ops->upload(backend, ms_mlp_params(mlp), w->params,
                         (size_t) w->n_params * sizeof(float));
    for (int64_t r0 = 0; rc == MS_OK && r0 < data->n_samples;
         r0 += S_PREDICT_ROWS) {
        int64_t rows = data->n_samples - r0;
        if (rows > S_PREDICT_ROWS)
            rows = S_PREDICT_ROWS;
        rc = ops->upload(
            backend, ms_mlp_input(mlp), data->x + r0 * data->n_features,
            (size_t) rows * (size_t) data->n_features * sizeof(float));
        if (rc == MS_OK)
            rc = ms_mlp_forward(mlp, ms_mlp_params(mlp), rows, NULL);
        if (rc == MS_OK)
            rc = ops->download(backend, out, ms_mlp_output(mlp),
                               (size_t) rows * (size_t) n_out * sizeof(float));
        for (int64_t i = 0; rc == MS_OK && i < rows; i++) {
            const float *z = out + i * n_out;
            int32_t best = 0;
            for (int32_t c = 1; c < n_out; c++)
                if (z[c] > z[best])
                    best = c;
            double sum = 0;
            for (int32_t c = 0; c < n_out; c++)
                sum += exp((double) z[c] - z[best]);
            (*classes)[r0 + i] = best;
            (*probs)[r0 + i] = meta->cfg.loss == MS_LOSS_CROSS_ENTROPY
                                   ? (float) (1.0 / sum)
                                   : z[0];
        }
    }
    free(out);
    ms_mlp_destroy(&mlp);
    return rc;
}

//  --------------------------------------------------------------------------
//  Print the figures (and predictions) as text or JSON.

static int
s_print(const s_predict_args_t *a, const ms_weights_meta_t *meta,
        const ms_dataset_t *data, double loss, double accuracy,
        const int32_t *classes, const float *probs)
{
    bool classify = meta->cfg.loss == MS_LOSS_CROSS_ENTROPY;
    if (a->json_out) {
        json_t *doc = json_pack(
            "{s:I, s:o, s:o}", "rows", (json_int_t) data->n_samples, "accuracy",
            isfinite(accuracy) ? json_real(accuracy) : json_null(), "loss",
            isfinite(loss) ? json_real(loss) : json_null());
        if (classes) {
            json_t *list = json_array();
            for (int64_t i = 0; i < data->n_samples; i++) {
                json_t *p =
                    classify ? json_pack("{s:i, s:f}", "class", classes[i],
                                         "probability", (double) probs[i])
                             : json_pack("{s:f}", "value", (double) probs[i]);
                if (classify && classes[i] < meta->n_classes)
                    json_object_set_new(p, "name",
                                        json_string(meta->classes[classes[i]]));
                json_array_append_new(list, p);
            }
            json_object_set_new(doc, "predictions", list);
        }
        int code = ms_cli_json_print(stdout, doc);
        json_decref(doc);
        return code;
    }
    for (int64_t i = 0; classes && i < data->n_samples; i++) {
        if (!classify)
            printf("%lld %.6g\n", (long long) i, (double) probs[i]);
        else if (classes[i] < meta->n_classes)
            printf("%lld %d %s %.4f\n", (long long) i, classes[i],
                   meta->classes[classes[i]], (double) probs[i]);
        else
            printf("%lld %d %.4f\n", (long long) i, classes[i],
                   (double) probs[i]);
    }
    if (!isfinite(loss)) // unlabelled rows: the predictions only
        return MS_CLI_EXIT_OK;
    if (classify)
        printf("accuracy  %.4f (%lld rows)\n", accuracy,
               (long long) data->n_samples);
    printf("loss      %.4f\n", loss);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  meshsweep predict

int
ms_cli_predict_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_usage(stdout), MS_CLI_EXIT_OK;
    s_predict_args_t a;
    memset(&a, 0, sizeof a);
    int exit_code = s_parse(argc, argv, &a);
    if (exit_code != MS_CLI_EXIT_OK)
        return exit_code;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_weights_meta_t *meta = NULL;
    ms_weights_t *w = NULL;
    ms_dataset_t *data = NULL, *empty_val = NULL, *empty_test = NULL;
    ms_backend_t *backend = NULL;
    ms_trainer_t *trainer = NULL;
    int32_t *classes = NULL;
    float *probs = NULL;
    const char *data_name = a.data ? a.data : a.dataset;
    int rc = ms_weights_meta_read_file(a.weights, &meta, &w, &diag);
    if (rc != MS_OK) {
        exit_code = rc == MS_ERR_IO ? MS_CLI_EXIT_USAGE : ms_cli_exit_code(rc);
        ms_cli_diag_exit(&diag, rc, a.weights);
        goto cleanup;
    }
    if (meta->numerics > MS_ENGINE_NUMERICS_VERSION)
        fprintf(stderr,
                "meshsweep: note: %s was written by an engine of numerics "
                "version %lld, this one is version %d: its figures may "
                "differ from the training run's\n",
                a.weights, (long long) meta->numerics,
                MS_ENGINE_NUMERICS_VERSION);
    rc = s_load_data(&a, meta, &data, &diag);
    if (rc == MS_OK) // an IDX label out of range is the label file's
        rc = ms_dataset_check(data, a.labels ? a.labels : data_name,
                              meta->n_outputs, &diag);
    if (rc == MS_OK && data->n_features != meta->input.n_features)
        rc = ms_diag_set_code(&diag, MS_ERR_DATASET, data_name,
                              "%d features per row, the network of %s takes "
                              "%d",
                              data->n_features, a.weights,
                              meta->input.n_features);
    if (rc == MS_OK && data->n_samples < 1)
        rc = ms_diag_set_code(&diag, MS_ERR_DATASET, data_name, "no rows");
    bool classify = meta->cfg.loss == MS_LOSS_CROSS_ENTROPY;
    bool labelled = rc == MS_OK && (data->labels || data->targets);
    if (rc == MS_OK && labelled && classify != (data->n_classes >= 2))
        rc = ms_diag_set_code(&diag, MS_ERR_DATASET, data_name,
                              "%s data, the network is a %s network",
                              data->n_classes >= 2 ? "classification"
                                                   : "regression",
                              classify ? "classification" : "regression");
    if (rc != MS_OK) {
        exit_code = rc == MS_ERR_IO ? MS_CLI_EXIT_USAGE : ms_cli_exit_code(rc);
        ms_cli_diag_exit(&diag, rc, data_name);
        goto cleanup;
    }
    if (classify && labelled)
        data->n_classes = meta->n_outputs; // a test set may miss a class
    ms_dataset_transform_apply(&meta->input, data);
    rc = ms_backend_open(&backend, a.backend, (int) a.threads, &diag);
    double loss = NAN, accuracy = NAN;
    if (rc == MS_OK && labelled) {
        empty_val = ms_dataset_new(0, data->n_features, data->n_classes);
        empty_test = ms_dataset_new(0, data->n_features, data->n_classes);
        rc = empty_val && empty_test ? MS_OK : MS_ERR_NOMEM;
        if (rc == MS_OK)
            rc = ms_trainer_open(&trainer, &meta->cfg, data, empty_val,
                                 empty_test, backend, &diag);
        if (rc == MS_OK)
            rc =
                ms_trainer_evaluate(trainer, w->params, data, &loss, &accuracy);
    }
    if (rc == MS_OK && (a.predictions || !labelled))
        rc = s_predict_rows(meta, w, data, backend, &classes, &probs);
    if (rc != MS_OK) {
        exit_code = ms_cli_diag_exit(&diag, rc, "predict");
        goto cleanup;
    }
    exit_code = s_print(&a, meta, data, loss, accuracy, classes, probs);
cleanup:
    free(classes);
    free(probs);
    ms_trainer_destroy(&trainer);
    ms_backend_destroy(&backend);
    ms_dataset_destroy(&data);
    ms_dataset_destroy(&empty_val);
    ms_dataset_destroy(&empty_test);
    ms_weights_destroy(&w);
    ms_weights_meta_destroy(&meta);
    return exit_code;
}
