"""Change notices through PostgreSQL's LISTEN/NOTIFY, the channel of a deployment whose
database is PostgreSQL and whose broker is not Redis (RabbitMQ): a waiter held by one
process is woken by a change committed in another, and a listener whose backend is
terminated listens again, no waiter left stale past its timeout meanwhile
(docs/scale-out.md, "Waiting for changes")."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from service.live import notices
from tests.conftest import ApiClient, make_test_app
from tests.integration.workers import wait_until
from tests.ops.servers import gunicorn
from tests.ops.test_waiting import EventReader, _match, _move, _views

needs_postgres = pytest.mark.skipif(
    not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"
)


def test_the_channel_is_the_database_when_the_broker_is_not_redis(tmp_path: Path) -> None:
    database = "postgresql+psycopg://gin@db:5432/gin"
    for broker in ("amqp://guest:guest@mq:5672//", f"filesystem://{tmp_path}/broker"):
        assert notices.notify_url(None, broker, tmp_path, database) == database
    assert isinstance(notices.make_publisher(database), notices.PostgresPublisher)
    assert notices.postgres_dsn(database) == "postgresql://gin@db:5432/gin"
    assert notices.postgres_dsn("postgres://db/gin") == "postgresql://db/gin"
    redis = "redis://cache:6379/0"
    assert notices.notify_url(None, redis, tmp_path, database) == redis  # Redis first
    assert notices.notify_url("unix:///x", redis, tmp_path, database) == "unix:///x"
    sqlite = f"sqlite:///{tmp_path}/gin.sqlite"
    assert notices.notify_url(None, "amqp://mq//", tmp_path, sqlite).startswith("unix://")


def test_a_batch_longer_than_a_notify_payload_goes_in_several() -> None:
    batch = [notices.Notice(f"mch_{i:026d}", i) for i in range(400)]
    sent = notices.payloads(batch)
    assert len(sent) > 1 and all(len(p.encode()) < 8000 for p in sent)
    assert [n for p in sent for n in notices.decode(p)] == batch


@pytest.fixture(scope="module")
def served(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, str, str]]:
    """(test app, base URL, database URL): a server with no NOTIFY_URL whose broker is not
    Redis: its waiting rooms LISTEN on its PostgreSQL."""
    url = database_url
    folder = tmp_path_factory.mktemp("pg-live")
    broker = os.environ.get("TEST_RABBITMQ_URL") or f"filesystem://{folder}/broker"
    env = {"CELERY_BROKER_URL": broker, "RATELIMIT_ENABLED": "0", "NOTIFY_URL": ""}
    app = make_test_app(url)
    with gunicorn(url, workers=2, env=env, log=folder / "gunicorn.log") as (_process, base):
        wait_until(lambda: len(_listeners(url)) == 2, 20, "each web worker to LISTEN")
        yield app, base, url
    app.extensions["gin"]["engine"].dispose()


def _libpq(url: str) -> str:
    dsn = notices.postgres_dsn(url)
    assert dsn is not None
    return dsn


def _listeners(url: str) -> list[int]:
    """The backends LISTENing for this database's notices (one per web worker)."""
    with psycopg.connect(_libpq(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
            "AND datname = current_database()",
            (notices.PG_LISTENER,),
        ).fetchall()
    return [row[0] for row in rows]


def _terminate(url: str, pids: list[int]) -> None:
    with psycopg.connect(_libpq(url), autocommit=True) as conn:
        for pid in pids:
            assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)


def _waiting(player: ApiClient, match_id: str, version: int) -> tuple[threading.Thread, list[Any]]:
    """A long-poll (timeout 25 s) for a version past ``version``, parked."""
    answers: list[Any] = []
    thread = threading.Thread(
        target=lambda: answers.append(
            player.get(f"/v1/matches/{match_id}?wait_for_version={version}&timeout=25")
        )
    )
    thread.start()
    time.sleep(0.3)  # parked (were it not yet, it would only answer sooner)
    assert not answers
    return thread, answers


def _answered(thread: threading.Thread, answers: list[Any], version: int) -> float:
    """How long the waiter took to answer with ``version`` from now."""
    started = time.monotonic()
    thread.join(timeout=30)
    assert answers and answers[0].status_code == 200
    assert answers[0].get_json()["version"] == version
    return time.monotonic() - started


@pytest.mark.postgres
@needs_postgres
def test_a_change_committed_in_another_process_wakes_the_waiter(served: Any) -> None:
    app, base, url = served
    _op, players, match_id = _match(app, base)
    here = [ApiClient(app.test_client(), p.token) for p in players]  # this process
    chosen = notices.notify_url(None, "amqp://mq//", Path("."), url)
    publisher = notices.make_publisher(chosen)
    assert isinstance(publisher, notices.PostgresPublisher)
    notices.use_publisher(publisher)
    try:
        version = _views(players, match_id)[0]["version"]
        thread, answers = _waiting(players[0], match_id, version)
        reader = EventReader(base, f"/v1/matches/{match_id}/events", players[1].token)
        assert reader.next()["event"] == "update"
        started = time.monotonic()
        moved = _move(here, match_id)  # committed by this test's process, not the server
        assert _answered(thread, answers, moved["version"]) < 1.0
        event = reader.next()
        assert event is not None and int(event["id"]) == moved["version"]
        assert time.monotonic() - started < 1.0  # heard, not polled for
        reader.close()
    finally:
        notices.use_publisher(None)
        publisher.close()


@pytest.mark.postgres
@needs_postgres
def test_a_terminated_listener_listens_again_and_no_waiter_is_left_stale(served: Any) -> None:
    app, base, url = served
    _op, players, match_id = _match(app, base)
    before = _listeners(url)
    assert len(before) == 2

    # Terminated while a long-poll waits: the change made meanwhile still wakes it, long
    # before its timeout (the room reads the versions it watches while it cannot listen).
    version = _views(players, match_id)[0]["version"]
    thread, answers = _waiting(players[0], match_id, version)
    _terminate(url, before)
    moved = _move(players, match_id)
    assert _answered(thread, answers, moved["version"]) < 5.0

    # Each room listens again, on a new backend, and hears the notices at once.
    wait_until(
        lambda: len(now := _listeners(url)) == 2 and not set(now) & set(before),
        20,
        "the waiting rooms to LISTEN again",
    )
    for _ in range(2):  # either worker may hold the waiter
        version = _views(players, match_id)[0]["version"]
        thread, answers = _waiting(players[1], match_id, version)
        moved = _move(players, match_id)
        assert _answered(thread, answers, moved["version"]) < 1.0


@pytest.mark.postgres
@needs_postgres
def test_a_terminated_publisher_connection_loses_no_notice(served: Any) -> None:
    """The server's own publishing connection terminated: its next notice goes on a new
    one (the listeners are well, so nothing else would have woken the waiter)."""
    app, base, url = served
    _op, players, match_id = _match(app, base)
    _move(players, match_id)  # the server's workers publish: their connections are open
    with psycopg.connect(_libpq(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
            "AND datname = current_database()",
            (notices.PG_PUBLISHER,),
        ).fetchall()
    assert rows
    _terminate(url, [row[0] for row in rows])
    version = _views(players, match_id)[0]["version"]
    thread, answers = _waiting(players[0], match_id, version)
    moved = _move(players, match_id)
    assert _answered(thread, answers, moved["version"]) < 1.0
