#!/usr/bin/env bash
# ms_pool_capture_test.sh - what a capture of the mesh shows (the trust
# issue: "A capture of mesh traffic (tshark on the mesh ports only) shows
# no plaintext of a sweep spec or result, and beacons carry no spec").
#
# Three real meshsweepd daemons WITH beacons (--interface '*', no --peer)
# in this test's own network namespace (netns.sh: lo up, a route for
# 255.255.255.255 on lo; no beacon leaves it), first as a pool with an
# authority (ms_test_authority: node.cert in each data dir), then, as the
# control, as an open pool (--open-pool: plaintext links by design). For
# each, dumpcap (the capture engine of tshark) records lo with a capture
# filter for exactly the three mesh ports and UDP 5870 (the beacon port)
# while a sweep whose name is a canary runs to completion (6 tiny real
# training tasks, so result rows travel). Then, read with tshark:
#   - the mesh ports carried the sweep (more than MIN_MESH_BYTES of TCP
#     payload) and UDP 5870 beacons were captured;
#   - every beacon is the fixed 74-byte payload of proto/ms_beacon.h and
#     every field of it is known (magic, the pool id, a protocol range, a
#     node id of the pool, a mesh port of the pool): no room for a spec;
#   - with the authority, the canary, a parameter value found only in the
#     spec (seed 7315931), "test_accuracy" and "val_accuracy" are nowhere:
#     not in the raw pcap bytes, not in tshark's decoded TCP/UDP payloads
#     (hex-decoded, each TCP direction joined in order so a string split
#     across segments is still seen); the links are CURVE;
#   - in the open pool the same search finds all four (the capture and the
#     search work).
# Exit 77 when namespaces are not permitted or tshark is not installed.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
AUTH=${MESHSWEEP_TEST_AUTHORITY:-}
[ -x "$AUTH" ] || { echo "ms_test_authority not built: skipped"; exit 77; }
for tool in tshark dumpcap; do
    command -v "$tool" >/dev/null || {
        echo "SKIP: $tool not installed (tools/install-deps.sh installs tshark)"
        exit 77
    }
done
ms_tiny_dataset --train 600 --test 100

BEACON_PORT=5870
MIN_MESH_BYTES=20000 # a 6-task sweep with its results is far more
SEED=7315931         # a parameter value that only the spec and tasks hold

# this namespace's loopback carries the beacons (as in the discovery test)
ip link set lo up
ip route add 255.255.255.255/32 dev lo src 127.0.0.1

# make_identity DIR - a node identity in DIR (a short start, no beacon).
make_identity() {
    local dir=$1 pid
    timeout 20 "$MSD" --data-dir "$dir" --api 127.0.0.1:0 --workers 1 \
        --no-beacon --mesh-port 0 >"$dir.id.log" 2>&1 &
    pid=$!
    ms_wait_until 10 test -s "$dir/identity/node.pub" || fail "no identity in $dir"
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# spec MODE - a 6-task sweep named after the canary.
spec() {
    cat <<Y
name: canary-7f3a9c-spec-$1
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [$SEED, $((SEED + 1)), $((SEED + 2))]}
  width:         {value: 16}
  epochs:        {value: 2}
  batch_size:    {value: 50}
Y
}

# capture_start MODE PORTS... - dumpcap on lo, the mesh ports and UDP
# 5870 only, into $T/cap-MODE.pcap; waits (bounded) until it captures.
capture_start() {
    local mode=$1 filter="udp port $BEACON_PORT" p
    shift
    for p in "$@"; do
        filter="$filter or tcp port $p"
    done
    echo "$filter" >"$T/filter-$mode"
    ms_spawn "$T/dumpcap-$mode.log" dumpcap -q -P -i lo -f "$filter" \
        -w "$T/cap-$mode.pcap"
    CAP_PID=$SPAWNED
    ms_wait_until 15 grep -q "^Capturing on" "$T/dumpcap-$mode.log" ||
        fail "$mode: dumpcap did not start: $(cat "$T/dumpcap-$mode.log")"
    ms_wait_until 5 test -s "$T/cap-$mode.pcap" || fail "$mode: no capture file"
}

# capture_stop - end dumpcap (SIGINT: it closes the file), bounded.
capture_stop() {
    kill -INT "$CAP_PID" 2>/dev/null || true
    ms_wait_until 10 ms_gone "$CAP_PID" || fail "dumpcap did not stop"
    wait "$CAP_PID" 2>/dev/null || true
}

