"""One hand of basic Rummy for 2-6 players as an immutable state machine (docs/rummy.md).

A :class:`RummyHand` is dealt from a 52-card deck (:meth:`RummyHand.deal`) and then driven by
:meth:`RummyHand.apply`, which returns a *new* hand with the action applied, or raises a
:class:`~service.games.rummy.errors.RummyRefusal` naming the rule; the hand it was called on
never changes. :meth:`RummyHand.forfeit` takes a seat out of the hand (11.6.3).

Seats are 0 .. players - 1, clockwise (the dealer's left is ``dealer + 1``). A turn has two
phases:

``DRAW``   the seat to act takes one card: DRAW_STOCK, DRAW_DISCARD or, with an empty stock
           at a TURN_OVER table, TURN_OVER (5.2.1, 5.5, 11.3.1-11.3.2)
``PLAY``   any number of MELD and LAY_OFF, then DISCARD (5.2.2-5.2.5); emptying the hand by
           a meld, lay-off or discard goes out and ends the hand at once (5.4)
``ENDED``  :attr:`RummyHand.outcome` says how: a winner, or void (``MAX_RESTOCKS``,
           ``MAX_TURNS``, ``NO_CARDS``; 5.5.4, 11.3.3, 11.7.1)

A hand at the start of a turn is checked for the voids at once, so a hand never waits on a
player who could not draw. The whole state, secrets included, is plain data
(:meth:`RummyHand.to_dict`, restored exactly by :meth:`RummyHand.from_dict`);
:meth:`RummyHand.view` is what one seat (or a spectator) may see; :meth:`RummyHand.history`
is the full record once the hand has ended.

The shuffle of a SHUFFLE restock (11.3.1) is injected: ``shuffler(cards)`` receives the
discard pile bottom card first and returns the new stock top card first. Without one the
operating system's random source shuffles; the service injects the fair shuffle
(:func:`service.games.rummy.fair.fair_shuffle`), whose restocks continue the deal's stream.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from service.games.common.cards import Card, cards_to_mask, mask_to_cards, parse_cards
from service.games.common.errors import InvalidState, RulesError
from service.games.rummy.actions import RummyAction, RummyActionKind, coerce_action
from service.games.rummy.errors import (
    AlreadyDrew,
    AlreadyForfeited,
    CardNotInHand,
    DiscardPileCardBarred,
    DiscardPileEmpty,
    HandOver,
    InvalidDeal,
    InvalidLayOff,
    InvalidShuffle,
    MustDiscardToGoOut,
    MustDrawFirst,
    MustRestock,
    NoLegalDiscardLeft,
    NoSuchMeld,
    NoSuchSeat,
    NotAMeld,
    NotYourTurn,
    RummyRefusal,
    StockEmpty,
    TurnOverNotAllowed,
)
from service.games.rummy.melds import lay_offs_onto, melds_in, rummy_meld_kind
from service.games.rummy.rules import Restock, RummyRules, Scoring

STATE_SCHEMA = 1
FORFEIT_ACTION = "FORFEIT"  # the log entry of a forfeit (not a player's action)
Shuffler = Callable[[list[Card]], Sequence[Card | str]]


@runtime_checkable
class ContinuingShuffler(Protocol):
    """A shuffler whose restocks continue one stream (the fair shuffle,
    :class:`service.games.rummy.fair.FairShuffle`): before each restock the hand asks it for
    the shuffler that follows restocks of the pile sizes its log records."""

    def __call__(self, cards: list[Card], /) -> Sequence[Card | str]: ...

    def at(self, earlier: Sequence[int]) -> Shuffler: ...


class Phase(StrEnum):
    __hash__ = str.__hash__

    DRAW = "DRAW"
    PLAY = "PLAY"
    ENDED = "ENDED"


class Void(StrEnum):
    """Why a hand ended with no winner (5.5.4, 11.3.3, 11.7.1)."""

    MAX_RESTOCKS = "MAX_RESTOCKS"
    MAX_TURNS = "MAX_TURNS"
    NO_CARDS = "NO_CARDS"


def deal_size(players: int) -> int:
    """Cards dealt to each player (5.1.2)."""
    return 10 if players == 2 else 7 if players <= 4 else 6


def next_dealer(players: int, dealer: int, winner: int | None) -> int:
    """The next hand's dealer (5.1.4): the winner with two players, else the seat on the
    dealer's left; a void hand is dealt again by the same dealer."""
    if winner is None:
        return dealer
    return winner if players == 2 else (dealer + 1) % players


