#!/usr/bin/env bash
# ms_cli_trust_test - meshsweep pool init | invite | join | enroll | revoke |
# show on files, with no daemon: file modes, certificates that load and
# verify, refusals of bad input (exit 2, one error line), join installing a
# certificate and signalling the holder of DATA_DIR/node.lock (a small
# stand-in process, not a real node), and never a stale pid.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$T"

mode() { stat -c %a "$1"; }
json() { ms_json_get "$1" "$2"; }
# new_node DIR - a data dir with a node identity (only node.pub is read).
new_node() {
    mkdir -p "$1/identity"
    python3 -c 'import os; print(os.urandom(32).hex())' >"$1/identity/node.pub"
}

# ---- help ------------------------------------------------------------
"$MS" --help | grep -q ' pool ' || fail "meshsweep --help does not list pool"
"$MS" pool --help | grep -q 'revoke' || fail "pool --help"
for sub in init invite join enroll revoke clear publish show; do
    "$MS" pool $sub --help | grep -q "usage: meshsweep pool $sub" ||
        fail "pool $sub --help has no usage line"
done
"$MS" pool revoke --help | grep -q 'api/v1/authority' ||
    fail "pool revoke --help does not say how the item reaches the pool"
ms_expect_exit 2 e "$MS" pool
ms_expect_exit 2 e "$MS" pool frob
ms_one_error_line e 'frob'
ok "help"

# ---- init --------------------------------------------------------------
A=$T/auth
"$MS" pool init --out "$A" --json >init.json
[ "$(mode "$A")" = 700 ] || fail "authority dir mode $(mode "$A")"
[ "$(mode "$A/authority.key")" = 600 ] || fail "authority.key mode $(mode "$A/authority.key")"
[ "$(stat -c %s "$A/authority.key")" = 64 ] || fail "authority.key size"
AUTH_KEY=$(json init.json 'd["authority_key"]')
POOL_ID=$(json init.json 'd["pool_id"]')
[ "$(cat "$A/authority.pub")" = "$AUTH_KEY" ] || fail "authority.pub"
[ "$(json "$A/pool.json" 'd["pool_id"]')" = "$POOL_ID" ] || fail "pool.json"
"$MS" pool init --out "$T/auth-text" >init.txt
grep -q 'offline' init.txt || fail "init does not advise keeping the authority offline"
ms_expect_exit 2 e "$MS" pool init --out "$A"
ms_one_error_line e 'not empty'
ok "init: 0700 dir, 0600 key, pool id $POOL_ID"

# ---- invite --------------------------------------------------------------
new_node node1
new_node node2
N1=$(cat node1/identity/node.pub)
N2=$(cat node2/identity/node.pub)
"$MS" pool invite "$N1" --operator alice --authority "$A" --out n1.cert --json >inv1.json
# an existing certificate file is never overwritten (it may be another node's)
sum=$(sha256sum n1.cert)
ms_expect_exit 2 e "$MS" pool invite "$N2" --operator bob --authority "$A" --out n1.cert
grep -q 'exists already; not overwritten' e || fail "invite over an existing file: $(cat e)"
[ "$(sha256sum n1.cert)" = "$sum" ] || fail "invite overwrote n1.cert"
[ "$(json inv1.json 'd["roles"]')" = worker ] || fail "default roles"
"$MS" pool show n1.cert --json >show1.json
[ "$(json show1.json 'd["valid"]')" = True ] || fail "the invited certificate does not verify"
[ "$(json show1.json 'd["node_id"]')" = "$N1" ] || fail "show: node id"
[ "$(json show1.json 'd["pool_id"]')" = "$POOL_ID" ] || fail "show: pool id"
[ "$(json show1.json 'd["operator"]')" = alice ] || fail "show: operator"
# The authority from the environment; roles, cap and a date; serials grow.
MESHSWEEP_AUTHORITY=$A "$MS" pool invite "$N2" --operator bob \
    --roles worker,submit --max-workers 4 --expires 2099-12-31 --out n2.cert \
    --json >inv2.json
