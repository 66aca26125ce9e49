"""service.db.first_alone on PostgreSQL: one statement in autocommit on a pooled connection,
which goes back to the pool in ordinary transaction mode, and a dead connection is a
disconnect (the API answers 503), never a connection left switched in the pool."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from service.db import first_alone, make_engine, shared
from tests.conftest import throwaway_postgres

pytestmark = pytest.mark.skipif(
    not os.environ.get("TEST_DATABASE_URL"), reason="the autocommit path is PostgreSQL's"
)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        engine = make_engine(url, pool_size=1)  # one pooled connection: every call reuses it
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE notes (id serial PRIMARY KEY, body text)"))
        yield engine
        engine.dispose()


def _count(engine: Engine) -> Any:
    with engine.connect() as connection:
        return connection.execute(text("SELECT count(*) FROM notes")).scalar()


def test_a_write_commits_by_itself_and_the_connection_returns_to_transactions(
    engine: Engine,
) -> None:
    before = _count(engine)
    with Session(engine) as session:
        row = first_alone(session, text("INSERT INTO notes (body) VALUES ('a') RETURNING id"), {})
        assert row.id > 0
        assert not session.in_transaction()
    assert _count(engine) == before + 1  # committed without a COMMIT of ours
    # The same pooled connection, back in transaction mode: a rolled-back insert is gone.
    with Session(engine) as session, session.begin():
        driver = session.connection().connection.driver_connection
        assert driver.autocommit is False
        session.execute(text("INSERT INTO notes (body) VALUES ('b')"))
        session.rollback()
    assert _count(engine) == before + 1


def test_inside_a_shared_transaction_it_joins_it(engine: Engine) -> None:
    before = _count(engine)
    with Session(engine) as session, pytest.raises(LookupError), shared(session):
        first_alone(session, text("INSERT INTO notes (body) VALUES ('c') RETURNING id"), {})
        raise LookupError("roll the shared transaction back")
    assert _count(engine) == before


def test_a_killed_connection_is_a_disconnect_and_the_pool_recovers(engine: Engine) -> None:
    with Session(engine) as session:
        first_alone(session, text("SELECT 1 AS one"), {})  # the pooled connection exists
    with engine.connect() as connection:
        victim = connection.execute(text("SELECT pg_backend_pid()")).scalar()
    killer = make_engine(str(engine.url.render_as_string(hide_password=False)), pool_size=1)
    try:
        with killer.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": victim})
    finally:
        killer.dispose()
    with Session(engine) as session, pytest.raises(DBAPIError) as failure:
        first_alone(session, text("SELECT 1 AS one"), {})
    assert failure.value.connection_invalidated  # the API's 503, and the pool is emptied
    with Session(engine) as session:
        assert first_alone(session, text("SELECT 2 AS two"), {}).two == 2
        with session.begin():
            assert session.connection().connection.driver_connection.autocommit is False
