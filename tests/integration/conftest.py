"""Fixtures for database tests: a funded player on a database of the test's own."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text
from werkzeug.serving import make_server

from service.clock import utcnow
from service.usecases import players, wallets
from service.usecases.auth import Principal
from tests.conftest import in_unit, make_test_app, new_operator, throwaway_postgres


@dataclass
class Funded:
    url: str
    app: Any
    operator_id: str
    player_id: str
    other_player_id: str

    def session(self) -> Any:
        return self.app.extensions["gin"]["sessionmaker"]()


def make_funded(app: Any, url: str, amount: int = 10_000) -> Funded:
    operator_id, _key = new_operator(app)
    principal = Principal(operator_id)
    session = app.extensions["gin"]["sessionmaker"]()
    now = utcnow()
    one = in_unit(session, players.create_player, principal, "ext-1", "One", None, now)
    two = in_unit(session, players.create_player, principal, "ext-2", "Two", None, now)
    for player in (one, two):
        in_unit(
            session, wallets.deposit, principal, player.id, "EUR", amount, f"seed-{player.id}", now
        )
    session.close()
    return Funded(url, app, operator_id, one.id, two.id)


@pytest.fixture
def funded(fresh_database_url: str) -> Iterator[Funded]:
    """Two players of one operator with 100.00 EUR each, on a database of the test's own."""
    app = make_test_app(fresh_database_url)
    yield make_funded(app, fresh_database_url)
    app.extensions["gin"]["engine"].dispose()


@pytest.fixture
def shared_funded(app: Any, database_url: str) -> Funded:
    """Like ``funded``, on the run's shared database (a fresh operator keeps tests apart)."""
    return make_funded(app, database_url)


@contextmanager
def threaded_postgres_server(pool_size: int) -> Iterator[tuple[Any, int]]:
    """The app on a throwaway PostgreSQL database of its own, served by a threaded server on
    a real socket (each request its own thread, as parallel clients need): (app, port)."""
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        app = make_test_app(url, DB_POOL_SIZE=pool_size)
        httpd = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield app, httpd.server_port
        finally:
            httpd.shutdown()
            thread.join()
            app.extensions["gin"]["engine"].dispose()


def until_waiting(funded: Funded, count: int) -> None:
    """Wait until ``count`` transactions of this PostgreSQL database queue for a lock (a race
    test lines its contenders up behind the one that holds it)."""
    deadline = time.monotonic() + 10
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock'"
    )
    while True:
        with funded.app.extensions["gin"]["engine"].connect() as connection:
            if int(connection.execute(query).scalar_one()) >= count:
                return
        assert time.monotonic() < deadline, "the transaction never queued for the lock"
        time.sleep(0.01)
