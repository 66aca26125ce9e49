"""Statements: lines a person can read, a JSON form, and the checks every statement passes."""

from __future__ import annotations

import json

import pytest

from service.formats.payout import SettlementError
from service.formats.payout_multi import (
    HOUSE,
    TABLE,
    LineKind,
    MoneyFormat,
    MultiStatement,
    PairAmount,
    StatementLine,
    rummy_per_hand,
    split_equally,
    three_player_match_play,
)
from service.formats.settings import FeeBase, FeeRule


def statement(**changes: object) -> MultiStatement:
    fields: dict[str, object] = {
        "format": MoneyFormat.CLASSIC,
        "escrow": {0: 100, 1: 100},
        "raw_net": {0: 40, 1: -40},
        "net": {0: 36, 1: -40},
        "fees": {0: 4},
        "fee": 4,
        "fee_base_amount": 40,
        "stake_per_point": 1,
        "cap_applied": False,
        "receivers": (0,),
        "lines": (
            StatementLine(LineKind.PAYS, 1, 0, 40, "4.1.5", "totals"),
            StatementLine(LineKind.FEE, 0, HOUSE, 4, "11.4.3", "fee"),
        ),
    }
    fields.update(changes)
    return MultiStatement(**fields)  # type: ignore[arg-type]


def test_a_consistent_statement_is_accepted() -> None:
    s = statement()
    assert s.payouts == {0: 136, 1: 60} and s.seats == (0, 1)


@pytest.mark.parametrize(
    "changes",
    [
        {"net": {0: 40, 1: -40}},  # the fee comes from nowhere
        {"net": {0: 36}},  # a seat is missing
        {"escrow": {0: 100, 1: 30}},  # seat 1 would leave with less than nothing
        {"lines": (StatementLine(LineKind.PAYS, 1, 0, 40, "4.1.5", "totals"),)},  # no fee line
        {"fees": {0: 5}},  # the winners' fees exceed the fee
        {
            "lines": (
                StatementLine(LineKind.PAYS, 1, TABLE, 40, "4.1.5", "into the pot"),
                StatementLine(LineKind.FEE, TABLE, HOUSE, 4, "11.4.3", "fee"),
            )
        },  # seat 0 is never paid: the lines do not add up to the nets
    ],
)
def test_an_inconsistent_statement_is_refused(changes: dict[str, object]) -> None:
    with pytest.raises(SettlementError):
        statement(**changes)


def test_owes_lines_move_no_money() -> None:
    line = StatementLine(LineKind.OWES, 2, 0, 900, "4.1.5", "totals")
    assert line.effect() == {}
    assert StatementLine(LineKind.PAYS, 2, 0, 9, "4.1.5", "x").effect() == {2: -9, 0: 9}


def test_line_text_names_the_parties() -> None:
    line = StatementLine(LineKind.FEE, TABLE, HOUSE, 7, "6.1.3", "house fee")
    assert str(line) == "the table pays the house 7: house fee (6.1.3)"
    owes = StatementLine(LineKind.OWES, 2, 0, 900, "4.1.5", "final totals")
    assert owes.text({0: "P", 2: "R"}) == "R owes P 900: final totals (4.1.5)"
    assert owes.text({0: "P"}) == "seat 2 owes P 900: final totals (4.1.5)"


def test_statement_to_dict_is_json() -> None:
    s = rummy_per_hand(0, {1: 20, 2: 3}, 5, {0: 10, 1: 60, 2: 100}, FeeRule(1000, FeeBase.WINNINGS))
    data = json.loads(json.dumps(s.to_dict()))
    # 60 (capped) + 15 = 75 gained; the fee is 10% of it, 7.5 rounded down.
    assert data["net"] == {"0": 68, "1": -60, "2": -15}
    assert data["payouts"] == {"0": 78, "1": 0, "2": 85}
    assert data["fees"] == {"0": 7} and data["fee"] == 7 and data["cap_applied"] is True
    assert data["format"] == "rummy_per_hand"
    assert [line["kind"] for line in data["lines"]] == ["OWES", "OWES", "PAYS", "PAYS", "FEE"]
    assert data["lines"][2]["text"].startswith("seat 1 pays seat 0 60: net loss 100, capped")


def test_pot_statement_text_reads_line_by_line() -> None:
    s = three_player_match_play({0: 500, 1: 500, 2: 500}, 2, FeeRule(1000))
    assert s.text().splitlines() == [
        "seat 0 pays the table 500: its stake into the pot (11.4)",
        "seat 1 pays the table 500: its stake into the pot (11.4)",
        "seat 2 pays the table 500: its stake into the pot (11.4)",
        "the table pays the house 150: house fee, 1000 bps of the pot 1500, rounded down (6.1.3)",
        "the table pays seat 2 1350: won the game: the pot 1500 less the fee 150 (11.4)",
    ]


@pytest.mark.parametrize(
    "args", [(0, 0, 5, "x", "y"), (0, 1, -1, "x", "y"), (0, 1, 2.5, "x", "y"), (-1, 1, 5, "x", "y")]
)
def test_pair_margin_refuses_bad_values(args: tuple[object, ...]) -> None:
    with pytest.raises(SettlementError):
        PairAmount(*args)  # type: ignore[arg-type]


def test_split_equally_gives_odd_units_to_the_lowest_seats() -> None:
    assert split_equally(11, [3, 1, 2]) == {1: 4, 2: 4, 3: 3}
    assert split_equally(0, [0, 2]) == {0: 0, 2: 0}


def test_pair_amount_from_a_signed_margin() -> None:
    forward = PairAmount.signed((0, 2), 30, "4.1.5", "totals")
    backward = PairAmount.signed((0, 2), -30, "4.1.5", "totals")
    assert (forward.payer, forward.payee, forward.points) == (2, 0, 30)
    assert (backward.payer, backward.payee, backward.points) == (0, 2, 30)
