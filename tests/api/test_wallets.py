"""Deposits, withdrawals, wallets and the entry history over HTTP, with idempotency keys."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ApiClient, assert_problem, plan_of


def money(amount: Any, currency: str = "EUR") -> dict[str, Any]:
    return {"amount": {"amount": amount, "currency": currency}}


def test_deposit_then_withdraw(api: ApiClient) -> None:
    player = api.new_player()
    pid = player["id"]
    deposit = api.post(
        f"/v1/players/{pid}/deposits", money(1500) | {"external_reference": "cashier-77"}, key="d-1"
    )
    assert deposit.status_code == 201, deposit.get_json()
    body = deposit.get_json()
    assert body["id"].startswith("txn_") and body["kind"] == "deposit"
    assert body["amount"] == {"amount": 1500, "currency": "EUR"}
    assert body["external_reference"] == "cashier-77"
    assert body["wallet"]["available"]["amount"] == 1500
    assert "Idempotent-Replayed" not in deposit.headers
    withdrawal = api.post(f"/v1/players/{pid}/withdrawals", money(400), key="w-1")
    assert withdrawal.status_code == 201
    wallet = api.get(f"/v1/players/{pid}/wallets/EUR").get_json()
    assert (
        wallet["available"]["amount"],
        wallet["held"]["amount"],
        wallet["balance"]["amount"],
    ) == (1100, 0, 1100)
    assert api.get(f"/v1/players/{pid}/wallets").get_json()["data"] == [wallet]
    fetched = api.get(f"/v1/transactions/{body['id']}").get_json()
    assert fetched["id"] == body["id"] and fetched["amount"]["amount"] == 1500


def test_withdrawal_over_available_is_422_and_moves_nothing(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    api.deposit(pid, 1200)
    problem = assert_problem(
        api.post(f"/v1/players/{pid}/withdrawals", money(1500), key="w"), 422, "insufficient_funds"
    )
    assert problem["detail"] == "Available 1200 EUR, needed 1500 EUR."
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 1200


@pytest.mark.parametrize("amount", [15.0, 15.5, "1500", True, None, 0, -5, 2**53])
def test_amounts_must_be_positive_integers(api: ApiClient, amount: Any) -> None:
    pid = api.new_player()["id"]
    problem = assert_problem(
        api.post(f"/v1/players/{pid}/deposits", money(amount), key="k"), 422, "validation_failed"
    )
    assert problem["errors"][0]["field"] == "amount.amount"


def test_currency_must_be_supported(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    problem = assert_problem(
        api.post(f"/v1/players/{pid}/deposits", money(5, "XYZ"), key="k"), 422, "validation_failed"
    )
    assert problem["errors"][0]["field"] == "amount.currency"
    assert_problem(api.get(f"/v1/players/{pid}/wallets/XYZ"), 422, "unsupported_currency")


def test_same_key_same_body_replays_first_response(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    first = api.post(f"/v1/players/{pid}/deposits", money(500), key="same")
    # the same JSON with other formatting and key order is the same request
    again = api.request(
        "POST",
        f"/v1/players/{pid}/deposits",
        key="same",
        data='{ "amount": {"currency":"EUR", "amount":500} }',
        headers={"Content-Type": "application/json"},
    )
    assert again.status_code == first.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 500


def test_same_key_different_body_or_endpoint_is_422(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    api.post(f"/v1/players/{pid}/deposits", money(500), key="k1")
    assert_problem(
        api.post(f"/v1/players/{pid}/deposits", money(501), key="k1"), 422, "idempotency_key_reused"
    )
    assert_problem(
        api.post(f"/v1/players/{pid}/withdrawals", money(500), key="k1"),
        422,
        "idempotency_key_reused",
    )
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 500


def test_refusals_are_replayed_too(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    refused = api.post(f"/v1/players/{pid}/withdrawals", money(100), key="w")
    assert_problem(refused, 422, "insufficient_funds")
    api.deposit(pid, 1000)
    again = api.post(f"/v1/players/{pid}/withdrawals", money(100), key="w")
    assert_problem(again, 422, "insufficient_funds")
    assert again.headers["Idempotent-Replayed"] == "true"


def test_keys_are_scoped_per_operator(api: ApiClient, other_api: ApiClient) -> None:
    mine, theirs = api.new_player()["id"], other_api.new_player()["id"]
    assert api.post(f"/v1/players/{mine}/deposits", money(100), key="shared").status_code == 201
    response = other_api.post(f"/v1/players/{theirs}/deposits", money(999), key="shared")
    assert response.status_code == 201 and "Idempotent-Replayed" not in response.headers


@pytest.mark.parametrize("key", [None, ""])  # too long: test_http_edges (400 naming the header)
def test_money_moving_posts_need_a_key(api: ApiClient, key: str | None) -> None:
    pid = api.new_player()["id"]
    headers = {"Idempotency-Key": key} if key is not None else {}
    assert_problem(
        api.post(f"/v1/players/{pid}/deposits", money(100), headers=headers),
        400,
        "idempotency_key_required",
    )


def test_invalid_input_does_not_use_up_the_key(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    assert_problem(
        api.post(f"/v1/players/{pid}/deposits", money(1.5), key="k"), 422, "validation_failed"
    )
    assert api.post(f"/v1/players/{pid}/deposits", money(150), key="k").status_code == 201


def test_entry_history_newest_first_with_cursors(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    for amount in (100, 200, 300, 400, 500):
        api.deposit(pid, amount)
    api.post(
        f"/v1/players/{pid}/withdrawals", money(250) | {"external_reference": "out-1"}, key="w"
    )
    api.deposit(pid, 7, currency="USD")
    page = api.get(f"/v1/players/{pid}/entries?currency=EUR&limit=4").get_json()
    rows = page["data"]
    assert [(e["kind"], e["amount"]["amount"], e["balance_after"]["amount"]) for e in rows] == [
        ("withdrawal", -250, 1250),
        ("deposit", 500, 1500),
        ("deposit", 400, 1000),
        ("deposit", 300, 600),
    ]
    assert rows[0]["external_reference"] == "out-1" and rows[0]["account"] == "available"
    assert rows[0]["transaction_id"].startswith("txn_") and rows[0]["match_id"] is None
    assert page["has_more"] and page["next_cursor"] == rows[-1]["id"]
    rest = api.get(
        f"/v1/players/{pid}/entries?currency=EUR&limit=4&starting_after={page['next_cursor']}"
    ).get_json()
    assert [e["amount"]["amount"] for e in rest["data"]] == [200, 100]
    assert not rest["has_more"] and rest["next_cursor"] is None
    everything = api.get(f"/v1/players/{pid}/entries").get_json()["data"]
    assert len(everything) == 7 and everything[0]["amount"] == {"amount": 7, "currency": "USD"}
    newer = api.get(
        f"/v1/players/{pid}/entries?currency=EUR&limit=2&ending_before={rows[2]['id']}"
    ).get_json()
    assert [e["id"] for e in newer["data"]] == [rows[0]["id"], rows[1]["id"]]
    assert_problem(
        api.get(f"/v1/players/{pid}/entries?starting_after=ent_x"), 400, "invalid_cursor"
    )


def test_what_a_player_holds_is_summed_from_the_open_escrows_alone(app: Any) -> None:
    """A wallet reads the available account by its key and sums the open match escrows
    through ix_ledger_accounts_open_escrows, not one account per match ever played."""
    from service.usecases.wallets import _WALLET

    stmt = _WALLET.params(
        available_key="player_available:op_x:ply_x:-:EUR", player_id="ply_x", currency="EUR"
    )
    plan = plan_of(app.extensions["gin"]["engine"], stmt)
    assert "ix_ledger_accounts_open_escrows" in plan, plan
