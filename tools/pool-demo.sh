#!/usr/bin/env bash
# pool-demo.sh - the pool on one machine: three meshsweepd daemons in a
# private network namespace find each other by beacon, a sweep submitted to
# node 1 is worked on by all three, and node 3 prints the results table.
#
# Copyright (c) the meshsweep developers. MIT licence.
#
# Usage: tools/pool-demo.sh [--workers N] [--keep DIR] [--timeout S] [SPEC]
#   SPEC         sweep spec to submit (default examples/depth-sweep.yaml)
#   --workers N  worker processes per daemon (default 1: three daemons
#                share this machine's cores)
#   --keep DIR   put the three data dirs and logs in DIR (node1..node3,
#                node1.log..) and keep them; default: a temp dir, removed
#   --timeout S  give up when the sweep has not ended after S seconds
#                (default 3600)
# Programs: build/tools/meshsweep and build/node/meshsweepd, or
# $MESHSWEEP_BIN_DIR/meshsweep and $MESHSWEEPD.
#
# How: the script re-runs itself inside a new network namespace (`unshare
# -n` as root, `unshare -rn` otherwise: a user namespace too). Nothing in
# there is connected to the machine's network: it has only a loopback
# interface, which the script brings up with a route for 255.255.255.255,
# so the daemons' UDP beacons (zbeacon, --interface '*') go from one to
# the others over lo and never leave the machine. Each daemon has its own
# data dir, API port (5872, 5882, 5892) and mesh port (5871, 5881, 5891),
# the same beacon port (5870), and --open-pool=demo-<pid> with no --peer:
# they find each other. An EXIT trap stops them with SIGTERM (they release
# their claims and flush their stores) and waits for them, whatever way
# the script ends; the namespace disappears with its last process.
# Exit status: 0 done, 1 failure, 2 bad usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ME=pool-demo

die() {
    echo "$ME: $*" >&2
    exit 1
}

usage() {
    sed -n '/^# Usage:/,/^# Programs:/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

# ---- arguments --------------------------------------------------------------
WORKERS=1
KEEP=""
TIMEOUT_S=3600
SPEC=""
ARGS=("$@")
while [ $# -gt 0 ]; do
    case $1 in
    --workers)
        [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || {
            echo "$ME: --workers needs a positive integer" >&2
            exit 2
        }
        WORKERS=$2
        shift 2
        ;;
    --keep)
        [ $# -ge 2 ] && [ -n "$2" ] || {
            echo "$ME: --keep needs a directory" >&2
            exit 2
        }
        KEEP=$2
        shift 2
        ;;
    --timeout)
        [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || {
            echo "$ME: --timeout needs a positive number of seconds" >&2
            exit 2
        }
        TIMEOUT_S=$2
        shift 2
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*)
        echo "$ME: unknown option '$1' (see --help)" >&2
        exit 2
        ;;
    *)
        [ -z "$SPEC" ] || {
            echo "$ME: one SPEC only ('$SPEC', then '$1')" >&2
            exit 2
        }
        SPEC=$1
        shift
        ;;
    esac
done
SPEC=${SPEC:-$ROOT/examples/depth-sweep.yaml}
[ -f "$SPEC" ] || {
    echo "$ME: spec '$SPEC': no such file" >&2
    exit 2
}
MS=${MESHSWEEP_BIN_DIR:-$ROOT/build/tools}/meshsweep
MSD=${MESHSWEEPD:-$ROOT/build/node/meshsweepd}
[ -x "$MS" ] || die "$MS not found: build first (tools/build.sh)"
[ -x "$MSD" ] || die "$MSD not found: build first (tools/build.sh)"
for tool in unshare ip curl sha256sum; do
    command -v "$tool" >/dev/null || die "'$tool' is not installed (see packaging/build-deps.txt)"
done

# ---- into a private network namespace ---------------------------------------
if [ -z "${MS_POOL_DEMO_NETNS:-}" ]; then
    flags=(-n)
    [ "$(id -u)" = 0 ] || flags=(-r -n)
    if ! err=$(unshare "${flags[@]}" true 2>&1); then
        die "cannot create a private network namespace (unshare ${flags[*]}: ${err:-refused}); run as root, or allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)"
    fi
    MS_POOL_DEMO_NETNS=1 exec unshare "${flags[@]}" bash "${BASH_SOURCE[0]}" "${ARGS[@]}"
fi
# Beacons are broadcast: refuse to start them unless this namespace has
# nothing but loopback (a private one made above, not the machine's).
others=$(ip -o link show | awk -F': ' '$2 != "lo" { print $2 }')
[ -z "$others" ] || die "refusing to beacon: this network namespace has interfaces other than lo ($(echo "$others" | tr '\n' ' '))"
ip link set lo up
ip route add 255.255.255.255/32 dev lo src 127.0.0.1 2>/dev/null ||
    ip route replace 255.255.255.255/32 dev lo src 127.0.0.1

