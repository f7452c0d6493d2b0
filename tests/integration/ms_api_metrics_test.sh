#!/usr/bin/env bash
# ms_api_metrics_test.sh - /metrics in the Prometheus text format (issue
# 5, "Monitoring"): two real meshsweepd on loopback (--open-pool,
# --no-beacon, --peer each other: nothing is broadcast) run a small
# sweep with `verify: {replicas: 2}` (so verdicts move) and
# --reevaluate-fraction 1 (so re-evaluations move). /metrics of both
# nodes is scraped before, during and after; every scrape must parse
# with prometheus_client's parser (python3-prometheus-client, Debian's
# /usr/bin/python3) with a # HELP and a # TYPE for every family, counters
# named *_total, no family twice; and the counters must move: tasks
# completed, training seconds, gossip messages and bytes sent and
# received, verdicts and re-evaluations; tasks by state sum to the
# sweep's total; each node sees its one peer alive.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
PY=/usr/bin/python3
"$PY" -c 'import prometheus_client.parser' 2>/dev/null ||
    { echo "python3-prometheus-client not installed: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

pool_lo_ports 2
POOL=(--open-pool=metrics --workers 1 "${POOL_TIMES[@]}"
    --reevaluate-fraction 1 --reeval-timeout-s 30)
pool_start_lo 1 "${POOL[@]}"
pool_start_lo 2 "${POOL[@]}"
pool_wait_alive 20 1 1 2 || fail "the two nodes did not link"

# scrape K NAME - node K's /metrics into $T/NAME.K.prom
scrape() {
    pool_curl "$1" /metrics >"$T/$2.$1.prom" || fail "node $1: /metrics did not answer"
}

# check FILE... - parse each scrape; print a JSON summary of the last.
check() {
    "$PY" - "$@" <<'PYEOF'
import json, re, sys
from prometheus_client.parser import text_string_to_metric_families
summary = {}
for path in sys.argv[1:]:
    text = open(path).read()
    fams = list(text_string_to_metric_families(text))
    assert fams, f"{path}: no family"
    names = [f.name for f in fams]
    assert len(names) == len(set(names)), f"{path}: a family twice"
    helps, types = {}, {}
    for line in text.splitlines():
        m = re.match(r"# (HELP|TYPE) (\S+) ?(.*)", line)
        if m:
            d = helps if m.group(1) == "HELP" else types
            assert m.group(2) not in d, f"{path}: second {m.group(1)} for {m.group(2)}"
            d[m.group(2)] = m.group(3)
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
            assert name in types, f"{path}: {name} has no # TYPE"
            assert helps.get(name), f"{path}: {name} has no # HELP"
            assert name.startswith("meshsweep_"), f"{path}: {name}"
    for name, t in types.items():
        assert t in ("counter", "gauge"), f"{path}: {name} is {t}"
        assert (t == "counter") == name.endswith("_total"), f"{path}: {name} {t}"
    for f in fams:
        assert f.type in ("counter", "gauge"), f"{path}: {f.name} {f.type}"
        assert f.documentation, f"{path}: {f.name} undocumented"
    s = {}
    for f in fams:
        for smp in f.samples:
            key = smp.name + ("{" + ",".join(f"{k}={v}" for k, v in sorted(smp.labels.items())) + "}" if smp.labels else "")
            s[key] = smp.value
    summary = s
print(json.dumps(summary))
PYEOF
}

# v FILE KEY - value of KEY in a summary (0 when absent)
v() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$@"; }
# positive FILE PREFIX - true when that sum is above 0
positive() { "$PY" -c 'import json,sys; sys.exit(0 if sum(x for k,x in json.load(open(sys.argv[1])).items() if k.startswith(sys.argv[2])) > 0 else 1)' "$@"; }

for k in 1 2; do scrape "$k" before; check "$T/before.$k.prom" >"$T/before.$k.json" ||
    { cat "$T/before.$k.prom"; fail "node $k: the first scrape does not parse"; }; done
ok "/metrics parses before the sweep (both nodes)"

cat >"$T/grid.yaml" <<Y
name: metrics
dataset: fashion-mnist
verify: {replicas: 2}
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3]}
  width:         {value: 16}
  epochs:        {value: 10}
  learning_rate: {value: 0.0003}
  batch_size:    {value: 50}
