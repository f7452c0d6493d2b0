#!/usr/bin/env bash
# ms_pool_join_test.sh - one command joins a fresh machine to a running
# pool (the packaging issue, item 4 and its must-show: "a test joins a
# fresh node (new data dir) to a running 2-node pool with the one command
# and sees it discover the pool and take tasks").
#
# Real meshsweepd daemons WITH beacons (--interface '*') in this test's
# own network namespace (netns.sh: lo up, a route for 255.255.255.255 on
# lo; no beacon leaves it), mesh and API on loopback. A pool with an
# authority (`meshsweep pool init`); nodes 1 and 2 are members (node 1
# may submit) and run a sweep of tiny real training tasks. Each new node
# runs as a packaged node would: its settings in its own meshsweepd.conf
# (data_dir, mesh port, interface, times), found by `meshsweep pool join`
# through $MESHSWEEP_CONFIG (/etc/meshsweep/meshsweepd.conf on a packaged
# machine), so the join is the one command of docs/TRUST.md:
#     meshsweep pool join NODE.cert --peer NODE1_ID@tcp://127.0.0.1:PORT1
#   A. node 3 is started first with a fresh data dir (no certificate: it
#      links to no one), its id is invited, and the one command installs
#      the certificate and peers.conf and signals it (SIGHUP): it joins
#      without a restart, every node lists the two others alive (node 2
#      is never named to it: found by beacon or through node 1), and
#      results trained by node 3
#      are in the stores of nodes 1 and 2;
#   B. node 3 stops, the first sweep is cancelled and a second one runs;
#      node 4 (identity made, then stopped) is joined with the one command
#      while it is not running, then started: it picks up the certificate
#      and peers.conf at start, links to the pool (nodes 1, 2, 4 list two
#      alive) and its results reach nodes 1 and 2.
# Every wait is bounded. Exit 77 when namespaces are not permitted.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
unset MESHSWEEP_CONFIG
ms_tiny_dataset --train 600 --test 100

# this namespace's loopback carries the beacons (as in the capture test)
ip link set lo up
ip route add 255.255.255.255/32 dev lo src 127.0.0.1
BEACON=(--interface '*')

"$MS" pool init --out "$T/auth" >/dev/null
pool_lo_ports 4
for k in 1 2; do
    pool_make_identity "$k"
done
pool_invite 1 op1 --roles worker,submit
pool_invite 2 op2
pool_join 1
pool_join 2
pool_start 1 - "$T/n1" --mesh-port "${POOL_MESH[1]}" "${BEACON[@]}" "${POOL_MEMBER[@]}"
pool_start 2 - "$T/n2" --mesh-port "${POOL_MESH[2]}" "${BEACON[@]}" "${POOL_MEMBER[@]}"
pool_wait_alive 30 1 1 2 || { pool_show_peers 1 2; fail "nodes 1 and 2 did not find each other by beacon"; }
ID1=$(pool_node_id 1)
ID2=$(pool_node_id 2)

# sweep NAME N - a sweep of 2*N tiny tasks (about 0.3 s each here), long
# enough to outlast a join: the test never waits for its end
sweep() {
    local seeds
    seeds=$(seq -s, 1 "$2")
    cat >"$T/$1.yaml" <<Y
name: $1
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [$seeds]}
  width:         {value: 32}
  epochs:        {value: 10}
  batch_size:    {value: 50}
Y
    pool_submit 1 "$T/$1.yaml"
}

# conf K - node K's meshsweepd.conf, as a packaged node's.
conf() {
    local k=$1
    cat >"$T/n$k.conf" <<C
# node $k, as /etc/meshsweep/meshsweepd.conf
[meshsweepd]
data_dir = $T/n$k
api = 127.0.0.1:${POOL_APIPORT[$k]}
mesh_port = ${POOL_MESH[$k]}
interface = *
workers = 1
lease_ttl_ms = 2000
heartbeat_ms = 200
beacon_interval_ms = 100
antientropy_ms = 200
C
    "$MSD" --config "$T/n$k.conf" --check-config >"$T/n$k.check" 2>&1 ||
        fail "node $k's config: $(cat "$T/n$k.check")"
}

# start_conf K - start node K from its config file (as systemd would).
start_conf() {
    local k=$1
    POOL_NS[$k]=-
    POOL_API[$k]=http://127.0.0.1:${POOL_APIPORT[$k]}
    POOL_LOG[$k]=$T/node$k.log
    ms_spawn "${POOL_LOG[$k]}" "$MSD" --config "$T/n$k.conf"
    POOL_PID[$k]=$SPAWNED
    pool_wait_api "$k"
}

# rows_of K SWEEP ID - how many result rows trained by node ID node K has
# of SWEEP.
rows_of() {
    pool_rows_json "$1" "$2" "$T/rows$1.json" || { echo 0; return 0; }
    python3 - "$T/rows$1.json" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d if isinstance(d, list) else d.get("results", d.get("rows", []))
print(sum(1 for r in rows if r.get("node_id") == sys.argv[2] and r.get("status") == "ok"))
PY
}

