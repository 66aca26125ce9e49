"""Waiting for changes on a real gunicorn server: waiting clients hold no request thread
(more waiters than threads and moves still answer at once), long-polls wake on the change,
event streams show each viewer only their own view, resume after a dropped connection, and
end when the caller's key is revoked (docs/scale-out.md, "Waiting for changes")."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from service.client import GinClient, MatchEvent
from service.clock import utcnow
from service.games.gin.bot import decide
from service.live import notices
from service.usecases import settlement
from tests.api.play_clients import (
    action_body,
    join,
    leaked_cards,
    open_table,
    player_client,
)
from tests.conftest import ApiClient, in_unit, make_test_app, new_operator
from tests.integration.workers import wait_until
from tests.ops.servers import HttpClient, gunicorn

THREADS = 2 * 4  # tests.ops.servers.gunicorn: 2 workers of 4 threads


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, database_url: str
) -> Iterator[tuple[Any, str, Path]]:
    """(test app, the server's base URL, its log): one server for the module."""
    folder = tmp_path_factory.mktemp("waiting")
    log = folder / "gunicorn.log"
    env = {"NOTIFY_URL": f"unix://{folder}/live", "RATELIMIT_ENABLED": "0"}
    app = make_test_app(database_url)
    with gunicorn(database_url, workers=2, env=env, log=log) as (_process, base):
        yield app, base, log
    app.extensions["gin"]["engine"].dispose()


def _match(app: Any, base: str, **settings: Any) -> tuple[ApiClient, list[ApiClient], str]:
    """(operator, the two players, match id): a started match, driven over real HTTP."""
    _operator, key = new_operator(app)
    setup = ApiClient(app.test_client(), key)
    table = open_table(setup, stake=100, **settings)
    players = [player_client(setup, deposit=1000), player_client(setup, deposit=1000)]
    for player in players:
        assert join(player, table["id"]).status_code == 201
    http = HttpClient(base, timeout=60)
    return (
        ApiClient(http, key),
        [ApiClient(http, p.token) for p in players],
        table["match_id"],
    )


def _views(players: list[ApiClient], match_id: str) -> list[dict[str, Any]]:
    return [p.get(f"/v1/matches/{match_id}").get_json() for p in players]


def _move(players: list[ApiClient], match_id: str) -> dict[str, Any]:
    """The player to act makes the practice bot's move; the mover's view after it."""
    views = _views(players, match_id)
    mover = next(i for i, v in enumerate(views) if v["you"] == v["hand"]["to_act"])
    view = views[mover]
    response = players[mover].post(
        f"/v1/matches/{match_id}/actions", action_body(decide(view["hand"]), view["version"])
    )
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def test_more_waiters_than_threads_and_a_move_still_answers_at_once(served: Any) -> None:
    app, base, _log = served
    _op, players, match_id = _match(app, base)
    _op2, others, other_match = _match(app, base)
    version = _views(players, match_id)[0]["version"]
    waiters = 3 * THREADS
    answers: list[Any] = []

    def long_poll(player: ApiClient) -> None:
        answers.append(player.get(f"/v1/matches/{match_id}?wait_for_version={version}&timeout=25"))

    threads = [threading.Thread(target=long_poll, args=(players[i % 2],)) for i in range(waiters)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # let them all park (a move sooner only wakes them sooner)
    started = time.monotonic()
    _move(others, other_match)  # the request threads are free: another match plays on
    assert time.monotonic() - started < 2.0
    assert not answers  # the waiters still wait: nothing of theirs changed
    moved = _move(players, match_id)
    started = time.monotonic()
    for thread in threads:
        thread.join(timeout=20)
    assert time.monotonic() - started < 5.0
    assert len(answers) == waiters
    assert all(a.status_code == 200 for a in answers)
    assert {a.get_json()["version"] for a in answers} == {moved["version"]}
    assert {a.get_json()["you"] for a in answers} == {0, 1}  # each its caller's own view


def test_a_long_poll_still_times_out_and_is_authorised_first(served: Any) -> None:
    app, base, _log = served
    _op, players, match_id = _match(app, base)
    version = _views(players, match_id)[0]["version"]
    started = time.monotonic()
    answer = players[0].get(f"/v1/matches/{match_id}?wait_for_version={version}&timeout=1")
    assert answer.status_code == 200
    assert answer.get_json()["version"] == version
    assert 0.9 < time.monotonic() - started < 5
    stranger = ApiClient(HttpClient(base), "nope")
    refused = stranger.get(f"/v1/matches/{match_id}?wait_for_version={version}&timeout=5")
    assert refused.status_code == 401


def test_a_delayed_spectators_long_poll_waits_for_a_change_it_may_see(served: Any) -> None:
    """A spectator of a table with a delay of 2 moves that has seen what it may see waits
    (the two newest changes are not yet its to see: it is not answered with nothing new,
    over and over); the next move reveals the change before it, and wakes it with that."""
    app, base, _log = served
    operator, players, match_id = _match(app, base, spectator_delay={"moves": 2})
    for _ in range(3):
        _move(players, match_id)
    seen = operator.get(f"/v1/matches/{match_id}").get_json()["version"]
    assert seen == _views(players, match_id)[0]["version"] - 2
    answers: list[Any] = []
    waiting = threading.Thread(
        target=lambda: answers.append(
            operator.get(f"/v1/matches/{match_id}?wait_for_version={seen}&timeout=20")
        )
    )
    waiting.start()
    waiting.join(timeout=1.5)
    assert not answers, "answered with nothing new to see"
    started = time.monotonic()
    _move(players, match_id)
    waiting.join(timeout=10)
    assert answers and answers[0].status_code == 200
    assert time.monotonic() - started < 5
    assert answers[0].get_json()["version"] == seen + 1


class EventReader:
    """A ``text/event-stream`` response read event by event (raw HTTP, no buffering)."""

    def __init__(self, base: str, path: str, token: str, last_event_id: int | None = None):
        parts = urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=15)
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.conn.request("GET", path, headers=headers)
        self.response = self.conn.getresponse()

    def next(self) -> dict[str, Any] | None:
        """The next event (``event``, ``id``, ``data``), or None at the stream's end."""
        event: dict[str, Any] = {}
        while True:
            line = self.response.readline()
            if not line:
                return None
            text = line.decode().rstrip("\n")
            if not text:
                if "event" in event or "data" in event:
                    return event
                continue
            if text.startswith(":"):
                continue
            name, _, value = text.partition(": ")
            if name == "data":
                event["data"] = json.loads(value)
            elif name in ("event", "id"):
                event[name] = value
            # retry: ignored

    def close(self) -> None:
        self.conn.close()


def test_streams_show_each_viewer_its_own_view_to_the_end(served: Any) -> None:
    app, base, _log = served
    op, players, match_id = _match(app, base)
    path = f"/v1/matches/{match_id}/events"
    views = _views(players, match_id)
    readers: dict[int | None, EventReader] = {
        view["you"]: EventReader(base, path, p.token)
        for view, p in zip(views, players, strict=True)
    }
    readers[None] = EventReader(base, path, op.token)  # the operator: a spectator
    seen: dict[int | None, list[dict[str, Any]]] = {k: [] for k in readers}
    errors: list[BaseException] = []

    def follow(who: int | None) -> None:
        try:
            while (event := readers[who].next()) is not None:
                seen[who].append(event)
                if event["event"] == "end":
                    return
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=follow, args=(who,)) for who in readers]
    for thread in threads:
        thread.start()
    final = None
    for _ in range(2000):
        final = _move(players, match_id)
        if final["status"] != "playing":
            break
        # a resignation would be quicker, but playing shows every kind of change
    assert final is not None and final["status"] in ("finished", "void")
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    for who, events in seen.items():
        updates = [e for e in events if e["event"] == "update"]
        assert updates and events[-1]["event"] == "end"
        versions = [int(e["id"]) for e in updates]
        assert versions == sorted(set(versions))  # in order, never twice
        assert versions[-1] == final["version"]
        for event in updates:
            view = event["data"]
            assert view["you"] == who
            assert not leaked_cards(who, view), (who, view)
            if who is None:
                assert view["hand"] is None or not view["hand"].get("hand")
    for reader in readers.values():
        reader.close()