# ---- the daemons ------------------------------------------------------------
unset MESHSWEEP_NODE MESHSWEEP_TOKEN
export no_proxy='*' NO_PROXY='*' # libcurl stays on loopback
export OPENBLAS_NUM_THREADS=1
if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    DIR=$(cd "$KEEP" && pwd)
else
    DIR=$(mktemp -d "${TMPDIR:-/tmp}/ms-pool-demo.XXXXXX")
fi
POOL=demo-$$
declare -a PID
API=("" http://127.0.0.1:5872 http://127.0.0.1:5882 http://127.0.0.1:5892)
MESH=("" 5871 5881 5891)

now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# stop_all - SIGTERM every daemon, wait (30 s at most), then SIGKILL what
# is left; remove the temp dir unless --keep.
stop_all() {
    local rc=$? k left deadline
    trap - EXIT INT TERM
    if [ ${#PID[@]} -gt 0 ]; then
        echo "stopping the three daemons (SIGTERM)..."
        for k in "${!PID[@]}"; do kill -TERM "${PID[$k]}" 2>/dev/null || true; done
        deadline=$((SECONDS + 30))
        while :; do
            left=""
            for k in "${!PID[@]}"; do
                kill -0 "${PID[$k]}" 2>/dev/null && left="$left $k"
            done
            [ -n "$left" ] && [ $SECONDS -lt $deadline ] || break
            sleep 0.1
        done
        for k in $left; do
            echo "$ME: node $k did not stop within 30 s: SIGKILL" >&2
            kill -KILL "${PID[$k]}" 2>/dev/null || true
            rc=1
        done
        for k in "${!PID[@]}"; do wait "${PID[$k]}" 2>/dev/null || true; done
        echo "all three stopped."
    fi
    if [ $rc = 130 ] || [ $rc = 143 ]; then
        echo "$ME: interrupted" >&2
    elif [ $rc -ne 0 ]; then
        for k in 1 2 3; do
            [ -s "$DIR/node$k.log" ] || continue
            echo "---- last lines of $DIR/node$k.log" >&2
            tail -n 15 "$DIR/node$k.log" >&2
        done
    fi
    if [ -z "$KEEP" ]; then
        rm -rf "$DIR"
    else
        echo "data dirs and logs kept in $DIR"
    fi
    exit $rc
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cli() { # K ARGS... - the client against node K
    local k=$1
    shift
    "$MS" "$@" --node "${API[$k]}"
}

# wait_until SECS CMD... - run CMD every 0.1 s until it succeeds (0) or SECS
# pass (1).
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}

echo "== three meshsweepd in a private network namespace (nothing leaves this machine)"
echo "   pool '$POOL' (--open-pool, no --peer: discovery by beacon), $WORKERS worker(s) each, data in $DIR"
t_start=$(now_ms)
for k in 1 2 3; do
    "$MSD" --data-dir "$DIR/node$k" --api "${API[$k]#http://}" \
        --mesh-port "${MESH[$k]}" --open-pool="$POOL" \
        --interface '*' --workers "$WORKERS" >"$DIR/node$k.log" 2>&1 &
    PID[$k]=$!
done
for k in 1 2 3; do
    wait_until 30 cli "$k" status ||
        die "node $k did not answer on ${API[$k]} within 30 s"
done
t_api=$(now_ms)
declare -a ID
for k in 1 2 3; do
    ID[$k]=$(curl -sf --max-time 5 "${API[$k]}/api/v1/status" |
        grep -o '"node_id": *"[0-9a-f]*"' | grep -o '[0-9a-f]\{64\}') ||
        die "node $k: no node id in ${API[$k]}/api/v1/status"
    echo "   node $k: id ${ID[$k]:0:12}, api ${API[$k]#http://}, mesh port ${MESH[$k]}, pid ${PID[$k]}"
done

alive_count() { # K - how many peers node K lists alive
    cli "$1" peers 2>/dev/null | grep -c ' alive ' || true
}
pool_formed() {
    local k
    for k in 1 2 3; do [ "$(alive_count "$k")" = 2 ] || return 1; done
}
wait_until 30 pool_formed || {
    for k in 1 2 3; do
        echo "node $k peers:" >&2
        cli "$k" peers >&2 || true
    done
    die "the three daemons did not all list the other two alive within 30 s"
}
t_pool=$(now_ms)
echo "== pool formed: each node lists the other two alive, $((t_pool - t_api)) ms after all three answered ($((t_pool - t_start)) ms after start)"
for k in 1 2 3; do
    echo "   node $k sees: $(cli "$k" peers | awk '$2 == "alive" { printf "%s ", $1 }')"
done

# ---- the sweep --------------------------------------------------------------
SWEEP=$(cli 1 submit "$SPEC" 2>"$DIR/submit.err") ||
    die "submit $SPEC to node 1: $(cat "$DIR/submit.err")"
[[ $SWEEP =~ ^[0-9a-f]{64}$ ]] || die "submit printed '$SWEEP', not a sweep id"
t_submit=$(now_ms)
msg=$(cat "$DIR/submit.err")
echo "== submitted $SPEC to node 1: ${msg#submitted: }"

# num KEY JSON - the first integer value of KEY in JSON (0 when absent)
num() {
    grep -o "\"$1\": *[0-9]*" <<<"$2" | head -n 1 | grep -o '[0-9]*$' || echo 0
}
# counts K - "N_TASKS DONE FAILED LEFT" of the sweep as node K sees it
counts() {
    local j
    j=$(cli "$1" status "$SWEEP" --json 2>/dev/null) || return 1
    echo "$(num n_tasks "$j") $(num "done" "$j") $(num failed "$j")" \
        "$(($(num pending "$j") + $(num claimed "$j") + $(num running "$j")))"
}
# ran K - "node 1: N, node 2: N, node 3: N": result rows per node, as node K
# holds them (node_id is the CSV's third column, before any free text)
ran() {
    local rows a b c
    rows=$(cli "$1" results "$SWEEP" --format csv 2>/dev/null | tail -n +2 | cut -d, -f3) || true
    a=$(grep -c "^${ID[1]}\$" <<<"$rows" || true)
    b=$(grep -c "^${ID[2]}\$" <<<"$rows" || true)
    c=$(grep -c "^${ID[3]}\$" <<<"$rows" || true)
    echo "node 1 ran $a, node 2 ran $b, node 3 ran $c"
}
tty=0
[ -t 1 ] && tty=1
last_print=$((SECONDS - 10)) # a first line at once
line=""
while :; do
    if read -r n n_done failed left < <(counts 1); then
        elapsed=$((($(now_ms) - t_submit) / 1000))
        line=$(printf '   %4d s  %d/%d done, %d failed, %d to go; %s' \
            "$elapsed" "$n_done" "$n" "$failed" "$left" "$(ran 1)")
        if [ "$n" -gt 0 ] && [ "$left" = 0 ]; then
            break
        fi
        if [ $tty = 1 ]; then
            printf '\r%s\033[K' "$line"
        elif [ $((SECONDS - last_print)) -ge 10 ]; then
            echo "$line"
            last_print=$SECONDS
        fi
    fi
    [ $((($(now_ms) - t_submit) / 1000)) -lt "$TIMEOUT_S" ] ||
        die "the sweep has not ended after $TIMEOUT_S s (--timeout)"
    sleep 1
done
t_end=$(now_ms)
[ $tty = 1 ] && printf '\r\033[K'
echo "$line"
echo "== sweep ended on node 1 after $(((t_end - t_submit) / 1000)) s: $(ran 1)"

# digest K - sha256 of node K's result rows (CSV, header dropped, sorted),
# without the verification columns (verdict, verdict_revision,
# verdict_operators, counted): those move on after the sweep ends, as
# re-evaluations sampled by each node arrive (docs/VERIFICATION.md)
digest() {
    local csv
    csv=$(cli "$1" results "$SWEEP" --format csv) || return 1
    python3 "$ROOT/tools/results_digest.py" <<<"$csv"
}
same_digest() {
    local d1 d2 d3
    d1=$(digest 1) && d2=$(digest 2) && d3=$(digest 3) || return 1
    [ "$d1" = "$d2" ] && [ "$d2" = "$d3" ] || return 1
    DIGEST=$d1
}
# every node holds every result: wait (bounded) until the three agree
wait_until 30 same_digest || {
    for k in 1 2 3; do echo "node $k: $(counts "$k") digest $(digest "$k")" >&2; done
    die "the results of the three nodes still differ 30 s after the sweep ended"
}
t_same=$(now_ms)

echo "== results of sweep ${SWEEP:0:12}, read from node 3 (which was not sent the sweep)"
cli 3 results "$SWEEP" --analyze
echo
echo "results digest identical on all three nodes: ${DIGEST:0:16} (sha256 of the sorted CSV rows without the verification columns, $((t_same - t_end)) ms after the end)"
echo "sweep ${SWEEP:0:12}: $((t_same - t_submit)) ms from submit to the same results on all three nodes"
