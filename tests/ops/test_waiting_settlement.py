"""A match's settlement reaches its waiting clients (docs/scale-out.md, "Waiting for
changes"): a stream open at the match's end stays open after ``end`` and gets a
``settlement`` event once the worker's settlement commits (each player the statement it may
read, a spectator only that it is ready, never a hidden card), a stream resumed by
``Last-Event-ID`` does not lose it, a long-poll waiting past the end wakes, and a per-hand
Rummy table's hand is followed to its settlement the same way. On every channel the
service has: datagram sockets, Redis, and PostgreSQL's LISTEN/NOTIFY when the database is
PostgreSQL."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from service.client import GinClient
from service.live import notices
from tests.api.play_clients import action_body, join, leaked_cards, open_table, player_client
from tests.api.test_every_game import _hidden, _leaks
from tests.conftest import ApiClient, make_test_app, new_operator
from tests.integration.workers import private_redis
from tests.ops.servers import HttpClient, gunicorn
from tests.ops.test_waiting import EventReader, _match, _views
from worker import tasks

CHANNELS = ["unix", "redis"] + (["postgresql"] if os.environ.get("TEST_DATABASE_URL") else [])


@pytest.fixture(scope="module", params=CHANNELS)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, database_url: str
) -> Iterator[tuple[Any, str, str]]:
    """(test app, base URL, NOTIFY_URL): a server whose waiting rooms hear the channel."""
    with ExitStack() as stack:
        if request.param == "unix":
            url = f"unix://{tmp_path_factory.mktemp('settled')}/live"
        elif request.param == "redis":
            url = stack.enter_context(private_redis())[0]
        else:
            url = database_url
        app = make_test_app(database_url)
        env = {"NOTIFY_URL": url, "RATELIMIT_ENABLED": "0"}
        base = stack.enter_context(gunicorn(database_url, workers=2, env=env))[1]
        yield app, base, url
    app.extensions["gin"]["engine"].dispose()


def _settle(database_url: str, notify_url: str, match_id: str, monkeypatch: Any) -> str:
    """Settle ``match_id`` as the worker's settlement task does (``worker.tasks``), its
    notices published on ``notify_url`` after the commit; the settlement's id."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    publisher = notices.make_publisher(notify_url)
    notices.use_publisher(publisher)
    try:
        done = tasks._settle_one(match_id)
    finally:
        notices.use_publisher(None)
        if isinstance(publisher, notices.PostgresPublisher):
            publisher.close()
    assert done is not None
    return done


def _ended(players: list[ApiClient], match_id: str) -> dict[str, Any]:
    """The second player resigns: the match is over; the resigner's view."""
    version = _views(players, match_id)[0]["version"]
    resigned = players[1].post(f"/v1/matches/{match_id}/actions", action_body("RESIGN", version))
    assert resigned.status_code == 200, resigned.get_json()
    view = resigned.get_json()
    assert view["status"] == "finished" and view["settlement"] is None
    return dict(view)


def _read_all(reader: EventReader) -> list[dict[str, Any]]:
    """Every event until the stream closes."""
    seen = []
    while (event := reader.next()) is not None:
        seen.append(event)
    reader.close()
    return seen


