"""What every game offers the service, stated once (docs/engine.md, Games and the registry).

Two protocols. A :class:`MatchEngine` is a match of one game as the service stores and reads
it: its status, its clock, its text form. A :class:`GameSpec` is a game: what a table of it
declares (its kind, seat counts, formats, continuous tables, tournaments, actions, options
and how a table request carries them, engine and bot) and what the service asks of its
matches (start, deal, apply an action, time out, forfeit, who acts, each viewer's view, the
hands that ended with their histories, the result, the single-table standing, the
statement). The service holds a match as its engine and reaches its game's spec through
:func:`service.games.registry.spec_of`: no code outside a spec asks which game a match is.

Seats are match seats throughout. A dealt hand has a ``number`` within the match (the
fairness nonce), the ``seats`` dealt in (ascending) and a ``dealer``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol, Self, TypeVar

from service.games.common.settings import Format, GameKind, MatchSettings, Stakes

#: The action by which a seated player forfeits a match of any game (logged as it is sent).
RESIGN = "RESIGN"


class MatchStatus(StrEnum):
    AWAITING_DEAL = "AWAITING_DEAL"
    PLAYING = "PLAYING"
    FINISHED = "FINISHED"
    VOID = "VOID"


class Recorded(Protocol):
    """A hand's record, as a match keeps it."""

    def to_dict(self) -> dict[str, Any]: ...


class MatchEngine(Protocol):
    """A match of one game, as every engine (:class:`~service.games.gin.match.Match`,
    :class:`~service.games.multi_gin.three_player.ThreePlayerMatch`,
    :class:`~service.games.multi_gin.partnership.PartnershipMatch`,
    :class:`~service.games.rummy.match.RummyMatch`) offers it."""

    #: The ``kind`` its stored state carries (a state without one is two-player Gin's).
    KIND: ClassVar[str]
    status: MatchStatus

    @property
    def over(self) -> bool: ...

    @property
    def hands_ended(self) -> int:
        """How many hands have ended (recorded, or cut short)."""
        ...

    @property
    def records(self) -> Sequence[Recorded]:
        """The record of each hand played to its end, in order."""
        ...

    def deadline_ms(self) -> int | None:
        """When the seat to act runs out of time (epoch milliseconds), or None."""
        ...

    def timeout(self, now_ms: int, *, at: str | None = None) -> str | None:
        """Act for a seat whose time ran out: the outcome, or None."""
        ...

    def copy(self) -> Self: ...

    def to_dict(self) -> dict[str, Any]:
        """The stored state: JSON-ready, with the engine's ``kind``."""
        ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """:raises InvalidState: when the data is malformed."""
        ...


M = TypeVar("M", bound=MatchEngine)
H = TypeVar("H", bound=MatchEngine, contravariant=True)


class Options(Protocol):
    """A game's rule options: read from and written to a table's settings."""

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """:raises RulesError: on an unknown option or a bad value."""
        ...


@dataclass(frozen=True, slots=True)
class OptionField:
    """One option of a game's options type as a table request carries it: its ``name`` (a
    field of the type, and the key a request sends it under), its ``key`` as the rules spell
    it (``gin.gin_bonus``), an integer option's range from ``low`` to ``high``, the
    ``other_keys`` a request may send it under as well, and whether a request may send it at
    all (``requested``: Rummy's ``match`` follows from the format and the target)."""

    name: str
    key: str
    low: int = 0
    high: int = 10_000
    other_keys: tuple[str, ...] = ()
    requested: bool = True


@dataclass(frozen=True, slots=True)
class Deal:
    """A hand the match waits for: its ``number``, the ``seats`` dealt in, the ``dealer``."""

    number: int
    seats: tuple[int, ...]
    dealer: int

    def client_seeds(self, seeds_by_seat: Sequence[str]) -> tuple[str, ...]:
        """The client seeds of the seats dealt in, ascending (11.6.4)."""
        return tuple(seeds_by_seat[seat] for seat in self.seats)


@dataclass(frozen=True, slots=True)
class EndedHand:
    """A hand that ended: its result in match seats and its full history (10.3)."""

    number: int
    seats: tuple[int, ...]
    outcome: str  # knock, gin, ..., dead, forfeit; Rummy: rummy, out, void
    winner: int | None
    points: int | None
    record: dict[str, Any]
    history: dict[str, Any]


