"""Deposits per second through the real HTTP stack, beside a trivial JSON endpoint.

Creates a throwaway PostgreSQL database, migrates it, creates an operator, an API key and some
players, starts gunicorn (sync workers, deploy/gunicorn.conf.py) on it, then drives the same
server with a fixed number of concurrent connections: first ``GET /healthz`` (the baseline),
then ``POST /v1/players/{id}/deposits`` with a fresh Idempotency-Key each. Prints requests per
second and p50/p99 latency for both and the ratio deposits / baseline. Drops the database.

    .venv/bin/python bench/deposits.py [--concurrency 16] [--seconds 10]

Needs PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else
postgresql+psycopg://postgres@127.0.0.1:5432/postgres (the server, not the database, is used).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def one_request(port: int, raw: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await reader.read()  # sync workers close the connection after each response
    writer.close()
    return int(data[9:12])


async def drive(port: int, make_request, concurrency: int, seconds: float):  # type: ignore[no-untyped-def]
    latencies: list[float] = []
    failures = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal failures
        while time.perf_counter() < deadline:
            raw, expected = make_request()
            start = time.perf_counter()
            status = await one_request(port, raw)
            latencies.append(time.perf_counter() - start)
            if status != expected:
                failures += 1

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return len(latencies) / elapsed, latencies, failures


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1000


def report(name: str, rate: float, latencies: list[float], failures: int) -> None:
    print(
        f"{name:<10} {rate:8.0f} req/s   p50 {percentile(latencies, 50):6.1f} ms   "
        f"p99 {percentile(latencies, 99):6.1f} ms   mean {statistics.mean(latencies) * 1000:6.1f}"
        f" ms   n={len(latencies)}   failures={failures}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--players", type=int, default=200)
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("WEB_CONCURRENCY", 0)) or (os.cpu_count() or 1) * 2 + 1,
    )
    args = parser.parse_args()

    from tests.conftest import new_operator, throwaway_postgres

    base = (
        os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("TEST_DATABASE_URL")
        or "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    with throwaway_postgres(base) as url:
        from service import create_app
        from service.clock import utcnow
        from service.usecases.auth import Principal
        from service.usecases.players import create_player

        app = create_app({"DATABASE_URL": url})
        operator_id, key = new_operator(app, "Bench")
        session = app.extensions["gin"]["sessionmaker"]()
        players = [
            create_player(session, Principal(operator_id), f"bench-{i}", f"P{i}", None, utcnow()).id
            for i in range(args.players)
        ]
        session.close()
        app.extensions["gin"]["engine"].dispose()

        port = free_port()
        env = dict(
            os.environ,
            DATABASE_URL=url,
            SECRET_KEY=secrets.token_hex(16),
            WEB_CONCURRENCY=str(args.workers),
            DB_POOL_SIZE=os.environ.get("DB_POOL_SIZE", "4"),  # one per gunicorn thread
        )
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                str(ROOT / "deploy/gunicorn.conf.py"),
                "--bind",
                f"127.0.0.1:{port}",
                "--log-level",
                "warning",
                "service.wsgi:app",
            ],
            cwd=ROOT,
            env=env,
        )
        try:
            for _ in range(200):
                try:
                    with socket.create_connection(("127.0.0.1", port), 0.2):
                        break
                except OSError:
                    time.sleep(0.05)
            health = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
            counter = iter(range(10**9))

            def trivial():  # type: ignore[no-untyped-def]
                return health, 200

            def deposit():  # type: ignore[no-untyped-def]
                n = next(counter)
                body = json.dumps({"amount": {"amount": 100 + n % 900, "currency": "EUR"}})
                raw = (
                    f"POST /v1/players/{players[n % len(players)]}/deposits HTTP/1.1\r\n"
                    f"Host: bench\r\nConnection: close\r\nAuthorization: Bearer {key}\r\n"
                    f"Idempotency-Key: bench-{n}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n{body}"
                ).encode()
                return raw, 201

            asyncio.run(drive(port, trivial, args.concurrency, 1.0))  # warm up
            asyncio.run(drive(port, deposit, args.concurrency, 1.0))
            print(
                f"load average before: {os.getloadavg()[0]:.2f}; "
                f"gunicorn sync workers: {args.workers}; concurrency: {args.concurrency}; "
                f"{args.seconds:.0f} s per phase; {os.cpu_count()} CPUs"
            )
            base_rate, base_lat, base_fail = asyncio.run(
                drive(port, trivial, args.concurrency, args.seconds)
            )
            report("healthz", base_rate, base_lat, base_fail)
            dep_rate, dep_lat, dep_fail = asyncio.run(
                drive(port, deposit, args.concurrency, args.seconds)
            )
            report("deposits", dep_rate, dep_lat, dep_fail)
            print(
                f"ratio deposits/healthz: {dep_rate / base_rate:.2f} "
                f"(target >= 0.25, deposit p99 < 50 ms)"
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
