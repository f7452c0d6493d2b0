#!/usr/bin/env bash
# ms_api_events_test.sh - GET /api/v1/events (docs/EVENTS.md) on two real
# meshsweepd daemons on loopback (--open-pool, --no-beacon, --peer:
# nothing is broadcast), issue 5: a small real sweep with
# `verify: {replicas: 2}` submitted to node 1 while `curl -sN` reads node
# 2's stream. Node 2's stream must show: `sweep` for the new sweep;
# `progress` with done rising to the total; a `result` for every result
# node 2 stores (its own and the ones replicated from node 1), each the
# row of GET /results?all=1; a `verdict` for every task, ending as the
# results say; a `peer` event when node 1 stops. Last-Event-ID (and
# ?last_event_id=) resumes without gap or duplicate, a forgotten id gets
# `reset`, ?sweep= keeps that sweep's events only, and bad ids get 400.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
command -v curl >/dev/null || { echo "curl not installed: skipped"; exit 77; }
ms_tiny_dataset --train 2000 --test 100 --side 28

pool_lo_ports 2
POOL=(--open-pool=events --workers 1 "${POOL_TIMES[@]}")
for k in 1 2; do pool_start_lo "$k" "${POOL[@]}"; done
pool_wait_alive 15 1 1 2 || fail "the two nodes did not link"
API2=${POOL_API[2]}

# The stream of node 2, open before the submission.
ms_spawn "$T/ev2.txt" curl -sN --max-time 110 "$API2/api/v1/events"
CURL_MAIN=$SPAWNED
ms_wait_until 10 grep -q 'meshsweep events' "$T/ev2.txt" ||
    fail "no stream from $API2/api/v1/events"

cat >"$T/grid.yaml" <<'Y'
name: events
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4]}
  width:         {value: 64}
  epochs:        {value: 20}
  batch_size:    {value: 50}
verify: {replicas: 2}
Y
sweep=$(pool_submit 1 "$T/grid.yaml")

# sse.py FILE - the events of a stream file as JSON lines
# {"id","event","data"} (comments dropped).
cat >"$T/sse.py" <<'EOF'
import json, sys
def events(path):
    out, cur = [], {}
    for line in open(path, encoding="utf-8", errors="replace").read().split("\n"):
        if line == "":
            if "event" in cur:
                out.append(cur)
            cur = {}
        elif line.startswith(":") or line.startswith("retry:"):
            continue
        elif line.startswith("id: "):
            cur["id"] = int(line[4:])
        elif line.startswith("event: "):
            cur["event"] = line[7:]
        elif line.startswith("data: "):
            cur["data"] = json.loads(line[6:])
    return out
if __name__ == "__main__":
    for e in events(sys.argv[1]):
        print(json.dumps(e))
EOF

# verified K - every task of the sweep has two rows, all verified.
verified() {
    pool_curl "$1" "/api/v1/sweeps/$sweep/results?all=1" >"$T/rows$1.json" || return 1
    python3 - "$T/rows$1.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
tasks = {r["task_id"] for r in rows}
assert len(tasks) == 8 and len(rows) >= 16, (len(tasks), len(rows))
assert all(r["verdict"] == "verified" for r in rows)
EOF
}
both_finished() { pool_finished 1 "$sweep" && pool_finished 2 "$sweep"; }
ms_wait_until 90 both_finished || { pool_dump "$sweep" 1 2; fail "the sweep did not finish in 90 s"; }
ms_wait_until 20 verified 2 || fail "node 2: the tasks were not verified"
# The last progress (done = total) comes within about a second.
last_progress_done() {
    python3 - "$T/ev2.txt" "$sweep" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from sse import events
p = [e["data"] for e in events(sys.argv[1])
     if e["event"] == "progress" and e["data"]["sweep_id"] == sys.argv[2]]
assert p and p[-1]["done"] == p[-1]["total"] == 8, p[-1:]
EOF
}
ms_wait_until 10 last_progress_done || fail "no progress event with done = total"
pool_curl 2 "/api/v1/sweeps/$sweep/results?all=1" >"$T/rows2.json"

