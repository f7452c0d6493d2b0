#!/usr/bin/env bash
# ms_pool_case2_test.sh - case 2 of ../shared/cases/README.md with real
# meshsweepd daemons on loopback (--open-pool, --no-beacon, --peer): the
# grid activation {tanh, relu} x hidden sizes {(10), (100), (10,10),
# (100,10)} submitted to 4 nodes started within 10 ms of each other with
# the same configuration (the same spec to each): 8 distinct tasks finish
# and no task is started by two nodes (replicas: 1): two nodes that claim
# the same task at the same time (two stealers, or an owner and a
# stealer) both wait for each other's acknowledgement before starting, so
# both see both claims and only the top-ranked one starts.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100
now_ms() { date +%s%3N; }

# ---- case 2: 4 nodes started within 10 ms, same configuration -----------------
pool_lo_ports 4
C2=(--open-pool=case2 --workers 1 "${POOL_TIMES[@]}" --verbose)
for k in 1 2 3 4; do POOL_APIPORT[$k]=$(pool_free_port); done
t0=$(now_ms)
POOL_NOWAIT=1
for k in 1 2 3 4; do pool_start_lo "$k" "${C2[@]}"; done
spread=$(($(now_ms) - t0))
unset POOL_NOWAIT
for k in 1 2 3 4; do pool_wait_api "$k"; done
cat >"$T/case2.yaml" <<'Y'
name: case-2
dataset: fashion-mnist
parameters:
  activation:   {values: [tanh, relu]}
  hidden_sizes: {values: [[10], [100], [10, 10], [100, 10]]}
  epochs:       {value: 3}
  batch_size:   {value: 50}
Y
# submitted at once, to every node (the same spec: the same sweep id)
for k in 1 2 3 4; do ids[k]=$(pool_submit "$k" "$T/case2.yaml"); done
[ "${ids[1]}" = "${ids[4]}" ] || fail "case 2: the same spec gave two sweep ids"
sw=${ids[1]}
all4() { for k in 1 2 3 4; do pool_finished "$k" "$sw" || return 1; done; }
ms_wait_until 60 all4 || { pool_dump "$sw" 1 2 3 4; fail "case 2: the sweep did not finish on every node"; }
ms_wait_until 5 pool_same_digest "$sw" 1 2 3 4 || fail "case 2: tables differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 8) || fail "case 2: rows"
[ "$rows" = 8 ] || fail "case 2: $rows rows for 8 tasks (a task run twice)"
# "task X started on worker": each task started by one node only
for k in 1 2 3 4; do
    sed -n 's/.*task \([0-9a-f]\{12\}\) started on worker.*/\1/p' "${POOL_LOG[$k]}" | sort -u | sed "s/\$/ $k/"
done >"$T/starts.txt"
dup=$(cut -d' ' -f1 "$T/starts.txt" | sort | uniq -d)
[ -z "$dup" ] || fail "case 2: tasks started by two nodes: $dup ($(cat "$T/starts.txt" | tr '\n' ' '))"
[ "$(cut -d' ' -f1 "$T/starts.txt" | sort -u | wc -l)" = 8 ] || fail "case 2: started tasks: $(cat "$T/starts.txt" | tr '\n' ' ')"
# Each node measured claim-to-start of every task it started (the sweep
# was committed on every node in this run) and reports it in its status.
measured=0
for k in 1 2 3 4; do
    n=$(pool_status "$k" 'd["claim_to_start_ms"]["n"]')
    ok_fig=$(pool_status "$k" 'd["claim_to_start_ms"]["window"] == 0 or d["claim_to_start_ms"]["median"] >= 0')
    [ "$ok_fig" = True ] || fail "case 2: node $k claim_to_start_ms without a median"
    measured=$((measured + n))
done
[ "$measured" = 8 ] || fail "case 2: claim-to-start measured for $measured task starts, not 8"
ok "case 2: 4 nodes started within $spread ms; 8 distinct tasks finished by $nodes nodes, none started twice"
