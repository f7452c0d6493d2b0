#!/usr/bin/env bash
# ms_pool_partition_test.sh - case 9 of ../shared/cases/README.md: 4 real
# meshsweepd daemons in 4 network namespaces joined by a bridge
# (netns.sh), beacons on (--interface eth0), started within 50 ms of each
# other: each sees the other 3 within 5 s. A sweep runs; the pool is split
# 2 | 2 for 30 s (the ports of nodes 3 and 4 moved to a second bridge):
# both halves keep working (a second sweep submitted to node 3 during the
# split is finished by nodes 3 and 4 alone); after the heal the stores
# converge (same results digests on all four), no task is missing, no
# (task, node) pair is counted twice, both halves' results are kept.
# Runs in its own mount + network namespace (exit 77 when namespaces are
# not permitted): no beacon leaves it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 6000 --test 200
now_ms() { date +%s%3N; }

ms_netns_setup 4
NODE_ARGS=(--open-pool=case9 --interface eth0 --workers 1 "${POOL_TIMES[@]}")
t0=$(now_ms)
POOL_NOWAIT=1
for k in 1 2 3 4; do pool_start "$k" "$k" "$T/n$k" "${NODE_ARGS[@]}"; done
spread=$(($(now_ms) - t0))
unset POOL_NOWAIT
for k in 1 2 3 4; do pool_wait_api "$k"; done
pool_wait_alive $((5 - (($(now_ms) - t0) / 1000))) 3 1 2 3 4 || {
    for k in 1 2 3 4; do pool_cli "$k" peers >&2 || true; done
    fail "the 4 nodes did not see each other within 5 s of their start"
}
ok "4 nodes started within $spread ms see the other 3 within $((($(now_ms) - t0))) ms"

sweep() { # NAME NTASKS EPOCHS
    cat <<Y
name: $1
dataset: fashion-mnist
parameters:
  seed:          {values: [$(seq -s, 1 "$2")]}
  hidden_layers: {value: 2}
  width:         {value: 128}
  epochs:        {value: $3}
  batch_size:    {value: 50}
Y
}
# Sweep A: 32 tasks of about 1 s of CPU each (2 x 128, 20 epochs of 6000
# rows): enough to outlast the start of the split on the 4 nodes' one
# worker each, little enough for 2 cores to finish after the heal (at 2 x
# 256 and 40 epochs, about 6 times the work, half the sweep was left 60 s
# after the heal on a 2-core machine).
sweep case9-a 32 20 >"$T/a.yaml"
A=$(pool_submit 1 "$T/a.yaml")
started() { [ "$(pool_done 1 "$A")" -ge 2 ]; }
ms_wait_until 30 started || { pool_dump "$A" 1 2 3 4; fail "sweep A did not start"; }

# ---- the split ---------------------------------------------------------------
pool_split 3 4
t_split=$SECONDS
split_seen() { [ "$(pool_alive 1)" = 1 ] && [ "$(pool_alive 2)" = 1 ] && [ "$(pool_alive 3)" = 1 ] && [ "$(pool_alive 4)" = 1 ]; }
ms_wait_until 15 split_seen || {
    for k in 1 2 3 4; do pool_cli "$k" peers >&2 || true; done
    fail "the halves do not each see one peer alive after the split"
}
a12=$(pool_done 1 "$A"); a34=$(pool_done 3 "$A")
sweep case9-b 8 3 | sed 's/{value: 128}/{value: 16}/; s/{value: 2}/{value: 1}/' >"$T/b.yaml"
B=$(pool_submit 3 "$T/b.yaml")
pool_cli 3 priority "$B" 5 >/dev/null || fail "priority of sweep B"
ms_wait_until 25 pool_finished 3 "$B" || { pool_dump "$B" 3 4; fail "sweep B not finished by the half {3, 4}"; }
pool_curl 1 "/api/v1/sweeps/$B" >/dev/null 2>&1 && fail "node 1 knows sweep B during the split"
# Within the 30 s of the split (sweep B may end before a task of A does).
went_on() { [ "$(pool_done "$1" "$A")" -gt "$2" ]; }
split_left() { local l=$((28 - (SECONDS - t_split))); echo $((l < 1 ? 1 : l)); }
ms_wait_until "$(split_left)" went_on 1 "$a12" || fail "half {1, 2} did not go on with sweep A"
ms_wait_until "$(split_left)" went_on 3 "$a34" || fail "half {3, 4} did not go on with sweep A"
ok "split 2 | 2: each half sees 1 peer, both halves go on with sweep A, half {3, 4} ran sweep B (priority 5) alone"
left=$((30 - (SECONDS - t_split)))
[ "$left" -le 0 ] || sleep "$left"

# ---- the heal ----------------------------------------------------------------
pool_unsplit 3 4
t_heal=$SECONDS
pool_wait_alive 15 3 1 2 3 4 || fail "the 4 nodes did not link again after the heal"
allA() { for k in 1 2 3 4; do pool_finished "$k" "$A" || return 1; done; }
ms_wait_until 60 allA || { pool_dump "$A" 1 2 3 4; fail "sweep A not finished everywhere after the heal"; }
ms_wait_until 15 pool_same_digest "$A" 1 2 3 4 || fail "sweep A: stores did not converge"
read -r rowsA tasksA nodesA < <(pool_check_rows "$T/digest1.csv.raw" 32) || fail "sweep A rows"
ms_wait_until 15 pool_same_digest "$B" 1 2 3 4 || fail "sweep B: stores did not converge"
read -r rowsB tasksB nodesB < <(pool_check_rows "$T/digest1.csv.raw" 8) || fail "sweep B rows"
nodesB_ids=$(cut -d, -f3 "$T/digest1.csv" | sort -u | wc -l)
[ "$nodesB_ids" -le 2 ] || fail "sweep B has rows from $nodesB_ids nodes, only 3 and 4 could run it"
for k in 1 2 3 4; do
    pool_curl "$k" "/api/v1/sweeps/$A" | grep -q '"claimed": *0' || fail "node $k: a live claim left on sweep A"
done
ok "healed: stores converged in $((SECONDS - t_heal)) s; A: $rowsA rows for 32 tasks ($((rowsA - 32)) replicas) from $nodesA nodes; B: $rowsB rows; nothing counted twice"
