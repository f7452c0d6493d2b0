/*  =========================================================================
    ms_onnx_test - the ONNX exporter: the graph of each architecture, read
    back with protobuf-c (the generated onnx.pb-c.h of proto/, the module
    under test), and ms_onnx_decode's round trip and refusals

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_onnx.h"
#include "ms_param_layout.h"
#include "ms_weights_meta.h"

#include "onnx.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

//  A network under test: its metadata and a parameter block.
typedef struct {
    ms_weights_meta_t *meta;
    float *params;
    int64_t n_params;
} s_net_t;

//  --------------------------------------------------------------------------
//  Size net's parameter block for its metadata (ms_param_layout) and fill
//  it with 0.01 * k.

static void
s_net_params(s_net_t *net)
{
    uint32_t sizes[64];
    int32_t n = ms_weights_meta_layer_sizes(net->meta, sizes, 64);
    assert_true(n >= 2);
    net->n_params = ms_param_layout_n_params(&net->meta->cfg, sizes, n);
    free(net->params);
    net->params = malloc((size_t) net->n_params * sizeof(float));
    assert_non_null(net->params);
    for (int64_t k = 0; k < net->n_params; k++)
        net->params[k] = 0.01f * (float) k;
}

//  --------------------------------------------------------------------------
//  A plain relu network of n_hidden layers of width, n_in inputs (unit
//  scaling, x/255), n_out outputs; change cfg and call s_net_params again
//  for other architectures.

static void
s_net_open(s_net_t *net, int32_t n_hidden, int32_t width, int32_t n_in,
           int32_t n_out)
{
    memset(net, 0, sizeof *net);
    net->meta = ms_weights_meta_new();
    assert_non_null(net->meta);
    assert_int_equal(
        ms_train_config_set_uniform(&net->meta->cfg, n_hidden, width), MS_OK);
    net->meta->n_outputs = n_out;
    ms_dataset_transform_t *t = &net->meta->input;
    t->scale = MS_SCALE_UNIT;
    t->n_features = n_in;
    t->shift = calloc((size_t) n_in, sizeof(double));
    t->divisor = calloc((size_t) n_in, sizeof(double));
    for (int32_t j = 0; j < n_in; j++)
        t->divisor[j] = 255.0;
    s_net_params(net);
}

//  --------------------------------------------------------------------------
//  Free a network under test.

static void
s_net_close(s_net_t *net)
{
    ms_weights_meta_destroy(&net->meta);
    free(net->params);
    net->params = NULL;
}

//  --------------------------------------------------------------------------
//  Encode net and unpack the bytes with protobuf-c.

static Onnx__ModelProto *
s_export(const s_net_t *net)
{
    void *bytes = NULL;
    size_t n = 0;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_onnx_encode(net->meta, net->params, net->n_params, &bytes, &n,
                            &diag);
    if (rc != MS_OK)
        fail_msg("encode: %s: %s", diag.where, diag.reason);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, bytes);
    free(bytes);
    assert_non_null(m);
    return m;
}

//  --------------------------------------------------------------------------
//  The graph's ops joined by spaces.

static void
s_ops(const Onnx__ModelProto *m, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < m->graph->n_node; i++) {
        strncat(out, i ? " " : "", cap - strlen(out) - 1);
        strncat(out, m->graph->node[i]->op_type, cap - strlen(out) - 1);
    }
}

//  How many nodes of op the graph has.

static int
s_count(const Onnx__ModelProto *m, const char *op)
{
    int n = 0;
    for (size_t i = 0; i < m->graph->n_node; i++)
        n += strcmp(m->graph->node[i]->op_type, op) == 0;
    return n;
}

//  The initializer named name (fails the test when absent).

static const Onnx__TensorProto *
s_init(const Onnx__ModelProto *m, const char *name)
{
    for (size_t i = 0; i < m->graph->n_initializer; i++)
        if (strcmp(m->graph->initializer[i]->name, name) == 0)
            return m->graph->initializer[i];
    fail_msg("no initializer %s", name);
    return NULL;
}

//  The first node of op, or NULL.

static const Onnx__NodeProto *
s_node(const Onnx__ModelProto *m, const char *op)
{
    for (size_t i = 0; i < m->graph->n_node; i++)
        if (strcmp(m->graph->node[i]->op_type, op) == 0)
            return m->graph->node[i];
    return NULL;
}

//  An attribute of a node, or NULL.

static const Onnx__AttributeProto *
s_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; n && i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

//  The value of metadata_props[key], or NULL.

static const char *
s_prop(const Onnx__ModelProto *m, const char *key)
{
    for (size_t i = 0; i < m->n_metadata_props; i++)
        if (strcmp(m->metadata_props[i]->key, key) == 0)
            return m->metadata_props[i]->value;
    return NULL;
}

//  --------------------------------------------------------------------------
//  A plain relu network: model header, ops, Gemm's transB, the weights'
//  bytes and shapes, the outputs and the metadata.

static void
test_plain_relu(void **state)
{
    (void) state;
    s_net_t net;
    s_net_open(&net, 2, 5, 4, 3);
    snprintf(net.meta->task_id, sizeof net.meta->task_id, "%064d", 7);
    const char *names[] = {"a", "b", "c"};
    assert_int_equal(ms_weights_meta_set_classes(net.meta, names, 3), MS_OK);
    Onnx__ModelProto *m = s_export(&net);
    assert_int_equal(m->ir_version, MS_ONNX_IR_VERSION);
    assert_int_equal(m->n_opset_import, 1);
    assert_string_equal(m->opset_import[0]->domain, "");
    assert_int_equal(m->opset_import[0]->version, 17);
    assert_string_equal(m->producer_name, "meshsweep");
    char ops[512];
    s_ops(m, ops, sizeof ops);
    assert_string_equal(ops, "Sub Div Gemm Relu Gemm Relu Gemm Softmax");
    const Onnx__AttributeProto *tb = s_attr(s_node(m, "Gemm"), "transB");
    assert_non_null(tb);
    assert_int_equal(tb->i, 1);
    // W1 is 5 x 5 at offset 4*5+5 = 25, b2 the last 3 floats.
    const Onnx__TensorProto *w1 = s_init(m, "W1");
    assert_int_equal(w1->n_dims, 2);
    assert_int_equal(w1->dims[0], 5);
    assert_int_equal(w1->dims[1], 5);
    assert_int_equal(w1->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    assert_int_equal(w1->raw_data.len, 25 * sizeof(float));
    assert_memory_equal(w1->raw_data.data, net.params + 25, 25 * sizeof(float));
    const Onnx__TensorProto *b2 = s_init(m, "b2");
    assert_memory_equal(b2->raw_data.data, net.params + net.n_params - 3,
                        3 * sizeof(float));
    assert_float_equal(*(const float *) s_init(m, "x_divisor")->raw_data.data,
                       255.0f, 0);
    assert_int_equal(m->graph->n_input, 1);
    assert_string_equal(m->graph->input[0]->name, "input");
    assert_int_equal(
        m->graph->input[0]->type->tensor_type->shape->dim[1]->dim_value, 4);
    assert_int_equal(m->graph->n_output, 2);
    assert_string_equal(m->graph->output[0]->name, "logits");
    assert_string_equal(m->graph->output[1]->name, "probabilities");
    assert_string_equal(s_prop(m, "task"), net.meta->task_id);
    assert_string_equal(s_prop(m, "classes"), "[\"a\",\"b\",\"c\"]");
    assert_non_null(strstr(s_prop(m, "config"), "\"activation\":\"relu\""));
    ms_weights_meta_t *back = NULL;
    assert_int_equal(
        ms_weights_meta_decode(s_prop(m, "meshsweep"), &back, NULL), MS_OK);
    assert_int_equal(back->cfg.n_hidden, 2);
    assert_int_equal(back->n_classes, 3);
    assert_string_equal(back->classes[2], "c");
    assert_int_equal(back->input.scale, MS_SCALE_UNIT);
    ms_weights_meta_destroy(&back);
    onnx__model_proto__free_unpacked(m, NULL);
    s_net_close(&net);
}

//  --------------------------------------------------------------------------
//  Each activation's ops and attributes; gelu as its erf decomposition.

static void
test_activations(void **state)
{
    (void) state;
    struct {
        ms_activation_t act;
        const char *ops;
    } cases[] = {
        {MS_ACTIVATION_LEAKY_RELU, "Sub Div Gemm LeakyRelu Gemm Softmax"},
        {MS_ACTIVATION_ELU, "Sub Div Gemm Elu Gemm Softmax"},
        {MS_ACTIVATION_SELU, "Sub Div Gemm Selu Gemm Softmax"},
        {MS_ACTIVATION_GELU, "Sub Div Gemm Mul Erf Add Mul Mul Gemm Softmax"},
        {MS_ACTIVATION_TANH, "Sub Div Gemm Tanh Gemm Softmax"},
        {MS_ACTIVATION_SIGMOID, "Sub Div Gemm Sigmoid Gemm Softmax"},
        {MS_ACTIVATION_LINEAR, "Sub Div Gemm Identity Gemm Softmax"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        s_net_t net;
        s_net_open(&net, 1, 3, 2, 2);
        net.meta->cfg.activation = cases[c].act;
        net.meta->cfg.leaky_slope = 0.25;
        Onnx__ModelProto *m = s_export(&net);
        char ops[512];
        s_ops(m, ops, sizeof ops);
        assert_string_equal(ops, cases[c].ops);
        if (cases[c].act == MS_ACTIVATION_LEAKY_RELU)
            assert_float_equal(s_attr(s_node(m, "LeakyRelu"), "alpha")->f,
                               0.25f, 0);
        if (cases[c].act == MS_ACTIVATION_SELU) {
            assert_float_equal(s_attr(s_node(m, "Selu"), "alpha")->f,
                               (float) 1.6732632423543772, 0);
            assert_float_equal(s_attr(s_node(m, "Selu"), "gamma")->f,
                               (float) 1.0507009873554805, 0);
        }
        onnx__model_proto__free_unpacked(m, NULL);
        s_net_close(&net);
    }
}

//  --------------------------------------------------------------------------
//  Standard scaling casts to double and back; none has no scaling nodes;
//  a regression network ends at its Gemm with one output.

static void
test_scaling_and_regression(void **state)
{
    (void) state;
    s_net_t net;
    s_net_open(&net, 1, 3, 2, 1);
    net.meta->input.scale = MS_SCALE_STANDARD;
    net.meta->input.shift[1] = 0.5;
    net.meta->cfg.loss = MS_LOSS_MSE;
    Onnx__ModelProto *m = s_export(&net);
    char ops[512];
    s_ops(m, ops, sizeof ops);
    assert_string_equal(ops, "Cast Sub Div Cast Gemm Relu Gemm");
    const Onnx__TensorProto *shift = s_init(m, "x_shift");
    assert_int_equal(shift->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE);
    assert_int_equal(shift->dims[0], 2);
    assert_float_equal(((const double *) shift->raw_data.data)[1], 0.5, 0);
    assert_int_equal(m->graph->n_output, 1);
    assert_string_equal(m->graph->output[0]->name, "logits");
    onnx__model_proto__free_unpacked(m, NULL);

    ms_dataset_transform_clear(&net.meta->input);
    net.meta->input.n_features = 2;
    m = s_export(&net);
    s_ops(m, ops, sizeof ops);
    assert_string_equal(ops, "Gemm Relu Gemm");
    assert_string_equal(m->graph->node[0]->input[0], "input");
    onnx__model_proto__free_unpacked(m, NULL);
    s_net_close(&net);
}

//  --------------------------------------------------------------------------
//  Residual, layer norm, rezero: the input projection, two blocks (two
//  layers, then the remainder), a LayerNormalization before every dense
//  layer but the first, Mul by alpha_k and Add per block; the offsets of
//  ms_param_layout.

static void
test_residual_layer_norm_rezero(void **state)
{
    (void) state;
    s_net_t net;
    s_net_open(&net, 4, 3, 2, 2);
    ms_train_config_t *cfg = &net.meta->cfg;
    cfg->architecture = MS_ARCH_RESIDUAL;
    cfg->block_layers = 2;
    cfg->norm = MS_NORM_LAYER;
    cfg->residual_scale = MS_RESIDUAL_SCALE_REZERO;
    s_net_params(&net);
    // Dense: 2*3+3 + 3*(3*3+3) + 3*2+2 = 9 + 36 + 8 = 53; norms of layers
    // 1..4, fan_in 3 each: 4 * 2 * 3 = 24; two alphas.
    assert_int_equal(net.n_params, 53 + 24 + 2);
    Onnx__ModelProto *m = s_export(&net);
    char ops[1024];
    s_ops(m, ops, sizeof ops);
    assert_string_equal(ops, "Sub Div Gemm Relu "
                             "LayerNormalization Gemm Relu "
                             "LayerNormalization Gemm Relu Mul Add "
                             "LayerNormalization Gemm Relu Mul Add "
                             "LayerNormalization Gemm Softmax");
    const Onnx__NodeProto *ln = s_node(m, "LayerNormalization");
    assert_int_equal(s_attr(ln, "axis")->i, -1);
    assert_float_equal(s_attr(ln, "epsilon")->f, 1e-5f, 0);
    // gamma1 right after the dense section, beta1 after it; alpha1 last.
    assert_memory_equal(s_init(m, "gamma1")->raw_data.data, net.params + 53,
                        3 * sizeof(float));
    assert_memory_equal(s_init(m, "beta1")->raw_data.data, net.params + 56,
                        3 * sizeof(float));
    assert_memory_equal(s_init(m, "gamma4")->raw_data.data,
                        net.params + 53 + 18, 3 * sizeof(float));
    assert_memory_equal(s_init(m, "alpha1")->raw_data.data,
                        net.params + net.n_params - 1, sizeof(float));
    // The second block's sum reads the first block's sum.
    const Onnx__NodeProto *last_add = NULL;
    for (size_t i = 0; i < m->graph->n_node; i++)
        if (strcmp(m->graph->node[i]->op_type, "Add") == 0)
            last_add = m->graph->node[i];
    assert_string_equal(last_add->input[0], "r0");
    assert_string_equal(last_add->input[1], "s1");
    onnx__model_proto__free_unpacked(m, NULL);
    s_net_close(&net);
}

//  --------------------------------------------------------------------------
//  Batch norm in evaluation mode: five inputs, the running statistics
//  after the norm gains (no rezero: scale 1, so Add without Mul).

static void
test_residual_batch_norm(void **state)
{
    (void) state;
    s_net_t net;
    s_net_open(&net, 2, 3, 2, 2);
    ms_train_config_t *cfg = &net.meta->cfg;
    cfg->architecture = MS_ARCH_RESIDUAL;
    cfg->norm = MS_NORM_BATCH;
    s_net_params(&net);
    // Dense 9 + 12 + 8 = 29; gamma, beta of layers 1, 2: 12; mean, var: 12.
    assert_int_equal(net.n_params, 29 + 12 + 12);
    Onnx__ModelProto *m = s_export(&net);
    assert_int_equal(s_count(m, "BatchNormalization"), 2);
    assert_int_equal(s_count(m, "Mul"), 0);
    assert_int_equal(s_count(m, "Add"), 1);
    const Onnx__NodeProto *bn = s_node(m, "BatchNormalization");
    assert_int_equal(bn->n_input, 5);
    assert_string_equal(bn->input[3], "mean1");
    assert_memory_equal(s_init(m, "mean1")->raw_data.data, net.params + 41,
                        3 * sizeof(float));
    assert_memory_equal(s_init(m, "var2")->raw_data.data, net.params + 50,
                        3 * sizeof(float));
    onnx__model_proto__free_unpacked(m, NULL);
    s_net_close(&net);
}

//  --------------------------------------------------------------------------
//  ms_onnx_decode gives back the sizes, parameters and metadata.

static void
test_decode_round_trip(void **state)
{
    (void) state;
    s_net_t net;
    s_net_open(&net, 3, 4, 5, 3);
    net.meta->cfg.architecture = MS_ARCH_RESIDUAL;
    net.meta->cfg.norm = MS_NORM_LAYER;
    s_net_params(&net);
    void *bytes = NULL;
    size_t n = 0;
    assert_int_equal(
        ms_onnx_encode(net.meta, net.params, net.n_params, &bytes, &n, NULL),
        MS_OK);
    ms_weights_meta_t *meta = NULL;
    ms_weights_t *w = NULL;
    assert_int_equal(ms_onnx_decode(bytes, n, &meta, &w, NULL), MS_OK);
    assert_int_equal(w->n_sizes, 5);
    assert_int_equal(w->sizes[0], 5);
    assert_int_equal(w->sizes[4], 3);
    assert_int_equal(w->n_params, net.n_params);
    assert_memory_equal(w->params, net.params,
                        (size_t) net.n_params * sizeof(float));
    assert_int_equal(meta->cfg.norm, MS_NORM_LAYER);
    assert_int_equal(ms_weights_meta_match(meta, w, NULL), MS_OK);
    ms_weights_meta_destroy(&meta);
    ms_weights_destroy(&w);
    free(bytes);
    s_net_close(&net);
}

//  --------------------------------------------------------------------------
//  Refusals: a parameter count the layout does not give; bytes that are
//  not a model; a model of another tool; a missing initializer.

static void
test_refusals(void **state)
{
    (void) state;
    s_net_t net;
    s_net_open(&net, 1, 3, 2, 2);
    void *bytes = NULL;
    size_t n = 0;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_onnx_encode(net.meta, net.params, net.n_params - 1,
                                    &bytes, &n, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "needs"));
    assert_null(bytes);

    ms_weights_meta_t *meta = NULL;
    ms_weights_t *w = NULL;
    const char junk[] = "\xff\xff\xff\xff not protobuf";
    assert_int_equal(ms_onnx_decode(junk, sizeof junk, &meta, &w, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "not an ONNX model"));
    assert_null(meta);
    assert_null(w);

    Onnx__ModelProto other = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
    other.graph = &graph;
    other.has_ir_version = 1;
    other.ir_version = 8;
    uint8_t buf[64];
    size_t len = onnx__model_proto__pack(&other, buf);
    ms_diag_clear(&diag);
    assert_int_equal(ms_onnx_decode(buf, len, &meta, &w, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "not written by meshsweep"));

    // Our model with W0 renamed: the initializer is missing.
    assert_int_equal(
        ms_onnx_encode(net.meta, net.params, net.n_params, &bytes, &n, NULL),
        MS_OK);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, bytes);
    free(bytes);
    for (size_t i = 0; i < m->graph->n_initializer; i++)
        if (strcmp(m->graph->initializer[i]->name, "W0") == 0)
            m->graph->initializer[i]->name[0] = 'V';
    size_t n2 = onnx__model_proto__get_packed_size(m);
    uint8_t *again = malloc(n2);
    onnx__model_proto__pack(m, again);
    onnx__model_proto__free_unpacked(m, NULL);
    ms_diag_clear(&diag);
    assert_int_equal(ms_onnx_decode(again, n2, &meta, &w, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.reason, "initializer W0 missing");
    free(again);
    s_net_close(&net);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_relu),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_scaling_and_regression),
        cmocka_unit_test(test_residual_layer_norm_rezero),
        cmocka_unit_test(test_residual_batch_norm),
        cmocka_unit_test(test_decode_round_trip),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
