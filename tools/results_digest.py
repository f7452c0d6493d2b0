#!/usr/bin/env python3
"""results_digest.py - sha256 of a results CSV (meshsweep results --format
csv, on stdin): the data rows sorted, without the verification columns
(verdict, verdict_revision, verdict_operators, counted), which change after
a sweep has ended as re-evaluations arrive (docs/VERIFICATION.md). Prints
the 64 hex digits. Used by tools/pool-demo.sh and its test, so both compute
one digest the same way."""
import csv
import hashlib
import sys

VERIFICATION = {"verdict", "verdict_revision", "verdict_operators", "counted"}


def main() -> int:
    rows = list(csv.reader(sys.stdin))
    if not rows:
        print("results_digest.py: no CSV header on stdin", file=sys.stderr)
        return 1
    keep = [i for i, name in enumerate(rows[0]) if name not in VERIFICATION]
    lines = sorted(",".join(r[i] for i in keep if i < len(r)) for r in rows[1:])
    print(hashlib.sha256("\n".join(lines).encode()).hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
