"""Settlement by real worker processes on a real broker and PostgreSQL: duplicates, two workers
at once, a worker killed with SIGKILL in the middle of a backlog, and a broker outage while
matches end. Every match is settled exactly once.

Needs TEST_DATABASE_URL, and TEST_BROKER_URL / TEST_RABBITMQ_URL for the shared brokers (CI
sets them); the outage test starts a Redis of its own.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select

from service.clock import utcnow
from service.db.match_models import Settlement
from tests.conftest import in_unit, make_test_app, throwaway_postgres
from tests.integration.workers import (
    Broker,
    finished_matches,
    kill,
    private_redis,
    settled_once,
    wait_until,
    worker,
)
from worker.relay import relay_events

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"),
]

BROKERS = [
    pytest.param(
        os.environ.get("TEST_BROKER_URL"),
        id="redis",
        marks=pytest.mark.skipif(
            not os.environ.get("TEST_BROKER_URL"), reason="needs TEST_BROKER_URL"
        ),
    ),
    pytest.param(
        os.environ.get("TEST_RABBITMQ_URL"),
        id="rabbitmq",
        marks=pytest.mark.skipif(
            not os.environ.get("TEST_RABBITMQ_URL"), reason="needs TEST_RABBITMQ_URL"
        ),
    ),
]


@pytest.fixture
def database() -> Iterator[tuple[Any, str]]:
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        app = make_test_app(url)
        yield app, url
        app.extensions["gin"]["engine"].dispose()


_brokers: list[Broker] = []


def request_cleanup(broker: Broker) -> None:
    _brokers.append(broker)


@pytest.fixture(autouse=True)
def _clean_brokers() -> Iterator[None]:
    yield
    while _brokers:
        _brokers.pop().cleanup()


@pytest.mark.parametrize("broker_url", BROKERS)
def test_duplicates_and_two_workers_settle_once(database: tuple[Any, str], broker_url: str) -> None:
    app, url = database
    broker = Broker(broker_url)
    request_cleanup(broker)
    match_ids = finished_matches(app, 8)
    for match_id in match_ids:
        for _ in range(3):  # the same task delivered several times
            broker.send("settlement.settle_match", [match_id])
    with worker(url, broker), worker(url, broker):
        wait_until(lambda: settled_once(app, match_ids), 90, "every match settled")
    assert settled_once(app, match_ids)


@pytest.mark.parametrize("broker_url", BROKERS)
def test_worker_killed_mid_backlog_then_restarted(
    database: tuple[Any, str], broker_url: str
) -> None:
    app, url = database
    broker = Broker(broker_url)
    request_cleanup(broker)
    match_ids = finished_matches(app, 12)
    for match_id in match_ids:
        broker.send("settlement.settle_match", [match_id])

    def some_settled() -> bool:
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            return bool(session.scalar(select(func.count()).select_from(Settlement)))
        finally:
            session.close()

    with worker(url, broker, concurrency=2) as first:
        wait_until(some_settled, 90, "the first settlements")
        kill(first, signal.SIGKILL)  # tasks in flight die with it, unacknowledged
    with worker(url, broker):
        # Unacknowledged tasks come back (RabbitMQ at once, Redis after its visibility
        # timeout); the sweeper re-queues anything else.
        broker.send("settlement.sweep", [])
        wait_until(lambda: settled_once(app, match_ids), 120, "every match settled")


def test_broker_outage_while_matches_end(database: tuple[Any, str]) -> None:
    app, url = database
    with private_redis() as (redis_url, stop, start):
        broker = Broker(redis_url)
        stop()  # the broker is down while the matches end
        match_ids = finished_matches(app, 5)
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            in_unit(
                session, relay_events, broker.send, utcnow()
            )  # fails: the events stay unpublished
            start()
            with worker(url, broker):
                # The next sweep publishes what the outage held back.
                in_unit(session, relay_events, broker.send, utcnow())
                wait_until(lambda: settled_once(app, match_ids), 90, "every match settled")
        finally:
            session.close()
