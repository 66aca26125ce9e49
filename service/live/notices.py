"""Change notices: ``match_id`` is at ``version`` now, published after the change commits.

A use case that changes a match calls :func:`changed` with the new version. Inside a
transaction the notice waits in ``session.info`` and is published by the session's
``after_commit`` event (a rolled-back attempt publishes nothing: the same boundary as the
version bump itself); outside one (a compare-and-set that committed on its own) it is
published at once.

The channel is named by ``NOTIFY_URL`` (docs/configuration.md):

- ``redis://...``: one Redis pub/sub channel, :data:`CHANNEL`, every web worker subscribed.
- ``postgresql://...`` (or ``postgres://``, or SQLAlchemy's ``postgresql+psycopg://``):
  PostgreSQL's LISTEN/NOTIFY on channel :data:`CHANNEL`: each web worker LISTENs on a
  connection of its own, a publisher sends ``pg_notify`` on another, in autocommit, after
  the change's own commit (not inside its transaction: a transaction that notifies takes
  a database-wide lock at its commit, which would queue every commit that changes a match,
  ledger locks held, behind every other; see docs/scale-out.md).
- ``unix:///folder``: a Unix datagram socket per web worker in ``folder``; a publisher sends
  each notice to every socket there (no server: the embedded default, ``make run``).

Unset, it is the Celery broker when that is Redis, else the database when that is
PostgreSQL, else ``unix://$GIN_VAR_DIR/live``.
Publishing never fails a use case: a notice that cannot be sent is dropped and logged, and
the waiting rooms, whose subscription broke too, read versions themselves meanwhile
(:mod:`service.live.room`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import event
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

#: The Redis pub/sub channel every web worker listens on.
CHANNEL = "gin:live"
_PENDING = "gin_live_notices"
#: After a failed publish, notices are dropped for this long (a broker outage must not slow
#: every move down by a connection timeout).
_BACKOFF_SECONDS = 1.0


@dataclass(frozen=True)
class Notice:
    """``match_id`` is at ``version`` now (``kind`` ``match``); or ``kind`` ``lobby``: the
    tables of operator ``match_id`` changed (opened, seated, filled, closed); or ``kind``
    ``auth``: a key was revoked (streams check their caller again)."""

    match_id: str
    version: int
    kind: str = "match"

    def encode(self) -> str:
        return f"{self.kind} {self.match_id} {self.version}"

    @classmethod
    def decode(cls, line: str) -> Notice | None:
        """The notice in one line, or None for a line that is not one."""
        parts = line.split()
        if len(parts) != 3 or not parts[2].isdigit():
            return None
        return cls(parts[1], int(parts[2]), parts[0])


def encode(notices: list[Notice]) -> bytes:
    return "\n".join(n.encode() for n in notices).encode()


def decode(payload: bytes | str) -> list[Notice]:
    text = payload.decode() if isinstance(payload, bytes) else payload
    return [n for n in map(Notice.decode, text.splitlines()) if n is not None]


def notify_url(
    configured: str | None, broker_url: str, var_dir: Path, database_url: str = ""
) -> str:
    """The channel's URL: ``NOTIFY_URL``, else the broker when it is Redis, else the database
    when it is PostgreSQL, else a folder of datagram sockets in the var folder."""
    if configured:
        return configured
    if broker_url.startswith(("redis://", "rediss://")):
        return broker_url
    if postgres_dsn(database_url) is not None:
        return database_url
    return f"unix://{var_dir.resolve()}/live"


def socket_folder(url: str) -> Path | None:
    """The datagram sockets' folder of a ``unix://`` URL (None for another channel)."""
    return Path(url.removeprefix("unix://")) if url.startswith("unix://") else None


def postgres_dsn(url: str) -> str | None:
    """The libpq URL of a PostgreSQL channel's URL (``postgresql://``, ``postgres://``, or
    SQLAlchemy's ``postgresql+psycopg://``), or None for another channel."""
    scheme, found, rest = url.partition("://")
    if not found or scheme.split("+", 1)[0] not in ("postgresql", "postgres"):
        return None
    return "postgresql://" + rest


#: libpq settings of the channel's connections: a database that went away is found within
#: seconds (not at the kernel's TCP timeout), and each shows in ``pg_stat_activity``.
PG_CONNECTION: dict[str, Any] = {
    "connect_timeout": 2,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
    "tcp_user_timeout": 5000,
}
#: The ``application_name`` of a web worker's listening connection.
PG_LISTENER = "gin-live-listener"
#: The ``application_name`` of a publishing connection.
PG_PUBLISHER = "gin-live-publisher"
#: A NOTIFY payload is shorter than 8000 bytes: longer batches go in several.
PG_PAYLOAD_BYTES = 7900


def payloads(notices: list[Notice], limit: int = PG_PAYLOAD_BYTES) -> list[str]:
    """``notices`` as the fewest texts of at most ``limit`` bytes, whole lines each."""
    out: list[str] = []
    lines: list[str] = []
    size = 0
    for line in (n.encode() for n in notices):
        if lines and size + len(line) + 1 > limit:
            out.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    if lines:
        out.append("\n".join(lines))
    return out


