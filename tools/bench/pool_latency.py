#!/usr/bin/env python3
"""pool_latency - latencies of a 3-node meshsweep pool on loopback.

Issue 3, benchmarks (results in docs/BENCHMARKS.md, "Pool throughput and
latency"). Three meshsweepd on 127.0.0.1 (--open-pool, --no-beacon,
--peer: nothing is broadcast, --verbose so the node logs each task start
and end); every line of their stderr is time-stamped here on arrival
(time.monotonic(), one reader thread per node).

  start   from the POST of a one-task noop sweep to node 1 until a node
          logs "task ... started on worker" or, for noop, "started in the node" (the sweep record's commit,
          its gossip, the claim, the settle window and the hand-over to the
          worker): the API-side upper bound of claim-to-start, kept for
          comparison with earlier runs;
  claim-to-start (node side) what the executing node itself measured and
          logged ("task ... claim-to-start N.NN ms"): from the sweep
          record's commit on that node (local submit or merge of the
          gossiped record) to its worker's "started" event (the first
          minibatch; a noop task reports the moment its work would start),
          both by CLOCK_MONOTONIC; also the median and p99 that each node
          reports in /api/v1/status ("claim_to_start_ms");
  spread  from the executing node's "task ... done" line until all three
          nodes' APIs report the task done (polled every 2 ms): the time
          for one result to reach every node;
  catchup node 3 stopped (SIGTERM), CATCHUP noop tasks run by nodes 1 and 2,
          node 3 restarted: time from its restart until its API reports
          all of them done and it holds as many records as node 1; then
          (untimed) the sorted result rows of every sweep are compared
          between nodes 1 and 3 (sha256).

usage: pool_latency.py [--samples N] [--catchup N] [--chunk N]
       [--build DIR] [--workers N]
Prints the median and p99 of start and spread, and the catch-up time.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START_RE = re.compile(r"task ([0-9a-f]{12}) started (?:on worker|in the node)")
DONE_RE = re.compile(r"task ([0-9a-f]{12}) done")
C2S_RE = re.compile(r"task ([0-9a-f]{12}) claim-to-start ([0-9.]+) ms")

# libcurl / urllib must never leave loopback through a proxy
os.environ["no_proxy"] = os.environ["NO_PROXY"] = "*"
for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
    os.environ.pop(k, None)
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    """A free TCP port on 127.0.0.1."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(method, url, body=None, timeout=10):
    """One request; returns (status, parsed JSON or text)."""
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/yaml")
    try:
        with OPENER.open(req, timeout=timeout) as r:
            data = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        data, status = e.read(), e.code
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data.decode(errors="replace")