[ "$(json inv2.json 'd["roles"]')" = worker,submit ] || fail "roles worker,submit"
[ "$(json inv2.json 'd["max_workers"]')" = 4 ] || fail "max workers"
[ "$(json inv2.json 'd["expires"]')" = 2099-12-31T23:59:59Z ] || fail "a date expires at the end of that day"
[ "$(json inv2.json 'd["serial"]')" -gt "$(json inv1.json 'd["serial"]')" ] || fail "serials do not grow"
"$MS" pool invite "$N2" --operator bob --authority "$A" --expires 90d --out n2b.cert --json >inv3.json
python3 - inv3.json <<'EOF' || fail "--expires 90d"
import datetime, json, sys
exp = datetime.datetime.strptime(json.load(open(sys.argv[1]))["expires"], "%Y-%m-%dT%H:%M:%SZ")
days = (exp - datetime.datetime.utcnow()).total_seconds() / 86400
sys.exit(0 if 89.9 < days < 90.1 else 1)
EOF
# Default output file, named after the node.
"$MS" pool invite "$N1" --operator alice --authority "$A" >/dev/null
[ -f "${N1:0:12}.cert" ] || fail "invite did not write ${N1:0:12}.cert"
ok "invite: certificates verify; roles, cap, expiry, serials"

# Bad NODE_ID, DATE, role, operator: exit 2 with one line; no file.
ms_expect_exit 2 e "$MS" pool invite "${N1:0:16}" --operator a --authority "$A" --out bad.cert
ms_one_error_line e 'whole node id'
ms_expect_exit 2 e "$MS" pool invite "zz${N1:2}" --operator a --authority "$A" --out bad.cert
ms_one_error_line e 'not a node id'
ms_expect_exit 2 e "$MS" pool invite "$N1" --operator a --authority "$A" --expires 2026-02-30 --out bad.cert
ms_one_error_line e '--expires.*2026-02-30'
ms_expect_exit 2 e "$MS" pool invite "$N1" --operator a --authority "$A" --expires tomorrow --out bad.cert
ms_one_error_line e '--expires'
ms_expect_exit 2 e "$MS" pool invite "$N1" --operator a --authority "$A" --expires 2001-01-01 --out bad.cert
ms_one_error_line e 'in the past'
ms_expect_exit 2 e "$MS" pool invite "$N1" --operator a --authority "$A" --roles worker,admin --out bad.cert
ms_one_error_line e "--roles.*admin"
ms_expect_exit 2 e "$MS" pool invite "$N1" --operator a --authority "$A" --roles enroll --out bad.cert
ms_one_error_line e 'pool enroll'
ms_expect_exit 2 e "$MS" pool invite "$N1" --authority "$A" --out bad.cert
ms_one_error_line e '--operator'
ms_expect_exit 2 e "$MS" pool invite "$N1" --operator "$(printf 'a\tb')" --authority "$A" --out bad.cert
ms_one_error_line e '--operator'
ms_expect_exit 2 e "$MS" pool invite "$N1" --operator a --authority "$T/none" --out bad.cert
ms_one_error_line e 'no pool authority'
[ ! -e bad.cert ] || fail "a refused invite wrote a file"
ok "invite refuses bad node ids, dates, roles, operators, authorities"

# ---- join ------------------------------------------------------------------
# Not running: installed, takes effect at the next start; peers written.
"$MS" pool join n1.cert --data-dir node1 --peer "$N2@tcp://127.0.0.1:5871" >join1.txt
grep -q 'next start' join1.txt || fail "join without a node does not say when it takes effect"
cmp -s n1.cert node1/identity/node.cert || fail "node.cert differs from the invite's file"
[ "$(mode node1/identity/node.cert)" = 644 ] || fail "node.cert mode $(mode node1/identity/node.cert)"
grep -qx "peer = $N2@tcp://127.0.0.1:5871" node1/identity/peers.conf || fail "peers.conf"
ms_expect_exit 2 e "$MS" pool join n1.cert --data-dir node1 --peer tcp://127.0.0.1:5871
ms_one_error_line e 'node id'
ms_expect_exit 2 e "$MS" pool join n1.cert --data-dir node1 --peer "$N2@tcp://127.0.0.1:99999"
ms_one_error_line e 'HOST:PORT'
ms_expect_exit 2 e "$MS" pool join n1.cert
ms_one_error_line e '--data-dir'

