"""Cards as immutable, interned values (docs/engine.md 0.2, 1.1-1.4).

A :class:`Card` *is* its two-character code: it subclasses ``str``, so ``Card.parse("TD") ==
"TD"``, it prints, hashes and serialises as ``"TD"``, and code strings can be used wherever
cards are looked up. On top of that it carries its rank, suit, point value, display index and
its bit in a 52-bit hand mask (bit = display index), which the arrangement code works on.
There are exactly 52 card objects; every constructor returns one of them.

Cards order by display order (1.4), not alphabetically: suit C < D < H < S, then rank A..K;
``AC`` has index 0, ``KS`` index 51.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from service.games.common.errors import InvalidCard, InvalidCards

T = TypeVar("T")

RANKS = "A23456789TJQK"
SUITS = "CDHS"


class Card(str):
    """One playing card, equal to its code (``"TD"``). Immutable."""

    rank: int
    suit: str
    suit_index: int
    index: int  # type: ignore[assignment]  # the display index; shadows str.index
    points: int
    bit: int
    code: str

    def __new__(cls, code: str) -> Card:
        """The card with this code: ``Card("TD")`` (same as :meth:`parse`)."""
        return Card.parse(code)

    @classmethod
    def _make(cls, index: int) -> Card:
        suit_index, rank0 = divmod(index, 13)
        card = str.__new__(cls, RANKS[rank0] + SUITS[suit_index])
        for name, value in (
            ("rank", rank0 + 1),
            ("suit", SUITS[suit_index]),
            ("suit_index", suit_index),
            ("index", index),
            ("points", min(rank0 + 1, 10)),
            ("bit", 1 << index),
            ("code", RANKS[rank0] + SUITS[suit_index]),  # the code as a plain str
        ):
            object.__setattr__(card, name, value)
        return card

    @staticmethod
    def parse(text: str) -> Card:
        """Read a two-character code such as ``"TD"`` or ``"as"``.

        :raises InvalidCard: when ``text`` is not a card code.
        """
        try:
            return _BY_CODE[text.strip().upper()]
        except (KeyError, AttributeError, TypeError):
            raise InvalidCard(f"not a card code: {text!r}") from None

    @staticmethod
    def from_index(index: int) -> Card:
        """The card at ``index`` in display order (0 = ``AC`` ... 51 = ``KS``).

        :raises InvalidCard: when ``index`` is not an integer in 0..51.
        """
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 52:
            raise InvalidCard(f"not a card index: {index!r}")
        return DECK[index]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Card is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Card is immutable")

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (Card.from_index, (self.index,))

    def __copy__(self) -> Card:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Card:
        return self

    def __str__(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Card({str.__str__(self)!r})"

    # Display order, also against plain codes; equality and hashing stay those of the code.
    def __lt__(self, other: object) -> bool:
        return self.index < _index_of(other)

    def __le__(self, other: object) -> bool:
        return self.index <= _index_of(other)

    def __gt__(self, other: object) -> bool:
        return self.index > _index_of(other)

    def __ge__(self, other: object) -> bool:
        return self.index >= _index_of(other)


def _index_of(other: object) -> int:
    if isinstance(other, str):
        return to_card(other).index
    raise TypeError(f"cannot order a card against {other!r}")


DECK: tuple[Card, ...] = tuple(Card._make(i) for i in range(52))
_BY_CODE: dict[str, Card] = {str.__str__(card): card for card in DECK}
# A card hashes and compares as its code, so one dict lookup reads either form.
BIT_OF: dict[str, int] = {card: card.bit for card in DECK}


def to_card(value: Card | str) -> Card:
    """A card from a :class:`Card` or its code.

    :raises InvalidCard: for anything else.
    """
    if isinstance(value, Card):
        return value
    if isinstance(value, str):
        return Card.parse(value)
    raise InvalidCard(f"not a card: {value!r}")


def parse_cards(cards: str | Iterable[Card | str]) -> tuple[Card, ...]:
    """Cards from space-separated codes (``|`` ignored) or an iterable of cards or codes.

    :raises InvalidCard: when an item is not a card.
    :raises InvalidCards: when a card appears twice.
    """
    if isinstance(cards, str):
        items: list[Card | str] | tuple[Card | str, ...] = cards.replace("|", " ").split()
    elif isinstance(cards, list | tuple):
        items = cards
    else:
        items = list(cards)
    try:  # the common case: exact codes or cards, one dict look-up each
        result = tuple(map(_BY_CODE.__getitem__, items))
    except (KeyError, TypeError):
        result = tuple(to_card(item) for item in items)
    if len(set(result)) != len(result):
        raise InvalidCards(f"duplicate card in {format_cards(result)!r}")
    return result


def format_cards(cards: Iterable[Card]) -> str:
    """Space-separated codes: the text form that :func:`parse_cards` reads back."""
    return " ".join(card.code for card in cards)


def cards_to_mask(cards: str | Iterable[Card | str]) -> int:
    """The 52-bit mask of ``cards`` (codes or cards).

    :raises InvalidCard: when an item is not a card.
    :raises InvalidCards: when a card appears twice.
    """
    if isinstance(cards, str):
        cards = parse_cards(cards)
    elif not isinstance(cards, tuple | list):
        cards = tuple(cards)
    try:
        mask: int = sum(map(BIT_OF.__getitem__, cards))
    except (KeyError, TypeError):
        return cards_to_mask(parse_cards(cards))
    if mask.bit_count() != len(cards):
        raise InvalidCards(f"duplicate card in {format_cards(map(to_card, cards))!r}")
    return mask


def rank_subsets(by_rank: Sequence[T]) -> list[tuple[T, ...]]:
    """For every 13-bit mask ``m``, the items of ``by_rank`` (one per rank) whose ranks are
    its bits, in rank order. Each tuple is the one of ``m`` without its lowest bit, that
    bit's item put in front: a tenth of the time of building each from its bits, paid at
    every process's start (docs/performance.md)."""
    table: list[tuple[T, ...]] = [()] * 8192
    for m in range(1, 8192):
        table[m] = (by_rank[(m & -m).bit_length() - 1], *table[m & (m - 1)])
    return table


