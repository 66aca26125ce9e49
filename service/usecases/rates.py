"""Operator-set exchange rates and display amounts (docs/engine.md 6.5): display only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import ExchangeRate, Player
from service.errors import ValidationFailed
from service.ledger.money import DisplayAmount, display_amount, exponent, parse_rate
from service.usecases.auth import Principal, require_operator


@dataclass(frozen=True)
class Rate:
    base: str
    quote: str
    rate: Decimal
    rate_at: datetime

    def display(self, amount_minor: int) -> DisplayAmount:
        return display_amount(amount_minor, self.base, self.rate, self.quote)


def set_rate(
    session: Session, principal: Principal, base: str, quote: str, rate_text: str, now: datetime
) -> Rate:
    """Set how many ``quote`` units one ``base`` unit shows as."""
    operator_id = require_operator(principal)
    exponent(base)
    exponent(quote)
    if base == quote:
        raise ValidationFailed(f"A rate needs two different currencies, got {base}/{quote}.")
    rate = parse_rate(rate_text)
    row = session.get(ExchangeRate, (operator_id, base, quote), with_for_update=True)
    if row is None:
        row = ExchangeRate(operator_id=operator_id, base=base, quote=quote)
        session.add(row)
    row.rate, row.updated_at = f"{rate:f}", now
    return Rate(base, quote, rate, now)


def list_rates(session: Session, principal: Principal) -> Sequence[Rate]:
    operator_id = require_operator(principal)
    rows = session.scalars(
        select(ExchangeRate)
        .where(ExchangeRate.operator_id == operator_id)
        .order_by(ExchangeRate.base, ExchangeRate.quote)
    ).all()
    return [Rate(r.base, r.quote, Decimal(r.rate), r.updated_at) for r in rows]


def display_rate(session: Session, player: Player, currency: str) -> Rate | None:
    """The rate to show ``currency`` amounts in the player's display currency, if one is set."""
    return rate_for_display(session, player.operator_id, currency, player.display_currency)


def rate_for_display(
    session: Session, operator_id: str, currency: str, quote: str | None
) -> Rate | None:
    """The operator's rate to show ``currency`` amounts in ``quote`` (lobby display)."""
    if quote is None or quote == currency:
        return None
    row = session.get(ExchangeRate, (operator_id, currency, quote))
    if row is None:
        return None
    return Rate(currency, quote, Decimal(row.rate), row.updated_at)
