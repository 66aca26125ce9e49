"""Currencies, minor units and display conversion (docs/engine.md 6.5). Pure: no framework imports.

Amounts are ``int`` minor units everywhere; a ``float`` or ``bool`` is refused. Display amounts are
computed exactly (integers: a rate is an integer over a power of ten), rounded half up once, and
returned as strings; they are never stored back or used for money. Exact arithmetic needs no
decimal context: the largest amount at the largest rate shows as exactly as the smallest.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal, InvalidOperation

from service.errors import FieldError, UnsupportedCurrency, ValidationFailed

#: Play money for practice tables: a currency of its own (not ISO 4217), whole chips, so it
#: can never mix with real funds (a practice table takes nothing else, a real one never this).
PRACTICE_CURRENCY = "XPM"

#: ISO 4217 minor-unit exponents for the currencies the service accepts (plus play money).
EXPONENTS: dict[str, int] = {
    PRACTICE_CURRENCY: 0,
    "AED": 2,
    "ARS": 2,
    "AUD": 2,
    "BGN": 2,
    "BHD": 3,
    "BRL": 2,
    "CAD": 2,
    "CHF": 2,
    "CLP": 0,
    "CNY": 2,
    "COP": 2,
    "CZK": 2,
    "DKK": 2,
    "EUR": 2,
    "GBP": 2,
    "HKD": 2,
    "HUF": 2,
    "IDR": 2,
    "ILS": 2,
    "INR": 2,
    "ISK": 0,
    "JOD": 3,
    "JPY": 0,
    "KRW": 0,
    "KWD": 3,
    "MXN": 2,
    "MYR": 2,
    "NOK": 2,
    "NZD": 2,
    "OMR": 3,
    "PEN": 2,
    "PHP": 2,
    "PLN": 2,
    "RON": 2,
    "SAR": 2,
    "SEK": 2,
    "SGD": 2,
    "THB": 2,
    "TND": 3,
    "TRY": 2,
    "TWD": 2,
    "UAH": 2,
    "USD": 2,
    "VND": 0,
    "ZAR": 2,
}

MAX_AMOUNT = 2**53 - 1  # stays exact in every JSON client


def exponent(currency: str, field: str | None = None) -> int:
    """The minor-unit exponent of ``currency`` (named ``field`` in the request, if given).

    :raises UnsupportedCurrency: for a code not in :data:`EXPONENTS`, naming ``field``.
    """
    try:
        return EXPONENTS[currency]
    except KeyError:
        message = f"Currency {currency!r} is not supported."
        errors = [] if field is None else [FieldError(field, message)]
        raise UnsupportedCurrency(message, errors=errors) from None


def check_minor_units(value: object) -> int:
    """``value`` itself if it is an ``int`` minor-unit amount (not a bool, not a float).

    :raises ValidationFailed: otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationFailed(f"Amount must be an integer in minor units, got {value!r}.")
    if abs(value) > MAX_AMOUNT:
        raise ValidationFailed(f"Amount {value!r} is out of range.")
    return value


#: Exchange rates (display units per settlement unit) lie in ``(0, MAX_RATE]`` with at most
#: ``RATE_DECIMALS`` decimals (docs/engine.md 6.5): a real pair's rate is far inside.
MAX_RATE = Decimal(1_000_000)
RATE_DECIMALS = 12


def parse_rate(text: str, field: str = "rate") -> Decimal:
    """A positive exchange rate from its decimal text, e.g. ``"1.0837"``.

    :raises ValidationFailed: naming ``field``, for anything that is not a decimal in
        ``(0, MAX_RATE]`` with at most ``RATE_DECIMALS`` decimals.
    """

    def refuse(message: str) -> ValidationFailed:
        return ValidationFailed(message, errors=[FieldError(field, message)])

    try:
        rate = Decimal(text)
    except (InvalidOperation, TypeError):
        raise refuse(f"Rate must be a decimal string, got {text!r}.") from None
    if not rate.is_finite() or rate <= 0:
        raise refuse(f"Rate must be positive, got {text!r}.")
    places = Decimal(1).scaleb(-RATE_DECIMALS)
    if rate > MAX_RATE or rate != rate.quantize(places, rounding=ROUND_DOWN):
        raise refuse(
            f"Rate must be at most {MAX_RATE} with at most {RATE_DECIMALS} decimals, got {text!r}."
        )
    return rate


@dataclass(frozen=True)
class DisplayAmount:
    """A converted amount for display only (docs/engine.md 6.5), with the rate used."""

    amount: str
    currency: str
    rate: str


def display_amount(amount_minor: int, currency: str, rate: Decimal, display: str) -> DisplayAmount:
    """``round_half_up(amount_minor / 10^e_s × rate, e_d)`` as a string with ``e_d`` decimals,
    computed exactly (halves away from zero, as ``ROUND_HALF_UP`` does) for any finite rate.

    >>> display_amount(1500, "EUR", Decimal("1.0837"), "USD").amount
    '16.26'
    >>> display_amount(1500, "EUR", Decimal("162.47"), "JPY").amount
    '2437'
    """
    e_s, e_d = exponent(currency), exponent(display)
    amount = check_minor_units(amount_minor)
    if not rate.is_finite() or rate <= 0:
        raise ValidationFailed(f"Rate must be a positive finite decimal, got {rate!r}.")
    # In display minor units the figure is |amount| x rate x 10^e_d / 10^e_s, and a decimal
    # rate is exactly a ratio of two integers: one exact division, one rounding.
    rate_numerator, rate_denominator = rate.as_integer_ratio()
    numerator = abs(amount) * rate_numerator * 10**e_d
    denominator = rate_denominator * 10**e_s
    units, remainder = divmod(numerator, denominator)
    if 2 * remainder >= denominator:
        units += 1
    whole, fraction = divmod(units, 10**e_d)
    text = f"{whole}.{fraction:0{e_d}d}" if e_d else str(whole)
    if amount < 0 and units:
        text = "-" + text
    return DisplayAmount(amount=text, currency=display, rate=f"{rate:f}")