def _suit_card_table() -> list[list[tuple[Card, ...]]]:
    return [rank_subsets(DECK[13 * s : 13 * s + 13]) for s in range(4)]


# SUIT_CARDS[s][m]: the cards of suit s whose ranks are the bits of the 13-bit mask m.
SUIT_CARDS = _suit_card_table()


def mask_to_cards(mask: int) -> tuple[Card, ...]:
    """The cards of ``mask`` in display order."""
    t = SUIT_CARDS
    return (
        t[0][mask & 0x1FFF]
        + t[1][mask >> 13 & 0x1FFF]
        + t[2][mask >> 26 & 0x1FFF]
        + t[3][mask >> 39 & 0x1FFF]
    )


def sort_cards(cards: Iterable[Card]) -> tuple[Card, ...]:
    """Cards in display order (1.4)."""
    return tuple(sorted(cards, key=_index))


def _index(card: Card) -> int:
    return card.index


def meld_kind(cards: Sequence[Card]) -> str | None:
    """``"set"``, ``"run"`` or ``None`` for cards that are not a meld (ace low only)."""
    if len(cards) < 3:
        return None
    ranks = {card.rank for card in cards}
    if len(ranks) == 1 and len(cards) <= 4:
        return "set"
    suits = {card.suit for card in cards}
    if len(suits) == 1 and len(ranks) == len(cards) and max(ranks) - min(ranks) == len(cards) - 1:
        return "run"
    return None


def random_deck(rng: random.Random) -> list[Card]:
    """A deck in random order (for play-outs; real hands use :mod:`service.games.common.fair`)."""
    deck = list(DECK)
    rng.shuffle(deck)
    return deck
