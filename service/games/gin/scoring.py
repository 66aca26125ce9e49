"""Hand scoring (docs/engine.md 2.7-2.9, 3.3): knock, undercut, gin, big gin, Oklahoma.

``score_hand`` takes the knocker's kept cards and the defender's hand and returns a
:class:`HandScore`. The knocker's arrangement is chosen automatically among the minimal ones
as the one that leaves the defender the most deadwood after layoffs (2.8.3), or is given by
the knocker when the ruleset says ``MANUAL``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from service.games.common.cards import Card, cards_to_mask, mask_to_cards, to_card
from service.games.common.errors import IllegalKnock, InvalidCards, KnockLimitExceeded, RulesError
from service.games.gin.layoff import Layoff, lay_off_mask, lay_off_on
from service.games.gin.melds import (
    Arrangement,
    arrange_mask,
    deadwood_of_mask,
    minimal_arrangements,
    parse_melds,
)
from service.games.gin.ruleset import KnockerArrangement, Ruleset

KNOCK = "knock"
UNDERCUT = "undercut"
GIN = "gin"
BIG_GIN = "big_gin"


@dataclass(frozen=True, slots=True)
class HandTerms:
    """The per-hand rule values that Oklahoma derives from the upcard (3.3)."""

    knock_limit: int
    multiplier: int


def hand_terms(ruleset: Ruleset, upcard: Card | str | None = None) -> HandTerms:
    """Knock limit and point multiplier of a hand whose initial upcard is ``upcard``.

    :raises RulesError: in Oklahoma mode without an upcard.
    """
    if not ruleset.oklahoma:
        return HandTerms(ruleset.knock_limit, 1)
    if upcard is None:
        raise RulesError("Oklahoma scoring needs the hand's initial upcard")
    card = to_card(upcard)
    limit = card.points
    if card.rank == 1 and ruleset.ace_requires_gin:
        limit = 0
    multiplier = 2 if card.suit == "S" and ruleset.spade_doubles else 1
    return HandTerms(limit, multiplier)


@dataclass(frozen=True, slots=True)
class HandScore:
    """The outcome of a hand that ended in a knock, gin or big gin."""

    kind: str
    winner: str
    points: int
    knocker_deadwood: int
    defender_deadwood: int
    defender_deadwood_before_layoffs: int
    knocker: Arrangement
    defender: Layoff
    multiplier: int
    knock_limit: int

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "winner": self.winner,
            "points": self.points,
            "knocker_deadwood": self.knocker_deadwood,
            "defender_deadwood": self.defender_deadwood,
            "defender_deadwood_before_layoffs": self.defender_deadwood_before_layoffs,
            "knocker": self.knocker.to_dict(),
            "defender": self.defender.to_dict(),
            "multiplier": self.multiplier,
            "knock_limit": self.knock_limit,
        }


def _manual_arrangement(kept: int, melds: Iterable[str | Iterable[Card | str]]) -> Arrangement:
    parsed = parse_melds(melds)
    melded = cards_to_mask(card for meld in parsed for card in meld)
    if melded & ~kept:
        raise IllegalKnock("the knocker's melds use cards the knocker does not hold")
    unmatched = mask_to_cards(kept & ~melded)
    ordered = tuple(sorted(parsed, key=lambda meld: meld[0].index))
    return Arrangement(ordered, unmatched, sum(card.points for card in unmatched))


def choose_knocker_arrangement(knocker: int, defender: int) -> tuple[Arrangement, int]:
    """The knocker's minimal arrangement least helpful to the defender (2.8.3), and the
    defender's deadwood after layoffs against it."""
    best: tuple[Arrangement, int] | None = None
    for arrangement in minimal_arrangements(knocker):
        _, d1 = lay_off_mask(arrangement.melds, defender)
        if best is None or d1 > best[1]:
            best = (arrangement, d1)
    assert best is not None
    return best


def score_masks(
    knocker: int,
    defender: int,
    ruleset: Ruleset,
    terms: HandTerms,
    knocker_melds: Iterable[str | Iterable[Card | str]] | None = None,
) -> HandScore:
    """``score_hand`` on masks; see there."""
    if defender.bit_count() != 10:
        raise InvalidCards(f"the defender must hold 10 cards, not {defender.bit_count()}")
    if knocker & defender:
        raise InvalidCards("knocker and defender hold the same card")
    m = terms.multiplier
    d0 = deadwood_of_mask(defender)
    count = knocker.bit_count()
    if count == 11:
        if not ruleset.big_gin_enabled:
            raise IllegalKnock("big gin is not enabled at this table")
        if deadwood_of_mask(knocker) != 0:
            raise IllegalKnock("big gin needs all 11 cards in melds")
        return HandScore(
            BIG_GIN,
            "knocker",
            m * (ruleset.big_gin_bonus + d0),
            0,
            d0,
            d0,
            arrange_mask(knocker),
            lay_off_on((), defender),
            m,
            terms.knock_limit,
        )
    if count != 10:
        raise InvalidCards(f"the knocker keeps 10 cards (11 for big gin), not {count}")

    if ruleset.knocker_arrangement is KnockerArrangement.MANUAL and knocker_melds is not None:
        shown = _manual_arrangement(knocker, knocker_melds)
    else:
        shown = arrange_mask(knocker)
    k = shown.deadwood
    if k > terms.knock_limit:
        raise KnockLimitExceeded(f"deadwood {k} is over the knock limit {terms.knock_limit}")
    if k == 0:
        return HandScore(
            GIN,
            "knocker",
            m * (ruleset.gin_bonus + d0),
            0,
            d0,
            d0,
            shown,
            lay_off_on((), defender),
            m,
            terms.knock_limit,
        )
    if ruleset.knocker_arrangement is KnockerArrangement.MANUAL and knocker_melds is not None:
        _, d1 = lay_off_mask(shown.melds, defender)
    else:
        shown, d1 = choose_knocker_arrangement(knocker, defender)
    layoff = lay_off_on(shown.melds, defender)
    if k < d1:
        return HandScore(
            KNOCK, "knocker", m * (d1 - k), k, d1, d0, shown, layoff, m, terms.knock_limit
        )
    return HandScore(
        UNDERCUT,
        "defender",
        m * (k - d1 + ruleset.undercut_bonus),
        k,
        d1,
        d0,
        shown,
        layoff,
        m,
        terms.knock_limit,
    )


def score_hand(
    knocker_cards: str | Iterable[Card | str],
    defender_cards: str | Iterable[Card | str],
    ruleset: Ruleset | None = None,
    *,
    upcard: Card | str | None = None,
    knocker_melds: Iterable[str | Iterable[Card | str]] | None = None,
) -> HandScore:
    """Score a hand that ended with a knock (2.9).

    ``knocker_cards``: the 10 cards kept after the knock discard, or all 11 for big gin.
    ``upcard``: the hand's initial upcard, needed in Oklahoma mode (3.3).
    ``knocker_melds``: the knocker's own arrangement when the ruleset is ``MANUAL``.

    :raises KnockLimitExceeded: when the knocker's deadwood is over the knock limit.
    :raises IllegalKnock: for a big gin that is not enabled or whose 11 cards do not all meld,
        or manual melds that use cards the knocker does not hold.
    :raises InvalidCards: on wrong card counts or cards held by both players.
    """
    ruleset = ruleset or Ruleset()
    return score_masks(
        cards_to_mask(knocker_cards),
        cards_to_mask(defender_cards),
        ruleset,
        hand_terms(ruleset, upcard),
        knocker_melds,
    )
