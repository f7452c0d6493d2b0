#!/usr/bin/env bash
# ms_pool_roles_test.sh - operators and roles in a pool with an authority
# (issue 4), real daemons on loopback (--no-beacon, NODE_ID@tcp:// peers),
# the authority made with the `meshsweep pool` CLI:
#   1. three members, A and B of one operator (`lab`), C of another
#      (`other`); a sweep with `replicas: 2`: no task ever has results of
#      both A and B (one operator never fills both slots, extra replicas
#      included), and every task ends verified by the two operators;
#      C's certificate caps it at one worker: started with --workers 3 it
#      warns and runs one;
#   2. roles: B's certificate lacks `submit`: its API refuses a submit and
#      a sweep control (403, one line naming the role); B restarted as a
#      member that ignores the rule (ms_dishonest_node --lie submit)
#      submits a sweep and a priority change: A and C store B's records
#      (counted as ignored) but do not apply them (the sweep is unknown
#      to them, the priority unchanged).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

"$MS" pool init --out "$T/auth" >/dev/null

pool_lo_ports 3
for k in 1 2 3; do pool_make_identity "$k"; done
A=$(pool_node_id 1)
B=$(pool_node_id 2)
C=$(pool_node_id 3)
pool_invite 1 lab --roles worker,submit
pool_invite 2 lab --roles worker
pool_invite 3 other --roles worker,submit --max-workers 1
for k in 1 2 3; do pool_join "$k"; done

# ---- 1. two nodes of one operator, replicas 2 ------------------------------
pool_start_member 1 2 3
pool_start_member 2 1 3
pool_start_member 3 1 2 -- --workers 3
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
grep -q "caps this node at 1 worker" "${POOL_LOG[3]}" || fail "C did not warn about its worker cap"
[ "$(pool_status 3 "d['workers']")" = 1 ] || fail "C runs $(pool_status 3 "d['workers']") workers, its certificate caps it at 1"
ok "C's certificate caps it at 1 worker: started with --workers 3, it warned and runs 1"

# ---- 2. roles --------------------------------------------------------------
LIAR=${MESHSWEEP_DISHONEST_NODE:-}
[ -x "$LIAR" ] || { echo "ms_dishonest_node not built: section 2 skipped"; exit 0; }
code=$(curl -s -o "$T/403.body" -w '%{http_code}' -X POST --data-binary @"$T/grid.yaml" \
    "${POOL_API[2]}/api/v1/sweeps")
[ "$code" = 403 ] || fail "B answered a submit with HTTP $code: $(cat "$T/403.body")"
grep -q 'submit' "$T/403.body" || fail "B's refusal does not name the role: $(cat "$T/403.body")"
rc=0
pool_cli 2 submit "$T/grid.yaml" >"$T/sub.out" 2>"$T/sub.err" || rc=$?
[ "$rc" != 0 ] || fail "meshsweep submit to B succeeded"
[ "$(wc -l <"$T/sub.err")" = 1 ] || fail "submit to B: not one line: $(cat "$T/sub.err")"
grep -q 'lacks the `submit` role' "$T/sub.err" || fail "submit to B: unclear error: $(cat "$T/sub.err")"
echo "the CLI said: $(cat "$T/sub.err")"
rc=0
pool_cli 2 priority "$sweep" 7 >"$T/pri.out" 2>"$T/pri.err" || rc=$?
[ "$rc" != 0 ] || fail "meshsweep priority through B succeeded"
grep -q 'submit' "$T/pri.err" || fail "priority via B: unclear error: $(cat "$T/pri.err")"
ok "B (no submit role) refuses submit (HTTP 403, one line) and sweep control"

pool_kill 2 TERM
pool_reap 2
MSD=$LIAR pool_start_member 2 1 3 -- --lie submit
pool_wait_alive 30 2 1 2 3 || fail "B (ignoring roles) did not link again"
cat >"$T/grid2.yaml" <<Y
name: roles-forbidden
dataset: fashion-mnist
parameters:
  seed:  {values: [101, 102]}
  width: {value: 8}
  epochs: {value: 2}
Y
sweep2=$(pool_submit 2 "$T/grid2.yaml")
pool_cli 2 priority "$sweep" 7 >/dev/null 2>"$T/pri2.err" || fail "the liar's priority failed: $(cat "$T/pri2.err")"
ignored2() { [ "$(pool_counter "$1" records_ignored_no_role_total)" -ge 2 ]; }
for k in 1 3; do
    ms_wait_until 20 ignored2 "$k" ||
        fail "node $k ignored $(pool_counter "$k" records_ignored_no_role_total) record(s) of B, want 2 (a sweep, a control)"
    pool_curl "$k" "/api/v1/sweeps/$sweep2" >/dev/null 2>&1 && fail "node $k applied B's sweep"
    pri=$(pool_curl "$k" "/api/v1/sweeps/$sweep" | python3 -c 'import json,sys; print(json.load(sys.stdin)["priority"])')
    [ "$pri" = 0 ] || fail "node $k applied B's priority: $pri"
done
pool_curl 2 "/api/v1/sweeps/$sweep2" >/dev/null || fail "B does not know its own sweep"
ok "B's sweep and sweep control (no submit role) are stored but not applied by A and C"
