#!/usr/bin/env bash
# ms_pool_case1_solo_test.sh - the variant of case 1 of
# ../shared/cases/README.md: a single meshsweepd (open pool, alone, no
# beacon) killed with SIGKILL in the middle of a task and restarted on the
# same data dir takes its task back, resumes it from its checkpoint, and
# ends with one row.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
# 6000 images, 2 x 128, 60 epochs: about 6 s of training here (0.1 s per
# epoch), so the kill 0.3 s after the first checkpoint falls mid-task on a
# fast machine and the rest fits the 60 s wait on a loaded one (2 x 256 for
# 100 epochs took 30 s alone and ran past 60 s beside another test in CI).
ms_tiny_dataset --train 6000 --test 200
now_ms() { date +%s%3N; }

# ---- one node killed and restarted ----------------------------------------
pool_lo_ports 1
SOLO=(--open-pool=case1solo --workers 1 --lease-ttl-ms 5000 --heartbeat-ms 500 --verbose)
pool_start_lo 1 "${SOLO[@]}"
cat >"$T/solo.yaml" <<'Y'
name: case-1-solo
dataset: fashion-mnist
parameters:
  epochs:        {value: 60}
  hidden_layers: {value: 2}
  width:         {value: 128}
  batch_size:    {value: 50}
Y
solo=$(pool_submit 1 "$T/solo.yaml")
has_ckpt() { compgen -G "$T/n1/checkpoints/*.ckpt" >/dev/null; }
ms_wait_until 30 has_ckpt || fail "case 1 variant: no checkpoint written"
sleep 0.3
pool_kill 1 KILL
pool_reap 1
log1=${POOL_LOG[1]}
mv "$log1" "$log1.first"
pool_start_lo 1 "${SOLO[@]}"
ms_wait_until 60 pool_finished 1 "$solo" || { pool_dump "$solo" 1; fail "case 1 variant: not finished after the restart"; }
grep -q 'resumed from .*checkpoints/' "${POOL_LOG[1]}" || fail "case 1 variant: the task did not resume from its checkpoint"
pool_rows 1 "$solo" "$T/solo.csv" || fail "case 1 variant: results"
read -r rows tasks nodes < <(pool_check_rows "$T/solo.csv.raw" 1) || fail "case 1 variant: rows"
[ "$rows" = 1 ] || fail "case 1 variant: $rows rows"
ok "case 1 variant: a single node killed mid-task and restarted resumed its task from its checkpoint"
