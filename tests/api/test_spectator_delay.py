"""Spectator delay (docs/games.md, Spectator delay): a public table may show its match to
spectators (the operator, a player not seated there) some moves or seconds late, while its
players see every change at once and finished hands' histories stay as they are."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from service.client.api import action_body as client_body
from service.clock import utcnow
from service.games.bots import action_text, decide_multi
from service.usecases import play
from service.usecases.auth import Principal
from tests.api.play_clients import action_body, join, open_table, player_client, seated_match
from tests.api.test_continuous_rummy import TABLE, _table
from tests.api.test_forfeit import never_knocks
from tests.conftest import ApiClient, assert_problem

#: What a spectator and a player alike see of a hand: everything in its view but a seat's
#: own cards, its legal actions and its own entries of the log.
PUBLIC_HAND = (
    "phase",
    "dealer",
    "to_act",
    "upcard",
    "stock_count",
    "discard_pile",
    "card_counts",
    "taken_from_discard",
)


def public(view: dict[str, Any]) -> dict[str, Any]:
    """The public part of a two-player Gin view, the same for a player as for a spectator."""
    hand = view["hand"] or {}
    return {
        "version": view["version"],
        "status": view["status"],
        "hand_number": view["hand_number"],
        "commitment": view["commitment"],
        "deadline": view["deadline"],
        "scores": view["scores"],
        "hand": {key: hand.get(key) for key in PUBLIC_HAND},
        "log": len(hand.get("log", [])),
    }


class Table:
    """A two-player table (``delay``: its spectator delay) with its seated players by seat
    and two spectators."""

    def __init__(self, api: ApiClient, delay: dict[str, int] | None) -> None:
        clients, table = seated_match(
            api, format="money_play", stake_per_point=5, min_buyin=2000, max_buyin=5000,
            target=50, spectator_delay=delay,
        )  # fmt: skip
        self.table, self.match_id, self.operator = table, table["match_id"], api
        self.path = f"/v1/matches/{self.match_id}"
        views = [c.get(self.path).get_json() for c in clients]
        self.by_seat = {v["you"]: c for v, c in zip(views, clients, strict=True)}
        self.watcher = player_client(api)  # a player of the operator, seated elsewhere or not
        #: Each version's public part, as the seated players saw it when it was new.
        self.seen: dict[int, dict[str, Any]] = {views[0]["version"]: public(views[0])}

    def play(self) -> dict[str, Any]:
        """One action by the player to act (one that never ends a hand by a knock); every
        seat's view afterwards is the newest version."""
        view = self.by_seat[0].get(self.path).get_json()
        mover = view["hand"]["to_act"]
        mine = self.by_seat[mover].get(self.path).get_json()
        response = self.by_seat[mover].post(
            f"{self.path}/actions", action_body(never_knocks(mine["hand"]), mine["version"])
        )
        assert response.status_code == 200, response.get_json()
        after = response.get_json()
        for client in self.by_seat.values():
            assert client.get(self.path).get_json()["version"] == after["version"]
        self.seen[after["version"]] = public(after)
        return dict(after)

    def spectators(self) -> list[dict[str, Any]]:
        return [c.get(self.path).get_json() for c in (self.operator, self.watcher)]


def test_a_moves_delay_shows_spectators_the_version_that_many_moves_back(api: ApiClient) -> None:
    t = Table(api, {"moves": 3})
    assert t.table["spectator_delay"] == {"moves": 3}
    start = min(t.seen)
    for _ in range(8):
        latest = t.play()
        shown = max(latest["version"] - 3, start)
        for spectator in t.spectators():
            assert spectator["you"] is None
            assert public(spectator) == t.seen[shown]
            assert spectator["version"] < latest["version"]
            assert "legal_actions" not in spectator["hand"]
    # The newest move reaches the spectators once three more have been played, not before.
    newest = t.seen[latest["version"]]
    for _ in range(2):
        t.play()
        assert all(public(s) != newest for s in t.spectators())
    t.play()
    assert all(public(s) == newest for s in t.spectators())


