#!/usr/bin/env bash
# ms_cli_join_test.sh - `meshsweep pool join` on a packaged layout (the
# packaging issue, item 4): no daemon runs here but the short start that
# makes the node's identity, and nothing leaves this machine.
#   1. the data dir comes from meshsweepd's config file: --config FILE, or
#      $MESHSWEEP_CONFIG, with no --data-dir; the certificate (0644) and
#      peers.conf (0644) land in DATA_DIR/identity/, and meshsweepd
#      --check-config with that config lists the joined peers;
#      --data-dir wins over the config; a config without data_dir, or
#      unreadable, or no data dir at all: exit 2 with one line;
#   2. --restart runs `systemctl restart meshsweepd` (a fake systemctl on
#      PATH records its arguments): success says so; a failing systemctl
#      and a missing one are exit 1 with one line saying what failed and
#      that the certificate is installed (it is).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
unset MESHSWEEP_CONFIG

"$MS" pool init --out "$T/auth" >/dev/null
pool_make_identity 1
pool_invite 1 lab
ID1=$(pool_node_id 1)
PEER=$(printf 'ab%.0s' {1..32})@tcp://127.0.0.1:7001
CONF=$T/meshsweepd.conf
printf '# as /etc/meshsweep/meshsweepd.conf\n[meshsweepd]\ndata_dir = %s\nworkers = 1\nno_beacon = true\n' \
    "$T/n1" >"$CONF"

# ---- 1. the data dir from the config file -----------------------------------
"$MS" pool join "$T/n1.cert" --config "$CONF" --peer "$PEER" >"$T/join.out" 2>"$T/join.err" ||
    fail "join --config: $(cat "$T/join.err")"
grep -q "installed as $T/n1/identity/node.cert" "$T/join.out" || fail "join said: $(cat "$T/join.out")"
grep -q "no node is running on $T/n1" "$T/join.out" || fail "join said: $(cat "$T/join.out")"
[ "$(stat -c %a "$T/n1/identity/node.cert")" = 644 ] || fail "node.cert mode"
[ "$(stat -c %a "$T/n1/identity/peers.conf")" = 644 ] || fail "peers.conf mode"
grep -qx "peer = $PEER" "$T/n1/identity/peers.conf" || fail "peers.conf: $(cat "$T/n1/identity/peers.conf")"
"$MSD" --config "$CONF" --check-config >"$T/cc.out" 2>"$T/cc.err" || fail "check-config: $(cat "$T/cc.err")"
grep -q "^peer *= $PEER # $T/n1/identity/peers.conf$" "$T/cc.out" ||
    fail "the packaged node does not pick up the joined peer: $(cat "$T/cc.out")"
# $MESHSWEEP_CONFIG, no option at all (the one command of docs/TRUST.md)
rm "$T/n1/identity/node.cert" "$T/n1/identity/peers.conf"
MESHSWEEP_CONFIG=$CONF "$MS" pool join "$T/n1.cert" --peer "$PEER" --json >"$T/join.json" 2>"$T/join.err" ||
    fail "join with MESHSWEEP_CONFIG: $(cat "$T/join.err")"
[ "$(ms_json_get "$T/join.json" 'd["certificate"]')" = "$T/n1/identity/node.cert" ] ||
    fail "join --json: $(cat "$T/join.json")"
[ "$(ms_json_get "$T/join.json" 'd["node_id"]')" = "$ID1" ] || fail "node id: $(cat "$T/join.json")"
[ -s "$T/n1/identity/peers.conf" ] || fail "no peers.conf"
# --data-dir wins over the config
printf 'data_dir = %s/nowhere\n' "$T" >"$T/other.conf"
"$MS" pool join "$T/n1.cert" --config "$T/other.conf" --data-dir "$T/n1" >/dev/null 2>"$T/join.err" ||
    fail "--data-dir did not win: $(cat "$T/join.err")"
# errors: one line, exit 2
ms_expect_exit 2 "$T/e1" "$MS" pool join "$T/n1.cert" --config "$T/other.conf"
ms_one_error_line "$T/e1" "nowhere/identity/node.pub: no node identity here"
printf 'workers = 1\n' >"$T/nodir.conf"
ms_expect_exit 2 "$T/e2" "$MS" pool join "$T/n1.cert" --config "$T/nodir.conf"
ms_one_error_line "$T/e2" "nodir.conf: sets no data_dir: give --data-dir DIR"
ms_expect_exit 2 "$T/e3" "$MS" pool join "$T/n1.cert" --config "$T/missing.conf"
ms_one_error_line "$T/e3" "missing.conf: cannot read meshsweepd's config"
printf 'data_dir\n' >"$T/junk.conf"
ms_expect_exit 2 "$T/e4" "$MS" pool join "$T/n1.cert" --config "$T/junk.conf"
ms_one_error_line "$T/e4" "junk.conf: line 1: not INI"
if [ ! -e /etc/meshsweep/meshsweepd.conf ]; then
    ms_expect_exit 2 "$T/e5" "$MS" pool join "$T/n1.cert"
    ms_one_error_line "$T/e5" "--data-dir: required: .*/etc/meshsweep/meshsweepd.conf does not exist"
    nodefault="; with no config at all, a usage error"
else
    nodefault=" (/etc/meshsweep/meshsweepd.conf exists here: the no-config case not checked)"
fi
ok "pool join takes the data dir from --config or \$MESHSWEEP_CONFIG (certificate and peers.conf 0644 in identity/; check-config of that config lists the peer); --data-dir wins; bad configs: one line$nodefault"

# ---- 2. --restart ------------------------------------------------------------
mkdir -p "$T/bin" "$T/empty"
cat >"$T/bin/systemctl" <<SH
#!/bin/sh
echo "\$*" >>"$T/systemctl.args"
exit \${FAKE_SYSTEMCTL_RC:-0}
SH
chmod +x "$T/bin/systemctl"
rm -f "$T/n1/identity/node.cert"
PATH=$T/bin:$PATH "$MS" pool join "$T/n1.cert" --config "$CONF" --restart >"$T/r.out" 2>"$T/r.err" ||
    fail "join --restart with a working systemctl: $(cat "$T/r.err")"
[ "$(cat "$T/systemctl.args")" = "restart meshsweepd" ] || fail "systemctl got: $(cat "$T/systemctl.args")"
grep -q "meshsweepd restarted (systemctl restart meshsweepd)" "$T/r.out" || fail "join said: $(cat "$T/r.out")"
rm -f "$T/n1/identity/node.cert"
FAKE_SYSTEMCTL_RC=5 PATH=$T/bin:$PATH ms_expect_exit 1 "$T/r2" "$MS" pool join "$T/n1.cert" --config "$CONF" --restart
ms_one_error_line "$T/r2" "systemctl restart meshsweepd: failed \(status 5\); the certificate is installed"
[ -s "$T/n1/identity/node.cert" ] || fail "the certificate was not installed"
[ "$(grep -c '' "$T/systemctl.args")" = 2 ] || fail "systemctl not run twice: $(cat "$T/systemctl.args")"
rm -f "$T/n1/identity/node.cert"
PATH=$T/empty ms_expect_exit 1 "$T/r3" "$MS" pool join "$T/n1.cert" --config "$CONF" --restart
ms_one_error_line "$T/r3" "systemctl restart meshsweepd: cannot run systemctl: .*the certificate is installed"
[ -s "$T/n1/identity/node.cert" ] || fail "the certificate was not installed"
ok "--restart runs 'systemctl restart meshsweepd'; its failure (status 5) and its absence: exit 1, one line, certificate installed"
