"""The prize pool's split: payout tables, prizes to the minor unit, ties and refunds."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.tournaments.errors import PayoutTableError, TournamentError
from service.tournaments.payouts import (
    BASIS_POINTS,
    DEFAULT_TABLE,
    Band,
    PayoutTable,
    award,
    full_refunds,
    place_prizes,
)
from tests.unit.budget import examples

EXAMPLE = "2-5: 10000; 6-9: 6500/3500; 10-18: 5000/3000/2000"


def test_a_table_reads_and_prints_its_text_form() -> None:
    table = PayoutTable.parse(EXAMPLE)
    assert str(table) == EXAMPLE
    assert PayoutTable.parse(str(table)) == table
    assert table.band_for(2).shares == (10_000,)
    assert table.band_for(9).shares == (6500, 3500)
    assert table.band_for(18).shares == (5000, 3000, 2000)
    assert table.covers(2, 18) and not table.covers(2, 19)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("6-9: 6500/3000", "sum to 9500"),
        ("6-9: 3500/6500", "paid more than the one above"),
        ("2-5: 5000/3000/1000/500/300/200", "pays 6 places with as few as 2"),
        ("5-2: 10000", "low to high"),
        ("1-5: 10000", "from 2 up"),
        ("6-9: 10000/0", "positive"),
        ("2-5 10000", "reads like"),
        ("2-5: 10000; 5-9: 6500/3500", "overlap"),
        ("", "at least one band"),
    ],
)
def test_a_table_that_cannot_pay_is_refused_with_its_reason(text: str, complaint: str) -> None:
    with pytest.raises(PayoutTableError, match=complaint):
        PayoutTable.parse(text)


def test_a_field_no_band_covers_is_refused() -> None:
    with pytest.raises(PayoutTableError, match="pays 19 entrants"):
        PayoutTable.parse(EXAMPLE).band_for(19)


def test_the_default_table_pays_every_knockout_and_single_table_field() -> None:
    assert DEFAULT_TABLE.covers(2, 32)


def test_rounding_leaves_its_units_to_the_best_places() -> None:
    # 1001 x 65% = 650.65 and 1001 x 35% = 350.35: 650 + 350, one unit left, to first place.
    assert place_prizes(1001, (6500, 3500)) == (651, 350)
    # 100 x 1/3 three times: 33.33 each, the two units left to first and second.
    assert place_prizes(100, (3334, 3333, 3333)) == (34, 33, 33)
    assert place_prizes(0, (5000, 3000, 2000)) == (0, 0, 0)


def test_tied_places_share_their_prizes_and_odd_units_go_to_the_lowest_seats() -> None:
    # 8 entrants at 1,000 each: places 1 and 2 paid 6,500 and 3,500.
    prizes = award(8000, (6500, 3500), [[7], [3, 5], [1, 2, 4, 6, 8]])
    assert {p.seat: p.amount for p in prizes} == {7: 5200, 3: 1400, 5: 1400} | {
        s: 0 for s in (1, 2, 4, 6, 8)
    }
    # 6,536 / 1,868 / 933 (two units left over, to places 1 and 2); places 2-3 are worth
    # 2,801 together, shared by two: 1,401 to seat 2 (the lower), 1,400 to seat 9.
    tied = award(9337, (7000, 2000, 1000), [[4], [9, 2], [1]])
    shared = {p.seat: p for p in tied}
    assert (shared[2].amount, shared[9].amount) == (1401, 1400)
    assert shared[2].rule.startswith("places 2-3 shared by 2 tied entrants")
    assert shared[4].rule == "place 1"


def test_an_entrant_placed_twice_is_refused() -> None:
    with pytest.raises(TournamentError, match="placed twice"):
        award(100, (10_000,), [[1], [1, 2]])


def test_a_cancellation_before_any_match_refunds_every_entry_whole() -> None:
    assert full_refunds({2: 1100, 1: 1100}) == {1: 1100, 2: 1100}


@st.composite
def shares(draw: st.DrawFn) -> tuple[int, ...]:
    """Shares of 10,000 basis points, never more for a worse place."""
    places = draw(st.integers(1, 6))
    cuts = sorted(
        draw(
            st.lists(
                st.integers(1, BASIS_POINTS - 1),
                min_size=places - 1,
                max_size=places - 1,
                unique=True,
            )
        )
    )
    parts = [b - a for a, b in zip([0, *cuts], [*cuts, BASIS_POINTS], strict=True)]
    return tuple(sorted(parts, reverse=True))


@st.composite
def standings(draw: st.DrawFn) -> list[list[int]]:
    seats = draw(st.permutations(range(1, draw(st.integers(2, 32)) + 1)))
    groups, start = [], 0
    while start < len(seats):
        size = draw(st.integers(1, len(seats) - start))
        groups.append(list(seats[start : start + size]))
        start += size
    return groups


@examples(400)
@given(pool=st.integers(0, 10**15), paid=shares(), placed=standings())
def test_prizes_sum_to_the_pool_and_ties_differ_by_one_unit_at_most(
    pool: int, paid: tuple[int, ...], placed: list[list[int]]
) -> None:
    band = Band.of(max(2, len(paid)), 64, paid)  # every generated share list is a valid band
    prizes = award(pool, band.shares, placed)
    amounts = {p.seat: p.amount for p in prizes}
    entrants = sum(len(group) for group in placed)
    assert sorted(amounts) == list(range(1, entrants + 1))
    assert all(amount >= 0 for amount in amounts.values())
    paid_places = min(len(paid), entrants)
    assert sum(amounts.values()) == sum(place_prizes(pool, paid)[:paid_places])
    if entrants >= len(paid):
        assert sum(amounts.values()) == pool
    for group in placed:
        in_group = sorted(group)
        got = [amounts[s] for s in in_group]
        assert max(got) - min(got) <= 1
        assert got == sorted(got, reverse=True)  # the odd units to the lowest seats
    for better, worse in itertools.pairwise(placed):  # within one unit at most
        assert max(amounts[s] for s in worse) <= min(amounts[s] for s in better) + 1
