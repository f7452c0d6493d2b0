#!/usr/bin/env bash
# ms_netns_harness_test.sh - checks tests/integration/netns.sh itself:
# namespaces made and removed, ping between nodes through the bridge, a
# UDP broadcast from one node reaches another (zbeacon's path), cut and
# heal (TCP reachability probes; no ping needed). Runs inside its own private mount + network namespace (exit 77
# when namespaces are not permitted). Traffic stays in those namespaces.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/netns.sh"
ms_netns_reexec "${BASH_SOURCE[0]}" "$@"

fail() { echo "FAIL: $*" >&2; exit 1; }

# reach I J - true when node I reaches node J: a TCP connect to a closed
# port of J is refused at once when J is reachable, times out when not.
# (No ping here: ping is not installed everywhere.)
reach() {
    ms_netns_exec "$1" python3 -c '
import socket, sys
s = socket.socket(); s.settimeout(1.0)
try:
    s.connect((sys.argv[1], 9)); sys.exit(0)
except ConnectionRefusedError:
    sys.exit(0)
except OSError:
    sys.exit(1)' "$(ms_netns_ip "$2")"
}
ok() { echo "ok - $*"; }

ms_netns_setup 3
[ "$(ip netns list | grep -c "^${MS_NETNS_PREFIX}")" -eq 4 ] \
    || fail "expected 4 namespaces, got: $(ip netns list)"
ok "3 node namespaces + bridge"

ms_netns_exec 1 ip -4 addr show dev eth0 | grep -q "10.213.0.1/24" \
    || fail "node 1 has no 10.213.0.1/24"
reach 1 2 || fail "1 -> 2"
reach 3 1 || fail "3 -> 1"
ok "TCP 1 -> 2 and 3 -> 1 through the bridge"

# UDP broadcast 255.255.255.255 from node 1 reaches node 2
RECV_OUT=$(mktemp)
ms_netns_spawn 2 "$RECV_OUT" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5870)); s.settimeout(5)
data, addr = s.recvfrom(100); print(data.decode(), addr[0])'
recv_pid=$SPAWNED
got=""
for _ in $(seq 1 25); do
    ms_netns_exec 1 python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
s.sendto(b"hello-beacon", ("255.255.255.255", 5870))'
    sleep 0.2
    got=$(cat "$RECV_OUT")
    [ -n "$got" ] && break
done
wait "$recv_pid" 2>/dev/null || true
rm -f "$RECV_OUT"
[ "$got" = "hello-beacon 10.213.0.1" ] || fail "broadcast not received: '$got'"
ok "UDP broadcast 1 -> 2 (from 10.213.0.1)"

ms_netns_cut 2
if reach 1 2; then
    fail "1 -> 2 works while 2 is cut"
fi
reach 1 3 || fail "1 -> 3 while 2 is cut"
ok "cut isolates node 2 only"
ms_netns_heal 2
healed=0
for _ in $(seq 1 20); do
    if reach 1 2; then
        healed=1
        break
    fi
    sleep 0.2
done
[ "$healed" = 1 ] || fail "1 -> 2 after heal"
ok "heal restores node 2"

# a process left running inside is killed by the teardown
ms_netns_spawn 3 /dev/null sleep 300
sleeper=$SPAWNED
ms_netns_teardown
[ -z "$(ip netns list | grep "^${MS_NETNS_PREFIX}" || true)" ] \
    || fail "namespaces left: $(ip netns list)"
kill -0 "$sleeper" 2>/dev/null && fail "process in a namespace survived"
ok "teardown removes namespaces and processes"