# ---- the stream's content ----------------------------------------------
python3 - "$T/ev2.txt" "$sweep" "$T/rows2.json" <<'EOF' || fail "node 2's events"
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from sse import events
ev, sweep = events(sys.argv[1]), sys.argv[2]
rows = json.load(open(sys.argv[3]))["rows"]
ids = [e["id"] for e in ev]
assert ids == sorted(ids) and len(set(ids)) == len(ids), "ids not increasing"
assert not [e for e in ev if e["event"] == "reset"], "a reset in a live stream"
kinds = {e["event"] for e in ev}
assert kinds <= {"progress", "result", "verdict", "peer", "sweep"}, kinds
# sweep
sw = [e["data"] for e in ev if e["event"] == "sweep"]
assert any(d["sweep_id"] == sweep for d in sw), f"no sweep event: {sw}"
assert [d for d in sw if d["sweep_id"] == sweep][-1]["state"] == "done", sw
# progress: done never goes back, ends at the total
pr = [e["data"] for e in ev if e["event"] == "progress" and e["data"]["sweep_id"] == sweep]
done = [d["done"] for d in pr]
assert done == sorted(done), f"done went back: {done}"
assert pr[-1]["done"] == pr[-1]["total"] == 8, pr[-1]
assert len(set(done)) >= 3, f"progress did not show the sweep advance: {done}"
for d in pr:
    assert set(d) >= {"sweep_id", "state", "total", "pending", "running", "done",
                      "failed", "cancelled"}, d
# results: one event per stored result (own and replicated), row fields
res = [e["data"] for e in ev if e["event"] == "result"]
got = {(r["task_id"], r["node_id"]) for r in res}
want = {(r["task_id"], r["node_id"]) for r in rows}
assert got == want, f"result events {len(got)} != rows {len(want)}"
assert len(res) == len(got), "a result event twice"
nodes = {r["node_id"] for r in res}
assert len(nodes) == 2, f"results of {len(nodes)} node(s): replicated ones missing"
by_key = {(r["task_id"], r["node_id"]): r for r in rows}
for r in res:
    for f in ("task_id", "sweep_id", "config", "node_id", "status",
              "val_accuracy", "test_accuracy", "seconds_per_epoch", "curve",
              "verdict", "verdict_revision", "counted"):
        assert f in r, f"result event without {f}"
    assert r["sweep_id"] == sweep
    row = by_key[(r["task_id"], r["node_id"])]
    for f in ("config", "status", "test_accuracy", "val_accuracy", "curve"):
        assert r[f] == row[f], f"result event {f} differs from the row"
# verdicts: every task, the last one as the results say
vd = {}
for e in ev:
    if e["event"] == "verdict":
        d = e["data"]
        assert d["sweep_id"] == sweep
        assert set(d) >= {"task_id", "verdict", "verdict_revision", "verdict_operators"}
        vd[d["task_id"]] = d
tasks = {r["task_id"] for r in rows}
assert set(vd) == tasks, f"verdict events for {len(vd)} of {len(tasks)} tasks"
for t, d in vd.items():
    assert d["verdict"] == "verified", d
    assert len(d["verdict_operators"]) == 2, d
# order: a task's first result comes before its first verdict (the
# verdict follows from the result; the row used to wait a loop turn)
first = {}
for i, e in enumerate(ev):
    if e["event"] in ("result", "verdict"):
        first.setdefault((e["data"]["task_id"], e["event"]), i)
late = [t for t in tasks if first.get((t, "verdict"), 1 << 30) < first.get((t, "result"), -1)]
assert not late, f"{len(late)} task(s) with a verdict event before any result event"
print(f"{len(ev)} events: {len(pr)} progress, {len(res)} results, {len(vd)} tasks with verdicts")
EOF
ok "node 2's stream: sweep, progress to done, a result per stored result (both nodes), verdicts"

