"""service.ids: ULIDs in Crockford base32, sortable by time."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.ids import PREFIXES, encode, new_id, ulid

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def digit_by_digit(value: int) -> str:
    """The ULID spec's encoding, five bits at a time from the least significant."""
    digits = []
    for _ in range(26):
        digits.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(digits))


@given(st.one_of(st.integers(0, 2**128 - 1), st.sampled_from([0, 1, 31, 32, 2**128 - 1])))
def test_encode_is_the_specs_encoding(value: int) -> None:
    assert encode(value) == digit_by_digit(value)


def crockford_int(digits: str) -> int:
    value = 0
    for digit in digits:
        value = value * 32 + CROCKFORD.index(digit)
    return value


def test_a_ulid_starts_with_its_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    made = ulid()
    after = time.time_ns() // 1_000_000
    assert len(made) == 26 and set(made) <= set(CROCKFORD)
    assert before <= crockford_int(made[:10]) <= after


@given(st.integers(0, 2**48 - 2), st.integers(0, 2**80 - 1), st.integers(0, 2**80 - 1))
def test_a_later_millisecond_sorts_after_whatever_the_random_bits(
    millisecond: int, first: int, second: int
) -> None:
    assert encode(millisecond << 80 | first) < encode((millisecond + 1) << 80 | second)


def test_new_id_has_its_prefix_and_refuses_unknown_ones() -> None:
    for prefix in PREFIXES:
        assert new_id(prefix).startswith(prefix + "_")
    with pytest.raises(ValueError, match="unknown id prefix"):
        new_id("nope")


@pytest.mark.parametrize("value", [-1, 2**128])
def test_encode_refuses_what_26_digits_cannot_hold(value: int) -> None:
    with pytest.raises(ValueError):
        encode(value)
