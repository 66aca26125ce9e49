"""Marshmallow schemas for tables, the lobby, matches, actions and hand histories."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar

from marshmallow import (
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from service.api.schemas import (
    MAX_INTEGER,
    ListEnvelope,
    ListQuery,
    MinorUnits,
    MoneyOut,
    StrictBoolean,
    StrictInteger,
    Timestamp,
    display_currency_query,
)
from service.games import registry
from service.games.common.settings import FeeBase, Stakes
from service.games.protocol import GameSpec, OptionField
from service.ledger.money import EXPONENTS, MAX_AMOUNT, PRACTICE_CURRENCY
from service.usecases import play, tables

CARD = fields.String(metadata={"example": "TD", "description": "Card code (docs/engine.md 0.2)."})


def _card_list(**kwargs: Any) -> fields.List:
    return fields.List(fields.String(metadata={"example": "TD"}), **kwargs)


class FeeIn(Schema):
    bps = StrictInteger(load_default=0, maximum=10_000)
    base = fields.String(
        validate=validate.OneOf([b.value for b in FeeBase]),
        metadata={
            "description": "What the fee is a share of. Left out: `POT` at First To Knock and "
            "Match Play, `WINNINGS` at every other format (the only base they take)."
        },
    )
    minimum = MinorUnits(load_default=0)
    maximum = MinorUnits(
        load_default=None,
        allow_none=True,
        metadata={"description": "Not below `minimum`; null: no maximum."},
    )


class ClockIn(Schema):
    turn_seconds = StrictInteger(load_default=30, minimum=1, maximum=3600)
    bank_seconds = StrictInteger(load_default=60, maximum=86_400)
    on_timeout = fields.String(
        load_default="AUTO_PLAY", validate=validate.OneOf(["AUTO_PLAY", "FORFEIT"])
    )
    max_timeouts = StrictInteger(load_default=3, minimum=1, maximum=100)
    fill_timeout_seconds = StrictInteger(load_default=300, minimum=1, maximum=7 * 86_400)


def _rule_option(
    kind: Any,
    option: OptionField,
    description: str,
    not_offered: tuple[str, ...],
    **kwargs: Any,
) -> fields.Field:
    metadata: dict[str, Any] = {"description": description}
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return fields.String(
            validate=validate.OneOf([m.value for m in kind]), metadata=metadata, **kwargs
        )
    if kind is bool:
        if option.name in not_offered:  # the rules refuse it (GameSpec.not_offered): false only
            metadata = {"description": f"{description} Not offered: false only.", "enum": [False]}
        return StrictBoolean(metadata=metadata, **kwargs)
    return StrictInteger(minimum=option.low, maximum=option.high, metadata=metadata, **kwargs)


def _json_literal(value: Any) -> str:
    if isinstance(value, StrEnum):
        return value.value
    return str(value).lower() if isinstance(value, bool) else str(value)


class _RuleOptions(Schema):
    @post_load
    def _as_sent(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        """The options under the keys they were sent with (the engine reads both)."""
        return {self.fields[key].data_key or key: value for key, value in data.items()}


def _options_schema(game: GameSpec[Any]) -> type[Schema]:
    """The schema of the options a table carries under ``game.options_key``, named after the
    key (``RulesetIn``): a field per option the request may send (``game.option_fields``),
    under its bare name and each of its other keys, its type and default those of
    ``game.options``."""
    options: Any = game.options
    kinds = typing.get_type_hints(options)
    defaults = options()
    out: dict[str, fields.Field] = {}
    for option in game.option_fields:
        if not option.requested:
            continue
        kind = kinds[option.name]
        shown = _json_literal(getattr(defaults, option.name))
        description = f"`{option.key}`, default {shown}."
        out[option.name] = _rule_option(kind, option, description, game.not_offered)
        for key in option.other_keys:
            # marshmallow reads a dot in a field's name as nesting: the key is a data_key.
            out[key.replace(".", "__")] = _rule_option(
                kind, option, f"Same as `{option.name}`.", game.not_offered, data_key=key
            )
    name = "".join(word.title() for word in game.options_key.split("_"))
    return _RuleOptions.from_dict(out, name=f"{name}In")


#: The schema of each game's options, by the key a table carries them under (``RulesetIn``
#: under ``ruleset``), in the registry's order.
OPTIONS_IN: dict[str, type[Schema]] = {
    key: _options_schema(game) for key, game in registry.OPTIONS.items()
}


def _options_fields() -> dict[str, fields.Field]:
    """A table request's field per options key, its schema's, described by the game that owns
    the key."""
    return {
        key: fields.Nested(
            schema,
            load_default=dict,
            metadata={"description": registry.OPTIONS[key].options_description},
        )
        for key, schema in OPTIONS_IN.items()
    }


#: The formats a table can be opened in: every game's.
OPEN_FORMATS = [f.value for f in registry.FORMATS]
#: Money Play and classic take a fee, if any, from the transfer (docs/engine.md 6.1.3).
_FEE_FROM_WINNINGS = {
    "anyOf": [
        {"properties": {"base": {"const": FeeBase.WINNINGS.value}}},
        {"properties": {"bps": {"const": 0}, "minimum": {"const": 0}}},
    ]
}
_BUYINS = {
    "stake_per_point": {"minimum": 1},
    "min_buyin": {"minimum": 1},
    "max_buyin": {"minimum": 1},
    "fee": _FEE_FROM_WINNINGS,
}


def _stakes_branch(stakes: Stakes) -> dict[str, Any]:
    """What a table of the ``stakes``' formats needs: the fixed stake, or a stake per point,
    a buy-in range and a fee from the winnings (and what else the format states)."""
    named = [f.value for f in stakes.formats]
    format = {"const": named[0]} if len(named) == 1 else {"enum": named}
    if stakes.fixed:
        return {
            "title": stakes.title,
            "properties": {"format": format, "stake": {"minimum": 1}},
            "required": ["stake"],
        }
    return {
        "title": stakes.title,
        "properties": {"format": format, **_BUYINS, **stakes.schema},
        "required": ["stake_per_point", "min_buyin", "max_buyin"],
    }


def _listed(names: list[str]) -> str:
    """``a``, ``a` and `b``, ``a`, `b` and `c``: names in markdown code, listed."""
    shown = [f"`{name}`" for name in names]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _one_of(names: list[str]) -> dict[str, Any]:
    return {"const": names[0]} if len(names) == 1 else {"enum": names}


_FIXED = [f.value for f in registry.FIXED_STAKE_FORMATS]
_BUYIN_FORMATS = [f for f in OPEN_FORMATS if f not in _FIXED]
_CONTINUOUS = [f.value for f in registry.CONTINUOUS_FORMATS]


class SpectatorDelayIn(Schema):
    """How late spectators see a public table's match (docs/games.md, Spectator delay)."""

    json_schema: ClassVar[dict[str, Any]] = {
        "description": "Either `moves` or `seconds`, not both. The players see their match "
        "at once; a spectator (the operator, or a player not seated at the table) sees it "
        "as it was that many changes or seconds ago, never before its first deal, and as "
        "it is once it has ended.",
        "minProperties": 1,
        "maxProperties": 1,
    }

    moves = StrictInteger(
        minimum=1,
        maximum=play.MAX_DELAY_MOVES,
        metadata={"description": "Show the version this many changes back."},
    )
    seconds = StrictInteger(
        minimum=1,
        maximum=play.MAX_DELAY_SECONDS,
        metadata={"description": "Show the last version committed at least this long ago."},
    )


