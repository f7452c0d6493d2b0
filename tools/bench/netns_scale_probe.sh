#!/usr/bin/env bash
# netns_scale_probe.sh - N real meshsweepd daemons (default 48) with
# beacons, each in a network namespace of its own on one bridge, all made
# inside a private mount + network namespace (tests/integration/netns.sh),
# so no beacon leaves it. Prints, every 2 s for ROUNDS rounds, what four
# of the nodes (1, 2, N/2, N) list: peers by state (alive, suspect, dead)
# and how many are linked; then the RSS of all daemons and their workers.
# --verbose logs are copied to OUT (default /tmp/netns-scale-probe).
# A measurement, not a test: issue 18 item 3's 48-daemon test is built on
# what it shows (docs/BENCHMARKS.md "Pools of real daemons").
#
#   MESHSWEEP_BIN_DIR=build-ci/tools MESHSWEEPD=build-ci/node/meshsweepd \
#       N=48 ROUNDS=8 tools/bench/netns_scale_probe.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/integration
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
N=${N:-48}
ROUNDS=${ROUNDS:-8}
OUT=${OUT:-/tmp/netns-scale-probe}
ms_netns_setup "$N"
TIMES=(--lease-ttl-ms 5000 --heartbeat-ms 500 --beacon-interval-ms 500
    --antientropy-ms 500)
t0=$(date +%s%3N)
for ((k = 1; k <= N; k++)); do
    POOL_NOWAIT=1 pool_start "$k" "$k" "$T/n$k" --open-pool=scale --workers 1 \
        "${TIMES[@]}" --interface eth0 --verbose
done
for ((k = 1; k <= N; k++)); do pool_wait_api "$k"; done
echo "$N APIs answer after $(($(date +%s%3N) - t0)) ms"
watch=(1 2 $((N / 2)) "$N")
for ((r = 0; r < ROUNDS; r++)); do
    sleep 2
    line=""
    for k in "${watch[@]}"; do
        pool_cli "$k" peers --json >"$T/p$k.json" 2>/dev/null || echo '[]' >"$T/p$k.json"
        line="$line | n$k $(python3 - "$T/p$k.json" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(e.get("state") for e in d)
print("alive %d suspect %d dead %d linked %d" % (c["alive"], c["suspect"],
      c["dead"], sum(1 for e in d if e.get("linked"))))
PY
)"
    done
    echo "t=$(($(date +%s%3N) - t0)) ms$line"
done
ps -o rss= -C meshsweepd | awk '{s += $1} END {printf "RSS of %d meshsweepd processes: %.0f MiB\n", NR, s / 1024}'
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$T"/node*.log "$OUT"/
for k in "${watch[@]}"; do cp "$T/p$k.json" "$OUT/peers$k.json"; done
echo "logs and peer lists in $OUT"
