"""A whole match as a pure state machine: hands chained by the format's rules (docs/engine.md 3, 6).

:class:`Match` wraps the current :class:`~service.games.gin.hand.Hand` and the list of finished
hands. The service supplies each hand's deck (from the fair shuffle) when the match asks for a deal;
everything else — who deals, when the match ends, dead hands, forfeits — is decided here.

Status:

``AWAITING_DEAL``  the next hand needs a deck (``Match.deal``); ``dealer`` says who deals
``PLAYING``        a hand is in progress; actions go to ``Match.apply``
``FINISHED``       the format's end condition was met, or a player forfeited
``VOID``           First To Knock only: too many dead hands (6.2.4); stakes are refunded

A forfeit in the middle of a hand ends that hand too (:meth:`Hand.forfeit`): it is *cut short*
(outcome ``forfeit``), has ended like any other (its history can be revealed, docs/engine.md 10.4)
but is no :class:`HandRecord`, since it scores nothing. Once the match is over no hand is in
play: no seat is to act and nobody has a legal action.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from service.games.common.cards import Card
from service.games.common.errors import IllegalAction, InvalidState, RulesError
from service.games.common.settings import FtkWinnerRule, MatchSettings
from service.games.gin.actions import Action, ActionKind
from service.games.gin.clock import play_timeout
from service.games.gin.formats import FIRST_TO_KNOCK
from service.games.gin.game import Game
from service.games.gin.hand import FORFEIT, Hand
from service.games.protocol import RESIGN, MatchStatus

MATCH_SCHEMA = 1

#: What a seated player may send to a live match: a hand's actions, and RESIGN (a forfeit).
PLAYER_ACTIONS = (*(kind.value for kind in ActionKind), RESIGN)


@dataclass(frozen=True, slots=True)
class HandRecord:
    """A finished hand as the match and the payout maths see it."""

    number: int
    dealer: int
    kind: str
    winner: int | None
    points: int
    knocker: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "dealer": self.dealer,
            "kind": self.kind,
            "winner": self.winner,
            "points": self.points,
            "knocker": self.knocker,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HandRecord:
        return cls(
            data["number"],
            data["dealer"],
            data["kind"],
            data["winner"],
            data["points"],
            data["knocker"],
        )


def ftk_winner(settings: MatchSettings, records: Sequence[HandRecord]) -> int | None:
    """The winner of a First To Knock match (6.2.3): the first legal knocker, or the
    deciding hand's winner under ``HAND_WINNER``; None while no hand was decided."""
    decided = [r for r in records if r.kind != "dead"]
    if not decided:
        return None
    if settings.ftk_winner_rule is FtkWinnerRule.FIRST_KNOCKER:
        return decided[0].knocker
    return decided[0].winner


