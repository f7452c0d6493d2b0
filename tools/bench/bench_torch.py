#!/usr/bin/python3
"""bench_torch - PyTorch reference for bench_train: same network, data,
batch and optimizer, one thread.

Usage: /usr/bin/python3 tools/bench/bench_torch.py [--layers N] [--width W]
           [--batch B] [--epochs E] [--data DIR]

Trains an MLP (relu, Linear layers with PyTorch's default init, Adam lr
0.001, no weight decay) on the whole Fashion-MNIST training set (60000 x
784, scaled to [0, 1]) with torch.set_num_threads(1). Each epoch draws a
permutation and indexes the in-memory tensors (no DataLoader, which would
only add Python overhead). Prints "epoch_seconds S": the median over the
epochs after the first, as bench_train does, the fastest of them
(epoch_seconds_min) and the median CPU time (epoch_cpu_seconds).
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    x = load_idx(a.data + "/train-images-idx3-ubyte.gz")
    y = load_idx(a.data + "/train-labels-idx1-ubyte.gz")
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0)
    y = torch.from_numpy(y.astype(np.int64))
    n_in, n_out = x.shape[1], int(y.max()) + 1
    mods, fan = [], n_in
    for _ in range(a.layers):
        mods += [torch.nn.Linear(fan, a.width), torch.nn.ReLU()]
        fan = a.width
    mods.append(torch.nn.Linear(fan, n_out))
    model = torch.nn.Sequential(*mods)
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
    print(f"torch {torch.__version__} threads {torch.get_num_threads()}")
    print(f"epoch_seconds {statistics.median(secs[1:]):.4f}")
    print(f"epoch_seconds_min {min(secs[1:]):.4f}")
    print(f"epoch_cpu_seconds {statistics.median(cpu[1:]):.4f}")


if __name__ == "__main__":
    main()