class Publisher(Protocol):
    def publish(self, notices: list[Notice]) -> None: ...


class RedisPublisher:
    """Publishes on :data:`CHANNEL` (a client per process, connected on first use)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._client: Any = None
        self._quiet_until = 0.0

    def publish(self, notices: list[Notice]) -> None:
        if time.monotonic() < self._quiet_until:
            return
        try:
            if self._client is None:
                import redis

                self._client = redis.Redis.from_url(
                    self.url, socket_timeout=0.5, socket_connect_timeout=0.5
                )
            self._client.publish(CHANNEL, encode(notices))
        except Exception as exc:  # the channel is down: the rooms poll meanwhile
            self._quiet_until = time.monotonic() + _BACKOFF_SECONDS
            log.warning("could not publish %d change notice(s): %s", len(notices), exc)


class PostgresPublisher:
    """Sends notices with ``pg_notify`` on :data:`CHANNEL` over a connection of its own in
    autocommit (one per process, connected on first use): each call is one statement and
    its own tiny transaction, after the change's commit."""

    def __init__(self, url: str) -> None:
        dsn = postgres_dsn(url)
        if dsn is None:
            raise ValueError(f"not a PostgreSQL URL: {url!r}")
        self.dsn = dsn
        self._connection: Any = None
        self._lock = threading.Lock()
        self._quiet_until = 0.0

    def publish(self, notices: list[Notice]) -> None:
        if time.monotonic() < self._quiet_until:
            return
        with self._lock:
            # A connection lost since the last notice (its backend terminated, the database
            # restarted) fails at once: the notices go again on a new one, once.
            for attempt in (1, 2):
                try:
                    self._send(notices)
                    return
                except Exception as exc:
                    self._drop()
                    if attempt == 2:  # the database is away: the rooms poll meanwhile
                        self._quiet_until = time.monotonic() + _BACKOFF_SECONDS
                        log.warning("could not publish %d change notice(s): %s", len(notices), exc)

    def _send(self, notices: list[Notice]) -> None:
        if self._connection is None:
            import psycopg

            self._connection = psycopg.connect(
                self.dsn, autocommit=True, application_name=PG_PUBLISHER, **PG_CONNECTION
            )
        for payload in payloads(notices):
            self._connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))

    def close(self) -> None:
        """Close the publishing connection (a later notice opens another)."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None


class DatagramPublisher:
    """Sends each notice to every web worker's socket in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def publish(self, notices: list[Notice]) -> None:
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return  # no web worker listens
        if not names:
            return
        payload = encode(notices)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            for name in names:
                self._send(sock, payload, self.folder / name)

    @staticmethod
    def _send(sock: socket.socket, payload: bytes, path: Path) -> None:
        try:
            sock.sendto(payload, str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            with contextlib.suppress(OSError):  # a worker that died: its socket is stale
                path.unlink()
        except OSError as exc:  # its queue is full: its waiters answer at their deadline
            log.warning("could not send a change notice to %s: %s", path, exc)


_publisher: Publisher | None = None
_publisher_lock = threading.Lock()


def publisher() -> Publisher:
    """This process's publisher, built from the environment on first use."""
    global _publisher
    if _publisher is None:
        with _publisher_lock:
            if _publisher is None:
                _publisher = make_publisher(current_url())
    return _publisher


def current_url() -> str:
    from service.config import DEFAULT_VAR_DIR, Settings

    settings = Settings.from_env()
    return notify_url(
        settings.notify_url, settings.broker_url, DEFAULT_VAR_DIR, settings.database_url
    )


def make_publisher(url: str) -> Publisher:
    folder = socket_folder(url)
    if folder is not None:
        return DatagramPublisher(folder)
    if postgres_dsn(url) is not None:
        return PostgresPublisher(url)
    return RedisPublisher(url)


_inherited: list[Publisher] = []


def _after_fork() -> None:
    """A forked child builds a publisher of its own: a connection is never shared with the
    parent (the parent's is kept referenced here, so that nothing in the child closes it)."""
    global _publisher
    if _publisher is not None:
        _inherited.append(_publisher)
    _publisher = None


os.register_at_fork(after_in_child=_after_fork)


def use_publisher(chosen: Publisher | None) -> None:
    """Publish through ``chosen`` (None: from the environment again, on next use)."""
    global _publisher
    _publisher = chosen


def publish(notices: list[Notice]) -> None:
    if notices:
        publisher().publish(notices)


def changed(session: Session, match_id: str, version: int, kind: str = "match") -> None:
    """``match_id`` is at ``version``: published when ``session``'s transaction commits, or now
    if the change is committed already (no transaction open)."""
    notice = Notice(match_id, version, kind)
    if session.in_transaction():
        session.info.setdefault(_PENDING, {})[(kind, match_id)] = notice
    else:
        publish([notice])


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    pending = session.info.pop(_PENDING, None)
    if pending:
        publish(list(pending.values()))


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_PENDING, None)
