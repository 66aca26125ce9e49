"""Play a Rummy hand out with a random legal policy: for property tests, benchmarks and
simulation.

The policy is random but not silly, so that play-outs reach every ending: when it may meld
or lay off it does so with probability ``meld_rate`` (a low rate makes long hands that run
the stock out), otherwise it picks uniformly among the draws or the discards.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from service.games.common.cards import Card, random_deck
from service.games.rummy.actions import RummyAction, RummyActionKind
from service.games.rummy.hand import RummyHand, Shuffler
from service.games.rummy.rules import RummyRules

_LAY_DOWN = (RummyActionKind.MELD, RummyActionKind.LAY_OFF)


def choose(rng: random.Random, actions: Sequence[RummyAction], meld_rate: float) -> RummyAction:
    """A meld or lay-off with probability ``meld_rate`` when one is legal, else a uniformly
    random other action (a draw or a discard)."""
    lay_downs = [a for a in actions if a.kind in _LAY_DOWN]
    if lay_downs and rng.random() < meld_rate:
        return lay_downs[int(rng.random() * len(lay_downs))]
    others = [a for a in actions if a.kind not in _LAY_DOWN]
    return others[int(rng.random() * len(others))]


def seeded_shuffler(rng: random.Random) -> Shuffler:
    """A reproducible SHUFFLE restock drawn from ``rng`` (real hands use the fair shuffle)."""

    def shuffle(cards: list[Card]) -> list[Card]:
        return rng.sample(cards, len(cards))

    return shuffle


def play_out(
    rng: random.Random,
    players: int,
    rules: RummyRules | None = None,
    *,
    meld_rate: float = 0.8,
    dealer: int | None = None,
) -> RummyHand:
    """Deal a hand and play it to its end with the random policy; returns the ended hand."""
    hand = RummyHand.deal(
        players,
        rng.randrange(players) if dealer is None else dealer,
        random_deck(rng),
        rules,
        seeded_shuffler(rng),
    )
    while hand.to_act is not None:
        hand = hand.apply(hand.to_act, choose(rng, hand.legal_actions(), meld_rate))
    return hand
