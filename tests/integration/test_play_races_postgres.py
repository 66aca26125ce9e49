"""Races on PostgreSQL through real HTTP: conflicting actions sent at the same moment by
parallel clients, and a player's action racing the clock. Exactly one change applies.

Runs only with TEST_DATABASE_URL (CI sets it), on a database of its own that it drops after.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select

from service.db.match_models import MatchAction, MatchRow
from service.usecases import play
from tests.conftest import new_operator
from tests.integration.conftest import threaded_postgres_server
from tests.integration.workers import send

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"),
]

ROUNDS = 12


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Any, int]]:
    with threaded_postgres_server(20) as served:
        yield served


def _match(port: int, key: str, clock: dict[str, int] | None = None) -> tuple[str, list[str]]:
    """A started match; returns its id and the two players' tokens."""
    status, table, _ = send(
        port,
        "POST",
        "/v1/tables",
        key,
        {"format": "match_play", "currency": "EUR", "stake": 100, "clock": clock or {}},
    )
    assert status == 201, table
    tokens = []
    for _ in range(2):
        status, player, _ = send(
            port,
            "POST",
            "/v1/players",
            key,
            {"external_id": secrets.token_hex(6), "display_name": "P"},
        )
        assert status == 201
        status, _, _ = send(
            port,
            "POST",
            f"/v1/players/{player['id']}/deposits",
            key,
            {"amount": {"amount": 1000, "currency": "EUR"}},
            key=secrets.token_hex(8),
        )
        assert status == 201
        status, token, _ = send(port, "POST", f"/v1/players/{player['id']}/tokens", key, {})
        tokens.append(token["token"])
        status, _, _ = send(
            port,
            "POST",
            f"/v1/tables/{table['id']}/seats",
            token["token"],
            {},
            key=secrets.token_hex(8),
        )
        assert status == 201
    return table["match_id"], tokens


def _mover(port: int, match_id: str, tokens: list[str]) -> tuple[str, dict[str, Any]]:
    for token in tokens:
        status, view, _ = send(port, "GET", f"/v1/matches/{match_id}", token)
        assert status == 200
        if view["hand"]["to_act"] == view["you"]:
            return token, view
    raise AssertionError("nobody to act")


def _at_once(calls: list[Any]) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _log_size(app: Any, match_id: str) -> tuple[int, int]:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        version = session.get(MatchRow, match_id).version
        count = session.scalar(
            select(func.count()).select_from(MatchAction).where(MatchAction.match_id == match_id)
        )
        return version, int(count or 0)
    finally:
        session.close()


def _last_action(app: Any, match_id: str) -> MatchAction:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        return session.scalars(
            select(MatchAction)
            .where(MatchAction.match_id == match_id)
            .order_by(MatchAction.version.desc())
            .limit(1)
        ).one()
    finally:
        session.close()


def test_conflicting_actions_at_the_same_moment_apply_once(server: tuple[Any, int]) -> None:
    app, port = server
    _operator, key = new_operator(app)
    for _ in range(ROUNDS):
        match_id, tokens = _match(port, key)
        token, view = _mover(port, match_id, tokens)
        version = view["version"]
        path = f"/v1/matches/{match_id}/actions"
        bodies = [
            {"action": "PASS", "expected_version": version},
            {"action": "TAKE_UPCARD", "expected_version": version},
            {"action": "PASS", "expected_version": version},
            {"action": "TAKE_UPCARD", "expected_version": version},
        ]
        results = _at_once(
            [lambda b=b, t=token, p=path: send(port, "POST", p, t, b) for b in bodies]
        )
        statuses = sorted(status for status, _, _ in results)
        assert statuses == [200, 409, 409, 409], results
        assert all(r[1]["code"] == "stale_version" for r in results if r[0] == 409)
        assert _log_size(app, match_id) == (version + 1, version + 1)


def test_an_action_racing_the_clock_applies_once(server: tuple[Any, int]) -> None:
    """The player acts just as the worker finds the deadline passed: one of them wins, the
    other is stale (409) or finds nothing due."""
    app, port = server
    _operator, key = new_operator(app)
    for _ in range(ROUNDS):
        match_id, tokens = _match(port, key, {"turn_seconds": 30, "bank_seconds": 0})
        token, view = _mover(port, match_id, tokens)
        version = view["version"]
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            # The worker's clock reads exactly this turn's deadline: if the player's action
            # lands first, the next deadline is later and nothing is due.
            with session.begin():
                deadline = session.get(MatchRow, match_id).deadline_at
            body = {"action": "PASS", "expected_version": version}
            path = f"/v1/matches/{match_id}/actions"
            results = _at_once(
                [
                    lambda t=token, p=path, b=body: send(port, "POST", p, t, b),
                    lambda s=session, d=deadline: play.run_timeouts(s, d),
                ]
            )
        finally:
            session.close()
        (status, answer, _), _ = results
        # Earlier matches of this module may be due as well, so judge by this match's log.
        assert _log_size(app, match_id) == (version + 1, version + 1)
        last = _last_action(app, match_id)
        if status == 200:
            assert last.actor != "system" and last.action == "PASS"
        else:
            assert status == 409 and answer["code"] == "stale_version", answer
            assert last.actor == "system" and last.action.startswith("TIMEOUT")
