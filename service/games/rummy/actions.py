"""A Rummy player's actions as immutable values with a text form (5.2, 11.3.2, 11.3.5).

=================  ===========================================================
``DRAW_STOCK``     take the top card of the stock (at a SHUFFLE table with an
                   empty stock: shuffle the discard pile into a new stock first)
``DRAW_DISCARD``   take the top card of the discard pile
``TURN_OVER``      turn the discard pile over into a new stock and take its top
``MELD 7D 7H 7S``  lay a new set or run from the hand on the table
``LAY_OFF 2 8H 9H`` add cards to table meld 2 (0 is the first meld made)
``DISCARD 5C``     end the turn by laying a card on the discard pile
=================  ===========================================================

Cards are compared as sets (11.3.7): an action keeps them in display order, so ``MELD 7S
7H 7D`` and ``MELD 7D 7H 7S`` are the same action and both print as the latter.
``RummyAction.parse(str(a)) == a`` and ``RummyAction.from_dict(a.to_dict()) == a``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from service.games.common.cards import Card, format_cards, parse_cards, sort_cards
from service.games.rummy.errors import MalformedAction, UnknownAction


class RummyActionKind(StrEnum):
    __hash__ = str.__hash__

    DRAW_STOCK = "DRAW_STOCK"
    DRAW_DISCARD = "DRAW_DISCARD"
    TURN_OVER = "TURN_OVER"
    MELD = "MELD"
    LAY_OFF = "LAY_OFF"
    DISCARD = "DISCARD"


DRAWS = frozenset(
    {RummyActionKind.DRAW_STOCK, RummyActionKind.DRAW_DISCARD, RummyActionKind.TURN_OVER}
)


@dataclass(frozen=True, slots=True)
class RummyAction:
    """One action: its kind, the cards it names (display order) and, for LAY_OFF, the index
    of the table meld (in the order the melds were made, from 0).

    :raises UnknownAction: on an unknown kind.
    :raises MalformedAction: on cards or a meld index the kind does not take or needs.
    :raises InvalidCard: on something that is not a card; InvalidCards on a repeated card.
    """

    kind: RummyActionKind
    cards: tuple[Card, ...] = ()
    meld: int | None = None

    def __post_init__(self) -> None:
        try:
            kind = RummyActionKind(str(self.kind).upper())
        except ValueError:
            allowed = ", ".join(k.value for k in RummyActionKind)
            raise UnknownAction(f"unknown action {self.kind!r}; one of {allowed}") from None
        cards = sort_cards(parse_cards(self.cards))
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "cards", cards)
        if kind in DRAWS and cards:
            raise MalformedAction(f"{kind} takes no cards, not {format_cards(cards)!r}")
        if kind is RummyActionKind.DISCARD and len(cards) != 1:
            raise MalformedAction(f"DISCARD names exactly one card, not {len(cards)}")
        if kind in (RummyActionKind.MELD, RummyActionKind.LAY_OFF) and not cards:
            raise MalformedAction(f"{kind} needs cards")
        if kind is RummyActionKind.LAY_OFF:
            meld = self.meld
            if not isinstance(meld, int) or isinstance(meld, bool) or meld < 0:
                raise MalformedAction(f"LAY_OFF needs a table meld index >= 0, not {meld!r}")
        elif self.meld is not None:
            raise MalformedAction(f"{kind} names no table meld, not {self.meld!r}")

    @classmethod
    def of(
        cls,
        kind: RummyActionKind | str,
        cards: str | Iterable[Card | str] = (),
        meld: int | None = None,
    ) -> RummyAction:
        """An action from loose values: ``RummyAction.of("LAY_OFF", "8H 9H", 2)``."""
        return cls(kind, parse_cards(cards), meld)  # type: ignore[arg-type]

    @classmethod
    def parse(cls, text: str) -> RummyAction:
        """Read ``"DRAW_STOCK"``, ``"MELD 7S 7H 7D"``, ``"LAY_OFF 2 8H 9H"``, ``"DISCARD 5C"``.

        :raises UnknownAction: when the text is no action; MalformedAction, InvalidCard when
            its cards or meld index are wrong.
        """
        if not isinstance(text, str) or not text.split():
            raise UnknownAction(f"not an action: {text!r}")
        kind, *rest = text.split()
        meld = None
        if kind.upper() == RummyActionKind.LAY_OFF:
            if not rest or not rest[0].isdigit():
                raise MalformedAction(f"LAY_OFF needs a table meld index first: {text!r}")
            meld = int(rest.pop(0))
        return cls.of(kind, " ".join(rest), meld)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RummyAction:
        """Read the fields written by :meth:`to_dict`.

        :raises UnknownAction: when the fields are no action.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("action"), str):
            raise UnknownAction(f"not an action: {data!r}")
        cards = data.get("cards", [data["card"]] if "card" in data else [])
        if isinstance(cards, str) or not isinstance(cards, Iterable):
            raise MalformedAction(f"cards must be a list of card codes, not {cards!r}")
        return cls.of(data["action"], cards, data.get("meld"))

    def to_dict(self) -> dict[str, Any]:
        """``{"action": ...}`` with ``card`` (DISCARD), ``cards`` (MELD, LAY_OFF) and
        ``meld`` (LAY_OFF) where the kind names them."""
        out: dict[str, Any] = {"action": self.kind.value}
        if self.kind is RummyActionKind.DISCARD:
            out["card"] = self.cards[0].code
        elif self.cards:
            out["cards"] = [card.code for card in self.cards]
        if self.meld is not None:
            out["meld"] = self.meld
        return out

    def __str__(self) -> str:
        words = [self.kind.value]
        if self.meld is not None:
            words.append(str(self.meld))
        words.extend(card.code for card in self.cards)
        return " ".join(words)


def coerce_action(action: RummyAction | str | Mapping[str, Any]) -> RummyAction:
    """A :class:`RummyAction` from an action, its text or its fields."""
    if isinstance(action, RummyAction):
        return action
    if isinstance(action, str):
        return RummyAction.parse(action)
    if isinstance(action, Mapping):
        return RummyAction.from_dict(action)
    raise UnknownAction(f"not an action: {action!r}")
