#!/usr/bin/env bash
# install-deps.sh - install the Debian 12 packages meshsweep builds and runs with.
# Usage: sudo tools/install-deps.sh     (runs apt-get; needs root)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: run as root (sudo tools/install-deps.sh)" >&2
    exit 2
fi
mapfile -t pkgs < <(grep -v -E '^\s*(#|$)' "$here/packaging/build-deps.txt")
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${pkgs[@]}"
