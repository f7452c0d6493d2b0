# shellcheck shell=bash
# pool_lib.sh - helpers of the multi-daemon pool tests (bash library)
#
# Copyright (c) the meshsweep developers. MIT licence.
#
# Source after lib.sh (and after netns.sh + ms_netns_reexec when the test
# uses namespaces). A pool node is a real meshsweepd, either on loopback
# (--no-beacon, --peer: nothing is broadcast) or inside node namespace I
# of netns.sh (beacons on, --interface eth0 or "*"); its API always
# listens on 127.0.0.1 of its own namespace, so the client is run in that
# namespace too (pool_cli). Every wait is bounded; lib.sh's and netns.sh's
# traps kill what was started and remove namespaces and temp dirs.
#
#   pool_start K NS DIR ARGS...  start node K (NS: namespace index, or
#                                "-" for loopback); sets POOL_API[K],
#                                POOL_PID[K], POOL_NS[K], POOL_LOG[K] and
#                                waits (bounded) until its API answers
#                                (not when POOL_NOWAIT is set: then
#                                pool_wait_api K)
#   pool_cli K ARGS...           run `meshsweep ARGS --node <node K>`
#   pool_curl K PATH             GET node K's API PATH (stdout)
#   pool_alive K                 print how many peers node K lists alive
#   pool_wait_alive SECS N K...  wait until each node K lists N alive
#   pool_submit K FILE           submit FILE to node K, print the sweep id
#   pool_finished K SWEEP        true when node K sees SWEEP finished
#   pool_rows K SWEEP OUT        results CSV of node K, sorted rows only
#   pool_digest K SWEEP          sha256 of pool_rows (prints it)
#   pool_same_digest SWEEP K...  true when all nodes K have the same digest
#   pool_check_rows FILE NTASKS  no task missing, no (task, node) twice;
#                                prints "rows tasks nodes"
#   pool_kill K SIG              send SIG to node K's daemon
#
# Members of a pool with an authority (data dir $T/nK, loopback):
#   pool_node_id K               print node K's id
#   pool_make_identity K         create node K's identity (a short start)
#   pool_invite K OP [ARGS...]   certificate $T/nK.cert for operator OP
#   pool_join K                  install $T/nK.cert into node K's data dir
#   pool_peers_of J...           --peer options (one a line) for nodes J
#   pool_start_member K J... [-- ARGS]  start node K with peers J by id
#   pool_show_peers K...         each node's peer list, to stderr
#   pool_counter K NAME          a pool counter of node K (0 when absent)
#   pool_standing K NODE_ID      "STRIKES QUARANTINED" of NODE_ID on node K
#   pool_rows_json K SWEEP OUT [QUERY]  node K's rows of SWEEP (API JSON)

declare -A POOL_API POOL_PID POOL_NS POOL_LOG POOL_APIPORT
# Small times: lease TTL 2 s, heartbeats 200 ms, beacons 100 ms.
POOL_TIMES=(--lease-ttl-ms 2000 --heartbeat-ms 200 --beacon-interval-ms 100
    --antientropy-ms 200)

# s_pool_in K CMD... - run CMD in node K's namespace (or here).
s_pool_in() {
    local k=$1
    shift
    if [ "${POOL_NS[$k]}" = - ]; then
        "$@"
    else
        ms_netns_exec "${POOL_NS[$k]}" "$@"
    fi
}

# pool_start K NS DIR ARGS... - start node K.
pool_start() {
    local k=$1 ns=$2 dir=$3 port
    shift 3
    if [ "$ns" = - ]; then
        port=${POOL_APIPORT[$k]:-$(s_pool_port -)} # preset: start at once
    else
        port=5872 # the namespace's own loopback: the default API port
    fi
    POOL_NS[$k]=$ns
    POOL_API[$k]=http://127.0.0.1:$port
    POOL_LOG[$k]=$T/node$k.log
    if [ "$ns" = - ]; then
        ms_spawn "${POOL_LOG[$k]}" "$MSD" --data-dir "$dir" \
            --api "127.0.0.1:$port" "$@"
    else
        ms_netns_spawn "$ns" "${POOL_LOG[$k]}" "$MSD" --data-dir "$dir" \
            --api "127.0.0.1:$port" "$@"
    fi
    POOL_PID[$k]=$SPAWNED
    [ -n "${POOL_NOWAIT:-}" ] || pool_wait_api "$k"
}

