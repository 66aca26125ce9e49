"""The formats package's exceptions."""

from __future__ import annotations

from collections.abc import Iterable

from service.rules import RulesError


class InvalidSettings(RulesError):
    """Raised when table settings are inconsistent or out of range: every problem found, each
    naming its field (``problems``; the first is also ``field`` and ``message``)."""

    code = "INVALID_SETTINGS"

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message
        self.problems: tuple[tuple[str, str], ...] = ((field_name, message),)

    @classmethod
    def every(cls, problems: Iterable[tuple[str, str]]) -> InvalidSettings:
        """One exception for several ``(field, message)`` problems (at least one)."""
        found = list(problems)
        error = cls(*found[0])
        error.problems = tuple(found)
        error.args = ("; ".join(f"{field}: {message}" for field, message in found),)
        return error
