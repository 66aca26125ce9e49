"""Waiting clients cost nothing: moves' latency with N clients waiting, how soon a waiter hears
of a change, the database's load and the memory while they wait.

Production setup: gunicorn with deploy/gunicorn.conf.py on a throwaway PostgreSQL database,
change notices through Redis (``NOTIFY_URL``). For each N in ``--counts``: N waiting
connections are opened on M = min(N/2, ``--idle-matches``) idle matches (their players, and
beyond two per match players of other matches watching as spectators; half of the waiters
long-poll ``GET /v1/matches/{id}?wait_for_version=v&timeout=25``, half follow
``GET /v1/matches/{id}/events``; ``--mode`` picks one kind), then

- the database's transactions per second while they only wait (``pg_stat_database``'s
  ``xact_commit`` over ``--idle-seconds``, nothing else running),
- the web workers' resident memory added per waiting connection,
- 16 other matches are played as fast as they go for ``--seconds`` (the client of
  ``bench/play.py``): the actions' p50/p99 and their ratio to N=0's,
- meanwhile 8 probe matches measure the wake-up delay: a move is made and its opponent,
  waiting (long-poll or stream, alternately), hears of it; the delay runs from the move's
  answer (the change committed before it) to the waiter's answer or event.

    .venv/bin/python bench/waiting.py [--counts 0,100,1000,5000] [--seconds 5]

Needs PostgreSQL (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local server) and
Redis (BENCH_BROKER_URL, else TEST_BROKER_URL, else redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import secrets
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from harness import Http, database_base_url, default_workers, gunicorn, percentile  # noqa: E402
from play import action_body, choose, play, prepare  # noqa: E402

PROBES = 8
#: How late an idle PostgreSQL backend may report its transactions (PGSTAT_IDLE_INTERVAL).
STATS_DELAY = 11.0


def workers_rss(master: int) -> int:
    """The resident memory of gunicorn's workers (children of ``master``), in bytes."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            if parent != master:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def gunicorn_master(port: int) -> int:
    """The pid of the gunicorn master listening on ``port``."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read()
        except OSError:
            continue
        if b"gunicorn" in command and f"127.0.0.1:{port}".encode() in command:
            with open(f"/proc/{pid}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            if parent == os.getpid():
                return int(pid)
    raise RuntimeError("gunicorn's master not found")


def commits(url: str) -> int:
    """``xact_commit`` of the benchmark's database (pg_stat_database)."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def quiet_autovacuum(url: str) -> None:
    """No autovacuum on the benchmark's tables: its ANALYZE runs after the set-up's inserts
    counted as 10-25 transactions a second of an idle window (a throwaway database)."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for (name,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall():
            conn.execute(f'ALTER TABLE "{name}" SET (autovacuum_enabled = false)')


async def settled(url: str, quiet: int = 3, limit: float = 120.0) -> None:
    """Until a second passes with at most ``quiet`` transactions (the waiters' own requests
    before they parked are over)."""
    deadline = time.perf_counter() + limit
    last = commits(url)
    while time.perf_counter() < deadline:
        await asyncio.sleep(1.0)
        now = commits(url)
        if now - last - 1 <= quiet:
            return
        last = now


class Stream:
    """One ``text/event-stream`` connection: the version of each event as it comes."""

    def __init__(self, port: int, path: str, token: str) -> None:
        self.port, self.path, self.token = port, path, token
        self.versions: asyncio.Queue[int] = asyncio.Queue()
        self.writer: asyncio.StreamWriter | None = None

    async def run(self, opened: asyncio.Event | None = None) -> None:
        reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(
            f"GET {self.path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {self.token}"
            "\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        await reader.readuntil(b"\r\n\r\n")
        while True:
            line = await reader.readline()
            if not line:
                return
            if line.startswith(b"id: "):
                self.versions.put_nowait(int(line[4:]))
                if opened is not None:
                    opened.set()
                    opened = None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def long_poll_forever(port: int, match_id: str, token: str, opened: asyncio.Event) -> None:
    """A waiting player: long-polls its view again whenever an answer comes."""
    http = Http(port)
    _, view = await http.request("GET", f"/v1/matches/{match_id}", token)
    opened.set()
    try:
        while True:
            _, view = await http.request(
                "GET",
                f"/v1/matches/{match_id}?wait_for_version={view['version']}&timeout=25",
                token,
            )
    finally:
        await http.close()


async def open_waiters(
    port: int, idle: list[tuple[str, list[str]]], count: int, mode: str
) -> tuple[list[asyncio.Task[None]], list[Stream]]:
    tasks: list[asyncio.Task[None]] = []
    streams: list[Stream] = []
    opened: list[asyncio.Event] = []
    tokens = [t for _, pair in idle for t in pair]
    for i in range(count):
        # Waiter i watches match i mod M with token i mod 2M: its own player's, or a player's
        # of another match (a spectator: the table is public).
        match_id = idle[i % len(idle)][0]
        token = tokens[i % len(tokens)]
        event = asyncio.Event()
        opened.append(event)
        stream_it = mode == "stream" or (mode == "both" and i % 2 == 1)
        if stream_it:
            stream = Stream(port, f"/v1/matches/{match_id}/events", token)
            streams.append(stream)
            tasks.append(asyncio.create_task(stream.run(event)))
        else:
            tasks.append(asyncio.create_task(long_poll_forever(port, match_id, token, event)))
        if i % 200 == 199:
            await asyncio.sleep(0.05)  # not all at once: a crowd of connects at one instant
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in opened)), 120)
    await asyncio.sleep(1.0)  # the long-polls' second request parked
    return tasks, streams


async def close_waiters(tasks: list[asyncio.Task[None]], streams: list[Stream]) -> None:
    for stream in streams:
        stream.close()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def probe(
    port: int, match_id: str, tokens: list[str], use_stream: bool, deadline: float
) -> list[float]:
    """Moves in one match, each heard by the opponent waiting: the wake-up delays."""
    delays: list[float] = []
    http = {t: Http(port) for t in tokens}
    seat_token: dict[int, str] = {}
    for token in tokens:
        _, view = await http[token].request("GET", f"/v1/matches/{match_id}", token)
        seat_token[view["you"]] = token
    rng = random.Random(2)
    streams = (
        {
            seat: Stream(port, f"/v1/matches/{match_id}/events", token)
            for seat, token in seat_token.items()
        }
        if use_stream
        else {}
    )
    runs = [asyncio.create_task(s.run()) for s in streams.values()]
    for s in streams.values():
        await s.versions.get()  # the first event: the stream is open
    try:
        while time.perf_counter() < deadline:
            _, view = await http[seat_token[0]].request(
                "GET", f"/v1/matches/{match_id}", seat_token[0]
            )
            if view["status"] != "playing":
                break
            mover = view["hand"]["to_act"]
            if mover is None:
                await asyncio.sleep(0.05)
                continue
            waiter = 1 - mover
            token = seat_token[mover]
            _, mine = await http[token].request("GET", f"/v1/matches/{match_id}", token)
            version = mine["version"]
            wait_token = seat_token[waiter]
            if use_stream:
                heard: asyncio.Future[Any] = asyncio.ensure_future(
                    _next_after(streams[waiter], version)
                )
            else:
                heard = asyncio.ensure_future(
                    http[wait_token].request(
                        "GET",
                        f"/v1/matches/{match_id}?wait_for_version={version}&timeout=25",
                        wait_token,
                    )
                )
                await asyncio.sleep(0.02)  # parked
            action = choose(mine["hand"]["legal_actions"], rng)
            status, _after = await http[token].request(
                "POST", f"/v1/matches/{match_id}/actions", token, action_body(action, version)
            )
            answered = time.perf_counter()
            await heard
            if status == 200:
                delays.append(max(0.0, time.perf_counter() - answered))
            await asyncio.sleep(0.05)
    finally:
        for s in streams.values():
            s.close()
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        for h in http.values():
            await h.close()
    return delays


async def _next_after(stream: Stream, version: int) -> None:
    while await stream.versions.get() <= version:
        pass


async def phase(
    port: int,
    queue: list[tuple[str, list[str]]],
    probes: list[tuple[str, list[str]]],
    matches: int,
    seconds: float,
) -> tuple[dict[str, Any], list[float]]:
    deadline = time.perf_counter() + seconds
    probing = [
        asyncio.create_task(probe(port, m, t, i % 2 == 1, deadline))
        for i, (m, t) in enumerate(probes)
    ]
    played = await play(port, queue, matches, seconds, True)
    delays = [d for found in await asyncio.gather(*probing) for d in found]
    return played, delays


async def measure(args: argparse.Namespace, url: str, port: int, master: int, data: Any) -> None:
    idle, queue, probe_pool = data
    await play(port, queue, args.matches, 3.0, True)  # warm up
    rows = []
    base_p99 = base_p50 = None
    for count in args.counts:
        rss_before = workers_rss(master)
        tasks, streams = await open_waiters(port, idle, count, args.mode)
        await settled(url)  # every waiter parked: the database has gone quiet
        # PostgreSQL's backends report their counts when they go idle, up to 10 s late: the
        # waiters' own requests before they parked would be counted in the window.
        await asyncio.sleep(STATS_DELAY)
        rss_after = workers_rss(master)
        before = commits(url)
        await asyncio.sleep(args.idle_seconds)
        idle_rate = (commits(url) - before - 1) / args.idle_seconds  # -1: our own read
        probes, probe_pool = probe_pool[:PROBES], probe_pool[PROBES:]
        played, delays = await phase(port, queue, probes, args.matches, args.seconds)
        await close_waiters(tasks, streams)
        acts = played["acts"]
        p50, p99 = percentile(acts, 50), percentile(acts, 99)
        if base_p50 is None:
            base_p50, base_p99 = p50, p99
        per_conn = (rss_after - rss_before) / count / 1024 if count else 0.0
        rows.append(
            (
                count,
                len(acts) / played["elapsed"],
                p50,
                p99,
                p50 / base_p50,
                p99 / base_p99,
                percentile(delays, 50) if delays else float("nan"),
                percentile(delays, 99) if delays else float("nan"),
                len(delays),
                idle_rate,
                per_conn,
                played["failures"],
            )
        )
        print(
            f"N={count:<5} actions {rows[-1][1]:5.0f}/s p50 {p50:5.1f} ms p99 {p99:6.1f} ms "
            f"(x{p50 / base_p50:.2f}, x{p99 / base_p99:.2f} of N=0)  wake-up p50 "
            f"{rows[-1][6]:5.1f} ms p99 {rows[-1][7]:6.1f} ms (n={len(delays)})  "
            f"idle DB {idle_rate:5.1f} xact/s  RSS {per_conn:5.1f} KiB/waiter  "
            f"failures={played['failures']}",
            flush=True,
        )
        await asyncio.sleep(2.0)  # the server closes the dropped connections


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="0,100,1000,5000")
    parser.add_argument("--matches", type=int, default=16, help="matches played at once")
    parser.add_argument("--seconds", type=float, default=5.0, help="play phase per N")
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=30.0,
        help="the idle window: longer than a long-poll's timeout (25 s), so its answers count",
    )
    parser.add_argument(
        "--idle-matches",
        type=int,
        default=250,
        help="at most this many idle matches (M) carry the N waiters (players and spectators)",
    )
    parser.add_argument("--mode", choices=("both", "poll", "stream"), default="both")
    parser.add_argument("--workers", type=int, default=default_workers())
    args = parser.parse_args()
    args.counts = [int(c) for c in args.counts.split(",")]
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # gunicorn inherits it
    sys.path.insert(0, str(ROOT))
    from tests.conftest import throwaway_postgres

    os.environ["SECRET_KEY"] = secrets.token_hex(16)
    os.environ["NOTIFY_URL"] = (
        os.environ.get("BENCH_BROKER_URL")
        or os.environ.get("TEST_BROKER_URL")
        or "redis://127.0.0.1:6379/0"
    )
    os.environ.setdefault("RATELIMIT_ENABLED", "0")
    with throwaway_postgres(database_base_url()) as url:
        started = time.perf_counter()
        idle = prepare(url, max(1, min((max(args.counts) + 1) // 2, args.idle_matches)))
        queue = prepare(url, args.matches * (3 * len(args.counts) + 4))
        probe_pool = prepare(url, PROBES * len(args.counts))
        quiet_autovacuum(url)
        print(f"prepared in {time.perf_counter() - started:.0f} s", flush=True)
        with gunicorn(url, args.workers, os.environ["SECRET_KEY"]) as port:
            master = gunicorn_master(port)
            print(
                f"{args.workers} workers x {os.environ.get('GUNICORN_THREADS', '8')} threads, "
                f"{args.matches} matches played, waiters: {args.mode}, NOTIFY_URL Redis",
                flush=True,
            )
            asyncio.run(measure(args, url, port, master, (idle, queue, probe_pool)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
