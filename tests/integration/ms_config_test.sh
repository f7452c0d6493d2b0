#!/usr/bin/env bash
# ms_config_test.sh - meshsweepd's config file (the packaging issue, item
# 2; docs/CONFIG.md), through `meshsweepd --check-config`, which parses
# the options, the config file and DATA_DIR/identity/peers.conf, prints
# the effective settings with where each came from, and starts nothing:
#   1. every long option that `meshsweepd --help` lists (but --help,
#      --version, --config, --check-config) is a config key: set alone in
#      a file it is taken, from that file's line (a future option without
#      a key fails here); and --check-config lists exactly those keys;
#   2. the command line wins over the file (workers, peer), and a real
#      start with workers = 2 in the file and --workers 1 runs 1 worker;
#   3. an unknown key, a key set twice, a key written with '-'
#      (mesh-port), a bad value, and an unknown section are refused: exit
#      2, one line naming FILE:LINE and the key, no data dir made; an
#      option written with '_' on the command line (--mesh_port) is
#      refused naming --mesh-port;
#   4. peers.conf's peers are listed after the file's, with their source;
#      a bad peers.conf line is exit 2 naming peers.conf:LINE.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }

F=$T/meshsweepd.conf
D=$T/data

# check ARGS... - run meshsweepd --check-config ARGS; stdout in $T/cc.out,
# stderr in $T/cc.err, exit code in CC_RC.
check() {
    CC_RC=0
    "$MSD" --check-config "$@" >"$T/cc.out" 2>"$T/cc.err" || CC_RC=$?
}

# line_of KEY - the value and source of KEY in $T/cc.out ("VALUE|SOURCE").
line_of() {
    python3 - "$T/cc.out" "$1" <<'PY'
import sys
for line in open(sys.argv[1]):
    if line.startswith("#") or " = " not in line:
        continue
    key, rest = line.split(" = ", 1)
    if key.strip() == sys.argv[2]:
        value, _, source = rest.rstrip("\n").rpartition(" # ")
        print("%s|%s" % (value.strip(), source.strip()))
        break
PY
}

# ---- 1. every option of --help is a config key ----------------------------
"$MSD" --help >"$T/help.txt"
mapfile -t OPTS < <(grep -oE -- '--[a-z][a-z0-9-]*' "$T/help.txt" | sort -u |
    grep -vxE -- '--(help|version|config|check-config)')
[ "${#OPTS[@]}" -ge 25 ] || fail "only ${#OPTS[@]} options found in --help: ${OPTS[*]}"
mkdir -p "$T/dash"
declare -A SAMPLE=(
    [data_dir]=$T/other [api]=127.0.0.1:0 [api_token_file]=$T/token
    [workers]=3 [backend]=cpu [gpu_workers]=0 [blas_threads]=2 [retry_cap]=3
    [worker_nice]=5 [verbose]=true [open_pool]=lab [enroll_key]=$T/kit
    [mesh_port]=6001 [beacon_port]=6002 [interface]=lo [no_beacon]=true
    [bind]=127.0.0.1 [advertise]=node7.example:15871
    [lease_ttl_ms]=20000 [heartbeat_ms]=500 [settle_ms]=7
    [beacon_interval_ms]=300 [antientropy_ms]=400 [max_pause_s]=60
    [max_tasks_per_sweep]=99 [max_dataset_bytes]=12345
    [reevaluate_fraction]=0.25 [reeval_timeout_s]=30 [keep_retention_s]=100
    [dashboard_dir]=$T/dash [peer]=tcp://127.0.0.1:9 [worker_memory_mb]=1024
    [idle_only]=true [idle_cpu_pct]=30 [idle_busy_s]=4 [idle_quiet_s]=9)
