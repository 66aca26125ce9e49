"""The audit's one replay (every game through its spec) against the replays it replaces:
two-player Gin's own replay and the generic one of the other games. Every game and format is
played to its end over HTTP (two-player Gin in its four formats and resigned, a First To
Knock match voided by dead hands and a Match Play match forfeited on time, three-player and
partnership Gin, Rummy to a target, by deals and per hand), settled, and audited by both; then
the evidence is tampered with, one way per match, and audited by both again."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select, update

from service.bots.multi import action_text, decide_multi
from service.client.api import action_body
from service.db.match_models import Settlement
from service.rules import fair
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


def both(books: Books, match_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The audit of ``match_id``'s settlement by the old replays and by the one replay."""
    session = books.session()
    try:

        def run(replay: Any) -> dict[str, Any]:
            found = session.scalars(select(Settlement).where(Settlement.match_id == match_id)).one()
            try:
                report = replay(session, found)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise AssertionError(f"{replay.__name__} crashed: {exc!r}") from exc
            result: dict[str, Any] = report.to_dict()
            return result

        old = unit_of_work.run(session, run, audit._audit_old)
        new = unit_of_work.run(session, run, audit._audit)
    finally:
        session.close()
    return old, new


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


def test_the_one_replay_reports_what_the_old_replays_did(
    books: Books, played: dict[str, str]
) -> None:
    for name, match_id in played.items():
        old, new = both(books, match_id)
        assert new["ok"] is True, (name, new["discrepancies"])
        if not name.startswith("gin-"):
            # The generic replay never counted the hands it replayed.
            assert old["hands_replayed"] == 0 and new["hands_replayed"] >= 1
            old["hands_replayed"] = new["hands_replayed"]
        assert old == new, name

    # Tampering, one way per match; both replays find each, and say the same about it.
    gin, multi = played["gin-match_play"], played["gin_three-match_play-0"]
    update_hand(books, gin, points=(first_hand(books, gin).points or 0) + 1)
    old, new = both(books, gin)
    assert old == new and fields(new) == ["hands[1].points"], (fields(old), fields(new))
    # The generic replay never read a hand's row beyond its seeds: the one replay does.
    update_hand(books, multi, points=(first_hand(books, multi).points or 0) + 1)
    old, new = both(books, multi)
    assert fields(old) == [] and fields(new) == ["hands[1].points"], fields(new)
    first = played["gin-first_to_knock"]
    update_hand(books, first, dealer=1 - first_hand(books, first).dealer)
    old, new = both(books, first)
    assert old == new and fields(new) == ["hands[1].dealer"]
    seed = played["gin-money_play"]
    update_hand(books, seed, client_seed_2="mallory")
    old, new = both(books, seed)
    assert old == new and "hands[1].client_seed_2" in fields(new)
    # A statement edited behind the service's back (the ledger moved the true payouts).
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
    old, new = both(books, edited)
    assert old == new and "statement.fee" in fields(new), fields(new)
    # Another server seed revealed: the commitment and the recorded deck no longer match
    # it. The old replay went on with the recorded deck; the one replay deals from the seed
    # revealed, as the log's own replay must, and also finds the log no longer replays.
    changed = played["gin-timed-out"]
    update_hand(books, changed, server_seed=fair.new_server_seed())
    old, new = both(books, changed)
    assert fields(old) == ["hands[1].commitment", "hands[1].history.deck"]
    assert fields(new)[:2] == fields(old) and new["discrepancies"][:2] == old["discrepancies"]
