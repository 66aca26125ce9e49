"""What three-player and partnership Gin have in common (4.1, 4.2, 11.1, 11.2, 11.6).

Both games are made of ordinary two-player hands: every hand is a
:class:`~service.games.gin.hand.Hand` between two of the match's seats, played at a *table*. A
:class:`HandSlot` names such a hand before it is dealt (its number within the match, which is the
fairness nonce, the two seats
dealt in, in ascending order, and the dealer), a :class:`TableHand` is one being played, and
a :class:`TableRecord` is one that ended. Inside a hand the seats are the hand's own 0 and 1:
hand seat ``i`` is ``slot.seats[i]``.

:class:`MultiMatch` is the state machine both matches share, with the interface of the
two-player :class:`~service.games.gin.match.Match`: ``status``, ``deal``, ``apply``, ``forfeit``,
``timeout``/``deadline_ms``, ``standings``, ``view``, ``to_dict``/``from_dict``, ``copy``.
A subclass says which hands a deal holds (``_slots``), what an ended hand changes
(``_hand_ended``) and how the game stands (``standings``).

Statuses are the two-player ones: ``AWAITING_DEAL`` while a hand of the coming deal still
needs its deck (:meth:`MultiMatch.next_hand` says which), ``PLAYING`` once every hand of the
deal is dealt and until they have all ended, ``FINISHED`` at the target or on a forfeit.

A forfeit (11.6.2) ends the match for everybody: every hand still in play is cut short
(outcome ``forfeit``, no record, no points, its history revealable like any ended hand).
At a table where the forfeiter does not sit, the hand is cut short in nobody's
name (:meth:`~service.games.gin.hand.Hand.cut_short`: no seat in the log entry, no winner),
with the reason ``match_ended``.

:class:`Standings` is the score as the money code needs it: per side (a seat, or a team)
hand points, boxes and totals, and per money pair the margin in points, bonuses included,
that the first seat of the pair receives from the second (negative: the second receives it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from service.games.common.cards import Card
from service.games.common.errors import IllegalAction, InvalidSettings, InvalidState, RulesError
from service.games.common.seats import seat_in_hand, seated_view
from service.games.common.settings import MatchSettings
from service.games.gin.actions import Action
from service.games.gin.clock import play_timeout
from service.games.gin.formats import CLASSIC, MATCH_PLAY
from service.games.gin.hand import FORFEIT, Hand
from service.games.protocol import MatchStatus

MULTI_SCHEMA = 1

#: The formats a table of three or four Gin players can be played in (11.4).
MULTI_FORMATS = (MATCH_PLAY, CLASSIC)

#: The reason logged in a hand cut short at a table where the forfeiter does not sit.
MATCH_ENDED = "match_ended"


@dataclass(frozen=True, slots=True)
class HandSlot:
    """A hand of the match: its ``number`` (from 1, the fairness nonce), the two ``seats``
    dealt in (ascending), the ``dealer`` (a match seat) and, in partnership, its ``deal``."""

    number: int
    seats: tuple[int, int]
    dealer: int
    deal: int | None = None

    def __post_init__(self) -> None:
        if not self.seats[0] < self.seats[1] or self.dealer not in self.seats:
            raise InvalidState(f"bad hand slot: seats {self.seats!r}, dealer {self.dealer!r}")

    @property
    def first_player(self) -> int:
        return self.seats[0] if self.dealer == self.seats[1] else self.seats[1]

    def hand_seat(self, seat: int) -> int:
        """The hand's own seat (0 or 1) of match seat ``seat``.

        :raises IllegalAction: when ``seat`` is not dealt into this hand.
        """
        return seat_in_hand(self.seats, self.number, seat)

    def client_seeds(self, seeds_by_seat: Sequence[str]) -> tuple[str, str]:
        """The client seeds of the seats dealt in, in ascending seat order (11.6.4): what the
        fair shuffle takes as its first and second client seed, with :attr:`number` as nonce."""
        return seeds_by_seat[self.seats[0]], seeds_by_seat[self.seats[1]]

    def joined_client_seeds(self, seeds_by_seat: Sequence[str]) -> str:
        """The dealt-in seats' client seeds joined by ``":"`` (11.6.4)."""
        return ":".join(self.client_seeds(seeds_by_seat))

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "seats": list(self.seats),
            "dealer": self.dealer,
            "deal": self.deal,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HandSlot:
        a, b = data["seats"]
        return cls(int(data["number"]), (int(a), int(b)), int(data["dealer"]), data["deal"])


