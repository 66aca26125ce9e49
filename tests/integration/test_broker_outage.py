"""Prompt settlement after a broker outage or a worker restart, with real Celery
worker processes and a Redis server of the test's own.

A Redis that comes back empty has lost every task it held, and a SIGKILLed worker takes its
unacknowledged tasks with it. What was missed must be settled within seconds of the broker
answering again (or of a worker starting), exactly once, without waiting for a beat tick:
these tests run no beat at all, so whatever settles the matches is the worker's own catch-up.

Needs redis-server on the PATH; runs on PostgreSQL when TEST_DATABASE_URL is set (CI), else
on a SQLite file.
"""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from service.clock import utcnow
from tests.conftest import in_unit, serving
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
    pytest.mark.timing,  # under pytest-xdist, with no other test beside it
    pytest.mark.skipif(
        shutil.which("redis-server") is None, reason="needs redis-server on the PATH"
    ),
]

#: Seconds from the broker's return (or a worker's start) to every match settled.
PROMPTLY = 10


@pytest.fixture
def database(fresh_database_url: str) -> Iterator[tuple[Any, str]]:
    """A database of the test's own, shared with the worker processes (PostgreSQL when
    TEST_DATABASE_URL is set, else a SQLite file)."""
    with serving(fresh_database_url) as app:
        yield app, fresh_database_url


def lost_with_the_broker(session: Any) -> None:
    """Hand every unpublished event to a broker that loses it: the events are stamped
    published, as by a relay whose tasks were in Redis when it died, and no task exists."""
    in_unit(session, relay_events, lambda _name, _args: None, utcnow())


def settled_within(app: Any, match_ids: list[str], seconds: float) -> float:
    """Wait until every match is settled exactly once; the seconds it took."""
    since = time.monotonic()
    wait_until(lambda: settled_once(app, match_ids), seconds, "every match settled")
    return time.monotonic() - since


#: Seconds a worker process may take to start and settle a first match.
STARTED = 60


def test_matches_missed_while_redis_was_down_are_settled_once_soon_after_it_returns_empty(
    database: tuple[Any, str],
) -> None:
    app, url = database
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with private_redis() as (redis_url, stop, start):
            broker = Broker(redis_url)
            with worker(url, broker):
                first = finished_matches(app, 1)
                in_unit(session, relay_events, broker.send, utcnow())
                settled_within(app, first, STARTED)  # the worker is up and consuming
                # Its catch-up done too: a worker that loses Redis with a task in hand before
                # its first acknowledgement can exit on a kombu error, not what this tests.
                wait_until(broker.idle, STARTED, "the worker to finish what it took")
                lost = finished_matches(app, 3)
                lost_with_the_broker(session)
                stop()  # Redis is down while more matches end
                held = finished_matches(app, 3)
                in_unit(session, relay_events, broker.send, utcnow())  # fails: their events stay
                start()  # empty: the queue, its binding and the tasks it held are gone
                took = settled_within(app, lost + held, PROMPTLY)
        assert settled_once(app, first + lost + held)
        print(f"settled {took:.1f} s after the broker returned")
    finally:
        session.close()


def test_a_restarted_worker_settles_what_its_killed_predecessor_lost(
    database: tuple[Any, str],
) -> None:
    app, url = database
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with private_redis() as (redis_url, _stop, _start):
            broker = Broker(redis_url)
            with worker(url, broker) as first_worker:
                first = finished_matches(app, 1)
                in_unit(session, relay_events, broker.send, utcnow())
                settled_within(app, first, STARTED)
                lost = finished_matches(app, 3)
                lost_with_the_broker(session)  # as if taken by the worker, unacknowledged
                kill(first_worker, signal.SIGKILL)
            with worker(url, broker):
                took = settled_within(app, lost, PROMPTLY)
        assert settled_once(app, first + lost)
        print(f"settled {took:.1f} s after the worker started")
    finally:
        session.close()
