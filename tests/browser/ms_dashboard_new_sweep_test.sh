#!/usr/bin/env bash
# ms_dashboard_new_sweep_test - the dashboard's "New sweep" panel (issue 15,
# item 7: the 2015 workflow in the browser) in headless Chromium against a
# live meshsweepd (--open-pool alone, --no-beacon, loopback): upload a CSV
# with a header, quoted fields and string class labels (an iris-shaped
# file of 150 rows written here), pick its label column from the header
# the page shows, submit the prefilled depth sweep (made smaller), and see
# its first result plotted; a wrong spec is refused with the node's error
# shown in the panel. The node's table then holds the sweep's results,
# trained on the uploaded file.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_start_daemon "$T/node" --workers 1 --no-beacon --open-pool="newsweep-$$" \
    --dashboard-dir "$MESHSWEEP_DASHBOARD_ASSETS"
python3 - "$T/iris.csv" <<'PY'
import math, random, sys
# Three classes of four measurements, as iris has (the real species'
# means, spread 0.3); a quoted header field with a space in it, and every
# fifth species name quoted.
means = {"setosa": (5.0, 3.4, 1.5, 0.2), "versicolor": (5.9, 2.8, 4.3, 1.3),
         "virginica": (6.6, 3.0, 5.6, 2.0)}
rng = random.Random(7)
with open(sys.argv[1], "w") as f:
    f.write('sepal_length,sepal_width,"petal length",petal_width,species\n')
    for i in range(150):
        name = list(means)[i % 3]
        vals = [m + rng.gauss(0, 0.3) for m in means[name]]
        label = '"%s"' % name if i % 5 == 0 else name
        f.write(",".join("%.2f" % v for v in vals) + "," + label + "\n")
PY
shot=${MESHSWEEP_SHOT_DIR:-$PWD}/ms_dashboard_new_sweep_test.png
URL="$NODE/" CSV="$T/iris.csv" LABEL=species SHOT="$shot" DEADLINE_S=150 \
    COLUMNS="sepal_length,sepal_width,petal length,petal_width,species" \
    timeout 180 node "$BROWSER_DIR/new_sweep_test.js" | tee "$T/browser.out" ||
    fail "the browser test failed"
sweep=$(awk '$1 == "sweep" { print $2 }' "$T/browser.out")
[ -n "$sweep" ] || fail "the browser test named no sweep"
# The node trained on the uploaded file: its rows carry accuracies well
# above chance (3 classes).
python3 - "$NODE" "$sweep" <<'PY' || fail "the node's results of the sweep are not what the panel submitted"
import json, sys, time, urllib.request
node, sweep = sys.argv[1], sys.argv[2]
sweeps = json.load(urllib.request.urlopen(node + "/api/v1/sweeps", timeout=10))
full = [s["sweep_id"] for s in sweeps["sweeps"] if s["sweep_id"].startswith(sweep)]
assert len(full) == 1, full
done = []
for _ in range(120):  # the 4 tasks finish within a minute here
    rows = json.load(urllib.request.urlopen(node + "/api/v1/sweeps/%s/results" % full[0], timeout=10))["rows"]
    done = [r for r in rows if r.get("status") == "ok"]
    if len(done) >= 4:
        break
    time.sleep(0.5)
assert len(done) == 4, rows
best = max(r["test_accuracy"] for r in done)
assert best > 0.8, best
assert all(r.get("classes") == ["setosa", "versicolor", "virginica"] for r in done), done[0].get("classes")
print("results: %d ok rows, best test accuracy %.3f" % (len(done), best))
PY
[ -s "$shot" ] || fail "no screenshot at $shot"
ok "new sweep from the browser: $sweep, screenshot $shot"
