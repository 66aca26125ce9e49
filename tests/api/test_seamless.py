"""Seamless wallets end to end over HTTP, against the reference operator wallet running as its
own process: stakes are debited from the operator's wallet, payouts and releases credited to
it, every ambiguous answer rolled back or retried under the same transaction id, and the
operator's balances always equal our ledger's view of them."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from service.clock import utcnow
from service.db.wallet_models import WalletCall
from service.outbound.transport import http_sender
from service.usecases import idempotency, seamless, settlement, unit_of_work
from service.usecases.audit import run_audit
from tests.api.play_clients import open_table, play_match
from tests.conftest import ApiClient, assert_problem, in_unit, new_operator, serving
from tests.seamless_support import RefWallet, clearing_balance, reference_wallet, wallet_port

POST = http_sender(allow_private=True)
STAKE = 500


@pytest.fixture(scope="module")
def seamless_app(database_url: str) -> Iterator[Any]:
    with serving(database_url, WEBHOOK_ALLOW_PRIVATE_NETWORKS=True) as application:
        yield application


class Operator:
    def __init__(self, app: Any, api: ApiClient, wallet: RefWallet, secret: str) -> None:
        self.app, self.api, self.wallet, self.secret = app, api, wallet, secret

    def session(self) -> Any:
        return self.app.extensions["gin"]["sessionmaker"]()

    def player(self, balance: int = 10_000) -> ApiClient:
        """A player the operator's wallet holds ``balance`` for, acting with its own token."""
        created = self.api.new_player()
        self.wallet.player(created["external_id"], balance)
        response = self.api.post(f"/v1/players/{created['id']}/tokens", {})
        assert response.status_code == 201, response.get_json()
        client = self.api.as_(response.get_json()["token"])
        client.player_id = created["id"]  # type: ignore[attr-defined]
        client.external_id = created["external_id"]  # type: ignore[attr-defined]
        return client

    def calls(self, **where: Any) -> list[WalletCall]:
        db = self.session()
        try:
            stmt = select(WalletCall).where(WalletCall.operator_id == self.api.operator_id)  # type: ignore[attr-defined]
            for name, value in where.items():
                stmt = stmt.where(getattr(WalletCall, name) == value)
            return list(
                unit_of_work.run(db, lambda: list(db.scalars(stmt.order_by(WalletCall.created_at))))
            )
        finally:
            db.close()

    def sweep(self, later: timedelta = timedelta()) -> int:
        db = self.session()
        try:
            return seamless.sweep(db, POST, utcnow() + later)
        finally:
            db.close()

    def settle(self, match_id: str) -> bool:
        """Settle the match and send its credits; whether the settlement said it left
        credits to send (the worker looks for them only then)."""
        db = self.session()
        try:
            _, credits = in_unit(db, settlement.conclude_with_credits, match_id, utcnow())
            seamless.send_credits(db, match_id, POST)
        finally:
            db.close()
        return credits

    def clearing(self, player: ApiClient) -> int:
        return clearing_balance(self.session, self.api.operator_id, player.player_id)  # type: ignore[attr-defined]

    def audit_ok(self) -> None:
        db = self.session()
        try:
            report = run_audit(db, operator_id=self.api.operator_id)  # type: ignore[attr-defined]
        finally:
            db.close()
        assert report.ok, report


@pytest.fixture
def operator(seamless_app: Any, tmp_path: Path) -> Iterator[Operator]:
    operator_id, key = new_operator(seamless_app)
    api = ApiClient(seamless_app.test_client(), key)
    api.operator_id = operator_id  # type: ignore[attr-defined]
    port = wallet_port()
    response = api.put(
        "/v1/wallet-settings/EUR",
        {"mode": "seamless", "url": f"http://127.0.0.1:{port}", "timeout_ms": 400},
    )
    assert response.status_code == 200, response.get_json()
    secret = response.get_json()["secret"]
    assert secret.startswith("whsec_")
    with reference_wallet(tmp_path, port, secret) as wallet:
        yield Operator(seamless_app, api, wallet, secret)


