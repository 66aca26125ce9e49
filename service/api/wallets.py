"""Wallets, deposits, withdrawals, ledger entries and transactions."""

from __future__ import annotations

from typing import Any

from flask import request
from flask_smorest import Blueprint

from service.api import render
from service.api.context import db_session, idempotent, operator_sender, principal, unit
from service.api.problems import documents
from service.api.schemas import (
    DisplayQuery,
    EntriesQuery,
    EntryList,
    MovementIn,
    TransactionOut,
    WalletList,
    WalletOut,
)
from service.clock import utcnow
from service.errors import (
    DepositLimitExceeded,
    Forbidden,
    IdempotencyKeyInUse,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    InsufficientFunds,
    InvalidCursor,
    NotFound,
    SeamlessWallet,
    SelfExcluded,
    TokenExpired,
    Unauthenticated,
    UnsupportedCurrency,
    ValidationFailed,
)
from service.usecases import seamless, unit_of_work, wallets

blp = Blueprint("wallets", __name__, url_prefix="/v1", description="Wallets and the ledger.")

IDEMPOTENCY_HEADER = {
    "in": "header",
    "name": "Idempotency-Key",
    "required": True,
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
    "description": "Same key and body replays the first response (`Idempotent-Replayed: true`).",
}
MONEY_PROBLEMS = (
    Unauthenticated,
    Forbidden,
    NotFound,
    IdempotencyKeyRequired,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    ValidationFailed,
)


@blp.route("/players/<player_id>/wallets")
@blp.arguments(DisplayQuery, location="query")
@blp.response(200, WalletList)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound, ValidationFailed)
@unit
def list_wallets(query: dict[str, Any], player_id: str) -> dict[str, Any]:
    """The player's wallets, one per currency (operator key, or the player's own token)."""
    views = wallets.list_wallets(
        db_session(), principal(), player_id, query.get("display_currency")
    )
    return render.page([render.wallet(w) for w in views], False, None)


@blp.route("/players/<player_id>/wallets/<currency>")
@blp.arguments(DisplayQuery, location="query")
@blp.response(200, WalletOut)
@documents(
    blp, Unauthenticated, TokenExpired, Forbidden, NotFound, UnsupportedCurrency, ValidationFailed
)
def get_wallet(query: dict[str, Any], player_id: str, currency: str) -> dict[str, Any]:
    """One wallet: available, held (in escrow) and balance, with display amounts. At a
    seamless operator also the balance its own wallet reports (display only), asked after
    the wallet is read, outside the transaction."""
    session, who = db_session(), principal()

    def read() -> tuple[wallets.WalletView, seamless.Request | None]:
        view = wallets.get_wallet(session, who, player_id, currency, query.get("display_currency"))
        return view, seamless.balance_request(
            session, who.operator_id, player_id, currency, utcnow()
        )

    view, asking = unit_of_work.run(session, read)
    out = render.wallet(view)
    if asking is not None:
        found = seamless.ask_balance(asking, operator_sender())
        out["operator_balance"] = (
            None if found is None else render.money(found, currency, view.rate)
        )
    return out


@blp.route("/players/<player_id>/deposits", methods=["POST"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@blp.arguments(MovementIn)
@idempotent
@blp.response(201, TransactionOut)
@documents(blp, *MONEY_PROBLEMS, SelfExcluded, DepositLimitExceeded, SeamlessWallet)
def deposit(body: dict[str, Any], player_id: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Credit the player's wallet from the operator's cashier (operator only; a currency
    in seamless mode takes no deposits: 409 `seamless_wallet`)."""
    movement = wallets.deposit(
        db_session(),
        principal(),
        player_id,
        body["amount"]["currency"],
        body["amount"]["amount"],
        _key(),
        utcnow(),
        body["external_reference"],
    )
    return render.transaction(movement.transaction, movement.wallet), 201, _replayed(movement)


@blp.route("/players/<player_id>/withdrawals", methods=["POST"])
@blp.doc(parameters=[IDEMPOTENCY_HEADER])
@blp.arguments(MovementIn)
@idempotent
@blp.response(201, TransactionOut)
@documents(blp, *MONEY_PROBLEMS, InsufficientFunds, SeamlessWallet)
def withdraw(body: dict[str, Any], player_id: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Pay out of the player's available funds through the operator's cashier (operator
    only; a currency in seamless mode has none here: 409 `seamless_wallet`)."""
    movement = wallets.withdraw(
        db_session(),
        principal(),
        player_id,
        body["amount"]["currency"],
        body["amount"]["amount"],
        _key(),
        utcnow(),
        body["external_reference"],
    )
    return render.transaction(movement.transaction, movement.wallet), 201, _replayed(movement)


def _key() -> str:
    return request.headers["Idempotency-Key"]


def _replayed(movement: wallets.Movement) -> dict[str, str]:
    return {"Idempotent-Replayed": "true"} if movement.replayed else {}


@blp.route("/players/<player_id>/entries")
@blp.arguments(EntriesQuery, location="query")
@blp.response(200, EntryList)
@documents(
    blp,
    Unauthenticated,
    TokenExpired,
    Forbidden,
    NotFound,
    InvalidCursor,
    ValidationFailed,
)
@unit
def list_entries(query: dict[str, Any], player_id: str) -> dict[str, Any]:
    """The player's ledger entries, newest first: kind, signed amount, balance after, and the
    transaction, match or cashier reference that caused each."""
    page = wallets.list_entries(
        db_session(),
        principal(),
        player_id,
        query.get("currency"),
        query["limit"],
        query.get("starting_after"),
        query.get("ending_before"),
        query.get("display_currency"),
    )
    return render.page([render.entry(e) for e in page.data], page.has_more, page.next_cursor)


@blp.route("/transactions/<transaction_id>")
@blp.response(200, TransactionOut)
@documents(blp, Unauthenticated, Forbidden, NotFound)
@unit
def get_transaction(transaction_id: str) -> dict[str, Any]:
    """One ledger transaction of the operator."""
    return render.transaction(wallets.get_transaction(db_session(), principal(), transaction_id))
