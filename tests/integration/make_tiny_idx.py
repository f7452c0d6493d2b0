#!/usr/bin/env python3
"""make_tiny_idx - small synthetic datasets for the integration tests.

Writes a Fashion-MNIST-shaped set (IDX, gzip, the four file names of
Debian's dataset-fashion-mnist) or CSV files, with a learnable pattern:
class c lights up its own block of pixels, plus noise. Deterministic
(fixed seed). Also writes the broken variants the bad-input tests need.

usage:
  make_tiny_idx.py idx DIR [--train N] [--test N] [--side S] [--classes C]
                           [--fault truncated|count|label] [--raw]
  make_tiny_idx.py csv DIR [--train N] [--test N] [--features F]
                           [--fault ragged|nonnumber]

idx faults (applied to the TRAIN files):
  truncated  the image file ends in the middle of an image
  count      the label file holds fewer labels than there are images
  label      one label is 255, outside any class range
csv faults (applied to train.csv): ragged (a row with a missing field),
nonnumber (a field "abc").
"""
import argparse
import gzip
import os
import random
import struct


def samples(n, side, classes, rng):
    """n (pixels, label) pairs: class c brightens block c of the image."""
    out = []
    n_pix = side * side
    for i in range(n):
        label = i % classes
        px = [rng.randrange(0, 60) for _ in range(n_pix)]
        block = max(1, n_pix // classes)
        for k in range(label * block, min(n_pix, (label + 1) * block)):
            px[k] = rng.randrange(180, 256)
        out.append((px, label))
    rng.shuffle(out)
    return out


def write(path, data, raw):
    if raw:
        with open(path, "wb") as f:
            f.write(data)
    else:
        with gzip.open(path + ".gz", "wb") as f:
            f.write(data)


def idx_images(rows, side):
    head = struct.pack(">IIII", 0x00000803, len(rows), side, side)
    return head + bytes(p for px, _ in rows for p in px)


def idx_labels(rows):
    head = struct.pack(">II", 0x00000801, len(rows))
    return head + bytes(label for _, label in rows)


def make_idx(args):
    rng = random.Random(12345)
    os.makedirs(args.dir, exist_ok=True)
    for name, n in (("train", args.train), ("t10k", args.test)):
        rows = samples(n, args.side, args.classes, rng)
        images = idx_images(rows, args.side)
        labels = idx_labels(rows)
        if name == "train" and args.fault == "truncated":
            images = images[: 16 + args.side * args.side * (n // 2) + 5]
        if name == "train" and args.fault == "count":
            labels = struct.pack(">II", 0x00000801, n - 3) + labels[8:-3]
        if name == "train" and args.fault == "label":
            labels = labels[:8 + n // 2] + bytes([255]) + labels[8 + n // 2 + 1:]
        write(os.path.join(args.dir, name + "-images-idx3-ubyte"), images, args.raw)
        write(os.path.join(args.dir, name + "-labels-idx1-ubyte"), labels, args.raw)


def make_csv(args):
    rng = random.Random(54321)
    os.makedirs(args.dir, exist_ok=True)
    side = max(1, int(args.features ** 0.5))
    for name, n in (("train", args.train), ("test", args.test)):
        rows = samples(n, side, args.classes, rng)
        lines = [",".join(["label"] + ["f%d" % k for k in range(side * side)])]
        for px, label in rows:
            lines.append(",".join([str(label)] + [str(p) for p in px]))
        if name == "train" and args.fault == "ragged":
            lines[5] = lines[5].rsplit(",", 1)[0]
        if name == "train" and args.fault == "nonnumber":
            parts = lines[7].split(",")
            parts[3] = "abc"
            lines[7] = ",".join(parts)
        with open(os.path.join(args.dir, name + ".csv"), "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("format", choices=["idx", "csv"])
    ap.add_argument("dir")
    ap.add_argument("--train", type=int, default=600)
    ap.add_argument("--test", type=int, default=200)
    ap.add_argument("--side", type=int, default=8)
    ap.add_argument("--features", type=int, default=16)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--fault", default=None)
    ap.add_argument("--raw", action="store_true", help="IDX without gzip")
    args = ap.parse_args()
    if args.format == "idx":
        make_idx(args)
    else:
        make_csv(args)


if __name__ == "__main__":
    main()
