#!/usr/bin/python3
"""onnx_eval - check an exported network outside meshsweep.

Runs onnx.checker.check_model (full check, with shape inference) on the
file, then evaluates its graph with numpy over its initializers (the
evaluator below knows the standard ops the exporter writes: Sub, Div, Mul,
Add, Cast, Gemm, Relu, LeakyRelu, Elu, Selu, Erf, Tanh, Sigmoid, Identity,
LayerNormalization, BatchNormalization, Softmax; any other op fails) on
the raw IDX test images, and compares the accuracy with the run's.

usage: onnx_eval.py MODEL.onnx IMAGES.gz LABELS.gz EXPECTED_ACCURACY
                    [--tolerance 1e-4] [--config ROW.json]
Prints "accuracy A (expected E)"; exits 1 on any mismatch.
Needs Debian's python3-onnx and python3-numpy (/usr/bin/python3).
"""
import argparse
import gzip
import json
import math
import struct
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    return arr.reshape(shape)


def evaluate(model, x):
    env = {"input": x}
    for t in model.graph.initializer:
        env[t.name] = numpy_helper.to_array(t)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    for node in model.graph.node:
        a = {at.name: helper.get_attribute_value(at) for at in node.attribute}
        i = [env[name] for name in node.input]
        op = node.op_type
        f32 = np.float32
        if op == "Sub":
            y = i[0] - i[1]
        elif op == "Div":
            y = i[0] / i[1]
        elif op == "Mul":
            y = i[0] * i[1]
        elif op == "Add":
            y = i[0] + i[1]
        elif op == "Cast":
            y = i[0].astype({1: np.float32, 11: np.float64}[a["to"]])
        elif op == "Gemm":
            w = i[1].T if a.get("transB", 0) else i[1]
            y = i[0] @ w + i[2]
        elif op == "Relu":
            y = np.maximum(i[0], f32(0))
        elif op == "LeakyRelu":
            y = np.where(i[0] > 0, i[0], f32(a["alpha"]) * i[0])
        elif op == "Elu":
            y = np.where(i[0] > 0, i[0], f32(a["alpha"]) * np.expm1(i[0]))
        elif op == "Selu":
            y = f32(a["gamma"]) * np.where(i[0] > 0, i[0],
                                           f32(a["alpha"]) * np.expm1(i[0]))
        elif op == "Erf":
            y = erf(i[0]).astype(i[0].dtype)
        elif op == "Tanh":
            y = np.tanh(i[0])
        elif op == "Sigmoid":
            y = f32(1) / (f32(1) + np.exp(-i[0]))
        elif op == "Identity":
            y = i[0]
        elif op == "LayerNormalization":
            assert a.get("axis", -1) == -1
            eps = f32(a.get("epsilon", 1e-5))
            mean = i[0].mean(axis=-1, keepdims=True)
            var = ((i[0] - mean) ** 2).mean(axis=-1, keepdims=True)
            y = (i[0] - mean) / np.sqrt(var + eps) * i[1] + i[2]
        elif op == "BatchNormalization":
            eps = f32(a.get("epsilon", 1e-5))
            y = (i[0] - i[3]) / np.sqrt(i[4] + eps) * i[1] + i[2]
        elif op == "Softmax":
            assert a.get("axis", -1) == -1
            e = np.exp(i[0] - i[0].max(axis=-1, keepdims=True))
            y = e / e.sum(axis=-1, keepdims=True)
        else:
            sys.exit("onnx_eval: op %s is not one the exporter writes" % op)
        env[node.output[0]] = y
    return env


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("images")
    p.add_argument("labels")
    p.add_argument("expected", type=float)
    p.add_argument("--tolerance", type=float, default=1e-4)
    p.add_argument("--config")
    args = p.parse_args()
    model = onnx.load(args.model)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8, model.ir_version
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    props = {e.key: e.value for e in model.metadata_props}
    meta = json.loads(props["meshsweep"])
    assert json.loads(props["config"]) == meta["config"]
    if args.config:
        row = json.load(open(args.config))
        assert meta["config"] == row["config"], (meta["config"], row["config"])
    images = read_idx(args.images)
    labels = read_idx(args.labels).astype(np.int64)
    x = images.reshape(images.shape[0], -1).astype(np.float32)
    env = evaluate(model, x)
    out = env["probabilities"]
    assert out.dtype == np.float32, out.dtype
    assert np.allclose(out.sum(axis=1), 1, atol=1e-5)
    acc = float((out.argmax(axis=1) == labels).mean())
    print("accuracy %.6f (expected %.6f)" % (acc, args.expected))
    if abs(acc - args.expected) > args.tolerance:
        sys.exit("onnx_eval: accuracy %.6f, the run's is %.6f" %
                 (acc, args.expected))


if __name__ == "__main__":
    main()
