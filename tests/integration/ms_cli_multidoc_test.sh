#!/usr/bin/env bash
# ms_cli_multidoc_test - a spec file of several sweeps, one per YAML
# document: `meshsweep run` checks every document first, then runs the
# sweeps one after another on one data dir, each table after a heading
# (--format json: one array; --dry-run: each document's tasks); a bad
# second document stops everything before a data dir exists, naming
# "document 2" and the file's line; `meshsweep submit` of the same file to
# a daemon (--no-beacon, loopback) prints one id a line, the ids `run`
# computed, and sends nothing when a document is bad. Noop sweeps: fast.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ms_tiny_dataset --train 200 --test 50
cd "$T"

cat >"$T/two.yaml" <<'Y'
# Two families, one file.
name: multi-a   # --- in a comment does not split
dataset: fashion-mnist
parameters:
  kind: {value: noop}
  seed: {values: [1, 2]}
---
name: "multi --- b"
dataset: fashion-mnist
parameters:
  kind: {value: noop}
  seed: {values: [1, 2, 3]}
...
Y

# --dry-run: each document's tasks, nothing stored.
"$MS" run "$T/two.yaml" --dry-run >"$T/dry.txt"
mapfile -t ids < <(grep -E '^sweep [0-9a-f]{64}: ' "$T/dry.txt" | cut -c7-70)
[ "${#ids[@]}" = 2 ] || fail "dry run: $(cat "$T/dry.txt")"
grep -q "^sweep ${ids[0]}: 2 tasks$" "$T/dry.txt" || fail "dry run, document 1: $(cat "$T/dry.txt")"
grep -q "^sweep ${ids[1]}: 3 tasks$" "$T/dry.txt" || fail "dry run, document 2: $(cat "$T/dry.txt")"
[ "$(grep -cE '^[0-9a-f]{64}  ' "$T/dry.txt")" = 5 ] || fail "dry run lists not 5 tasks"
"$MS" run "$T/two.yaml" --dry-run --json >"$T/dry.json"
[ "$(ms_json_get "$T/dry.json" '[x["n_tasks"] for x in d]')" = "[2, 3]" ] ||
    fail "dry run --json: not an array of both: $(head -c 300 "$T/dry.json")"
[ ! -e "$T/meshsweep-data" ] || fail "--dry-run created a data dir"
ok "--dry-run lists both documents' tasks (text and one JSON array)"

# run: both sweeps, one after another, each after its heading.
"$MS" run "$T/two.yaml" --workers 1 --data-dir "$T/d" >"$T/run.txt" 2>"$T/run.err" ||
    fail "run of two documents: rc $?: $(tail -3 "$T/run.err")"
h1="== sweep ${ids[0]:0:12} multi-a (document 1 of 2)"
h2="== sweep ${ids[1]:0:12} multi --- b (document 2 of 2)"
[ "$(grep -c '^== sweep ' "$T/run.txt")" = 2 ] || fail "headings: $(cat "$T/run.txt")"
grep -qxF "$h1" "$T/run.txt" || fail "no heading '$h1': $(cat "$T/run.txt")"
grep -qxF "$h2" "$T/run.txt" || fail "no heading '$h2': $(cat "$T/run.txt")"
# Rows of each sweep under its own heading, all ok.
awk -v h1="$h1" -v h2="$h2" '$0 == h1 {s = 1; next} $0 == h2 {s = 2; next}
    / ok / {n[s]++} END {print n[1] + 0, n[2] + 0}' "$T/run.txt" >"$T/counts.txt"
[ "$(cat "$T/counts.txt")" = "2 3" ] || fail "rows per sweep $(cat "$T/counts.txt"), want 2 3: $(cat "$T/run.txt")"
grep -q "sweep ${ids[0]}: 2 of 2 tasks done" "$T/run.err" || fail "first sweep: $(cat "$T/run.err")"
grep -q "sweep ${ids[1]}: 3 of 3 tasks done" "$T/run.err" || fail "second sweep: $(cat "$T/run.err")"
ok "run prints both sweeps' rows, each after its heading"

