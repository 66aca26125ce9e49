"""What one settlement costs the database, as the worker runs it (the relay's and the settlement
task's path, ``worker.tasks._settle_one``): a backlog after a fault drains at the rate of
settlements, and on a loaded machine each round trip to PostgreSQL is a wait.

On SQLite the statements are counted (SQLAlchemy's cursor events: every statement goes
through SQLAlchemy there); on PostgreSQL (TEST_DATABASE_URL) the round trips themselves, by a
TCP proxy in front of the server counting each message the client sends after an answer (the
ledger's statements go straight to psycopg, pipelined, where SQLAlchemy's events miss them).
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, make_url
from sqlalchemy.engine import Engine

from service.clock import utcnow
from service.usecases import settlement
from tests.conftest import make_test_app, serving, throwaway_postgres
from tests.integration.workers import finished_matches, settled_once
from worker import tasks

#: Statements of one settlement on SQLite: BEGIN; the tournament looked up; the match locked
#: (and whether it is settled); its table with the operator's wallet; the players; the
#: ledger's accounts, its idempotency check, its transaction, entries and account heads; the
#: match marked settled (its version bumped), the change logged, the settlement and its
#: event. (Before: 18, the players read one by one again, the table and the wallet apart,
#: and a transaction looking for seamless credits of a transfer-mode operator; 13 before the
#: settlement was a logged change of the match.)
STATEMENTS = 14
#: Round trips of one settlement on PostgreSQL: BEGIN; the tournament; the match locked; its
#: table and wallet; the players; the accounts locked; the idempotency check; the ledger's
#: writes (one pipeline); the settlement's writes, the match's log entry among them (one
#: pipeline); COMMIT. (Before: 18.)
ROUND_TRIPS = 10


@contextmanager
def settling(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[str]]]:
    """The app on ``url`` and two finished matches of one operator: the first to settle
    uncounted (it connects the worker's pool and creates the operator's house fee account,
    once), the second to count. Nothing may be queued meanwhile."""
    monkeypatch.setattr(tasks, "send_task", lambda name, args: pytest.fail(f"queued {name}"))
    with serving(url) as app:
        warm, counted = finished_matches(app, 2)
        yield app, [warm, counted]


def settle_counted(match_id: str, count: Any) -> int:
    """Settle ``match_id`` as the worker does; what ``count()`` moved meanwhile."""
    before = count()
    assert tasks._settle_one(match_id) is not None
    return int(count()) - int(before)


def test_one_settlement_sends_few_statements_to_sqlite(
    sqlite_template: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite, whatever database the run uses (PostgreSQL's are round trips, below)."""
    fresh_database_url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    shutil.copy(sqlite_template, tmp_path / "fresh.sqlite")
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    statements: list[str] = []

    def seen(*args: Any) -> None:
        statements.append(args[2])

    try:
        with settling(fresh_database_url, monkeypatch) as (app, (warm, counted)):
            assert tasks._settle_one(warm) is not None
            event.listen(Engine, "before_cursor_execute", seen)
            try:
                took = settle_counted(counted, lambda: len(statements))
            finally:
                event.remove(Engine, "before_cursor_execute", seen)
            assert settled_once(app, [warm, counted])
    finally:
        tasks._sessions(fresh_database_url).kw["bind"].dispose()
    assert took <= STATEMENTS, statements[-took:]


class RoundTrips:
    """A TCP proxy to a database server counting round trips: each burst a client sends
    after the server last answered it."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.count = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        answered = True
        with client, server:
            while True:
                ready, _, _ = select.select([client, server], [], [])
                for sock in ready:
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    if sock is client:
                        if answered:
                            with self.lock:
                                self.count += 1
                        answered = False
                        server.sendall(data)
                    else:
                        answered = True
                        client.sendall(data)

    def close(self) -> None:
        self.listener.close()


@pytest.mark.postgres
@pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL")
def test_one_settlement_takes_few_round_trips_on_postgresql(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        parsed = make_url(url)
        proxy = RoundTrips(parsed.host or "127.0.0.1", parsed.port or 5432)
        proxied = parsed.set(host="127.0.0.1", port=proxy.port).render_as_string(
            hide_password=False
        )
        monkeypatch.setenv("DATABASE_URL", proxied)
        try:
            with settling(url, monkeypatch) as (app, (warm, counted)):
                assert tasks._settle_one(warm) is not None  # connected, accounts created
                took = settle_counted(counted, lambda: proxy.count)
                assert settled_once(app, [warm, counted])
        finally:
            tasks._sessions(proxied).kw["bind"].dispose()
            proxy.close()
    assert took <= ROUND_TRIPS, took


def test_a_transfer_mode_settlement_leaves_no_credits_to_look_for(
    fresh_database_url: str,
) -> None:
    """Only a seamless operator's settlement writes credits (tests/api/test_seamless.py);
    a replayed settlement may have left some, so the worker looks then."""
    app = make_test_app(fresh_database_url)
    try:
        [match_id] = finished_matches(app, 1)
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            for expected in (False, True):  # settled now; found settled
                with session.begin():
                    done, credits = settlement.conclude_with_credits(session, match_id, utcnow())
                assert done is not None and credits is expected
        finally:
            session.close()
        assert settled_once(app, [match_id])
    finally:
        app.extensions["gin"]["engine"].dispose()
