#!/usr/bin/env bash
# ms_pool_bigrow_test.sh - a result row over 64 KiB (one wire record) on
# two loopback daemons (--open-pool, --no-beacon, --peer): a task of 1500
# epochs (one minibatch each, so it is quick) has a "curve" of 1500
# entries, a row of about 170 KB. Its node stores it as FRAGMENT records,
# the peer gets them by gossip and reassembles the row: the sweep ends
# done (no task re-claimed forever, no "cannot store result"), and both
# nodes serve the same rows, the big one whole (1500 curve entries, over
# 64 KiB of JSON). `results --all` lists the same table plus any extra
# replica flagged as such.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 200 --test 50

pool_lo_ports 2
for k in 1 2; do
    pool_start_lo "$k" --open-pool=bigrow --workers 1 "${POOL_TIMES[@]}"
done
pool_wait_alive 10 1 1 2 || fail "the two nodes did not link"
cat >"$T/big.yaml" <<'Y'
name: big-row
dataset: fashion-mnist
parameters:
  epochs:        {values: [1500, 2]}
  hidden_layers: {value: 1}
  width:         {value: 8}
  batch_size:    {value: 256}
Y
sweep=$(pool_submit 1 "$T/big.yaml")
fin() { pool_finished 1 "$sweep" && pool_finished 2 "$sweep"; }
ms_wait_until 120 fin || { pool_dump "$sweep" 1 2; fail "the sweep did not finish on both nodes"; }

for k in 1 2; do
    pool_curl "$k" "/api/v1/sweeps/$sweep" >"$T/s$k.json"
    pool_curl "$k" "/api/v1/sweeps/$sweep/results?format=json" >"$T/r$k.json"
    pool_curl "$k" "/api/v1/sweeps/$sweep/results?format=json&all=1" >"$T/a$k.json"
    pool_cli "$k" results "$sweep" --all --format json >"$T/cli$k.json" ||
        fail "node $k: results --all"
done
python3 - "$T" <<'PY' || fail "rows differ or the big row is not whole"
import json, sys
t = sys.argv[1]
def canon(rows):
    return sorted(json.dumps(r, sort_keys=True) for r in rows)
tables = []
for k in (1, 2):
    s = json.load(open(f"{t}/s{k}.json"))
    c = s["counts"]
    assert c["done"] == 2 and c["failed"] == 0, (k, c)
    rows = json.load(open(f"{t}/r{k}.json"))["rows"]
    assert len(rows) == 2, (k, len(rows))
    big = [r for r in rows if r["config"]["epochs"] == 1500]
    assert len(big) == 1, (k, "one row of the 1500-epoch task")
    b = big[0]
    size = len(json.dumps(b, separators=(",", ":")))
    assert b["status"] == "ok" and len(b["curve"]) == 1500, (k, b["status"], len(b["curve"]))
    assert size > 64 * 1024, (k, size)
    allrows = json.load(open(f"{t}/a{k}.json"))["rows"]
    extra = [r for r in allrows if r.get("replica") == "extra"]
    assert canon([r for r in allrows if r.get("replica") != "extra"]) == canon(rows), k
    assert all(r["counted"] is False for r in extra), k
    cli = json.load(open(f"{t}/cli{k}.json"))
    cli = cli["rows"] if isinstance(cli, dict) else cli
    assert len(cli) == len(allrows), (k, len(cli), len(allrows))
    tables.append(canon(rows))
    print(f"node {k}: 2 rows, big row {size} bytes, {len(extra)} extra replica(s)")
assert tables[0] == tables[1], "the two nodes' tables differ"
PY
for k in 1 2; do
    if grep -q "cannot store result" "${POOL_LOG[$k]}"; then
        fail "node $k could not store a result: $(grep 'cannot store result' "${POOL_LOG[$k]}" | head -1)"
    fi
done
ok "a 1500-epoch row over 64 KiB stored as fragments, reassembled on the peer; same rows on both nodes"
