"""The immutable table of rule options (docs/engine.md section A, ``gin.*`` and ``oklahoma.*``).

Field names are the Appendix keys without their prefix (``gin.gin_bonus`` is ``gin_bonus``,
``oklahoma.spade_doubles`` is ``spade_doubles``); defaults are the Appendix defaults.
``Ruleset.from_dict`` accepts either form of key, so a stored table configuration using the
Appendix's dotted keys reads back unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from service.games.common.errors import InvalidRuleset


class Opening(StrEnum):
    """How the first turn of a hand begins (2.3.6)."""

    PASS_SEQUENCE = "PASS_SEQUENCE"
    FREE_FIRST_DRAW = "FREE_FIRST_DRAW"


class KnockerArrangement(StrEnum):
    """Who arranges the knocker's cards at the showdown (2.8.3)."""

    AUTO_MIN_DEADWOOD = "AUTO_MIN_DEADWOOD"
    MANUAL = "MANUAL"


class DeadHandRule(StrEnum):
    """When a hand with two cards left in the stock dies (2.10)."""

    AFTER_DISCARD = "AFTER_DISCARD"
    IMMEDIATE = "IMMEDIATE"
    FIFTIETH_CARD = "FIFTIETH_CARD"


class NextDealer(StrEnum):
    """Who deals the next hand after a hand with a winner (2.11)."""

    WINNER_DEALS = "WINNER_DEALS"
    LOSER_DEALS = "LOSER_DEALS"
    ALTERNATE = "ALTERNATE"


class ShutoutMode(StrEnum):
    """What a shutout is worth at the end of a classic game (3.2.4)."""

    BONUS = "BONUS"
    DOUBLE_GAME_BONUS = "DOUBLE_GAME_BONUS"
    DOUBLE_HAND_POINTS = "DOUBLE_HAND_POINTS"


_ENUMS: dict[str, type[StrEnum]] = {
    "opening": Opening,
    "knocker_arrangement": KnockerArrangement,
    "dead_hand_rule": DeadHandRule,
    "next_dealer": NextDealer,
    "shutout_mode": ShutoutMode,
}
_PREFIXES = ("gin.", "oklahoma.")


@dataclass(frozen=True, slots=True)
class Ruleset:
    """Every two-player Gin option of docs/engine.md section A, with the Appendix defaults."""

    opening: Opening = Opening.PASS_SEQUENCE
    knock_limit: int = 10
    gin_bonus: int = 25
    undercut_bonus: int = 25
    big_gin_enabled: bool = False
    big_gin_bonus: int = 31
    knocker_arrangement: KnockerArrangement = KnockerArrangement.AUTO_MIN_DEADWOOD
    dead_hand_rule: DeadHandRule = DeadHandRule.AFTER_DISCARD
    next_dealer: NextDealer = NextDealer.WINNER_DEALS
    target: int = 100
    box_bonus: int = 20
    game_bonus: int = 100
    shutout_mode: ShutoutMode = ShutoutMode.BONUS
    shutout_bonus: int = 100
    oklahoma: bool = False
    ace_requires_gin: bool = True
    spade_doubles: bool = True
    hollywood: bool = False
    partnership_target: int = 125

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _ENUMS:
                enum = _ENUMS[f.name]
                try:
                    object.__setattr__(self, f.name, enum(value))
                except ValueError:
                    allowed = ", ".join(m.value for m in enum)
                    raise InvalidRuleset(
                        f"{f.name} must be one of {allowed}, not {value!r}"
                    ) from None
            elif f.type == "bool":
                if not isinstance(value, bool):
                    raise InvalidRuleset(f"{f.name} must be true or false, not {value!r}")
            elif not isinstance(value, int) or isinstance(value, bool):
                raise InvalidRuleset(f"{f.name} must be an integer, not {value!r}")
            elif value < 0:
                raise InvalidRuleset(f"{f.name} must not be negative, not {value!r}")
        if not 0 <= self.knock_limit <= 10:
            raise InvalidRuleset(f"knock_limit must be 0-10, not {self.knock_limit!r}")
        if self.target < 1 or self.partnership_target < 1:
            raise InvalidRuleset("target and partnership_target must be at least 1")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ruleset:
        """A ruleset from plain data, keys bare (``gin_bonus``) or dotted (``gin.gin_bonus``).
        Stored states name the same few rulesets again and again: results are memoised.

        :raises InvalidRuleset: on an unknown key or a bad value.
        """
        try:
            # The value's type is part of the key: 1 == True, but only True is a bool.
            key = tuple(sorted((k, type(v).__name__, v) for k, v in data.items()))
            hit = _FROM_DICT_CACHE.get(key)
        except TypeError:  # unhashable or unorderable values: let validation speak
            key, hit = None, None
        if hit is not None:
            return hit
        ruleset = cls._from_dict(data)
        if key is not None and len(_FROM_DICT_CACHE) < 1024:
            _FROM_DICT_CACHE[key] = ruleset
        return ruleset

    @classmethod
    def _from_dict(cls, data: dict[str, Any]) -> Ruleset:
        known = {f.name for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            name = key
            for prefix in _PREFIXES:
                if key.startswith(prefix):
                    name = key[len(prefix) :]
            if name not in known:
                raise InvalidRuleset(f"unknown rule option {key!r}")
            kwargs[name] = value
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (enum values as strings) that :meth:`from_dict` reads back."""
        return {
            name: (value._value_ if isinstance(value, StrEnum) else value)
            for name in _FIELD_NAMES
            for value in (getattr(self, name),)
        }


_FIELD_NAMES = tuple(f.name for f in fields(Ruleset))
_FROM_DICT_CACHE: dict[tuple[tuple[str, str, Any], ...], Ruleset] = {}
