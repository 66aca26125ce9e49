"""One statement straight on psycopg's connection, for the hottest single-statement calls.

:func:`service.db.first_alone` runs a read or a single-statement write in autocommit. Through
SQLAlchemy's ``Connection`` that costs about as much client CPU again as psycopg itself (a
connection object, the execution context, the result object, twice per action). Here a Core
statement is compiled once per dialect and then executed on the pooled connection's psycopg
connection as it is, with SQLAlchemy's own type processing applied to what goes in and comes out:

- the SQL text is SQLAlchemy's compilation of the statement (its casts included);
- each parameter goes through its type's bind processor (a JSON value is wrapped for psycopg,
  a timestamp is checked for a time zone), each returned value through its column type's
  result processor (timestamps come back in UTC), exactly as SQLAlchemy would;
- a database error is raised as SQLAlchemy's exception for it (``DBAPIError.instance``), and a
  lost connection as one with ``connection_invalidated`` set, every connection opened before
  it dropped when next checked out (as SQLAlchemy does on a disconnect), so callers and the
  API's error handlers see what they saw before.

A statement this cannot reproduce exactly (text, literal values bound in the statement,
expanding or renamed parameters, columns that are not plain names) is left to SQLAlchemy:
:func:`prepare` returns ``None`` for it.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from sqlalchemy import Connection, Engine, Executable, Table, bindparam, insert
from sqlalchemy.engine import CursorResult, Dialect
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ClauseElement, ColumnClause, Label, _anonymous_label

Processor = Callable[[Any], Any]


@dataclass(frozen=True)
class DriverStatement:
    sql: str
    names: tuple[str, ...]  # the statement's parameters
    binds: tuple[tuple[str, Processor], ...]  # parameter -> its type's bind processor
    results: tuple[tuple[int, Processor], ...]  # column position -> its result processor
    row: Any  # a named tuple class of the returned columns, with ``_mapping`` like a Row's


_prepared: dict[tuple[int, str], tuple[ClauseElement, DriverStatement | None]] = {}
_lock = threading.Lock()
#: Statements are expected to be module constants; one built per call would fill the cache,
#: so past this many it starts again (and such a caller would do better through SQLAlchemy,
#: whose cache is keyed by the statement's structure).
MAX_PREPARED = 512


def _row_type(names: list[str]) -> Any:
    base: Any = namedtuple("DriverRow", names)  # type: ignore[misc]

    class DriverRow(base):
        __slots__ = ()

        @property
        def _mapping(self) -> dict[str, Any]:
            return dict(zip(self._fields, self, strict=True))

    return DriverRow


def _compile(statement: ClauseElement, dialect: Dialect) -> DriverStatement | None:
    columns = getattr(statement, "exported_columns", None)
    if columns is None:  # text() and the like: no column types to process results by
        return None
    compiled: Any = statement.compile(dialect=dialect)  # a SQLCompiler
    if (
        compiled.positional
        or getattr(compiled, "escaped_bind_names", None)
        or getattr(compiled, "literal_execute_params", None)
        or getattr(compiled, "post_compile_params", None)
    ):
        return None
    names, binds = [], []
    for name, parameter in compiled.binds.items():
        if not parameter.required or parameter.expanding:  # a value inside the statement
            return None
        names.append(name)
        process = parameter.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            binds.append((name, process))
    # Only columns and explicitly labelled expressions: SQLAlchemy names anything else itself
    # (``count_1``), and a row must have the same names whichever way it was read.
    labels = [
        column.name
        if isinstance(column, ColumnClause | Label)
        and not isinstance(column.name, _anonymous_label)
        else None
        for column in columns
    ]
    if not all(
        isinstance(n, str) and n.isidentifier() and not n.startswith("_") for n in labels
    ) or len(set(labels)) != len(labels):
        return None
    results = []
    for position, column in enumerate(columns):
        process = column.type.dialect_impl(dialect).result_processor(dialect, None)
        if process is not None:
            results.append((position, process))
    row = _row_type(labels)  # type: ignore[arg-type]  # all str, checked above
    return DriverStatement(compiled.string, tuple(names), tuple(binds), tuple(results), row)


def prepare(statement: ClauseElement, dialect: Dialect) -> DriverStatement | None:
    """``statement`` compiled for ``dialect`` (once; statements are module constants), or
    ``None`` when it must go through SQLAlchemy."""
    key = (id(statement), dialect.name)
    found = _prepared.get(key)
    if found is not None and found[0] is statement:
        return found[1]
    prepared = _compile(statement, dialect)
    with _lock:
        if len(_prepared) >= MAX_PREPARED:
            _prepared.clear()
        _prepared[key] = (statement, prepared)  # holding the statement keeps its id unique
    return prepared


def first_autocommit(engine: Engine, prepared: DriverStatement, params: dict[str, Any]) -> Any:
    """The first row ``prepared`` returns (or ``None``), run in autocommit on a pooled
    connection, which goes back to the pool in transaction mode."""
    values = {name: params[name] for name in prepared.names}
    try:
        for name, process in prepared.binds:
            values[name] = process(values[name])
    except Exception as error:  # as SQLAlchemy reports a value its type refuses
        raise StatementError(str(error), prepared.sql, values, error) from error
    row = fetch_one_autocommit(engine, prepared.sql, values)
    if row is None:
        return None
    return _rows(prepared, [row])[0]


def fetch_one_autocommit(
    engine: Engine, sql: str, params: Sequence[Any] | Mapping[str, Any]
) -> tuple[Any, ...] | None:
    """The first row (a plain tuple) of ``sql`` run as it is on psycopg, in autocommit on a
    pooled connection, which goes back to the pool in transaction mode. A database error is
    raised as SQLAlchemy's; a lost connection also drops the pool's older ones."""
    rows = _autocommit(engine, sql, params, one=True)
    return rows[0] if rows else None


def _autocommit(
    engine: Engine, sql: str, params: Sequence[Any] | Mapping[str, Any], *, one: bool
) -> list[tuple[Any, ...]]:
    dialect = engine.dialect
    pooled = engine.raw_connection()
    try:
        driver = _psycopg(pooled)
        try:
            # Switching an idle connection sends nothing; so does the rollback with which the
            # pool takes it back.
            driver.autocommit = True
            try:
                cursor = driver.execute(sql, params)
                if one:
                    row = cursor.fetchone()
                    rows: list[tuple[Any, ...]] = [] if row is None else [row]
                else:
                    rows = cursor.fetchall()
            finally:
                if not driver.closed:
                    driver.autocommit = False
        except dialect.loaded_dbapi.Error as error:
            lost = dialect.is_disconnect(error, driver, None)
            if lost:  # as SQLAlchemy does: this connection and every older one are dropped
                _invalidate_pool(engine, pooled, error)
            raise DBAPIError.instance(
                sql,
                params,
                error,
                dialect.loaded_dbapi.Error,
                connection_invalidated=lost,
                dialect=dialect,
            ) from error
    finally:
        pooled.close()
    return rows


def _invalidate_pool(engine: Engine, pooled: Any, error: Exception) -> None:
    """A lost connection: ``pooled`` is invalidated (closed) and every connection opened before
    it is closed when next checked out, as SQLAlchemy's own statements do on a disconnect
    (``Pool._invalidate``). Never ``engine.dispose()``: a disposed pool forgets the connections
    other threads hold, which then stay open until the garbage collector finds them."""
    engine.pool._invalidate(pooled, error)


def _psycopg(pooled: Any) -> Any:
    """The psycopg connection under a pooled (SQLAlchemy) connection."""
    driver = pooled.driver_connection
    if driver is None:  # pragma: no cover - only after the pool invalidated it
        raise RuntimeError("the pooled connection has no driver connection")
    return driver


def _values(prepared: DriverStatement, params: Mapping[str, Any]) -> dict[str, Any]:
    values = {name: params[name] for name in prepared.names}
    try:
        for name, process in prepared.binds:
            values[name] = process(values[name])
    except Exception as error:  # as SQLAlchemy reports a value its type refuses
        raise StatementError(str(error), prepared.sql, values, error) from error
    return values


def _rows(prepared: DriverStatement, raw: list[tuple[Any, ...]]) -> list[Any]:
    if not prepared.results:
        return [prepared.row._make(row) for row in raw]
    rows = []
    for row in raw:
        values = list(row)
        for position, process in prepared.results:
            values[position] = process(values[position])
        rows.append(prepared.row._make(values))
    return rows


def _raise_as_sqlalchemy(
    connection: Connection, error: Exception, sql: str, params: Any
) -> NoReturn:
    """Raise the driver's ``error`` as SQLAlchemy's exception for it, the connection
    invalidated when it was lost (as ``Connection.execute`` does)."""
    dialect = connection.dialect
    driver = connection.connection.driver_connection
    lost = dialect.is_disconnect(error, driver, None)  # type: ignore[arg-type]
    if lost:
        _invalidate_pool(connection.engine, connection.connection, error)
        connection.invalidate(error)
    raise DBAPIError.instance(
        sql,
        params,
        error,
        dialect.loaded_dbapi.Error,
        connection_invalidated=lost,
        dialect=dialect,
    ) from error


def execute(session: Session, statement: Executable, params: Mapping[str, Any]) -> list[Any]:
    """Every row ``statement`` returns (none for a write without ``RETURNING``), run in the
    session's transaction. On PostgreSQL it goes straight to psycopg on the transaction's
    connection (see the module docs); elsewhere, or for a statement :func:`prepare` leaves to
    SQLAlchemy, through the session. Inside :func:`pipeline`, a write is only queued."""
    connection = session.connection()
    prepared = (
        prepare(statement, connection.dialect)  # type: ignore[arg-type]
        if connection.dialect.name == "postgresql"
        else None
    )
    if prepared is None:
        result = session.execute(statement, params)
        return [] if isinstance(result, CursorResult) and not result.returns_rows else list(result)
    values = _values(prepared, params)
    try:
        cursor = _psycopg(connection.connection).execute(prepared.sql, values)
        raw = cursor.fetchall() if prepared.row._fields else []
    except connection.dialect.loaded_dbapi.Error as error:
        _raise_as_sqlalchemy(connection, error, prepared.sql, values)
    return _rows(prepared, raw)


def insert_row(table: Table, *, leave_out: tuple[str, ...] = ()) -> Executable:
    """``INSERT`` of one row of ``table`` for :func:`execute` and :func:`execute_many`, each
    column a parameter of its own name, but those in ``leave_out`` (the database fills them)."""
    return insert(table).values(
        {column.key: bindparam(column.key) for column in table.c if column.key not in leave_out}
    )


def execute_many(
    session: Session, statement: Executable, params: Sequence[Mapping[str, Any]]
) -> None:
    """``statement`` (a write) once per item of ``params``, in the session's transaction:
    on PostgreSQL psycopg sends them all before reading any answer (one round trip)."""
    connection = session.connection()
    prepared = (
        prepare(statement, connection.dialect)  # type: ignore[arg-type]
        if connection.dialect.name == "postgresql"
        else None
    )
    if prepared is None or prepared.row._fields:
        session.execute(statement, list(params))
        return
    values = [_values(prepared, item) for item in params]
    try:
        with _psycopg(connection.connection).cursor() as cursor:
            cursor.executemany(prepared.sql, values)
    except connection.dialect.loaded_dbapi.Error as error:
        _raise_as_sqlalchemy(connection, error, prepared.sql, values)


@contextmanager
def pipeline(session: Session) -> Iterator[None]:
    """PostgreSQL: the writes run by :func:`execute` and :func:`execute_many` inside the block
    are sent without waiting for each answer, and the answers are read together when the block
    ends (or when a statement's rows are read); a failed one raises there, as SQLAlchemy's
    exception, and the statements after it are not run. Elsewhere it changes nothing."""
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        yield
        return
    driver = _psycopg(connection.connection)
    try:
        with driver.pipeline():
            yield
    except connection.dialect.loaded_dbapi.Error as error:
        _raise_as_sqlalchemy(connection, error, "-- pipeline", None)
