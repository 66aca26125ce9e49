"""Real Celery worker processes (and a private Redis) for the settlement fault tests."""

from __future__ import annotations

import contextlib
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
        """A Celery client of this broker, its publishes bounded as the service's are
        (:func:`worker.celery_app.publish_options`)."""
        from worker.celery_app import GinCelery

        app = GinCelery("gin-test", broker=self.url)
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

    def send(self, name: str, args: list[Any], priority: int | None = None) -> None:
        # Declaring the queue binds it even before any worker has (or after a broker restart).
        self.client().send_task(
            name, args=args, retry=False, declare=[Queue(self.queue)], priority=priority
        )

    def idle(self) -> bool:
        """Redis: nothing queued and nothing taken but unacknowledged (no task in hand)."""
        import redis

        client = redis.Redis.from_url(self.url)
        prefix = self.env["CELERY_KEY_PREFIX"]
        queued = [f"{prefix}{self.queue}"]  # and a list per lower priority (kombu's steps)
        queued += [f"{prefix}{self.queue}\x06\x16{step}" for step in (3, 6, 9)]
        try:
            return not any(client.llen(key) for key in queued) and not client.hlen(
                f"{prefix}unacked"
            )
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
        os.environ.get("WORKER_LOGLEVEL", "WARNING"),  # INFO: a line per task, when debugging
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
    """Signal the worker's whole process group (the parent and its pool children); once the
    parent is gone, whatever is left of its group is killed (an embedded beat that a SIGTERM
    caught as it started outlived its worker, sleeping, after a CI run)."""
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
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


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


# --- a mix of faults, for tests/integration/test_fault_mix.py and bench/faults.py ------------


def consuming(redis_url: str) -> bool:
    """Whether a worker's consumer waits on a queue of this (private) Redis."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        return any(c.get("cmd") == "brpop" for c in client.client_list())
    except redis.ConnectionError:
        return False
    finally:
        client.close()


@dataclass(frozen=True)
class FaultPlan:
    """When each fault of the mix happens, in seconds from the first match: every database
    connection terminated (``pg_terminate_backend``), the worker (pool and beat) SIGKILLed
    and started again ``restart`` seconds later, Redis stopped for ``outage`` seconds (it
    comes back empty). Matches end for ``seconds``."""

    database_at: float = 20.0
    kill_at: float = 30.0
    restart: float = 6.0
    redis_at: float = 45.0
    outage: float = 20.0
    seconds: float = 75.0

    def ends(self) -> dict[str, float]:
        """Each fault's end: the database's at once, the worker's when it is started again,
        Redis's when it is back."""
        return {
            "database connections terminated": self.database_at,
            "worker started": self.kill_at + self.restart,
            "redis started": self.redis_at + self.outage,
        }


@dataclass
class FaultMix:
    """What a run of :func:`fault_mix` saw, in seconds from its first match."""

    plan: FaultPlan
    ended: dict[str, float]  # match id: when it ended (its resignation answered)
    settled: dict[str, float]  # match id: when its settlement was written
    faults: list[tuple[float, str]]  # when each fault was done
    trace: list[tuple[float, int, int, int | None]]  # each second: ended, settled, queued
    worker_log: Path

    def late(self, within: float) -> dict[str, float]:
        """Matches settled more than ``within`` seconds after they ended (or never)."""
        return {
            match_id: self.settled.get(match_id, float("inf")) - end
            for match_id, end in self.ended.items()
            if self.settled.get(match_id, float("inf")) - end > within
        }

    def fault_ends(self) -> dict[str, float]:
        """Each fault's end as seen: the plan's, but a killed worker's fault ends when its
        replacement consumes (a new Celery process takes seconds to boot, and until then the
        worker is still missing)."""
        ends = self.plan.ends()
        consuming = [t for t, what in self.faults if what == "worker consuming"]
        if consuming:
            ends["worker started"] = consuming[0]
        return ends

    def after_faults(self) -> dict[str, float]:
        """For each fault, seconds from its end (:meth:`fault_ends`) to the last settlement of
        the matches that ended before that end (negative: all settled before it ended)."""
        out = {}
        for fault, end in self.fault_ends().items():
            before = [m for m, t in self.ended.items() if t < end]
            out[fault] = max((self.settled.get(m, float("inf")) for m in before), default=end) - end
        return out

    def after_fault(self, within: float) -> dict[str, float]:
        """:meth:`after_faults` of the faults whose matches took more than ``within``."""
        return {fault: took for fault, took in self.after_faults().items() if took > within}


