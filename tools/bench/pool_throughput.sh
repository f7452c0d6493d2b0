#!/usr/bin/env bash
# pool_throughput.sh - no-op task throughput: a 3-node meshsweep pool
# against Celery 5 + RabbitMQ, side by side in one run (issue 3,
# benchmarks; results in docs/BENCHMARKS.md "Pool throughput and latency").
#
#   tools/bench/pool_throughput.sh [N]            (N default 100000)
#
# meshsweep: three meshsweepd on loopback (--open-pool, --no-beacon,
# --peer: nothing is broadcast), WORKERS workers each, default lease and
# gossip times; N tasks of `kind: noop`, `verify: {replicas: 1}`,
# submitted to node 1; timed from the first POST until every node's
# /api/v1/status counts N tasks done (every result on all three nodes).
# One sweep holds at most what one sweep record carries: the script tries
# N in one sweep, then smaller sweeps (CHUNKS, largest first) and says how
# it was submitted.
# Celery: Debian's rabbitmq-server started here on 127.0.0.1 only (AMQP,
# distribution and epmd ports on loopback, private mnesia/log/home dirs,
# stopped with rabbitmqctl at the end), a prefork worker of concurrency
# 3 x WORKERS (the pool's total workers), N no-op tasks submitted and
# awaited through the rpc:// backend (tools/bench/celery_noop.py, run with
# /usr/bin/python3). Prints tasks/s of both and the ratio.
#
# For each daemon it also prints the figures that noise moves little (the
# CI guard checks them, tests/integration/ms_pool_guard_test.sh): CPU time
# (user + system, of the daemon process, from /proc/PID/stat) per task,
# bytes it wrote to storage (/proc/PID/io write_bytes) per task and 4 KiB
# pages per record of its log, its records, and its longest loop turn.
#
# Environment: BUILD (default build-bench3, a Release build of meshsweep
# and meshsweepd), WORKERS (2), CHUNKS ("5000 1000 500 200 100 50"),
# SKIP_CELERY=1 / SKIP_POOL=1, OPENBLAS_UNSET=1 (both OPENBLAS variables
# unset for both sides), OUT (a file to append the result lines),
# FIGURES (a file to write one JSON line per node with those figures).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
N=${1:-100000}
BUILD=${BUILD:-$ROOT/build-bench3}
WORKERS=${WORKERS:-2}
CHUNKS=${CHUNKS:-"5000 1000 500 200 100 50"}
MS=$BUILD/tools/meshsweep
MSD=$BUILD/node/meshsweepd
PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 no_proxy='*' NO_PROXY='*'
# Both sides run with the machine's OpenBLAS settings (Haswell and 512 when
# none are set), or with both unset when OPENBLAS_UNSET=1 (the benchmark's
# second way, docs/BENCHMARKS.md).
if [ "${OPENBLAS_UNSET:-0}" = 1 ]; then
    unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
else
    export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
    export OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-512}
fi
unset MESHSWEEP_NODE MESHSWEEP_TOKEN