"$MS" run "$T/two.yaml" --workers 1 --data-dir "$T/d" --format json --quiet >"$T/run.json" 2>"$T/runj.err"
[ "$(ms_json_get "$T/run.json" '[len(x) for x in d]')" = "[2, 3]" ] ||
    fail "--format json: not one array of both: $(head -c 300 "$T/run.json")"
grep -qxF "$h2" "$T/runj.err" || fail "--format json: heading not on stderr"
ok "--format json prints one array; the headings go to stderr"

# One document: no heading, as before.
awk 'NR > 1 && /^---/ {exit} {print}' "$T/two.yaml" >"$T/one.yaml"
"$MS" run "$T/one.yaml" --workers 1 --data-dir "$T/d" >"$T/one.txt" 2>/dev/null
! grep -q '^== sweep' "$T/one.txt" || fail "one document printed a heading"
[ "$(grep -c ' ok ' "$T/one.txt")" = 2 ] || fail "one document: $(cat "$T/one.txt")"
ok "one document prints as before"

# A bad second document: nothing runs, no data dir, exit 2.
cat >"$T/bad.yaml" <<'Y'
name: fine
dataset: fashion-mnist
parameters:
  kind: {value: noop}
---
name: broken
dataset: fashion-mnist
parameters:
  init: {value: bogus}
Y
ms_expect_exit 2 "$T/bad.err" "$MS" run "$T/bad.yaml" --data-dir "$T/bad-data"
ms_one_error_line "$T/bad.err" '^meshsweep: .*bad\.yaml: document 2: parameters\.init.*\(line 9\)'
[ ! -e "$T/bad-data" ] || fail "a bad document 2 left a data dir"
printf 'name: fine\ndataset: fashion-mnist\n---\nname: b\nparameters: {width: {values: [1, 2}\n' >"$T/syntax.yaml"
ms_expect_exit 2 "$T/syntax.err" "$MS" run "$T/syntax.yaml" --data-dir "$T/bad-data"
ms_one_error_line "$T/syntax.err" 'syntax\.yaml: document 2: line 5, column [0-9]+: '
printf 'name: fine\ndataset: fashion-mnist\n---\n' >"$T/empty.yaml"
ms_expect_exit 2 "$T/empty.err" "$MS" run "$T/empty.yaml" --data-dir "$T/bad-data"
ms_one_error_line "$T/empty.err" 'empty\.yaml: document 2: line 3, column 1: an empty YAML document'
[ ! -e "$T/bad-data" ] || fail "a bad document left a data dir"
ok "a bad document 2 stops the run before the data dir (exit 2, 'document 2')"

# submit: every document checked, then one id a line.
[ -x "$MSD" ] || { echo "meshsweepd not built: submit part skipped"; exit 0; }
ms_start_daemon "$T/node" --workers 1 --no-beacon
ms_expect_exit 2 "$T/sbad.err" "$MS" submit "$T/bad.yaml"
ms_one_error_line "$T/sbad.err" '^meshsweep: .*bad\.yaml: document 2: parameters\.init'
"$MS" status --json >"$T/status0.json"
[ "$(ms_json_get "$T/status0.json" 'len(d["sweeps"] if isinstance(d, dict) else d)')" = 0 ] ||
    fail "a bad document 2 sent document 1: $(cat "$T/status0.json")"
"$MS" submit "$T/two.yaml" >"$T/submit.txt" 2>"$T/submit.err" ||
    fail "submit of two documents: $(cat "$T/submit.err")"
[ "$(cat "$T/submit.txt")" = "$(printf '%s\n%s' "${ids[0]}" "${ids[1]}")" ] ||
    fail "submit printed '$(cat "$T/submit.txt")', want the two ids of run"
[ "$(grep -c '^submitted: sweep ' "$T/submit.err")" = 2 ] || fail "submit stderr: $(cat "$T/submit.err")"
"$MS" status --json >"$T/status1.json"
[ "$(ms_json_get "$T/status1.json" 'len(d["sweeps"] if isinstance(d, dict) else d)')" = 2 ] ||
    fail "the node does not list two sweeps: $(cat "$T/status1.json")"
ok "submit of two documents prints both ids, in order; a bad one sends nothing"

