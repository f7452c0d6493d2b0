#!/usr/bin/env bash
# ms_netns_lab_long_test.sh - ms_netns_lab_test.sh with the issue's 60 s
# holds (each node keeps both peers alive for 60 s, twice): label slow.
set -euo pipefail
MS_LAB_HOLD_S=60 exec bash "$(dirname "${BASH_SOURCE[0]}")/ms_netns_lab_test.sh" "$@"
