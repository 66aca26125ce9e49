"""Three-player and partnership Gin and Rummy to a target or a number of deals, end to end
over HTTP: an operator opens the table, every seat is taken with its stake held, bot
clients play the whole match through the API, no response ever shows a card its reader may
not know, every ended hand's history verifies offline, the settlement moves exactly the
statement, and the audit replays the match clean."""

from __future__ import annotations

import random
from typing import Any

import pytest

from service import games
from service.client.api import action_body
from service.clock import utcnow
from service.db.match_models import MatchRow
from service.games.bots import action_text, decide_multi, random_multi
from service.games.common import fair
from service.games.common.cards import mask_to_cards
from service.games.multi_gin.partnership import PartnershipMatch
from service.games.multi_gin.three_player import ThreePlayerMatch
from service.games.rummy.match import RummyMatch
from service.usecases import settlement
from tests.api.play_clients import CODE, _strings, join, open_table, player_client, wallet
from tests.conftest import ApiClient, in_unit

BUYINS = {"stake_per_point": 2, "min_buyin": 300, "max_buyin": 600}
SHORT = {"ruleset": {"target": 30, "partnership_target": 30}, "target": 30}
GAMES: list[dict[str, Any]] = [
    {"game": "gin_three", "format": "match_play", "stake": 500, **SHORT},
    {"game": "gin_three", "format": "classic", **BUYINS, **SHORT},
    {"game": "gin_partnership", "format": "match_play", "stake": 500, **SHORT},
    {"game": "gin_partnership", "format": "classic", **BUYINS, **SHORT},
    {"game": "rummy", "seat_count": 4, "format": "rummy_target", **BUYINS, "target": 40},
    {"game": "rummy", "seat_count": 6, "format": "rummy_deals", **BUYINS, "target": 2},
    {
        "game": "rummy",
        "seat_count": 3,
        "format": "rummy_deals",
        **BUYINS,
        "target": 1,
        "rummy": {"scoring": "PENALTY", "restock": "SHUFFLE"},
    },
]
SEATS = {"gin_three": 3, "gin_partnership": 4}


