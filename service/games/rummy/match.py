"""A basic Rummy match: several hands at one table with fixed seats (5.1.4, 5.6-5.8, 11.5.2,
11.5.3, 11.6.1, 11.6.3, 11.6.4, 11.7.3), as a pure state machine.

Every hand is a :class:`~service.games.rummy.hand.RummyHand` between the seats still in the match:
a :class:`RummySlot` names it before it is dealt (its number within the match, which is the
fairness nonce, the seats dealt in, ascending, and the dealer). Inside a hand the seats are
the hand's own ``0 .. k-1``: hand seat ``i`` is ``slot.seats[i]``, and since the seats dealt
in are listed in table order, the hand's clockwise order is the table's with the forfeiters
left out. An ended hand leaves a :class:`RummyRecord` in match seats.

The option ``rules.match`` says when the match ends:

``PER_HAND``   after its first hand with a winner: each hand is a match of its own (a
               per-hand table starts the next one; under PENALTY scoring that hand is settled
               as a one-deal match, 11.7.3)
``DEALS(n)``   after ``n`` hands with a winner; a void hand does not count (11.7.3)
``TARGET(t)``  after the hand in which a seat's cumulative figure reaches ``t``: its net
               pay-the-winner points under PAY_WINNER (11.7.3), its penalty total under
               PENALTY (5.7.2)

and in every mode once fewer than two seats remain that have not forfeited. The winners are
the seats with the best cumulative figure (the highest net points, or the lowest penalty
total: 5.7.2), all of them on equal figures, forfeiters left out.

The next hand's dealer is the hand engine's :func:`~service.games.rummy.hand.next_dealer` of the
hand just ended (5.1.4: the winner at two players, else the seat on the dealer's left; a void
hand is dealt again by the same dealer), in match seats; when that seat has forfeited, the
deal passes on to the left to the next seat still in the match.

A forfeit (11.6.3) takes a seat out of the match: in the hand being played it counts as a
loser's (the engine's :meth:`~service.games.rummy.hand.RummyHand.forfeit`), the seat keeps every
point or penalty it has so far and is dealt no further hand. The clock (9.1, 9.2, 11.6.1) is
the turn allowance plus each seat's bank; when both are spent the server plays the engine's
:func:`~service.games.rummy.hand.automatic_action`, counts a timeout and, after
``clock.max_timeouts`` (or at once under ``FORFEIT``), forfeits the seat.

:class:`RummyStandings` holds the per-seat figures the money functions take as they are:
``net_points`` for :func:`~service.games.rummy.payout.rummy_match`, ``penalty_totals`` for
:func:`~service.games.rummy.payout.rummy_penalty`, and, on a per-hand table under
PAY_WINNER, the deciding hand's ``loser_counts`` for
:func:`~service.games.rummy.payout.rummy_per_hand`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from service.games.common.cards import Card
from service.games.common.clock import ClockSettings, OnTimeout
from service.games.common.errors import IllegalAction, InvalidSettings, InvalidState, RulesError
from service.games.common.seats import seat_in_hand, seated_view
from service.games.common.settings import Format
from service.games.protocol import MatchStatus
from service.games.rummy.actions import RummyAction
from service.games.rummy.fair import FairShuffle, fair_shuffle
from service.games.rummy.formats import RUMMY_DEALS, RUMMY_PER_HAND, RUMMY_TARGET
from service.games.rummy.hand import RummyHand, Shuffler, automatic_action
from service.games.rummy.rules import RummyRules, Scoring

RUMMY_MATCH_SCHEMA = 1
KIND = "rummy"


@dataclass(frozen=True, slots=True)
class RummyMatchSettings:
    """What a Rummy match is played with: ``players`` fixed seats, the ``first_dealer``
    (drawn at random by the table, 5.1.4), the ``rules`` (``rules.match`` is the mode) and
    the ``clock``."""

    players: int
    first_dealer: int
    rules: RummyRules = field(default_factory=RummyRules)
    clock: ClockSettings = field(default_factory=ClockSettings)

    def __post_init__(self) -> None:
        limit = self.rules.max_players
        if not isinstance(self.players, int) or not 2 <= self.players <= limit:
            raise InvalidSettings("players", f"must be 2-{limit}, not {self.players!r}")
        if not isinstance(self.first_dealer, int) or not 0 <= self.first_dealer < self.players:
            raise InvalidSettings(
                "first_dealer", f"must be a seat 0-{self.players - 1}, not {self.first_dealer!r}"
            )

    @property
    def money_format(self) -> Format:
        """The money format of 11.4's table this match is settled in."""
        if self.rules.match_deals is not None:
            return RUMMY_DEALS
        if self.rules.match_target is not None:
            return RUMMY_TARGET
        return RUMMY_PER_HAND

    def to_dict(self) -> dict[str, Any]:
        return {
            "players": self.players,
            "first_dealer": self.first_dealer,
            "rules": self.rules.to_dict(),
            "clock": self.clock.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RummyMatchSettings:
        """:raises InvalidSettings: on a bad value; InvalidRuleset on bad rules."""
        try:
            clock = ClockSettings(**data["clock"])
        except TypeError as exc:
            raise InvalidSettings("clock", f"unknown clock option: {exc}") from None
        return cls(
            data["players"], data["first_dealer"], RummyRules.from_dict(data["rules"]), clock
        )


@dataclass(frozen=True, slots=True)
class RummySlot:
    """A hand of the match before it is dealt: its ``number`` (from 1, the fairness nonce),
    the ``seats`` dealt in (ascending) and the ``dealer`` (a match seat)."""

    number: int
    seats: tuple[int, ...]
    dealer: int

    def __post_init__(self) -> None:
        ordered = all(a < b for a, b in zip(self.seats, self.seats[1:], strict=False))
        if len(self.seats) < 2 or not ordered or self.dealer not in self.seats:
            raise InvalidState(f"bad hand slot: seats {self.seats!r}, dealer {self.dealer!r}")

    @property
    def first_player(self) -> int:
        """The match seat on the dealer's left among those dealt in (5.2)."""
        return self.seats[(self.seats.index(self.dealer) + 1) % len(self.seats)]

    def hand_seat(self, seat: int) -> int:
        """The hand's own seat of match seat ``seat``.

        :raises IllegalAction: when ``seat`` is not dealt into this hand.
        """
        return seat_in_hand(self.seats, self.number, seat)

    def client_seeds(self, seeds_by_seat: Sequence[str]) -> tuple[str, ...]:
        """The client seeds of the seats dealt in, in ascending seat order (11.6.4)."""
        return tuple(seeds_by_seat[seat] for seat in self.seats)

    def fair_shuffle(self, server_seed: str, seeds_by_seat: Sequence[str]) -> FairShuffle:
        """This hand's fair shuffle (11.6.4): the dealt-in seats' client seeds, ascending,
        and :attr:`number` as nonce. Deal its ``deck`` with it as the shuffler."""
        return fair_shuffle(server_seed, self.client_seeds(seeds_by_seat), self.number)

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "seats": list(self.seats), "dealer": self.dealer}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RummySlot:
        return cls(int(data["number"]), tuple(int(s) for s in data["seats"]), int(data["dealer"]))


