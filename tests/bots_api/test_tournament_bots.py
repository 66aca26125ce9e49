"""Practice bots in practice tournaments over the API: the operator enters bots in all but one
entry of a practice knockout and of a practice single table (``service.practice``, as
``gin-service practice`` does), each funded with exactly its entry; a person registers with
their own token, which starts the tournament, and plays every match dealt to them while the
bots' turns are played inline (the use case the worker's task runs) and each ended match is
concluded as the settlement task does, until the tournament pays its prizes."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from service.client import ApiProblem, GinClient
from service.clock import utcnow
from service.db.bot_models import BotPlayer
from service.db.models import Player
from service.games.gin.bot import decide
from service.practice import (
    PLAY_MONEY,
    TOURNAMENT_BUY_IN,
    TOURNAMENT_FEE,
    open_tournament,
    practice_player,
)
from service.usecases import bots, settlement
from tests.conftest import in_unit

ENTRY = TOURNAMENT_BUY_IN + TOURNAMENT_FEE
#: Turns before the person resigns (keeps a drawn-out match inside the test's budget).
MAX_PERSON_ACTIONS = 60


def person(operator: GinClient) -> tuple[GinClient, str]:
    player_id, minted = practice_player(operator, "Alice", ttl_seconds=600)
    return operator.as_(minted["token"]), player_id


def live_matches(tournament: dict[str, Any]) -> list[str]:
    """The matches dealt and not yet recorded (a knockout's pairings, a single table's)."""
    if tournament["table"] is not None:
        return [tournament["table"]["match_id"]] if tournament["status"] == "running" else []
    return [
        m["match_id"]
        for r in tournament["rounds"]
        for m in r["matches"]
        if m["match_id"] and m["winner_seat"] is None
    ]


def play_out(
    app: Any, operator: GinClient, me: GinClient, my_id: str, tournament_id: str
) -> tuple[dict[str, Any], int, set[str]]:
    """Play the tournament to its end: the person by :func:`service.games.gin.bot.decide` (resigning
    after ``MAX_PERSON_ACTIONS``), the bots by :func:`service.usecases.bots.play_turns` (the
    operator reads the matches: the person may read only their own). The finished
    tournament, the bots' actions and every match the person was dealt."""
    session = app.extensions["gin"]["sessionmaker"]()
    bot_actions, mine, acted = 0, set(), 0
    try:
        for _ in range(5000):
            tournament = dict(me.tournament(tournament_id))
            if tournament["status"] != "running":
                return tournament, bot_actions, mine
            moved = False
            for match_id in live_matches(tournament):
                view = dict(operator.match(match_id))
                if view["status"] in ("finished", "void"):
                    in_unit(session, settlement.conclude, match_id, utcnow())
                    moved = True
                    continue
                if my_id not in [s["player_id"] for s in view["seats"]]:
                    continue
                mine.add(match_id)
                view = dict(me.match(match_id))
                legal = _my_legal(view)
                if legal is not None and view["status"] == "playing":
                    acted += 1
                    action = {"action": "RESIGN"} if acted > MAX_PERSON_ACTIONS else legal
                    me.act(match_id, action, view["version"])
                    moved = True
            applied = bots.play_turns(session, utcnow()).applied
            bot_actions += applied
            assert moved or applied, f"nobody could move: {tournament}"
    finally:
        session.close()
    raise AssertionError("the tournament did not end")


def _my_legal(view: dict[str, Any]) -> dict[str, Any] | None:
    """The person's action when it is their turn (two-player Gin by the bots' own strategy,
    Rummy's first listed action), else None."""
    hand = view.get("hand")
    if hand is not None:
        return dict(decide(hand)) if hand.get("legal_actions") else None
    game = view.get("play") or {}
    if view["you"] in game.get("to_act", ()) and game.get("legal_actions"):
        return dict(game["legal_actions"][0])
    return None


