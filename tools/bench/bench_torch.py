#!/usr/bin/python3
"""bench_torch - PyTorch reference for bench_train: same network, data,
batch and optimizer, one thread.

Usage: /usr/bin/python3 tools/bench/bench_torch.py [--layers N] [--width W]
           [--batch B] [--epochs E] [--data DIR] [--seed S]
           [--architecture plain|residual] [--norm none|layer|batch]
           [--block-layers 1|2] [--init default|he]

Trains an MLP (relu, Linear layers with PyTorch's default init, Adam lr
0.001, no weight decay) on the whole Fashion-MNIST training set (60000 x
784, scaled to [0, 1]) with torch.set_num_threads(1). Each epoch draws a
permutation and indexes the in-memory tensors (no DataLoader, which would
only add Python overhead). Prints "epoch_seconds S": the median over the
epochs after the first, as bench_train does, the fastest of them
(epoch_seconds_min), the median CPU time (epoch_cpu_seconds) and the
final test accuracy (test_accuracy).

--architecture residual builds meshsweep's residual network from torch.nn
(core/ms_mlp.c): hidden layer 0 is the input projection Linear + ReLU;
the other hidden layers form blocks of --block-layers layers (the last
takes the remainder), each layer u = ReLU(Linear(norm(u))), and the block
adds h = h + u; the output Linear reads norm(h). With --norm, every
Linear after the first reads a LayerNorm / BatchNorm1d (eps 1e-5) of its
input, in plain networks too. --init he: kaiming_normal_ (fan_in, relu)
weights and zero biases, meshsweep's he init (the default is PyTorch's
own Linear init).
"""
import argparse
import gzip
import statistics
import time

import numpy as np
import torch


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8,
                         offset=4 + 4 * dims).reshape(shape)


class Net(torch.nn.Module):
    """meshsweep's plain or residual MLP (see the module docstring)."""

    def __init__(self, n_in, n_out, layers, width, architecture, norm,
                 block_layers):
        super().__init__()
        sizes = [n_in] + [width] * layers
        self.linears = torch.nn.ModuleList(
            torch.nn.Linear(sizes[i], sizes[i + 1]) for i in range(layers))
        self.head = torch.nn.Linear(sizes[-1], n_out)

        def make_norm(n):
            if norm == "layer":
                return torch.nn.LayerNorm(n, eps=1e-5)
            if norm == "batch":
                return torch.nn.BatchNorm1d(n, eps=1e-5)
            return torch.nn.Identity()
        # norms[l] normalises the input of Linear l (l >= 1; the head last).
        self.norms = torch.nn.ModuleList(
            [torch.nn.Identity()] +
            [make_norm(width) for _ in range(1, layers + 1)])
        self.blocks = []
        if architecture == "residual":
            first = 1
            while first < layers:
                last = min(first + block_layers, layers)
                self.blocks.append((first, last))
                first = last
        self.residual = architecture == "residual"

    def forward(self, x):
        h = torch.relu(self.linears[0](x)) if len(self.linears) else x
        if self.residual:
            for first, last in self.blocks:
                u = h
                for l in range(first, last):
                    u = torch.relu(self.linears[l](self.norms[l](u)))
                h = h + u
        else:
            for l in range(1, len(self.linears)):
                h = torch.relu(self.linears[l](self.norms[l](h)))
        return self.head(self.norms[len(self.linears)](h))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--architecture", default="plain",
                    choices=["plain", "residual"])
    ap.add_argument("--norm", default="none",
                    choices=["none", "layer", "batch"])
    ap.add_argument("--block-layers", type=int, default=1, choices=[1, 2])
    ap.add_argument("--init", default="default", choices=["default", "he"])
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    x = load_idx(a.data + "/train-images-idx3-ubyte.gz")
    y = load_idx(a.data + "/train-labels-idx1-ubyte.gz")
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0)
    y = torch.from_numpy(y.astype(np.int64))
    xt = load_idx(a.data + "/t10k-images-idx3-ubyte.gz")
    yt = load_idx(a.data + "/t10k-labels-idx1-ubyte.gz")
    xt = torch.from_numpy(xt.reshape(len(xt), -1).astype(np.float32) / 255.0)
    yt = torch.from_numpy(yt.astype(np.int64))
    n_in, n_out = x.shape[1], int(y.max()) + 1
    model = Net(n_in, n_out, a.layers, a.width, a.architecture, a.norm,
                a.block_layers)
    if a.init == "he":
        for m in list(model.linears) + [model.head]:
            torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            torch.nn.init.zeros_(m.bias)
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = torch.nn.CrossEntropyLoss()
    secs, cpu = [], []
    n = len(x)
    for epoch in range(max(a.epochs, 2)):
        t0, c0 = time.perf_counter(), time.process_time()
        perm = torch.randperm(n)
        total, batches = 0.0, 0
        for start in range(0, n, a.batch):
            idx = perm[start:start + a.batch]
            xb, yb = x[idx], y[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        secs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        print(f"epoch {epoch + 1}: {secs[-1]:.3f} s, loss {total / batches:.4f}",
              flush=True)
    model.eval()
    with torch.no_grad():
        hits = sum(int((model(xt[i:i + 1000]).argmax(1) ==
                        yt[i:i + 1000]).sum()) for i in range(0, len(xt), 1000))
    print(f"torch {torch.__version__} threads {torch.get_num_threads()}")
    print(f"test_accuracy {hits / len(xt):.4f}")
    print(f"epoch_seconds {statistics.median(secs[1:]):.4f}")
    print(f"epoch_seconds_min {min(secs[1:]):.4f}")
    print(f"epoch_cpu_seconds {statistics.median(cpu[1:]):.4f}")


if __name__ == "__main__":
    main()
