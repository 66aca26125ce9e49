"""Payout maths: a finished match and its table settings in, a settlement statement out
(docs/engine.md 3.1-3.2, 6.1-6.4, 9.4). Pure integer arithmetic in minor units.

The statement is every game's :class:`~service.games.common.statement.Statement`, built by the
same settlement steps as the other games' (:mod:`service.games.common.netting`): a pot shared by
its winner, or a pair amount in points with the cap and the fee. So it satisfies
``sum(payouts) + fee == sum(escrow)`` (6.1.3), no payout is negative (a player never loses
more than they escrowed), and its lines move exactly its nets and fee. ``payouts[s]`` is what
leaves escrow for seat ``s`` (stake returned plus winnings); ``net[s] = payouts[s] - escrow[s]``.
Its ``figures`` are the scoring behind the money: the hands, hand points, boxes, bonuses,
final totals, margin, raw amount, the transfer and the cap, the winner, the forfeiter and
whether the match was void.

* First To Knock and Match Play (6.2, 6.3): the winner receives the pot minus the fee.
  First To Knock's winner is the first legal knocker (``FIRST_KNOCKER``) or the hand's winner
  (``HAND_WINNER``); a match voided by too many dead hands refunds both stakes, no fee.
* Money Play and classic for stakes (6.4, 3.2.6): final totals with the end-of-game bonuses,
  the winner by totals, ``raw = margin x stake_per_point``, capped by the buy-ins
  (``MIN_BOTH`` or ``LOSER_ONLY``); the fee is taken from the transfer.
* Forfeits (9.4): FTK and Match Play pay the opponent as winner; Money Play and classic are
  scored as if the opponent had reached the target at that moment, never in the forfeiter's
  favour.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from service.games.common.errors import SettlementError
from service.games.common.netting import PairAmount, settle_pairs, share_pot
from service.games.common.settings import CapMode, MatchSettings
from service.games.common.statement import Statement
from service.games.gin.formats import FIRST_TO_KNOCK, MONEY_PLAY
from service.games.gin.game import final_totals
from service.games.gin.match import HandRecord, Match, ftk_winner
from service.games.gin.ruleset import ShutoutMode
from service.games.protocol import MatchStatus


def _points_and_boxes(hands: Sequence[HandRecord]) -> tuple[tuple[int, int], tuple[int, int]]:
    h = [0, 0]
    b = [0, 0]
    for r in hands:
        if r.winner is not None:
            h[r.winner] += r.points
            b[r.winner] += 1
    return (h[0], h[1]), (b[0], b[1])


def settle_match(match: Match, escrow: tuple[int, int]) -> Statement:
    """The statement of a finished (or void) match given what each seat escrowed.

    :raises SettlementError: when the match is still being played or the escrow is wrong.
    """
    if not match.over:
        raise SettlementError(f"match is {match.status.value}, not finished")
    return settle(
        match.settings,
        tuple(match.records),
        escrow,
        forfeiter=match.forfeiter,
        void=match.status is MatchStatus.VOID,
    )


def settle(
    settings: MatchSettings,
    hands: Sequence[HandRecord],
    escrow: tuple[int, int],
    *,
    forfeiter: int | None = None,
    void: bool = False,
) -> Statement:
    """The settlement statement; see the module docstring.

    :raises SettlementError: on escrow that the settings do not allow, or a match that
        has no result.
    """
    hands = tuple(hands)
    if len(escrow) != 2 or any(
        not isinstance(e, int) or isinstance(e, bool) or e < 0 for e in escrow
    ):
        raise SettlementError(f"escrow must be two non-negative integers, not {escrow!r}")
    escrow = (escrow[0], escrow[1])
    if forfeiter not in (0, 1, None):
        raise SettlementError(f"forfeiter must be seat 0 or 1, not {forfeiter!r}")
    h, b = _points_and_boxes(hands)
    figures: dict[str, Any] = {
        "winner": None,
        "void": void,
        "forfeiter": forfeiter,
        "hands": [r.to_dict() for r in hands],
        "hand_points": list(h),
        "boxes": list(b),
        "bonuses": {},
        "final_totals": None,
        "margin": 0,
        "raw_amount": 0,
        "transfer": 0,
        "cap": None,
    }
    if void:
        return replace(Statement.refund(settings.format, dict(enumerate(escrow))), figures=figures)
    if settings.uses_buyins:
        return _settle_points(settings, hands, escrow, figures)
    return _settle_pot(settings, hands, escrow, figures)


def _settle_pot(
    settings: MatchSettings,
    hands: tuple[HandRecord, ...],
    escrow: tuple[int, int],
    figures: dict[str, Any],
) -> Statement:
    forfeiter, h = figures["forfeiter"], figures["hand_points"]
    if escrow[0] != escrow[1] or escrow[0] != settings.stake:
        raise SettlementError(f"both seats escrow the stake {settings.stake}, not {escrow}")
    if forfeiter is not None:
        winner, rule, why = 1 - forfeiter, "9.4", f"seat {forfeiter} forfeited"
    elif settings.format is FIRST_TO_KNOCK:
        ftk = ftk_winner(settings, hands)
        if ftk is None:
            raise SettlementError("First To Knock match without a decided hand")
        winner, rule, why = ftk, "6.2", f"won First To Knock ({settings.ftk_winner_rule.value})"
    else:
        reachers = [s for s in (0, 1) if h[s] >= settings.target]
        if len(reachers) != 1:
            raise SettlementError(f"Match Play without a single target reacher: {h}")
        winner, rule = reachers[0], "6.3"
        why = f"reached the target {settings.target} with {h[winner]} hand points"
    statement = share_pot(
        dict(enumerate(escrow)), [winner], settings.fee, format=settings.format, rule=rule, why=why
    )
    figures |= {"winner": winner, "transfer": statement.net[winner]}
    return replace(statement, figures=figures)


def pair_cap(mode: CapMode, winner_buyin: int, loser_buyin: int) -> int:
    """The most a loser pays its one opponent (6.4.7, and each money pair of partnership Gin,
    11.2.3): the smaller buy-in under ``MIN_BOTH``, the loser's own under ``LOSER_ONLY``."""
    return min(winner_buyin, loser_buyin) if mode is CapMode.MIN_BOTH else loser_buyin