class Node:
    """One meshsweepd with a time-stamping reader of its stderr."""

    def __init__(self, k, work, msd, workers, mesh_ports):
        self.k, self.work, self.msd, self.workers = k, work, msd, workers
        self.mesh_ports = mesh_ports
        self.api = "http://127.0.0.1:%d" % free_port()
        self.events = []  # (monotonic time, kind, task prefix)
        self.lock = threading.Lock()
        self.proc = None

    def start(self):
        """Spawn the daemon and its reader; wait (30 s) for the API."""
        peers = []
        for j, port in self.mesh_ports.items():
            if j != self.k:
                peers += ["--peer", "tcp://127.0.0.1:%d" % port]
        cmd = [self.msd, "--data-dir", os.path.join(self.work, "n%d" % self.k),
               "--api", self.api[len("http://"):], "--workers", str(self.workers),
               "--open-pool=latency", "--no-beacon", "--verbose",
               "--mesh-port", str(self.mesh_ports[self.k])] + peers
        log = open(os.path.join(self.work, "n%d.log" % self.k), "a")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        threading.Thread(target=self._read, args=(self.proc, log), daemon=True).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if http("GET", self.api + "/api/v1/status", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("node %d did not answer" % self.k)

    def _read(self, proc, log):
        for line in proc.stderr:
            t = time.monotonic()
            log.write(line)
            m = START_RE.search(line)
            if m:
                with self.lock:
                    self.events.append((t, "start", m.group(1)))
                continue
            m = DONE_RE.search(line)
            if m:
                with self.lock:
                    self.events.append((t, "done", m.group(1)))
                continue
            m = C2S_RE.search(line)
            if m:
                with self.lock:
                    self.events.append((t, "c2s", m.group(1), float(m.group(2))))

    def find(self, kind, task):
        """The time of the first event KIND for task prefix TASK, or None."""
        with self.lock:
            for t, k, p in self.events:
                if k == kind and p == task:
                    return t
        return None

    def stop(self, sig=signal.SIGTERM):
        """Stop the daemon (bounded wait, then SIGKILL)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def status(self):
        """GET /api/v1/status as a dict."""
        return http("GET", self.api + "/api/v1/status")[1]


def spec(name, first, count):
    """A noop sweep of COUNT tasks (seeds FIRST..), replicas 1."""
    seeds = ",".join(str(i) for i in range(first, first + count))
    return ("name: %s\ndataset: fashion-mnist\nverify: {replicas: 1}\n"
            "parameters:\n  kind: {value: noop}\n  seed: {values: [%s]}\n"
            % (name, seeds)).encode()


def submit(node, body):
    """POST a sweep; returns its id (raises on an error answer)."""
    status, ans = http("POST", node.api + "/api/v1/sweeps", body, timeout=60)
    if status >= 300 or not isinstance(ans, dict) or "sweep_id" not in ans:
        raise RuntimeError("submit: %s %s" % (status, ans))
    return ans["sweep_id"]


def wait_for(pred, limit, step=0.002):
    """Poll PRED until true or LIMIT seconds (then raise)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if pred():
            return time.monotonic()
        time.sleep(step)
    raise SystemExit("timed out after %s s" % limit)


def pct(values, q):
    """The q-quantile (nearest rank) of VALUES."""
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q * len(v) + 0.5)) - 1))]


