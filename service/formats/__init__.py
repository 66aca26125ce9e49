"""Pure match formats and payout maths (docs/engine.md 3, 6, 7, 9.4): no Flask, SQLAlchemy, Celery.

* :class:`MatchSettings` (with :class:`FeeRule`): what a table fixes about its matches;
* :class:`Match`: hands chained into a match by the format's rules, serialisable;
* :func:`settle` / :func:`settle_match` -> :class:`Statement`: who gets what, and why;
* :class:`ThreePlayerMatch` (with :class:`Seating`) and :class:`PartnershipMatch`: Gin at three
  and four seats, their :class:`Standings` with a :class:`PairMargin` per money pair;
* :mod:`service.formats.payout_multi`: the payout maths at three to six seats.
"""

from service.formats.clock import ClockSettings, OnTimeout, automatic_action
from service.formats.errors import InvalidSettings
from service.formats.match import HandRecord, Match, MatchStatus
from service.formats.multi_common import HandSlot, PairMargin, Standings, TableRecord
from service.formats.partnership import PartnershipMatch
from service.formats.payout import SettlementError, Statement, settle, settle_match
from service.formats.rummy_match import (
    RummyMatch,
    RummyMatchSettings,
    RummyRecord,
    RummySlot,
    RummyStandings,
)
from service.formats.settings import (
    CapMode,
    FeeBase,
    FeeRule,
    Format,
    FtkWinnerRule,
    MatchSettings,
)
from service.formats.three_player import Seating, ThreePlayerMatch

__all__ = [
    "CapMode",
    "ClockSettings",
    "FeeBase",
    "FeeRule",
    "Format",
    "FtkWinnerRule",
    "HandRecord",
    "HandSlot",
    "InvalidSettings",
    "Match",
    "MatchSettings",
    "MatchStatus",
    "OnTimeout",
    "PairMargin",
    "PartnershipMatch",
    "RummyMatch",
    "RummyMatchSettings",
    "RummyRecord",
    "RummySlot",
    "RummyStandings",
    "Seating",
    "SettlementError",
    "Standings",
    "Statement",
    "TableRecord",
    "ThreePlayerMatch",
    "automatic_action",
    "settle",
    "settle_match",
]
