#!/usr/bin/env bash
# ms_cli_depth_test - the depth sweep of issue 2 on tiny data:
# hidden_layers 1, 2, 4, ..., 64 at width 64, one epoch; it completes and
# --analyze prints the plateau and the time-versus-depth fit; an axis the
# spec does not sweep (--x width) is refused before anything runs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_tiny_dataset --train 600 --test 200

cat >"$T/depth.yaml" <<'Y'
name: depth
dataset: fashion-mnist
parameters:
  hidden_layers: {values: [1, 2, 4, 8, 16, 32, 64]}
  width:         {value: 64}
  activation:    {value: selu}
  epochs:        {value: 1}
  batch_size:    {value: 50}
Y
"$MS" run "$T/depth.yaml" --data-dir "$T/data" --workers 2 --analyze \
    >"$T/out.txt" 2>"$T/run.err"
[ "$(grep -Ec '^[0-9a-f]{12} ' "$T/out.txt")" = 7 ] || fail "want 7 rows: $(cat "$T/out.txt")"
grep -E '^[0-9a-f]{12} ' "$T/out.txt" | awk '{print $3}' | tr '\n' ' ' | grep -q '^1 2 4 8 16 32 64 $' ||
    fail "depths not in order"
grep -Eq '^  val_accuracy (stops|still) improving at depth [0-9]+' "$T/out.txt" ||
    fail "no plateau sentence: $(cat "$T/out.txt")"
grep -Eq 'time per epoch = [-0-9.e]+ \+ [-0-9.e]+ \* depth' "$T/out.txt" || fail "no time-vs-depth fit (intercept + slope * depth)"
grep -Eq 'R\^2 [0-9.]+' "$T/out.txt" || fail "no R^2 of the time fit"
ok "depth sweep completes; --analyze prints the plateau and the fit"

"$MS" run "$T/depth.yaml" --data-dir "$T/data" --analyze --format json >"$T/out.json" 2>/dev/null
python3 - "$T/out.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows, analysis = doc["rows"], doc["analysis"]
assert len(rows) == 7
g = analysis["groups"][0]
assert g["plateau_to"] in (1, 2, 4, 8, 16, 32, 64), g["plateau_to"]
assert g["time_fit"] and "slope" in g["time_fit"] and "r2" in g["time_fit"]
PY
ok "--analyze --format json gives the rows and the analysis"

# --x PARAM is checked against the spec's tasks before the data dir is
# touched: width takes one value here.
ms_expect_exit 2 "$T/x.err" "$MS" run "$T/depth.yaml" --data-dir "$T/fresh" --x width
grep -q "^meshsweep: --x: 'width' is not swept: it takes one value (swept numeric parameters: hidden_layers)" "$T/x.err" ||
    fail "run --x width: $(cat "$T/x.err")"
[ ! -e "$T/fresh" ] || fail "run --x width touched the data dir"
ok "run --x width is refused before anything runs, naming the swept numeric parameters"
