#!/usr/bin/env bash
# ms_dashboard_browser_test - the dashboard in headless Chromium against a
# live meshsweepd (--no-beacon, loopback) training a real small sweep on
# the real Fashion-MNIST (Debian's dataset-fashion-mnist): the page is
# opened before the sweep is submitted; it must be live through
# /api/v1/events (the pill says "live (events)", never "polling"; the
# stream answers 200 text/event-stream; results reach the table and the
# bar moves with no REST request in between), and show the sweep, its
# progress bar advancing, the accuracy-vs-depth plot gaining points as
# results arrive, every result in the table (sortable; a row's learning
# curve on click), the axis and metric selects redrawing the plots
# (against width, then test_loss), the pool, and no console error at
# all. Saves a screenshot (PNG, path printed) in the test's build dir.
#
# The sweep: relu, 4 depths (1, 2, 4, 8) x 2 widths (32, 64) x 3 seeds =
# 24 networks, 2 epochs, batch 50, one worker, on the 60,000 real images
# (validation accuracy about 0.86): about 25 s on an idle 2-core machine
# (width 32 alone took 10 s, too short to watch; width 128 31 s), a
# minute or two when loaded, so progress is visible over many readings.
# Depths up to 8, not 4: at width 64 the first layer (784 x 64) dwarfs
# three more 64 x 64 layers, and the time-vs-depth plot showed only the
# machine's noise. Two widths, not two activations (as before): a second
# swept numeric parameter, so the page's axis select has one to choose
# (the metric plot against width: one line per depth, 95% intervals over
# the 3 seeds), at the same 24 networks.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
FMNIST=/usr/share/datasets/fashion-mnist
[ -f "$FMNIST/train-images-idx3-ubyte.gz" ] ||
    browser_skip "no $FMNIST (Debian's dataset-fashion-mnist)"
unset MESHSWEEP_DATASETS_DIR # the installed set, not a synthetic one
ms_start_daemon "$T/node" --workers 1 --no-beacon \
    --dashboard-dir "$MESHSWEEP_DASHBOARD_ASSETS"
grep -q "dashboard http://" "$DAEMON_LOG" || fail "meshsweepd does not say where the dashboard is"

cat >"$T/grid.yaml" <<'Y'
name: dashboard-live
dataset: fashion-mnist
parameters:
  activation:    {value: relu}
  hidden_layers: {values: [1, 2, 4, 8]}
  width:         {values: [32, 64]}
  seed:          {values: [1, 2, 3]}
  epochs:        {value: 2}
  batch_size:    {value: 50}
Y
shot=${MESHSWEEP_SHOT_DIR:-$PWD}/ms_dashboard_browser_test.png
start=$SECONDS
MODE=live URL="$NODE/" SHOT="$shot" EXPECT_POINTS=8 MIN_ACC=0.75 DEADLINE_S=200 \
    SUBMIT="'$MS' submit '$T/grid.yaml' --node '$NODE' >'$T/sweep.id'" \
    timeout 230 node "$BROWSER_DIR/dashboard_test.js" ||
    fail "the browser test failed (rc $?)"
[ -s "$shot" ] || fail "no screenshot at $shot"
ok "screenshot $shot ($((SECONDS - start)) s in the browser)"
