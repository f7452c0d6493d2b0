#!/usr/bin/env bash
# ms_api_analysis_test - the analysis agrees everywhere: a real small depth
# sweep on a live meshsweepd (--no-beacon, loopback, tiny Fashion-MNIST-
# shaped data); GET /api/v1/sweeps/{id}/analysis equals the "analysis" of
# `meshsweep results --analyze --json` from the node (--node) and from the
# store (--data-dir) once canonicalised, with and without verified=1 /
# --verified; the time fit states its basis (one fingerprint class here)
# in JSON and in the text; /api/v1/status carries the node's calibration
# figure, the same figure its rows carry.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 300 --test 100
# One worker: every row carries that worker's figure, which /status shows.
ms_start_daemon "$T/node" --workers 1 --no-beacon

# /status: the calibration figure, soon after start (the worker measures
# it before its first task; the status snapshot follows within 200 ms).
status_gflops() {
    curl -sf "$NODE/api/v1/status" >"$T/node-status.json" &&
        python3 -c 'import json,sys; g=json.load(open(sys.argv[1])).get("calibration_gflops"); sys.exit(0 if isinstance(g,(int,float)) and g>0 else 1)' "$T/node-status.json"
}
ms_wait_until 20 status_gflops || fail "/api/v1/status has no calibration_gflops: $(cat "$T/node-status.json")"
ok "/api/v1/status carries calibration_gflops ($(ms_json_get "$T/node-status.json" 'd["calibration_gflops"]') GFLOP/s)"
# ... and the platform, before any task ran (the worker announces it with
# the figure); the rows below carry the same object.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d.get("platform"); sys.exit(0 if isinstance(p,dict) and p.get("backend") and p.get("calibration_gflops")==d["calibration_gflops"] and d["tasks_trained_total"]==0 else 1)' "$T/node-status.json" ||
    fail "/api/v1/status has no platform before the first task: $(cat "$T/node-status.json")"
ok "/api/v1/status carries the platform before any task ($(ms_json_get "$T/node-status.json" 'd["platform"]["backend"]'), $(ms_json_get "$T/node-status.json" 'd["platform"]["cpu_model"]'))"

cat >"$T/depth.yaml" <<'Y'
name: analysis-test
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2, 4]}
  width:         {value: 16}
  activation:    {value: relu}
  seed:          {values: [1, 2]}
  epochs:        {value: 2}
  batch_size:    {value: 50}
Y
sweep=$("$MS" submit "$T/depth.yaml" 2>"$T/submit.err")
[[ "$sweep" =~ ^[0-9a-f]{64}$ ]] || fail "submit printed '$sweep': $(cat "$T/submit.err")"
ms_wait_until 90 ms_sweep_finished "$sweep" || fail "sweep not finished within 90 s"
ok "depth sweep of 6 tasks finished"

api=$NODE/api/v1/sweeps/$sweep
curl -sf "$api/analysis" >"$T/api.json" || fail "GET analysis failed"
curl -sf "$api/analysis?verified=1" >"$T/api-verified.json" || fail "GET analysis?verified=1 failed"
curl -sf "$api/results?verified=1&format=json" >"$T/rows-verified.json" || fail "GET results?verified=1 failed"
curl -sf "$api/results?format=json" >"$T/rows.json" || fail "GET results failed"
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' "$api/analysis?verified=2")
[ "$code" = 400 ] || fail "analysis?verified=2 answered $code, not 400"
grep -q 'verified' "$T/bad.json" || fail "the 400 does not name verified: $(cat "$T/bad.json")"
"$MS" results "$sweep" --analyze --json >"$T/cli-node.json"
"$MS" results "${sweep:0:12}" --data-dir "$T/node" --analyze --json >"$T/cli-store.json"
"$MS" results "$sweep" --analyze --verified --json >"$T/cli-node-verified.json"
"$MS" results "$sweep" --data-dir "$T/node" --analyze --verified --json >"$T/cli-store-verified.json"
"$MS" results "$sweep" --analyze >"$T/cli-node.txt"
"$MS" results "$sweep" --data-dir "$T/node" --analyze >"$T/cli-store.txt"
"$MS" results "$sweep" --analyze --verified >"$T/cli-node-verified.txt"

python3 - "$T" "$(ms_json_get "$T/node-status.json" 'd["calibration_gflops"]')" <<'PY'
import json, sys
t, status_gflops = sys.argv[1], float(sys.argv[2])
def load(name):
    with open(f"{t}/{name}") as f:
        return json.load(f)
def canon(v):
    # Canonical text: sorted keys, numbers as Python reads them (the API
    # and the CLI both write shortest round-trip reals; 1 == 1.0).
    return json.dumps(v, sort_keys=True)
def same(a, b, what):
    if a != b:
        ca, cb = canon(a).split(", "), canon(b).split(", ")
        diff = [(x, y) for x, y in zip(ca, cb) if x != y][:5]
        sys.exit(f"{what} differ: {diff}")