# ---- resume, reset, filter ---------------------------------------------
read -r first mid < <(python3 - "$T/ev2.txt" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from sse import events
ids = [e["id"] for e in events(sys.argv[1])]
print(ids[0], ids[len(ids) // 2])
EOF
)
curl -sN --max-time 3 -H "Last-Event-ID: $mid" "$API2/api/v1/events" >"$T/resume.txt" || true
curl -sN --max-time 3 "$API2/api/v1/events?last_event_id=$mid" >"$T/resume2.txt" || true
curl -sN --max-time 3 -H "Last-Event-ID: 1" "$API2/api/v1/events" >"$T/old.txt" || true
curl -sN --max-time 3 -H "Last-Event-ID: $first" "$API2/api/v1/events?sweep=${sweep:0:12}" >"$T/filt.txt" || true
python3 - "$T" "$mid" "$first" "$sweep" <<'EOF' || fail "resume / reset / filter"
import sys
T, mid, first, sweep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, T)
from sse import events
main = events(f"{T}/ev2.txt")
for name in ("resume", "resume2"):
    r = events(f"{T}/{name}.txt")
    want = [e for e in main if e["id"] > mid]
    assert r, f"{name}: nothing resumed"
    assert r[:len(want)] == want, f"{name}: {[e['id'] for e in r][:5]} != {[e['id'] for e in want][:5]}"
    assert r[0]["id"] == want[0]["id"], f"{name}: a gap"
old = events(f"{T}/old.txt")
assert old and old[0]["event"] == "reset" and old[0]["data"] == {}, old[:1]
f = events(f"{T}/filt.txt")
want = [e for e in main if e["id"] > first and e["event"] != "peer"
        and e["data"].get("sweep_id") == sweep]
assert f[:len(want)] == want, f"filter: {len(f)} events, {len(want)} wanted"
assert all(e["data"].get("sweep_id") == sweep for e in f), "filter let others through"
print(f"resumed after {mid}; filtered {len(f)} events from {first}")
EOF
ok "Last-Event-ID and ?last_event_id= resume without gap or duplicate; an old id gets reset; ?sweep= filters"

# the client: one event a line, the same events
"$MS" events --node "$API2" --sweep "${sweep:0:12}" --last-event-id "$first" \
    --max-seconds 3 >"$T/cli.txt" || fail "meshsweep events failed"
python3 - "$T" "$first" "$sweep" <<'EOF' || fail "meshsweep events printed other events"
import json, sys
T, first, sweep = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, T)
from sse import events
want = [e for e in events(f"{T}/ev2.txt") if e["id"] > first
        and e["event"] != "peer" and e["data"].get("sweep_id") == sweep]
got = []
for line in open(f"{T}/cli.txt"):
    i, t, d = line.rstrip("\n").split(" ", 2)
    got.append({"id": int(i), "event": t, "data": json.loads(d)})
assert want and got[:len(want)] == want, (len(got), len(want))
EOF
ok "meshsweep events prints the same events, one a line"

code=$(curl -s -o "$T/bad.json" -w '%{http_code}' -H "Last-Event-ID: x1" "$API2/api/v1/events")
[ "$code" = 400 ] && grep -q Last-Event-ID "$T/bad.json" || fail "bad Last-Event-ID: $code $(cat "$T/bad.json")"
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' "$API2/api/v1/events?sweep=0000000000000000")
[ "$code" = 404 ] || fail "unknown sweep filter: $code $(cat "$T/bad.json")"
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' -X POST "$API2/api/v1/events")
[ "$code" = 405 ] || fail "POST /api/v1/events: $code"
ok "bad id 400, unknown sweep 404, POST 405"

# ---- a peer event when node 1 stops ------------------------------------
id1=$(pool_curl 1 /api/v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["node_id"])')
pool_kill 1 TERM
pool_reap 1
peer_gone() {
    python3 - "$T/ev2.txt" "$id1" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from sse import events
p = [e["data"] for e in events(sys.argv[1]) if e["event"] == "peer"
     and e["data"]["node_id"] == sys.argv[2]]
assert any(d["state"] in ("suspect", "dead") and d["previous_state"] == "alive" for d in p), p
EOF
}
ms_wait_until 20 peer_gone || fail "no peer event for node 1 stopping"
ok "a peer event (alive -> suspect/dead) when node 1 stopped"

# ---- clean shutdown with a stream open ---------------------------------
ms_gone "$CURL_MAIN" && fail "the stream ended early"
pool_kill 2 TERM
pool_reap 2
ms_wait_until 10 ms_gone "$CURL_MAIN" || fail "the stream stayed open after node 2 stopped"
ok "node 2 stops cleanly with a stream open; the stream ends"
