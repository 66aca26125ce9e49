"""The immutable table of basic Rummy options (the ``rummy.*`` keys; see docs/rummy.md).

Field names are the keys without their ``rummy.`` prefix (``rummy.max_turns`` is
``max_turns``); the defaults are the documented ones. :meth:`RummyRules.from_dict` reads
either spelling of a key, so a stored table configuration with dotted keys reads back as it
was written. Every value is checked when the options are built: an unknown name, a value of
the wrong type or out of range raises :class:`~service.games.common.errors.InvalidRuleset` naming
the option and the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from service.games.common.errors import InvalidRuleset

PREFIX = "rummy."


class AceMode(StrEnum):
    """Where an ace may sit in a run (1.7, 11.3.6)."""

    LOW = "LOW"
    HIGH_OR_LOW = "HIGH_OR_LOW"


class Restock(StrEnum):
    """What happens when a player must draw and the stock is empty (5.5, 11.3.1-11.3.2)."""

    TURN_OVER = "TURN_OVER"
    SHUFFLE = "SHUFFLE"


class Scoring(StrEnum):
    """How an ended hand is scored (5.6, 5.7)."""

    PAY_WINNER = "PAY_WINNER"
    PENALTY = "PENALTY"


_MATCH = re.compile(r"PER_HAND|(DEALS|TARGET)\((\d+)\)")


def _enum(enum: type[StrEnum]) -> Callable[[str, Any], Any]:
    def check(name: str, value: Any) -> StrEnum:
        try:
            return enum(value)
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            raise InvalidRuleset(f"{name} must be one of {allowed}, not {value!r}") from None

    return check


def _integer(low: int, high: int | None = None) -> Callable[[str, Any], int]:
    def check(name: str, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidRuleset(f"{name} must be an integer, not {value!r}")
        if value < low or (high is not None and value > high):
            bounds = f"{low}-{high}" if high is not None else f"at least {low}"
            raise InvalidRuleset(f"{name} must be {bounds}, not {value!r}")
        return value

    return check


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidRuleset(f"{name} must be true or false, not {value!r}")
    return value


def _match(name: str, value: Any) -> str:
    text = value.replace(" ", "").upper() if isinstance(value, str) else None
    found = _MATCH.fullmatch(text) if text is not None else None
    if found is None or (found.group(2) is not None and int(found.group(2)) < 1):
        raise InvalidRuleset(
            f"{name} must be PER_HAND, DEALS(n) or TARGET(t) with n, t >= 1, not {value!r}"
        )
    if found.group(1) is None:
        return "PER_HAND"
    return f"{found.group(1)}({int(found.group(2))})"


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "max_players": _integer(2, 6),
    "ace_mode": _enum(AceMode),
    "ace_points": _integer(0),
    "must_discard_to_go_out": _boolean,
    "restock": _enum(Restock),
    "max_restocks": _integer(0),
    "max_turns": _integer(1),
    "scoring": _enum(Scoring),
    "rummy_penalty": _integer(0),
    "match": _match,
}


@dataclass(frozen=True, slots=True)
class RummyRules:
    """Every basic Rummy option, with its default. Immutable; built only from valid values."""

    max_players: int = 6
    ace_mode: AceMode = AceMode.LOW
    ace_points: int = 1
    must_discard_to_go_out: bool = False
    restock: Restock = Restock.TURN_OVER
    max_restocks: int = 3
    max_turns: int = 300
    scoring: Scoring = Scoring.PAY_WINNER
    rummy_penalty: int = 25
    match: str = "PER_HAND"

    def __post_init__(self) -> None:
        for name, check in _CHECKS.items():
            object.__setattr__(self, name, check(name, getattr(self, name)))

    @property
    def match_deals(self) -> int | None:
        """``n`` of ``DEALS(n)``, else None."""
        return self._match_number("DEALS")

    @property
    def match_target(self) -> int | None:
        """``t`` of ``TARGET(t)``, else None."""
        return self._match_number("TARGET")

    def _match_number(self, kind: str) -> int | None:
        if not self.match.startswith(kind):
            return None
        return int(self.match[len(kind) + 1 : -1])

    def card_value(self, rank: int, points: int) -> int:
        """What a card counts against its holder (1.3): ``ace_points`` for an ace."""
        return self.ace_points if rank == 1 else points

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RummyRules:
        """Options from plain data, keys bare (``max_turns``) or dotted (``rummy.max_turns``).

        :raises InvalidRuleset: on an unknown key, a key given twice or a bad value.
        """
        if not isinstance(data, Mapping):
            raise InvalidRuleset(f"rummy options must be a mapping, not {data!r}")
        options: dict[str, Any] = {}
        for key, value in data.items():
            name = key[len(PREFIX) :] if isinstance(key, str) and key.startswith(PREFIX) else key
            if name not in _CHECKS:
                raise InvalidRuleset(f"unknown rummy option {key!r}")
            if name in options:
                raise InvalidRuleset(f"rummy option {name!r} is given twice")
            options[name] = value
        return cls(**options)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (enum values as strings), bare keys, that :meth:`from_dict` reads back."""
        return {
            name: (value.value if isinstance(value, StrEnum) else value)
            for name in _FIELD_NAMES
            for value in (getattr(self, name),)
        }


#: :meth:`RummyRules.to_dict`'s keys (every view and every state writes the rules out).
_FIELD_NAMES = tuple(f.name for f in fields(RummyRules))
