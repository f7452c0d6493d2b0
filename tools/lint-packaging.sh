#!/usr/bin/env bash
# lint-packaging.sh - lint the cluster packaging (docs/CLUSTERS.md): none of
# it can run here (no Docker daemon, no Kubernetes, no Slurm), so it is
# checked statically, with Debian's tools and one pinned npm package:
#   - ShellCheck: packaging/docker/entrypoint.sh, packaging/slurm/meshsweep.sbatch,
#               this script
#   - yamllint: packaging/kubernetes/*.yaml (packaging/lint/yamllint.yaml)
#   - packaging/lint/lint_manifests.py: every manifest against the vendored
#               schema packaging/lint/k8s-schema.json (python3-yaml,
#               python3-jsonschema), then references across the files
#   - dockerfile-utils lint (npm, pinned by packaging/lint/package-lock.json)
#               the Dockerfile's syntax; packaging/lint/lint_dockerfile.py
#               its rules (stages, tags, non-root USER, HEALTHCHECK, apt lists)
# Usage: tools/lint-packaging.sh [--self-test]
#   --self-test  also lint broken copies (a misspelt manifest field, a
#                dangling Secret, a Dockerfile running as root...) and fail
#                unless each one is rejected.
# The npm package is installed at build time (`npm ci` into
# BUILD/tests/packaging/npm): MESHSWEEP_LINT_MODULES names its node_modules,
# else the first build*/tests/packaging/npm/node_modules found here.
# Exit codes: 0 clean, 1 a problem (each printed), 2 a tool is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
py=/usr/bin/python3
self_test=0
[ "${1:-}" = "--self-test" ] && self_test=1

missing=()
command -v shellcheck >/dev/null || missing+=(shellcheck)
command -v yamllint >/dev/null || missing+=(yamllint)
"$py" -c 'import yaml, jsonschema' 2>/dev/null || missing+=(python3-yaml python3-jsonschema)
modules=${MESHSWEEP_LINT_MODULES:-}
if [ -z "$modules" ]; then
    for d in build*/tests/packaging/npm/node_modules; do
        [ -x "$d/.bin/dockerfile-utils" ] && modules=$d && break
    done
fi
dfu=${modules:+$modules/.bin/dockerfile-utils}
if [ -z "$dfu" ] || ! [ -x "$dfu" ]; then
    missing+=("dockerfile-utils (npm ci at build time: packaging/lint/package-lock.json)")
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "lint-packaging: missing: ${missing[*]} (tools/install-deps.sh, then build)" >&2
    exit 2
fi

# lint_all DOCKERFILE CONTEXT MANIFEST... : 0 when every check passes.
lint_all() {
    local dockerfile=$1 ctx=$2 rc=0
    shift 2
    shellcheck packaging/docker/entrypoint.sh packaging/slurm/meshsweep.sbatch \
        tools/lint-packaging.sh || rc=1
    yamllint -s -c packaging/lint/yamllint.yaml "$@" || rc=1
    "$py" packaging/lint/lint_manifests.py packaging/lint/k8s-schema.json "$@" || rc=1
    "$dfu" lint "$dockerfile" || rc=1
    "$py" packaging/lint/lint_dockerfile.py "$dockerfile" "$ctx" || rc=1
    return $rc
}

status=0
if lint_all packaging/docker/Dockerfile . packaging/kubernetes/*.yaml; then
    echo "lint-packaging: shellcheck, yamllint, schema, dockerfile-utils and Dockerfile rules: clean"
else
    status=1
fi

if [ $self_test -eq 1 ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    k=packaging/kubernetes
    # Each case: a name, a file to break, a sed script; lint must fail.
    cases=(
        "misspelt-field|$k/daemonset.yaml|s/hostNetwork: true/hostNetwrk: true/"
        "wrong-type|$k/daemonset.yaml|s/cpu: \"2\"/cpu: \"two\"/"
        "missing-required|$k/namespace.yaml|/^value: -100$/d"
        "dangling-secret|$k/daemonset.yaml|s/secretName: meshsweep-enroll-key/secretName: meshsweep-enrol-key/"
        "selector-mismatch|$k/daemonset.yaml|/matchLabels:/,/component:/s/component: node/component: nod/"
        "latest-image|$k/seed.yaml|s#meshsweep:0.1.0#meshsweep:latest#"
        "yaml-syntax|$k/secret.yaml|s/^type: Opaque/type: Opaque: x/"
        "root-user|packaging/docker/Dockerfile|s/^USER meshsweep:meshsweep/USER root/"
        "no-healthcheck|packaging/docker/Dockerfile|/^HEALTHCHECK/,/CMD \\[/d"
        "apt-lists|packaging/docker/Dockerfile|s#rm -rf /var/lib/apt/lists/\\* /tmp/runtime#rm -rf /tmp/runtime#"
        "bad-instruction|packaging/docker/Dockerfile|s/^WORKDIR \\/src/WORKDR \\/src/"
        "latest-base|packaging/docker/Dockerfile|s/^FROM debian:12-slim/FROM debian:latest/"
    )
    for c in "${cases[@]}"; do
        IFS='|' read -r name file script <<<"$c"
        mkdir -p "$tmp/$name/k" "$tmp/$name/ctx"
        cp $k/*.yaml "$tmp/$name/k/"
        cp packaging/docker/Dockerfile "$tmp/$name/Dockerfile"
        if [ "$file" = packaging/docker/Dockerfile ]; then
            target=$tmp/$name/Dockerfile
        else
            target=$tmp/$name/k/$(basename "$file")
        fi
        sed -i -e "$script" "$target"
        if cmp -s "$file" "$target"; then
            echo "lint-packaging: self-test $name: the sed script changed nothing" >&2
            status=1
            continue
        fi
        if lint_all "$tmp/$name/Dockerfile" . "$tmp/$name"/k/*.yaml >"$tmp/$name.log" 2>&1; then
            echo "lint-packaging: self-test $name: the broken copy was NOT rejected" >&2
            status=1
        else
            echo "lint-packaging: self-test $name: rejected: $(grep -m1 -E "$tmp|^Error" "$tmp/$name.log" |
                sed "s#$tmp/##")"
        fi
    done
fi
exit $status
