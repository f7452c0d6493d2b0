#!/usr/bin/env bash
# ms_keyfiles_test - the node's key files (issue 4: "Key files are 0600 and
# a node refuses to start with a world-readable secret key"):
#   1. a first start makes identity/ 0700 and node.key 0600 (node.pub 0644);
#   2. node.key made readable by group or others: meshsweepd refuses to
#      start, exit 2 (bad input), with one line naming the file and the fix, and the
#      key file is left as it was (not rewritten, not replaced);
#   3. a node.key of the wrong size is refused the same way;
#   4. back to 0600: the node starts with the same node id;
#   5. an --enroll-key file that does not exist stops the start (exit 2).
# Daemons run with --no-beacon and --mesh-port 0 (nothing leaves loopback).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }

D=$T/node
ms_start_daemon "$D" --no-beacon --mesh-port 0 --workers 1 --open-pool=keys
id1=$(cat "$D/identity/node.pub")
kill -TERM "$DAEMON_PID"
ms_wait_exit "$DAEMON_PID" 20 || fail "meshsweepd did not stop on SIGTERM"

mode() { stat -c '%a' "$1"; }
[ "$(mode "$D/identity")" = 700 ] || fail "identity dir is $(mode "$D/identity"), want 700"
[ "$(mode "$D/identity/node.key")" = 600 ] || fail "node.key is $(mode "$D/identity/node.key"), want 600"
[ "$(mode "$D/identity/node.pub")" = 644 ] || fail "node.pub is $(mode "$D/identity/node.pub")"
[ "$(stat -c '%s' "$D/identity/node.key")" = 64 ] || fail "node.key is not 64 bytes"
ok "first start: identity/ 0700, node.key 0600 (64 bytes), node.pub 0644"

sum_before=$(sha256sum "$D/identity/node.key" | cut -d' ' -f1)
for m in 644 640 604; do
    chmod "$m" "$D/identity/node.key"
    rc=0
    timeout 20 "$MSD" --data-dir "$D" --api 127.0.0.1:0 --no-beacon --mesh-port 0 \
        --workers 1 --open-pool=keys >"$T/start$m.out" 2>"$T/start$m.err" || rc=$?
    [ "$rc" = 2 ] || { cat "$T/start$m.err" >&2; fail "mode $m: exit $rc, want 2 (bad input)"; }
    grep -q 'node.key' "$T/start$m.err" || { cat "$T/start$m.err" >&2; fail "mode $m: error does not name node.key"; }
    grep -q 'readable by others' "$T/start$m.err" || { cat "$T/start$m.err" >&2; fail "mode $m: error does not say why"; }
    grep -q 'chmod 600' "$T/start$m.err" || fail "mode $m: error gives no fix"
    [ "$(grep -c 'readable by others' "$T/start$m.err")" = 1 ] || fail "mode $m: more than one error line"
    [ "$(mode "$D/identity/node.key")" = "$m" ] || fail "mode $m: the key file's mode was changed"
    [ "$(sha256sum "$D/identity/node.key" | cut -d' ' -f1)" = "$sum_before" ] || fail "mode $m: key rewritten"
done
ok "node.key of mode 644, 640 or 604: refused at start (exit 2, one line naming the file and 'chmod 600'); key untouched"

cp "$D/identity/node.key" "$T/key.bak"
head -c 32 "$T/key.bak" >"$D/identity/node.key"
chmod 600 "$D/identity/node.key"
rc=0
timeout 20 "$MSD" --data-dir "$D" --api 127.0.0.1:0 --no-beacon --mesh-port 0 \
    --workers 1 --open-pool=keys >/dev/null 2>"$T/short.err" || rc=$?
[ "$rc" = 2 ] || { cat "$T/short.err" >&2; fail "a 32-byte node.key: exit $rc, want 2"; }
grep -q '32 bytes, expected 64' "$T/short.err" || { cat "$T/short.err" >&2; fail "short key: no clear reason"; }
ok "a node.key of the wrong size: refused at start with its size"

cp "$T/key.bak" "$D/identity/node.key"
chmod 600 "$D/identity/node.key"
ms_start_daemon "$D" --no-beacon --mesh-port 0 --workers 1 --open-pool=keys
[ "$(cat "$D/identity/node.pub")" = "$id1" ] || fail "node id changed"
"$MS" peers --node "$NODE" >/dev/null || fail "the node does not answer"
kill -TERM "$DAEMON_PID"
ms_wait_exit "$DAEMON_PID" 20 || fail "meshsweepd did not stop"
ok "back to 0600: the node starts with the same id ${id1:0:12}"

# An enrollment kit path that does not exist: refused at start, not a node
# left quietly outside its pool.
rc=0
timeout 20 "$MSD" --data-dir "$T/n2" --api 127.0.0.1:0 --no-beacon --mesh-port 0 \
    --workers 1 --enroll-key "$T/no-such.enroll" >/dev/null 2>"$T/enroll.err" || rc=$?
[ "$rc" = 2 ] || { cat "$T/enroll.err" >&2; fail "a missing --enroll-key file: exit $rc, want 2"; }
grep -q 'no-such.enroll: no such enrollment key file' "$T/enroll.err" ||
    { cat "$T/enroll.err" >&2; fail "a missing --enroll-key file: no clear reason"; }
ok "a missing --enroll-key file: refused at start with its path"
