#!/usr/bin/env python3
"""bench_gpu_torch - PyTorch on the same GPU for bench_gpu's speed mode:
same network, data, batch and optimizer.

Usage: python3 tools/bench/gpu/bench_gpu_torch.py --hidden 100,10
           [--activation relu] [--batch 200] [--epochs 3] [--tf32 0|1]
           [--graphs 0|1] [--data DIR]

An MLP (Linear layers, PyTorch's default init) trained with Adam lr 0.001,
no weight decay, on the whole Fashion-MNIST training set (60000 x 784,
scaled to [0, 1]) held on the GPU; each epoch draws a permutation on the
GPU and indexes the tensors (no DataLoader). --graphs 1 captures one
training step (forward, backward, Adam with capturable=True) in a CUDA
Graph and replays it per minibatch, copying the minibatch into the static
inputs, as the meshsweep engine does; the last partial minibatch (if any)
runs eagerly. --tf32 sets torch.backends.cuda.matmul.allow_tf32.

Prints "key value" lines like bench_gpu speed: epoch_seconds (median over
the epochs after the first), epoch_seconds_min, final_train_loss, and
torch_available 0 with the reason when there is no torch or no GPU.
"""
import argparse
import gzip
import statistics
import sys
import time


def load_idx(path):
    import numpy as np
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8,
                         offset=4 + 4 * dims).reshape(shape)


def sizes_of(text):
    if "x" in text:
        w, d = text.split("x")
        return [int(w)] * int(d)
    return [int(v) for v in text.split(",")]


ACTS = {"relu": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid", "gelu": "GELU",
        "selu": "SELU", "elu": "ELU", "leaky_relu": "LeakyReLU",
        "linear": "Identity"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", default="100")
    ap.add_argument("--activation", default="relu")
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--tf32", type=int, default=0)
    ap.add_argument("--graphs", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"torch_available 0\ntorch_reason {e}")
        return 3
    if not torch.cuda.is_available():
        print("torch_available 0\ntorch_reason torch.cuda.is_available() "
              "is False")
        return 3
    print(f"torch_available 1\ntorch_version {torch.__version__}")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
    torch.backends.cudnn.allow_tf32 = bool(a.tf32)
    torch.manual_seed(1)
    x = load_idx(a.data + "/train-images-idx3-ubyte.gz")
    y = load_idx(a.data + "/train-labels-idx1-ubyte.gz")
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0)
    x = x.to(dev)
    y = torch.from_numpy(y.astype(np.int64)).to(dev)
    n_in, n_out = x.shape[1], int(y.max()) + 1
    mods, fan = [], n_in
    for w in sizes_of(a.hidden):
        mods += [torch.nn.Linear(fan, w), getattr(torch.nn,
                                                   ACTS[a.activation])()]
        fan = w
    mods.append(torch.nn.Linear(fan, n_out))
    model = torch.nn.Sequential(*mods).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.001,
                           capturable=bool(a.graphs))
    loss_fn = torch.nn.CrossEntropyLoss()
    n, B = len(x), a.batch
    n_full = n // B

    def step(xb, yb):
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    graph = None
    if a.graphs:
        sx = x[:B].clone()
        sy = y[:B].clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):  # warm up on a side stream, as documented
                step(sx, sy)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            sloss = step(sx, sy)
    secs = []
    last = float("nan")
    for epoch in range(max(a.epochs, 2)):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        perm = torch.randperm(n, device=dev)
        total = torch.zeros((), device=dev)
        for i in range(n_full):
            idx = perm[i * B:(i + 1) * B]
            if graph is not None:
                torch.index_select(x, 0, idx, out=sx)
                torch.index_select(y, 0, idx, out=sy)
                graph.replay()
                total += sloss.detach()
            else:
                total += step(x[idx], y[idx]).detach()
        if n_full * B < n:
            idx = perm[n_full * B:]
            total += step(x[idx], y[idx]).detach()
        last = total.item() / ((n + B - 1) // B)  # one sync per epoch
        torch.cuda.synchronize()
        secs.append(time.perf_counter() - t0)
        print(f"epoch {epoch + 1}: {secs[-1]:.4f} s, loss {last:.4f}",
              file=sys.stderr, flush=True)
    print(f"network {a.hidden} {a.activation} batch {B} adam tf32 {a.tf32} "
          f"graphs {a.graphs}")
    print(f"epoch_seconds {statistics.median(secs[1:]):.5f}")
    print(f"epoch_seconds_min {min(secs[1:]):.5f}")
    print(f"final_train_loss {last:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