# pool_wait_api K - wait (30 s at most) until node K's API answers.
pool_wait_api() {
    ms_wait_until 30 pool_cli "$1" status ||
        fail "node $1 did not answer on ${POOL_API[$1]} within 30 s"
}

# s_pool_port NS - a free TCP port in namespace NS (or here).
s_pool_port() {
    local cmd=(python3 -c "$MS_FREE_PORT_PY") # lib.sh: below the ephemeral range
    if [ "$1" = - ]; then
        "${cmd[@]}"
    else
        ms_netns_exec "$1" "${cmd[@]}"
    fi
}

# pool_free_port - a free loopback port here (mesh ports of loopback nodes).
pool_free_port() {
    s_pool_port -
}

# pool_cli K ARGS... - the client against node K.
pool_cli() {
    local k=$1
    shift
    s_pool_in "$k" "$MS" "$@" --node "${POOL_API[$k]}"
}

# pool_curl K PATH - GET PATH of node K's API.
pool_curl() {
    s_pool_in "$1" curl -sf --max-time 5 "${POOL_API[$1]}$2"
}

# pool_alive K - number of peers node K lists alive.
pool_alive() {
    local out
    out=$(pool_cli "$1" peers 2>/dev/null) || { echo 0; return 0; }
    grep -c ' alive ' <<<"$out" || true
}

# pool_wait_alive SECS N K... - each node K lists exactly N peers alive
# within SECS seconds (counted from the call).
pool_wait_alive() {
    local secs=$1 want=$2 k deadline
    shift 2
    deadline=$((SECONDS + secs))
    for k in "$@"; do
        while [ "$(pool_alive "$k")" != "$want" ]; do
            [ $SECONDS -lt "$deadline" ] || return 1
            sleep 0.1
        done
    done
}

# pool_submit K FILE - submit FILE to node K; prints the sweep id.
pool_submit() {
    local id
    id=$(pool_cli "$1" submit "$2" 2>"$T/submit.err") ||
        fail "submit $2 to node $1: $(cat "$T/submit.err")"
    [[ "$id" =~ ^[0-9a-f]{64}$ ]] || fail "submit printed '$id'"
    echo "$id"
}

# pool_finished K SWEEP - true when node K knows SWEEP and no task of it
# is pending, claimed or running.
pool_finished() {
    pool_curl "$1" "/api/v1/sweeps/$2" >"$T/fin$1.json" 2>/dev/null || return 1
    python3 - "$T/fin$1.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = d.get("counts", {})
left = c.get("pending", 0) + c.get("claimed", 0) + c.get("running", 0)
sys.exit(0 if d.get("n_tasks", 0) > 0 and left == 0 else 1)
EOF
}

# pool_rows K SWEEP OUT - node K's results CSV rows (no header), sorted.
pool_rows() {
    pool_cli "$1" results "$2" --format csv >"$3.raw" 2>/dev/null || return 1
    tail -n +2 "$3.raw" | LC_ALL=C sort >"$3"
}

# pool_digest K SWEEP - sha256 of node K's sorted result rows.
pool_digest() {
    pool_rows "$1" "$2" "$T/digest$1.csv" || return 1
    sha256sum <"$T/digest$1.csv" | cut -c1-64
}

# pool_same_digest SWEEP K... - every node K has the same rows digest,
# and at least one row.
pool_same_digest() {
    local sweep=$1 first="" d k
    shift
    for k in "$@"; do
        d=$(pool_digest "$k" "$sweep") || return 1
        [ -s "$T/digest$k.csv" ] || return 1
        if [ -z "$first" ]; then
            first=$d
        elif [ "$d" != "$first" ]; then
            return 1
        fi
    done
    POOL_DIGEST=$first
}