def test_streams_open_at_the_end_get_the_settlement(
    served: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, base, notify_url = served
    op, players, match_id = _match(app, base)
    _operator, key = new_operator(app)  # another operator's key: not this match's
    setup_key = op.token
    setup = ApiClient(app.test_client(), setup_key)
    spectator = ApiClient(HttpClient(base), player_client(setup, deposit=10).token)
    path = f"/v1/matches/{match_id}/events"
    readers = {
        0: EventReader(base, path, players[0].token),
        1: EventReader(base, path, players[1].token),
        "operator": EventReader(base, path, op.token),
        "spectator": EventReader(base, path, spectator.token),
    }
    for reader in readers.values():
        first = reader.next()
        assert first is not None and first["event"] == "update"
    finished = _ended(players, match_id)
    for who, reader in readers.items():
        update, end = reader.next(), reader.next()
        assert update is not None and update["event"] == "update", who
        assert int(update["id"]) == finished["version"]
        assert end is not None and end["event"] == "end", who
        assert end["data"] == {"version": finished["version"], "settlement": "pending"}

    # A long-poll past the end, parked before the settlement: woken by it.
    answers: list[Any] = []
    waiting = threading.Thread(
        target=lambda: answers.append(
            spectator.get(
                f"/v1/matches/{match_id}?wait_for_version={finished['version']}&timeout=25"
            )
        )
    )
    waiting.start()
    time.sleep(0.3)  # parked (were it not yet, it would only answer sooner)
    assert not answers
    started = time.monotonic()
    settlement_id = _settle(database_url, notify_url, match_id, monkeypatch)
    waiting.join(timeout=30)
    assert answers and answers[0].status_code == 200
    assert time.monotonic() - started < 5  # woken by the notice, not the timeout
    woken = answers[0].get_json()
    assert woken["version"] == finished["version"] + 1
    assert woken["settlement"]["status"] == "completed" and woken["settlement"]["settled_at"]

    statements = {
        who: client.get(f"/v1/matches/{match_id}/settlement")
        for who, client in ((0, players[0]), (1, players[1]), ("operator", op))
    }
    assert {r.status_code for r in statements.values()} == {200}
    assert spectator.get(f"/v1/matches/{match_id}/settlement").status_code == 404
    for who, reader in readers.items():
        events = _read_all(reader)  # the stream closes after the settlement
        assert [e["event"] for e in events] == ["update", "settlement"], who
        update, settled = events
        assert int(update["id"]) == int(settled["id"]) == finished["version"] + 1
        assert update["data"]["settlement"] == woken["settlement"]
        assert not leaked_cards(update["data"]["you"], update["data"])
        data = settled["data"]
        assert data["match_id"] == match_id and data["version"] == finished["version"] + 1
        assert data["status"] == "completed"
        assert data["settled_at"] == woken["settlement"]["settled_at"]
        if who == "spectator":
            assert data["settlement"] is None  # the statement is not the spectator's to read
        else:
            assert data["settlement"] == statements[who].get_json()
            assert data["settlement"]["id"] == settlement_id
    stranger = EventReader(base, path, key)  # another operator's key: refused, as the view is
    assert stranger.response.status == 404
    stranger.close()


def test_a_resumed_stream_does_not_lose_the_settlement(
    served: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, base, notify_url = served
    _op, players, match_id = _match(app, base)
    path = f"/v1/matches/{match_id}/events"
    finished = _ended(players, match_id)
    reader = EventReader(base, path, players[0].token, last_event_id=finished["version"] - 1)
    update, end = reader.next(), reader.next()
    assert update is not None and int(update["id"]) == finished["version"]
    assert end is not None and end["data"]["settlement"] == "pending"
    reader.close()  # dropped before the settlement
    _settle(database_url, notify_url, match_id, monkeypatch)

    # Resumed after the end it saw: the settled view, the end again, the settlement.
    resumed = _read_all(EventReader(base, path, players[0].token, finished["version"]))
    assert [e["event"] for e in resumed] == ["update", "end", "settlement"]
    assert [int(e["id"]) for e in resumed] == [finished["version"] + 1] * 3
    assert resumed[1]["data"]["settlement"] == "completed"
    assert resumed[2]["data"]["settlement"]["match_id"] == match_id
    # Resumed after the settlement itself: nothing new but the end and the settlement again
    # (a client that reconnects learns it is over), and the stream closes.
    again = _read_all(EventReader(base, path, players[0].token, finished["version"] + 1))
    assert [e["event"] for e in again] == ["end", "settlement"]
    assert again[1]["data"] == resumed[2]["data"]

    # The typed client follows past the end to the settlement, resumed or not.
    with GinClient(base, players[1].token) as client:
        followed = list(client.follow(match_id, after_version=finished["version"] - 1))
        stopped = list(client.follow(match_id, settlement=False))
    assert [(e.event, e.version) for e in followed] == [
        ("update", finished["version"] + 1),
        ("end", finished["version"] + 1),
        ("settlement", finished["version"] + 1),
    ]
    assert followed[2].view["settlement"]["id"] == resumed[2]["data"]["settlement"]["id"]
    assert [e.event for e in stopped] == ["update", "end"]


def test_the_typed_client_waits_past_the_end_for_the_settlement(
    served: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, base, notify_url = served
    _op, players, match_id = _match(app, base)
    events: list[Any] = []

    def follow() -> None:
        with GinClient(base, players[0].token) as client:
            events.extend(client.follow(match_id))

    thread = threading.Thread(target=follow)
    thread.start()
    finished = _ended(players, match_id)
    deadline = time.monotonic() + 10
    while not any(e.event == "end" for e in events) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [e.event for e in events][-1] == "end" and thread.is_alive()  # waits on
    _settle(database_url, notify_url, match_id, monkeypatch)
    thread.join(timeout=20)
    assert not thread.is_alive()
    assert [e.event for e in events][-2:] == ["update", "settlement"]
    assert events[-1].version == finished["version"] + 1


PER_HAND = {
    "game": "rummy",
    "seat_count": 4,
    "format": "rummy_per_hand",
    "stake_per_point": 1,
    "min_buyin": 100,
    "max_buyin": 300,
    "min_balance": 60,
}


def test_a_per_hand_tables_hand_is_followed_to_its_settlement(
    served: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, base, notify_url = served
    _operator, key = new_operator(app)
    setup = ApiClient(app.test_client(), key)
    table = open_table(setup, currency="EUR", **PER_HAND)
    made = [player_client(setup, deposit=1_000) for _ in range(3)]
    for client in made[:2]:
        assert join(client, table["id"], buyin=200).status_code == 201
    # Seated once the hand is dealt: it sits the hand out, and watches it as a spectator.
    assert join(made[2], table["id"], buyin=100).status_code == 201
    http = HttpClient(base, timeout=60)
    alice, bob, carol = (ApiClient(http, c.token) for c in made)
    hand = alice.get(f"/v1/tables/{table['id']}").get_json()["match_id"]
    path = f"/v1/matches/{hand}/events"
    readers = {
        "alice": EventReader(base, path, alice.token),
        "carol": EventReader(base, path, carol.token),  # seated, sitting out: a spectator
    }
    for reader in readers.values():
        assert reader.next()["event"] == "update"
    view = bob.get(f"/v1/matches/{hand}").get_json()
    resigned = bob.post(f"/v1/matches/{hand}/actions", action_body("RESIGN", view["version"]))
    assert resigned.status_code == 200, resigned.get_json()
    ended = resigned.get_json()
    for reader in readers.values():
        events = [reader.next(), reader.next()]
        assert [e["event"] for e in events if e] == ["update", "end"]
        assert events[1]["data"]["settlement"] == "pending"
    _settle(database_url, notify_url, hand, monkeypatch)
    for who, reader in readers.items():
        events = _read_all(reader)
        assert [e["event"] for e in events] == ["update", "settlement"], who
        data = events[1]["data"]
        assert data["version"] == ended["version"] + 1
        if who == "alice":  # dealt in: the hand's statement, by table seat
            assert data["settlement"] == alice.get(f"/v1/matches/{hand}/settlement").get_json()
        else:
            assert data["settlement"] is None
            assert carol.get(f"/v1/matches/{hand}/settlement").status_code == 404
        settled = events[0]["data"]
        assert settled["settlement"]["status"] == "completed"
        hidden = _hidden(app, hand, None if who == "carol" else settled["you"])
        assert not _leaks(settled, hidden, {}), who
