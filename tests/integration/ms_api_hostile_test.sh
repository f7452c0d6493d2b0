#!/usr/bin/env bash
# ms_api_hostile_test - the HTTP API of a live meshsweepd (loopback,
# --no-beacon) that trains a real small sweep, under hostile requests:
# oversized bodies (413), malformed YAML and JSON specs (400 saying
# where), unknown paths (404), wrong methods (405), unknown query
# parameters (400 naming them), path traversal (never a file outside the
# assets), 200 slow clients sending headers a byte a second (a normal
# request still answers promptly), 500 concurrent connections from wrk
# (every one served). Then the node still answers and the sweep finishes
# with every task done (and the priority given at submit); the results
# filters and /tasks, /datasets answer.
# Beyond loopback, in a private network namespace (unshare -n, a dummy
# interface with a 10.x address, no beacons): 401 without or with a wrong
# token, 200 with the Bearer token, /?token= gives 302 and the cookie, the
# cookie gives 200, and the CLI with --token / --token-file works.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
command -v curl >/dev/null || { echo "curl not installed: skipped"; exit 77; }
command -v wrk >/dev/null || { echo "wrk not installed: skipped"; exit 77; }
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"

ms_tiny_dataset --train 3000 --test 200 --side 28
ms_start_daemon "$T/node" --workers 2 --no-beacon
API=$NODE/api/v1
# progress - the sweep's state and tasks done, one phrase.
progress() {
    curl -sS "$API/sweeps/$sweep" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%s, %d/%d done" % (d["state"], d["counts"]["done"], d["n_tasks"]))'
}

cat >"$T/grid.yaml" <<'Y'
name: hostile
dataset: fashion-mnist
parameters:
  activation:    {values: [relu, tanh]}
  hidden_layers: {values: [1, 2, 3]}
  width:         {value: 64}
  epochs:        {value: 20}
  batch_size:    {value: 50}
  seed:          {values: [1, 2, 3, 4]}
Y
"$MS" submit "$T/grid.yaml" --priority 3 >"$T/id" 2>"$T/submit.err"
sweep=$(cat "$T/id")
[[ "$sweep" =~ ^[0-9a-f]{64}$ ]] || fail "submit printed '$sweep'"
ok "sweep $sweep submitted (24 tasks; $(progress))"

# req NAME CURL-ARGS... - one request; status in $T/NAME.code, body in
# $T/NAME.body; prints the status.
req() {
    local name=$1
    shift
    curl -sS --max-time 20 -o "$T/$name.body" -w '%{http_code}' "$@" \
        >"$T/$name.code" 2>"$T/$name.err" || echo 000 >"$T/$name.code"
    cat "$T/$name.code"
}

# expect_error NAME STATUS PATTERN CURL-ARGS... - STATUS with a JSON
# {"error"} whose text matches PATTERN (extended regex).
expect_error() {
    local name=$1 want=$2 pattern=$3
    shift 3
    local got
    got=$(req "$name" "$@")
    [ "$got" = "$want" ] || fail "$name: expected $want, got $got: $(head -c 300 "$T/$name.body")"
    python3 - "$T/$name.body" "$pattern" <<'PY' || fail "$name: $(head -c 300 "$T/$name.body")"
import json, re, sys
e = json.load(open(sys.argv[1]))["error"]
assert re.search(sys.argv[2], e), "error %r lacks /%s/" % (e, sys.argv[2])
PY
}

# Load first, while the sweep trains: 500 concurrent connections, then
# slow clients.
# 500 concurrent connections (wrk): every one served, no error status.
state_before=$(progress)
wrk -c 500 -t 2 -d 5s --timeout 15s "$API/status" >"$T/wrk.txt" 2>&1 ||
    fail "wrk failed: $(cat "$T/wrk.txt")"
python3 - "$T/wrk.txt" <<'PY' || fail "wrk: $(cat "$T/wrk.txt")"
import re, sys
t = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", t).group(1))
assert n >= 500, "only %d requests" % n
assert "Non-2xx" not in t, "error statuses under load"
m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
if m:
    connect, read, write, timeout = map(int, m.groups())
    assert connect == 0 and timeout == 0, "connections refused or timed out"
print(n, "requests", re.search(r"Requests/sec:\s+([\d.]+)", t).group(1), "req/s",
      "socket errors: " + (m.group(0) if m else "none"))
