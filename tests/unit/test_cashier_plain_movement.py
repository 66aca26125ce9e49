"""service.api.cashier.plain_movement: the deposit body nearly every request sends, read
without marshmallow's machinery. Whatever it takes, MovementIn takes too, to the same value;
anything else is left to the schema (``None``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from marshmallow import ValidationError

from service.api.cashier import plain_movement
from service.api.schemas import REFERENCE_LENGTH, MovementIn
from service.ledger.money import EXPONENTS, MAX_AMOUNT

SCHEMA = MovementIn()

amounts = st.one_of(
    st.integers(min_value=-2, max_value=3),
    st.integers(min_value=MAX_AMOUNT - 1, max_value=MAX_AMOUNT + 1),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.sampled_from([1.0, "100", None, [], {}]),
)
currencies = st.one_of(
    st.sampled_from(sorted(EXPONENTS)),
    st.sampled_from(["eur", "XXX", "EURO", "", " EUR"]),
    st.text(max_size=4),
    st.sampled_from([None, 978, ["EUR"]]),
)
references = st.one_of(
    st.none(),
    st.text(min_size=0, max_size=3),
    st.text(min_size=REFERENCE_LENGTH - 1, max_size=REFERENCE_LENGTH + 1),
    st.sampled_from([0, True, ["ref"], {"ref": 1}]),
)
extras = st.dictionaries(st.sampled_from(["surprise", "Amount", "currency", "display"]),
                         st.integers(), max_size=1)


@st.composite
def payloads(draw: st.DrawFn) -> Any:
    money: Any = {"amount": draw(amounts), "currency": draw(currencies)}
    if draw(st.booleans()):
        money = draw(st.sampled_from([
            {k: v for k, v in money.items() if k != "amount"},
            {k: v for k, v in money.items() if k != "currency"},
            money | draw(extras), [money], None,
        ]))
    body: Any = {"amount": money}
    choice = draw(st.integers(0, 3))
    if choice == 1:
        body["external_reference"] = draw(references)
    elif choice == 2:
        body |= draw(extras)
    elif choice == 3:
        body = draw(st.sampled_from([{}, [body], "body", None, {"external_reference": "r"}]))
    return body


@given(payloads())
def test_what_it_takes_the_schema_takes_to_the_same_value(payload: Any) -> None:
    plain = plain_movement(payload)
    if plain is not None:
        assert SCHEMA.load(payload) == plain


@given(st.integers(1, MAX_AMOUNT), st.sampled_from(sorted(EXPONENTS)),
       st.one_of(st.none(), st.text(min_size=1, max_size=REFERENCE_LENGTH)))
def test_it_takes_every_plain_body(amount: int, currency: str, reference: str | None) -> None:
    payload: dict[str, Any] = {"amount": {"amount": amount, "currency": currency}}
    expected = SCHEMA.load(payload | {"external_reference": reference})
    assert plain_movement(payload | {"external_reference": reference}) == expected
    if reference is None:
        assert plain_movement(payload) == SCHEMA.load(payload)


def test_it_leaves_what_the_schema_refuses_to_the_schema() -> None:
    for payload in [
        {"amount": {"amount": 1.0, "currency": "EUR"}},
        {"amount": {"amount": True, "currency": "EUR"}},
        {"amount": {"amount": 0, "currency": "EUR"}},
        {"amount": {"amount": MAX_AMOUNT + 1, "currency": "EUR"}},
        {"amount": {"amount": 100, "currency": "XXX"}},
        {"amount": {"amount": 100, "currency": "EUR"}, "surprise": 1},
        {"amount": {"amount": 100, "currency": "EUR"}, "external_reference": ""},
        {"amount": {"amount": 100, "currency": "EUR"},
         "external_reference": "r" * (REFERENCE_LENGTH + 1)},
    ]:
        assert plain_movement(payload) is None
        with pytest.raises(ValidationError):
            SCHEMA.load(payload)