api, api_v = load("api.json"), load("api-verified.json")
same(api, load("cli-node.json")["analysis"], "API and CLI (--node) analyses")
same(api, load("cli-store.json")["analysis"], "API and CLI (--data-dir) analyses")
same(api_v, load("cli-node-verified.json")["analysis"], "verified: API and CLI (--node)")
same(api_v, load("cli-store-verified.json")["analysis"], "verified: API and CLI (--data-dir)")

rows = load("rows.json")["rows"]
assert len(rows) == 6 and all(r["status"] == "ok" for r in rows), rows
assert api["n_rows"] == 6 and api["n_ok"] == 6 and api["verified_only"] is False
assert api_v["verified_only"] is True
assert api_v["n_rows"] == len(load("rows-verified.json")["rows"]), api_v["n_rows"]

# One node, one machine class: the fit is that class's, in its seconds.
fps = {r["fingerprint"] for r in rows}
assert len(fps) == 1 and None not in fps, fps
fp = fps.pop()
assert len(api["groups"]) == 1, api["groups"]
g = api["groups"][0]
assert [d["x"] for d in g["points"]] == [1, 2, 4]
assert g["plateau_to"] in (1, 2, 4) and g["best_x"] in (1, 2, 4)
assert g["time_fit_basis"] == "fingerprint:" + fp[:12], g["time_fit_basis"]
assert g["time_fit_reference_gflops"] is None
assert len(g["time_fits"]) == 1
c = g["time_fits"][0]
assert c["fingerprint"] == fp and c["class"] == fp[:12] and c["n_rows"] == 6
assert c["nodes"] == [rows[0]["node_id"]], c["nodes"]
assert c["label"].startswith(rows[0]["platform"]["backend"] + ": "), c["label"]
assert g["time_fit"] == c["fit"] and g["time_fit"]["n"] == 6
assert g["time_fit_normalised"]["n"] == 6 and g["time_fit_n_uncalibrated"] == 0
assert all(d["n_seconds_normalised"] == d["n_seconds"] == 2 for d in g["points"])

# Calibration: every row carries the worker's figure, which /status shows
# and which is then the reference of the normalised fit.
figs = {r["platform"]["calibration_gflops"] for r in rows}
assert figs == {status_gflops}, (figs, status_gflops)
# The platform /status showed before the first task is the rows' own.
start_platform = load("node-status.json")["platform"]
assert all(r["platform"] == start_platform for r in rows), (start_platform, rows[0]["platform"])
assert api["time_reference_gflops"] == status_gflops and api["time_reference"] == "median"
assert c["calibration_gflops"] == status_gflops
# At the node's own speed the normalised fit is the plain one.
for k in ("slope", "intercept"):
    assert abs(g["time_fit_normalised"][k] - g["time_fit"][k]) <= 1e-9 * max(1, abs(g["time_fit"][k])), k
PY
ok "API and CLI analyses (node and store, all and verified rows) are equal; one class, basis fingerprint"

cmp -s "$T/cli-node.txt" "$T/cli-store.txt" || fail "results --analyze text differs between --node and --data-dir"
prefix=$(ms_json_get "$T/api.json" 'd["groups"][0]["time_fit_basis"].split(":")[1]')
grep -q "fit basis: one machine class, fingerprint $prefix (" "$T/cli-node.txt" ||
    fail "the text does not name the fit basis: $(grep -i 'basis\|time' "$T/cli-node.txt")"
grep -q '^Time fits: per machine class (backend fingerprint)' "$T/cli-node.txt" ||
    fail "the text does not say how times are fitted"
grep -Eq 'time per epoch = [-0-9.e]+ [+-] [0-9][-+0-9.e]* \* depth s' "$T/cli-node.txt" ||
    fail "no time fit in the text"
grep -q '^Rows: counted results' "$T/cli-node.txt" || fail "the text does not say which rows"
grep -q '^Rows: verified results only' "$T/cli-node-verified.txt" ||
    fail "--verified: the text does not say verified rows only"
ok "results --analyze text names the fit basis and the rows (node and store alike)"

# -- Any axis, any metric: a second sweep of depth x width x 3 seeds.
#    ?x=width and ?metric=test_loss (with the spec's own metric,
#    val_loss minimised, as the default); the CLI's --x/--metric give the
#    same analysis; a bad axis or metric is a 400 naming it and listing
#    the valid ones, and exit 2 from the CLI.
cat >"$T/axes.yaml" <<'Y'
name: analysis-axes
dataset: fashion-mnist
metric: {name: val_loss, goal: minimize}
parameters:
  hidden_layers: {values: [1, 2]}
  width:         {values: [8, 16]}
  activation:    {value: relu}
  seed:          {values: [1, 2, 3]}
  epochs:        {value: 1}
  batch_size:    {value: 50}
