"""The greedy Rummy practice bot (pure): it draws the discard only when that card completes a
meld in its hand (else from the stock, or it turns the pile over), melds whenever it can (the
longest meld first), then lays off whenever it can (the largest group first), and ends its turn
by discarding its highest unmatched card, never the card just taken from the discard pile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from service.games.common.cards import DECK, Card, cards_to_mask, mask_to_cards
from service.games.rummy.actions import RummyAction
from service.games.rummy.melds import lay_offs_onto, melds_in
from service.games.rummy.rules import AceMode, RummyRules

LegalAction = Mapping[str, Any]


def _card(code: str) -> Card:
    return DECK[cards_to_mask([code]).bit_length() - 1]


def _listed(legal: Sequence[LegalAction], kind: str) -> list[LegalAction]:
    return [a for a in legal if a["action"] == kind]


def greedy_rummy(hand_view: Mapping[str, Any]) -> dict[str, Any]:
    """The greedy Rummy bot's action for a player's :meth:`RummyHand.view`, as listed.

    :raises ValueError: when the view lists no legal action.
    """
    legal: Sequence[LegalAction] = hand_view.get("legal_actions") or []
    if not legal:
        raise ValueError("no legal action: it is not this player's turn")
    rules = RummyRules.from_dict(hand_view["rules"])
    ace_mode = AceMode(rules.ace_mode)
    hand = cards_to_mask(hand_view["hand"])

    def value(card: Card) -> int:
        return rules.card_value(card.rank, card.points)

    def weight(action: LegalAction) -> tuple[int, int]:
        cards = [_card(c) for c in action.get("cards", ())]
        return len(cards), sum(value(c) for c in cards)

    if hand_view["phase"] == "DRAW":
        pile = hand_view["discard_pile"]
        if pile and _listed(legal, "DRAW_DISCARD"):
            top = _card(pile[-1])
            if any(meld & top.bit for meld in melds_in(hand | top.bit, ace_mode)):
                return dict(_listed(legal, "DRAW_DISCARD")[0])
        for kind in ("DRAW_STOCK", "TURN_OVER", "DRAW_DISCARD"):
            if _listed(legal, kind):
                return dict(_listed(legal, kind)[0])
        return dict(legal[0])  # pragma: no cover - a draw phase always lists a draw
    for kind in ("MELD", "LAY_OFF"):
        lay_downs = _listed(legal, kind)
        if lay_downs:
            best: LegalAction = max(
                lay_downs, key=lambda a: (weight(a), str(RummyAction.from_dict(a)))
            )
            return dict(best)
    taken = hand_view.get("taken_from_discard")
    discards = [a for a in _listed(legal, "DISCARD") if a["card"] != taken]
    if not discards:  # pragma: no cover - the engine always leaves a legal discard
        raise ValueError("no legal discard")
    matched = _matched(hand, hand_view["table_melds"], ace_mode)

    def keep(action: LegalAction) -> tuple[int, int, int, int, int]:
        card = _card(action["card"])
        return (
            1 if matched & card.bit else 0,
            _partners(card, hand),
            -value(card),
            -card.rank,
            -card.suit_index,
        )

    throw: LegalAction = min(discards, key=keep)
    return dict(throw)


def _matched(hand: int, table_melds: Sequence[Mapping[str, Any]], ace_mode: AceMode) -> int:
    """The cards of ``hand`` in a meld it holds or that could be laid off onto the table
    (melds and lay-offs the rules refuse now, such as going out without a discard, leave
    their cards matched all the same)."""
    mask = 0
    for meld in melds_in(hand, ace_mode):
        mask |= meld
    for table_meld in table_melds:
        cards = mask_to_cards(cards_to_mask(table_meld["cards"]))
        for group in lay_offs_onto(cards, hand, ace_mode):
            mask |= group
    return mask


def _partners(card: Card, hand: int) -> int:
    """How many other cards of ``hand`` are half a meld with ``card``: of its rank, or of its
    suit within two ranks (a tie-break: among equal discards, keep the connected cards)."""
    count = 0
    for other in mask_to_cards(hand & ~card.bit):
        if other.rank == card.rank or (
            other.suit_index == card.suit_index and abs(other.rank - card.rank) <= 2
        ):
            count += 1
    return count
