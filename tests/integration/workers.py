"""Real Celery worker processes (and a private Redis) for the settlement fault tests."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import Celery
from kombu import Queue
from sqlalchemy import func, select

from service.db.match_models import Settlement
from service.db.models import LedgerTransaction
from tests import conftest
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, free_port, new_operator

ROOT = Path(__file__).resolve().parents[2]


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll another process's progress (its only signal is the shared database)."""
    conftest.wait_until(check, timeout, what, interval=0.1)


class Broker:
    """A broker URL plus the queue and key prefix that keep this run's tasks apart."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.queue = f"gin-test-{secrets.token_hex(4)}"
        self.env = {
            "CELERY_BROKER_URL": url,
            "CELERY_QUEUE": self.queue,
            "CELERY_KEY_PREFIX": f"{self.queue}:",
            "CELERY_VISIBILITY_TIMEOUT": "3",
        }

    def client(self) -> Celery:
        app = Celery("gin-test", broker=self.url)
        options: dict[str, Any] = {"visibility_timeout": 3}
        if self.url.startswith("redis"):
            options["global_keyprefix"] = self.env["CELERY_KEY_PREFIX"]
        app.conf.update(
            broker_transport_options=options,
            task_default_queue=self.queue,
            broker_connection_retry_on_startup=False,
            task_publish_retry=False,
        )
        return app

    def send(self, name: str, args: list[Any]) -> None:
        # Declaring the queue binds it even before any worker has (or after a broker restart).
        self.client().send_task(name, args=args, retry=False, declare=[Queue(self.queue)])

    def idle(self) -> bool:
        """Redis: nothing queued and nothing taken but unacknowledged (no task in hand)."""
        import redis

        client = redis.Redis.from_url(self.url)
        prefix = self.env["CELERY_KEY_PREFIX"]
        try:
            return not client.llen(f"{prefix}{self.queue}") and not client.hlen(f"{prefix}unacked")
        finally:
            client.close()

    def cleanup(self) -> None:
        """Remove this run's queue (and, on Redis, every key under its prefix)."""
        if self.url.startswith("redis"):
            import redis

            client = redis.Redis.from_url(self.url)
            try:
                for key in client.scan_iter(f"{self.env['CELERY_KEY_PREFIX']}*"):
                    client.delete(key)
            finally:
                client.close()
            return
        with self.client().connection_for_write() as connection:
            Queue(self.queue).bind(connection.default_channel).delete()


def worker_command(
    queue: str, concurrency: int = 2, beat_schedule: Path | None = None
) -> list[str]:
    """A Celery worker of the service on ``queue`` (with beat embedded when ``beat_schedule``
    names its file), logging warnings only, without the chatter between workers."""
    beat = ["--beat", "--schedule", str(beat_schedule)] if beat_schedule is not None else []
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "worker.celery_app",
        "worker",
        *beat,
        "--concurrency",
        str(concurrency),
        "--pool",
        "prefork",
        "--queues",
        queue,
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


@contextmanager
def worker(
    database_url: str, broker: Broker, concurrency: int = 2
) -> Iterator[subprocess.Popen[bytes]]:
    env = dict(os.environ, DATABASE_URL=database_url, **broker.env)
    output = _log()
    process = subprocess.Popen(
        worker_command(broker.queue, concurrency),
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    if output is not subprocess.DEVNULL:
        output.close()  # the child has its own copy
    try:
        yield process
    finally:
        kill(process, signal.SIGTERM)


def kill(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    """Signal the worker's whole process group (the parent and its pool children)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@contextmanager
def private_redis() -> Iterator[tuple[str, Callable[[], None], Callable[[], None]]]:
    """A Redis of our own on a free port, with stop() and start() for outage tests."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise AssertionError("redis-server is not installed")
    port = free_port()
    state: dict[str, subprocess.Popen[bytes] | None] = {"process": None}

    def start() -> None:
        state["process"] = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: _answers(port), 10, "redis to start")

    def stop() -> None:
        process = state["process"]
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
            state["process"] = None

    start()
    try:
        yield f"redis://127.0.0.1:{port}/0", stop, start
    finally:
        stop()


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), 0.2):
            return True
    except OSError:
        return False


