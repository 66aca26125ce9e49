"""One hand of two-player Gin as a state machine (docs/engine.md 2.1-2.12, 3.3).

A :class:`Hand` is dealt from a 52-card deck (injected, or derived by
:mod:`service.games.common.fair`) and then driven only by :meth:`Hand.apply`, which validates every
action and either applies it completely or raises
:class:`~service.games.common.errors.IllegalAction` (or another
:class:`~service.games.common.errors.RulesError`) leaving the state exactly as it was.

Seats are 0 and 1. Phases:

``OFFER_1``     the first player (non-dealer) may TAKE_UPCARD or PASS (2.3.1)
``OFFER_2``     the dealer may TAKE_UPCARD or PASS (2.3.3)
``FIRST_DRAW``  both passed: the first player must DRAW_STOCK (2.3.4)
``DRAW``        a normal draw step: DRAW_STOCK or DRAW_DISCARD (2.4.1)
``DISCARD``     DISCARD, KNOCK (GIN is a knock that must be gin) or BIG_GIN (2.4.2, 2.6)
``LAST_CHANCE`` FIFTIETH_CARD rule: TAKE_DISCARD_AND_KNOCK or DECLINE (2.10.3)
``ENDED``       the hand is over: :attr:`Hand.outcome` says how

A hand also ends when a player forfeits the match in the middle of it (:meth:`Hand.forfeit`,
docs/engine.md 9.3-9.4): its log ends with a ``FORFEIT`` entry and its outcome is ``forfeit``, which
scores nothing; like any ended hand, its history is then revealed (10.4).

The state serialises to plain data (:meth:`Hand.to_dict`) and restores exactly
(:meth:`Hand.from_dict`). :meth:`Hand.view` gives one player's (or a spectator's) view,
which never holds the opponent's cards, the stock or a face-down knock card before the hand
ends; :meth:`Hand.history` gives everything once it has ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NoReturn

from service.games.common.cards import Card, cards_to_mask, mask_to_cards, parse_cards
from service.games.common.errors import IllegalAction, IllegalKnock, InvalidState, RulesError
from service.games.gin.actions import (
    SIMPLE,
    Action,
    ActionKind,
    coerce_action,
    discard_actions,
    with_card,
)
from service.games.gin.melds import deadwood_of_mask
from service.games.gin.ruleset import DeadHandRule, KnockerArrangement, NextDealer, Opening, Ruleset
from service.games.gin.scoring import HandScore, HandTerms, hand_terms, score_masks

STATE_SCHEMA = 1
DEAD_STOCK = 2  # the stock never goes below two cards (2.10)


class Phase(StrEnum):
    __hash__ = str.__hash__  # Enum's own __hash__ runs Python code; equal strings hash alike

    OFFER_1 = "OFFER_1"
    OFFER_2 = "OFFER_2"
    FIRST_DRAW = "FIRST_DRAW"
    DRAW = "DRAW"
    DISCARD = "DISCARD"
    LAST_CHANCE = "LAST_CHANCE"
    ENDED = "ENDED"


DEAD = "dead"
FORFEIT = "forfeit"  # the outcome of a hand cut short by a forfeit; it scores nothing
FORFEIT_ACTION = "FORFEIT"  # the log entry that cuts a hand short (not a player's action)


@dataclass(frozen=True, slots=True)
class HandOutcome:
    """How a hand ended: ``kind`` is knock, undercut, gin, big_gin, dead or forfeit (a player
    forfeited the match during the hand: ``winner`` is the opponent, no points; or the hand
    was cut short in nobody's name, :meth:`Hand.cut_short`: no winner)."""

    kind: str
    winner: int | None
    points: int
    knocker: int | None
    knock_card: Card | None
    score: HandScore | None

    @property
    def loser(self) -> int | None:
        return None if self.winner is None else 1 - self.winner

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "winner": self.winner,
            "points": self.points,
            "knocker": self.knocker,
            "knock_card": None if self.knock_card is None else str(self.knock_card),
            "score": None if self.score is None else self.score.to_dict(),
        }


_DRAW = Phase.DRAW
_DISCARD = Phase.DISCARD
_DRAW_STOCK = SIMPLE[ActionKind.DRAW_STOCK]
_DRAW_DISCARD = SIMPLE[ActionKind.DRAW_DISCARD]