def _join(client: ApiClient, table_id: str, key: str | None = None) -> Any:
    return client.post(f"/v1/tables/{table_id}/seats", {}, key=key or secrets.token_hex(8))


def _books_agree(operator: Operator, *players: ApiClient, start: int = 10_000) -> None:
    """The bank-style invariant: each player's balance at the operator moved by exactly what
    our ledger's clearing account for it says, and every call reached a terminal state."""
    for player in players:
        assert operator.wallet.balance(player.external_id) == start + operator.clearing(player)  # type: ignore[attr-defined]
    open_calls = [c for c in operator.calls() if c.completed_at is None]
    assert not open_calls, [(c.id, c.kind, c.state) for c in open_calls]


def test_settings_are_listed_and_the_secret_is_shown_once(operator: Operator) -> None:
    answer = operator.api.get("/v1/wallet-settings").get_json()
    assert (answer["has_more"], answer["next_cursor"]) == (False, None)  # one page
    listed = answer["data"]
    assert [(s["currency"], s["mode"]) for s in listed] == [("EUR", "seamless")]
    assert "secret" not in listed[0]
    again = operator.api.put(
        "/v1/wallet-settings/EUR", {"mode": "seamless", "url": operator.wallet.url}
    )
    assert again.status_code == 200 and "secret" not in again.get_json()
    rotated = operator.api.post("/v1/wallet-settings/EUR/rotate-secret").get_json()
    assert rotated["secret"] != operator.secret and rotated["previous_secret_expires_at"]


def test_a_wallet_shows_the_operators_balance_for_display(operator: Operator) -> None:
    player = operator.player(balance=7_250)
    path = f"/v1/players/{player.player_id}/wallets/EUR"  # type: ignore[attr-defined]
    shown = operator.api.get(path).get_json()
    assert shown["operator_balance"]["amount"] == 7_250 and shown["balance"]["amount"] == 0
    operator.wallet.faults({"kinds": ["balance"], "fault": "error_5xx", "times": 1})
    assert operator.api.get(path).get_json()["operator_balance"] is None


def test_deposits_and_withdrawals_are_refused_in_seamless_mode(operator: Operator) -> None:
    player = operator.api.new_player()
    assert_problem(operator.api.deposit(player["id"], 100), 409, "seamless_wallet")
    response = operator.api.post(
        f"/v1/players/{player['id']}/withdrawals",
        {"amount": {"amount": 100, "currency": "EUR"}},
        key=secrets.token_hex(8),
    )
    assert_problem(response, 409, "seamless_wallet")


def test_a_match_debits_the_stakes_and_credits_the_payouts(operator: Operator) -> None:
    table = open_table(operator.api, stake=STAKE, fee={"bps": 1000})
    alice, bob = operator.player(), operator.player()
    for client in (alice, bob):
        response = _join(client, table["id"])
        assert response.status_code == 201, response.get_json()
    assert operator.wallet.balance(alice.external_id) == 10_000 - STAKE  # type: ignore[attr-defined]
    debits = operator.calls(kind="debit")
    assert [c.state for c in debits] == ["booked", "booked"]
    assert len({c.round_id for c in debits}) == 2  # a round per player's stay
    final = play_match([alice, bob], table["match_id"])
    assert final["status"] == "finished"
    assert operator.settle(table["match_id"])  # credits left to send
    credits = operator.calls(kind="credit")
    assert sorted(c.state for c in credits) == ["acknowledged", "acknowledged"]
    paid = sorted(c.amount for c in credits)
    assert paid[0] == 0 and paid[1] == 2 * STAKE - 100  # a zero credit closes the loser's round
    assert all(c.round_closed and c.references for c in credits)
    total = sum(operator.wallet.balance(p.external_id) for p in (alice, bob))  # type: ignore[attr-defined]
    assert total == 20_000 - 100  # the fee stays with us
    _books_agree(operator, alice, bob)
    operator.audit_ok()
    day = utcnow().date().isoformat()
    report = operator.api.get(f"/v1/wallet-calls?date={day}").get_json()["data"]
    assert {r["id"] for r in report} == {c.id for c in operator.calls()}
    assert sorted(r["amount"]["amount"] for r in report if r["kind"] == "credit") == paid
    assert {r["amount"]["currency"] for r in report} == {"EUR"}  # money objects


