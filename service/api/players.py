"""Players, their tokens, deposit limits and self-exclusion."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint

from service.api import render
from service.api.context import db_session, principal, unit
from service.api.problems import documents
from service.api.schemas import (
    LimitsIn,
    LimitsOut,
    ListQuery,
    PlayerIn,
    PlayerList,
    PlayerOut,
    PlayerPatch,
    SelfExclusionIn,
    TokenIn,
    TokenOut,
)
from service.clock import utcnow
from service.errors import (
    CurrencyMismatch,
    ExternalIdTaken,
    FieldError,
    Forbidden,
    InvalidCursor,
    NotFound,
    SelfExclusionLocked,
    TokenExpired,
    Unauthenticated,
    UnsupportedCurrency,
    ValidationFailed,
)
from service.usecases import limits, players

blp = Blueprint("players", __name__, url_prefix="/v1", description="Players of an operator.")


@blp.route("/players")
class Players(MethodView):
    @blp.arguments(PlayerIn)
    @blp.response(201, PlayerOut)
    @documents(blp, Unauthenticated, Forbidden, ExternalIdTaken, ValidationFailed)
    @unit
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a player; ``external_id`` is the operator's own id, unique per operator."""
        created = players.create_player(
            db_session(),
            principal(),
            body["external_id"],
            body["display_name"],
            body["display_currency"],
            utcnow(),
        )
        return render.player(created)

    @blp.arguments(ListQuery, location="query")
    @blp.response(200, PlayerList)
    @documents(blp, Unauthenticated, Forbidden, InvalidCursor, ValidationFailed)
    @unit
    def get(self, query: dict[str, Any]) -> dict[str, Any]:
        """The operator's players, newest first, cursor-paginated."""
        page = players.list_players(
            db_session(),
            principal(),
            query["limit"],
            query.get("starting_after"),
            query.get("ending_before"),
        )
        return render.page([render.player(p) for p in page.data], page.has_more, page.next_cursor)


@blp.route("/players/<player_id>")
class PlayerResource(MethodView):
    @blp.response(200, PlayerOut)
    @documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound)
    @unit
    def get(self, player_id: str) -> dict[str, Any]:
        """A player (operator key, or that player's own token)."""
        return render.player(players.get_player(db_session(), principal(), player_id))

    @blp.arguments(PlayerPatch)
    @blp.response(200, PlayerOut)
    @documents(blp, Unauthenticated, Forbidden, NotFound, ValidationFailed)
    @unit
    def patch(self, body: dict[str, Any], player_id: str) -> dict[str, Any]:
        """Change a player's display name or display currency."""
        return render.player(players.update_player(db_session(), principal(), player_id, body))


@blp.route("/players/<player_id>/tokens", methods=["POST"])
@blp.arguments(TokenIn)
@blp.response(201, TokenOut)
@documents(blp, Unauthenticated, Forbidden, NotFound, ValidationFailed)
@unit
def mint_token(body: dict[str, Any], player_id: str) -> dict[str, Any]:
    """Mint a player token: what the player sits down and plays with.

    The token (``pt_...``, short-lived and signed) is the player's credential: send it as
    ``Authorization: Bearer <token>`` to take a seat (``POST /v1/tables/{table_id}/seats``)
    or leave it, to read the match and play (``GET /v1/matches/{match_id}``,
    ``POST /v1/matches/{match_id}/actions``), and to read the player's own wallets and ledger
    entries. It expires after ``ttl_seconds`` (by default the service's
    PLAYER_TOKEN_TTL_SECONDS); then requests answer 401 ``token_expired`` and the operator
    mints a new one."""
    config = current_app.config
    minted = players.mint_token(
        db_session(),
        principal(),
        player_id,
        config["SECRET_KEY"],
        body.get("ttl_seconds", config["PLAYER_TOKEN_TTL_SECONDS"]),
        utcnow(),
    )
    return {"token": minted.token, "player_id": minted.player_id, "expires_at": minted.expires_at}


@blp.route("/players/<player_id>/self-exclusion", methods=["PUT"])
@blp.arguments(SelfExclusionIn)
@blp.response(200, PlayerOut)
@documents(blp, Unauthenticated, Forbidden, NotFound, SelfExclusionLocked, ValidationFailed)
@unit
def set_self_exclusion(body: dict[str, Any], player_id: str) -> dict[str, Any]:
    """Exclude the player from deposits and play until ``until``, at once wherever it sits:
    a seat at a table whose match has not started is given up and its escrow released to the
    wallet (at a seamless operator, credited to it), in the same transaction; a
    `rummy_per_hand` seat is sat out (`ready: false`) and may leave between its hands; a
    match already being played is played to its end. An active exclusion can be extended but
    never shortened."""
    return render.player(
        players.set_self_exclusion(db_session(), principal(), player_id, body["until"], utcnow())
    )


@blp.route("/players/<player_id>/deposit-limits/<currency>")
class DepositLimits(MethodView):
    @blp.response(200, LimitsOut)
    @documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound, UnsupportedCurrency)
    @unit
    def get(self, player_id: str, currency: str) -> dict[str, Any]:
        """The player's deposit limits in one currency, with any raise waiting its 24 hours."""
        views = limits.get_limits(db_session(), principal(), player_id, currency, utcnow())
        return render.limits(player_id, currency, views)

    @blp.arguments(LimitsIn)
    @blp.response(200, LimitsOut)
    @documents(
        blp,
        Unauthenticated,
        Forbidden,
        NotFound,
        UnsupportedCurrency,
        CurrencyMismatch,
        ValidationFailed,
    )
    @unit
    def put(self, body: dict[str, Any], player_id: str, currency: str) -> dict[str, Any]:
        """Set daily, weekly and/or monthly limits (rolling 24 h, 7 d, 30 d). A lower limit
        applies at once; a higher one (or ``null``, no limit) after 24 hours. Omitted periods
        stay as they are."""
        requested: dict[str, int | None] = {}
        for period, value in body.items():
            if value is not None and value["currency"] != currency:
                message = f"The {period} limit is in {value['currency']}, the path says {currency}."
                raise CurrencyMismatch(message, errors=[FieldError(f"{period}.currency", message)])
            requested[period] = None if value is None else value["amount"]
        views = limits.set_limits(
            db_session(), principal(), player_id, currency, requested, utcnow()
        )
        return render.limits(player_id, currency, views)