W=$(mktemp -d "${TMPDIR:-/tmp}/ms-bench.XXXXXX")
PIDS=()
RABBIT_UP=0
cleanup() {
    local rc=$? pid
    if [ "$RABBIT_UP" = 1 ]; then
        timeout 60 env HOME="$W/rabbit" RABBITMQ_NODENAME="$RABBIT_NODE" \
            ERL_EPMD_PORT="$EPMD_PORT" ERL_EPMD_ADDRESS=127.0.0.1 \
            /usr/lib/rabbitmq/bin/rabbitmqctl stop >/dev/null 2>&1 || true
        ERL_EPMD_PORT="$EPMD_PORT" timeout 10 epmd -kill >/dev/null 2>&1 || true
    fi
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
    sleep 0.5
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
        [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
    done
    [ $rc -eq 0 ] || { echo "logs kept in $W" >&2; exit $rc; }
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "$*"; [ -z "${OUT:-}" ] || echo "$*" >>"$OUT"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
now() { date +%s.%N; }
# wait_until SECONDS CMD... - bounded poll (every 0.1 s)
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    while [ $SECONDS -lt $deadline ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# ---- meshsweep --------------------------------------------------------------
pool_rate=""
if [ -z "${SKIP_POOL:-}" ]; then
    [ -x "$MSD" ] && [ -x "$MS" ] || { echo "build $BUILD first (meshsweep meshsweepd)" >&2; exit 2; }
    # tiny data set: a noop task loads nothing, but a submission hashes it
    python3 "$ROOT/tests/integration/make_tiny_idx.py" idx "$W/datasets/fashion-mnist" \
        --train 100 --test 20 >/dev/null
    export MESHSWEEP_DATASETS_DIR=$W/datasets
    M=("" "$(free_port)" "$(free_port)" "$(free_port)")
    A=("" "$(free_port)" "$(free_port)" "$(free_port)")
    for k in 1 2 3; do
        peers=()
        for j in 1 2 3; do [ "$j" = "$k" ] || peers+=(--peer "tcp://127.0.0.1:${M[$j]}"); done
        "$MSD" --data-dir "$W/n$k" --api "127.0.0.1:${A[$k]}" --workers "$WORKERS" \
            --open-pool=bench --no-beacon --mesh-port "${M[$k]}" "${peers[@]}" \
            >"$W/n$k.log" 2>&1 &
        PIDS+=($!)
    done
    alive2() { [ "$("$MS" peers --node "http://127.0.0.1:${A[$1]}" 2>/dev/null | grep -c ' alive ')" = 2 ]; }
    for k in 1 2 3; do
        wait_until 30 alive2 "$k" || { echo "node $k did not link" >&2; exit 1; }
    done
    sleep 3 # past the startup grace

    spec() { # NAME FIRST COUNT
        echo "name: $1"
        echo "dataset: fashion-mnist"
        echo "verify: {replicas: 1}"
        echo "parameters:"
        echo "  kind: {value: noop}"
        echo "  seed: {values: [$(seq -s, "$2" $(($2 + $3 - 1)))]}"
    }

    sizes=("$N")
    for c in $CHUNKS; do [ "$c" -lt "$N" ] && sizes+=("$c"); done
    si=0 first=1 n_sweeps=0
    t0=$(now)
    while [ "$first" -le "$N" ]; do
        size=${sizes[$si]}
        [ $((first + size - 1)) -le "$N" ] || size=$((N - first + 1))
        spec "noop-$first" "$first" "$size" >"$W/spec.yaml"
        if "$MS" submit "$W/spec.yaml" --node "http://127.0.0.1:${A[1]}" \
            >/dev/null 2>"$W/submit.err"; then
            first=$((first + size))
            n_sweeps=$((n_sweeps + 1))
        elif grep -q 'cannot store sweep\|too large\|larger than' "$W/submit.err" &&
            [ $((si + 1)) -lt ${#sizes[@]} ]; then
            si=$((si + 1)) # too big for one sweep record: smaller sweeps
        else
            cat "$W/submit.err" >&2
            exit 1
        fi
    done
    t_sub=$(now)
    # one poller process (not a curl + python per poll: that took a fifth of
    # the 2 cores from the pool it measures)
    $PY "$ROOT/tools/bench/pool_wait_done.py" "$N" 3600 \
        "http://127.0.0.1:${A[1]}" "http://127.0.0.1:${A[2]}" "http://127.0.0.1:${A[3]}" ||
        { echo "the pool did not finish $N tasks" >&2; exit 1; }
    t1=$(now)
    tck=$(getconf CLK_TCK)
    for k in 1 2 3; do
        pid=${PIDS[$((k - 1))]}
        # fields 14 and 15 of /proc/PID/stat, counted after the ')' that
        # ends the command name
        cpu=$(sed 's/.*) //' "/proc/$pid/stat" | awk -v t="$tck" '{print ($12 + $13) / t}')
        wbytes=$(awk '/^write_bytes:/ {print $2}' "/proc/$pid/io")
        fig=$(curl -s --max-time 10 "http://127.0.0.1:${A[$k]}/api/v1/status" |
            $PY -c 'import json,sys
n, cpu, wb = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
c = json.load(sys.stdin)["pool_counters"]
rec = max(int(c.get("records", 0)), 1)
print(json.dumps({"node": int(sys.argv[4]), "tasks": n, "cpu_seconds": cpu,
    "cpu_us_per_task": round(cpu * 1e6 / n, 1), "write_bytes": wb,
    "bytes_per_task": round(wb / n, 1), "records": rec,
    "pages_per_record": round(wb / 4096 / rec, 3),
    "loop_turn_max_us": int(c.get("loop_turn_max_us", 0))}))' "$N" "$cpu" "$wbytes" "$k")
        say "node $k: $fig"
        [ -z "${FIGURES:-}" ] || echo "$fig" >>"$FIGURES"
    done
    secs=$(python3 -c "print(round($t1 - $t0, 3))")
    pool_rate=$(python3 -c "print(round($N / ($t1 - $t0), 1))")
    say "meshsweep pool: $N noop tasks, 3 nodes x $WORKERS workers, $n_sweeps sweep(s) of up to ${sizes[$si]} tasks;" \
        "submitted in $(python3 -c "print(round($t_sub - $t0, 2))") s; every result on all 3 nodes after $secs s: $pool_rate tasks/s"
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
fi

# ---- Celery 5 + RabbitMQ -----------------------------------------------------
celery_rate=""
if [ -z "${SKIP_CELERY:-}" ]; then
    [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] && $PY -c 'import celery' 2>/dev/null || {
        echo "install Debian's rabbitmq-server and python3-celery first" >&2; exit 2; }
    AMQP_PORT=$(free_port); DIST_PORT=$(free_port); EPMD_PORT=$(free_port)
    RABBIT_NODE=msbench$$@localhost
    mkdir -p "$W/rabbit/mnesia" "$W/rabbit/log"
    printf '[].\n' >"$W/rabbit/enabled_plugins"
    rabbit_env=(HOME="$W/rabbit" RABBITMQ_NODENAME="$RABBIT_NODE"
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$AMQP_PORT"
        RABBITMQ_DIST_PORT="$DIST_PORT" ERL_EPMD_ADDRESS=127.0.0.1
        ERL_EPMD_PORT="$EPMD_PORT" RABBITMQ_MNESIA_BASE="$W/rabbit/mnesia"
        RABBITMQ_LOG_BASE="$W/rabbit/log"
        RABBITMQ_ENABLED_PLUGINS_FILE="$W/rabbit/enabled_plugins")
    env "${rabbit_env[@]}" /usr/lib/rabbitmq/bin/rabbitmq-server >"$W/rabbit.log" 2>&1 &
    PIDS+=($!)
    RABBIT_UP=1
    wait_until 120 env HOME="$W/rabbit" RABBITMQ_NODENAME="$RABBIT_NODE" \
        ERL_EPMD_PORT="$EPMD_PORT" ERL_EPMD_ADDRESS=127.0.0.1 \
        /usr/lib/rabbitmq/bin/rabbitmqctl await_startup --timeout 5 ||
        { tail -20 "$W/rabbit.log" >&2; echo "rabbitmq did not start" >&2; exit 1; }
    export CELERY_BROKER=amqp://guest:guest@127.0.0.1:$AMQP_PORT//
    CONC=$((3 * WORKERS))
    $PY "$ROOT/tools/bench/celery_noop.py" worker "$CONC" >"$W/celery.log" 2>&1 &
    PIDS+=($!)
    sleep 5 # the worker connects and its prefork children start
    $PY "$ROOT/tools/bench/celery_noop.py" submit 100 >/dev/null || { tail "$W/celery.log" >&2; exit 1; }
    out=$(timeout 3600 $PY "$ROOT/tools/bench/celery_noop.py" submit "$N")
    celery_rate=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tasks_per_second"])' "$out")
    secs=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$out")
    say "Celery $($PY -c 'import celery; print(celery.__version__)') + RabbitMQ" \
        "$(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo '?'):" \
        "$N noop tasks, concurrency $CONC, rpc:// results: submitted and awaited in $secs s: $celery_rate tasks/s"
fi

if [ -n "$pool_rate" ] && [ -n "$celery_rate" ]; then
    say "ratio meshsweep / Celery: $(python3 -c "print(round($pool_rate / $celery_rate, 2))")"
fi
