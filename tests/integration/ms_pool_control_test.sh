#!/usr/bin/env bash
# ms_pool_control_test.sh - sweep control across two real meshsweepd
# daemons on loopback (--open-pool, --no-beacon, --peer: nothing is
# broadcast). Controls fold by their logical time, not by which node's id
# sorts first:
#   1. pause on node 1, then resume on node 2: both nodes report the sweep
#      active (never paused again) and it completes;
#   2. resume on node 1, then pause on node 2: both report paused, and stay
#      so; `meshsweep status` says PAUSED;
#   3. cancel; resume is refused (cancel is final) with one line naming
#      the sweep once; the same spec submitted again reopens it on both
#      nodes and it completes.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
source "$HERE/pool_lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ms_tiny_dataset --train 400 --test 100

pool_lo_ports 2
POOL=(--open-pool=ctl --workers 1 "${POOL_TIMES[@]}")
for k in 1 2; do pool_start_lo "$k" "${POOL[@]}"; done
pool_wait_alive 10 1 1 2 || fail "the two nodes did not link"
ok "two daemons linked"

spec() { # NAME (tasks of a few seconds: a sweep must outlast the pause,
    # resume and pause steps below, which take a second or two; 3000
    # epochs made tasks of 15 to 25 s and the 90 s waits too short for 8
    # tasks on 2 workers on a loaded machine)
    cat <<Y
name: $1
dataset: fashion-mnist
parameters:
  seed:   {values: [1, 2, 3, 4, 5, 6, 7, 8]}
  width:  {value: 64}
  epochs: {value: 1200}
  batch_size: {value: 50}
Y
}
state_of() { # K SWEEP
    pool_curl "$1" "/api/v1/sweeps/$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'
}
state_is() { # K SWEEP STATE...
    local k=$1 s=$2 st
    shift 2
    st=$(state_of "$k" "$s") || return 1
    for want in "$@"; do [ "$st" = "$want" ] && return 0; done
    return 1
}
both_state() { # SWEEP STATE...
    state_is 1 "$@" && state_is 2 "$@"
}
known() { pool_curl "$1" "/api/v1/sweeps/$2" >/dev/null 2>&1; }

# ---- 1. pause on 1, resume on 2 -> active on both, completes --------------
spec ctl-one >"$T/one.yaml"
one=$(pool_submit 1 "$T/one.yaml")
pool_cli 1 pause "$one" >/dev/null || fail "pause on node 1"
ms_wait_until 10 known 2 "$one" || fail "sweep 1 did not reach node 2"
ms_wait_until 10 state_is 2 "$one" paused || fail "the pause did not reach node 2"
pool_cli 2 status "$one" >"$T/status-paused.txt"
grep -q "PAUSED" "$T/status-paused.txt" || { cat "$T/status-paused.txt"; fail "status does not say PAUSED"; }
pool_cli 2 resume "$one" >/dev/null || fail "resume on node 2"
ms_wait_until 10 both_state "$one" active done ||
    { pool_dump "$one" 1 2; fail "after pause on 1 and resume on 2 the nodes say $(state_of 1 "$one") / $(state_of 2 "$one")"; }
sleep 1 # the records have crossed: the fold must not turn back to paused
both_state "$one" active done || fail "resume on 2 undone: $(state_of 1 "$one") / $(state_of 2 "$one")"
ms_wait_until 90 pool_finished 1 "$one" || { pool_dump "$one" 1 2; fail "sweep 1 did not complete on node 1"; }
ms_wait_until 20 pool_finished 2 "$one" || { pool_dump "$one" 1 2; fail "sweep 1 did not complete on node 2"; }
ok "pause on node 1, resume on node 2: active on both, completed"

# ---- 2. resume on 1, then pause on 2 -> paused on both ---------------------
spec ctl-two >"$T/two.yaml"
two=$(pool_submit 1 "$T/two.yaml")
ms_wait_until 10 known 2 "$two" || fail "sweep 2 did not reach node 2"
pool_cli 2 pause "$two" >/dev/null || fail "first pause on node 2"
ms_wait_until 10 state_is 1 "$two" paused || fail "the first pause did not reach node 1"
pool_cli 1 resume "$two" >/dev/null || fail "resume on node 1"
ms_wait_until 10 state_is 2 "$two" active || fail "the resume did not reach node 2"
pool_cli 2 pause "$two" >/dev/null || fail "pause on node 2"
ms_wait_until 10 both_state "$two" paused ||
    { pool_dump "$two" 1 2; fail "after resume on 1 and pause on 2 the nodes say $(state_of 1 "$two") / $(state_of 2 "$two")"; }
sleep 1
both_state "$two" paused || fail "pause on 2 undone: $(state_of 1 "$two") / $(state_of 2 "$two")"
ok "resume on node 1, then pause on node 2: paused on both"

# ---- 3. cancel is final; the same spec again reopens it --------------------
pool_cli 1 cancel "$two" >/dev/null || fail "cancel"
ms_wait_until 10 both_state "$two" cancelled || fail "the cancel did not reach both nodes"
ms_expect_exit 2 "$T/resume.err" pool_cli 2 resume "${two:0:12}"
ms_one_error_line "$T/resume.err" "cancelled"
grep -q "reopen" "$T/resume.err" || fail "the refusal does not say how to go on: $(cat "$T/resume.err")"
[ "$(grep -o "${two:0:12}" "$T/resume.err" | wc -l)" = 1 ] ||
    fail "the error names the sweep more than once: $(cat "$T/resume.err")"
pool_cli 1 status "$two" | grep -q CANCELLED || fail "status does not say CANCELLED"
again=$(pool_cli 2 submit "$T/two.yaml" 2>"$T/reopen.err") || fail "submit again: $(cat "$T/reopen.err")"
[ "$again" = "$two" ] || fail "the same spec gave another id"
grep -q "reopened" "$T/reopen.err" || fail "submit again does not say reopened: $(cat "$T/reopen.err")"
ms_wait_until 10 both_state "$two" active done || fail "the reopen did not reach both nodes"
ms_wait_until 90 pool_finished 1 "$two" || { pool_dump "$two" 1 2; fail "reopened sweep did not complete on node 1"; }
ms_wait_until 20 pool_finished 2 "$two" || { pool_dump "$two" 1 2; fail "reopened sweep did not complete on node 2"; }
pool_curl 1 "/api/v1/sweeps/$two" >"$T/two.json"
[ "$(ms_json_get "$T/two.json" 'd["counts"].get("cancelled", 0)')" = 0 ] || fail "tasks still cancelled after reopen"
ok "cancel is final for resume; the same spec again reopens the sweep and it completes"
