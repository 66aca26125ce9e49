"""Payout maths: a finished match and its table settings in, a settlement statement out
(docs/engine.md 3.1-3.2, 6.1-6.4, 9.4). Pure integer arithmetic in minor units.

Every statement satisfies ``sum(payouts) + fee == sum(escrow)`` (6.1.3) and no payout is
negative: a player never loses more than they escrowed. ``payouts[s]`` is what leaves escrow
for seat ``s`` (stake returned plus winnings); ``net[s] = payouts[s] - escrow[s]``.

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
from dataclasses import dataclass, replace
from typing import Any

from service.games.common.errors import SettlementError
from service.games.common.settings import CapMode, FeeBase, Format, MatchSettings
from service.games.gin.game import final_totals
from service.games.gin.match import HandRecord, Match, ftk_winner
from service.games.gin.ruleset import ShutoutMode
from service.games.protocol import MatchStatus


@dataclass(frozen=True, slots=True)
class Statement:
    """The settlement of one match, with every figure behind it (6.1.5)."""

    format: Format
    escrow: tuple[int, int]
    payouts: tuple[int, int]
    fee: int
    winner: int | None
    void: bool
    forfeiter: int | None
    hands: tuple[HandRecord, ...]
    hand_points: tuple[int, int]
    boxes: tuple[int, int]
    bonuses: dict[str, tuple[int, int]]
    final_totals: tuple[int, int] | None
    margin: int
    stake_per_point: int
    raw_amount: int
    transfer: int
    cap: int | None
    cap_applied: bool
    fee_base_amount: int

    @property
    def net(self) -> tuple[int, int]:
        return (self.payouts[0] - self.escrow[0], self.payouts[1] - self.escrow[1])

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format.value,
            "escrow": list(self.escrow),
            "payouts": list(self.payouts),
            "net": list(self.net),
            "fee": self.fee,
            "fee_base_amount": self.fee_base_amount,
            "winner": self.winner,
            "void": self.void,
            "forfeiter": self.forfeiter,
            "hands": [h.to_dict() for h in self.hands],
            "hand_points": list(self.hand_points),
            "boxes": list(self.boxes),
            "bonuses": {k: list(v) for k, v in self.bonuses.items()},
            "final_totals": None if self.final_totals is None else list(self.final_totals),
            "margin": self.margin,
            "stake_per_point": self.stake_per_point,
            "raw_amount": self.raw_amount,
            "transfer": self.transfer,
            "cap": self.cap,
            "cap_applied": self.cap_applied,
        }


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
    refund = Statement(
        format=settings.format,
        escrow=escrow,
        payouts=escrow,
        fee=0,
        winner=None,
        void=void,
        forfeiter=forfeiter,
        hands=hands,
        hand_points=h,
        boxes=b,
        bonuses={},
        final_totals=None,
        margin=0,
        stake_per_point=0,
        raw_amount=0,
        transfer=0,
        cap=None,
        cap_applied=False,
        fee_base_amount=0,
    )
    if void:
        return refund
    if settings.uses_buyins:
        return _settle_points(settings, refund)
    return _settle_pot(settings, refund)


def _settle_pot(settings: MatchSettings, refund: Statement) -> Statement:
    escrow, forfeiter, h = refund.escrow, refund.forfeiter, refund.hand_points
    if escrow[0] != escrow[1] or escrow[0] != settings.stake:
        raise SettlementError(f"both seats escrow the stake {settings.stake}, not {escrow}")
    if forfeiter is not None:
        winner = 1 - forfeiter
    elif settings.format is Format.FIRST_TO_KNOCK:
        ftk = ftk_winner(settings, refund.hands)
        if ftk is None:
            raise SettlementError("First To Knock match without a decided hand")
        winner = ftk
    else:
        reachers = [s for s in (0, 1) if h[s] >= settings.target]
        if len(reachers) != 1:
            raise SettlementError(f"Match Play without a single target reacher: {h}")
        winner = reachers[0]
    pot = escrow[0] + escrow[1]
    base = pot if settings.fee.base is FeeBase.POT else pot - escrow[winner]
    fee = settings.fee.fee_on(base)
    payouts = [0, 0]
    payouts[winner] = pot - fee
    return replace(
        refund,
        payouts=(payouts[0], payouts[1]),
        fee=fee,
        winner=winner,
        transfer=pot - escrow[winner] - fee,
        fee_base_amount=base,
    )


def pair_cap(mode: CapMode, winner_buyin: int, loser_buyin: int) -> int:
    """The most a loser pays its one opponent (6.4.7, and each money pair of partnership Gin,
    11.2.3): the smaller buy-in under ``MIN_BOTH``, the loser's own under ``LOSER_ONLY``."""
    return min(winner_buyin, loser_buyin) if mode is CapMode.MIN_BOTH else loser_buyin


def _settle_points(settings: MatchSettings, refund: Statement) -> Statement:
    escrow, forfeiter, h, b = refund.escrow, refund.forfeiter, refund.hand_points, refund.boxes
    if any(e < 1 for e in escrow):
        raise SettlementError(f"both seats need a buy-in in escrow, not {escrow}")
    if forfeiter is not None:
        reacher = 1 - forfeiter
    else:
        reachers = [s for s in (0, 1) if h[s] >= settings.target]
        if len(reachers) != 1:
            raise SettlementError(f"game without a single target reacher: {h}")
        reacher = reachers[0]
    if settings.format is Format.MONEY_PLAY:
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
    raw = margin * settings.stake_per_point
    scored = replace(
        refund,
        bonuses=bonuses,
        final_totals=totals.final,
        margin=margin,
        stake_per_point=settings.stake_per_point,
        raw_amount=raw,
    )
    if winner is None or raw == 0:
        return scored
    loser = 1 - winner
    cap = pair_cap(settings.cap_mode, escrow[winner], escrow[loser])
    transfer = min(raw, cap)
    fee = settings.fee.fee_on(transfer)
    payouts = [0, 0]
    payouts[winner] = escrow[winner] + transfer - fee
    payouts[loser] = escrow[loser] - transfer
    return replace(
        scored,
        payouts=(payouts[0], payouts[1]),
        fee=fee,
        winner=winner,
        transfer=transfer,
        cap=cap,
        cap_applied=transfer < raw,
        fee_base_amount=transfer,
    )
