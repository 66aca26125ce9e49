"""service.db.driver.array_literal without a database: the text it writes, and what it refuses
(what PostgreSQL reads back is tested against PostgreSQL in
tests/integration/test_first_alone_postgres.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from service.db.driver import array_literal


def test_strings_are_quoted_with_backslashes_and_quotes_escaped() -> None:
    assert array_literal(["a", 'say "hi"', "back\\slash", "{,}", ""]) == (
        '{"a","say \\"hi\\"","back\\\\slash","{,}",""}'
    )


def test_none_integers_and_aware_timestamps() -> None:
    moment = datetime(2026, 12, 2, 14, 0, 1, 250, tzinfo=UTC)
    assert array_literal([None, 7, -3]) == "{NULL,7,-3}"
    assert array_literal([moment]) == '{"2026-12-02T14:00:01.000250+00:00"}'
    assert array_literal([]) == "{}"


@pytest.mark.parametrize(
    "value", [datetime(2026, 12, 2), "nul\x00inside", True, 1.5, b"bytes"],
    ids=["naive timestamp", "NUL", "bool", "float", "bytes"],
)
def test_what_it_cannot_write_exactly_is_refused(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        array_literal([value])  # type: ignore[list-item]
