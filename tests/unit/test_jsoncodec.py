"""service.jsoncodec writes the same JSON values as the standard library, faster."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service import jsoncodec

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)
    ),
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
    for text in (f'{{"amount": {number}}}', f"[{number}]", f'{{"a": "x", "b": [1, {number}]}}'):
        for document in (text, text.encode()):
            value = jsoncodec.loads(document)
            assert value == json.loads(text)
            found = (
                value["amount"]
                if "amount" in value
                else value[0]
                if isinstance(value, list)
                else value["b"][1]
            )
            assert type(found) is int


_RUNS = st.lists(  # runs of digits of every length around 19, between other bytes
    st.tuples(st.integers(0, 24), st.sampled_from([b" ", b"a", b".", b"\xd9\xa3", b"\xff"])),
    max_size=4,
).map(lambda runs: b"".join(b"7" * length + after for length, after in runs))


@given(st.binary(max_size=64) | _RUNS)
def test_a_long_digit_run_is_found_wherever_it_is(data: bytes) -> None:
    expected = re.search(rb"[0-9]{19}", data) is not None
    assert jsoncodec.has_long_digit_run(data) is expected
    text = data.decode("utf-8", "replace")
    assert jsoncodec.has_long_digit_run(text) is (re.search(r"[0-9]{19}", text) is not None)


def test_only_ascii_digits_count_and_a_lone_surrogate_is_no_error() -> None:
    assert not jsoncodec.has_long_digit_run("\u0663" * 30)  # Arabic-Indic three: not JSON's
    assert jsoncodec.has_long_digit_run("\ud800" + "7" * 19)
    assert not jsoncodec.has_long_digit_run("7" * 18 + "\ud800" + "7" * 18)


def test_what_only_the_standard_library_reads_is_still_read() -> None:
    # json.dumps wrote NaN for a float NaN before orjson wrote documents; a lone surrogate
    # escape is valid to the standard library. Both still load.
    assert jsoncodec.loads(b'{"x": NaN}')["x"] != jsoncodec.loads(b'{"x": NaN}')["x"]
    assert jsoncodec.loads('["\\ud800"]') == ["\ud800"]
