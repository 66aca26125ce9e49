"""Operator-set exchange rates and display amounts (docs/engine.md 6.5): display only."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

from sqlalchemy import and_, bindparam, select
from sqlalchemy.orm import Session

from service.db import first_alone
from service.db.models import ExchangeRate, Player
from service.errors import FieldError, UnsupportedCurrency, ValidationFailed
from service.ledger.money import (
    PRACTICE_CURRENCY,
    DisplayAmount,
    display_amount,
    exponent,
    parse_rate,
)
from service.usecases.auth import Principal, require_operator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rate:
    base: str
    quote: str
    rate: Decimal
    rate_at: datetime

    def display(self, amount_minor: int) -> DisplayAmount | None:
        """``amount_minor`` of ``base`` shown in ``quote``; ``None`` when it cannot be shown.

        A display figure never fails the answer it is part of (docs/engine.md 6.5): whatever
        goes wrong computing one (a rate stored before today's bounds, say), the money is
        answered without it."""
        try:
            return display_amount(amount_minor, self.base, self.rate, self.quote)
        except Exception:  # display only: the money answer goes on without it
            log.warning(
                "no display for %s %s in %s", amount_minor, self.base, self.quote, exc_info=True
            )
            return None


def set_rate(
    session: Session, principal: Principal, base: str, quote: str, rate_text: str, now: datetime
) -> Rate:
    """Set how many ``quote`` units one ``base`` unit shows as.

    :raises UnsupportedCurrency: naming ``base`` or ``quote``: an unknown code, or play money.
    :raises ValidationFailed: naming ``quote`` when it is ``base``; naming ``rate`` when the
        rate is not a decimal in bounds (:func:`service.ledger.money.parse_rate`).
    """
    operator_id = require_operator(principal)
    for field, code in (("base", base), ("quote", quote)):
        exponent(code, field)
        if code == PRACTICE_CURRENCY:
            message = f"Play money ({PRACTICE_CURRENCY}) has no exchange rate."
            raise UnsupportedCurrency(message, errors=[FieldError(field, message)])
    if base == quote:
        message = f"A rate needs two different currencies, got {base}/{quote}."
        raise ValidationFailed(message, errors=[FieldError("quote", message)])
    rate = parse_rate(rate_text, "rate")
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


def display_currency(requested: str | None, preferred: str | None) -> str | None:
    """The display currency an answer shows money in (docs/engine.md 6.5.3): the one the
    request names (``display_currency``), else ``preferred``, the display currency of the
    player the answer is for (a wallet's owner; the calling player at tables and matches;
    each seat's player in a settlement); ``None`` when neither names one."""
    return requested if requested is not None else preferred


#: An operator's rate; and a player's own display currency with the operator's rate to it
#: (one round trip for both). Each runs on its own outside a unit of work: a match view reads
#: them without opening a transaction.
_RATE = select(ExchangeRate.rate, ExchangeRate.updated_at).where(
    ExchangeRate.operator_id == bindparam("operator_id"),
    ExchangeRate.base == bindparam("base"),
    ExchangeRate.quote == bindparam("quote"),
)
_PREFERENCE = (
    select(Player.display_currency, ExchangeRate.rate, ExchangeRate.updated_at)
    .select_from(Player)
    .outerjoin(
        ExchangeRate,
        and_(
            ExchangeRate.operator_id == bindparam("operator_id"),
            ExchangeRate.base == bindparam("base"),
            ExchangeRate.quote == Player.display_currency,
        ),
    )
    .where(Player.id == bindparam("player_id"))
)


def display_rate(
    session: Session,
    operator_id: str,
    currency: str,
    requested: str | None,
    player: Player | str | None,
) -> Rate | None:
    """The operator's rate to show ``currency`` amounts in :func:`display_currency` (the one
    rule every answer with money follows); ``None`` when there is none to show: no display
    currency, the same currency, play money, or no rate set. ``player``: the player the
    answer is for, or its id (its display currency is then read only when needed)."""
    params = {"operator_id": operator_id, "base": currency}
    preferred = player.display_currency if isinstance(player, Player) else None
    row = None  # the rate to ``preferred``, when it came with it
    if isinstance(player, str) and requested is None:
        row = first_alone(session, _PREFERENCE, params | {"player_id": player})
        preferred = None if row is None else row.display_currency
    quote = _shown(currency, display_currency(requested, preferred))
    if quote is None:
        return None
    if row is None:
        row = first_alone(session, _RATE, params | {"quote": quote})
    return None if row is None else _rate(currency, quote, row.rate, row.updated_at)


def display_rates(
    session: Session,
    operator_id: str,
    wanted: Sequence[tuple[str, str]],
    requested: str | None,
) -> dict[tuple[str, str], Rate | None]:
    """:func:`display_rate` for many ``(currency, player id)`` pairs at once (a page of
    settlements): two round trips whatever their number."""
    preferred: dict[str, str | None] = {}
    if requested is None:
        ids = {player_id for _currency, player_id in wanted}
        found = session.execute(
            select(Player.id, Player.display_currency).where(Player.id.in_(ids))
        )
        preferred = {player_id: quote for player_id, quote in found}
    rows = {
        (row.base, row.quote): row
        for row in session.scalars(
            select(ExchangeRate).where(
                ExchangeRate.operator_id == operator_id,
                ExchangeRate.base.in_({currency for currency, _player_id in wanted}),
            )
        )
    }
    out: dict[tuple[str, str], Rate | None] = {}
    for currency, player_id in wanted:
        quote = _shown(currency, display_currency(requested, preferred.get(player_id)))
        row = None if quote is None else rows.get((currency, quote))
        out[currency, player_id] = (
            None
            if row is None or quote is None
            else _rate(currency, quote, row.rate, row.updated_at)
        )
    return out


def _shown(currency: str, quote: str | None) -> str | None:
    """``quote`` if ``currency`` amounts are shown in it at all (a currency of its own,
    neither of them play money), else ``None``."""
    if quote is None or quote == currency or PRACTICE_CURRENCY in (quote, currency):
        return None
    return quote


def _rate(currency: str, quote: str, text: str | None, rate_at: datetime) -> Rate | None:
    """A stored rate to show by; ``None`` for none, or for a text that is not a decimal."""
    if text is None:
        return None
    try:
        return Rate(currency, quote, Decimal(text), rate_at)
    except InvalidOperation:
        log.warning("exchange rate %s/%s is not a decimal: %r", currency, quote, text)
        return None