def test_a_stream_resumes_after_a_dropped_connection_without_gaps(served: Any) -> None:
    app, base, _log = served
    _op, players, match_id = _match(app, base)
    path = f"/v1/matches/{match_id}/events"
    first = EventReader(base, path, players[0].token)
    event = first.next()
    assert event is not None and event["event"] == "update"
    seen = int(event["id"])
    first.close()  # dropped
    _move(players, match_id)
    latest = _move(players, match_id)["version"]
    again = EventReader(base, path, players[0].token, last_event_id=seen)
    event = again.next()
    assert event is not None and int(event["id"]) == latest  # the state it missed, at once
    assert event["data"]["version"] == latest
    again.close()
    # Resumed at the latest version: nothing until the next change.
    current = EventReader(base, path, players[0].token, last_event_id=latest)
    moved = _move(players, match_id)["version"]
    event = current.next()
    assert event is not None and int(event["id"]) == moved
    current.close()


def test_a_revoked_key_ends_its_stream(served: Any) -> None:
    app, base, _log = served
    op, _players, match_id = _match(app, base)
    created = op.post("/v1/api-keys", {})
    assert created.status_code == 201, created.get_json()
    spare = created.get_json()
    reader = EventReader(base, f"/v1/matches/{match_id}/events", spare["secret"])
    assert reader.next()["event"] == "update"
    assert op.delete(f"/v1/api-keys/{spare['id']}").status_code == 200
    started = time.monotonic()
    event = reader.next()
    assert event is not None and event["event"] == "error"
    assert event["data"]["status"] == 401
    assert reader.next() is None  # and the stream closes
    assert time.monotonic() - started < 5
    reader.close()


