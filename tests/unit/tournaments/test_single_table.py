"""A single table's places from its match's final standing: winners, then the others by
their figure (ties shared), then the forfeiters, the later forfeit above the earlier."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.settings import MatchSettings
from service.games.multi_gin.partnership import PartnershipMatch
from service.games.multi_gin.three_player import Seating, ThreePlayerMatch
from service.tournaments.bracket import shuffle
from service.tournaments.errors import BracketError
from service.tournaments.payouts import award
from service.tournaments.single_table import MatchResult, SingleTable, match_result, places
from tests.unit.budget import examples


def result(scores: list[int], winners: list[int], forfeiters: list[int] = []) -> MatchResult:  # noqa: B006
    return MatchResult(tuple(scores), tuple(winners), frozenset(forfeiters))


def test_winners_first_then_the_others_by_figure_ties_shared() -> None:
    # Rummy of five: seat 3 won; seats 0 and 4 tie on 10; seat 1 has -30, seat 2 -50.
    ranked = places(result([10, -30, -50, 60, 10], [3]), [])
    assert ranked == [[3], [0, 4], [1], [2]]


def test_forfeiters_go_below_everyone_still_in_the_later_forfeit_higher() -> None:
    # Seat 2 forfeited first, then seat 0, though seat 2 kept the better figure.
    ranked = places(result([-40, 5, 30, 5], [1, 3], forfeiters=[0, 2]), [2, 0])
    assert ranked == [[1, 3], [0], [2]]
    # A forfeiter the log does not order counts as the earliest.
    assert places(result([0, 0, 0], [1], forfeiters=[0, 2]), [2]) == [[1], [2], [0]]


def test_a_single_table_maps_table_seats_to_entrants_and_pays_ties_to_the_cent() -> None:
    table = SingleTable((3, 1, 2))  # table seat 0 is entrant 3, ...
    assert table.standings() == [[1, 2, 3]] and not table.decided
    # Three-player Gin ended by table seat 1's forfeit before any hand: seats 0 and 2 share
    # the pot (equal hand points), the forfeiter is third.
    done = table.finish(result([0, 0, 0], [0, 2], forfeiters=[1]), [1])
    assert done.standings() == [[2, 3], [1]] and done.champions == (2, 3)
    assert SingleTable.from_dict(done.to_dict("mch_1")) == done
    # A pool of 3,003 at 7000/3000 pays 2,103 and 900; tied for 1-2, entrants 2 and 3 share
    # 3,003: the odd unit to the lower seat.
    prizes = {p.seat: p.amount for p in award(3_003, (7_000, 3_000), done.standings())}
    assert prizes == {1: 0, 2: 1_502, 3: 1_501}
    with pytest.raises(BracketError):
        table.finish(result([0, 0], [0]), [])


def test_three_player_and_partnership_gin_matches_are_ranked_by_their_standing() -> None:
    three = ThreePlayerMatch(
        MatchSettings.from_dict(
            {"game": "gin_three", "seats": 3, "format": "match_play", "stake": 1}
        ),
        Seating.drawn(lambda n: 0),
    )
    three.forfeit(2, "resign", at="2026-01-01T00:00:00Z")
    assert places(match_result(three), [2]) == [[0, 1], [2]]
    four = PartnershipMatch(
        MatchSettings.from_dict(
            {"game": "gin_partnership", "seats": 4, "format": "match_play", "stake": 1}
        ),
        0,
    )
    four.forfeit(1, "resign", at="2026-01-01T00:00:00Z")
    # The forfeiter's team loses: its partner (seat 3) is placed above it.
    assert places(match_result(four), [1]) == [[0, 2], [3], [1]]


@given(
    st.lists(st.integers(-50, 50), min_size=2, max_size=6),
    st.data(),
)
@examples(100)
def test_every_seat_is_placed_once_and_no_forfeiter_above_a_player_still_in(
    scores: list[int], data: st.DataObject
) -> None:
    seats = list(range(len(scores)))
    forfeiters = data.draw(st.lists(st.sampled_from(seats), unique=True, max_size=len(seats) - 1))
    still_in = [s for s in seats if s not in forfeiters]
    best = max(scores[s] for s in still_in)
    winners = [s for s in still_in if scores[s] == best]
    ranked = places(result(scores, winners, forfeiters), forfeiters)
    flat = [s for group in ranked for s in group]
    assert sorted(flat) == seats
    assert flat[: len(still_in)] == sorted(flat[: len(still_in)], key=lambda s: -scores[s])
    assert set(flat[len(still_in) :]) == set(forfeiters)


def test_the_seating_is_the_seeds_shuffle_of_the_field() -> None:
    seed, players = "0f" * 32, ["ply_a", "ply_b", "ply_c"]
    seating = shuffle(seed, players)
    assert sorted(seating) == [1, 2, 3] and seating == shuffle(seed, players)