def next_dealer(rule: NextDealer, dealer: int, outcome: HandOutcome) -> int:
    """The dealer of the next hand (2.11); after a dead hand the same dealer deals again."""
    if outcome.winner is None:
        return dealer
    if rule is NextDealer.WINNER_DEALS:
        return outcome.winner
    if rule is NextDealer.LOSER_DEALS:
        return 1 - outcome.winner
    return 1 - dealer


class Hand:
    """The state of one hand; see the module docstring."""

    __slots__ = (
        "dealer",
        "deck",
        "discard",
        "hands",
        "log",
        "outcome",
        "phase",
        "ruleset",
        "stock",
        "taken",
        "terms",
        "to_act",
        "upcard",
    )

    ruleset: Ruleset
    terms: HandTerms
    dealer: int
    deck: tuple[Card, ...]
    hands: list[int]
    stock: list[Card]
    discard: list[Card]
    upcard: Card
    phase: Phase
    to_act: int
    taken: Card | None
    outcome: HandOutcome | None
    log: list[dict[str, Any]]

    @classmethod
    def deal(
        cls, deck: Sequence[Card | str] | str, dealer: int, ruleset: Ruleset | None = None
    ) -> Hand:
        """Deal from ``deck`` (52 cards, position 1 first) per 2.1.2; ``dealer`` is 0 or 1.

        :raises InvalidState: unless ``deck`` holds each of the 52 cards once and the dealer
            is 0 or 1.
        """
        cards = parse_cards(deck)
        if len(cards) != 52:
            raise InvalidState(f"a deck has 52 cards, not {len(cards)}")
        if dealer not in (0, 1):
            raise InvalidState(f"dealer must be seat 0 or 1, not {dealer!r}")
        ruleset = ruleset or Ruleset()
        hand = cls.__new__(cls)
        hand.ruleset = ruleset
        hand.dealer = dealer
        hand.deck = cards
        first = 1 - dealer
        hands = [0, 0]
        hands[first] = cards_to_mask(cards[0:20:2])
        hands[dealer] = cards_to_mask(cards[1:20:2])
        hand.hands = hands
        hand.upcard = cards[20]
        hand.discard = [cards[20]]
        hand.stock = list(cards[21:])
        hand.terms = hand_terms(ruleset, hand.upcard)
        hand.taken = None
        hand.outcome = None
        hand.log = []
        hand.to_act = first
        hand.phase = Phase.OFFER_1 if ruleset.opening is Opening.PASS_SEQUENCE else Phase.DRAW
        return hand

    # --- reading the state ---------------------------------------------------------

    @property
    def first_player(self) -> int:
        return 1 - self.dealer

    @property
    def ended(self) -> bool:
        return self.phase is Phase.ENDED

    def cards_of(self, seat: int) -> tuple[Card, ...]:
        """The cards ``seat`` holds, in display order."""
        return mask_to_cards(self.hands[seat])

    def legal_actions(self, seat: int | None = None) -> list[Action]:
        """Every action legal now for ``seat`` (default: the seat to act)."""
        phase = self.phase
        if seat is not None and seat != self.to_act:
            return []
        if phase is _DRAW:
            return [_DRAW_STOCK, _DRAW_DISCARD]
        if phase is _DISCARD:
            mask = self.hands[self.to_act]
            taken = self.taken
            barred = 0 if taken is None else taken.bit
            actions = discard_actions(mask & ~barred)
            knocks = self._knock_cards(mask, barred)
            if knocks:
                actions += [with_card(ActionKind.KNOCK, c) for c in knocks]
            if self.ruleset.big_gin_enabled and deadwood_of_mask(mask) == 0:
                actions.append(SIMPLE[ActionKind.BIG_GIN])
            return actions
        if phase is Phase.OFFER_1 or phase is Phase.OFFER_2:
            return [SIMPLE[ActionKind.TAKE_UPCARD], SIMPLE[ActionKind.PASS]]
        if phase is Phase.FIRST_DRAW:
            return [_DRAW_STOCK]
        if phase is Phase.LAST_CHANCE:
            top = self.discard[-1]
            knocks = self._knock_cards(self.hands[self.to_act] | top.bit, top.bit)
            kind = ActionKind.TAKE_DISCARD_AND_KNOCK
            return [with_card(kind, c) for c in knocks] + [SIMPLE[ActionKind.DECLINE]]
        return []

    def knock_cards(self) -> list[Card]:
        """In a discard step: the cards the player to act may knock with (2.7)."""
        if self.phase is not Phase.DISCARD:
            return []
        barred = 0 if self.taken is None else self.taken.bit
        return self._knock_cards(self.hands[self.to_act], barred)

    def _knock_cards(self, mask11: int, barred: int) -> list[Card]:
        """Cards whose knock is legal from the 11-card ``mask11`` (2.7)."""
        limit = self.terms.knock_limit
        whole = deadwood_of_mask(mask11)
        # Removing a card c lowers the minimal deadwood by at most c's points.
        if whole - 10 > limit:
            return []
        cards = []
        for card in mask_to_cards(mask11 & ~barred):
            if whole - card.points <= limit and deadwood_of_mask(mask11 ^ card.bit) <= limit:
                cards.append(card)
        return cards

    # --- applying actions ----------------------------------------------------------

    def apply(
        self, seat: int, action: Action | str | Mapping[str, Any], *, at: str | None = None
    ) -> Hand:
        """Apply ``action`` by ``seat`` (an action, its text or its fields, as listed in
        :meth:`view`'s ``legal_actions``); ``at`` (a timestamp) is recorded in the log.

        :raises IllegalAction: when the action is not legal now (the state is unchanged).
        :raises KnockLimitExceeded: for a knock over the knock limit (state unchanged).
        :raises IllegalKnock: for a gin or big gin that is not one (state unchanged).
        """
        act = action if type(action) is Action else coerce_action(action)
        handler = _HANDLERS.get((self.phase, act.kind))
        if handler is None or seat != self.to_act:
            self._reject(seat, act)
        entry: dict[str, Any] = {
            "seq": len(self.log) + 1,
            "seat": seat,
            "action": act.kind._value_,
        }
        if at is not None:
            entry["at"] = at
        handler(self, seat, act, entry)
        self.log.append(entry)
        return self

    def _reject(self, seat: int, act: Action) -> NoReturn:
        if self.phase is Phase.ENDED:
            raise IllegalAction("the hand is over", "HAND_OVER")
        if seat not in (0, 1):
            raise IllegalAction(f"no such seat: {seat!r}", "NO_SUCH_SEAT")
        if seat != self.to_act:
            raise IllegalAction(
                f"it is seat {self.to_act}'s turn, not seat {seat}'s", "NOT_YOUR_TURN"
            )
        legal = ", ".join(sorted({a.kind._value_ for a in self.legal_actions(seat)}))
        raise IllegalAction(
            f"{act.kind._value_} is not allowed in {self.phase._value_}; legal: {legal}",
            "ACTION_NOT_ALLOWED",
        )

    def _take_upcard(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        card = self.discard.pop()
        self.hands[seat] |= card.bit
        self.taken = card
        entry["card"] = card.code
        self.phase = Phase.DISCARD

    def _pass(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        if self.phase is Phase.OFFER_1:
            self.phase, self.to_act = Phase.OFFER_2, self.dealer
        else:
            self.phase, self.to_act = Phase.FIRST_DRAW, self.first_player

    def _draw_stock(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        card = self.stock.pop(0)
        self.hands[seat] |= card.bit
        self.taken = None
        entry["card"] = card.code
        entry["private"] = True
        if self.ruleset.dead_hand_rule is DeadHandRule.IMMEDIATE and len(self.stock) <= DEAD_STOCK:
            self._end_dead()
        else:
            self.phase = Phase.DISCARD

    def _draw_discard(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        self._take_upcard(seat, act, entry)

    def _check_card(self, seat: int, card: Card | None, barred: Card | None) -> Card:
        assert card is not None
        if not self.hands[seat] & card.bit:
            raise IllegalAction(f"{card} is not in seat {seat}'s hand", "CARD_NOT_IN_HAND")
        if card is barred:
            raise IllegalAction(
                f"{card} was taken from the discard pile this turn and cannot be"
                " discarded or knocked with until a later turn",
                "DISCARD_PILE_CARD_BARRED",
            )
        return card

    def _discard(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        card = self._check_card(seat, act.card, self.taken)
        self.hands[seat] ^= card.bit
        self.discard.append(card)
        self.taken = None
        entry["card"] = card.code
        if len(self.stock) <= DEAD_STOCK:
            if self.ruleset.dead_hand_rule is DeadHandRule.FIFTIETH_CARD:
                self.phase, self.to_act = Phase.LAST_CHANCE, 1 - seat
            else:
                self._end_dead()
            return
        self.phase, self.to_act = Phase.DRAW, 1 - seat

    def _score_knock(self, seat: int, kept: int, melds: Any, gin_only: bool) -> HandScore:
        manual = melds if self.ruleset.knocker_arrangement is KnockerArrangement.MANUAL else None
        if melds is not None and manual is None:
            raise IllegalAction(
                "this table arranges the knocker's cards automatically", "UNEXPECTED_MELDS"
            )
        score = score_masks(kept, self.hands[1 - seat], self.ruleset, self.terms, manual)
        if gin_only and score.kind != "gin":
            raise IllegalKnock(f"not gin: deadwood {score.knocker_deadwood} remains")
        return score

    def _knock(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        card = self._check_card(seat, act.card, self.taken)
        kept = self.hands[seat] ^ card.bit
        score = self._score_knock(seat, kept, act.melds, act.kind is ActionKind.GIN)
        self.hands[seat] = kept
        entry["card"] = card.code
        if act.melds is not None:
            entry["melds"] = [[str(c) for c in meld] for meld in act.melds]
        self._end_knock(seat, card, score)

    def _big_gin(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        if not self.ruleset.big_gin_enabled:
            raise IllegalAction("big gin is not enabled at this table", "BIG_GIN_DISABLED")
        if deadwood_of_mask(self.hands[seat]) != 0:
            raise IllegalKnock("big gin needs all 11 cards in melds")
        score = score_masks(self.hands[seat], self.hands[1 - seat], self.ruleset, self.terms)
        self._end_knock(seat, None, score)

    def _take_discard_and_knock(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        top = self.discard[-1]
        assert act.card is not None
        if act.card is top:
            raise IllegalAction(
                f"{top} is the card being taken and cannot be the knock card",
                "DISCARD_PILE_CARD_BARRED",
            )
        if not self.hands[seat] & act.card.bit:
            raise IllegalAction(f"{act.card} is not in seat {seat}'s hand", "CARD_NOT_IN_HAND")
        kept = (self.hands[seat] | top.bit) ^ act.card.bit
        score = self._score_knock(seat, kept, act.melds, False)
        self.discard.pop()
        self.hands[seat] = kept
        entry["taken"] = str(top)
        entry["card"] = str(act.card)
        self._end_knock(seat, act.card, score)

    def _decline(self, seat: int, act: Action, entry: dict[str, Any]) -> None:
        self._end_dead()

    def _end_knock(self, seat: int, card: Card | None, score: HandScore) -> None:
        winner = seat if score.winner == "knocker" else 1 - seat
        self.outcome = HandOutcome(score.kind, winner, score.points, seat, card, score)
        self.phase = Phase.ENDED
        self.taken = None

    def _end_dead(self) -> None:
        self.outcome = HandOutcome(DEAD, None, 0, None, None, None)
        self.phase = Phase.ENDED
        self.taken = None

    def forfeit(
        self, seat: int, reason: str, *, at: str | None = None, automatic: bool = False
    ) -> Hand:
        """End the hand because ``seat`` forfeits the match now (9.3-9.4), whoever is to act:
        the log gets a ``FORFEIT`` entry (with ``reason``, ``at`` and, for the server acting
        on a timeout, ``automatic``) and the outcome is ``forfeit``, won by the opponent
        for no points. The cards stay where they are, so the history shows the hand as it was.

        :raises IllegalAction: when the hand is over or the seat is unknown.
        """
        if seat not in (0, 1) and self.phase is not Phase.ENDED:
            raise IllegalAction(f"no such seat: {seat!r}", "NO_SUCH_SEAT")
        return self._end_forfeit_logged(seat, reason, at, automatic)

    def cut_short(self, reason: str, *, at: str | None = None) -> Hand:
        """End the hand in nobody's name because the match it belongs to ended elsewhere (a
        player who is not dealt into this hand forfeited, 11.6.2): the log gets a ``FORFEIT``
        entry with no seat (``seat`` None) and the outcome is ``forfeit`` with no winner, for
        no points. Otherwise as :meth:`forfeit`.

        :raises IllegalAction: when the hand is over.
        """
        return self._end_forfeit_logged(None, reason, at, False)

    def _end_forfeit_logged(
        self, seat: int | None, reason: str, at: str | None, automatic: bool
    ) -> Hand:
        if self.phase is Phase.ENDED:
            raise IllegalAction("the hand is over", "HAND_OVER")
        entry: dict[str, Any] = {
            "seq": len(self.log) + 1,
            "seat": seat,
            "action": FORFEIT_ACTION,
            "reason": reason,
        }
        if at is not None:
            entry["at"] = at
        if automatic:
            entry["automatic"] = True
        self.log.append(entry)
        self._end_forfeit(seat)
        return self

    def _end_forfeit(self, seat: int | None) -> None:
        winner = None if seat is None else 1 - seat
        self.outcome = HandOutcome(FORFEIT, winner, 0, None, None, None)
        self.phase = Phase.ENDED

    def next_dealer(self) -> int:
        """The dealer of the next hand (2.11).

        :raises RulesError: while the hand is still being played.
        """
        if self.outcome is None:
            raise RulesError("the hand has not ended")
        return next_dealer(self.ruleset.next_dealer, self.dealer, self.outcome)

    # --- views ---------------------------------------------------------------------

    def _public_log(self, seat: int | None) -> list[dict[str, Any]]:
        """The log as ``seat`` may see it: the card of the opponent's draw from the stock is
        hidden until the hand ends. (Copies: most entries have nothing to hide.)"""
        hide = self.phase is not Phase.ENDED
        out = []
        for entry in self.log:
            entry = dict(entry)
            if entry.pop("private", False) and hide and entry["seat"] != seat:
                entry.pop("card", None)
            out.append(entry)
        return out

    def view(self, seat: int | None) -> dict[str, Any]:
        """What ``seat`` may see now (``None``: a spectator). Hidden information (the other
        hand, the stock order, the knock card) appears only once the hand has ended."""
        if seat not in (0, 1, None):
            raise RulesError(f"no such seat: {seat!r}")
        view: dict[str, Any] = {
            "phase": self.phase.value,
            "dealer": self.dealer,
            "first_player": self.first_player,
            "to_act": None if self.ended else self.to_act,
            "upcard": str(self.upcard),
            "knock_limit": self.terms.knock_limit,
            "multiplier": self.terms.multiplier,
            "stock_count": len(self.stock),
            "discard_pile": [str(c) for c in self.discard],
            "card_counts": [self.hands[0].bit_count(), self.hands[1].bit_count()],
            "taken_from_discard": None if self.taken is None else str(self.taken),
            "log": self._public_log(seat),
        }
        if seat is not None:
            view["seat"] = seat
            view["hand"] = [str(c) for c in self.cards_of(seat)]
            view["deadwood"] = deadwood_of_mask(self.hands[seat])
            view["legal_actions"] = [a.to_dict() for a in self.legal_actions(seat)]
        if self.ended:
            assert self.outcome is not None
            view["outcome"] = self.outcome.to_dict()
            view["hands"] = [[str(c) for c in self.cards_of(s)] for s in (0, 1)]
        return view

    def history(self) -> dict[str, Any]:
        """The full record of an ended hand: deck, deal, every action, showdown, score.

        :raises RulesError: while the hand is still being played (it would reveal secrets).
        """
        if not self.ended:
            raise RulesError("the history of a hand is revealed only once it has ended")
        assert self.outcome is not None
        return {
            "deck": [str(c) for c in self.deck],
            "dealer": self.dealer,
            "ruleset": self.ruleset.to_dict(),
            "upcard": str(self.upcard),
            "knock_limit": self.terms.knock_limit,
            "multiplier": self.terms.multiplier,
            "actions": [{k: v for k, v in e.items() if k != "private"} for e in self.log],
            "final_hands": [[str(c) for c in self.cards_of(s)] for s in (0, 1)],
            "outcome": self.outcome.to_dict(),
        }

    # --- serialisation -------------------------------------------------------------

    def copy(self) -> Hand:
        """An independent copy: actions applied to either leave the other as it was. (The
        immutable parts are shared: cards, ruleset, terms, outcome, and the log's entries,
        which are complete before they are appended.)"""
        hand = Hand.__new__(Hand)
        for name in Hand.__slots__:
            setattr(hand, name, getattr(self, name))
        hand.hands = list(self.hands)
        hand.stock = list(self.stock)
        hand.discard = list(self.discard)
        hand.log = list(self.log)
        return hand

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready) holding the whole state, secrets included."""
        return {
            "schema": STATE_SCHEMA,
            "ruleset": self.ruleset.to_dict(),
            "dealer": self.dealer,
            "deck": [str(c) for c in self.deck],
            "hands": [[str(c) for c in self.cards_of(s)] for s in (0, 1)],
            "stock": [str(c) for c in self.stock],
            "discard": [str(c) for c in self.discard],
            "phase": self.phase.value,
            "to_act": self.to_act,
            "taken": None if self.taken is None else str(self.taken),
            "log": [dict(e) for e in self.log],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hand:
        """Restore a state written by :meth:`to_dict`; the outcome is recomputed.

        :raises InvalidState: when the data is malformed or inconsistent.
        """
        try:
            if data["schema"] != STATE_SCHEMA:
                raise InvalidState(f"unknown hand state schema {data['schema']!r}")
            hand = cls.deal(data["deck"], data["dealer"], Ruleset.from_dict(data["ruleset"]))
            hand.hands = [cards_to_mask(parse_cards(h)) for h in data["hands"]]
            hand.stock = list(parse_cards(data["stock"]))
            hand.discard = list(parse_cards(data["discard"]))
            hand.phase = Phase(data["phase"])
            hand.to_act = int(data["to_act"])
            hand.taken = None if data["taken"] is None else parse_cards([data["taken"]])[0]
            hand.log = [dict(e) for e in data["log"]]
        except InvalidState:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed hand state: {exc}") from None
        hand._restore_outcome()
        hand._check_consistent()
        return hand

    def _restore_outcome(self) -> None:
        if self.phase is not Phase.ENDED:
            return
        last = self.log[-1] if self.log else {}
        action = last.get("action")
        if action == FORFEIT_ACTION:
            seat = last["seat"]
            self._end_forfeit(None if seat is None else int(seat))
        elif action in ("KNOCK", "GIN", "BIG_GIN", "TAKE_DISCARD_AND_KNOCK"):
            seat = last["seat"]
            card = parse_cards([last["card"]])[0] if "card" in last else None
            melds = last.get("melds")
            manual = (
                melds if self.ruleset.knocker_arrangement is KnockerArrangement.MANUAL else None
            )
            score = score_masks(
                self.hands[seat], self.hands[1 - seat], self.ruleset, self.terms, manual
            )
            winner = seat if score.winner == "knocker" else 1 - seat
            self.outcome = HandOutcome(score.kind, winner, score.points, seat, card, score)
        else:
            self.outcome = HandOutcome(DEAD, None, 0, None, None, None)

    def _check_consistent(self) -> None:
        knock_card = 0
        if self.outcome is not None and self.outcome.knock_card is not None:
            knock_card = self.outcome.knock_card.bit
        parts = [*self.hands, cards_to_mask(self.stock), cards_to_mask(self.discard), knock_card]
        total = 0
        for part in parts:
            if total & part:
                raise InvalidState("a card is in two places")
            total |= part
        if total != (1 << 52) - 1:
            raise InvalidState("the state does not account for all 52 cards")
        if self.to_act not in (0, 1):
            raise InvalidState(f"to_act must be 0 or 1, not {self.to_act!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hand):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Hand {self.phase} to_act={self.to_act} stock={len(self.stock)}>"


_HANDLERS = {
    (Phase.OFFER_1, ActionKind.TAKE_UPCARD): Hand._take_upcard,
    (Phase.OFFER_1, ActionKind.PASS): Hand._pass,
    (Phase.OFFER_2, ActionKind.TAKE_UPCARD): Hand._take_upcard,
    (Phase.OFFER_2, ActionKind.PASS): Hand._pass,
    (Phase.FIRST_DRAW, ActionKind.DRAW_STOCK): Hand._draw_stock,
    (Phase.DRAW, ActionKind.DRAW_STOCK): Hand._draw_stock,
    (Phase.DRAW, ActionKind.DRAW_DISCARD): Hand._draw_discard,
    (Phase.DISCARD, ActionKind.DISCARD): Hand._discard,
    (Phase.DISCARD, ActionKind.KNOCK): Hand._knock,
    (Phase.DISCARD, ActionKind.GIN): Hand._knock,
    (Phase.DISCARD, ActionKind.BIG_GIN): Hand._big_gin,
    (Phase.LAST_CHANCE, ActionKind.TAKE_DISCARD_AND_KNOCK): Hand._take_discard_and_knock,
    (Phase.LAST_CHANCE, ActionKind.DECLINE): Hand._decline,
}
