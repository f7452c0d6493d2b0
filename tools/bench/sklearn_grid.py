#!/usr/bin/python3
"""sklearn_grid.py - scikit-learn's MLPClassifier on the Fashion-MNIST benchmark grid.

The reference side of tools/bench/sklearn_compare.sh. Trains, for every
activation x hidden_layer_sizes x seed given, an MLPClassifier with the
settings of the scikit-learn Fashion-MNIST benchmark (adam, learning rate
0.001, batch 200, alpha 0.0001, 10 epochs, no early stopping), on the
whole training set scaled to [0, 1], and prints one JSON object per line:
{"activation", "hidden_sizes", "seed", "test_accuracy", "seconds_per_epoch"}.

Runs with Debian's python3-sklearn, so it must be started with /usr/bin/python3.
"""
import argparse
import gzip
import json
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier


def load_idx(images, labels):
    """Read an IDX image/label pair (gzip) into float32 [0,1] rows and int labels."""
    with gzip.open(images, "rb") as f:
        data = f.read()
    n, rows, cols = (int.from_bytes(data[i:i + 4], "big") for i in (4, 8, 12))
    x = np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, rows * cols)
    with gzip.open(labels, "rb") as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    return x.astype(np.float32) / 255.0, y.astype(np.int64)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--activations", default="tanh,relu")
    p.add_argument("--sizes", default="10;100;10,10;100,10",
                   help="hidden_layer_sizes, ';' between networks")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--epochs", type=int, default=10)
    args = p.parse_args()

    xtr, ytr = load_idx(f"{args.data}/train-images-idx3-ubyte.gz",
                        f"{args.data}/train-labels-idx1-ubyte.gz")
    xte, yte = load_idx(f"{args.data}/t10k-images-idx3-ubyte.gz",
                        f"{args.data}/t10k-labels-idx1-ubyte.gz")
    warnings.simplefilter("ignore", ConvergenceWarning)
    for act in args.activations.split(","):
        for sizes in args.sizes.split(";"):
            hidden = tuple(int(s) for s in sizes.split(","))
            for seed in (int(s) for s in args.seeds.split(",")):
                clf = MLPClassifier(hidden_layer_sizes=hidden, activation=act,
                                    solver="adam", learning_rate_init=0.001,
                                    batch_size=200, alpha=0.0001,
                                    max_iter=args.epochs, random_state=seed,
                                    shuffle=True, early_stopping=False)
                t0 = time.perf_counter()
                clf.fit(xtr, ytr)
                secs = time.perf_counter() - t0
                acc = float((clf.predict(xte) == yte).mean())
                print(json.dumps({"activation": act, "hidden_sizes": list(hidden),
                                  "seed": seed, "test_accuracy": acc,
                                  "seconds_per_epoch": secs / clf.n_iter_}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