# submit checks every document's data files before it sends anything: a
# CSV with a missing value in document 2 stops document 1 too (as run).
python3 "$HERE/make_tiny_idx.py" csv "$T/csv" --train 100 --test 20
awk -F, -v OFS=, 'NR == 5 {$3 = ""} {print}' "$T/csv/train.csv" >"$T/csv/missing.csv"
cat >"$T/e4.yaml" <<'Y'
name: csv-first
dataset: fashion-mnist
parameters:
  kind: {value: noop}
---
name: csv-second
dataset: {file: csv/missing.csv, label: label}
parameters:
  kind: {value: noop}
Y
# refused_submit CODE NAME PATTERN: submit NAME.yaml exits CODE with one
# error line matching PATTERN, prints no id, and the node has no new sweep.
refused_submit() {
    local before
    before=$(n_sweeps)
    ms_expect_exit "$1" "$T/$2.err" "$MS" submit "$T/$2.yaml"
    ms_one_error_line "$T/$2.err" "$3"
    [ ! -s "$T/$2.err.stdout" ] || fail "$2: printed an id: $(cat "$T/$2.err.stdout")"
    [ "$(n_sweeps)" = "$before" ] || fail "$2: a sweep was submitted: $(cat "$T/n_sweeps.json")"
}
n_sweeps() {
    "$MS" status --json >"$T/n_sweeps.json"
    ms_json_get "$T/n_sweeps.json" 'len(d["sweeps"] if isinstance(d, dict) else d)'
}
refused_submit 2 e4 'e4\.yaml: document 2: .*missing\.csv:5: .*missing value'
ok "submit checks document 2's CSV before sending document 1"

# This node is in no pool: it takes no uploads. Every document's files
# go up before any sweep is submitted, so nothing is submitted.
cat >"$T/np.yaml" <<'Y'
name: np-first
dataset: fashion-mnist
parameters:
  kind: {value: noop}
---
name: np-second
dataset: {train: csv/train.csv, test: csv/test.csv, label: label}
parameters:
  kind: {value: noop}
Y
refused_submit 1 np 'train\.csv: upload: this node takes no uploads \(a file dataset needs a node in a pool: meshsweepd --open-pool'
ok "a node that takes no uploads gets no sweep of the file, and says what it needs"

# What only the node can refuse (here: over its task limit) after it took
# document 1: a line says which documents were submitted.
{
    printf 'name: partial-first\ndataset: fashion-mnist\nparameters:\n  kind: {value: noop}\n---\n'
    printf 'name: partial-second\ndataset: fashion-mnist\nparameters:\n  kind: {value: noop}\n'
    printf '  seed: {values: [%s]}\n' "$(seq -s, 1 1001)"
    printf '  width: {values: [%s]}\n' "$(seq -s, 1 1000)"
} >"$T/partial.yaml"
rc=0
"$MS" submit "$T/partial.yaml" >"$T/partial.out" 2>"$T/partial.err" || rc=$?
[ "$rc" != 0 ] || fail "a sweep over the node's task limit was taken"
[ "$(grep -cE '^[0-9a-f]{64}$' "$T/partial.out")" = 1 ] || fail "partial submit stdout: $(cat "$T/partial.out")"
grep -qxF "meshsweep: $T/partial.yaml: document 1 was submitted (the ids above); document 2 was not" "$T/partial.err" ||
    fail "no line saying which documents were submitted: $(cat "$T/partial.err")"
ok "a later document refused by the node: the line says document 1 was submitted"

# The API itself takes one document a request, and says where several go.
code=$(curl -s -o "$T/post.json" -w '%{http_code}' -H 'Content-Type: application/yaml' \
    --data-binary @"$T/two.yaml" "$NODE/api/v1/sweeps")
[ "$code" = 400 ] || fail "POST of two documents: HTTP $code: $(cat "$T/post.json")"
grep -q 'meshsweep submit and meshsweep run take a file of several documents' "$T/post.json" ||
    fail "POST of two documents: $(cat "$T/post.json")"
ok "POST /api/v1/sweeps refuses a second document, pointing at submit and run"
