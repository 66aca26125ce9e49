"""Tournaments at a seamless operator (docs/tournaments.md, "Seamless wallets"), against the
reference operator wallet: an entry is a debit of the operator's wallet, a refund or a prize
a credit, in one round per player's stay in the tournament, each exactly once however the
wallet answers."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from service.clock import utcnow
from service.db.wallet_models import WalletCall
from service.usecases import tournaments
from tests.api import test_seamless
from tests.api.test_seamless import POST, Operator, _books_agree
from tests.api.test_tournaments import BUY_IN, FEE, cancel, conclude, open_tournament
from tests.conftest import ApiClient, assert_problem

# The seamless tests' fixtures: an app serving them and an operator with its own wallet.
seamless_app = test_seamless.seamless_app
operator = test_seamless.operator

ENTRY = BUY_IN + FEE
START = 10_000


def _register(client: ApiClient, tournament_id: str, key: str | None = None) -> Any:
    return client.post(f"/v1/tournaments/{tournament_id}/entries", key=key or secrets.token_hex(8))


def _field(operator: Operator, count: int = 4) -> tuple[dict[str, Any], dict[str, ApiClient]]:
    """A four-entrant knockout with ``count`` entrants registered, and their clients."""
    tournament = open_tournament(operator.api)
    clients = {}
    for _ in range(count):
        client = operator.player(balance=START)
        response = _register(client, tournament["id"])
        assert response.status_code == 201, response.get_json()
        clients[client.player_id] = client  # type: ignore[attr-defined]
    return response.get_json(), clients


def _play_out(
    operator: Operator,
    tournament: dict[str, Any],
    clients: dict[str, Any],
    settle: Callable[[str], Any] | None = None,
) -> Any:
    """Every match lost by its first seat's resignation, round by round, each concluded by
    ``settle`` (by default the settlement task's use case, then the credits sent as the task
    sends them); the tournament after its last match."""

    def conclude_and_send(match_id: str) -> None:
        assert conclude(operator.app, match_id) is None  # recorded: no settlement
        db = operator.session()
        try:
            tournaments.send_credits(db, match_id, POST)
        finally:
            db.close()

    players = {e["seat"]: e["player_id"] for e in tournament["entries"]}
    for r in (1, 2):
        for pairing in tournament["rounds"][r - 1]["matches"]:
            loser = clients[players[pairing["first_seat"]]]
            path = f"/v1/matches/{pairing['match_id']}/actions"
            assert loser.post(path, {"action": "RESIGN"}).status_code == 200
            (settle or conclude_and_send)(pairing["match_id"])
        tournament = operator.api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    return tournament


def test_a_seamless_knockout_debits_the_entries_and_credits_the_prizes(
    operator: Operator, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    from worker.tasks import settle_match

    # The settlement task itself, called as a plain function on the test database: it
    # records each result and, after the final, sends the prize credits at once.
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true")
    tournament, clients = _field(operator)
    assert tournament["status"] == "running"
    for client in clients.values():
        assert operator.wallet.balance(client.external_id) == START - ENTRY
    debits = operator.calls(kind="debit")
    assert [(c.state, c.amount, c.reason, c.table_id) for c in debits] == [
        ("booked", ENTRY, "buyin", tournament["id"])
    ] * 4
    assert len({c.round_id for c in debits}) == 4  # a round per player's stay

    finished = _play_out(operator, tournament, clients, settle_match)
    assert finished["status"] == "finished"
    prizes = {e["player_id"]: e["prize"]["amount"] for e in finished["entries"]}
    assert sorted(prizes.values()) == [0, 0, 1_200, 2_800]  # 2-5: 7000/3000 of 4,000
    credits = operator.calls(kind="credit")
    assert sorted((c.amount, c.state, c.reason) for c in credits) == [
        (0, "acknowledged", "payout"),  # zero credits close the losers' rounds
        (0, "acknowledged", "payout"),
        (1_200, "acknowledged", "payout"),
        (2_800, "acknowledged", "payout"),
    ]
    rounds = {c.player_id: c.round_id for c in debits}
    for credit in credits:  # each closes its player's round, naming its debit
        assert credit.round_closed and credit.round_id == rounds[credit.player_id]
        [debit] = [d for d in debits if d.player_id == credit.player_id]
        assert credit.references == [debit.id]
    for player_id, client in clients.items():
        assert operator.wallet.balance(client.external_id) == START - ENTRY + prizes[player_id]
    _books_agree(operator, *clients.values())
    operator.audit_ok()
    audit = operator.api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()
    assert audit["ok"], audit
    day = utcnow().date().isoformat()
    report = operator.api.get(f"/v1/wallet-calls?date={day}").get_json()["data"]
    assert {r["id"] for r in report} == {c.id for c in operator.calls()}


def test_a_registration_whose_debit_times_out_takes_nothing_and_its_retry_works(
    operator: Operator,
) -> None:
    tournament = open_tournament(operator.api)
    player = operator.player(balance=START)
    operator.wallet.faults(
        {"kinds": ["debit"], "fault": "timeout_before_apply", "times": 1, "seconds": 1.0}
    )
    answer = _register(player, tournament["id"], key="k1")
    assert_problem(answer, 503, "wallet_unavailable")
    after = operator.api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert after["entries"] == [] and after["entries_taken"] == 0
    [first] = operator.calls()
    assert first.state == "rolled_back" and first.rollback_id
    assert operator.wallet.balance(player.external_id) == START  # type: ignore[attr-defined]
    statement = operator.api.get(f"/v1/tournaments/{tournament['id']}/statement").get_json()
    assert statement["held"]["amount"] == 0 and statement["lines"] == []
    retry = _register(player, tournament["id"], key="k1")  # the same request again
    assert retry.status_code == 201, retry.get_json()
    assert [e["player_id"] for e in retry.get_json()["entries"]] == [player.player_id]  # type: ignore[attr-defined]
    second = operator.calls()[-1]
    assert second.id != first.id and second.state == "booked"
    assert operator.wallet.balance(player.external_id) == START - ENTRY  # type: ignore[attr-defined]
    _books_agree(operator, player, start=START)
    audit = operator.api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()
    assert audit["ok"], audit  # one round open: the entrant's


def test_unregistering_and_cancelling_refund_by_credits(operator: Operator) -> None:
    tournament, clients = _field(operator, count=3)
    leaver, *others = clients.values()
    left = leaver.delete(f"/v1/tournaments/{tournament['id']}/entries/me", key="leave")
    assert left.status_code == 200, left.get_json()
    [credit] = operator.calls(kind="credit")
    assert (credit.reason, credit.amount, credit.state) == ("refund", ENTRY, "acknowledged")
    assert operator.wallet.balance(leaver.external_id) == START  # type: ignore[attr-defined]
    # Registering again opens a new round.
    assert _register(leaver, tournament["id"]).status_code == 201
    rounds = {c.round_id for c in operator.calls(player_id=leaver.player_id)}  # type: ignore[attr-defined]
    assert len(rounds) == 2

    cancelled = cancel(operator.api, tournament["id"])
    assert cancelled.status_code == 200, cancelled.get_json()
    refunds = [c for c in operator.calls(kind="credit") if c.id != credit.id]
    assert (
        sorted((c.reason, c.amount, c.state) for c in refunds)
        == [("refund", ENTRY, "acknowledged")] * 3
    )
    for client in (leaver, *others):
        assert operator.wallet.balance(client.external_id) == START  # type: ignore[attr-defined]
    _books_agree(operator, leaver, *others, start=START)
    operator.audit_ok()


def test_a_prize_whose_first_answer_is_lost_is_credited_once(operator: Operator) -> None:
    tournament, clients = _field(operator)
    operator.wallet.faults(
        {"kinds": ["credit"], "fault": "timeout_after_apply", "times": 4, "seconds": 1.0}
    )
    finished = _play_out(operator, tournament, clients)
    assert finished["status"] == "finished"
    credits = operator.calls(kind="credit")
    assert {c.state for c in credits} == {"pending"}  # applied, but no answer heard
    for step in range(1, 3):
        operator.sweep(later=timedelta(minutes=10 * step))
    credits = operator.calls(kind="credit")
    assert {c.state for c in credits} == {"acknowledged"}
    applied = [t for t in operator.wallet.transactions() if t["kind"] == "credit"]
    assert sorted(t["transaction_id"] for t in applied) == sorted(c.id for c in credits)
    prizes = {e["player_id"]: e["prize"]["amount"] for e in finished["entries"]}
    for player_id, client in clients.items():
        assert operator.wallet.balance(client.external_id) == START - ENTRY + prizes[player_id]
    _books_agree(operator, *clients.values(), start=START)
    operator.audit_ok()
    # A credit written for another amount than the prize the ledger paid is found.
    winner = max(credits, key=lambda c: c.amount)
    db = operator.session()
    try:
        with db.begin():
            db.execute(
                update(WalletCall)
                .where(WalletCall.id == winner.id)
                .values(amount=winner.amount - 1)
            )
    finally:
        db.close()
    audit = operator.api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()
    assert [(d["field"], d["expected"], d["actual"]) for d in audit["discrepancies"]] == [
        (f"wallet[{winner.player_id}].credits", winner.amount, winner.amount - 1)
    ]


def test_a_self_exclusion_credits_an_open_entry_back(operator: Operator) -> None:
    tournament = open_tournament(operator.api)
    player = operator.player(balance=START)
    assert _register(player, tournament["id"]).status_code == 201
    until = (utcnow() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    excluded = operator.api.put(
        f"/v1/players/{player.player_id}/self-exclusion",  # type: ignore[attr-defined]
        {"until": until},
    )
    assert excluded.status_code == 200, excluded.get_json()
    assert operator.api.get(f"/v1/tournaments/{tournament['id']}").get_json()["entries"] == []
    operator.sweep()
    credits = operator.calls(kind="credit")
    assert [(c.reason, c.amount, c.state) for c in credits] == [("refund", ENTRY, "acknowledged")]
    _books_agree(operator, player, start=START)
    operator.audit_ok()
