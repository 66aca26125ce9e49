"""Responsible gaming: deposit limits and self-exclusion checks.

Limits are per player, currency and period over rolling windows (daily = the last 24 hours,
weekly = 7 days, monthly = 30 days). Lowering a limit (or setting one where there was none)
applies at once; raising or removing one takes effect only 24 hours later, and lowering it again
meanwhile cancels the pending raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import Session

from service.db.driver import execute
from service.db.models import DepositLimit, LedgerEntry, Player
from service.errors import DepositLimitExceeded, SelfExcluded
from service.ledger.money import exponent
from service.ledger.postings import TransactionKind
from service.ledger.store import LockedAccount
from service.usecases.auth import Principal, authorize_player, require_operator

PERIODS: dict[str, timedelta] = {
    "daily": timedelta(days=1),
    "weekly": timedelta(days=7),
    "monthly": timedelta(days=30),
}
INCREASE_DELAY = timedelta(hours=24)


@dataclass(frozen=True)
class LimitView:
    period: str
    amount: int | None
    pending: bool
    pending_amount: int | None
    pending_effective_at: datetime | None


def _matured(limit: DepositLimit, now: datetime) -> bool:
    due = limit.pending_effective_at
    return limit.pending and due is not None and due <= now


def _effective(limit: DepositLimit, now: datetime) -> int | None:
    if _matured(limit, now):
        return limit.pending_amount
    return limit.amount


def _fold(limit: DepositLimit, now: datetime) -> None:
    """Apply a pending raise whose 24 hours have passed."""
    if _matured(limit, now):
        limit.amount = limit.pending_amount
        limit.pending, limit.pending_amount, limit.pending_effective_at = False, None, None


def _view(limit: DepositLimit, now: datetime) -> LimitView:
    _fold(limit, now)
    return LimitView(
        limit.period,
        limit.amount,
        limit.pending,
        limit.pending_amount,
        limit.pending_effective_at,
    )


def get_limits(
    session: Session, principal: Principal, player_id: str, currency: str, now: datetime
) -> list[LimitView]:
    exponent(currency, "currency")
    authorize_player(session, principal, player_id)
    rows = {
        row.period: row
        for row in session.scalars(
            select(DepositLimit).where(
                DepositLimit.player_id == player_id, DepositLimit.currency == currency
            )
        )
    }
    return [
        _view(rows[period], now) if period in rows else LimitView(period, None, False, None, None)
        for period in PERIODS
    ]


def set_limits(
    session: Session,
    principal: Principal,
    player_id: str,
    currency: str,
    requested: Mapping[str, int | None],
    now: datetime,
) -> list[LimitView]:
    """Set some periods' limits (``None`` removes a limit, which counts as a raise)."""
    require_operator(principal)
    exponent(currency, "currency")
    authorize_player(session, principal, player_id)
    for period, wanted in requested.items():
        limit = session.get(DepositLimit, (player_id, currency, period), with_for_update=True)
        if limit is None:
            limit = DepositLimit(
                player_id=player_id,
                currency=currency,
                period=period,
                amount=None,
                pending=False,
                pending_amount=None,
                pending_effective_at=None,
                updated_at=now,
            )
            session.add(limit)
        _fold(limit, now)
        current = limit.amount
        lowers = wanted is not None and (current is None or wanted <= current)
        if lowers:
            limit.amount = wanted
            limit.pending, limit.pending_amount, limit.pending_effective_at = False, None, None
        else:
            limit.pending, limit.pending_amount = True, wanted
            limit.pending_effective_at = now + INCREASE_DELAY
        limit.updated_at = now
    session.flush()
    return get_limits(session, principal, player_id, currency, now)


_LIMITS_TABLE = DepositLimit.__table__
_LIMITS = select(_LIMITS_TABLE).where(
    _LIMITS_TABLE.c.player_id == bindparam("player_id"),
    _LIMITS_TABLE.c.currency == bindparam("currency"),
)


def deposited_since(account_id: int, since: datetime) -> Select[Any]:
    """The sum deposited into the account ``account_id`` after ``since``. Its conditions say
    what ``ix_ledger_entries_deposits`` holds, so it reads that period's deposits alone, not
    the account's whole history."""
    return select(func.coalesce(func.sum(LedgerEntry.amount), 0)).where(
        LedgerEntry.account_id == account_id,
        LedgerEntry.kind == TransactionKind.DEPOSIT.value,
        LedgerEntry.amount > 0,
        LedgerEntry.created_at > since,
    )


def check_deposit_allowed(
    session: Session,
    player: Player,
    available: LockedAccount | None,
    amount: int,
    now: datetime,
    currency: str,
) -> None:
    """Refuse a deposit of a self-excluded player or one over a limit.

    Call it with the player's available account locked, so concurrent deposits are counted.

    :raises SelfExcluded: while the player's self-exclusion runs.
    :raises DepositLimitExceeded: when the deposit would pass a daily, weekly or monthly limit.
    """
    if player.self_excluded_until is not None and player.self_excluded_until > now:
        raise SelfExcluded(
            f"The player is self-excluded until {player.self_excluded_until.isoformat()}."
        )
    limits = execute(session, _LIMITS, {"player_id": player.id, "currency": currency})
    for limit in limits:
        cap = _effective(limit, now)
        if cap is None:
            continue
        deposited = 0
        if available is not None:
            deposited = (
                session.scalar(deposited_since(available.id, now - PERIODS[limit.period])) or 0
            )
        if deposited + amount > cap:
            raise DepositLimitExceeded(
                f"The {limit.period} deposit limit is {cap} {currency}; "
                f"{deposited} {currency} deposited in that period, {amount} {currency} more "
                "would pass it."
            )
