"""A match as a player, the operator or a spectator sees it: the JSON-ready view every match
read and action answers with, built from the match row and its decoded state. Hidden
information stays hidden here: a seat's own hand and legal actions come from the hand's
``view(seat)``, which shows nobody else's cards and no stock card."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Protocol

from service import games
from service.clock import rfc3339
from service.games import AnyMatch
from service.games.common.seats import renamed


class MatchFields(Protocol):
    """The columns of a ``matches`` row the view shows."""

    id: str
    table_id: str
    status: str
    version: int
    format: str
    currency: str
    seats: list[dict[str, Any]] | None
    commitment: str | None
    deadline_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    settled_at: datetime | None
    settlement_id: str | None


def match_view(row: MatchFields, seat: int | None, match: AnyMatch | None) -> dict[str, Any]:
    """What ``seat`` (``None``: the operator or a spectator) sees of the match in ``row``,
    whose state is ``match`` (``None`` before it starts), as JSON-ready data (timestamps as
    RFC 3339 strings); the API's ``MatchOut`` schema documents it."""
    view: dict[str, Any] = {
        "id": row.id,
        "object": "match",
        "table_id": row.table_id,
        "status": row.status,
        "version": row.version,
        "format": row.format,
        "currency": row.currency,
        "you": seat,
        "seats": [
            {
                "seat": s["seat"],
                "player_id": s["player_id"],
                "display_name": s["display_name"],
                "escrow": {"amount": s["escrow"], "currency": row.currency},
                **({"table_seat": s["table_seat"]} if "table_seat" in s else {}),
            }
            for s in row.seats or []
        ],
        "started_at": None if row.started_at is None else rfc3339(row.started_at),
        "finished_at": None if row.finished_at is None else rfc3339(row.finished_at),
        "deadline": None if row.deadline_at is None else rfc3339(row.deadline_at),
        "hand_number": None,
        "commitment": row.commitment,
        "hand": None,
        "scores": None,
        "result": None,
        "settlement": settlement_state(row),
    }
    if match is None:
        return view
    view.update(games.view(match, seat))
    return _at_table_seats(view)


def settlement_state(row: MatchFields) -> dict[str, Any] | None:
    """What every viewer sees of the match's settlement: ``None`` until it is written (and
    always for a tournament's match, which has none: its tournament pays), then that it is
    ``completed`` and when. The statement itself is read as ``GET
    /v1/matches/{id}/settlement`` answers it, by whom that allows."""
    if row.settlement_id is None or row.settled_at is None:
        return None
    return {"status": "completed", "settled_at": rfc3339(row.settled_at)}


def _at_table_seats(view: dict[str, Any]) -> dict[str, Any]:
    """A ``rummy_per_hand`` hand's view, whose match seats are its players dealt in, 0 up in
    table order, with every player it names renamed to its table seat (``seats[i]`` is match
    seat ``i``, so the lists of one entry per player keep their order): one numbering, the
    table's (docs/rummy.md). The hand's own index stays ``position``."""
    seats, table = view["seats"], table_seats(view["seats"])
    if table is None:
        return view
    return {
        **view,
        "you": None if view["you"] is None else table[view["you"]],
        "seats": [{**s, "seat": s["table_seat"]} for s in seats],
        "play": renamed(view["play"], table),
        "result": renamed(view["result"], table),
    }


def table_seats(seats: list[dict[str, Any]] | None) -> list[int] | None:
    """A ``rummy_per_hand`` hand's table seats by match seat (its ``seats`` in a match row or
    view carry them), or None at a table of fixed seats, whose match seats are the table's."""
    if not seats or "table_seat" not in seats[0]:
        return None
    return [s["table_seat"] for s in seats]


#: A player named in a rules error's message: ``seat 2``.
_SEAT_IN_TEXT = re.compile(r"\bseat (\d+)\b")


def seated_message(message: str, seats: list[dict[str, Any]] | None) -> str:
    """A rules error's ``message`` about a match whose ``seats`` (its row's) are given, with
    every player it names (``seat 1``) by table seat at a ``rummy_per_hand`` table, whose hand
    names its players dealt in 0 up (``it is seat 1's turn, not seat 0's`` for table seats 2
    and 0); as it is at a table of fixed seats. A number that is no seat of the match is left
    as it is."""
    table = table_seats(seats)
    if table is None:
        return message

    def named(found: re.Match[str]) -> str:
        seat = int(found[1])
        return f"seat {table[seat]}" if seat < len(table) else found[0]

    return _SEAT_IN_TEXT.sub(named, message)


def seat_numbers(seats: list[dict[str, Any]] | None) -> list[int]:
    """The table seats of a match's players (its ``seats`` in a match row), in match seat
    order: what an event's and a settlement's ``seats`` say, which their lists of one entry
    per player follow."""
    table = table_seats(seats)
    return [s["seat"] for s in seats or []] if table is None else table