def test_a_seat_creates_its_escrow_apart_without_waiting_on_itself(
    operator: Operator, caplog: pytest.LogCaptureFixture
) -> None:
    """The seat's transaction has just booked the debit into the player's available funds
    when its hold needs the match's new escrow account: only the escrow is created apart
    (PostgreSQL), never the available account this transaction holds, which would wait on
    this very transaction until its lock timeout."""
    table = open_table(operator.api, stake=STAKE)
    with caplog.at_level("WARNING", logger="service.ledger.store"):
        assert _join(operator.player(), table["id"]).status_code == 201
    assert "not created apart" not in caplog.text


def test_insufficient_funds_take_no_seat_and_a_retry_gets_the_same_answer(
    operator: Operator,
) -> None:
    table = open_table(operator.api, stake=STAKE)
    poor = operator.player(balance=STAKE - 1)
    for _ in range(2):
        assert_problem(_join(poor, table["id"], key="same"), 422, "insufficient_funds")
    assert operator.api.get(f"/v1/tables/{table['id']}").get_json()["seats"] == []
    [call] = operator.calls()
    assert (call.state, call.declined) == ("failed", "insufficient_funds")
    assert operator.wallet.balance(poor.external_id) == STAKE - 1  # type: ignore[attr-defined]


def test_a_disabled_player_is_declined_by_name(operator: Operator) -> None:
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    operator.wallet.player(player.external_id, 10_000, disabled=True)  # type: ignore[attr-defined]
    body = assert_problem(_join(player, table["id"]), 422, "wallet_declined")
    assert body["wallet_status"] == "player_disabled"


@pytest.mark.parametrize(
    "fault",
    ["timeout_after_apply", "timeout_before_apply", "error_5xx", "bad_body", "unknown_status"],
)
def test_an_ambiguous_debit_is_rolled_back_and_the_retry_seats(
    operator: Operator, fault: str
) -> None:
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    operator.wallet.faults({"kinds": ["debit"], "fault": fault, "times": 1, "seconds": 1.0})
    assert_problem(_join(player, table["id"], key="k1"), 503, "wallet_unavailable")
    assert operator.api.get(f"/v1/tables/{table['id']}").get_json()["seats"] == []
    [first] = operator.calls()
    assert first.state == "rolled_back" and first.rollback_id
    assert operator.wallet.balance(player.external_id) == 10_000  # type: ignore[attr-defined]
    retry = _join(player, table["id"], key="k1")  # the same request again
    assert retry.status_code == 201, retry.get_json()
    second = operator.calls()[-1]
    assert second.id != first.id and second.state == "booked"
    assert operator.wallet.balance(player.external_id) == 10_000 - STAKE  # type: ignore[attr-defined]
    replay = _join(player, table["id"], key="k1")
    assert replay.status_code == 201 and replay.headers.get("Idempotent-Replayed") == "true"
    assert len(operator.calls()) == 2  # the replay debited nothing
    _books_agree(operator, player)


def test_a_rollback_that_overtakes_its_debit_leaves_nothing_applied(operator: Operator) -> None:
    """Reordering: the debit is still on its way when our timeout rolls it back; the
    operator records the rollback first and then refuses the late debit."""
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    operator.wallet.faults({"kinds": ["debit"], "fault": "delay_apply", "times": 1, "seconds": 1.0})
    assert_problem(_join(player, table["id"]), 503, "wallet_unavailable")
    [call] = operator.calls()
    assert call.state == "rolled_back"
    from tests.conftest import wait_until

    wait_until(
        lambda: any(
            r.get("transaction_id") == call.id and r.get("answer") != "pending"
            for r in operator.wallet.requests()
        ),
        timeout=5,
        what="the delayed debit to be answered",
        interval=0.05,
    )
    assert operator.wallet.balance(player.external_id) == 10_000  # type: ignore[attr-defined]
    states = {t["transaction_id"]: t["state"] for t in operator.wallet.transactions()}
    assert states.get(call.id) in (None, "tombstone", "rolled_back")
    _books_agree(operator, player)