Y
NTASKS=6
sweep=$(pool_submit 1 "$T/grid.yaml")

# During: scrape while a worker is busy (bounded), and check it parses.
ms_wait_until 60 pool_busy 1 || true
for k in 1 2; do scrape "$k" during; check "$T/during.$k.prom" >"$T/during.$k.json" ||
    fail "node $k: the scrape during the sweep does not parse"; done
ok "/metrics parses during the sweep"

both_finished() { pool_finished 1 "$1" && pool_finished 2 "$1"; }
ms_wait_until 90 both_finished "$sweep" || { pool_dump "$sweep" 1 2; fail "the sweep did not finish in 90 s"; }

# After: verdicts settle (both replicas counted) and re-evaluations are
# published, then the figures.
settled() {
    scrape "$1" after
    check "$T/after.$1.prom" >"$T/after.$1.json" || return 1
    [ "$(v "$T/after.$1.json" 'meshsweep_verdicts{state=verified}')" = "$NTASKS.0" ] || return 1
    [ "$(v "$T/after.$1.json" 'meshsweep_tasks_completed_total')" = "$NTASKS.0" ] || return 1
    [ "$(v "$T/after.$1.json" 'meshsweep_tasks_per_second')" != 0.0 ] || return 1
    positive "$T/after.$1.json" 'meshsweep_reevaluations_total{' 
}
for k in 1 2; do
    ms_wait_until 45 settled "$k" || { cat "$T/after.$k.prom" >&2 || true; fail "node $k: verdicts or re-evaluations did not move"; }
done

for k in 1 2; do
    b=$T/before.$k.json a=$T/after.$k.json
    "$PY" - "$b" "$a" "$NTASKS" "$k" <<'PYEOF' || fail "node $k: a figure did not move"
import json, sys
b, a = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
n, k = int(sys.argv[3]), sys.argv[4]
def g(d, key): return d.get(key, 0)
def s(d, pre): return sum(x for key, x in d.items() if key.startswith(pre))
checks = []
def moved(key, pre=False):
    x = s(b, key) if pre else g(b, key)
    y = s(a, key) if pre else g(a, key)
    assert y > x, f"node {k}: {key} did not move ({x} -> {y})"
    checks.append(f"{key.rstrip('{')} {x:g}->{y:g}")
moved("meshsweep_tasks_completed_total")
moved("meshsweep_tasks_trained_total")
moved("meshsweep_training_seconds_total")
for d in ("sent", "received"):
    moved(f"meshsweep_gossip_messages_total{{direction={d},", pre=True)
    moved(f"meshsweep_gossip_bytes_total{{direction={d},", pre=True)
moved("meshsweep_reevaluations_total{", pre=True)
assert g(a, "meshsweep_tasks_completed_total") >= n, a["meshsweep_tasks_completed_total"]
tasks = s(a, "meshsweep_tasks{")
assert tasks == n, f"node {k}: tasks by state sum to {tasks}, not {n}"
assert g(a, "meshsweep_tasks{state=done}") == n
assert g(a, "meshsweep_verdicts{state=verified}") == n
assert s(a, "meshsweep_verdicts{") == n
assert g(a, "meshsweep_peers{state=alive}") == 1, a.get("meshsweep_peers{state=alive}")
assert s(a, "meshsweep_peers{") == 1
assert g(a, "meshsweep_tasks_per_second") > 0
assert 0 < g(a, "meshsweep_tasks_per_second_window_seconds") <= 61
assert g(a, "meshsweep_store_bytes") > 0
assert s(a, "meshsweep_node_quarantined{") == 0, "a node quarantined"
print("; ".join(checks))
PYEOF
    ok "node $k: counters moved: $("$PY" - "$b" "$T/after.$k.json" <<'PYEOF'
import json, sys
b, a = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
keys = ["meshsweep_tasks_completed_total", "meshsweep_training_seconds_total", "meshsweep_tasks_per_second"]
print(", ".join(f"{x} {b.get(x, 0):g}->{a.get(x, 0):.3g}" for x in keys))
PYEOF
)"
done
ok "tasks by state sum to $NTASKS, $NTASKS verified, one peer alive on each node"
for k in 1 2; do pool_kill "$k" TERM; pool_reap "$k"; done
