"""Deposit limits (decrease now, increase after 24 h) and display currency amounts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from service.clock import utcnow
from service.usecases import limits, wallets
from service.usecases.auth import Principal
from tests.conftest import ApiClient, assert_problem, in_unit, plan_of


def eur(amount: int) -> dict[str, Any]:
    return {"amount": amount, "currency": "EUR"}


def test_limits_start_unset(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    body = api.get(f"/v1/players/{pid}/deposit-limits/EUR").get_json()
    assert body["daily"] == {"amount": None, "pending": None}
    assert set(body) >= {"daily", "weekly", "monthly", "player_id", "currency"}


def test_a_new_or_lower_limit_applies_at_once(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    path = f"/v1/players/{pid}/deposit-limits/EUR"
    assert api.put(path, {"daily": eur(1000)}).get_json()["daily"]["amount"] == eur(1000)
    assert api.deposit(pid, 600).status_code == 201
    problem = assert_problem(api.deposit(pid, 500), 422, "deposit_limit_exceeded")
    assert "daily" in problem["detail"]
    assert api.deposit(pid, 400).status_code == 201
    lowered = api.put(path, {"daily": eur(500), "weekly": eur(2000)}).get_json()
    assert lowered["daily"]["amount"] == eur(500) and lowered["weekly"]["amount"] == eur(2000)
    assert_problem(api.deposit(pid, 1), 422, "deposit_limit_exceeded")
    # limits are per currency
    assert api.deposit(pid, 5000, currency="USD").status_code == 201


def test_a_higher_limit_waits_24_hours(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    path = f"/v1/players/{pid}/deposit-limits/EUR"
    api.put(path, {"daily": eur(1000)})
    raised = api.put(path, {"daily": eur(5000)}).get_json()
    assert raised["daily"]["amount"] == eur(1000)
    assert raised["daily"]["pending"]["amount"] == eur(5000)
    assert raised["daily"]["pending"]["effective_at"].endswith("Z")
    assert_problem(api.deposit(pid, 1500), 422, "deposit_limit_exceeded")
    removed = api.put(path, {"daily": None}).get_json()  # removing is a raise, too
    assert removed["daily"]["amount"] == eur(1000) and removed["daily"]["pending"]["amount"] is None


def test_limit_currency_must_match_the_path(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    assert_problem(
        api.put(
            f"/v1/players/{pid}/deposit-limits/EUR", {"daily": {"amount": 5, "currency": "USD"}}
        ),
        422,
        "currency_mismatch",
    )
    assert_problem(
        api.put(f"/v1/players/{pid}/deposit-limits/EUR", {"hourly": eur(5)}),
        422,
        "validation_failed",
    )


def test_raise_takes_effect_after_24_hours_and_windows_roll(app: Any, api: ApiClient) -> None:
    pid = api.new_player()["id"]
    principal = Principal(api.operator_id)  # type: ignore[attr-defined]
    session = app.extensions["gin"]["sessionmaker"]()
    start = utcnow()
    in_unit(session, limits.set_limits, principal, pid, "EUR", {"daily": 1000}, start)
    in_unit(session, limits.set_limits, principal, pid, "EUR", {"daily": 3000}, start)
    in_unit(session, wallets.deposit, principal, pid, "EUR", 1000, "a", start)
    later = start + timedelta(hours=25)
    views = {v.period: v for v in in_unit(session, limits.get_limits, principal, pid, "EUR", later)}
    assert views["daily"].amount == 3000 and not views["daily"].pending
    in_unit(session, wallets.deposit, principal, pid, "EUR", 3000, "b", later)
    # the first deposit left the rolling 24 hours; the second fills the raised limit
    from service.errors import DepositLimitExceeded

    try:
        in_unit(session, wallets.deposit, principal, pid, "EUR", 1, "c", later)
        raise AssertionError("limit not enforced")
    except DepositLimitExceeded:
        pass
    # lowering meanwhile cancels a pending raise
    in_unit(session, limits.set_limits, principal, pid, "EUR", {"weekly": 10_000}, later)
    in_unit(session, limits.set_limits, principal, pid, "EUR", {"weekly": 20_000}, later)
    in_unit(session, limits.set_limits, principal, pid, "EUR", {"weekly": 9000}, later)
    views = {
        v.period: v
        for v in in_unit(
            session, limits.get_limits, principal, pid, "EUR", later + timedelta(days=2)
        )
    }
    assert views["weekly"].amount == 9000 and not views["weekly"].pending
    session.close()


def test_display_amounts_use_the_operators_rate(api: ApiClient) -> None:
    pid = api.new_player(currency="USD")["id"]
    api.deposit(pid, 1500)
    wallet = api.get(f"/v1/players/{pid}/wallets/EUR").get_json()
    assert "display" not in wallet["available"]  # no rate set yet
    rate = api.put("/v1/exchange-rates/EUR/USD", {"rate": "1.0837"})
    assert rate.status_code == 200 and rate.get_json()["rate"] == "1.0837"
    wallet = api.get(f"/v1/players/{pid}/wallets/EUR").get_json()
    display = wallet["available"]["display"]
    assert (display["amount"], display["currency"], display["rate"], display["approximate"]) == (
        "16.26",
        "USD",
        "1.0837",
        True,
    )
    assert wallet["available"]["amount"] == 1500  # money itself is untouched
    entry = api.get(f"/v1/players/{pid}/entries").get_json()["data"][0]
    assert entry["amount"]["display"]["amount"] == "16.26"
    api.patch(f"/v1/players/{pid}", {"display_currency": "JPY"})
    api.put("/v1/exchange-rates/EUR/JPY", {"rate": "162.47"})
    wallet = api.get(f"/v1/players/{pid}/wallets/EUR").get_json()
    assert wallet["balance"]["display"]["amount"] == "2437"
    listed = api.get("/v1/exchange-rates").get_json()["data"]
    assert [(r["base"], r["quote"]) for r in listed] == [("EUR", "JPY"), ("EUR", "USD")]


def test_rates_are_decimal_strings(api: ApiClient) -> None:
    for bad in (1.0837, "abc", "-1", "0", 5):
        response = api.put("/v1/exchange-rates/EUR/USD", {"rate": bad})
        assert response.status_code == 422, bad
    assert_problem(api.put("/v1/exchange-rates/EUR/EUR", {"rate": "1"}), 422, "validation_failed")
    assert_problem(
        api.put("/v1/exchange-rates/EUR/XXX", {"rate": "1"}), 422, "unsupported_currency"
    )


def test_the_period_sum_reads_the_deposits_index_alone(app: Any) -> None:
    """The sum of a period's deposits is answered by ix_ledger_entries_deposits (a range of
    that period's deposits), not by reading every entry of the account: its conditions imply
    the partial index's predicate."""
    stmt = limits.deposited_since(1, utcnow() - timedelta(days=1))
    plan = plan_of(app.extensions["gin"]["engine"], stmt)
    assert "ix_ledger_entries_deposits" in plan, plan
