#!/usr/bin/env bash
# ms_pool_reeval_test.sh - re-evaluation catches made-up metrics with
# `replicas: 1` (docs/VERIFICATION.md "Re-evaluation"). Two honest
# meshsweepd (two operators: an open pool, each node its own operator) and
# the dishonest member (a third operator) on loopback (--no-beacon,
# --peer: nothing is broadcast), every node with --reevaluate-fraction 1:
#   1. fabricate: the liar publishes made-up metrics and a random weights
#      digest with no weights kept. Every honest result of the sweep ends
#      `verified` (re-evaluated by another operator), every task is
#      verified on both honest nodes, no row of the liar is in the
#      verified set, and the liar holds strikes on both honest nodes;
#   2. inflate: the liar trains honestly and keeps its real weights, but
#      publishes test and validation accuracy 0.05 higher. The honest
#      re-evaluations recompute the real metrics from its weights: its
#      rows are never verified and it collects strikes on both nodes.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
LIAR=${MESHSWEEP_DISHONEST_NODE:-}
[ -x "$LIAR" ] || { echo "ms_dishonest_node not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

pool_lo_ports 4
POOL=(--open-pool=reeval --workers 1 "${POOL_TIMES[@]}"
    --reevaluate-fraction 1 --reeval-timeout-s 30 --verbose)
pool_start_lo 1 "${POOL[@]}"
pool_start_lo 2 "${POOL[@]}"
pool_wait_alive 20 1 1 2 || fail "the honest nodes did not link"

grid() { # NAME
    cat <<Y
name: $1
dataset: fashion-mnist
verify: {replicas: 1}
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4]}
  width:         {value: 16}
  epochs:        {value: 1}
  learning_rate: {value: 0.0003}
  batch_size:    {value: 50}
Y
}

# settled K SWEEP LIAR LOG MODE - node K's view of SWEEP once the dust has
# settled: no re-evaluation pending, every honest row verified (each
# names its kept weights), no row of the liar verified, and the liar
# struck. Prints "lies strikes single" (lies told about the sweep, the
# liar's strikes, tasks verified by one honest result and its
# re-evaluations alone).
settled() {
    local k=$1
    pool_rows_json "$k" "$2" "$T/all$k.json" "&all=1"
    pool_rows_json "$k" "$2" "$T/ver$k.json" "&all=1&verified=1"
    pool_curl "$k" /api/v1/status >"$T/status$k.json"
    python3 - "$T/all$k.json" "$T/ver$k.json" "$T/status$k.json" "$3" "$4" "$5" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
ver = json.load(open(sys.argv[2]))["rows"]
st = json.load(open(sys.argv[3]))
liar, log, mode = sys.argv[4:7]
if st["pool_counters"].get("reevaluations_pending", 0):
    sys.exit("re-evaluations pending")
lied = {l.split()[3] for l in open(log) if l.startswith("liar: %s task " % mode)}
if any(r["node_id"] == liar for r in ver):
    sys.exit("a row of the liar is verified")
for r in rows:
    if r["node_id"] != liar:
        continue
    if r["task_id"] not in lied:
        sys.exit("task %s: a row of the liar it did not lie about" % r["task_id"][:12])
    if mode == "fabricate" and r.get("weights_blob"):
        sys.exit("task %s: a fabricated row names weights" % r["task_id"][:12])
    if mode == "inflate" and not r.get("weights_blob"):
        sys.exit("task %s: the inflating liar kept no weights" % r["task_id"][:12])
honest = [r for r in rows if r["node_id"] != liar]
if not honest:
    sys.exit("no honest row")
for r in honest:
    if r["verdict"] != "verified" or not r.get("weights_blob"):
        sys.exit("task %s: an honest row is %s (weights %s)" % (r["task_id"][:12], r["verdict"], r.get("weights_blob")))
vset = {(r["task_id"], r["node_id"]) for r in ver}
for r in honest:
    if (r["task_id"], r["node_id"]) not in vset:
        sys.exit("task %s: the verified row of %s is not listed by verified=1 "
                 "(%s)" % (r["task_id"][:12], r["node_id"][:12],
                           [(o["node_id"][:8], o["verdict"], o.get("counted"),
                             o.get("replica"), o["test_accuracy"])
                            for o in rows if o["task_id"] == r["task_id"]]))
strikes = 0
for n in st.get("verification", {}).get("nodes", []):
    if n.get("node") == liar:
        strikes = n.get("strikes", 0)
if strikes < 1:
    sys.exit("the liar has no strike (lies %s; its rows %s; standing %s)" % (
        sorted(t[:8] for t in lied),
        [(r["task_id"][:8], r["verdict"], r.get("counted")) for r in rows if r["node_id"] == liar],
        st.get("verification", {}).get("nodes", [])))
single = sum(1 for t in {r["task_id"] for r in honest}
             if len([r for r in honest if r["task_id"] == t]) == 1)
if single < 1:
    sys.exit("no task verified by re-evaluation alone")
print(len(lied), strikes, single)
EOF
}

