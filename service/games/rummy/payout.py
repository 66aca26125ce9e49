"""Basic Rummy for stakes (5.6-5.8, 11.5, 11.6.3, 11.7.3).

* Per hand (``rummy_per_hand``): each loser owes the winner its count (the values of the
  cards left in its hand) times the stake per point, twice that when the winner went rummy,
  and pays ``min(owed, its remaining table balance)``. A player that forfeited during the hand
  is counted as a loser with the cards it held.
* Target or number of deals (``rummy_target``, ``rummy_deals``): the net pay-the-winner points
  of the whole match are settled once, with the net-loss cap on the buy-ins.
* Penalty scoring: every pair settles the difference of its penalties to the lower one, then
  the net-loss cap applies.

The fee, when the table has one, is on each winner's net gain.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from itertools import combinations

from service.games.common.errors import SettlementError
from service.games.common.netting import (
    PairAmount,
    checked_int,
    checked_seats,
    settle_nets,
    settle_pairs,
)
from service.games.common.settings import FeeRule, Format
from service.games.common.statement import Statement
from service.games.rummy.formats import RUMMY_DEALS, RUMMY_PER_HAND, RUMMY_TARGET

BALANCE = "its remaining table balance"


def rummy_per_hand(
    winner: int,
    counts: Mapping[int, int],
    stake_per_point: int,
    balances: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    went_rummy: bool = False,
    forfeited: Collection[int] = (),
) -> Statement:
    """One hand of a per-hand table (5.6.2, 5.8.1, 11.5.1, 11.6.3).

    ``counts[s]`` is loser ``s``'s count (every seat dealt in but the winner, forfeiters
    included); ``balances`` each dealt-in seat's table balance before the hand.

    :raises SettlementError: when the counts do not name every loser, or the winner forfeited.
    """
    seats = checked_seats("balance", balances)
    owed = checked_seats("count", counts)
    checked_int("winner", winner)
    if winner not in seats or sorted(owed) != sorted(set(seats) - {winner}):
        raise SettlementError(
            f"counts {sorted(owed)!r} must name every seat of {sorted(seats)!r} but the winner"
        )
    if winner in forfeited:
        raise SettlementError(f"seat {winner} forfeited and cannot win the hand")
    margins = []
    for s in sorted(owed):
        reason = f"count {owed[s]} left in hand"
        if went_rummy:
            reason += ", doubled (the winner went rummy)"
        if s in forfeited:
            reason += "; forfeited, counted as a loser (11.6.3)"
        points = owed[s] * (2 if went_rummy else 1)
        margins.append(PairAmount(winner, s, points, "5.6.2", reason))
    return settle_pairs(
        margins,
        stake_per_point,
        seats,
        fee,
        format=RUMMY_PER_HAND,
        cap_rule="5.8.1",
        cap_name=BALANCE,
    )


def rummy_match(
    net_points: Mapping[int, int],
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    format: Format = RUMMY_TARGET,
) -> Statement:
    """A ``rummy_target`` or ``rummy_deals`` match (5.8.2, 11.5.2): each seat's cumulative net
    pay-the-winner points (zero-sum) times the stake per point, with the net-loss cap.

    :raises SettlementError: for another format, or points that are not zero-sum.
    """
    if format not in (RUMMY_TARGET, RUMMY_DEALS):
        raise SettlementError(f"a Rummy match is rummy_target or rummy_deals, not {format!r}")
    return settle_nets(net_points, stake_per_point, buyins, fee, format=format, rule="11.5.2")


def penalty_margins(penalties: Mapping[int, int]) -> tuple[PairAmount, ...]:
    """Every pair's amount under penalty scoring: the lower penalty receives the difference
    (11.5.3); equal penalties owe nothing."""
    pen = checked_seats("penalty", penalties)
    out = []
    for x, y in combinations(sorted(pen), 2):
        if pen[x] != pen[y]:
            lo, hi = (x, y) if pen[x] < pen[y] else (y, x)
            reason = f"penalties {pen[lo]} against {pen[hi]}"
            out.append(PairAmount(lo, hi, pen[hi] - pen[lo], "11.5.3", reason))
    return tuple(out)


def rummy_penalty(
    penalties: Mapping[int, int],
    stake_per_point: int,
    caps: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    format: Format = RUMMY_DEALS,
) -> Statement:
    """A penalty-scored match (5.7, 11.5.3): pair amounts, then the net-loss cap on ``caps``
    (buy-ins, or remaining table balances on a per-hand table, where each hand is settled as
    a one-deal match, 11.7.3)."""
    name = BALANCE if format is RUMMY_PER_HAND else "its buy-in"
    margins = penalty_margins(penalties)
    return settle_pairs(margins, stake_per_point, caps, fee, format=format, cap_name=name)


def needs_top_up(
    balances: Mapping[int, int], stake_per_point: int, min_balance: int | None = None
) -> tuple[int, ...]:
    """The seats that must top up before the next hand or sit it out (5.8.1, 11.5.1): a
    balance below ``min_balance`` (by default ten times the stake per point), or none left."""
    r = checked_int("stake per point", stake_per_point, 1)
    floor = r * 10 if min_balance is None else checked_int("min balance", min_balance)
    held = checked_seats("balance", balances)
    return tuple(s for s in sorted(held) if held[s] < floor or held[s] == 0)
