"""service.clock.rfc3339: the API's timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from service.clock import rfc3339

ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)


@given(st.datetimes(min_value=datetime(1001, 1, 1), timezones=ZONES))
def test_whole_seconds_in_utc_with_a_z(moment: datetime) -> None:
    assert rfc3339(moment) == moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_same_instant_reads_the_same_from_any_zone() -> None:
    instant = datetime(2026, 12, 2, 23, 59, 59, 999_999, tzinfo=UTC)
    assert rfc3339(instant) == "2026-12-02T23:59:59Z"
    assert rfc3339(instant.astimezone(timezone(timedelta(hours=3)))) == "2026-12-02T23:59:59Z"
