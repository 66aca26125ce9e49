"""Property tests of the hand state machine over random legal play-outs."""

from __future__ import annotations

import copy
import json
import random
import re

from hypothesis import given
from hypothesis import strategies as st

from service.games.common.cards import DECK, mask_to_cards, random_deck
from service.games.common.errors import RulesError
from service.games.gin.actions import Action, ActionKind
from service.games.gin.hand import Hand, Phase
from service.games.gin.melds import best_discard
from service.games.gin.playout import choose
from service.games.gin.ruleset import DeadHandRule, Opening, Ruleset
from tests.unit.budget import examples

CODE = re.compile(r"\b[A2-9TJQK][CDHS]\b")

rulesets = st.builds(
    Ruleset,
    opening=st.sampled_from(list(Opening)),
    dead_hand_rule=st.sampled_from(list(DeadHandRule)),
    big_gin_enabled=st.booleans(),
    oklahoma=st.booleans(),
)


def every_card_accounted_for(hand: Hand) -> None:
    places = [*hand.hands, sum(c.bit for c in hand.stock), sum(c.bit for c in hand.discard)]
    if hand.outcome is not None and hand.outcome.knock_card is not None:
        places.append(hand.outcome.knock_card.bit)
    total = 0
    for part in places:
        assert not total & part
        total |= part
    assert total == (1 << 52) - 1
    assert len(hand.stock) >= 2


def publicly_known(hand: Hand, seat: int | None) -> set[str]:
    """Cards a viewer may know: own hand, the discard pile, the upcard, cards taken openly
    from the discard pile, and own stock draws."""
    known = {str(c) for c in hand.discard} | {str(hand.upcard)}
    if seat is not None:
        known |= {str(c) for c in hand.cards_of(seat)}
    for entry in hand.log:
        visible = not entry.get("private") or entry["seat"] == seat
        face_down = entry["action"] in ("KNOCK", "GIN", "TAKE_DISCARD_AND_KNOCK")
        if "card" in entry and visible and not face_down:
            known.add(entry["card"])
        if "taken" in entry:
            known.add(entry["taken"])
    return known


def assert_views_hide_secrets(hand: Hand) -> None:
    for seat in (0, 1, None):
        text = json.dumps(hand.view(seat))
        shown = set(CODE.findall(text))
        leaked = shown - publicly_known(hand, seat)
        assert not leaked, f"seat {seat} sees {sorted(leaked)} in phase {hand.phase}"
        if seat is not None:
            other = {str(c) for c in hand.cards_of(1 - seat)}
            secret = other - publicly_known(hand, seat)
            assert not secret & shown


# Each example checks every step of a whole hand (views, JSON round trips): keep CI bounded.
@examples(100)
@given(seed=st.integers(0, 2**32 - 1), ruleset=rulesets)
def test_random_play_out_keeps_every_invariant(seed: int, ruleset: Ruleset) -> None:
    rng = random.Random(seed)
    hand = Hand.deal(random_deck(rng), rng.randrange(2), ruleset)
    steps = 0
    while not hand.ended:
        every_card_accounted_for(hand)
        assert_views_hide_secrets(hand)
        # Serialised through JSON, the state restores to an equal state...
        restored = Hand.from_dict(json.loads(json.dumps(hand.to_dict())))
        assert restored == hand
        legal = hand.legal_actions()
        assert legal, f"no legal action in {hand.phase}"
        assert hand.legal_actions(1 - hand.to_act) == []
        action = choose(rng, legal, knock_rate=0.5)
        hand.apply(hand.to_act, action)
        # ...which then evolves exactly as the original.
        restored.apply(restored.to_act, action)
        assert restored == hand
        steps += 1
        assert steps < 200
    every_card_accounted_for(hand)
    assert hand.outcome is not None
    assert hand.outcome.kind in ("knock", "undercut", "gin", "big_gin", "dead")
    if hand.outcome.kind == "big_gin":
        assert ruleset.big_gin_enabled
    history = hand.history()
    assert len(history["deck"]) == 52 and history["actions"] == [
        {k: v for k, v in e.items() if k != "private"} for e in hand.log
    ]
    assert Hand.from_dict(hand.to_dict()) == hand


ALL_ACTIONS = (
    [
        Action(k)
        for k in ActionKind
        if k not in ("DISCARD", "KNOCK", "GIN", "TAKE_DISCARD_AND_KNOCK")
    ]
    + [Action(ActionKind.DISCARD, c) for c in DECK]
    + [Action(ActionKind.KNOCK, c) for c in DECK]
    + [Action(ActionKind.TAKE_DISCARD_AND_KNOCK, c) for c in DECK[:13]]
)


@given(seed=st.integers(0, 2**32 - 1), ruleset=rulesets)
def test_exactly_the_legal_actions_apply(seed: int, ruleset: Ruleset) -> None:
    """Every listed action applies; every unlisted one is refused and changes nothing."""
    rng = random.Random(seed)
    hand = Hand.deal(random_deck(rng), rng.randrange(2), ruleset)
    for _ in range(rng.randrange(0, 60)):
        if hand.ended:
            break
        hand.apply(hand.to_act, choose(rng, hand.legal_actions(), knock_rate=0.3))
    legal = set(hand.legal_actions())
    before = copy.deepcopy(hand.to_dict())
    for action in rng.sample(ALL_ACTIONS, 40) + list(legal):
        for seat in (0, 1):
            trial = Hand.from_dict(before)
            if seat == hand.to_act and action in legal and not hand.ended:
                trial.apply(seat, action)
            else:
                try:
                    trial.apply(seat, action)
                except RulesError:
                    pass
                else:
                    raise AssertionError(f"{action} by {seat} applied but is not legal")
                assert trial.to_dict() == before


def test_play_outs_reach_every_ending() -> None:
    rng = random.Random(7)
    kinds: set[str] = set()
    ruleset = Ruleset(big_gin_enabled=True)
    for _ in range(3000):
        hand = Hand.deal(random_deck(rng), rng.randrange(2), ruleset)
        while not hand.ended:
            legal = hand.legal_actions()
            # A greedy player: big gin or gin at once, other knocks sometimes; otherwise it
            # keeps the lowest deadwood.
            enders = [a for a in legal if a.kind in ("KNOCK", "BIG_GIN")]
            if enders and (enders[-1].kind == "BIG_GIN" or rng.random() < 0.15):
                action = enders[-1]
            elif hand.phase is Phase.DISCARD:
                barred = hand.taken
                card, _ = best_discard(mask_to_cards(hand.hands[hand.to_act]), barred)
                action = Action(ActionKind.DISCARD, card)
            else:
                action = legal[0] if rng.random() < 0.5 else legal[-1]
            hand.apply(hand.to_act, action)
        assert hand.outcome is not None
        kinds.add(hand.outcome.kind)
        if kinds >= {"knock", "undercut", "gin", "big_gin", "dead"}:
            break
    assert kinds >= {"knock", "undercut", "gin", "big_gin", "dead"}
