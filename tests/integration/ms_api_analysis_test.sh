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
assert [d["depth"] for d in g["depths"]] == [1, 2, 4]
assert g["plateau_depth"] in (1, 2, 4) and g["best_depth"] in (1, 2, 4)
assert g["time_fit_basis"] == "fingerprint:" + fp[:12], g["time_fit_basis"]
assert g["time_fit_reference_gflops"] is None
assert len(g["time_fits"]) == 1
c = g["time_fits"][0]
assert c["fingerprint"] == fp and c["class"] == fp[:12] and c["n_rows"] == 6
assert c["nodes"] == [rows[0]["node_id"]], c["nodes"]
assert c["label"].startswith(rows[0]["platform"]["backend"] + ": "), c["label"]
assert g["time_fit"] == c["fit"] and g["time_fit"]["n"] == 6
assert g["time_fit_normalised"]["n"] == 6 and g["time_fit_n_uncalibrated"] == 0
assert all(d["n_seconds_normalised"] == d["n_seconds"] == 2 for d in g["depths"])

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