def _game_branch(game: GameSpec[Any]) -> dict[str, Any]:
    """What a table of ``game`` (not the default one) needs: the game named, one of its
    formats, and its seat count (required where it has more than one)."""
    fixed = len(game.seat_counts) == 1
    return {
        "title": f"{game.kind.value}: {', '.join(f.value for f in game.formats)}",
        "properties": {
            "game": {"const": game.kind.value},
            "format": {"enum": [f.value for f in game.formats if f.value in OPEN_FORMATS]},
            **({"seat_count": {"const": game.seat_counts[0]}} if fixed else {}),
        },
        "required": ["game"] if fixed else ["game", "seat_count"],
    }


class TableIn(Schema):
    """A new table. The rules between its fields (checked by
    :class:`~service.games.common.settings.MatchSettings` and the table use case) are stated for the
    contract in ``json_schema``."""

    json_schema: ClassVar[dict[str, Any]] = {
        "description": "What a table needs follows from its `game` and `format` (the "
        "`allOf` below; docs/games.md gives a body that works for each). "
        f"{_listed(_FIXED)} need `stake` (at least 1), each player's fixed stake. "
        f"{_listed(_BUYIN_FORMATS)} need `stake_per_point` (at least 1), `min_buyin` (at "
        "least 1) and `max_buyin` (not below `min_buyin`), and take a fee, if any, from "
        "`WINNINGS` (their default `fee.base`); each player then sits down with a `buyin` in "
        "that range. The `game` fixes its formats and seats: "
        f"{'; '.join(game.description for game in registry.GAMES.values())}. "
        f"`min_balance` is for {_listed(_CONTINUOUS)} tables only, and there the minimum "
        "balance (by default ten times `stake_per_point`) may not be above "
        f"`max_buyin`. Practice tables play for `{PRACTICE_CURRENCY}` only, and only they do. "
        "`spectator_delay` is for public tables only. "
        "A refused body is answered once: a 422 whose `errors` name every field at fault as "
        "the body spells it, a nested one by its dotted path (`fee.base`).",
        "allOf": [
            {
                "oneOf": [
                    _stakes_branch(stakes)
                    for game in registry.GAMES.values()
                    for stakes in game.stakes
                ]
            },
            {
                "oneOf": [
                    _game_branch(game)
                    for game in registry.GAMES.values()
                    if game is not registry.DEFAULT
                ]
                + [
                    {
                        "title": f"{registry.DEFAULT.kind.value} (the default): two players",
                        "properties": {
                            "game": {"const": registry.DEFAULT.kind.value},
                            "format": {"enum": [f.value for f in registry.DEFAULT.formats]},
                            "seat_count": {"const": registry.DEFAULT.seat_counts[0]},
                        },
                    }
                ]
            },
            *(rule for game in registry.GAMES.values() for rule in game.table_rules),
            {
                "anyOf": [
                    {
                        "title": "A continuous table: a minimum balance",
                        "properties": {"format": _one_of(_CONTINUOUS)},
                    },
                    {"title": "Any other table: none", "properties": {"min_balance": {"const": 0}}},
                ]
            },
            {
                "anyOf": [
                    {
                        "title": "A public table: spectators may be shown its match late",
                        "properties": {"private": {"const": False}},
                    },
                    {
                        "title": "A private table: no spectator delay",
                        "properties": {"spectator_delay": {"const": None}},
                    },
                ]
            },
            {
                "anyOf": [
                    {
                        "title": "Practice: play money",
                        "properties": {
                            "practice": {"const": True},
                            "currency": {"const": PRACTICE_CURRENCY},
                        },
                        "required": ["practice"],
                    },
                    {
                        "title": "Real money",
                        "properties": {
                            "practice": {"const": False},
                            "currency": {"not": {"const": PRACTICE_CURRENCY}},
                        },
                    },
                ]
            },
        ],
    }

    #: The fields that are the table's settings
    #: (:class:`~service.games.common.settings.MatchSettings`).
    SETTINGS: ClassVar[frozenset[str]] = frozenset(
        {
            "game",
            "seat_count",
            "format",
            "stake",
            "stake_per_point",
            "min_buyin",
            "max_buyin",
            "target",
            "min_balance",
            "fee",
            "ftk_winner_rule",
            "ftk_max_dead_hands",
            "line_bonus",
            "cap_mode",
            "clock",
            *registry.OPTIONS,
        }
    )

    @validates_schema(skip_on_field_errors=False, pass_original=True)
    def _settings(self, data: dict[str, Any], original_data: Any, **_: Any) -> None:
        """The rules between the fields, in the same answer as the fields' own errors: every
        problem the settings have (:func:`~service.usecases.tables.settings_problems`) but
        those of a field refused already, or when the game or format is not known."""
        if not isinstance(original_data, Mapping):
            return
        refused = {key for key in original_data if key not in data}
        if refused & {"game", "format"} or "format" not in data:
            return
        problems = tables.settings_problems(
            {key: data[key] for key in data.keys() & self.SETTINGS},
            practice=data.get("practice", False),
            currency=data.get("currency"),
        )[1]
        messages: dict[str, list[str]] = {}
        for problem in problems:
            if problem.field.split(".")[0] not in refused:
                messages.setdefault(problem.field, []).append(problem.message)
        if messages:
            raise ValidationError(messages)

    name = fields.String(load_default="", validate=validate.Length(max=100))
    game = fields.String(
        load_default=registry.DEFAULT.kind.value,
        validate=validate.OneOf([g.value for g in registry.GAMES]),
    )
    seat_count = StrictInteger(
        minimum=min(game.seat_counts[0] for game in registry.GAMES.values()),
        maximum=max(game.seat_counts[-1] for game in registry.GAMES.values()),
        metadata={
            "description": "How many players the match needs: 2, 3 or 4 for the Gin games "
            "(may be left out), 2 to `rummy.max_players` for Rummy (required)."
        },
    )
    format = fields.String(required=True, validate=validate.OneOf(OPEN_FORMATS))
    currency = fields.String(
        required=True,
        validate=validate.OneOf(sorted(EXPONENTS), error="Must be a supported currency code."),
    )
    stake = MinorUnits(
        load_default=0,
        metadata={"description": "Fixed stake, at least 1: First To Knock, Match Play."},
    )
    stake_per_point = MinorUnits(
        load_default=0,
        metadata={"description": "At least 1: every format but First To Knock and Match Play."},
    )
    min_buyin = MinorUnits(
        load_default=0,
        metadata={"description": "At least 1: every format but First To Knock and Match Play."},
    )
    max_buyin = MinorUnits(
        load_default=0,
        metadata={
            "description": "Not below `min_buyin`: every format but First To Knock and Match Play."
        },
    )
    target = StrictInteger(load_default=100, minimum=1, maximum=10_000)
    min_balance = MinorUnits(
        load_default=0,
        metadata={
            "description": "`rummy_per_hand` only (`rummy.min_balance`): a player whose table "
            "balance is below it sits out until it tops up; 0 (the default) means ten times "
            "`stake_per_point`."
        },
    )
    fee = fields.Nested(FeeIn, load_default=dict)
    ftk_winner_rule = fields.String(
        load_default="FIRST_KNOCKER", validate=validate.OneOf(["FIRST_KNOCKER", "HAND_WINNER"])
    )
    ftk_max_dead_hands = StrictInteger(load_default=0, maximum=100)
    line_bonus = StrictInteger(load_default=25, maximum=10_000)
    cap_mode = fields.String(
        load_default="MIN_BOTH", validate=validate.OneOf(["MIN_BOTH", "LOSER_ONLY"])
    )
    # Each game's options, here among the settings: at class scope, locals() is the namespace
    # the class is made from.
    locals().update(_options_fields())
    clock = fields.Nested(ClockIn, load_default=dict)
    practice = StrictBoolean(load_default=False, metadata={"description": "Play money (XPM) only."})
    private = StrictBoolean(
        load_default=False, metadata={"description": "Joined by invite code only."}
    )
    spectator_delay = fields.Nested(
        SpectatorDelayIn,
        allow_none=True,
        load_default=None,
        metadata={
            "description": 'Public tables: `{"moves": N}` or `{"seconds": S}` shows '
            "spectators the match that late; null (the default): live."
        },
    )

    @validates_schema(skip_on_field_errors=False, pass_original=True)
    def _spectator_delay(self, data: dict[str, Any], original_data: Any, **_: Any) -> None:
        """The delay's rules (:func:`~service.usecases.tables.spectator_delay_problems`), in
        the same answer as the fields' own errors, unless the delay itself was refused."""
        if not isinstance(original_data, Mapping) or data.get("spectator_delay") is None:
            return
        problems = tables.spectator_delay_problems(
            data["spectator_delay"], private=data.get("private", False)
        )
        messages: dict[str, list[str]] = {}
        for problem in problems:
            messages.setdefault(problem.field, []).append(problem.message)
        if messages:
            raise ValidationError(messages)


