"""A sensible Gin Rummy player, and two baselines (for strength measurement).

The bot reads only what a player may see: its own cards, the discard pile, the log of public
actions, the stock count, the knock limit. It:

* keeps melds and near-melds: a card is worth keeping when it is melded or when it has *live
  outs* (cards that would meld it and have not been seen in the discard pile or taken by the
  opponent);
* takes the upcard or the discard only when that card ends up in a meld and lowers its deadwood;
* discards the card leaving the least deadwood, among those preferring a high card with few
  live outs, and avoids feeding the opponent cards next to what the opponent took openly;
* knocks at once with gin, and with other legal knocks while its deadwood is small for the
  stage of the hand (undercuts get likelier as the hand goes on); ``eager`` knocks at once
  (First To Knock, where the first knock wins);
* declares big gin, and takes the 50th card to knock whenever that is legal.

Each policy picks one of the view's ``legal_actions`` and returns it as listed: the fields of
the action (``{"action": "DISCARD", "card": "8C"}``), ready to send (add ``expected_version``)
or to hand to :meth:`service.games.gin.hand.Hand.apply`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from service.games.common.cards import DECK, Card, cards_to_mask
from service.games.gin.melds import best_discard_mask, deadwood_of_mask

_SAME_RANK = [[c for c in DECK if c.rank == card.rank and c is not card] for card in DECK]


def _neighbours(card: Card) -> list[Card]:
    out = []
    for delta in (-2, -1, 1, 2):
        rank = card.rank + delta
        if 1 <= rank <= 13:
            out.append(DECK[card.suit_index * 13 + rank - 1])
    return out


_NEIGHBOURS = [_neighbours(card) for card in DECK]


def _card(code: str) -> Card:
    return DECK[cards_to_mask([code]).bit_length() - 1]


#: A legal action as the view lists it: ``{"action": "KNOCK", "card": "7D"}``.
LegalAction = Mapping[str, Any]


def _kinds(legal: Sequence[LegalAction]) -> set[str]:
    return {a["action"] for a in legal}


def _of(legal: Sequence[LegalAction], *kinds: str) -> list[LegalAction]:
    return [a for a in legal if a["action"] in kinds]


def _listed(legal: Sequence[LegalAction], kind: str, card: Card | None = None) -> dict[str, Any]:
    """The legal action ``kind`` (naming ``card``) as listed, as a new dict."""
    for a in legal:
        if a["action"] == kind and (card is None or a.get("card") == card.code):
            return dict(a)
    raise ValueError(f"{kind} {card or ''} is not a legal action now")


@dataclass(frozen=True)
class Bot:
    """The sensible player. ``eager``: knock as soon as any knock is legal."""

    eager: bool = False

    def decide(self, view: Mapping[str, Any]) -> dict[str, Any]:
        """One of ``view["legal_actions"]``, as listed.

        :raises ValueError: when the view lists no legal action.
        """
        legal: Sequence[LegalAction] = view.get("legal_actions") or []
        if not legal:
            raise ValueError("no legal action: it is not this player's turn")
        kinds = _kinds(legal)
        hand = cards_to_mask(view["hand"])
        phase = view["phase"]
        dead = _dead_cards(view)
        wanted = _opponent_wants(view)
        if "BIG_GIN" in kinds:
            return _listed(legal, "BIG_GIN")
        if phase == "LAST_CHANCE":
            knocks = _of(legal, "TAKE_DISCARD_AND_KNOCK")
            top = _card(view["discard_pile"][-1])
            return _best_knock(knocks, hand | top.bit) if knocks else _listed(legal, "DECLINE")
        if phase in ("OFFER_1", "OFFER_2", "DRAW"):
            face_up = view["discard_pile"][-1] if view["discard_pile"] else None
            take = "TAKE_UPCARD" if phase != "DRAW" else "DRAW_DISCARD"
            if face_up is not None and take in kinds and _worth_taking(hand, _card(face_up)):
                return _listed(legal, take)
            return _listed(legal, "PASS" if phase != "DRAW" else "DRAW_STOCK")
        if phase == "FIRST_DRAW":
            return _listed(legal, "DRAW_STOCK")
        # The discard step.
        knocks = _of(legal, "KNOCK")
        if knocks:
            best = _best_knock(knocks, hand)
            kept = deadwood_of_mask(hand ^ _card(best["card"]).bit)
            if kept == 0 or self.eager or kept <= _knock_threshold(view):
                return best
        discards = [_card(a["card"]) for a in _of(legal, "DISCARD")]
        return _listed(legal, "DISCARD", _choose_discard(hand, discards, dead, wanted))


def decide(view: Mapping[str, Any], *, eager: bool = False) -> dict[str, Any]:
    """The sensible bot's action for ``view``: one of its ``legal_actions``, as listed."""
    return Bot(eager).decide(view)


