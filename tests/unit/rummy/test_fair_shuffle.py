"""The fair shuffle of a Rummy hand: the deal and SHUFFLE restocks from one stream (10.2,
11.3.1, 11.6.4)."""

from __future__ import annotations

import json

from service.games.common import fair
from service.games.common.cards import DECK, parse_cards
from service.games.rummy.fair import fair_shuffle
from service.games.rummy.hand import RummyHand, automatic_action
from service.games.rummy.rules import RummyRules
from tests.unit.rummy.scenarios import position

SEED = "11" * 32
SEEDS = ("seat0", "seat1", "seat3")
SHUFFLE = RummyRules(restock="SHUFFLE")


def test_11_6_4_the_deal_is_the_fair_shuffle_of_the_dealt_in_seeds() -> None:
    shuffle = fair_shuffle(SEED, SEEDS, 4)
    assert shuffle.deck == fair.shuffle(SEED, SEEDS, 4)[0]
    assert shuffle.deck == fair_shuffle(SEED, list(SEEDS), 4).deck  # deterministic
    assert sorted(shuffle.deck, key=lambda c: c.index) == list(DECK)  # a permutation
    assert fair_shuffle(SEED, SEEDS, 5).deck != shuffle.deck


def test_11_3_1_a_restock_continues_the_deals_stream() -> None:
    shuffle = fair_shuffle(SEED, SEEDS, 4)
    _, after_deal = fair.shuffle(SEED, SEEDS, 4)
    assert shuffle.counter == after_deal > 0
    pile = list(parse_cards("KS 3C 9D 4H TC 2S 8D QH JC 5S 7D AH"))
    order = shuffle(pile)
    assert sorted(order, key=lambda c: c.index) == sorted(pile, key=lambda c: c.index)
    in_display_order = sorted(pile, key=lambda c: c.index)
    assert order == fair.shuffle(SEED, SEEDS, 4, in_display_order, counter=after_deal)[0]
    assert order != fair.shuffle(SEED, SEEDS, 4, in_display_order)[0]  # not restarted
    assert shuffle(list(reversed(pile))) == order  # the pile's listing does not matter
    # The next restock starts after the blocks this one used.
    _, after_first = fair.shuffle(SEED, SEEDS, 4, in_display_order, counter=after_deal)
    assert shuffle.at([len(pile)]).counter == after_first > after_deal


def test_11_3_1_a_hand_restocks_twice_from_one_stream_and_restores_alike() -> None:
    shuffle = fair_shuffle(SEED, ("a", "b"), 1)
    hand = position(["2C 5D", "KS"], to_act=0, discard="3C 9D KH 4S", rest=1, rules=SHUFFLE)
    hand = RummyHand.from_dict(hand.to_dict(), shuffle)
    before_second: RummyHand | None = None
    while hand.restocks < 2:
        if hand.restocks == 1 and not hand.stock and hand.phase.value == "DRAW":
            before_second = hand
        assert hand.to_act is not None
        hand = hand.apply(hand.to_act, automatic_action(hand))
    orders = [e["order"] for e in hand.log if e.get("restock") == "SHUFFLE"]
    assert orders[0] == [c.code for c in shuffle(list(parse_cards("3C 9D KH 4S")))]
    second = list(parse_cards(orders[1]))
    assert orders[1] == [c.code for c in shuffle.at([4])(second)]
    assert orders[1] != [c.code for c in shuffle(second)]  # the counter moved on
    assert before_second is not None
    restored = RummyHand.from_dict(json.loads(json.dumps(before_second.to_dict())), shuffle)
    assert restored.to_act is not None
    again = restored.apply(restored.to_act, automatic_action(restored))
    assert again.log[-1]["order"] == orders[1]
    twice = before_second.apply(restored.to_act, automatic_action(restored))
    assert twice.log[-1]["order"] == orders[1]  # the same state shuffles the same way