@dataclass(frozen=True)
class MatchResult:
    """What ranks the players of an ended match, by its seat (0 up): each seat's figure
    (higher better), the seats it names as winners, and the forfeiters."""

    scores: tuple[int, ...]
    winners: tuple[int, ...]
    forfeiters: frozenset[int]


@dataclass(frozen=True, slots=True)
class Settled:
    """A match's settlement: what leaves escrow for each seat, the fee, and the statement
    as JSON-ready data (``escrow``, ``payouts`` and ``net`` as lists by seat, ``winner``,
    ``forfeiter`` and ``void`` for every game)."""

    payouts: tuple[int, ...]
    net: tuple[int, ...]
    fee: int
    data: dict[str, Any]


class ContinuousTables(Protocol[H]):
    """A game's continuous tables: players come and go between hands, each hand a match of
    its own settled on its own; what such a table asks of its game between two hands."""

    @property
    def formats(self) -> tuple[Format, ...]:
        """Its continuous formats."""
        ...

    def short(self, balances: Mapping[int, int], settings: MatchSettings) -> tuple[int, ...]:
        """The seats (of ``balances``, each seat's table balance) that must top up before
        they are dealt in again."""
        ...

    def leaving(self, hand: H) -> tuple[int, ...]:
        """The seats of ``hand`` (a hand just settled, its match seats) that leave the table
        with what is left of their balance: those that forfeited it."""
        ...

    def next_dealer(
        self, hand: H, table_seats: Sequence[int], dealt: Sequence[int], seat_count: int
    ) -> int:
        """The dealer of the hand after ``hand``, whose match seat ``i`` sat at table seat
        ``table_seats[i]`` of ``seat_count``: an index into ``dealt``, the table seats dealt
        into the next hand (ascending)."""
        ...


