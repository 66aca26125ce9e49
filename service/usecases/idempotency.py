"""HTTP idempotency keys, as payments APIs keep them (API_CONVENTIONS, "Idempotency").

A request with a key runs in ONE database transaction with the key's record: :func:`claim`
takes the key's lock and looks the key up, the use case runs, :func:`record` stores the answer,
and all of it commits together (or none of it does: a crash, a lost connection or a server
error leaves no trace, so the client's retry simply runs again). What a second request with the
same key gets:

- the first one's stored response, when the first one committed and the request is the same;
- ``idempotency_key_reused`` (422), when the first one was a different request;
- ``idempotency_key_in_use`` (409), while the first one is still running. On PostgreSQL the
  lock is a transaction-scoped advisory lock on the key, always tried without waiting (also
  when a refused request takes it again to store its refusal, :func:`take_again`): a request
  never waits for its twin. SQLite serialises writing transactions (``BEGIN IMMEDIATE``), so
  there the twin waits for the first to finish and then replays its answer.

A request whose process dies is not running any more, and its twin must not be told it is.
Its transaction dies with its connection; the server notices a dead client at once when
idle and within ``CLIENT_CHECK_MS`` while it runs a statement (:mod:`service.db`), and then
rolls it back and frees its locks. A request that also works outside its transaction (a
seamless debit, around the call to the operator's wallet) holds its key for its whole life
with a :class:`KeyHold`, which dies with its process too.

Keys are the caller's: an operator's own, or a player's, kept apart from the operator's and
from other players' (:func:`stored_key`); problems name the key as the caller sent it.

The ledger keeps its own unique key per money movement as well, so a key whose HTTP record
has expired still never moves money twice.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import struct
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Boolean,
    Connection,
    Engine,
    Integer,
    String,
    Text,
    bindparam,
    delete,
    func,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session

from service.db import is_postgres
from service.db.driver import execute
from service.db.models import IdempotencyRow, table_of
from service.errors import (
    FieldError,
    IdempotencyKeyInUse,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    MalformedRequest,
)

MAX_KEY_LENGTH = 255
_TABLE = table_of(IdempotencyRow)
_LOOKUP = select(
    _TABLE.c.request_hash, _TABLE.c.response_status, _TABLE.c.response_body, _TABLE.c.expires_at
).where(_TABLE.c.operator_id == bindparam("operator_id"), _TABLE.c.key == bindparam("key"))
_TRY_LOCK_AND_LOOKUP = text(
    "SELECT pg_try_advisory_xact_lock(:lock_id) AS locked, r.request_hash, r.response_status,"
    " r.response_body, r.expires_at FROM (SELECT 1) AS one LEFT OUTER JOIN idempotency_keys r"
    " ON r.operator_id = :operator_id AND r.key = :key"
).columns(
    locked=Boolean,
    request_hash=String,
    response_status=Integer,
    response_body=Text,
    expires_at=_TABLE.c.expires_at.type,
)
_TRY_LOCK = select(func.pg_try_advisory_xact_lock(bindparam("lock_id")))
_DROP_EXPIRED = delete(_TABLE).where(
    _TABLE.c.operator_id == bindparam("operator_id"),
    _TABLE.c.key == bindparam("key"),
    _TABLE.c.expires_at <= bindparam("now"),
)


def _record_statement(insert: Any) -> Any:
    return (
        insert(_TABLE)
        .on_conflict_do_nothing(index_elements=["operator_id", "key"])
        .returning(_TABLE.c.key)
    )


_RECORD_PG = _record_statement(postgresql.insert)
_RECORD_SQLITE = _record_statement(sqlite.insert)


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: str


def check_key(key: str | None) -> str:
    """:raises IdempotencyKeyRequired: when the header is missing or empty.
    :raises MalformedRequest: when it is longer than 255 characters or not printable."""
    if not key:
        raise IdempotencyKeyRequired(
            "Send an Idempotency-Key header of 1 to 255 printable characters."
        )
    if len(key) > MAX_KEY_LENGTH or not key.isprintable():
        shown = f"{len(key)} characters long" if len(key) > MAX_KEY_LENGTH else "not printable"
        message = f"An idempotency key is 1 to {MAX_KEY_LENGTH} printable characters."
        raise MalformedRequest(
            f"The Idempotency-Key header is {shown}. {message}",
            errors=[FieldError("Idempotency-Key", message)],
        )
    return key


def stored_key(key: str, player_id: str | None = None) -> str:
    """The key as stored: the operator's own as sent; a player's under the player's id (and
    hashed, so that it still fits the column)."""
    if player_id is None:
        return key
    return f"{player_id}:{hashlib.sha256(key.encode()).hexdigest()}"


def _in_use(key: str) -> IdempotencyKeyInUse:
    return IdempotencyKeyInUse(f"A request with idempotency key {key!r} is still being processed.")


def _reused(key: str) -> IdempotencyKeyReused:
    return IdempotencyKeyReused(
        f"Idempotency key {key!r} was already used for a different request."
    )


def request_hash(method: str, path: str, body: Any) -> str:
    """A digest of the request that ignores JSON formatting and key order."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{method} {path}\n{canonical}".encode()).hexdigest()


