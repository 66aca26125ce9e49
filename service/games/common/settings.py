"""Table settings for every game and stake format (docs/engine.md 6, 3.2.6, 11.4, Appendix A).

A :class:`MatchSettings` value fixes everything a table's matches need besides the players:
the game (:class:`GameKind`) and its number of seats, the format, the stake, the target, the
house fee, the caps, the Gin :class:`~service.games.gin.ruleset.Ruleset` or the
:class:`~service.games.rummy.rules.RummyRules`, and the clock. Amounts are integer minor units of
the table's currency; nothing here knows currencies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import partial
from typing import Any

from service.games.common.clock import ClockSettings
from service.games.common.errors import InvalidSettings, RulesError
from service.games.gin.game import Game
from service.games.gin.ruleset import Ruleset
from service.games.rummy.rules import RummyRules


class GameKind(StrEnum):
    """The game a table plays (11.4)."""

    GIN = "gin"  # two players
    GIN_THREE = "gin_three"  # three-player Gin (4.1, 11.1)
    GIN_PARTNERSHIP = "gin_partnership"  # four players in two teams (4.2, 11.2)
    RUMMY = "rummy"  # basic Rummy for 2-6 (5, 11.3, 11.5)


class Format(StrEnum):
    FIRST_TO_KNOCK = "first_to_knock"
    MATCH_PLAY = "match_play"
    MONEY_PLAY = "money_play"
    CLASSIC = "classic"
    RUMMY_PER_HAND = "rummy_per_hand"  # a continuous table, each hand settled (11.5.1)
    RUMMY_TARGET = "rummy_target"  # fixed seats, TARGET(t) (11.5.2)
    RUMMY_DEALS = "rummy_deals"  # fixed seats, DEALS(n) (11.5.2)


#: The formats each game is played in (11.4), the first being the default.
GAME_FORMATS: dict[GameKind, tuple[Format, ...]] = {
    GameKind.GIN: (Format.FIRST_TO_KNOCK, Format.MATCH_PLAY, Format.MONEY_PLAY, Format.CLASSIC),
    GameKind.GIN_THREE: (Format.MATCH_PLAY, Format.CLASSIC),
    GameKind.GIN_PARTNERSHIP: (Format.MATCH_PLAY, Format.CLASSIC),
    GameKind.RUMMY: (Format.RUMMY_PER_HAND, Format.RUMMY_TARGET, Format.RUMMY_DEALS),
}

#: The seats of the fixed-size games; Rummy has 2 to ``rummy.max_players``.
GAME_SEATS = {GameKind.GIN: 2, GameKind.GIN_THREE: 3, GameKind.GIN_PARTNERSHIP: 4}

#: The stake formats played for a fixed equal stake; every other one takes a buy-in.
FIXED_STAKE_FORMATS = (Format.FIRST_TO_KNOCK, Format.MATCH_PLAY)


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


@dataclass(frozen=True, slots=True)
class MatchSettings:
    """Everything a table fixes about its matches.

    * ``stake``: the fixed stake ``S`` of First To Knock and Match Play (each player's escrow).
    * ``stake_per_point``: ``r`` of Money Play and classic; each player escrows a buy-in within
      ``[min_buyin, max_buyin]``.
    * ``target``: Match Play's ``match.target``, Money Play's ``money.target`` (50 or 100),
      for classic the ruleset's ``target`` (kept equal), for ``rummy_target`` the points
      target ``t`` and for ``rummy_deals`` the number of deals ``n`` (``rummy.match`` is
      derived from the format and this, 11.5.2).
    * ``game`` and ``seats``: 2 for Gin, 3 for three-player Gin, 4 for partnership Gin, 2 to
      ``rummy.max_players`` for Rummy (on a ``rummy_per_hand`` table, the most players seated).
    * ``min_balance``: ``rummy.min_balance`` of a per-hand table (11.5.1); 0 means
      ``stake_per_point`` x 10.
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
    ruleset: Ruleset = field(default_factory=Ruleset)
    clock: ClockSettings = field(default_factory=ClockSettings)
    game: GameKind = GameKind.GIN
    seats: int = 2
    rummy: RummyRules = field(default_factory=RummyRules)
    min_balance: int = 0

    def __post_init__(self) -> None:
        """Checks every setting and raises one :class:`InvalidSettings` listing every problem
        found: only the game and the format stop the checks at once (the rest depends on
        them), and each message says what the table's format needs."""
        try:
            object.__setattr__(self, "game", GameKind(self.game))
        except ValueError:
            allowed = ", ".join(g.value for g in GameKind)
            raise InvalidSettings("game", f"must be one of {allowed}, not {self.game!r}") from None
        try:
            object.__setattr__(self, "format", Format(self.format))
        except ValueError:
            allowed = ", ".join(f.value for f in GAME_FORMATS[self.game])
            msg = f"must be one of {allowed}, not {self.format!r}"
            raise InvalidSettings("format", msg) from None
        if self.format not in GAME_FORMATS[self.game]:
            allowed = ", ".join(f.value for f in GAME_FORMATS[self.game])
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
        try:
            if self.game is GameKind.RUMMY:  # rummy.match follows from the format and target
                object.__setattr__(self, "rummy", _with_match(self.rummy, self.rummy_match))
            if self.format is Format.CLASSIC and self.ruleset.target != self.target:
                object.__setattr__(self, "ruleset", _with_target(self.ruleset, self.target))
        except RulesError as exc:
            problems.append(("target", str(exc)))
        if self.min_balance and not self.continuous:
            problems.append(
                ("min_balance", f"only a rummy_per_hand table has one, not a {self.format} table")
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
        if self.format is Format.MONEY_PLAY and self.target not in (50, 100):
            problems.append(("target", f"Money Play targets 50 or 100, not {self.target}"))
        try:
            Game(self.ruleset)  # the engine's own refusals (Hollywood scoring, 3.4)
        except RulesError as exc:
            problems.append(("ruleset", str(exc)))
        if problems:
            raise InvalidSettings.every(problems)

    def _check_stakes(self) -> None:
        """The stake fields the format needs (6.1): every missing or wrong one."""
        table = f"a {self.format.value} table"
        problems: list[tuple[str, str]] = []
        if self.format in FIXED_STAKE_FORMATS:
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
        if not isinstance(self.rummy, RummyRules):
            raise InvalidSettings("rummy", f"must be Rummy options, not {self.rummy!r}")
        if self.game is GameKind.RUMMY:
            limit = self.rummy.max_players
            if self.seats > limit:
                raise InvalidSettings("seats", f"Rummy seats 2-{limit} (rummy.max_players)")
        elif self.seats != GAME_SEATS[self.game]:
            raise InvalidSettings(
                "seats", f"{self.game.value} has {GAME_SEATS[self.game]} seats, not {self.seats}"
            )

    @property
    def uses_buyins(self) -> bool:
        return self.format not in FIXED_STAKE_FORMATS

    @property
    def continuous(self) -> bool:
        """Whether players come and go between hands, each hand settled (11.5.1)."""
        return self.format is Format.RUMMY_PER_HAND

    @property
    def rummy_match(self) -> str:
        """``rummy.match`` of a Rummy format: PER_HAND, TARGET(t) or DEALS(n)."""
        if self.format is Format.RUMMY_TARGET:
            return f"TARGET({self.target})"
        if self.format is Format.RUMMY_DEALS:
            return f"DEALS({self.target})"
        return "PER_HAND"

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
            if isinstance(value, Ruleset):
                value = value.to_dict()
            elif isinstance(value, FeeRule):
                value = {
                    "bps": value.bps,
                    "base": value.base.value,
                    "minimum": value.minimum,
                    "maximum": value.maximum,
                }
            elif isinstance(value, ClockSettings | RummyRules):
                value = value.to_dict()
            elif isinstance(value, StrEnum):
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
                fixed = kwargs.get("format") in [f.value for f in FIXED_STAKE_FORMATS]
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
        if isinstance(kwargs.get("ruleset"), dict):
            kwargs["ruleset"] = Ruleset.from_dict(kwargs["ruleset"])
        if isinstance(kwargs.get("rummy"), dict):
            kwargs["rummy"] = RummyRules.from_dict(kwargs["rummy"])
        return cls(**kwargs)


def _with_target(ruleset: Ruleset, target: int) -> Ruleset:
    data = ruleset.to_dict()
    data["target"] = target
    return Ruleset.from_dict(data)


def _with_match(rules: RummyRules, match: str) -> RummyRules:
    data = rules.to_dict()
    data["match"] = match
    return RummyRules.from_dict(data)
