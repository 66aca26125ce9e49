"""Settling finished matches: statements, ledger postings, exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from service.clock import utcnow
from service.db.match_models import MatchRow, OutboxEvent, Settlement
from service.db.models import LedgerEntry, LedgerTransaction
from service.ledger import store
from service.usecases import settlement
from tests.api.play_clients import FORMATS, play_match, seated_match, wallet
from tests.conftest import ApiClient, in_unit, plan_of


def settle(app: Any, match_id: str) -> Settlement:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        return in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()


@pytest.mark.parametrize("settings", FORMATS, ids=[f["format"] for f in FORMATS])
def test_settlement_pays_out_the_statement_once(
    api: ApiClient, app: Any, settings: dict[str, Any]
) -> None:
    clients, table = seated_match(api, **settings)
    match_id = table["match_id"]
    players = [c.player_id for c in clients]  # type: ignore[attr-defined]
    before = {p: wallet(api, p)["balance"]["amount"] for p in players}
    final = play_match(clients, match_id)
    assert final["status"] == "finished"
    assert api.get(f"/v1/matches/{match_id}/settlement").status_code == 404  # not yet
    first = settle(app, match_id)
    again = settle(app, match_id)
    assert again.id == first.id  # idempotent: one settlement, one ledger transaction
    statement = first.statement
    assert sum(statement["payouts"]) + statement["fee"] == sum(statement["escrow"])
    for seat, player in enumerate(statement["players"]):
        w = wallet(api, player)
        assert w["held"]["amount"] == 0  # the escrow is empty
        assert w["balance"]["amount"] == before[player] + statement["net"][seat]
    body = api.get(f"/v1/matches/{match_id}/settlement").get_json()
    assert body["id"] == first.id and body["ledger_transaction_id"] == first.ledger_transaction_id
    assert [n["amount"] for n in body["net"]] == statement["net"]
    assert body["statement"]["hands"] and body["fee"]["amount"] == statement["fee"]
    # A seated player may read it; the settlement.completed event is in the outbox.
    assert clients[0].get(f"/v1/matches/{match_id}/settlement").status_code == 200
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        kinds = session.scalars(
            select(OutboxEvent.type).where(OutboxEvent.subject_id == match_id)
        ).all()
        assert kinds.count("match.finished") == 1 and kinds.count("settlement.completed") == 1
        count = session.scalar(
            select(func.count())
            .select_from(LedgerTransaction)
            .where(LedgerTransaction.match_ref == match_id, LedgerTransaction.kind == "capture")
        )
        assert count == 1
        row = session.get(MatchRow, match_id)
        assert row is not None and row.settled_at == first.created_at
        session.rollback()  # the sweep's query owns its transaction
        assert match_id not in in_unit(session, settlement.unsettled_finished_matches, limit=10_000)
    finally:
        session.close()


def test_forfeit_settles_for_the_opponent_with_fee(api: ApiClient, app: Any) -> None:
    clients, table = seated_match(api, format="match_play", stake=500, fee={"bps": 1000})
    match_id = table["match_id"]
    view = clients[0].post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"}).get_json()
    loser = view["you"]
    done = settle(app, match_id)
    assert done.statement["winner"] == 1 - loser and done.fee == 100
    winner_id = done.statement["players"][1 - loser]
    assert wallet(api, winner_id)["balance"]["amount"] == 100_000 + 400
    listed = api.get("/v1/settlements").get_json()["data"]
    assert [s["id"] for s in listed] == [done.id]


def test_unfinished_or_unknown_matches_are_not_settled(api: ApiClient, app: Any) -> None:
    from service.errors import MatchNotLive, NotFound

    _clients, table = seated_match(api)
    with pytest.raises(MatchNotLive):
        settle(app, table["match_id"])
    with pytest.raises(NotFound):
        settle(app, "mch_nope")


def test_settlement_rows_are_append_only_and_ledger_verifies(api: ApiClient, app: Any) -> None:
    from sqlalchemy import text

    clients, table = seated_match(api)
    clients[1].post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
    settle(app, table["match_id"])
    engine = app.extensions["gin"]["engine"]
    for statement in ("UPDATE settlements SET fee = fee + 1", "DELETE FROM settlements"):
        with pytest.raises(Exception, match="append-only"), engine.begin() as connection:
            connection.execute(text(statement))
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():
            assert store.verify(session) == []
            totals = session.execute(
                select(LedgerEntry.currency, func.sum(LedgerEntry.amount)).group_by(
                    LedgerEntry.currency
                )
            ).all()
        assert all(total == 0 for _currency, total in totals)
        with session.begin():
            assert session.get(MatchRow, table["match_id"]).status == "finished"
    finally:
        session.close()


def test_relay_publishes_finished_matches_once(api: ApiClient, app: Any) -> None:
    from worker.relay import relay_events

    clients, table = seated_match(api)
    sent: list[tuple[str, list[Any]]] = []
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        # Other tests of this process may have left events in the shared database, older
        # than ours: published first, so that one batch of the relay reaches ours.
        while in_unit(session, relay_events, lambda name, args: None, utcnow()):
            pass
        clients[0].post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
        in_unit(session, relay_events, lambda name, args: sent.append((name, args)), utcnow())
        in_unit(session, relay_events, lambda name, args: sent.append((name, args)), utcnow())
    finally:
        session.close()
    mine = [s for s in sent if s[1] == [table["match_id"]]]
    assert mine == [("settlement.settle_match", [table["match_id"]])]


def test_relay_keeps_events_when_the_broker_is_down(api: ApiClient, app: Any) -> None:
    from worker.relay import relay_events

    clients, table = seated_match(api)

    def down(name: str, args: list[Any]) -> None:
        raise ConnectionError("broker unreachable")

    session = app.extensions["gin"]["sessionmaker"]()
    try:
        # Other tests of this process may have left events in the shared database; the relay
        # stops at the first it cannot publish, so they are published first, then ours ends.
        while in_unit(session, relay_events, lambda name, args: None, utcnow()):
            pass
        clients[0].post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
        in_unit(session, relay_events, down, utcnow())
        with session.begin():
            pending = session.scalars(
                select(OutboxEvent).where(
                    OutboxEvent.subject_id == table["match_id"],
                    OutboxEvent.type == "match.finished",
                )
            ).one()
            assert pending.published_at is None and "unreachable" in (pending.last_error or "")
        sent: list[Any] = []
        in_unit(session, relay_events, lambda name, args: sent.append(args), utcnow())
        assert [table["match_id"]] in sent
    finally:
        session.close()


def test_the_sweep_finds_a_finished_match_without_settlement_by_its_index(
    api: ApiClient, app: Any
) -> None:
    """A finished match not settled yet is found; on PostgreSQL the query reads
    ix_matches_unsettled (the matches still to settle), not every finished match. (SQLite,
    the embedded default, may prefer another index while it has no statistics.)"""
    clients, table = seated_match(api, format="first_to_knock", stake=100)
    match_id = table["match_id"]
    assert play_match(clients, match_id)["status"] == "finished"
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        assert match_id in in_unit(session, settlement.unsettled_finished_matches, limit=10_000)
    finally:
        session.close()
    settle(app, match_id)
    engine = app.extensions["gin"]["engine"]
    if engine.dialect.name == "postgresql":
        plan = plan_of(engine, settlement.UNSETTLED.params(limit=100))
        assert "ix_matches_unsettled" in plan, plan