def _best_knock(knocks: Sequence[LegalAction], hand: int) -> dict[str, Any]:
    """The knock (or take-and-knock) leaving the least deadwood."""
    return dict(
        min(knocks, key=lambda a: (deadwood_of_mask(hand ^ _card(a["card"]).bit), a["card"]))
    )


def _knock_threshold(view: Mapping[str, Any]) -> int:
    """Knock early with up to the limit, later only with little deadwood."""
    limit: int = view["knock_limit"]
    stock: int = view["stock_count"]
    if stock >= 22:
        return limit
    if stock >= 12:
        return min(limit, 6)
    return min(limit, 3)


def _dead_cards(view: Mapping[str, Any]) -> int:
    """Cards out of play for us: the discard pile and what the opponent took openly."""
    seat = view.get("seat")
    mask = cards_to_mask(view["discard_pile"])
    for entry in view["log"]:
        if entry.get("seat") != seat and entry["action"] in ("TAKE_UPCARD", "DRAW_DISCARD"):
            mask |= _card(entry["card"]).bit
    return mask


def _opponent_wants(view: Mapping[str, Any]) -> int:
    """Cards that would help the opponent: same rank as or next to cards it took openly."""
    seat = view.get("seat")
    mask = 0
    for entry in view["log"]:
        if entry.get("seat") != seat and entry["action"] in ("TAKE_UPCARD", "DRAW_DISCARD"):
            card = _card(entry["card"])
            for other in _SAME_RANK[card.index] + _NEIGHBOURS[card.index]:
                mask |= other.bit
    return mask


def _worth_taking(hand: int, card: Card) -> bool:
    """Take a face-up card when, keeping it, the best discard lowers our deadwood and the
    card is melded."""
    now = deadwood_of_mask(hand)
    _, after = best_discard_mask(hand | card.bit, barred=card.bit)
    if after >= now:
        return False
    return deadwood_of_mask((hand | card.bit) ^ card.bit) > after or after + card.points <= now


def _live_outs(card: Card, hand: int, dead: int) -> int:
    """How many unseen cards would pair this card into a meld with what we hold."""
    outs = 0
    held_same = [c for c in _SAME_RANK[card.index] if hand & c.bit]
    if held_same:
        outs += sum(1 for c in _SAME_RANK[card.index] if not (hand | dead) & c.bit)
    for other in _NEIGHBOURS[card.index]:
        if hand & other.bit:
            gap = abs(other.rank - card.rank)
            low = min(other.rank, card.rank)
            candidates = [low - 1, low + 2] if gap == 1 else [low + 1]
            for rank in candidates:
                if 1 <= rank <= 13:
                    c = DECK[card.suit_index * 13 + rank - 1]
                    if not (hand | dead) & c.bit:
                        outs += 1
    return outs


def _choose_discard(hand: int, discards: Sequence[Card], dead: int, wanted: int) -> Card:
    def cost(card: Card) -> tuple[int, int, int, int]:
        left = deadwood_of_mask(hand ^ card.bit)
        feeds = 1 if wanted & card.bit else 0
        return (left, feeds, _live_outs(card, hand ^ card.bit, dead), -card.points)

    return min(discards, key=lambda c: (cost(c), -c.index))


def greedy_action(view: Mapping[str, Any]) -> dict[str, Any]:
    """Baseline: always draws from the stock (passes the upcard), discards the card leaving the
    least deadwood (the highest on ties), knocks whenever it can."""
    legal: Sequence[LegalAction] = view["legal_actions"]
    kinds = _kinds(legal)
    for simple in ("BIG_GIN", "PASS", "DRAW_STOCK"):
        if simple in kinds:
            return _listed(legal, simple)
    knocks = _of(legal, "KNOCK", "TAKE_DISCARD_AND_KNOCK")
    if knocks:
        hand = cards_to_mask(view["hand"])
        if knocks[0]["action"] == "TAKE_DISCARD_AND_KNOCK":
            hand |= _card(view["discard_pile"][-1]).bit
        return _best_knock(knocks, hand)
    if "DECLINE" in kinds:
        return _listed(legal, "DECLINE")
    hand = cards_to_mask(view["hand"])
    discards = [_card(a["card"]) for a in _of(legal, "DISCARD")]
    best = min(discards, key=lambda c: (deadwood_of_mask(hand ^ c.bit), -c.points, -c.index))
    return _listed(legal, "DISCARD", best)


def random_action(view: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """Baseline: a uniformly random legal action."""
    legal: Sequence[LegalAction] = view["legal_actions"]
    return dict(legal[int(rng.random() * len(legal))])