def _system_shuffle(cards: list[Card]) -> list[Card]:
    shuffled = list(cards)
    secrets.SystemRandom().shuffle(shuffled)
    return shuffled


def _codes(cards: Sequence[Card]) -> list[str]:
    return [card.code for card in cards]


@dataclass(frozen=True, slots=True)
class LayOff:
    """Cards one seat added to a table meld in one action."""

    seat: int
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class TableMeld:
    """A meld on the table: who made it with which cards, and every lay-off onto it since."""

    melded_by: int
    melded: tuple[Card, ...]
    layoffs: tuple[LayOff, ...] = ()

    @property
    def cards(self) -> tuple[Card, ...]:
        """All its cards in display order (11.3.7)."""
        return mask_to_cards(self.mask)

    @property
    def mask(self) -> int:
        return cards_to_mask(self.melded + tuple(c for lay in self.layoffs for c in lay.cards))

    def placed_by(self, card: Card | str) -> int:
        """The seat that put ``card`` on this meld.

        :raises KeyError: when the card is not in this meld.
        """
        if card in self.melded:
            return self.melded_by
        for lay in self.layoffs:
            if card in lay.cards:
                return lay.seat
        raise KeyError(card)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cards": _codes(self.cards),
            "melded_by": self.melded_by,
            "melded": _codes(self.melded),
            "layoffs": [{"seat": lay.seat, "cards": _codes(lay.cards)} for lay in self.layoffs],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableMeld:
        return cls(
            int(data["melded_by"]),
            parse_cards(data["melded"]),
            tuple(LayOff(int(lay["seat"]), parse_cards(lay["cards"])) for lay in data["layoffs"]),
        )


@dataclass(frozen=True, slots=True)
class RummyOutcome:
    """How a hand ended. ``winner`` is the seat that went out (or the last seat left after
    forfeits), None when the hand is void (``void`` names why). ``counts`` is what each
    loser holds (5.6.1; 0 for the winner, all 0 when void). Under PAY_WINNER ``points`` is
    each seat's hand points (losers pay ``counts``, doubled when the winner went rummy; the
    winner gets the sum; 5.6) and ``penalties`` is None; under PENALTY ``penalties`` is each
    seat's penalty (``counts`` plus the rummy penalty when the winner went rummy; 5.7) and
    ``points`` is None."""

    winner: int | None
    went_rummy: bool
    void: Void | None
    counts: tuple[int, ...]
    points: tuple[int, ...] | None
    penalties: tuple[int, ...] | None

    @classmethod
    def scored(
        cls,
        rules: RummyRules,
        hands: Sequence[int],
        winner: int | None,
        went_rummy: bool,
        void: Void | None,
    ) -> RummyOutcome:
        """The outcome with ``winner`` (None when ``void``), scored from the seats' cards."""
        if winner is None:
            counts = tuple(0 for _ in hands)
            went_rummy = False
        else:
            counts = tuple(
                0
                if seat == winner
                else sum(rules.card_value(c.rank, c.points) for c in mask_to_cards(mask))
                for seat, mask in enumerate(hands)
            )
        points = penalties = None
        if rules.scoring is Scoring.PAY_WINNER:
            paid = tuple(-(2 if went_rummy else 1) * v for v in counts)
            points = tuple(-sum(paid) if seat == winner else p for seat, p in enumerate(paid))
        else:
            extra = rules.rummy_penalty if went_rummy else 0
            penalties = tuple(0 if seat == winner else v + extra for seat, v in enumerate(counts))
        return cls(winner, went_rummy, void, counts, points, penalties)

    def to_dict(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "went_rummy": self.went_rummy,
            "void": None if self.void is None else self.void.value,
            "counts": list(self.counts),
            "points": None if self.points is None else list(self.points),
            "penalties": None if self.penalties is None else list(self.penalties),
        }


