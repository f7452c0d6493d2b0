#!/usr/bin/env bash
# ms_pool_discovery_test.sh - real meshsweepd daemons find each other
# (issue 3, "What it must show"):
#   1. three daemons in one private network namespace (lo up, a route for
#      255.255.255.255 on lo, --interface '*'), --open-pool and no --peer,
#      each list the other two alive within 3 s of answering;
#   2. four daemons in four namespaces joined by a bridge (netns.sh) find
#      each other by beacon (--interface eth0), and a fifth daemon of
#      --open-pool=other on the same bridge links to none of them;
#   3. the same four with --no-beacon and --peer form the same pool.
# The whole test runs inside its own mount + network namespace (exit 77
# when namespaces are not permitted): no beacon leaves it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }

# ms timestamps
now_ms() { date +%s%3N; }

# ---- 1. three daemons, one namespace, beacons over lo ----------------------
ip link set lo up
ip route add 255.255.255.255/32 dev lo src 127.0.0.1
ONE=(--open-pool=disc --interface '*' --workers 1 "${POOL_TIMES[@]}")
for k in 1 2 3; do
    pool_start "$k" - "$T/a$k" "${ONE[@]}" --mesh-port 0
done
t0=$(now_ms)
pool_wait_alive 3 2 1 2 3 || {
    for k in 1 2 3; do pool_cli "$k" peers >&2 || true; done
    fail "three daemons in one namespace did not list 2 alive peers within 3 s"
}
ok "3 daemons in one namespace (beacon on lo, --interface '*') see each other in $(($(now_ms) - t0)) ms"
# each node lists the other two, by id, and not itself
for k in 1 2 3; do
    pool_cli "$k" peers --json >"$T/peers$k.json" || fail "peers --json on node $k"
    pool_curl "$k" /api/v1/status >"$T/status$k.json" || fail "status on node $k"
done
python3 - "$T"/peers{1,2,3}.json "$T"/status{1,2,3}.json <<'EOF' || fail "peer lists"
import json, sys
peers = [json.load(open(f)) for f in sys.argv[1:4]]
status = [json.load(open(f)) for f in sys.argv[4:7]]
ids = [s["node_id"] for s in status]
assert len(set(ids)) == 3, ids
for i, p in enumerate(peers):
    seen = {e["node_id"] for e in p if e.get("state") == "alive"}
    assert seen == set(ids) - {ids[i]}, (i, seen)
EOF
for k in 1 2 3; do pool_kill "$k" TERM; done
for k in 1 2 3; do pool_reap "$k"; done
ok "each lists the other two by id, never itself"

# ---- 2. four namespaces over a bridge, by beacon; another pool stays out ---
ms_netns_setup 5
BR=(--open-pool=disc --workers 1 "${POOL_TIMES[@]}")
for k in 1 2 3 4; do
    pool_start "$k" "$k" "$T/b$k" "${BR[@]}" --interface eth0
done
pool_start 5 5 "$T/b5" --open-pool=other --workers 1 "${POOL_TIMES[@]}" \
    --interface eth0
t0=$(now_ms)
pool_wait_alive 5 3 1 2 3 4 || {
    for k in 1 2 3 4; do pool_cli "$k" peers >&2 || true; done
    fail "four daemons over the bridge did not list 3 alive peers within 5 s"
}
ok "4 daemons in 4 namespaces over a bridge see each other by beacon in $(($(now_ms) - t0)) ms"
sleep 1 # beacons of 'other' have had ten intervals to do harm
[ "$(pool_alive 5)" = 0 ] || fail "the daemon of pool 'other' linked: $(pool_cli 5 peers)"
for k in 1 2 3 4; do
    [ "$(pool_alive "$k")" = 3 ] || fail "node $k: $(pool_cli "$k" peers)"
    pool_curl "$k" /api/v1/status >"$T/s$k.json"
done
pool_curl 5 /api/v1/status >"$T/s5.json"
[ "$(ms_json_get "$T/s1.json" 'd["pool_id"]')" = "$(ms_json_get "$T/s4.json" 'd["pool_id"]')" ] ||
    fail "nodes 1 and 4 report different pool ids"
[ "$(ms_json_get "$T/s1.json" 'd["pool_id"]')" != "$(ms_json_get "$T/s5.json" 'd["pool_id"]')" ] ||
    fail "pool 'other' has the same pool id"
ok "a daemon of --open-pool=other on the same bridge stays out (0 peers, other pool id)"
for k in 1 2 3 4 5; do pool_kill "$k" TERM; done
for k in 1 2 3 4 5; do pool_reap "$k"; done

# ---- 3. the same four, --no-beacon and --peer ------------------------------
# node k names every lower node as a static peer (mesh port 5871 in each
# namespace); the pool must still be a full mesh.
for k in 1 2 3 4; do
    peers=()
    for ((j = 1; j < k; j++)); do
        peers+=(--peer "tcp://$(ms_netns_ip "$j"):5871")
    done
    pool_start "$k" "$k" "$T/b$k" "${BR[@]}" --no-beacon --mesh-port 5871 \
        "${peers[@]}"
done
pool_wait_alive 10 3 1 2 3 4 || {
    for k in 1 2 3 4; do pool_cli "$k" peers >&2 || true; done
    fail "four daemons with --no-beacon --peer did not form a full mesh"
}
for k in 1 2 3 4; do
    pool_curl "$k" /api/v1/status >"$T/p$k.json"
    [ "$(ms_json_get "$T/p$k.json" 'd["node_id"]')" = "$(ms_json_get "$T/s$k.json" 'd["node_id"]')" ] ||
        fail "node $k changed its id on restart"
done
ok "the same four with --no-beacon and --peer form the same pool (full mesh, same ids)"
