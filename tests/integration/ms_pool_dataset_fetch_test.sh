#!/usr/bin/env bash
# ms_pool_dataset_fetch_test.sh - datasets by hash across the pool (issue 3,
# "What to build" 4; DESIGN.md "Datasets"), three real meshsweepd daemons on
# loopback (--open-pool, --no-beacon, --peer: nothing is broadcast):
#   1. a user's own IDX files, in a directory only the spec given to node 1
#      names: `meshsweep submit` uploads them to node 1, which publishes the
#      dataset record; nodes 2 and 3 fetch the files by hash from a peer,
#      verify them, and run tasks on them (rows from >= 2 nodes, the same
#      table everywhere); the blob files in their data dirs hash to the
#      record's hashes;
#   2. a built-in dataset every node holds with the same bytes: node 2 uses
#      its local copy (its hash matches the record), fetches nothing, and
#      runs tasks of that sweep.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100 # the built-in, same on every node
python3 "$HERE/make_tiny_idx.py" idx "$T/own" --train 500 --test 100 --side 6

pool_lo_ports 3
POOL=(--open-pool="dsfetch-$$" --workers 1 --verbose "${POOL_TIMES[@]}")
for k in 1 2 3; do pool_start_lo "$k" "${POOL[@]}"; done
pool_wait_alive 10 2 1 2 3 || fail "the three nodes did not link"
ok "three daemons linked"

counter() { # K NAME: a pool counter of node K (0 when absent)
    pool_status "$1" "d.get('pool_counters', {}).get('$2', 0)"
}
any_finished() { pool_finished 1 "$1" || pool_finished 2 "$1" || pool_finished 3 "$1"; }
b2() { # FILE: BLAKE2b-256 hex (what the node's ms_hash computes)
    python3 -c 'import hashlib,sys; print(hashlib.blake2b(open(sys.argv[1],"rb").read(), digest_size=32).hexdigest())' "$1"
}

# ---- 1. own files: uploaded to node 1, fetched by hash by nodes 2 and 3 ----
# (keep_weights: none in both sweeps: kept weights are blobs too, fetched by
# verifiers and copy holders, docs/VERIFICATION.md; only dataset fetches
# are counted here)
cat >"$T/own.yaml" <<Y
name: own-files
dataset: {train: $T/own/train-images-idx3-ubyte.gz, test: $T/own/t10k-images-idx3-ubyte.gz}
keep_weights: none
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4, 5, 6]}
  width:         {value: 16}
  epochs:        {value: 3}
  batch_size:    {value: 50}
Y
sweep=$(pool_submit 1 "$T/own.yaml")
ms_wait_until 90 any_finished "$sweep" || { pool_dump "$sweep" 1 2 3; fail "the own-files sweep did not finish in 90 s"; }
ms_wait_until 10 pool_same_digest "$sweep" 1 2 3 || fail "results tables differ"
read -r rows tasks nodes < <(pool_check_rows "$T/digest1.csv.raw" 12) || fail "rows of the own-files sweep"
[ "$nodes" -ge 2 ] || fail "only $nodes node(s) ran the own-files sweep"
ok "own-files sweep: $tasks tasks, $rows rows from $nodes nodes, same table everywhere"