def _hidden(app: Any, match_id: str, seat: int | None) -> dict[int, set[str]]:
    """Where ``seat`` may not look at the match's current version: every other seat's hand
    and the stock of every hand being played (the cards in them that were public once, as
    a card taken from the discard pile, are taken out by the caller)."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        row = session.get(MatchRow, match_id)
        assert row is not None and row.state is not None
        match = games.from_state(row.state)
    finally:
        session.close()
    tables: list[tuple[Any, Any]]
    if isinstance(match, RummyMatch):
        tables = [] if match.hand is None or match.hand.ended else [(match.slot, match.hand)]
    else:
        assert isinstance(match, ThreePlayerMatch | PartnershipMatch)
        tables = [(t.slot, t.hand) for t in match.tables if not t.hand.ended]
    hidden: dict[int, set[str]] = {}
    for slot, hand in tables:
        assert slot is not None
        cards = {str(c) for c in hand.stock}
        for i, mask in enumerate(hand.hands):
            if slot.seats[i] != seat:
                cards |= {str(c) for c in mask_to_cards(mask)}
        hidden[slot.number] = cards
    return hidden


def _codes(body: dict[str, Any]) -> dict[int, set[str]]:
    """The card codes shown of each hand being played (every hand has a deck of its own)."""
    play = body.get("play") or {}
    hands = list(play.get("tables") or []) or [play.get("hand") or {}]
    return {
        h["number"]: {code for text in _strings(h) for code in CODE.findall(text)}
        for h in hands
        if "number" in h
    }


def _leaks(
    body: dict[str, Any], hidden: dict[int, set[str]], public: dict[int, set[str]]
) -> set[str]:
    """The cards in a player's answer that neither its own hand nor any spectator's view
    ever showed: another player's or the stock's."""
    return {
        code
        for number, codes in _codes(body).items()
        for code in codes & hidden.get(number, set()) - public.get(number, set())
    }


@pytest.mark.parametrize("settings", GAMES, ids=[f"{g['game']}-{g['format']}" for g in GAMES])
def test_every_game_plays_settles_and_audits_over_http(
    api: ApiClient, app: Any, settings: dict[str, Any]
) -> None:
    seats = SEATS.get(settings["game"]) or settings["seat_count"]
    table = open_table(api, **settings)
    assert table["game"] == settings["game"] and table["seat_count"] == seats
    clients = [player_client(api) for _ in range(seats)]
    before = [wallet(api, c.player_id)["available"]["amount"] for c in clients]  # type: ignore[attr-defined]
    for i, client in enumerate(clients):
        response = join(client, table["id"], **({"buyin": 450} if "min_buyin" in settings else {}))
        assert response.status_code == 201, response.get_json()
        assert response.get_json()["status"] == ("playing" if i == seats - 1 else "open")
    match_id = table["match_id"]
    rng = random.Random(7)
    spectator = player_client(api, deposit=0)
    public: dict[int, set[str]] = {}  # every card a spectator has been shown, per hand
    for _step in range(20_000):
        watched = spectator.get(f"/v1/matches/{match_id}").get_json()
        assert watched["you"] is None and "legal_actions" not in watched["play"]
        for number, codes in _codes(watched).items():
            public.setdefault(number, set()).update(codes)
        views = [c.get(f"/v1/matches/{match_id}").get_json() for c in clients]
        if views[0]["status"] != "playing":
            break
        for view in views:
            assert not _leaks(view, _hidden(app, match_id, view["you"]), public), view["you"]
        actor = rng.choice(list(views[0]["play"]["to_act"]))
        view = views[actor]
        choice = (
            random_multi(view["play"], rng) if rng.random() < 0.2 else decide_multi(view["play"])
        )
        body = action_body(action_text(choice)) | {"expected_version": view["version"]}
        response = clients[actor].post(f"/v1/matches/{match_id}/actions", body)
        assert response.status_code == 200, (body, response.get_json())
        assert not _leaks(response.get_json(), _hidden(app, match_id, actor), public)
    else:
        raise AssertionError("the match did not end")
    final = clients[0].get(f"/v1/matches/{match_id}").get_json()
    assert final["status"] == "finished" and final["game"] == settings["game"]

    # Every ended hand verifies offline from its revealed seed (10.3, 11.6.4).
    numbers = sorted({h["number"] for h in final["play"]["hands"]})
    assert numbers
    for number in numbers:
        hand = clients[0].get(f"/v1/matches/{match_id}/hands/{number}").get_json()
        fairness = hand["fairness"]
        assert fair.commitment(fairness["server_seed"]) == fairness["commitment"]
        assert len(fairness["client_seeds"]) == len(fairness["seats"]) >= 2

    session = app.extensions["gin"]["sessionmaker"]()
    try:
        done = in_unit(session, settlement.settle_match, match_id, utcnow())
        again = in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    assert again.id == done.id
    statement = done.statement
    escrow = [450 if "min_buyin" in settings else 500] * seats
    assert sum(statement["payouts"]) + done.fee == sum(escrow)
    after = [wallet(api, c.player_id) for c in clients]  # type: ignore[attr-defined]
    for i in range(seats):
        assert after[i]["held"]["amount"] == 0
        assert after[i]["available"]["amount"] == before[i] - escrow[i] + statement["payouts"][i]
    shown = api.get(f"/v1/matches/{match_id}/settlement").get_json()
    assert [p["amount"] for p in shown["payouts"]] == statement["payouts"]
    assert shown["players"] == [c.player_id for c in clients]  # type: ignore[attr-defined]
    assert shown["statement"]["lines"], "every pairwise or per-loser line is listed"
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True, audit["discrepancies"]


def test_a_resignation_ends_a_three_player_match_for_everybody(api: ApiClient, app: Any) -> None:
    table = open_table(api, **GAMES[0])
    clients = [player_client(api) for _ in range(3)]
    for client in clients:
        assert join(client, table["id"]).status_code == 201
    match_id = table["match_id"]
    version = clients[1].get(f"/v1/matches/{match_id}").get_json()["version"]
    response = clients[1].post(
        f"/v1/matches/{match_id}/actions", {"action": "RESIGN", "expected_version": version}
    )
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["status"] == "finished"
    assert response.get_json()["result"]["forfeiter"] == 1
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        done = in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    assert done.statement["payouts"][1] == 0 and sum(done.statement["payouts"]) + done.fee == 1500
    assert api.get(f"/v1/audit/settlements/{match_id}").get_json()["ok"] is True


def test_tables_refuse_what_a_game_does_not_have(api: ApiClient) -> None:
    for body, field in (
        ({"game": "gin_three", "format": "money_play", **BUYINS}, "format"),
        (
            {"game": "gin_partnership", "seat_count": 3, "format": "match_play", "stake": 5},
            "seat_count",
        ),
        ({"game": "rummy", "format": "rummy_target", **BUYINS}, "seat_count"),
        (
            {"game": "rummy", "seat_count": 4, "format": "rummy_deals", **BUYINS, "min_balance": 9},
            "min_balance",
        ),
        (
            {
                "game": "rummy",
                "seat_count": 4,
                "format": "rummy_target",
                **BUYINS,
                "rummy": {"match": "PER_HAND"},
            },
            "rummy",
        ),
        (
            {
                "game": "rummy",
                "seat_count": 4,
                "format": "rummy_target",
                **BUYINS,
                "rummy": {"ace_mode": "SIDEWAYS"},
            },
            "rummy",
        ),
    ):
        response = api.post("/v1/tables", {"currency": "EUR", **body})
        assert response.status_code == 422, (body, response.get_json())
        assert field in str(response.get_json()), (body, response.get_json())


@pytest.mark.parametrize("settings", [GAMES[2], GAMES[4]], ids=["gin_partnership", "rummy"])
def test_the_clock_acts_for_every_game_and_the_audit_replays_it(
    api: ApiClient, app: Any, settings: dict[str, Any]
) -> None:
    from datetime import timedelta

    from service.usecases import play

    clock = {"turn_seconds": 1, "bank_seconds": 0, "max_timeouts": 2}
    table = open_table(api, **settings, clock=clock)
    seats = table["seat_count"]
    clients = [player_client(api) for _ in range(seats)]
    for client in clients:
        body = {"buyin": 450} if "min_buyin" in settings else {}
        assert join(client, table["id"], **body).status_code == 201
    match_id = table["match_id"]
    later = utcnow()
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        for _ in range(200):
            later += timedelta(seconds=5)
            # This match's clock only: the database is shared with other tests' matches.
            play.time_out(session, match_id, later)
            if clients[0].get(f"/v1/matches/{match_id}").get_json()["status"] != "playing":
                break
        else:
            raise AssertionError("the clock did not end the match")
        view = clients[0].get(f"/v1/matches/{match_id}").get_json()
        assert view["result"]["forfeiter"] is not None or view["result"]["forfeiters"]
        done = in_unit(session, settlement.settle_match, match_id, later)
    finally:
        session.close()
    assert sum(done.statement["payouts"]) + done.fee == sum(
        s["escrow"]["amount"] for s in view["seats"]
    )
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True, audit["discrepancies"]
