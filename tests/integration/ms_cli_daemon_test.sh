#!/usr/bin/env bash
# ms_cli_daemon_test - meshsweepd alone on a loopback port with the client:
# submit prints the sweep id, a second submission of the same spec gives
# the same id ("already submitted"); status shows the progress; results
# as table, csv and json carry the same rows; `results --data-dir` reads
# the store while the daemon runs; a bad spec over the API exits 2 naming
# the key and stores nothing; the daemon stops cleanly on SIGTERM.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 400 --test 100
ms_start_daemon "$T/node" --workers 2

cat >"$T/grid.yaml" <<'Y'
name: daemon-test
dataset: fashion-mnist
parameters:
  activation:    {values: [tanh, relu]}
  hidden_layers: {values: [2, 1]}
  width:         {value: 16}
  epochs:        {value: 3}
  batch_size:    {value: 50}
Y
"$MS" submit "$T/grid.yaml" >"$T/id1" 2>"$T/submit1.err"
sweep=$(cat "$T/id1")
[[ "$sweep" =~ ^[0-9a-f]{64}$ ]] || fail "submit printed '$sweep'"
"$MS" submit "$T/grid.yaml" >"$T/id2" 2>"$T/submit2.err"
[ "$(cat "$T/id2")" = "$sweep" ] || fail "resubmission gave another id"
grep -q 'already submitted' "$T/submit2.err" || fail "resubmission does not say 'already submitted'"
ok "submit prints the id; resubmission gives the same id"

"$MS" status >"$T/status.txt"
grep -q "^${sweep:0:12} " "$T/status.txt" || fail "status does not list the sweep: $(cat "$T/status.txt")"
grep -Eq '\[[#.]{30}\] [0-9]+/4' "$T/status.txt" || fail "status has no progress bar: $(cat "$T/status.txt")"
ok "status shows a progress bar"

# The connection options before the command too (as `git -C` and
# `docker -H` take theirs), and the datasets the node knows.
env -u MESHSWEEP_NODE "$MS" --node "$NODE" status >"$T/status2.txt"
grep -q "^${sweep:0:12} " "$T/status2.txt" || fail "meshsweep --node URL status: $(cat "$T/status2.txt")"
env -u MESHSWEEP_NODE "$MS" --node="$NODE" datasets >"$T/datasets.txt"
cat "$T/datasets.txt"
grep -Eq '^fashion-mnist +builtin ' "$T/datasets.txt" || fail "datasets does not list fashion-mnist"
ok "connection options before the command; datasets lists the node's sets"

# --watch redraws until the sweep is done (bounded by timeout).
timeout 120 "$MS" status "${sweep:0:12}" --watch >"$T/watch.txt" ||
    fail "status --watch did not end with the sweep (rc $?)"
tail -1 "$T/watch.txt" | grep -q '4/4' || fail "last --watch line: $(tail -1 "$T/watch.txt")"
tail -1 "$T/watch.txt" | grep -q 'ETA done' || fail "last --watch line has no 'ETA done'"
ms_sweep_finished "$sweep" || fail "sweep not finished after --watch"
ok "status --watch follows the sweep to the end"