@dataclass(frozen=True, slots=True)
class TableRecord:
    """A hand that ended with a result (not cut short), in match seats: ``kind`` is knock,
    undercut, gin, big_gin or dead; ``winner`` and ``knocker`` are None when nobody."""

    slot: HandSlot
    kind: str
    winner: int | None
    points: int
    knocker: int | None

    @property
    def number(self) -> int:
        return self.slot.number

    @property
    def loser(self) -> int | None:
        if self.winner is None:
            return None
        a, b = self.slot.seats
        return b if self.winner == a else a

    @classmethod
    def of(cls, table: TableHand) -> TableRecord:
        out = table.hand.outcome
        assert out is not None
        seats = table.slot.seats
        winner = None if out.winner is None else seats[out.winner]
        knocker = None if out.knocker is None else seats[out.knocker]
        return cls(table.slot, out.kind, winner, out.points, knocker)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.slot.to_dict(),
            "kind": self.kind,
            "winner": self.winner,
            "points": self.points,
            "knocker": self.knocker,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableRecord:
        return cls(
            HandSlot.from_dict(data), data["kind"], data["winner"], data["points"], data["knocker"]
        )


class TableHand:
    """A hand dealt at one table: its slot, the hand, when its player to act began."""

    __slots__ = ("hand", "slot", "turn_started_ms")

    def __init__(self, slot: HandSlot, hand: Hand, turn_started_ms: int | None = None) -> None:
        self.slot = slot
        self.hand = hand
        self.turn_started_ms = turn_started_ms

    @property
    def live(self) -> bool:
        return not self.hand.ended

    @property
    def cut_short(self) -> bool:
        out = self.hand.outcome
        return out is not None and out.kind == FORFEIT

    @property
    def to_act(self) -> int | None:
        """The match seat to act, or None once the hand has ended."""
        return None if self.hand.ended else self.slot.seats[self.hand.to_act]

    def view(self, seat: int | None) -> dict[str, Any]:
        """The table as ``seat`` sees it: its own hand if dealt in, else a spectator's view."""
        slot = self.slot
        place = slot.hand_seat(seat) if seat in slot.seats else None
        return {
            **slot.to_dict(),
            "first_player": slot.first_player,
            "to_act": self.to_act,
            "position": place,
            "hand": seated_view(self.hand.view(place), slot.seats),
        }

    def copy(self) -> TableHand:
        return TableHand(self.slot, self.hand.copy(), self.turn_started_ms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slot": self.slot.to_dict(),
            "hand": self.hand.to_dict(),
            "turn_started_ms": self.turn_started_ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableHand:
        slot = HandSlot.from_dict(data["slot"])
        hand = Hand.from_dict(data["hand"])
        if hand.dealer != slot.hand_seat(slot.dealer):
            raise InvalidState(f"hand {slot.number}: its dealer is not the slot's")
        return cls(slot, hand, data["turn_started_ms"])


# --- standings ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PairMargin:
    """What seat ``seats[0]`` receives from seat ``seats[1]``, in points, bonuses included
    (negative: ``seats[1]`` receives the size). ``shutout`` and ``forfeit_bonus`` are the
    parts of ``margin`` owed to a shutout (11.1.2) and to a forfeit (11.7.2), signed alike."""

    seats: tuple[int, int]
    margin: int
    shutout: int = 0
    forfeit_bonus: int = 0

    def margin_for(self, seat: int) -> int:
        """The margin from ``seat``'s side of the pair: what it receives (negative: pays)."""
        if seat == self.seats[0]:
            return self.margin
        if seat == self.seats[1]:
            return -self.margin
        raise RulesError(f"seat {seat!r} is not in the pair {self.seats!r}")

    @property
    def receiver(self) -> int | None:
        if self.margin == 0:
            return None
        return self.seats[0] if self.margin > 0 else self.seats[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "seats": list(self.seats),
            "margin": self.margin,
            "receiver": self.receiver,
            "shutout": self.shutout,
            "forfeit_bonus": self.forfeit_bonus,
        }


@dataclass(frozen=True, slots=True)
class Standings:
    """How the game stands, per side (``sides[i]`` holds the seats of side ``i``: one seat
    each with three players, a team of two in partnership).

    ``totals`` are hand points plus box bonus plus, at the target, the game bonus (in
    partnership the team's shutout too; with three players a shutout is owed per pair and is
    in ``pairs`` only). While the game is on, and after a forfeit, they hold no game bonus.
    ``pairs`` are the money pairs with their margins; ``pot_sides`` the sides that share a
    ``match_play`` pot (the target reacher, or after a forfeit the side with the most hand
    points but the forfeiter's, all of them on equal hand points: Match Play has no bonuses,
    boxes included); empty while the game is on.
    """

    sides: tuple[tuple[int, ...], ...]
    target: int
    hand_points: tuple[int, ...]
    boxes: tuple[int, ...]
    box_bonus: tuple[int, ...]
    game_bonus: tuple[int, ...]
    totals: tuple[int, ...]
    pairs: tuple[PairMargin, ...]
    over: bool
    winner: int | None
    forfeiter: int | None
    pot_sides: tuple[int, ...]

    def side_of(self, seat: int) -> int:
        for index, seats in enumerate(self.sides):
            if seat in seats:
                return index
        raise RulesError(f"no such seat: {seat!r}")

    def net(self, seat: int) -> int:
        """What ``seat`` receives over all its money pairs (negative: pays), in points."""
        return sum(p.margin_for(seat) for p in self.pairs if seat in p.seats)

    @property
    def seats(self) -> tuple[int, ...]:
        return tuple(sorted(seat for side in self.sides for seat in side))

    @property
    def nets(self) -> tuple[int, ...]:
        """:meth:`net` of every seat, by seat."""
        return tuple(self.net(seat) for seat in self.seats)

    @property
    def pot_seats(self) -> tuple[int, ...]:
        return tuple(sorted(seat for side in self.pot_sides for seat in self.sides[side]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "sides": [list(s) for s in self.sides],
            "target": self.target,
            "hand_points": list(self.hand_points),
            "boxes": list(self.boxes),
            "box_bonus": list(self.box_bonus),
            "game_bonus": list(self.game_bonus),
            "totals": list(self.totals),
            "pairs": [p.to_dict() for p in self.pairs],
            "net": list(self.nets),
            "over": self.over,
            "winner": self.winner,
            "forfeiter": self.forfeiter,
            "pot_sides": list(self.pot_sides),
            "pot_seats": list(self.pot_seats),
        }


def running_totals(hand_points: Sequence[int], boxes: Sequence[int], box_bonus: int) -> list[int]:
    """Totals with the box bonus and no game bonus: how a game stands before its end and at
    a forfeit (11.6.2)."""
    return [h + box_bonus * b for h, b in zip(hand_points, boxes, strict=True)]


def forfeit_margin(total_x: int, total_y: int, forfeiter_is_x: bool, game_bonus: int) -> int:
    """What x receives from y in a pair with the forfeiter (11.7.2): the opponent receives
    its lead, never less than 0, plus the game bonus; the forfeiter receives nothing."""
    if forfeiter_is_x:
        return -(max(total_y - total_x, 0) + game_bonus)
    return max(total_x - total_y, 0) + game_bonus


def best_sides(hand_points: Sequence[int], excluded: int | None) -> tuple[int, ...]:
    """The sides with the most hand points, ``excluded`` left out (a forfeiter's), all of
    them on equal hand points: who shares a forfeited ``match_play`` pot (11.6.2). Hand
    points only, never totals: Match Play computes no bonuses, boxes included (6.3.1)."""
    candidates = [i for i in range(len(hand_points)) if i != excluded]
    best = max(hand_points[i] for i in candidates)
    return tuple(i for i in candidates if hand_points[i] == best)


# --- the shared state machine ------------------------------------------------------------

M = TypeVar("M", bound="MultiMatch")


class MultiMatch:
    """The state machine of a Gin match of more than two seats; see the module docstring."""

    SEATS: ClassVar[int]
    KIND: ClassVar[str]

    def __init__(self, settings: MatchSettings) -> None:
        if settings.format not in MULTI_FORMATS:
            allowed = ", ".join(f.value for f in MULTI_FORMATS)
            raise InvalidSettings(
                "format", f"{self.SEATS}-player Gin is played {allowed}, not {settings.format}"
            )
        self.settings = settings
        self.status = MatchStatus.AWAITING_DEAL
        self.tables: list[TableHand] = []
        self.records: list[TableRecord] = []
        self.forfeiter: int | None = None
        self.forfeit_reason: str | None = None
        bank = settings.clock.bank_seconds * 1000
        self.banks_ms = [bank] * self.SEATS
        self.timeouts = [0] * self.SEATS

    # --- what a subclass says --------------------------------------------------------

    def _slots(self) -> list[HandSlot]:
        """The hands of the coming (or current) deal, in the order they are dealt."""
        raise NotImplementedError

    def _hand_ended(self, table: TableHand) -> None:
        """Move the match on after ``table``'s hand ended with a result (it is recorded)."""
        raise NotImplementedError

    def standings(self) -> Standings:
        raise NotImplementedError

    def _state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _restore(self, data: dict[str, Any]) -> None:
        raise NotImplementedError

    def _view_extra(self) -> dict[str, Any]:
        raise NotImplementedError

    # --- reading -----------------------------------------------------------------------

    @property
    def seats(self) -> range:
        return range(self.SEATS)

    @property
    def over(self) -> bool:
        return self.status is MatchStatus.FINISHED

    def next_hand(self) -> HandSlot | None:
        """The hand waiting for its deck (deal it with :meth:`deal`), or None."""
        if self.status is not MatchStatus.AWAITING_DEAL:
            return None
        dealt = {t.slot.number for t in self.tables}
        for slot in self._slots():
            if slot.number not in dealt:
                return slot
        return None  # pragma: no cover - a deal whose hands are all dealt is PLAYING

    def table_of(self, seat: int) -> TableHand | None:
        """The table ``seat`` plays at in the current deal (None: sitting out, or not dealt)."""
        for table in self.tables:
            if seat in table.slot.seats:
                return table
        return None

    @property
    def to_act(self) -> tuple[int, ...]:
        """The seats to act now, one per hand in play, ascending."""
        if self.status is not MatchStatus.PLAYING:
            return ()
        return tuple(sorted(s for t in self.tables if (s := t.to_act) is not None))

    def legal_actions(self, seat: int) -> list[Action]:
        """What ``seat`` may do now in its hand (nothing when it is not its turn)."""
        table = self.table_of(seat)
        if self.status is not MatchStatus.PLAYING or table is None:
            return []
        return table.hand.legal_actions(table.slot.hand_seat(seat))

    @property
    def cut_short(self) -> list[TableHand]:
        """The hands a forfeit cut short (they have no record)."""
        return [t for t in self.tables if t.cut_short]

    @property
    def hands_ended(self) -> int:
        """How many hands have ended: the recorded ones and those cut short."""
        return len(self.records) + len(self.cut_short)

    def _check_seat(self, seat: int) -> None:
        if seat not in self.seats:
            raise IllegalAction(f"no such seat: {seat!r}", "NO_SUCH_SEAT")

    # --- driving -----------------------------------------------------------------------

    def deal(self, deck: Sequence[Card | str], now_ms: int | None = None) -> Hand:
        """Deal :meth:`next_hand` from ``deck`` (deal order); its first player's clock starts
        at ``now_ms``. Play starts once every hand of the deal is dealt.

        :raises IllegalAction: unless the match is waiting for a deal.
        """
        slot = self.next_hand()
        if slot is None:
            raise IllegalAction(
                f"the match is {self.status.value}, not awaiting a deal", "MATCH_NOT_AWAITING_DEAL"
            )
        hand = Hand.deal(list(deck), slot.hand_seat(slot.dealer), self.settings.ruleset)
        if slot == self._slots()[0]:
            self.tables = []
        self.tables.append(TableHand(slot, hand, now_ms))
        if self.next_hand() is None:
            self.status = MatchStatus.PLAYING
        return hand

    def apply(
        self, seat: int, action: Action | str, *, at: str | None = None, now_ms: int | None = None
    ) -> Hand:
        """Apply ``seat``'s action to its own hand; an ended hand is recorded and moves the
        match on. With ``now_ms`` the time over the turn allowance is drawn from the bank.

        :raises IllegalAction: when no hand is being played, the seat plays no hand now, or
            the action is illegal (the state is unchanged).
        """
        if self.status is not MatchStatus.PLAYING:
            raise IllegalAction(
                f"no hand is being played (match {self.status.value})", "NO_HAND_IN_PLAY"
            )
        self._check_seat(seat)
        table = self.table_of(seat)
        if table is None:
            raise IllegalAction(f"seat {seat} is not dealt into this hand", "NOT_DEALT_IN")
        try:
            table.hand.apply(table.slot.hand_seat(seat), action, at=at)
        except IllegalAction as exc:  # the hand names its two places: name the match's seats
            if exc.code != "NOT_YOUR_TURN":
                raise
            message = f"it is seat {table.to_act}'s turn, not seat {seat}'s"
            raise IllegalAction(message, exc.code) from None
        self._charge_clock(table, seat, now_ms)
        if table.hand.ended:
            self._end_hand(table)
        return table.hand

    def _end_hand(self, table: TableHand) -> None:
        self.records.append(TableRecord.of(table))
        self._hand_ended(table)

    def _charge_clock(self, table: TableHand, seat: int, now_ms: int | None) -> None:
        if now_ms is None:
            return
        clock = self.settings.clock
        self.banks_ms[seat] = clock.bank_after(self.banks_ms[seat], table.turn_started_ms, now_ms)
        table.turn_started_ms = now_ms

    def _deadline(self, table: TableHand) -> int | None:
        seat = table.to_act
        if seat is None or table.turn_started_ms is None:
            return None
        return self.settings.clock.deadline_ms(table.turn_started_ms, self.banks_ms[seat])

    def deadline_ms(self) -> int | None:
        """The earliest time a player to act runs out of time, or None."""
        if self.status is not MatchStatus.PLAYING:
            return None
        deadlines = [d for t in self.tables if (d := self._deadline(t)) is not None]
        return min(deadlines) if deadlines else None

    def timeout(self, now_ms: int, *, at: str | None = None) -> str | None:
        """Act for the player whose time ran out first (11.6.1, 9.2): the automatic action,
        counted as a timeout, and a forfeit after ``max_timeouts`` (or at once under
        ``FORFEIT``). Returns ``"auto:<action>"`` or ``"forfeit"``; None when nobody's time
        is spent at ``now_ms`` (nothing changes)."""
        table = self._due_table(now_ms)
        if table is None:
            return None
        seat = table.to_act
        assert seat is not None

        def after_action() -> None:
            table.turn_started_ms = now_ms
            if table.hand.ended:
                self._end_hand(table)

        clock = self.settings.clock
        return play_timeout(self, clock, table.hand, seat, at=at, after_action=after_action)

    def _due_table(self, now_ms: int) -> TableHand | None:
        """The table whose player's time ran out first by ``now_ms``, or None."""
        if self.status is not MatchStatus.PLAYING:
            return None
        due = [(d, t) for t in self.tables if (d := self._deadline(t)) is not None]
        due = [(d, t) for d, t in due if d <= now_ms]
        if not due:
            return None
        return min(due, key=lambda item: (item[0], item[1].slot.number))[1]

    def due_seat(self, now_ms: int) -> int | None:
        """The seat :meth:`timeout` acts for at ``now_ms``, or None."""
        table = self._due_table(now_ms)
        return None if table is None else table.to_act

    def forfeit(self, seat: int, reason: str = "resign", *, at: str | None = None) -> None:
        """``seat`` forfeits (11.6.2): the match ends for everybody at once, and every hand
        in play is cut short. :meth:`standings` then holds the totals of that moment.

        :raises IllegalAction: when the match is already over or the seat is unknown.
        """
        if self.over:
            raise IllegalAction("the match is already over", "MATCH_OVER")
        self._check_seat(seat)
        for table in self.tables:  # a hand dealt while its deal's other waits for a deck too
            if not table.live:
                continue
            if seat in table.slot.seats:
                hand_seat = table.slot.hand_seat(seat)
                table.hand.forfeit(hand_seat, reason, at=at, automatic=reason == "timeout")
            else:
                table.hand.cut_short(MATCH_ENDED, at=at)
        self.forfeiter = seat
        self.forfeit_reason = reason
        self.status = MatchStatus.FINISHED

    # --- views -------------------------------------------------------------------------

    def view(self, seat: int | None) -> dict[str, Any]:
        """What ``seat`` may see (None: a spectator, 11.6.5): its own hand and legal actions,
        every table's public part (a hand it is not dealt into as a spectator sees it), the
        hands that ended, the scores, who is to act. Never another player's cards in play
        and never a stock card.

        :raises RulesError: for an unknown seat.
        """
        if seat is not None and seat not in self.seats:
            raise RulesError(f"no such seat: {seat!r}")
        slot = self.next_hand()
        view: dict[str, Any] = {
            "kind": self.KIND,
            "status": self.status.value,
            "you": seat,
            "to_act": list(self.to_act),
            "next_hand": None if slot is None else slot.to_dict(),
            "tables": [t.view(seat) for t in self.tables],
            "hands": [r.to_dict() for r in self.records],
            "standings": self.standings().to_dict(),
            "timeouts": list(self.timeouts),
            "bank_ms": list(self.banks_ms),
            "forfeiter": self.forfeiter,
            "forfeit_reason": self.forfeit_reason,
            **self._view_extra(),
        }
        if seat is not None:
            view["legal_actions"] = [a.to_dict() for a in self.legal_actions(seat)]
        return view

    # --- serialisation -----------------------------------------------------------------

    def copy(self: M) -> M:
        """An independent copy: changes to either leave the other as it was (as a round trip
        through :meth:`to_dict` and :meth:`from_dict` would, for a fraction of its cost).
        What the match changes in place is copied: the tables (each hand by
        :meth:`~service.games.gin.hand.Hand.copy`), the records list, the banks and timeouts; the
        immutable parts are shared (the settings, slots, records). A subclass with lists of
        its own copies them too (:meth:`_copy_own`)."""
        match = type(self).__new__(type(self))
        match.__dict__.update(self.__dict__)
        match.tables = [table.copy() for table in self.tables]
        match.records = list(self.records)
        match.banks_ms = list(self.banks_ms)
        match.timeouts = list(self.timeouts)
        self._copy_own(match)
        return match

    def _copy_own(self, match: MultiMatch) -> None:
        """Give ``match``, a copy of this match sharing its attributes, its own copy of what
        the subclass changes in place (nothing unless overridden)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": MULTI_SCHEMA,
            "kind": self.KIND,
            "settings": self.settings.to_dict(),
            "status": self.status.value,
            "tables": [t.to_dict() for t in self.tables],
            "records": [r.to_dict() for r in self.records],
            "forfeiter": self.forfeiter,
            "forfeit_reason": self.forfeit_reason,
            "banks_ms": list(self.banks_ms),
            "timeouts": list(self.timeouts),
            **self._state(),
        }

    @classmethod
    def from_dict(cls: type[M], data: dict[str, Any]) -> M:
        """:raises InvalidState: when the data is malformed."""
        try:
            if data["schema"] != MULTI_SCHEMA or data["kind"] != cls.KIND:
                raise InvalidState(f"not a {cls.KIND} match state: {data['kind']!r}")
            match = cls.__new__(cls)
            MultiMatch.__init__(match, MatchSettings.from_dict(data["settings"]))
            match.status = MatchStatus(data["status"])
            match.tables = [TableHand.from_dict(t) for t in data["tables"]]
            match.records = [TableRecord.from_dict(r) for r in data["records"]]
            match.forfeiter = data["forfeiter"]
            match.forfeit_reason = data["forfeit_reason"]
            match.banks_ms = [int(b) for b in data["banks_ms"]]
            match.timeouts = [int(t) for t in data["timeouts"]]
            match._restore(data)
            if len(match.banks_ms) != cls.SEATS or len(match.timeouts) != cls.SEATS:
                raise InvalidState(f"a {cls.KIND} match has {cls.SEATS} seats")
        except InvalidState:
            raise
        except RulesError as exc:
            raise InvalidState(f"malformed match state: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed match state: {exc}") from None
        return match

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MultiMatch):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]
