"""Building Rummy hands with chosen cards, for state-machine tests."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from service.games.common.cards import DECK, parse_cards
from service.games.common.errors import RulesError
from service.games.rummy.actions import RummyAction
from service.games.rummy.hand import RummyHand, Shuffler, deal_size
from service.games.rummy.rules import RummyRules


def deck_for(
    players: int, dealer: int, hands: Sequence[str], upcard: str, stock_top: str = ""
) -> list[str]:
    """A deck in deal order giving seat ``i`` the cards ``hands[i]`` (in that order), then the
    upcard, then ``stock_top`` on top of the stock (the rest of the stock in display order)."""
    size = deal_size(players)
    dealt = [parse_cards(cards) for cards in hands]
    assert len(dealt) == players and all(len(cards) == size for cards in dealt)
    deck: list[str] = []
    for i in range(size * players):
        seat = (dealer + 1 + i) % players
        deck.append(dealt[seat][i // players].code)
    deck += [c.code for c in parse_cards(upcard)] + [c.code for c in parse_cards(stock_top)]
    assert len(set(deck)) == len(deck)
    return deck + [c.code for c in DECK if c.code not in deck]


def deal(
    players: int,
    dealer: int,
    hands: Sequence[str],
    upcard: str,
    stock_top: str = "",
    rules: RummyRules | None = None,
    shuffler: Shuffler | None = None,
) -> RummyHand:
    return RummyHand.deal(
        players, dealer, deck_for(players, dealer, hands, upcard, stock_top), rules, shuffler
    )


def position(
    hands: Sequence[str],
    *,
    to_act: int,
    discard: str,
    stock_top: str = "",
    table: Sequence[tuple[int, str]] = (),
    rest: str | int = "stock",
    rules: RummyRules | None = None,
    dealer: int | None = None,
    phase: str = "DRAW",
    taken: str | None = None,
    laid_before: Sequence[int] = (),
    restocks: int = 0,
    turns: int = 0,
    shuffler: Shuffler | None = None,
) -> RummyHand:
    """A hand in the middle of play: each seat's cards, the discard pile (bottom first), the
    stock's top cards and the table melds ``(seat, cards)``. The cards named nowhere go to the
    bottom of the stock (``rest="stock"``) or into seat ``rest``'s hand."""
    players = len(hands)
    named = [
        c
        for text in (*hands, discard, stock_top, *(m for _, m in table))
        for c in parse_cards(text)
    ]
    assert len(set(named)) == len(named), "a card is named twice"
    leftover = [c.code for c in DECK if c not in named]
    held = [[c.code for c in parse_cards(h)] for h in hands]
    stock = [c.code for c in parse_cards(stock_top)]
    if rest == "stock":
        stock += leftover
    else:
        assert isinstance(rest, int)
        held[rest] += leftover
    data: dict[str, Any] = {
        "schema": 1,
        "game": "rummy",
        "rules": (rules or RummyRules()).to_dict(),
        "players": players,
        "dealer": (to_act - 1) % players if dealer is None else dealer,
        "deck": [c.code for c in DECK],
        "hands": held,
        "stock": stock,
        "discard": [c.code for c in parse_cards(discard)],
        "table": [
            {"melded_by": seat, "melded": [c.code for c in parse_cards(m)], "layoffs": []}
            for seat, m in table
        ],
        "phase": phase,
        "to_act": to_act,
        "taken": taken,
        "laid_this_turn": False,
        "laid_before": [seat in laid_before for seat in range(players)],
        "forfeited": [False] * players,
        "restocks": restocks,
        "turns": turns,
        "outcome": None,
        "log": [],
    }
    return RummyHand.from_dict(data, shuffler)


def play(hand: RummyHand, *actions: str) -> RummyHand:
    """Apply ``actions`` in turn, each by the seat to act."""
    for action in actions:
        assert hand.to_act is not None, f"the hand ended before {action!r}"
        hand = hand.apply(hand.to_act, action)
    return hand


def assert_refused(hand: RummyHand, seat: int, action: str, code: str) -> RulesError:
    """``action`` by ``seat`` is refused with ``code``, is not listed, and changes nothing."""
    before = copy.deepcopy(hand.to_dict())
    with pytest.raises(RulesError) as err:
        hand.apply(seat, action)
    assert err.value.code == code, str(err.value)
    try:
        text = str(RummyAction.parse(action))
    except RulesError:
        text = action
    assert text not in {str(a) for a in hand.legal_actions(seat)}
    assert hand.to_dict() == before, "a refused action changed the state"
    return err.value


def listed(hand: RummyHand) -> set[str]:
    return {str(a) for a in hand.legal_actions()}
