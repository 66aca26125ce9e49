"""Posting maths: balanced journal transactions, account keys, minor units, display rounding."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from service.errors import LedgerInvariantBroken, UnsupportedCurrency, ValidationFailed
from service.ledger import postings as ledger
from service.ledger.chain import GENESIS, EntryContent, entry_hash
from service.ledger.money import (
    EXPONENTS,
    MAX_AMOUNT,
    MAX_RATE,
    PRACTICE_CURRENCY,
    RATE_DECIMALS,
    check_minor_units,
    display_amount,
    exponent,
    parse_rate,
)
from service.ledger.postings import (
    AccountKind,
    AccountRef,
    JournalTransaction,
    Posting,
    TransactionKind,
    sums_by_currency,
)

OP = "op_1"


def test_account_ref_text_round_trips() -> None:
    refs = [
        AccountRef.player_available(OP, "ply_1", "EUR"),
        AccountRef.player_escrow(OP, "ply_1", "mch_9", "EUR"),
        AccountRef.house_fee(OP, "JPY"),
        AccountRef.operator_clearing(OP, "USD"),
    ]
    for ref in refs:
        assert AccountRef.parse(str(ref)) == ref
    assert str(refs[1]) == "player_escrow:op_1:ply_1:mch_9:EUR"


def test_account_ref_refuses_inconsistent_fields() -> None:
    with pytest.raises(ValueError):
        AccountRef(AccountKind.PLAYER_ESCROW, OP, "ply_1", None, "EUR")
    with pytest.raises(ValueError):
        AccountRef(AccountKind.HOUSE_FEE, OP, "ply_1", None, "EUR")
    with pytest.raises(UnsupportedCurrency):
        AccountRef.house_fee(OP, "XXX")
    with pytest.raises(ValueError):
        AccountRef.parse("player_available:op_1:EUR")


def test_posting_text_round_trips() -> None:
    posting = Posting(AccountRef.house_fee(OP, "EUR"), 25)
    assert str(posting) == "house_fee:op_1:-:-:EUR +25"
    assert Posting.parse(str(posting)) == posting


def test_deposit_and_withdrawal_postings() -> None:
    deposit = ledger.deposit(OP, "ply_1", "EUR", 1500)
    assert [p.amount for p in deposit.postings] == [1500, -1500]
    assert deposit.postings[1].account.kind is AccountKind.OPERATOR_CLEARING
    withdrawal = ledger.withdrawal(OP, "ply_1", "EUR", 700)
    assert [p.amount for p in withdrawal.postings] == [-700, 700]


def test_hold_release_capture_postings() -> None:
    hold = ledger.hold(OP, "ply_1", "mch_1", "EUR", 500)
    assert hold.postings[1].account == AccountRef.player_escrow(OP, "ply_1", "mch_1", "EUR")
    release = ledger.release(OP, "ply_1", "mch_1", "EUR", 500)
    assert sums_by_currency(release.postings) == {"EUR": 0}
    capture = ledger.capture(OP, "mch_1", "EUR", {"ply_1": 500, "ply_2": 500}, {"ply_2": 950}, 50)
    assert sorted(str(p) for p in capture.postings) == sorted(
        [
            "player_escrow:op_1:ply_1:mch_1:EUR -500",
            "player_escrow:op_1:ply_2:mch_1:EUR -500",
            "player_available:op_1:ply_2:-:EUR +950",
            "house_fee:op_1:-:-:EUR +50",
        ]
    )


def test_unbalanced_or_degenerate_transactions_are_refused() -> None:
    a = AccountRef.player_available(OP, "ply_1", "EUR")
    b = AccountRef.operator_clearing(OP, "EUR")
    with pytest.raises(LedgerInvariantBroken, match="unbalanced"):
        JournalTransaction(TransactionKind.DEPOSIT, (Posting(a, 10), Posting(b, -9)))
    with pytest.raises(LedgerInvariantBroken, match="two or more"):
        JournalTransaction(TransactionKind.DEPOSIT, (Posting(a, 10),))
    with pytest.raises(LedgerInvariantBroken, match="twice"):
        JournalTransaction(TransactionKind.DEPOSIT, (Posting(a, 10), Posting(a, -10)))
    with pytest.raises(LedgerInvariantBroken):
        Posting(a, 0)
    with pytest.raises(LedgerInvariantBroken):
        ledger.deposit(OP, "ply_1", "EUR", -5)
    with pytest.raises(LedgerInvariantBroken, match="unbalanced"):
        ledger.capture(OP, "mch_1", "EUR", {"ply_1": 100}, {"ply_2": 90}, 5)


def test_balanced_per_currency_not_across_currencies() -> None:
    eur = AccountRef.player_available(OP, "ply_1", "EUR")
    usd = AccountRef.operator_clearing(OP, "USD")
    with pytest.raises(LedgerInvariantBroken, match="unbalanced"):
        JournalTransaction(TransactionKind.DEPOSIT, (Posting(eur, 100), Posting(usd, -100)))


@given(
    st.dictionaries(
        st.sampled_from(["ply_1", "ply_2", "ply_3", "ply_4"]), st.integers(1, 10**9), min_size=1
    ),
    st.data(),
)
def test_any_valid_capture_sums_to_zero(taken: dict[str, int], data: st.DataObject) -> None:
    total = sum(taken.values())
    fee = data.draw(st.integers(0, total))
    winner = data.draw(st.sampled_from(sorted(taken)))
    paid = {winner: total - fee} if total - fee else {}
    capture = ledger.capture(OP, "mch_1", "EUR", taken, paid, fee)
    assert sums_by_currency(capture.postings) == {"EUR": 0}
    assert len(capture.postings) >= 2


@pytest.mark.parametrize("bad", [15.0, 15.5, True, "15", None, 2**60])
def test_minor_units_refuse_floats_bools_strings(bad: object) -> None:
    with pytest.raises(ValidationFailed):
        check_minor_units(bad)


def test_display_amounts_follow_rules_6_5() -> None:
    # docs/engine.md 7.16: EUR 15.00 at 1.0837 USD -> 16.2555 -> 16.26;
    # at 162.47 JPY -> 2437.05 -> 2437
    assert display_amount(1500, "EUR", Decimal("1.0837"), "USD").amount == "16.26"
    assert display_amount(1500, "EUR", Decimal("162.47"), "JPY").amount == "2437"
    # round half up, not half even
    assert display_amount(1, "EUR", Decimal("0.5"), "USD").amount == "0.01"
    assert display_amount(5, "JPY", Decimal("0.1"), "EUR").amount == "0.50"
    assert display_amount(1, "EUR", Decimal("1"), "BHD").amount == "0.010"
    assert display_amount(-1500, "EUR", Decimal("1.0837"), "USD").amount == "-16.26"
    assert exponent("KWD") == 3


def test_display_rounds_the_exact_value_once() -> None:
    # 9007199254740983 x 20.523180756765 / 100 is exactly 1848563784172481.91499999999995:
    # rounded to 28 digits first, it would read .915 and show .92
    exact = display_amount(9007199254740983, "EUR", Decimal("20.523180756765"), "USD")
    assert exact.amount == "1848563784172481.91"
    # the largest amount at the largest rate, into a currency with three decimals
    top = display_amount(MAX_AMOUNT, "JPY", MAX_RATE, "KWD")
    assert top.amount == f"{MAX_AMOUNT * int(MAX_RATE)}.000"
    assert display_amount(-MAX_AMOUNT, "JPY", Decimal("999999999999"), "CHF").amount == (
        f"-{MAX_AMOUNT * 999999999999}.00"
    )


def _half_up(value: Fraction) -> int:
    """``value`` rounded to an integer, halves away from zero (the reference, by Fraction)."""
    magnitude = abs(value)
    rounded = int(magnitude + Fraction(1, 2))  # int() floors a non-negative Fraction
    return rounded if value >= 0 else -rounded


_REAL = sorted(set(EXPONENTS) - {PRACTICE_CURRENCY})


# rounded to 28 digits before the quantum, this one's .91499999999995 reads .915 (and shows .92)
@example(amount=9007199254740983, rate_units=20523180756765, source="EUR", shown="USD")
@example(amount=-9007199254740983, rate_units=20523180756765, source="EUR", shown="USD")
@given(
    amount=st.integers(-MAX_AMOUNT, MAX_AMOUNT),
    rate_units=st.integers(1, int(MAX_RATE * 10**RATE_DECIMALS)),
    source=st.sampled_from(_REAL),
    shown=st.sampled_from(_REAL),
)
def test_display_amounts_equal_exact_fraction_arithmetic(
    amount: int, rate_units: int, source: str, shown: str
) -> None:
    """Over every allowed amount and rate: the shown figure is the exact product rounded
    half up once to the display currency's decimals (docs/engine.md 6.5)."""
    rate = Decimal(rate_units).scaleb(-RATE_DECIMALS)
    e_s, e_d = EXPONENTS[source], EXPONENTS[shown]
    expected = _half_up(Fraction(amount) / 10**e_s * Fraction(rate) * 10**e_d)
    text = display_amount(amount, source, rate, shown).amount
    assert Fraction(Decimal(text)) * 10**e_d == expected
    assert len(text.partition(".")[2]) == e_d and "E" not in text.upper()