# run_pool MODE BASE ARGS... - capture while three daemons (data dirs
# $T/MODE-1..3, mesh ports BASE+1..3, beacons on, ARGS added) find each
# other and run the canary sweep to completion; the daemons are stopped
# before the capture.
run_pool() {
    local mode=$1 base=$2 k sweep rows
    shift 2
    local ports=($((base + 1)) $((base + 2)) $((base + 3)))
    echo "${ports[*]}" >"$T/ports-$mode"
    capture_start "$mode" "${ports[@]}"
    for k in 1 2 3; do
        pool_start "$k" - "$T/$mode-$k" --interface '*' \
            --mesh-port "${ports[$((k - 1))]}" --workers 1 "${POOL_TIMES[@]}" "$@"
    done
    pool_wait_alive 20 2 1 2 3 || {
        for k in 1 2 3; do pool_cli "$k" peers >&2 || true; done
        fail "$mode: the three daemons did not find each other by beacon"
    }
    for k in 1 2 3; do
        cat "$T/$mode-$k/identity/node.pub" >>"$T/ids-$mode"
    done
    pool_status 1 "d['pool_id']" >"$T/pool-$mode"
    spec "$mode" >"$T/spec-$mode.yaml"
    sweep=$(pool_submit 1 "$T/spec-$mode.yaml")
    all3() { pool_finished 1 "$1" && pool_finished 2 "$1" && pool_finished 3 "$1"; }
    ms_wait_until 90 all3 "$sweep" || { pool_dump "$sweep" 1 2 3; fail "$mode: the sweep did not finish on all three"; }
    ms_wait_until 15 pool_same_digest "$sweep" 1 2 3 || fail "$mode: the tables differ"
    # (into a file first: `| head -1` under pipefail could kill the
    # client with SIGPIPE mid-write and fail the pipeline)
    pool_cli 3 results "$sweep" --format csv >"$T/results-$mode.csv"
    rows=$(tail -n +2 "$T/results-$mode.csv" | wc -l)
    [ "$rows" -ge 6 ] || fail "$mode: node 3 has $rows rows"
    head -1 "$T/results-$mode.csv" | grep -q test_accuracy ||
        fail "$mode: the results have no test_accuracy column"
    for k in 1 2 3; do pool_kill "$k" TERM; done
    for k in 1 2 3; do pool_reap "$k"; done
    capture_stop
    ok "$mode: 3 daemons found each other by beacon and ran the 6-task canary sweep under capture"
}

# analyse MODE - read $T/cap-MODE.pcap with tshark; write
# $T/found-MODE (one line per needle: NEEDLE raw|decoded) and print
# "MESH_BYTES BEACONS MECHANISMS" (the ZMTP mechanisms of the mesh
# connections, comma-separated); fails on a beacon that is not the fixed payload.
analyse() {
    local mode=$1
    tshark -n -r "$T/cap-$mode.pcap" -T fields -E separator=/t -E occurrence=f \
        -e frame.number -e tcp.stream -e tcp.srcport -e tcp.dstport \
        -e tcp.len -e tcp.payload -e udp.srcport -e udp.dstport \
        -e udp.payload >"$T/fields-$mode.tsv" 2>"$T/tshark-$mode.err" ||
        fail "$mode: tshark could not read the capture: $(cat "$T/tshark-$mode.err")"
    python3 - "$T/fields-$mode.tsv" "$T/cap-$mode.pcap" "$(cat "$T/ports-$mode")" "$BEACON_PORT" \
        "$T/ids-$mode" "$T/pool-$mode" "$T/found-$mode" \
        "canary-7f3a9c-spec" "$SEED" test_accuracy val_accuracy <<'EOF'
import struct, sys
(tsv, pcap, ports, bport, ids, pool, found_out), needles = \
    sys.argv[1:8], sys.argv[8:]
ports = {int(p) for p in ports.split()}
bport = int(bport)
ids = {l.strip() for l in open(ids) if l.strip()}
pool = open(pool).read().strip()

def unhex(s):
    return bytes.fromhex(s.replace(":", "").replace(",", ""))

streams = {}        # (tcp stream, src port) -> bytes, in capture order
mesh_bytes = 0
beacons = 0
for line in open(tsv):
    f = line.rstrip("\n").split("\t")
    f += [""] * (9 - len(f))
    num, stream, sport, dport, tlen, tpay, usport, udport, upay = f[:9]
    if stream:
        if int(sport) not in ports and int(dport) not in ports:
            sys.exit("frame %s: TCP %s -> %s is not on a mesh port" % (num, sport, dport))
        mesh_bytes += int(tlen or 0)
        key = (stream, sport)
        streams[key] = streams.get(key, b"") + unhex(tpay)
    elif udport:
        if int(udport) != bport:
            sys.exit("frame %s: UDP to %s, not the beacon port" % (num, udport))
        b = unhex(upay)
        # proto/ms_beacon.h: magic, pool id, protocol min/max, node id, mesh port
        if len(b) != 74:
            sys.exit("frame %s: a beacon of %d bytes, not 74" % (num, len(b)))
        magic, pid, pmin, pmax, nid, mport = struct.unpack(">4s32sHH32sH", b)
        if magic != b"MSW1":
            sys.exit("frame %s: beacon magic %r" % (num, magic))
        if pid.hex() != pool:
            sys.exit("frame %s: beacon pool id %s" % (num, pid.hex()))
        if not (1 <= pmin <= pmax <= 16):
            sys.exit("frame %s: beacon protocols %d..%d" % (num, pmin, pmax))
        if nid.hex() not in ids:
            sys.exit("frame %s: beacon of node %s, not of the pool" % (num, nid.hex()))
        if mport not in ports:
            sys.exit("frame %s: beacon mesh port %d" % (num, mport))
        beacons += 1
    else:
        sys.exit("frame %s: neither TCP nor UDP" % num)

raw = open(pcap, "rb").read()
# each connection's ZMTP greeting names its security mechanism in clear
# (signature 10 bytes, version 2, mechanism 20 at offset 12)
mechs = set()
for s in streams.values():
    if len(s) >= 32 and s[0] == 0xFF and s[9] == 0x7F:
        mechs.add(s[12:32].rstrip(b"\0").decode("ascii", "replace"))
    elif len(s) >= 32:
        sys.exit("a TCP stream on a mesh port that is not ZMTP: %r" % s[:16])
with open(found_out, "w") as out:
    for n in needles:
        nb = n.encode()
        if nb in raw:
            out.write("%s raw\n" % n)
        if any(nb in s for s in streams.values()):
            out.write("%s decoded\n" % n)
print(mesh_bytes, beacons, ",".join(sorted(mechs)) or "-")
EOF
}