# A certificate for another node.
ms_expect_exit 2 e "$MS" pool join n1.cert --data-dir node2
ms_one_error_line e "n1.cert: certifies node ${N1:0:12}.*${N2:0:12}"
[ ! -e node2/identity/node.cert ] || fail "join installed another node's certificate"
# No identity at all.
mkdir -p empty
ms_expect_exit 2 e "$MS" pool join n1.cert --data-dir empty
ms_one_error_line e 'no node identity'

# One byte changed in the certificate's base64 (each position of a sample).
for at in 120 200 300; do
    python3 - n2.cert forged.cert "$at" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
i = int(sys.argv[3])
b[i] = ord("A") if b[i] != ord("A") else ord("B")
open(sys.argv[2], "wb").write(b)
EOF
    ms_expect_exit 2 e "$MS" pool join forged.cert --data-dir node2
    ms_one_error_line e 'forged.cert'
    rc=0
    "$MS" pool show forged.cert >/dev/null 2>&1 || rc=$?
    [ "$rc" != 0 ] || fail "pool show calls a changed certificate valid (byte $at)"
done
# A certificate of another authority presented under this pool's key.
B=$T/auth-b
"$MS" pool init --out "$B" >/dev/null
"$MS" pool invite "$N2" --operator mallory --authority "$B" --out other.cert >/dev/null
awk -v k="$AUTH_KEY" '{ $2 = k; print }' other.cert >spliced.cert
ms_expect_exit 2 e "$MS" pool join spliced.cert --data-dir node2
ms_one_error_line e "spliced.cert"
[ ! -e node2/identity/node.cert ] || fail "join installed a forged certificate"
ok "join: installs (0644) and writes peers; refuses another node's, changed and forged certificates"

# A running node: the holder of the fcntl lock on node.lock (as meshsweepd
# holds it, pid written inside) gets SIGHUP.
cat >holder.py <<'EOF'
import fcntl, os, signal, sys, time
lock, marker, ready = sys.argv[1:4]
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.ftruncate(fd, 0)
os.write(fd, b"%d\n" % os.getpid())
def on_hup(*_):
    with open(marker, "a") as f:
        f.write("hup\n")
signal.signal(signal.SIGHUP, on_hup)
open(ready, "w").write("ready\n")
for _ in range(600):
    time.sleep(0.1)
EOF
ms_spawn "$T/holder.log" python3 holder.py node2/node.lock "$T/hup.marker" "$T/holder.ready"
HOLDER=$SPAWNED
ms_wait_until 20 test -f "$T/holder.ready" || fail "the lock holder did not start"
"$MS" pool join n2.cert --data-dir node2 --json >join2.json
[ "$(json join2.json 'd["pid"]')" = "$HOLDER" ] || fail "join signalled pid $(json join2.json 'd["pid"]'), not $HOLDER"
[ "$(json join2.json 'd["node"]')" = signalled ] || fail "join2: not signalled"
ms_wait_until 10 test -s "$T/hup.marker" || fail "the running node got no SIGHUP"
cmp -s n2.cert node2/identity/node.cert || fail "node2's certificate not installed"
# A valid certificate of another pool while the node runs: refused, the
# node's certificate left as it was (a running node does not change pools).
ms_expect_exit 2 e "$MS" pool join other.cert --data-dir node2
ms_one_error_line e "a running node does not change pools"
cmp -s n2.cert node2/identity/node.cert || fail "join replaced a running node's certificate by another pool's"
kill "$HOLDER"
ok "join signals the running node (pid $HOLDER) with SIGHUP; refuses another pool's certificate while it runs"

# A stale node.lock (no lock held) naming a live process: never signalled.
ms_spawn "$T/sleeper.log" bash -c "trap 'echo hup >$T/stale.marker' HUP; while :; do sleep 0.2; done"
SLEEPER=$SPAWNED
echo "$SLEEPER" >node1/node.lock
"$MS" pool join n1.cert --data-dir node1 >join3.txt
grep -q 'next start' join3.txt || fail "join with a stale lock file: $(cat join3.txt)"
sleep 1
[ ! -e "$T/stale.marker" ] || fail "join signalled the pid of a stale node.lock"
kill "$SLEEPER"
ok "a stale node.lock pid is not signalled"