def test_the_client_follows_a_match_to_its_end(served: Any) -> None:
    app, base, _log = served
    _op, players, match_id = _match(app, base)
    events: list[MatchEvent] = []

    def follow() -> None:
        with GinClient(base, players[0].token) as client:
            events.extend(client.follow(match_id, settlement=False))  # none settles it here

    thread = threading.Thread(target=follow)
    thread.start()
    moved = _move(players, match_id)["version"]
    wait_until(lambda: any(e.version == moved for e in events), 10, "the move's event")
    resigned = players[1].post(f"/v1/matches/{match_id}/actions", action_body("RESIGN", moved))
    assert resigned.status_code == 200, resigned.get_json()
    thread.join(timeout=20)
    assert not thread.is_alive()
    assert [e.event for e in events][-1] == "end"
    updates = [e for e in events if e.event == "update"]
    assert updates[-1].view["status"] in ("finished", "void")
    assert all(e.view["you"] == updates[0].view["you"] for e in updates)


def test_a_stream_ends_when_its_player_token_expires(served: Any) -> None:
    app, base, _log = served
    op, players, match_id = _match(app, base)
    player_id = players[0].get(f"/v1/matches/{match_id}").get_json()["seats"][0]["player_id"]
    minted = op.post(f"/v1/players/{player_id}/tokens", {"ttl_seconds": 2})
    assert minted.status_code == 201, minted.get_json()
    reader = EventReader(base, f"/v1/matches/{match_id}/events", minted.get_json()["token"])
    assert reader.next()["event"] == "update"
    started = time.monotonic()
    event = reader.next()  # nothing changes in the match meanwhile
    assert event is not None and event["event"] == "error"
    assert event["data"]["status"] == 401
    assert time.monotonic() - started < 5
    assert reader.next() is None
    reader.close()


def test_the_lobby_stream_follows_tables_opening_filling_and_closing(served: Any) -> None:
    app, base, _log = served
    _operator, key = new_operator(app)
    setup = ApiClient(app.test_client(), key)
    http = HttpClient(base, timeout=60)
    players = [ApiClient(http, player_client(setup, deposit=1000).token) for _ in range(2)]
    reader = EventReader(base, "/v1/tables/events", players[0].token)
    first = reader.next()
    assert first is not None and first["event"] == "lobby" and first["data"]["data"] == []

    table = open_table(ApiClient(http, key), stake=100)  # opens
    event = reader.next()
    assert event is not None and event["event"] == "lobby", event
    assert [t["id"] for t in event["data"]["data"]] == [table["id"]]
    assert event["data"]["data"][0]["seats"] == []
    assert join(players[0], table["id"]).status_code == 201  # is seated
    event = reader.next()
    assert event is not None and len(event["data"]["data"][0]["seats"]) == 1
    assert join(players[1], table["id"]).status_code == 201  # fills, and leaves the lobby
    event = reader.next()
    assert event is not None and event["data"]["data"] == []
    reader.close()


