#!/usr/bin/python3
"""lint_dockerfile.py - meshsweep's rules for its Dockerfile (no Docker needed).

Usage: lint_dockerfile.py DOCKERFILE CONTEXT_DIR

dockerfile-utils (npm, run by tools/lint-packaging.sh) checks the syntax of
each instruction; this script parses the file (line continuations,
comments, JSON or shell form) and checks what the image must be:
  - multi-stage: at least two FROM; every FROM image has a version tag
    (not `latest`, not none); COPY --from names an earlier stage;
  - every RUN that runs `apt-get install` passes --no-install-recommends
    and -y, and removes /var/lib/apt/lists/* in the same RUN (no stale
    lists in a layer);
  - the last stage: a USER that is not root (not root, 0 or root:...),
    a HEALTHCHECK with CMD, EXPOSE of the mesh (5871) and API (5872) ports,
    an ENTRYPOINT in JSON (exec) form;
  - every COPY/ADD source outside --from exists in CONTEXT_DIR, and every
    package list the RUNs read (packaging/docker/*-deps.txt) lists only
    packages the project's packaging/build-deps.txt has (npm aside) or
    runtime ones.
Prints one line per problem (FILE:LINE: what); exits 1 when there is any.
"""
import json
import os
import re
import sys


def instructions(path):
    """(line, KEYWORD, argument text) of each instruction."""
    out = []
    buf, start = "", 0
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not buf and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if buf and line.lstrip().startswith("#"):
                continue  # a comment inside a continued instruction
            if not buf:
                start = n
            if line.endswith("\\"):
                buf += line[:-1] + " "
                continue
            buf += line
            word, _, rest = buf.strip().partition(" ")
            out.append((start, word.upper(), rest.strip()))
            buf = ""
    if buf:
        out.append((start, "<UNFINISHED>", buf))
    return out


def main(argv):
    if len(argv) != 3:
        print("usage: lint_dockerfile.py DOCKERFILE CONTEXT_DIR", file=sys.stderr)
        return 2
    path, ctx = argv[1], argv[2]
    problems = []

    def bad(line, what):
        problems.append(f"{path}:{line}: {what}")

    ins = instructions(path)
    stages = []  # [{name, line, ins: [...]}]
    for line, word, rest in ins:
        if word == "<UNFINISHED>":
            bad(line, "instruction continued past the end of the file")
        elif word == "FROM":
            m = re.match(r"^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
            if not m:
                bad(line, f"FROM {rest!r}: expected IMAGE[:TAG] [AS NAME]")
                stages.append({"name": None, "line": line, "ins": []})
                continue
            image, name = m.group(1), m.group(2)
            known = [s["name"] for s in stages]
            if image not in known and "@sha256:" not in image:
                tag = image.rsplit("/", 1)[-1].partition(":")[2]
                if not tag:
                    bad(line, f"FROM {image}: no tag (pin a version, e.g. debian:12)")
                elif tag == "latest":
                    bad(line, f"FROM {image}: `latest` moves; pin a version")
            stages.append({"name": name, "line": line, "ins": []})
        elif not stages:
            if word != "ARG":
                bad(line, f"{word} before the first FROM")
        else:
            stages[-1]["ins"].append((line, word, rest))
    if len(stages) < 2:
        bad(1, f"{len(stages)} FROM stage(s): expected a multi-stage build (build + runtime)")
    names = set()
    lists = []
    for st in stages:
        for line, word, rest in st["ins"]:
            if word in ("COPY", "ADD"):
                parts = rest.split()
                src_from = [p for p in parts if p.startswith("--from=")]
                files = [p for p in parts if not p.startswith("--")]
                if src_from:
                    ref = src_from[0].split("=", 1)[1]
                    if ref not in names and not ref.isdigit():
                        bad(line, f"{word} --from={ref}: no earlier stage of that name")
                    continue
                if rest.startswith("["):
                    try:
                        files = json.loads(rest)
                    except ValueError:
                        bad(line, f"{word}: bad JSON form")
                        continue
                for src in files[:-1]:
                    if not os.path.exists(os.path.join(ctx, src)):
                        bad(line, f"{word} {src}: not in the build context {ctx}")
                    elif src.endswith("-deps.txt"):
                        lists.append((line, src))
            elif word == "RUN" and re.search(r"apt-get\s+(-\S+\s+)*install", rest):
                if "--no-install-recommends" not in rest:
                    bad(line, "apt-get install without --no-install-recommends")
                if not re.search(r"(^|\s)-(y|\S*y\S*)\b|--yes", rest):
                    bad(line, "apt-get install without -y")
                if not re.search(r"rm\s+-\S*r\S*\s+(\S+\s+)*/var/lib/apt/lists/\*", rest):
                    bad(line, "apt-get install without `rm -rf /var/lib/apt/lists/*` in the same RUN")
        if st["name"]:
            names.add(st["name"])
    if stages:
        last = stages[-1]
        words = [w for _, w, _ in last["ins"]]
        users = [(line, rest) for line, w, rest in last["ins"] if w == "USER"]
        if not users:
            bad(last["line"], "final stage: no USER (the image would run as root)")
        else:
            line, user = users[-1]
            if user.split(":")[0] in ("root", "0"):
                bad(line, f"USER {user}: the final user must not be root")
        hc = [(line, rest) for line, w, rest in last["ins"] if w == "HEALTHCHECK"]
        if not hc:
            bad(last["line"], "final stage: no HEALTHCHECK")
        elif not re.search(r"(^|\s)CMD(\s|\[)", hc[-1][1]):
            bad(hc[-1][0], "HEALTHCHECK without CMD")
        exposed = " ".join(rest for _, w, rest in last["ins"] if w == "EXPOSE")
        for port in ("5871", "5872"):
            if not re.search(rf"(^|\s){port}(/tcp)?(\s|$)", exposed):
                bad(last["line"], f"final stage: port {port}/tcp not in EXPOSE")
        eps = [(line, rest) for line, w, rest in last["ins"] if w == "ENTRYPOINT"]
        if not eps:
            bad(last["line"], "final stage: no ENTRYPOINT")
        elif not eps[-1][1].startswith("["):
            bad(eps[-1][0], "ENTRYPOINT in shell form: use the JSON form (signals reach the node)")
        if "CMD" in words and "ENTRYPOINT" not in words:
            pass
    # The package lists: the build stage's must be a subset of the project's.
    project = read_list(os.path.join(ctx, "packaging", "build-deps.txt"))
    for line, src in lists:
        pkgs = read_list(os.path.join(ctx, src))
        if not pkgs:
            bad(line, f"{src}: no packages")
        if "build" in os.path.basename(src):
            for p in pkgs:
                if p not in project and p != "npm":
                    bad(line, f"{src}: {p} is not in packaging/build-deps.txt")
    for p in problems:
        print(p)
    if problems:
        print(f"lint_dockerfile: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"lint_dockerfile: {path}: {len(stages)} stages, {len(ins)} instructions, rules kept")
    return 0


def read_list(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
    except OSError:
        return []


if __name__ == "__main__":
    sys.exit(main(sys.argv))
