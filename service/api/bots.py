"""Practice bots: an operator seats a bot at a practice table, or enters one in a practice
tournament; the worker plays its turns."""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from service.api import render
from service.api.context import db_session, idempotent, principal, unit
from service.api.play_schemas import TableOut
from service.api.problems import documents
from service.api.schemas import ListEnvelope, MinorUnits, Timestamp
from service.api.tournament_schemas import TournamentOut
from service.api.tournaments import tournament_json
from service.api.wallets import IDEMPOTENCY_HEADER, MONEY_PROBLEMS
from service.clock import utcnow
from service.db.bot_models import BotPlayer
from service.errors import (
    Forbidden,
    NotFound,
    TableNotOpen,
    TokenExpired,
    TournamentNotOpen,
    Unauthenticated,
)
from service.ledger.money import MAX_AMOUNT
from service.usecases import bots

blp = Blueprint("bots", __name__, url_prefix="/v1", description="Practice bots.")


class BotIn(Schema):
    buyin = MinorUnits(
        validate=validate.Range(min=1, max=MAX_AMOUNT),
        metadata={
            "description": "Money Play and classic: the bot's buy-in "
            "(default: the table's maximum)."
        },
    )
    display_name = fields.String(
        load_default="Practice bot", validate=validate.Length(min=1, max=255)
    )


class _BotOut(Schema):
    """What every bot is: a player of the operator's, playing by a strategy."""

    object = fields.Constant("bot")
    player_id = fields.String(required=True, metadata={"description": "The bot's player."})
    strategy = fields.String(
        required=True,
        metadata={
            "enum": ["sensible", "eager"],
            "description": "eager: First To Knock (knocks at once).",
        },
    )
    created_at = Timestamp(required=True)


class BotOut(_BotOut):
    table_id = fields.String(required=True)
    match_id = fields.String(required=True)


class SeatedBotOut(BotOut):
    table = fields.Nested(TableOut, required=True)


class TournamentBotIn(Schema):
    display_name = fields.String(
        load_default="Practice bot", validate=validate.Length(min=1, max=255)
    )


class EnteredBotOut(_BotOut):
    tournament_id = fields.String(required=True)
    tournament = fields.Nested(TournamentOut, required=True)


class BotList(ListEnvelope):
    data = fields.List(fields.Nested(BotOut), required=True)


def _bot(bot: BotPlayer) -> dict[str, Any]:
    return {
        "player_id": bot.player_id,
        "table_id": bot.table_id,
        "match_id": bot.match_id,
        "strategy": bot.strategy,
        "created_at": bot.created_at,
    }


@blp.route("/tables/<table_id>/bots", methods=["POST"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@blp.arguments(BotIn)
@idempotent
@blp.response(201, SeatedBotOut)
@documents(
    blp,
    *MONEY_PROBLEMS,
    bots.PracticeTableRequired,
    TableNotOpen,
)
def seat_bot(body: dict[str, Any], table_id: str) -> tuple[dict[str, Any], int]:
    """Seat a practice bot (operator only, practice tables only): a new player of yours,
    marked as a bot, funded with its stake in play money from your clearing account, sits
    down like a person and plays its turns through the same rules and turn clock."""
    seated = bots.seat_bot(
        db_session(),
        principal(),
        table_id,
        buyin=body.get("buyin"),
        display_name=body["display_name"],
        now=utcnow(),
    )
    return {**_bot(seated.bot), "table": render.table(seated.table)}, 201


@blp.route("/tables/<table_id>/bots")
@blp.response(200, BotList)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound)
@unit
def list_bots(table_id: str) -> dict[str, Any]:
    """The bots seated at a table (operator only)."""
    found = bots.bots_of_table(db_session(), principal(), table_id)
    return render.page([_bot(b) for b in found], False, None)


@blp.route("/tournaments/<tournament_id>/bots", methods=["POST"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@blp.arguments(TournamentBotIn)
@idempotent
@blp.response(201, EnteredBotOut)
@documents(
    blp,
    *MONEY_PROBLEMS,
    bots.PracticeTournamentRequired,
    TournamentNotOpen,
)
def enter_bot(body: dict[str, Any], tournament_id: str) -> tuple[dict[str, Any], int]:
    """Enter a practice bot in a practice tournament (operator only): a new player of yours,
    marked as a bot, funded with the entry (buy-in plus fee) in play money from your
    clearing account, registers like a person (the entry that fills a sit-and-go starts it)
    and plays each match the tournament deals it."""
    entered = bots.enter_bot(
        db_session(), principal(), tournament_id, display_name=body["display_name"], now=utcnow()
    )
    bot = entered.bot
    return {
        "player_id": bot.player_id,
        "tournament_id": bot.tournament_id,
        "strategy": bot.strategy,
        "created_at": bot.created_at,
        "tournament": tournament_json(entered.tournament),
    }, 201