# --restart runs `systemctl restart meshsweepd` (a stand-in on PATH).
mkdir -p bin
printf '#!/bin/sh\necho "$@" >"%s/systemctl.args"\n' "$T" >bin/systemctl
chmod +x bin/systemctl
PATH=$T/bin:$PATH "$MS" pool join n1.cert --data-dir node1 --restart >/dev/null
[ "$(cat systemctl.args)" = "restart meshsweepd" ] || fail "--restart ran systemctl $(cat systemctl.args)"
ok "join --restart runs systemctl restart meshsweepd"

# ---- enroll ----------------------------------------------------------------
"$MS" pool enroll --operator lab --roles worker,submit --authority "$A" --out kit.enroll --json >enr.json
[ "$(mode kit.enroll)" = 600 ] || fail "enrollment kit mode $(mode kit.enroll)"
head -c 20 kit.enroll | grep -q '^meshsweep-enroll-v1 ' || fail "kit format"
"$MS" pool show kit.enroll --json >showk.json
[ "$(json showk.json 'd["valid"]')" = True ] || fail "the enrollment kit does not verify"
[ "$(json showk.json 'd["roles"]')" = worker,submit,enroll ] || fail "kit roles $(json showk.json 'd["roles"]')"
[ "$(json showk.json 'd["enroll_key"]')" = "$(json enr.json 'd["enroll_key"]')" ] || fail "kit key"
grep -q "$(json enr.json 'd["enroll_key"]')" showk.json || fail "kit key"
! grep -qi secret showk.json || fail "show printed something secret"
ms_expect_exit 2 e "$MS" pool enroll --operator lab --authority "$A" --out kit.enroll
ms_one_error_line e 'exists'
ms_expect_exit 2 e "$MS" pool enroll --operator lab --authority "$A"
ms_one_error_line e '--out'
ok "enroll: kit 0600, verifies, roles + enroll"

# ---- revoke ----------------------------------------------------------------
(cd node1 && "$MS" pool revoke "$N1" --authority "$A" >../rev.txt)
S1=$(cat "$A/serial")
[ -f "node1/${N1:0:12}-$S1.revoke" ] || fail "revoke did not write ${N1:0:12}-$S1.revoke"
grep -q 'meshsweep pool publish' rev.txt || fail "revoke does not say how the item reaches the pool"
"$MS" pool show "node1/${N1:0:12}-$S1.revoke" --json >showr.json
[ "$(json showr.json 'd["valid"]')" = True ] || fail "revocation does not verify"
[ "$(json showr.json 'd["kind"]')" = revoke ] || fail "kind"
[ "$(json showr.json 'd["cut"]')" = all ] || fail "default cut"
[ "$(json showr.json 'd["subject"]')" = "$N1" ] || fail "subject"
"$MS" pool revoke "$N2" --authority "$A" --cut 00000000000000ff:10,0000000000000001:5 --out r2.revoke --json >r2.json
[ "$(json r2.json '[c["incarnation"] for c in d["cut"]]')" = "['0000000000000001', '00000000000000ff']" ] ||
    fail "cut entries not in order"
[ "$(json r2.json 'd["serial"]')" -gt "$(json enr.json 'd["serial"]')" ] || fail "revocation serial"
ms_expect_exit 2 e "$MS" pool revoke "$N2" --authority "$A" --cut 1:2 --out r3.revoke
ms_one_error_line e '--cut'
ms_expect_exit 2 e "$MS" pool revoke "${N2:0:20}" --authority "$A"
ms_one_error_line e 'whole node id'
# One byte changed in a revocation: refused.
python3 - r2.revoke r2bad.revoke <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[100] = ord("A") if b[100] != ord("A") else ord("B")
open(sys.argv[2], "wb").write(b)
EOF
rc=0
"$MS" pool show r2bad.revoke >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a changed revocation is called valid"
ok "revoke: signed items that verify; cut lists; refusals"

