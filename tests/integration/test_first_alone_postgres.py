"""service.db.first_alone on PostgreSQL: one statement in autocommit on a pooled connection,
which goes back to the pool in ordinary transaction mode, and a dead connection is a
disconnect (the API answers 503), never a connection left switched in the pool. Core
statements run straight on psycopg (service.db.driver): the same rows, types and exceptions
as through SQLAlchemy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError, IntegrityError, StatementError
from sqlalchemy.orm import Session

from service.db import driver, first_alone, make_engine
from service.db.models import UTCDateTime
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


def test_inside_a_unit_of_work_it_runs_there(engine: Engine) -> None:
    before = _count(engine)
    with Session(engine) as session, pytest.raises(LookupError), session.begin():
        first_alone(session, text("INSERT INTO notes (body) VALUES ('c') RETURNING id"), {})
        raise LookupError("roll the unit of work back")
    assert _count(engine) == before


def _kill_the_pooled_connection(engine: Engine) -> None:
    """Terminate the backend of ``engine``'s one pooled connection from another engine."""
    with engine.connect() as connection:
        victim = connection.execute(text("SELECT pg_backend_pid()")).scalar()
    killer = make_engine(str(engine.url.render_as_string(hide_password=False)), pool_size=1)
    try:
        with killer.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": victim})
    finally:
        killer.dispose()


def test_a_killed_connection_is_a_disconnect_and_the_pool_recovers(engine: Engine) -> None:
    with Session(engine) as session:
        first_alone(session, text("SELECT 1 AS one"), {})  # the pooled connection exists
    _kill_the_pooled_connection(engine)
    with Session(engine) as session, pytest.raises(DBAPIError) as failure:
        first_alone(session, text("SELECT 1 AS one"), {})
    assert failure.value.connection_invalidated  # the API's 503, and the pool is emptied
    with Session(engine) as session:
        assert first_alone(session, text("SELECT 2 AS two"), {}).two == 2
        with session.begin():
            assert session.connection().connection.driver_connection.autocommit is False


def test_a_lost_connection_leaves_the_ones_held_elsewhere_to_their_pool(engine: Engine) -> None:
    """The connection another request holds while one is found lost goes back to the same
    pool, which closes it (it is older than the loss): it is not left open for the garbage
    collector, as a pool disposed under its holders leaves it."""
    pooled = make_engine(engine.url.render_as_string(hide_password=False), pool_size=2)
    try:
        with pooled.connect() as held:
            held_driver = held.connection.driver_connection
            with Session(pooled) as session:  # the second connection, idle in the pool after
                victim = first_alone(session, text("SELECT pg_backend_pid() AS pid"), {}).pid
            with engine.connect() as connection:
                connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": victim})
            with pytest.raises(DBAPIError) as failure:  # straight on psycopg
                driver.fetch_one_autocommit(pooled, "SELECT 1", ())
            assert failure.value.connection_invalidated
        assert not held_driver.closed  # back in its pool, open until it is next taken
        pooled.dispose()
        assert held_driver.closed
    finally:
        pooled.dispose()


# --- Core statements: straight on psycopg (service.db.driver) ---------------------------------

_metadata = MetaData()
_things = Table(
    "things",
    _metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(40), nullable=False),
    Column("doc", JSON),
    Column("flag", Boolean),
    Column("at", UTCDateTime),
    Column("big", BigInteger),
)
_SELECT_THING = select(_things).where(_things.c.id == bindparam("id"))
_ADD_THING = (
    insert(_things)
    .values(
        id=bindparam("id"),
        name=bindparam("name"),
        doc=bindparam("doc", type_=JSON),
        at=bindparam("at", type_=UTCDateTime),
        flag=bindparam("flag"),
        big=bindparam("big"),
    )
    .returning(_things.c.id, _things.c.at)
)


@pytest.fixture
def things(engine: Engine) -> Iterator[Engine]:
    _metadata.create_all(engine)
    yield engine
    _metadata.drop_all(engine)


def _through_sqlalchemy(engine: Engine, statement: Any, params: dict[str, Any]) -> Any:
    with Session(engine) as session, session.begin():
        return session.execute(statement, params).first()


