#!/usr/bin/env bash
# ms_daemon_net_args_test.sh - meshsweepd's --interface, --bind and
# --advertise (issue 18): each bad value, on the command line or in the
# config file, exits 2 with one line that names the option and the
# reason; good values show in --check-config. Runs in a private network
# namespace (netns.sh's re-exec: only lo, so "eth9" exists nowhere), and
# nothing here starts a node.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"
source "$HERE/lib.sh"
[ -x "$MSD" ] || { echo "meshsweepd not built: skipped"; exit 77; }
ip link set lo up

# bad ARGS... PATTERN - exit 2, one line matching PATTERN
bad() {
    local pattern=${*: -1} rc=0 n
    local args=("${@:1:$#-1}")
    "$MSD" --data-dir "$T/d" --open-pool=args "${args[@]}" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" = 2 ] || { cat "$T/err" >&2; fail "${args[*]}: exit $rc, want 2"; }
    n=$(grep -c '' "$T/err" || true)
    [ "$n" = 1 ] || { cat "$T/err" >&2; fail "${args[*]}: $n lines on stderr, want 1"; }
    grep -Eq -- "$pattern" "$T/err" || fail "${args[*]}: '$(cat "$T/err")' does not match /$pattern/"
    [ ! -s "$T/out" ] || fail "${args[*]}: printed on stdout: $(cat "$T/out")"
    echo "   ${args[*]} -> $(cat "$T/err")"
}
bad --interface eth9 '^meshsweepd: --interface eth9: no such interface \(this host has: lo\)'
bad --interface lo,eth9 'eth9: no such interface'
bad --interface 'lo,,lo' 'an empty name'
bad --interface '*,lo' "'\\*' .* stands alone"
bad --interface= 'an empty name'
bad --interface abcdefghijklmnopq 'at most 15 characters'
bad --bind 10.9.9.9 "^meshsweepd: --bind '10.9.9.9': no interface of this host has that address \(it has: 127.0.0.1\)"
bad --bind eth0 "--bind 'eth0': expected an IPv4 address of this host, or \\*"
bad --bind ::1 'names and IPv6 are not taken'
bad --bind 300.1.1.1 'expected an IPv4 address'
bad --advertise '' 'needs a value|no HOST'
bad --advertise :5871 "^meshsweepd: --advertise ':5871': expected HOST\[:PORT\] \(no HOST\)"
bad --advertise host:0 "port '0' is not a number in 1..65535"
bad --advertise host:65536 "port '65536' is not a number in 1..65535"
bad --advertise host:x "port 'x' is not a number"
bad --advertise '[::1]:5871' 'IPv6 is not taken'
bad --advertise 'a:1:2' "one ':' at most"
bad --advertise 'a/b' 'HOST must be a name or an IPv4 address'
bad --advertise 0.0.0.0:5871 'not an address a peer can dial'
bad --advertise "$(printf 'h%.0s' {1..70})" 'more than 63 characters'
ok "bad --interface, --bind and --advertise: exit 2, one line each"

# the same keys in the config file name FILE:LINE
printf 'data_dir = %s\nopen_pool = args\nbind = 10.9.9.9\n' "$T/d" >"$T/bind.ini"
bad --config "$T/bind.ini" "^meshsweepd: $T/bind.ini:3: bind: '10.9.9.9': no interface"
printf 'data_dir = %s\nadvertise = h:99999\n' "$T/d" >"$T/adv.ini"
bad --config "$T/adv.ini" "^meshsweepd: $T/adv.ini:2: advertise: 'h:99999': port"
printf 'interface = eth9\n' >"$T/if.ini"
bad --config "$T/if.ini" "^meshsweepd: $T/if.ini:1: interface: eth9: no such interface"
ok "the config file's bind, advertise and interface keys: FILE:LINE and the reason"

# good values, shown by --check-config (nothing starts)
"$MSD" --data-dir "$T/d" --open-pool=args --check-config --interface lo \
    --bind 127.0.0.1 --advertise node7.lab.example:15871 >"$T/check" 2>&1 ||
    { cat "$T/check" >&2; fail "--check-config refused good values"; }
grep -Eq '^ *interface *= *lo' "$T/check" || fail "--check-config: $(cat "$T/check")"
grep -Eq '^ *bind *= *127.0.0.1' "$T/check" || fail "--check-config: $(cat "$T/check")"
grep -Eq '^ *advertise *= *node7.lab.example:15871' "$T/check" || fail "--check-config: $(cat "$T/check")"
"$MSD" --data-dir "$T/d" --open-pool=args --check-config --advertise 10.0.0.9 >"$T/check2" 2>&1
grep -Eq '^ *advertise *= *10.0.0.9:5871' "$T/check2" || fail "--check-config: $(cat "$T/check2")"
grep -Eq '^ *bind *= *\* \(every address\)' "$T/check2" || fail "--check-config: $(cat "$T/check2")"
ok "--check-config shows interface, bind and advertise (the mesh port when --advertise has none)"
