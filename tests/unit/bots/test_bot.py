"""The practice bot plays legal, sensible Gin and beats the baselines."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from service.games.common.cards import random_deck
from service.games.gin.bot import Bot, decide, greedy_action, random_action
from service.games.gin.hand import Hand
from service.games.gin.ruleset import Ruleset
from tests.unit.rules.scenarios import deal

rulesets = st.builds(
    Ruleset,
    big_gin_enabled=st.booleans(),
    oklahoma=st.booleans(),
    dead_hand_rule=st.sampled_from(["AFTER_DISCARD", "FIFTIETH_CARD"]),
    opening=st.sampled_from(["PASS_SEQUENCE", "FREE_FIRST_DRAW"]),
)


@given(seed=st.integers(0, 2**32 - 1), ruleset=rulesets, eager=st.booleans())
def test_bot_only_plays_legal_actions(seed: int, ruleset: Ruleset, eager: bool) -> None:
    rng = random.Random(seed)
    hand = Hand.deal(random_deck(rng), rng.randrange(2), ruleset)
    bot = Bot(eager)
    while not hand.ended:
        seat = hand.to_act
        view = hand.view(seat)
        action = bot.decide(view) if seat == 0 else random_action(view, rng)
        assert action in view["legal_actions"]
        hand.apply(seat, action)


def test_bot_takes_an_upcard_that_melds_and_passes_one_that_does_not() -> None:
    hand = deal("7C 8C 2D 5D 9D JH KH 3S 6S QS", "AC 2C 3C 4D 5H 6H 7H 8S 9S TS", "9C")
    assert decide(hand.view(0)) == {"action": "TAKE_UPCARD"}
    hand = deal("7C 8C 2D 5D 9D JH KH 3S 6S QS", "AC 2C 3C 4D 5H 6H 7H 8S 9S TS", "KD")
    assert decide(hand.view(0)) == {"action": "PASS"}


def test_bot_goes_gin_and_discards_high_useless_cards() -> None:
    hand = deal("AC 2C 3C 4D 5D 6D 7H 8H 9H KS", "AD 3D 5H 7C 9S JC KD QH 2S 8D", "TH")
    hand.apply(0, "TAKE_UPCARD")
    assert decide(hand.view(0)) == {"action": "KNOCK", "card": "KS"}
    # Deadwood 7H 8H 2S KS + QD: the ten-point cards go, never a melded card or the 7-8 pair.
    hand = deal("AC 2C 3C 4D 5D 6D 7H 8H 2S KS", "AD 3D 5H 7C 9S JC KD QH 3S 8D", "TD", "QD")
    hand.apply(0, "PASS")
    hand.apply(1, "PASS")
    hand.apply(0, "DRAW_STOCK")
    assert decide(hand.view(0)) in (
        {"action": "DISCARD", "card": "KS"},
        {"action": "DISCARD", "card": "QD"},
    )


def points(players: tuple[Any, Any], hands: int, seed: int) -> tuple[int, int]:
    """Points won by policy 0 and policy 1 over ``hands`` hands, alternating seats."""
    rng = random.Random(seed)
    total = [0, 0]
    for i in range(hands):
        hand = Hand.deal(random_deck(rng), i % 2)
        order = (0, 1) if i % 4 < 2 else (1, 0)  # which policy sits in seat 0
        while not hand.ended:
            seat = hand.to_act
            hand.apply(seat, players[order[seat]](hand.view(seat)))
        out = hand.outcome
        assert out is not None
        if out.winner is not None:
            total[order[out.winner]] += out.points
    return total[0], total[1]


def test_bot_beats_greedy_and_random() -> None:
    rng = random.Random(11)
    bot = Bot().decide
    mine, theirs = points((bot, greedy_action), 240, seed=3)
    assert mine > 1.5 * theirs, (mine, theirs)
    mine, theirs = points((bot, lambda v: random_action(v, rng)), 60, seed=4)
    assert mine > 20 * max(theirs, 1), (mine, theirs)
