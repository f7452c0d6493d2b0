#!/usr/bin/python3
"""lint_manifests.py - check Kubernetes manifests without kubectl or a cluster.

Usage: lint_manifests.py SCHEMA.json FILE.yaml...

Each YAML document is parsed (python3-yaml, safe loader) and validated
against the definition for its kind in SCHEMA.json (python3-jsonschema,
draft 2020-12; packaging/lint/k8s-schema.json says where it comes from).
Then the documents are checked together:
  - namespaced objects name a namespace; no kind/name is defined twice;
  - a workload's selector matches its pod template's labels, and every
    Service selects some workload's pods;
  - every volumeMount names a volume (or a StatefulSet claim template);
  - every Secret, ConfigMap, PriorityClass and serviceName referred to is
    defined in the files given;
  - every image has a tag that is not `latest`; every main container has
    cpu and memory limits.
Prints one line per problem (FILE: document N (KIND NAME): where: what) and
exits 1 when there is any, 2 on bad usage, 0 when all is well.
"""
import json
import sys

import jsonschema
import yaml

NAMESPACED = {"DaemonSet", "StatefulSet", "Service", "Secret", "ConfigMap"}
WORKLOADS = {"DaemonSet", "StatefulSet"}


def where(path):
    """A jsonschema error path as a.b[2].c"""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(document)"


def main(argv):
    if len(argv) < 3:
        print("usage: lint_manifests.py SCHEMA.json FILE.yaml...", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    defs = schema["$defs"]
    problems = []
    docs = []  # (label, doc)
    for path in argv[2:]:
        try:
            with open(path, encoding="utf-8") as f:
                loaded = list(yaml.safe_load_all(f))
        except (OSError, yaml.YAMLError) as e:
            problems.append(f"{path}: {e}".replace("\n", " "))
            continue
        for i, doc in enumerate(loaded, 1):
            if doc is None:
                continue
            kind = doc.get("kind") if isinstance(doc, dict) else None
            name = (doc.get("metadata") or {}).get("name", "?") if kind else "?"
            label = f"{path}: document {i} ({kind} {name})"
            if kind not in defs or kind[0].islower():
                problems.append(f"{label}: kind {kind!r} is not one the schema knows "
                                f"({', '.join(sorted(k for k in defs if k[0].isupper() and k in schema_kinds(schema)))})")
                continue
            sub = dict(defs[kind])
            sub["$defs"] = defs
            validator = jsonschema.Draft202012Validator(sub)
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            for e in errors:
                problems.append(f"{label}: {where(e.absolute_path)}: {e.message}")
            if not errors:
                docs.append((label, doc))
    problems += cross_checks(docs)
    for p in problems:
        print(p)
    if problems:
        print(f"lint_manifests: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"lint_manifests: {len(docs)} documents in {len(argv) - 2} files valid")
    return 0


def schema_kinds(schema):
    """The kinds the top-level oneOf lists."""
    return {ref["$ref"].rsplit("/", 1)[1] for ref in schema.get("oneOf", [])}


def cross_checks(docs):
    problems = []
    seen = {}
    defined = {}
    for label, doc in docs:
        kind, meta = doc["kind"], doc["metadata"]
        key = (kind, meta.get("namespace", ""), meta["name"])
        if key in seen:
            problems.append(f"{label}: {kind} {meta['name']} is also defined at {seen[key]}")
        seen[key] = label
        defined.setdefault(kind, set()).add(meta["name"])
        if kind in NAMESPACED and not meta.get("namespace"):
            problems.append(f"{label}: metadata.namespace: missing (a {kind} is namespaced)")
    pod_labels = []
    for label, doc in docs:
        kind, spec = doc["kind"], doc.get("spec", {})
        if kind not in WORKLOADS:
            continue
        tmpl = spec["template"]
        labels = tmpl["metadata"].get("labels", {})
        pod_labels.append(labels)
        want = spec["selector"].get("matchLabels", {})
        if not want:
            problems.append(f"{label}: spec.selector.matchLabels: empty")
        for k, v in want.items():
            if labels.get(k) != v:
                problems.append(f"{label}: spec.selector.matchLabels.{k}={v}: not a label of "
                                f"spec.template.metadata.labels")
        pod = tmpl["spec"]
        volumes = {v["name"] for v in pod.get("volumes", [])}
        volumes |= {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])
                    if "name" in c["metadata"]}
        for v in pod.get("volumes", []):
            if "secret" in v and v["secret"].get("secretName") not in defined.get("Secret", ()):
                problems.append(f"{label}: volume {v['name']}: Secret "
                                f"{v['secret'].get('secretName')!r} is not defined")
            if "configMap" in v and v["configMap"].get("name") not in defined.get("ConfigMap", ()):
                problems.append(f"{label}: volume {v['name']}: ConfigMap "
                                f"{v['configMap'].get('name')!r} is not defined")
        pc = pod.get("priorityClassName")
        if pc and pc not in defined.get("PriorityClass", ()):
            problems.append(f"{label}: priorityClassName {pc!r}: no such PriorityClass")
        if kind == "StatefulSet" and spec.get("serviceName") not in defined.get("Service", ()):
            problems.append(f"{label}: spec.serviceName {spec.get('serviceName')!r}: no such Service")
        for group in ("initContainers", "containers"):
            for c in pod.get(group, []):
                cl = f"{label}: {group} {c['name']}"
                image = c.get("image", "")
                tag = image.rsplit("/", 1)[-1].partition(":")[2] if "@" not in image else "digest"
                if not image:
                    problems.append(f"{cl}: no image")
                elif not tag or tag == "latest":
                    problems.append(f"{cl}: image {image!r}: give a version tag (not latest)")
                for m in c.get("volumeMounts", []):
                    if m["name"] not in volumes:
                        problems.append(f"{cl}: volumeMount {m['name']!r}: no such volume")
                for e in c.get("envFrom", []):
                    for ref, k in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                        if ref in e and e[ref]["name"] not in defined.get(k, ()):
                            problems.append(f"{cl}: envFrom {k} {e[ref]['name']!r} is not defined")
                limits = c.get("resources", {}).get("limits", {})
                if group == "containers" and not ("cpu" in limits and "memory" in limits):
                    problems.append(f"{cl}: resources.limits: give cpu and memory")
    for label, doc in docs:
        if doc["kind"] != "Service":
            continue
        sel = doc["spec"].get("selector", {})
        if not sel:
            problems.append(f"{label}: spec.selector: empty")
        elif not any(all(lab.get(k) == v for k, v in sel.items()) for lab in pod_labels):
            problems.append(f"{label}: spec.selector {sel}: selects no workload's pods")
    return problems


if __name__ == "__main__":
    sys.exit(main(sys.argv))
