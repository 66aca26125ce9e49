"""Two-player Gin (docs/engine.md 3, 6): the :class:`~service.games.gin.match.Match` engine, dealt
from the two seats' client seeds, settled by :func:`~service.games.gin.payout.settle_match`.

What every Gin game shares is stated here too: how a hand is dealt (:class:`TwoSeatDeals`)
and the ``ruleset`` a table carries, read, fitted and checked (:class:`GinOptions`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from service.games.common import fair
from service.games.common.cards import Card
from service.games.common.errors import InvalidSettings, InvalidState, RulesError
from service.games.common.settings import Format, GameKind, MatchSettings
from service.games.gin.actions import Action
from service.games.gin.bot import decide
from service.games.gin.formats import (
    CLASSIC,
    CLASSIC_STAKES,
    FIRST_TO_KNOCK,
    FIXED,
    MATCH_PLAY,
    MONEY,
    MONEY_PLAY,
    MONEY_PLAY_TARGETS,
)
from service.games.gin.game import NOT_OFFERED, Game
from service.games.gin.hand import Hand
from service.games.gin.match import PLAYER_ACTIONS, Match
from service.games.gin.payout import settle_match
from service.games.gin.ruleset import Ruleset
from service.games.protocol import (
    Deal,
    EndedHand,
    MatchEngine,
    MatchResult,
    MatchStatus,
    OptionField,
    Settled,
)


class DealtFromDeck(MatchEngine, Protocol):
    """A Gin engine: its hand waiting to be dealt is dealt from one deck."""

    def deal(self, deck: Sequence[Card | str], now_ms: int | None = None) -> Hand: ...


M = TypeVar("M", bound=DealtFromDeck)

#: The buy-in fields of the table examples.
BUYINS: dict[str, Any] = {"stake_per_point": 5, "min_buyin": 1000, "max_buyin": 5000}


class TwoSeatDeals(Generic[M]):
    """How every Gin hand is dealt: a deck shuffled from its two seats' client seeds (the
    hand's seats say which two, at any table)."""

    def pending_deal(self, match: M) -> Deal | None:
        raise NotImplementedError

    def deal(self, match: M, server_seed: str, seeds_by_seat: Sequence[str], now_ms: int) -> Deal:
        coming = self.pending_deal(match)
        if coming is None:
            raise InvalidState(f"the match is {match.status.value}, not awaiting a deal")
        seeds = coming.client_seeds(seeds_by_seat)
        match.deal(fair.shuffled_deck(server_seed, seeds[0], seeds[1], coming.number), now_ms)
        return coming


#: Rule options whose range is not 0 to 10 000 (docs/engine.md 2.7.2, 3.2.1, 4.2.6).
_RANGES = {"knock_limit": (0, 10), "target": (1, 10_000), "partnership_target": (1, 10_000)}
#: The options docs/engine.md section A spells ``oklahoma.*``; every other one is ``gin.*``.
_OKLAHOMA = ("ace_requires_gin", "spade_doubles")


def _ruleset_field(name: str) -> OptionField:
    """A ruleset option, sent under its bare name or its Appendix A key (``gin.gin_bonus``):
    both spellings the engine reads."""
    key = f"{'oklahoma' if name in _OKLAHOMA else 'gin'}.{name}"
    low, high = _RANGES.get(name, (0, 10_000))
    return OptionField(name, key, low, high, other_keys=(key,))


class GinOptions:
    """What every Gin game's table carries: the ``ruleset`` (docs/engine.md, Appendix A),
    fitted and checked by the first Gin game, which owns the key; a fixed number of seats."""

    kind: GameKind
    seat_counts: range
    continuous = None
    options_key = "ruleset"
    options = Ruleset
    option_fields = tuple(_ruleset_field(option.name) for option in fields(Ruleset))
    options_description = (
        "Rule options (docs/engine.md section A), each under its bare "
        'name or its Appendix key: `{"gin_bonus": 25, '
        '"gin.oklahoma": true}`; left out: the default.'
    )
    not_offered = NOT_OFFERED
    actions = PLAYER_ACTIONS
    seats_text = "how many players it seats"
    table_rules: tuple[dict[str, Any], ...] = ()

    def check_seats(self, settings: MatchSettings) -> None:
        seats = self.seat_counts[0]
        if settings.seats != seats:
            raise InvalidSettings(
                "seats", f"{self.kind.value} has {seats} seats, not {settings.seats}"
            )

    def fitted_options(self, settings: MatchSettings) -> Ruleset:
        """Classic plays to the table's target (3.2): the ruleset's ``target`` is kept equal."""
        ruleset: Ruleset = settings.ruleset
        if settings.format is not CLASSIC or ruleset.target == settings.target:
            return ruleset
        return Ruleset.from_dict(ruleset.to_dict() | {"target": settings.target})

    def settings_problems(self, settings: MatchSettings) -> list[tuple[str, str]]:
        """Money Play's target (6.4), and the engine's own refusals (Hollywood scoring, 3.4)."""
        problems: list[tuple[str, str]] = []
        if settings.format is MONEY_PLAY and settings.target not in MONEY_PLAY_TARGETS:
            problems.append(("target", f"Money Play targets 50 or 100, not {settings.target}"))
        try:
            Game(settings.ruleset)
        except RulesError as exc:
            problems.append(("ruleset", str(exc)))
        return problems

    def request_problems(self, data: dict[str, Any]) -> list[tuple[str, str]]:
        """A request's ruleset is read with the rest of its settings."""
        return []


