"""Layoffs at the showdown (docs/engine.md 2.8.4).

The defender's own melds and the cards laid off on the knocker's melds are chosen together
to minimise the defender's remaining deadwood. Each knocker meld offers a few ways to
receive cards: a set of three its missing fourth card; a run the next cards of its suit
below and above, chained, as far as the defender holds them contiguously (ace low: never
past the king, never below the ace). Every combination of one way per meld whose cards are
disjoint is tried; for each, the rest of the defender's hand is arranged optimally
(:func:`~service.games.gin.melds.deadwood_of_mask`). The search is tiny: a meld rarely offers
more than a handful of ways.

Ties (equal remaining deadwood) go to the fewest cards laid off, then to the laid-off cards
that come first in display order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import product

from service.games.common.cards import Card, cards_to_mask, mask_to_cards, meld_kind
from service.games.common.errors import InvalidCards
from service.games.gin.melds import arrange_mask, deadwood_of_mask, parse_melds


@dataclass(frozen=True, slots=True)
class Layoff:
    """The defender's side of a showdown: own melds, cards laid off, deadwood left."""

    melds: tuple[tuple[Card, ...], ...]
    laid_off: tuple[Card, ...]
    unmatched: tuple[Card, ...]
    deadwood: int

    def to_dict(self) -> dict[str, object]:
        return {
            "melds": [[str(c) for c in meld] for meld in self.melds],
            "laid_off": [str(c) for c in self.laid_off],
            "unmatched": [str(c) for c in self.unmatched],
            "deadwood": self.deadwood,
        }


def _receivers(meld: Sequence[Card], defender: int) -> list[int]:
    """The masks of defender cards this knocker meld can receive (the empty mask first)."""
    kind = meld_kind(meld)
    if kind == "set":
        if len(meld) == 4:
            return [0]
        rank0 = meld[0].rank - 1
        held = 0
        for s in range(4):
            held |= 1 << (13 * s + rank0)
        missing = held & ~cards_to_mask(meld)
        return [0, missing] if missing & defender else [0]
    base = 13 * meld[0].suit_index
    lo = min(card.rank for card in meld) - 1
    hi = max(card.rank for card in meld) - 1
    below = [0]
    r = lo - 1
    while r >= 0 and defender >> (base + r) & 1:
        below.append(below[-1] | 1 << (base + r))
        r -= 1
    above = [0]
    r = hi + 1
    while r <= 12 and defender >> (base + r) & 1:
        above.append(above[-1] | 1 << (base + r))
        r += 1
    return [b | a for b in below for a in above]


def lay_off_mask(knocker_melds: Sequence[Sequence[Card]], defender: int) -> tuple[int, int]:
    """(laid-off mask, deadwood left) minimising the defender's deadwood."""
    options = [_receivers(meld, defender) for meld in knocker_melds]
    options = [opts for opts in options if len(opts) > 1]
    best_dw = deadwood_of_mask(defender)
    best_laid = 0
    if not options:
        return best_laid, best_dw
    best_key: tuple[int, int, tuple[int, ...]] = (best_dw, 0, ())
    for combo in product(*options):
        laid = 0
        for part in combo:
            if laid & part:
                break
            laid |= part
        else:
            if not laid:
                continue
            dw = deadwood_of_mask(defender & ~laid)
            if dw > best_key[0]:
                continue
            key = (dw, laid.bit_count(), tuple(c.index for c in mask_to_cards(laid)))
            if key < best_key:
                best_key, best_laid, best_dw = key, laid, dw
    return best_laid, best_dw


def lay_off_on(knocker_melds: Sequence[Sequence[Card]], defender: int) -> Layoff:
    """The full :class:`Layoff` for the defender hand ``defender`` (a mask)."""
    laid, _ = lay_off_mask(knocker_melds, defender)
    rest = arrange_mask(defender & ~laid)
    return Layoff(rest.melds, mask_to_cards(laid), rest.unmatched, rest.deadwood)


def lay_off(
    knocker_melds: Iterable[str | Iterable[Card | str]],
    defender_cards: str | Iterable[Card | str],
) -> Layoff:
    """The defender's best response to the knocker's melds (2.8.4).

    With no knocker melds (gin) nothing can be laid off and the result is simply the
    defender's optimal arrangement.

    :raises InvalidMeld: when a knocker meld is not a set or run.
    :raises InvalidCards: when cards repeat or the defender holds a knocker's card.
    """
    melds = parse_melds(knocker_melds)
    defender = cards_to_mask(defender_cards)
    if defender & cards_to_mask(card for meld in melds for card in meld):
        raise InvalidCards("the defender holds a card of the knocker's melds")
    return lay_off_on(melds, defender)
