"""What every game of more than two seats shares (11.6.5): one numbering of players in every
view and history (a hand's own places renamed to match seats, and match seats to table seats),
and the shape of a match view and of a statement at more than two seats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from service.games.common.errors import IllegalAction
from service.games.common.settings import GameKind
from service.games.common.statement import Statement
from service.games.protocol import MatchStatus, Settled


def seat_in_hand(seats: Sequence[int], number: int, seat: int) -> int:
    """The hand's own seat of match seat ``seat``, in hand ``number`` dealt to ``seats``
    (ascending): a match seat's place among the seats dealt in.

    :raises IllegalAction: when ``seat`` is not dealt into that hand.
    """
    if seat not in seats:
        raise IllegalAction(f"seat {seat!r} is not dealt into hand {number}", "NOT_DEALT_IN")
    return list(seats).index(seat)


#: The keys under which a view names one of its players.
_PLAYER_KEYS = frozenset(
    {
        "dealer",
        "first_player",
        "to_act",
        "seat",
        "winner",
        "knocker",
        "melded_by",
        "you",
        "forfeiter",
    }
)

#: The keys under which a view lists players (a list of bools per player is no such list).
_PLAYER_LIST_KEYS = frozenset({"to_act", "seats", "winners", "forfeited", "forfeiters"})


#: The types of the values that name no player wherever they stand (an ``int`` does under a
#: key of :data:`_PLAYER_KEYS`): :func:`renamed` passes them through without a closer look.
_PLAIN = frozenset({str, bool, float, type(None)})


def renamed(view: Any, names: Sequence[int]) -> Any:
    """``view`` with every player it names (under a key of :data:`_PLAYER_KEYS`, or in a list
    under a key of :data:`_PLAYER_LIST_KEYS`) renamed from ``i`` to ``names[i]``; lists of one
    entry per player keep their order."""
    # A view is mostly card codes and counts, and a Rummy hand's log grows with the hand and
    # is renamed at every view: the values of exact plain types take the short ways below.

    def named(key: str, item: Any) -> Any:
        if key in _PLAYER_KEYS and _place(item):
            return names[item]
        if key in _PLAYER_LIST_KEYS and isinstance(item, list) and all(map(_place, item)):
            return [names[i] for i in item]
        return renamed(item, names)

    kind = type(view)
    if kind is dict or (kind is not list and isinstance(view, Mapping)):
        out: dict[str, Any] = {}
        for key, item in view.items():
            kind = type(item)
            if kind is int:
                out[key] = names[item] if key in _PLAYER_KEYS else item
            elif kind in _PLAIN:
                out[key] = item
            else:
                out[key] = named(key, item)
        return out
    if kind is list or isinstance(view, list):
        return [
            item if type(item) in _PLAIN or type(item) is int else renamed(item, names)
            for item in view
        ]
    return view


def seated_view(view: Mapping[str, Any], seats: Sequence[int]) -> dict[str, Any]:
    """A hand's view (:meth:`~service.games.gin.hand.Hand.view`, :meth:`RummyHand.view`), whose
    players are the hand's own places ``0 .. k-1``, with every player it names (``to_act``,
    ``dealer``, ``first_player``, the reader's ``seat``, each log entry's ``seat``, an
    outcome's ``winner`` and ``knocker``, a meld's ``melded_by``, a lay-off's ``seat``) as
    its match seat, ``seats[place]``: one numbering in every match view (11.6.5). Its lists
    of one entry per player (``card_counts``, ``hands``, ``laid_down``...) keep the hand's
    order, which ``seats``, added to the view, states. A ``rummy_per_hand`` hand's match
    view is renamed once more, from match seat to table seat, by :func:`renamed`."""
    return {**renamed(view, seats), "seats": list(seats)}


def seated_history(history: Mapping[str, Any], seats: Sequence[int]) -> dict[str, Any]:
    """An ended hand's history as stored (:meth:`~service.games.gin.hand.Hand.history`,
    :meth:`RummyHand.history`, with the ``seats`` dealt in beside it), whose players are the
    hand's own places, with every player it names (the ``dealer``, each action's ``seat``,
    the outcome's ``winner`` and ``knocker``, a meld's ``melded_by``, a lay-off's ``seat``)
    as ``seats[place]``, and ``seats`` in its ``seats``: the names :func:`seated_view` gives
    the same hand. Its lists of one entry per player (``final_hands``, an outcome's
    ``counts``...) keep the hand's order, so a seat's index in ``seats`` is its place."""
    places = {key: value for key, value in history.items() if key != "seats"}
    return seated_view(places, seats)


def _place(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def multi_view(
    kind: GameKind, play: dict[str, Any], result: dict[str, Any] | None, match: Any
) -> dict[str, Any]:
    """The match view's fields of a game whose engine has its own view (11.6.5): ``play``
    (every table or the hand's public part, the standings, who acts, the caller's own hand
    and legal actions), the hand number (the latest dealt) and the result once over."""
    dealt = play["tables"] if play.get("tables") else [play.get("hand")]
    numbers = [h["number"] for h in dealt if isinstance(h, dict) and "number" in h]
    view: dict[str, Any] = {
        "game": kind.value,
        "play": play,
        "hand_number": max(numbers, default=None),
    }
    if result is not None:
        view["result"] = result | {"void": match.status is MatchStatus.VOID}
    return view


def multi_settled(statement: Statement, result: dict[str, Any], match: Any) -> Settled:
    """A statement at more than two seats as the service keeps it: itemized, with the
    match's result and ``void`` as its figures."""
    figures = result | {"void": match.status is MatchStatus.VOID}
    return replace(statement, figures=figures).settled()
