#!/usr/bin/env bash
# ms_pool_peers_conf_test.sh - meshsweepd reads DATA_DIR/identity/peers.conf
# (what `meshsweep pool join --peer` writes) at start and on SIGHUP, with
# real daemons on loopback (--no-beacon; an authority made with the
# `meshsweep pool` CLI):
#   1. two members started with no --peer link to no one;
#   2. `pool join --peer B` on A's data dir (which sends A SIGHUP) makes
#      A dial B: they link, no restart;
#   3. a bad line in A's peers.conf and SIGHUP: a warning, the link stays;
#   4. a third member whose peers.conf names A links at start; with a bad
#      line in its peers.conf it refuses to start with one clear error.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }

"$MS" pool init --out "$T/auth" >/dev/null
pool_lo_ports 3
for k in 1 2 3; do
    pool_make_identity "$k"
    pool_invite "$k" "op$k"
done
pool_join 1
pool_join 2
[ ! -e "$T/n1/identity/peers.conf" ] || fail "join without --peer wrote peers.conf"

# ---- 1. no peers: alone ---------------------------------------------------
pool_start_member 1
pool_start_member 2
sleep 2
[ "$(pool_alive 1)" = 0 ] || fail "node 1 linked with no peer given"
ok "two members with no peers link to no one"

# ---- 2. join --peer on a running node: SIGHUP reads peers.conf -----------
"$MS" pool join "$T/n1.cert" --data-dir "$T/n1" \
    --peer "$(pool_node_id 2)@tcp://127.0.0.1:${POOL_MESH[2]}" >"$T/join.out"
grep -q "peer = $(pool_node_id 2)@tcp://127.0.0.1:${POOL_MESH[2]}" "$T/n1/identity/peers.conf" ||
    fail "peers.conf: $(cat "$T/n1/identity/peers.conf")"
pool_wait_alive 20 1 1 2 || fail "node 1 did not dial the peer of its peers.conf after SIGHUP"
grep -q 'reload: peers.conf: 1 peer' "${POOL_LOG[1]}" || fail "node 1 did not say it read peers.conf"
ok "pool join --peer on a running node: SIGHUP, peers.conf read, A and B linked"

# ---- 3. a bad line on reload: warning, old peers kept -----------------------
cp "$T/n1/identity/peers.conf" "$T/good.conf"
echo "peer = not-an-endpoint" >>"$T/n1/identity/peers.conf"
pool_kill 1 HUP
warned() { grep -q 'warning: reload: peers.conf not taken' "${POOL_LOG[1]}"; }
ms_wait_until 10 warned || fail "no warning for a bad peers.conf on reload"
grep 'warning: reload: peers.conf' "${POOL_LOG[1]}" | grep -q 'peers.conf:[0-9]' ||
    fail "the warning does not name the line"
sleep 1
kill -0 "${POOL_PID[1]}" || fail "node 1 died on a bad peers.conf"
pool_cli 1 peers | grep "$(pool_node_id 2 | cut -c1-12)" | grep -q ' alive ' ||
    fail "node 1 lost its peer after a bad reload"
ok "a bad line on reload: one warning naming the line, the link stays"

# ---- 4. at start ----------------------------------------------------------
"$MS" pool join "$T/n3.cert" --data-dir "$T/n3" \
    --peer "$(pool_node_id 1)@tcp://127.0.0.1:${POOL_MESH[1]}" >/dev/null
pool_start_member 3
# (node 3 may then learn node 2 from node 1's view: at least node 1)
n1_alive_on_3() { pool_cli 3 peers 2>/dev/null | grep "$(pool_node_id 1 | cut -c1-12)" | grep -q ' alive '; }
ms_wait_until 20 n1_alive_on_3 || fail "node 3 did not link to the peer of its peers.conf at start"
pool_kill 3 TERM
pool_reap 3
printf 'peer = %s@tcp://127.0.0.1:%s\npeer = %s@tcp://127.0.0.1:99999\n' \
    "$(pool_node_id 1)" "${POOL_MESH[1]}" "$(pool_node_id 2)" >"$T/n3/identity/peers.conf"
rc=0
timeout 20 "$MSD" --data-dir "$T/n3" --api 127.0.0.1:0 --no-beacon --mesh-port 0 \
    --workers 1 >"$T/bad3.out" 2>"$T/bad3.err" || rc=$?
[ "$rc" = 2 ] || fail "a bad peers.conf at start: exit $rc (want 2): $(cat "$T/bad3.err")"
[ "$(wc -l <"$T/bad3.err")" = 1 ] || fail "not one error line: $(cat "$T/bad3.err")"
grep -q "peers.conf:2: peer = .*:99999: port '99999' is not a number in 1..65535" "$T/bad3.err" ||
    fail "the error does not name the file, line and what: $(cat "$T/bad3.err")"
ok "peers.conf read at start; a bad line refuses the start with one clear error ($(cat "$T/bad3.err"))"
