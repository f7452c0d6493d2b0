#!/usr/bin/python3
"""celery_noop - the Celery 5 + RabbitMQ side of tools/bench/pool_throughput.sh.

Run with Debian's /usr/bin/python3 (python3-celery). The broker is the
RabbitMQ that pool_throughput.sh started on 127.0.0.1 (CELERY_BROKER,
e.g. amqp://guest:guest@127.0.0.1:PORT//); results come back through the
rpc:// backend (no Redis, no database).

usage:
  celery_noop.py worker CONCURRENCY      run a prefork worker (foreground)
  celery_noop.py submit N                submit N no-op tasks, wait for every
                                         result, print one JSON line:
                                         {"tasks": N, "seconds": S,
                                          "tasks_per_second": R}
"""
import json
import os
import sys
import time

from celery import Celery
from celery.result import ResultSet

BROKER = os.environ.get("CELERY_BROKER", "amqp://guest:guest@127.0.0.1:5672//")
app = Celery("ms_bench", broker=BROKER, backend="rpc://")
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    worker_prefetch_multiplier=4,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)


@app.task(name="ms_bench.noop")
def noop(i):
    """The no-op task: trains nothing, returns its argument."""
    return i


def submit(n):
    """Send n tasks, then wait for every result; print the rate."""
    t0 = time.monotonic()
    results = [noop.apply_async((i,)) for i in range(n)]
    rs = ResultSet(results)
    got = rs.join_native(timeout=3600, propagate=True)
    dt = time.monotonic() - t0
    if sorted(got) != list(range(n)):
        sys.exit("celery_noop: %d results, not the %d sent" % (len(got), n))
    print(json.dumps({"tasks": n, "seconds": round(dt, 3),
                      "tasks_per_second": round(n / dt, 1)}))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("worker", "submit"):
        sys.exit(__doc__)
    if sys.argv[1] == "worker":
        app.worker_main(["worker", "--loglevel=WARNING", "--pool=prefork",
                         "--concurrency=%d" % int(sys.argv[2]),
                         "--without-gossip", "--without-mingle",
                         "--without-heartbeat"])
    else:
        submit(int(sys.argv[2]))


if __name__ == "__main__":
    main()
