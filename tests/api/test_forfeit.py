"""A forfeit in the middle of a hand (docs/engine.md 9.3-9.4, 10.3-10.4), and the match view of a
person playing by hand: legal actions as ready-to-send bodies, the caller's deadwood, and
nothing left to do once the match is over."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from service.clock import utcnow
from service.db.match_models import MatchAction
from service.games.common import fair
from service.games.gin.melds import deadwood
from service.usecases import play, settlement
from tests.api.play_clients import FORMATS, action_body, seated_match
from tests.conftest import ApiClient, in_unit


def views(clients: list[ApiClient], match_id: str) -> dict[int, dict[str, Any]]:
    """Each seated player's view, by seat."""
    found = [c.get(f"/v1/matches/{match_id}").get_json() for c in clients]
    return {v["you"]: v for v in found}


def never_knocks(hand: dict[str, Any]) -> dict[str, Any]:
    """Passes, draws from the stock and discards, so that every hand dies (a new one is dealt
    in every format)."""
    legal = hand["legal_actions"]
    for action in legal:
        if action["action"] in ("PASS", "DRAW_STOCK", "DECLINE"):
            return dict(action)
    return dict(next(a for a in legal if a["action"] == "DISCARD"))


def play_into_hand_2(
    clients: list[ApiClient], match_id: str, *, seat: int = 1
) -> tuple[dict[int, ApiClient], dict[str, Any]]:
    """Play hand 1 to a dead hand and hand 2 until ``seat`` is to discard in it: the clients
    by seat and ``seat``'s view then. Every action is the listed legal action, sent as is."""
    by_seat = {
        v["you"]: c
        for v, c in zip(
            [c.get(f"/v1/matches/{match_id}").get_json() for c in clients], clients, strict=True
        )
    }
    for _ in range(400):
        seen = views(clients, match_id)
        mine = seen[seat]
        hand = mine["hand"]
        if mine["hand_number"] == 2 and hand["phase"] == "DISCARD" and hand["to_act"] == seat:
            return by_seat, mine
        mover = hand["to_act"]
        view = seen[mover]
        response = by_seat[mover].post(
            f"/v1/matches/{match_id}/actions",
            action_body(never_knocks(view["hand"]), view["version"]),
        )
        assert response.status_code == 200, response.get_json()
    raise AssertionError("hand 2's discard step never came")


def assert_over(view: dict[str, Any], hand_number: int) -> None:
    """A finished match's view: the last hand dealt, ended, nothing to do and no clock."""
    assert view["status"] == "finished" and view["hand_number"] == hand_number
    hand = view["hand"]
    assert hand["phase"] == "ENDED" and hand["to_act"] is None
    assert hand.get("legal_actions", []) == []
    assert view["deadline"] is None and "previous_hand" not in view


@pytest.mark.parametrize("settings", FORMATS, ids=[f["format"] for f in FORMATS])
def test_a_resignation_in_the_middle_of_hand_2_ends_and_reveals_that_hand(
    api: ApiClient, app: Any, settings: dict[str, Any]
) -> None:
    clients, table = seated_match(api, **settings)
    match_id = table["match_id"]
    by_seat, before = play_into_hand_2(clients, match_id)
    commitment = before["commitment"]
    resigned = by_seat[1].post(
        f"/v1/matches/{match_id}/actions",
        {"action": "RESIGN", "expected_version": before["version"]},
    )
    assert resigned.status_code == 200, resigned.get_json()
    answer = resigned.get_json()
    assert_over(answer, 2)
    assert answer["hand"]["outcome"]["kind"] == "forfeit"
    assert answer["hand"]["outcome"]["winner"] == 0
    assert answer["result"]["forfeiter"] == 1 and answer["result"]["winner"] == 0
    assert answer["commitment"] == commitment  # hand 2's, and the view says hand 2
    for view in [*views(clients, match_id).values(), api.get(f"/v1/matches/{match_id}").get_json()]:
        assert_over(view, 2)
        assert view["version"] == answer["version"]

    # Hand 2 has ended: its seed is revealed and its history runs up to the forfeit.
    response = clients[0].get(f"/v1/matches/{match_id}/hands/2")
    assert response.status_code == 200, response.get_json()
    record = response.get_json()
    f = record["fairness"]
    assert f["commitment"] == commitment and f["nonce"] == 2
    assert fair.verify(
        f["commitment"],
        f["server_seed"],
        f["client_seed_1"],
        f["client_seed_2"],
        f["nonce"],
        record["history"]["deck"],
    )
    actions = record["history"]["actions"]
    assert actions[-1]["action"] == "FORFEIT" and actions[-1]["seat"] == 1
    assert actions[-1]["reason"] == "resign" and "automatic" not in actions[-1]
    assert [a["action"] for a in actions[:-1]] == [e["action"] for e in before["hand"]["log"]]
    assert record["history"]["outcome"]["kind"] == "forfeit"
    assert api.get(f"/v1/matches/{match_id}/hands/3").status_code == 404

    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():
            last = session.scalars(
                select(MatchAction)
                .where(MatchAction.match_id == match_id)
                .order_by(MatchAction.version.desc())
                .limit(1)
            ).one()
            assert (last.action, last.seat, last.hand_number) == ("RESIGN", 1, 2)
        in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True, audit["discrepancies"]
    assert audit["hands_replayed"] == 2


