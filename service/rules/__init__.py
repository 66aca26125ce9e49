"""The pure Gin Rummy rules engine (docs/engine.md sections 0-3 and 10, two players).

Nothing here imports Flask, SQLAlchemy or Celery. The stable public surface:

* cards: :class:`Card`, :func:`parse_cards`, :func:`format_cards`, :data:`DECK`
* arrangement: :func:`arrange` -> :class:`Arrangement`, :func:`best_discard`, :func:`deadwood`
* showdown: :func:`lay_off` -> :class:`Layoff`, :func:`score_hand` -> :class:`HandScore`
* options: :class:`Ruleset` (docs/engine.md section A ``gin.*`` / ``oklahoma.*``)
* play: :class:`Hand` (the state machine), :class:`Action`, :class:`Phase`
* games: :class:`Game`, :func:`final_totals`
* fairness: :mod:`service.rules.fair`
* errors: :class:`RulesError` and its subclasses
"""

from service.rules.actions import Action, ActionKind
from service.rules.cards import DECK, Card, format_cards, parse_cards
from service.rules.errors import (
    FairnessError,
    IllegalAction,
    IllegalKnock,
    InvalidCard,
    InvalidCards,
    InvalidMeld,
    InvalidState,
    KnockLimitExceeded,
    RulesError,
)
from service.rules.game import Game, GameTotals, final_totals
from service.rules.hand import Hand, HandOutcome, Phase, next_dealer
from service.rules.layoff import Layoff, lay_off
from service.rules.melds import Arrangement, arrange, best_discard, deadwood
from service.rules.ruleset import (
    DeadHandRule,
    InvalidRuleset,
    KnockerArrangement,
    NextDealer,
    Opening,
    Ruleset,
    ShutoutMode,
)
from service.rules.scoring import HandScore, HandTerms, hand_terms, score_hand

__all__ = [
    "DECK",
    "Action",
    "ActionKind",
    "Arrangement",
    "Card",
    "DeadHandRule",
    "FairnessError",
    "Game",
    "GameTotals",
    "Hand",
    "HandOutcome",
    "HandScore",
    "HandTerms",
    "IllegalAction",
    "IllegalKnock",
    "InvalidCard",
    "InvalidCards",
    "InvalidMeld",
    "InvalidRuleset",
    "InvalidState",
    "KnockLimitExceeded",
    "KnockerArrangement",
    "Layoff",
    "NextDealer",
    "Opening",
    "Phase",
    "RulesError",
    "Ruleset",
    "ShutoutMode",
    "arrange",
    "best_discard",
    "deadwood",
    "final_totals",
    "format_cards",
    "hand_terms",
    "lay_off",
    "next_dealer",
    "parse_cards",
    "score_hand",
]