def test_a_rollback_is_retried_until_the_wallet_answers(operator: Operator) -> None:
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    operator.wallet.faults(
        {"kinds": ["debit"], "fault": "timeout_after_apply", "times": 1, "seconds": 1.0},
        {"kinds": ["rollback"], "fault": "error_5xx", "times": 3},
    )
    assert_problem(_join(player, table["id"]), 503, "wallet_unavailable")
    [call] = operator.calls()
    assert call.state == "rollback_pending"
    assert operator.wallet.balance(player.external_id) == 10_000 - STAKE  # type: ignore[attr-defined]
    for step in range(1, 4):
        operator.sweep(later=timedelta(minutes=10 * step))
    [call] = operator.calls()
    assert call.state == "rolled_back"
    assert operator.wallet.balance(player.external_id) == 10_000  # type: ignore[attr-defined]
    sent = [r for r in operator.wallet.requests() if r.get("transaction_id") == call.rollback_id]
    assert len(sent) == call.attempts == 4  # 3 errors, then done: one rollback id throughout
    _books_agree(operator, player)


def test_a_credit_is_retried_with_its_id_until_acknowledged_and_escalated_meanwhile(
    operator: Operator,
) -> None:
    table = open_table(operator.api, stake=STAKE)
    alice, bob = operator.player(), operator.player()
    for client in (alice, bob):
        assert _join(client, table["id"]).status_code == 201
    play_match([alice, bob], table["match_id"])
    operator.wallet.faults({"kinds": ["credit"], "fault": "error_5xx", "times": 40})
    operator.settle(table["match_id"])
    for step in range(1, 12):
        operator.sweep(later=timedelta(hours=step))
    escalated = operator.api.get("/v1/wallet-calls?escalated=true").get_json()["data"]
    assert escalated and all(c["kind"] == "credit" and c["state"] == "pending" for c in escalated)
    operator.wallet.admin("DELETE", "/faults")
    operator.sweep(later=timedelta(hours=20))
    credits = operator.calls(kind="credit")
    assert [c.state for c in credits] == ["acknowledged", "acknowledged"]
    for credit in credits:
        ids = {
            r.get("transaction_id")
            for r in operator.wallet.requests()
            if r.get("path", "").endswith("/credit")
        }
        assert credit.id in ids
    _books_agree(operator, alice, bob)
    operator.audit_ok()


def _debit_and_die(
    operator: Operator,
    table: dict[str, Any],
    player: ApiClient,
    key: str,
    hold: idempotency.KeyHold | None = None,
) -> str:
    """What a seat request with ``key`` does before it dies: its debit's intent (holding
    the key with ``hold``) and the call, which the operator applies; its answer is never
    recorded. The debit's id."""
    db = operator.session()
    try:
        stake = seamless.Stake(
            operator.api.operator_id,  # type: ignore[attr-defined]
            player.player_id,  # type: ignore[attr-defined]
            "EUR",
            STAKE,
            "stake",
            table["id"],
            table["match_id"],
            table["match_id"],
            None,
        )
        intended = unit_of_work.run(
            db,
            seamless._intend_debit,
            db,
            operator.api.operator_id,  # type: ignore[attr-defined]
            lambda: stake,
            key,
            utcnow(),
            hold,
        )
        assert intended is not None
        call_id, request, _ = intended
        assert seamless._send(call_id, "debit", request, POST).verdict.value == "ok"
    finally:
        db.close()
    assert operator.wallet.balance(player.external_id) == 10_000 - STAKE  # type: ignore[attr-defined]
    return call_id


