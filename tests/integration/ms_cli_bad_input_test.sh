#!/usr/bin/env bash
# ms_cli_bad_input_test - bad data and bad specs: each gives exit 2 and one
# line naming the file or the key, and leaves the store unchanged
# (issue 2, "Bad input"): truncated IDX, IDX label count differing from
# the images, an IDX label out of range, CSV with a ragged row, CSV with a
# non-number, a spec with an unknown key, a spec with an empty grid.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_tiny_dataset --train 200 --test 50
good_ds=$MESHSWEEP_DATASETS_DIR
data=$T/data

# A store with one finished sweep, to check it is left untouched.
cat >"$T/good.yaml" <<'Y'
name: good
dataset: fashion-mnist
parameters:
  width: {value: 8}
  epochs: {value: 1}
Y
"$MS" run "$T/good.yaml" --data-dir "$data" --workers 1 --quiet >/dev/null
store_sum() { find "$data" -type f ! -name '*.lock' ! -name 'lock.mdb' -print0 | sort -z | xargs -0 sha256sum; }
store_sum >"$T/before.sum"
store_unchanged() {
    store_sum >"$T/after.sum"
    cmp -s "$T/before.sum" "$T/after.sum" || { diff "$T/before.sum" "$T/after.sum" >&2; fail "store changed after: $1"; }
}

# -- IDX faults: a built-in dataset whose files are broken.
for fault in truncated count label; do
    python3 "$HERE/make_tiny_idx.py" idx "$T/bad-$fault/fashion-mnist" \
        --train 200 --test 50 --fault $fault
    export MESHSWEEP_DATASETS_DIR=$T/bad-$fault
    ms_expect_exit 2 "$T/e" "$MS" train --epochs 1 --width 8
    ms_one_error_line "$T/e" 'train-(images|labels)-idx[13]-ubyte'
    ms_expect_exit 2 "$T/e" "$MS" run "$T/good.yaml" --data-dir "$data" --quiet
    ms_one_error_line "$T/e" 'train-(images|labels)-idx[13]-ubyte'
    store_unchanged "IDX fault $fault"
    ok "IDX $fault: exit 2, one line naming the file, store unchanged"
done
export MESHSWEEP_DATASETS_DIR=$good_ds

# -- CSV faults: a file dataset named in the spec.
for fault in ragged nonnumber; do
    python3 "$HERE/make_tiny_idx.py" csv "$T/csv-$fault" --train 50 --test 20 --fault $fault
    cat >"$T/csv-$fault.yaml" <<Y
name: csv-$fault
dataset: {train: $T/csv-$fault/train.csv, test: $T/csv-$fault/test.csv, label: label}
parameters:
  width: {value: 8}
  epochs: {value: 1}
Y
    ms_expect_exit 2 "$T/e" "$MS" run "$T/csv-$fault.yaml" --data-dir "$data" --quiet
    ms_one_error_line "$T/e" "csv-$fault/train.csv"
    ms_expect_exit 2 "$T/e" "$MS" train --train "$T/csv-$fault/train.csv" \
        --test "$T/csv-$fault/test.csv" --epochs 1
    ms_one_error_line "$T/e" "csv-$fault/train.csv"
    store_unchanged "CSV fault $fault"
    ok "CSV $fault: exit 2, one line naming the file, store unchanged"
done

# -- Spec faults.
cat >"$T/unknown-key.yaml" <<'Y'
name: bad
dataset: fashion-mnist
colour: blue
parameters:
  width: {value: 8}
Y
ms_expect_exit 2 "$T/e" "$MS" run "$T/unknown-key.yaml" --data-dir "$data" --quiet
ms_one_error_line "$T/e" 'unknown-key.yaml.*colour'
store_unchanged "unknown key"
cat >"$T/unknown-param.yaml" <<'Y'
name: bad
dataset: fashion-mnist
parameters:
  width: {value: 8}
  widht: {values: [1, 2]}
Y
ms_expect_exit 2 "$T/e" "$MS" run "$T/unknown-param.yaml" --data-dir "$data" --quiet
ms_one_error_line "$T/e" 'parameters\.widht'
store_unchanged "unknown parameter"
cat >"$T/empty-grid.yaml" <<'Y'
name: bad
dataset: fashion-mnist
method: grid
parameters:
  width: {values: []}
Y
ms_expect_exit 2 "$T/e" "$MS" run "$T/empty-grid.yaml" --data-dir "$data" --quiet
ms_one_error_line "$T/e" 'empty-grid.yaml.*parameters\.width'
store_unchanged "empty grid"
ok "bad specs: exit 2 naming the key, store unchanged"

# A bad spec never creates a data dir.
ms_expect_exit 2 "$T/e" "$MS" run "$T/empty-grid.yaml" --data-dir "$T/fresh" --quiet
[ ! -e "$T/fresh" ] || fail "a refused spec created its data dir"
ok "a refused spec creates nothing"

# A spec file that is missing or a directory is bad input (exit 2, one
# line naming it), for submit as for run; no node is needed to say so.
# (port 9 of loopback: nothing listens, so contacting a node would fail)
for cmd in "submit --node http://127.0.0.1:9" "run --data-dir $T/unused"; do
    # shellcheck disable=SC2086 # the command and its option, split
    ms_expect_exit 2 "$T/e" "$MS" $cmd "$T/no-such-spec.yaml"
    ms_one_error_line "$T/e" 'no-such-spec.yaml: cannot open'
    # shellcheck disable=SC2086
    ms_expect_exit 2 "$T/e" "$MS" $cmd "$T"
    ms_one_error_line "$T/e" 'is a directory'
done
[ ! -e "$T/unused" ] || fail "a missing spec created a data dir"
ok "a missing spec file or a directory: exit 2, one line"

# A malformed spec is refused by submit before any node is contacted: the
# key named, exit 2 (port 9: nothing listens, so a "cannot reach" would
# mean the node was asked first).
printf 'name: x\ndataset: fashion-mnist\ncolour: red\nparameters:\n  width: {value: 3}\n' >"$T/colour.yaml"
ms_expect_exit 2 "$T/e" "$MS" submit --node http://127.0.0.1:9 "$T/colour.yaml"
ms_one_error_line "$T/e" 'colour.yaml: colour: unknown key'
ok "a malformed spec is refused before the node is contacted"