class SeatOut(Schema):
    seat = fields.Integer(required=True)
    player_id = fields.String(required=True)
    escrow = fields.Nested(
        MoneyOut,
        required=True,
        metadata={"description": "What the seat holds: a `rummy_per_hand` seat's table balance."},
    )
    ready = fields.Boolean(
        required=True,
        metadata={
            "description": "`rummy_per_hand`: whether the player is dealt into the next hand "
            "(false: it sits out, by its own choice or while it is self-excluded; a player "
            "who forfeits a hand leaves the table once that hand is settled); always true "
            "elsewhere."
        },
    )
    joined_at = Timestamp(required=True)


class TopUpIn(Schema):
    amount = MinorUnits(
        required=True,
        minimum=1,
        metadata={
            "description": "Moved from the wallet to the table balance; the balance may not "
            "pass `max_buyin`."
        },
    )


class ReadyIn(Schema):
    ready = StrictBoolean(
        required=True,
        metadata={"description": "true: deal me into the next hands; false: sit them out."},
    )


class TableOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("table")
    name = fields.String(required=True)
    game = fields.String(required=True, metadata={"enum": [g.value for g in registry.GAMES]})
    seat_count = fields.Integer(required=True)
    match_id = fields.String(required=True)
    format = fields.String(required=True)
    currency = fields.String(required=True)
    practice = fields.Boolean(required=True)
    private = fields.Boolean(required=True)
    spectator_delay = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        allow_none=True,
        metadata={
            "description": 'How late spectators see the match: `{"moves": N}` or '
            '`{"seconds": S}`; null: live (docs/games.md, Spectator delay).',
            "example": {"moves": 4},
        },
    )
    invite_code = fields.String(
        allow_none=True, metadata={"description": "Private tables, operator only."}
    )
    status = fields.String(
        required=True, metadata={"enum": ["open", "playing", "finished", "cancelled"]}
    )
    stake = fields.Nested(MoneyOut, allow_none=True)
    stake_per_point = fields.Nested(MoneyOut, allow_none=True)
    min_buyin = fields.Nested(MoneyOut, allow_none=True)
    max_buyin = fields.Nested(MoneyOut, allow_none=True)
    target = fields.Integer(allow_none=True)
    seats = fields.List(fields.Nested(SeatOut), required=True)
    free_seats = fields.Integer(required=True)
    settings = fields.Dict(required=True, metadata={"description": "Every table setting."})
    fill_deadline = Timestamp(required=True)
    created_at = Timestamp(required=True)