def test_the_spectators_version_is_the_delayed_one_when_waiting_too(
    api: ApiClient, app: Any
) -> None:
    t = Table(api, {"moves": 2})
    for _ in range(4):
        latest = t.play()["version"]
    operator = Principal(api.operator_id)  # type: ignore[attr-defined]
    engine = app.extensions["gin"]["engine"]
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        assert play.current_version(session, operator, t.match_id) == latest - 2
    finally:
        session.close()
    assert play.peek_version(engine, t.match_id, operator) == latest - 2
    assert play.peek_version(engine, t.match_id) == latest  # no caller: the row's own
    # Waiting for a version past the one shown is not cut short by the newer moves...
    began = time.monotonic()
    waited = api.get(f"{t.path}?wait_for_version={latest - 2}&timeout=1").get_json()
    assert time.monotonic() - began >= 0.9
    assert waited["version"] == latest - 2
    # ...and a player of the match waiting for the same version is answered at once.
    began = time.monotonic()
    mine = t.by_seat[0].get(f"{t.path}?wait_for_version={latest - 2}&timeout=5").get_json()
    assert time.monotonic() - began < 2 and mine["version"] == latest


class Clock:
    """The clock the match requests and the use cases read, moved on by the test."""

    def __init__(self) -> None:
        self.now = utcnow() + timedelta(seconds=1)

    def __call__(self) -> datetime:
        return self.now


