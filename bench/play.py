"""Actions per second through gunicorn and PostgreSQL, 16 matches played concurrently.

Creates a throwaway PostgreSQL database, an operator and pairs of funded players, opens Match
Play tables and seats both players (through the use cases, not timed), starts gunicorn
(deploy/gunicorn.conf.py), then runs one scripted client per concurrent match: it reads the
view of the player to act (``GET /v1/matches/{id}``, with that player's token) and posts a
legal action (``POST /v1/matches/{id}/actions`` with ``expected_version``), knocking whenever
it may; a finished match is replaced by the next prepared one. Before that, the same
connections drive ``GET /healthz`` as the baseline. Prints requests per second and p50/p99 for
the baseline, the reads and the actions, and the ratio actions / baseline. Drops the database.

    .venv/bin/python bench/play.py [--matches 16] [--seconds 10]

Needs PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def request(port: int, method: str, path: str, token: str | None,
                  body: dict[str, Any] | None = None) -> tuple[int, Any]:
    payload = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode() + b"\r\n" + payload)
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data[9:12])
    _, _, raw = data.partition(b"\r\n\r\n")
    return status, json.loads(raw) if raw else None


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1000


def report(name: str, count: int, elapsed: float, latencies: list[float], failures: int) -> float:
    rate = count / elapsed
    print(f"{name:<8} {rate:8.0f} req/s   p50 {percentile(latencies, 50):6.1f} ms   "
          f"p99 {percentile(latencies, 99):6.1f} ms   mean "
          f"{statistics.mean(latencies) * 1000:6.1f} ms   n={count}   failures={failures}")
    return rate


def choose(legal: list[str], rng: random.Random) -> str:
    knocks = [a for a in legal if a.startswith(("KNOCK", "BIG_GIN", "TAKE_DISCARD_AND_KNOCK"))]
    return rng.choice(knocks or legal)


def action_body(text: str, version: int) -> dict[str, Any]:
    words = text.split()
    body: dict[str, Any] = {"action": words[0], "expected_version": version}
    if len(words) > 1:
        body["card"] = words[1]
    return body


async def baseline(port: int, concurrency: int, seconds: float) -> tuple[int, list[float], int]:
    latencies: list[float] = []
    failures = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal failures
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            status, _ = await request(port, "GET", "/healthz", None)
            latencies.append(time.perf_counter() - start)
            failures += status != 200

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return len(latencies), latencies, failures


async def play(port: int, queue: list[tuple[str, list[str]]], concurrency: int,
               seconds: float) -> dict[str, Any]:
    reads: list[float] = []
    acts: list[float] = []
    failures = 0
    finished = 0
    deadline = time.perf_counter() + seconds
    rng = random.Random(1)

    async def client() -> None:
        nonlocal failures, finished
        match_id, tokens = queue.pop()
        seat_token: dict[int, str] = {}
        for token in tokens:
            _, view = await request(port, "GET", f"/v1/matches/{match_id}", token)
            seat_token[view["you"]] = token
        mover = 0
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            status, view = await request(port, "GET", f"/v1/matches/{match_id}",
                                         seat_token[mover])
            reads.append(time.perf_counter() - start)
            if status != 200:
                failures += 1
                continue
            if view["status"] != "playing":
                finished += 1
                if not queue:
                    return
                match_id, tokens = queue.pop()
                seat_token = {}
                for token in tokens:
                    _, v = await request(port, "GET", f"/v1/matches/{match_id}", token)
                    seat_token[v["you"]] = token
                continue
            if view["hand"]["to_act"] != view["you"]:
                mover = view["hand"]["to_act"]
                continue
            text = choose(view["hand"]["legal_actions"], rng)
            start = time.perf_counter()
            status, after = await request(port, "POST", f"/v1/matches/{match_id}/actions",
                                          seat_token[mover], action_body(text, view["version"]))
            acts.append(time.perf_counter() - start)
            if status != 200:
                failures += 1
                continue
            if after["status"] == "playing" and after["hand"]["to_act"] is not None:
                mover = after["hand"]["to_act"]

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return {"elapsed": time.perf_counter() - started, "reads": reads, "acts": acts,
            "failures": failures, "finished": finished}


def prepare(url: str, matches: int) -> list[tuple[str, list[str]]]:
    """Seated matches with both players' tokens (through the use cases: not timed)."""
    sys.path.insert(0, str(ROOT))
    from datetime import timedelta

    from service import create_app
    from service.clock import utcnow
    from service.formats import MatchSettings
    from service.usecases import players, tables, wallets
    from service.usecases.auth import Principal, mint_player_token
    from tests.conftest import new_operator

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": os.environ["SECRET_KEY"]})
    operator_id, _key = new_operator(app, "Bench")
    operator = Principal(operator_id)
    session = app.extensions["gin"]["sessionmaker"]()
    settings = MatchSettings.from_dict({"format": "match_play", "stake": 100, "target": 100,
                                        "clock": {"turn_seconds": 600}})
    out = []
    now = utcnow()
    for i in range(matches):
        view = tables.create_table(session, operator, name=f"bench {i}", currency="EUR",
                                   settings=settings, practice=False, private=False, now=now)
        tokens = []
        for seat in range(2):
            player = players.create_player(session, operator, f"b{i}-{seat}", "P", None, now)
            wallets.deposit(session, operator, player.id, "EUR", 1000, f"d{i}-{seat}", now)
            token = mint_player_token(operator_id, player.id, os.environ["SECRET_KEY"],
                                      now + timedelta(hours=1))
            tables.join_table(session, Principal(operator_id, player.id), view.table.id,
                              buyin=None, invite_code=None, client_seed=None,
                              now=now)
            tokens.append(token)
        out.append((view.table.match_id, tokens))
    session.close()
    app.extensions["gin"]["engine"].dispose()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=16, help="matches played at once")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int,
                        default=int(os.environ.get("WEB_CONCURRENCY", 0))
                        or (os.cpu_count() or 1) * 2 + 1)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.conftest import throwaway_postgres

    base = (os.environ.get("BENCH_DATABASE_URL") or os.environ.get("TEST_DATABASE_URL")
            or "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    os.environ["SECRET_KEY"] = secrets.token_hex(16)
    with throwaway_postgres(base) as url:
        queue = prepare(url, args.matches * 4)
        port = free_port()
        env = dict(os.environ, DATABASE_URL=url, WEB_CONCURRENCY=str(args.workers),
                   DB_POOL_SIZE=os.environ.get("DB_POOL_SIZE", "4"))  # one per thread
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy/gunicorn.conf.py"),
             "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "service.wsgi:app"],
            cwd=ROOT, env=env,
        )
        try:
            for _ in range(400):
                try:
                    with socket.create_connection(("127.0.0.1", port), 0.2):
                        break
                except OSError:
                    time.sleep(0.05)
            asyncio.run(baseline(port, args.matches, 1.0))  # warm up
            print(f"gunicorn workers: {args.workers}; concurrent matches: {args.matches}; "
                  f"{args.seconds:.0f} s per phase; {os.cpu_count()} CPUs")
            count, lat, fail = asyncio.run(baseline(port, args.matches, args.seconds))
            base_rate = report("healthz", count, args.seconds, lat, fail)
            result = asyncio.run(play(port, queue, args.matches, args.seconds))
            report("reads", len(result["reads"]), result["elapsed"], result["reads"], 0)
            act_rate = report("actions", len(result["acts"]), result["elapsed"], result["acts"],
                              result["failures"])
            print(f"matches finished: {result['finished']}; ratio actions/healthz: "
                  f"{act_rate / base_rate:.2f} (target: >= 400 actions/s, p99 < 50 ms)")
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
