#!/usr/bin/env bash
# ms_pool_demo_test.sh - tools/pool-demo.sh, the README's main job (issue 3:
# "it starts three daemons in a private network namespace, submits a real
# sweep to one, and prints the results table read from another"), run on a
# 4-task sweep of the tiny synthetic Fashion-MNIST:
#   1. the three daemons (beacons, no --peer) list each other alive within
#      3 s; the table read from node 3 shows the 4 tasks, as many rows as
#      node 3's store holds results (a task trained by two nodes in a
#      lease race is two rows, one per node: never two of one node); the
#      digest line says the three agree, and the three stores, read after
#      the demo, hold the same rows; every daemon stopped on SIGTERM and
#      no meshsweepd (or worker) of the demo is left running;
#   2. it refuses to beacon in a namespace that has more than loopback,
#      says so in one line when unshare is refused, and rejects bad usage.
# The demo makes its own network namespace (exit 77 here when namespaces
# are not permitted); nothing is broadcast outside it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
DEMO=$HERE/../../tools/pool-demo.sh
NS_FLAGS=(-n)
[ "$(id -u)" = 0 ] || NS_FLAGS=(-r -n)
if ! command -v unshare >/dev/null || ! unshare "${NS_FLAGS[@]}" true 2>/dev/null; then
    echo "SKIP: network namespaces not permitted here (unshare ${NS_FLAGS[*]})"
    exit 77
fi
export MESHSWEEPD=$MSD
ms_tiny_dataset --train 600 --test 100
cat >"$T/spec.yaml" <<'Y'
name: pool-demo-test
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2]}
  width:         {value: 16}
  epochs:        {value: 1}
  batch_size:    {value: 50}
Y

# ---- 1. the demo ------------------------------------------------------------
KEEP=$T/keep
rc=0
timeout 150 bash "$DEMO" --keep "$KEEP" "$T/spec.yaml" >"$T/demo.out" \
    2>"$T/demo.err" || rc=$?
if [ $rc != 0 ]; then
    cat "$T/demo.out" "$T/demo.err" >&2
    fail "pool-demo.sh exited $rc"
fi
cat "$T/demo.out"

# discovery within 3 s of the three APIs answering
formed=$(sed -n 's/.*lists the other two alive, \([0-9]*\) ms after all three answered.*/\1/p' "$T/demo.out")
[ -n "$formed" ] || fail "no 'pool formed' line"
[ "$formed" -le 3000 ] || fail "the three daemons saw each other only after $formed ms (> 3 s)"
for k in 1 2 3; do
    grep -Eq "^   node $k sees: [0-9a-f]{12} [0-9a-f]{12} \$" "$T/demo.out" ||
        fail "node $k does not list two alive peers"
done
ok "three daemons, beacons only, list each other alive in $formed ms"

# the table read from node 3: one row per result, every task there
sweep=$(sed -n 's/^== submitted .* to node 1: sweep \([0-9a-f]\{12\}\), 4 tasks$/\1/p' "$T/demo.out")
[ -n "$sweep" ] || fail "no 'submitted ... sweep ID, 4 tasks' line"
grep -q "^== results of sweep $sweep, read from node 3" "$T/demo.out" ||
    fail "the table is not read from node 3"
sed -n '/^== results of sweep/,/^Analysis of/p' "$T/demo.out" |
    grep -E '^[0-9a-f]{12}  relu ' >"$T/table.txt" || true
rows=$(grep -c '' "$T/table.txt" || true)
tasks=$(cut -c1-12 "$T/table.txt" | sort -u | grep -c '' || true)
[ "$tasks" = 4 ] || fail "the table shows $tasks distinct tasks, want 4"
grep -q "^Analysis of $rows result rows" "$T/demo.out" ||
    fail "the --analyze output does not cover the table's $rows rows"
ran=$(sed -n 's/^== sweep ended on node 1 after [0-9]* s: node 1 ran \([0-9]*\), node 2 ran \([0-9]*\), node 3 ran \([0-9]*\)$/\1 \2 \3/p' "$T/demo.out")
read -r a b c <<<"$ran"
[ -n "$ran" ] && [ $((a + b + c)) = "$rows" ] ||
    fail "per-node counts '$ran' do not add up to the table's $rows rows"

