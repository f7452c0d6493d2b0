#!/usr/bin/python3
"""sklearn_compare.py - side-by-side table of meshsweep and scikit-learn results.

Reads meshsweep result rows (a JSON array, from `meshsweep run --format json`)
and scikit-learn lines (from sklearn_grid.py), averages test accuracy over
seeds per (activation, hidden sizes), and prints a Markdown table with the
difference in points and the time-per-epoch ratio. Exit status 1 when a
network is more than --tolerance points below scikit-learn or the mean over
networks is lower; 0 otherwise.
"""
import argparse
import json
import statistics
import sys


def key_of(activation, sizes):
    return (activation, tuple(sizes))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("meshsweep_json")
    p.add_argument("sklearn_jsonl")
    p.add_argument("--tolerance", type=float, default=0.5, help="points")
    args = p.parse_args()

    ours, ref = {}, {}
    with open(args.meshsweep_json) as f:
        rows = json.load(f)
    if isinstance(rows, dict):
        rows = rows.get("rows") or rows.get("results") or []
    for r in rows:
        c = r["config"]
        sizes = c.get("hidden_sizes") or [c["width"]] * c["hidden_layers"]
        ours.setdefault(key_of(c["activation"], sizes), []).append(
            (r["test_accuracy"], r["seconds_per_epoch"]))
    with open(args.sklearn_jsonl) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                ref.setdefault(key_of(r["activation"], r["hidden_sizes"]), []).append(
                    (r["test_accuracy"], r["seconds_per_epoch"]))

    print("| activation | hidden sizes | seeds | meshsweep test acc | scikit-learn test acc "
          "| difference (points) | meshsweep s/epoch | scikit-learn s/epoch | time ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    diffs, worst, failed = [], None, False
    for k in sorted(ref):
        if k not in ours:
            print(f"missing in meshsweep results: {k}", file=sys.stderr)
            failed = True
            continue
        a_ours = statistics.mean(v[0] for v in ours[k]) * 100
        a_ref = statistics.mean(v[0] for v in ref[k]) * 100
        t_ours = statistics.mean(v[1] for v in ours[k])
        t_ref = statistics.mean(v[1] for v in ref[k])
        d = a_ours - a_ref
        diffs.append(d)
        worst = d if worst is None else min(worst, d)
        if d < -args.tolerance:
            failed = True
        print(f"| {k[0]} | {','.join(map(str, k[1]))} | {len(ours[k])}/{len(ref[k])} "
              f"| {a_ours:.2f} | {a_ref:.2f} | {d:+.2f} | {t_ours:.3f} | {t_ref:.3f} "
              f"| {t_ours / t_ref:.2f} |")
    if diffs:
        mean_d = statistics.mean(diffs)
        print(f"\nmean difference {mean_d:+.2f} points over {len(diffs)} networks; "
              f"worst {worst:+.2f}; tolerance -{args.tolerance:.2f}")
        if mean_d < 0:
            failed = True
    print("RESULT:", "FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