@dataclass(frozen=True, slots=True, eq=False)
class RummyHand:
    """The state of one hand; see the module docstring. Never changes once built."""

    rules: RummyRules
    players: int
    dealer: int
    deck: tuple[Card, ...]
    hands: tuple[int, ...]  # each seat's cards as a 52-bit mask
    stock: tuple[Card, ...]  # top card first
    discard: tuple[Card, ...]  # bottom card first, top card last
    table: tuple[TableMeld, ...]
    phase: Phase
    to_act: int | None
    taken: Card | None  # the card taken from the discard pile this turn, while held (5.2.3)
    laid_this_turn: bool  # the seat to act has melded or laid off this turn
    laid_before: tuple[bool, ...]  # melded or laid off in an earlier turn (11.3.4)
    forfeited: tuple[bool, ...]
    restocks: int
    turns: int  # completed turns: turns that ended with a discard (11.3.3)
    outcome: RummyOutcome | None
    log: tuple[Mapping[str, Any], ...]
    shuffler: Shuffler = field(default=_system_shuffle, repr=False)
    # The seat to act's legal actions once worked out (the hand never changes, so neither do
    # they): a view lists them twice (the match's and the hand's part), a read and the
    # action's answer may list them again. Not state: every new hand starts without them.
    _legal: list[tuple[RummyAction, ...]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    # --- dealing -------------------------------------------------------------------

    @classmethod
    def deal(
        cls,
        players: int,
        dealer: int,
        deck: Sequence[Card | str] | str,
        rules: RummyRules | None = None,
        shuffler: Shuffler | None = None,
    ) -> RummyHand:
        """Deal from ``deck`` (52 cards, the first dealt first) per 5.1.2-5.1.3: one card at a
        time clockwise from the dealer's left, then the upcard, the rest the stock.

        :raises InvalidDeal: on a deck that is not the 52 cards once each, a player count
            outside 2..``rules.max_players`` or a dealer who is not one of the seats.
        """
        rules = rules if rules is not None else RummyRules()
        try:
            cards = parse_cards(deck)
        except RulesError as exc:
            raise InvalidDeal(f"bad deck: {exc}") from None
        if len(cards) != 52:
            raise InvalidDeal(f"a deck has 52 cards, not {len(cards)}")
        if not isinstance(players, int) or not 2 <= players <= rules.max_players:
            raise InvalidDeal(f"players must be 2-{rules.max_players}, not {players!r}")
        if not isinstance(dealer, int) or not 0 <= dealer < players:
            raise InvalidDeal(f"dealer must be a seat 0-{players - 1}, not {dealer!r}")
        dealt = deal_size(players) * players
        hands = [0] * players
        for i, card in enumerate(cards[:dealt]):
            hands[(dealer + 1 + i) % players] |= card.bit
        return cls(
            rules=rules,
            players=players,
            dealer=dealer,
            deck=cards,
            hands=tuple(hands),
            stock=cards[dealt + 1 :],
            discard=(cards[dealt],),
            table=(),
            phase=Phase.DRAW,
            to_act=(dealer + 1) % players,
            taken=None,
            laid_this_turn=False,
            laid_before=(False,) * players,
            forfeited=(False,) * players,
            restocks=0,
            turns=0,
            outcome=None,
            log=(),
            shuffler=shuffler or _system_shuffle,
        )

    # --- reading the state ---------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self.phase is Phase.ENDED

    @property
    def table_melds(self) -> tuple[TableMeld, ...]:
        """The melds on the table in the order they were made (LAY_OFF's index)."""
        return self.table

    def cards_of(self, seat: int) -> tuple[Card, ...]:
        """The cards ``seat`` holds, in display order.

        :raises NoSuchSeat: for a seat not in this hand.
        """
        return mask_to_cards(self.hands[self._seat(seat)])

    def _seat(self, seat: int) -> int:
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < self.players:
            raise NoSuchSeat(f"no seat {seat!r} in a hand of {self.players} players")
        return seat

    def _next_active(self, seat: int) -> int:
        for step in range(1, self.players + 1):
            candidate = (seat + step) % self.players
            if not self.forfeited[candidate]:
                return candidate
        raise InvalidState("no active seat left")  # unreachable: one seat left wins at once

    def legal_actions(self, seat: int | None = None) -> list[RummyAction]:
        """Every action ``seat`` (default: the seat to act) may take now: the draws, every
        meld in its hand, every group of its cards that can be laid off onto each table meld,
        every discard. Empty for a seat not to act and once the hand has ended."""
        if self.to_act is None or (seat is not None and seat != self.to_act):
            return []
        known = self._legal
        if not known:
            known.append(tuple(self._work_out_legal_actions()))
        return list(known[0])

    def _work_out_legal_actions(self) -> list[RummyAction]:
        """:meth:`legal_actions` of the seat to act (there is one)."""
        assert self.to_act is not None
        if self.phase is Phase.DRAW:
            return [
                RummyAction(kind) for kind in RummyActionKind if self._draw_refusal(kind) is None
            ]
        hand = self.hands[self.to_act]
        ace_mode = self.rules.ace_mode
        actions = [
            RummyAction(RummyActionKind.MELD, mask_to_cards(meld))
            for meld in melds_in(hand, ace_mode)
            if self._leaving_refusal(hand & ~meld) is None
        ]
        for index, meld in enumerate(self.table):
            actions.extend(
                RummyAction(RummyActionKind.LAY_OFF, mask_to_cards(group), index)
                for group in lay_offs_onto(meld.cards, hand, ace_mode)
                if self._leaving_refusal(hand & ~group) is None
            )
        barred = self.taken.bit if self.taken is not None else 0
        actions.extend(
            RummyAction(RummyActionKind.DISCARD, (card,)) for card in mask_to_cards(hand & ~barred)
        )
        return actions

    def _draw_refusal(self, kind: RummyActionKind) -> RummyRefusal | None:
        """Why the draw ``kind`` is not allowed at the start of this turn, or None."""
        shuffles = self.rules.restock is Restock.SHUFFLE
        if kind is RummyActionKind.DRAW_STOCK:
            if not self.stock and not shuffles:
                return StockEmpty("the stock is empty: take the discard or TURN_OVER the pile")
            if not self.stock and not self.discard:
                return DiscardPileEmpty("the stock and the discard pile are both empty")
            return None
        if kind is RummyActionKind.DRAW_DISCARD:
            if not self.stock and shuffles:
                return MustRestock(
                    "the stock is empty: DRAW_STOCK shuffles the discard pile into a new stock"
                )
            if not self.discard:
                return DiscardPileEmpty("the discard pile is empty")
            return None
        if kind is RummyActionKind.TURN_OVER:
            if shuffles:
                return TurnOverNotAllowed("this table shuffles the discard pile instead")
            if self.stock:
                return TurnOverNotAllowed(
                    f"the pile is turned over only when the stock is empty ({len(self.stock)} left)"
                )
            if not self.discard:
                return DiscardPileEmpty("the discard pile is empty")
            return None
        return MustDrawFirst(f"{kind} comes after the turn's draw")

    def _leaving_refusal(self, rest: int) -> RummyRefusal | None:
        """Why a meld or lay-off leaving the hand ``rest`` is refused (5.2.4-5.2.5), or None."""
        if not rest and self.rules.must_discard_to_go_out:
            return MustDiscardToGoOut("at this table a player goes out only by a discard")
        if self.taken is not None and rest == self.taken.bit:
            return NoLegalDiscardLeft(
                f"that would leave only {self.taken}, taken from the discard pile this turn,"
                " which cannot be discarded"
            )
        return None

    # --- applying actions ----------------------------------------------------------

    def apply(
        self, seat: int, action: RummyAction | str | Mapping[str, Any], *, at: str | None = None
    ) -> RummyHand:
        """The hand after ``seat`` takes ``action`` (a value, its text or its fields); ``at``
        (a timestamp) is recorded in the log. This hand is left as it was.

        :raises RummyRefusal: (a subclass naming the rule) when the action is not legal now.
        :raises InvalidShuffle: when the injected shuffler misbehaves.
        """
        act = coerce_action(action)
        if self.to_act is None:
            raise HandOver("the hand is over")
        self._seat(seat)
        if seat != self.to_act:
            why = " (it has forfeited this hand)" if self.forfeited[seat] else ""
            raise NotYourTurn(f"it is seat {self.to_act}'s turn, not seat {seat}'s{why}")
        entry: dict[str, Any] = {"seq": len(self.log) + 1, "seat": seat, "action": act.kind.value}
        if at is not None:
            entry["at"] = at
        if act.kind in (
            RummyActionKind.DRAW_STOCK,
            RummyActionKind.DRAW_DISCARD,
            RummyActionKind.TURN_OVER,
        ):
            after = self._draw(seat, act.kind, entry)
        elif self.phase is Phase.DRAW:
            raise MustDrawFirst(f"{act.kind} comes after the turn's draw")
        elif act.kind is RummyActionKind.DISCARD:
            after = self._discard(seat, act.cards[0], entry)
        else:
            after = self._lay_down(seat, act, entry)
        return replace(after, log=(*self.log, entry))

    def _draw(self, seat: int, kind: RummyActionKind, entry: dict[str, Any]) -> RummyHand:
        if self.phase is Phase.PLAY:
            raise AlreadyDrew(f"seat {seat} has drawn this turn already")
        refusal = self._draw_refusal(kind)
        if refusal is not None:
            raise refusal
        stock, discard, restocks, taken = self.stock, self.discard, self.restocks, None
        if kind is RummyActionKind.DRAW_DISCARD:
            card = taken = discard[-1]
            discard = discard[:-1]
        else:
            if not stock:  # TURN_OVER (5.5.1 b, 11.7.1), or a SHUFFLE restock (11.3.1)
                if kind is RummyActionKind.DRAW_STOCK:
                    stock = self._shuffled(discard)
                    entry["restock"] = Restock.SHUFFLE.value
                    entry["order"] = _codes(stock)
                else:
                    stock = discard
                discard, restocks = (), restocks + 1
            card, stock = stock[0], stock[1:]
        entry["card"] = card.code
        return replace(
            self,
            hands=self._hands_with(seat, self.hands[seat] | card.bit),
            stock=stock,
            discard=discard,
            restocks=restocks,
            taken=taken,
            phase=Phase.PLAY,
        )

    def _shuffled(self, pile: tuple[Card, ...]) -> tuple[Card, ...]:
        shuffler = self.shuffler
        if isinstance(shuffler, ContinuingShuffler):  # the fair shuffle goes on (11.3.1)
            earlier = [
                len(entry["order"])
                for entry in self.log
                if entry.get("restock") == Restock.SHUFFLE.value
            ]
            shuffler = shuffler.at(earlier)
        try:
            stock = parse_cards(shuffler(list(pile)))
        except RulesError as exc:
            raise InvalidShuffle(
                f"the shuffler returned something other than cards: {exc}"
            ) from None
        if len(stock) != len(pile) or set(stock) != set(pile):
            raise InvalidShuffle("the shuffler must return exactly the discard pile's cards")
        return stock

    def _hands_with(self, seat: int, mask: int) -> tuple[int, ...]:
        return (*self.hands[:seat], mask, *self.hands[seat + 1 :])

    def _held(self, seat: int, cards: Sequence[Card]) -> int:
        mask = cards_to_mask(cards)
        missing = mask & ~self.hands[seat]
        if missing:
            shown = " ".join(card.code for card in mask_to_cards(missing))
            raise CardNotInHand(f"seat {seat} does not hold {shown}")
        return mask

    def _lay_down(self, seat: int, act: RummyAction, entry: dict[str, Any]) -> RummyHand:
        """MELD or LAY_OFF (5.2.2, 11.3.5)."""
        table = self.table
        ace_mode = self.rules.ace_mode
        if act.kind is RummyActionKind.LAY_OFF:
            assert act.meld is not None
            if act.meld >= len(table):
                raise NoSuchMeld(f"there is no table meld {act.meld} ({len(table)} on the table)")
            mask = self._held(seat, act.cards)
            target = table[act.meld]
            if rummy_meld_kind(mask_to_cards(target.mask | mask), ace_mode) is None:
                raise InvalidLayOff(
                    f"{' '.join(c.code for c in act.cards)} cannot be laid off onto"
                    f" {' '.join(c.code for c in target.cards)}"
                )
            table = (
                *table[: act.meld],
                replace(target, layoffs=(*target.layoffs, LayOff(seat, act.cards))),
                *table[act.meld + 1 :],
            )
            entry["meld"] = act.meld
        else:
            mask = self._held(seat, act.cards)
            if rummy_meld_kind(act.cards, ace_mode) is None:
                raise NotAMeld(f"not a set or run: {' '.join(c.code for c in act.cards)!r}")
            entry["meld"] = len(table)
            table = (*table, TableMeld(seat, act.cards))
        rest = self.hands[seat] & ~mask
        refusal = self._leaving_refusal(rest)
        if refusal is not None:
            raise refusal
        entry["cards"] = _codes(act.cards)
        taken = None if self.taken is None or self.taken.bit & mask else self.taken
        after = replace(
            self, hands=self._hands_with(seat, rest), table=table, taken=taken, laid_this_turn=True
        )
        return after._go_out(seat) if not rest else after

    def _discard(self, seat: int, card: Card, entry: dict[str, Any]) -> RummyHand:
        """End the turn (5.2.3): go out, or complete the turn and pass to the next seat."""
        self._held(seat, (card,))
        if card is self.taken:
            raise DiscardPileCardBarred(
                f"{card} was taken from the discard pile this turn and cannot be discarded"
            )
        entry["card"] = card.code
        rest = self.hands[seat] ^ card.bit
        after = replace(
            self,
            hands=self._hands_with(seat, rest),
            discard=(*self.discard, card),
            taken=None,
            turns=self.turns + 1,
            laid_before=tuple(
                laid or (s == seat and self.laid_this_turn)
                for s, laid in enumerate(self.laid_before)
            ),
        )
        if not rest:
            return self._go_out(seat, after)
        if after.turns >= self.rules.max_turns:
            return after._end(None, Void.MAX_TURNS)
        return after._start_turn(after._next_active(seat))

    def _go_out(self, seat: int, after: RummyHand | None = None) -> RummyHand:
        """``seat`` has no card left and wins (5.4.1); rummy when it laid nothing down in an
        earlier turn (5.4.2, 11.3.4; judged on the state before the final discard)."""
        return (after or self)._end(seat, None, went_rummy=not self.laid_before[seat])

    def _start_turn(self, seat: int) -> RummyHand:
        """``seat`` is to draw; void at once when it could not (5.5.4 a, 11.3.3, 11.7.1)."""
        after = replace(self, to_act=seat, phase=Phase.DRAW, taken=None, laid_this_turn=False)
        if not after.stock:
            if not after.discard:
                return after._end(None, Void.NO_CARDS)
            if after.restocks >= self.rules.max_restocks:
                return after._end(None, Void.MAX_RESTOCKS)
        return after

    def _end(self, winner: int | None, void: Void | None, went_rummy: bool = False) -> RummyHand:
        outcome = RummyOutcome.scored(self.rules, self.hands, winner, went_rummy, void)
        return replace(self, phase=Phase.ENDED, to_act=None, taken=None, outcome=outcome)

    def forfeit(self, seat: int, reason: str | None = None, *, at: str | None = None) -> RummyHand:
        """The hand after ``seat`` forfeits it (11.6.3), whoever is to act: its cards stay in
        its hand and count as a loser's, it takes no further turn, and when one active seat
        is left that seat wins at once. A forfeit in the middle of its own turn ends that
        turn without a discard (not a completed turn).

        :raises HandOver: once the hand has ended; NoSuchSeat, AlreadyForfeited.
        """
        if self.to_act is None:
            raise HandOver("the hand is over")
        self._seat(seat)
        if self.forfeited[seat]:
            raise AlreadyForfeited(f"seat {seat} has already forfeited this hand")
        entry: dict[str, Any] = {"seq": len(self.log) + 1, "seat": seat, "action": FORFEIT_ACTION}
        if reason is not None:
            entry["reason"] = reason
        if at is not None:
            entry["at"] = at
        forfeited = tuple(gone or s == seat for s, gone in enumerate(self.forfeited))
        after = replace(self, forfeited=forfeited, log=(*self.log, entry))
        active = [s for s, gone in enumerate(forfeited) if not gone]
        if len(active) == 1:
            return after._end(active[0], None)
        if seat == self.to_act:
            return after._start_turn(after._next_active(seat))
        return after

    def next_dealer(self) -> int:
        """The dealer of the next hand (5.1.4).

        :raises RulesError: while the hand is being played.
        """
        if self.outcome is None:
            raise RulesError("the hand has not ended")
        return next_dealer(self.players, self.dealer, self.outcome.winner)

    # --- views ---------------------------------------------------------------------

    def view(self, seat: int | None) -> dict[str, Any]:
        """What ``seat`` may see now (None: a spectator, who sees what a player sees without
        a hand; 11.6.5): its own hand, the table melds, the whole discard pile, every seat's
        card count, whose turn it is. Never another seat's cards or a stock card, not even
        once the hand has ended (:meth:`history` reveals them then)."""
        if seat is not None:
            self._seat(seat)
        view: dict[str, Any] = {
            "game": "rummy",
            "players": self.players,
            "dealer": self.dealer,
            "phase": self.phase.value,
            "to_act": self.to_act,
            "stock_count": len(self.stock),
            "discard_pile": _codes(self.discard),
            "table_melds": [meld.to_dict() for meld in self.table],
            "card_counts": [mask.bit_count() for mask in self.hands],
            "laid_down": list(self.laid_before),
            "forfeited": list(self.forfeited),
            "restocks": self.restocks,
            "turns": self.turns,
            "rules": self.rules.to_dict(),
            "log": [_public_entry(entry) for entry in self.log],
        }
        if seat is not None:
            view["seat"] = seat
            view["hand"] = _codes(self.cards_of(seat))
            own_turn = seat == self.to_act
            view["taken_from_discard"] = (
                self.taken.code if own_turn and self.taken is not None else None
            )
            view["legal_actions"] = [a.to_dict() for a in self.legal_actions(seat)]
        if self.outcome is not None:
            view["outcome"] = self.outcome.to_dict()
        return view

    def history(self) -> dict[str, Any]:
        """The full record of an ended hand: deck, deal, every action (restock orders
        included), the final hands, the table, the outcome.

        :raises RulesError: while the hand is being played (it would reveal secrets).
        """
        if self.outcome is None:
            raise RulesError("the history of a hand is revealed only once it has ended")
        return {
            "game": "rummy",
            "players": self.players,
            "dealer": self.dealer,
            "rules": self.rules.to_dict(),
            "deck": _codes(self.deck),
            "actions": [dict(entry) for entry in self.log],
            "final_hands": [_codes(mask_to_cards(mask)) for mask in self.hands],
            "table_melds": [meld.to_dict() for meld in self.table],
            "outcome": self.outcome.to_dict(),
        }

    # --- serialisation -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready) holding the whole state, secrets included."""
        return {
            "schema": STATE_SCHEMA,
            "game": "rummy",
            "rules": self.rules.to_dict(),
            "players": self.players,
            "dealer": self.dealer,
            "deck": _codes(self.deck),
            "hands": [_codes(mask_to_cards(mask)) for mask in self.hands],
            "stock": _codes(self.stock),
            "discard": _codes(self.discard),
            "table": [meld.to_dict() for meld in self.table],
            "phase": self.phase.value,
            "to_act": self.to_act,
            "taken": None if self.taken is None else self.taken.code,
            "laid_this_turn": self.laid_this_turn,
            "laid_before": list(self.laid_before),
            "forfeited": list(self.forfeited),
            "restocks": self.restocks,
            "turns": self.turns,
            "outcome": None
            if self.outcome is None
            else {
                "winner": self.outcome.winner,
                "went_rummy": self.outcome.went_rummy,
                "void": None if self.outcome.void is None else self.outcome.void.value,
            },
            "log": [_plain(entry) for entry in self.log],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], shuffler: Shuffler | None = None) -> RummyHand:
        """Restore a state written by :meth:`to_dict` (the outcome's scores are recomputed);
        ``shuffler`` as for :meth:`deal`.

        :raises InvalidState: when the data is malformed or inconsistent.
        """
        try:
            if data["schema"] != STATE_SCHEMA or data.get("game") != "rummy":
                raise InvalidState(f"not a rummy hand state of schema {STATE_SCHEMA}")
            rules = RummyRules.from_dict(data["rules"])
            players = data["players"]
            hand = cls.deal(players, data["dealer"], data["deck"], rules, shuffler)
            phase = Phase(data["phase"])
            stored = data["outcome"]
            hands = tuple(cards_to_mask(parse_cards(cards)) for cards in data["hands"])
            outcome = None
            if stored is not None:
                void = None if stored["void"] is None else Void(stored["void"])
                outcome = RummyOutcome.scored(
                    rules, hands, stored["winner"], bool(stored["went_rummy"]), void
                )
            hand = replace(
                hand,
                hands=hands,
                stock=parse_cards(data["stock"]),
                discard=parse_cards(data["discard"]),
                table=tuple(TableMeld.from_dict(meld) for meld in data["table"]),
                phase=phase,
                to_act=None if data["to_act"] is None else int(data["to_act"]),
                taken=None if data["taken"] is None else parse_cards([data["taken"]])[0],
                laid_this_turn=_flag(data["laid_this_turn"]),
                laid_before=tuple(_flag(v) for v in data["laid_before"]),
                forfeited=tuple(_flag(v) for v in data["forfeited"]),
                restocks=int(data["restocks"]),
                turns=int(data["turns"]),
                outcome=outcome,
                log=tuple(_plain(entry) for entry in data["log"]),
            )
        except InvalidState:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidState(f"malformed rummy hand state: {exc!r}") from None
        hand._check_consistent()
        return hand

    def _check_consistent(self) -> None:
        n = self.players
        if not (len(self.hands) == len(self.laid_before) == len(self.forfeited) == n):
            raise InvalidState(f"a hand of {n} players needs {n} of each per-seat entry")
        total = 0
        parts = [*self.hands, cards_to_mask(self.stock), cards_to_mask(self.discard)]
        parts += [meld.mask for meld in self.table]
        for part in parts:
            if total & part:
                raise InvalidState("a card is in two places")
            total |= part
        if total != (1 << 52) - 1:
            raise InvalidState("the state does not account for all 52 cards")
        for meld in self.table:
            if rummy_meld_kind(meld.cards, self.rules.ace_mode) is None:
                raise InvalidState(f"table meld {meld.cards} is not a meld")
        if (self.phase is Phase.ENDED) != (self.outcome is not None) or (
            self.phase is Phase.ENDED
        ) != (self.to_act is None):
            raise InvalidState("an ended hand has an outcome and no seat to act, and only it")
        outcome = self.outcome
        if outcome is not None and (
            (outcome.winner is None) == (outcome.void is None)
            or (outcome.winner is not None and not 0 <= outcome.winner < n)
        ):
            raise InvalidState("an ended hand has a winner seat or a void reason, not both")
        if self.to_act is not None and (not 0 <= self.to_act < n or self.forfeited[self.to_act]):
            raise InvalidState(f"seat {self.to_act} cannot be the seat to act")
        if self.taken is not None and (
            self.to_act is None or not self.hands[self.to_act] & self.taken.bit
        ):
            raise InvalidState(f"the taken card {self.taken} is not in the hand of the seat to act")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RummyHand):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"<RummyHand {self.players}p {self.phase} to_act={self.to_act}"
            f" stock={len(self.stock)} turns={self.turns}>"
        )


