"""Melds, deadwood and the optimal arrangement (docs/engine.md 1.5-1.9), on 52-bit hand masks.

Design. A hand is a 52-bit mask (bit = display index, 13 bits per suit). Runs live inside
one suit, so for every 13-bit suit mask the best use of runs alone is precomputed once
(``_SUIT_DEADWOOD``: the deadwood left when every block of three or more consecutive ranks is
one run; melding a whole block is always best, since every card has positive points). Sets
are the only thing that ties suits together, and only ranks held in three or four suits can
form one. So the minimal deadwood is

    min over set choices (for each such rank: no set, the set of four, or one of the sets of
    three) of the sum of ``_SUIT_DEADWOOD`` over the four suit masks left after the sets.

A random 10-card hand usually has no such rank and costs four table look-ups; a hand with
k candidate ranks tries at most 6**k choices (k <= 3 for 11 cards).

Ties (1.9): among arrangements with the minimal deadwood, the one whose melded cards, listed
in display order (1.4), come first lexicographically wins; a block of consecutive cards in a
suit is always shown as one run.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import product
from typing import Any, NamedTuple

from service.games.common.cards import (
    DECK,
    SUIT_CARDS,
    Card,
    cards_to_mask,
    mask_to_cards,
    meld_kind,
    parse_cards,
)
from service.games.common.errors import InvalidCards, InvalidMeld

SUIT_BITS = 0x1FFF
_RANK_POINTS = tuple(min(r + 1, 10) for r in range(13))


def _suit_tables() -> tuple[list[int], list[tuple[tuple[int, int], ...]]]:
    deadwood = [0] * 8192
    runs: list[tuple[tuple[int, int], ...]] = [()] * 8192
    for m in range(8192):
        blocks: list[tuple[int, int]] = []
        dw = 0
        r = 0
        while r < 13:
            if not m >> r & 1:
                r += 1
                continue
            start = r
            while r < 13 and m >> r & 1:
                r += 1
            if r - start >= 3:
                blocks.append((start, r - 1))
            else:
                dw += sum(_RANK_POINTS[start:r])
        deadwood[m] = dw
        runs[m] = tuple(blocks)
    return deadwood, runs


_SUIT_DEADWOOD, _SUIT_RUNS = _suit_tables()


def _suit_meld_tables() -> tuple[list[list[Any]], list[list[tuple[Card, ...]]]]:
    runs_table: list[list[Any]] = []
    unmatched_table: list[list[tuple[Card, ...]]] = []
    for s in range(4):
        base = 13 * s
        runs_of: list[Any] = []
        unmatched_of: list[tuple[Card, ...]] = []
        for m in range(8192):
            runs = _SUIT_RUNS[m]
            runs_of.append(tuple(DECK[base + lo : base + hi + 1] for lo, hi in runs))
            melded = 0
            for lo, hi in runs:
                melded |= ((1 << (hi - lo + 1)) - 1) << lo
            unmatched_of.append(SUIT_CARDS[s][m & ~melded])
        runs_table.append(runs_of)
        unmatched_table.append(unmatched_of)
    return runs_table, unmatched_table


# _SUIT_RUN_MELDS[s][m]: the runs (as card tuples) of suit s for the 13-bit mask m;
# _SUIT_UNMATCHED[s][m]: the cards of that suit mask left out of those runs.
_SUIT_RUN_MELDS, _SUIT_UNMATCHED = _suit_meld_tables()


def _set_options() -> list[list[list[int]]]:
    """For each rank and 4-bit pattern of suits held: the set options as card masks, the
    empty option (no set of this rank) first."""
    table: list[list[list[int]]] = []
    for r in range(13):
        per_pattern: list[list[int]] = []
        for pattern in range(16):
            bits = [1 << (13 * s + r) for s in range(4) if pattern >> s & 1]
            options = [0]
            if len(bits) == 4:
                options.append(sum(bits))
                options.extend(sum(bits) - leave_out for leave_out in reversed(bits))
            elif len(bits) == 3:
                options.append(sum(bits))
            per_pattern.append(options)
        table.append(per_pattern)
    return table


_SET_OPTIONS = _set_options()
_RANK_MASKS = tuple(sum(1 << (13 * s + r) for s in range(4)) for r in range(13))


def _set_choices(mask: int) -> list[list[int]]:
    """Per candidate rank, the set options (the empty option first); empty if none."""
    c = mask & SUIT_BITS
    d = mask >> 13 & SUIT_BITS
    h = mask >> 26 & SUIT_BITS
    s = mask >> 39 & SUIT_BITS
    three = (c & d & (h | s)) | (h & s & (c | d))
    choices = []
    while three:
        low = three & -three
        r = low.bit_length() - 1
        pattern = (c >> r & 1) | (d >> r & 1) << 1 | (h >> r & 1) << 2 | (s >> r & 1) << 3
        choices.append(_SET_OPTIONS[r][pattern])
        three ^= low
    return choices


def _runs_deadwood(mask: int) -> int:
    t = _SUIT_DEADWOOD
    return (
        t[mask & SUIT_BITS]
        + t[mask >> 13 & SUIT_BITS]
        + t[mask >> 26 & SUIT_BITS]
        + t[mask >> 39 & SUIT_BITS]
    )


def _combos(choices: list[list[int]]) -> Iterable[int]:
    """Every set-card mask: one option per candidate rank (ranks never share cards)."""
    if len(choices) == 1:
        return choices[0]
    return (sum(combo) for combo in product(*choices))


def deadwood_of_mask(mask: int) -> int:
    """Minimal deadwood of the hand ``mask`` (1.9)."""
    t = _SUIT_DEADWOOD
    c = mask & SUIT_BITS
    d = mask >> 13 & SUIT_BITS
    h = mask >> 26 & SUIT_BITS
    s = mask >> 39 & SUIT_BITS
    if not ((c & d & (h | s)) | (h & s & (c | d))):
        return t[c] + t[d] + t[h] + t[s]
    best = 1000
    for sets in _combos(_set_choices(mask)):
        rest = mask & ~sets
        dw = (
            t[rest & SUIT_BITS]
            + t[rest >> 13 & SUIT_BITS]
            + t[rest >> 26 & SUIT_BITS]
            + t[rest >> 39 & SUIT_BITS]
        )
        if dw < best:
            best = dw
    return best


def minimal_set_choices(mask: int) -> tuple[int, list[int]]:
    """The minimal deadwood and every set-card mask that reaches it (one per distinct choice)."""
    choices = _set_choices(mask)
    if not choices:
        return _runs_deadwood(mask), [0]
    t = _SUIT_DEADWOOD
    best = 1000
    winners: list[int] = []
    for sets in _combos(choices):
        rest = mask & ~sets
        dw = (
            t[rest & SUIT_BITS]
            + t[rest >> 13 & SUIT_BITS]
            + t[rest >> 26 & SUIT_BITS]
            + t[rest >> 39 & SUIT_BITS]
        )
        if dw < best:
            best, winners = dw, [sets]
        elif dw == best:
            winners.append(sets)
    return best, winners


class Arrangement(NamedTuple):  # a NamedTuple: built on every call, so it must be cheap
    """A hand split into disjoint melds and unmatched cards (deadwood). Immutable."""

    melds: tuple[tuple[Card, ...], ...]
    unmatched: tuple[Card, ...]
    deadwood: int

    @property
    def cards(self) -> tuple[Card, ...]:
        """Every card of the arrangement, melds first."""
        return tuple(card for meld in self.melds for card in meld) + self.unmatched

    def __str__(self) -> str:
        parts = [" ".join(map(str, meld)) for meld in self.melds]
        if self.unmatched:
            parts.append(" ".join(map(str, self.unmatched)))
        return " | ".join(parts)

    def __repr__(self) -> str:
        return f"Arrangement({str(self)!r}, deadwood={self.deadwood})"

    def to_dict(self) -> dict[str, object]:
        return {
            "melds": [[str(c) for c in meld] for meld in self.melds],
            "unmatched": [str(c) for c in self.unmatched],
            "deadwood": self.deadwood,
        }


def melded_mask(mask: int, sets: int) -> int:
    """The mask of melded cards for the hand ``mask`` with the set cards ``sets``."""
    rest = mask & ~sets
    melded = sets
    for s in range(4):
        for lo, hi in _SUIT_RUNS[rest >> (13 * s) & SUIT_BITS]:
            melded |= ((1 << (hi - lo + 1)) - 1) << (13 * s + lo)
    return melded


def _order_key(melded: int) -> tuple[int, ...]:
    return tuple(card.index for card in mask_to_cards(melded))


def arrangement_for(mask: int, sets: int, deadwood: int | None = None) -> Arrangement:
    """The arrangement of ``mask`` with the set cards ``sets`` and maximal runs of the rest;
    melds in display order of their first card."""
    rest = mask & ~sets
    c = rest & SUIT_BITS
    d = rest >> 13 & SUIT_BITS
    h = rest >> 26 & SUIT_BITS
    s = rest >> 39 & SUIT_BITS
    runs = _SUIT_RUN_MELDS
    melds = runs[0][c] + runs[1][d] + runs[2][h] + runs[3][s]
    while sets:
        rank0 = (sets & -sets).bit_length() - 1
        same_rank = _RANK_MASKS[rank0 % 13] & sets
        melds += (mask_to_cards(same_rank),)
        sets ^= same_rank
    if len(melds) > 1:
        melds = tuple(sorted(melds, key=_first_index))
    table = _SUIT_UNMATCHED
    unmatched = table[0][c] + table[1][d] + table[2][h] + table[3][s]
    if deadwood is None:
        deadwood = sum(card.points for card in unmatched)
    return Arrangement(melds, unmatched, deadwood)


def _first_index(meld: tuple[Card, ...]) -> int:
    return meld[0].index


def minimal_arrangements(mask: int) -> list[Arrangement]:
    """Every minimal-deadwood arrangement with distinct melded cards or melds, in tie order."""
    deadwood, winners = minimal_set_choices(mask)
    if len(winners) > 1:
        winners = sorted(winners, key=lambda sets: _order_key(melded_mask(mask, sets)))
    return [arrangement_for(mask, sets, deadwood) for sets in winners]


def arrange_mask(mask: int) -> Arrangement:
    """The optimal arrangement of the hand ``mask`` (1.9), ties broken deterministically."""
    c = mask & SUIT_BITS
    d = mask >> 13 & SUIT_BITS
    h = mask >> 26 & SUIT_BITS
    s = mask >> 39 & SUIT_BITS
    if not ((c & d & (h | s)) | (h & s & (c | d))):
        runs = _SUIT_RUN_MELDS
        rest = _SUIT_UNMATCHED
        t = _SUIT_DEADWOOD
        return Arrangement(
            runs[0][c] + runs[1][d] + runs[2][h] + runs[3][s],
            rest[0][c] + rest[1][d] + rest[2][h] + rest[3][s],
            t[c] + t[d] + t[h] + t[s],
        )
    deadwood, winners = minimal_set_choices(mask)
    sets = winners[0]
    if len(winners) > 1:
        sets = min(winners, key=lambda s: _order_key(melded_mask(mask, s)))
    return arrangement_for(mask, sets, deadwood)


def arrange(cards: str | Iterable[Card | str]) -> Arrangement:
    """The optimal arrangement of ``cards`` (any number, codes or cards): minimum deadwood.

    :raises InvalidCard: when an item is not a card.
    :raises InvalidCards: when a card appears twice.
    """
    return arrange_mask(cards_to_mask(cards))


def deadwood(cards: str | Iterable[Card | str]) -> int:
    """The minimal deadwood of ``cards`` (1.9)."""
    return deadwood_of_mask(cards_to_mask(cards))


def best_discard_mask(mask: int, barred: int = 0) -> tuple[int, int]:
    """(bit of the best discard, deadwood left) for an 11-card mask; never a ``barred`` bit.

    Ties go to the discard with the most points, then the latest in display order.
    """
    best_bit = 0
    best_dw = 1000
    best_points = -1
    candidates = mask & ~barred
    while candidates:
        low = candidates & -candidates
        candidates ^= low
        dw = deadwood_of_mask(mask ^ low)
        points = DECK[low.bit_length() - 1].points
        if dw < best_dw or (dw == best_dw and points >= best_points):
            best_bit, best_dw, best_points = low, dw, points
    return best_bit, best_dw


def best_discard(
    cards11: str | Iterable[Card | str], taken: Card | str | None = None
) -> tuple[Card, Arrangement]:
    """The discard from 11 cards that leaves the least deadwood, and the arrangement left.

    ``taken`` is the card just taken from the discard pile, which may not be discarded (2.5).

    :raises InvalidCards: unless exactly 11 distinct cards are given, ``taken`` among them.
    """
    mask = cards_to_mask(cards11)
    if mask.bit_count() != 11:
        raise InvalidCards(f"best_discard needs 11 cards, got {mask.bit_count()}")
    barred = 0
    if taken is not None:
        barred = cards_to_mask([taken])
        if not barred & mask:
            raise InvalidCards(f"taken card {taken!s} is not in the hand")
    bit, _ = best_discard_mask(mask, barred)
    return DECK[bit.bit_length() - 1], arrange_mask(mask ^ bit)


# --- meld validation -------------------------------------------------------------------


def parse_meld(cards: str | Iterable[Card | str]) -> tuple[Card, ...]:
    """A meld in display order.

    :raises InvalidMeld: unless the cards form a set or a run.
    """
    meld = tuple(sorted(parse_cards(cards), key=lambda c: c.index))
    if meld_kind(meld) is None:
        raise InvalidMeld(f"not a set or run: {' '.join(map(str, meld))!r}")
    return meld


def parse_melds(melds: Iterable[str | Iterable[Card | str]]) -> tuple[tuple[Card, ...], ...]:
    """Several disjoint melds.

    :raises InvalidMeld: when one is not a meld.
    :raises InvalidCards: when a card appears in two melds.
    """
    result = tuple(parse_meld(meld) for meld in melds)
    seen = [card for meld in result for card in meld]
    if len(set(seen)) != len(seen):
        raise InvalidCards("a card appears in two melds")
    return result
