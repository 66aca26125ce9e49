"""The formats package's exceptions."""

from __future__ import annotations

from service.rules import RulesError


class InvalidSettings(RulesError):
    """Raised when table settings are inconsistent or out of range (the field is named)."""

    code = "INVALID_SETTINGS"

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