class TableList(ListEnvelope):
    data = fields.List(fields.Nested(TableOut), required=True)


class LobbyQuery(ListQuery):
    game = fields.String(validate=validate.OneOf([g.value for g in registry.GAMES]))
    format = fields.String(validate=validate.OneOf(OPEN_FORMATS))
    currency = fields.String(validate=validate.OneOf(sorted(EXPONENTS)))
    min_stake = StrictInteger(maximum=MAX_AMOUNT, from_text=True)
    max_stake = StrictInteger(maximum=MAX_AMOUNT, from_text=True)
    free_seats = StrictInteger(minimum=1, maximum=6, from_text=True)
    display_currency = display_currency_query()
    include_closed = fields.Boolean(
        load_default=False, metadata={"description": "Operator only: every table."}
    )


class JoinIn(Schema):
    buyin = MinorUnits(
        minimum=1,
        metadata={
            "description": "Required at a table with a buy-in range (every format but First To "
            "Knock and Match Play): between its `min_buyin` and `max_buyin`. Left out elsewhere."
        },
    )
    invite_code = fields.String(validate=validate.Length(max=64))
    client_seed = fields.String(
        validate=validate.Length(min=1, max=64),
        metadata={"description": "Your fairness seed (docs/engine.md 10.1)."},
    )