def test_core_statements_take_the_driver_path_and_others_do_not(engine: Engine) -> None:
    assert driver.prepare(_SELECT_THING, engine.dialect) is not None
    assert driver.prepare(_ADD_THING, engine.dialect) is not None
    assert driver.prepare(text("SELECT 1"), engine.dialect) is None
    literal = select(_things).where(_things.c.id == 5)  # a value bound inside the statement
    assert driver.prepare(literal, engine.dialect) is None
    expanding = select(_things).where(_things.c.id.in_(bindparam("ids", expanding=True)))
    assert driver.prepare(expanding, engine.dialect) is None
    labelled = select(func.count().label("n"), _things.c.id.label("id"))
    assert driver.prepare(labelled.group_by(_things.c.id), engine.dialect) is not None
    twice = select(_things.c.id, _things.c.id.label("id"))  # two columns of one name
    assert driver.prepare(twice, engine.dialect) is None


def test_columns_are_named_as_in_sqlalchemys_rows(things: Engine) -> None:
    with Session(things) as session:
        first_alone(
            session,
            _ADD_THING,
            {"id": 1, "name": "a", "doc": [1], "flag": None, "at": None, "big": None},
        )
    named = select(func.count().label("n"), _things.c.name.label("who"), _things.c.doc)
    unnamed = select(func.count(), _things.c.name)  # SQLAlchemy calls the count "count_1"
    for statement in (
        named.group_by(_things.c.name, _things.c.id),
        unnamed.group_by(_things.c.name),
    ):
        with Session(things) as session:
            ours = first_alone(session, statement, {})
        assert ours._mapping == dict(_through_sqlalchemy(things, statement, {})._mapping)
    assert driver.prepare(named, things.dialect) is not None
    assert driver.prepare(unnamed, things.dialect) is None  # left to SQLAlchemy