def lock_id(
    operator_id: str, key: str, player_id: str | None = None, *, purpose: str = "idempotency"
) -> int:
    """The key's 64-bit advisory lock number (a hash: a rare collision only gives one of two
    unrelated requests a 409, never a shared answer); another ``purpose``, another number."""
    scoped = stored_key(key, player_id)
    digest = hashlib.sha256(f"{purpose}\x00{operator_id}\x00{scoped}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


_HOLD = text("SELECT pg_try_advisory_xact_lock(:lock_id)")


class KeyHold:
    """A key held for a request's whole life, also while it runs outside any transaction
    (a seamless debit waits for the operator's wallet between its units of work), so that a
    twin can tell a request still running from one whose process died: the hold dies with
    the process, at once.

    On PostgreSQL it is an advisory lock taken without waiting by :meth:`take` in a
    transaction of its own, on a pooled connection of its own, which stays open (idle, with
    no snapshot and nothing written) until :meth:`release` rolls it back; when the request's
    process dies its connections close and the server rolls that transaction back and drops
    the lock. A transaction rather than a session lock, so that a connection handed back to
    the pool never keeps it (the pool rolls back what it is given) and a transaction-pooling
    PgBouncer keeps the connection for the request meanwhile. (A server that ends idle
    transactions, ``idle_in_transaction_session_timeout``, must allow one longer than a
    wallet call; else a twin may take the key early: it then rolls the live request's debit
    back, which refuses to book it.) On a SQLite
    file (one machine) it is a lock on one byte of a file beside the database
    (``<database>.keys``; Linux's open file description locks, which the kernel drops when
    the process dies). Elsewhere (an in-memory database, a system without such locks)
    :meth:`take` cannot tell (``None``). The lock is not the one :func:`claim` takes in the
    request's own transactions, which therefore never wait for it.
    """

    def __init__(self, bind: Engine | Connection) -> None:
        self._engine = bind.engine if bind.dialect.name == "postgresql" else None
        database = bind.engine.url.database if bind.dialect.name == "sqlite" else None
        self._file = (
            f"{database}.keys"
            if database and database != ":memory:" and hasattr(fcntl, "F_OFD_SETLK")
            else None
        )
        self._connection: Connection | None = None
        self._fd: int | None = None
        self._lock_id: int | None = None

    def take(self, operator_id: str, key: str, *, player_id: str | None = None) -> bool | None:
        """Hold ``key`` (``player_id``'s, when a player sent it) until :meth:`release`:
        ``True`` when taken (held already counts), ``False`` when a request that is still
        running holds it, ``None`` when it cannot be told (see above; no connection free)."""
        lock = lock_id(operator_id, key, player_id, purpose="holder")
        if self._lock_id is not None:
            return self._lock_id == lock
        if self._engine is not None:
            taken = self._take_on_postgres(lock)
        elif self._file is not None:
            taken = self._take_in_file(lock)
        else:
            return None
        if taken:
            self._lock_id = lock
        return taken

    def _take_on_postgres(self, lock: int) -> bool | None:
        assert self._engine is not None
        try:
            connection = self._engine.connect()
        except (DBAPIError, PoolTimeout):
            return None
        try:
            taken = bool(connection.execute(_HOLD, {"lock_id": lock}).scalar())
        except BaseException:
            connection.invalidate()
            connection.close()
            raise
        if taken:
            self._connection = connection  # its transaction open: the lock lives
        else:
            connection.close()  # rolled back
        return taken

    def _take_in_file(self, lock: int) -> bool | None:
        assert self._file is not None
        try:
            fd = os.open(self._file, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        try:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _byte_lock(fcntl.F_WRLCK, lock))
        except OSError as error:
            os.close(fd)
            return False if error.errno in (errno.EAGAIN, errno.EACCES) else None
        self._fd = fd
        return True

    def release(self) -> None:
        """Let the key go: the hold's transaction rolled back (a connection that cannot do
        it is dropped, and the lock with it), its file closed."""
        connection, self._connection = self._connection, None
        fd, self._fd = self._fd, None
        self._lock_id = None
        if fd is not None:
            os.close(fd)
        if connection is not None:
            try:
                connection.rollback()
            except DBAPIError:
                connection.invalidate()
            finally:
                connection.close()


def _byte_lock(kind: int, lock: int) -> bytes:
    """A ``struct flock`` for one byte at the lock's place in the file (Linux, 64-bit)."""
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, lock & (2**62 - 1), 1, 0)


