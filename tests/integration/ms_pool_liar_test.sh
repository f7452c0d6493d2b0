#!/usr/bin/env bash
# ms_pool_liar_test.sh - the dishonest member (ms_dishonest_node) in its
# other modes, as a smoke test: it joins an open pool of two honest
# meshsweepd on loopback (--no-beacon, --peer: nothing is broadcast), and
# publishes properly signed false results that the honest nodes store
# (verification is not asserted here: see docs/TRUST.md "Testing against
# a dishonest member" for what the verification tests add):
#   0. a reference sweep on the honest nodes alone: the honest metrics
#      and weights digest of each config (same config and seed, same
#      machine: bit for bit the same on any node);
#   1. inflate: the liar's rows, stored and counted on both honest nodes,
#      have test_accuracy and val_accuracy 0.05 above the honest values of
#      the same config (capped below 1), and the honest weights digest;
#   2. fabricate: its rows have made-up metrics and a weights digest no
#      training gave, and it trained nothing;
#   3. copy: for tasks the honest nodes finished, its rows repeat theirs
#      (metrics, weights digest, timings) under its own node id.
#   4. copy with verify.replicas 2 (commit then reveal, docs/
#      VERIFICATION.md): the honest nodes commit before they reveal; the
#      liar's copies come with no commit, so on every node none of them
#      is counted (no row of the liar repeats another node's timings),
#      while every task it copied is verified by two operators (a result
#      the liar trained and committed itself counts, as it should).
# Every sweep completes and the honest nodes' tables agree.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
LIAR=${MESHSWEEP_DISHONEST_NODE:-}
[ -x "$LIAR" ] || { echo "ms_dishonest_node not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

pool_lo_ports 6
POOL=(--open-pool=liars --workers 1 "${POOL_TIMES[@]}")
pool_start_lo 1 "${POOL[@]}"
pool_start_lo 2 "${POOL[@]}"
pool_wait_alive 20 1 1 2 || fail "the honest nodes did not link"

grid() { # NAME [REPLICAS]
    cat <<Y
name: $1
dataset: fashion-mnist
verify: {replicas: ${2:-1}}
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4]}
  width:         {value: 16}
  epochs:        {value: 100}
  batch_size:    {value: 50}
Y
}

# run_sweep NAME NODES... - submit grid NAME to node 1, wait until it is
# finished on the honest nodes and the tables of NODES agree; prints the id.
run_sweep() {
    local name=$1 sweep
    shift
    grid "$name" "${REPLICAS:-1}" >"$T/$name.yaml"
    sweep=$(pool_submit 1 "$T/$name.yaml")
    both() { pool_finished 1 "$1" && pool_finished 2 "$1"; }
    ms_wait_until 90 both "$sweep" || { pool_dump "$sweep" "$@"; fail "sweep $name did not finish"; }
    ms_wait_until 15 pool_same_digest "$sweep" "$@" || fail "tables of $name differ"
    echo "$sweep"
}

# check MODE ROWS_JSON LIAR_ID LOG - the liar's rows against the reference
# ($T/ref.json) and its log; prints what it found.
check() {
    python3 - "$@" "$T/ref.json" <<'EOF'
import json, re, sys
mode, rows_file, liar, log, ref_file = sys.argv[1:6]
rows = json.load(open(rows_file))["rows"]
ref = json.load(open(ref_file))["rows"]
key = lambda r: json.dumps(r["config"], sort_keys=True)
honest = {key(r): r for r in ref}
# the lies told about this sweep's tasks (a copying liar copies every
# sweep it holds; the tasks it ran itself it trained honestly)
tasks = {r["task_id"] for r in rows}
lied = {l.split()[3] for l in open(log) if l.startswith("liar: %s task " % mode.rstrip("2"))}
lied &= tasks
if not lied:
    sys.exit("the liar published no %s result for this sweep" % mode)
mine = [r for r in rows if r["node_id"] == liar and r["task_id"] in lied]
if mode == "copy2":
    # commit then reveal: a copy has no commit, so it is never counted;
    # a row of the liar in a copied task is one it trained and committed
    # itself (its own timings), and each copied task is verified by two
    # operators' counted rows.
    timing = ("train_seconds", "seconds_per_epoch")
    # An honest node may also have run a slot that the liar's copy left
    # looking empty (the copy has no commit) before the liar revealed its
    # own committed result there: that honest row is an extra replica,
    # verified but not counted, which is correct.
    for t in lied:
        here = [o for o in rows if o["task_id"] == t]
        counted = [o for o in here if o.get("counted") is True]
        others = [o for o in counted if o["node_id"] != liar]
        if len({o["node_id"] for o in counted}) < 2 or not others:
            sys.exit("task %s: %d counted rows" % (t[:12], len(counted)))
        for o in here:
            if o.get("verdict") != "verified":
                sys.exit("task %s: row %s, counted %r" % (t[:12], o.get("verdict"), o.get("counted")))
        for r in mine:
            if r["task_id"] == t and r.get("counted") is True and \
                    any(all(r[k] == o[k] for k in timing) for o in others):
                sys.exit("task %s: the liar's copy is counted" % t[:12])
    print(len(lied))
    sys.exit(0)
if len(mine) != len(lied):
    sys.exit("%d %s lies published, %d rows of them stored" % (len(lied), mode, len(mine)))
if mode != "copy" and len([r for r in rows if r["node_id"] == liar]) != len(mine):
    sys.exit("a row of the liar that it did not lie about")
for r in mine:
    h = honest[key(r)]
    t = r["task_id"][:12]
    if mode == "inflate":
        for k in ("test_accuracy", "val_accuracy"):
            want = h[k] + 0.05 if h[k] + 0.05 < 1 else max(h[k], 0.9999)
            if abs(r[k] - want) > 1e-12:
                sys.exit("task %s: %s %r, honest %r" % (t, k, r[k], h[k]))
        for k in ("weights_digest", "epochs", "test_loss", "val_loss", "fingerprint"):
            if r[k] != h[k]:
                sys.exit("task %s: %s differs from the honest run" % (t, k))
    elif mode == "fabricate":
        if r["weights_digest"] == h["weights_digest"] or r["fingerprint"] is not None:
            sys.exit("task %s: looks trained" % t)
        if not 0.5 <= r["test_accuracy"] <= 0.95 or r["status"] != "ok":
            sys.exit("task %s: not the made-up metrics" % t)
    elif mode == "copy":
        src = [o for o in rows if o["task_id"] == r["task_id"] and o["node_id"] != liar]
        if len(src) != 1:
            sys.exit("task %s: %d originals" % (t, len(src)))
        for k in ("test_accuracy", "val_accuracy", "test_loss", "weights_digest",
                  "train_seconds", "seconds_per_epoch", "fingerprint"):
            if r[k] != src[0][k]:
                sys.exit("task %s: %s is not the original's" % (t, k))
    if r.get("counted") is not True:
        # An honest node can also run the slot when the liar's claim
        # reached it after its own settle window (a race of the pool, not
        # of verification): then the two rows are replicas and the rank
        # counts one. Only that case may leave the liar's row uncounted.
        counted = [o for o in rows if o["task_id"] == r["task_id"] and o.get("counted") is True]
        if len(counted) != 1 or counted[0]["node_id"] == liar:
            sys.exit("task %s: the liar's row is not counted (%d counted rows)" % (t, len(counted)))
if not any(r.get("counted") is True for r in mine):
    sys.exit("none of the liar's %d rows is counted" % len(mine))
print(len(mine))
EOF
}

