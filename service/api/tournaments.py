"""Tournaments: the lobby, registration, the bracket and the statement (docs/tournaments.md)."""

from __future__ import annotations

from typing import Any

from flask import Response, g, request
from flask_smorest import Blueprint

from service import live
from service.api import render
from service.api.context import (
    credits_after,
    db_session,
    debits,
    idempotent,
    in_unit,
    player_idempotent,
    principal,
    release_db_session,
    unit,
    wallet_debit,
)
from service.api.play_schemas import EventsQuery
from service.api.problems import documents
from service.api.tournament_schemas import (
    TournamentIn,
    TournamentList,
    TournamentOut,
    TournamentQuery,
    TournamentStatementOut,
)
from service.api.wallets import IDEMPOTENCY_HEADER
from service.clock import utcnow
from service.errors import (
    AlreadyRegistered,
    Forbidden,
    IdempotencyKeyInUse,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    InsufficientFunds,
    InvalidCursor,
    NotFound,
    SelfExcluded,
    TokenExpired,
    TournamentNotOpen,
    Unauthenticated,
    UnsupportedCurrency,
    ValidationFailed,
    WalletDeclined,
    WalletUnavailable,
)
from service.live import events as live_events
from service.live.events import EVENT_STREAM, EVENT_STREAM_DOC, token_expiry
from service.tournaments.single_table import SingleTable
from service.usecases import tournaments
from service.usecases.tournaments import TournamentView

blp = Blueprint(
    "tournaments",
    __name__,
    url_prefix="/v1",
    description="Tournaments: knockouts and single tables, sit-and-go or scheduled.",
)

ENTRY_PROBLEMS = (
    Unauthenticated,
    TokenExpired,
    Forbidden,
    NotFound,
    TournamentNotOpen,
    IdempotencyKeyRequired,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
)


