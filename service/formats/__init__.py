"""Pure match formats and payout maths (RULES.md 3, 6, 7, 9.4): no Flask, SQLAlchemy or Celery.

* :class:`MatchSettings` (with :class:`FeeRule`): what a table fixes about its matches;
* :class:`Match`: hands chained into a match by the format's rules, serialisable;
* :func:`settle` / :func:`settle_match` -> :class:`Statement`: who gets what, and why.
"""

from service.formats.clock import ClockSettings, OnTimeout, automatic_action
from service.formats.errors import InvalidSettings
from service.formats.match import HandRecord, Match, MatchStatus
from service.formats.payout import SettlementError, Statement, settle, settle_match
from service.formats.settings import (
    CapMode,
    FeeBase,
    FeeRule,
    Format,
    FtkWinnerRule,
    MatchSettings,
)

__all__ = [
    "CapMode",
    "ClockSettings",
    "FeeBase",
    "FeeRule",
    "Format",
    "FtkWinnerRule",
    "HandRecord",
    "InvalidSettings",
    "Match",
    "MatchSettings",
    "MatchStatus",
    "OnTimeout",
    "SettlementError",
    "Statement",
    "automatic_action",
    "settle",
    "settle_match",
]