Y
axes=$("$MS" submit "$T/axes.yaml" 2>"$T/submit-axes.err")
[[ "$axes" =~ ^[0-9a-f]{64}$ ]] || fail "submit printed '$axes': $(cat "$T/submit-axes.err")"
ms_wait_until 90 ms_sweep_finished "$axes" || fail "axes sweep not finished within 90 s"
api=$NODE/api/v1/sweeps/$axes
curl -sf "$api/analysis" >"$T/axes-default.json" || fail "GET analysis (axes) failed"
curl -sf "$api/analysis?x=width" >"$T/axes-width.json" || fail "GET analysis?x=width failed"
curl -sf "$api/analysis?x=width&metric=test_loss" >"$T/axes-width-test-loss.json" ||
    fail "GET analysis?x=width&metric=test_loss failed"
code=$(curl -s -o "$T/axes-bad-x.json" -w '%{http_code}' "$api/analysis?x=activation")
[ "$code" = 400 ] || fail "analysis?x=activation answered $code, not 400"
code=$(curl -s -o "$T/axes-bad-m.json" -w '%{http_code}' "$api/analysis?metric=accuracy")
[ "$code" = 400 ] || fail "analysis?metric=accuracy answered $code, not 400"
"$MS" results "$axes" --x width --metric test_loss --json >"$T/axes-cli.json"
"$MS" results "$axes" --data-dir "$T/node" --x width --metric test_loss --json >"$T/axes-cli-store.json"
"$MS" results "$axes" --x width >"$T/axes-cli.txt"
ms_expect_exit 2 "$T/axes-cli-bad.err" "$MS" results "$axes" --x dropout
grep -q "^meshsweep: --x: 'dropout' is not swept: it takes one value (swept numeric parameters: hidden_layers, width)" "$T/axes-cli-bad.err" ||
    fail "--x dropout: $(cat "$T/axes-cli-bad.err")"
ms_expect_exit 2 "$T/axes-cli-badm.err" "$MS" results "$axes" --metric accuracy
grep -q "^meshsweep: --metric: unknown metric 'accuracy' (one of val_accuracy, " "$T/axes-cli-badm.err" ||
    fail "--metric accuracy: $(cat "$T/axes-cli-badm.err")"

python3 - "$T" <<'PY'
import json, math, sys
t = sys.argv[1]
def load(name):
    with open(f"{t}/{name}") as f:
        return json.load(f)
d, w, wl = load("axes-default.json"), load("axes-width.json"), load("axes-width-test-loss.json")
# The spec's metric, minimised, on the depth by default.
assert d["x"] == "hidden_layers" and d["metric"] == {"name": "val_loss", "goal": "minimize"}, (d["x"], d["metric"])
assert d["axes"] == ["hidden_layers", "width"], d["axes"]
assert [g["width"] for g in d["groups"]] == [8, 16]
# ?x=width: one group per depth, points at widths 8 and 16, 3 seeds each,
# a mean with its 95% interval (t(0.975, 2) = 4.3027).
assert w["x"] == "width" and w["x_scale"] == "linear" and w["metric"]["name"] == "val_loss"
assert [g["hidden_layers"] for g in w["groups"]] == [1, 2] and all(g["width"] is None for g in w["groups"])
for g in w["groups"]:
    assert [p["x"] for p in g["points"]] == [8, 16], g["points"]
    for p in g["points"]:
        assert p["n"] == 3 and p["n_metric"] == 3, p
        h = 4.3027 * p["std"] / math.sqrt(3)
        assert abs(p["lo"] - (p["mean"] - h)) < 1e-9 and abs(p["hi"] - (p["mean"] + h)) < 1e-9, p
    assert g["plateau_text"].startswith("val_loss "), g["plateau_text"]
    assert g["time_fit"] is not None and g["time_fit"]["n"] == 6
# ?metric=test_loss: minimised by its name; the best is the smallest mean.
assert wl["metric"] == {"name": "test_loss", "goal": "minimize"}, wl["metric"]
for g in wl["groups"]:
    means = [p["mean"] for p in g["points"]]
    assert g["best_mean"] == min(means), (g["best_mean"], means)
# The CLI computes the same (node and store).
assert load("axes-cli.json")["analysis"] == wl, "CLI --x width --metric test_loss differs from the API"
assert load("axes-cli-store.json")["analysis"] == wl, "CLI (--data-dir) differs from the API"
bad = load("axes-bad-x.json")["error"]
assert "'activation' is not numeric (swept numeric parameters: hidden_layers, width)" in bad, bad
bad = load("axes-bad-m.json")["error"]
assert "unknown metric 'accuracy' (one of val_accuracy" in bad, bad
PY
ok "?x=width, ?metric=test_loss: points with 95% intervals over 3 seeds, the spec's metric by default; CLI --x/--metric agree; bad axis and metric are 400 / exit 2 naming the valid ones"
grep -q '^Axis: width (width); metric: val_loss (minimize)' "$T/axes-cli.txt" ||
    fail "results --x width: no axis line: $(head -5 "$T/axes-cli.txt")"
grep -Eq 'val_loss (stops|still) improving at width' "$T/axes-cli.txt" ||
    fail "results --x width: no plateau sentence: $(grep -i improving "$T/axes-cli.txt")"
ok "results --x width prints the axis, the metric and the plateau sentence"