class LogEntryOut(Schema):
    seq = fields.Integer(required=True)
    seat = fields.Integer(required=True)
    action = fields.String(required=True)
    card = CARD
    taken = CARD
    melds = fields.List(_card_list())
    at = fields.String()
    automatic = fields.Boolean()
    reason = fields.String(
        metadata={"description": "FORFEIT only: resign or timeout.", "enum": ["resign", "timeout"]}
    )


class LegalActionOut(Schema):
    """A legal action as the body to send to ``POST /v1/matches/{id}/actions``, but for
    ``expected_version`` (``RESIGN``, legal while the match is live, is never listed)."""

    action = fields.String(
        required=True,
        metadata={
            "example": "DISCARD",
            "enum": [
                "TAKE_UPCARD",
                "PASS",
                "DRAW_STOCK",
                "DRAW_DISCARD",
                "DISCARD",
                "KNOCK",
                "BIG_GIN",
                "TAKE_DISCARD_AND_KNOCK",
                "DECLINE",
            ],
        },
    )
    card = fields.String(
        metadata={"example": "TD", "description": "Only for the actions that name a card."}
    )


class HandViewOut(Schema):
    phase = fields.String(required=True)
    dealer = fields.Integer(required=True)
    first_player = fields.Integer(required=True)
    to_act = fields.Integer(allow_none=True, required=True)
    upcard = CARD
    knock_limit = fields.Integer(required=True)
    multiplier = fields.Integer(required=True)
    stock_count = fields.Integer(required=True)
    discard_pile = _card_list(required=True)
    card_counts = fields.List(fields.Integer(), required=True)
    taken_from_discard = fields.String(allow_none=True)
    log = fields.List(fields.Nested(LogEntryOut), required=True)
    seat = fields.Integer()
    hand = _card_list(metadata={"description": "Your cards (players only)."})
    deadwood = fields.Integer(
        metadata={
            "description": "Players only: the deadwood count of the best arrangement of your cards."
        }
    )
    legal_actions = fields.List(
        fields.Nested(LegalActionOut),
        metadata={
            "description": "Players only: your legal actions now, each the request body "
            "of POST .../actions but for expected_version (add it, and "
            "melds for a MANUAL knock); none once the hand or the match "
            "is over."
        },
    )
    outcome = fields.Dict(metadata={"description": "Once the hand has ended: the showdown."})
    hands = fields.List(_card_list(), metadata={"description": "Both hands, once ended."})