PY
wrk_line=$(python3 -c 'import re,sys; t=open(sys.argv[1]).read(); print(re.search(r"(\d+) requests in [^,]+", t).group(0), "|", re.search(r"Requests/sec:\s+[\d.]+", t).group(0))' "$T/wrk.txt")
ok "wrk -c 500 -t 2 -d 5s: every connection served ($wrk_line; sweep before: $state_before, after: $(progress))"


# Slow clients: 200 connections sending their headers one byte a second
# for 8 s; a normal request meanwhile answers promptly.
cat >"$T/slow.py" <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, seconds = int(sys.argv[2]), float(sys.argv[3])
socks = []
for _ in range(n):
    try:
        socks.append(socket.create_connection((host, int(port)), timeout=5))
    except OSError:
        pass
print("open", len(socks), flush=True)
head = b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
end = time.time() + seconds
i = 0
while time.time() < end:
    for s in list(socks):
        try:
            s.send(head[i % len(head):i % len(head) + 1])
        except OSError:
            socks.remove(s)
    i += 1
    time.sleep(1)
print("alive", len(socks), flush=True)
PY
python3 "$T/slow.py" "${NODE#http://}" 200 8 >"$T/slow.out" 2>&1 &
slow_pid=$!
MS_PIDS+=("$slow_pid")
ms_wait_until 10 grep -q '^open' "$T/slow.out" || fail "slow clients did not connect"
sleep 1
t0=$(date +%s%N)
code=$(req during_slow "$API/status")
t1=$(date +%s%N)
slow_ms=$(((t1 - t0) / 1000000))
[ "$code" = 200 ] || fail "status during slow clients: $code"
[ "$slow_ms" -lt 5000 ] || fail "status took $slow_ms ms during slow clients"
wait "$slow_pid" || true
grep -q '^open 200' "$T/slow.out" || fail "slow clients: $(cat "$T/slow.out")"
ok "200 slow clients ($(tail -1 "$T/slow.out")): /status answered in $slow_ms ms (sweep: $(progress))"

# Oversized bodies: announced (Content-Length) and chunked.
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$T/big.yaml"
expect_error big 413 'body' -X POST --data-binary @"$T/big.yaml" "$API/sweeps"
expect_error big_chunked 413 'body' -X POST -H 'Transfer-Encoding: chunked' \
    --data-binary @"$T/big.yaml" "$API/sweeps"
ok "oversized bodies: 413 with a JSON error (sweep: $(progress))"
# A 100 KB header: libmicrohttpd answers 431 itself (its own HTML page,
# the one error that is not JSON: docs/API.md), and the node serves on.
head -c 100000 /dev/zero | tr '\0' 'a' >"$T/bighead"
code=$(req bighead -H "X-Big: $(cat "$T/bighead")" "$API/status")
[ "$code" = 431 ] || fail "a 100 KB header: $code"
[ "$(req after_bighead "$API/status")" = 200 ] || fail "status after a 100 KB header"
ok "a 100 KB header: 431 (libmicrohttpd's page), the node serves on"

# Malformed specs: the error says where.
printf 'name: broken\nparameters:\n  width: {value: [1, 2\n' >"$T/bad.yaml"
expect_error bad_yaml 400 'line [0-9]+' -X POST --data-binary @"$T/bad.yaml" \
    "$API/sweeps"
printf '{"name": "broken", "parameters": {"width": ' >"$T/bad.json"
expect_error bad_json 400 'line [0-9]+|column|position' -X POST \
    -H 'Content-Type: application/json' --data-binary @"$T/bad.json" "$API/sweeps"
printf '{"name": "x", "dataset": "fashion-mnist", "parameters": {"width": {"value": "wide"}}}' >"$T/bad-value.json"
expect_error bad_value 400 'width' -X POST --data-binary @"$T/bad-value.json" \
    "$API/sweeps"
ok "malformed YAML and JSON specs: 400 saying where (sweep: $(progress))"

