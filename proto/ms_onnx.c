/*  =========================================================================
    ms_onnx - a trained network as an ONNX model (standard ops only), and
    such a file read back

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The graph is described in the header. The messages are protobuf-c's
    generated structs (onnx.pb-c.h from Debian's onnx.proto); every
    struct, string and array of one model comes from a small arena (a list
    of calloc'd blocks freed together), so building a model of 1,024
    layers is a few thousand small allocations and one free loop, and no
    message needs protobuf-c's recursive free. Initializers borrow the
    parameter block as raw_data: the model holds no copy of the weights
    before protobuf_c_message_pack writes them out once.

    Little-endian float32 raw_data is what ONNX specifies; like the
    weights file (core/ms_weights.h) this assumes a little-endian host
    (every Debian architecture meshsweep builds for).
*/
#include "ms_onnx.h"
#include "ms_activation.h"
#include "ms_config_json.h"
#include "ms_param_layout.h"
#include "ms_wire_canon.h"

#include "onnx.pb-c.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ms_onnx writes raw_data in host order: little-endian hosts only"
#endif

#define S_MAX_MODEL_BYTES ((size_t) 2000 << 20) // under protobuf's 2 GiB
#define S_NAME_MAX 32                           // "gamma4095" and such

//  One block of the arena.
typedef struct s_block {
    struct s_block *next;
} s_block_t;

//  The model being built.
typedef struct {
    s_block_t *blocks;             // arena
    bool failed;                   // an allocation failed
    Onnx__NodeProto **nodes;       // graph nodes, in order
    size_t n_nodes, max_nodes;     // used, room
    Onnx__TensorProto **inits;     // initializers
    size_t n_inits, max_inits;     // used, room
    const ms_weights_meta_t *meta; // borrowed
    const float *params;           // borrowed parameter block
    bool gelu_consts;              // gelu's constants added
} s_builder_t;

//  --------------------------------------------------------------------------
//  Zeroed memory from the arena, or NULL (failed set).

static void *
s_alloc(s_builder_t *b, size_t size)
{
    s_block_t *blk = calloc(1, sizeof(s_block_t) + size + 16);
    if (!blk) {
        b->failed = true;
        return NULL;
    }
    blk->next = b->blocks;
    b->blocks = blk;
    return (char *) blk + ((sizeof(s_block_t) + 15) & ~(size_t) 15);
}

//  --------------------------------------------------------------------------
//  Free the arena and the builder's arrays.

static void
s_builder_free(s_builder_t *b)
{
    while (b->blocks) {
        s_block_t *next = b->blocks->next;
        free(b->blocks);
        b->blocks = next;
    }
    free(b->nodes);
    free(b->inits);
}

//  --------------------------------------------------------------------------
//  A formatted string from the arena.

static char *
s_str(s_builder_t *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    char *s = s_alloc(b, strlen(tmp) + 1);
    if (s)
        memcpy(s, tmp, strlen(tmp) + 1);
    return s;
}

//  --------------------------------------------------------------------------
//  A copy of a long string (the metadata) in the arena.

static char *
s_strdup(s_builder_t *b, const char *text)
{
    char *s = s_alloc(b, strlen(text) + 1);
    if (s)
        memcpy(s, text, strlen(text) + 1);
    return s;
}

//  --------------------------------------------------------------------------
//  Append a node op(inputs) -> output; returns the node (NULL on failure).
//  The inputs are copied; the output name is the node's name too.

