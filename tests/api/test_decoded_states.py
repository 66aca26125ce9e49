"""Decoded match states kept per process (service.db.match_states).

A process that holds a match's state at the row's version reads the row without it; a
change made anywhere else (another process, the worker's timeouts, a locked action) gives the
row a new version, so the next read fetches and decodes the new state. Two applications on
one database stand for two gunicorn workers: each has its own engine, so its own states.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from service.clock import utcnow
from service.config import ConfigError, Settings
from service.games.gin.bot import decide
from service.games.gin.match import Match
from service.usecases import play
from tests.api.play_clients import action_body, join, open_table, player_client
from tests.conftest import ApiClient, counter_values, new_operator, serving


@pytest.fixture(scope="module")
def other(database_url: str) -> Iterator[Any]:
    with serving(database_url) as application:
        yield application


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the states decoded from their JSON (one entry per decode)."""
    seen: list[int] = []
    real = Match.from_dict.__func__  # type: ignore[attr-defined]

    def from_dict(cls: type[Match], data: dict[str, Any]) -> Match:
        seen.append(1)
        return real(cls, data)  # type: ignore[no-any-return]

    monkeypatch.setattr(Match, "from_dict", classmethod(from_dict))
    return seen


def seated(api: ApiClient, **settings: Any) -> tuple[dict[int, ApiClient], str]:
    table = open_table(api, **settings)
    clients = [player_client(api), player_client(api)]
    for client in clients:
        assert join(client, table["id"]).status_code == 201
    by_seat = {}
    for client in clients:
        by_seat[client.get(f"/v1/matches/{table['match_id']}").get_json()["you"]] = client
    return by_seat, table["match_id"]


def patient(hand: dict[str, Any]) -> dict[str, Any]:
    """The practice bot's move, but never ending the hand."""
    legal = [a for a in hand["legal_actions"] if a["action"] not in ("KNOCK", "GIN", "BIG_GIN")]
    chosen = decide(hand)
    return chosen if chosen in legal else dict(legal[-1])


def step(clients: dict[int, ApiClient], match_id: str) -> dict[str, Any]:
    """The player to act reads the match and plays a move that does not end the hand."""
    path = f"/v1/matches/{match_id}"
    to_act = clients[0].get(path).get_json()["hand"]["to_act"]
    view = clients[to_act].get(path).get_json()
    acted = clients[to_act].post(
        f"{path}/actions", action_body(patient(view["hand"]), view["version"])
    )
    assert acted.status_code == 200, acted.get_json()
    return dict(acted.get_json())


def reads() -> dict[str, float]:
    return counter_values("gin_match_state_reads", "state", ("kept", "fetched"))


def test_a_process_decodes_a_state_once_and_plays_on(api: ApiClient, decodes: list[int]) -> None:
    clients, match_id = seated(api)
    first = step(clients, match_id)
    decodes.clear()
    before = reads()
    for _ in range(20):  # reads by both players and an action each turn
        after = step(clients, match_id)
    assert after["hand_number"] == first["hand_number"]
    assert after["version"] == first["version"] + 20
    assert decodes == []
    counted = reads()
    assert counted["kept"] - before["kept"] == 20 * 3
    assert counted["fetched"] == before["fetched"]


def test_match_states_kept_0_keeps_none(database_url: str, decodes: list[int]) -> None:
    with serving(database_url, MATCH_STATES_KEPT=0) as application:
        api = ApiClient(application.test_client(), new_operator(application)[1])
        clients, match_id = seated(api)
        step(clients, match_id)
        decodes.clear()
        before = reads()
        for _ in range(5):
            step(clients, match_id)
    assert len(decodes) == 5 * 3  # each turn: two reads, and the action reads the row
    assert reads()["fetched"] - before["fetched"] == 5 * 3


def test_changes_made_elsewhere_are_seen_at_once(
    api: ApiClient, other: Any, decodes: list[int]
) -> None:
    clients, match_id = seated(api)
    path = f"/v1/matches/{match_id}"
    elsewhere = {seat: ApiClient(other.test_client(), c.token) for seat, c in clients.items()}
    for turn in range(12):
        # Alternate the process that acts: each must read the other's last change.
        here, there = (clients, elsewhere) if turn % 2 else (elsewhere, clients)
        after = step(here, match_id)
        for seat, client in there.items():
            seen = client.get(path).get_json()
            mine = here[seat].get(path).get_json()
            assert seen == mine and seen["version"] == after["version"]
    # The worker's timeout (a locked change, in a process of its own) is seen too.
    version = clients[0].get(path).get_json()["version"]
    session = api.client.application.extensions["gin"]["sessionmaker"]()
    try:
        assert play.run_timeouts(session, utcnow() + timedelta(days=1)) >= 1
    finally:
        session.close()
    for client in (*clients.values(), *elsewhere.values()):
        seen = client.get(path).get_json()
        assert seen["version"] > version and seen["scores"]["timeouts"] != [0, 0]


def test_a_refused_action_leaves_the_kept_state_alone(api: ApiClient, other: Any) -> None:
    clients, match_id = seated(api)
    path = f"/v1/matches/{match_id}"
    view = step(clients, match_id)
    to_act = view["hand"]["to_act"]
    before = clients[to_act].get(path).get_json()
    body = action_body(patient(before["hand"]), before["version"])
    # Another process plays the same move first: this one's compare-and-set fails.
    assert (
        ApiClient(other.test_client(), clients[to_act].token)
        .post(f"{path}/actions", body)
        .status_code
        == 200
    )
    assert clients[to_act].post(f"{path}/actions", body).status_code == 409
    now = clients[to_act].get(path).get_json()
    assert now["version"] == before["version"] + 1
    assert now == ApiClient(other.test_client(), clients[to_act].token).get(path).get_json()


def test_match_states_kept_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATCH_STATES_KEPT", "12")
    assert Settings.from_env().match_states_kept == 12
    monkeypatch.setenv("MATCH_STATES_KEPT", "-1")
    with pytest.raises(ConfigError, match="MATCH_STATES_KEPT"):
        Settings.from_env()
