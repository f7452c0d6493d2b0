#!/usr/bin/env bash
# ms_dashboard_browser_test - the dashboard in headless Chromium against a
# live meshsweepd (--no-beacon, loopback) training a real small sweep: the
# page is opened before the sweep is submitted; it must show the sweep,
# its progress bar advancing, the accuracy-vs-depth plot gaining points
# as results arrive, every result in the table (sortable; a row's
# learning curve on click), the pool, and no console error. Saves a
# screenshot (PNG, path printed) in the test's build dir.
#
# The sweep: 2 activations x 4 depths x 3 seeds = 24 tasks of 10 epochs,
# width 256, on a 28x28 Fashion-MNIST-shaped set of 4000 images, one
# worker: about 15 s on an idle machine, a minute when loaded, so progress is visible over many readings.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
python3 "$HERE/make_tiny_idx.py" idx "$T/datasets/fashion-mnist" \
    --train 4000 --test 500 --side 28 >/dev/null
export MESHSWEEP_DATASETS_DIR=$T/datasets
ms_start_daemon "$T/node" --workers 1 --no-beacon \
    --dashboard-dir "$MESHSWEEP_DASHBOARD_ASSETS"
grep -q "dashboard http://" "$DAEMON_LOG" || fail "meshsweepd does not say where the dashboard is"

cat >"$T/grid.yaml" <<'Y'
name: dashboard-live
dataset: fashion-mnist
parameters:
  activation:    {values: [relu, tanh]}
  hidden_layers: {values: [1, 2, 3, 4]}
  width:         {value: 256}
  seed:          {values: [1, 2, 3]}
  epochs:        {value: 10}
  batch_size:    {value: 50}
Y
shot=${MESHSWEEP_SHOT_DIR:-$PWD}/ms_dashboard_browser_test.png
MODE=live URL="$NODE/" SHOT="$shot" EXPECT_POINTS=8 DEADLINE_S=150 \
    SUBMIT="'$MS' submit '$T/grid.yaml' --node '$NODE' >'$T/sweep.id'" \
    timeout 170 node "$BROWSER_DIR/dashboard_test.js" ||
    fail "the browser test failed (rc $?)"
[ -s "$shot" ] || fail "no screenshot at $shot"
ok "screenshot $shot"