static Onnx__NodeProto *
s_node(s_builder_t *b, const char *op, const char *output, int n_in, ...)
{
    if (b->n_nodes == b->max_nodes) {
        b->failed = true;
        return NULL;
    }
    Onnx__NodeProto *node = s_alloc(b, sizeof *node);
    char **inputs = s_alloc(b, (size_t) n_in * sizeof(char *));
    char **outputs = s_alloc(b, sizeof(char *));
    if (!node || !inputs || !outputs)
        return NULL;
    onnx__node_proto__init(node);
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++)
        inputs[i] = s_str(b, "%s", va_arg(ap, const char *));
    va_end(ap);
    outputs[0] = s_str(b, "%s", output);
    node->n_input = (size_t) n_in;
    node->input = inputs;
    node->n_output = 1;
    node->output = outputs;
    node->op_type = s_str(b, "%s", op);
    node->name = s_str(b, "%s_%s", op, output);
    b->nodes[b->n_nodes++] = node;
    return node;
}

//  --------------------------------------------------------------------------
//  Add an attribute to a node: a float (is_float) or an int.

static void
s_attr(s_builder_t *b, Onnx__NodeProto *node, const char *name, bool is_float,
       double value)
{
    if (!node)
        return;
    Onnx__AttributeProto *a = s_alloc(b, sizeof *a);
    Onnx__AttributeProto **list =
        s_alloc(b, (node->n_attribute + 1) * sizeof *list);
    if (!a || !list)
        return;
    onnx__attribute_proto__init(a);
    a->name = s_str(b, "%s", name);
    a->has_type = 1;
    if (is_float) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        a->has_f = 1;
        a->f = (float) value;
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = (int64_t) value;
    }
    for (size_t i = 0; i < node->n_attribute; i++)
        list[i] = node->attribute[i];
    list[node->n_attribute++] = a;
    node->attribute = list;
}

//  --------------------------------------------------------------------------
//  Add an initializer named name of type (FLOAT or DOUBLE) with n_dims
//  dims (0: a scalar) over data (borrowed, count elements of elem bytes).

static void
s_init(s_builder_t *b, const char *name, int32_t type, const void *data,
       size_t elem, int n_dims, int64_t d0, int64_t d1)
{
    if (b->n_inits == b->max_inits) {
        b->failed = true;
        return;
    }
    Onnx__TensorProto *t = s_alloc(b, sizeof *t);
    int64_t *dims = s_alloc(b, 2 * sizeof(int64_t));
    if (!t || !dims)
        return;
    onnx__tensor_proto__init(t);
    dims[0] = d0;
    dims[1] = d1;
    t->n_dims = (size_t) n_dims;
    t->dims = dims;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = s_str(b, "%s", name);
    int64_t count = n_dims == 0 ? 1 : n_dims == 1 ? d0 : d0 * d1;
    t->has_raw_data = 1;
    t->raw_data.len = (size_t) count * elem;
    t->raw_data.data = (uint8_t *) data;
    b->inits[b->n_inits++] = t;
}

//  --------------------------------------------------------------------------
//  A float initializer over the parameter block at offset off.

static void
s_init_params(s_builder_t *b, const char *name, int64_t off, int n_dims,
              int64_t d0, int64_t d1)
{
    s_init(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, b->params + off,
           sizeof(float), n_dims, d0, d1);
}

//  --------------------------------------------------------------------------
//  A float scalar initializer holding value (stored in the arena).

static void
s_init_scalar(s_builder_t *b, const char *name, float value)
{
    float *v = s_alloc(b, sizeof *v);
    if (!v)
        return;
    *v = value;
    s_init(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, v, sizeof(float), 0,
           0, 0);
}

//  --------------------------------------------------------------------------
//  The activation of hidden layer output z, named out.