# pool_check_rows FILE NTASKS - the CSV rows of FILE (with header, as
# `meshsweep results --format csv` prints them): NTASKS distinct tasks,
# all ok, one row per task (replicas 1), no (task, node) pair with two
# counted rows; prints
# "ROWS TASKS NODES".
pool_check_rows() {
    python3 - "$1" "$2" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
tasks = {r["task_id"] for r in rows}
# the acceptance rule: at most one counted result per (task, node)
pairs = [(r["task_id"], r["node_id"]) for r in rows
         if r.get("counted", "true") == "true"]
if len(tasks) != int(sys.argv[2]):
    sys.exit("%d distinct tasks, want %s" % (len(tasks), sys.argv[2]))
if len(pairs) != len(set(pairs)):
    sys.exit("a (task, node) pair has two rows")
# replicas 1: an outranked node's result is an extra replica (results
# --all), never a second row of the table
if len(rows) != len(tasks):
    sys.exit("%d rows for %d tasks: a task has a second row" % (len(rows), len(tasks)))
bad = [r["task_id"][:12] for r in rows if r["status"] != "ok"]
if bad:
    sys.exit("tasks not ok: %s" % bad)
print(len(rows), len(tasks), len({r["node_id"] for r in rows}))
EOF
}

# pool_kill K SIG - signal node K's daemon.
pool_kill() {
    kill -"$2" "${POOL_PID[$1]}" 2>/dev/null || true
}

# pool_reap K - wait (bounded) for node K's daemon to be gone.
pool_reap() {
    ms_wait_until 10 ms_gone "${POOL_PID[$1]}" || fail "node $1 did not exit"
    wait "${POOL_PID[$1]}" 2>/dev/null || true
}

# pool_dump SWEEP K... - print each node's counts of SWEEP and its pool
# counters to stderr (for a failing test's log).
pool_dump() {
    local sweep=$1 k
    shift
    for k in "$@"; do
        {
            echo "== node $k: sweep ${sweep:0:12}"
            pool_curl "$k" "/api/v1/sweeps/$sweep" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("state"), d.get("counts"))' || true
            pool_curl "$k" /api/v1/status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("peers"), d.get("workers_busy"), d.get("pool_counters"))' || true
        } >&2
    done
}

# pool_lo_ports N - pick N free loopback mesh ports (POOL_MESH[1..N]).
declare -A POOL_MESH
POOL_LO_N=0
pool_lo_ports() {
    local k
    POOL_LO_N=$1
    for ((k = 1; k <= $1; k++)); do
        POOL_MESH[$k]=$(pool_free_port)
    done
}

# pool_start_lo K ARGS... - start loopback node K (data dir $T/nK) on its
# mesh port with every other node of pool_lo_ports as a static peer and
# no beacon; ARGS are added (e.g. --open-pool=NAME, times, workers).
pool_start_lo() {
    local k=$1 j p=()
    shift
    for ((j = 1; j <= POOL_LO_N; j++)); do
        [ "$j" = "$k" ] || p+=(--peer "tcp://127.0.0.1:${POOL_MESH[$j]}")
    done
    pool_start "$k" - "$T/n$k" --no-beacon --mesh-port "${POOL_MESH[$k]}" \
        "${p[@]}" "$@"
}

# pool_busy K - true when node K has a worker busy.
pool_busy() {
    pool_curl "$1" /api/v1/status | grep -q '"workers_busy": *[1-9]'
}

# pool_status K EXPR - evaluate EXPR on node K's /api/v1/status (bound to
# d) and print it.
pool_status() {
    pool_curl "$1" /api/v1/status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}

# pool_split I... - move the bridge ports of nodes I... to a second bridge
# (br1) in netns.sh's bridge namespace: the pool splits into those nodes
# and the rest, each side still a network of its own (case 9).
pool_split() {
    local br i
    br=$(ms_netns_name br)
    if ! ip -n "$br" link show br1 >/dev/null 2>&1; then
        ip -n "$br" link add br1 type bridge
        ip -n "$br" link set br1 up
    fi
    for i in "$@"; do
        ip -n "$br" link set "v${i}b" master br1
    done
}

# pool_unsplit I... - put the ports of nodes I... back on br0.
pool_unsplit() {
    local br i
    br=$(ms_netns_name br)
    for i in "$@"; do
        ip -n "$br" link set "v${i}b" master br0
    done
    ms_netns_wait_links
}