def test_a_row_reads_as_sqlalchemy_reads_it_and_a_write_commits_alone(things: Engine) -> None:
    at = datetime(2026, 12, 1, 12, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    doc = {"cards": ["AS", "TD"], "n": 2**62, "nested": {"x": None, "ok": True}}
    params = {"id": 7, "name": "seven", "doc": doc, "at": at, "flag": False, "big": -(2**62)}
    with Session(things) as session:
        added = first_alone(session, _ADD_THING, params)
        assert not session.in_transaction()
    assert added.id == 7 and added.at == at and added.at.tzinfo == UTC  # back in UTC
    with Session(things) as session:
        ours = first_alone(session, _SELECT_THING, {"id": 7})
        assert first_alone(session, _SELECT_THING, {"id": 8}) is None
    theirs = _through_sqlalchemy(things, _SELECT_THING, {"id": 7})  # committed: visible
    assert tuple(ours) == tuple(theirs)
    assert [type(v) for v in ours] == [type(v) for v in theirs]
    assert ours._mapping == dict(theirs._mapping)
    assert ours.doc == doc and ours.big == -(2**62) and ours.flag is False
    assert ours.at.tzinfo == UTC and theirs.at.tzinfo == UTC


def test_refusals_are_sqlalchemys_exceptions_and_leave_the_connection_usable(
    things: Engine,
) -> None:
    at = datetime(2026, 12, 1, tzinfo=UTC)
    params = {"id": 1, "name": "one", "doc": None, "at": at, "flag": True, "big": 1}
    with Session(things) as session:
        first_alone(session, _ADD_THING, params)
        with pytest.raises(IntegrityError) as duplicate:
            first_alone(session, _ADD_THING, params)
        assert not duplicate.value.connection_invalidated
        with pytest.raises(StatementError, match="naive datetime"):  # the type's own check
            first_alone(session, _ADD_THING, params | {"id": 2, "at": datetime(2026, 12, 1)})
        with pytest.raises(DBAPIError):  # too long for String(40)
            first_alone(session, _ADD_THING, params | {"id": 3, "name": "x" * 41})
        assert first_alone(session, _SELECT_THING, {"id": 1}).name == "one"
        with session.begin():  # the pooled connection is back in transaction mode
            assert session.connection().connection.driver_connection.autocommit is False
    assert _through_sqlalchemy(things, select(func.count()).select_from(_things), {})[0] == 1


def test_a_killed_connection_under_a_core_statement_is_a_disconnect(things: Engine) -> None:
    with Session(things) as session:
        assert first_alone(session, _SELECT_THING, {"id": 1}) is None  # the connection exists
    _kill_the_pooled_connection(things)
    with Session(things) as session, pytest.raises(DBAPIError) as failure:
        first_alone(session, _SELECT_THING, {"id": 1})
    assert failure.value.connection_invalidated  # the API's 503
    with Session(things) as session:
        assert first_alone(session, _SELECT_THING, {"id": 1}) is None


def test_the_hot_statements_take_the_driver_path(engine: Engine) -> None:
    from service.usecases import auth, play

    for statement in (
        play._SELECT_MATCH,
        play._SELECT_VERSION,
        play._SAVE_AND_LOG_IF_CURRENT,
        auth._KEY_LOOKUP,
    ):
        assert driver.prepare(statement, engine.dialect) is not None, statement


def test_statements_built_per_call_do_not_grow_the_cache_without_bound(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "MAX_PREPARED", 8)
    built = [select(_things).where(_things.c.id == bindparam("id")) for _ in range(30)]
    for statement in built:
        assert driver.prepare(statement, engine.dialect) is not None
    assert len(driver._prepared) <= 8
    assert driver.prepare(built[-1], engine.dialect) is not None  # still answered


# --- In a transaction: driver.execute, execute_many and pipeline ------------------------------

_NAME_OF = select(_things.c.id, _things.c.name, _things.c.at).where(_things.c.id == bindparam("id"))
_ADD_PLAIN = insert(_things).values(
    id=bindparam("id"), name=bindparam("name"), at=bindparam("at", type_=UTCDateTime)
)


def test_execute_runs_in_the_sessions_transaction_with_sqlalchemys_types(things: Engine) -> None:
    moment = datetime(2026, 12, 2, 10, 0, tzinfo=timezone(timedelta(hours=2)))
    with Session(things) as session:
        with session.begin():
            assert driver.prepare(_NAME_OF, things.dialect) is not None
            assert driver.execute(session, _ADD_PLAIN, {"id": 7, "name": "x", "at": moment}) == []
            [row] = driver.execute(session, _NAME_OF, {"id": 7})
            assert (row.id, row.name) == (7, "x")
            assert row.at == moment and row.at.tzinfo == UTC  # the column type's processing
            session.rollback()  # the insert was the transaction's: rolled back with it
        with session.begin():
            assert driver.execute(session, _NAME_OF, {"id": 7}) == []


def test_a_failed_statement_in_a_pipeline_is_sqlalchemys_error_and_nothing_stays(
    things: Engine,
) -> None:
    with (
        Session(things) as session,
        pytest.raises(IntegrityError),
        session.begin(),
        driver.pipeline(session),
    ):
        driver.execute(session, _ADD_PLAIN, {"id": 1, "name": "a", "at": None})
        driver.execute_many(
            session,
            _ADD_PLAIN,
            [{"id": 2, "name": "b", "at": None}, {"id": 1, "name": "twin", "at": None}],
        )
    with Session(things) as session, session.begin():
        assert driver.execute(session, _NAME_OF, {"id": 1}) == []
        assert driver.execute(session, _NAME_OF, {"id": 2}) == []


def test_the_writes_of_a_pipeline_are_all_applied_in_order(things: Engine) -> None:
    with Session(things) as session, session.begin(), driver.pipeline(session):
        driver.execute_many(
            session, _ADD_PLAIN, [{"id": n, "name": f"n{n}", "at": None} for n in range(1, 4)]
        )
        driver.execute(session, _ADD_PLAIN, {"id": 9, "name": "last", "at": None})
        # Read inside the block: psycopg reads the answers queued before it first.
        [row] = driver.execute(session, _NAME_OF, {"id": 9})
        assert row.name == "last"
    with Session(things) as session, session.begin():
        assert [driver.execute(session, _NAME_OF, {"id": n})[0].name for n in (1, 2, 3)] == [
            "n1",
            "n2",
            "n3",
        ]
