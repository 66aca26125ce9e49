"""What the turn clock does in a Gin hand (docs/engine.md 9.2, 11.6.1): the automatic action
the server plays for a player whose time is spent, and the timeout that plays it or forfeits.
The clock's settings and arithmetic are :mod:`service.games.common.clock`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from service.games.common.cards import DECK
from service.games.common.clock import ClockSettings, OnTimeout
from service.games.gin.actions import Action, ActionKind
from service.games.gin.hand import Hand, Phase
from service.games.gin.melds import best_discard_mask


def automatic_action(hand: Hand) -> Action:
    """What the server plays for the player to act when their time is spent (9.2)."""
    phase = hand.phase
    if phase in (Phase.OFFER_1, Phase.OFFER_2):
        return Action(ActionKind.PASS)
    if phase in (Phase.DRAW, Phase.FIRST_DRAW):
        return Action(ActionKind.DRAW_STOCK)
    if phase is Phase.LAST_CHANCE:
        return Action(ActionKind.DECLINE)
    if phase is Phase.DISCARD:
        barred = hand.taken.bit if hand.taken is not None else 0
        bit, _ = best_discard_mask(hand.hands[hand.to_act], barred)
        return Action(ActionKind.DISCARD, DECK[bit.bit_length() - 1])
    raise ValueError(f"no automatic action in phase {phase}")


class TimedMatch(Protocol):
    """What :func:`play_timeout` needs of a match: per-seat timeouts and banks, and forfeit."""

    timeouts: list[int]
    banks_ms: list[int]

    @property
    def over(self) -> bool: ...

    def forfeit(self, seat: int, reason: str = ..., *, at: str | None = None) -> None: ...


def play_timeout(
    match: TimedMatch,
    clock: ClockSettings,
    hand: Hand,
    seat: int,
    *,
    at: str | None,
    after_action: Callable[[], None],
) -> str:
    """The server acts for ``seat`` (the match's seat of ``hand``'s player to act), whose
    time is spent (9.2, 11.6.1): one timeout more; under ``FORFEIT`` a forfeit at once, else
    the automatic action (logged as automatic, the bank spent), ``after_action()`` (the
    caller restarts the turn clock and moves the match on if the hand ended), and a forfeit
    once ``max_timeouts`` are reached. Returns ``"auto:<action>"`` or ``"forfeit"``."""
    match.timeouts[seat] += 1
    if clock.on_timeout is OnTimeout.FORFEIT:
        match.forfeit(seat, "timeout", at=at)
        return "forfeit"
    action = automatic_action(hand)
    hand.apply(hand.to_act, action, at=at)
    hand.log[-1]["automatic"] = True
    match.banks_ms[seat] = 0
    after_action()
    if match.timeouts[seat] >= clock.max_timeouts and not match.over:
        match.forfeit(seat, "timeout", at=at)
        return "forfeit"
    return f"auto:{action}"
