#!/usr/bin/env bash
# ms_api_csv_pandas_test - the results table as CSV loads in pandas (issue
# 5): a real small sweep on a live meshsweepd (--no-beacon, loopback, tiny
# Fashion-MNIST-shaped data), then GET /api/v1/sweeps/{id}/results?
# format=csv read by Debian's python3-pandas (pandas.read_csv, defaults):
#   - the columns are exactly the documented ones (docs/API.md "CSV
#     columns", node/derive/ms_results.h), in order: the top-level fields, then
#     config.KEY for every config key, sorted;
#   - one line per result, the same results as the JSON route;
#   - the numeric columns parse as numbers (int64 or float64), counted as
#     bool, lists (hidden_sizes, verdict_operators) as "a;b";
#   - every value equals the JSON route's for the same row (floats
#     exactly with float_precision="round_trip", and within 1e-12 with
#     pandas' default parser);
#   - the same with filters (config.activation=relu, status=ok) and with
#     verified=1 (on one node no row is verified: an empty frame that
#     still has every column).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
PY=/usr/bin/python3 # Debian's python3-pandas imports only there
"$PY" -c 'import pandas' 2>/dev/null || fail "no pandas for $PY (Debian's python3-pandas)"
ms_tiny_dataset --train 300 --test 100 >/dev/null
ms_start_daemon "$T/node" --workers 1 --no-beacon

cat >"$T/grid.yaml" <<'Y'
name: csv-pandas
dataset: fashion-mnist
parameters:
  activation:   {values: [relu, tanh]}
  hidden_sizes: {values: [[16], [16, 8]]}
  seed:         {values: [1, 2]}
  epochs:       {value: 1}
  batch_size:   {value: 50}
Y
sweep=$("$MS" submit "$T/grid.yaml" 2>"$T/submit.err")
[[ "$sweep" =~ ^[0-9a-f]{64}$ ]] || fail "submit printed '$sweep': $(cat "$T/submit.err")"
ms_wait_until 90 ms_sweep_finished "$sweep" || fail "sweep not finished within 90 s"
ok "sweep of 8 tasks finished"

api=$NODE/api/v1/sweeps/$sweep/results
n=0
for q in "" "config.activation=relu" "config.activation=tanh&status=ok" \
    "config.hidden_sizes=16;8" "verified=1"; do
    n=$((n + 1))
    sep=${q:+&}
    curl -sf "$api?format=csv$sep$q" >"$T/r$n.csv" || fail "GET results?format=csv$sep$q failed"
    curl -sf "$api?format=json&limit=1000$sep$q" >"$T/r$n.json" || fail "GET results?$q failed"
    "$PY" - "$T/r$n.csv" "$T/r$n.json" "$q" <<'PY' || fail "the CSV of '?$q' does not match (above)"
import json, math, sys
import pandas as pd

csv_path, json_path, query = sys.argv[1:4]
rows = json.load(open(json_path))["rows"]
assert isinstance(rows, list)

# The documented columns (docs/API.md "CSV columns", node/derive/ms_results.h).
TOP = ["task_id", "sweep_id", "node_id", "operator", "status", "error",
       "epochs", "train_seconds", "seconds_per_epoch", "val_accuracy",
       "val_loss", "test_accuracy", "test_loss", "params", "fingerprint",
       "weights_digest", "verdict", "verdict_revision", "verdict_operators",
       "counted"]
keys = sorted({k for r in rows for k in r["config"]})
want = TOP + ["config." + k for k in keys]

df = pd.read_csv(csv_path)
exact = pd.read_csv(csv_path, float_precision="round_trip")
cols = list(df.columns)
if rows:
    assert cols == want, "columns %s\n  want %s" % (cols, want)
else:
    assert cols == TOP, "columns of an empty table %s\n  want %s" % (cols, TOP)
assert len(df) == len(rows), "%d CSV lines, %d JSON rows" % (len(df), len(rows))

INTS = ["epochs", "params", "verdict_revision"]
FLOATS = ["train_seconds", "seconds_per_epoch", "val_accuracy", "val_loss",
          "test_accuracy", "test_loss"]
if rows:
    for c in INTS:
        assert str(df[c].dtype) == "int64", "%s is %s" % (c, df[c].dtype)
    for c in FLOATS:
        assert str(df[c].dtype) == "float64", "%s is %s" % (c, df[c].dtype)
    assert str(df["counted"].dtype) == "bool", "counted is %s" % df["counted"].dtype
    for c in ["config.seed", "config.epochs", "config.batch_size"]:
        assert str(df[c].dtype) == "int64", "%s is %s" % (c, df[c].dtype)

def same(want, got, got_exact, where):
    if want is None:
        assert got is None or (isinstance(got, float) and math.isnan(got)), \
            "%s: %r, want empty" % (where, got)
    elif isinstance(want, bool):
        assert bool(got) == want, "%s: %r, want %r" % (where, got, want)
    elif isinstance(want, (int, float)):
        assert float(got_exact) == float(want), "%s: %r (round_trip), want %r" % (where, got_exact, want)
        assert abs(float(got) - float(want)) <= 1e-12 * max(1.0, abs(want)), \
            "%s: %r, want %r" % (where, got, want)
    elif isinstance(want, list):
        assert str(got) == ";".join(str(x) for x in want), "%s: %r, want %r" % (where, got, want)
    else:
        assert str(got) == str(want), "%s: %r, want %r" % (where, got, want)

for i, r in enumerate(rows):
    line = df.iloc[i]
    line_exact = exact.iloc[i]
    where = "row %d (task %s)" % (i, r["task_id"][:12])
    for c in TOP:
        g = line[c]
        g = g.item() if hasattr(g, "item") else g
        same(r.get(c), g, line_exact[c], where + " " + c)
    for k in keys:
        g = line["config." + k]
        g = g.item() if hasattr(g, "item") else g
        same(r["config"].get(k), g, line_exact["config." + k], where + " config." + k)
    assert line["counted"] is True or bool(line["counted"]), where + ": not counted"

if query == "":
    assert len(rows) == 8, "%d rows of 8 tasks" % len(rows)
    assert set(df["status"]) == {"ok"}, set(df["status"])
    assert df["val_accuracy"].between(0, 1).all()
    assert set(df["config.hidden_sizes"]) == {"16", "16;8"}, set(df["config.hidden_sizes"])
elif query.startswith("config.activation=relu"):
    assert len(rows) == 4 and set(df["config.activation"]) == {"relu"}, df["config.activation"]
elif query.startswith("config.activation=tanh"):
    assert len(rows) == 4 and set(df["config.activation"]) == {"tanh"}
elif query.startswith("config.hidden_sizes"):
    assert len(rows) == 4 and set(df["config.hidden_sizes"]) == {"16;8"}
elif query == "verified=1":
    assert len(rows) == 0, "verified rows on one node: %d" % len(rows)
print("ok - ?format=csv%s: %d rows x %d columns, as the JSON route%s" % (
    "&" + query if query else "", len(df), len(cols),
    "" if not rows else " (val acc %.4f..%.4f)" % (df.val_accuracy.min(), df.val_accuracy.max())))
PY
done
ok "the CSV loads in pandas with the documented columns and the JSON route's values"
