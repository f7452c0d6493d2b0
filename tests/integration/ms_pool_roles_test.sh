#!/usr/bin/env bash
# ms_pool_roles_test.sh - operators and roles in a pool with an authority
# (issue 4), real daemons on loopback (--no-beacon, NODE_ID@tcp:// peers),
# the authority made with the `meshsweep pool` CLI:
#   1. three members, A and B of one operator (`lab`), C of another
#      (`other`); a sweep with `replicas: 2`: no task ever has results of
#      both A and B (one operator never fills both slots, extra replicas
#      included), and every task ends verified by the two operators;
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

"$MS" pool init --out "$T/auth" >/dev/null
NODE=(--workers 1 "${POOL_TIMES[@]}")
node_id() { cat "$T/n$1/identity/node.pub"; }
make_identity() {
    local k=$1
    timeout 20 "$MSD" --data-dir "$T/n$k" --api 127.0.0.1:0 --workers 1 \
        --no-beacon --mesh-port 0 >"$T/id$k.log" 2>&1 &
    local pid=$!
    ms_wait_until 10 test -s "$T/n$k/identity/node.pub" || fail "node $k made no identity"
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
peers_of() {
    local j
    for j in "$@"; do
        printf -- '--peer\n%s@tcp://127.0.0.1:%s\n' "$(node_id "$j")" "${POOL_MESH[$j]}"
    done
}
start_node() {
    local k=$1 peers=() args=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do peers+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    mapfile -t args < <(peers_of "${peers[@]}")
    pool_start "$k" - "$T/n$k" --no-beacon --mesh-port "${POOL_MESH[$k]}" \
        "${args[@]}" "${NODE[@]}" "$@"
}
invite() { # K OPERATOR ROLES [ARGS...]
    local k=$1 op=$2 roles=$3
    shift 3
    "$MS" pool invite "$(node_id "$k")" --operator "$op" --roles "$roles" \
        --authority "$T/auth" --out "$T/n$k.cert" "$@" >/dev/null
    "$MS" pool join "$T/n$k.cert" --data-dir "$T/n$k" >/dev/null
}

pool_lo_ports 3
for k in 1 2 3; do make_identity "$k"; done
A=$(node_id 1)
B=$(node_id 2)
C=$(node_id 3)
invite 1 lab worker,submit
invite 2 lab worker
invite 3 other worker,submit

# ---- 1. two nodes of one operator, replicas 2 ------------------------------
start_node 1 2 3
start_node 2 1 3
start_node 3 1 2
pool_wait_alive 30 2 1 2 3 || fail "the three members did not link"

cat >"$T/grid.yaml" <<Y
name: roles-operators
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4]}
  width:         {value: 16}
  epochs:        {value: 20}
  batch_size:    {value: 50}
verify: {replicas: 2}
Y
sweep=$(pool_submit 1 "$T/grid.yaml")
# check_operators K - node K's rows (extra replicas included): every task
# verified by lab and other, never a row of both A and B in one task.
check_operators() {
    pool_cli "$1" results "$sweep" --format json >"$T/ops$1.json" || return 1
    python3 - "$T/ops$1.json" "$A" "$B" "$C" <<'PY'
import json, sys, collections
rows = json.load(open(sys.argv[1]))
a, b, c = sys.argv[2:5]
tasks = collections.defaultdict(list)
for r in rows:
    tasks[r["task_id"]].append(r)
assert len(tasks) == 8, f"{len(tasks)} tasks of 8"
for t, rs in tasks.items():
    nodes = {r["node_id"] for r in rs}
    assert not (a in nodes and b in nodes), f"task {t[:12]}: rows of both nodes of operator lab"
    assert c in nodes, f"task {t[:12]}: no row of operator other"
    for r in rs:
        assert r["verdict"] == "verified", f"task {t[:12]}: {r['verdict']}"
        assert sorted(set(r["verdict_operators"])) == ["lab", "other"], r["verdict_operators"]
    ops = [r["operator"] for r in rs if r["counted"]]
    assert sorted(ops) == ["lab", "other"], f"task {t[:12]}: counted operators {ops}"
print(len(rows), len(tasks))
PY
}
all_finished() { pool_finished 1 "$sweep" && pool_finished 2 "$sweep" && pool_finished 3 "$sweep"; }
ms_wait_until 180 all_finished || { pool_dump "$sweep" 1 2 3; fail "the replicas-2 sweep did not finish"; }
for k in 1 2 3; do
    ms_wait_until 15 check_operators "$k" >/dev/null ||
        { check_operators "$k" || true; fail "node $k: a task is not verified by lab and other, or has rows of A and B"; }
done
read -r rows tasks < <(check_operators 1)
na=$(python3 -c 'import json,sys; print(sum(r["node_id"]==sys.argv[2] for r in json.load(open(sys.argv[1]))))' "$T/ops1.json" "$A")
nb=$(python3 -c 'import json,sys; print(sum(r["node_id"]==sys.argv[2] for r in json.load(open(sys.argv[1]))))' "$T/ops1.json" "$B")
ok "replicas 2, operators lab (A, B) and other (C): $tasks tasks, $rows rows (A $na, B $nb), each verified by lab and other, never A and B in one task"
