"""Use-case values to response dicts (serialised by the schemas in :mod:`service.api.schemas`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.clock import rfc3339
from service.db.models import ApiKey, LedgerTransaction, Operator, Player
from service.games import registry
from service.usecases.limits import LimitView
from service.usecases.operators import IssuedKey
from service.usecases.rates import Rate
from service.usecases.settlement import SettlementView
from service.usecases.tables import TableView
from service.usecases.wallets import EntryView, WalletView


def money(amount: int, currency: str, rate: Rate | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"amount": amount, "currency": currency}
    shown = None if rate is None or rate.base != currency else rate.display(amount)
    if rate is not None and shown is not None:  # display only: left out when it cannot be shown
        out["display"] = {
            "amount": shown.amount,
            "currency": shown.currency,
            "rate": shown.rate,
            "rate_at": rate.rate_at,
            "approximate": True,
        }
    return out


def operator(op: Operator) -> dict[str, Any]:
    return {"id": op.id, "name": op.name, "created_at": op.created_at}


def api_key(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "label": key.label,
        "prefix": key.prefix,
        "created_at": key.created_at,
        "revoked_at": key.revoked_at,
    }


def issued_key(issued: IssuedKey) -> dict[str, Any]:
    return api_key(issued.key) | {"secret": issued.secret}


def player(p: Player) -> dict[str, Any]:
    return {
        "id": p.id,
        "external_id": p.external_id,
        "display_name": p.display_name,
        "display_currency": p.display_currency,
        "self_excluded_until": p.self_excluded_until,
        "created_at": p.created_at,
    }


def wallet(w: WalletView) -> dict[str, Any]:
    return {
        "player_id": w.player_id,
        "currency": w.currency,
        "available": money(w.available, w.currency, w.rate),
        "held": money(w.held, w.currency, w.rate),
        "balance": money(w.balance, w.currency, w.rate),
    }


def transaction(txn: LedgerTransaction, wallet_view: WalletView | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": txn.id,
        "kind": txn.kind,
        "player_id": txn.player_id,
        "match_id": txn.match_ref,
        "amount": money(txn.amount, txn.currency, wallet_view.rate if wallet_view else None),
        "external_reference": txn.external_reference,
        "created_at": txn.created_at,
    }
    if wallet_view is not None:
        out["wallet"] = wallet(wallet_view)
    return out


def entry(view: EntryView) -> dict[str, Any]:
    e = view.entry
    return {
        "id": e.id,
        "kind": e.kind,
        "account": "escrow" if view.account_kind == "player_escrow" else "available",
        "amount": money(e.amount, e.currency, view.rate),
        "balance_after": money(e.balance_after, e.currency, view.rate),
        "transaction_id": e.transaction_id,
        "match_id": view.match_ref,
        "external_reference": view.external_reference,
        "created_at": e.created_at,
    }


def limits(player_id: str, currency: str, views: list[LimitView]) -> dict[str, Any]:
    out: dict[str, Any] = {"player_id": player_id, "currency": currency}
    for view in views:
        pending = None
        if view.pending and view.pending_effective_at is not None:
            pending = {
                "amount": None
                if view.pending_amount is None
                else money(view.pending_amount, currency),
                "effective_at": view.pending_effective_at,
            }
        out[view.period] = {
            "amount": None if view.amount is None else money(view.amount, currency),
            "pending": pending,
        }
    return out


def rate(r: Rate) -> dict[str, Any]:
    return {"base": r.base, "quote": r.quote, "rate": f"{r.rate:f}", "rate_at": r.rate_at}


def page(data: list[dict[str, Any]], has_more: bool, next_cursor: str | None) -> dict[str, Any]:
    return {"data": data, "has_more": has_more, "next_cursor": next_cursor}


def table(view: TableView, rate: Rate | None = None) -> dict[str, Any]:
    t = view.table
    buyins = t.format not in registry.FIXED_STAKE_FORMATS
    target = t.settings.get("target") if t.format not in registry.SINGLE_HAND_FORMATS else None
    return {
        "id": t.id,
        "name": t.name,
        "game": t.game,
        "seat_count": t.seat_count,
        "match_id": t.match_id,
        "format": t.format,
        "currency": t.currency,
        "practice": t.practice,
        "private": t.private,
        "spectator_delay": t.spectator_delay,
        "invite_code": t.invite_code if view.show_invite else None,
        "status": t.status,
        "stake": None if buyins else money(t.stake, t.currency, rate),
        "stake_per_point": money(t.stake_per_point, t.currency, rate) if buyins else None,
        "min_buyin": money(t.min_buyin, t.currency, rate) if buyins else None,
        "max_buyin": money(t.max_buyin, t.currency, rate) if buyins else None,
        "target": target,
        "seats": [
            {
                "seat": s.seat_no,
                "player_id": s.player_id,
                "escrow": money(s.escrow, t.currency, rate),
                "ready": s.ready,
                "joined_at": s.joined_at,
            }
            for s in view.seats
        ],
        "free_seats": t.seat_count - len(view.seats),
        "settings": t.settings,
        "fill_deadline": t.fill_deadline,
        "created_at": t.created_at,
    }


def settlement(view: SettlementView) -> dict[str, Any]:
    """A settlement as JSON-ready data: its players by table seat (``seats``, and the
    statement as :class:`SettlementView` names them), each seat's figures at the display
    rate looked up when answering (docs/engine.md 6.5); the stored statement holds no display
    figure, and one a row still holds from before is left out, not shown at its old rate."""
    found, rates = view.settlement, view.rates
    s = {key: value for key, value in view.statement.items() if key != "display"}
    currency = found.currency

    def seat_money(amounts: Sequence[int]) -> list[dict[str, Any]]:
        return [
            _json_ready(money(amount, currency, rates[i] if i < len(rates) else None))
            for i, amount in enumerate(amounts)
        ]

    net = seat_money(s["net"])
    return {
        "id": found.id,
        "object": "settlement",
        "match_id": found.match_id,
        "currency": currency,
        "ledger_transaction_id": found.ledger_transaction_id,
        "created_at": rfc3339(found.created_at),
        "seats": view.seats,
        "winner": s["winner"],
        "void": s["void"],
        "forfeiter": s["forfeiter"],
        "players": s["players"],
        "escrow": seat_money(s["escrow"]),
        "payouts": seat_money(s["payouts"]),
        "net": net,
        "fee": {"amount": s["fee"], "currency": currency},
        "statement": s | {"display": [n.get("display") for n in net]},
    }


def money_json(amount: int, currency: str, rate: Rate | None = None) -> dict[str, Any]:
    """:func:`money` as sent without a schema (a match view): its display's time as text."""
    return _json_ready(money(amount, currency, rate))


def _json_ready(amount: dict[str, Any]) -> dict[str, Any]:
    """A money object as sent without a schema: its display's time as RFC 3339 text."""
    shown = amount.get("display")
    if shown is not None:
        shown["rate_at"] = rfc3339(shown["rate_at"])
    return amount