class SeatView(Schema):
    seat = fields.Integer(
        required=True,
        metadata={
            "description": "The seat every other field of the match names the player by: the "
            "table's seat (at a `rummy_per_hand` table too, where a hand's `seats` are its "
            "players dealt in, in table order; its lists of one entry per player follow "
            "the order of `seats`)."
        },
    )
    table_seat = fields.Integer(
        metadata={
            "description": "`rummy_per_hand` only: the player's seat at the table (`seat` "
            "in `GET /v1/tables/{id}`), the same as `seat`."
        }
    )
    player_id = fields.String(required=True)
    display_name = fields.String(required=True)
    escrow = fields.Nested(MoneyOut, required=True)


class ScoresOut(Schema):
    hand_points = fields.List(fields.Integer(), required=True)
    boxes = fields.List(fields.Integer(), required=True)
    target = fields.Integer(allow_none=True)
    hands_played = fields.Integer(required=True)
    timeouts = fields.List(fields.Integer(), required=True)
    bank_ms = fields.List(fields.Integer(), required=True)


class HandRecordOut(Schema):
    number = fields.Integer(required=True)
    dealer = fields.Integer(required=True)
    kind = fields.String(required=True)
    winner = fields.Integer(allow_none=True)
    points = fields.Integer(required=True)
    knocker = fields.Integer(allow_none=True)


class ResultOut(Schema):
    winner = fields.Integer(allow_none=True)
    winners = fields.List(
        fields.Integer(), metadata={"description": "More than two seats: every winner."}
    )
    forfeiter = fields.Integer(allow_none=True)
    forfeiters = fields.List(
        fields.Integer(), metadata={"description": "More than two seats: every forfeiter."}
    )
    forfeit_reason = fields.String(allow_none=True)
    void = fields.Boolean(required=True)


class MatchSettlementOut(Schema):
    status = fields.String(required=True, metadata={"enum": ["completed"]})
    settled_at = fields.String(
        required=True, metadata={"description": "When the settlement was written (RFC 3339)."}
    )


class MatchOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("match")
    table_id = fields.String(required=True)
    status = fields.String(
        required=True, metadata={"enum": ["waiting", "playing", "finished", "void", "cancelled"]}
    )
    version = fields.Integer(
        required=True,
        metadata={
            "description": "Grows with every change. A spectator of a table with a "
            "`spectator_delay` is shown an earlier version, and the whole view is that "
            "version's (docs/games.md, Spectator delay); `wait_for_version` waits for the "
            "version it may see."
        },
    )
    game = fields.String(
        metadata={
            "description": "Left out for two-player Gin.",
            "enum": [g.value for g in registry.GAMES],
        }
    )
    format = fields.String(required=True)
    currency = fields.String(required=True)
    play = fields.Dict(
        metadata={
            "description": "Games other than two-player Gin: the game's own view (docs/rummy.md "
            "11.6.5): every table's public part, the caller's own hand and legal actions, "
            "the hands that ended, the standings, who acts and the turn's deadline. Never "
            "another player's cards, never a stock card. Every player it names, inside a "
            "hand's own view too (`to_act`, `dealer`, `first_player`, `seat`, a log entry's "
            "`seat`, `winner`, `knocker`, `melded_by`), is a seat of the match "
            "(`seats[].seat`); each hand's `seats` orders its lists of one entry per player, "
            "and `position` is the reader's place there (docs/games.md, Playing)."
        }
    )
    you = fields.Integer(
        allow_none=True,
        metadata={"description": "Your seat (`seats[].seat`); null if you only watch."},
    )
    seats = fields.List(fields.Nested(SeatView), required=True)
    started_at = Timestamp(allow_none=True)
    finished_at = Timestamp(allow_none=True)
    deadline = fields.String(
        allow_none=True, metadata={"description": "When the player to act runs out of time."}
    )
    hand_number = fields.Integer(allow_none=True)
    dealer = fields.Integer()
    commitment = fields.String(
        allow_none=True, metadata={"description": "SHA-256 of the hand's server seed."}
    )
    hand = fields.Nested(HandViewOut, allow_none=True)
    previous_hand = fields.Nested(HandRecordOut)
    scores = fields.Nested(ScoresOut, allow_none=True)
    result = fields.Nested(ResultOut, allow_none=True)
    settlement = fields.Nested(
        MatchSettlementOut,
        allow_none=True,
        metadata={
            "description": "Null until the worker has settled the match (a tournament's match "
            "never is: its tournament pays); then that its settlement is `completed`, and "
            "when. Settling bumps the version, so a long-poll or stream waiting past the end "
            "wakes. The statement: `GET /v1/matches/{match_id}/settlement` (the operator and "
            "the match's players)."
        },
    )


class MatchQuery(Schema):
    wait_for_version = StrictInteger(
        from_text=True, metadata={"description": "Long-poll: answer once the version exceeds this."}
    )
    timeout = StrictInteger(load_default=25, maximum=30, from_text=True)
    display_currency = display_currency_query()


class EventsQuery(Schema):
    after_version = StrictInteger(
        minimum=0,
        maximum=MAX_INTEGER,
        from_text=True,
        metadata={
            "description": "Resume after this version (as `Last-Event-ID` does): the first "
            "event is the current state only if it has moved past it."
        },
    )


#: Every game's action kinds: two-player and multi-player Gin, and Rummy (5.2-5.4).
ACTIONS = list(registry.ACTIONS)


class ActionIn(Schema):
    action = fields.String(required=True, validate=validate.OneOf(ACTIONS))
    card = fields.String(validate=validate.Length(equal=2), metadata={"example": "TD"})
    melds = fields.List(
        fields.List(fields.String(validate=validate.Length(equal=2))),
        metadata={"description": "MANUAL knocker arrangement only."},
    )
    cards = fields.List(
        fields.String(validate=validate.Length(equal=2)),
        validate=validate.Length(min=1, max=13),
        metadata={"description": "Rummy `MELD` and `LAY_OFF`: the cards laid down."},
    )
    meld = StrictInteger(
        minimum=0,
        maximum=51,
        metadata={"description": "Rummy `LAY_OFF`: the table meld's index in the view."},
    )
    expected_version = StrictInteger(
        metadata={"description": "The version the action was decided on (or If-Match)."},
    )

    @validates_schema
    def _card_when_needed(self, data: dict[str, Any], **_: Any) -> None:
        needs = data["action"] in ("DISCARD", "KNOCK", "GIN", "TAKE_DISCARD_AND_KNOCK")
        if needs and "card" not in data:
            raise ValidationError(f"{data['action']} needs a card.", field_name="card")
        if not needs and "card" in data:
            raise ValidationError(f"{data['action']} takes no card.", field_name="card")
        lays = data["action"] in ("MELD", "LAY_OFF")
        if lays and "cards" not in data:
            raise ValidationError(f"{data['action']} needs its cards.", field_name="cards")
        if not lays and "cards" in data:
            raise ValidationError(f"{data['action']} takes no cards.", field_name="cards")
        if (data["action"] == "LAY_OFF") != ("meld" in data):
            raise ValidationError("LAY_OFF, and only it, names a meld.", field_name="meld")


