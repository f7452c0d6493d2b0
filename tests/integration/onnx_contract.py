#!/usr/bin/python3
"""onnx_contract - an exported graph against the layer contract.

For each ONNX file (ms_onnx_synth writes them with random parameters):
onnx.checker.check_model (full), then the graph evaluated by onnx_eval.py's
numpy evaluator against the network computed straight from the contract of
DESIGN.md / core/ms_param_layout.h, reading only the metadata's config and
the initializers by name (W<l>, b<l>, gamma<l>, beta<l>, mean<l>, var<l>,
alpha<k>, x_shift, x_divisor):

  layer l >= 1 reads norm_l(input) when norm != none (layer norm over the
  row, biased variance, eps 1e-5; batch norm with the running statistics);
  plain: h = act(norm(h) W^T + b) layer after layer; residual: layer 0 is
  the input projection, hidden layers 1..n-1 form blocks of block_layers
  (the last takes the remainder), h = h + s_k * u with s_k = 1 or alpha_k;
  the output layer reads norm_L(h); Softmax for cross-entropy.

usage: onnx_contract.py FILE.onnx...   (exits 1 on the first mismatch)
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_eval import evaluate  # noqa: E402

F32 = np.float32


def act(name, z, slope):
    if name == "relu":
        return np.maximum(z, F32(0))
    if name == "leaky_relu":
        return np.where(z > 0, z, F32(slope) * z)
    if name == "elu":
        return np.where(z > 0, z, np.expm1(z))
    if name == "selu":
        return F32(1.0507009873554805) * np.where(
            z > 0, z, F32(1.6732632423543772) * np.expm1(z))
    if name == "gelu":
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return (0.5 * z * (1 + erf(z / math.sqrt(2)))).astype(F32)
    if name == "tanh":
        return np.tanh(z)
    if name == "sigmoid":
        return F32(1) / (F32(1) + np.exp(-z))
    return z


def contract(meta, init, x):
    cfg = meta["config"]
    arch = cfg.get("architecture", "plain")
    norm = cfg.get("norm", "none")
    rezero = cfg.get("residual_scale", "1") == "rezero"
    per = cfg.get("block_layers", 1)
    n_hidden = cfg["hidden_layers"] if "hidden_layers" in cfg else len(cfg["hidden_sizes"])
    n_layers = n_hidden + 1
    a, slope = cfg["activation"], cfg.get("leaky_slope", 0.01)
    inp = meta["input"]
    if inp["scale"] == "unit":
        x = (x - F32(inp["shift"])) / F32(inp["divisor"])
    elif inp["scale"] == "standard":
        x = ((x.astype(np.float64) - np.array(inp["shift"])) /
             np.array(inp["divisor"])).astype(F32)

    def dense(l, h):
        if norm != "none" and l >= 1:
            g, b = init["gamma%d" % l], init["beta%d" % l]
            if norm == "layer":
                m = h.mean(axis=1, keepdims=True)
                v = ((h - m) ** 2).mean(axis=1, keepdims=True)
            else:
                m, v = init["mean%d" % l], init["var%d" % l]
            h = (h - m) / np.sqrt(v + F32(1e-5)) * g + b
        z = h @ init["W%d" % l].T + init["b%d" % l]
        return act(a, z, slope) if l < n_layers - 1 else z

    if n_layers == 1:
        out = dense(0, x)
    elif arch != "residual":
        h = x
        for l in range(n_layers - 1):
            h = dense(l, h)
        out = dense(n_layers - 1, h)
    else:
        h = dense(0, x)
        l, k = 1, 0
        while l <= n_hidden - 1:
            u = h
            for _ in range(per):
                if l <= n_hidden - 1:
                    u = dense(l, u)
                    l += 1
            h = h + (init["alpha%d" % k] * u if rezero else u)
            k += 1
        if rezero:
            assert "alpha%d" % k not in init, "more alphas than blocks"
        out = dense(n_layers - 1, h)
    if cfg.get("loss", "cross_entropy") != "cross_entropy":
        return out
    e = np.exp(out - out.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(7)
    for path in sys.argv[1:]:
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        meta = json.loads({p.key: p.value for p in model.metadata_props}["meshsweep"])
        init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        x = rng.uniform(0, 255, size=(64, meta["input"]["features"])).astype(F32)
        env = evaluate(model, x)
        got = env["probabilities"]
        want = contract(meta, init, x)
        if not np.allclose(got, want, rtol=1e-4, atol=1e-6):
            sys.exit("onnx_contract: %s: the graph differs from the contract "
                     "by %g" % (path, float(np.abs(got - want).max())))
        ops = sorted({n.op_type for n in model.graph.node})
        print("%s: %s" % (os.path.basename(path), " ".join(ops)))


if __name__ == "__main__":
    main()
