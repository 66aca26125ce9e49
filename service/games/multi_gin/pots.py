"""Match Play pots at three players and in partnership (11.4, 11.6.2, 11.7.4).

Every seat stakes the same amount; the pot less the house fee goes to the receivers
(:func:`~service.games.common.netting.share_pot`): the game's winner, the winning team's two
members, or (after a forfeit) the side with the most hand points without the forfeiter's side
(hand points only: Match Play has no bonuses, 6.3.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from service.games.common.errors import SettlementError
from service.games.common.netting import checked_int, share_pot
from service.games.common.settings import FeeRule
from service.games.common.statement import Statement
from service.games.gin.formats import MATCH_PLAY
from service.games.multi_gin.match import best_sides
from service.games.multi_gin.payout import PARTNERSHIP_TEAMS, THREE_PLAYER_SIDES


def match_play_forfeit(
    stakes: Mapping[int, int],
    forfeiter: int,
    hand_points: Sequence[int],
    fee: FeeRule | None = None,
    *,
    sides: Sequence[Sequence[int]] = THREE_PLAYER_SIDES,
) -> Statement:
    """A forfeit in three-player or partnership Match Play (11.6.2): the pot less the fee goes
    to the side with the most hand points, the forfeiter's side excluded; tied sides share it
    (odd units to the lower seats).

    ``hand_points[i]`` is side ``i``'s hand points at the moment of the forfeit (a player's in
    three-player Gin, a team's in partnership: pass ``sides=PARTNERSHIP_TEAMS``). Hand points
    only: Match Play computes no bonuses, boxes included (6.3.1), so a box never decides it.

    :raises SettlementError: when the sides do not match the stakes or the forfeiter is unseated.
    """
    seated = sorted(s for side in sides for s in side)
    if seated != sorted(stakes) or len(hand_points) != len(sides):
        raise SettlementError(
            f"sides {sides!r} and hand points {hand_points!r} must cover the table"
        )
    checked_int("forfeiter", forfeiter)
    if forfeiter not in stakes:
        raise SettlementError(f"forfeiter {forfeiter!r} is not seated")
    points = [checked_int("hand points", h) for h in hand_points]
    excluded = next(i for i, side in enumerate(sides) if forfeiter in side)
    best = best_sides(points, excluded)
    receivers = sorted(s for i in best for s in sides[i])
    why = (
        f"most hand points {points[best[0]]} at the forfeit of seat {forfeiter}, its side excluded"
    )
    return share_pot(stakes, receivers, fee, format=MATCH_PLAY, rule="11.6.2", why=why)


def three_player_match_play(
    stakes: Mapping[int, int], winner: int, fee: FeeRule | None = None
) -> Statement:
    """Three-player Match Play (11.4): the game's winner receives the pot less the fee."""
    return share_pot(stakes, [winner], fee, format=MATCH_PLAY, rule="11.4", why="won the game")


def partnership_match_play(
    stakes: Mapping[int, int], team: int, fee: FeeRule | None = None
) -> Statement:
    """Partnership Match Play (11.4): the two members of the winning ``team`` (0: seats 0 and
    2, 1: seats 1 and 3) share the pot less the fee, an odd unit to the lower seat.

    :raises SettlementError: for a team other than 0 or 1, or a table not of seats 0 to 3.
    """
    if team not in (0, 1) or sorted(stakes) != [0, 1, 2, 3]:
        raise SettlementError(f"team {team!r} of a partnership table of seats 0 to 3")
    return share_pot(
        stakes,
        PARTNERSHIP_TEAMS[team],
        fee,
        format=MATCH_PLAY,
        rule="11.4",
        why="its team won the game",
    )