def test_a_tournament_stream_follows_registrations_rounds_and_the_end(served: Any) -> None:
    """docs/tournaments.md, "Following a tournament": a player's and the operator's streams
    see each registration, the start with round 1's matches, each result with the next round
    dealt, and the end with the prizes; a dropped stream resumes after its Last-Event-ID."""
    app, base, log = served
    _operator, key = new_operator(app)
    setup = ApiClient(app.test_client(), key)
    http = HttpClient(base, timeout=60)
    op = ApiClient(http, key)
    created = op.post(
        "/v1/tournaments",
        {
            "name": "Streamed 4",
            "format": "first_to_knock",
            "currency": "EUR",
            "buy_in": 100,
            "fee": 10,
            "entrants": 4,
            "payout_table": "2-5: 7000/3000",
        },
    )
    assert created.status_code == 201, created.get_json()
    tid = created.get_json()["id"]
    path = f"/v1/tournaments/{tid}/events"
    made = [player_client(setup, deposit=1000) for _ in range(4)]
    players = [ApiClient(http, m.token) for m in made]
    watcher = EventReader(base, path, players[0].token)  # a player's token
    operator_reader = EventReader(base, path, key)
    event = watcher.next()
    assert event is not None and event["event"] == "update" and event["id"] == "0"
    assert event["data"]["entries_taken"] == 0 and event["data"]["status"] == "open"
    for count, player in enumerate(players, 1):
        registered = player.post(f"/v1/tournaments/{tid}/entries", key=f"reg-{count}")
        assert registered.status_code == 201, registered.get_json()
        event = watcher.next()
        assert event is not None and event["event"] == "update", event
        assert event["data"]["entries_taken"] == count
        assert int(event["id"]) == event["data"]["version"] == registered.get_json()["version"]
    started = event["data"]
    assert started["status"] == "running"
    round_1 = started["rounds"][0]["matches"]
    assert len(round_1) == 2 and all(m["match_id"] for m in round_1)
    seen_at_start = int(event["id"])
    watcher.close()  # dropped: it resumes after what it saw

    # The results, recorded as the settlement task records them (its notices reach the
    # server's waiting rooms through the same sockets).
    clients = {m.player_id: p for m, p in zip(made, players, strict=True)}  # type: ignore[attr-defined]
    by_seat = {e["seat"]: e["player_id"] for e in started["entries"]}
    notices.use_publisher(notices.DatagramPublisher(log.parent / "live"))
    try:
        for r in (1, 2):
            now = op.get(f"/v1/tournaments/{tid}").get_json()
            for pairing in now["rounds"][r - 1]["matches"]:
                loser = clients[by_seat[pairing["first_seat"]]]
                answer = loser.post(
                    f"/v1/matches/{pairing['match_id']}/actions", {"action": "RESIGN"}
                )
                assert answer.status_code == 200, answer.get_json()
                _conclude(app, pairing["match_id"])
    finally:
        notices.use_publisher(None)
    final = op.get(f"/v1/tournaments/{tid}").get_json()
    assert final["status"] == "finished"

    seen: list[dict[str, Any]] = []
    while (event := operator_reader.next()) is not None:
        seen.append(event)
    operator_reader.close()
    updates = [e for e in seen if e["event"] == "update"]
    assert seen[-1]["event"] == "end" and int(seen[-1]["id"]) == final["version"]
    versions = [int(e["id"]) for e in updates]
    assert versions == sorted(set(versions)) and versions[-1] == final["version"]
    assert updates[-1]["data"]["status"] == "finished"
    prizes = [e["prize"]["amount"] for e in updates[-1]["data"]["entries"]]
    assert sorted(prizes) == [0, 0, 120, 280]  # 70% and 30% of the pool of 400
    # each result reached the stream: a winner recorded, round 2 dealt
    assert any(
        e["data"]["rounds"] and e["data"]["rounds"][0]["matches"][0]["winner_seat"] is not None
        for e in updates
    )
    assert any(len(e["data"]["rounds"]) == 2 for e in updates)

    resumed = EventReader(base, path, players[0].token, last_event_id=seen_at_start)
    event = resumed.next()  # the state it missed, at once, then the end
    own = players[0].get(f"/v1/tournaments/{tid}").get_json()  # the player's view: its seat
    assert own["you"] is not None and {**own, "you": None} == final
    assert event is not None and event["event"] == "update" and event["data"] == own
    event = resumed.next()
    assert event is not None and event["event"] == "end"
    assert resumed.next() is None
    resumed.close()
    caught_up = EventReader(base, path, key, last_event_id=final["version"])
    event = caught_up.next()
    assert event is not None and event["event"] == "end"  # nothing it has not seen
    caught_up.close()
    with GinClient(base, players[1].token) as client:  # the typed client, resumed
        followed = list(client.follow_tournament(tid, after_version=seen_at_start))
    assert [(e.event, e.version) for e in followed] == [
        ("update", final["version"]),
        ("end", final["version"]),
    ]
    assert followed[0].view["status"] == "finished"


def _conclude(app: Any, match_id: str) -> None:
    """What the settlement task does with a tournament's ended match."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        assert in_unit(session, settlement.conclude, match_id, utcnow()) is None
    finally:
        session.close()
