#!/usr/bin/env bash
# ms_pool_cut_test.sh - a node cut off for 30 s (issue 3, chaos): 3 real
# meshsweepd daemons in 3 network namespaces joined by a bridge (netns.sh),
# beacons on (--interface '*'). Node 3's bridge port is taken down for
# 30 s (ms_netns_cut): nodes 1 and 2 mark it dead, node 3 marks them dead
# and keeps working alone (a sweep submitted to it during the cut is
# finished by it alone, while 1 and 2 finish another); after the heal all
# three relink and their stores converge (same digests for both sweeps,
# nothing counted twice). Runs in its own mount + network namespace (exit
# 77 when namespaces are not permitted): no beacon leaves it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

ms_netns_setup 3
for k in 1 2 3; do
    pool_start "$k" "$k" "$T/n$k" --open-pool=cut --interface '*' --workers 1 \
        "${POOL_TIMES[@]}"
done
pool_wait_alive 10 2 1 2 3 || fail "the 3 nodes did not link"

grid() { # NAME NTASKS
    cat <<Y
name: $1
dataset: fashion-mnist
parameters:
  seed:          {values: [$(seq -s, 1 "$2")]}
  hidden_layers: {values: [1, 2]}
  width:         {value: 32}
  epochs:        {value: 20}
  batch_size:    {value: 50}
Y
}
ms_netns_cut 3
t_cut=$SECONDS
cut_seen() { [ "$(pool_alive 1)" = 1 ] && [ "$(pool_alive 2)" = 1 ] && [ "$(pool_alive 3)" = 0 ]; }
ms_wait_until 15 cut_seen || {
    for k in 1 2 3; do pool_cli "$k" peers >&2 || true; done
    fail "the cut is not seen (1 and 2: one peer alive; 3: none)"
}
grid cut-alone 6 >"$T/c.yaml"
grid cut-rest 8 >"$T/d.yaml"
C=$(pool_submit 3 "$T/c.yaml")
D=$(pool_submit 1 "$T/d.yaml")
ms_wait_until 25 pool_finished 3 "$C" || { pool_dump "$C" 3; fail "node 3 did not finish its sweep alone"; }
ms_wait_until 10 pool_finished 1 "$D" || { pool_dump "$D" 1 2; fail "nodes 1 and 2 did not finish their sweep"; }
pool_curl 1 "/api/v1/sweeps/$C" >/dev/null 2>&1 && fail "node 1 knows node 3's sweep during the cut"
pool_curl 3 "/api/v1/sweeps/$D" >/dev/null 2>&1 && fail "node 3 knows node 1's sweep during the cut"
pool_rows 3 "$C" "$T/alone.csv"
read -r rows tasks nodes < <(pool_check_rows "$T/alone.csv.raw" 12) || fail "rows of node 3's sweep"
[ "$nodes" = 1 ] || fail "node 3's sweep has rows of $nodes nodes during the cut"
ok "node 3 cut off: it ran its 12-task sweep alone while 1 and 2 ran theirs"
left=$((30 - (SECONDS - t_cut)))
[ "$left" -le 0 ] || sleep "$left"

ms_netns_heal 3
t_heal=$SECONDS
pool_wait_alive 15 2 1 2 3 || fail "node 3 did not relink after the heal"
ms_wait_until 15 pool_same_digest "$C" 1 2 3 || fail "node 3's sweep did not reach 1 and 2"
pool_check_rows "$T/digest1.csv.raw" 12 >/dev/null || fail "rows of C after the heal"
ms_wait_until 15 pool_same_digest "$D" 1 2 3 || fail "sweep D did not reach node 3"
pool_check_rows "$T/digest1.csv.raw" 16 >/dev/null || fail "rows of D after the heal"
ok "healed after 30 s: relinked, both sweeps on every node (same digests) in $((SECONDS - t_heal)) s"
