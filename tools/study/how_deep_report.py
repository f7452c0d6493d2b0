#!/usr/bin/env python3
"""how_deep_report - the tables and the plot of docs/RESULTS.md "How deep?".

Usage: how_deep_report.py RESULTS.json [...] [--plot FILE.svg]

Reads what `meshsweep run examples/how-deep.yaml --format json --analyze`
prints (a JSON array with one {"rows", "analysis"} object per sweep; a
single object or several files are accepted too) and writes Markdown to
stdout: the accuracy-against-depth table of every family (the analysis's
means and 95% intervals, so the numbers are the ones `--analyze` prints),
each family's plateau sentence and time fit, and the first epoch's
gradient norms per layer that show where a plain family stops training.
With --plot, a plot of validation accuracy against depth (gnuplot; SVG,
or PNG when the file name ends in .png).

Nothing here computes a statistic the analysis already gives; the
gradient-norm summary is read from the result rows (grad_norms: one
Frobenius norm per dense layer, layer 0 first, after the first epoch).
"""
import json
import math
import os
import subprocess
import sys
import tempfile


def load(paths):
    sweeps = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        sweeps.extend(d if isinstance(d, list) else [d])
    return sweeps


def family(rows):
    c = rows[0]["config"]
    arch = c.get("architecture", "plain")
    name = f"{arch} {c['activation']}"
    extra = [c.get("init", "")]
    if "gain" in c:
        extra.append(f"gain {c['gain']:g}")
    if c.get("norm", "none") != "none":
        extra.append(f"{c['norm']} norm")
    return f"{name} ({', '.join(e for e in extra if e)})"


def fmt_point(p, key):
    m = p.get(f"{key}_mean")
    if m is None:
        return "n/a"
    if key == "val_accuracy" and p.get("lo") is not None:
        return f"{m:.4f} [{p['lo']:.4f}, {p['hi']:.4f}]"
    return f"{m:.4f}"


def grad_summary(rows):
    """Per depth (seed 1): layer 0's, the middle layer's and the output
    layer's gradient norm, and how many layers have a norm under 1e-6 of
    the largest (layers that do not learn)."""
    out = {}
    for r in rows:
        c = r["config"]
        g = r.get("grad_norms") or []
        if c.get("seed") != 1 or not g:
            continue
        vals = [x if isinstance(x, (int, float)) else float("nan") for x in g]
        big = max((v for v in vals if not math.isnan(v)), default=0.0)
        dead = sum(1 for v in vals if not math.isnan(v) and v <= 1e-6 * big)
        out[c["hidden_layers"]] = (vals[0], vals[len(vals) // 2], vals[-1],
                                   dead, len(vals))
    return out


def main(argv):
    plot = None
    paths = []
    i = 0
    while i < len(argv):
        if argv[i] == "--plot":
            plot = argv[i + 1]
            i += 2
        else:
            paths.append(argv[i])
            i += 1
    if not paths:
        sys.exit(__doc__)
    sweeps = load(paths)
    fams = []
    for s in sweeps:
        rows, a = s["rows"], s["analysis"]
        if not rows or not a.get("groups"):
            continue
        fams.append((family(rows), rows, a["groups"][0]))

    depths = sorted({p["x"] for _, _, g in fams for p in g["points"]})
    print("Validation accuracy, mean over seeds [95% interval], and test "
          "accuracy (mean):\n")
    head = "| depth | " + " | ".join(f"{n}: val | test" for n, _, _ in fams)
    print(head + " |")
    print("| ---: |" + " --- | --- |" * len(fams))
    for d in depths:
        cells = []
        for _, _, g in fams:
            p = next((q for q in g["points"] if q["x"] == d), None)
            if p is None:
                cells += ["", ""]
            else:
                cells += [fmt_point(p, "val_accuracy"),
                          fmt_point(p, "test_accuracy")]
        print(f"| {d} | " + " | ".join(cells) + " |")
    print()
    print("| family | plateau (the analysis's sentence) | time per epoch "
          "fit (s) | R^2 |")
    print("| --- | --- | --- | ---: |")
    for n, _, g in fams:
        f = g.get("time_fit") or {}
        fit = (f"{f['intercept']:.3f} + {f['slope']:.5f} x depth"
               if f else "n/a")
        r2 = f"{f['r2']:.3f}" if f else ""
        print(f"| {n} | {g.get('plateau_text', '')} | {fit} | {r2} |")
    print()
    print("First-epoch gradient norms (seed 1): layer 0, the middle layer, "
          "the output layer, and the layers whose norm is at most 1e-6 of "
          "the largest:\n")
    print("| family | depth | layer 0 | middle | output | layers not "
          "learning |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for n, rows, _ in fams:
        gs = grad_summary(rows)
        for d in sorted(gs):
            g0, gm, go, dead, n_l = gs[d]
            print(f"| {n} | {d} | {g0:.3g} | {gm:.3g} | {go:.3g} | "
                  f"{dead} of {n_l} |")
    if plot:
        s_plot(fams, plot)


def s_plot(fams, path):
    with tempfile.TemporaryDirectory() as tmp:
        term = ("pngcairo size 720,420" if path.endswith(".png")
                else "svg size 720,420 dynamic")
        cmds = [f"set terminal {term}",
                f"set output '{os.path.abspath(path)}'",
                "set logscale x 2", "set xlabel 'hidden layers (width 64)'",
                "set ylabel 'validation accuracy (mean over 3 seeds)'",
                "set yrange [0:1]", "set key bottom left", "set grid"]
        series = []
        for k, (n, _, g) in enumerate(fams):
            dat = os.path.join(tmp, f"f{k}.dat")
            with open(dat, "w") as f:
                for p in sorted(g["points"], key=lambda q: q["x"]):
                    m = p.get("val_accuracy_mean")
                    if m is None:
                        continue
                    lo = p.get("lo") if p.get("lo") is not None else m
                    hi = p.get("hi") if p.get("hi") is not None else m
                    f.write(f"{p['x']} {m} {lo} {hi}\n")
            series.append(f"'{dat}' using 1:2:3:4 with yerrorlines "
                          f"title '{n}'")
        cmds.append("plot " + ", ".join(series))
        subprocess.run(["gnuplot"], input="\n".join(cmds), text=True,
                       check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
