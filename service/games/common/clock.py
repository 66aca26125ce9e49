"""The turn clock (docs/engine.md 9.1-9.2, 9.6), as pure values and arithmetic in milliseconds.

Each action has ``turn_seconds``; beyond that the acting player's bank (``bank_seconds`` per
match) is drawn down. When both are spent the server acts (``AUTO_PLAY``: pass an offer, draw
from the stock, discard the card leaving the lowest deadwood, decline the 50th card; never
knock) and counts a timeout; after ``max_timeouts`` the player forfeits. ``FORFEIT`` makes the
first timeout a forfeit. ``fill_timeout_seconds`` cancels a table whose seats do not fill.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from service.games.common.errors import InvalidSettings


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
