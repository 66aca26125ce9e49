"""Schemas of the tournaments' resources (docs/tournaments.md)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from service.api.play_schemas import ClockIn
from service.api.schemas import (
    ListEnvelope,
    ListQuery,
    MinorUnits,
    MoneyOut,
    StrictBoolean,
    StrictInteger,
    Timestamp,
)
from service.db.tournament_models import ENTRY_STATES, TOURNAMENT_STATUSES
from service.ledger.money import EXPONENTS
from service.tournaments.bracket import SIZES
from service.tournaments.payouts import DEFAULT_TABLE
from service.usecases.tournaments import KNOCKOUT_FORMATS

#: The kinds of tournament offered, and their games.
KINDS = ["knockout"]
GAMES = ["gin"]
#: What a statement line records (``service.usecases.tournaments.statement``).
LINE_KINDS = ["entry", "refund", "fee", "prize", "fee_returned", "fee_refund"]


class TournamentIn(Schema):
    """A new sit-and-go knockout for two-player Gin."""

    name = fields.String(load_default="", validate=validate.Length(max=100))
    kind = fields.String(load_default="knockout", validate=validate.OneOf(KINDS))
    game = fields.String(load_default="gin", validate=validate.OneOf(GAMES))
    format = fields.String(
        required=True,
        validate=validate.OneOf(KNOCKOUT_FORMATS),
        metadata={"description": "The format of every match of the bracket."},
    )
    target = StrictInteger(
        load_default=100,
        minimum=1,
        maximum=10_000,
        metadata={"description": "Match Play's target (each match is played to it)."},
    )
    clock = fields.Nested(
        ClockIn,
        load_default=dict,
        metadata={"description": "The matches' turn clock: a player who lets it run out forfeits."},
    )
    currency = fields.String(
        required=True,
        validate=validate.OneOf(sorted(EXPONENTS), error="Must be a supported currency code."),
    )
    practice = StrictBoolean(load_default=False, metadata={"description": "Play money (XPM) only."})
    buy_in = MinorUnits(
        required=True, minimum=1, metadata={"description": "Each entry's share of the prize pool."}
    )
    fee = MinorUnits(
        load_default=0,
        metadata={"description": "Each entry's fee, the house's once the tournament starts."},
    )
    entrants = StrictInteger(
        required=True,
        minimum=4,
        maximum=32,
        validate=validate.OneOf(SIZES, error="Must be 4, 8, 16 or 32."),
        metadata={"description": "The field: 4, 8, 16 or 32; it starts when full."},
    )
    payout_table = fields.String(
        validate=validate.Length(min=1, max=1000),
        metadata={
            "description": "Shares of the pool per place, in basis points, per band of entrant "
            f"counts (docs/tournaments.md, Money). Left out: `{DEFAULT_TABLE}`.",
            "example": "2-5: 10000; 6-9: 6500/3500",
        },
    )
    registration_seconds = StrictInteger(
        load_default=3600,
        minimum=60,
        maximum=7 * 86_400,
        metadata={
            "description": "How long registration stays open; unfilled by then, the "
            "tournament is cancelled and every entry refunded."
        },
    )


class TournamentEntryOut(Schema):
    seat = fields.Integer(required=True)
    player_id = fields.String(required=True)
    state = fields.String(required=True, metadata={"enum": list(ENTRY_STATES)})
    registered_at = Timestamp(required=True)
    prize = fields.Nested(
        MoneyOut, allow_none=True, required=True, metadata={"description": "Once placed."}
    )
    first_place = fields.Integer(allow_none=True, required=True)
    last_place = fields.Integer(
        allow_none=True,
        required=True,
        metadata={"description": "Tied entrants share the places first_place to last_place."},
    )


class TournamentPairingOut(Schema):
    match_no = fields.Integer(required=True)
    match_id = fields.String(
        allow_none=True, required=True, metadata={"description": "`GET /v1/matches/{id}`."}
    )
    first_seat = fields.Integer(required=True)
    second_seat = fields.Integer(required=True)
    winner_seat = fields.Integer(allow_none=True, required=True)


class TournamentRoundOut(Schema):
    round = fields.Integer(required=True)
    matches = fields.List(fields.Nested(TournamentPairingOut), required=True)


class TournamentStandingOut(Schema):
    seats = fields.List(fields.Integer(), required=True)
    first_place = fields.Integer(required=True)
    last_place = fields.Integer(required=True)


class TournamentOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("tournament")
    name = fields.String(required=True)
    kind = fields.String(required=True, metadata={"enum": KINDS})
    game = fields.String(required=True, metadata={"enum": GAMES})
    format = fields.String(required=True, metadata={"enum": list(KNOCKOUT_FORMATS)})
    settings = fields.Dict(required=True, metadata={"description": "Its matches' settings."})
    currency = fields.String(required=True)
    practice = fields.Boolean(required=True)
    status = fields.String(required=True, metadata={"enum": list(TOURNAMENT_STATUSES)})
    buy_in = fields.Nested(MoneyOut, required=True)
    fee = fields.Nested(MoneyOut, required=True)
    prize_pool = fields.Nested(
        MoneyOut, required=True, metadata={"description": "The buy-ins of a full field."}
    )
    entrants = fields.Integer(required=True)
    entries_taken = fields.Integer(required=True)
    payout_table = fields.String(required=True)
    commitment = fields.String(
        required=True, metadata={"description": "SHA-256 of the server seed, from the start."}
    )
    server_seed = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "Revealed once the bracket is drawn."},
    )
    draw = fields.List(
        fields.Integer(),
        allow_none=True,
        required=True,
        metadata={"description": "The seats in drawn order, once the field is full."},
    )
    entries = fields.List(fields.Nested(TournamentEntryOut), required=True)
    rounds = fields.List(fields.Nested(TournamentRoundOut), required=True)
    standings = fields.List(
        fields.Nested(TournamentStandingOut),
        required=True,
        metadata={"description": "Best first; tied seats share their places."},
    )
    registration_deadline = Timestamp(required=True)
    created_at = Timestamp(required=True)
    started_at = Timestamp(allow_none=True, required=True)
    finished_at = Timestamp(allow_none=True, required=True)
    cancelled_at = Timestamp(allow_none=True, required=True)


class TournamentList(ListEnvelope):
    data = fields.List(fields.Nested(TournamentOut), required=True)


class TournamentQuery(ListQuery):
    status = fields.String(validate=validate.OneOf(TOURNAMENT_STATUSES))
    game = fields.String(validate=validate.OneOf(GAMES))
    currency = fields.String(validate=validate.OneOf(sorted(EXPONENTS)))


class TournamentStatementLineOut(Schema):
    transaction_id = fields.String(required=True)
    kind = fields.String(required=True, metadata={"enum": LINE_KINDS})
    player_id = fields.String(
        allow_none=True, required=True, metadata={"description": "None for the house."}
    )
    amount = fields.Nested(
        MoneyOut,
        required=True,
        metadata={"description": "Into the tournament's pool (+) or out of it (-)."},
    )
    created_at = Timestamp(required=True)


class TournamentStatementOut(Schema):
    tournament_id = fields.String(required=True)
    object = fields.Constant("tournament_statement")
    status = fields.String(required=True, metadata={"enum": list(TOURNAMENT_STATUSES)})
    lines = fields.List(fields.Nested(TournamentStatementLineOut), required=True)
    held = fields.Nested(
        MoneyOut,
        required=True,
        metadata={"description": "The lines' sum: zero once finished or cancelled."},
    )
