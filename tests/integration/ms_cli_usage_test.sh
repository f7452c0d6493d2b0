#!/usr/bin/env bash
# ms_cli_usage_test - every command has --help and --version; bad usage
# exits 2 with one line "meshsweep: WHERE: REASON"; an unreachable node
# exits 1 with one line.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

for cmd in train run submit status results peers datasets; do
    "$MS" $cmd --help >"$T/help.txt"
    grep -q "usage: meshsweep $cmd" "$T/help.txt" || fail "$cmd --help has no usage line"
    "$MS" $cmd --version | grep -Eq '^meshsweep [0-9]+\.[0-9]+' || fail "$cmd --version"
done
"$MS" --help | grep -q "commands:" || fail "meshsweep --help"
"$MS" --version | grep -Eq '^meshsweep [0-9]' || fail "meshsweep --version"
# train --help lists the parameters of the DESIGN.md table, with dashes.
"$MS" train --help >"$T/help.txt"
for p in --hidden-layers --width --hidden-sizes --activation --learning-rate \
         --batch-size --epochs --early-stopping --validation-split --seed; do
    grep -q -- "$p" "$T/help.txt" || fail "train --help does not list $p"
done
ok "--help and --version"

ms_expect_exit 2 "$T/e" "$MS"
ms_expect_exit 2 "$T/e" "$MS" frobnicate
ms_one_error_line "$T/e" 'frobnicate'
ms_expect_exit 2 "$T/e" "$MS" train --no-such-option 3
ms_one_error_line "$T/e" '--no-such-option'
ms_expect_exit 2 "$T/e" "$MS" train --activation rleu
ms_one_error_line "$T/e" '--activation.*rleu'
ms_expect_exit 2 "$T/e" "$MS" train --hidden-layers abc
ms_one_error_line "$T/e" '--hidden-layers'
ms_expect_exit 2 "$T/e" "$MS" train --width
ms_one_error_line "$T/e" '--width'
ms_expect_exit 2 "$T/e" "$MS" run "$T/missing.yaml"
ms_one_error_line "$T/e" 'missing.yaml'
# A missing argument: one line naming it and where the help is, not the
# whole usage text.
for cmd in run submit results "pool join" "pool"; do
    # shellcheck disable=SC2086 # "pool join": a command and its subcommand
    ms_expect_exit 2 "$T/e" "$MS" $cmd
    ms_one_error_line "$T/e" "missing .*(meshsweep $cmd --help)"
done
ms_expect_exit 2 "$T/e" "$MS" results abc
ms_one_error_line "$T/e" 'abc'
ms_expect_exit 2 "$T/e" "$MS" results 0123456789abcdef --format xml
ms_one_error_line "$T/e" '--format'
ms_expect_exit 2 "$T/e" "$MS" status --bogus
ms_one_error_line "$T/e" '--bogus'
ok "bad usage exits 2 with one line"

port=$(ms_free_port)
ms_expect_exit 1 "$T/e" "$MS" status --node "http://127.0.0.1:$port"
ms_one_error_line "$T/e" "127.0.0.1:$port"
printf 'dataset: fashion-mnist\nparameters: {width: {value: 8}}\n' >"$T/s.yaml"
ms_expect_exit 1 "$T/e" env MESHSWEEP_NODE="http://127.0.0.1:$port" "$MS" submit "$T/s.yaml"
ms_one_error_line "$T/e" "127.0.0.1:$port"
ok "unreachable node exits 1 with one line"
