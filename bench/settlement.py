"""Settlement throughput and latency with a real worker, Redis and PostgreSQL.

1. Drain: N ``ops.ping`` tasks (no-op), then N ``settlement.settle_match`` tasks for N finished
   matches, each backlog drained by one worker (``--concurrency 2``); prints tasks per second
   for both and the ratio settlements / no-op (target >= 0.25).
2. Latency: matches finish at a steady rate (resignations through the use case, each followed
   by the outbox relay, as the API does after commit); prints the time from a match's end to
   its payout being posted (settlement row), p50 / p99 (target p99 < 1 s).

    .venv/bin/python bench/settlement.py [--matches 200] [--rate 20] [--seconds 10]

Needs PostgreSQL (BENCH_DATABASE_URL / TEST_DATABASE_URL / local) and Redis
(BENCH_BROKER_URL / TEST_BROKER_URL / redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="finished matches per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    os.environ.pop("CELERY_BROKER_URL", None)  # it would override every Celery app here

    import redis
    from sqlalchemy import func, select

    from service import create_app
    from service.clock import utcnow
    from service.db.match_models import MatchRow, Settlement
    from service.games.common.settings import MatchSettings
    from service.usecases import play, players, tables, unit_of_work, wallets
    from service.usecases.auth import Principal
    from tests.conftest import new_operator, throwaway_postgres
    from tests.integration.workers import Broker, wait_until, worker
    from worker.relay import relay_events

    base = (
        os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("TEST_DATABASE_URL")
        or "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    broker_url = (
        os.environ.get("BENCH_BROKER_URL")
        or os.environ.get("TEST_BROKER_URL")
        or "redis://127.0.0.1:6379/0"
    )
    broker = Broker(broker_url)
    r = redis.Redis.from_url(broker_url)
    prefix = broker.env["CELERY_KEY_PREFIX"]

    def queue_empty() -> bool:
        return r.llen(f"{prefix}{broker.queue}") == 0 and r.hlen(f"{prefix}unacked") == 0

    with throwaway_postgres(base) as url:
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": secrets.token_hex(8)})
        operator_id, _ = new_operator(app, "Bench")
        operator = Principal(operator_id)
        Session = app.extensions["gin"]["sessionmaker"]
        settings = MatchSettings.from_dict(
            {"format": "match_play", "stake": 100, "fee": {"bps": 500}}
        )

        def finished_match(session: object, i: int) -> str:
            now = utcnow()
            view = tables.create_table(
                session,
                operator,
                name=f"b{i}",
                currency="EUR",
                settings=settings,
                practice=False,
                private=False,
                now=now,
            )
            seats = []
            for seat in range(2):
                player = players.create_player(
                    session, operator, f"b{i}-{seat}-{secrets.token_hex(3)}", "P", None, now
                )
                wallets.deposit(
                    session, operator, player.id, "EUR", 1000, f"d{i}-{seat}-{player.id}", now
                )
                tables.join_table(
                    session,
                    Principal(operator_id, player.id),
                    view.table.id,
                    buyin=None,
                    invite_code=None,
                    client_seed=None,
                    now=now,
                )
                seats.append(player.id)
            play.resign(
                session, Principal(operator_id, seats[0]), view.table.match_id, None, utcnow()
            )
            return view.table.match_id

        session = Session()
        backlog = [
            unit_of_work.run(session, finished_match, session, i) for i in range(args.matches)
        ]
        with session.begin():  # these go straight to the queue below, not through the relay
            from service.db.match_models import OutboxEvent

            for event in session.scalars(select(OutboxEvent)):
                event.published_at = utcnow()
        try:
            with worker(url, broker, concurrency=2):
                broker.send("ops.ping", [])
                wait_until(queue_empty, 60, "the worker to start")
                start = time.perf_counter()
                for _ in range(args.matches):
                    broker.send("ops.ping", [])
                wait_until(queue_empty, 300, "the no-op backlog")
                noop_rate = args.matches / (time.perf_counter() - start)

                def settled() -> int:
                    with Session() as s:
                        return int(s.scalar(select(func.count()).select_from(Settlement)) or 0)

                start = time.perf_counter()
                for match_id in backlog:
                    broker.send("settlement.settle_match", [match_id])
                wait_until(lambda: settled() >= args.matches, 600, "the settlement backlog")
                settle_rate = args.matches / (time.perf_counter() - start)
                print(f"drain, 1 worker x 2 processes, {args.matches} tasks each:")
                print(f"  no-op tasks      {noop_rate:8.1f} /s")
                ratio = settle_rate / noop_rate
                print(f"  settlements      {settle_rate:8.1f} /s   ratio {ratio:.2f} (target 0.25)")

                # Steady rate: finish a match, relay its event, measure end -> payout.
                interval = 1.0 / args.rate
                finished: list[str] = []
                until = time.perf_counter() + args.seconds
                next_at = time.perf_counter()
                while time.perf_counter() < until:
                    n = len(backlog) + len(finished)
                    finished.append(unit_of_work.run(session, finished_match, session, n))
                    unit_of_work.run(session, relay_events, session, broker.send, utcnow())
                    next_at += interval
                    time.sleep(max(0.0, next_at - time.perf_counter()))
                wait_until(
                    lambda: settled() >= args.matches + len(finished),
                    120,
                    "the steady-rate settlements",
                )
                with Session() as s:
                    rows = s.execute(
                        select(MatchRow.finished_at, Settlement.created_at)
                        .join(Settlement, Settlement.match_id == MatchRow.id)
                        .where(MatchRow.id.in_(finished))
                    ).all()
                lat = sorted((done - end).total_seconds() * 1000 for end, done in rows)
                p = lambda q: lat[min(len(lat) - 1, round(q / 100 * (len(lat) - 1)))]  # noqa: E731
                print(
                    f"steady {len(finished) / args.seconds:.1f} finished matches/s for "
                    f"{args.seconds:.0f} s: end -> payout p50 {p(50):.0f} ms, p99 {p(99):.0f} ms,"
                    f" mean {statistics.mean(lat):.0f} ms (target p99 < 1000 ms)"
                )
        finally:
            session.close()
            broker.cleanup()
            app.extensions["gin"]["engine"].dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