static void
s_activation(s_builder_t *b, const char *z, const char *out)
{
    const ms_train_config_t *cfg = &b->meta->cfg;
    switch (cfg->activation) {
    case MS_ACTIVATION_RELU:
        s_node(b, "Relu", out, 1, z);
        break;
    case MS_ACTIVATION_LEAKY_RELU:
        s_attr(b, s_node(b, "LeakyRelu", out, 1, z), "alpha", true,
               cfg->leaky_slope);
        break;
    case MS_ACTIVATION_ELU:
        s_attr(b, s_node(b, "Elu", out, 1, z), "alpha", true, 1.0);
        break;
    case MS_ACTIVATION_SELU: {
        Onnx__NodeProto *n = s_node(b, "Selu", out, 1, z);
        s_attr(b, n, "alpha", true, MS_SELU_ALPHA);
        s_attr(b, n, "gamma", true, MS_SELU_LAMBDA);
        break;
    }
    case MS_ACTIVATION_GELU: {
        // 0.5 z (1 + erf(z / sqrt 2)), the exact form of ms_activation.h.
        if (!b->gelu_consts) {
            s_init_scalar(b, "gelu_rsqrt2", 0.70710678118654752f);
            s_init_scalar(b, "gelu_one", 1.0f);
            s_init_scalar(b, "gelu_half", 0.5f);
            b->gelu_consts = true;
        }
        char t[S_NAME_MAX + 8], e[S_NAME_MAX + 8], p[S_NAME_MAX + 8],
            q[S_NAME_MAX + 8];
        snprintf(t, sizeof t, "%s_s", out);
        snprintf(e, sizeof e, "%s_erf", out);
        snprintf(p, sizeof p, "%s_p", out);
        snprintf(q, sizeof q, "%s_q", out);
        s_node(b, "Mul", t, 2, z, "gelu_rsqrt2");
        s_node(b, "Erf", e, 1, t);
        s_node(b, "Add", p, 2, e, "gelu_one");
        s_node(b, "Mul", q, 2, z, p);
        s_node(b, "Mul", out, 2, q, "gelu_half");
        break;
    }
    case MS_ACTIVATION_TANH:
        s_node(b, "Tanh", out, 1, z);
        break;
    case MS_ACTIVATION_SIGMOID:
        s_node(b, "Sigmoid", out, 1, z);
        break;
    case MS_ACTIVATION_LINEAR:
    default:
        s_node(b, "Identity", out, 1, z);
        break;
    }
}

//  --------------------------------------------------------------------------
//  Dense layer l on input in: its norm, Gemm and (hidden layers) the
//  activation; the result is named out.

static void
s_dense(s_builder_t *b, const uint32_t *sizes, int32_t n_sizes, int32_t l,
        const char *in, const char *out)
{
    const ms_train_config_t *cfg = &b->meta->cfg;
    ms_param_layer_t pl;
    ms_param_layout_layer(cfg, sizes, n_sizes, l, &pl);
    char name[S_NAME_MAX], gemm_in[S_NAME_MAX], w[S_NAME_MAX], bias[S_NAME_MAX];
    snprintf(gemm_in, sizeof gemm_in, "%s", in);
    if (pl.gamma >= 0) {
        char g[S_NAME_MAX], be[S_NAME_MAX];
        snprintf(g, sizeof g, "gamma%d", l);
        snprintf(be, sizeof be, "beta%d", l);
        snprintf(gemm_in, sizeof gemm_in, "n%d", l);
        s_init_params(b, g, pl.gamma, 1, pl.fan_in, 0);
        s_init_params(b, be, pl.beta, 1, pl.fan_in, 0);
        if (cfg->norm == MS_NORM_BATCH) {
            char m[S_NAME_MAX], v[S_NAME_MAX];
            snprintf(m, sizeof m, "mean%d", l);
            snprintf(v, sizeof v, "var%d", l);
            s_init_params(b, m, pl.mean, 1, pl.fan_in, 0);
            s_init_params(b, v, pl.var, 1, pl.fan_in, 0);
            s_attr(b,
                   s_node(b, "BatchNormalization", gemm_in, 5, in, g, be, m, v),
                   "epsilon", true, MS_ONNX_NORM_EPS);
        } else {
            Onnx__NodeProto *n =
                s_node(b, "LayerNormalization", gemm_in, 3, in, g, be);
            s_attr(b, n, "axis", false, -1);
            s_attr(b, n, "epsilon", true, MS_ONNX_NORM_EPS);
        }
    }
    snprintf(w, sizeof w, "W%d", l);
    snprintf(bias, sizeof bias, "b%d", l);
    s_init_params(b, w, pl.w, 2, pl.fan_out, pl.fan_in);
    s_init_params(b, bias, pl.b, 1, pl.fan_out, 0);
    bool hidden = l + 2 < n_sizes;
    if (hidden)
        snprintf(name, sizeof name, "z%d", l);
    else
        snprintf(name, sizeof name, "%s", out);
    s_attr(b, s_node(b, "Gemm", name, 3, gemm_in, w, bias), "transB", false, 1);
    if (hidden)
        s_activation(b, name, out);
}

