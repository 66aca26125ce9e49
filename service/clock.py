"""The one place that reads the wall clock, so use cases can be given a fixed ``now``."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """``2026-11-30T21:38:20Z``: whole seconds, UTC, as the API's timestamps are (ISO 8601's
    form without its ``+00:00``; cheaper than ``strftime``, and every view writes several)."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")[:-6] + "Z"