# ---- serials, output files, --cut syntax (clear and revoke) --------------
INC=00000000000000a1
serial() { cat "$A/serial"; }
# A failed write uses no serial; no two items share one.
before=$(serial)
ms_expect_exit 1 e "$MS" pool clear "$N2" --authority "$A" --cut "$INC:3" --out /nonexistent/dir/w.clear
grep -q 'w.clear' e || fail "clear to a missing dir: $(cat e)"
ms_expect_exit 1 e "$MS" pool revoke "$N2" --authority "$A" --out /nonexistent/dir/w.revoke
ms_expect_exit 1 e "$MS" pool invite "$N2" --operator bob --authority "$A" --out /nonexistent/dir/w.cert
[ "$(serial)" = "$before" ] || fail "failed writes used serials: $before -> $(serial)"
# Default names carry the serial: two clears of one node, two files.
mkdir -p items
(cd items && "$MS" pool clear "$N2" --authority "$A" --cut "$INC:3" --json >../c1.json 2>../c1.err)
(cd items && "$MS" pool clear "$N2" --authority "$A" --cut "$INC:4" --json >../c2.json 2>/dev/null)
(cd items && "$MS" pool revoke "$N2" --authority "$A" --json >../r4.json)
s1=$(json c1.json 'd["serial"]')
s2=$(json c2.json 'd["serial"]')
s3=$(json r4.json 'd["serial"]')
[ "$s1" = $((before + 1)) ] && [ "$s2" = $((before + 2)) ] && [ "$s3" = $((before + 3)) ] ||
    fail "serials after failures: $before then $s1 $s2 $s3"
for f in "${N2:0:12}-$s1.clear" "${N2:0:12}-$s2.clear" "${N2:0:12}-$s3.revoke"; do
    [ -f "items/$f" ] || fail "no items/$f: $(ls items)"
done
"$MS" pool show "items/${N2:0:12}-$s1.clear" --json >sc1.json
[ "$(json sc1.json 'd["cut"][0]["max_seq"]')" = 3 ] || fail "the first clear was overwritten"
# Offline signing says, in one line, that nothing was checked.
[ "$(grep -c '' c1.err)" = 1 ] && grep -q 'warning: .*nothing checked' c1.err ||
    fail "offline clear warning: $(cat c1.err)"
# An existing --out is refused (an item may already be published); --force replaces it.
sum=$(sha256sum r2.revoke)
ms_expect_exit 2 e "$MS" pool revoke "$N2" --authority "$A" --out r2.revoke
ms_one_error_line e 'r2.revoke: exists already.*--force'
ms_expect_exit 2 e "$MS" pool clear "$N2" --authority "$A" --cut "$INC:3" --out "items/${N2:0:12}-$s1.clear"
ms_one_error_line e 'exists already'
[ "$(sha256sum r2.revoke)" = "$sum" ] || fail "revoke overwrote r2.revoke"
"$MS" pool revoke "$N2" --authority "$A" --out r2.revoke --force >/dev/null
[ "$(sha256sum r2.revoke)" != "$sum" ] || fail "--force did not replace r2.revoke"
"$MS" pool clear --help | grep -q -- '--force' || fail "pool clear --help has no --force"
"$MS" pool revoke --help | grep -q -- '--force' || fail "pool revoke --help has no --force"
# --cut: strict, with messages that fit the command.
n=$(serial)
for bad in "$INC:9," ",$INC:9" "$INC:9,,00000000000000b2:1" "$INC:0" "$INC:" "$INC:-1" "${INC:1}:5" "$INC:5x"; do
    for cmd in clear revoke; do
        ms_expect_exit 2 e "$MS" pool $cmd "$N2" --authority "$A" --cut "$bad" --out bad.item
        ms_one_error_line e "^meshsweep: --cut: "
        if [ $cmd = clear ]; then ! grep -q "all" e || fail "clear mentions all: $(cat e)"; fi
    done
done
ms_expect_exit 2 e "$MS" pool clear "$N2" --authority "$A" --cut ""
ms_one_error_line e '--cut: empty: expected INCARNATION:SEQ'
! grep -q all e || fail "clear --cut '' mentions all: $(cat e)"
ms_expect_exit 2 e "$MS" pool revoke "$N2" --authority "$A" --cut ""
ms_one_error_line e '--cut: empty: expected all, or INCARNATION:SEQ'
ms_expect_exit 2 e "$MS" pool revoke "$N2" --authority "$A" --cut "all,$INC:3"
ms_one_error_line e "'all' stands alone"
ms_expect_exit 2 e "$MS" pool clear "$N2" --authority "$A" --cut "$INC:3,all"
ms_one_error_line e "not 'all'"
ms_expect_exit 2 e "$MS" pool revoke "$N2" --authority "$A" --cut "$INC:3,$INC:4"
ms_one_error_line e 'given twice'
[ ! -e bad.item ] || fail "a refused --cut wrote a file"
[ "$(serial)" = "$n" ] || fail "refused --cut values used serials"
"$MS" pool revoke "$N2" --authority "$A" --cut "$INC:9" --out r9.revoke >r9.txt
grep -q "(cut $INC:9, serial" r9.txt || fail "revoke echoes its cut wrong: $(cat r9.txt)"
# Missing arguments: one line each.
for sub in clear revoke show; do
    ms_expect_exit 2 e "$MS" pool $sub
    ms_one_error_line e "pool $sub: missing"