@blp.route("/tournaments", methods=["POST"])
@blp.arguments(TournamentIn)
@blp.response(201, TournamentOut)
@documents(blp, Unauthenticated, Forbidden, ValidationFailed, UnsupportedCurrency)
@unit
def create_tournament(body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Open a tournament (operator only): a knockout for two-player Gin or a single table
    for a multi-player game, the format of its matches, the entry (buy-in and fee), the
    field and the payout table; a sit-and-go, or scheduled with `starts_at`. Its seed's
    commitment is published now."""
    keys = ("game", "seat_count", "format", "target", "clock", "rummy")
    table: dict[str, Any] = {key: body[key] for key in keys if key in body}
    settings, problems = tournaments.match_settings(table, buy_in=body["buy_in"])
    if settings is None:
        detail = "; ".join(f"{p.field}: {p.message}" for p in problems)
        raise ValidationFailed(detail, errors=problems)
    view = tournaments.create_tournament(
        db_session(),
        principal(),
        name=body["name"],
        currency=body["currency"],
        practice=body["practice"],
        settings=settings,
        buy_in=body["buy_in"],
        fee=body["fee"],
        entrants=body.get("entrants"),
        payout_table=body.get("payout_table"),
        registration_seconds=body["registration_seconds"],
        now=utcnow(),
        kind=body["kind"],
        starts_at=body.get("starts_at"),
        min_entrants=body.get("min_entrants"),
    )
    return tournament_json(view), 201


@blp.route("/tournaments")
@blp.arguments(TournamentQuery, location="query")
@blp.response(200, TournamentList)
@documents(blp, Unauthenticated, TokenExpired, ValidationFailed, InvalidCursor)
@unit
def lobby(query: dict[str, Any]) -> dict[str, Any]:
    """The tournament lobby, newest first, filtered by status, kind, game and currency."""
    page = tournaments.list_tournaments(
        db_session(),
        principal(),
        status=query.get("status"),
        kind=query.get("kind"),
        game=query.get("game"),
        currency=query.get("currency"),
        limit=query["limit"],
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
    )
    return render.page([tournament_json(v) for v in page.data], page.has_more, page.next_cursor)


@blp.route("/tournaments/<tournament_id>")
@blp.response(200, TournamentOut)
@documents(blp, Unauthenticated, TokenExpired, NotFound)
@unit
def get_tournament(tournament_id: str) -> dict[str, Any]:
    """One tournament: its entries, the bracket with each match's id, the standings, the
    seed's commitment and, once drawn, the seed."""
    return tournament_json(tournaments.get_tournament(db_session(), principal(), tournament_id))


@blp.route("/tournaments/<tournament_id>/events")
@blp.arguments(EventsQuery, location="query")
@blp.response(200, EVENT_STREAM_DOC, content_type=EVENT_STREAM)
@documents(blp, Unauthenticated, TokenExpired, NotFound, ValidationFailed)
def follow_tournament(query: dict[str, Any], tournament_id: str) -> Response:
    """Follow the tournament as server-sent events (``text/event-stream``): an ``update``
    event (``id``: the tournament's ``version``) carrying the tournament as
    ``GET /v1/tournaments/{id}`` answers it, at once and each time it changes (a
    registration or withdrawal, the start with round 1's matches, each result and the next
    round dealt, the end with the places and prizes), and ``end`` once it has finished or
    been cancelled. Resume after a dropped connection with ``Last-Event-ID`` (or
    ``after_version``). The operator's key or a player's token; a key or token revoked
    meanwhile ends the stream with an ``error`` event (docs/tournaments.md, "Following a
    tournament")."""
    environ = request.environ
    sent = environ.get(live.RENDER)
    if sent is None:
        sent = query.get("after_version", live_events.last_event_id())
    view = in_unit(
        lambda: TournamentOut().dump(
            tournament_json(tournaments.get_tournament(db_session(), principal(), tournament_id))
        )
    )  # authorises, every time
    release_db_session()
    body = b""
    version = int(view["version"])
    if sent is None or version > sent:
        body += live_events.update(view)
    ended = view["status"] in tournaments.OVER
    if ended:
        body += live_events.end(version)
    topic = live.tournament_topic(tournament_id)
    if live.RENDER in environ:  # a later render: the events only (and the stream's state)
        if not ended:
            environ[live.TICKET] = live.Stream(topic, max(version, sent or 0))
        return Response(body, mimetype=EVENT_STREAM)
    first = live_events.RETRY + body
    if live.can_park(environ) and not ended:
        environ[live.TICKET] = live.Stream(topic, version, token_expiry())
    # no waiting room: the stream ends after the current state; clients reconnect
    return Response(iter([first]), mimetype=EVENT_STREAM, headers=live_events.HEADERS)


def _entry_stake(tournament_id: str) -> Any:
    return tournaments.entry_stake(db_session(), principal(), tournament_id, utcnow())


@blp.route("/tournaments/<tournament_id>/entries", methods=["POST"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@debits(_entry_stake)
@player_idempotent
@blp.response(201, TournamentOut)
@documents(
    blp,
    *ENTRY_PROBLEMS,
    AlreadyRegistered,
    SelfExcluded,
    InsufficientFunds,
    WalletDeclined,
    WalletUnavailable,
)
def register(tournament_id: str) -> tuple[dict[str, Any], int]:
    """Register (player token): the entry, buy-in plus fee, is held from your available
    funds for the tournament; the entry that fills the field starts it. At a seamless
    operator the entry is first debited from the operator's wallet (an ambiguous answer:
    503 `wallet_unavailable`, the debit rolled back, no entry taken)."""
    view = tournaments.register(
        db_session(), principal(), tournament_id, utcnow(), debit=wallet_debit()
    )
    return tournament_json(view), 201


@blp.route("/tournaments/<tournament_id>/entries/me", methods=["DELETE"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@credits_after("tournament_id")
@player_idempotent
@blp.response(200, TournamentOut)
@documents(blp, *ENTRY_PROBLEMS)
def unregister(tournament_id: str) -> dict[str, Any]:
    """Unregister before the start (player token): the entry is released in full (at a
    seamless operator, credited back to the operator's wallet)."""
    return tournament_json(
        tournaments.unregister(db_session(), principal(), tournament_id, utcnow())
    )


@blp.route("/tournaments/<tournament_id>/cancel", methods=["POST"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@credits_after("tournament_id")
@idempotent
@blp.response(200, TournamentOut)
@documents(
    blp,
    Unauthenticated,
    Forbidden,
    NotFound,
    TournamentNotOpen,
    IdempotencyKeyRequired,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
)
def cancel(tournament_id: str) -> dict[str, Any]:
    """Cancel (operator only), refunded by docs/tournaments.md, Cancellation: before any
    match has finished every entry in full, after it the pool by the current standings."""
    return tournament_json(tournaments.cancel(db_session(), principal(), tournament_id, utcnow()))


@blp.route("/tournaments/<tournament_id>/statement")
@blp.response(200, TournamentStatementOut)
@documents(blp, Unauthenticated, Forbidden, NotFound)
@unit
def statement(tournament_id: str) -> dict[str, Any]:
    """Every movement of the tournament's money, from the ledger, oldest first: entries,
    refunds, the fees, the prizes; the lines sum to what it holds, zero once it is over."""
    tournament, lines = tournaments.statement(db_session(), principal(), tournament_id)
    currency = tournament.currency
    return {
        "tournament_id": tournament.id,
        "object": "tournament_statement",
        "status": tournament.status,
        "lines": [
            {
                "transaction_id": line.transaction_id,
                "kind": line.kind,
                "player_id": line.player_id,
                "amount": render.money(line.amount, currency),
                "created_at": line.created_at,
            }
            for line in lines
        ],
        "held": render.money(sum(line.amount for line in lines), currency),
    }


def tournament_json(view: TournamentView) -> dict[str, Any]:
    t = view.tournament
    drawn = t.draw is not None
    rounds = [
        {
            "round": r,
            "matches": [
                {
                    "match_no": m,
                    "match_id": p["match_id"],
                    "first_seat": p["first"],
                    "second_seat": p["second"],
                    "winner_seat": p["winner"],
                }
                for m, p in enumerate(pairings, 1)
            ],
        }
        for r, pairings in enumerate(t.bracket if t.kind == "knockout" and t.bracket else [], 1)
    ]
    table = None
    if t.kind == "single_table" and t.bracket is not None:
        [[stored]] = t.bracket
        table = {"match_id": stored["match_id"], "seats": SingleTable.from_dict(t.bracket).seating}
    standings = []
    if t.bracket is not None:
        place = 1
        for group in tournaments.played_so_far(t).standings():
            standings.append(
                {"seats": group, "first_place": place, "last_place": place + len(group) - 1}
            )
            place += len(group)
    return {
        "id": t.id,
        "object": "tournament",
        "name": t.name,
        "kind": t.kind,
        "game": t.game,
        "format": t.format,
        "settings": t.settings,
        "currency": t.currency,
        "practice": t.practice,
        "status": t.status,
        "version": t.version,
        "buy_in": render.money(t.buy_in, t.currency),
        "fee": render.money(t.fee, t.currency),
        "prize_pool": render.money(
            t.buy_in * (t.entries_taken if t.started_at else t.entrants), t.currency
        ),
        "entrants": t.entrants,
        "min_entrants": t.min_entrants,
        "entries_taken": t.entries_taken,
        "payout_table": t.payout_table,
        "commitment": t.commitment,
        "server_seed": t.server_seed if drawn else None,
        "draw": t.draw,
        "entries": [
            {
                "seat": e.seat,
                "player_id": e.player_id,
                "state": e.state,
                "registered_at": e.registered_at,
                "prize": None if e.prize is None else render.money(e.prize, t.currency),
                "first_place": e.first_place,
                "last_place": e.last_place,
            }
            for e in view.entries
        ],
        "rounds": rounds,
        "table": table,
        "standings": standings,
        "registration_deadline": t.registration_deadline,
        "starts_at": t.starts_at,
        "created_at": t.created_at,
        "started_at": t.started_at,
        "finished_at": t.finished_at,
        "cancelled_at": t.cancelled_at,
        "you": _your_seat(view),
    }


def _your_seat(view: TournamentView) -> int | None:
    """The caller's seat in the tournament, when a player token calls and has an entry."""
    caller = getattr(g.get("principal"), "player_id", None)
    return next((e.seat for e in view.entries if caller and e.player_id == caller), None)
