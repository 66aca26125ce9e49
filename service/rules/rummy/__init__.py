"""Basic Rummy for 2-6 players, a pure engine (the rules are stated in docs/rummy.md).

Nothing here imports Flask, SQLAlchemy or Celery. The stable public surface:

* options: :class:`RummyRules` (the ``rummy.*`` keys), :class:`AceMode`, :class:`Restock`,
  :class:`Scoring`
* play: :class:`RummyHand` (the immutable state machine), :class:`RummyAction`,
  :class:`RummyActionKind`, :class:`Phase`, :class:`TableMeld`, :class:`LayOff`
* results: :class:`RummyOutcome`, :class:`Void`, :func:`next_dealer`
* clocks: :func:`automatic_action` (what the server plays for a seat out of time)
* fairness: :func:`fair_shuffle` (a hand's deal and SHUFFLE restocks from one fair stream,
  a :class:`FairShuffle`)
* errors: :class:`RulesError` (the engine's base) and the refusals of
  :mod:`service.rules.rummy.errors`, each with a stable ``code`` and its ``rule``
"""

from service.rules.errors import RulesError
from service.rules.ruleset import InvalidRuleset
from service.rules.rummy.actions import RummyAction, RummyActionKind
from service.rules.rummy.errors import (
    AlreadyDrew,
    AlreadyForfeited,
    CardNotInHand,
    DiscardPileCardBarred,
    DiscardPileEmpty,
    HandOver,
    InvalidDeal,
    InvalidLayOff,
    InvalidShuffle,
    MalformedAction,
    MustDiscardToGoOut,
    MustDrawFirst,
    MustRestock,
    NoLegalDiscardLeft,
    NoSuchMeld,
    NoSuchSeat,
    NotAMeld,
    NotYourTurn,
    RummyRefusal,
    StockEmpty,
    TurnOverNotAllowed,
    UnknownAction,
)
from service.rules.rummy.fair import FairShuffle, fair_shuffle
from service.rules.rummy.hand import (
    LayOff,
    Phase,
    RummyHand,
    RummyOutcome,
    TableMeld,
    Void,
    automatic_action,
    deal_size,
    next_dealer,
)
from service.rules.rummy.rules import AceMode, Restock, RummyRules, Scoring

__all__ = [
    "AceMode",
    "AlreadyDrew",
    "AlreadyForfeited",
    "CardNotInHand",
    "DiscardPileCardBarred",
    "DiscardPileEmpty",
    "FairShuffle",
    "HandOver",
    "InvalidDeal",
    "InvalidLayOff",
    "InvalidRuleset",
    "InvalidShuffle",
    "LayOff",
    "MalformedAction",
    "MustDiscardToGoOut",
    "MustDrawFirst",
    "MustRestock",
    "NoLegalDiscardLeft",
    "NoSuchMeld",
    "NoSuchSeat",
    "NotAMeld",
    "NotYourTurn",
    "Phase",
    "Restock",
    "RulesError",
    "RummyAction",
    "RummyActionKind",
    "RummyHand",
    "RummyOutcome",
    "RummyRefusal",
    "RummyRules",
    "Scoring",
    "StockEmpty",
    "TableMeld",
    "TurnOverNotAllowed",
    "UnknownAction",
    "Void",
    "automatic_action",
    "deal_size",
    "fair_shuffle",
    "next_dealer",
]
