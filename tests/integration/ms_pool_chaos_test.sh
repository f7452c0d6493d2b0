#!/usr/bin/env bash
# ms_pool_chaos_test.sh - node failures in a pool of three real meshsweepd
# daemons on loopback (--open-pool, --no-beacon, --peer), lease TTL 2 s
# (issue 3, "What it must show", chaos):
#   1. node 3 SIGKILLed while it trains: its task is redone by nodes 1 and
#      2 after the TTL (a lease expiry is counted), the sweep completes, no
#      task is missing and no (task, node) pair is counted twice;
#   2. node 3 restarted on the same data dir catches up to the digest;
#   3. a holder SIGSTOPped for 2 x TTL and woken stops or adds an extra
#      replica (listed by results --all), never a second row: one row per
#      task; all tables agree.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
# 6000 images: a task of width 256 x 2 trains for seconds in few epochs
# (the row keeps one learning-curve point per epoch: keep epochs low)
ms_tiny_dataset --train 6000 --test 200

pool_lo_ports 3
POOL=(--open-pool=chaos --workers 1 "${POOL_TIMES[@]}")
for k in 1 2 3; do pool_start_lo "$k" "${POOL[@]}"; done
pool_wait_alive 10 2 1 2 3 || fail "the three nodes did not link"

slow() { # NAME NTASKS EPOCHS
    local seeds
    seeds=$(seq -s, 1 "$2")
    cat <<Y
name: $1
dataset: fashion-mnist
parameters:
  seed:          {values: [$seeds]}
  hidden_layers: {value: 2}
  width:         {value: 256}
  epochs:        {value: $3}
  batch_size:    {value: 50}
Y
}
expiries() { pool_status "$1" 'd["pool_counters"]["lease_expiries_total"]'; }

# ---- 1. SIGKILL a node mid-task ---------------------------------------------
slow pool-chaos-kill 6 50 >"$T/kill.yaml"
e0=$(($(expiries 1) + $(expiries 2)))
chaos=$(pool_submit 1 "$T/kill.yaml")
ms_wait_until 20 pool_busy 3 || fail "node 3 never ran a task of the chaos sweep"
sleep 0.5
pool_kill 3 KILL
pool_reap 3
t_kill=$SECONDS
fin12() { pool_finished 1 "$chaos" && pool_finished 2 "$chaos"; }
ms_wait_until 60 fin12 || { pool_dump "$chaos" 1 2; fail "chaos sweep not finished on nodes 1 and 2"; }
ms_wait_until 5 pool_same_digest "$chaos" 1 2 || fail "chaos tables of 1 and 2 differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 6) || fail "chaos rows"
[ "$(($(expiries 1) + $(expiries 2)))" -gt "$e0" ] ||
    fail "no lease expiry counted on 1 or 2 after node 3 died"
ok "node 3 SIGKILLed mid-task: lease expired, task redone; 6 tasks, $rows rows, none twice ($((SECONDS - t_kill)) s)"

# ---- 2. the killed node restarted catches up --------------------------------
pool_start_lo 3 "${POOL[@]}"
ms_wait_until 20 pool_same_digest "$chaos" 1 2 3 || fail "restarted node 3 did not catch up"
ok "node 3 restarted: caught up to the same digest (${POOL_DIGEST:0:16})"

# ---- 3. SIGSTOP a holder for 2 x TTL ----------------------------------------
slow pool-chaos-stop 4 60 >"$T/stop.yaml"
e0=$(($(expiries 1) + $(expiries 3)))
stop=$(pool_submit 1 "$T/stop.yaml")
ms_wait_until 20 pool_busy 2 || fail "node 2 never ran a task of the stop sweep"
pool_kill 2 STOP
sleep 4.5 # 2 x TTL and a heartbeat
e1=$(($(expiries 1) + $(expiries 3)))
pool_kill 2 CONT
[ "$e1" -gt "$e0" ] || fail "nodes 1 and 3 did not expire the stopped holder's lease"
finall() { pool_finished 1 "$stop" && pool_finished 2 "$stop" && pool_finished 3 "$stop"; }
ms_wait_until 60 finall || { pool_dump "$stop" 1 2 3; fail "stop sweep not finished"; }
ms_wait_until 5 pool_same_digest "$stop" 1 2 3 || fail "stop tables differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 4) || fail "stop rows"
pool_cli 1 results "$stop" --all --format csv >"$T/stop_all.csv" || fail "results --all"
extra=$(python3 -c 'import csv,sys; print(sum(r["counted"] == "false" for r in csv.DictReader(open(sys.argv[1]))))' "$T/stop_all.csv")
ok "a holder SIGSTOPped 2 x TTL: 4 tasks, $rows rows, $extra extra replica(s) (results --all), no second row"