def done_count(node):
    t = node.status()["tasks"]
    return t["done"] + t["failed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--catchup", type=int, default=100000)
    ap.add_argument("--chunk", type=int, default=100,
                    help="tasks per sweep in the catch-up phase")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench3"))
    args = ap.parse_args()
    msd = os.path.join(args.build, "node", "meshsweepd")
    ms = os.path.join(args.build, "tools", "meshsweep")
    work = tempfile.mkdtemp(prefix="ms-latency.")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "integration", "make_tiny_idx.py"),
                    "idx", os.path.join(work, "datasets", "fashion-mnist"),
                    "--train", "100", "--test", "20"], check=True, stdout=subprocess.DEVNULL)
    os.environ["MESHSWEEP_DATASETS_DIR"] = os.path.join(work, "datasets")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    mesh = {k: free_port() for k in (1, 2, 3)}
    nodes = {k: Node(k, work, msd, args.workers, mesh) for k in (1, 2, 3)}
    ok = False
    try:
        for n in nodes.values():
            n.start()
        wait_for(lambda: all(n.status()["peers"].get("alive", 0) == 2 for n in nodes.values()),
                 30, 0.1)
        time.sleep(3)  # past the startup grace

        # ---- start latency and spread, one single-task sweep at a time ----
        starts, spreads, node_c2s = [], [], []
        for i in range(args.samples):
            body = spec("lat-%d" % i, 1_000_000 + i, 1)
            t_post = time.monotonic()
            sid = submit(nodes[1], body)
            seen = {}

            def all_seen():
                for k, n in nodes.items():
                    if k in seen:
                        continue
                    st, d = http("GET", "%s/api/v1/sweeps/%s" % (n.api, sid), timeout=5)
                    if st == 200 and d.get("counts", {}).get("done") == 1:
                        seen[k] = time.monotonic()
                return len(seen) == 3

            wait_for(all_seen, 30)
            # the task's id prefix: the one that started after t_post
            t_start, t_done = None, None
            for n in nodes.values():
                with n.lock:
                    ev = [e for e in n.events if e[0] >= t_post]
                for e in ev:
                    t, kind = e[0], e[1]
                    if kind == "start" and (t_start is None or t < t_start):
                        t_start = t
                    if kind == "done" and (t_done is None or t < t_done):
                        t_done = t
            if t_start is None or t_done is None:
                raise SystemExit("sample %d: no start/done line in the logs" % i)
            # the node's own figure, logged right after its start line
            c2s = None
            for _ in range(500):
                for n in nodes.values():
                    with n.lock:
                        for e in n.events:
                            if e[0] >= t_post and e[1] == "c2s":
                                c2s = e[3]
                if c2s is not None:
                    break
                time.sleep(0.002)
            if c2s is None:
                raise SystemExit("sample %d: no claim-to-start line in the logs" % i)
            node_c2s.append(c2s)
            starts.append((t_start - t_post) * 1000)
            spreads.append((max(seen.values()) - t_done) * 1000)
        print("start latency (POST -> 'started'), %d samples: median %.1f ms, p99 %.1f ms"
              % (len(starts), statistics.median(starts), pct(starts, 0.99)))
        print("claim-to-start, node side (sweep record's commit on the executing node -> "
              "worker's start), %d samples: median %.2f ms, p99 %.2f ms"
              % (len(node_c2s), statistics.median(node_c2s), pct(node_c2s, 0.99)))
        for k, n in nodes.items():
            c = n.status().get("claim_to_start_ms", {})
            if c.get("window"):
                print("  node %d /api/v1/status claim_to_start_ms: n %d, median %.2f ms, p99 %.2f ms"
                      % (k, c["n"], c["median"], c["p99"]))
        print("one result to every node (executor's 'done' -> done on all 3 APIs): median %.1f ms, p99 %.1f ms"
              % (statistics.median(spreads), pct(spreads, 0.99)))
        sys.stdout.flush()

        # ---- catch-up of a node that missed CATCHUP results ----
        if args.catchup > 0:
            nodes[3].stop()
            base = done_count(nodes[1])
            first, n_sweeps = 1, 0
            while first <= args.catchup:
                c = min(args.chunk, args.catchup - first + 1)
                submit(nodes[1], spec("catchup-%d" % first, first, c))
                first += c
                n_sweeps += 1
            wait_for(lambda: done_count(nodes[1]) >= base + args.catchup
                     and done_count(nodes[2]) >= base + args.catchup, 3600, 0.2)
            target = done_count(nodes[1])
            recs = nodes[1].status()["pool_counters"]["records"]
            t0 = time.monotonic()
            nodes[3].start()

            def caught_up():
                s = nodes[3].status()
                t = s["tasks"]
                return (t["done"] + t["failed"] >= target
                        and s["pool_counters"]["records"] >= recs)

            t1 = wait_for(caught_up, 600, 0.01)
            # untimed check: every sweep's sorted rows, node 1 against node 3
            h = {1: hashlib.sha256(), 3: hashlib.sha256()}
            sweeps = sorted(s["sweep_id"] for s in
                            http("GET", nodes[1].api + "/api/v1/sweeps")[1]["sweeps"])
            for sid in sweeps:
                for k in (1, 3):
                    out = subprocess.run([ms, "results", sid, "--format", "csv",
                                          "--node", nodes[k].api],
                                         check=True, capture_output=True, text=True).stdout
                    h[k].update("".join(sorted(out.splitlines(True)[1:])).encode())
            same = h[1].hexdigest() == h[3].hexdigest()
            print("catch-up: node 3 missed %d results (%d sweeps of up to %d), restarted: "
                  "all done and %d records after %.2f s; digests of %d sweeps %s"
                  % (args.catchup, n_sweeps, args.chunk, recs, t1 - t0, len(sweeps),
                     "equal" if same else "DIFFER"))
            if not same:
                raise SystemExit(1)
        ok = True
    finally:
        for n in nodes.values():
            n.stop()
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("logs kept in %s" % work, file=sys.stderr)


if __name__ == "__main__":
    main()
