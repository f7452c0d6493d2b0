#!/usr/bin/env bash
# ms_pool_reload_test.sh - SIGHUP reloads, counted (one real meshsweepd on
# loopback, --no-beacon: nothing is broadcast):
#   1. a node started without a certificate logs one reload per SIGHUP
#      (MS_RELOAD_N1 of them, each waited for: signals sent faster merge);
#   2. `meshsweep pool join` installs its certificate and sends SIGHUP:
#      the node joins the pool without a restart (the first czmq objects
#      are made now);
#   3. MS_RELOAD_N2 more SIGHUPs: one "certificate renewed" each, none
#      lost;
#   4. SIGTERM still stops it: czmq, started by the reload, must not have
#      taken over SIGINT/SIGTERM (ms_node_open disables its handlers).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
N1=${MS_RELOAD_N1:-10}
N2=${MS_RELOAD_N2:-30}

"$MS" pool init --out "$T/auth" >/dev/null
pool_lo_ports 1
pool_start 1 - "$T/n1" --no-beacon --mesh-port "${POOL_MESH[1]}" --workers 1 "${POOL_TIMES[@]}"
ms_wait_until 10 grep -q "links to no one" "${POOL_LOG[1]}" || fail "the node did not say it links to no one"
reloads() { grep -c -E 'reload: (no certificate|joined pool|certificate renewed|certificate not taken)' "${POOL_LOG[1]}" || true; }
more_than() { [ "$(reloads)" -gt "$1" ]; }
# hup N - N SIGHUPs, each followed by its reload (10 s at most each).
hup() {
    local i before
    for ((i = 1; i <= $1; i++)); do
        before=$(reloads)
        pool_kill 1 HUP
        ms_wait_until 10 more_than "$before" ||
            fail "SIGHUP $i of $1: no reload logged within 10 s ($before reloads so far)"
    done
}

hup "$N1"
[ "$(reloads)" = "$N1" ] || fail "$(reloads) reloads logged for $N1 SIGHUPs"
[ "$(grep -c 'reload: no certificate' "${POOL_LOG[1]}")" = "$N1" ] || fail "reloads without a certificate: $(grep 'reload:' "${POOL_LOG[1]}")"
ok "no certificate: $N1 SIGHUPs, $N1 reloads logged"

id=$(cat "$T/n1/identity/node.pub")
"$MS" pool invite "$id" --operator op1 --authority "$T/auth" --out "$T/n1.cert" >/dev/null
before=$(reloads)
"$MS" pool join "$T/n1.cert" --data-dir "$T/n1" >"$T/join.out" 2>&1 || fail "pool join: $(cat "$T/join.out")"
grep -q "sent SIGHUP" "$T/join.out" || fail "pool join did not signal the node: $(cat "$T/join.out")"
ms_wait_until 10 more_than "$before" || fail "no reload logged within 10 s of pool join"
grep -q "reload: joined pool" "${POOL_LOG[1]}" || fail "the node did not join: $(grep 'reload:' "${POOL_LOG[1]}" | tail -1)"
ms_gone "${POOL_PID[1]}" && fail "the node exited"
ok "pool join: one SIGHUP, the node joined the pool without a restart"

hup "$N2"
total=$((N1 + 1 + N2))
[ "$(reloads)" = "$total" ] || fail "$(reloads) reloads logged for $total SIGHUPs"
[ "$(grep -c 'reload: certificate renewed' "${POOL_LOG[1]}")" = "$N2" ] || fail "renewals: $(grep -c 'reload: certificate renewed' "${POOL_LOG[1]}") of $N2"
ok "in the pool: $N2 SIGHUPs, $N2 renewals; $total SIGHUPs, $total reloads in all"

pool_kill 1 TERM
ms_wait_until 15 ms_gone "${POOL_PID[1]}" || fail "SIGTERM did not stop the node after it joined on SIGHUP (czmq's handler?)"
grep -q "meshsweepd: stopped" "${POOL_LOG[1]}" || fail "the node did not stop cleanly"
ok "SIGTERM stops the node that joined on SIGHUP"