# has_rows SWEEP ID K... - every node K has a row of SWEEP trained by ID.
has_rows() {
    local sweep=$1 id=$2 k
    shift 2
    for k in "$@"; do
        [ "$(rows_of "$k" "$sweep" "$id")" -gt 0 ] || return 1
    done
}

# join K - the one command, for node K (its config through
# $MESHSWEEP_CONFIG, as /etc/meshsweep/meshsweepd.conf would be).
join() {
    MESHSWEEP_CONFIG=$T/n$1.conf "$MS" pool join "$T/n$1.cert" \
        --peer "$ID1@tcp://127.0.0.1:${POOL_MESH[1]}" >"$T/join$1.out" 2>&1 ||
        fail "pool join of node $1: $(cat "$T/join$1.out")"
}

# ---- A. a fresh node, running, joined with one command --------------------
s1=$(sweep join-a 150)
ms_wait_until 60 pool_busy 1 || fail "node 1 did not start on the sweep"
POOL_APIPORT[3]=$(pool_free_port)
conf 3
start_conf 3
ms_wait_until 10 test -s "$T/n3/identity/node.pub" || fail "node 3 made no identity"
ID3=$(pool_node_id 3)
grep -q "links to no one" "${POOL_LOG[3]}" || fail "node 3 without a certificate: $(cat "${POOL_LOG[3]}")"
[ "$(pool_alive 3)" = 0 ] || fail "node 3 linked before it joined"
pool_invite 3 op3
join 3
grep -q "sent SIGHUP to the running node (pid ${POOL_PID[3]})" "$T/join3.out" ||
    fail "join did not signal node 3: $(cat "$T/join3.out")"
grep -q "installed as $T/n3/identity/node.cert" "$T/join3.out" || fail "join: $(cat "$T/join3.out")"
pool_wait_alive 30 2 1 2 3 || { pool_show_peers 1 2 3; fail "node 3 did not join the pool after the one command"; }
grep -q "reload: joined pool" "${POOL_LOG[3]}" || fail "node 3 did not say it joined"
pool_cli 3 peers | grep "${ID2:0:12}" | grep -q ' alive ' || fail "node 3 does not list node 2 alive"
left=$(pool_curl 1 "/api/v1/sweeps/$s1" | python3 -c 'import json,sys; c=json.load(sys.stdin)["counts"]; print(c["pending"])')
[ "$left" -gt 0 ] || fail "the sweep ended before node 3 linked: nothing left for it (make the sweep longer)"
ms_wait_until 60 has_rows "$s1" "$ID3" 1 2 || {
    pool_dump "$s1" 1 2 3
    fail "no result of node 3 in the stores of nodes 1 and 2"
}
ok "A: a running fresh node joined with one command (SIGHUP, no restart): peers alive on all three (node 2 not named to it; $left tasks pending then), $(rows_of 1 "$s1" "$ID3") result(s) of node 3 on node 1, $(rows_of 2 "$s1" "$ID3") on node 2"

# ---- B. joined while stopped, picked up at start --------------------------
pool_kill 3 TERM
pool_reap 3
pool_cli 1 cancel "$s1" >/dev/null || fail "cancel the first sweep"
POOL_APIPORT[4]=$(pool_free_port)
pool_make_identity 4
ID4=$(pool_node_id 4)
pool_invite 4 op4
conf 4
join 4
grep -q "no node is running on $T/n4" "$T/join4.out" || fail "join of a stopped node: $(cat "$T/join4.out")"
grep -q "^peer *= $ID1@tcp://127.0.0.1:${POOL_MESH[1]} # $T/n4/identity/peers.conf" <("$MSD" --config "$T/n4.conf" --check-config 2>/dev/null) ||
    fail "node 4's config does not pick up the joined peer"
s2=$(sweep join-b 150)
ms_wait_until 60 pool_busy 1 || fail "node 1 did not start on the second sweep"
start_conf 4
grep -q "(authority), operator 'op4'" "${POOL_LOG[4]}" || fail "node 4 did not start in the pool: $(cat "${POOL_LOG[4]}")"
pool_wait_alive 30 2 1 2 4 || { pool_show_peers 1 2 4; fail "node 4 did not join the pool at start"; }
left=$(pool_curl 1 "/api/v1/sweeps/$s2" | python3 -c 'import json,sys; c=json.load(sys.stdin)["counts"]; print(c["pending"])')
[ "$left" -gt 0 ] || fail "the sweep ended before node 4 linked: nothing left for it (make the sweep longer)"
ms_wait_until 60 has_rows "$s2" "$ID4" 1 2 || {
    pool_dump "$s2" 1 2 4
    fail "no result of node 4 in the stores of nodes 1 and 2"
}
ok "B: a node joined while stopped picked up its certificate and peers.conf at start: peers alive on all three ($left tasks pending then), $(rows_of 1 "$s2" "$ID4") result(s) of node 4 on node 1, $(rows_of 2 "$s2" "$ID4") on node 2"
