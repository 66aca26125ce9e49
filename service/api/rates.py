"""Operator-set exchange rates for display amounts (docs/engine.md 6.5)."""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint

from service.api import render
from service.api.context import db_session, principal, unit
from service.api.problems import documents
from service.api.schemas import RateIn, RateList, RateOut
from service.clock import utcnow
from service.errors import Forbidden, Unauthenticated, UnsupportedCurrency, ValidationFailed
from service.usecases import rates

blp = Blueprint("rates", __name__, url_prefix="/v1", description="Display exchange rates.")


@blp.route("/exchange-rates")
@blp.response(200, RateList)
@documents(blp, Unauthenticated, Forbidden)
@unit
def list_rates() -> dict[str, Any]:
    """The operator's display rates."""
    return render.page(
        [render.rate(r) for r in rates.list_rates(db_session(), principal())], False, None
    )


@blp.route("/exchange-rates/<base>/<quote>", methods=["PUT"])
@blp.arguments(RateIn)
@blp.response(200, RateOut)
@documents(blp, Unauthenticated, Forbidden, UnsupportedCurrency, ValidationFailed)
@unit
def set_rate(body: dict[str, Any], base: str, quote: str) -> dict[str, Any]:
    """Set how many ``quote`` units one ``base`` unit is shown as (a decimal string within
    the bounds ``rate`` states; display only, never used for money). Two different
    currencies, neither of them play money (`XPM`); a refusal names `base`, `quote` or
    `rate`."""
    return render.rate(
        rates.set_rate(db_session(), principal(), base, quote, body["rate"], utcnow())
    )
