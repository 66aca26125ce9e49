"""Player actions in a hand of Gin (docs/engine.md 2.3-2.10), as immutable values with a text form.

``Action.parse("KNOCK 7D")`` and ``str(action) == "KNOCK 7D"``; a manual knocker arrangement
follows after bars: ``"KNOCK 7D | 4C 4D 4H | 7S 8S 9S"``. The same action as fields, the shape
of the API's action request and of its listed legal actions: ``action.to_dict() ==
{"action": "KNOCK", "card": "7D"}`` and ``Action.from_dict(action.to_dict()) == action``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from service.games.common.cards import DECK, Card, rank_subsets, to_card
from service.games.common.errors import IllegalAction, RulesError
from service.games.gin.melds import parse_melds


class ActionKind(StrEnum):
    __hash__ = str.__hash__  # Enum's own __hash__ runs Python code; equal strings hash alike

    TAKE_UPCARD = "TAKE_UPCARD"
    PASS = "PASS"
    DRAW_STOCK = "DRAW_STOCK"
    DRAW_DISCARD = "DRAW_DISCARD"
    DISCARD = "DISCARD"
    KNOCK = "KNOCK"
    GIN = "GIN"
    BIG_GIN = "BIG_GIN"
    TAKE_DISCARD_AND_KNOCK = "TAKE_DISCARD_AND_KNOCK"
    DECLINE = "DECLINE"


WITH_CARD = frozenset(
    {ActionKind.DISCARD, ActionKind.KNOCK, ActionKind.GIN, ActionKind.TAKE_DISCARD_AND_KNOCK}
)
WITH_MELDS = frozenset({ActionKind.KNOCK, ActionKind.GIN, ActionKind.TAKE_DISCARD_AND_KNOCK})


@dataclass(frozen=True, slots=True)
class Action:
    """One action: its kind, the card it names (discard or knock card) and optional melds."""

    kind: ActionKind
    card: Card | None = None
    melds: tuple[tuple[Card, ...], ...] | None = None

    @classmethod
    def of(
        cls,
        kind: ActionKind | str,
        card: Card | str | None = None,
        melds: Iterable[str | Iterable[Card | str]] | None = None,
    ) -> Action:
        """Build and validate an action from loose values.

        :raises IllegalAction: on an unknown kind, a missing or superfluous card or melds.
        """
        try:
            action_kind = ActionKind(str(kind).upper())
        except ValueError:
            allowed = ", ".join(k.value for k in ActionKind)
            raise IllegalAction(
                f"unknown action {kind!r}; one of {allowed}", "UNKNOWN_ACTION"
            ) from None
        if action_kind in WITH_CARD:
            if card is None:
                raise IllegalAction(f"{action_kind} needs a card", "CARD_REQUIRED")
            card_value: Card | None = to_card(card)
        elif card is not None:
            raise IllegalAction(f"{action_kind} takes no card", "UNEXPECTED_CARD")
        else:
            card_value = None
        parsed = None
        if melds is not None:
            if action_kind not in WITH_MELDS:
                raise IllegalAction(f"{action_kind} takes no melds", "UNEXPECTED_MELDS")
            parsed = parse_melds(melds)
        return cls(action_kind, card_value, parsed)

    @classmethod
    def parse(cls, text: str) -> Action:
        """Read ``"DISCARD TD"``, ``"PASS"`` or ``"KNOCK 7D | 4C 4D 4H | 7S 8S 9S"``.

        :raises IllegalAction: when the text is not an action.
        :raises RulesError: when a card or meld in it is malformed.
        """
        if not isinstance(text, str) or not text.strip():
            raise IllegalAction(f"not an action: {text!r}", "UNKNOWN_ACTION")
        head, *meld_texts = text.split("|")
        words = head.split()
        if len(words) > 2:
            raise IllegalAction(f"not an action: {text!r}", "UNKNOWN_ACTION")
        card = words[1] if len(words) == 2 else None
        return cls.of(words[0], card, meld_texts if meld_texts else None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Action:
        """Read ``{"action": "DISCARD", "card": "TD"}`` (``melds`` too, as lists of cards).

        :raises IllegalAction: when the fields are not an action.
        :raises RulesError: when a card or meld in them is malformed.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("action"), str):
            raise IllegalAction(f"not an action: {data!r}", "UNKNOWN_ACTION")
        return cls.of(data["action"], data.get("card"), data.get("melds"))

    def to_dict(self) -> dict[str, Any]:
        """The action as fields: ``action``, and ``card`` and ``melds`` only when it names them
        (an action that takes no card carries none)."""
        out: dict[str, Any] = {"action": self.kind.value}
        if self.card is not None:
            out["card"] = self.card.code
        if self.melds is not None:
            out["melds"] = [[c.code for c in meld] for meld in self.melds]
        return out

    def __str__(self) -> str:
        text = self.kind.value
        if self.card is not None:
            text += f" {self.card}"
        if self.melds is not None:
            text += "".join(" | " + " ".join(map(str, meld)) for meld in self.melds)
        return text


def coerce_action(action: Action | str | Mapping[str, Any]) -> Action:
    """An :class:`Action` from an action, its text or its fields (:meth:`Action.to_dict`)."""
    if isinstance(action, Action):
        return action
    if isinstance(action, str):
        return Action.parse(action)
    if isinstance(action, Mapping):
        return Action.from_dict(action)
    raise RulesError(f"not an action: {action!r}")


# Interned actions, so listing the legal actions allocates nothing new.
SIMPLE: dict[ActionKind, Action] = {
    kind: Action(kind) for kind in ActionKind if kind not in WITH_CARD
}
_BY_CARD: dict[ActionKind, tuple[Action, ...]] = {
    kind: tuple(Action(kind, card) for card in DECK) for kind in WITH_CARD
}


def with_card(kind: ActionKind, card: Card) -> Action:
    """The interned action ``kind`` naming ``card``."""
    return _BY_CARD[kind][card.index]


def _suit_discards() -> list[list[tuple[Action, ...]]]:
    by_index = _BY_CARD[ActionKind.DISCARD]
    return [rank_subsets([by_index[c.index] for c in DECK[13 * s : 13 * s + 13]]) for s in range(4)]


_SUIT_DISCARDS = _suit_discards()


def discard_actions(mask: int) -> list[Action]:
    """DISCARD actions for every card of ``mask``, in display order."""
    t = _SUIT_DISCARDS
    return [
        *t[0][mask & 0x1FFF],
        *t[1][mask >> 13 & 0x1FFF],
        *t[2][mask >> 26 & 0x1FFF],
        *t[3][mask >> 39 & 0x1FFF],
    ]
