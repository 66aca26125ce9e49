"""Table settings for every game and stake format (docs/engine.md 6, 3.2.6, 11.4, Appendix A).

A :class:`MatchSettings` value fixes everything a table's matches need besides the players:
the game (:class:`GameKind`) and its number of seats, the format, the stake, the target, the
house fee, the caps, the games' rule options, and the clock. Amounts are integer minor units
of the table's currency; nothing here knows currencies.

Nothing here names a game or a format: each game's spec (:mod:`service.games.registry`)
declares its kind, seats, formats and their stakes, and its options with how they are read
and checked. The settings ask the registry for them when they are checked, never at import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import partial
from typing import Any, ClassVar, Self, cast

from service.games.common.clock import ClockSettings
from service.games.common.errors import InvalidSettings, RulesError


class _Offered(type):
    """The type of :class:`GameKind` and :class:`Format`: names that the games declare and
    the registry lists. ``GameKind.RUMMY`` is the kind ``rummy`` if a game of it is offered;
    iterating gives what is offered, in the registry's order. The registry is asked when
    this is used, never imported with this module: common/ names no game."""

    def _offered(cls) -> tuple[Any, ...]:
        raise NotImplementedError

    def __iter__(cls) -> Iterator[Any]:
        return iter(cls._offered())

    def __getattr__(cls, name: str) -> Any:
        if name.isupper() and not name.startswith("_"):
            for offered in cls._offered():
                if offered == name.lower():
                    return offered
        raise AttributeError(f"{cls.__name__} has no {name}")


class _Name(str):
    """An interned name: one value per text, so ``is`` compares them as it does enum members."""

    _interned: ClassVar[dict[str, Any]]

    def __init_subclass__(cls) -> None:
        cls._interned = {}

    def __new__(cls, value: str) -> Self:
        """:raises ValueError: when ``value`` is not a text."""
        if not isinstance(value, str) or not value:
            raise ValueError(f"not a {cls.__name__}: {value!r}")
        found = cls._interned.get(value)
        if found is None:
            found = cls._interned[value] = super().__new__(cls, value)
        return cast(Self, found)

    @property
    def value(self) -> str:
        """The text (as an enum member's ``value``)."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class GameKind(_Name, metaclass=_Offered):
    """The game a table plays (11.4): each game's spec declares its own
    (``GameKind("rummy")``); :data:`service.games.registry.GAMES` lists those offered."""

    @classmethod
    def _offered(cls) -> tuple[GameKind, ...]:
        from service.games import registry  # at call time: the registry imports every game

        return tuple(registry.GAMES)


class Format(_Name, metaclass=_Offered):
    """A stake format (6, 11.4), declared by the game package that plays it; every game's
    formats, in the registry's order, are those offered."""

    @classmethod
    def _offered(cls) -> tuple[Format, ...]:
        from service.games import registry

        return registry.FORMATS


@dataclass(frozen=True, slots=True)
class Stakes:
    """How some formats are staked (6.1): each player's fixed ``stake``, or (``fixed``
    false) a buy-in within ``[min_buyin, max_buyin]`` with a ``stake_per_point``, the fee
    then taken from the winnings. ``title`` and ``schema`` (further JSON Schema properties,
    Money Play's targets) are what the table contract says of them."""

    title: str
    formats: tuple[Format, ...]
    fixed: bool
    schema: dict[str, Any] = field(default_factory=dict)


def _spec(game: GameKind) -> Any:
    """The spec of ``game`` (:class:`~service.games.protocol.GameSpec`), found when asked."""
    from service.games import registry

    return registry.spec(game)


def _option_keys() -> dict[str, Any]:
    """Every game's options, by the key a table carries them under, with their spec."""
    from service.games import registry

    return registry.OPTIONS


class FeeBase(StrEnum):
    """What the house fee is a share of (6.1.3)."""

    POT = "POT"
    WINNINGS = "WINNINGS"


class FtkWinnerRule(StrEnum):
    """Who wins a First To Knock match (6.2.3)."""

    FIRST_KNOCKER = "FIRST_KNOCKER"
    HAND_WINNER = "HAND_WINNER"


class CapMode(StrEnum):
    """How buy-ins cap a Money Play transfer (6.4.7)."""

    MIN_BOTH = "MIN_BOTH"
    LOSER_ONLY = "LOSER_ONLY"


def _int(name: str, value: Any, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidSettings(name, f"must be an integer, not {value!r}")
    if value < minimum:
        raise InvalidSettings(name, f"must be at least {minimum}, not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class FeeRule:
    """House fee: ``bps`` basis points of the base, rounded down, then held within
    ``[minimum, maximum]`` (6.1.3). A fee never exceeds its base."""

    bps: int = 0
    base: FeeBase = FeeBase.POT
    minimum: int = 0
    maximum: int | None = None

    def __post_init__(self) -> None:
        _int("fee.bps", self.bps)
        if self.bps > 10_000:
            raise InvalidSettings("fee.bps", f"must be at most 10000, not {self.bps}")
        try:
            object.__setattr__(self, "base", FeeBase(self.base))
        except ValueError:
            msg = f"must be POT or WINNINGS, not {self.base!r}"
            raise InvalidSettings("fee.base", msg) from None
        _int("fee.minimum", self.minimum)
        if self.maximum is not None:
            _int("fee.maximum", self.maximum)
            if self.maximum < self.minimum:
                raise InvalidSettings("fee.maximum", "must not be below fee.minimum")

    def fee_on(self, amount: int) -> int:
        """The fee on a base of ``amount`` minor units."""
        if amount <= 0:
            return 0
        fee = amount * self.bps // 10_000
        fee = max(fee, self.minimum)
        if self.maximum is not None:
            fee = min(fee, self.maximum)
        return min(fee, amount)


#: A table's game when none is named: the registry's default game, found when checked.
_REGISTRY_DEFAULT = cast(GameKind, None)


@dataclass(frozen=True, slots=True)
class MatchSettings:
    """Everything a table fixes about its matches.

    * ``stake``: the fixed stake ``S`` of the formats played for one (First To Knock, Match
      Play: each player's escrow).
    * ``stake_per_point``: ``r`` of the other formats; each player escrows a buy-in within
      ``[min_buyin, max_buyin]``.
    * ``target``: what the format counts to (its game's spec says what it means there).
    * ``game`` and ``seats``: the game's spec says how many seats it takes (on a continuous
      table, the most players seated).
    * ``ruleset`` and ``rummy``: the options of the games that take them (Gin's ``Ruleset``,
      Rummy's ``RummyRules``), each kept at every table, its defaults where left out; the
      spec that owns the key reads, fits and checks them.
    * ``min_balance``: the table balance of a continuous table below which a player sits
      out (11.5.1); 0 means ``stake_per_point`` x 10.
    """

    format: Format
    stake: int = 0
    stake_per_point: int = 0
    min_buyin: int = 0
    max_buyin: int = 0
    target: int = 100
    fee: FeeRule = field(default_factory=FeeRule)
    ftk_winner_rule: FtkWinnerRule = FtkWinnerRule.FIRST_KNOCKER
    ftk_max_dead_hands: int = 0
    line_bonus: int = 25
    cap_mode: CapMode = CapMode.MIN_BOTH
    ruleset: Any = None
    clock: ClockSettings = field(default_factory=ClockSettings)
    game: GameKind = _REGISTRY_DEFAULT
    seats: int = 2
    rummy: Any = None
    min_balance: int = 0

    def __post_init__(self) -> None:
        """Checks every setting and raises one :class:`InvalidSettings` listing every problem
        found: only the game and the format stop the checks at once (the rest depends on
        them), and each message says what the table's format needs. The game's spec states
        its own rules (seats, options, formats) and the spec owning each options key reads
        and checks those options."""
        if self.game is None:
            object.__setattr__(self, "game", _default_game())
        offered = tuple(GameKind)
        if self.game not in offered:
            allowed = ", ".join(g.value for g in offered)
            raise InvalidSettings("game", f"must be one of {allowed}, not {self.game!r}")
        object.__setattr__(self, "game", GameKind(self.game))
        spec = _spec(self.game)
        allowed = ", ".join(f.value for f in spec.formats)
        if self.format not in tuple(Format):
            raise InvalidSettings("format", f"must be one of {allowed}, not {self.format!r}")
        object.__setattr__(self, "format", Format(self.format))
        if self.format not in spec.formats:
            msg = f"{self.game.value} is played {allowed}, not {self.format.value}"
            raise InvalidSettings("format", msg)
        problems: list[tuple[str, str]] = []

        def check(test: Callable[[], object]) -> None:
            try:
                test()
            except InvalidSettings as exc:
                problems.extend(exc.problems)

        check(self._check_seats)
        for name, enum in (("ftk_winner_rule", FtkWinnerRule), ("cap_mode", CapMode)):
            try:
                object.__setattr__(self, name, enum(getattr(self, name)))
            except ValueError:
                problems.append((name, f"unknown value {getattr(self, name)!r}"))
        for name in (
            "stake",
            "stake_per_point",
            "min_buyin",
            "max_buyin",
            "ftk_max_dead_hands",
            "line_bonus",
            "min_balance",
        ):
            check(partial(_int, name, getattr(self, name)))
        check(partial(_int, "target", self.target, 1))
        if problems:  # a value of the wrong type: the rules between values cannot be checked
            raise InvalidSettings.every(problems)
        check(self._check_stakes)
        owners = _option_keys()
        try:
            for key, owner in owners.items():  # options that follow from the format and target
                object.__setattr__(self, key, owner.fitted_options(self))
        except RulesError as exc:
            problems.append(("target", str(exc)))
        if self.min_balance and not self.continuous:
            tables = " or ".join(f.value for f in _continuous_formats())
            problems.append(
                ("min_balance", f"only a {tables} table has one, not a {self.format} table")
            )
        buyins_ok = self.max_buyin >= max(self.min_buyin, 1)  # else max_buyin is refused already
        if self.continuous and buyins_ok and self.balance_floor > self.max_buyin:
            problems.append(
                (
                    "min_balance",
                    f"the minimum balance {self.balance_floor} (by default ten times "
                    f"stake_per_point) is above max_buyin {self.max_buyin}: nobody could be "
                    "dealt in",
                )
            )
        for owner in dict.fromkeys(owners.values()):
            problems += owner.settings_problems(self)
        if problems:
            raise InvalidSettings.every(problems)

    def _check_stakes(self) -> None:
        """The stake fields the format needs (6.1): every missing or wrong one."""
        table = f"a {self.format.value} table"
        problems: list[tuple[str, str]] = []
        if not self.uses_buyins:
            if self.stake < 1:
                problems.append(
                    ("stake", f"required at {table}: each player's fixed stake, at least 1")
                )
        else:
            if self.stake_per_point < 1:
                problems.append(
                    ("stake_per_point", f"required at {table}: what a point is worth, at least 1")
                )
            if self.min_buyin < 1:
                problems.append(
                    ("min_buyin", f"required at {table}: the smallest buy-in, at least 1")
                )
            if self.max_buyin < max(self.min_buyin, 1):
                problems.append(
                    (
                        "max_buyin",
                        f"required at {table}: the largest buy-in, not below min_buyin "
                        f"({self.min_buyin})",
                    )
                )
            charged = self.fee.bps > 0 or self.fee.minimum > 0
            if charged and self.fee.base is not FeeBase.WINNINGS:
                problems.append(
                    (
                        "fee.base",
                        f"{table} takes its fee from what the winners win: WINNINGS (the "
                        "default there), not POT",
                    )
                )
        if problems:
            raise InvalidSettings.every(problems)

    def _check_seats(self) -> None:
        _int("seats", self.seats, 2)
        for key, owner in _option_keys().items():
            value = getattr(self, key)
            if value is None:
                object.__setattr__(self, key, owner.options())
            elif not isinstance(value, owner.options):
                raise InvalidSettings(key, f"must be {owner.title} options, not {value!r}")
        _spec(self.game).check_seats(self)

    @property
    def uses_buyins(self) -> bool:
        """Whether players sit down with a buy-in in range (else with the fixed stake)."""
        return self.format not in _spec(self.game).fixed_stake

    @property
    def continuous(self) -> bool:
        """Whether players come and go between hands, each hand settled (11.5.1)."""
        continuous = _spec(self.game).continuous
        return continuous is not None and self.format in continuous.formats

    @property
    def balance_floor(self) -> int:
        """The table balance below which a per-hand player must top up (11.5.1)."""
        return self.min_balance or self.stake_per_point * 10

    def escrow_for(self, buyin: int | None = None) -> int:
        """What one player escrows on sitting down: the stake, or a buy-in in range.

        :raises InvalidSettings: for a missing or out-of-range buy-in.
        """
        if not self.uses_buyins:
            if buyin is not None and buyin != self.stake:
                raise InvalidSettings(
                    "buyin",
                    f"a {self.format.value} table's stake is fixed at {self.stake}: leave "
                    "buyin out",
                )
            return self.stake
        between = f"between min_buyin {self.min_buyin} and max_buyin {self.max_buyin}"
        if buyin is None:
            raise InvalidSettings(
                "buyin", f"required at a {self.format.value} table: the buy-in, {between}"
            )
        _int("buyin", buyin, 1)
        if not self.min_buyin <= buyin <= self.max_buyin:
            raise InvalidSettings("buyin", f"must be {between}, not {buyin}")
        return buyin

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FeeRule):
                value = {
                    "bps": value.bps,
                    "base": value.base.value,
                    "minimum": value.minimum,
                    "maximum": value.maximum,
                }
            elif isinstance(value, ClockSettings) or f.name in _option_keys():
                value = value.to_dict() if hasattr(value, "to_dict") else value
            elif isinstance(value, StrEnum | _Name):
                value = value.value
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MatchSettings:
        """:raises InvalidSettings: on unknown keys or bad values."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise InvalidSettings(sorted(unknown)[0], "unknown setting")
        kwargs = dict(data)
        if isinstance(kwargs.get("fee"), dict):
            fee = dict(kwargs["fee"])
            if fee.get("base") is None:  # left out: the base the format takes its fee from
                fixed = kwargs.get("format") in _fixed_stake_formats()
                fee["base"] = FeeBase.POT if fixed else FeeBase.WINNINGS
            try:
                kwargs["fee"] = FeeRule(**fee)
            except TypeError as exc:
                raise InvalidSettings("fee", f"unknown fee option: {exc}") from None
        if isinstance(kwargs.get("clock"), dict):
            try:
                kwargs["clock"] = ClockSettings(**kwargs["clock"])
            except TypeError as exc:
                raise InvalidSettings("clock", f"unknown clock option: {exc}") from None
        for key, owner in _option_keys().items():
            if isinstance(kwargs.get(key), dict):
                kwargs[key] = owner.options.from_dict(kwargs[key])
        return cls(**kwargs)


def _fixed_stake_formats() -> tuple[Format, ...]:
    """Every game's formats played for a fixed equal stake."""
    from service.games import registry

    return registry.FIXED_STAKE_FORMATS


def _continuous_formats() -> tuple[Format, ...]:
    """Every game's continuous formats (players come and go, each hand settled)."""
    from service.games import registry

    return registry.CONTINUOUS_FORMATS


def _default_game() -> GameKind:
    from service.games import registry

    return registry.DEFAULT.kind
