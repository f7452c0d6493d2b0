#!/usr/bin/env bash
# install-deps.sh - install the Debian 12 packages meshsweep builds and runs with.
# Usage: tools/install-deps.sh     (runs apt-get as root; uses sudo when not root)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
        exec sudo "$0" "$@"
    fi
    echo "install-deps.sh: needs root (run it as root, or install sudo)" >&2
    exit 2
fi
mapfile -t pkgs < <(grep -v -E '^\s*(#|$)' "$here/packaging/build-deps.txt")
# npm installs the dashboard's plotting library and the browser test's
# playwright-core at build time (package-lock.json files). Debian's `npm`
# only where no npm command exists: a Node.js from elsewhere (e.g. a
# nodesource nodejs, which includes npm) is kept, not replaced.
if ! command -v npm >/dev/null; then
    pkgs+=(npm)
fi
export DEBIAN_FRONTEND=noninteractive
# tshark (the capture test) asks whether non-root users may capture: no
# (dumpcap stays root-only; the test runs as root in its own namespace).
echo "wireshark-common wireshark-common/install-setuid boolean false" |
    debconf-set-selections
apt-get update -q
apt-get install -y -q --no-install-recommends "${pkgs[@]}"
