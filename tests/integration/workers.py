"""Real Celery worker processes (and a private Redis) for the settlement fault tests."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from celery import Celery
from kombu import Queue

from tests import conftest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


@contextmanager
def worker(
    database_url: str, broker: Broker, concurrency: int = 2
) -> Iterator[subprocess.Popen[bytes]]:
    env = dict(os.environ, DATABASE_URL=database_url, **broker.env)
    output = _log()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--concurrency",
            str(concurrency),
            "--pool",
            "prefork",
            "--queues",
            broker.queue,
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
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
