"""Play a hand out with a random legal policy: for property tests, benchmarks and simulation.

The policy is random but not silly, so that play-outs reach every ending: it knocks whenever
a knock is legal (with probability ``knock_rate``), otherwise picks uniformly among the
other legal actions.
"""

from __future__ import annotations

import random

from service.games.common.cards import Card, mask_to_cards, random_deck
from service.games.gin.actions import Action, ActionKind, with_card
from service.games.gin.hand import Hand, Phase
from service.games.gin.ruleset import Ruleset

_ENDINGS = (ActionKind.KNOCK, ActionKind.BIG_GIN, ActionKind.TAKE_DISCARD_AND_KNOCK)


def choose(rng: random.Random, actions: list[Action], knock_rate: float = 0.9) -> Action:
    """Knock (or big gin) with probability ``knock_rate`` when legal; else a uniform choice
    among the other legal actions."""
    if len(actions) == 2 and actions[0].kind not in _ENDINGS:  # a draw or offer step
        return actions[rng.random() < 0.5]
    enders = [a for a in actions if a.kind in _ENDINGS]
    if enders:
        if rng.random() < knock_rate:
            return enders[int(rng.random() * len(enders))]
        others = [a for a in actions if a.kind not in _ENDINGS]
        return others[int(rng.random() * len(others))]
    return actions[int(rng.random() * len(actions))]


def play_out(
    rng: random.Random,
    ruleset: Ruleset | None = None,
    *,
    deck: list[Card] | list[str] | None = None,
    dealer: int | None = None,
    knock_rate: float = 0.9,
) -> Hand:
    """Deal a hand and play it to its end with the random policy; returns the ended hand."""
    hand = Hand.deal(
        deck or random_deck(rng), rng.randrange(2) if dealer is None else dealer, ruleset
    )
    # The discard step is most of a hand: choose there without listing every legal action
    # (the same policy as ``choose``: a knock with probability knock_rate when one is legal,
    # otherwise a uniformly random discard). Big gin tables take the general path.
    fast = not hand.ruleset.big_gin_enabled
    random_ = rng.random
    while hand.phase is not Phase.ENDED:
        seat = hand.to_act
        if fast and hand.phase is Phase.DISCARD:
            mask = hand.hands[seat]
            barred = 0 if hand.taken is None else hand.taken.bit
            knocks = hand.knock_cards()
            if knocks and random_() < knock_rate:
                action = with_card(ActionKind.KNOCK, knocks[int(random_() * len(knocks))])
            else:
                cards = mask_to_cards(mask & ~barred)
                action = with_card(ActionKind.DISCARD, cards[int(random_() * len(cards))])
        else:
            action = choose(rng, hand.legal_actions(), knock_rate)
        hand.apply(seat, action)
    return hand
