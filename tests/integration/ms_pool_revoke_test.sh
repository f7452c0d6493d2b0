#!/usr/bin/env bash
# ms_pool_revoke_test.sh - revocation end to end (issue 4, authority items)
# with real daemons on loopback (--no-beacon, NODE_ID@tcp:// peers), the
# authority made with the `meshsweep pool` CLI:
#   1. three members (operators op1..op3) link and share a sweep;
#   2. while it runs, `meshsweep pool revoke C --node A` publishes a
#      revocation (cut: all) to node A only: within a few seconds A and B
#      have closed their links to C and no longer list it alive, both hold
#      the item (gossip), and C keeps running (it is not told);
#   3. the sweep completes on A and B: no counted row of C on either
#      (C's tasks redone by A and B after the TTL), same results digest;
#   4. the item with one byte changed is refused by the API (exit 2, a
#      clear error) and counted; the item sent again is known, not new.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 1500 --test 100

"$MS" pool init --out "$T/auth" >/dev/null

pool_lo_ports 3
for k in 1 2 3; do
    pool_make_identity "$k"
    pool_invite "$k" "op$k" --roles worker,submit
    pool_join "$k"
done
C=$(pool_node_id 3)

# ---- 1. three members ------------------------------------------------------
pool_start_member 1 2 3
pool_start_member 2 1 3
pool_start_member 3 1 2
pool_wait_alive 30 2 1 2 3 || { pool_show_peers 1 2 3; fail "the three members did not link"; }
# every member learns every member's chain as an item (3 items each)
items3() { [ "$(pool_counter "$1" authority_items)" = 3 ]; }
for k in 1 2 3; do
    ms_wait_until 10 items3 "$k" || fail "node $k holds $(pool_counter "$k" authority_items) items, want 3 chains"
done
ok "three members linked; each holds the 3 members' chains as authority items"

cat >"$T/grid.yaml" <<Y
name: revoke-grid
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}
  width:  {value: 32}
  epochs: {value: 4}
Y
sweep=$(pool_submit 1 "$T/grid.yaml")
# wait until C has produced a result (so there is something to stop
# counting), then revoke it through node A only
c_rows() { # K: rows of node K's table produced by C
    pool_rows "$1" "$sweep" "$T/rows$1.csv" || { echo 0; return; }
    grep -c "$C" "$T/rows$1.csv" || true
}
c_has_row() { [ "$(c_rows 1)" -gt 0 ]; }
ms_wait_until 60 c_has_row || fail "node C produced no result"

# ---- 2. revoke C via node A ------------------------------------------------
t0=$SECONDS
"$MS" pool revoke "$C" --authority "$T/auth" --out "$T/c.revoke" \
    --node "${POOL_API[1]}" >"$T/revoke.out" 2>&1 ||
    fail "pool revoke --node failed: $(cat "$T/revoke.out")"
grep -q 'published to' "$T/revoke.out" || fail "revoke did not say it published: $(cat "$T/revoke.out")"
c_gone() { # K: node K does not list C alive
    ! pool_cli "$1" peers 2>/dev/null | grep "${C:0:12}" | grep -q ' alive '
}
for k in 1 2; do
    ms_wait_until 10 c_gone "$k" || { pool_show_peers 1 2; fail "node $k still lists C alive"; }
    [ "$(pool_counter "$k" revocations_applied_total)" = 1 ] ||
        fail "node $k applied $(pool_counter "$k" revocations_applied_total) revocations"
    [ "$(pool_counter "$k" authority_items)" = 4 ] || fail "node $k: $(pool_counter "$k" authority_items) items"
done
took=$((SECONDS - t0))
[ "$took" -le 10 ] || fail "the revocation took $took s to reach A and B"
grep -q "revoked by the pool authority" "${POOL_LOG[2]}" || fail "node B did not log the revocation"
kill -0 "${POOL_PID[3]}" 2>/dev/null || fail "C stopped (it is not told; it should keep running)"
ok "revocation published to A reached B; A and B closed their links to C within ${took} s"
# `meshsweep peers` shows C as /api/v1/peers gives it: revoked (its link
# dead), its incarnation (16 hex) and its operator.
c_shown_revoked() { # K
    pool_cli "$1" peers >"$T/peers$1.txt" 2>&1 &&
        grep -Eq "^${C:0:12}  dead +revoked +[0-9a-f]{16}  op3 " "$T/peers$1.txt" &&
        pool_cli "$1" peers --json >"$T/peers$1.json" 2>&1 &&
        python3 -c 'import json,sys; p=[p for p in json.load(open(sys.argv[1])) if p["node_id"]==sys.argv[2]]; sys.exit(0 if len(p)==1 and p[0]["revoked"] is True and p[0]["quarantined"] is False and len(p[0]["incarnation"])==16 else 1)' "$T/peers$1.json" "$C"
}
for k in 1 2; do
    ms_wait_until 10 c_shown_revoked "$k" || fail "node $k: meshsweep peers does not show C revoked: $(cat "$T/peers$k.txt")"
done
ok "meshsweep peers on A and B: $(grep "${C:0:12}" "$T/peers1.txt")"

# ---- 3. the sweep completes without C ------------------------------------
for k in 1 2; do
    ms_wait_until 120 pool_finished "$k" "$sweep" || { pool_dump "$sweep" 1 2; fail "the sweep did not finish on node $k"; }
done
ms_wait_until 20 pool_same_digest "$sweep" 1 2 || fail "A and B differ on the results"
for k in 1 2; do
    n=$(c_rows "$k")
    [ "$n" = 0 ] || fail "node $k counts $n row(s) of revoked C"
    pool_check_rows "$T/rows$k.csv.raw" 12 >/dev/null || fail "node $k: $(pool_check_rows "$T/rows$k.csv.raw" 12 2>&1)"
done
kill -0 "${POOL_PID[3]}" 2>/dev/null || fail "C died"
ok "every task completed on A and B with no counted row of C; same digest ${POOL_DIGEST:0:16}"

# ---- 4. a tampered item is refused; a known one is not new ---------------
python3 - "$T/c.revoke" "$T/bad.revoke" <<'PY'
import sys
line = open(sys.argv[1]).read()
i = len("meshsweep-authority-item-v1 ") + 60 # inside the subject
c = line[i]
line = line[:i] + ("A" if c != "A" else "B") + line[i + 1:]
open(sys.argv[2], "w").write(line)
PY
before=$(pool_counter 1 authority_items_refused_total)
ms_expect_exit 2 "$T/bad" "$MS" pool publish "$T/bad.revoke" --node "${POOL_API[1]}"
grep -q 'refused by' "$T/bad" || fail "no clear error: $(cat "$T/bad")"
echo "the API said: $(cat "$T/bad")"
refused_once() { [ "$(pool_counter 1 authority_items_refused_total)" = $((before + 1)) ]; }
ms_wait_until 5 refused_once || fail "the tampered item was not counted"
[ "$(pool_counter 1 authority_items)" = 4 ] || fail "the tampered item was kept"
"$MS" pool publish "$T/c.revoke" --node "${POOL_API[2]}" --json >"$T/again.json"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["new"])' "$T/again.json")" = False ] ||
    fail "the revocation sent again was new on B"
ok "a revocation with one byte changed is refused by the API and counted; a known one is not new"