n_sampled=0
KEYS=()
for opt in "${OPTS[@]}"; do
    key=${opt#--}
    key=${key//-/_}
    KEYS+=("$key")
    value=${SAMPLE[$key]:-1} # an option this test does not know yet: 1
    printf '# one key\n%s = %s\n' "$key" "$value" >"$F"
    if [ "$key" = data_dir ]; then
        check --config "$F"
    else
        check --data-dir "$D" --config "$F"
    fi
    ! grep -q "unknown key" "$T/cc.err" ||
        fail "$opt is an option but not a config key: $(cat "$T/cc.err")"
    [ -z "${SAMPLE[$key]:-}" ] && [ "$CC_RC" != 0 ] && continue # known key, value not ours
    [ "$CC_RC" = 0 ] || fail "$key = $value: exit $CC_RC: $(cat "$T/cc.err")"
    if [ "$key" = peer ]; then
        grep -q "^peer *= $value # $F\$" "$T/cc.out" ||
            fail "peer from the file: $(cat "$T/cc.out")"
    else
        got=$(line_of "$key")
        [ "$got" = "$value|$F:2" ] ||
            fail "$key = $value from the file: --check-config says '$got'"
    fi
    n_sampled=$((n_sampled + 1))
done
[ "$n_sampled" -ge 25 ] || fail "only $n_sampled keys checked"
[ ! -e "$D" ] || fail "--check-config made a data dir"
[ ! -e "$T/other" ] || fail "--check-config made a data dir"
# --check-config lists exactly the keys of --help's options (and peer)
check --data-dir "$D"
[ "$CC_RC" = 0 ] || fail "--check-config with no file: exit $CC_RC: $(cat "$T/cc.err")"
listed=$(grep -oE '^[a-z_]+ ' "$T/cc.out" | tr -d ' ' | sort -u)
want=$(printf '%s\n' "${KEYS[@]}" | grep -vx peer | sort -u)
[ "$listed" = "$want" ] || fail "--check-config keys differ from --help's options: $(diff <(echo "$want") <(echo "$listed") | tr '\n' ' ')"
grep -q '^workers *= 0 *# default$' "$T/cc.out" || fail "default workers: $(cat "$T/cc.out")"
ok "${#OPTS[@]} options of --help are config keys ($n_sampled set from a file and shown with FILE:LINE); --check-config lists exactly them"

# ---- 2. the command line wins -----------------------------------------------
printf '[meshsweepd]\ndata_dir = %s\nworkers = 2\npeer = tcp://127.0.0.1:9\napi = 127.0.0.1:0\nno_beacon = yes\n' "$D" >"$F"
check --config "$F" --workers 1 --peer tcp://127.0.0.1:10
[ "$CC_RC" = 0 ] || fail "exit $CC_RC: $(cat "$T/cc.err")"
[ "$(line_of workers)" = "1|command line" ] || fail "workers: $(line_of workers)"
[ "$(line_of data_dir)" = "$D|$F:2" ] || fail "data_dir: $(line_of data_dir)"
[ "$(line_of no_beacon)" = "true|$F:6" ] || fail "no_beacon: $(line_of no_beacon)"
grep -q '^peer *= tcp://127.0.0.1:10 # command line$' "$T/cc.out" || fail "peer: $(cat "$T/cc.out")"
! grep -q 'tcp://127.0.0.1:9 ' "$T/cc.out" || fail "the file's peer kept beside the command line's"
[ ! -e "$D" ] || fail "--check-config made the data dir"
# a real start: 1 worker, not 2
ms_spawn "$T/start.log" "$MSD" --config "$F" --workers 1
pid=$SPAWNED
ms_wait_until 20 grep -q 'worker' "$T/start.log" || fail "no start: $(cat "$T/start.log")"
grep -q ' 1 worker, data dir' "$T/start.log" || fail "the command line did not win: $(cat "$T/start.log")"
kill -TERM "$pid"
ms_wait_exit "$pid" 20
[ "$EXIT_RC" = 0 ] || fail "exit $EXIT_RC after SIGTERM"
rm -rf "$D"
ok "the command line wins (workers 1 over the file's 2: the node ran 1 worker; --peer replaces the file's peers)"

# ---- 3. errors: one line, FILE:LINE and the key, exit 2, nothing made ------
# bad CONTENT PATTERN - the file with CONTENT is refused with PATTERN
bad() {
    printf '%b' "$1" >"$F"
    check --data-dir "$D" --config "$F"
    [ "$CC_RC" = 2 ] || fail "'$1': exit $CC_RC (want 2): $(cat "$T/cc.err")"
    [ "$(grep -c '' "$T/cc.err")" = 1 ] || fail "'$1': not one line: $(cat "$T/cc.err")"
    grep -qF -- "meshsweepd: $F:$2" "$T/cc.err" || fail "'$1': '$(cat "$T/cc.err")' lacks '$F:$2'"
    [ ! -s "$T/cc.out" ] || fail "'$1': printed settings: $(cat "$T/cc.out")"
    # the daemon itself refuses it the same way
    local rc=0
    "$MSD" --data-dir "$D" --config "$F" --api 127.0.0.1:0 --no-beacon \
        >/dev/null 2>"$T/start.err" || rc=$?
    [ "$rc" = 2 ] || fail "'$1': meshsweepd exit $rc: $(cat "$T/start.err")"
    grep -qF -- "$F:$2" "$T/start.err" || fail "'$1': meshsweepd said: $(cat "$T/start.err")"
    [ ! -e "$D" ] || fail "'$1': a data dir was made"
}
bad 'workers = 1\nmesh_size = 5\n' "2: unknown key 'mesh_size'"
bad '# c\nworkers = 1\n\nworkers = 2\n' "4: key 'workers' is set twice (line 2 and here)"
bad 'workers = 1\nmesh-port = 6000\n' "2: key 'mesh-port': config keys are written with '_' where the option has '-' (mesh_port)"
bad '[meshsweepd]\nlease-ttl-ms = 3000\n' "2: key 'lease-ttl-ms'"
bad 'config = /etc/other.conf\n' "1: unknown key 'config'"
bad 'check_config = true\n' "1: unknown key 'check_config'"
bad 'workers = many\n' "1: workers: 'many' is not a whole number"
bad 'lease_ttl_ms = 1000\nheartbeat_ms = 600\n' "2: heartbeat_ms: 600 must be under lease_ttl_ms/2"
bad 'backend = tpu\n' "1: backend: unknown backend 'tpu'"
bad '[other]\nworkers = 1\n' "1: unknown section [other]"
bad 'worker_nice = 25\n' "1: worker_nice: 25 is above 19"
# A port out of range in the file's api: --check-config and a start say
# FILE:LINE and make nothing (the start's own --api would win over the
# file, so it is checked here, not by bad).
printf 'workers = 1\napi = 127.0.0.1:70000\n' >"$F"
for extra in --check-config --no-beacon; do
    "$MSD" --data-dir "$D" --config "$F" $extra >/dev/null 2>"$T/cc.err" && fail "api port 70000 taken ($extra)"
    grep -qF -- "$F:2: api: '70000': port must be 0..65535" "$T/cc.err" || fail "api port 70000 ($extra): $(cat "$T/cc.err")"
    [ ! -e "$D" ] || fail "api port 70000 ($extra): a data dir was made"
done
# A flag the file turns on, the command line turns off (the command line
# wins); a flag's value is true or false.
printf 'no_beacon = true\nidle_only = yes\n' >"$F"
"$MSD" --data-dir "$D" --config "$F" --no-beacon=false --idle-only=off --check-config >"$T/cc.out" 2>"$T/cc.err" ||
    fail "--no-beacon=false: $(cat "$T/cc.err")"
grep -Eq '^no_beacon += false +# command line' "$T/cc.out" || fail "--no-beacon=false did not win: $(grep no_beacon "$T/cc.out")"
grep -Eq '^idle_only += false +# command line' "$T/cc.out" || fail "--idle-only=off did not win: $(grep idle_only "$T/cc.out")"
"$MSD" --data-dir "$D" --no-beacon=maybe --check-config >/dev/null 2>"$T/cc.err" && fail "--no-beacon=maybe taken"
grep -qF -- "--no-beacon=maybe: the value is true or false" "$T/cc.err" || fail "--no-beacon=maybe: $(cat "$T/cc.err")"
"$MSD" --data-dir "$D" --mesh_port 6000 --check-config >/dev/null 2>"$T/cc.err" && fail "--mesh_port taken"
grep -qF -- "unknown option '--mesh_port' (options are written with '-': --mesh-port)" "$T/cc.err" ||
    fail "--mesh_port: $(cat "$T/cc.err")"
[ ! -e "$D" ] || fail "a data dir was made"
ok "unknown key, key twice, dash-form key, bad value (a port out of range, worker_nice 25), unknown section: exit 2, one line with FILE:LINE and the key, nothing made; --mesh_port refused naming --mesh-port; --no-beacon=false and --idle-only=off win over the file"

# ---- 4. peers.conf ------------------------------------------------------------
mkdir -p "$D/identity"
printf 'peer = %s@tcp://127.0.0.1:7001\n' "$(printf 'ab%.0s' {1..32})" >"$D/identity/peers.conf"
printf 'peer = tcp://127.0.0.1:9\n' >"$F"
check --data-dir "$D" --config "$F"
[ "$CC_RC" = 0 ] || fail "exit $CC_RC: $(cat "$T/cc.err")"
grep -A1 '^peer *= tcp://127.0.0.1:9 #' "$T/cc.out" | tail -1 |
    grep -q "^peer *= abab.*@tcp://127.0.0.1:7001 # $D/identity/peers.conf$" ||
    fail "peers.conf's peer not listed after the file's: $(cat "$T/cc.out")"
echo 'workers = 2' >>"$D/identity/peers.conf"
check --data-dir "$D" --config "$F"
[ "$CC_RC" = 2 ] || fail "bad peers.conf: exit $CC_RC: $(cat "$T/cc.err")"
grep -q 'peers.conf:2' "$T/cc.err" || fail "bad peers.conf: $(cat "$T/cc.err")"
ok "peers.conf's peers listed after the file's with their source; a bad line: exit 2 naming peers.conf:2"