def test_a_seconds_delay_shows_the_last_version_committed_that_long_ago(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr("service.api.matches.utcnow", clock)
    monkeypatch.setattr("service.usecases.play.utcnow", clock)
    t = Table(api, {"seconds": 30})
    start = min(t.seen)
    played = []
    for _ in range(6):  # one move every 10 seconds
        played.append(t.play()["version"])
        clock.now += timedelta(seconds=10)
        # Nothing was committed 30 seconds ago before the fourth move: the first deal.
        old_enough = [v for i, v in enumerate(played) if 10 * (len(played) - i) >= 30]
        shown = old_enough[-1] if old_enough else start
        assert [public(s) for s in t.spectators()] == [t.seen[shown]] * 2
    # Time alone brings the spectators up to date, one version per 10 seconds.
    for version in played[-2:]:
        clock.now += timedelta(seconds=10)
        assert [s["version"] for s in t.spectators()] == [version] * 2
    clock.now -= timedelta(milliseconds=1)
    assert [s["version"] for s in t.spectators()] == [played[-2]] * 2


def test_a_hand_boundary_and_the_end_of_a_moves_delayed_match(api: ApiClient) -> None:
    """At a new hand the spectators see the old one until enough moves of the new one have
    been played; its history is there for everyone as soon as it ends; a match that has
    ended is shown as it is."""
    t = Table(api, {"moves": 4})
    while (latest := t.play())["hand_number"] == 1:
        pass
    history = t.by_seat[0].get(f"{t.path}/hands/1")
    assert history.status_code == 200
    for spectator in t.spectators():
        assert spectator["hand_number"] == 1 and spectator["hand"]["phase"] != "ENDED"
    for client in (t.operator, t.watcher):  # the finished hand's history, unchanged
        assert client.get(f"{t.path}/hands/1").get_json() == history.get_json()
    for _ in range(3):
        t.play()
    assert all(s["hand_number"] == 1 for s in t.spectators())
    t.play()  # the fourth move of hand 2 shows the move that ended hand 1, and hand 2's deal
    assert all(public(s) == t.seen[latest["version"]] for s in t.spectators())
    assert all(s["hand_number"] == 2 and s["previous_hand"] for s in t.spectators())
    resigned = t.by_seat[0].post(f"{t.path}/actions", {"action": "RESIGN"}).get_json()
    assert resigned["status"] == "finished"
    for spectator in t.spectators():
        assert (spectator["status"], spectator["version"]) == ("finished", resigned["version"])


def test_the_delay_is_shown_in_the_table_and_the_lobby_and_is_off_by_default(
    api: ApiClient,
) -> None:
    delayed = open_table(api, spectator_delay={"seconds": 45})
    live = open_table(api)
    assert live["spectator_delay"] is None
    lobby = {t["id"]: t for t in api.get("/v1/tables").get_json()["data"]}
    assert lobby[delayed["id"]]["spectator_delay"] == {"seconds": 45}
    assert lobby[live["id"]]["spectator_delay"] is None
    watcher = player_client(api)
    shown = watcher.get(f"/v1/tables/{delayed['id']}").get_json()
    assert shown["spectator_delay"] == {"seconds": 45}


@pytest.mark.parametrize(
    ("extra", "fields"),
    [
        ({"spectator_delay": {"moves": -1}}, {"spectator_delay.moves"}),
        ({"spectator_delay": {"seconds": 0}}, {"spectator_delay.seconds"}),
        ({"spectator_delay": {"moves": 101}}, {"spectator_delay.moves"}),
        ({"spectator_delay": {"seconds": 1.5}}, {"spectator_delay.seconds"}),
        ({"spectator_delay": {"moves": 3, "seconds": 10}}, {"spectator_delay"}),
        ({"spectator_delay": {}}, {"spectator_delay"}),
        ({"spectator_delay": {"minutes": 2}}, {"spectator_delay.minutes"}),
        ({"spectator_delay": {"moves": 3}, "private": True}, {"spectator_delay"}),
        ({"spectator_delay": {"moves": 3}, "stake": 0}, {"stake"}),
    ],
)
def test_a_bad_delay_is_refused_naming_its_field(
    api: ApiClient, extra: dict[str, Any], fields: set[str]
) -> None:
    body = {"format": "match_play", "currency": "EUR", "stake": 500, **extra}
    problem = assert_problem(api.post("/v1/tables", body), 422, "validation_failed")
    assert {e["field"] for e in problem["errors"]} == fields, problem["errors"]


def test_a_private_table_without_a_delay_opens(api: ApiClient) -> None:
    table = open_table(api, private=True, spectator_delay=None)
    assert (table["private"], table["spectator_delay"]) == (True, None)


def test_at_a_per_hand_table_a_player_sitting_a_hand_out_is_no_spectator(api: ApiClient) -> None:
    """Seated at the table though not dealt into this hand: it sees the hand live, as its
    players do; the operator and a player with no seat there see it one move late."""
    table = open_table(api, currency="EUR", **TABLE, spectator_delay={"moves": 1})
    clients = [player_client(api, deposit=1_000) for _ in range(3)]
    for client in clients:
        assert join(client, table["id"], buyin=200).status_code == 201
    path = f"/v1/matches/{_table(api, table['id'])['match_id']}"
    views = [c.get(path).get_json() for c in clients]
    out = next(i for i, v in enumerate(views) if v["you"] is None)  # the third, sitting out
    actor = next(v for v in views if v["you"] == v["play"]["to_act"][0])
    body = client_body(action_text(decide_multi(actor["play"]))) | {
        "expected_version": actor["version"]
    }
    mover = clients[views.index(actor)]
    after = mover.post(f"{path}/actions", body).get_json()
    assert after["version"] == actor["version"] + 1
    assert clients[out].get(path).get_json()["version"] == after["version"]
    for spectator in (api, player_client(api, deposit=0)):
        assert spectator.get(path).get_json()["version"] == actor["version"]


def test_only_a_delayed_match_keeps_states_in_its_log(api: ApiClient, app: Any) -> None:
    live, delayed = Table(api, None), Table(api, {"moves": 1})
    live.play()
    delayed.play()
    count = text(
        "SELECT count(*), count(state), count(commitment) FROM match_actions WHERE match_id = :m"
    )
    with app.extensions["gin"]["engine"].connect() as connection:
        assert connection.execute(count, {"m": live.match_id}).one() == (2, 0, 0)  # SQL NULLs
        assert connection.execute(count, {"m": delayed.match_id}).one() == (2, 2, 2)
