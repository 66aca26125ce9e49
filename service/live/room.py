"""A web worker's waiting room: the connections that wait for a change, held by one asyncio
event loop on a thread of its own, so that a waiting client holds no request thread and
sends no query (docs/scale-out.md, "Waiting for changes").

- A parked long-poll (:class:`service.live.Wait`) is handed back to the worker's request
  threads when a notice says its match passed the version it waits for, when its deadline
  comes, or when the worker stops; the request is then run again and answers from the
  database (so a notice that never came costs at most the wait, never a stale answer).
- An event stream (:class:`service.live.Stream`) stays here until it ends: on each notice for
  its match or tournament (or a revoked key or token) its next events are rendered on a
  request thread, through the application, and written from here; a comment line every
  ``heartbeat_seconds`` finds clients that went away.
- A connection whose client closed it is dropped at once.
- The room keeps the last version it heard of each match: a waiter that parks after its
  notice arrived is woken at once. While its subscription is down (the broker stopped, or
  not connected yet) the room reads the versions of the matches it watches every
  ``poll_seconds`` instead, and once more when the subscription is back.

The room knows nothing of HTTP or of the application: the worker gives it four callables
(wake, render, release, versions) and the connections' sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.live import Stream, Wait, lobby_topic, tournament_topic
from service.live.notices import (
    CHANNEL,
    PG_CONNECTION,
    PG_LISTENER,
    Notice,
    decode,
    postgres_dsn,
    socket_folder,
)

log = logging.getLogger(__name__)

#: How many matches' last versions a room remembers.
LATEST_KEPT = 50_000
#: An HTTP/1.1 chunked body's last chunk.
LAST_CHUNK = b"0\r\n\r\n"


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked HTTP/1.1 body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


@dataclass(eq=False)
class _Waiter:
    conn: Any
    sock: socket.socket
    ticket: Wait
    timer: asyncio.TimerHandle | None = None


@dataclass(eq=False)
class _Follower:
    conn: Any
    sock: socket.socket
    match_id: str
    sent: int
    dirty: bool = False
    task: asyncio.Task[None] | None = None
    closed: bool = False
    timer: asyncio.TimerHandle | None = None


class Room:
    """The waiting room of one worker process (the module docstring says what it does).

    ``wake(conn)``: run a parked long-poll again (called on the room's thread; it must not
    block). ``render(conn, sent)``: a stream's events after version ``sent``, as (bytes, the
    version now sent, whether the stream ends), run on ``executor``. ``release(conn)``: the
    connection is done (closed by its client, or its stream ended). ``versions(topics)``:
    the current versions of matches and tournaments (by their streams' topics), read from
    the database (run on ``executor``)."""

    def __init__(
        self,
        url: str,
        *,
        wake: Callable[[Any], None],
        render: Callable[[Any, int], tuple[bytes, int, bool]],
        release: Callable[[Any], None],
        versions: Callable[[list[str]], dict[str, int]],
        executor: Executor,
        poll_seconds: float = 1.0,
        heartbeat_seconds: float = 15.0,
        retry_seconds: float = 0.5,
        check_seconds: float = 5.0,
    ) -> None:
        self.url = url
        self._wake = wake
        self._render = render
        self._release = release
        self._versions = versions
        self._executor = executor
        self.poll_seconds = poll_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.retry_seconds = retry_seconds
        self.check_seconds = check_seconds  # a quiet PostgreSQL listener is checked this often
        self.healthy = False  # subscribed: notices arrive
        self._waiting: dict[str, set[_Waiter]] = {}
        self._following: dict[str, set[_Follower]] = {}
        self._latest: OrderedDict[str, int] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._started = threading.Event()
        self._draining = False

    # --- from other threads ---------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="waiting-room", daemon=True)
        self._thread.start()
        self._started.wait(5)

    def take(self, conn: Any, sock: socket.socket, ticket: Wait | Stream) -> None:
        """Hold ``conn`` (its socket ``sock``) as ``ticket`` says."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._take, conn, sock, ticket)

    def drain(self) -> None:
        """The worker stops accepting: every stream ends (its client reconnects to another
        worker); parked long-polls wait on, within the graceful timeout, for their change."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._drain)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stop)
            self._thread.join(5)

    def counts(self) -> tuple[int, int]:
        """(long-polls parked, streams followed)."""
        return (
            sum(len(s) for s in self._waiting.values()),
            sum(len(s) for s in self._following.values()),
        )

    # --- the loop ---------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._tasks = [
            loop.create_task(self._listen()),
            loop.create_task(self._poll()),
            loop.create_task(self._heartbeat()),
        ]
        self._started.set()
        try:
            loop.run_forever()
        finally:
            for task in self._tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.gather(*self._tasks, return_exceptions=True))
            loop.close()

    def _stop(self) -> None:
        self._drain(waiters=True)
        assert self._loop is not None
        self._loop.stop()

    def _take(self, conn: Any, sock: socket.socket, ticket: Wait | Stream) -> None:
        assert self._loop is not None
        sock.setblocking(False)
        latest = self._latest.get(ticket.match_id, -1)
        if isinstance(ticket, Wait):
            waiter = _Waiter(conn, sock, ticket)
            if latest > ticket.wanted or ticket.deadline <= self._loop.time():
                self._wake(conn)
                return
            self._waiting.setdefault(ticket.match_id, set()).add(waiter)
            waiter.timer = self._loop.call_at(ticket.deadline, self._answer, waiter)
            self._loop.add_reader(sock, self._readable, waiter)
            return
        follower = _Follower(conn, sock, ticket.match_id, ticket.sent)
        if self._draining:
            self._loop.create_task(self._finish(follower))
            return
        if ticket.recheck is not None:  # its token expires: the render then ends it
            follower.timer = self._loop.call_at(ticket.recheck, self._due, follower)
        self._following.setdefault(ticket.match_id, set()).add(follower)
        self._loop.add_reader(sock, self._readable, follower)
        if latest > ticket.sent:
            self._due(follower)

    def _forget(self, held: _Waiter | _Follower) -> bool:
        """Take ``held`` out of the room; whether it was in it."""
        assert self._loop is not None
        if isinstance(held, _Waiter):
            match_id = held.ticket.match_id
            group: set[Any] | None = self._waiting.get(match_id)
            table: dict[str, Any] = self._waiting
            if held.timer is not None:
                held.timer.cancel()
        else:
            match_id = held.match_id
            group = self._following.get(match_id)
            table = self._following
            held.closed = True
            if held.timer is not None:
                held.timer.cancel()
        if group is None or held not in group:
            return False
        group.discard(held)
        if not group:
            del table[match_id]
        with contextlib.suppress(Exception):
            self._loop.remove_reader(held.sock)
        return True

    def _answer(self, waiter: _Waiter) -> None:
        """A parked long-poll answers now (its match moved, its deadline came, or the worker
        stops)."""
        if self._forget(waiter):
            self._wake(waiter.conn)

    def _readable(self, held: _Waiter | _Follower) -> None:
        """The client sent something, or closed the connection (it never speaks while it
        waits: a closed connection is dropped, anything else is left for the request that
        answers)."""
        assert self._loop is not None
        try:
            gone = held.sock.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return
        except OSError:
            gone = True
        if gone and isinstance(held, _Waiter):
            self._answer(held)  # answered into the void: the request ends as every request does
        elif gone:
            if self._forget(held):
                self._release(held.conn)
        else:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(held.sock)

    def _drain(self, waiters: bool = False) -> None:
        self._draining = True
        for group in list(self._waiting.values()) if waiters else ():
            for waiter in list(group):
                self._answer(waiter)
        for followers in list(self._following.values()):
            for follower in list(followers):
                if self._forget(follower):
                    assert self._loop is not None
                    self._loop.create_task(self._finish(follower))

    # --- notices ------------------------------------------------------------------------

    def notice(self, notice: Notice) -> None:
        """What a notice changes (on the room's thread)."""
        if notice.kind == "auth":  # a key or token revoked: every stream checks its caller
            for followers in self._following.values():
                for follower in followers:
                    self._due(follower)
            return
        if notice.kind == "lobby":  # the operator's tables changed
            for follower in self._following.get(lobby_topic(notice.match_id), ()):
                self._due(follower)
            return
        if notice.kind == "tournament":  # a tournament's version: its stream's topic
            match_id = tournament_topic(notice.match_id)
        elif notice.kind == "match":
            match_id = notice.match_id
        else:
            return
        version = notice.version
        if version > self._latest.get(match_id, -1):
            self._latest[match_id] = version
            self._latest.move_to_end(match_id)
            if len(self._latest) > LATEST_KEPT:
                self._latest.popitem(last=False)
        for waiter in list(self._waiting.get(match_id, ())):
            if version > waiter.ticket.wanted:
                self._answer(waiter)
        for follower in self._following.get(match_id, ()):
            if version > follower.sent:
                self._due(follower)

    def _due(self, follower: _Follower) -> None:
        assert self._loop is not None
        follower.dirty = True
        if follower.task is None and not follower.closed:
            follower.task = self._loop.create_task(self._render_for(follower))

    async def _render_for(self, follower: _Follower) -> None:
        loop = asyncio.get_running_loop()
        try:
            while follower.dirty and not follower.closed:
                follower.dirty = False
                try:
                    body, sent, ended = await loop.run_in_executor(
                        self._executor, self._render, follower.conn, follower.sent
                    )
                except Exception:
                    log.exception("could not render a stream's events")
                    body, sent, ended = b"", follower.sent, True
                if follower.closed:
                    return
                follower.sent = sent
                if body and not await self._send(follower, chunk(body)):
                    return
                if ended:
                    if self._forget(follower):
                        await self._finish(follower)
                    return
        finally:
            follower.task = None

    async def _send(self, follower: _Follower, data: bytes) -> bool:
        """Write to a stream; a client that does not read for long is dropped."""
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.sock_sendall(follower.sock, data), 10)
            return True
        except (OSError, TimeoutError):
            if self._forget(follower):
                self._release(follower.conn)
            return False

    async def _finish(self, follower: _Follower) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError, TimeoutError):
            await asyncio.wait_for(loop.sock_sendall(follower.sock, LAST_CHUNK), 5)
        self._release(follower.conn)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            for followers in list(self._following.values()):
                for follower in list(followers):
                    if follower.task is None:
                        await self._send(follower, chunk(b":\n\n"))

    # --- the subscription ---------------------------------------------------------------

    async def _listen(self) -> None:
        while True:
            try:
                async for notices in self._subscription():
                    if not self.healthy:  # (re)subscribed: catch up on what passed meanwhile
                        self.healthy = True
                        await self._read_versions()
                    for notice in notices:
                        self.notice(notice)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.healthy:
                    log.warning("change notices stopped (%s): reading versions meanwhile", exc)
            self.healthy = False
            await asyncio.sleep(self.retry_seconds)

    def _subscription(self) -> AsyncIterator[list[Notice]]:
        folder = socket_folder(self.url)
        if folder is not None:
            return _datagrams(folder)
        dsn = postgres_dsn(self.url)
        return _redis(self.url) if dsn is None else _postgres(dsn, self.check_seconds)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            if not self.healthy:
                with contextlib.suppress(Exception):
                    await self._read_versions()

    async def _read_versions(self) -> None:
        watched = list(self._waiting.keys() | self._following.keys())
        if not watched:
            return
        loop = asyncio.get_running_loop()
        try:
            found = await loop.run_in_executor(self._executor, self._versions, watched)
        except Exception as exc:
            log.warning("could not read the watched matches' versions: %s", exc)
            return
        for match_id, version in found.items():
            self.notice(Notice(match_id, version))