class GameSpec(Protocol[M]):
    """One game: what a table of it declares and what the service asks of its matches."""

    @property
    def kind(self) -> GameKind:
        """The ``game`` a table names."""
        ...

    @property
    def seat_counts(self) -> range:
        """How many players a table of it seats (Rummy: 2 up to its ``rummy.max_players``)."""
        ...

    @property
    def formats(self) -> tuple[Format, ...]:
        """The formats it is played in, the first the default."""
        ...

    @property
    def stakes(self) -> tuple[Stakes, ...]:
        """How each of its formats is staked (a fixed stake or a buy-in), as the table
        contract states it; a format another game declared is that game's to state."""
        ...

    @property
    def fixed_stake(self) -> tuple[Format, ...]:
        """Its formats played for a fixed equal stake; the others take a buy-in."""
        ...

    @property
    def single_hand(self) -> tuple[Format, ...]:
        """Its formats one hand decides (First To Knock): a match of one counts to no target
        (its table shows none), and its bots knock at their first chance."""
        ...

    @property
    def continuous(self) -> ContinuousTables[M] | None:
        """How its continuous tables (whose players come and go between hands, each hand
        settled) go on from hand to hand; None: it has no continuous format."""
        ...

    @property
    def knockout(self) -> tuple[Format, ...]:
        """Its formats a knockout tournament's matches are played in (each names a winner);
        none: no knockout plays it."""
        ...

    @property
    def single_table(self) -> tuple[Format, ...]:
        """Its formats a single-table tournament's match is played in; none: no single table
        plays it."""
        ...

    @property
    def title(self) -> str:
        """Its name in messages (``Rummy``)."""
        ...

    @property
    def actions(self) -> tuple[str, ...]:
        """The actions a seat may send to its matches, by the word their text starts with
        (:data:`RESIGN` among them)."""
        ...

    @property
    def seats_text(self) -> str:
        """What a table's ``seat_count`` is, for a message that asks for it."""
        ...

    @property
    def options_key(self) -> str:
        """The key its options are carried under in a table's settings (``ruleset``)."""
        ...

    @property
    def options(self) -> type[Options]:
        """The type of its rule options (the Gin ``Ruleset`` or the ``RummyRules``)."""
        ...

    @property
    def option_fields(self) -> tuple[OptionField, ...]:
        """Each option of its :attr:`options` type, in the type's order, as a table request
        carries it (for the spec that owns the options key)."""
        ...

    @property
    def options_description(self) -> str:
        """What the table contract says of the options under :attr:`options_key` (markdown,
        for the spec that owns the key)."""
        ...

    @property
    def not_offered(self) -> tuple[str, ...]:
        """Its options that the rules refuse to turn on (the table contract offers false
        only)."""
        ...

    @property
    def examples(self) -> Mapping[Format, dict[str, Any]]:
        """A ``POST /v1/tables`` body for each of its formats that works as it is."""
        ...

    @property
    def description(self) -> str:
        """What the table contract says of its formats and seats (markdown, one clause)."""
        ...

    @property
    def table_rules(self) -> tuple[dict[str, Any], ...]:
        """Further rules of its tables, as JSON Schema the table contract adds (``allOf``)."""
        ...

    def check_seats(self, settings: MatchSettings) -> None:
        """:raises InvalidSettings: when ``settings.seats`` is not a seat count of it."""
        ...

    def fitted_options(self, settings: MatchSettings) -> Options:
        """The options under :attr:`options_key` that ``settings`` imply (what follows from
        the format and the target), for the spec that owns the key.

        :raises RulesError: when they cannot be fitted.
        """
        ...

    def settings_problems(self, settings: MatchSettings) -> list[tuple[str, str]]:
        """Every problem of ``settings`` that the rules of its options and formats find, by
        field (for the spec that owns the options key)."""
        ...

    def request_problems(self, data: dict[str, Any]) -> list[tuple[str, str]]:
        """Read the options under :attr:`options_key` of a table request ``data`` (in
        place), for the spec that owns the key: every option refused, by field."""
        ...

    @property
    def engine(self) -> type[M]:
        """Its engine: the class of its matches."""
        ...

    @property
    def bot(self) -> Callable[[Mapping[str, Any]], dict[str, Any] | str]:
        """Its bot: the action a seat takes, from the seat's own view of its hand or match."""
        ...

    def new_match(
        self, settings: MatchSettings, players: int, randbelow: Callable[[int], int]
    ) -> M:
        """A new match for ``players`` seats, its first draw (dealer, seating or dealing
        team) made with ``randbelow``."""
        ...

    def restart(self, state: Mapping[str, Any]) -> M:
        """A new match with the settings and first draw of the stored ``state``: where a
        replay of its log starts.

        :raises InvalidState: when the state is malformed.
        """
        ...

    def pending_deal(self, match: M) -> Deal | None:
        """The next hand the match waits for, or None."""
        ...

    def deal(self, match: M, server_seed: str, seeds_by_seat: Sequence[str], now_ms: int) -> Deal:
        """Deal :meth:`pending_deal` from the seeds (10.2, 11.6.4).

        :raises InvalidState: when the match waits for no deal.
        """
        ...

    def live_hands(self, match: M) -> set[int]:
        """The numbers of the hands being played."""
        ...

    def ended_hand(self, match: M, number: int) -> EndedHand:
        """Hand ``number``, which was live before the change that ended it.

        :raises InvalidState: when that hand is not one that has just ended.
        """
        ...

    def hand_of(self, match: M, seat: int) -> int | None:
        """The number of the hand ``seat`` plays now, or None."""
        ...

    def acting(self, match: M) -> tuple[int, ...]:
        """The seats to act now."""
        ...

    def apply(self, match: M, seat: int, action: str, *, at: str, now_ms: int) -> str:
        """Apply ``seat``'s action (its text form); the action's text as logged.

        :raises RulesError: when the rules refuse it (the match is unchanged).
        """
        ...

    def due_seat(self, match: M, now_ms: int) -> int | None:
        """The seat whose clock ran out first by ``now_ms``, or None."""
        ...

    def forfeit(self, match: M, seat: int, reason: str, *, at: str, now_ms: int) -> None:
        """``seat`` forfeits (9.3, 11.6.2, 11.6.3)."""
        ...

    def result(self, match: M) -> dict[str, Any]:
        """How a match that is over ended: the winner and forfeiter (at more than two
        seats also every winner and every forfeiter)."""
        ...

    def standing(self, match: M) -> MatchResult | None:
        """What ranks the seats of its ended match at a single table: each seat's figure (hand
        points, a team's for both its players; Rummy's points, or the fewest penalties), the
        winners and the forfeiters. None for a game no single table plays."""
        ...

    def view(self, match: M, seat: int | None) -> dict[str, Any]:
        """What ``seat`` (None: the operator or a spectator) sees of the match: the match
        view's fields that come from the game (docs/play.md)."""
        ...

    def statement(self, match: M, settings: MatchSettings, escrow: Sequence[int]) -> Settled:
        """The settlement of a match that is over (6, 11.4-11.7).

        :raises SettlementError: when the match is not over or the escrow does not fit it.
        """
        ...
