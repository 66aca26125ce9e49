"""service.jsoncodec writes the same JSON values as the standard library, faster."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service import jsoncodec

_scalars = st.none() | st.booleans() | st.integers() | st.text() | st.floats(
    allow_nan=False, allow_infinity=False
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4),
    max_leaves=20,
)


@given(_values)
def test_the_same_value_as_the_standard_library(value: Any) -> None:
    assert json.loads(jsoncodec.dumps(value)) == json.loads(json.dumps(value))
    assert jsoncodec.dumps_bytes(value).decode() == jsoncodec.dumps(value)


def test_integers_beyond_64_bits_keep_every_digit() -> None:
    big = {"amount": 2**70 + 1, "n": [-(2**64) - 3]}
    assert json.loads(jsoncodec.dumps(big)) == big


def test_integer_keys_become_strings_as_in_the_standard_library() -> None:
    assert json.loads(jsoncodec.dumps({0: "a", 1: "b"})) == {"0": "a", "1": "b"}


def test_default_converts_and_unconvertible_values_raise_type_error() -> None:
    when = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
    assert json.loads(jsoncodec.dumps_bytes({"at": when}, default=str)) == {"at": str(when)}
    with pytest.raises(TypeError):  # as json.dumps: no silent format of our own for dates
        jsoncodec.dumps({"at": when})
    with pytest.raises(TypeError):
        jsoncodec.dumps({"x": object()})


@given(_values)
def test_reading_gives_back_what_was_written(value: Any) -> None:
    written = jsoncodec.dumps_bytes(value)
    assert jsoncodec.loads(written) == jsoncodec.loads(written.decode()) == json.loads(written)


@pytest.mark.parametrize("number", [2**63, 2**64 + 1, -(2**63) - 1, 10**30, 1234567890123456789])
def test_long_integers_are_read_exactly_never_as_floats(number: int) -> None:
    for text in (f'{{"amount": {number}}}', f"[{number}]"):
        value = jsoncodec.loads(text.encode())
        assert value == json.loads(text)
        assert type(next(iter(value.values())) if isinstance(value, dict) else value[0]) is int


def test_what_only_the_standard_library_reads_is_still_read() -> None:
    # json.dumps wrote NaN for a float NaN before orjson wrote documents; a lone surrogate
    # escape is valid to the standard library. Both still load.
    assert jsoncodec.loads(b'{"x": NaN}')["x"] != jsoncodec.loads(b'{"x": NaN}')["x"]
    assert jsoncodec.loads('["\\ud800"]') == ["\ud800"]
