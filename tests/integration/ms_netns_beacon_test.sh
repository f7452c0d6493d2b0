#!/usr/bin/env bash
# ms_netns_beacon_test.sh - ms_mesh beacon discovery across network
# namespaces joined by a bridge (tests/integration/netns.sh): three meshes
# of one pool find each other by zbeacon within 3 s (interface eth0, then
# "*"), and a mesh of another pool on the same network stays out. Runs the
# mesh through ms_mesh_test's node mode (MS_MESH_TEST_NODE). Exit 77 when
# namespaces are not permitted. Traffic stays inside the namespaces.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"

# the test program: $MESHSWEEP_BUILD_DIR/tests/ms_mesh_test, or next to
# the client's folder when run by ctest (MESHSWEEP_BIN_DIR)
if [ -n "${MESHSWEEP_BUILD_DIR:-}" ]; then
    BIN=$MESHSWEEP_BUILD_DIR/tests/ms_mesh_test
elif [ -n "${MESHSWEEP_BIN_DIR:-}" ]; then
    BIN=$MESHSWEEP_BIN_DIR/../tests/ms_mesh_test
else
    echo "MESHSWEEP_BUILD_DIR or MESHSWEEP_BIN_DIR must be set" >&2
    exit 2
fi
[ -x "$BIN" ] || { echo "SKIP: $BIN not built" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT   # chained by ms_netns_setup

ms_netns_setup 4
for iface in eth0 '*'; do
    pids=()
    for i in 1 2 3; do
        ms_netns_spawn "$i" "$OUT/n$i.log" env MS_MESH_TEST_NODE=$((16 * i)) \
            MS_MESH_TEST_POOL=lab MS_MESH_TEST_EXPECT=2 \
            MS_MESH_TEST_IFACE="$iface" MS_MESH_TEST_HOLD_MS=1500 "$BIN"
        pids+=("$SPAWNED")
    done
    # another pool on the same bridge: must see nobody
    ms_netns_spawn 4 "$OUT/n4.log" env MS_MESH_TEST_NODE=8 \
        MS_MESH_TEST_POOL=other MS_MESH_TEST_EXPECT=0 \
        MS_MESH_TEST_IFACE="$iface" MS_MESH_TEST_HOLD_MS=4000 "$BIN"
    other=$SPAWNED
    for i in 1 2 3; do
        if ! wait "${pids[$((i - 1))]}"; then
            cat "$OUT"/n*.log >&2
            fail "node $i ($iface) did not see 2 peers alive"
        fi
        ms=$(sed -n 's/^alive 2 after \([0-9]*\) ms, max 2$/\1/p' "$OUT/n$i.log")
        [ -n "$ms" ] && [ "$ms" -le 3000 ] \
            || fail "node $i ($iface): $(cat "$OUT/n$i.log")"
    done
    wait "$other" || true
    grep -q ', max 0$' "$OUT/n4.log" \
        || fail "other pool's node linked ($iface): $(cat "$OUT/n4.log")"
    ok "3 meshes discovered each other by beacon ($iface: $(cat "$OUT"/n[123].log | tr "\n" " ")), other pool out"
done
