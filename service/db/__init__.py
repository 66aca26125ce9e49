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


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    """An engine for ``url``; nothing connects until first use."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})

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
    )


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


def is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


@contextmanager
def transaction(session: Session) -> Iterator[None]:
    """A database transaction for one use case, or the caller's if one is already open.

    The HTTP idempotency wrapper runs a money-moving request in one transaction (the key's
    claim, the use case and the stored response commit together); use cases it wraps join that
    transaction instead of committing their own. Called on its own, a use case begins and
    commits (or rolls back) its own transaction as before.
    """
    if session.in_transaction():
        yield
        return
    with session.begin():
        yield
