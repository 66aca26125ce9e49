"""Database engine and sessions.

``make_engine`` builds an engine for a URL: on SQLite it turns on foreign keys and WAL and makes
every transaction ``BEGIN IMMEDIATE`` (SQLite's way of serialising writers, standing in for the
``SELECT ... FOR UPDATE`` row locks used on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from service import jsoncodec
from service.db import driver


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    """An engine for ``url``; nothing connects until first use."""
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"timeout": 30},
            json_serializer=jsoncodec.dumps,
            json_deserializer=jsoncodec.loads,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection: Any) -> None:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        # No ping per checkout (a round trip on every request): a connection found dead is
        # reported as a disconnect, the pool drops every connection opened before it, and the
        # request is answered 503 with Retry-After (nothing was committed).
        pool_recycle=1800,
        json_serializer=jsoncodec.dumps_bytes,  # psycopg takes the bytes as they are
        json_deserializer=jsoncodec.loads,
    )


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


def is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


#: PostgreSQL's "try again" errors: a deadlock victim or a serialization failure. A
#: transaction that failed with one was rolled back whole, so running it again is safe.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})
#: How many times a transaction that owns its work is run before such an error is raised.
ATTEMPTS = 3


def retryable(error: BaseException) -> bool:
    """Whether ``error`` (SQLAlchemy's, wrapping the driver's) is one of those."""
    return getattr(getattr(error, "orig", None), "sqlstate", None) in RETRYABLE_SQLSTATES


#: ``session.info`` key set while a caller-owned transaction (the HTTP idempotency wrapper's)
#: is open for use cases to join.
JOINABLE = "gin.joinable_transaction"


@contextmanager
def transaction(session: Session) -> Iterator[None]:
    """A database transaction for one use case, or the caller's if it opened one to share.

    The HTTP idempotency wrapper runs a money-moving request in one transaction (the key's
    claim, the use case and the stored answer commit together) inside :func:`shared`; use
    cases it wraps join that transaction instead of committing their own. Anywhere else a use
    case begins and commits (or rolls back) its own transaction as before, and an unrelated
    transaction left open (autobegun) is an error, as ``Session.begin`` makes it.
    """
    if in_shared_transaction(session):
        yield
        return
    with session.begin():
        yield


def in_shared_transaction(session: Session) -> bool:
    """Whether a transaction opened by :func:`shared` is open: use cases run inside it."""
    return bool(session.info.get(JOINABLE)) and session.in_transaction()


@contextmanager
def shared(session: Session) -> Iterator[None]:
    """Begin a transaction that use cases run inside it join (see :func:`transaction`)."""
    with session.begin():
        session.info[JOINABLE] = True
        try:
            yield
        finally:
            session.info.pop(JOINABLE, None)


def first_alone(session: Session, statement: Any, params: dict[str, Any]) -> Any:
    """The first row one statement returns, the statement being a transaction of its own: a
    read (an API key, a match view) or a single-statement write. On PostgreSQL it runs
    outside any transaction (autocommit: one round trip instead of BEGIN, statement, COMMIT),
    on a pooled connection of its own; elsewhere, or inside a transaction, it runs there as
    usual."""
    bind = session.get_bind()
    if (
        isinstance(bind, Engine)
        and bind.dialect.name == "postgresql"
        and (not session.in_transaction())
    ):
        prepared = driver.prepare(statement, bind.dialect)
        if prepared is not None:  # the common case: straight on psycopg (service.db.driver)
            return driver.first_autocommit(bind, prepared, params)
        with bind.connect() as connection:
            # psycopg's own switch, not SQLAlchemy's isolation_level option: that one copies
            # the connection and sets and resets its characteristics on every call, a
            # measurable part of a match request's CPU. Switching on an idle connection sends
            # nothing; the closing rollback of an idle connection sends nothing either.
            dbapi_connection: Any = connection.connection.driver_connection
            dbapi_connection.autocommit = True
            try:
                return connection.execute(statement, params).first()
            finally:
                try:
                    dbapi_connection.autocommit = False
                except Exception:  # a broken connection: never back into the pool
                    connection.invalidate()
    with transaction(session):
        return session.execute(statement, params).first()