# the digest line, and the three stores really hold the same rows
printed=$(sed -n 's/^results digest identical on all three nodes: \([0-9a-f]\{16\}\) .*/\1/p' "$T/demo.out")
[ -n "$printed" ] || fail "no 'results digest identical' line"
for k in 1 2 3; do
    "$MS" results "$sweep" --data-dir "$KEEP/node$k" --format csv >"$T/store$k.csv" ||
        fail "cannot read node $k's store"
    python3 "$HERE/../../tools/results_digest.py" <"$T/store$k.csv" | cut -c1-16 >"$T/d$k"
done
# 4 tasks, all ok, no (task, node) pair twice; as many rows as the table
read -r srows stasks _ < <(pool_check_rows "$T/store3.csv" 4) ||
    fail "node 3's store: rows"
[ "$srows" = "$rows" ] || fail "node 3's store has $srows rows, its table $rows"
cmp -s "$T/d1" "$T/d2" && cmp -s "$T/d2" "$T/d3" ||
    fail "the stores differ: $(cat "$T/d1" "$T/d2" "$T/d3" | tr '\n' ' ')"
[ "$(cat "$T/d1")" = "$printed" ] || fail "printed digest $printed, stores have $(cat "$T/d1")"
ok "sweep $sweep: table from node 3 with $rows rows for $stasks tasks (nodes 1, 2, 3 ran $a, $b, $c); digest $printed printed and the same in the three stores read afterwards"

# stopped cleanly, nothing left
grep -q '^all three stopped\.$' "$T/demo.out" || fail "no 'all three stopped' line"
! grep -q 'SIGKILL' "$T/demo.err" || fail "a daemon had to be killed: $(cat "$T/demo.err")"
for pid in $(sed -n 's/^   node [123]: .*, pid \([0-9]*\)$/\1/p' "$T/demo.out"); do
    ms_gone "$pid" || fail "daemon $pid is still running"
done
if pgrep -f -- "$KEEP/node" >"$T/left" 2>/dev/null; then
    fail "processes of the demo left running: $(tr '\n' ' ' <"$T/left")"
fi
ok "the three daemons stopped on SIGTERM; no meshsweepd or worker left"

# ---- 2. refusals --------------------------------------------------------------
# Inside a namespace of our own that has more than lo (a veth pair), the
# inner half of the demo must refuse to start beaconing daemons.
rc=0
unshare "${NS_FLAGS[@]}" bash -c 'ip link add msdemo0 type veth peer name msdemo1 && MS_POOL_DEMO_NETNS=1 exec bash "$1" "$2"' \
    _ "$DEMO" "$T/spec.yaml" >"$T/guard.out" 2>"$T/guard.err" || rc=$?
[ $rc = 1 ] || fail "with an extra interface the demo exited $rc: $(cat "$T/guard.err")"
grep -q '^pool-demo: refusing to beacon: .*msdemo0' "$T/guard.err" ||
    fail "no 'refusing to beacon' line: $(cat "$T/guard.err")"
! grep -q 'meshsweepd' "$T/guard.out" || fail "daemons were started: $(cat "$T/guard.out")"
ok "refuses to beacon in a namespace with more than loopback"

mkdir -p "$T/fakebin"
printf '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n' \
    >"$T/fakebin/unshare"
chmod +x "$T/fakebin/unshare"
ms_expect_exit 1 "$T/nons.err" env PATH="$T/fakebin:$PATH" bash "$DEMO" "$T/spec.yaml"
[ "$(grep -c '' "$T/nons.err")" = 1 ] || fail "not one line: $(cat "$T/nons.err")"
grep -q '^pool-demo: cannot create a private network namespace (unshare .*Operation not permitted)' \
    "$T/nons.err" || fail "unclear error: $(cat "$T/nons.err")"
ok "unshare refused: one clear line, exit 1"

ms_expect_exit 2 "$T/usage.err" bash "$DEMO" --workers zero
grep -q '^pool-demo: --workers needs a positive integer' "$T/usage.err" ||
    fail "bad --workers: $(cat "$T/usage.err")"
ms_expect_exit 2 "$T/nospec.err" bash "$DEMO" "$T/missing.yaml"
grep -q "^pool-demo: spec '$T/missing.yaml': no such file" "$T/nospec.err" ||
    fail "missing spec: $(cat "$T/nospec.err")"
ok "bad usage: exit 2 with one line"
