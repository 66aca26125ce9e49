"""Settlement delays through a mix of faults, with a real Celery worker (with beat), PostgreSQL
and a Redis of the script's own.

Clients finish matches without pause (resignations through the API in process, each followed
by a relay kick, as the API does after commit) while the script, on a timeline of its own,
terminates every database connection but its own (``pg_terminate_backend``), SIGKILLs the worker
(pool and beat) and starts it again ``--restart`` seconds later, and stops Redis for
``--outage`` seconds (it comes back empty). Prints, for the matches that ended in each stretch
between faults, how many there were, their longest delay (end to settlement) and when the last
was settled, then p50 / p99 / max over all of them, and for each fault how long after its end
the last match that ended before that end was settled. Target: every delay under 30 s, and
every match settled within 5 s of the end of each fault it ended before. The clock starts
once the worker consumes. The machinery is tests/integration/workers.fault_mix, which
tests/integration/test_fault_mix.py runs on a shorter timeline.

    .venv/bin/python bench/faults.py [--clients 4] [--database-at 20] [--kill-at 30]
        [--restart 6] [--redis-at 45] [--outage 20] [--seconds 75] [--trace]

Needs PostgreSQL (BENCH_DATABASE_URL / TEST_DATABASE_URL / local) and redis-server on the PATH.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import statistics
import sys
import tempfile
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

    from tests.conftest import throwaway_postgres
    from tests.integration.workers import FaultPlan, fault_mix

    base = (
        os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("TEST_DATABASE_URL")
        or "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    plan = FaultPlan(
        database_at=args.database_at,
        kill_at=args.kill_at,
        restart=args.restart,
        redis_at=args.redis_at,
        outage=args.outage,
        seconds=args.seconds,
    )
    folder = Path(tempfile.mkdtemp(prefix="gin-bench-faults-"))
    with throwaway_postgres(base) as url:
        mix = fault_mix(url, plan, args.clients, folder, trace=args.trace)

    for seconds, what in mix.faults:
        print(f"{seconds:6.1f} s  {what}")
    for seconds, count, settled, queued in mix.trace:
        print(f"{seconds:6.1f} s  ended {count:4d}  settled {settled:4d}  queued {queued}")
    stops = sorted({plan.database_at, plan.kill_at, plan.redis_at, *plan.ends().values()})
    report(mix.ended, mix.settled, stops, plan.seconds)
    for fault, took in mix.after_faults().items():
        print(f"{fault} at {plan.ends()[fault]:5.1f} s: all that ended before, {took:+5.1f} s")
    print(f"worker log: {mix.worker_log}")
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
