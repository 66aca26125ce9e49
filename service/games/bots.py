"""Each game's practice bot, found from a player's view (pure: no Flask, SQLAlchemy or
Celery).

:func:`decide_multi` and :func:`random_multi` take the view one player sees of a match and
return one of its ``legal_actions``, dispatching on the view's ``kind``:

``three_player`` / ``partnership``  (:meth:`MultiMatch.view`) Gin at three or four seats:
    every hand is an ordinary two-player hand at the player's own table, whose view is the
    two-player :meth:`~service.games.gin.hand.Hand.view`, so the two-player bots of
    :mod:`service.games.gin.bot` decide on it unchanged. The action is returned as its text
    (``"DISCARD 8C"``, ``"KNOCK 7D"``), what :meth:`MultiMatch.apply` takes.
``rummy``  (:meth:`RummyMatch.view`; a bare :meth:`RummyHand.view`, ``game`` ``rummy``, is
    read alike) basic Rummy for 2-6: the action is returned as listed, the fields of
    :meth:`RummyAction.to_dict` (``{"action": "LAY_OFF", "cards": ["8H", "9H"], "meld": 2}``),
    what :meth:`RummyMatch.apply` takes.

A two-player Gin hand view (no ``kind``) is handed to :mod:`service.games.gin.bot` as it is.

The Rummy bot is :mod:`service.games.rummy.bot`'s greedy player.

:func:`action_text` is the text form the HTTP API takes (``POST /v1/matches/{id}/actions``
with ``{"action": "<text>"}``) of any of these actions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from service.games.common.action_text import action_fields
from service.games.common.errors import RulesError
from service.games.gin.actions import Action, coerce_action
from service.games.gin.bot import Bot, random_action
from service.games.rummy.actions import RummyAction, RummyActionKind
from service.games.rummy.bot import greedy_rummy

#: The view kinds of the Gin matches of more than two seats (``MultiMatch.KIND``).
GIN_KINDS = frozenset({"three_player", "partnership"})
RUMMY = "rummy"

#: The Rummy action kinds that Gin does not have, and the fields only Rummy actions carry.
_RUMMY_ONLY = frozenset({RummyActionKind.MELD, RummyActionKind.LAY_OFF, RummyActionKind.TURN_OVER})

LegalAction = Mapping[str, Any]


# --- dispatch ----------------------------------------------------------------------------


def decide_multi(view: Mapping[str, Any], *, eager: bool = False) -> dict[str, Any] | str:
    """The sensible bot's action for the player whose ``view`` this is: one of the view's
    legal actions, as text for multi-seat Gin, as listed (fields) for Rummy and two-player
    Gin. ``eager`` (Gin): knock as soon as any knock is legal; the Rummy bot lays down at
    once anyway, so it takes no such option.

    :raises ValueError: when the view lists no legal action (not this player's turn, or
        sitting out) or is of no known kind.
    """
    kind = _kind(view)
    if kind in GIN_KINDS:
        return action_text(Bot(eager).decide(_own_table(view)))
    if kind == RUMMY:
        return greedy_rummy(_rummy_hand(view))
    return Bot(eager).decide(view)


def random_multi(view: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | str:
    """Baseline: a uniformly random legal action, in the form :func:`decide_multi` gives.

    :raises ValueError: as :func:`decide_multi`.
    """
    kind = _kind(view)
    if kind in GIN_KINDS:
        return action_text(random_action(_own_table(view), rng))
    hand = _rummy_hand(view) if kind == RUMMY else view
    legal: Sequence[LegalAction] = hand.get("legal_actions") or []
    if not legal:
        raise ValueError("no legal action: it is not this player's turn")
    return dict(legal[int(rng.random() * len(legal))])


def action_text(action: str | Mapping[str, Any] | Action | RummyAction) -> str:
    """The text form of an action (what the HTTP API's ``{"action": ...}`` takes): a Gin or
    Rummy action, its fields as listed in a view, or its text (returned normalised), read by
    :mod:`service.games.common.action_text` and printed by the game's engine."""
    if isinstance(action, RummyAction | Action):
        return str(action)
    fields = action_fields(action) if isinstance(action, str) else action
    kind = str(fields.get("action", "")).upper()
    if kind in _RUMMY_ONLY or "cards" in fields or "meld" in fields:
        return str(RummyAction.from_dict(fields))
    try:
        return str(coerce_action(fields))
    except RulesError:
        if isinstance(action, str):  # not a Gin action: Rummy's says what is wrong, if anything
            return str(RummyAction.from_dict(fields))
        raise


def _kind(view: Mapping[str, Any]) -> str | None:
    kind = view.get("kind")
    if kind is None and view.get("game") == RUMMY:
        return RUMMY
    if kind is None and "phase" in view:
        return None  # a two-player Gin hand
    if kind in GIN_KINDS or kind == RUMMY:
        return str(kind)
    raise ValueError(f"not a view the bots know: kind {kind!r}")


def _own_table(view: Mapping[str, Any]) -> Mapping[str, Any]:
    """The player's own hand view at its table in a multi-seat Gin match view."""
    for table in view.get("tables") or []:
        if table.get("position") is not None:
            hand: Mapping[str, Any] = table["hand"]
            if hand.get("legal_actions"):
                return hand
    raise ValueError("no legal action: it is not this player's turn")


def _rummy_hand(view: Mapping[str, Any]) -> Mapping[str, Any]:
    """The player's own :meth:`RummyHand.view` in a Rummy match view (or the view itself)."""
    if view.get("kind") != RUMMY:
        return view
    part = view.get("hand")
    if part is None or part.get("position") is None:
        raise ValueError("no legal action: the player is not dealt into a hand")
    hand: Mapping[str, Any] = part["hand"]
    return hand
