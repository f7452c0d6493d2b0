#!/usr/bin/python3
"""pool_wait_done.py - wait until every node counts N tasks finished.

    pool_wait_done.py N TIMEOUT_S API_URL...

Polls GET /api/v1/status on each node every 50 ms from this one process
(keep-alive connections, no process per poll: the poller's own CPU would
otherwise be taken from the pool it measures on a 2-core machine) until
tasks.done + tasks.failed >= N on all of them. Exit 0 when they do, 1 on
timeout (the counts reached are printed to stderr).
"""
import http.client
import json
import sys
import time
import urllib.parse


def main():
    n, timeout = int(sys.argv[1]), float(sys.argv[2])
    urls = [urllib.parse.urlsplit(u) for u in sys.argv[3:]]
    conns = [None] * len(urls)
    finished = [False] * len(urls)
    counts = [0] * len(urls)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, u in enumerate(urls):
            if finished[i]:
                continue
            try:
                if conns[i] is None:
                    conns[i] = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
                conns[i].request("GET", "/api/v1/status")
                tasks = json.loads(conns[i].getresponse().read())["tasks"]
                counts[i] = tasks["done"] + tasks["failed"]
                finished[i] = counts[i] >= n
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                conns[i] = None  # reconnect on the next round
        if all(finished):
            return 0
        time.sleep(0.05)
    print(f"pool_wait_done: timed out; finished counts {counts} of {n}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