def _log() -> Any:
    """Worker output: to WORKER_LOG (a path) when debugging, else discarded."""
    path = os.environ.get("WORKER_LOG")
    return open(path, "ab") if path else subprocess.DEVNULL


def send(
    port: int, method: str, path: str, token: str, body: Any = None, key: str | None = None
) -> tuple[int, dict[str, Any], bool]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    try:
        connection.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        payload = json.loads(response.read() or b"{}")
        return response.status, payload, response.getheader("Idempotent-Replayed") == "true"
    finally:
        connection.close()


def finished_matches(app: Any, count: int) -> list[str]:
    """``count`` matches ended by a resignation, their match.finished events unpublished."""
    _operator, key = new_operator(app)
    api = ApiClient(app.test_client(), key)
    ids = []
    for _ in range(count):
        table = open_table(api, stake=100, fee={"bps": 500})
        clients = [player_client(api, deposit=1000), player_client(api, deposit=1000)]
        for client in clients:
            assert join(client, table["id"]).status_code == 201
        response = clients[0].post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
        assert response.status_code == 200
        ids.append(table["match_id"])
    return ids


def settled_once(app: Any, match_ids: list[str]) -> bool:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        settlements = session.scalar(
            select(func.count()).select_from(Settlement).where(Settlement.match_id.in_(match_ids))
        )
        captures = session.execute(
            select(LedgerTransaction.match_ref, func.count())
            .where(LedgerTransaction.kind == "capture", LedgerTransaction.match_ref.in_(match_ids))
            .group_by(LedgerTransaction.match_ref)
        ).all()
    finally:
        session.close()
    assert all(n == 1 for _ref, n in captures), captures  # never twice, at any moment
    return settlements == len(match_ids) and len(captures) == len(match_ids)


# --- ``make run``: gin-service run on the embedded default, from a folder of its own --------

GIN_SERVICE = Path(sys.executable).with_name("gin-service")  # the console script
RULE = "-" * 78  # the banner's first and last line


@dataclass
class Served:
    base: str
    folder: Path
    log: Path
    process: subprocess.Popen[bytes]
    idle: list[str] | None = None  # what it printed after its banner while idle

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()

    def after_banner(self) -> list[str]:
        """The lines printed after the banner's last rule."""
        lines = self.lines()
        last = max(i for i, line in enumerate(lines) if line == RULE)
        return lines[last + 1 :]

    def api_key(self) -> str:
        demo = json.loads((self.folder / "var" / "demo-operator.json").read_text())
        return str(demo["api_key"])


def _run_answers(base: str, process: subprocess.Popen[bytes]) -> bool:
    assert process.poll() is None, "gin-service run exited early"
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextmanager
def make_run(folder: Path, overrides: dict[str, str] | None = None) -> Iterator[Served]:
    """``gin-service run`` as ``make run`` starts it (the embedded default, the default log
    level and format, ``var/`` in its working directory ``folder``), in a session of its own
    as a terminal would start it; yielded once the API answers and the banner is printed.
    ``overrides`` sets environment variables (a database and a broker of production's kind:
    the demo operator is then asked for, as a configured database gets none by default)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key
        not in (
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "GIN_VAR_DIR",
            "GIN_BIND",
            "LOG_LEVEL",
            "LOG_FORMAT",
        )
    } | (overrides or {})
    port = free_port()
    log = folder / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(GIN_SERVICE),
                "run",
                "--bind",
                f"127.0.0.1:{port}",
                *(["--demo"] if overrides else []),
            ],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Served(f"http://127.0.0.1:{port}", folder, log, process)
    try:
        wait_until(lambda: _run_answers(served.base, process), 60, "the API to answer")
        wait_until(lambda: served.lines().count(RULE) >= 3, 60, "the banner")
        yield served
    finally:
        if process.poll() is None:  # a test that did not stop it: as Ctrl-C would
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