class GinSpec(GinOptions, TwoSeatDeals[Match]):
    """Two-player Gin: seats 0 and 1, one hand at a time."""

    kind = GameKind("gin")
    title = "Gin"
    seat_counts = range(2, 3)
    formats = (FIRST_TO_KNOCK, MATCH_PLAY, MONEY_PLAY, CLASSIC)
    stakes = (FIXED, MONEY, CLASSIC_STAKES)
    fixed_stake = (FIRST_TO_KNOCK, MATCH_PLAY)
    single_hand = (FIRST_TO_KNOCK,)
    knockout = (FIRST_TO_KNOCK, MATCH_PLAY)
    single_table: tuple[Format, ...] = ()
    engine = Match
    bot = staticmethod(decide)
    description = (
        "`gin` (the default) 2 seats, every format above but the Rummy ones (Money Play "
        "targets 50 or 100)"
    )
    examples: ClassVar[dict[Format, dict[str, Any]]] = {
        FIRST_TO_KNOCK: {"format": "first_to_knock", "currency": "EUR", "stake": 500},
        MATCH_PLAY: {
            "format": "match_play",
            "currency": "EUR",
            "stake": 500,
            "target": 100,
            "fee": {"bps": 1000},
        },
        MONEY_PLAY: {
            "format": "money_play",
            "currency": "EUR",
            **BUYINS,
            "target": 100,
            "fee": {"bps": 500},
        },
        CLASSIC: {"format": "classic", "currency": "EUR", **BUYINS, "fee": {"bps": 500}},
    }

    def new_match(
        self, settings: MatchSettings, players: int, randbelow: Callable[[int], int]
    ) -> Match:
        return Match(settings, randbelow(2))

    def restart(self, state: Mapping[str, Any]) -> Match:
        try:
            return Match(MatchSettings.from_dict(state["settings"]), int(state["first_dealer"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed match state: {exc!r}") from None

    def pending_deal(self, match: Match) -> Deal | None:
        if match.status is not MatchStatus.AWAITING_DEAL:
            return None
        return Deal(match.hand_number, (0, 1), match.dealer)

    def live_hands(self, match: Match) -> set[int]:
        hand = match.hand
        return set() if hand is None or hand.ended else {match.hand_number}

    def ended_hand(self, match: Match, number: int) -> EndedHand:
        record = match.ended_hand()
        hand = match.hand
        if record is None or hand is None or record.number != number:
            raise InvalidState(f"hand {number} has not just ended")
        return EndedHand(
            number,
            (0, 1),
            record.kind,
            record.winner,
            record.points,
            record.to_dict(),
            hand.history(),
        )

    def hand_of(self, match: Match, seat: int) -> int | None:
        return next(iter(self.live_hands(match)), None)

    def acting(self, match: Match) -> tuple[int, ...]:
        hand = match.hand
        if match.status is not MatchStatus.PLAYING or hand is None or hand.to_act is None:
            return ()
        return (hand.to_act,)

    def apply(self, match: Match, seat: int, action: str, *, at: str, now_ms: int) -> str:
        parsed = Action.parse(action)
        match.apply(seat, parsed, at=at, now_ms=now_ms)
        return str(parsed)

    def due_seat(self, match: Match, now_ms: int) -> int | None:
        if match.status is not MatchStatus.PLAYING:
            return None
        deadline = match.deadline_ms()
        seats = self.acting(match)
        if deadline is None or deadline > now_ms or not seats:
            return None
        return seats[0]

    def forfeit(self, match: Match, seat: int, reason: str, *, at: str, now_ms: int) -> None:
        match.forfeit(seat, reason, at=at)

    def result(self, match: Match) -> dict[str, Any]:
        return {
            "winner": match.winner,
            "forfeiter": match.forfeiter,
            "forfeit_reason": match.forfeit_reason,
        }

    def standing(self, match: Match) -> MatchResult | None:
        """A two-player match is a knockout's: no single table ranks it."""
        return None

    def view(self, match: Match, seat: int | None) -> dict[str, Any]:
        """The scores, the hand being played as ``seat`` sees it (``Hand.view``), the hand
        before it while the match goes on, and the result once it is over."""
        game = match.game()
        view: dict[str, Any] = {
            "scores": {
                "hand_points": list(game.hand_points),
                "boxes": list(game.boxes),
                "target": match.target,
                "hands_played": len(match.records),
                "timeouts": list(match.timeouts),
                "bank_ms": list(match.banks_ms),
            },
            "hand_number": match.hand_number,
        }
        if match.hand is not None:
            view["dealer"] = match.hand.dealer
            view["hand"] = match.hand.view(seat)
        if match.records and not match.over:
            view["previous_hand"] = match.records[-1].to_dict()
        if match.over:
            view["result"] = self.result(match) | {"void": match.status is MatchStatus.VOID}
        return view

    def statement(self, match: Match, settings: MatchSettings, escrow: Sequence[int]) -> Settled:
        # Without its lines: two-player statements have never held them, and the audit
        # compares a stored statement with its recomputation figure by figure.
        return settle_match(match, (escrow[0], escrow[1])).settled(itemized=False)


GIN = GinSpec()
