"""Settlement statements: who received what from a finished match, and why."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify
from flask_smorest import Blueprint

from service.api import render
from service.api.context import db_session, principal, unit
from service.api.play_schemas import SettlementList, SettlementOut
from service.api.problems import documents
from service.api.schemas import DisplayQuery, ListQuery
from service.errors import (
    Forbidden,
    InvalidCursor,
    NotFound,
    TokenExpired,
    Unauthenticated,
    ValidationFailed,
)
from service.usecases import settlement

blp = Blueprint("settlements", __name__, url_prefix="/v1", description="Settlements.")


@blp.route("/matches/<match_id>/settlement")
@blp.arguments(DisplayQuery, location="query")
@blp.response(200, SettlementOut)
@documents(blp, Unauthenticated, TokenExpired, NotFound, ValidationFailed)
@unit
def get_settlement(query: dict[str, Any], match_id: str) -> Response:
    """The settlement statement of a finished match (operator, or one of its players): every
    hand, the bonuses, final totals, margin, stake per point, raw amount, cap, fee, each
    player's payout and net, the ledger transaction, and each seat's figures also in a display
    currency, at the rate of the moment of asking."""
    return jsonify(settlement_json(match_id, query.get("display_currency")))


def settlement_json(match_id: str, display_currency: str | None = None) -> dict[str, Any]:
    """The match's settlement as the caller may read it (the one path from the stored
    statement to what a reader sees: this operation's answer, and a match stream's
    ``settlement`` event).

    :raises NotFound: when the caller may not read it, or there is none yet.
    """
    session = db_session()
    found = settlement.get_settlement(session, principal(), match_id)
    [view] = settlement.settlement_views(session, [found], display_currency)
    return render.settlement(view)


@blp.route("/settlements")
@blp.arguments(ListQuery, location="query")
@blp.response(200, SettlementList)
@documents(blp, Unauthenticated, Forbidden, ValidationFailed, InvalidCursor)
@unit
def list_settlements(query: dict[str, Any]) -> Response:
    """The operator's settlements, newest first."""
    session = db_session()
    page = settlement.list_settlements(
        session,
        principal(),
        query["limit"],
        query.get("starting_after"),
        query.get("ending_before"),
    )
    shown = [render.settlement(view) for view in settlement.settlement_views(session, page.data)]
    return jsonify(render.page(shown, page.has_more, page.next_cursor))
