"""A match as a player, the operator or a spectator sees it: the JSON-ready view every match
read and action answers with, built from the match row and its decoded state. Hidden
information stays hidden here: a seat's own hand and legal actions come from the hand's
``view(seat)``, which shows nobody else's cards and no stock card."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from service.clock import rfc3339
from service.formats import Match, MatchStatus


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


def match_view(row: MatchFields, seat: int | None, match: Match | None) -> dict[str, Any]:
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
    }
    if match is None:
        return view
    game = match.game()
    view["scores"] = {
        "hand_points": list(game.hand_points),
        "boxes": list(game.boxes),
        "target": match.target,
        "hands_played": len(match.records),
        "timeouts": list(match.timeouts),
        "bank_ms": list(match.banks_ms),
    }
    view["hand_number"] = match.hand_number
    if match.hand is not None:
        view["dealer"] = match.hand.dealer
        view["hand"] = match.hand.view(seat)
    if match.records and not match.over:
        view["previous_hand"] = match.records[-1].to_dict()
    if match.over:
        view["result"] = {
            "winner": match.winner,
            "forfeiter": match.forfeiter,
            "forfeit_reason": match.forfeit_reason,
            "void": match.status is MatchStatus.VOID,
        }
    return view
