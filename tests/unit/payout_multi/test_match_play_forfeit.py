"""A forfeited three-player Match Play pot goes by hand points, never by totals with boxes
(docs/multiplayer-money.md 11.6.2, docs/engine.md 6.3.1): Match Play computes no bonuses,
so a box bonus must not decide who is paid."""

from __future__ import annotations

import pytest

from service.games import statement
from service.games.common.settings import FeeRule, Format, GameKind, MatchSettings
from service.games.gin.ruleset import Ruleset
from service.games.multi_gin.match import HandSlot, TableRecord
from service.games.multi_gin.pots import match_play_forfeit
from service.games.multi_gin.three_player import Seating, ThreePlayerMatch, three_player_standings

#: 3 x 400 less a 5% fee on the pot = 1140.
STAKE, FEE = 400, FeeRule(500)

# (hand points, boxes, forfeiter, the payouts due)
VECTORS = [
    # Seat 0 forfeits. Seat 1 has more hand points (52 against 44); seat 2's extra box
    # would put it ahead on totals (44 + 2 boxes against 52 + 1 box).
    ((141, 52, 44), (5, 1, 2), 0, (0, 1140, 0)),
    # Equal hand points share the pot, whatever the boxes.
    ((0, 118, 118), (0, 5, 2), 0, (0, 570, 570)),
    # Seat 1 forfeits: seat 0 (50 hand points, one box) against seat 2 (45, four boxes).
    ((50, 10, 45), (1, 1, 4), 1, (1140, 0, 0)),
]


def _match(
    hand_points: tuple[int, ...], boxes: tuple[int, ...], forfeiter: int
) -> ThreePlayerMatch:
    """A three-player Match Play game that stands at ``hand_points`` and ``boxes`` (each
    seat's points won in ``boxes`` hands), then ``forfeiter`` resigns."""
    rules = Ruleset(target=500)  # high enough that nobody has reached it yet
    settings = MatchSettings(
        Format.MATCH_PLAY, stake=STAKE, fee=FEE, game=GameKind.GIN_THREE, seats=3, ruleset=rules
    )
    match = ThreePlayerMatch(settings, Seating(2, 1))
    number = 0
    for seat, (points, won) in enumerate(zip(hand_points, boxes, strict=True)):
        other = (seat + 1) % 3
        for i in range(won):
            number += 1
            share = points // won + (1 if i < points % won else 0)
            slot = HandSlot(number, (min(seat, other), max(seat, other)), other)
            match.records.append(TableRecord(slot, "knock", seat, share, seat))
    assert match.hand_points == hand_points and match.boxes == boxes
    match.forfeit(forfeiter)
    return match


@pytest.mark.parametrize(("hand_points", "boxes", "forfeiter", "due"), VECTORS)
def test_11_6_2_forfeited_match_play_pot_goes_by_hand_points(
    hand_points: tuple[int, ...],
    boxes: tuple[int, ...],
    forfeiter: int,
    due: tuple[int, ...],
) -> None:
    match = _match(hand_points, boxes, forfeiter)
    settled = statement(match, match.settings, [STAKE] * 3)
    assert settled.payouts == due
    assert settled.fee == 3 * STAKE - sum(due)
    assert settled.data["winners"] == [s for s in range(3) if due[s]]


@pytest.mark.parametrize(("hand_points", "boxes", "forfeiter", "due"), VECTORS)
def test_11_6_2_standings_name_the_pot_by_hand_points(
    hand_points: tuple[int, ...],
    boxes: tuple[int, ...],
    forfeiter: int,
    due: tuple[int, ...],
) -> None:
    s = three_player_standings(hand_points, boxes, Ruleset(), 500, forfeiter=forfeiter)
    assert s.pot_seats == tuple(seat for seat in range(3) if due[seat])


def test_11_6_2_a_tie_splits_with_the_odd_unit_to_the_lower_seat() -> None:
    s = match_play_forfeit({0: 25, 1: 25, 2: 25}, 2, (118, 118, 0))
    assert s.payouts == {0: 38, 1: 37, 2: 0}
