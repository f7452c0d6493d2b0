#!/usr/bin/env python3
"""report.py - the markdown table of the GPU benchmark (tools/bench/gpu/run.sh)

Usage: report.py OUTDIR [BENCHMARKS.md]

Reads the "key value" files run.sh left in OUTDIR and the CPU figures of
docs/BENCHMARKS.md (the meshsweep s/epoch column of the sklearn-grid table,
"(a) 784-100-10" and "(b) 784-1024x4-10" median wall, Haswell kernel), and
prints one markdown table: per network, s/epoch with TF32 off and on, the
speed-up over the CPU figure (the issue's target: >= 5x for the sklearn
grid), PyTorch's s/epoch (CUDA graphs) and our ratio to it; then cuBLAS's
SGEMM rate and the achieved fraction of the 8 x 4096 network (target >=
0.60), correctness, and several networks at once. Standard library only.
"""
import os
import re
import sys


def kv(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 1)
                if len(parts) == 2:
                    out[parts[0]] = parts[1]
    except OSError:
        pass
    return out


def num(d, key):
    try:
        return float(d[key])
    except (KeyError, ValueError):
        return None


def fmt(v, spec=".4f"):
    return "n/a" if v is None else format(v, spec)


def cpu_figures(md_path):
    """{(act, hidden): s/epoch} from docs/BENCHMARKS.md."""
    cpu = {}
    try:
        text = open(md_path).read()
    except OSError:
        return cpu
    grid = text.split("With `l2: 5e-7`", 1)
    if len(grid) == 2:
        for m in re.finditer(r"^\| (relu|tanh) \| ([\d,]+) \| \d+ \| [^|]+\|"
                             r" [^|]+\| [^|]+\| ([\d.]+) \|", grid[1], re.M):
            cpu.setdefault((m.group(1), m.group(2)), float(m.group(3)))
    m = re.search(r"\(a\) 784-100-10, s/epoch, median wall \| ([\d.]+)", text)
    if m:  # the grid table's own figure comes first
        cpu.setdefault(("relu", "100"), float(m.group(1)))
    m = re.search(r"\(b\) 784-1024x4-10, s/epoch, median wall \| ([\d.]+)",
                  text)
    if m:
        cpu[("relu", "1024x4")] = float(m.group(1))
    return cpu