done
ok "serials survive failed writes; default names carry the serial; --out not overwritten without --force; strict --cut"

# ---- pool clear --node: standing and log view checked --------------------
# A stand-in API on loopback: N1 quarantined, N2 not, a third node unknown;
# each has log incarnation $INC up to seq 7. It records what is published.
N3=$(python3 -c 'import os; print(os.urandom(32).hex())')
cat >api.py <<'PYEOF'
import http.server, json, os, sys
n1, n2, portfile, posted = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, code, doc):
        b = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/api/v1/status":
            return self.reply(200, {"verification": {"nodes": [
                {"node": n1, "counted": 3, "strikes": 4, "quarantined": True},
                {"node": n2, "counted": 9, "strikes": 0, "quarantined": False}]}})
        if self.path.startswith("/api/v1/logs/"):
            node = self.path.rsplit("/", 1)[1]
            return self.reply(200, {"node": node, "cut": [
                {"incarnation": "00000000000000a1", "max_seq": 7}]})
        self.reply(404, {"error": "no"})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        open(posted, "a").write(self.path + "\n")
        self.reply(200, {"digest": "00" * 32, "new": True})
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(portfile + ".tmp", "w").write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.timeout = 0.5
for _ in range(1200):
    s.handle_request()
PYEOF
ms_spawn "$T/api.log" python3 api.py "$N1" "$N2" "$T/api.port" "$T/posted"
ms_wait_until 20 test -s "$T/api.port" || fail "the stand-in API did not start"
URL=http://127.0.0.1:$(cat "$T/api.port")
n=$(serial)
ms_expect_exit 2 e "$MS" pool clear "$N2" --authority "$A" --node "$URL" --out q.clear
ms_one_error_line e "${N2}: not quarantined on .*0 strikes.*--force"
ms_expect_exit 2 e "$MS" pool clear "$N3" --authority "$A" --node "$URL" --out q.clear
ms_one_error_line e "no verification standing"
ms_expect_exit 2 e "$MS" pool clear "$N1" --authority "$A" --node "$URL" --cut 00000000000000b2:3 --out q.clear
ms_one_error_line e "incarnation 00000000000000b2 .* is not in .*view of its log"
ms_expect_exit 2 e "$MS" pool clear "$N1" --authority "$A" --node "$URL" --cut "$INC:8" --out q.clear
ms_one_error_line e "beyond seq 7"
[ ! -e q.clear ] && [ ! -e posted ] || fail "a refused clear was written or published"
[ "$(serial)" = "$n" ] || fail "refused clears used serials"
# Quarantined there: signed with its view as the cut, and published.
"$MS" pool clear "$N1" --authority "$A" --node "$URL" --out q.clear >q.out 2>q.err ||
    fail "clear of a quarantined node: $(cat q.err)"
grep -q "(cut $INC:7, serial" q.out && grep -q 'published to' q.out || fail "clear --node: $(cat q.out)"
[ ! -s q.err ] || fail "clear --node warned: $(cat q.err)"
"$MS" pool clear "$N1" --authority "$A" --node "$URL" --cut "$INC:5" --out q5.clear >/dev/null ||
    fail "clear --cut inside the view"
# --force overrides both checks.
"$MS" pool clear "$N2" --authority "$A" --node "$URL" --cut 00000000000000b2:3 --out f.clear --force >f.out ||
    fail "--force"
grep -q 'published to' f.out || fail "--force did not publish: $(cat f.out)"
[ "$(grep -c authority posted)" = 3 ] || fail "published: $(cat posted)"
ok "pool clear --node refuses a node not quarantined or unknown there, an incarnation or seq it has not seen; --force overrides"