def test_a_debit_whose_request_died_is_rolled_back_by_the_sweep(operator: Operator) -> None:
    """A crash after the operator applied the debit and before we recorded its answer: the
    intent stays pending, and the sweep rolls it back once it is stale."""
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    _debit_and_die(operator, table, player, "crash")
    assert operator.sweep() == 0  # not stale yet: its request may still be booking it
    operator.sweep(later=seamless.STALE_AFTER + timedelta(seconds=1))
    [call] = operator.calls()
    assert call.state == "rolled_back"
    assert operator.wallet.balance(player.external_id) == 10_000  # type: ignore[attr-defined]
    _books_agree(operator, player)


def test_a_debit_whose_request_died_is_rolled_back_by_its_retry_at_once(
    operator: Operator,
) -> None:
    """The same crash, the request holding its key as a seat request does: while it lives a
    twin is 409, and once its process is gone (what held the key closed without a word) the
    same request again seats at once: the dead debit rolled back, a new one booked."""
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    path = f"/v1/tables/{table['id']}/seats"
    hold = idempotency.KeyHold(operator.app.extensions["gin"]["engine"])
    try:
        dead = _debit_and_die(operator, table, player, "crash", hold)
        assert_problem(player.post(path, {}, key="crash"), 409, "idempotency_key_in_use")
    finally:
        # Its process dies: the key's connection or file is closed, nothing released.
        if hold._connection is not None:
            hold._connection.connection.dbapi_connection.close()  # type: ignore[union-attr]
        elif hold._fd is not None:
            os.close(hold._fd)
            hold._fd = None
        hold.release()
    retry = player.post(path, {}, key="crash")
    assert retry.status_code == 201, retry.get_json()
    first, second = operator.calls()
    assert (first.id, first.state, second.state) == (dead, "rolled_back", "booked")
    assert operator.wallet.balance(player.external_id) == 10_000 - STAKE  # type: ignore[attr-defined]
    _books_agree(operator, player)


def test_leaving_credits_the_stake_back(operator: Operator) -> None:
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    assert _join(player, table["id"]).status_code == 201
    left = player.delete(f"/v1/tables/{table['id']}/seats/me", key=secrets.token_hex(8))
    assert left.status_code == 200, left.get_json()
    operator.sweep()
    credits = operator.calls(kind="credit")
    assert [(c.reason, c.amount, c.state) for c in credits] == [("release", STAKE, "acknowledged")]
    _books_agree(operator, player)


def test_per_hand_table_buy_in_top_up_and_leave(operator: Operator) -> None:
    table = open_table(
        operator.api,
        game="rummy",
        seat_count=4,
        format="rummy_per_hand",
        stake_per_point=1,
        min_buyin=100,
        max_buyin=300,
    )
    player = operator.player()
    assert (
        player.post(
            f"/v1/tables/{table['id']}/seats", {"buyin": 100}, key=secrets.token_hex(8)
        ).status_code
        == 201
    )
    topped = player.post(
        f"/v1/tables/{table['id']}/seats/me/top-ups", {"amount": 150}, key=secrets.token_hex(8)
    )
    assert topped.status_code == 200, topped.get_json()
    debits = operator.calls(kind="debit")
    assert [(c.reason, c.amount) for c in debits] == [("buyin", 100), ("top_up", 150)]
    assert debits[0].round_id == debits[1].round_id  # one stay at the table, one round
    too_much = player.post(
        f"/v1/tables/{table['id']}/seats/me/top-ups", {"amount": 100}, key=secrets.token_hex(8)
    )
    assert_problem(too_much, 422, "validation_failed")  # refused before any debit
    assert len(operator.calls(kind="debit")) == 2
    assert (
        player.delete(f"/v1/tables/{table['id']}/seats/me", key=secrets.token_hex(8)).status_code
        == 200
    )
    operator.sweep()
    [credit] = operator.calls(kind="credit")
    assert (credit.amount, credit.round_id, credit.state) == (
        250,
        debits[0].round_id,
        "acknowledged",
    )
    assert sorted(credit.references) == sorted(c.id for c in debits)
    _books_agree(operator, player)