def main():
    out = sys.argv[1]
    md = sys.argv[2] if len(sys.argv) > 2 else "docs/BENCHMARKS.md"
    cpu = cpu_figures(md)
    probe = kv(os.path.join(out, "probe.txt"))
    lines = []
    if probe.get("cuda_available") == "0":
        lines.append(f"No usable cuda backend: {probe.get('cuda_reason', '?')}"
                     "; GPU figures skipped.\n")
    lines.append("| network | s/epoch TF32 off | s/epoch TF32 on | CPU "
                 "s/epoch (BENCHMARKS.md) | speed-up vs CPU, x (off / on) | "
                 "PyTorch s/epoch (graphs, TF32 off / on) | ours / PyTorch |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    nets = [(a, h) for a in ("relu", "tanh")
            for h in ("10", "100", "10,10", "100,10")]
    nets += [("relu", "1024x4"), ("relu", "4096x8")]
    worst_grid = None
    for act, h in nets:
        off = num(kv(os.path.join(out, f"speed_{act}_{h}_tf0.txt")),
                  "epoch_seconds")
        on = num(kv(os.path.join(out, f"speed_{act}_{h}_tf1.txt")),
                 "epoch_seconds")
        c = cpu.get((act, h))
        t_off = num(kv(os.path.join(out, f"torch_{act}_{h}_tf0_g1.txt")),
                    "epoch_seconds")
        t_on = num(kv(os.path.join(out, f"torch_{act}_{h}_tf1_g1.txt")),
                   "epoch_seconds")
        up_off = c / off if c and off else None
        up_on = c / on if c and on else None
        if "x" not in h and up_off is not None:
            worst_grid = up_off if worst_grid is None else min(worst_grid,
                                                               up_off)
        ratio = off / t_off if off and t_off else None
        name = f"784-{h.replace(',', '-')}-10 {act}"
        if "x" in h:
            w, d = h.split("x")
            name = f"784-{d} x {w}-10 {act}"
        lines.append(
            f"| {name} | {fmt(off)} | {fmt(on)} | {fmt(c)} | "
            f"{fmt(up_off, '.1f')} / {fmt(up_on, '.1f')} | "
            f"{fmt(t_off)} / {fmt(t_on)} | {fmt(ratio, '.2f')} |")
    # The whole epoch as one graph (MESHSWEEP_CUDA_EPOCH_GRAPH=1), TF32 off
    worst_eg = None
    for h in ("10", "10,10", "100"):
        d = kv(os.path.join(out, f"speed_relu_{h}_tf0_eg.txt"))
        off = num(d, "epoch_seconds")
        c = cpu.get(("relu", h))
        t_off = num(kv(os.path.join(out, f"torch_relu_{h}_tf0_g1.txt")),
                    "epoch_seconds")
        up = c / off if c and off else None
        if up is not None:
            worst_eg = up if worst_eg is None else min(worst_eg, up)
        ratio = off / t_off if off and t_off else None
        note = ""
        if d and d.get("epoch_graphs") in (None, "0"):
            note = " (not used: see speed_relu_%s_tf0_eg.err)" % h
        lines.append(
            f"| 784-{h.replace(',', '-')}-10 relu epoch graph{note} | "
            f"{fmt(off)} | n/a | {fmt(c)} | {fmt(up, '.1f')} / n/a | "
            f"{fmt(t_off)} / n/a | {fmt(ratio, '.2f')} |")
    # The own small-GEMM kernel (MESHSWEEP_CUDA_TINY_GEMM=1), TF32 off; tgeg:
    # with the epoch graph too
    worst_tg = None
    for h, tag, what in (("10", "tg", "small GEMM"),
                         ("10,10", "tg", "small GEMM"),
                         ("100,10", "tg", "small GEMM"),
                         ("10", "tgeg", "small GEMM + epoch graph")):
        d = kv(os.path.join(out, f"speed_relu_{h}_tf0_{tag}.txt"))
        off = num(d, "epoch_seconds")
        c = cpu.get(("relu", h))
        t_off = num(kv(os.path.join(out, f"torch_relu_{h}_tf0_g1.txt")),
                    "epoch_seconds")
        up = c / off if c and off else None
        if up is not None and tag == "tg":
            worst_tg = up if worst_tg is None else min(worst_tg, up)
        ratio = off / t_off if off and t_off else None
        note = ""
        if tag == "tgeg" and d and d.get("epoch_graphs") in (None, "0"):
            note = " (epoch graph not used: see speed_relu_10_tf0_tgeg.err)"
        lines.append(
            f"| 784-{h.replace(',', '-')}-10 relu {what}{note} | "
            f"{fmt(off)} | n/a | {fmt(c)} | {fmt(up, '.1f')} / n/a | "
            f"{fmt(t_off)} / n/a | {fmt(ratio, '.2f')} |")
    eager = num(kv(os.path.join(out, "torch_relu_100_tf0_g0.txt")),
                "epoch_seconds")
    lines.append("")
    lines.append(f"PyTorch eager (no graphs), 784-100-10 relu, TF32 off: "
                 f"{fmt(eager)} s/epoch.")
    lines.append(f"Slowest sklearn-grid speed-up over the CPU (TF32 off): "
                 f"{fmt(worst_grid, '.1f')} x (target >= 5 x); with the "
                 f"epoch graph (relu 10, 10-10, 100): {fmt(worst_eg, '.1f')} x; "
                 f"with the small-GEMM kernel (relu 10, 10-10, 100-10): "
                 f"{fmt(worst_tg, '.1f')} x.")
    lines.append("")
    lines.append("| 8 x 4096 (batch 200) | TF32 off | TF32 on |")
    lines.append("| --- | --- | --- |")
    rows = {"network GFLOP/s (6 B in out per layer)": [],
            "cuBLAS SGEMM GFLOP/s, same shapes": [],
            "achieved fraction (target >= 0.60)": [],
            "cuBLAS SGEMM GFLOP/s, 8192^3": []}
    for tf in (0, 1):
        s = kv(os.path.join(out, f"speed_relu_4096x8_tf{tf}.txt"))
        g = num(kv(os.path.join(out, f"gemm_net_4096x8_tf{tf}.txt")),
                "gemm_gflops")
        sq = num(kv(os.path.join(out, f"gemm_square_tf{tf}.txt")),
                 "gemm_gflops")
        flops, secs = num(s, "epoch_flops"), num(s, "epoch_seconds")
        rate = flops / secs * 1e-9 if flops and secs else None
        rows["network GFLOP/s (6 B in out per layer)"].append(fmt(rate, ".0f"))
        rows["cuBLAS SGEMM GFLOP/s, same shapes"].append(fmt(g, ".0f"))
        rows["achieved fraction (target >= 0.60)"].append(
            fmt(rate / g if rate and g else None, ".3f"))
        rows["cuBLAS SGEMM GFLOP/s, 8192^3"].append(fmt(sq, ".0f"))
    for k, v in rows.items():
        lines.append(f"| {k} | {v[0]} | {v[1]} |")
    c = kv(os.path.join(out, "correct.txt"))
    lines.append("")
    lines.append(f"Correctness ({c.get('correct_networks', '?')} random "
                 f"networks, TF32 off): max relative loss difference "
                 f"{c.get('correct_max_rel_20', 'n/a')} after 20 steps "
                 f"(target 1e-4), {c.get('correct_max_rel_epoch', 'n/a')} "
                 f"after one epoch (target 1e-3), "
                 f"{c.get('correct_failures', 'n/a')} failing.")
    base = num(kv(os.path.join(out, "multi_1.txt")), "multi_networks_per_s")
    parts = []
    for n in (1, 2, 4, 8):
        v = num(kv(os.path.join(out, f"multi_{n}.txt")),
                "multi_networks_per_s")
        if v is not None:
            parts.append(f"N={n}: {v:.3f}/s ({v / base:.2f}x)" if base
                         else f"N={n}: {v:.3f}/s")
    lines.append("Several networks at once (784-100-10-10 relu, 2 epochs, a "
                 "thread and a backend each): " +
                 (", ".join(parts) if parts else "n/a") + ".")
    # The profile: device microseconds per op of one uncaptured step and
    # of one graph replay (bench_gpu speed with MESHSWEEP_CUDA_PROFILE=1)
    for h, tag in (("10", ""), ("100,10", ""), ("100,10", "_tg")):
        path = os.path.join(out, f"profile_relu_{h}{tag}.txt")
        try:
            prof = [l.split() for l in open(path) if l.startswith("profile ")]
        except OSError:
            prof = []
        step_us = num(kv(os.path.join(out, f"speed_relu_{h}_tf0{tag}.txt")),
                      "epoch_seconds")
        kind = ", small-GEMM kernel" if tag else ""
        lines.append("")
        lines.append(f"Profile, 784-{h.replace(',', '-')}-10 relu{kind}, TF32 off "
                     f"(device us; graph step in the speed run: "
                     f"{fmt(step_us / 300 * 1e6 if step_us else None, '.1f')}"
                     f" us = s/epoch / 300):")
        if not prof:
            lines.append("n/a")
            continue
        lines.append("| section | # | op | shape | us |")
        lines.append("| --- | --- | --- | --- | --- |")
        for p in prof:
            if len(p) > 2 and p[1] == "graph_nodes":
                lines.append(f"| captured step | nodes | "
                             f"{' '.join(p[2:])} | | |")
            elif len(p) == 4 and p[2] == "total":
                lines.append(f"| {p[1]} | total | | | {p[3]} |")
            elif len(p) == 6:
                lines.append(f"| {p[1]} | {p[2]} | {p[3]} | {p[4]} | {p[5]} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
