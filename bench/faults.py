"""Settlement delays through a mix of faults, with a real Celery worker (with beat), PostgreSQL
and a Redis of the script's own.

Clients finish matches without pause (resignations through the API in process, each followed
by a relay kick, as the API does after commit) while the script, on a timeline of its own,
terminates every database connection but its own (``pg_terminate_backend``), SIGKILLs the worker
(pool and beat) and starts it again ``--restart`` seconds later, and stops Redis for
``--outage`` seconds (it comes back empty). Prints, for the matches that ended in each stretch
between faults, how many there were, their longest delay (end to settlement) and when the last
was settled, then p50 / p99 / max over all of them. Target: every delay under 30 s, and each
stretch settled within 5 s of the fault's end.

    .venv/bin/python bench/faults.py [--clients 4] [--database-at 20] [--kill-at 30]
        [--restart 6] [--redis-at 45] [--outage 20] [--seconds 75]

Needs PostgreSQL (BENCH_DATABASE_URL / TEST_DATABASE_URL / local) and redis-server on the PATH.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=4, help="threads finishing matches")
    parser.add_argument("--database-at", type=float, default=20.0)
    parser.add_argument("--kill-at", type=float, default=30.0)
    parser.add_argument("--restart", type=float, default=6.0)
    parser.add_argument("--redis-at", type=float, default=45.0)
    parser.add_argument("--outage", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=75.0, help="how long matches end")
    parser.add_argument(
        "--trace", action="store_true", help="print every second: ended, settled, queued tasks"
    )
    args = parser.parse_args()
    os.environ.pop("CELERY_BROKER_URL", None)  # it would override every Celery app here
    logging.disable(logging.WARNING)  # the API's 503s while the connections are terminated

    from sqlalchemy import create_engine, select, text
    from sqlalchemy.pool import NullPool

    from service.clock import utcnow
    from service.db.match_models import Settlement
    from tests.conftest import make_test_app, throwaway_postgres
    from tests.integration.workers import (
        Broker,
        finished_matches,
        kill,
        private_redis,
        worker_command,
    )

    base = (
        os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("TEST_DATABASE_URL")
        or "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    var = tempfile.mkdtemp(prefix="gin-bench-faults-")

    def start_worker(url: str, broker: Broker) -> subprocess.Popen[bytes]:
        env = dict(os.environ, DATABASE_URL=url, **broker.env)
        env.pop("CELERY_VISIBILITY_TIMEOUT")  # production's: a killed worker's tasks stay taken
        log = open(Path(var) / "worker.log", "ab")  # noqa: SIM115 - the child keeps it
        return subprocess.Popen(
            worker_command(broker.queue, beat_schedule=Path(var) / "celerybeat-schedule"),
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    with throwaway_postgres(base) as url, private_redis() as (redis_url, stop, start):
        broker = Broker(redis_url)
        app = make_test_app(url)
        admin = create_engine(url, poolclass=NullPool)
        processes = {"worker": start_worker(url, broker)}
        began, began_at = time.monotonic(), utcnow()
        timeline: list[tuple[float, str]] = []

        def at(seconds: float) -> None:
            time.sleep(max(0.0, began + seconds - time.monotonic()))

        def note(what: str) -> None:
            timeline.append((time.monotonic() - began, what))

        def terminate() -> None:
            with admin.connect() as connection:
                connection.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                )
            app.extensions["gin"]["engine"].dispose()  # as gunicorn's pool after a lost one

        plan = sorted(
            [
                (args.database_at, "database connections terminated", terminate),
                (args.kill_at, "worker SIGKILLed", lambda: kill(processes["worker"])),
                (
                    args.kill_at + args.restart,
                    "worker started",
                    lambda: processes.update(worker=start_worker(url, broker)),
                ),
                (args.redis_at, "redis stopped", stop),
                (args.redis_at + args.outage, "redis started", start),
            ],
            key=lambda step: step[0],
        )

        def faults() -> None:
            for seconds, what, act in plan:
                at(seconds)
                act()
                note(what)

        ended: dict[str, float] = {}

        def client() -> None:
            while time.monotonic() - began < args.seconds:
                try:
                    [match_id] = finished_matches(app, 1)
                except Exception:  # a terminated connection: the API answered 503
                    app.extensions["gin"]["engine"].dispose()
                    continue
                ended[match_id] = time.monotonic() - began
                with contextlib.suppress(Exception):  # Redis down: the catch-up relays it
                    broker.send("outbox.relay", [])

        trace: list[tuple[float, int, int, int | None]] = []

        def tracer() -> None:
            import redis
            from sqlalchemy import func

            client = redis.Redis.from_url(redis_url, socket_timeout=0.5)
            key = f"{broker.env['CELERY_KEY_PREFIX']}{broker.queue}"
            while time.monotonic() - began < args.seconds + 60 and not done.is_set():
                try:
                    queued: int | None = int(client.llen(key))  # type: ignore[arg-type]
                except redis.RedisError:
                    queued = None
                with admin.connect() as connection:
                    count = connection.execute(select(func.count()).select_from(Settlement))
                    settled_now = int(count.scalar_one())
                trace.append((time.monotonic() - began, len(ended), settled_now, queued))
                done.wait(1.0)

        done = threading.Event()
        if args.trace:
            threading.Thread(target=tracer, daemon=True).start()
        threads = [threading.Thread(target=faults)] + [
            threading.Thread(target=client) for _ in range(args.clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        deadline = time.monotonic() + 60
        settled: dict[str, float] = {}
        while time.monotonic() < deadline and len(settled) < len(ended):
            with admin.connect() as connection:
                rows = connection.execute(select(Settlement.match_id, Settlement.created_at)).all()
            settled = {match_id: (at_ - began_at).total_seconds() for match_id, at_ in rows}
            time.sleep(0.5)
        done.set()
        kill(processes["worker"])
        admin.dispose()
        app.extensions["gin"]["engine"].dispose()

    for seconds, what in timeline:
        print(f"{seconds:6.1f} s  {what}")
    for seconds, count, settled_now, queued in trace:
        print(f"{seconds:6.1f} s  ended {count:4d}  settled {settled_now:4d}  queued {queued}")
    report(ended, settled, [seconds for seconds, _, _ in plan], args.seconds)
    print(f"worker log: {var}/worker.log")
    return 0


def report(
    ended: dict[str, float], settled: dict[str, float], faults: list[float], until: float
) -> None:
    bounds = [0.0, *faults, until + 60]
    delays: list[float] = []
    for start, end in itertools.pairwise(bounds):
        stretch = [m for m, t in ended.items() if start <= t < end]
        if not stretch:
            continue
        late = [settled.get(m, float("inf")) - ended[m] for m in stretch]
        last = max(settled.get(m, float("inf")) for m in stretch)
        delays += late
        print(
            f"ended {start:5.1f}-{min(end, until):5.1f} s: {len(stretch):3d} matches,"
            f" longest delay {max(late):5.1f} s, last settled at {last:5.1f} s"
        )
    unsettled = sum(1 for m in ended if m not in settled)
    cuts = statistics.quantiles(delays, n=100) if len(delays) > 1 else delays * 99
    print(
        f"settlement delay over {len(delays)} matches: p50 {cuts[49]:.1f} s, p99 {cuts[98]:.1f} s,"
        f" max {max(delays):.1f} s; {unsettled} never settled (within 60 s of the last end)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