@pytest.mark.parametrize(
    "text",
    ["0", "0.000", "-1", "abc", "NaN", "Infinity", "", "1000000.01", "1e7", "0.0000000000001"],
)
def test_rates_must_be_positive_decimals_within_bounds(text: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        parse_rate(text)
    assert [e.field for e in refused.value.errors] == ["rate"]


def test_rates_at_the_bounds_are_accepted() -> None:
    assert parse_rate("1000000") == MAX_RATE
    assert parse_rate("0.000000000001") == Decimal(1).scaleb(-RATE_DECIMALS)


def test_entry_hash_covers_every_field_and_the_link() -> None:
    content = EntryContent(
        "ent_1",
        "txn_1",
        "house_fee:op_1:-:-:EUR",
        1,
        "EUR",
        25,
        25,
        "capture",
        datetime(2026, 11, 30, 21, 38, 20, 123456, tzinfo=UTC),
    )
    digest = entry_hash(GENESIS, content)
    assert digest == entry_hash(GENESIS, content)
    assert digest != entry_hash("1" * 64, content)
    for change in (
        {"amount": 26},
        {"balance_after": 24},
        {"entry_id": "ent_2"},
        {"account_version": 2},
        {"kind": "deposit"},
    ):
        changed = EntryContent(**{**content.__dict__, **change})
        assert entry_hash(GENESIS, changed) != digest


def test_a_fee_refund_moves_fees_from_the_house_back_to_each_player() -> None:
    journal = ledger.fee_refund("op_1", "EUR", {"ply_b": 100, "ply_a": 100})
    assert journal.kind.value == "fee_refund"
    assert [str(p) for p in journal.postings] == [
        "player_available:op_1:ply_a:-:EUR +100",
        "player_available:op_1:ply_b:-:EUR +100",
        "house_fee:op_1:-:-:EUR -200",
    ]
    with pytest.raises(LedgerInvariantBroken):
        ledger.fee_refund("op_1", "EUR", {"ply_a": 0})
