"""Tables, the lobby, and seats."""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from typing import Any

import marshmallow as ma
from flask import Response, request
from flask_smorest import Blueprint
from werkzeug.exceptions import UnprocessableEntity

from service import live
from service.api import render
from service.api.context import (
    db_session,
    debits,
    in_unit,
    player_idempotent,
    principal,
    release_db_session,
    unit,
    wallet_debit,
)
from service.api.play_schemas import (
    JoinIn,
    LobbyQuery,
    ReadyIn,
    TableIn,
    TableList,
    TableOut,
    TopUpIn,
)
from service.api.problems import documents, flatten_messages
from service.api.schemas import DisplayQuery
from service.api.wallets import IDEMPOTENCY_HEADER
from service.clock import utcnow
from service.errors import (
    AlreadySeated,
    Forbidden,
    IdempotencyKeyInUse,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    InsufficientFunds,
    InvalidCursor,
    NotFound,
    SelfExcluded,
    TableNotOpen,
    TokenExpired,
    Unauthenticated,
    UnsupportedCurrency,
    ValidationFailed,
    WalletDeclined,
    WalletUnavailable,
)
from service.jsoncodec import dumps_bytes
from service.live.events import EVENT_STREAM, EVENT_STREAM_DOC, RETRY, token_expiry
from service.live.events import HEADERS as STREAM_HEADERS
from service.usecases import tables
from service.usecases.rates import Rate, display_rate
from service.usecases.tables import TableView

blp = Blueprint("tables", __name__, url_prefix="/v1", description="Tables, lobby and seats.")

#: What any change of the caller's seat may answer; SEAT_PROBLEMS with an Idempotency-Key.
SEAT_REFUSALS = (Unauthenticated, TokenExpired, Forbidden, NotFound, ValidationFailed, TableNotOpen)
SEAT_PROBLEMS = (
    *SEAT_REFUSALS,
    IdempotencyKeyRequired,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
)
#: What moving a player's money onto a table may answer: its wallet's own refusals too.
WALLET_PROBLEMS = (InsufficientFunds, WalletDeclined, WalletUnavailable)


