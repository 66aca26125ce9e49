"""Building hands with chosen cards, for state-machine tests."""

from __future__ import annotations

from service.games.common.cards import DECK, parse_cards
from service.games.gin.hand import Hand
from service.games.gin.ruleset import Ruleset


def deck_for(first: str, dealer_cards: str, upcard: str, stock_top: str = "") -> list[str]:
    """A deck in deal order giving the first player (non-dealer) ``first``, the dealer
    ``dealer_cards``, the upcard, then ``stock_top`` on top of the stock (the rest of the
    stock in display order)."""
    a = parse_cards(first)
    b = parse_cards(dealer_cards)
    assert len(a) == len(b) == 10
    up = parse_cards(upcard)
    top = parse_cards(stock_top)
    used = set(a) | set(b) | set(up) | set(top)
    assert len(used) == 21 + len(top)
    deck: list[str] = []
    for x, y in zip(a, b, strict=True):
        deck += [str(x), str(y)]
    deck += [str(up[0])] + [str(c) for c in top]
    deck += [str(c) for c in DECK if c not in used]
    return deck


def deal(
    first: str,
    dealer_cards: str,
    upcard: str,
    stock_top: str = "",
    *,
    dealer: int = 1,
    ruleset: Ruleset | None = None,
) -> Hand:
    return Hand.deal(deck_for(first, dealer_cards, upcard, stock_top), dealer, ruleset)