id_of() { pool_status "$1" 'd["node_id"]'; }
ran_on() { # K: rows of node K in node 1's table
    python3 - "$T/digest1.csv.raw" "$(id_of "$1")" <<'EOF'
import csv, sys
print(sum(1 for r in csv.DictReader(open(sys.argv[1])) if r["node_id"] == sys.argv[2]))
EOF
}
want=() # the record's hashes: the client hashed and uploaded these files
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    want+=("$(b2 "$T/own/$f.gz")")
done
# A node fetches a sweep's dataset once the sweep has work it may take:
# 12 short tasks may all be taken by the others first (then it fetches
# nothing, and ran nothing). Every node that ran a task fetched and
# checked the files; at least one of nodes 2 and 3 did.
fetched_nodes=0 ran_nodes=0
for k in 2 3; do
    n=$(counter "$k" datasets_fetched_total)
    r=$(ran_on "$k")
    if [ "$n" -lt 1 ]; then
        [ "$r" = 0 ] || { pool_dump "$sweep" "$k"; fail "node $k ran $r task(s) without fetching the dataset"; }
        echo "node $k: took no task of the sweep before it ended, fetched nothing"
        continue
    fi
    fetched_nodes=$((fetched_nodes + 1))
    grep -q "sweep ${sweep:0:12}: dataset fetched, hashes verified (4 files" "${POOL_LOG[$k]}" ||
        fail "node $k's log has no 'dataset fetched, hashes verified' line"
    [ "$(counter "$k" blob_hash_mismatches_total)" = 0 ] || fail "node $k saw hash mismatches"
    for h in "${want[@]}"; do
        [ -f "$T/n$k/blobs/$h" ] || fail "node $k holds no blob $h"
        [ "$(b2 "$T/n$k/blobs/$h")" = "$h" ] || fail "node $k's blob $h has other bytes"
    done
    # The dataset object its workers load names those blobs, by role.
    python3 - "$T/n$k/datasets/$sweep.json" "$T/n$k/blobs" "${want[@]}" <<'EOF' || fail "node $k's dataset object"
import json, os, sys
d = json.load(open(sys.argv[1]))
blobs, h = sys.argv[2], sys.argv[3:]
roles = ["train", "train_labels", "test", "test_labels"]
for role, want in zip(roles, h):
    assert os.path.realpath(d[role]) == os.path.realpath(os.path.join(blobs, want)), (role, d[role])
assert d["train_hash"] == h[0] and d["test_hash"] == h[2]
EOF
    [ "$r" -gt 0 ] && ran_nodes=$((ran_nodes + 1))
    echo "node $k: fetched $n dataset(s), $(counter "$k" blob_bytes_received_total) bytes, ran $r task(s)"
done
[ "$fetched_nodes" -ge 1 ] || fail "neither node 2 nor node 3 fetched the dataset"
[ "$ran_nodes" -ge 1 ] || fail "no node that fetched the dataset ran a task of it"
[ "$(counter 1 blob_requests_served_total)" -ge 1 ] ||
    [ "$(counter 2 blob_requests_served_total)" -ge 1 ] ||
    fail "no node served a blob request"
ok "$fetched_nodes of nodes 2 and 3 fetched the 4 files by hash and verified them (blob files hash to the record's hashes), $ran_nodes ran tasks on them"

# ---- 2. a built-in dataset with matching local copies: no fetch ------------
asked_before=$(counter 2 dataset_fetches_asked_total)
sent_before=$(counter 2 blob_requests_sent_total)
cat >"$T/builtin.yaml" <<Y
name: builtin-local
dataset: fashion-mnist
keep_weights: none
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3, 4, 5, 6]}
  width:         {value: 16}
  epochs:        {value: 3}
  batch_size:    {value: 50}
Y
sweep2=$(pool_submit 1 "$T/builtin.yaml")
ms_wait_until 90 any_finished "$sweep2" || { pool_dump "$sweep2" 1 2 3; fail "the built-in sweep did not finish in 90 s"; }
ms_wait_until 10 pool_same_digest "$sweep2" 1 2 3 || fail "built-in results tables differ"
pool_check_rows "$T/digest1.csv.raw" 12 >/dev/null || fail "rows of the built-in sweep"
[ "$(counter 2 datasets_local_total)" -ge 1 ] || fail "node 2 did not use its local copy"
grep -q "dataset fashion-mnist: local copy matches the record" "${POOL_LOG[2]}" ||
    fail "node 2's log has no 'local copy matches' line"
[ "$(counter 2 dataset_fetches_asked_total)" = "$asked_before" ] || fail "node 2 tried to fetch the built-in"
[ "$(counter 2 blob_requests_sent_total)" = "$sent_before" ] || fail "node 2 sent blob requests for the built-in"
r=$(ran_on 2)
[ "$r" -gt 0 ] || fail "node 2 ran no task of the built-in sweep"
ok "built-in dataset: node 2's copy matched the record, nothing fetched, it ran $r task(s)"