@blp.route("/tables", methods=["POST"])
@blp.arguments(TableIn)
@blp.response(201, TableOut)
@documents(blp, Unauthenticated, Forbidden, ValidationFailed, UnsupportedCurrency)
@unit
def create_table(body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Open a table (operator only): format, currency, stake or buy-in range, target, house
    fee, rule options, clock, practice or private, and a public table's spectator delay."""
    settings = tables.settings_from(
        {key: body[key] for key in body.keys() & TableIn.SETTINGS},
        practice=body["practice"],
        currency=body["currency"],
    )
    view = tables.create_table(
        db_session(),
        principal(),
        name=body["name"],
        currency=body["currency"],
        settings=settings,
        practice=body["practice"],
        private=body["private"],
        now=utcnow(),
        spectator_delay=body["spectator_delay"],
    )
    return _table(view), 201


@blp.route("/tables")
@blp.arguments(LobbyQuery, location="query")
@blp.response(200, TableList)
@documents(blp, Unauthenticated, TokenExpired, ValidationFailed, InvalidCursor)
@unit
def lobby(query: dict[str, Any]) -> dict[str, Any]:
    """The lobby: open public tables, newest first, filtered by format, currency, stake range
    and free seats; amounts also in ``display_currency`` where the operator set a rate."""
    return _lobby_page(query)


@blp.route("/tables/events")
@blp.arguments(LobbyQuery, location="query")
@blp.response(200, EVENT_STREAM_DOC, content_type=EVENT_STREAM)
@documents(blp, Unauthenticated, TokenExpired, ValidationFailed, InvalidCursor)
def follow_lobby(query: dict[str, Any]) -> Response:
    """Follow the lobby as server-sent events (``text/event-stream``): a ``lobby`` event
    carrying the lobby's page, as ``GET /v1/tables`` answers it with the same filters, at
    once and again whenever a table of the operator opens, is seated or left, fills or
    closes (docs/scale-out.md, "Waiting for changes")."""
    environ = request.environ
    page = in_unit(lambda: _lobby_page(query))
    release_db_session()
    data = dumps_bytes(TableList().dump(page))  # as GET /v1/tables answers it
    digest = zlib.crc32(data)
    event = b"event: lobby\ndata: %s\n\n" % data
    if live.RENDER in environ:  # a later render: only if the page changed
        environ[live.TICKET] = live.Stream(live.lobby_topic(principal().operator_id), digest)
        return Response(b"" if digest == environ[live.RENDER] else event, mimetype=EVENT_STREAM)
    if live.can_park(environ):
        topic = live.lobby_topic(principal().operator_id)
        environ[live.TICKET] = live.Stream(topic, digest, token_expiry())
    return Response(iter([RETRY + event]), mimetype=EVENT_STREAM, headers=STREAM_HEADERS)


def _lobby_page(query: dict[str, Any]) -> dict[str, Any]:
    session = db_session()
    page = tables.list_tables(
        session,
        principal(),
        game=query.get("game"),
        format=query.get("format"),
        currency=query.get("currency"),
        min_stake=query.get("min_stake"),
        max_stake=query.get("max_stake"),
        free_seats=query.get("free_seats"),
        include_closed=query["include_closed"],
        limit=query["limit"],
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
    )
    rates: dict[str, Rate | None] = {}
    for view in page.data:
        if view.table.currency not in rates:
            rates[view.table.currency] = _rate(view.table.currency, query.get("display_currency"))
    return render.page(
        [render.table(v, rates[v.table.currency]) for v in page.data],
        page.has_more,
        page.next_cursor,
    )


def _rate(currency: str, requested: str | None = None) -> Rate | None:
    """The rate a table's amounts are shown at: ``requested``, else the calling player's
    display currency (docs/engine.md 6.5)."""
    who = principal()
    return display_rate(db_session(), who.operator_id, currency, requested, who.player_id)


def _table(view: TableView, requested: str | None = None) -> dict[str, Any]:
    return render.table(view, _rate(view.table.currency, requested))


@blp.route("/tables/<table_id>")
@blp.arguments(DisplayQuery, location="query")
@blp.response(200, TableOut)
@documents(blp, Unauthenticated, TokenExpired, NotFound, ValidationFailed)
@unit
def get_table(query: dict[str, Any], table_id: str) -> dict[str, Any]:
    """One table with its seats (the invite code only for the operator); amounts also in
    ``display_currency`` where the operator set a rate."""
    return _table(
        tables.get_table(db_session(), principal(), table_id), query.get("display_currency")
    )


def _join_stake(body: dict[str, Any], table_id: str) -> Any:
    return tables.join_stake(
        db_session(),
        principal(),
        table_id,
        buyin=body.get("buyin"),
        invite_code=body.get("invite_code"),
        client_seed=body.get("client_seed"),
        now=utcnow(),
    )


def _with_the_buyin_rule(view: Callable[..., Any]) -> Callable[..., Any]:
    """A seat body refused for its fields (before the key or the table is looked at) names
    in the same answer what the table's buy-in rule says of it
    (:func:`tables.seat_buyin_problems`), so one answer lists every field at fault; a body
    whose fields pass meets the rule in the use case, with the seat's other checks. A body
    that is no object is refused for that alone."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return view(*args, **kwargs)
        except UnprocessableEntity as exc:
            refused = getattr(exc, "exc", None)
            if not isinstance(refused, ma.ValidationError):
                raise
            errors = flatten_messages(refused.messages)
            if not {"buyin", "(body)"} & {e.field for e in errors}:  # an object, its buyin read
                valid = refused.valid_data if isinstance(refused.valid_data, dict) else {}
                errors = [
                    *in_unit(
                        lambda: tables.seat_buyin_problems(
                            db_session(), principal(), kwargs["table_id"], valid.get("buyin")
                        )
                    ),
                    *errors,
                ]
            detail = "; ".join(f"{e.field}: {e.message}" for e in errors)
            raise ValidationFailed(detail, errors=errors) from None

    return wrapper


@blp.route("/tables/<table_id>/seats", methods=["POST"])
@_with_the_buyin_rule
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@blp.arguments(JoinIn)
@debits(_join_stake)
@player_idempotent
@blp.response(201, TableOut)
@documents(blp, *SEAT_PROBLEMS, *WALLET_PROBLEMS, AlreadySeated, SelfExcluded)
def join(body: dict[str, Any], table_id: str) -> tuple[dict[str, Any], int]:
    """Sit down (player token): the stake or buy-in moves from available funds into the
    match's escrow in the same transaction; the second seat starts the match. At a
    seamless operator the stake is first debited from the operator's wallet (an ambiguous
    answer: 503 `wallet_unavailable`, the debit rolled back, no seat taken)."""
    view = tables.join_table(
        db_session(),
        principal(),
        table_id,
        buyin=body.get("buyin"),
        invite_code=body.get("invite_code"),
        client_seed=body.get("client_seed"),
        now=utcnow(),
        debit=wallet_debit(),
    )
    return _table(view), 201


@blp.route("/tables/<table_id>/seats/me", methods=["DELETE"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@player_idempotent
@blp.response(200, TableOut)
@documents(blp, *SEAT_PROBLEMS)
def leave(table_id: str) -> dict[str, Any]:
    """Give up your seat before the match starts (a `rummy_per_hand` table: between your
    hands): the escrow (the table balance) is released."""
    view = tables.leave_table(db_session(), principal(), table_id, utcnow())
    return _table(view)


def _top_up_stake(body: dict[str, Any], table_id: str) -> Any:
    return tables.top_up_stake(db_session(), principal(), table_id, body["amount"], utcnow())


@blp.route("/tables/<table_id>/seats/me/top-ups", methods=["POST"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@blp.arguments(TopUpIn)
@debits(_top_up_stake)
@player_idempotent
@blp.response(200, TableOut)
@documents(blp, *SEAT_PROBLEMS, *WALLET_PROBLEMS, SelfExcluded)
def top_up(body: dict[str, Any], table_id: str) -> dict[str, Any]:
    """`rummy_per_hand` tables: move money from your wallet to your table balance between
    your hands, up to the maximum buy-in; the next hand is dealt if it now can be. At a
    seamless operator the top-up is first debited from the operator's wallet."""
    view = tables.top_up(
        db_session(), principal(), table_id, body["amount"], utcnow(), debit=wallet_debit()
    )
    return _table(view)


@blp.route("/tables/<table_id>/seats/me/ready", methods=["PUT"])
@blp.arguments(ReadyIn)
@blp.response(200, TableOut)
@documents(blp, *SEAT_REFUSALS, SelfExcluded)
@unit
def ready(body: dict[str, Any], table_id: str) -> dict[str, Any]:
    """`rummy_per_hand` tables: sit in (`true`) or out of (`false`) the next hands; the
    next hand is dealt if it now can be. A self-excluded player stays sitting out (`true`
    is 422 `self_excluded`)."""
    view = tables.set_ready(db_session(), principal(), table_id, body["ready"], utcnow())
    return _table(view)
