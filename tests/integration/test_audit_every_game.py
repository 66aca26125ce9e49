"""The audit's one replay (every game through its spec) on every game and format played to
its end over HTTP (two-player Gin in its four formats and resigned, a First To Knock match
voided by dead hands and a Match Play match forfeited on time, three-player and partnership
Gin, Rummy to a target, by deals and per hand), then with the evidence tampered with, one way
per match: each finding is the one recorded when this replay was proved to report what the
replays it replaced reported (two-player Gin's own and the other games' generic one)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select, update

from service.client.api import action_body
from service.db.match_models import Settlement
from service.games.bots import action_text, decide_multi
from service.games.common import fair
from service.usecases import audit, unit_of_work
from tests.api.play_clients import FORMATS, join, open_table, player_client, seated_match
from tests.api.test_continuous_rummy import TABLE as PER_HAND
from tests.api.test_continuous_rummy import _play_hand
from tests.api.test_every_game import GAMES, SEATS
from tests.integration.test_audit import (
    Books,
    books,
    first_hand,
    run_clock_until_over,
    update_hand,
)

__all__ = ["books"]


def play_multi(books: Books, settings: dict[str, Any]) -> str:
    """A match of more than two seats or of Rummy played to its end by bots, and settled."""
    seats = SEATS.get(settings["game"]) or settings.get("seat_count", 2)
    table = open_table(books.api, **settings)
    clients = [player_client(books.api) for _ in range(seats)]
    for client in clients:
        body = {"buyin": settings["min_buyin"]} if "min_buyin" in settings else {}
        assert join(client, table["id"], **body).status_code == 201
    match_id: str = table["match_id"]
    rng = random.Random(3)
    for _ in range(20_000):
        views = [c.get(f"/v1/matches/{match_id}").get_json() for c in clients]
        if views[0]["status"] != "playing":
            break
        actor = rng.choice(list(views[0]["play"]["to_act"]))
        view = next(v for v in views if v["you"] == actor)
        body = action_body(action_text(decide_multi(view["play"]))) | {
            "expected_version": view["version"]
        }
        response = clients[views.index(view)].post(f"/v1/matches/{match_id}/actions", body)
        assert response.status_code == 200, (body, response.get_json())
    else:
        raise AssertionError("the match did not end")
    books.settle(match_id)
    return match_id


def per_hand_rummy(books: Books) -> str:
    """The first hand of a ``rummy_per_hand`` table, played out by bots and settled."""
    table = open_table(books.api, currency="EUR", **PER_HAND)
    clients = [player_client(books.api, deposit=1_000) for _ in range(2)]
    for client in clients:
        assert join(client, table["id"], buyin=200).status_code == 201
    match_id: str = table["match_id"]
    by_player = {c.player_id: c for c in clients}  # type: ignore[attr-defined]
    assert _play_hand(books.app, by_player, match_id, random.Random(5))["status"] != "playing"
    books.settle(match_id)
    return match_id


def audited(books: Books, match_id: str) -> dict[str, Any]:
    """The audit of ``match_id``'s settlement."""
    session = books.session()
    try:
        found = unit_of_work.run(session, audit.audit_match, session, None, match_id)
    finally:
        session.close()
    report: dict[str, Any] = found.to_dict()
    return report


def fields(report: dict[str, Any]) -> list[str]:
    return [d["field"] for d in report["discrepancies"]]


@pytest.fixture
def played(books: Books) -> Iterator[dict[str, str]]:
    matches: dict[str, str] = {}
    for settings in FORMATS:
        matches[f"gin-{settings['format']}"] = books.finished(**settings)
    matches["gin-resigned"] = books.finished(resign=True, **FORMATS[2])
    clock = {"turn_seconds": 1, "bank_seconds": 0, "max_timeouts": 100}
    _clients, table = seated_match(
        books.api, format="first_to_knock", stake=300, ftk_max_dead_hands=1, clock=clock
    )
    assert run_clock_until_over(books, table["match_id"]) == "void"
    books.settle(table["match_id"])
    matches["gin-void"] = table["match_id"]
    _clients, table = seated_match(
        books.api, format="match_play", stake=500, clock={**clock, "max_timeouts": 2}
    )
    assert run_clock_until_over(books, table["match_id"]) == "finished"
    books.settle(table["match_id"])
    matches["gin-timed-out"] = table["match_id"]
    for i, settings in enumerate(GAMES):
        matches[f"{settings['game']}-{settings['format']}-{i}"] = play_multi(books, settings)
    matches["rummy-rummy_per_hand"] = per_hand_rummy(books)
    yield matches


def test_the_one_replay_of_every_game_and_its_findings(
    books: Books, played: dict[str, str]
) -> None:
    for name, match_id in played.items():
        report = audited(books, match_id)
        assert report["ok"] is True, (name, report["discrepancies"])
        assert report["hands_replayed"] >= 1, name

    gin, multi = played["gin-match_play"], played["gin_three-match_play-0"]
    for match_id in (gin, multi):  # a hand's points rewritten on its row
        update_hand(books, match_id, points=(first_hand(books, match_id).points or 0) + 1)
        assert fields(audited(books, match_id)) == ["hands[1].points"]
    first = played["gin-first_to_knock"]  # the dealer chain broken
    update_hand(books, first, dealer=1 - first_hand(books, first).dealer)
    assert fields(audited(books, first)) == ["hands[1].dealer"]
    seed = played["gin-money_play"]  # a client seed that is not the seat's
    update_hand(books, seed, client_seed_2="mallory")
    assert fields(audited(books, seed)) == ["hands[1].client_seed_2", "hands[1].history.deck"]
    # A statement edited behind the service's back (the ledger moved the true fee).
    edited = played["gin-classic"]
    session = books.session()
    with session.begin():
        found = session.scalars(select(Settlement).where(Settlement.match_id == edited)).one()
        stored = dict(found.statement)
    session.close()
    stored["fee"] = stored["fee"] + 1
    books.tamper(
        lambda connection: connection.execute(
            update(Settlement.__table__)
            .where(Settlement.__table__.c.match_id == edited)
            .values(statement=stored)
        )
    )
    found_fields = fields(audited(books, edited))
    assert "statement.fee" in found_fields and any(
        f.startswith("ledger.capture[house_fee:") for f in found_fields
    ), found_fields
    # Another server seed revealed: the commitment and the recorded deck no longer match it,
    # and the match the log replays from it is not the one stored. (Two-player Gin's own
    # replay went on with the recorded deck and found only the first two.)
    changed = played["gin-timed-out"]
    update_hand(books, changed, server_seed=fair.new_server_seed())
    found_fields = fields(audited(books, changed))
    assert found_fields[:2] == ["hands[1].commitment", "hands[1].history.deck"], found_fields
    assert found_fields[2:] and all(
        f.startswith(("match_actions[", "hands[1].", "match.state.")) for f in found_fields[2:]
    ), found_fields
