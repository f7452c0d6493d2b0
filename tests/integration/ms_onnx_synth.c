/*  =========================================================================
    ms_onnx_synth - write the ONNX model of a network with random
    parameters, of any architecture the exporter knows (residual blocks,
    layer and batch norm, rezero), for ms_onnx_graph_test: the graph is
    checked against the layer contract without a trained network, so
    the export of residual and normalised networks is tested before the
    engine trains them

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    usage: ms_onnx_synth OUT.onnx ARCH NORM RESIDUAL_SCALE ACTIVATION SCALE
                         N_HIDDEN WIDTH BLOCK_LAYERS N_IN N_OUT SEED
*/
#include "ms_config.h"
#include "ms_onnx.h"
#include "ms_param_layout.h"
#include "ms_rng.h"
#include "ms_weights_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
    if (argc != 13) {
        fprintf(stderr, "usage: ms_onnx_synth OUT.onnx ARCH NORM "
                        "RESIDUAL_SCALE ACTIVATION SCALE N_HIDDEN WIDTH "
                        "BLOCK_LAYERS N_IN N_OUT SEED\n");
        return 2;
    }
    ms_weights_meta_t *meta = ms_weights_meta_new();
    if (!meta)
        return 1;
    ms_train_config_t *cfg = &meta->cfg;
    int n_in = atoi(argv[10]);
    if (ms_train_config_set_uniform(cfg, atoi(argv[7]), atoi(argv[8])) ||
        ms_architecture_parse(argv[2], &cfg->architecture) ||
        ms_norm_parse(argv[3], &cfg->norm) ||
        ms_residual_scale_parse(argv[4], &cfg->residual_scale) ||
        ms_activation_parse(argv[5], &cfg->activation) ||
        ms_scale_parse(argv[6], &cfg->scale) || n_in < 1) {
        fprintf(stderr, "ms_onnx_synth: bad arguments\n");
        return 2;
    }
    cfg->block_layers = atoi(argv[9]);
    cfg->leaky_slope = 0.1;
    meta->n_outputs = atoi(argv[11]);
    ms_rng_t rng;
    ms_rng_seed(&rng, (uint64_t) atoll(argv[12]), 1);
    ms_dataset_transform_t *t = &meta->input;
    t->scale = cfg->scale;
    t->n_features = n_in;
    if (t->scale != MS_SCALE_NONE) {
        t->shift = malloc((size_t) n_in * sizeof(double));
        t->divisor = malloc((size_t) n_in * sizeof(double));
        for (int j = 0; j < n_in; j++) {
            bool unit = t->scale == MS_SCALE_UNIT;
            t->shift[j] = unit ? 0.0 : 100.0 + 10.0 * ms_rng_uniform(&rng);
            t->divisor[j] = unit ? 255.0 : 40.0 + 20.0 * ms_rng_uniform(&rng);
        }
    }
    uint32_t sizes[MS_MAX_HIDDEN_LAYERS + 2];
    int32_t n_sizes =
        ms_weights_meta_layer_sizes(meta, sizes, MS_MAX_HIDDEN_LAYERS + 2);
    int64_t n = ms_param_layout_n_params(cfg, sizes, n_sizes);
    float *params = malloc((size_t) n * sizeof(float));
    if (!params)
        return 1;
    for (int64_t k = 0; k < n; k++)
        params[k] = (float) (ms_rng_uniform(&rng) - 0.5);
    // Norm gains near 1, variances positive, rezero scales non-zero.
    for (int32_t l = 1; l + 1 < n_sizes; l++) {
        ms_param_layer_t pl;
        ms_param_layout_layer(cfg, sizes, n_sizes, l, &pl);
        for (int32_t j = 0; pl.gamma >= 0 && j < pl.fan_in; j++)
            params[pl.gamma + j] += 1.0f;
        for (int32_t j = 0; pl.var >= 0 && j < pl.fan_in; j++)
            params[pl.var + j] += 1.0f;
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_onnx_write_file(argv[1], meta, params, n, &diag);
    if (rc != MS_OK)
        fprintf(stderr, "ms_onnx_synth: %s: %s\n", diag.where, diag.reason);
    free(params);
    ms_weights_meta_destroy(&meta);
    return rc == MS_OK ? 0 : 1;
}