# ---- the pool with an authority ---------------------------------------------
"$AUTH" init "$T/auth" >/dev/null
for k in 1 2 3; do
    make_identity "$T/authority-$k"
    "$AUTH" invite "$T/auth" "$(cat "$T/authority-$k/identity/node.pub")" "op$k" \
        "$T/authority-$k/identity/node.cert"
done
run_pool authority 6100
for k in 1 2 3; do
    grep -q "(authority)" "$T/node$k.log" || fail "node $k did not run with the authority"
done

# ---- the control: an open pool (plaintext links by design) --------------------
run_pool open 6200 --open-pool="capture-$$"

# ---- what the captures show ---------------------------------------------------
read -r bytes_a beacons_a mechs_a < <(analyse authority) || true
read -r bytes_o beacons_o mechs_o < <(analyse open) || true
if [ -z "${mechs_a:-}" ] || [ -z "${mechs_o:-}" ]; then
    fail "the captures could not be analysed"
fi
[ "$bytes_a" -gt "$MIN_MESH_BYTES" ] || fail "authority: only $bytes_a bytes of TCP payload on the mesh ports"
[ "$bytes_o" -gt "$MIN_MESH_BYTES" ] || fail "open: only $bytes_o bytes of TCP payload on the mesh ports"
[ "$beacons_a" -ge 3 ] || fail "authority: only $beacons_a beacons captured on UDP $BEACON_PORT"
[ "$beacons_o" -ge 3 ] || fail "open: only $beacons_o beacons captured on UDP $BEACON_PORT"
ok "captured: authority $bytes_a bytes on the mesh ports + $beacons_a beacons, open $bytes_o bytes + $beacons_o beacons"
ok "every beacon is the 74-byte payload of ms_beacon.h (magic, pool id, protocols, a member's id, a mesh port): no spec"

# control: the open pool's capture shows each needle, raw and decoded
[ "$mechs_o" = NULL ] || fail "control: the open pool's mesh connections use '$mechs_o', not NULL"
for needle in "$SEED" test_accuracy val_accuracy; do
    grep -qx "$needle decoded" "$T/found-open" ||
        fail "control: '$needle' is not in tshark's payloads of the open pool"
done
grep -qx "canary-7f3a9c-spec decoded" "$T/found-open" ||
    fail "control: the canary is not in tshark's payloads of the open pool"
grep -qx "canary-7f3a9c-spec raw" "$T/found-open" ||
    fail "control: the canary is not in the open pool's raw pcap bytes"
ok "control: the open pool's capture (ZMTP NULL) shows the canary, seed $SEED, test_accuracy and val_accuracy"

# with an authority: none of them, anywhere
[ "$mechs_a" = CURVE ] || fail "the authority pool's mesh connections use '$mechs_a', not CURVE only"
if [ -s "$T/found-authority" ]; then
    fail "readable in the authority pool's capture: $(tr '\n' ';' <"$T/found-authority")"
fi
for needle in canary-7f3a9c-spec "$SEED" test_accuracy val_accuracy; do
    if grep -aqF "$needle" "$T/cap-authority.pcap"; then
        fail "'$needle' is in the raw bytes of the authority pool's capture"
    fi
done
ok "with an authority every mesh connection is CURVE: no canary, no seed $SEED, no test_accuracy, no val_accuracy in the capture"
