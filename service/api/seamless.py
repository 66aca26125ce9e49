"""Seamless wallets: an operator's wallet mode per currency (signing secret shown once) and
the report of every call made to its wallet (reconciliation, and what waits on operations).
Operators only."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask_smorest import Blueprint

from service.api.context import db_session, principal, unit
from service.api.problems import documents
from service.api.render import money, page
from service.api.wallet_schemas import (
    WalletCallList,
    WalletCallQuery,
    WalletSettingsIn,
    WalletSettingsList,
    WalletSettingsOut,
)
from service.api.webhook_schemas import RotateSecretIn
from service.api.webhooks import allow_private_networks
from service.clock import utcnow
from service.db.wallet_models import OperatorWallet, WalletCall
from service.errors import (
    Conflict,
    Forbidden,
    InvalidCursor,
    NotFound,
    TokenExpired,
    Unauthenticated,
    UnsupportedCurrency,
    ValidationFailed,
)
from service.usecases import seamless

blp = Blueprint(
    "seamless",
    __name__,
    url_prefix="/v1",
    description="Seamless wallets: the operator keeps the money; we call its wallet.",
)
AUTH = (Unauthenticated, TokenExpired, Forbidden)


def settings_out(wallet: OperatorWallet, secret: str | None = None) -> dict[str, Any]:
    out = {
        "currency": wallet.currency,
        "mode": wallet.mode,
        "url": wallet.url,
        "timeout_ms": wallet.timeout_ms,
        "previous_secret_expires_at": wallet.previous_secret_expires_at,
        "created_at": wallet.created_at,
        "updated_at": wallet.updated_at,
    }
    return out if secret is None else out | {"secret": secret}


def call_out(call: WalletCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "kind": call.kind,
        "reason": call.reason,
        "player_id": call.player_id,
        "amount": money(call.amount, call.currency),
        "round_id": call.round_id,
        "table_id": call.table_id,
        "match_id": call.match_id,
        "state": call.state,
        "rollback_id": call.rollback_id,
        "references": call.references,
        "declined": call.declined,
        "ledger_transaction_id": call.ledger_transaction_id,
        "attempts": call.attempts,
        "next_attempt_at": call.next_attempt_at,
        "last_error": call.last_error,
        "escalated_at": call.escalated_at,
        "created_at": call.created_at,
        "completed_at": call.completed_at,
    }


@blp.route("/wallet-settings")
@blp.response(200, WalletSettingsList)
@documents(blp, *AUTH)
@unit
def list_settings() -> dict[str, Any]:
    """The operator's wallet mode per currency it has set one for (any other currency is in
    `transfer` mode)."""
    found = seamless.list_settings(db_session(), principal())
    return page([settings_out(w) for w in found], False, None)  # one page: a row a currency


@blp.route("/wallet-settings/<currency>", methods=["PUT"])
@blp.arguments(WalletSettingsIn)
@blp.response(200, WalletSettingsOut)
@documents(blp, *AUTH, ValidationFailed, UnsupportedCurrency, Conflict)
@unit
def put_settings(body: dict[str, Any], currency: str) -> dict[str, Any]:
    """Set the wallet mode of one currency. Making it `seamless` the first time answers the
    signing secret, once. In seamless mode deposits and withdrawals answer 409
    `seamless_wallet`, and seats, top-ups and payouts call the operator's wallet."""
    wallet, secret = seamless.configure(
        db_session(),
        principal(),
        currency,
        mode=body["mode"],
        url=body["url"],
        timeout_ms=body["timeout_ms"],
        now=utcnow(),
        allow_private=allow_private_networks(),
    )
    return settings_out(wallet, secret)


@blp.route("/wallet-settings/<currency>/rotate-secret", methods=["POST"])
@blp.arguments(RotateSecretIn)
@blp.response(200, WalletSettingsOut)
@documents(blp, *AUTH, NotFound, UnsupportedCurrency, ValidationFailed)
@unit
def rotate_secret(body: dict[str, Any], currency: str) -> dict[str, Any]:
    """A new signing secret, shown in this answer only; the old one keeps signing beside it
    (a second `v1=`) for `grace_period_seconds` (default 24 h), so the operator's wallet can
    switch at its own pace."""
    wallet, secret = seamless.rotate_secret(
        db_session(),
        principal(),
        currency,
        utcnow(),
        timedelta(seconds=body["grace_period_seconds"]),
    )
    return settings_out(wallet, secret)


@blp.route("/wallet-calls")
@blp.arguments(WalletCallQuery, location="query")
@blp.response(200, WalletCallList)
@documents(blp, *AUTH, ValidationFailed, InvalidCursor)
@unit
def list_calls(query: dict[str, Any]) -> dict[str, Any]:
    """Every call made to the operator's wallet, newest first: with `date`, that UTC day's
    reconciliation report (our transaction ids, rounds, kinds, amounts, states); with
    `escalated=true`, the calls raised to operations after the retry ceiling, which are
    still being retried."""
    found = seamless.list_calls(
        db_session(),
        principal(),
        day=query.get("date"),
        state=query.get("state"),
        escalated=query.get("escalated"),
        player_id=query.get("player_id"),
        limit=query["limit"],
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
    )
    return page([call_out(c) for c in found.data], found.has_more, found.next_cursor)
