#!/usr/bin/env bash
# ms_cli_pool_test - three meshsweepd processes on loopback in one open
# pool (--open-pool, --no-beacon, --peer: no broadcast ever leaves this
# test): `meshsweep peers` on each lists the other two alive; a sweep
# submitted to one is worked on by all three and the results table read
# from every node is the same; sweep control (priority, pause, resume,
# cancel) given to one node reaches the others; /metrics and /status show
# the pool.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 400 --test 100

M1=$(ms_free_port); M2=$(ms_free_port); M3=$(ms_free_port)
POOL=(--open-pool=it --no-beacon --lease-ttl-ms 1500 --heartbeat-ms 200
      --beacon-interval-ms 100 --antientropy-ms 200 --workers 1)
ms_start_daemon "$T/n1" "${POOL[@]}" --mesh-port "$M1"
N1=$NODE
ms_start_daemon "$T/n2" "${POOL[@]}" --mesh-port "$M2" --peer "tcp://127.0.0.1:$M1"
N2=$NODE
ms_start_daemon "$T/n3" "${POOL[@]}" --mesh-port "$M3" \
    --peer "tcp://127.0.0.1:$M1" --peer "tcp://127.0.0.1:$M2"
N3=$NODE
D3=$DAEMON_PID
grep -q "warning: open pool 'it'" "$DAEMON_LOG" || fail "no open-pool warning"

two_alive() { # NODE: `meshsweep peers` lists two alive peers
    [ "$("$MS" peers --node "$1" | grep -c ' alive ')" = 2 ]
}
for n in "$N1" "$N2" "$N3"; do
    ms_wait_until 10 two_alive "$n" || { "$MS" peers --node "$n"; fail "$n does not see two alive peers"; }
done
"$MS" peers --node "$N1" --json >"$T/peers.json"
[ "$(ms_json_get "$T/peers.json" 'len(d)')" = 2 ] || fail "peers --json"
ok "three daemons see each other (meshsweep peers)"

cat >"$T/pool.yaml" <<'Y'
name: pool-it
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2, 3, 4, 5, 6]}
  seed:          {values: [1, 2, 3, 4]}
  width:         {value: 8}
  epochs:        {value: 150}
  batch_size:    {value: 100}
Y
sweep=$("$MS" submit "$T/pool.yaml" --node "$N1" 2>/dev/null)
[ ${#sweep} = 64 ] || fail "submit gave '$sweep'"
for n in "$N1" "$N2" "$N3"; do
    MESHSWEEP_NODE=$n ms_wait_until 60 ms_sweep_finished "$sweep" || fail "sweep not finished on $n"
done
same_tables() {
    local i=0 n
    for n in "$N1" "$N2" "$N3"; do
        i=$((i + 1))
        "$MS" results "$sweep" --node "$n" --format json >"$T/rows$i.json" || return 1
    done
    python3 - "$T/rows1.json" "$T/rows2.json" "$T/rows3.json" <<'PY'
import json, sys
tables = []
for f in sys.argv[1:]:
    rows = json.load(open(f))
    tables.append(sorted(json.dumps(r, sort_keys=True) for r in rows))
assert tables[0] == tables[1] == tables[2], "tables differ"
rows = json.load(open(sys.argv[1]))
tasks = {r["task_id"] for r in rows}
assert len(tasks) == 24, len(tasks)
pairs = [(r["task_id"], r["node_id"]) for r in rows]
assert len(pairs) == len(set(pairs)), "a (task, node) twice"
nodes = {r["node_id"] for r in rows}
assert len(nodes) == 3, "not every node worked: %d" % len(nodes)
PY
}
ms_wait_until 10 same_tables || { same_tables; fail "results tables differ"; }
ok "a 24-task sweep submitted to one node: worked on by all, same table on every node"

# Sweep control through node 3 reaches node 1.
"$MS" priority "$sweep" 7 --node "$N3" >/dev/null || fail "priority"
prio_is() { curl -s "$N1/api/v1/sweeps/$sweep" | grep -q '"priority": *7'; }
ms_wait_until 10 prio_is || fail "priority did not reach node 1"
cat >"$T/slow.yaml" <<'Y'
name: pool-it-slow
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3, 4, 5, 6, 7, 8]}
  width:  {value: 64}
  epochs: {value: 200}
Y
state_is() { # NODE STATE
    curl -s "$1/api/v1/sweeps/$slow" | grep -q "\"state\": *\"$2\""
}
known() { curl -sf "$1/api/v1/sweeps/$slow" >/dev/null; }
slow=$("$MS" submit "$T/slow.yaml" --node "$N1" 2>/dev/null)
ms_wait_until 10 known "$N2" || fail "the sweep did not reach node 2"
"$MS" pause "$slow" --node "$N2" | grep -q paused || fail "pause output"
for n in "$N1" "$N3"; do
    ms_wait_until 10 state_is "$n" paused || fail "pause did not reach $n"
