"""Statements: lines a person can read, a JSON form, and the checks every statement passes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.errors import SettlementError
from service.games.common.netting import PairAmount, split_equally
from service.games.common.settings import FeeBase, FeeRule, Format
from service.games.common.statement import (
    HOUSE,
    TABLE,
    LineKind,
    Statement,
    StatementLine,
    renamed_statement,
)
from service.games.multi_gin.pots import three_player_match_play
from service.games.rummy.payout import rummy_penalty, rummy_per_hand


def statement(**changes: object) -> Statement:
    fields: dict[str, object] = {
        "format": Format.CLASSIC,
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
    return Statement(**fields)  # type: ignore[arg-type]


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


@pytest.mark.parametrize(
    "line",
    [
        StatementLine(LineKind.PAYS, 1, 0, 40, "4.1.5", "totals"),
        StatementLine(LineKind.OWES, 2, TABLE, 900, "5.8.2", "net -90 points x 10"),
        StatementLine(LineKind.FEE, TABLE, HOUSE, 7, "6.1.3", "house fee"),
    ],
)
def test_a_line_round_trips_through_its_dict(line: StatementLine) -> None:
    data = json.loads(json.dumps(line.to_dict()))
    assert StatementLine.from_dict(data) == line
    assert StatementLine.from_dict(data | {"text": "anything"}).to_dict() == data


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "GIVES", "payer": 1, "payee": 0, "amount": 4, "rule": "r", "reason": "x"},
        {"kind": "PAYS", "payer": "pot", "payee": 0, "amount": 4, "rule": "r", "reason": "x"},
        {"kind": "PAYS", "payer": 1, "payee": 0, "amount": "four", "rule": "r", "reason": "x"},
        {"kind": "PAYS", "payer": 1, "payee": 0, "rule": "r", "reason": "x"},
    ],
)
def test_what_is_not_a_line_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(SettlementError, match="not a statement line"):
        StatementLine.from_dict(data)


def test_a_renamed_line_names_its_new_seats_in_its_text() -> None:
    line = StatementLine(LineKind.PAYS, 0, 2, 66, "5.6.2", "count 33 left in hand")
    assert line.renamed([0, 2, 3]).text() == "seat 0 pays seat 3 66: count 33 left in hand (5.6.2)"
    fee = StatementLine(LineKind.FEE, 2, HOUSE, 3, "11.4.3", "house fee")
    assert fee.renamed([0, 2, 3]) == StatementLine(LineKind.FEE, 3, HOUSE, 3, "11.4.3", "house fee")


@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=4, unique=True).map(sorted),
    st.data(),
    st.integers(1, 10),
    st.booleans(),
    st.integers(0, 2000),
)
def test_a_per_hand_statement_renamed_is_the_one_built_at_those_seats(
    names: list[int], data: st.DataObject, r: int, went_rummy: bool, bps: int
) -> None:
    """A per-hand Rummy statement of places 0 .. k-1 renamed to table seats (in the same
    order) is the statement built at those seats, figure for figure and line for line: its
    reasons name no seat, so renaming its fields and writing its text again loses nothing."""
    places = range(len(names))
    winner = data.draw(st.sampled_from(places))
    counts = {p: data.draw(st.integers(0, 120)) for p in places if p != winner}
    balances = {p: data.draw(st.integers(0, 600)) for p in places}
    forfeited = data.draw(st.sets(st.sampled_from(sorted(counts))) if counts else st.just(set()))
    fee = FeeRule(bps, FeeBase.WINNINGS)
    built = rummy_per_hand(
        winner, counts, r, balances, fee, went_rummy=went_rummy, forfeited=forfeited
    )
    at_seats = rummy_per_hand(
        names[winner],
        {names[p]: c for p, c in counts.items()},
        r,
        {names[p]: b for p, b in balances.items()},
        fee,
        went_rummy=went_rummy,
        forfeited={names[p] for p in forfeited},
    )
    renamed = renamed_statement(json.loads(json.dumps(built.to_dict())), names)
    assert renamed == json.loads(json.dumps(at_seats.to_dict()))


@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=4, unique=True).map(sorted),
    st.data(),
    st.integers(1, 10),
    st.integers(0, 2000),
)
def test_a_penalty_statement_renamed_is_the_one_built_at_those_seats(
    names: list[int], data: st.DataObject, r: int, bps: int
) -> None:
    """The same for a per-hand table's penalty-scored (or void) hand."""
    penalties = [data.draw(st.integers(0, 150)) for _ in names]
    caps = [data.draw(st.integers(0, 600)) for _ in names]
    fee = FeeRule(bps, FeeBase.WINNINGS)
    per_hand = Format.RUMMY_PER_HAND
    built = rummy_penalty(
        dict(enumerate(penalties)), r, dict(enumerate(caps)), fee, format=per_hand
    )
    at_seats = rummy_penalty(
        dict(zip(names, penalties, strict=True)),
        r,
        dict(zip(names, caps, strict=True)),
        fee,
        format=per_hand,
    )
    renamed = renamed_statement(json.loads(json.dumps(built.to_dict())), names)
    assert renamed == json.loads(json.dumps(at_seats.to_dict()))


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
