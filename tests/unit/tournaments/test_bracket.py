"""A knockout's draw from its seed, its rounds, and the places it gives."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.tournaments.bracket import SIZES, Knockout, bracket_size, bye_matches, draw
from service.tournaments.errors import BracketError
from service.tournaments.payouts import award
from tests.unit.budget import examples

SEED = "0f" * 32
PLAYERS = [f"ply_{n:02d}" for n in range(1, 9)]


def recomputed(seed: str, players: list[str]) -> list[int]:
    """The documented draw, written out from its description: HMAC-SHA256 blocks keyed by the
    seed's bytes over "id1:...:idN:0:counter", one byte at a time; Fisher-Yates over seats
    1..N from the last position down, a byte b drawn for position i used when
    b < 256 - 256 % (i + 1), as j = b % (i + 1)."""

    def stream():  # type: ignore[no-untyped-def]
        counter = 0
        while True:
            message = ":".join(players) + f":0:{counter}"
            yield from hmac.new(bytes.fromhex(seed), message.encode(), hashlib.sha256).digest()
            counter += 1

    order, source = list(range(1, len(players) + 1)), stream()
    for i in range(len(order) - 1, 0, -1):
        b = next(source)
        while b >= 256 - 256 % (i + 1):
            b = next(source)
        j = b % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def test_the_draw_is_the_published_algorithm_over_the_seed_and_the_entrants() -> None:
    order = draw(SEED, PLAYERS)
    assert list(order) == recomputed(SEED, PLAYERS)
    assert sorted(order) == list(range(1, 9))
    assert draw("10" * 32, PLAYERS) != order  # another seed, another bracket
    assert draw(SEED, [*PLAYERS[1:], PLAYERS[0]]) != order  # the entrants are in the stream


def test_only_a_field_of_two_to_thirty_two_is_drawn() -> None:
    with pytest.raises(BracketError, match="not 1"):
        draw(SEED, PLAYERS[:1])
    with pytest.raises(BracketError, match="not 33"):
        draw(SEED, [f"ply_{n:02d}" for n in range(33)])
    with pytest.raises(BracketError, match="distinct"):
        Knockout.start([1, 2, 2])


def test_the_byes_spread_over_the_halves_then_the_quarters() -> None:
    assert bye_matches(8, 7) == (1, 5, 3, 7, 2, 6, 4)
    assert bye_matches(4, 2) == (1, 3)
    assert bye_matches(2, 0) == ()
    assert [bracket_size(n) for n in (2, 3, 4, 5, 8, 9, 17, 32)] == [2, 4, 4, 8, 8, 16, 32, 32]
    with pytest.raises(BracketError):
        bye_matches(4, 4)  # a match of two byes


def test_the_documented_worked_example_of_six_entrants_in_a_bracket_of_eight() -> None:
    """docs/tournaments.md, "Byes": six entrants drawn by the seed, two byes."""
    order = draw(SEED, PLAYERS[:6])
    assert list(order) == recomputed(SEED, PLAYERS[:6]) == [5, 2, 4, 1, 6, 3]
    bracket = Knockout.start(order)
    assert [(p.first, p.second) for p in bracket.rounds[0]] == [
        (5, None),
        (4, 1),
        (2, None),
        (6, 3),
    ]
    assert bracket.byes == (5, 2) and not bracket.decided
    bracket = bracket.record(1, 2, 1).record(1, 4, 3)
    assert [(p.first, p.second) for p in bracket.rounds[1]] == [(5, 1), (2, 3)]
    bracket = bracket.record(2, 1, 5).record(2, 2, 3).record(3, 1, 3)
    # 3 first, 5 second, 1 and 2 share 3-4, the round-1 losers 4 and 6 share 5-6
    assert bracket.standings() == [[3], [5], [1, 2], [4, 6]]
    with pytest.raises(BracketError, match="is a bye"):
        Knockout.start(order).record(1, 1, 5)


@examples(200)
@given(field=st.integers(2, 32), data=st.data())
def test_a_short_field_is_a_bracket_with_byes_played_out_to_every_place(
    field: int, data: st.DataObject
) -> None:
    order = data.draw(st.permutations(range(1, field + 1)))
    bracket = Knockout.start(order)
    size = bracket_size(field)
    first = bracket.rounds[0]
    assert bracket.size == size and len(first) == size // 2
    # every entrant in exactly one first-round pairing; the byes are the draw's first seats
    assert sorted(s for p in first for s in (p.first, p.second) if s is not None) == sorted(order)
    assert sorted(bracket.byes) == sorted(order[: size - field])
    assert all(p.first is not None for p in first)  # no bye meets a bye
    assert all(p.winner == p.first for p in first if p.bye)
    assert Knockout.from_dict(bracket.to_dict()) == bracket
    played: dict[int, int] = {}
    while not bracket.finished:
        assert not bracket.decided or played
        groups = bracket.standings()
        assert sorted(s for g in groups for s in g) == sorted(order)
        open_matches = [n for n, p in enumerate(bracket.rounds[-1], 1) if p.winner is None]
        match = data.draw(st.sampled_from(open_matches))
        pairing = bracket.rounds[-1][match - 1]
        assert pairing.second is not None  # only real matches are ever played
        if bracket.current == 1:
            for seat in (pairing.first, pairing.second):
                played[seat] = played.get(seat, 0) + 1
        winner = data.draw(st.sampled_from((pairing.first, pairing.second)))
        bracket = bracket.record(bracket.current, match, winner)
    # a bye's entrant plays no first-round match, every other entrant exactly one
    assert {s: played.get(s, 0) for s in order} == {s: 0 if s in bracket.byes else 1 for s in order}
    sizes = [len(group) for group in bracket.standings()]
    assert sum(sizes) == field and sizes[:2] == [1, 1]
    assert bracket.round_count == size.bit_length() - 1


@examples(50)
@given(field=st.integers(2, 32), seed=st.binary(min_size=32, max_size=32))
def test_the_bracket_with_byes_is_reproduced_from_the_seed(field: int, seed: bytes) -> None:
    players = [f"ply_{n:02d}" for n in range(1, field + 1)]
    order = draw(seed.hex(), players)
    assert list(order) == recomputed(seed.hex(), players)
    assert Knockout.start(draw(seed.hex(), players)) == Knockout.start(order)


def test_winners_advance_and_the_places_follow_the_round_lost_in() -> None:
    bracket = Knockout.start([5, 2, 7, 1, 3, 8, 6, 4])
    assert [(p.first, p.second) for p in bracket.rounds[0]] == [(5, 2), (7, 1), (3, 8), (6, 4)]
    for match, winner in enumerate((2, 7, 8, 6), 1):
        bracket = bracket.record(1, match, winner)
    assert [(p.first, p.second) for p in bracket.rounds[1]] == [(2, 7), (8, 6)]
    bracket = bracket.record(2, 2, 6)
    # mid-round: 6 reached the final, 2 and 7 still play their semi-final, four are out
    assert bracket.standings() == [[6], [2, 7], [8], [1, 3, 4, 5]]
    bracket = bracket.record(2, 1, 7).record(3, 1, 6)
    assert bracket.finished and bracket.champion == 6
    assert bracket.standings() == [[6], [7], [2, 8], [1, 3, 4, 5]]
    assert Knockout.from_dict(bracket.to_dict()) == bracket
    # 8 entrants of 1,250: 65% and 35% of 10,000, nothing for the semi-finals' losers
    paid = {p.seat: p.amount for p in award(10_000, (6500, 3500), bracket.standings())}
    assert (paid[6], paid[7], paid[2], paid[8]) == (6500, 3500, 0, 0)


@pytest.mark.parametrize(
    ("round_no", "match_no", "winner", "complaint"),
    [(2, 1, 5, "not being played"), (1, 5, 5, "not being played"), (1, 1, 7, "does not play")],
)
def test_a_result_for_another_match_is_refused(
    round_no: int, match_no: int, winner: int, complaint: str
) -> None:
    with pytest.raises(BracketError, match=complaint):
        Knockout.start([5, 2, 7, 1]).record(round_no, match_no, winner)


def test_a_match_is_won_once() -> None:
    with pytest.raises(BracketError, match="already won"):
        Knockout.start([5, 2, 7, 1]).record(1, 1, 5).record(1, 1, 2)


@examples(200)
@given(size=st.sampled_from(SIZES), data=st.data())
def test_every_knockout_played_out_places_every_entrant_once(
    size: int, data: st.DataObject
) -> None:
    bracket = Knockout.start(data.draw(st.permutations(range(1, size + 1))))
    while not bracket.finished:
        groups = bracket.standings()
        assert sorted(s for g in groups for s in g) == list(range(1, size + 1))
        open_matches = [n for n, p in enumerate(bracket.rounds[-1], 1) if p.winner is None]
        match = data.draw(st.sampled_from(open_matches))
        pairing = bracket.rounds[-1][match - 1]
        bracket = bracket.record(
            bracket.current, match, data.draw(st.sampled_from((pairing.first, pairing.second)))
        )
    sizes = [len(group) for group in bracket.standings()]
    assert sizes == [1, 1, *(2**r for r in range(1, bracket.round_count))]


def test_a_knockout_cancelled_mid_round_pays_the_places_by_current_standing() -> None:
    """docs/tournaments.md's worked example: 16 entrants, a pool of 16,000 under
    5000/3000/2000, cancelled while four quarter-finals are still being played."""
    bracket = Knockout.start(list(range(1, 17)))
    for match, winner in enumerate((1, 3, 5, 7, 9, 11, 13, 15), 1):
        bracket = bracket.record(1, match, winner)
    bracket = bracket.record(2, 1, 1).record(2, 2, 5)
    paid = {p.seat: p.amount for p in award(16_000, (5000, 3000, 2000), bracket.standings())}
    assert {seat: amount for seat, amount in paid.items() if amount} == {
        1: 6400,
        5: 6400,
        9: 800,
        11: 800,
        13: 800,
        15: 800,
    }
    assert sum(paid.values()) == 16_000
