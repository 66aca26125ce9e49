"""Decks and drivers for the multi-player Gin tests: rigged deals, scripted and random play."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

from service.games.common.cards import DECK, Card, parse_cards, random_deck
from service.games.gin.actions import Action, ActionKind, with_card
from service.games.gin.clock import automatic_action
from service.games.gin.hand import Phase
from service.games.gin.playout import choose
from service.games.multi_gin.match import MultiMatch, TableHand
from service.games.protocol import MatchStatus

#: Hands that end at once (hand-checked): the knocker holds ten cards and takes the upcard,
#: then knocks with ``knock``.
#: Knock 16: melds 4C 4D 4H | 7S 8S 9S | JD QD KD, deadwood AC = 1; the defender's melds
#: QC QH QS | 5C 6C 7C leave 2H 3D 5H 7H = 17 with nothing to lay off: 17 - 1 = 16.
KNOCK_16 = {
    "knocker": "4C 4D 4H 7S 8S 9S JD QD KD KS",
    "defender": "QC QH QS 5C 6C 7C 2H 3D 5H 7H",
    "upcard": "AC",
    "knock": "KS",
}
#: Undercut 27: 5S-8S | TC TD TH, deadwood AH 3C 5D = 9; the defender 2C 2D 2H | JH QH KH |
#: 6C 7C 8C leaves 7D = 7 and lays off nothing: (9 - 7) + 25 = 27 to the defender.
UNDERCUT_27 = {
    "knocker": "5S 6S 7S 8S TC TD TH 3C 5D KC",
    "defender": "2C 2D 2H JH QH KH 6C 7C 8C 7D",
    "upcard": "AH",
    "knock": "KC",
}
#: Gin 60: AS-4S | 7C 7D 7H | JH QH KH; the defender 8C 8D 8H | 2C 3C 4C leaves
#: 6D 9S TH KD = 35: 25 + 35 = 60.
GIN_60 = {
    "knocker": "AS 2S 3S 4S 7C 7D 7H JH QH 9D",
    "defender": "8C 8D 8H 2C 3C 4C 6D 9S TH KD",
    "upcard": "KH",
    "knock": "9D",
}


def rigged_deck(first: str, dealer: str, upcard: str) -> list[Card]:
    """A deck dealing ``first`` to the first player, ``dealer`` to the dealer, ``upcard``
    face up, and the other cards to the stock in display order."""
    first_cards, dealer_cards = parse_cards(first), parse_cards(dealer)
    up = parse_cards(upcard)[0]
    deck: list[Card] = []
    for a, b in zip(first_cards, dealer_cards, strict=True):
        deck += [a, b]
    deck.append(up)
    used = set(deck)
    deck += [c for c in DECK if c not in used]
    assert len(set(deck)) == 52
    return deck


def knock_deck(hand: dict[str, str], knocker_is_dealer: bool = False) -> list[Card]:
    if knocker_is_dealer:
        return rigged_deck(hand["defender"], hand["knocker"], hand["upcard"])
    return rigged_deck(hand["knocker"], hand["defender"], hand["upcard"])


def knock_at_once(match: MultiMatch, table: TableHand, hand: dict[str, str]) -> None:
    """Play a hand dealt by :func:`knock_deck`: the knocker takes the upcard and knocks (the
    first player passes first when the dealer is the knocker)."""
    slot = table.slot
    first, dealer = slot.first_player, slot.dealer
    if set(table.hand.cards_of(slot.hand_seat(first))) == set(parse_cards(hand["knocker"])):
        match.apply(first, "TAKE_UPCARD")
        match.apply(first, f"KNOCK {hand['knock']}")
    else:
        match.apply(first, "PASS")
        match.apply(dealer, "TAKE_UPCARD")
        match.apply(dealer, f"KNOCK {hand['knock']}")


def play_dead(match: MultiMatch, table: TableHand) -> None:
    """Play ``table``'s hand to a dead hand: pass the upcard, then draw from the stock and
    discard the card drawn, never knocking."""
    while table.live:
        seat = table.to_act
        assert seat is not None
        legal = {str(a) for a in match.legal_actions(seat)}
        if "PASS" in legal:
            match.apply(seat, "PASS")
        elif "DRAW_STOCK" in legal:
            match.apply(seat, "DRAW_STOCK")
        else:
            match.apply(seat, f"DISCARD {table.hand.log[-1]['card']}")


def policy(match: MultiMatch, seat: int, rng: random.Random, skill: float) -> Action:
    """A legal action for ``seat``: with probability ``skill`` in a discard step a knock when
    one is legal, else the discard leaving the least deadwood; otherwise a random legal one
    (so that hands end by knocks, gins and undercuts, and some die)."""
    table = match.table_of(seat)
    assert table is not None
    hand = table.hand
    if hand.phase is Phase.DISCARD and rng.random() < skill:
        knocks = hand.knock_cards()
        if knocks:
            return with_card(ActionKind.KNOCK, knocks[int(rng.random() * len(knocks))])
        return automatic_action(hand)
    return choose(rng, match.legal_actions(seat))


def random_steps(match: MultiMatch, rng: random.Random, *, limit: int = 100_000) -> Iterator[str]:
    """Drive ``match`` to its end at random (decks, the seat to act, :func:`policy` at a
    skill drawn per match); yields what each step was (``deal``, ``act`` or ``hand_end``)
    after it was applied."""
    skill = rng.uniform(0.3, 1.0)
    for _ in range(limit):
        if match.over:
            return
        if match.status is MatchStatus.AWAITING_DEAL:
            match.deal(random_deck(rng))
            yield "deal"
            continue
        seat = match.to_act[int(rng.random() * len(match.to_act))]
        before = match.hands_ended
        match.apply(seat, policy(match, seat, rng, skill))
        yield "hand_end" if match.hands_ended > before else "act"
    raise AssertionError("the match did not end")


_CARD_CODE = re.compile(r'"([A2-9TJQK][CDHS])"')


def card_strings(data: Any) -> set[str]:
    """Every card code written in a JSON-ready value (a view)."""
    return set(_CARD_CODE.findall(json.dumps(data)))


def hidden_at(table: TableHand, seat: int | None) -> set[str]:
    """The cards of ``table`` that ``seat`` must not see now: while its hand is in play, the
    stock and the cards the other player holds that were not taken face up."""
    if not table.live:
        return set()
    hand = table.hand
    public = {str(hand.upcard)} | {
        e["card"] for e in hand.log if e["action"] in ("TAKE_UPCARD", "DRAW_DISCARD")
    }
    hidden = {str(c) for c in hand.stock}
    for hand_seat, match_seat in enumerate(table.slot.seats):
        if match_seat != seat:
            hidden |= {str(c) for c in hand.cards_of(hand_seat)} - public
    return hidden


def leaks(match: MultiMatch, seat: int | None) -> set[str]:
    """The hidden cards that ``match.view(seat)`` shows (each table has its own deck, so each
    table's part is checked against that table's secrets). Outside the tables, only the
    seat's legal actions name cards, from its own hand."""
    view = match.view(seat)
    shown = set()
    for table, part in zip(match.tables, view.pop("tables"), strict=True):
        shown |= card_strings(part) & hidden_at(table, seat)
    mine: set[str] = set()
    own = None if seat is None else match.table_of(seat)
    if seat is not None and own is not None:
        mine = {str(c) for c in own.hand.cards_of(own.slot.hand_seat(seat))}
    return shown | (card_strings(view) - mine)