# Hostile specs under the 1 MiB limit: 100,000 nested '[' (took 45 s of
# the node loop at 100 % CPU before the depth limit), a billion laughs
# of YAML aliases, 100,000 keys with a duplicate at the end. Each is a
# 400 saying where, fast; while it is parsed, /status and a control
# action (which goes through the node loop) answer promptly.
cat >"$T/hostile.py" <<'PY'
import json, sys, threading, time, urllib.error, urllib.request
api, sweep = sys.argv[1], sys.argv[2]
def call(method, path, body=None):
    t0 = time.time()
    req = urllib.request.Request(api + path, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            code, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        code, text = e.code, e.read().decode()
    return code, text, time.time() - t0
laughs = "dataset: fashion-mnist\nparameters:\n  hidden_sizes:\n    values:\n"
laughs += "      - &a0 [1,1,1,1,1,1,1,1,1,1]\n"
for i in range(1, 10):
    laughs += "      - &a%d [%s]\n" % (i, ",".join(["*a%d" % (i - 1)] * 10))
cases = [
    ("deep nesting", "[" * 100000 + "]" * 100000,
     "line 1, column 65: nested deeper than 64 levels"),
    ("billion laughs", laughs, r"line 1[0-9], column [0-9]+: aliases \(\*name\) expand"),
    ("100k keys", "dataset: fashion-mnist\nparameters: {" +
     ", ".join("k%x: 1" % i for i in range(100000)) + ", k0: 2}\n",
     "parameters.k0: duplicate key"),
]
import re
for name, text, pattern in cases:
    out = {}
    def post():
        out["post"] = call("POST", "/sweeps", text.encode())
    th = threading.Thread(target=post)
    th.start()
    time.sleep(0.05)
    st = call("GET", "/status")
    ctl = call("POST", "/sweeps/%s/control" % sweep,
               b'{"action": "priority", "priority": 3}')
    th.join(90)
    code, body, secs = out["post"]
    err = json.loads(body)["error"]
    assert code == 400 and re.search(pattern, err), (name, code, err)
    assert st[0] == 200 and st[2] < 5, (name, "status", st[0], st[2])
    assert ctl[0] == 200 and ctl[2] < 5, (name, "control", ctl[0], ctl[2], ctl[1])
    assert secs < 10, (name, "took", secs)
    print("%s (%d KiB): 400 in %.3f s (%s); meanwhile /status %.3f s, control %.3f s" %
          (name, len(text) // 1024, secs, err[:60], st[2], ctl[2]))
PY
python3 "$T/hostile.py" "$API" "$sweep" >"$T/hostile.out" 2>&1 ||
    fail "hostile specs: $(cat "$T/hostile.out")"
while read -r line; do ok "$line"; done <"$T/hostile.out"

expect_error unknown_path 404 'no such resource' "$NODE/api/v2/sweeps"
expect_error unknown_sub 404 'no such resource' "$API/sweeps/${sweep:0:12}/nothing"
expect_error unknown_root 404 '' "$NODE/etc/passwd"
expect_error method1 405 'DELETE' -X DELETE "$API/sweeps"
expect_error method2 405 'PUT' -X PUT "$API/status"
expect_error method3 405 'POST' -X POST "$NODE/metrics"
expect_error method4 405 'GET' "$API/sweeps/${sweep:0:12}/control"
expect_error arg1 400 'limt' "$API/sweeps/$sweep/results?limt=5"
expect_error arg2 400 'verbose' "$API/status?verbose=1"
expect_error arg3 400 'status' "$API/sweeps/$sweep/results?status=great"
# Input that would otherwise be silently ignored: a config key no task
# has, a parameter given twice, an unknown member of the control body,
# files for a built-in dataset.
expect_error arg4 400 "^config.nosuch: no task of this sweep has config key 'nosuch' \(its keys: .*activation" \
    "$API/sweeps/$sweep/results?config.nosuch=1"
expect_error arg5 400 '^limit: query parameter given twice' \
    "$API/sweeps/$sweep/results?limit=1&limit=2"
expect_error arg6 400 '^priority: query parameter given twice' -X POST \
    --data-binary @"$T/grid.yaml" "$API/sweeps?priority=1&priority=2"
expect_error ctl_extra 400 '^extra: unknown member of the control body' -X POST \
    -d '{"action":"pause","extra":1}' "$API/sweeps/$sweep/control"
expect_error ctl_prio 400 '^priority: only with' -X POST \
    -d '{"action":"pause","priority":1}' "$API/sweeps/$sweep/control"
expect_error ctl_type 400 '^action: must be a string' -X POST \
    -d '{"action":[["pause"]]}' "$API/sweeps/$sweep/control"
expect_error ctl_none 400 '^action: missing' -X POST \
    -d '{}' "$API/sweeps/$sweep/control"
expect_error files_builtin 400 '^files: given for the built-in dataset fashion-mnist' \
    -X POST --data-binary @"$T/grid.yaml" "$API/sweeps?files=zz"
ok "unknown paths 404, wrong methods 405, unknown query parameters 400"

# Each 405 names the route's own methods in Allow.
python3 - "$NODE" "$sweep" <<'PY' || fail "Allow headers"
import sys, urllib.error, urllib.request
node, sweep = sys.argv[1], sys.argv[2]
cases = [("DELETE", "/api/v1/status", "GET, HEAD"),
         ("POST", "/metrics", "GET, HEAD"),
         ("PUT", "/api/v1/peers", "GET, HEAD"),
         ("POST", "/api/v1/events", "GET, HEAD"),
         ("POST", "/api/v1/datasets", "GET, HEAD"),
         ("GET", "/api/v1/authority", "POST"),
         ("POST", "/api/v1/tasks/" + "0" * 64, "GET, HEAD"),
         ("POST", "/api/v1/logs/" + "0" * 64, "GET, HEAD"),
         ("DELETE", "/api/v1/sweeps", "GET, HEAD, POST"),
         ("POST", "/api/v1/sweeps/" + sweep, "GET, HEAD"),
         ("POST", "/api/v1/sweeps/%s/results" % sweep, "GET, HEAD"),
         ("POST", "/api/v1/sweeps/%s/analysis" % sweep, "GET, HEAD"),
         ("GET", "/api/v1/sweeps/%s/control" % sweep, "POST"),
         ("GET", "/api/v1/blobs/" + "0" * 64, "PUT"),
         ("GET", "/api/v1/blobs", "POST"),
         ("POST", "/", "GET, HEAD"),
         ("DELETE", "/dashboard/index.html", "GET, HEAD")]
for method, path, allow in cases:
    req = urllib.request.Request(node + path, data=b"{}" if method in ("POST", "PUT") else None,
                                 method=method)
    try:
        urllib.request.urlopen(req, timeout=20)
        raise AssertionError("%s %s answered 2xx" % (method, path))
    except urllib.error.HTTPError as e:
        assert e.code == 405, (method, path, e.code)
        assert e.headers.get("Allow") == allow, (method, path, e.headers.get("Allow"))
        assert allow in e.read().decode(), (method, path)
print(len(cases), "routes")
PY
ok "405: Allow names each route's methods (GET, HEAD / POST / PUT / GET, HEAD, POST)"

# Path traversal, encoded or not, with NUL bytes: never a file from
# outside (no /etc/passwd content), never a 200 for these paths.
n_trav=0
for p in '/../../etc/passwd' '/%2e%2e/%2e%2e/etc/passwd' \
    '/dashboard/../../etc/passwd' '/dashboard/..%2f..%2f..%2fetc%2fpasswd' \
    '/dashboard/%2e%2e/%2e%2e/%2e%2e/etc/passwd' '/api/v1/..%2f..%2fetc%2fpasswd' \
    '/api/v1/sweeps/..%2f..%2f..%2fetc%2fpasswd/results' \
    '/dashboard/%00/../../etc/passwd' '/api/v1/tasks/%00' \
    '/dashboard/....//....//etc/passwd' '/%5c..%5c..%5cetc%5cpasswd'; do
    n_trav=$((n_trav + 1))
    code=$(req trav$n_trav --path-as-is "$NODE$p")
    case $code in 200 | 000) fail "traversal $p answered $code" ;; esac
    grep -q 'root:' "$T/trav$n_trav.body" && fail "traversal $p returned /etc/passwd"
done
# Raw request lines with a NUL byte and with bare dots (curl would clean
# them): the server answers 4xx or closes, never a file.
python3 - "${NODE#http://}" <<'PY' || fail "raw traversal requests"
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
for line in (b"GET /dashboard/\x00/../../etc/passwd HTTP/1.1\r\n",
             b"GET /../../../../etc/passwd HTTP/1.1\r\n",
             b"GET /api/v1/status\x00/../../etc/passwd HTTP/1.1\r\n"):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(line + b"Host: x\r\nConnection: close\r\n\r\n")
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    s.close()
    assert b"root:" not in data, line
    # libmicrohttpd ends the path at the NUL: "/api/v1/status" answers
    # as itself; the bare dots reach no route.
    if data and b"\x00" not in line:
        status = int(data.split(b" ", 2)[1])
        assert status >= 400, (line, status)
PY
ok "path traversal ($n_trav encoded forms + 3 raw): no file outside the assets"

# The node still serves and the sweep ends with every task done.
[ "$(req after_status "$API/status")" = 200 ] || fail "status after the load"
ms_wait_until 90 ms_sweep_finished "$sweep" || fail "sweep did not finish"
curl -sS "$API/sweeps/$sweep" >"$T/sweep.json"
python3 - "$T/sweep.json" <<'PY' || fail "sweep after the load: $(cat "$T/sweep.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["state"] == "done", d["state"]
assert d["counts"]["done"] == d["n_tasks"] == 24, d["counts"]
assert d["priority"] == 3, "submit --priority 3 gave %r" % d["priority"]
PY
kill -0 "$DAEMON_PID" || fail "meshsweepd died"
curl -sS "$NODE/metrics" >"$T/metrics.txt"
grep -Eq '^meshsweep_rejected_requests_total [1-9]' "$T/metrics.txt" ||
    fail "rejected requests not counted"
ok "after all that: the node answers and all 24 tasks are done"

# Filters, pages, CSV; tasks by prefix; datasets.
python3 - "$API" "$sweep" <<'PY' || fail "filters"
import csv, io, json, sys, urllib.request
api, sweep = sys.argv[1], sys.argv[2]
def get(path):
    with urllib.request.urlopen(api + path, timeout=20) as r:
        return r.read().decode()
rows = json.loads(get("/sweeps/%s/results" % sweep))["rows"]
assert len(rows) == 24
relu = json.loads(get("/sweeps/%s/results?config.activation=relu" % sweep))["rows"]
assert len(relu) == 12 and all(r["config"]["activation"] == "relu" for r in relu)
deep = json.loads(get("/sweeps/%s/results?config.hidden_layers=3&config.seed=2" % sweep))["rows"]
assert len(deep) == 2, len(deep)  # 2 activations
node = rows[0]["node_id"][:10]
assert len(json.loads(get("/sweeps/%s/results?node=%s&status=ok" % (sweep, node)))["rows"]) == 24
# Pages of 2 over a filter: the same rows as one filtered request.
got, after = [], ""
for _ in range(20):
    page = json.loads(get("/sweeps/%s/results?config.activation=tanh&limit=2%s" % (sweep, after)))
    got += page["rows"]
    if page["next"] is None:
        break
    after = "&after=" + page["next"]
want = json.loads(get("/sweeps/%s/results?config.activation=tanh" % sweep))["rows"]
assert [r["task_id"] for r in got] == [r["task_id"] for r in want] and len(got) == 12
table = list(csv.DictReader(io.StringIO(get("/sweeps/%s/results?format=csv&config.hidden_layers=2" % sweep))))
assert len(table) == 8 and all(r["config.hidden_layers"] == "2" for r in table)
task = json.loads(get("/tasks/%s" % rows[0]["task_id"][:14]))
assert task["task_id"] == rows[0]["task_id"] and task["state"] == "done"
assert task["sweep_id"] == sweep and len(task["results"]) == 1
assert task["results"][0]["task_id"] == task["task_id"]
ds = json.loads(get("/datasets"))["datasets"]
assert any(d["name"] == "fashion-mnist" for d in ds), ds
# No certificate: the node is its own operator, named by its node id, in
# /status as in its rows.
st = json.loads(get("/status"))
assert st["operator"] == st["node_id"] == rows[0]["node_id"], (st["operator"], st["node_id"])
assert all(r["operator"] == st["operator"] for r in rows), rows[0]["operator"]
PY
ok "filters (config, node, status; pages; CSV), /tasks by prefix, /datasets; operator = node id in /status and rows"

"$MS" status >/dev/null || fail "CLI status"
kill -TERM "$DAEMON_PID"
ms_wait_exit "$DAEMON_PID" 30
[ "$EXIT_RC" = 0 ] || fail "meshsweepd exit $EXIT_RC"

# ---- Beyond loopback, inside a private network namespace.
flags=(-n)
[ "$(id -u)" -eq 0 ] || flags=(-r -n)
if ! unshare "${flags[@]}" true 2>/dev/null; then
    echo "network namespaces not permitted here: the beyond-loopback part is skipped"
    exit 0
fi
cat >"$T/beyond.sh" <<'B'
set -euo pipefail
T=$1 MSD=$2 MS=$3
ip link set lo up
ADDR=10.213.77.1
if ip link add ms0 type dummy 2>/dev/null; then
    ip link set ms0 up
    ip addr add $ADDR/24 dev ms0
else
    ip addr add $ADDR/32 dev lo
fi
export no_proxy='*' NO_PROXY='*'
"$MSD" --data-dir "$T/far" --api $ADDR:5872 --no-beacon --workers 1 \
    >"$T/far.log" 2>&1 &
pid=$!
trap 'kill -KILL $pid 2>/dev/null || true' EXIT
URL=http://$ADDR:5872
for _ in $(seq 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 $URL/api/v1/status || true)
    [ "$code" = 401 ] && break
    sleep 0.2
done
c() { curl -s --max-time 10 -o "$T/far.body" -D "$T/far.head" -w '%{http_code}' "$@" || echo 000; }
die() { echo "FAIL: $*" >&2; exit 1; }
[ "$(stat -c %a "$T/far/api-token")" = 600 ] || die "token file mode"
TOKEN=$(cat "$T/far/api-token")
[[ "$TOKEN" =~ ^[0-9a-f]{64}$ ]] || die "token '$TOKEN'"
grep -q "token in $T/far/api-token" "$T/far.log" || die "start line: $(cat "$T/far.log")"
[ "$(c $URL/api/v1/status)" = 401 ] || die "no token"
grep -qi '^WWW-Authenticate: Bearer' "$T/far.head" || die "no WWW-Authenticate"
grep -q '"error"' "$T/far.body" || die "401 without JSON error"
# A wrong token: the right one with its last digit changed.
case $TOKEN in *0) WRONG=${TOKEN%?}1 ;; *) WRONG=${TOKEN%?}0 ;; esac
[ "$(c -H "Authorization: Bearer $WRONG" $URL/api/v1/status)" = 401 ] || die "wrong token"
[ "$(c -H "Authorization: Bearer $TOKEN" $URL/api/v1/status)" = 200 ] || die "Bearer"
[ "$(c -H "Authorization: Bearer $TOKEN" $URL/metrics)" = 200 ] || die "Bearer /metrics"
[ "$(c $URL/metrics)" = 401 ] || die "/metrics without token"
[ "$(c "$URL/?token=nope")" = 401 ] || die "login with a wrong token"
[ "$(c "$URL/?token=$TOKEN")" = 302 ] || die "login"
grep -qi '^Location: /' "$T/far.head" || die "login Location"
grep -i '^Set-Cookie:' "$T/far.head" | grep -q "meshsweep_token=$TOKEN" || die "cookie"
grep -i '^Set-Cookie:' "$T/far.head" | grep -q 'HttpOnly' || die "HttpOnly"
grep -i '^Set-Cookie:' "$T/far.head" | grep -q 'SameSite=Strict' || die "SameSite"
[ "$(c -b "meshsweep_token=$TOKEN" $URL/api/v1/sweeps)" = 200 ] || die "cookie"
[ "$(c -b "meshsweep_token=x$TOKEN" $URL/api/v1/sweeps)" = 401 ] || die "bad cookie"
"$MS" status --node $URL >/dev/null 2>"$T/cli401.err" && die "CLI without token worked"
grep -q -- '--token TOKEN, --token-file FILE or \$MESHSWEEP_TOKEN_FILE' "$T/cli401.err" ||
    die "CLI 401 message: $(cat "$T/cli401.err")"
