#!/usr/bin/env bash
# ms_pool_clear_test.sh - a quarantine cleared by the pool authority
# (issue 4), real daemons on loopback (--no-beacon, NODE_ID@tcp:// peers),
# the authority made with the `meshsweep pool` CLI:
#   1. two honest members (operators op1, op2) and a dishonest one (op3,
#      ms_dishonest_node --lie inflate: every result 0.05 above the honest
#      one) run a sweep with `replicas: 2`: a task the liar took is
#      disputed, opens a third slot, and is verified by the two honest
#      operators, which strikes the liar; with 3 strikes both honest nodes
#      quarantine it (its rows not counted);
#   2. `meshsweep pool clear L --node A` signs a CLEAR_QUARANTINE whose cut
#      is A's view of L's log (GET /api/v1/logs/L: per incarnation the
#      highest seq held) and publishes it to A only: A and B (by gossip)
#      forgive the strikes of L's results inside the cut, lift the
#      quarantine, and the liar's results count again; the clear sent
#      again is not new. A clear without a cut, or with `--cut all`, is
#      refused (exit 2).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
LIAR=${MESHSWEEP_DISHONEST_NODE:-}
[ -x "$LIAR" ] || { echo "ms_dishonest_node not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

"$MS" pool init --out "$T/auth" >/dev/null

pool_lo_ports 3
for k in 1 2 3; do
    pool_make_identity "$k"
    roles=worker
    [ "$k" = 1 ] && roles=worker,submit
    "$MS" pool invite "$(pool_node_id $k)" --operator "op$k" --roles "$roles" \
        --authority "$T/auth" --out "$T/n$k.cert" >/dev/null
    "$MS" pool join "$T/n$k.cert" --data-dir "$T/n$k" >/dev/null
done
L=$(pool_node_id 3)

# ---- 1. the liar is quarantined --------------------------------------------
pool_start_member 1 2 3
pool_start_member 2 1 3
MSD=$LIAR pool_start_member 3 1 2 -- --lie inflate
pool_wait_alive 30 2 1 2 3 || fail "the three members did not link"
grid() { # NAME
    cat <<Y
name: $1
dataset: fashion-mnist
verify: {replicas: 2}
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4, 5, 6, 7, 8]}
  width:         {value: 4}
  epochs:        {value: 1}
  batch_size:    {value: 50}
Y
}
# liar_rows K - "counted uncounted" rows of the liar on node K (in $sweep)
liar_rows() {
    pool_cli "$1" results "$sweep" --format json >"$T/rows$1.json" 2>/dev/null || { echo "0 0"; return; }
    python3 - "$T/rows$1.json" "$L" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["node_id"] == sys.argv[2]]
print(sum(1 for r in rows if r["counted"]), sum(1 for r in rows if not r["counted"]))
PY
}
quarantined() { [ "$(pool_standing "$1" "$L" | cut -d' ' -f2)" = true ]; }
both_quarantined() { quarantined 1 && quarantined 2; }
q_or_done() { both_quarantined || { pool_finished 1 "$sweep" && pool_finished 2 "$sweep"; }; }
# The liar gets tasks only when it claims them before the honest nodes
# steal them (a loaded machine may give it none): a sweep after which it
# is not quarantined is followed by another (new seeds), up to 4.
for attempt in 1 2 3 4; do
    grid "clear-grid-$attempt" >"$T/grid.yaml"
    sed -i "s/values: \[1, 2, 3, 4, 5, 6, 7, 8\]/values: [$(seq -s, $((attempt * 10 + 1)) $((attempt * 10 + 8)) | sed 's/,/, /g')]/" "$T/grid.yaml"
    sweep=$(pool_submit 1 "$T/grid.yaml")
    ms_wait_until 90 q_or_done || { pool_dump "$sweep" 1 2 3; fail "sweep $attempt neither finished nor quarantined the liar"; }
    ms_wait_until 5 both_quarantined && break
    echo "sweep $attempt: the liar is not quarantined yet (A: strikes, quarantined: $(pool_standing 1 "$L"))"
done
for k in 1 2; do
    ms_wait_until 10 quarantined "$k" || fail "node $k did not quarantine the liar (strikes, quarantined: $(pool_standing "$k" "$L"))"
done
none_counted() { read -r c u < <(liar_rows "$1"); [ "$c" = 0 ] && [ "$u" -ge 1 ]; }
for k in 1 2; do
    ms_wait_until 60 none_counted "$k" || fail "node $k: liar rows (counted, not counted): $(liar_rows "$k")"
