#!/usr/bin/env bash
# ctest-failed-tail.sh BUILD_DIR [LINES] - for each test that failed in the
# last ctest run in BUILD_DIR, print its name and the last LINES (default 12)
# lines of its output, from ctest's own logs (Testing/Temporary/). Prints
# nothing when no test failed.
set -euo pipefail
dir=${1:?usage: ctest-failed-tail.sh BUILD_DIR [LINES]}
lines=${2:-12}
failed=$dir/Testing/Temporary/LastTestsFailed.log
log=$dir/Testing/Temporary/LastTest.log
[ -s "$failed" ] && [ -f "$log" ] || exit 0
python3 - "$failed" "$log" "$lines" <<'EOF'
import sys
failed_path, log_path, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = [l.strip().split(":", 1)[1] for l in open(failed_path) if ":" in l]
outputs, name, buf, inside = {}, None, [], False
for line in open(log_path, errors="replace"):
    line = line.rstrip("\n")
    if line.startswith('"') and '" start time:' in line:
        name, buf, inside = line.split('"')[1], [], False
    elif name and line == "Output:":
        inside = None  # the next line is a rule of dashes
    elif inside is None:
        inside = True
    elif inside and line == "<end of output>":
        outputs[name], inside = buf, False
    elif inside:
        buf.append(line)
for n in names:
    out = outputs.get(n, ["(no output in %s)" % log_path])
    print("-- %s (last %d of %d lines)" % (n, min(keep, len(out)), len(out)))
    for l in out[-keep:]:
        print("   " + l[:200])
EOF
