#!/usr/bin/env bash
# meshsweep-entrypoint - start meshsweepd in a container (docs/CLUSTERS.md).
#
#   meshsweep-entrypoint [MESHSWEEPD_OPTION...]  run the node (the default)
#   meshsweep-entrypoint healthcheck             exit 0 when /api/v1/status answers
#   meshsweep-entrypoint node-id                 print this node's id (first start made it)
#   meshsweep-entrypoint COMMAND [ARG...]        run COMMAND (e.g. meshsweep status)
#
# The node's identity is its own: meshsweepd makes the key pair in the data
# volume at first start, and when the node has no certificate yet it issues
# one with the enrollment key mounted as a secret. Never copy one data
# volume (identity/) onto several machines.
#
# Environment (defaults in brackets):
#   MESHSWEEP_DATA_DIR     the node's data volume [/var/lib/meshsweep]
#   MESHSWEEP_ENROLL_KEY   enrollment kit (`meshsweep pool enroll`), needed
#                          until the node has identity/node.cert
#                          [/run/secrets/meshsweep-enroll-key]
#   MESHSWEEP_SEED_PEERS   peers to join, NODE_ID@tcp://HOST:PORT, separated
#                          by spaces or commas; a node given its own id skips
#                          it, so every node may get the same list []
#   MESHSWEEP_API          API address [0.0.0.0:5872]; beyond loopback it asks
#                          for the token in MESHSWEEP_API_TOKEN_FILE
#   MESHSWEEP_API_TOKEN_FILE  [DATA_DIR/api-token, made 0600 at first start]
#   MESHSWEEP_MESH_PORT    mesh TCP port [5871]
#   MESHSWEEP_WORKERS      worker processes, 0: one per core [0]
#   MESHSWEEP_BEACON       1: UDP beacons on (LAN discovery) [0]
#   MESHSWEEP_OPEN_POOL    a pool name: an open pool with no authority and no
#                          enrollment (tests, a trusted LAN only) []
#   MESHSWEEP_CONFIG       an INI file of meshsweepd options []
# Exit codes: meshsweepd's; 2 for bad settings, with one line saying which.
set -euo pipefail

prog=meshsweep-entrypoint
data=${MESHSWEEP_DATA_DIR:-/var/lib/meshsweep}
kit=${MESHSWEEP_ENROLL_KEY:-/run/secrets/meshsweep-enroll-key}
api=${MESHSWEEP_API:-0.0.0.0:5872}
token_file=${MESHSWEEP_API_TOKEN_FILE:-$data/api-token}
mesh_port=${MESHSWEEP_MESH_PORT:-5871}
workers=${MESHSWEEP_WORKERS:-0}
beacon=${MESHSWEEP_BEACON:-0}
open_pool=${MESHSWEEP_OPEN_POOL:-}
config=${MESHSWEEP_CONFIG:-}
meshsweepd=${MESHSWEEPD:-meshsweepd}

die() {
    echo "$prog: $*" >&2
    exit 2
}

# The API's port, from ADDR:PORT.
api_port() {
    local port=${api##*:}
    [[ $port =~ ^[0-9]+$ ]] || die "MESHSWEEP_API '$api': expected ADDR:PORT"
    echo "$port"
}

healthcheck() {
    local url auth=()
    url="http://127.0.0.1:$(api_port)/api/v1/status"
    if [ -r "$token_file" ]; then
        auth=(-H "Authorization: Bearer $(head -n 1 "$token_file")")
    fi
    exec curl -fsS --max-time 8 -o /dev/null "${auth[@]}" "$url"
}

case "${1:-}" in
healthcheck)
    healthcheck
    ;;
node-id)
    [ -s "$data/identity/node.pub" ] ||
        die "$data/identity/node.pub: no identity yet (the node makes it at first start)"
    head -n 1 "$data/identity/node.pub"
    exit 0
    ;;
"" | -*) ;; # run the node, options appended
*)
    exec "$@"
    ;;
esac

# The data volume: the node keeps identity/, store/ and its token here.
mkdir -p "$data" 2>/dev/null || true
if ! [ -d "$data" ] || ! [ -w "$data" ]; then
    die "data dir $data is missing or not writable by uid $(id -u) (chown it, or mount a volume)"
fi
chmod 0700 "$data" 2>/dev/null || true

[[ $mesh_port =~ ^[0-9]+$ ]] || die "MESHSWEEP_MESH_PORT '$mesh_port': not a port number"
[[ $workers =~ ^[0-9]+$ ]] || die "MESHSWEEP_WORKERS '$workers': not a number"
api_port >/dev/null

args=(--data-dir "$data" --api "$api" --api-token-file "$token_file"
    --mesh-port "$mesh_port" --workers "$workers")
[ "$beacon" = 1 ] || args+=(--no-beacon)
[ -z "$config" ] || args+=(--config "$config")

# Peers: NODE_ID@tcp://HOST:PORT (a pool with an authority needs the id:
# the CURVE key of the link is derived from it).
peers=${MESHSWEEP_SEED_PEERS:-}
read -r -a seeds <<<"${peers//,/ }"
for peer in "${seeds[@]}"; do
    if [ -z "$open_pool" ] && ! [[ $peer =~ ^[0-9a-fA-F]{64}@tcp://[^[:space:]]+:[0-9]+$ ]]; then
        die "MESHSWEEP_SEED_PEERS: '$peer': expected NODE_ID@tcp://HOST:PORT (NODE_ID: 64 hex, the seed's identity/node.pub)"
    fi
    args+=(--peer "$peer")
done

if [ -n "$open_pool" ]; then
    echo "$prog: open pool '$open_pool': no authority, every node admitted (trusted networks only)" >&2
    args+=("--open-pool=$open_pool")
elif [ ! -s "$data/identity/node.cert" ]; then
    # First start (or not enrolled yet): meshsweepd makes this node's own
    # key and certifies it with the kit. It refuses a kit others may read,
    # and a Kubernetes or Compose secret is often 0440/0644 or owned by
    # another uid: give it a private copy in memory (/dev/shm, the
    # container's own; it goes with the container).
    [ -r "$kit" ] ||
        die "no certificate in $data/identity and no readable enrollment key at $kit: mount the kit of \`meshsweep pool enroll\` there as a secret (docs/CLUSTERS.md)"
    kit_arg=$kit
    if [ "$(stat -c '%u %a' "$kit")" != "$(id -u) 600" ] &&
        [ "$(stat -c '%u %a' "$kit")" != "$(id -u) 400" ]; then
        tmp=$(mktemp -d /dev/shm/meshsweep-enroll.XXXXXX 2>/dev/null ||
            mktemp -d "${TMPDIR:-/tmp}/meshsweep-enroll.XXXXXX")
        chmod 0700 "$tmp"
        (umask 077 && cat "$kit" >"$tmp/enroll.key")
        kit_arg=$tmp/enroll.key
        # The node reads it once, at start: remove the copy when the
        # certificate is saved (or after 10 minutes). Detached (PID 1 reaps
        # it), so that meshsweepd never sees a child it did not start.
        cert=$data/identity/node.cert
        ( (for _ in $(seq 600); do
            [ -s "$cert" ] && break
            sleep 1
        done
        rm -rf "$tmp") </dev/null >/dev/null 2>&1 &)
    fi
    args+=(--enroll-key "$kit_arg")
    echo "$prog: enrolling this node with $kit (its own key, made in $data/identity)" >&2
fi

exec "$meshsweepd" "${args[@]}" "$@"