grep -q 'token=' "$T/cli401.err" && die "CLI 401 message speaks of the browser login: $(cat "$T/cli401.err")"
"$MS" status --node $URL --token "$WRONG" >/dev/null 2>"$T/cli401.err" && die "CLI with a wrong token worked"
grep -q 'refused the token given' "$T/cli401.err" || die "CLI wrong token: $(cat "$T/cli401.err")"
"$MS" status --node $URL --token "$TOKEN" >/dev/null || die "CLI --token"
"$MS" status --node $URL --token-file "$T/far/api-token" >/dev/null || die "CLI --token-file"
MESHSWEEP_TOKEN_FILE=$T/far/api-token "$MS" status --node $URL >/dev/null || die "CLI MESHSWEEP_TOKEN_FILE"
echo "beyond loopback: all checks passed"
B
timeout 60 unshare "${flags[@]}" bash "$T/beyond.sh" "$T" "$MSD" "$MS" >"$T/beyond.out" 2>&1 ||
    fail "beyond loopback: $(cat "$T/beyond.out"; tail -5 "$T/far.log" 2>/dev/null)"
ok "beyond loopback (10.213.77.1 in a private namespace): 401 without or with a wrong token, Bearer 200, /?token= 302 + HttpOnly SameSite=Strict cookie, cookie 200, CLI --token/--token-file"
