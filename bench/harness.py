"""What the HTTP benchmarks share: a gunicorn server on a throwaway database, a small asyncio
HTTP/1.1 client, and the report lines.

Clients keep their connection open between requests (HTTP keep-alive), as an operator's
backend with a connection pool does; ``--close`` opens a new connection per request instead.
The baseline (``GET /healthz``) is always driven the same way as the measured requests, and
the two alternate for ``--rounds`` rounds, so that a drift in the shared machine's speed
shows up as a spread of per-round ratios rather than as one skewed figure.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Http:
    """One client's HTTP/1.1 connection to the server under test."""

    def __init__(self, port: int, keep_alive: bool = True) -> None:
        self.port = port
        self.keep_alive = keep_alive
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        text: bool = False,
    ) -> tuple[int, Any]:
        """``(status, body)``: the body decoded from JSON, or as text with ``text``."""
        payload = json.dumps(body).encode() if body is not None else b""
        head = [
            f"{method} {path} HTTP/1.1",
            "Host: bench",
            f"Connection: {'keep-alive' if self.keep_alive else 'close'}",
        ]
        if token:
            head.append(f"Authorization: Bearer {token}")
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self._reader is not None
        self._writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
        await self._writer.drain()
        raw_head = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:])
        }
        length = int(fields.get("content-length", "0"))
        data = await self._reader.readexactly(length) if length else b""
        if not self.keep_alive or fields.get("connection", "").lower() == "close":
            await self.close()
        if text:
            return status, data.decode()
        return status, json.loads(data) if data else None

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._reader = self._writer = None


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1000


def report(name: str, count: int, elapsed: float, latencies: list[float], failures: int) -> float:
    rate = count / elapsed
    print(
        f"{name:<9} {rate:8.0f} req/s   p50 {percentile(latencies, 50):6.1f} ms   "
        f"p99 {percentile(latencies, 99):6.1f} ms   mean "
        f"{statistics.mean(latencies) * 1000:6.1f} ms   n={count}   failures={failures}"
    )
    return rate


CpuTimes = dict[str, dict[int, float]]  # process group -> pid -> CPU seconds


def cpu_seconds() -> CpuTimes:
    """CPU seconds used so far by each of this machine's gunicorn and PostgreSQL processes
    (Linux ``/proc``; empty elsewhere). Taken before and after a phase, it says where a
    request's CPU went (see report_cpu)."""
    totals: CpuTimes = {"gunicorn": {}, "postgres": {}}
    if not os.path.isdir("/proc/self"):
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read()
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        name = next((n for n in totals if n.encode() in command), None)
        if name:
            totals[name][int(pid)] = (int(fields[11]) + int(fields[12])) / tick  # utime+stime
    return totals


def report_cpu(before: CpuTimes, requests: int, after: CpuTimes | None = None) -> None:
    """One line: CPU per request of each process group from ``before`` to ``after`` (now by
    default). A process started meanwhile (a recycled gunicorn worker, a new database
    connection) counts from zero; one that ended meanwhile is left out, so the figure is never
    inflated by it (it may be a little low)."""
    after = after or cpu_seconds()
    if before and requests:
        used = {
            name: sum(t - before[name].get(pid, 0.0) for pid, t in after[name].items())
            for name in before
        }
        parts = ", ".join(f"{name} {used[name] / requests * 1000:.2f} ms" for name in before)
        print(f"{'':9} cpu per request: {parts}")


Phase = tuple[int, float, list[float], int]  # requests, seconds, latencies, failures


async def closed_loop(
    port: int,
    concurrency: int,
    seconds: float,
    keep_alive: bool,
    send: Callable[[Http, int], Awaitable[bool]],
) -> Phase:
    """``concurrency`` clients, each sending ``send(http, n)`` back to back for ``seconds``
    (``n`` numbers the requests of all clients; ``send`` says whether the answer was right)."""
    latencies: list[float] = []
    failures = 0
    counter = itertools.count()
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal failures
        http = Http(port, keep_alive)
        while time.perf_counter() < deadline:
            n = next(counter)
            start = time.perf_counter()
            ok = await send(http, n)
            latencies.append(time.perf_counter() - start)
            failures += not ok
        await http.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return len(latencies), time.perf_counter() - started, latencies, failures


async def baseline(port: int, concurrency: int, seconds: float, keep_alive: bool) -> Phase:
    """``GET /healthz`` from ``concurrency`` clients for ``seconds``."""

    async def healthz(http: Http, _n: int) -> bool:
        status, _ = await http.request("GET", "/healthz")
        return status == 200

    return await closed_loop(port, concurrency, seconds, keep_alive, healthz)


def database_base_url() -> str:
    return (
        os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("TEST_DATABASE_URL")
        or "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )


def default_workers() -> int:
    """``WEB_CONCURRENCY``, else deploy/gunicorn.conf.py's default (CPUs + 1)."""
    return int(os.environ.get("WEB_CONCURRENCY", 0)) or (os.cpu_count() or 1) + 1


def default_threads() -> str:
    """``GUNICORN_THREADS``, else deploy/gunicorn.conf.py's default (8)."""
    return os.environ.get("GUNICORN_THREADS", "8")


@contextmanager
def gunicorn(url: str, workers: int, secret_key: str) -> Iterator[int]:
    """gunicorn with the production configuration (deploy/gunicorn.conf.py) on ``url``; yields
    its port once it accepts connections."""
    port = free_port()
    threads = default_threads()
    env = dict(
        os.environ,
        DATABASE_URL=url,
        SECRET_KEY=secret_key,
        WEB_CONCURRENCY=str(workers),
        GUNICORN_THREADS=threads,
        DB_POOL_SIZE=os.environ.get("DB_POOL_SIZE", threads),
    )  # a connection per thread
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
        for _ in range(400):
            try:
                with socket.create_connection(("127.0.0.1", port), 0.2):
                    break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        # Stopped before its database is dropped: gracefully, else (clients still parked on
        # it past gunicorn's own graceful timeout) killed.
        server.terminate()
        try:
            server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)


def summary(name: str, ratios: list[float], latencies: list[float], target: str) -> str:
    """The closing line: each round's ratio, their median and the pooled latencies. The
    machine's speed drifts (a shared host), so rounds alternate baseline and measured phases
    and the median ratio is the figure to quote."""
    each = ", ".join(f"{r:.2f}" for r in ratios)
    return (
        f"ratio {name} per round: {each}; median {statistics.median(ratios):.2f}; "
        f"all rounds: p50 {percentile(latencies, 50):.1f} ms, "
        f"p99 {percentile(latencies, 99):.1f} ms ({target})"
    )


def describe(workers: int, concurrency: int, seconds: float, keep_alive: bool) -> str:
    worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
    threads = default_threads()
    return (
        f"load average before: {os.getloadavg()[0]:.2f}; gunicorn {worker_class} workers: "
        f"{workers} x {threads} threads; clients: {concurrency}; "
        f"{'keep-alive' if keep_alive else 'a new connection per request'}; "
        f"{seconds:.0f} s per phase; {os.cpu_count()} CPUs"
    )