@dataclass(frozen=True, slots=True)
class RummyRecord:
    """A hand that ended, in match seats: its ``winner`` (None when ``void`` names why),
    whether the winner ``went_rummy``, and per match seat (0 for a seat not dealt in) the
    ``counts`` left in hand, the ``points`` (PAY_WINNER) and the ``penalties`` (PENALTY; the
    other figure is all 0); ``forfeited`` are the seats that forfeited during the hand."""

    slot: RummySlot
    winner: int | None
    void: str | None
    went_rummy: bool
    counts: tuple[int, ...]
    points: tuple[int, ...]
    penalties: tuple[int, ...]
    forfeited: tuple[int, ...]

    @property
    def number(self) -> int:
        return self.slot.number

    @property
    def loser_counts(self) -> dict[int, int]:
        """Each dealt-in loser's count, as :func:`~service.games.rummy.payout.rummy_per_hand`
        takes it (empty for a void hand)."""
        if self.winner is None:
            return {}
        return {s: self.counts[s] for s in self.slot.seats if s != self.winner}

    @classmethod
    def of(cls, slot: RummySlot, hand: RummyHand, players: int) -> RummyRecord:
        out = hand.outcome
        assert out is not None

        def spread(values: Sequence[int] | None) -> tuple[int, ...]:
            by_seat = [0] * players
            for i, value in enumerate(values or ()):
                by_seat[slot.seats[i]] = value
            return tuple(by_seat)

        return cls(
            slot,
            None if out.winner is None else slot.seats[out.winner],
            None if out.void is None else out.void.value,
            out.went_rummy,
            spread(out.counts),
            spread(out.points),
            spread(out.penalties),
            tuple(slot.seats[i] for i, gone in enumerate(hand.forfeited) if gone),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.slot.to_dict(),
            "winner": self.winner,
            "void": self.void,
            "went_rummy": self.went_rummy,
            "counts": list(self.counts),
            "points": list(self.points),
            "penalties": list(self.penalties),
            "forfeited": list(self.forfeited),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RummyRecord:
        return cls(
            RummySlot.from_dict(data),
            data["winner"],
            data["void"],
            bool(data["went_rummy"]),
            tuple(int(v) for v in data["counts"]),
            tuple(int(v) for v in data["points"]),
            tuple(int(v) for v in data["penalties"]),
            tuple(int(v) for v in data["forfeited"]),
        )


@dataclass(frozen=True, slots=True)
class RummyStandings:
    """How the match stands. ``points`` are each seat's cumulative net pay-the-winner points
    (zero-sum; all 0 under PENALTY), ``penalties`` its cumulative penalties (all 0 under
    PAY_WINNER), ``deals`` the hands with a winner so far. ``winners`` (once ``over``) are
    the seats with the best figure, forfeiters left out. ``deciding_hand`` is, on a per-hand
    table, the hand that ended the match (None if a forfeit ended it before any result)."""

    scoring: Scoring
    mode: str
    money_format: Format
    points: tuple[int, ...]
    penalties: tuple[int, ...]
    deals: int
    over: bool
    winners: tuple[int, ...]
    forfeited: tuple[int, ...]
    deciding_hand: RummyRecord | None

    @property
    def seats(self) -> tuple[int, ...]:
        return tuple(range(len(self.points)))

    @property
    def net_points(self) -> dict[int, int]:
        """Per seat, what :func:`~service.games.rummy.payout.rummy_match` takes."""
        return dict(enumerate(self.points))

    @property
    def penalty_totals(self) -> dict[int, int]:
        """Per seat, what :func:`~service.games.rummy.payout.rummy_penalty` takes."""
        return dict(enumerate(self.penalties))

    def to_dict(self) -> dict[str, Any]:
        hand = self.deciding_hand
        return {
            "scoring": self.scoring.value,
            "mode": self.mode,
            "money_format": self.money_format.value,
            "points": list(self.points),
            "penalties": list(self.penalties),
            "deals": self.deals,
            "over": self.over,
            "winners": list(self.winners),
            "forfeited": list(self.forfeited),
            "deciding_hand": None if hand is None else hand.to_dict(),
        }


class RummyMatch:
    """A basic Rummy match; see the module docstring. Statuses are the two-player match's:
    ``AWAITING_DEAL`` until :meth:`deal` deals :meth:`next_hand`, ``PLAYING`` while that hand
    is played, ``FINISHED`` at the end."""

    KIND: ClassVar[str] = KIND

    def __init__(self, settings: RummyMatchSettings) -> None:
        self.settings = settings
        self.status = MatchStatus.AWAITING_DEAL
        self.dealer = settings.first_dealer  # the next hand's dealer before forfeits are skipped
        self.slot: RummySlot | None = None  # the hand in play, or the last one dealt
        self.hand: RummyHand | None = None
        self.turn_started_ms: int | None = None
        self.records: list[RummyRecord] = []
        players = settings.players
        self.forfeited = [False] * players
        self.forfeit_reasons: list[str | None] = [None] * players
        self.banks_ms = [settings.clock.bank_seconds * 1000] * players
        self.timeouts = [0] * players

    # --- reading -----------------------------------------------------------------------

    @property
    def rules(self) -> RummyRules:
        return self.settings.rules

    @property
    def seats(self) -> range:
        return range(self.settings.players)

    @property
    def over(self) -> bool:
        return self.status is MatchStatus.FINISHED

    @property
    def active_seats(self) -> tuple[int, ...]:
        """The seats that have not forfeited, ascending."""
        return tuple(s for s in self.seats if not self.forfeited[s])

    @property
    def forfeiters(self) -> tuple[int, ...]:
        return tuple(s for s in self.seats if self.forfeited[s])

    @property
    def deals(self) -> int:
        """Hands that ended with a winner (what ``DEALS(n)`` counts)."""
        return sum(1 for r in self.records if r.winner is not None)

    @property
    def hands_ended(self) -> int:
        return len(self.records)

    @property
    def points(self) -> tuple[int, ...]:
        return tuple(sum(r.points[s] for r in self.records) for s in self.seats)

    @property
    def penalties(self) -> tuple[int, ...]:
        return tuple(sum(r.penalties[s] for r in self.records) for s in self.seats)

    def next_hand(self) -> RummySlot | None:
        """The hand waiting for its deck (deal it with :meth:`deal`), or None."""
        if self.status is not MatchStatus.AWAITING_DEAL:
            return None
        active = self.active_seats
        dealer = next(
            seat
            for step in range(self.settings.players)
            if (seat := (self.dealer + step) % self.settings.players) in active
        )
        return RummySlot(len(self.records) + 1, active, dealer)

    @property
    def to_act(self) -> tuple[int, ...]:
        """The seat to act now (one at most), as a tuple like the Gin matches'."""
        if self.status is not MatchStatus.PLAYING:
            return ()
        assert self.hand is not None and self.slot is not None
        return () if self.hand.to_act is None else (self.slot.seats[self.hand.to_act],)

    def legal_actions(self, seat: int) -> list[RummyAction]:
        """What ``seat`` may do now (nothing when it is not its turn)."""
        if self.status is not MatchStatus.PLAYING or seat not in self.to_act:
            return []
        assert self.hand is not None and self.slot is not None
        return self.hand.legal_actions(self.slot.hand_seat(seat))

    def _check_seat(self, seat: int) -> None:
        if not isinstance(seat, int) or seat not in self.seats:
            raise IllegalAction(f"no such seat: {seat!r}", "NO_SUCH_SEAT")

    def _in_play(self) -> tuple[RummySlot, RummyHand]:
        if self.status is not MatchStatus.PLAYING:
            raise IllegalAction(
                f"no hand is being played (match {self.status.value})", "NO_HAND_IN_PLAY"
            )
        assert self.slot is not None and self.hand is not None
        return self.slot, self.hand

    # --- standings ---------------------------------------------------------------------

    def _reached_end(self) -> bool:
        if len(self.active_seats) < 2:
            return True
        rules = self.rules
        deals, target = rules.match_deals, rules.match_target
        if deals is None and target is None:  # PER_HAND: one hand with a winner
            return self.deals >= 1
        if deals is not None:
            return self.deals >= deals
        assert target is not None
        figures = self.penalties if rules.scoring is Scoring.PENALTY else self.points
        return max(figures) >= target

    def standings(self) -> RummyStandings:
        rules = self.rules
        penalty = rules.scoring is Scoring.PENALTY
        points, penalties = self.points, self.penalties
        winners: tuple[int, ...] = ()
        if self.over:
            active = self.active_seats
            if penalty:
                best = min(penalties[s] for s in active)
                winners = tuple(s for s in active if penalties[s] == best)
            else:
                best = max(points[s] for s in active)
                winners = tuple(s for s in active if points[s] == best)
        deciding = None
        if self.settings.money_format is RUMMY_PER_HAND:
            deciding = next((r for r in reversed(self.records) if r.winner is not None), None)
        return RummyStandings(
            scoring=rules.scoring,
            mode=rules.match,
            money_format=self.settings.money_format,
            points=points,
            penalties=penalties,
            deals=self.deals,
            over=self.over,
            winners=winners,
            forfeited=self.forfeiters,
            deciding_hand=deciding,
        )

    # --- driving -----------------------------------------------------------------------

    def deal(
        self,
        deck: Sequence[Card | str] | str,
        shuffler: Shuffler | None = None,
        *,
        now_ms: int | None = None,
    ) -> RummyHand:
        """Deal :meth:`next_hand` from ``deck`` (deal order) with ``shuffler`` for its
        SHUFFLE restocks (the slot's :meth:`RummySlot.fair_shuffle` in the service); the first
        player's clock starts at ``now_ms``.

        :raises IllegalAction: unless the match is waiting for a deal.
        :raises InvalidDeal: on a bad deck.
        """
        slot = self.next_hand()
        if slot is None:
            raise IllegalAction(
                f"the match is {self.status.value}, not awaiting a deal", "MATCH_NOT_AWAITING_DEAL"
            )
        hand = RummyHand.deal(
            len(slot.seats), slot.hand_seat(slot.dealer), deck, self.rules, shuffler
        )
        self.slot, self.hand, self.turn_started_ms = slot, hand, now_ms
        self.status = MatchStatus.PLAYING
        return hand

    def apply(
        self,
        seat: int,
        action: RummyAction | str | Mapping[str, Any],
        *,
        at: str | None = None,
        now_ms: int | None = None,
    ) -> RummyHand:
        """Apply ``seat``'s action to the hand; an ended hand is recorded and moves the match
        on. With ``now_ms`` the time over the turn allowance is drawn from the bank.

        :raises IllegalAction: when no hand is being played, the seat is not dealt in, or the
            action is refused (a RummyRefusal naming the rule; nothing changes).
        """
        slot, hand = self._in_play()
        self._check_seat(seat)
        self.hand = hand.apply(slot.hand_seat(seat), action, at=at)
        self._charge_clock(seat, now_ms)
        self._after_change()
        return self.hand

    def _after_change(self) -> None:
        """Record the hand if it has just ended and move the match on."""
        assert self.slot is not None and self.hand is not None
        if self.hand.outcome is None:
            return
        slot, hand = self.slot, self.hand
        self.records.append(RummyRecord.of(slot, hand, self.settings.players))
        self.dealer = slot.seats[hand.next_dealer()]
        self.status = MatchStatus.FINISHED if self._reached_end() else MatchStatus.AWAITING_DEAL

    def forfeit(
        self,
        seat: int,
        reason: str = "resign",
        *,
        at: str | None = None,
        now_ms: int | None = None,
    ) -> None:
        """``seat`` forfeits (11.6.3, 11.7.3): in the hand being played its cards count as a
        loser's and it takes no further turn; it keeps its points or penalties and is dealt
        no more hands. The match ends when fewer than two seats remain.

        :raises IllegalAction: when the match is over, the seat is unknown or already out.
        """
        if self.over:
            raise IllegalAction("the match is already over", "MATCH_OVER")
        self._check_seat(seat)
        if self.forfeited[seat]:
            raise IllegalAction(f"seat {seat} has already forfeited", "ALREADY_FORFEITED")
        self.forfeited[seat] = True
        self.forfeit_reasons[seat] = reason
        if self.status is MatchStatus.PLAYING:
            slot, hand = self._in_play()
            was_to_act = self.to_act == (seat,)
            self.hand = hand.forfeit(slot.hand_seat(seat), reason, at=at)
            if was_to_act:
                self.turn_started_ms = now_ms
            self._after_change()
        elif len(self.active_seats) < 2:
            self.status = MatchStatus.FINISHED

    # --- the clock ---------------------------------------------------------------------

    def _charge_clock(self, seat: int, now_ms: int | None) -> None:
        if now_ms is None:
            return
        clock = self.settings.clock
        self.banks_ms[seat] = clock.bank_after(self.banks_ms[seat], self.turn_started_ms, now_ms)
        self.turn_started_ms = now_ms

    def deadline_ms(self) -> int | None:
        """When the seat to act runs out of time (turn allowance plus its bank), or None."""
        if not self.to_act or self.turn_started_ms is None:
            return None
        return self.settings.clock.deadline_ms(self.turn_started_ms, self.banks_ms[self.to_act[0]])

    def timeout(self, now_ms: int, *, at: str | None = None) -> str | None:
        """Act for the seat to act if its time is spent at ``now_ms`` (9.2, 11.6.1): one
        timeout more; under ``FORFEIT`` a forfeit at once, else the automatic action (logged
        as automatic, the bank spent) and a forfeit once ``max_timeouts`` are reached.
        Returns ``"auto:<action>"`` or ``"forfeit"``; None when nobody's time is spent
        (nothing changes)."""
        deadline = self.deadline_ms()
        if deadline is None or deadline > now_ms:
            return None
        slot, hand = self._in_play()
        seat = self.to_act[0]
        clock = self.settings.clock
        self.timeouts[seat] += 1
        if clock.on_timeout is OnTimeout.FORFEIT:
            self.forfeit(seat, "timeout", at=at, now_ms=now_ms)
            return "forfeit"
        action = automatic_action(hand)
        after = hand.apply(slot.hand_seat(seat), action, at=at)
        self.hand = replace(after, log=(*after.log[:-1], {**after.log[-1], "automatic": True}))
        self.banks_ms[seat] = 0
        self.turn_started_ms = now_ms
        self._after_change()
        if self.timeouts[seat] >= clock.max_timeouts and not self.over:
            self.forfeit(seat, "timeout", at=at, now_ms=now_ms)
            return "forfeit"
        return f"auto:{action}"

    # --- views -------------------------------------------------------------------------

    def view(self, seat: int | None) -> dict[str, Any]:
        """What ``seat`` may see (None: a spectator, 11.6.5): its own hand and legal actions,
        the current (or last) hand's public part, the ended hands' results, the standings,
        who is to act and when its time runs out. Never another seat's cards and never a
        stock card (an ended hand's full record is :meth:`RummyHand.history`).

        :raises RulesError: for an unknown seat.
        """
        if seat is not None and seat not in self.seats:
            raise RulesError(f"no such seat: {seat!r}")
        coming = self.next_hand()
        hand_view = None
        if self.slot is not None and self.hand is not None:
            place = self.slot.hand_seat(seat) if seat in self.slot.seats else None
            hand_view = {
                **self.slot.to_dict(),
                "first_player": self.slot.first_player,
                "to_act": None if self.hand.to_act is None else self.slot.seats[self.hand.to_act],
                "position": place,
                "hand": seated_view(self.hand.view(place), self.slot.seats),
            }
        view: dict[str, Any] = {
            "kind": KIND,
            "status": self.status.value,
            "you": seat,
            "players": self.settings.players,
            "rules": self.rules.to_dict(),
            "to_act": list(self.to_act),
            "deadline_ms": self.deadline_ms(),
            "next_hand": None if coming is None else coming.to_dict(),
            "hand": hand_view,
            "hands": [r.to_dict() for r in self.records],
            "standings": self.standings().to_dict(),
            "forfeited": list(self.forfeited),
            "forfeit_reasons": list(self.forfeit_reasons),
            "timeouts": list(self.timeouts),
            "bank_ms": list(self.banks_ms),
        }
        if seat is not None:
            view["legal_actions"] = [a.to_dict() for a in self.legal_actions(seat)]
        return view

    # --- serialisation -----------------------------------------------------------------

    def copy(self) -> RummyMatch:
        """An independent copy: changes to either leave the other as it was (as a round trip
        through :meth:`to_dict` and :meth:`from_dict` keeping the current hand's shuffler
        would, for a fraction of its cost). The lists the match changes in place are copied;
        the rest never changes and is shared: the settings, the slot, the records, and the
        hand (a :class:`RummyHand` is immutable: an action or a forfeit replaces it, and a
        log entry is complete before it is appended), its shuffler included."""
        match = RummyMatch.__new__(RummyMatch)
        match.__dict__.update(self.__dict__)
        match.records = list(self.records)
        match.forfeited = list(self.forfeited)
        match.forfeit_reasons = list(self.forfeit_reasons)
        match.banks_ms = list(self.banks_ms)
        match.timeouts = list(self.timeouts)
        return match

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data holding the whole state, the hand's secrets included."""
        return {
            "schema": RUMMY_MATCH_SCHEMA,
            "kind": KIND,
            "settings": self.settings.to_dict(),
            "status": self.status.value,
            "dealer": self.dealer,
            "slot": None if self.slot is None else self.slot.to_dict(),
            "hand": None if self.hand is None else self.hand.to_dict(),
            "turn_started_ms": self.turn_started_ms,
            "records": [r.to_dict() for r in self.records],
            "forfeited": list(self.forfeited),
            "forfeit_reasons": list(self.forfeit_reasons),
            "banks_ms": list(self.banks_ms),
            "timeouts": list(self.timeouts),
            "fair": _fair_of(None if self.hand is None else self.hand.shuffler),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], shuffler: Shuffler | None = None) -> RummyMatch:
        """Restore a state written by :meth:`to_dict`; ``shuffler`` is the current hand's
        (its fair shuffle), as for :meth:`deal`. Without one, the hand's fair shuffle kept in
        the state (``fair``: it is secret like the deck) is restored.

        :raises InvalidState: when the data is malformed or inconsistent.
        """
        try:
            if data["schema"] != RUMMY_MATCH_SCHEMA or data["kind"] != KIND:
                raise InvalidState(f"not a {KIND} match state: {data['kind']!r}")
            match = cls(RummyMatchSettings.from_dict(data["settings"]))
            match.status = MatchStatus(data["status"])
            match.dealer = int(data["dealer"])
            slot, hand = data["slot"], data["hand"]
            match.slot = None if slot is None else RummySlot.from_dict(slot)
            kept = data.get("fair")
            if shuffler is None and kept is not None:
                shuffler = fair_shuffle(
                    kept["server_seed"], tuple(kept["client_seeds"]), int(kept["nonce"])
                )
            match.hand = None if hand is None else RummyHand.from_dict(hand, shuffler)
            started = data["turn_started_ms"]
            match.turn_started_ms = None if started is None else int(started)
            match.records = [RummyRecord.from_dict(r) for r in data["records"]]
            match.forfeited = [bool(f) for f in data["forfeited"]]
            match.forfeit_reasons = list(data["forfeit_reasons"])
            match.banks_ms = [int(b) for b in data["banks_ms"]]
            match.timeouts = [int(t) for t in data["timeouts"]]
        except InvalidState:
            raise
        except RulesError as exc:
            raise InvalidState(f"malformed rummy match state: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed rummy match state: {exc!r}") from None
        match._check_consistent()
        return match

    def _check_consistent(self) -> None:
        n = self.settings.players
        per_seat = (self.forfeited, self.forfeit_reasons, self.banks_ms, self.timeouts)
        if any(len(values) != n for values in per_seat) or not 0 <= self.dealer < n:
            raise InvalidState(f"a rummy match of {n} seats needs {n} of each per-seat entry")
        if (self.slot is None) != (self.hand is None):
            raise InvalidState("a dealt hand has a slot, and only it")
        if self.slot is not None and self.hand is not None:
            if self.hand.players != len(self.slot.seats) or self.slot.seats[-1] >= n:
                raise InvalidState(f"hand {self.slot.number} does not match its slot")
            if self.hand.dealer != self.slot.hand_seat(self.slot.dealer):
                raise InvalidState(f"hand {self.slot.number}: its dealer is not the slot's")
        if (self.status is MatchStatus.PLAYING) != (self.hand is not None and not self.hand.ended):
            raise InvalidState("a match is PLAYING exactly while its hand is being played")
        for record in self.records:
            figures = (record.counts, record.points, record.penalties)
            if any(len(values) != n for values in figures):
                raise InvalidState(f"hand {record.number}'s record needs {n} figures each")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RummyMatch):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"<RummyMatch {self.settings.players}p {self.rules.match} {self.status.value}"
            f" hands={len(self.records)}>"
        )


def _fair_of(shuffler: Shuffler | None) -> dict[str, Any] | None:
    """A hand's fair shuffle as state (the SHUFFLE restocks of a restored hand need it)."""
    if not isinstance(shuffler, FairShuffle):
        return None
    return {
        "server_seed": shuffler.server_seed,
        "client_seeds": list(shuffler.client_seeds),
        "nonce": shuffler.nonce,
    }
