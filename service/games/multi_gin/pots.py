"""Match Play pots at three players and in partnership (11.4, 11.6.2, 11.7.4).

Every seat stakes the same amount; the pot less the house fee goes to the receivers: the game's
winner, the winning team's two members, or (after a forfeit) the side with the most hand
points without the forfeiter's side (hand points only: Match Play has no bonuses, 6.3.1).
Receivers share equally; odd minor units go one each to the lowest seats. The fee is on the
whole pot (``POT``) or on the pot less the receivers' own stakes (``WINNINGS``), rounded down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from service.games.common.errors import SettlementError
from service.games.common.netting import checked_int, checked_seats, split_equally
from service.games.common.settings import FeeBase, FeeRule
from service.games.common.statement import (
    HOUSE,
    TABLE,
    LineKind,
    MoneyFormat,
    MultiStatement,
    StatementLine,
)
from service.games.multi_gin.match import best_sides
from service.games.multi_gin.payout import PARTNERSHIP_TEAMS, THREE_PLAYER_SIDES


def match_play_pot(
    stakes: Mapping[int, int],
    receivers: Sequence[int],
    fee: FeeRule | None = None,
    *,
    rule: str = "11.4",
    why: str = "won the game",
) -> MultiStatement:
    """The pot less the fee, shared equally by ``receivers`` (odd units to the lower seats).

    :raises SettlementError: on unequal or missing stakes, or receivers not at the table.
    """
    escrow = checked_seats("stake", stakes, minimum=1)
    if len(escrow) < 2 or len(set(escrow.values())) != 1:
        raise SettlementError(f"every seat stakes the same amount, not {escrow!r}")
    chosen = sorted(set(receivers))
    if not chosen or len(chosen) != len(receivers) or any(s not in escrow for s in chosen):
        raise SettlementError(f"receivers {list(receivers)!r} must be distinct seated seats")
    fee = fee or FeeRule()
    pot = sum(escrow.values())
    base = pot if fee.base is FeeBase.POT else pot - sum(escrow[s] for s in chosen)
    charge = fee.fee_on(base)
    shares = split_equally(pot - charge, chosen)
    uncharged = split_equally(pot, chosen)
    lines = [
        StatementLine(LineKind.PAYS, s, TABLE, escrow[s], rule, "its stake into the pot")
        for s in sorted(escrow)
    ]
    if charge:
        what = "the pot" if fee.base is FeeBase.POT else "the pot less the receivers' stakes"
        reason = f"house fee, {fee.bps} bps of {what} {base}, rounded down"
        fee_rule = "6.1.3" if fee.base is FeeBase.POT else "11.7.4"
        lines.append(StatementLine(LineKind.FEE, TABLE, HOUSE, charge, fee_rule, reason))
    for s in chosen:
        reason = f"{why}: the pot {pot}" + (f" less the fee {charge}" if charge else "")
        if len(chosen) > 1:
            reason += f", shared by seats {', '.join(map(str, chosen))}"
            if shares[s] > shares[chosen[-1]]:
                reason += ", with an odd unit (lower seat)"
        lines.append(StatementLine(LineKind.PAYS, TABLE, s, shares[s], rule, reason))
    return MultiStatement(
        format=MoneyFormat.MATCH_PLAY,
        escrow=escrow,
        raw_net={s: uncharged.get(s, 0) - escrow[s] for s in escrow},
        net={s: shares.get(s, 0) - escrow[s] for s in escrow},
        fees={},
        fee=charge,
        fee_base_amount=base,
        stake_per_point=0,
        cap_applied=False,
        receivers=tuple(chosen),
        lines=tuple(lines),
    )


def match_play_forfeit(
    stakes: Mapping[int, int],
    forfeiter: int,
    hand_points: Sequence[int],
    fee: FeeRule | None = None,
    *,
    sides: Sequence[Sequence[int]] = THREE_PLAYER_SIDES,
) -> MultiStatement:
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
    return match_play_pot(stakes, receivers, fee, rule="11.6.2", why=why)


def three_player_match_play(
    stakes: Mapping[int, int], winner: int, fee: FeeRule | None = None
) -> MultiStatement:
    """Three-player Match Play (11.4): the game's winner receives the pot less the fee."""
    return match_play_pot(stakes, [winner], fee)


def partnership_match_play(
    stakes: Mapping[int, int], team: int, fee: FeeRule | None = None
) -> MultiStatement:
    """Partnership Match Play (11.4): the two members of the winning ``team`` (0: seats 0 and
    2, 1: seats 1 and 3) share the pot less the fee, an odd unit to the lower seat.

    :raises SettlementError: for a team other than 0 or 1, or a table not of seats 0 to 3.
    """
    if team not in (0, 1) or sorted(stakes) != [0, 1, 2, 3]:
        raise SettlementError(f"team {team!r} of a partnership table of seats 0 to 3")
    return match_play_pot(stakes, PARTNERSHIP_TEAMS[team], fee, why="its team won the game")
