"""Deposits per second through the real HTTP stack, beside a trivial JSON endpoint.

Creates a throwaway PostgreSQL database, migrates it, creates an operator, an API key and some
players, starts gunicorn with the production configuration (deploy/gunicorn.conf.py) on it,
then drives the same server with a fixed number of concurrent clients, alternating ``GET
/healthz`` (the baseline) and ``POST /v1/players/{id}/deposits`` with a fresh Idempotency-Key
each, for a few rounds. Prints requests per second, p50/p99 latency and the gunicorn and
PostgreSQL CPU per request (from /proc) for every phase, and each round's ratio deposits /
baseline and their median.
Drops the database.

    .venv/bin/python bench/deposits.py [--concurrency 16] [--seconds 5] [--rounds 3] [--close]
        [--commit-delay US [--commit-siblings N]]

``--commit-delay`` sets PostgreSQL's group commit (``commit_delay``, microseconds, and
``commit_siblings``) for the bench's own database (``ALTER DATABASE``, a superuser setting):
run it beside a run without to see what group commit does on this machine.

Needs PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else
postgresql+psycopg://postgres@127.0.0.1:5432/postgres (the server, not the database, is used).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import (  # noqa: E402
    Http,
    Phase,
    baseline,
    closed_loop,
    cpu_seconds,
    database_base_url,
    default_workers,
    describe,
    gunicorn,
    report,
    report_cpu,
    summary,
)


async def deposits(
    port: int, key: str, players: list[str], concurrency: int, seconds: float, keep_alive: bool
) -> Phase:
    """``POST /v1/players/{id}/deposits`` round the players, a fresh Idempotency-Key each."""

    async def deposit(http: Http, n: int) -> bool:
        status, _ = await http.request(
            "POST",
            f"/v1/players/{players[n % len(players)]}/deposits",
            key,
            {"amount": {"amount": 100 + n % 900, "currency": "EUR"}},
            {"Idempotency-Key": f"bench-{n}-{secrets.token_hex(4)}"},
        )
        return status == 201

    return await closed_loop(port, concurrency, seconds, keep_alive, deposit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0, help="per phase")
    parser.add_argument(
        "--rounds", type=int, default=3, help="baseline and deposit phases, alternated"
    )
    parser.add_argument("--players", type=int, default=200)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument(
        "--close", action="store_true", help="a new connection per request instead of keep-alive"
    )
    parser.add_argument("--commit-delay", type=int, default=0, help="microseconds (0: off)")
    parser.add_argument("--commit-siblings", type=int, default=5)
    args = parser.parse_args()
    keep_alive = not args.close

    from service import create_app
    from service.clock import utcnow
    from service.usecases import unit_of_work
    from service.usecases.auth import Principal
    from service.usecases.players import create_player
    from tests.conftest import new_operator, throwaway_postgres

    secret = secrets.token_hex(16)
    with throwaway_postgres(database_base_url()) as url:
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": secret})
        if args.commit_delay:
            with app.extensions["gin"]["engine"].begin() as connection:
                name = connection.exec_driver_sql("SELECT current_database()").scalar()
                for setting, value in (
                    ("commit_delay", args.commit_delay),
                    ("commit_siblings", args.commit_siblings),
                ):
                    connection.exec_driver_sql(f'ALTER DATABASE "{name}" SET {setting} = {value}')
            print(
                f"group commit: commit_delay {args.commit_delay} us,"
                f" siblings {args.commit_siblings}"
            )
        operator_id, key = new_operator(app, "Bench")
        session = app.extensions["gin"]["sessionmaker"]()
        players = unit_of_work.run(
            session,
            lambda: [
                create_player(
                    session, Principal(operator_id), f"bench-{i}", f"P{i}", None, utcnow()
                ).id
                for i in range(args.players)
            ],
        )
        session.close()
        app.extensions["gin"]["engine"].dispose()

        with gunicorn(url, args.workers, secret) as port:
            # Warm up with a whole unmeasured phase of deposits: with one second of it, the
            # first measured phase's p99 was 2 to 5 times the later ones' (120-280 ms against
            # 45-70 ms) while the workers' pools and PostgreSQL's backends were still warming.
            asyncio.run(baseline(port, args.concurrency, 1.0, keep_alive))
            asyncio.run(deposits(port, key, players, args.concurrency, args.seconds, keep_alive))
            print(describe(args.workers, args.concurrency, args.seconds, keep_alive))
            ratios: list[float] = []
            latencies: list[float] = []
            for _ in range(args.rounds):
                before = cpu_seconds()
                count, elapsed, lat, fail = asyncio.run(
                    baseline(port, args.concurrency, args.seconds, keep_alive)
                )
                base_rate = report("healthz", count, elapsed, lat, fail)
                report_cpu(before, count)
                before = cpu_seconds()
                count, elapsed, lat, fail = asyncio.run(
                    deposits(port, key, players, args.concurrency, args.seconds, keep_alive)
                )
                ratios.append(report("deposits", count, elapsed, lat, fail) / base_rate)
                report_cpu(before, count)
                latencies += lat
            print(
                summary(
                    "deposits/healthz",
                    ratios,
                    latencies,
                    "floor: ratio >= 0.2, deposit p99 < 50 ms",
                )
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
