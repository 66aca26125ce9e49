"""Slow, obviously-correct reference solver for the Gin Rummy rules
(docs/engine.md 1.9, 2.7-2.9, 3.3).

Written independently of ``service.games.gin`` and used only by the tests, on hands of at most
11 cards. Everything here is brute force on purpose:

* a meld is found by trying *every* subset of size >= 3 of the hand;
* an arrangement is *every* collection of pairwise-disjoint melds;
* a layoff is found by simulating, card by card and in every order, the extension of the
  knocker's melds (so chaining falls out naturally);
* the knocker tie-break (2.8.3) tries every minimal knocker arrangement.

Cards are plain two-character codes (``"TD"``). Any object whose ``str()`` is a code is
accepted, so engine ``Card`` values can be passed straight in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

RANKS = "A23456789TJQK"
SUITS = "CDHS"
# Display order (docs/engine.md 1.4): suit C < D < H < S, then rank.
ALL_CODES: tuple[str, ...] = tuple(r + s for s in SUITS for r in RANKS)

Arrangement = frozenset[frozenset[str]]

DEFAULT_OPTIONS: dict[str, Any] = {
    "knock_limit": 10,
    "gin_bonus": 25,
    "undercut_bonus": 25,
    "big_gin_enabled": False,
    "big_gin_bonus": 31,
    "oklahoma": False,
    "ace_requires_gin": True,
    "spade_doubles": True,
}


class RefIllegalKnock(Exception):
    """The reference's verdict that a knock is illegal; ``code`` is None when the rules
    name none."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- cards


def code(card: object) -> str:
    text = str(card)
    if len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise ValueError(f"not a card code: {text!r}")
    return text


def codes(cards: Iterable[object] | str) -> tuple[str, ...]:
    if isinstance(cards, str):
        cards = cards.split()
    return tuple(code(c) for c in cards)


def rank(card: str) -> int:
    return RANKS.index(card[0]) + 1


def suit(card: str) -> str:
    return card[1]


def points(card: str) -> int:
    return min(rank(card), 10)


def total_points(cards: Iterable[str]) -> int:
    return sum(points(c) for c in cards)


def display_index(card: str) -> int:
    return ALL_CODES.index(card)


# --------------------------------------------------------------------------- melds


def is_valid_meld(cards: Iterable[str]) -> bool:
    """A set of 3-4 cards of one rank, or a run of >= 3 consecutive ranks of one suit (ace low)."""
    cs = list(cards)
    if len(cs) < 3 or len(set(cs)) != len(cs):
        return False
    ranks = sorted(rank(c) for c in cs)
    if len(set(ranks)) == 1:
        return len(cs) <= 4
    if len({suit(c) for c in cs}) != 1:
        return False
    return all(ranks[i + 1] == ranks[i] + 1 for i in range(len(ranks) - 1))


def all_melds(cards: Iterable[str]) -> list[frozenset[str]]:
    """Every valid meld contained in ``cards`` (every subset of size >= 3 is tried)."""
    cs = sorted(set(codes(cards)), key=display_index)
    found = []
    for size in range(3, len(cs) + 1):
        for combo in combinations(cs, size):
            if is_valid_meld(combo):
                found.append(frozenset(combo))
    return found


def all_arrangements(cards: Iterable[str]) -> list[Arrangement]:
    """Every collection (including the empty one) of pairwise-disjoint melds from ``cards``."""
    melds = all_melds(cards)
    out: list[Arrangement] = []

    def walk(i: int, chosen: list[frozenset[str]], used: frozenset[str]) -> None:
        if i == len(melds):
            out.append(frozenset(chosen))
            return
        walk(i + 1, chosen, used)
        if not (melds[i] & used):
            walk(i + 1, [*chosen, melds[i]], used | melds[i])

    walk(0, [], frozenset())
    return out


def deadwood_of(cards: Iterable[str], arrangement: Iterable[Iterable[str]]) -> int:
    melded = {c for meld in arrangement for c in meld}
    return total_points(c for c in cards if c not in melded)


@lru_cache(maxsize=200_000)
def _min_deadwood(hand: frozenset[str]) -> int:
    return min(deadwood_of(hand, arr) for arr in all_arrangements(hand))


def min_deadwood(cards: Iterable[object] | str) -> int:
    return _min_deadwood(frozenset(codes(cards)))


def minimal_arrangements(cards: Iterable[object] | str) -> set[Arrangement]:
    """All distinct arrangements (as sets of meld card-sets) reaching the minimal deadwood."""
    hand = frozenset(codes(cards))
    best = _min_deadwood(hand)
    return {arr for arr in all_arrangements(hand) if deadwood_of(hand, arr) == best}