def fault_mix(
    database_url: str,
    plan: FaultPlan,
    clients: int,
    folder: Path,
    settle_within: float = 60.0,
    trace: bool = False,
) -> FaultMix:
    """Run :class:`FaultPlan` on the service's own processes: a Celery worker with beat (two
    pool processes, production's visibility timeout) on a Redis of its own, the database at
    ``database_url`` (PostgreSQL), and ``clients`` threads finishing matches without pause
    through the API in this process, each match followed by a relay kick as the API sends
    after commit. The clock starts once the worker consumes; after the last match, waits up
    to ``settle_within`` seconds for every settlement. The worker's output goes to
    ``folder``/worker.log."""
    import threading
    import time

    import redis
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    from service.clock import utcnow
    from worker.celery_app import KICK_PRIORITY

    log_path = folder / "worker.log"

    with private_redis() as (redis_url, stop, start):
        broker = Broker(redis_url)
        broker.env.pop("CELERY_VISIBILITY_TIMEOUT")  # production's: a killed worker's tasks
        # stay taken for hours

        def start_worker() -> subprocess.Popen[bytes]:
            env = dict(os.environ, DATABASE_URL=database_url, **broker.env)
            with log_path.open("ab") as output:
                return subprocess.Popen(
                    worker_command(broker.queue, beat_schedule=folder / "celerybeat-schedule"),
                    cwd=ROOT,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )

        app = conftest.make_test_app(database_url)
        admin = create_engine(database_url, poolclass=NullPool)
        processes = {"worker": start_worker()}
        try:
            wait_until(lambda: consuming(redis_url), 60, "the worker to consume")
            began, began_at = time.monotonic(), utcnow()
            done, kick = threading.Event(), threading.Event()
            faults: list[tuple[float, str]] = []
            ended: dict[str, float] = {}
            traced: list[tuple[float, int, int, int | None]] = []

            def terminate() -> None:
                with admin.connect() as connection:
                    connection.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                        )
                    )
                # The app's pool is not disposed: a disposed pool orphans the connections
                # the clients hold, left for the collector. As in gunicorn, the first request
                # to meet a terminated connection answers 503 and the pool drops every
                # connection opened before it.

            steps = sorted(
                [
                    (plan.database_at, "database connections terminated", terminate),
                    (plan.kill_at, "worker SIGKILLed", lambda: kill(processes["worker"])),
                    (
                        plan.kill_at + plan.restart,
                        "worker started",
                        lambda: processes.update(worker=start_worker()),
                    ),
                    (plan.redis_at, "redis stopped", stop),
                    (plan.redis_at + plan.outage, "redis started", start),
                ],
                key=lambda step: step[0],
            )

            def run_faults() -> None:
                for seconds, what, act in steps:
                    time.sleep(max(0.0, began + seconds - time.monotonic()))
                    act()
                    faults.append((time.monotonic() - began, what))
                    if what == "worker started":
                        threading.Thread(target=note_consuming).start()

            def note_consuming() -> None:
                while not done.is_set() and not consuming(redis_url):
                    time.sleep(0.05)
                faults.append((time.monotonic() - began, "worker consuming"))

            def client() -> None:
                while time.monotonic() - began < plan.seconds:
                    try:
                        [match_id] = finished_matches(app, 1)
                    except Exception:  # a terminated connection: the API answered 503
                        continue
                    ended[match_id] = time.monotonic() - began
                    kick.set()

            def kicker() -> None:
                """The API's relay kick after each match, sent beside the clients (kicks
                that came while one was on its way go as one); with Redis away a send fails
                within the service's publish bound (it took about 6 s of kombu's connection
                retries before the bound)."""
                while not done.is_set():
                    if kick.wait(0.2):
                        kick.clear()
                        with contextlib.suppress(Exception):  # the catch-up relays them
                            broker.send("outbox.relay", [], priority=KICK_PRIORITY)

            def settled_now() -> dict[str, float]:
                with admin.connect() as connection:
                    rows = connection.execute(
                        select(Settlement.match_id, Settlement.created_at)
                    ).all()
                return {m: (at - began_at).total_seconds() for m, at in rows}

            def tracer() -> None:
                queue = redis.Redis.from_url(redis_url, socket_timeout=0.5)
                key = f"{broker.env['CELERY_KEY_PREFIX']}{broker.queue}"
                keys = [key] + [f"{key}\x06\x16{step}" for step in (3, 6, 9)]
                while not done.is_set():
                    try:
                        queued: int | None = sum(int(queue.llen(k)) for k in keys)  # type: ignore[arg-type]
                    except redis.RedisError:
                        queued = None
                    count = len(settled_now())
                    traced.append((time.monotonic() - began, len(ended), count, queued))
                    done.wait(1.0)
                queue.close()

            threads = [threading.Thread(target=run_faults)]
            threads += [threading.Thread(target=client) for _ in range(clients)]
            threads.append(threading.Thread(target=kicker))
            if trace:
                threads.append(threading.Thread(target=tracer))
            for thread in threads:
                thread.start()
            for thread in threads[: 1 + clients]:
                thread.join()
            deadline = time.monotonic() + settle_within
            settled = settled_now()
            while time.monotonic() < deadline and not set(ended) <= set(settled):
                time.sleep(0.2)
                settled = settled_now()
            done.set()
            for thread in threads[1 + clients :]:
                thread.join()
        finally:
            kill(processes["worker"])
            admin.dispose()
            app.extensions["gin"]["engine"].dispose()
    return FaultMix(plan, dict(ended), settled, faults, traced, log_path)