@pytest.mark.parametrize(
    ("which", "overrides"),
    [
        ("knockout", {"format": "first_to_knock", "target": None}),
        ("rummy_table", {"target": 30}),
    ],
)
def test_bots_fill_a_practice_tournament_a_person_plays_to_its_prizes(
    operator: GinClient, app: Any, which: str, overrides: dict[str, Any]
) -> None:
    opened = open_tournament(operator, which, **overrides)
    field = opened["entrants"]
    assert (opened["status"], opened["entries_taken"]) == ("open", field - 1)
    bot_ids = [e["player_id"] for e in opened["entries"]]
    for bot_id in bot_ids:  # funded with exactly the entry, now held for the tournament
        wallet = operator.wallet(bot_id, "XPM")
        assert (wallet["available"]["amount"], wallet["held"]["amount"]) == (0, ENTRY)
    me, my_id = person(operator)
    lobby = me.tournaments(currency="XPM", status="open")["data"]
    assert opened["id"] in [t["id"] for t in lobby]

    started = dict(me.register(opened["id"]))  # the last entry starts it
    assert started["status"] == "running"
    my_seat = next(e["seat"] for e in started["entries"] if e["player_id"] == my_id)
    assert started["you"] == my_seat
    assert operator.tournament(opened["id"])["you"] is None  # the operator has no entry

    finished, bot_actions, mine = play_out(app, operator, me, my_id, opened["id"])
    assert finished["status"] == "finished" and bot_actions > 0 and mine
    # Every entrant is placed and the pool (the buy-ins) paid at 70/30 to the cent.
    pool = TOURNAMENT_BUY_IN * field
    prizes = {e["player_id"]: e["prize"]["amount"] for e in finished["entries"]}
    assert sum(prizes.values()) == pool
    assert sorted(prizes.values(), reverse=True)[:2] in (
        [pool * 7 // 10, pool * 3 // 10],
        [pool // 2, pool // 2],
    )
    assert all(e["first_place"] is not None for e in finished["entries"])
    mine_now = me.wallet(my_id, "XPM")
    assert mine_now["held"]["amount"] == 0
    assert mine_now["balance"]["amount"] == PLAY_MONEY - ENTRY + prizes[my_id]
    for bot_id in bot_ids:
        assert operator.wallet(bot_id, "XPM")["balance"]["amount"] == prizes[bot_id]
    assert operator.tournament_statement(opened["id"])["held"]["amount"] == 0
    assert operator.audit_tournament(opened["id"])["ok"]
    assert operator.audit_ledger()["ok"]
    # Nothing is left for this tournament's bots to play (bots of other tests on this test
    # process's database may still be playing their own matches).
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        due = bots.due_turns(session, limit=100_000)
    finally:
        session.close()
    assert not [turn for turn in due if turn[1] in bot_ids]


def test_bots_enter_practice_tournaments_only_and_only_while_open(
    operator: GinClient, app: Any
) -> None:
    real = operator.create_tournament("match_play", "EUR", 500, 4, target=50)
    with pytest.raises(ApiProblem) as refused:
        operator.enter_bot(real["id"])
    problem = refused.value
    assert (problem.status, problem.code) == (422, "practice_tournament_required")
    assert [f.field for f in problem.fields] == ["tournament_id"]
    assert operator.tournament(real["id"])["entries_taken"] == 0

    full = open_tournament(operator, "knockout", bots=4)  # the fourth bot started it
    assert full["status"] == "running" and full["entries_taken"] == 4
    with pytest.raises(ApiProblem) as closed:
        operator.enter_bot(full["id"])
    assert (closed.value.status, closed.value.code) == (409, "tournament_not_open")
    with pytest.raises(ApiProblem) as missing:
        operator.enter_bot("trn_missing")
    assert missing.value.status == 404
    # Its bots' matches end (no bot plays on for other tests' scans of live matches).
    assert operator.cancel_tournament(full["id"])["status"] == "cancelled"
    # A refused bot leaves nothing behind: no bot, no player, no play money.
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        for tournament_id, count in ((full["id"], 4), (real["id"], 0)):
            entered = select(BotPlayer).where(BotPlayer.tournament_id == tournament_id)
            assert len(session.scalars(entered).all()) == count
            made = select(Player).where(Player.external_id.startswith(f"bot:{tournament_id}:"))
            assert len(session.scalars(made).all()) == count
    finally:
        session.close()
