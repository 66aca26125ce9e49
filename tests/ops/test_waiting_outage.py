"""A broker outage leaves no waiter stale past its timeout: with its Redis stopped, the
waiting rooms read the versions of the matches they watch instead, and once Redis is back
they hear the notices again (docs/scale-out.md, "Waiting for changes")."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import make_test_app
from tests.integration.workers import private_redis
from tests.ops.servers import gunicorn
from tests.ops.test_waiting import EventReader, _match, _move, _views


@pytest.fixture(scope="module")
def served(database_url: str) -> Iterator[tuple[Any, str, Any, Any]]:
    """(test app, base URL, stop Redis, start Redis): a server whose notices go through a
    Redis of its own."""
    with private_redis() as (url, stop, start):
        app = make_test_app(database_url)
        env = {"NOTIFY_URL": url, "RATELIMIT_ENABLED": "0"}
        with gunicorn(database_url, workers=2, env=env) as (_process, base):
            yield app, base, stop, start
        app.extensions["gin"]["engine"].dispose()


def _waited(player: Any, match_id: str, version: int, then: Any) -> tuple[Any, float]:
    """A long-poll (timeout 25 s) for ``version``, ``then()`` done while it waits: its answer
    and how long after ``then()`` it came."""
    answer: list[Any] = []
    thread = threading.Thread(
        target=lambda: answer.append(
            player.get(f"/v1/matches/{match_id}?wait_for_version={version}&timeout=25")
        )
    )
    thread.start()
    time.sleep(0.3)  # parked (were it not yet, it would only answer sooner)
    moved = then()
    started = time.monotonic()
    thread.join(timeout=30)
    assert answer and answer[0].status_code == 200
    assert answer[0].get_json()["version"] == moved["version"]
    return answer[0], time.monotonic() - started


def test_waiters_see_changes_through_a_redis_outage_and_after_it(served: Any) -> None:
    app, base, stop, start = served
    _op, players, match_id = _match(app, base)
    version = _views(players, match_id)[0]["version"]
    _answer, took = _waited(players[0], match_id, version, lambda: _move(players, match_id))
    assert took < 1.0  # woken by the notice

    reader = EventReader(base, f"/v1/matches/{match_id}/events", players[1].token)
    first = reader.next()
    assert first is not None and first["event"] == "update"
    stop()
    version = _views(players, match_id)[0]["version"]
    _answer, took = _waited(players[0], match_id, version, lambda: _move(players, match_id))
    assert took < 5.0  # no notice: the room read the version (never the whole 25 s)
    event = reader.next()
    assert event is not None and int(event["id"]) == version + 1  # the stream too

    start()
    time.sleep(1.5)  # the rooms resubscribe (retried every half second)
    version = _views(players, match_id)[0]["version"]
    _answer, took = _waited(players[0], match_id, version, lambda: _move(players, match_id))
    assert took < 1.0
    reader.close()