# pool_done K SWEEP - print how many tasks of SWEEP node K has done.
pool_done() {
    pool_curl "$1" "/api/v1/sweeps/$2" 2>/dev/null | grep -o '"done": *[0-9]*' | grep -o '[0-9]*$' || echo 0
}

# ---- members of a pool with an authority --------------------------------
# Options of every node pool_start_member starts (before its ARGS).
POOL_MEMBER=(--workers 1 "${POOL_TIMES[@]}")

# pool_node_id K - print node K's id (from its data dir $T/nK).
pool_node_id() { cat "$T/n$1/identity/node.pub"; }

# pool_make_identity K - create node K's identity in $T/nK (a short start
# with no pool and no beacon; 10 s at most).
pool_make_identity() {
    local k=$1
    timeout 20 "$MSD" --data-dir "$T/n$k" --api 127.0.0.1:0 --workers 1 \
        --no-beacon --mesh-port 0 >"$T/id$k.log" 2>&1 &
    local pid=$!
    ms_wait_until 10 test -s "$T/n$k/identity/node.pub" || fail "node $k made no identity"
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# pool_invite K OPERATOR [ARGS...] - `meshsweep pool invite` node K for
# OPERATOR with the authority $T/auth into $T/nK.cert; ARGS are added
# (--roles, --max-workers ...).
pool_invite() {
    local k=$1 op=$2
    shift 2
    "$MS" pool invite "$(pool_node_id "$k")" --operator "$op" \
        --authority "$T/auth" --out "$T/n$k.cert" "$@" >/dev/null
}

# pool_join K - `meshsweep pool join` $T/nK.cert into node K's data dir.
pool_join() {
    "$MS" pool join "$T/n$1.cert" --data-dir "$T/n$1" >/dev/null
}

# pool_peers_of J... - the --peer options for nodes J (NODE_ID@ their
# loopback mesh port of pool_lo_ports), one word a line (for mapfile).
pool_peers_of() {
    local j
    for j in "$@"; do
        printf -- '--peer\n%s@tcp://127.0.0.1:%s\n' "$(pool_node_id "$j")" "${POOL_MESH[$j]}"
    done
}

# pool_start_member K J... [-- ARGS] - start loopback node K ($T/nK, no
# beacon) on its mesh port with nodes J as static peers (by id), then
# POOL_MEMBER and ARGS.
pool_start_member() {
    local k=$1 peers=() args=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do peers+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    mapfile -t args < <(pool_peers_of "${peers[@]}")
    pool_start "$k" - "$T/n$k" --no-beacon --mesh-port "${POOL_MESH[$k]}" \
        "${args[@]}" "${POOL_MEMBER[@]}" "$@"
}

# pool_show_peers K... - each node's peer list, to stderr (for a failing
# test's log).
pool_show_peers() {
    local k
    for k in "$@"; do
        echo "== peers of node $k" >&2
        pool_cli "$k" peers >&2 || true
    done
}

# pool_counter K NAME - print the pool counter NAME of node K (0 when the
# node does not list it).
pool_counter() { pool_status "$1" "d['pool_counters'].get('$2', 0)"; }

# pool_rows_json K SWEEP OUT [QUERY] - node K's result rows of SWEEP as the
# API's JSON page (1000 rows at most) into OUT; QUERY is added to the URL
# ("&all=1": extra replicas too, "&verified=1": verified rows only).
pool_rows_json() {
    pool_curl "$1" "/api/v1/sweeps/$2/results?format=json&limit=1000${4:-}" >"$3"
}

# pool_standing K NODE_ID - print "STRIKES QUARANTINED" (a number, true or
# false) of NODE_ID as node K's verification sees it ("0 false" when it
# does not list it).
pool_standing() {
    pool_curl "$1" /api/v1/status | python3 -c '
import json, sys
d = json.load(sys.stdin)
for n in d.get("verification", {}).get("nodes", []):
    if n.get("node") == sys.argv[1]:
        print(n.get("strikes", 0), str(n.get("quarantined", False)).lower())
        break
else:
    print(0, "false")' "$2"
}
