"""Request and response bodies of seamless wallet settings and the wallet call report."""

from __future__ import annotations

from typing import Any, ClassVar

from marshmallow import Schema, fields, validate

from service.api.schemas import ListEnvelope, ListQuery, MoneyOut, StrictInteger, Timestamp
from service.api.webhook_schemas import _url
from service.db.wallet_models import CREDIT_STATES, DEBIT_STATES
from service.usecases.seamless import DEFAULT_TIMEOUT_MS, MODES

_STATES = sorted(set(DEBIT_STATES) | set(CREDIT_STATES))


class WalletSettingsIn(Schema):
    """An operator's wallet mode for one currency; a seamless wallet needs its URL (the
    rule between the fields is stated in ``json_schema``)."""

    json_schema: ClassVar[dict[str, Any]] = {
        "description": "`seamless` needs the `url` of the operator's wallet (a string); "
        "`transfer` may leave it out or null.",
        "if": {"properties": {"mode": {"const": "seamless"}}, "required": ["mode"]},
        "then": {"required": ["url"], "properties": {"url": {"type": "string"}}},
    }

    mode = fields.String(
        required=True,
        validate=validate.OneOf(MODES),
        metadata={
            "description": "`transfer`: players' money is deposited here first. `seamless`: "
            "it stays in the operator's wallet, which we call to debit a stake, buy-in or "
            "top-up and to credit a payout, release or refund (the contract is "
            "docs/seamless-wallet.md). Changing the mode waits until no money of the "
            "currency is held here and no wallet call is unfinished (409 conflict)."
        },
    )
    url = _url(
        allow_none=True,
        load_default=None,
    )
    timeout_ms = StrictInteger(
        load_default=DEFAULT_TIMEOUT_MS,
        minimum=100,
        maximum=30000,
        metadata={
            "description": "How long a wallet call may take before its answer counts "
            "as ambiguous (ms)."
        },
    )


class WalletSettingsOut(Schema):
    object = fields.Constant("wallet_settings")
    currency = fields.String(required=True)
    mode = fields.String(required=True, metadata={"enum": list(MODES)})
    url = fields.String(allow_none=True, required=True)
    timeout_ms = fields.Integer(required=True)
    secret = fields.String(
        metadata={
            "description": "The secret wallet calls are signed with (whsec_..., the "
            "Gin-Signature header as for webhooks): only in the answer that first makes the "
            "currency seamless and in the answer to a rotation."
        }
    )
    previous_secret_expires_at = Timestamp(
        allow_none=True,
        required=True,
        metadata={"description": "After a rotation: until when the old secret also signs."},
    )
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class WalletSettingsList(ListEnvelope):
    data = fields.List(fields.Nested(WalletSettingsOut), required=True)


class WalletCallQuery(ListQuery):
    date = fields.String(
        validate=validate.Regexp(r"^\d{4}-\d{2}-\d{2}$", error="A day is written YYYY-MM-DD."),
        metadata={
            "description": "Only the calls made on this UTC day: the day's reconciliation report.",
            "example": "2026-12-04",
        },
    )
    state = fields.String(validate=validate.OneOf(_STATES))
    escalated = fields.Boolean(
        truthy={"true"},
        falsy={"false"},
        metadata={
            "description": "true: only the calls raised to operations (past the retry "
            "ceiling, still retried)."
        },
    )
    player_id = fields.String()


class WalletCallOut(Schema):
    id = fields.String(
        required=True,
        metadata={
            "description": "Our transaction id, sent to the operator's wallet on every try.",
            "example": "wtx_01JDX...",
        },
    )
    object = fields.Constant("wallet_call")
    kind = fields.String(required=True, metadata={"enum": ["debit", "credit"]})
    reason = fields.String(required=True)
    player_id = fields.String(required=True)
    amount = fields.Nested(
        MoneyOut,
        required=True,
        metadata={"description": "What the call moves (0: a credit that only closes the round)."},
    )
    round_id = fields.String(required=True)
    table_id = fields.String(required=True)
    match_id = fields.String(allow_none=True, required=True)
    state = fields.String(required=True, metadata={"enum": _STATES})
    rollback_id = fields.String(
        allow_none=True,
        required=True,
        metadata={
            "description": "A debit being or having been rolled back: the rollback's "
            "own transaction id."
        },
    )
    references = fields.List(fields.String(), required=True)
    declined = fields.String(allow_none=True, required=True)
    ledger_transaction_id = fields.String(allow_none=True, required=True)
    attempts = fields.Integer(required=True)
    next_attempt_at = Timestamp(allow_none=True, required=True)
    last_error = fields.String(allow_none=True, required=True)
    escalated_at = Timestamp(allow_none=True, required=True)
    created_at = Timestamp(required=True)
    completed_at = Timestamp(allow_none=True, required=True)


class WalletCallList(ListEnvelope):
    data = fields.List(fields.Nested(WalletCallOut), required=True)