def _settle_points(
    settings: MatchSettings,
    hands: tuple[HandRecord, ...],
    escrow: tuple[int, int],
    figures: dict[str, Any],
) -> Statement:
    forfeiter, h, b = figures["forfeiter"], figures["hand_points"], figures["boxes"]
    if any(e < 1 for e in escrow):
        raise SettlementError(f"both seats need a buy-in in escrow, not {escrow}")
    if forfeiter is not None:
        reacher = 1 - forfeiter
    else:
        reachers = [s for s in (0, 1) if h[s] >= settings.target]
        if len(reachers) != 1:
            raise SettlementError(f"game without a single target reacher: {h}")
        reacher = reachers[0]
    if settings.format is MONEY_PLAY:
        totals = final_totals(
            h,
            b,
            reacher,
            box_bonus=settings.line_bonus,
            game_bonus=settings.target,
            shutout_bonus=settings.target,
            shutout_mode=ShutoutMode.BONUS,
        )
        names = ("line_bonus", "target_bonus", "zero_point_bonus")
    else:
        r = settings.ruleset
        totals = final_totals(
            h,
            b,
            reacher,
            box_bonus=r.box_bonus,
            game_bonus=r.game_bonus,
            shutout_bonus=r.shutout_bonus,
            shutout_mode=r.shutout_mode,
        )
        names = ("box_bonus", "game_bonus", "shutout_bonus")
    bonuses = dict(
        zip(names, (totals.box_bonus, totals.game_bonus, totals.shutout_bonus), strict=True)
    )
    if any(totals.doubled_hand_points):
        bonuses["doubled_hand_points"] = totals.doubled_hand_points
    winner = totals.winner
    margin = totals.margin
    if forfeiter is not None and winner == forfeiter:
        winner, margin = None, 0  # 9.4: never in the forfeiter's favour
    rate = settings.stake_per_point
    raw = margin * rate
    figures |= {
        "bonuses": {name: list(both) for name, both in bonuses.items()},
        "final_totals": list(totals.final),
        "margin": margin,
        "raw_amount": raw,
    }
    by_seat = dict(enumerate(escrow))
    if winner is None or raw == 0:
        refund = Statement.refund(settings.format, by_seat, stake_per_point=rate)
        return replace(refund, figures=figures)
    loser = 1 - winner
    cap = pair_cap(settings.cap_mode, escrow[winner], escrow[loser])
    final = totals.final
    reason = f"final totals {final[winner]} to {final[loser]}, a margin of {margin}"
    owed = PairAmount(winner, loser, margin, "6.4.6", reason)
    cap_name = "the smaller buy-in" if settings.cap_mode is CapMode.MIN_BOTH else "its own buy-in"
    statement = settle_pairs(
        [owed],
        rate,
        {winner: escrow[winner], loser: cap},
        settings.fee,
        format=settings.format,
        cap_rule="6.4.7",
        cap_name=cap_name,
        fee_rule="6.4.8",
    )
    transfer = statement.net[winner] + statement.fee
    figures |= {"winner": winner, "transfer": transfer, "cap": cap}
    return replace(statement, escrow=by_seat, figures=figures)
