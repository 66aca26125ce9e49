"""The turn clock (docs/engine.md 9.1-9.2, 9.6), as pure values and arithmetic in milliseconds.

Each action has ``turn_seconds``; beyond that the acting player's bank (``bank_seconds`` per
match) is drawn down. When both are spent the server acts (``AUTO_PLAY``: pass an offer, draw
from the stock, discard the card leaving the lowest deadwood, decline the 50th card; never
knock) and counts a timeout; after ``max_timeouts`` the player forfeits. ``FORFEIT`` makes the
first timeout a forfeit. ``fill_timeout_seconds`` cancels a table whose seats do not fill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from service.formats.errors import InvalidSettings
from service.rules import Action, ActionKind, Hand, Phase
from service.rules.cards import DECK
from service.rules.melds import best_discard_mask


class OnTimeout(StrEnum):
    AUTO_PLAY = "AUTO_PLAY"
    FORFEIT = "FORFEIT"


@dataclass(frozen=True, slots=True)
class ClockSettings:
    turn_seconds: int = 30
    bank_seconds: int = 60
    on_timeout: OnTimeout = OnTimeout.AUTO_PLAY
    max_timeouts: int = 3
    fill_timeout_seconds: int = 300

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "on_timeout", OnTimeout(self.on_timeout))
        except ValueError:
            raise InvalidSettings(
                "clock.on_timeout", f"must be AUTO_PLAY or FORFEIT, not {self.on_timeout!r}"
            ) from None
        for name, low in (
            ("turn_seconds", 1),
            ("bank_seconds", 0),
            ("max_timeouts", 1),
            ("fill_timeout_seconds", 1),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidSettings(
                    f"clock.{name}", f"must be an integer >= {low}, not {value!r}"
                )

    def bank_after(self, bank_ms: int, turn_started_ms: int | None, now_ms: int) -> int:
        """A seat's time bank after its turn, begun at ``turn_started_ms``, ended at
        ``now_ms``: the time over the turn allowance comes off the bank, never below 0."""
        if turn_started_ms is None:
            return bank_ms
        over = now_ms - turn_started_ms - self.turn_seconds * 1000
        return max(0, bank_ms - over) if over > 0 else bank_ms

    def deadline_ms(self, turn_started_ms: int, bank_ms: int) -> int:
        """When a turn begun at ``turn_started_ms`` runs out: its allowance plus the bank."""
        return turn_started_ms + self.turn_seconds * 1000 + bank_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn_seconds": self.turn_seconds,
            "bank_seconds": self.bank_seconds,
            "on_timeout": self.on_timeout.value,
            "max_timeouts": self.max_timeouts,
            "fill_timeout_seconds": self.fill_timeout_seconds,
        }


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