def claim(
    session: Session,
    operator_id: str,
    key: str,
    digest: str,
    now: datetime,
    *,
    player_id: str | None = None,
) -> StoredResponse | None:
    """Inside the request's open transaction: take ``key`` (``player_id``'s, when a player
    sent it) for this request. ``None`` means go ahead (and :func:`record` the answer before
    committing); a response means replay it.

    :raises IdempotencyKeyReused: when the key was used for a different request.
    :raises IdempotencyKeyInUse: while another request with the key is running.
    """
    params = {"operator_id": operator_id, "key": stored_key(key, player_id)}
    if is_postgres(session):
        # Lock and look up in one round trip. A twin that held the lock has committed by the
        # time the lock is ours; in the (microseconds) case where it committed after this
        # statement's snapshot, the record looks absent and the request runs again; then
        # record() finds the twin's stored answer, and the caller rolls its own work back and
        # answers with the twin's (and the ledger's own key refuses a second movement anyway).
        [row] = execute(
            session,
            _TRY_LOCK_AND_LOOKUP,
            {**params, "lock_id": lock_id(operator_id, key, player_id)},
        )
        if not row.locked:
            raise _in_use(key)
        found = None if row.request_hash is None else row
    else:
        found = session.execute(_LOOKUP, params).first()
    if found is None:
        return None
    if found.expires_at <= now:
        session.execute(_DROP_EXPIRED, {**params, "now": now})
        return None
    if found.request_hash != digest:
        raise _reused(key)
    return StoredResponse(found.response_status, found.response_body)


def record(
    session: Session,
    operator_id: str,
    key: str,
    digest: str,
    status: int,
    body: str,
    now: datetime,
    retention: timedelta,
    *,
    player_id: str | None = None,
) -> StoredResponse | None:
    """Store the answer to the request holding ``key``, in the caller's transaction. Returns
    ``None``, or the answer a twin stored first (then the key's answer is the twin's, and the
    caller must roll its own work back): after a refused request's rollback, or in the
    microseconds-wide window described in :func:`claim`."""
    scoped = stored_key(key, player_id)
    stored = execute(
        session,
        _RECORD_PG if is_postgres(session) else _RECORD_SQLITE,
        {
            "operator_id": operator_id,
            "key": scoped,
            "request_hash": digest,
            "state": "complete",
            "locked_at": now,
            "response_status": status,
            "response_body": body,
            "created_at": now,
            "expires_at": now + retention,
        },
    )
    if stored:
        return None
    found = session.execute(_LOOKUP, {"operator_id": operator_id, "key": scoped}).one()
    if found.request_hash != digest:
        raise _reused(key)
    return StoredResponse(found.response_status, found.response_body)


def purge_expired(session: Session, now: datetime) -> int:
    """Delete keys past their retention; returns how many."""
    result: Any = session.execute(delete(IdempotencyRow).where(IdempotencyRow.expires_at <= now))
    deleted: int = result.rowcount
    return deleted


def take_again(
    session: Session, operator_id: str, key: str, *, player_id: str | None = None
) -> None:
    """Inside the caller's new transaction: take ``key``'s lock again, without waiting, to
    store the refusal of a request whose own transaction was rolled back (PostgreSQL;
    SQLite's writing transactions are serialised already).

    Waiting here would wait for a twin that took the key in between for as long as the
    twin runs (its use case, the row locks it waits for): the twin's answer will be the
    key's, so this request answers at once that the key is in use.

    :raises IdempotencyKeyInUse: when another request holds the key.
    """
    if (
        is_postgres(session)
        and not execute(session, _TRY_LOCK, {"lock_id": lock_id(operator_id, key, player_id)})[0][0]
    ):
        raise _in_use(key)
