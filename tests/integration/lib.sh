# lib.sh - shared helpers of the meshsweep integration tests (bash).
#
# Source it at the top of a test after `set -euo pipefail`. It makes a
# private temp dir ($T), a tiny synthetic Fashion-MNIST in
# $T/datasets/fashion-mnist (MESHSWEEP_DATASETS_DIR points there), and a
# trap that kills every process started with `ms_spawn` and removes $T,
# whatever way the test ends (kept after a failure when MS_KEEP_FAILED_TMP
# is set, for a post-mortem). Every wait is bounded (ms_wait_until).
# Nothing here talks to anything but loopback.

: "${MESHSWEEP_BIN_DIR:?MESHSWEEP_BIN_DIR must point at the built programs}"
MS=$MESHSWEEP_BIN_DIR/meshsweep
MSD=${MESHSWEEPD:-$MESHSWEEP_BIN_DIR/meshsweepd}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPENBLAS_NUM_THREADS=1
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
export OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-512}
unset MESHSWEEP_NODE MESHSWEEP_TOKEN MESHSWEEP_FAULT_CRASH_TASK MESHSWEEP_CONFIG
# libcurl must never leave loopback through a proxy.
export no_proxy='*' NO_PROXY='*'

T=$(mktemp -d "${TMPDIR:-/tmp}/ms-it.XXXXXX")
MS_PIDS=()

ms_cleanup() {
    local rc=$?
    local pid
    for pid in "${MS_PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    done
    for pid in "${MS_PIDS[@]:-}"; do
        [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
    done
    if [ $rc -ne 0 ] && [ -d "$T" ]; then
        echo "---- test failed (rc $rc); logs in $T:" >&2
        for f in "$T"/*.log "$T"/*.err; do
            [ -f "$f" ] && { echo "== $f" >&2; tail -n 30 "$f" >&2; }
        done
    fi
    if [ $rc -ne 0 ] && [ -n "${MS_KEEP_FAILED_TMP:-}" ] && [ -d "$T" ]; then
        echo "---- kept $T (MS_KEEP_FAILED_TMP)" >&2
    else
        rm -rf "$T"
    fi
    exit $rc
}
trap ms_cleanup EXIT
trap 'exit 130' INT TERM

# fail MESSAGE - end the test with a message.
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# ok MESSAGE - one progress line.
ok() {
    echo "ok - $*"
}

# ms_spawn LOG CMD... - start CMD in the background with stdout and stderr
# in LOG; its pid is in $SPAWNED and in the kill list.
ms_spawn() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 &
    SPAWNED=$!
    MS_PIDS+=("$SPAWNED")
}

# ms_wait_until SECONDS CMD... - run CMD every 0.2 s until it succeeds or
# SECONDS pass (then return 1).
ms_wait_until() {
    local limit=$(($1 * ${MS_TEST_TIME_SCALE:-1}))
    shift
    local deadline=$((SECONDS + limit))
    while [ $SECONDS -lt $deadline ]; do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# ms_free_port - print a free TCP port on 127.0.0.1, below the kernel's
# ephemeral range (net.ipv4.ip_local_port_range): a port the kernel hands
# out is one that any outbound connection of another test may take as its
# local port between the pick and a daemon's (re)start on it ("api: cannot
# listen on 127.0.0.1:59147 (address in use)" after a restart, seen in CI).
# A random port of 20000 up to that range that binds now; the kernel's
# pick only when none does.
MS_FREE_PORT_PY='
import random, socket
try:
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    lo = 32768
ports = list(range(20000, lo)) if lo > 20100 else []
random.shuffle(ports)
for port in ports[:500] + [0]:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        got = s.getsockname()[1]
        s.close()
    print(got)
    break
'
ms_free_port() {
    python3 -c "$MS_FREE_PORT_PY"
}

# ms_tiny_dataset [ARGS] - write the tiny IDX set into
# $T/datasets/fashion-mnist and export MESHSWEEP_DATASETS_DIR.
ms_tiny_dataset() {
    python3 "$HERE/make_tiny_idx.py" idx "$T/datasets/fashion-mnist" "$@"
    export MESHSWEEP_DATASETS_DIR=$T/datasets
}

# ms_expect_exit CODE OUTFILE CMD... - run CMD with stderr in OUTFILE, check
# its exit code.
ms_expect_exit() {
    local want=$1 out=$2
    shift 2
    local rc=0
    "$@" >"$out.stdout" 2>"$out" || rc=$?
    if [ "$rc" != "$want" ]; then
        echo "stderr:" >&2
        cat "$out" >&2
        fail "expected exit $want, got $rc: $*"
    fi
}

# ms_one_error_line FILE PATTERN - FILE holds exactly one line, of the form
# "meshsweep: ...", matching the extended regex PATTERN.
ms_one_error_line() {
    local file=$1 pattern=$2
    local n
    n=$(grep -c '' "$file" || true)
    [ "$n" = 1 ] || { cat "$file" >&2; fail "expected one error line in $file, got $n"; }
    grep -Eq '^meshsweep: ' "$file" || { cat "$file" >&2; fail "error line does not start with 'meshsweep: '"; }
    grep -Eq -- "$pattern" "$file" || { cat "$file" >&2; fail "error line does not match /$pattern/"; }
}

# ms_start_daemon DATA_DIR [ARGS] - start meshsweepd on a free loopback
# port; sets DAEMON_PID, NODE (the API URL) and waits (bounded) until the
# API answers.
ms_start_daemon() {
    local dir=$1
    shift
    local port
    port=$(ms_free_port)
    NODE=http://127.0.0.1:$port
    export MESHSWEEP_NODE=$NODE
    ms_spawn "$T/daemon-$port.log" "$MSD" --data-dir "$dir" \
        --api "127.0.0.1:$port" "$@"
    DAEMON_PID=$SPAWNED
    DAEMON_LOG=$T/daemon-$port.log
    ms_wait_until 30 "$MS" status --node "$NODE" ||
        fail "meshsweepd did not answer on $NODE within 30 s"
}

# ms_sweep_finished SWEEP - true when no task of SWEEP is pending or running
# (asks the daemon through `meshsweep status --json`).
ms_sweep_finished() {
    "$MS" status "$1" --json >"$T/status.json" 2>/dev/null || return 1
    python3 - "$T/status.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
if isinstance(d, dict) and "sweeps" in d:
    d = d["sweeps"][0]
if isinstance(d, list):
    d = d[0]
src = d
for k in ("progress", "tasks", "counts", "task_states"):
    if isinstance(d.get(k), dict):
        src = d[k]
        break
pending = src.get("pending", 0) + src.get("running", 0) + src.get("claimed", 0)
total = src.get("total", d.get("n_tasks", 0))
sys.exit(0 if total and pending == 0 else 1)
EOF
}

# ms_json_get FILE EXPR - evaluate a Python expression on the JSON in FILE
# (bound to d) and print the result.
ms_json_get() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# ms_gone PID - true when PID has exited (gone or a zombie not yet reaped).
ms_gone() {
    local st
    st=$(ps -o stat= -p "$1" 2>/dev/null || true)
    [ -z "$st" ] || [ "${st:0:1}" = Z ]
}

# ms_wait_exit PID SECONDS - wait (bounded) for our child PID to exit; sets
# EXIT_RC to its exit status; fails the test on timeout.
ms_wait_exit() {
    ms_wait_until "$2" ms_gone "$1" || fail "process $1 did not exit within $2 s"
    EXIT_RC=0
    wait "$1" || EXIT_RC=$?
}
