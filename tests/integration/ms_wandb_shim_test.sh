#!/usr/bin/env bash
# ms_wandb_shim_test - meshsweep's wandb module (node/programs/python/wandb),
# the one a program task's W&B script imports: sweep values over the
# script's defaults, history rows, summary, finish, the ignored rest of the
# API (wandb_shim_cases.py, under Debian's /usr/bin/python3).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export MESHSWEEP_SOURCE_DIR=${MESHSWEEP_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
timeout 300 /usr/bin/python3 "$HERE/wandb_shim_cases.py"
