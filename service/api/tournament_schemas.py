"""Schemas of the tournaments' resources (docs/tournaments.md)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from service.api.play_schemas import OPTIONS_IN, ClockIn
from service.api.schemas import (
    ListEnvelope,
    ListQuery,
    MinorUnits,
    MoneyOut,
    StrictBoolean,
    StrictInteger,
    Timestamp,
)
from service.db.tournament_models import ENTRY_STATES, TOURNAMENT_KINDS, TOURNAMENT_STATUSES
from service.ledger.money import EXPONENTS
from service.tournaments.bracket import SIZES
from service.tournaments.payouts import DEFAULT_TABLE
from service.usecases.tournaments import KIND_GAMES, KNOCKOUT_FORMATS, SINGLE_TABLE_FORMATS

#: The kinds of tournament offered, their games and their matches' formats.
KINDS = list(TOURNAMENT_KINDS)
GAMES = sorted({game for games in KIND_GAMES.values() for game in games})
FORMATS = sorted({*KNOCKOUT_FORMATS, *(f for fs in SINGLE_TABLE_FORMATS.values() for f in fs)})
#: What a statement line records (``service.usecases.tournaments.statement``).
LINE_KINDS = ["entry", "refund", "fee", "prize", "fee_returned", "fee_refund"]


class TournamentIn(Schema):
    """A new tournament: a knockout for two-player Gin (`game` `gin`, `format`
    `first_to_knock` or `match_play`, `entrants` 4, 8, 16 or 32) or a single table for a
    multi-player game (`gin_three` or `gin_partnership` in `match_play`, `rummy` in
    `rummy_target` or `rummy_deals` with `seat_count` 2 to 6; `entrants` is the seat count
    and may be left out). A sit-and-go starts when full; with `starts_at` it is scheduled
    (docs/tournaments.md)."""

    name = fields.String(load_default="", validate=validate.Length(max=100))
    kind = fields.String(load_default="knockout", validate=validate.OneOf(KINDS))
    game = fields.String(load_default="gin", validate=validate.OneOf(GAMES))
    seat_count = StrictInteger(
        minimum=2,
        maximum=6,
        metadata={
            "description": "A single table's seats, as at a table: 3 (`gin_three`), 4 "
            "(`gin_partnership`), 2 to `rummy.max_players` (`rummy`, required)."
        },
    )
    format = fields.String(
        required=True,
        validate=validate.OneOf(FORMATS),
        metadata={"description": "The format of every match (a knockout's) or the table's."},
    )
    target = StrictInteger(
        load_default=100,
        minimum=1,
        maximum=10_000,
        metadata={
            "description": "The target of `match_play` and `rummy_target`; the number of "
            "deals of `rummy_deals`."
        },
    )
    rummy = fields.Nested(
        OPTIONS_IN["rummy"],
        load_default=dict,
        metadata={"description": "Rummy options, as at a table (`match` follows from the format)."},
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
        minimum=2,
        maximum=32,
        metadata={
            "description": "The field (the most entrants): a knockout's 4, 8, 16 or 32 "
            f"(one of {list(SIZES)}; required), a single table's its `seat_count`. A "
            "sit-and-go starts when it is full."
        },
    )
    min_entrants = StrictInteger(
        minimum=2,
        maximum=32,
        metadata={
            "description": "A scheduled tournament's fewest entrants, 2 to `entrants`: a "
            "knockout's default 4 (a knockout started short of its field draws byes), a Rummy "
            "table's default 2, a Gin table's its seat count. A sit-and-go's is its field "
            "(leave it out)."
        },
    )
    starts_at = Timestamp(
        metadata={
            "description": "Scheduled: registration closes and it starts at this time (ahead, "
            "within 7 days) if its field is one it may start with; otherwise it is cancelled "
            "and refunded. Left out: a sit-and-go."
        },
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
            "description": "A sit-and-go's: how long registration stays open; unfilled by "
            "then, the tournament is cancelled and every entry refunded."
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
    second_seat = fields.Integer(
        allow_none=True,
        required=True,
        metadata={"description": "None: a bye (round 1), `first_seat` advanced without a match."},
    )
    winner_seat = fields.Integer(allow_none=True, required=True)


class TournamentRoundOut(Schema):
    round = fields.Integer(required=True)
    matches = fields.List(fields.Nested(TournamentPairingOut), required=True)


class TournamentTableOut(Schema):
    match_id = fields.String(required=True, metadata={"description": "`GET /v1/matches/{id}`."})
    seats = fields.List(
        fields.Integer(),
        required=True,
        metadata={"description": "The entrants' seats in table seat order (0 up), as drawn."},
    )


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
    format = fields.String(required=True, metadata={"enum": FORMATS})
    settings = fields.Dict(required=True, metadata={"description": "Its matches' settings."})
    currency = fields.String(required=True)
    practice = fields.Boolean(required=True)
    status = fields.String(required=True, metadata={"enum": list(TOURNAMENT_STATUSES)})
    version = fields.Integer(
        required=True,
        metadata={
            "description": "Grows with each change (a registration, the start, a result, the "
            "end): its event stream's event ids."
        },
    )
    buy_in = fields.Nested(MoneyOut, required=True)
    fee = fields.Nested(MoneyOut, required=True)
    prize_pool = fields.Nested(
        MoneyOut,
        required=True,
        metadata={
            "description": "The buy-ins of the entrants it started with; before the start, "
            "of a full field."
        },
    )
    entrants = fields.Integer(required=True, metadata={"description": "The field."})
    min_entrants = fields.Integer(required=True, metadata={"description": "The fewest to start."})
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
        metadata={
            "description": "The seats in drawn order (a single table's seating), once started."
        },
    )
    entries = fields.List(fields.Nested(TournamentEntryOut), required=True)
    rounds = fields.List(
        fields.Nested(TournamentRoundOut),
        required=True,
        metadata={"description": "A knockout's rounds (empty for a single table)."},
    )
    table = fields.Nested(
        TournamentTableOut,
        allow_none=True,
        required=True,
        metadata={"description": "A single table's match, once started."},
    )
    standings = fields.List(
        fields.Nested(TournamentStandingOut),
        required=True,
        metadata={"description": "Best first; tied seats share their places."},
    )
    registration_deadline = Timestamp(required=True)
    starts_at = Timestamp(
        allow_none=True, required=True, metadata={"description": "A scheduled start."}
    )
    created_at = Timestamp(required=True)
    started_at = Timestamp(allow_none=True, required=True)
    finished_at = Timestamp(allow_none=True, required=True)
    cancelled_at = Timestamp(allow_none=True, required=True)
    you = fields.Integer(
        allow_none=True,
        required=True,
        metadata={"description": "Your entry's seat (a player token); null if you have none."},
    )


class TournamentList(ListEnvelope):
    data = fields.List(fields.Nested(TournamentOut), required=True)


class TournamentQuery(ListQuery):
    status = fields.String(validate=validate.OneOf(TOURNAMENT_STATUSES))
    game = fields.String(validate=validate.OneOf(GAMES))
    kind = fields.String(validate=validate.OneOf(KINDS))
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
