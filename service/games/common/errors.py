"""The rules engine's exception family.

Every exception carries a stable ``code`` (the error codes of docs/engine.md, e.g.
``KNOCK_LIMIT_EXCEEDED``) so the API layer can map it to a problem type in one place.
"""

from __future__ import annotations

from collections.abc import Iterable


class RulesError(ValueError):
    """Base class: something asked of the rules engine is not allowed by the rules."""

    code = "RULES_ERROR"


class InvalidCard(RulesError):
    """Raised when text or a value cannot be read as a card (``"1X"``, ``"10H"``, ``None``)."""

    code = "INVALID_CARD"


class InvalidCards(RulesError):
    """Raised when cards are malformed as a whole: duplicates, wrong count, shared cards."""

    code = "INVALID_CARDS"


class InvalidMeld(RulesError):
    """Raised when cards given as a meld are neither a set nor a run."""

    code = "INVALID_MELD"


class IllegalKnock(RulesError):
    """Raised when a knock, gin or big gin is not allowed with the cards given."""

    code = "ILLEGAL_KNOCK"


class KnockLimitExceeded(IllegalKnock):
    """Raised when the knocker's deadwood is above the hand's knock limit (docs/engine.md 2.7.3)."""

    code = "KNOCK_LIMIT_EXCEEDED"


class IllegalAction(RulesError):
    """Raised when an action is not legal in the hand's current state; the state is unchanged."""

    code = "ILLEGAL_ACTION"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidState(RulesError):
    """Raised when serialised hand or game data cannot be restored (corrupt or inconsistent)."""

    code = "INVALID_STATE"


class FairnessError(RulesError):
    """Raised when a seed, commitment or algorithm version of the fair shuffle is malformed."""

    code = "FAIRNESS_ERROR"


class InvalidRuleset(RulesError):
    """Raised when a rule option has an unknown name or a value outside its range."""

    code = "INVALID_RULESET"


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


class SettlementError(RulesError):
    """Raised when a match cannot be settled: not over, or escrow that does not fit it."""

    code = "SETTLEMENT_ERROR"