# liar_round K MODE - start liar K in MODE, run a sweep with it, check its
# rows on both honest nodes, stop it.
liar_round() {
    local k=$1 mode=$2 sweep id n
    MSD=$LIAR pool_start_lo "$k" --lie "${mode%2}" "${POOL[@]}"
    pool_wait_alive 20 2 1 2 "$k" || fail "liar $mode did not link"
    id=$(pool_status "$k" 'd["node_id"]')
    # The liar gets tasks only when it starts them before the honest nodes,
    # idle, steal them (tasks here take milliseconds): a sweep it got none
    # of is run again under another name (same configs), up to 3 times.
    local attempt
    for attempt in 1 2 3; do
        sweep=$(run_sweep "liar-$mode-$attempt" 1 2 "$k")
        if [ "$mode" = copy ] || [ "$mode" = copy2 ]; then
            # copies follow the honest results: wait until each is published
            copies() { [ "$(grep -c '^liar: copy task .*from node [0-9a-f]*$' "${POOL_LOG[$k]}" || true)" -ge 1 ]; }
            ms_wait_until 15 copies || fail "the copying liar published nothing"
            sleep 2
            ms_wait_until 15 pool_same_digest "$sweep" 1 2 "$k" || fail "tables of liar-copy differ"
        fi
        pool_rows_json 1 "$sweep" "$T/rows1.json" "&all=1"
        n=$(check "$mode" "$T/rows1.json" "$id" "${POOL_LOG[$k]}" 2>&1) && break
        case "$n" in
        *"published no"*) echo "attempt $attempt: $n; again" >&2 ;;
        *) fail "$mode on node 1: $n" ;;
        esac
        [ "$attempt" != 3 ] || fail "$mode: the liar got no task in 3 sweeps"
    done
    for j in 1 2; do
        pool_rows_json "$j" "$sweep" "$T/rows$j.json" "&all=1"
        n=$(check "$mode" "$T/rows$j.json" "$id" "${POOL_LOG[$k]}") ||
            fail "$mode on node $j: $n"
    done
    [ "$mode" != fabricate ] || [ "$(pool_status "$k" 'd["tasks_trained_total"]')" = 0 ] ||
        fail "the fabricating liar trained"
    LAST_N=$n
    pool_kill "$k" TERM
    pool_reap "$k"
}

# ---- 0. the reference: the honest values of each config --------------------
ref=$(run_sweep liar-ref 1 2)
pool_rows_json 1 "$ref" "$T/ref.json" "&all=1"
ok "reference sweep: 8 tasks on the honest nodes"

# ---- 1-3. each lie, published and stored -------------------------------------
liar_round 3 inflate
ok "inflate: $LAST_N row(s) of the liar stored on both honest nodes, accuracies +0.05 over the honest run, same weights digest"
liar_round 4 fabricate
ok "fabricate: $LAST_N row(s) of made-up metrics (no training) stored on both honest nodes"
liar_round 5 copy
ok "copy: $LAST_N row(s) copied from the honest nodes (same metrics, digest, timings) stored under the liar's id"
REPLICAS=2 liar_round 6 copy2
ok "copy, replicas 2: $LAST_N task(s) copied by the liar without a commit: none of its copies counted, each task verified by two operators' committed results"