class Match:
    """One match between seats 0 and 1; see the module docstring."""

    #: The ``kind`` its stored state carries; a state without one (stored before Gin's
    #: carried it) reads as Gin all the same.
    KIND: ClassVar[str] = "gin"

    def __init__(self, settings: MatchSettings, first_dealer: int) -> None:
        if first_dealer not in (0, 1):
            raise InvalidState(f"first dealer must be seat 0 or 1, not {first_dealer!r}")
        self.settings = settings
        self.first_dealer = first_dealer
        self.dealer = first_dealer
        self.status = MatchStatus.AWAITING_DEAL
        self.hand: Hand | None = None
        self.records: list[HandRecord] = []
        self.forfeiter: int | None = None
        self.forfeit_reason: str | None = None
        # The clock (9.1-9.2), in milliseconds of whatever epoch the caller uses.
        bank = settings.clock.bank_seconds * 1000
        self.turn_started_ms: int | None = None
        self.banks_ms = [bank, bank]
        self.timeouts = [0, 0]

    # --- reading -------------------------------------------------------------------

    @property
    def hand_number(self) -> int:
        """The number of the current (or next) hand, from 1; the fairness nonce. Once the
        match is over: the last hand dealt, a hand cut short by a forfeit included."""
        return self.hands_ended if self.over else len(self.records) + 1

    @property
    def cut_short(self) -> bool:
        """Whether the current hand was ended by a forfeit (it then has no record)."""
        hand = self.hand
        return hand is not None and hand.outcome is not None and hand.outcome.kind == FORFEIT

    @property
    def hands_ended(self) -> int:
        """How many hands have ended: the recorded ones and one cut short by a forfeit."""
        return len(self.records) + (1 if self.cut_short else 0)

    def ended_hand(self) -> HandRecord | None:
        """The last hand that ended, as a record: the last of :attr:`records`, or the hand a
        forfeit cut short (kind ``forfeit``, won by the opponent for no points; it is not in
        :attr:`records`, which are what the match scores)."""
        hand = self.hand
        if self.cut_short and hand is not None and hand.outcome is not None:
            out = hand.outcome
            return HandRecord(
                len(self.records) + 1, hand.dealer, out.kind, out.winner, out.points, out.knocker
            )
        return self.records[-1] if self.records else None

    @property
    def over(self) -> bool:
        return self.status in (MatchStatus.FINISHED, MatchStatus.VOID)

    @property
    def target(self) -> int | None:
        if self.settings.format is FIRST_TO_KNOCK:
            return None
        return self.settings.target

    def game(self) -> Game:
        """Hand points and boxes so far."""
        game = Game(self.settings.ruleset, self.target or 10**9)
        for r in self.records:
            if not game.over:
                game.record(r.winner, r.points)
        return game

    @property
    def winner(self) -> int | None:
        """The seat that won the match, when the format names one before the money maths
        (First To Knock, Match Play, forfeits); Money Play and classic winners come from the
        final totals (see :mod:`service.games.gin.payout`)."""
        if self.status is not MatchStatus.FINISHED:
            return None
        if self.forfeiter is not None:
            return 1 - self.forfeiter
        if self.settings.format is FIRST_TO_KNOCK:
            return ftk_winner(self.settings, self.records)
        return self.game().target_reacher

    # --- driving -------------------------------------------------------------------

    def deal(self, deck: Sequence[Card | str], now_ms: int | None = None) -> Hand:
        """Start the next hand from ``deck`` (deal order), dealt by :attr:`dealer`; the first
        player's turn clock starts at ``now_ms``.

        :raises IllegalAction: unless the match is waiting for a deal.
        """
        if self.status is not MatchStatus.AWAITING_DEAL:
            raise IllegalAction(
                f"the match is {self.status.value}, not awaiting a deal", "MATCH_NOT_AWAITING_DEAL"
            )
        self.hand = Hand.deal(list(deck), self.dealer, self.settings.ruleset)
        self.status = MatchStatus.PLAYING
        self.turn_started_ms = now_ms
        return self.hand

    def apply(
        self, seat: int, action: Action | str, *, at: str | None = None, now_ms: int | None = None
    ) -> Hand:
        """Apply a hand action; when it ends the hand, score it and move the match on.
        With ``now_ms`` the time used beyond the turn allowance is drawn from the seat's bank.

        :raises IllegalAction: when no hand is being played or the action is illegal.
        """
        if self.status is not MatchStatus.PLAYING or self.hand is None:
            raise IllegalAction(
                f"no hand is being played (match {self.status.value})", "NO_HAND_IN_PLAY"
            )
        hand = self.hand
        hand.apply(seat, action, at=at)
        self._charge_clock(seat, now_ms)
        if hand.ended:
            self._finish_hand(hand)
        return hand

    def _charge_clock(self, seat: int, now_ms: int | None) -> None:
        if now_ms is None:
            return
        clock = self.settings.clock
        self.banks_ms[seat] = clock.bank_after(self.banks_ms[seat], self.turn_started_ms, now_ms)
        self.turn_started_ms = now_ms

    def deadline_ms(self) -> int | None:
        """When the player to act runs out of time (turn allowance plus bank), or None."""
        if self.status is not MatchStatus.PLAYING or self.hand is None:
            return None
        if self.turn_started_ms is None:
            return None
        return self.settings.clock.deadline_ms(
            self.turn_started_ms, self.banks_ms[self.hand.to_act]
        )

    def timeout(self, now_ms: int, *, at: str | None = None) -> str | None:
        """Act for the player whose time is spent (9.2): the automatic action, counted as a
        timeout, and a forfeit after ``max_timeouts`` (or at once under ``FORFEIT``).

        Returns what happened (``"auto:<action>"`` or ``"forfeit"``), or None when nobody's
        time is spent at ``now_ms`` (nothing changes then).
        """
        deadline = self.deadline_ms()
        if deadline is None or now_ms < deadline or self.hand is None:
            return None
        hand = self.hand

        def after_action() -> None:
            self.turn_started_ms = now_ms
            if hand.ended:
                self._finish_hand(hand)

        clock = self.settings.clock
        return play_timeout(self, clock, hand, hand.to_act, at=at, after_action=after_action)

    def _finish_hand(self, hand: Hand) -> None:
        out = hand.outcome
        assert out is not None
        record = HandRecord(
            len(self.records) + 1, hand.dealer, out.kind, out.winner, out.points, out.knocker
        )
        self.records.append(record)
        self.dealer = hand.next_dealer()
        fmt = self.settings.format
        if fmt is FIRST_TO_KNOCK:
            if out.kind != "dead":
                self.status = MatchStatus.FINISHED
                return
            cap = self.settings.ftk_max_dead_hands
            dead = sum(1 for r in self.records if r.kind == "dead")
            if cap and dead > cap:
                self.status = MatchStatus.VOID
                return
        elif self.game().over:
            self.status = MatchStatus.FINISHED
            return
        self.status = MatchStatus.AWAITING_DEAL

    def forfeit(self, seat: int, reason: str = "resign", *, at: str | None = None) -> None:
        """``seat`` forfeits (resignation or timeouts, 9.3-9.4): the match ends at once, and
        so does the hand in play, cut short (a timeout's forfeit is logged in it as automatic,
        as the server's other actions on a timeout are).

        :raises IllegalAction: when the match is already over or the seat is unknown.
        """
        if self.over:
            raise IllegalAction("the match is already over", "MATCH_OVER")
        if seat not in (0, 1):
            raise IllegalAction(f"no such seat: {seat!r}", "NO_SUCH_SEAT")
        if self.status is MatchStatus.PLAYING and self.hand is not None and not self.hand.ended:
            self.hand.forfeit(seat, reason, at=at, automatic=reason == "timeout")
        self.forfeiter = seat
        self.forfeit_reason = reason
        self.status = MatchStatus.FINISHED

    # --- serialisation -------------------------------------------------------------

    def copy(self) -> Match:
        """An independent copy: changes to either leave the other as it was (as a round trip
        through :meth:`to_dict` and :meth:`from_dict` would, for a fraction of its cost)."""
        match = Match.__new__(Match)
        match.__dict__.update(self.__dict__)
        match.hand = None if self.hand is None else self.hand.copy()
        match.records = list(self.records)
        match.banks_ms = list(self.banks_ms)
        match.timeouts = list(self.timeouts)
        return match

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": MATCH_SCHEMA,
            "kind": self.KIND,
            "settings": self.settings.to_dict(),
            "first_dealer": self.first_dealer,
            "dealer": self.dealer,
            "status": self.status.value,
            "hand": None if self.hand is None else self.hand.to_dict(),
            "records": [r.to_dict() for r in self.records],
            "forfeiter": self.forfeiter,
            "forfeit_reason": self.forfeit_reason,
            "turn_started_ms": self.turn_started_ms,
            "banks_ms": list(self.banks_ms),
            "timeouts": list(self.timeouts),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Match:
        """:raises InvalidState: when the data is malformed."""
        try:
            if data["schema"] != MATCH_SCHEMA:
                raise InvalidState(f"unknown match schema {data['schema']!r}")
            if data.get("kind", cls.KIND) != cls.KIND:
                raise InvalidState(f"not a {cls.KIND} match state: {data['kind']!r}")
            match = cls(MatchSettings.from_dict(data["settings"]), data["first_dealer"])
            match.dealer = data["dealer"]
            match.status = MatchStatus(data["status"])
            match.hand = None if data["hand"] is None else Hand.from_dict(data["hand"])
            match.records = [HandRecord.from_dict(r) for r in data["records"]]
            match.forfeiter = data["forfeiter"]
            match.forfeit_reason = data["forfeit_reason"]
            match.turn_started_ms = data["turn_started_ms"]
            match.banks_ms = [int(b) for b in data["banks_ms"]]
            match.timeouts = [int(t) for t in data["timeouts"]]
            hand = match.hand
            if match.over and match.forfeiter is not None and hand and not hand.ended:
                # Written before a forfeit cut the hand in play short: it ends now, so that
                # a finished match never has a hand in play.
                hand.forfeit(match.forfeiter, match.forfeit_reason or "resign")
        except RulesError as exc:
            if isinstance(exc, InvalidState):
                raise
            raise InvalidState(f"malformed match state: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed match state: {exc}") from None
        return match

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]