async def _redis(url: str) -> AsyncIterator[list[Notice]]:
    """Notices from the Redis channel; the first (empty) list once subscribed."""
    import redis.asyncio as aioredis

    client = aioredis.from_url(url, socket_connect_timeout=2, health_check_interval=5)
    try:
        pubsub = client.pubsub()
        await pubsub.subscribe(CHANNEL)
        yield []
        while True:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5.0)
            if message is not None:
                yield decode(message["data"])
    finally:
        with contextlib.suppress(Exception):
            await client.aclose()


async def _postgres(dsn: str, check_seconds: float) -> AsyncIterator[list[Notice]]:
    """Notices NOTIFYed on :data:`CHANNEL`, LISTENed to on a connection of this process's
    own (autocommit, as LISTEN needs: psycopg's ``notifies()``); the first (empty) list once
    listening. A terminated backend or a restarted database breaks the connection: the
    error ends the subscription, and the room listens again on a new one (and reads the
    versions it watches once). A connection that went quiet is checked with a query every
    ``check_seconds`` without a notice, so a silently lost one is found too."""
    import psycopg
    from psycopg import sql

    connection = await psycopg.AsyncConnection.connect(
        dsn, autocommit=True, application_name=PG_LISTENER, **PG_CONNECTION
    )
    try:
        await connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
        yield []
        while True:
            heard = False
            async for notify in connection.notifies(timeout=check_seconds):
                heard = True
                yield decode(notify.payload)
            if not heard:
                await asyncio.wait_for(connection.execute("SELECT 1"), check_seconds)
    finally:
        with contextlib.suppress(Exception):
            await connection.close()


async def _datagrams(folder: Path) -> AsyncIterator[list[Notice]]:
    """Notices sent to this process's datagram socket in ``folder``."""
    loop = asyncio.get_running_loop()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / str(os.getpid())
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        sock.bind(str(path))
        sock.setblocking(False)
        yield []
        while True:
            yield decode(await loop.sock_recv(sock, 65536))
    finally:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