# liar_round K MODE - start liar K in MODE, run sweeps until it told lies
# about one, wait until the honest nodes settle it, check.
liar_round() {
    local k=$1 mode=$2 sweep id attempt n lies
    MSD=$LIAR pool_start_lo "$k" --lie "$mode" "${POOL[@]}"
    pool_wait_alive 20 2 1 2 "$k" || fail "liar $mode did not link"
    id=$(pool_status "$k" 'd["node_id"]')
    for attempt in 1 2 3; do
        grid "reeval-$mode-$attempt" >"$T/$mode-$attempt.yaml"
        sweep=$(pool_submit 1 "$T/$mode-$attempt.yaml")
        lies() { grep -q "^liar: $mode task" "${POOL_LOG[$k]}"; }
        # a slot the liar's result filled opens again once its result does
        # not count (quarantine, dispute): the sweep finishes on both
        ms_wait_until 120 pool_finished 1 "$sweep" && ms_wait_until 60 pool_finished 2 "$sweep" ||
            { pool_dump "$sweep" 1 2 "$k"; fail "sweep $mode-$attempt did not finish"; }
        lies && break
        echo "attempt $attempt: the liar got no task; again" >&2
        [ "$attempt" != 3 ] || fail "$mode: the liar got no task in 3 sweeps"
    done
    grep -q "^liar: $mode task" "${POOL_LOG[$k]}" || fail "$mode: no lie told"
    for j in 1 2; do
        ms_wait_until 120 settled "$j" "$sweep" "$id" "${POOL_LOG[$k]}" "$mode" >/dev/null ||
            { settled "$j" "$sweep" "$id" "${POOL_LOG[$k]}" "$mode" || true; pool_dump "$sweep" 1 2 "$k"; fail "$mode: node $j did not settle the sweep"; }
        n=$(settled "$j" "$sweep" "$id" "${POOL_LOG[$k]}" "$mode") || fail "$mode on node $j: $n"
        echo "node $j: lies, liar strikes, tasks verified by re-evaluation alone: $n"
    done
    read -r lies s1 single <<<"$n"
    LAST="$lies lie(s), none verified; the liar has $s1 strike(s) on node 2; $single task(s) verified by one honest result and its re-evaluations"
    pool_kill "$k" TERM
    pool_reap "$k"
}

liar_round 3 fabricate
grep -q "re-evaluation of node .* failed: the result names no kept weights" "${POOL_LOG[1]}" "${POOL_LOG[2]}" ||
    fail "no failed re-evaluation of a fabricated result was logged"
ok "fabricate: $LAST"
liar_round 4 inflate
ok "inflate: $LAST"
c1=$(pool_status 1 'd["pool_counters"]["reevaluations_published_total"]')
c2=$(pool_status 2 'd["pool_counters"]["reevaluations_published_total"]')
w=$(pool_status 2 'd["pool_counters"]["weights_copies_total"]')
[ "$w" -ge 1 ] || fail "node 2 holds no copy of another operator's weights"
ok "re-evaluations published: $c1 by node 1, $c2 by node 2; $w weights copies held by node 2"
