/*  =========================================================================
    ms_onnx - a trained network as an ONNX model (standard ops only), and
    such a file read back

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Why in proto/: the model is a protobuf message of the schema Debian's
    libonnx-dev ships (/usr/include/onnx/onnx.proto), compiled by protoc-c
    at build time like mswire.proto; proto/ is the module that owns
    generated code, so the Onnx__* names stay inside it, and it already
    links protobuf-c and jansson (the metadata). core/ stays free of
    both.

    The model (IR version 8, default-domain opset 17: what Debian's onnx
    1.12 checker accepts; ONNX operator docs, onnx.ai/onnx/operators):

      input "input"  float32 [N, F]: raw feature rows, as the data files
                     hold them (before scaling)
      scaling        unit:     Sub(x, shift) then Div(., divisor), float32
                               scalars (the engine's float arithmetic)
                     standard: Cast to double, Sub(., shift[F]),
                               Div(., divisor[F]), Cast to float (the
                               engine's double arithmetic, rounded once)
                     none:     nothing
      dense layer l  norm (l >= 1, norm != none): LayerNormalization
                     (axis -1, epsilon 1e-5, Scale gamma_l, B beta_l) or
                     BatchNormalization (epsilon 1e-5, evaluation mode:
                     mean_l, var_l); then Gemm(., W_l, b_l, transB 1),
                     W_l being fan_out x fan_in row-major as in the
                     parameter block; then the activation for hidden
                     layers: Relu, LeakyRelu(alpha = leaky_slope),
                     Elu(alpha 1), Selu(alpha, gamma of ms_activation.h),
                     gelu as 0.5 z (1 + Erf(z / sqrt 2)) with Mul, Erf
                     and Add (Gelu is not in opset 17), Tanh, Sigmoid,
                     Identity for linear
      residual       layer 0 the input projection; each block k with
                     input h: u through its dense layers, then
                     Add(h, u) or, with rezero, Add(h, Mul(u, alpha_k))
      outputs        "logits" [N, C] (the output layer's Gemm) and, for
                     cross-entropy networks, "probabilities" [N, C] =
                     Softmax(logits, axis -1); a regression network has
                     "logits" [N, 1] only (the prediction)

    Dropout is the identity at inference and does not appear.
    Initializers are named W<l>, b<l>, gamma<l>, beta<l>, mean<l>, var<l>
    (l the dense layer, 0-based), alpha<k> (block k), x_shift, x_divisor,
    and gelu's constants; their bytes are the parameter block's
    (little-endian float32 raw_data). metadata_props: "meshsweep" (the
    whole ms_weights_meta JSON, what ms_onnx_decode reads), "config" (the
    config JSON), "task" (when known), "classes" (a JSON array, when
    known).

    Reading back: ms_onnx_decode accepts the files this exporter writes
    (it needs the "meshsweep" metadata) and returns their parameter
    block; it does not interpret the graph's nodes, it rebuilds the
    network from the config, so `meshsweep predict` evaluates an ONNX file
    with the engine exactly as the native file.

    Thread rule: every function is reentrant.
*/
#ifndef MS_ONNX_H
#define MS_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"
#include "ms_weights.h"
#include "ms_weights_meta.h"

#define MS_ONNX_IR_VERSION 8   // ONNX IR of onnx 1.10 .. 1.12
#define MS_ONNX_OPSET 17       // default domain; has LayerNormalization
#define MS_ONNX_NORM_EPS 1e-5f // layer and batch norm epsilon

//  Encode the network of meta (config, input transform, outputs, names)
//  with the parameter block params (n_params floats, ms_param_layout
//  order, borrowed) as an ONNX ModelProto into a new malloc'd buffer *out
//  of *n bytes (caller frees). The layer sizes follow from the config,
//  meta->input.n_features and meta->n_outputs. Returns MS_OK;
//  MS_ERR_INVALID (diag) when n_params is not what the layout needs, the
//  network is a noop task or the model would pass protobuf's 2 GiB;
//  MS_ERR_NOMEM.
int ms_onnx_encode(const ms_weights_meta_t *meta, const float *params,
                   int64_t n_params, void **out, size_t *n, ms_diag_t *diag);

//  The ONNX model of an encoded native weights file (n bytes; version 2,
//  its metadata says the network): decode, check the metadata against
//  the parameters, encode. *out malloc'd (caller frees). Returns MS_OK;
//  MS_ERR_CONFLICT (diag) for a version 1 file (no metadata, so no
//  config or input scaling); MS_ERR_INVALID (diag) for a damaged file or
//  metadata that does not match; MS_ERR_NOMEM.
int ms_onnx_encode_weights(const void *bytes, size_t n, void **out,
                           size_t *n_out, ms_diag_t *diag);

//  ms_onnx_encode, written to path atomically (path.tmp, fsync, rename).
//  Returns MS_OK, MS_ERR_IO (diag: the path and errno text) or an encode
//  error.
int ms_onnx_write_file(const char *path, const ms_weights_meta_t *meta,
                       const float *params, int64_t n_params, ms_diag_t *diag);

//  Read back n bytes of a file ms_onnx_encode wrote: its metadata (*meta)
//  and its sizes and parameter block as decoded weights (*weights, whose
//  meta_json holds the metadata text). Caller owns both (free with
//  ms_weights_meta_destroy and ms_weights_destroy). Returns MS_OK;
//  MS_ERR_INVALID with one diag line ("onnx", "not an ONNX model",
//  "not written by meshsweep (no meshsweep metadata)", "initializer W3
//  missing", "initializer b0 has 9 floats, the network needs 10", ...);
//  MS_ERR_NOMEM. Both NULL on failure.
int ms_onnx_decode(const void *bytes, size_t n, ms_weights_meta_t **meta,
                   ms_weights_t **weights, ms_diag_t *diag);

#endif