def best_discard_deadwood(cards11: Iterable[object] | str, taken: object | None = None) -> int:
    """Minimal deadwood of the 10 cards left, over every allowed discard."""
    hand = codes(cards11)
    barred = code(taken) if taken is not None else None
    return min(min_deadwood([c for c in hand if c != d]) for d in hand if d != barred)


# --------------------------------------------------------------------------- layoffs


def playable_layoff_sets(
    knocker_melds: Iterable[Iterable[object]], defender: Iterable[object] | str
) -> set[frozenset[str]]:
    """Every set of defender cards that can legally be laid off on the knocker's melds.

    Simulates laying the cards off one at a time, in every order and onto every meld that
    accepts it; a card is accepted iff the meld plus the card is still a valid meld (4th card
    of a set, or next card at either end of a run). Cards laid earlier stay on the meld, which
    is what makes chaining work.
    """
    start_melds = tuple(frozenset(codes(m)) for m in knocker_melds)
    hand = frozenset(codes(defender))
    reachable: set[frozenset[str]] = set()
    seen: set[tuple[tuple[frozenset[str], ...], frozenset[str]]] = set()

    def walk(melds: tuple[frozenset[str], ...], laid: frozenset[str]) -> None:
        if (melds, laid) in seen:
            return
        seen.add((melds, laid))
        reachable.add(laid)
        for card in hand - laid:
            for i, meld in enumerate(melds):
                if is_valid_meld(meld | {card}):
                    walk((*melds[:i], meld | {card}, *melds[i + 1 :]), laid | {card})

    walk(start_melds, frozenset())
    return reachable


def layoff_deadwood(
    knocker_melds: Iterable[Iterable[object]], defender: Iterable[object] | str
) -> int:
    """D1: the defender's minimal deadwood over every legal layoff set plus own melds."""
    hand = frozenset(codes(defender))
    return min(_min_deadwood(hand - laid) for laid in playable_layoff_sets(knocker_melds, hand))


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class RefScore:
    winner: str  # "knocker" | "defender"
    kind: str  # "knock" | "undercut" | "gin" | "big_gin"
    points: int
    knocker_deadwood: int
    defender_deadwood: int


def knock_limit_and_multiplier(
    options: Mapping[str, Any] | None = None, upcard: object | None = None
) -> tuple[int, int]:
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    if not opts["oklahoma"]:
        return opts["knock_limit"], 1
    if upcard is None:
        raise ValueError("Oklahoma needs the upcard")
    up = code(upcard)
    ace_limit = 0 if opts["ace_requires_gin"] else 1
    limit = ace_limit if rank(up) == 1 else points(up)
    multiplier = 2 if (suit(up) == "S" and opts["spade_doubles"]) else 1
    return limit, multiplier


def score(
    knocker: Iterable[object] | str,
    defender: Iterable[object] | str,
    options: Mapping[str, Any] | None = None,
    upcard: object | None = None,
) -> RefScore:
    """docs/engine.md 2.9 table; the 2.8.3 knocker tie-break tries every minimal knocker
    arrangement."""
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    k_hand = codes(knocker)
    d_hand = codes(defender)
    limit, m = knock_limit_and_multiplier(opts, upcard)

    if len(k_hand) == 11:
        if not opts["big_gin_enabled"]:
            raise RefIllegalKnock(None, "11 cards but big gin is disabled")
        if min_deadwood(k_hand) != 0:
            raise RefIllegalKnock(None, "11 cards that do not all meld")
        d0 = min_deadwood(d_hand)
        return RefScore("knocker", "big_gin", m * (opts["big_gin_bonus"] + d0), 0, d0)
    if len(k_hand) != 10:
        raise ValueError("knocker must hold 10 (or 11 for big gin) cards")

    k = min_deadwood(k_hand)
    if k == 0:
        d0 = min_deadwood(d_hand)
        return RefScore("knocker", "gin", m * (opts["gin_bonus"] + d0), 0, d0)
    if k > limit:
        raise RefIllegalKnock("KNOCK_LIMIT_EXCEEDED", f"deadwood {k} > knock limit {limit}")
    d1 = max(layoff_deadwood(arr, d_hand) for arr in minimal_arrangements(k_hand))
    if k < d1:
        return RefScore("knocker", "knock", m * (d1 - k), k, d1)
    return RefScore("defender", "undercut", m * ((k - d1) + opts["undercut_bonus"]), k, d1)