def test_a_timeout_that_forfeits_is_logged_and_its_hand_revealed(api: ApiClient, app: Any) -> None:
    clock = {"turn_seconds": 30, "bank_seconds": 0, "on_timeout": "FORFEIT"}
    clients, table = seated_match(
        api,
        format="money_play",
        stake_per_point=5,
        min_buyin=2000,
        max_buyin=5000,
        target=50,
        clock=clock,
    )
    match_id = table["match_id"]
    _by_seat, before = play_into_hand_2(clients, match_id)
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        # This match's clock only: the database is shared with other tests' matches.
        assert play.time_out(session, match_id, utcnow() + timedelta(seconds=29)) is False
        assert play.time_out(session, match_id, utcnow() + timedelta(seconds=31)) is True
        with session.begin():
            last = session.scalars(
                select(MatchAction)
                .where(MatchAction.match_id == match_id)
                .order_by(MatchAction.version.desc())
                .limit(1)
            ).one()
            assert last.version == before["version"] + 1
            assert (last.actor, last.seat, last.hand_number) == ("system", 1, 2)
            assert last.action == "TIMEOUT forfeit"
        for view in views(clients, match_id).values():
            assert_over(view, 2)
            assert view["result"]["forfeit_reason"] == "timeout"
        # In the hand's history the forfeit is the server's automatic act, as auto-play is.
        record = clients[1].get(f"/v1/matches/{match_id}/hands/2").get_json()
        forfeit = record["history"]["actions"][-1]
        assert forfeit["action"] == "FORFEIT" and forfeit["seat"] == 1
        assert forfeit["reason"] == "timeout" and forfeit["automatic"] is True
        assert "at" in forfeit
        in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True and audit["hands_replayed"] == 2, audit["discrepancies"]


def test_a_forfeit_before_any_action_reveals_hand_1(api: ApiClient) -> None:
    clients, table = seated_match(api)
    match_id = table["match_id"]
    seen = views(clients, match_id)
    commitment = seen[0]["commitment"]
    answer = clients[0].post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"}).get_json()
    assert_over(answer, 1)
    record = clients[1].get(f"/v1/matches/{match_id}/hands/1").get_json()
    assert record["fairness"]["commitment"] == commitment
    assert [a["action"] for a in record["history"]["actions"]] == ["FORFEIT"]


def test_legal_actions_are_ready_to_send_and_the_view_shows_my_deadwood(api: ApiClient) -> None:
    clients, table = seated_match(api)
    match_id = table["match_id"]
    for _ in range(6):  # the opening offer, a draw and a discard step
        seen = views(clients, match_id)
        for seat, view in seen.items():
            hand = view["hand"]
            assert hand["deadwood"] == deadwood(hand["hand"])
            assert (hand["legal_actions"] != []) == (hand["to_act"] == seat)
        mover = seen[seen[0]["hand"]["to_act"]]
        legal = mover["hand"]["legal_actions"]
        for action in legal:
            assert set(action) <= {"action", "card"}
            assert ("card" in action) == (action["action"] in ("DISCARD", "KNOCK"))
        if mover["hand"]["phase"] == "DISCARD":
            assert {a["action"] for a in legal} >= {"DISCARD"}
            assert all(a["card"] in mover["hand"]["hand"] for a in legal)
        # The listed action is the body to send, with the version added.
        chosen = next((a for a in legal if a["action"] != "TAKE_UPCARD"), legal[0])
        client = next(
            c for c in clients if c.get(f"/v1/matches/{match_id}").get_json()["you"] == mover["you"]
        )
        response = client.post(
            f"/v1/matches/{match_id}/actions", {**chosen, "expected_version": mover["version"]}
        )
        assert response.status_code == 200, (chosen, response.get_json())
        assert response.get_json()["hand"]["log"][-1]["action"] == chosen["action"]
    spectator = api.get(f"/v1/matches/{match_id}").get_json()["hand"]
    assert "deadwood" not in spectator and "legal_actions" not in spectator
