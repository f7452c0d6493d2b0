#!/usr/bin/env bash
# ms_pool_encrypted_test.sh - mesh traffic is encrypted in a pool with an
# authority (CURVE), and plaintext in an open pool (the control that shows
# the check can fail). Two real daemons on loopback (--no-beacon) reach
# each other only through a small TCP relay that records every byte both
# ways (no capture privileges needed; tshark on the mesh ports sees the
# same bytes). A sweep whose name is a distinctive string runs across the
# two; the recording must not contain that name or a result field with an
# authority, and must contain both in the open pool.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
AUTH=${MESHSWEEP_TEST_AUTHORITY:-}
[ -x "$AUTH" ] || { echo "ms_test_authority not built: skipped"; exit 77; }
ms_tiny_dataset --train 600 --test 100

cat >"$T/relay.py" <<'PY'
# relay.py LISTEN_PORT TARGET_PORT CAPTURE: forward loopback TCP, record
# every byte both ways into CAPTURE.
import asyncio, sys
listen, target, capture = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
out = open(capture, "ab", buffering=0)
async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            out.write(data)
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        writer.close()
async def handle(cr, cw):
    try:
        sr, sw = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        cw.close()
        return
    await asyncio.gather(pipe(cr, sw), pipe(sr, cw))
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()
asyncio.run(main())
PY

CANARY="zebra-canary-$$-plaintext"
# the spec; test_accuracy is a field of every result record
spec() {
    cat <<Y
name: $CANARY-$1
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2]}
  seed:          {values: [1, 2, 3]}
  width:         {value: 16}
  epochs:        {value: 2}
  batch_size:    {value: 50}
Y
}

# run_pair A B MODE - nodes A and B (data dirs nA, nB) linked only through
# relays (their static peers point at the relays), a sweep submitted to A;
# the relays' recording is $T/capture-MODE.
run_pair() {
    local a=$1 b=$2 mode=$3 ra rb args=()
    POOL_MESH[$a]=$(pool_free_port)
    POOL_MESH[$b]=$(pool_free_port)
    ra=$(pool_free_port)
    rb=$(pool_free_port)
    ms_spawn "$T/relay$a.log" python3 "$T/relay.py" "$ra" "${POOL_MESH[$a]}" "$T/capture-$mode"
    ms_spawn "$T/relay$b.log" python3 "$T/relay.py" "$rb" "${POOL_MESH[$b]}" "$T/capture-$mode"
    if [ "$mode" = authority ]; then
        args=()
    else
        args=(--open-pool="enc-$$")
    fi
    pool_start "$a" - "$T/n$a" --no-beacon --mesh-port "${POOL_MESH[$a]}" \
        --peer "$(pool_node_id "$b")@tcp://127.0.0.1:$rb" \
        --workers 1 "${POOL_TIMES[@]}" "${args[@]}"
    pool_start "$b" - "$T/n$b" --no-beacon --mesh-port "${POOL_MESH[$b]}" \
        --peer "$(pool_node_id "$a")@tcp://127.0.0.1:$ra" \
        --workers 1 "${POOL_TIMES[@]}" "${args[@]}"
    pool_wait_alive 15 1 "$a" "$b" || fail "$mode: the two nodes did not link through the relays"
    spec "$mode" >"$T/spec-$mode.yaml"
    local sweep
    sweep=$(pool_submit "$a" "$T/spec-$mode.yaml")
    both() { pool_finished "$a" "$1" && pool_finished "$b" "$1"; }
    ms_wait_until 60 both "$sweep" || { pool_dump "$sweep" "$a" "$b"; fail "$mode: the sweep did not finish on both"; }
    ms_wait_until 10 pool_same_digest "$sweep" "$a" "$b" || fail "$mode: tables differ"
    local rows
    rows=$(pool_cli "$b" results "$sweep" --format csv | tail -n +2 | wc -l)
    [ "$rows" -ge 6 ] || fail "$mode: node $b has $rows rows"
    pool_kill "$a" TERM
    pool_kill "$b" TERM
    pool_reap "$a"
    pool_reap "$b"
}

# identities (a short start each), certificates for the authority pair
for k in 1 2 3 4; do pool_make_identity "$k"; done
"$AUTH" init "$T/auth" >/dev/null
for k in 1 2; do
    "$AUTH" invite "$T/auth" "$(pool_node_id "$k")" "op$k" "$T/n$k/identity/node.cert"
done

run_pair 1 2 authority
run_pair 3 4 open
bytes_a=$(stat -c %s "$T/capture-authority")
bytes_o=$(stat -c %s "$T/capture-open")
[ "$bytes_a" -gt 10000 ] || fail "the authority pair's relays saw only $bytes_a bytes"
[ "$bytes_o" -gt 10000 ] || fail "the open pair's relays saw only $bytes_o bytes"

# control: the open pool's traffic shows the spec and the results
grep -aq "$CANARY-open" "$T/capture-open" || fail "control: the spec name is not in the open pool's traffic"
grep -aq "test_accuracy" "$T/capture-open" || fail "control: no result field in the open pool's traffic"
ok "control: the open pool's mesh traffic ($bytes_o bytes) shows the spec name and result fields"

# with an authority: neither
if grep -aq "$CANARY" "$T/capture-authority"; then
    fail "the spec name is readable in the authority pool's traffic"
fi
if grep -aq "test_accuracy" "$T/capture-authority"; then
    fail "a result field is readable in the authority pool's traffic"
fi
grep -aq "CURVE" "$T/capture-authority" || fail "no CURVE handshake in the authority pool's traffic"
ok "with an authority the mesh traffic ($bytes_a bytes) is CURVE: no spec name, no result field in clear"