def test_the_audit_catches_a_wallet_call_that_disagrees_with_the_ledger(
    operator: Operator,
) -> None:
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    assert _join(player, table["id"]).status_code == 201
    operator.audit_ok()
    [call] = operator.calls()
    db = operator.session()
    try:
        with db.begin():
            db.get(WalletCall, call.id).amount = STAKE + 1  # the intent no longer matches
        report = run_audit(db, operator_id=operator.api.operator_id)  # type: ignore[attr-defined]
    finally:
        db.close()
    assert not report.ok
    assert report.ledger is not None
    assert any(d.field == f"wallet_call[{call.id}].ledger" for d in report.ledger.discrepancies)


def test_a_rotated_secret_keeps_signing_until_its_overlap_ends(operator: Operator) -> None:
    """The wallet still knows only the old secret: calls are signed with both while the
    overlap lasts; once the old one is retired the wallet refuses them, and nothing moves."""
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    rotated = operator.api.post(
        "/v1/wallet-settings/EUR/rotate-secret", {"grace_period_seconds": 3600}
    )
    assert rotated.status_code == 200 and rotated.get_json()["secret"] != operator.secret
    assert _join(player, table["id"]).status_code == 201  # the old v1= still matches
    retired = operator.api.post(
        "/v1/wallet-settings/EUR/rotate-secret", {"grace_period_seconds": 0}
    )
    assert retired.get_json()["previous_secret_expires_at"] is None
    other = operator.player()
    body = assert_problem(_join(other, table["id"]), 422, "wallet_declined")
    assert body["wallet_status"] == "bad_signature"
    assert operator.wallet.balance(other.external_id) == 10_000  # type: ignore[attr-defined]


def test_the_day_reconciles_with_the_operators_export_and_a_tampered_one_does_not(
    operator: Operator,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``gin-service wallet report`` lists the day's transaction ids (debits, rollbacks,
    credits); ``wallet diff`` against the reference wallet's own export finds nothing, and
    finds each change made to that export."""
    import json

    from tests.integration.test_cli import run_cli

    table = open_table(operator.api, stake=STAKE)
    alice, bob = operator.player(), operator.player()
    operator.wallet.faults({"kinds": ["debit"], "fault": "bad_body", "times": 1})
    assert_problem(_join(alice, table["id"]), 503, "wallet_unavailable")  # one rolled back
    for client in (alice, bob):
        assert _join(client, table["id"]).status_code == 201
    play_match([alice, bob], table["match_id"])
    operator.settle(table["match_id"])
    monkeypatch.setenv("DATABASE_URL", database_url)
    operator_id, day = operator.api.operator_id, utcnow().date().isoformat()  # type: ignore[attr-defined]
    status, out, err = run_cli(capsys, "wallet", "report", operator_id, day)
    assert status == 0, err
    kinds = sorted(line["kind"] for line in json.loads(out)["data"])
    assert kinds == ["credit", "credit", "debit", "debit", "debit", "rollback"]
    export = operator.wallet.admin("GET", f"/export?date={day}")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    status, out, err = run_cli(capsys, "wallet", "diff", operator_id, day, str(path))
    assert (status, json.loads(out)["discrepancies"]) == (0, []), err
    rows = export["transactions"]
    credit = next(r for r in rows if r["kind"] == "credit" and r["amount"] > 0)
    credit["amount"] -= 1  # the operator paid a cent less
    debit = next(r for r in rows if r["kind"] == "debit" and r["state"] == "applied")
    rows.remove(debit)  # and lost a stake
    rows.append({**debit, "transaction_id": "wtx_theirs"})  # and has one we never sent
    path.write_text(json.dumps(export))
    status, out, _ = run_cli(capsys, "wallet", "diff", operator_id, day, str(path))
    found = {d["transaction_id"]: d["problem"] for d in json.loads(out)["discrepancies"]}
    assert status == 1
    assert found == {
        credit["transaction_id"]: "mismatch",
        debit["transaction_id"]: "missing_at_operator",
        "wtx_theirs": "unknown_to_us",
    }