_PUBLIC_KEYS = ("seq", "seat", "action", "at", "reason", "restock", "meld")


def _public_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A log entry as every seat may see it: no card that a hand or the stock may now hold
    (drawn and discarded cards travel); the cards of melds and lay-offs stay on the table."""
    public = {key: entry[key] for key in _PUBLIC_KEYS if key in entry}
    if "cards" in entry:
        public["cards"] = list(entry["cards"])
    return public


def _plain(entry: Mapping[str, Any]) -> dict[str, Any]:
    plain = dict(entry)
    for key, value in entry.items():
        if isinstance(value, list):
            plain[key] = list(value)
    return plain


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidState(f"expected true or false, not {value!r}")
    return value


def automatic_action(hand: RummyHand) -> RummyAction:
    """What the server plays for the seat to act when its time is spent (11.6.1): draw from
    the stock (at a TURN_OVER table with an empty stock: turn the pile over; at a SHUFFLE
    table the draw restocks), then discard the card of highest value that was not just taken
    from the discard pile (ties: the higher rank, then the later suit), never melding.

    :raises HandOver: once the hand has ended.
    """
    if hand.to_act is None:
        raise HandOver("the hand is over")
    if hand.phase is Phase.DRAW:
        if not hand.stock and hand.rules.restock is Restock.TURN_OVER:
            return RummyAction(RummyActionKind.TURN_OVER)
        return RummyAction(RummyActionKind.DRAW_STOCK)
    barred = hand.taken.bit if hand.taken is not None else 0
    value = hand.rules.card_value
    card = max(
        mask_to_cards(hand.hands[hand.to_act] & ~barred),
        key=lambda c: (value(c.rank, c.points), c.rank, c.suit_index),
    )
    return RummyAction(RummyActionKind.DISCARD, (card,))