//  --------------------------------------------------------------------------
//  The scaling nodes; returns the name of the scaled input.

static const char *
s_scaling(s_builder_t *b)
{
    const ms_dataset_transform_t *t = &b->meta->input;
    if (t->scale == MS_SCALE_NONE)
        return "input";
    if (t->scale == MS_SCALE_UNIT) {
        s_init_scalar(b, "x_shift", (float) t->shift[0]);
        s_init_scalar(b, "x_divisor", (float) t->divisor[0]);
        s_node(b, "Sub", "x_sub", 2, "input", "x_shift");
        s_node(b, "Div", "x0", 2, "x_sub", "x_divisor");
        return "x0";
    }
    s_init(b, "x_shift", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, t->shift,
           sizeof(double), 1, t->n_features, 0);
    s_init(b, "x_divisor", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, t->divisor,
           sizeof(double), 1, t->n_features, 0);
    s_attr(b, s_node(b, "Cast", "x_double", 1, "input"), "to", false,
           ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE);
    s_node(b, "Sub", "x_sub", 2, "x_double", "x_shift");
    s_node(b, "Div", "x_div", 2, "x_sub", "x_divisor");
    s_attr(b, s_node(b, "Cast", "x0", 1, "x_div"), "to", false,
           ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    return "x0";
}

//  --------------------------------------------------------------------------
//  The whole layer stack, from the scaled input to "logits".

static void
s_layers(s_builder_t *b, const uint32_t *sizes, int32_t n_sizes, const char *x)
{
    const ms_train_config_t *cfg = &b->meta->cfg;
    int32_t n_layers = n_sizes - 1;
    char h[S_NAME_MAX], u[S_NAME_MAX];
    if (n_layers == 1) {
        s_dense(b, sizes, n_sizes, 0, x, "logits");
        return;
    }
    snprintf(h, sizeof h, "h0");
    s_dense(b, sizes, n_sizes, 0, x, h);
    if (cfg->architecture != MS_ARCH_RESIDUAL) {
        for (int32_t l = 1; l + 1 < n_layers; l++) {
            char next[S_NAME_MAX];
            snprintf(next, sizeof next, "h%d", l);
            s_dense(b, sizes, n_sizes, l, h, next);
            snprintf(h, sizeof h, "%s", next);
        }
    } else {
        int32_t n_blocks = ms_param_layout_n_blocks(cfg);
        for (int32_t k = 0; k < n_blocks; k++) {
            int32_t first = 0, n = 0;
            ms_param_layout_block(cfg, k, &first, &n);
            snprintf(u, sizeof u, "%s", h);
            for (int32_t l = first; l < first + n; l++) {
                char next[S_NAME_MAX];
                snprintf(next, sizeof next, "h%d", l);
                s_dense(b, sizes, n_sizes, l, u, next);
                snprintf(u, sizeof u, "%s", next);
            }
            int64_t alpha = ms_param_layout_alpha(cfg, sizes, n_sizes, k);
            char branch[S_NAME_MAX], sum[S_NAME_MAX];
            snprintf(branch, sizeof branch, "%s", u);
            if (alpha >= 0) {
                char a[S_NAME_MAX];
                snprintf(a, sizeof a, "alpha%d", k);
                snprintf(branch, sizeof branch, "s%d", k);
                s_init_params(b, a, alpha, 0, 0, 0);
                s_node(b, "Mul", branch, 2, u, a);
            }
            snprintf(sum, sizeof sum, "r%d", k);
            s_node(b, "Add", sum, 2, h, branch);
            snprintf(h, sizeof h, "%s", sum);
        }
    }
    s_dense(b, sizes, n_sizes, n_layers - 1, h, "logits");
}

//  --------------------------------------------------------------------------
//  A float tensor value info [N, d1].

static Onnx__ValueInfoProto *
s_value_info(s_builder_t *b, const char *name, int64_t d1)
{
    Onnx__ValueInfoProto *vi = s_alloc(b, sizeof *vi);
    Onnx__TypeProto *tp = s_alloc(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = s_alloc(b, sizeof *tt);
    Onnx__TensorShapeProto *shape = s_alloc(b, sizeof *shape);
    Onnx__TensorShapeProto__Dimension **dims = s_alloc(b, 2 * sizeof *dims);
    Onnx__TensorShapeProto__Dimension *d0 = s_alloc(b, sizeof *d0);
    Onnx__TensorShapeProto__Dimension *dd1 = s_alloc(b, sizeof *dd1);
    if (!vi || !tp || !tt || !shape || !dims || !d0 || !dd1)
        return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(shape);
    onnx__tensor_shape_proto__dimension__init(d0);
    onnx__tensor_shape_proto__dimension__init(dd1);
    d0->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    d0->dim_param = s_str(b, "N");
    dd1->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dd1->dim_value = d1;
    dims[0] = d0;
    dims[1] = dd1;
    shape->n_dim = 2;
    shape->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = shape;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = s_str(b, "%s", name);
    vi->type = tp;
    return vi;
}

//  --------------------------------------------------------------------------
//  A metadata_props entry.

static Onnx__StringStringEntryProto *
s_prop(s_builder_t *b, const char *key, const char *value)
{
    Onnx__StringStringEntryProto *e = s_alloc(b, sizeof *e);
    if (!e)
        return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = s_str(b, "%s", key);
    e->value = s_strdup(b, value);
    return e;
}

//  --------------------------------------------------------------------------
//  Encode a network as an ONNX model.

int
ms_onnx_encode(const ms_weights_meta_t *meta, const float *params,
               int64_t n_params, void **out, size_t *n, ms_diag_t *diag)
{
    *out = NULL;
    *n = 0;
    const ms_train_config_t *cfg = &meta->cfg;
    if (cfg->kind != MS_KIND_TRAIN)
        return ms_diag_set(diag, "onnx", "a %s task has no network",
                           ms_task_kind_name(cfg->kind));
    uint32_t *sizes = malloc((size_t) (cfg->n_hidden + 2) * sizeof *sizes);
    if (!sizes)
        return MS_ERR_NOMEM;
    int32_t n_sizes =
        ms_weights_meta_layer_sizes(meta, sizes, cfg->n_hidden + 2);
    int64_t need = ms_param_layout_n_params(cfg, sizes, n_sizes);
    if (need != n_params) {
        free(sizes);
        return ms_diag_set(diag, "onnx",
                           "%lld parameters, the network of the config needs "
                           "%lld",
                           (long long) n_params, (long long) need);
    }
    if ((size_t) n_params * sizeof(float) > S_MAX_MODEL_BYTES) {
        free(sizes);
        return ms_diag_set(diag, "onnx",
                           "%lld parameters: over the 2 GiB an ONNX file "
                           "holds without external data",
                           (long long) n_params);
    }
    s_builder_t b;
    memset(&b, 0, sizeof b);
    b.meta = meta;
    b.params = params;
    int32_t n_layers = n_sizes - 1;
    b.max_nodes = (size_t) n_layers * 16 + 16;
    b.max_inits = (size_t) n_layers * 8 + 16;
    b.nodes = calloc(b.max_nodes, sizeof *b.nodes);
    b.inits = calloc(b.max_inits, sizeof *b.inits);
    char *meta_json = ms_weights_meta_encode(meta);
    json_t *config = ms_config_encode_json(cfg);
    char *config_json = config ? ms_wire_canon_dump(config) : NULL;
    json_decref(config);
    char *classes_json = NULL;
    if (meta->n_classes > 0) {
        json_t *names = json_array();
        for (int32_t i = 0; i < meta->n_classes; i++)
            json_array_append_new(names, json_string(meta->classes[i]));
        classes_json = ms_wire_canon_dump(names);
        json_decref(names);
    }
    int rc = MS_ERR_NOMEM;
    if (!b.nodes || !b.inits || !meta_json || !config_json ||
        (meta->n_classes > 0 && !classes_json))
        goto cleanup;

    const char *x = s_scaling(&b);
    s_layers(&b, sizes, n_sizes, x);
    bool classify = cfg->loss == MS_LOSS_CROSS_ENTROPY;
    if (classify)
        s_attr(&b, s_node(&b, "Softmax", "probabilities", 1, "logits"), "axis",
               false, -1);

    Onnx__GraphProto *graph = s_alloc(&b, sizeof *graph);
    Onnx__ValueInfoProto **inputs = s_alloc(&b, sizeof *inputs);
    Onnx__ValueInfoProto **outputs = s_alloc(&b, 2 * sizeof *outputs);
    Onnx__ModelProto *model = s_alloc(&b, sizeof *model);
    Onnx__OperatorSetIdProto *opset = s_alloc(&b, sizeof *opset);
    Onnx__OperatorSetIdProto **opsets = s_alloc(&b, sizeof *opsets);
    Onnx__StringStringEntryProto **props = s_alloc(&b, 4 * sizeof *props);
    if (b.failed || !graph || !inputs || !outputs || !model || !opset ||
        !opsets || !props)
        goto cleanup;
    onnx__graph_proto__init(graph);
    graph->name = s_str(&b, "meshsweep_mlp");
    graph->n_node = b.n_nodes;
    graph->node = b.nodes;
    graph->n_initializer = b.n_inits;
    graph->initializer = b.inits;
    inputs[0] = s_value_info(&b, "input", meta->input.n_features);
    graph->n_input = 1;
    graph->input = inputs;
    outputs[0] = s_value_info(&b, "logits", meta->n_outputs);
    if (classify)
        outputs[1] = s_value_info(&b, "probabilities", meta->n_outputs);
    graph->n_output = classify ? 2 : 1;
    graph->output = outputs;

    onnx__operator_set_id_proto__init(opset);
    opset->domain = s_str(&b, "");
    opset->has_version = 1;
    opset->version = MS_ONNX_OPSET;
    opsets[0] = opset;
    onnx__model_proto__init(model);
    model->has_ir_version = 1;
    model->ir_version = MS_ONNX_IR_VERSION;
    model->n_opset_import = 1;
    model->opset_import = opsets;
    model->producer_name = s_str(&b, "meshsweep");
    model->producer_version = s_str(&b, "%s", MESHSWEEP_VERSION);
    model->graph = graph;
    size_t n_props = 0;
    props[n_props++] = s_prop(&b, "meshsweep", meta_json);
    props[n_props++] = s_prop(&b, "config", config_json);
    if (meta->task_id[0])
        props[n_props++] = s_prop(&b, "task", meta->task_id);
    if (classes_json)
        props[n_props++] = s_prop(&b, "classes", classes_json);
    model->n_metadata_props = n_props;
    model->metadata_props = props;
    if (b.failed)
        goto cleanup;

    size_t size = protobuf_c_message_get_packed_size(&model->base);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        goto cleanup;
    if (protobuf_c_message_pack(&model->base, buf) != size) {
        free(buf);
        rc = ms_diag_set(diag, "onnx", "protobuf-c packed a different size");
        goto cleanup;
    }
    *out = buf;
    *n = size;
    rc = MS_OK;
cleanup:
    s_builder_free(&b);
    free(sizes);
    free(meta_json);
    free(config_json);
    free(classes_json);
    return rc;
}

//  --------------------------------------------------------------------------
//  The ONNX model of an encoded native weights file.

int
ms_onnx_encode_weights(const void *bytes, size_t n, void **out, size_t *n_out,
                       ms_diag_t *diag)
{
    *out = NULL;
    *n_out = 0;
    ms_weights_t *w = NULL;
    ms_weights_meta_t *meta = NULL;
    int rc = ms_weights_decode(bytes, n, &w, diag);
    if (rc == MS_OK && !w->meta_json)
        rc = ms_diag_set_code(diag, MS_ERR_CONFLICT, "weights",
                              "no metadata (a version 1 file, written before "
                              "version 2): nothing says its config and input "
                              "scaling");
    if (rc == MS_OK)
        rc = ms_weights_meta_decode(w->meta_json, &meta, diag);
    if (rc == MS_OK)
        rc = ms_weights_meta_match(meta, w, diag);
    if (rc == MS_OK)
        rc = ms_onnx_encode(meta, w->params, w->n_params, out, n_out, diag);
    ms_weights_meta_destroy(&meta);
    ms_weights_destroy(&w);
    return rc;
}

//  --------------------------------------------------------------------------
//  Encode and write to path atomically.

int
ms_onnx_write_file(const char *path, const ms_weights_meta_t *meta,
                   const float *params, int64_t n_params, ms_diag_t *diag)
{
    void *bytes = NULL;
    size_t n = 0;
    int rc = ms_onnx_encode(meta, params, n_params, &bytes, &n, diag);
    if (rc != MS_OK)
        return rc;
    rc = ms_weights_write_bytes(path, bytes, n, diag);
    free(bytes);
    return rc;
}

//  --------------------------------------------------------------------------
//  The initializer named name, or NULL.

static const Onnx__TensorProto *
s_find_init(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name &&
            strcmp(g->initializer[i]->name, name) == 0)
            return g->initializer[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Copy the float initializer name of count floats to dst.

static int
s_read_init(const Onnx__GraphProto *g, const char *name, int64_t count,
            float *dst, ms_diag_t *diag)
{
    const Onnx__TensorProto *t = s_find_init(g, name);
    if (!t)
        return ms_diag_set(diag, "onnx", "initializer %s missing", name);
    if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return ms_diag_set(diag, "onnx", "initializer %s is not float32", name);
    int64_t have = t->has_raw_data ? (int64_t) (t->raw_data.len / sizeof(float))
                                   : (int64_t) t->n_float_data;
    if (have != count || (t->has_raw_data && t->raw_data.len % sizeof(float)))
        return ms_diag_set(diag, "onnx",
                           "initializer %s has %lld floats, the network "
                           "needs %lld",
                           name, (long long) have, (long long) count);
    if (t->has_raw_data)
        memcpy(dst, t->raw_data.data, (size_t) count * sizeof(float));
    else
        memcpy(dst, t->float_data, (size_t) count * sizeof(float));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read every parameter of the network into w->params.

static int
s_read_params(const Onnx__GraphProto *g, const ms_train_config_t *cfg,
              ms_weights_t *w, ms_diag_t *diag)
{
    int32_t n_sizes = (int32_t) w->n_sizes;
    char name[S_NAME_MAX];
    int rc = MS_OK;
    for (int32_t l = 0; rc == MS_OK && l + 1 < n_sizes; l++) {
        ms_param_layer_t pl;
        ms_param_layout_layer(cfg, w->sizes, n_sizes, l, &pl);
        snprintf(name, sizeof name, "W%d", l);
        rc = s_read_init(g, name, (int64_t) pl.fan_in * pl.fan_out,
                         w->params + pl.w, diag);
        snprintf(name, sizeof name, "b%d", l);
        if (rc == MS_OK)
            rc = s_read_init(g, name, pl.fan_out, w->params + pl.b, diag);
        struct {
            const char *prefix;
            int64_t off;
        } extra[] = {{"gamma", pl.gamma},
                     {"beta", pl.beta},
                     {"mean", pl.mean},
                     {"var", pl.var}};
        for (size_t e = 0; rc == MS_OK && e < 4; e++)
            if (extra[e].off >= 0) {
                snprintf(name, sizeof name, "%s%d", extra[e].prefix, l);
                rc = s_read_init(g, name, pl.fan_in, w->params + extra[e].off,
                                 diag);
            }
    }
    int32_t n_blocks = ms_param_layout_n_blocks(cfg);
    for (int32_t k = 0; rc == MS_OK && k < n_blocks; k++) {
        int64_t off = ms_param_layout_alpha(cfg, w->sizes, n_sizes, k);
        snprintf(name, sizeof name, "alpha%d", k);
        if (off >= 0)
            rc = s_read_init(g, name, 1, w->params + off, diag);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Read back a meshsweep ONNX file.

int
ms_onnx_decode(const void *bytes, size_t n, ms_weights_meta_t **meta,
               ms_weights_t **weights, ms_diag_t *diag)
{
    *meta = NULL;
    *weights = NULL;
    Onnx__ModelProto *model =
        onnx__model_proto__unpack(NULL, n, (const uint8_t *) bytes);
    if (!model)
        return ms_diag_set(diag, "onnx",
                           "not an ONNX model (%zu bytes that do not parse "
                           "as a ModelProto)",
                           n);
    const char *meta_json = NULL;
    for (size_t i = 0; i < model->n_metadata_props; i++)
        if (model->metadata_props[i]->key &&
            strcmp(model->metadata_props[i]->key, "meshsweep") == 0)
            meta_json = model->metadata_props[i]->value;
    int rc;
    ms_weights_t *w = NULL;
    if (!model->graph || !meta_json) {
        rc = ms_diag_set(diag, "onnx",
                         "not written by meshsweep (no graph or no "
                         "\"meshsweep\" metadata)");
        goto fail;
    }
    rc = ms_weights_meta_decode(meta_json, meta, diag);
    if (rc != MS_OK)
        goto fail;
    const ms_train_config_t *cfg = &(*meta)->cfg;
    w = calloc(1, sizeof *w);
    rc = MS_ERR_NOMEM;
    if (!w)
        goto fail;
    w->n_sizes = (uint32_t) cfg->n_hidden + 2;
    w->sizes = malloc(w->n_sizes * sizeof *w->sizes);
    w->meta_json = strdup(meta_json);
    if (!w->sizes || !w->meta_json)
        goto fail;
    ms_weights_meta_layer_sizes(*meta, w->sizes, (int32_t) w->n_sizes);
    w->n_params = ms_param_layout_n_params(cfg, w->sizes, (int32_t) w->n_sizes);
    if (w->n_params < 1 || w->n_params > MS_WEIGHTS_MAX_PARAMS) {
        rc = ms_diag_set(diag, "onnx", "%lld parameters: out of range",
                         (long long) w->n_params);
        goto fail;
    }
    w->params = malloc((size_t) w->n_params * sizeof(float));
    if (!w->params)
        goto fail;
    rc = s_read_params(model->graph, cfg, w, diag);
    if (rc != MS_OK)
        goto fail;
    onnx__model_proto__free_unpacked(model, NULL);
    *weights = w;
    return MS_OK;
fail:
    onnx__model_proto__free_unpacked(model, NULL);
    ms_weights_destroy(&w);
    ms_weights_meta_destroy(meta);
    return rc;
}