done
# The liar stops here, so that no strike it earns after the clear can
# quarantine it again; A and B first hold the same rows of it. (The sweep
# is not waited for: a slot filled by a quarantined node is not opened
# again, so tasks it held stay pending - see docs/VERIFICATION.md.)
pool_kill 3 TERM
pool_reap 3
same_rows() { [ "$(liar_rows 1)" = "$(liar_rows 2)" ]; }
ms_wait_until 20 same_rows || fail "A and B differ on the liar's rows: $(liar_rows 1) vs $(liar_rows 2)"
for k in 1 2; do quarantined "$k" || fail "node $k: the quarantine lifted by itself"; done
read -r s1 _ < <(pool_standing 1 "$L")
read -r _ u1 < <(liar_rows 1)
grep -c '^liar: inflate' "${POOL_LOG[3]}" >"$T/nlies" || true
ok "the inflating liar is quarantined on A and B after $attempt sweep(s) ($s1 strikes on A; $u1 of its rows in the last sweep not counted; $(cat "$T/nlies") false results)"

# ---- 2. the authority clears the quarantine --------------------------------
set +e
"$MS" pool clear "$L" --authority "$T/auth" --out "$T/bad.clear" >"$T/nocut.out" 2>&1
rc_nocut=$?
"$MS" pool clear "$L" --authority "$T/auth" --out "$T/bad.clear" --cut all >"$T/allcut.out" 2>&1
rc_all=$?
set -e
[ "$rc_nocut" = 2 ] || fail "pool clear without a cut: exit $rc_nocut: $(cat "$T/nocut.out")"
[ "$rc_all" = 2 ] || fail "pool clear --cut all: exit $rc_all: $(cat "$T/allcut.out")"
[ ! -e "$T/bad.clear" ] || fail "a refused clear was written"
want_cut=$(python3 - "${POOL_API[1]}" "$L" <<'PY'
import json, sys, urllib.request
doc = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/logs/" + sys.argv[2], timeout=5))
print(",".join("%s:%d" % (e["incarnation"], e["max_seq"]) for e in doc["cut"]))
PY
)
[ -n "$want_cut" ] || fail "A shows no log of the liar"
"$MS" pool clear "$L" --authority "$T/auth" --out "$T/l.clear" \
    --node "${POOL_API[1]}" >"$T/clear.out" 2>&1 || fail "pool clear --node failed: $(cat "$T/clear.out")"
grep -q 'published to' "$T/clear.out" || fail "clear did not say it published: $(cat "$T/clear.out")"
# The liar is stopped; A's view moves only if gossip still brings it a
# record of the liar, so the cut is A's view just before or just after.
log_cut() {
    python3 - "${POOL_API[1]}" "$L" <<'PY'
import json, sys, urllib.request
doc = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/logs/" + sys.argv[2], timeout=5))
print(",".join("%s:%d" % (e["incarnation"], e["max_seq"]) for e in doc["cut"]))
PY
}
after_cut=$(log_cut)
grep -q -e "(cut $want_cut," -e "(cut $after_cut," "$T/clear.out" ||
    fail "the clear's cut is not A's view of the log ($want_cut): $(cat "$T/clear.out")"
lifted() { ! quarantined "$1"; }
counted_again() { read -r c u < <(liar_rows "$1"); [ "$c" -ge 1 ] && [ "$u" = 0 ]; }
for k in 1 2; do
    ms_wait_until 20 lifted "$k" || fail "node $k still quarantines the liar after the clear: $(pool_standing "$k" "$L")"
    ms_wait_until 20 counted_again "$k" || fail "node $k: the liar's rows do not count again: $(liar_rows "$k")"
done
# /api/v1/status says why the liar is no longer quarantined: its strikes
# are still counted, and that many were forgiven by the clear.
for k in 1 2; do
    pool_curl "$k" /api/v1/status >"$T/status$k.json"
    python3 - "$T/status$k.json" "$L" <<'PY' || fail "node $k: /status does not show the forgiven strikes: $(cat "$T/status$k.json")"
import json, sys
d = json.load(open(sys.argv[1]))
n = [n for n in d["verification"]["nodes"] if n["node"] == sys.argv[2]]
assert len(n) == 1, n
n = n[0]
assert n["quarantined"] is False, n
assert n["strikes"] >= 3 and 3 <= n["forgiven"] <= n["strikes"], n
assert n["strikes_left"] == n["strikes"] - n["forgiven"], n
print("node: strikes %d, forgiven %d, strikes_left %d, quarantined %s" % (
    n["strikes"], n["forgiven"], n["strikes_left"], n["quarantined"]))
PY
done
read -r c1 u1 < <(liar_rows 1)
"$MS" pool publish "$T/l.clear" --node "${POOL_API[2]}" --json >"$T/again.json"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["new"])' "$T/again.json")" = False ] ||
    fail "the clear sent again was new on B"
"$MS" pool show "$T/l.clear" >"$T/show.out" 2>&1 || fail "pool show of the clear failed: $(cat "$T/show.out")"
grep -q 'clear-quarantine' "$T/show.out" || fail "pool show: $(cat "$T/show.out")"
ok "a clear with cut $want_cut (A's view) published to A lifted the quarantine on A and B: $c1 rows of the liar in the last sweep count again ($u1 not)"
