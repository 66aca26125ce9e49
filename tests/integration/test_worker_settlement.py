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
from service.db.models import LedgerTransaction
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, make_test_app, new_operator, throwaway_postgres
from tests.integration.workers import Broker, kill, private_redis, wait_until, worker
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
            relay_events(session, broker.send, utcnow())  # fails: the events stay unpublished
            start()
            with worker(url, broker):
                # The next sweep publishes what the outage held back.
                relay_events(session, broker.send, utcnow())
                wait_until(lambda: settled_once(app, match_ids), 90, "every match settled")
        finally:
            session.close()
