"""A knockout's draw from its seed, its rounds, and the places it gives."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.tournaments.bracket import SIZES, Knockout, draw
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


def test_only_a_field_of_four_to_thirty_two_in_powers_of_two_is_drawn() -> None:
    with pytest.raises(BracketError, match="not 6"):
        draw(SEED, PLAYERS[:6])


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