"$MS" results "$sweep" >"$T/table.txt"
"$MS" results "$sweep" --format csv >"$T/rows.csv"
"$MS" results "$sweep" --format json >"$T/rows.json"
"$MS" results "${sweep:0:12}" --data-dir "$T/node" >"$T/table-store.txt"
"$MS" results "$sweep" --data-dir "$T/node" --format json >"$T/rows-store.json"
[ "$(($(wc -l <"$T/table.txt") - 1))" = 4 ] || fail "table rows"
cmp -s "$T/table.txt" "$T/table-store.txt" || fail "results --data-dir differs from the API's"
# The table reads as a plateau (activation, then depth); CSV and JSON keep
# the API's order (task index: tanh before relu, depth 2 before 1, as the
# spec lists them), and the CSV is the API's, byte for byte.
python3 - "$T/table.txt" "$T/rows.csv" "$T/rows.json" "$T/rows-store.json" "$NODE/api/v1/sweeps/$sweep/results" <<'PY'
import csv, json, sys, urllib.request
table = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
rows = list(csv.DictReader(open(sys.argv[2])))
js = json.load(open(sys.argv[3]))
store = json.load(open(sys.argv[4]))
api_csv = urllib.request.urlopen(sys.argv[5] + "?format=csv").read().decode()
api_js = json.load(urllib.request.urlopen(sys.argv[5]))["rows"]
assert len(rows) == len(js) == len(table) == 4
assert js == store, "API rows and store rows differ"
assert open(sys.argv[2]).read() == api_csv, "results --format csv is not the API's CSV"
assert [r["task_id"] for r in js] == [r["task_id"] for r in api_js], "json: not the API's order"
assert [(t[1], int(t[2])) for t in table] == [("relu", 1), ("relu", 2), ("tanh", 1), ("tanh", 2)], table
assert [(r["config.activation"], r["config.hidden_layers"]) for r in rows] == [
    ("tanh", "2"), ("tanh", "1"), ("relu", "2"), ("relu", "1")], "csv: not in task order"
by_id = {r["task_id"][:12]: (r, j) for r, j in zip(rows, js)}
for t in table:
    c, j = by_id[t[0]]
    assert t[0] == j["task_id"][:12] == c["task_id"][:12]
    assert t[1] == j["config"]["activation"] == c["config.activation"]
    assert int(t[2]) == j["config"]["hidden_layers"] == int(c["config.hidden_layers"])
    assert t[5] == j["status"] == c["status"] == "ok"
    assert float(t[8]) == round(j["test_accuracy"], 4)
    assert float(c["test_accuracy"]) == j["test_accuracy"]
    assert c["weights_digest"] == j["weights_digest"]
PY
ok "results: table, csv and json carry the same rows (API and --data-dir); csv and json in the API's order, the csv the API's own"

"$MS" results "$sweep" --analyze >"$T/analyze.txt"
grep -qi plateau "$T/analyze.txt" || fail "results --analyze: no plateau"
ok "results --analyze"

# Bad specs: exit 2, the key named, nothing stored (submit refuses them
# before it contacts the node; ms_api_hostile_test posts them to the API).
"$MS" status --json >"$T/before.json"
printf 'name: x\ndataset: fashion-mnist\nparameters:\n  width: {values: []}\n' >"$T/empty.yaml"
ms_expect_exit 2 "$T/e" "$MS" submit "$T/empty.yaml"
ms_one_error_line "$T/e" 'empty.yaml.*parameters\.width'
printf 'name: x\ndataset: fashion-mnist\nbogus: 1\nparameters:\n  width: {value: 3}\n' >"$T/unknown.yaml"
ms_expect_exit 2 "$T/e" "$MS" submit "$T/unknown.yaml"
ms_one_error_line "$T/e" 'unknown.yaml.*bogus'
"$MS" status --json >"$T/after.json"
python3 - "$T/before.json" "$T/after.json" <<'PY'
import json, sys
def ids(d):
    if isinstance(d, dict):
        d = d.get("sweeps", [d])
    return sorted(s.get("sweep_id", s.get("id")) for s in d)
assert ids(json.load(open(sys.argv[1]))) == ids(json.load(open(sys.argv[2])))
PY
ms_expect_exit 2 "$T/e" "$MS" results 000000000000
ms_one_error_line "$T/e" '000000000000'
ok "bad specs: exit 2 naming the key, nothing stored"

kill -TERM "$DAEMON_PID"
ms_wait_exit "$DAEMON_PID" 30
[ "$EXIT_RC" = 0 ] || fail "meshsweepd exited $EXIT_RC on SIGTERM"
"$MS" results "$sweep" --data-dir "$T/node" >"$T/table-after.txt"
cmp -s "$T/table.txt" "$T/table-after.txt" || fail "store after shutdown differs"
ok "SIGTERM: clean exit, store intact"
