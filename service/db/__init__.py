"""Database engine and sessions.

``make_engine`` builds an engine for a URL: on SQLite it turns on foreign keys and WAL and makes
every transaction ``BEGIN IMMEDIATE`` (SQLite's way of serialising writers, standing in for the
``SELECT ... FOR UPDATE`` row locks used on PostgreSQL).
"""

from __future__ import annotations

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
    engine = create_engine(
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

    @event.listens_for(engine, "connect")
    def _postgres_connect(dbapi_connection: Any, _record: Any) -> None:
        if dbapi_connection.info.server_version >= 140000:
            _watch_the_client(dbapi_connection)

    return engine


#: How often (ms) the server checks, while it runs a statement, that the client is still
#: there. A request whose process died (a gunicorn worker killed) while its statement waited
#: for a lock is rolled back within this time, and its locks (its idempotency key's among
#: them) freed; idle connections are noticed at once anyway.
CLIENT_CHECK_MS = 1000


def _watch_the_client(dbapi_connection: Any) -> None:
    autocommit = dbapi_connection.autocommit
    dbapi_connection.autocommit = True
    try:
        dbapi_connection.execute(f"SET client_connection_check_interval = {CLIENT_CHECK_MS}")
    finally:
        dbapi_connection.autocommit = autocommit


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


def is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


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
    if session.in_transaction():  # inside the caller's unit of work
        return session.execute(statement, params).first()
    with session.begin():
        return session.execute(statement, params).first()
