"""Display currency (docs/engine.md 6.5): figures computed when answering and never stored,
exact at any allowed amount and rate, never failing a money answer, one rule for which currency
every answer shows; and refusals that name their field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import select

from service.api import render
from service.clock import utcnow
from service.db.match_models import Settlement
from service.db.models import ExchangeRate
from service.ledger.money import MAX_AMOUNT
from service.usecases import settlement
from service.usecases.rates import Rate
from tests.api.play_clients import join, open_table, player_client, seated_match
from tests.conftest import ApiClient, assert_problem, in_unit


def fields_of(response: Any) -> list[str]:
    return [e["field"] for e in response.get_json().get("errors", [])]


def settle(app: Any, match_id: str) -> None:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()


# --- 1. display figures are computed when answering, never stored ---------------------------


def test_a_settlement_shows_todays_rate_and_stores_no_display(api: ApiClient, app: Any) -> None:
    api.put("/v1/exchange-rates/EUR/USD", {"rate": "1.1"})
    clients, table = seated_match(api)
    match_id = table["match_id"]
    for client in clients:
        pid = client.player_id  # type: ignore[attr-defined]
        assert api.patch(f"/v1/players/{pid}", {"display_currency": "USD"}).status_code == 200
    clients[1].post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"})
    settle(app, match_id)
    first = api.get(f"/v1/matches/{match_id}/settlement").get_json()
    assert first["statement"]["display"][0]["rate"] == "1.1"
    api.put("/v1/exchange-rates/EUR/USD", {"rate": "2"})
    later = api.get(f"/v1/matches/{match_id}/settlement").get_json()
    won = later["net"][0]["amount"]
    shown = [later["statement"]["display"][0], later["net"][0]["display"]]
    assert all(d["rate"] == "2" and d["currency"] == "USD" for d in shown), shown
    assert shown[0]["amount"] == f"{won * 2 / 100:.2f}"
    assert later["payouts"][0]["display"]["rate"] == "2"
    listed = api.get("/v1/settlements").get_json()["data"][0]
    assert listed["net"][0]["display"]["rate"] == "2"
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        stored = session.scalars(select(Settlement).where(Settlement.match_id == match_id)).one()
        assert "display" not in stored.statement
    finally:
        session.close()
    assert api.get(f"/v1/audit/settlements/{match_id}").get_json()["ok"] is True


def test_a_display_a_row_holds_from_before_is_not_shown() -> None:
    """Rows written while display figures were stored keep them: a read leaves them out and
    shows the figures of its own moment."""
    old = {"net": [500, -500], "escrow": [500, 500], "payouts": [1000, 0], "fee": 0}
    old |= {"winner": 0, "void": False, "forfeiter": 1, "players": ["ply_a", "ply_b"]}
    old["display"] = [{"amount": "9.00", "currency": "USD", "rate": "1.8"}, None]
    row = Settlement(
        id="stl_1",
        match_id="mch_1",
        operator_id="op_1",
        currency="EUR",
        fee=0,
        statement=old,
        ledger_transaction_id="txn_1",
        created_at=utcnow(),
    )
    shown = render.settlement(settlement.SettlementView(row, [0, 1], old, [None, None]))
    assert shown["statement"]["display"] == [None, None]
    assert all("display" not in net for net in shown["net"])
    now = Rate("EUR", "USD", Decimal("2"), utcnow())
    shown = render.settlement(settlement.SettlementView(row, [0, 1], old, [now, None]))
    assert shown["statement"]["display"][0]["amount"] == "10.00"
    assert shown["net"][0]["display"]["rate"] == "2"


# --- 2. display arithmetic never breaks money -----------------------------------------------


def test_an_out_of_bounds_rate_is_refused_naming_the_rate(api: ApiClient) -> None:
    for bad in ("999999999999", "1000000.5", "0", "0.000"):
        response = api.put("/v1/exchange-rates/JPY/CHF", {"rate": bad})
        assert_problem(response, 422, "validation_failed")
        assert fields_of(response) == ["rate"], (bad, response.get_json())
    assert api.put("/v1/exchange-rates/JPY/CHF", {"rate": "1000000"}).status_code == 200


def test_money_answers_survive_any_stored_rate(api: ApiClient, app: Any) -> None:
    """A rate stored before the bounds (or not a number at all) still never fails a
    deposit, a wallet read or list, or a withdrawal: the display is exact, or left out."""
    pid = api.new_player(currency="CHF")["id"]
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        for quote, rate in (("CHF", "999999999999"), ("USD", "not a rate")):
            session.add(
                ExchangeRate(
                    operator_id=api.operator_id,  # type: ignore[attr-defined]
                    base="JPY",
                    quote=quote,
                    rate=rate,
                    updated_at=utcnow(),
                )
            )
        session.commit()
    finally:
        session.close()
    deposit = api.deposit(pid, MAX_AMOUNT, currency="JPY")
    assert deposit.status_code == 201, deposit.get_json()
    big = f"{MAX_AMOUNT * 999999999999}.00"
    assert deposit.get_json()["amount"]["display"]["amount"] == big
    wallet = api.get(f"/v1/players/{pid}/wallets/JPY")
    assert wallet.status_code == 200 and wallet.get_json()["balance"]["display"]["amount"] == big
    assert api.get(f"/v1/players/{pid}/wallets").status_code == 200
    out = api.post(
        f"/v1/players/{pid}/withdrawals", {"amount": {"amount": 1, "currency": "JPY"}}, key="w1"
    )
    assert out.status_code == 201, out.get_json()
    # a rate that is not a number: no display, the money answered all the same
    shown = api.get(f"/v1/players/{pid}/wallets/JPY?display_currency=USD")
    assert shown.status_code == 200 and "display" not in shown.get_json()["balance"]


def test_a_display_that_cannot_be_computed_is_left_out(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = api.new_player(currency="USD")["id"]
    api.put("/v1/exchange-rates/EUR/USD", {"rate": "1.0837"})

    def broken(*_args: Any) -> Any:
        raise ArithmeticError("no display today")

    monkeypatch.setattr("service.usecases.rates.display_amount", broken)
    response = api.deposit(pid, 1500)
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["wallet"]["available"] == {"amount": 1500, "currency": "EUR"}


# --- 3. refusals name the field -------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "code", "field"),
    [
        ("/v1/exchange-rates/EUR/USD", {"rate": "0"}, "validation_failed", "rate"),
        ("/v1/exchange-rates/EUR/EUR", {"rate": "1"}, "validation_failed", "quote"),
        ("/v1/exchange-rates/XXX/USD", {"rate": "1"}, "unsupported_currency", "base"),
        ("/v1/exchange-rates/EUR/XXX", {"rate": "1"}, "unsupported_currency", "quote"),
        ("/v1/exchange-rates/XPM/USD", {"rate": "1.5"}, "unsupported_currency", "base"),
        ("/v1/exchange-rates/USD/XPM", {"rate": "1.5"}, "unsupported_currency", "quote"),
    ],
)
def test_rate_refusals_name_the_field(
    api: ApiClient, path: str, body: dict[str, Any], code: str, field: str
) -> None:
    response = api.put(path, body)
    assert_problem(response, 422, code)
    assert fields_of(response) == [field]


def test_play_money_is_never_shown_in_a_real_currency(api: ApiClient) -> None:
    api.put("/v1/exchange-rates/XPM/USD", {"rate": "1.5"})
    assert api.get("/v1/exchange-rates").get_json()["data"] == []


def test_limit_and_self_exclusion_refusals_name_the_field(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    unknown = api.put(f"/v1/players/{pid}/deposit-limits/XXX", {"daily": None})
    assert_problem(unknown, 422, "unsupported_currency")
    assert fields_of(unknown) == ["currency"]
    read = api.get(f"/v1/players/{pid}/deposit-limits/XXX")
    assert_problem(read, 422, "unsupported_currency")
    assert fields_of(read) == ["currency"]
    wrong = api.put(
        f"/v1/players/{pid}/deposit-limits/EUR", {"weekly": {"amount": 5, "currency": "USD"}}
    )
    assert_problem(wrong, 422, "currency_mismatch")
    assert fields_of(wrong) == ["weekly.currency"]
    past = api.put(f"/v1/players/{pid}/self-exclusion", {"until": "2020-01-01T00:00:00Z"})
    assert_problem(past, 422, "validation_failed")
    assert fields_of(past) == ["until"]


# --- 4. a self-exclusion end can be sent back as it is shown --------------------------------


def test_a_self_exclusion_end_is_stored_as_it_is_shown(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    end = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=250_000)
    sent = end.isoformat().replace("+00:00", "Z")
    body = api.put(f"/v1/players/{pid}/self-exclusion", {"until": sent}).get_json()
    shown = body["self_excluded_until"]
    assert shown == end.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    again = api.put(f"/v1/players/{pid}/self-exclusion", {"until": shown})
    assert again.status_code == 200, again.get_json()
    assert again.get_json()["self_excluded_until"] == shown
    assert api.get(f"/v1/players/{pid}").get_json()["self_excluded_until"] == shown


# --- 5. one rule for the display currency of every answer -----------------------------------


def test_every_answer_with_money_follows_one_rule(api: ApiClient) -> None:
    """The currency the request names (``display_currency``), else the player's own: the
    wallet, the lobby, a table, the seat's escrow when sitting down, the match view."""
    api.put("/v1/exchange-rates/EUR/USD", {"rate": "1.0837"})
    api.put("/v1/exchange-rates/EUR/JPY", {"rate": "162.47"})
    player = player_client(api)
    api.patch(f"/v1/players/{player.player_id}", {"display_currency": "USD"})  # type: ignore[attr-defined]
    table = open_table(api)
    path = f"/v1/tables/{table['id']}"

    def stake_shown(body: dict[str, Any]) -> str | None:
        return body["stake"].get("display", {}).get("currency")

    wallet = player.get(f"/v1/players/{player.player_id}/wallets/EUR").get_json()  # type: ignore[attr-defined]
    assert wallet["available"]["display"]["currency"] == "USD"
    lobby = [t for t in player.get("/v1/tables").get_json()["data"] if t["id"] == table["id"]]
    assert stake_shown(lobby[0]) == "USD"
    assert stake_shown(player.get(path).get_json()) == "USD"
    assert stake_shown(player.get(f"{path}?display_currency=JPY").get_json()) == "JPY"
    assert stake_shown(api.get(f"{path}?display_currency=JPY").get_json()) == "JPY"
    assert stake_shown(api.get(path).get_json()) is None  # the operator has no display currency
    seated = join(player, table["id"]).get_json()
    assert seated["seats"][0]["escrow"]["display"] == {
        "amount": "5.42",
        "currency": "USD",
        "rate": "1.0837",
        "rate_at": seated["seats"][0]["escrow"]["display"]["rate_at"],
        "approximate": True,
    }
    other = player_client(api)
    join(other, table["id"])
    match = f"/v1/matches/{table['match_id']}"
    view = player.get(match).get_json()
    assert [s["escrow"].get("display", {}).get("currency") for s in view["seats"]] == ["USD"] * 2
    named = api.get(f"{match}?display_currency=JPY").get_json()
    assert named["seats"][0]["escrow"]["display"]["amount"] == "812"
    assert "display" not in other.get(match).get_json()["seats"][0]["escrow"]
    wallet = api.get(f"/v1/players/{player.player_id}/wallets/EUR?display_currency=JPY")  # type: ignore[attr-defined]
    assert wallet.get_json()["held"]["display"] == {
        **wallet.get_json()["held"]["display"],
        "amount": "812",
        "currency": "JPY",
    }
    bad = api.get(f"{path}?display_currency=XXX")
    assert_problem(bad, 422, "validation_failed")
    assert fields_of(bad) == ["display_currency"]