done
"$MS" cancel "$slow" --node "$N3" >/dev/null || fail "cancel"
for n in "$N1" "$N2"; do
    ms_wait_until 10 state_is "$n" cancelled || fail "cancel did not reach $n"
done
ms_expect_exit 2 "$T/resume.err" "$MS" resume "$slow" --node "$N1"
sed -i 's/slow/slow2/' "$T/slow.yaml"
slow=$("$MS" submit "$T/slow.yaml" --node "$N1" 2>/dev/null)
ms_wait_until 10 known "$N2" || fail "sweep 2 did not reach node 2"
"$MS" pause "$slow" --node "$N2" >/dev/null || fail "pause 2"
ms_wait_until 10 state_is "$N3" paused || fail "pause 2 did not reach node 3"
"$MS" resume "$slow" --node "$N2" >/dev/null || fail "resume"
active_or_done() { state_is "$1" active || state_is "$1" done; }
ms_wait_until 10 active_or_done "$N3" || fail "resume did not reach node 3"
ms_expect_exit 2 "$T/bad.err" "$MS" pause 000000000000 --node "$N1"
ok "priority, pause, resume and cancel given to one node reach the others"

curl -s "$N1/metrics" >"$T/metrics.txt"
grep -q '^meshsweep_peers{state="alive"} 2' "$T/metrics.txt" || fail "metrics: peers"
grep -q '^meshsweep_gossip_messages_total{direction="sent",type="block"} ' "$T/metrics.txt" || fail "metrics: gossip"
grep -q '^meshsweep_records ' "$T/metrics.txt" || fail "metrics: records"
curl -s "$N2/api/v1/status" >"$T/status2.json"
[ "$(ms_json_get "$T/status2.json" 'd["peers"]["alive"]')" = 2 ] || fail "status: peers"
[ "$(ms_json_get "$T/status2.json" 'len(d["pool_id"])')" = 64 ] || fail "status: pool id"
ok "/metrics and /status show the pool"

# Chaos: node 3 killed with SIGKILL while it runs a task; nodes 1 and 2
# redo its tasks after the lease TTL; no task missing, no (task, node)
# twice; node 3 restarted catches up to the same table.
cat >"$T/chaos.yaml" <<'Y'
name: pool-it-chaos
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}
  width:  {value: 32}
  epochs: {value: 300}
Y
chaos=$("$MS" submit "$T/chaos.yaml" --node "$N1" 2>/dev/null)
busy3() { curl -s "$N3/api/v1/status" | grep -q '"workers_busy": *1'; }
ms_wait_until 20 busy3 || fail "node 3 never ran a task of the chaos sweep"
pool_running() { # node 1 shows its peers' tasks as running (pool-wide)
    curl -s "$N1/api/v1/sweeps/$chaos" >"$T/chaos1.json" &&
        [ "$(ms_json_get "$T/chaos1.json" 'd["counts"]["running"] >= 2')" = True ]
}
ms_wait_until 20 pool_running || fail "node 1 does not show the pool's running tasks"
kill -KILL "$D3"
wait "$D3" 2>/dev/null || true
for n in "$N1" "$N2"; do
    MESHSWEEP_NODE=$n ms_wait_until 60 ms_sweep_finished "$chaos" || fail "chaos sweep not finished on $n"
done
same_chaos() { # NODE NODE
    "$MS" results "$chaos" --node "$1" --format json >"$T/c1.json" || return 1
    "$MS" results "$chaos" --node "$2" --format json >"$T/c2.json" || return 1
    python3 - "$T/c1.json" "$T/c2.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
key = lambda rows: sorted(json.dumps(r, sort_keys=True) for r in rows)
assert key(a) == key(b), "tables differ"
assert len({r["task_id"] for r in a}) == 12, "a task is missing"
pairs = [(r["task_id"], r["node_id"]) for r in a]
assert len(pairs) == len(set(pairs)), "a (task, node) twice"
PY
}
ms_wait_until 10 same_chaos "$N1" "$N2" || { same_chaos "$N1" "$N2"; fail "chaos tables differ"; }
ok "node 3 killed mid-sweep: its tasks redone, no task missing, same table on 1 and 2"
ms_start_daemon "$T/n3" "${POOL[@]}" --mesh-port "$M3" \
    --peer "tcp://127.0.0.1:$M1" --peer "tcp://127.0.0.1:$M2"
N3=$NODE
ms_wait_until 20 same_chaos "$N1" "$N3" || { same_chaos "$N1" "$N3"; fail "restarted node 3 did not catch up"; }
ok "node 3 restarted: caught up to the same table"
