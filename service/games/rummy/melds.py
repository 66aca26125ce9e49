"""Rummy melds on the table and in the hand (1.5-1.7, 5.2.2, 11.3.5-11.3.6).

A meld is a set (three or four cards of one rank) or a run (three or more consecutive cards
of one suit). With ``AceMode.LOW`` the ace is only the 1; with ``HIGH_OR_LOW`` it may also
follow the king (``QH KH AH``), never both at once and never wrapping (``KH AH 2H``). A run
is read in one of two *readings*: ace low (positions 1..13) or ace high (positions 2..14, the
ace at 14). A card set is a valid run when its ranks are consecutive in a reading allowed.

Hands are 52-bit masks (:mod:`service.games.common.cards`). :func:`melds_in` lists every meld a hand
holds and :func:`lay_offs_onto` every group of cards a hand can add to one table meld; both
are exhaustive, since the legal actions list every one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from service.games.common.cards import DECK, Card, cards_to_mask, meld_kind
from service.games.rummy.rules import AceMode

_LOW = (1, 13)  # the ace-low reading: positions 1..13, a position is the rank
_HIGH = (2, 14)  # the ace-high reading: positions 2..14, the ace at 14


def _readings(ace_mode: AceMode) -> tuple[tuple[int, int], ...]:
    return (_LOW, _HIGH) if ace_mode is AceMode.HIGH_OR_LOW else (_LOW,)


def _card_at(suit: int, position: int) -> Card:
    """The card of ``suit`` at a reading's ``position`` (14 is the ace)."""
    return DECK[13 * suit + (position - 1) % 13]


def _position(card: Card, reading: tuple[int, int]) -> int:
    return 14 if card.rank == 1 and reading is _HIGH else card.rank


def rummy_meld_kind(cards: Sequence[Card], ace_mode: AceMode) -> str | None:
    """``"set"``, ``"run"`` or None when ``cards`` (distinct) are no meld under ``ace_mode``."""
    kind = meld_kind(cards)
    if kind is not None or ace_mode is AceMode.LOW or len(cards) < 3:
        return kind
    if len({card.suit for card in cards}) != 1:
        return None
    positions = {_position(card, _HIGH) for card in cards}
    if len(positions) == len(cards) and max(positions) - min(positions) == len(cards) - 1:
        return "run"
    return None


def melds_in(hand: int, ace_mode: AceMode) -> list[int]:
    """Every meld (as a card mask) that the hand ``hand`` holds: each set of three or four
    cards of a rank, each run of three or more in every allowed reading. Sets first (by
    rank), then runs (by suit, lowest and shortest first); no meld twice."""
    found: list[int] = []
    for rank0 in range(13):
        held = [DECK[13 * s + rank0].bit for s in range(4) if hand >> (13 * s + rank0) & 1]
        for size in (3, 4):
            found.extend(sum(group) for group in combinations(held, size))
    seen = set(found)
    for suit in range(4):
        for low, high in _readings(ace_mode):
            for start in range(low, high - 1):
                mask = 0
                for position in range(start, high + 1):
                    bit = _card_at(suit, position).bit
                    if not hand & bit:
                        break
                    mask |= bit
                    if position - start >= 2 and mask not in seen:
                        seen.add(mask)
                        found.append(mask)
    return found


def _chain(hand: int, suit: int, start: int, step: int, limit: int) -> list[int]:
    """The growing groups of held cards from ``start`` onwards by ``step``: the empty group,
    then one card, two cards, ... as long as the hand holds the next one within ``limit``."""
    groups = [0]
    position = start
    while (position - limit) * step <= 0:
        bit = _card_at(suit, position).bit
        if not hand & bit:
            break
        groups.append(groups[-1] | bit)
        position += step
    return groups


def lay_offs_onto(meld: Sequence[Card], hand: int, ace_mode: AceMode) -> list[int]:
    """Every non-empty group of the hand's cards (as masks) that can be added to the table
    meld ``meld`` so that the result is still a meld: the missing card of a set of three; for
    a run, cards below, above or both, chained to its ends (11.3.5)."""
    kind = rummy_meld_kind(meld, ace_mode)
    if kind == "set":
        missing = sum(DECK[13 * s + meld[0].rank - 1].bit for s in range(4)) & ~cards_to_mask(meld)
        return [missing] if len(meld) == 3 and hand & missing else []
    suit = meld[0].suit_index
    groups: list[int] = []
    for reading in _readings(ace_mode):
        positions = [_position(card, reading) for card in meld]
        low, high = min(positions), max(positions)
        if high - low != len(meld) - 1:
            continue  # the meld does not read as a run this way
        below = _chain(hand, suit, low - 1, -1, reading[0])
        above = _chain(hand, suit, high + 1, 1, reading[1])
        for down in below:
            for up in above:
                group = down | up
                if group and group not in groups:
                    groups.append(group)
    return groups