class FairnessOut(Schema):
    algorithm = fields.String(required=True)
    commitment = fields.String(required=True)
    server_seed = fields.String(required=True)
    client_seed_1 = fields.String(required=True)
    client_seed_2 = fields.String(required=True)
    client_seeds = fields.List(
        fields.String(),
        metadata={"description": "Every dealt-in seat's client seed, ascending (11.6.4)."},
    )
    seats = fields.List(
        fields.Integer(),
        metadata={
            "description": "The seats dealt in, ascending: the table's seats (a "
            "`rummy_per_hand` hand's too); `history.seats`, where the history has them, "
            "are the same, and a seat's index there is its place in the hand (the order "
            "of the history's lists of one entry per player)."
        },
    )
    nonce = fields.Integer(required=True)


class HandHistoryOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("hand")
    match_id = fields.String(required=True)
    number = fields.Integer(required=True)
    started_at = Timestamp(required=True)
    ended_at = Timestamp(required=True)
    fairness = fields.Nested(FairnessOut, required=True)
    verify_url = fields.String(
        required=True,
        metadata={
            "description": "The page that replays this hand step by step and recomputes its "
            "commitment and deck in the browser (`/verify?hand=<id>`, on this service)."
        },
    )
    history = fields.Dict(
        required=True,
        metadata={
            "description": "Deck, every action with actor and time, showdown, score. Every "
            "player it names (`dealer`, each action's `seat`, the outcome's `winner` and "
            "`knocker`, a meld's `melded_by`, a lay-off's `seat`) is a table seat, as in the "
            "hand's view (a `rummy_per_hand` hand's too); at more than two seats its `seats` "
            "are `fairness.seats`, whose order its lists of one entry per player follow."
        },
    )


class SettlementOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("settlement")
    match_id = fields.String(required=True)
    currency = fields.String(required=True)
    ledger_transaction_id = fields.String(required=True)
    created_at = Timestamp(required=True)
    seats = fields.List(
        fields.Integer(),
        required=True,
        metadata={
            "description": "The table seats of the match's players (`seat` in "
            "`GET /v1/tables/{id}`; a `rummy_per_hand` hand's: its players dealt in), whose "
            "order `players`, `escrow`, `payouts`, `net` and the statement's lists by seat "
            "follow. Every player the settlement names is one of them (docs/games.md, "
            "Settlement and audit)."
        },
    )
    winner = fields.Integer(
        allow_none=True, required=True, metadata={"description": "A table seat, or null."}
    )
    void = fields.Boolean(required=True)
    forfeiter = fields.Integer(
        allow_none=True, required=True, metadata={"description": "A table seat, or null."}
    )
    players = fields.List(fields.String(), required=True)
    escrow = fields.List(fields.Nested(MoneyOut), required=True)
    payouts = fields.List(
        fields.Nested(MoneyOut),
        required=True,
        metadata={"description": "What left escrow for each seat."},
    )
    net = fields.List(fields.Nested(MoneyOut), required=True)
    fee = fields.Nested(MoneyOut, required=True)
    statement = fields.Dict(
        required=True,
        metadata={
            "description": "Every figure: hands, hand points, boxes, bonuses, final "
            "totals, margin, stake per point, raw amount, transfer, cap, "
            "fee base, payouts, nets, and each seat's net in a display currency (`display`, "
            "null where none), at the rate of the moment of asking, with that rate and time. "
            "Every player it names is a table seat, as in `seats`: `winner`, `forfeiter`, "
            "`winners`, `forfeiters`, `receivers`, the keys of its figures by seat (`raw_net`, "
            "`fees`), each line's `payer` and `payee` and the line's `text`."
        },
    )


class SettlementList(ListEnvelope):
    data = fields.List(fields.Nested(SettlementOut), required=True)
