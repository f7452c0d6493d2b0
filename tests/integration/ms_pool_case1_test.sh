#!/usr/bin/env bash
# ms_pool_case1_test.sh - case 1 of ../shared/cases/README.md with real
# meshsweepd daemons on loopback (--open-pool, --no-beacon, --peer): 3
# nodes, a sweep of 4 tasks, lease TTL 5 s; the node holding task 2 is
# SIGKILLed halfway through its training: within TTL + 1 s the survivors
# expire its lease, task 2 is claimed again exactly once, the sweep ends
# with 4 finished tasks and no live claim.
# "Claimed again once": both survivors see the lease expire at about the
# same moment and may both write a claim at the same epoch; the node
# starts a claim only once every live peer acknowledged it (the settle
# rule, node/actor/ms_node.c "Leases"), so exactly one of them takes the task
# and starts it, and the other withdraws its claim unstarted (counted in
# lease_settle_lost_total). So: claims written minus claims lost while
# settling = 1, and task 2 starts again on exactly one survivor.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
# 6000 images: width 256 x 2 trains for seconds in 100 epochs
ms_tiny_dataset --train 6000 --test 200
now_ms() { date +%s%3N; }
counter() { pool_status "$1" "d[\"pool_counters\"][\"$2\"]"; }

# ---- case 1: the holder of task 2 killed --------------------------------------
pool_lo_ports 3
C1=(--open-pool=case1 --workers 1 --lease-ttl-ms 5000 --heartbeat-ms 500
    --beacon-interval-ms 100 --antientropy-ms 200 --verbose)
for k in 1 2 3; do pool_start_lo "$k" "${C1[@]}"; done
pool_wait_alive 10 2 1 2 3 || fail "case 1: the nodes did not link"
cat >"$T/case1.yaml" <<'Y'
name: case-1
dataset: fashion-mnist
parameters:
  epochs:        {values: [2, 100, 3, 4]}
  hidden_layers: {value: 2}
  width:         {value: 256}
  batch_size:    {value: 50}
Y
sweep=$(pool_submit 1 "$T/case1.yaml")
three_done_one_busy() {
    pool_curl 1 "/api/v1/sweeps/$sweep" | grep -q '"done": *3' || return 1
    for k in 1 2 3; do
        if pool_busy "$k"; then HOLDER=$k; return 0; fi
    done
    return 1
}
ms_wait_until 40 three_done_one_busy || { pool_dump "$sweep" 1 2 3; fail "case 1: task 2 never ran alone"; }
sleep 1 # halfway: task 2 trains for several seconds
surv=()
for k in 1 2 3; do [ "$k" = "$HOLDER" ] || surv+=("$k"); done
a=${surv[0]} b=${surv[1]}
taken() {
    echo $(($(counter "$a" lease_claims_total) + $(counter "$b" lease_claims_total) -
        $(counter "$a" lease_settle_lost_total) - $(counter "$b" lease_settle_lost_total)))
}
# training starts only (a verifier logs "re-evaluation of a result of task
# X: worker N checks its weights", which is no training start)
starts() { cat "${POOL_LOG[$a]}" "${POOL_LOG[$b]}" | grep -cE "^meshsweepd: task [0-9a-f]{12} started on worker" || true; }
claims0=$(taken)
starts0=$(starts)
exp0=$(($(counter "$a" lease_expiries_total) + $(counter "$b" lease_expiries_total)))
pool_busy "$HOLDER" || fail "case 1: node $HOLDER finished task 2 before the kill (too fast)"
t0=$(now_ms)
pool_kill "$HOLDER" KILL
# a tight loop (curl and grep only, every 50 ms), so the time measured is
# the node's, not the poll's
exp_sum() {
    local k n sum=0
    for k in "$a" "$b"; do
        n=$(pool_curl "$k" /api/v1/status | grep -o '"lease_expiries_total": *[0-9]*' | grep -o '[0-9]*$')
        sum=$((sum + ${n:-0}))
    done
    echo "$sum"
}
dt=""
while [ $(($(now_ms) - t0)) -lt 10000 ]; do
    if [ "$(exp_sum)" -gt "$exp0" ]; then dt=$(($(now_ms) - t0)); break; fi
    sleep 0.05
done
[ -n "$dt" ] || fail "case 1: no survivor expired the lease within 10 s"
[ "$dt" -le 6000 ] || fail "case 1: lease expired after $dt ms (TTL 5000 + 1 s)"
[ "$dt" -ge 4000 ] || fail "case 1: lease expired after only $dt ms (TTL 5000)"
fin() { pool_finished "$a" "$sweep" && pool_finished "$b" "$sweep"; }
ms_wait_until 60 fin || { pool_dump "$sweep" "$a" "$b"; fail "case 1: the sweep did not finish"; }
claims1=$(taken)
[ $((claims1 - claims0)) = 1 ] || fail "case 1: task 2 claimed $((claims1 - claims0)) times again, not once"
starts1=$(starts)
[ $((starts1 - starts0)) = 1 ] || fail "case 1: task 2 started $((starts1 - starts0)) times again, not once"
pool_curl "$a" "/api/v1/sweeps/$sweep" >"$T/c1.json"
python3 - "$T/c1.json" <<'PY' || fail "case 1: final counts"
import json, sys
c = json.load(open(sys.argv[1]))["counts"]
assert c["done"] == 4 and c["claimed"] == 0 and c["running"] == 0 and c["pending"] == 0, c
PY
ms_wait_until 5 pool_same_digest "$sweep" "$a" "$b" || fail "case 1: tables differ"
pool_check_rows "$T/digest$a.csv.raw" 4 >/dev/null || fail "case 1: rows"
ok "case 1: holder of task 2 (node $HOLDER) killed; lease expired after $dt ms; claimed again once; 4 finished, no live claim"
