"""Marshmallow schemas for every request and response body.

Every integer a request carries, in a body or in the query string, is a :class:`StrictInteger`:
a JSON integer and nothing else (``2.0``, ``1e3``, ``"1"`` and ``true`` are 422s naming the
field), within a stated range that is never wider than :data:`MAX_INTEGER`. Money is
``{"amount": <int minor units>, "currency": "EUR"}``, its amount the same kind of integer, never
rounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, ClassVar

from marshmallow import Schema, ValidationError, fields, validate

from service.clock import rfc3339
from service.errors import ValidationFailed
from service.ledger.money import EXPONENTS, MAX_AMOUNT, MAX_RATE, RATE_DECIMALS, parse_rate
from service.ledger.postings import TransactionKind

#: The largest integer any request field takes: 2^53 - 1, which every JSON client holds
#: exactly (a JavaScript number) and every 64-bit database column stores.
MAX_INTEGER = 2**53 - 1

_DECIMAL_DIGITS = re.compile(r"-?[0-9]{1,20}")
#: Said of every request integer in the contract.
INTEGER_NOTE = "An integer written without a fraction or exponent (`2.0` is refused)."


class StrictInteger(fields.Integer):
    """An integer between ``minimum`` and ``maximum`` (both stated in the contract).

    In a JSON body only a JSON integer is one: a number with a fraction or an exponent (even
    ``2.0``), a string and a boolean are refused. In a query string (``from_text``) the value
    is plain ASCII decimal digits, an optional ``-`` before them.
    """

    default_error_messages = {  # noqa: RUF012 - marshmallow merges this class attribute
        "invalid": "Must be an integer (no fraction or exponent, no string, no boolean).",
    }

    def __init__(
        self,
        *,
        minimum: int = 0,
        maximum: int = MAX_INTEGER,
        from_text: bool = False,
        validate: Callable[[Any], Any] | Iterable[Callable[[Any], Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        if not -MAX_INTEGER <= minimum <= maximum <= MAX_INTEGER:
            raise ValueError(f"bad range {minimum}..{maximum}")
        extra = [] if validate is None else [validate] if callable(validate) else list(validate)
        bounds = _range(minimum, maximum)
        # JSON Schema counts 2.0 as an integer; the contract says in words that it is not one.
        metadata = dict(kwargs.pop("metadata", None) or {})
        said = metadata.get("description")
        metadata["description"] = f"{said} {INTEGER_NOTE}" if said else INTEGER_NOTE
        super().__init__(strict=True, validate=[bounds, *extra], metadata=metadata, **kwargs)
        self.from_text = from_text

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if self.from_text and isinstance(value, str):
            if not _DECIMAL_DIGITS.fullmatch(value):
                raise self.make_error("invalid")
            return int(value)  # at most 20 digits; the range check follows
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.make_error("invalid")
        return int(value)


def _range(minimum: int, maximum: int) -> validate.Range:
    return validate.Range(
        min=minimum, max=maximum, error=f"Must be an integer from {minimum} to {maximum}."
    )


class MinorUnits(StrictInteger):
    """An integer amount in minor units, 0 to :data:`MAX_AMOUNT` unless narrowed."""

    default_error_messages = {  # noqa: RUF012 - marshmallow merges this class attribute
        "invalid": "Must be an integer number of minor units (no fraction or exponent, "
        "no string, no boolean).",
    }

    def __init__(self, *, minimum: int = 0, maximum: int = MAX_AMOUNT, **kwargs: Any) -> None:
        super().__init__(minimum=minimum, maximum=maximum, **kwargs)


class StrictBoolean(fields.Boolean):
    """A JSON ``true`` or ``false`` only (marshmallow's Boolean also takes 0, 1, "yes", ...)."""

    default_error_messages = {  # noqa: RUF012 - marshmallow merges this class attribute
        "invalid": "Must be true or false.",
    }

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


class Currency(fields.String):
    """An ISO 4217 code the service supports, upper case."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            validate=validate.OneOf(
                sorted(EXPONENTS), error="Must be a supported ISO 4217 currency code."
            ),
            metadata={"example": "EUR"},
            **kwargs,
        )


class Timestamp(fields.DateTime):
    """RFC 3339 UTC, ``2026-11-30T21:38:20Z``; input must carry a timezone."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else rfc3339(value)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        parsed = super()._deserialize(value, attr, data, **kwargs)
        if parsed.tzinfo is None:
            raise ValidationError("Must include a timezone, e.g. 2026-12-31T00:00:00Z.")
        return parsed.astimezone(UTC)


class MoneyIn(Schema):
    amount = MinorUnits(required=True, minimum=1)
    currency = Currency(required=True)


class DisplayOut(Schema):
    amount = fields.String(required=True, metadata={"example": "16.26"})
    currency = fields.String(required=True)
    rate = fields.String(required=True, metadata={"example": "1.0837"})
    rate_at = Timestamp(required=True)
    approximate = fields.Boolean(required=True)


class MoneyOut(Schema):
    amount = fields.Integer(required=True)
    currency = fields.String(required=True)
    display = fields.Nested(DisplayOut, metadata={"description": "Display only, never money."})


class FieldErrorOut(Schema):
    field = fields.String(required=True)
    message = fields.String(required=True)


class ProblemSchema(Schema):
    """RFC 9457 problem details."""

    type = fields.String(required=True)
    title = fields.String(required=True)
    status = fields.Integer(required=True)
    detail = fields.String(required=True)
    instance = fields.String()
    code = fields.String(required=True)
    errors = fields.List(fields.Nested(FieldErrorOut))
    rule_code = fields.String(
        metadata={
            "description": "illegal_action only: the rule engine's code, e.g. "
            "KNOCK_LIMIT_EXCEEDED, NOT_YOUR_TURN, DISCARD_PILE_CARD_BARRED."
        }
    )
    wallet_status = fields.String(
        metadata={
            "description": "wallet_declined only: the seamless operator wallet's own word, "
            "e.g. limit_exceeded, player_disabled, wrong_currency."
        }
    )


class ListQuery(Schema):
    limit = StrictInteger(load_default=20, minimum=1, maximum=100, from_text=True)
    starting_after = fields.String()
    ending_before = fields.String()


def display_currency_query() -> fields.String:
    """The ``display_currency`` query parameter: which currency money is also shown in."""
    return fields.String(
        validate=validate.OneOf(
            sorted(EXPONENTS), error="Must be a supported ISO 4217 currency code."
        ),
        metadata={
            "description": "Show amounts also in this currency (`display`, where the operator "
            "set a rate). Left out: the display currency of the player the answer is for (the "
            "wallet's owner; the player calling, at tables and matches; each seat's player, "
            "in a settlement), docs/engine.md 6.5.",
            "example": "USD",
        },
    )


class DisplayQuery(Schema):
    display_currency = display_currency_query()


class EntriesQuery(ListQuery):
    currency = Currency()
    display_currency = display_currency_query()


class ListEnvelope(Schema):
    object = fields.Constant("list")
    has_more = fields.Boolean(required=True)
    next_cursor = fields.String(allow_none=True, required=True)


# Operators and API keys


class OperatorOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("operator")
    name = fields.String(required=True)
    created_at = Timestamp(required=True)


class ApiKeyIn(Schema):
    label = fields.String(load_default="", validate=validate.Length(max=255))


class ApiKeyOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("api_key")
    label = fields.String(required=True)
    prefix = fields.String(
        required=True, metadata={"description": "First characters, to tell keys apart."}
    )
    created_at = Timestamp(required=True)
    revoked_at = Timestamp(allow_none=True)
    secret = fields.String(
        metadata={"description": "The key itself: only in the creation response."}
    )


class ApiKeyList(ListEnvelope):
    data = fields.List(fields.Nested(ApiKeyOut), required=True)


# Players


class PlayerIn(Schema):
    external_id = fields.String(required=True, validate=validate.Length(min=1, max=255))
    display_name = fields.String(required=True, validate=validate.Length(min=1, max=255))
    display_currency = Currency(allow_none=True, load_default=None)


class PlayerPatch(Schema):
    display_name = fields.String(validate=validate.Length(min=1, max=255))
    display_currency = Currency(allow_none=True)


class PlayerOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("player")
    external_id = fields.String(required=True)
    display_name = fields.String(required=True)
    display_currency = fields.String(allow_none=True)
    self_excluded_until = Timestamp(allow_none=True)
    created_at = Timestamp(required=True)


class PlayerList(ListEnvelope):
    data = fields.List(fields.Nested(PlayerOut), required=True)


class TokenIn(Schema):
    ttl_seconds = StrictInteger(
        minimum=1,
        maximum=3600,
        metadata={"description": "Defaults to the service's PLAYER_TOKEN_TTL_SECONDS."},
    )


class TokenOut(Schema):
    object = fields.Constant("player_token")
    token = fields.String(required=True)
    player_id = fields.String(required=True)
    expires_at = Timestamp(required=True)


class SelfExclusionIn(Schema):
    until = Timestamp(
        required=True,
        metadata={
            "description": "The end of the exclusion, in the future. Kept to the whole second "
            "(a fraction of a second is dropped), as it is shown: sending back the shown "
            "value is never a shortening."
        },
    )


# Wallets and the ledger


class WalletOut(Schema):
    object = fields.Constant("wallet")
    player_id = fields.String(required=True)
    currency = fields.String(required=True)
    available = fields.Nested(MoneyOut, required=True)
    held = fields.Nested(MoneyOut, required=True)
    balance = fields.Nested(MoneyOut, required=True, metadata={"description": "available + held"})
    operator_balance = fields.Nested(
        MoneyOut,
        allow_none=True,
        metadata={
            "description": "Seamless operators only (GET of one wallet): the balance the "
            "operator's own wallet reports for the player, for display only; null when its "
            "wallet did not answer. The money here is `held`: a seamless player's stakes "
            "while they are on a table."
        },
    )


class WalletList(ListEnvelope):
    data = fields.List(fields.Nested(WalletOut), required=True)


#: The longest ``external_reference`` a deposit or withdrawal takes.
REFERENCE_LENGTH = 255


class MovementIn(Schema):
    amount = fields.Nested(MoneyIn, required=True)
    external_reference = fields.String(
        validate=validate.Length(min=1, max=REFERENCE_LENGTH),
        load_default=None,
        allow_none=True,
        metadata={"description": "The operator's cashier reference."},
    )


class TransactionOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("transaction")
    kind = fields.String(required=True)
    player_id = fields.String(allow_none=True)
    match_id = fields.String(allow_none=True)
    amount = fields.Nested(MoneyOut, required=True)
    external_reference = fields.String(allow_none=True)
    created_at = Timestamp(required=True)
    wallet = fields.Nested(WalletOut)


class EntryOut(Schema):
    id = fields.String(required=True)
    object = fields.Constant("entry")
    kind = fields.String(
        required=True,
        metadata={
            "description": "deposit, withdrawal, hold, release or capture; at a seamless "
            "operator wallet_debit (its wallet paid a stake in) or wallet_credit (paid back "
            "to its wallet)",
            "enum": [k.value for k in TransactionKind],
        },
    )
    account = fields.String(required=True, metadata={"description": "available or escrow"})
    amount = fields.Nested(
        MoneyOut, required=True, metadata={"description": "Signed: negative takes money out."}
    )
    balance_after = fields.Nested(MoneyOut, required=True)
    transaction_id = fields.String(required=True)
    match_id = fields.String(allow_none=True)
    external_reference = fields.String(allow_none=True)
    created_at = Timestamp(required=True)


class EntryList(ListEnvelope):
    data = fields.List(fields.Nested(EntryOut), required=True)


class LimitsIn(Schema):
    daily = fields.Nested(MoneyIn, allow_none=True)
    weekly = fields.Nested(MoneyIn, allow_none=True)
    monthly = fields.Nested(MoneyIn, allow_none=True)


class PendingLimitOut(Schema):
    amount = fields.Nested(MoneyOut, allow_none=True, required=True)
    effective_at = Timestamp(required=True)


class LimitOut(Schema):
    amount = fields.Nested(MoneyOut, allow_none=True, required=True)
    pending = fields.Nested(PendingLimitOut, allow_none=True, required=True)


class LimitsOut(Schema):
    object = fields.Constant("deposit_limits")
    player_id = fields.String(required=True)
    currency = fields.String(required=True)
    daily = fields.Nested(LimitOut, required=True)
    weekly = fields.Nested(LimitOut, required=True)
    monthly = fields.Nested(LimitOut, required=True)


#: A rate's text: up to MAX_RATE, up to RATE_DECIMALS decimals (zero is refused by ``not``).
RATE_PATTERN = (
    rf"^([0-9]{{1,{len(str(MAX_RATE)) - 1}}}(\.[0-9]{{1,{RATE_DECIMALS}}})?"
    rf"|{MAX_RATE}(\.0{{1,{RATE_DECIMALS}}})?)$"
)
RATE_FORMAT = (
    f'Must be a positive decimal string such as "1.0837", at most {MAX_RATE} with at most '
    f"{RATE_DECIMALS} decimals."
)


def _in_bounds(text: str) -> None:
    """The rate rule itself (:func:`service.ledger.money.parse_rate`), zero included, for
    text of the rate's form (other text has its answer from the pattern)."""
    if re.fullmatch(RATE_PATTERN, text) is None:
        return
    try:
        parse_rate(text)
    except ValidationFailed as exc:
        raise ValidationError(exc.detail) from None


class RateIn(Schema):
    json_schema: ClassVar[dict[str, Any]] = {
        "description": "The rate between the two different currencies named in the path."
    }

    rate = fields.String(
        required=True,
        validate=[
            validate.Regexp(RATE_PATTERN, error=RATE_FORMAT),
            _in_bounds,
        ],
        metadata={
            "not": {"pattern": "^[0.]+$"},
            "description": f"A positive decimal (not zero), at most {MAX_RATE} with at most "
            f"{RATE_DECIMALS} decimals (docs/engine.md 6.5).",
            "example": "1.0837",
        },
    )


class RateOut(Schema):
    object = fields.Constant("exchange_rate")
    base = fields.String(required=True)
    quote = fields.String(required=True)
    rate = fields.String(required=True)
    rate_at = Timestamp(required=True)


class RateList(ListEnvelope):
    data = fields.List(fields.Nested(RateOut), required=True)


class HealthOut(Schema):
    status = fields.String(required=True)
    checks = fields.Dict(keys=fields.String(), values=fields.String())
