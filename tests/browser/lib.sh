# lib.sh - shared by the dashboard's browser tests: the integration
# helpers (tests/integration/lib.sh), then the browser and the node
# modules, or skip (77) when either is missing, unless
# MESHSWEEP_REQUIRE_BROWSER=1 (tools/test.sh and CI set it: there a
# missing browser fails the test instead of hiding it).
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
BROWSER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
: "${MESHSWEEP_BROWSER_MODULES:?MESHSWEEP_BROWSER_MODULES must name the node_modules of tests/browser}"
: "${MESHSWEEP_DASHBOARD_ASSETS:?MESHSWEEP_DASHBOARD_ASSETS must name the built dashboard}"

# browser_skip REASON - skip, or fail where the browser is required.
browser_skip() {
    if [ "${MESHSWEEP_REQUIRE_BROWSER:-}" = 1 ]; then
        fail "$1 (MESHSWEEP_REQUIRE_BROWSER=1: install chromium and npm, then rebuild)"
    fi
    echo "skipped: $1"
    exit 77
}
[ -x "$MSD" ] || browser_skip "meshsweepd not built"
[ -x "$CHROMIUM" ] || browser_skip "no $CHROMIUM (Debian's chromium)"
command -v node >/dev/null || browser_skip "no node (Node.js)"
[ -f "$MESHSWEEP_BROWSER_MODULES/playwright-core/package.json" ] ||
    browser_skip "no playwright-core in $MESHSWEEP_BROWSER_MODULES (npm ci at build time)"
[ -f "$MESHSWEEP_DASHBOARD_ASSETS/index.html" ] ||
    browser_skip "no dashboard assets in $MESHSWEEP_DASHBOARD_ASSETS"
[ -f "$MESHSWEEP_DASHBOARD_ASSETS/vendor/plotly.min.js" ] ||
    browser_skip "no plotly.min.js in $MESHSWEEP_DASHBOARD_ASSETS/vendor (npm ci at build time)"
export NODE_PATH=$MESHSWEEP_BROWSER_MODULES
