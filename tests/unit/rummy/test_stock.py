"""An empty stock: turning the pile over, shuffling it, and the voids (5.5, 11.3.1-11.3.3,
11.7.1; worked example 7.13)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.games.common.cards import Card, parse_cards
from service.games.rummy.errors import InvalidShuffle
from service.games.rummy.hand import Phase, RummyHand, Void
from service.games.rummy.rules import RummyRules
from tests.unit.rummy.scenarios import assert_refused, listed, play, position

EXAMPLES = json.loads((Path(__file__).parent / "worked_examples.json").read_text())
SHUFFLE = RummyRules(restock="SHUFFLE")


class RecordingShuffler:
    """Reverses the pile and remembers what it was given."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, cards: list[Card]) -> list[Card]:
        self.calls.append([c.code for c in cards])
        return list(reversed(cards))


def empty_stock(discard: str, rules: RummyRules | None = None, **kwargs: Any) -> RummyHand:
    """Seat 0 to draw from an empty stock; seat 1 holds every card named nowhere."""
    return position(["2C 5D", "KS"], to_act=0, discard=discard, rest=1, rules=rules, **kwargs)


@pytest.mark.parametrize("case", EXAMPLES["7.13"]["cases"], ids=lambda c: c["action"])
def test_7_13_rummy_stock_exhaustion(case: dict[str, str]) -> None:
    hand = empty_stock(EXAMPLES["7.13"]["discard"])
    assert hand.stock == ()
    after = hand.apply(0, case["action"])
    assert parse_cards(case["drawn"])[0] in after.cards_of(0)
    assert after.stock == parse_cards(case["stock"])
    assert after.discard == parse_cards(case["discard"])


def test_5_5_1_turn_over_is_a_choice_with_taking_the_discard() -> None:
    hand = empty_stock("3C 9D KH 4S")
    assert listed(hand) == {"DRAW_DISCARD", "TURN_OVER"}
    turned = hand.apply(0, "TURN_OVER")
    assert turned.restocks == 1 and turned.taken is None
    assert turned.discard == ()  # empty until this player discards
    after = turned.apply(0, "DISCARD 2C")
    assert after.discard == parse_cards("2C")


def test_5_5_2_shuffle_restocks_automatically_from_the_whole_pile() -> None:
    shuffler = RecordingShuffler()
    hand = empty_stock("3C 9D KH 4S", SHUFFLE, shuffler=shuffler)
    assert listed(hand) == {"DRAW_STOCK"}
    after = hand.apply(0, "DRAW_STOCK")
    assert shuffler.calls == [["3C", "9D", "KH", "4S"]]  # bottom card first, top included
    assert "4S" in after.cards_of(0)  # the shuffler's first card is the new stock's top
    assert after.stock == parse_cards("KH 9D 3C")
    assert after.discard == () and after.restocks == 1 and after.taken is None


def test_5_5_3_the_discard_pile_is_never_empty_at_the_start_of_a_turn() -> None:
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S", stock_top="8C 9C")
    after = play(hand, "DRAW_DISCARD", "DISCARD 2C")
    assert after.phase is Phase.DRAW and after.discard == parse_cards("2C")


def test_5_5_4_a_void_when_the_restock_limit_is_spent() -> None:
    rules = RummyRules(max_restocks=1)
    hand = position(
        ["2C 5D", "KS"], to_act=0, discard="3C", stock_top="9D", rest=1, rules=rules, restocks=1
    )
    ended = play(hand, "DRAW_STOCK", "DISCARD 2C")
    assert ended.outcome is not None
    assert ended.outcome.void is Void.MAX_RESTOCKS and ended.outcome.winner is None
    assert ended.outcome.points == (0, 0) and ended.outcome.counts == (0, 0)


def test_5_5_4_a_void_after_max_turns_completed_turns() -> None:
    hand = position(["2C 5D 8H", "KS 6H 3D"], to_act=0, discard="4S", rules=RummyRules(max_turns=3))
    after = play(hand, "DRAW_STOCK", "DISCARD 2C", "DRAW_STOCK", "DISCARD KS")
    assert after.outcome is None and after.turns == 2
    ended = play(after, "DRAW_STOCK", "DISCARD 5D")
    assert ended.outcome is not None and ended.outcome.void is Void.MAX_TURNS
    assert ended.turns == 3


def test_11_3_1_shuffle_only_when_a_player_must_draw_not_when_the_last_card_goes() -> None:
    shuffler = RecordingShuffler()
    hand = position(
        ["2C 5D", "KS 6H"],
        to_act=0,
        discard="4S",
        stock_top="8C",
        rest=1,
        rules=SHUFFLE,
        shuffler=shuffler,
    )
    last = play(hand, "DRAW_STOCK", "DISCARD 2C")
    assert last.stock == () and shuffler.calls == []
    assert_refused(last, 1, "DRAW_DISCARD", "MUST_RESTOCK")
    assert_refused(last, 1, "TURN_OVER", "TURN_OVER_NOT_ALLOWED")
    after = last.apply(1, "DRAW_STOCK")
    assert shuffler.calls == [["4S", "2C"]] and after.restocks == 1
    assert "2C" in after.cards_of(1)


def test_11_3_1_the_shuffle_is_recorded_in_the_history_and_hidden_until_the_end() -> None:
    shuffler = RecordingShuffler()
    hand = position(
        ["2C 5D", "7H 7D"], to_act=1, discard="4S 3C 7C", rest=0, rules=SHUFFLE, shuffler=shuffler
    )
    ended = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H")
    assert ended.outcome is not None and ended.outcome.winner == 1
    entry = ended.history()["actions"][0]
    assert entry["restock"] == "SHUFFLE" and entry["order"] == ["7C", "3C", "4S"]
    # While the hand runs, nobody sees the order.
    mid = hand.apply(1, "DRAW_STOCK")
    for seat in (0, 1, None):
        assert "order" not in json.dumps(mid.view(seat))


def test_11_3_1_a_shuffle_counts_as_a_restock() -> None:
    rules = RummyRules(restock="SHUFFLE", max_restocks=1)
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S", rest=1, rules=rules)
    after = play(hand, "DRAW_STOCK", "DISCARD 2C")  # the shuffle, one card; it is drawn
    assert after.outcome is not None and after.outcome.void is Void.MAX_RESTOCKS


def test_11_3_1_a_shuffler_must_return_the_piles_cards() -> None:
    hand = empty_stock("3C 9D", SHUFFLE, shuffler=lambda cards: cards[:1])
    with pytest.raises(InvalidShuffle):
        hand.apply(0, "DRAW_STOCK")
    bad = empty_stock("3C 9D", SHUFFLE, shuffler=lambda cards: ["3C", "XX"])
    with pytest.raises(InvalidShuffle):
        bad.apply(0, "DRAW_STOCK")


def test_11_3_2_turn_over_only_when_the_stock_is_empty() -> None:
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S", stock_top="8C")
    assert_refused(hand, 0, "TURN_OVER", "TURN_OVER_NOT_ALLOWED")
    empty = empty_stock("3C 9D")
    assert_refused(empty, 0, "DRAW_STOCK", "STOCK_EMPTY")


def test_11_3_2_turning_over_a_one_card_pile_then_discarding_it() -> None:
    hand = empty_stock("4S")
    turned = hand.apply(0, "TURN_OVER")
    assert turned.restocks == 1 and "4S" in turned.cards_of(0)
    assert turned.stock == () and turned.discard == ()
    assert "DISCARD 4S" in listed(turned)  # drawn from the stock, so not barred
    after = turned.apply(0, "DISCARD 4S")
    assert after.discard == parse_cards("4S") and after.to_act == 1


def test_11_3_3_the_restock_limit_voids_even_though_the_discard_could_be_taken() -> None:
    rules = RummyRules(max_restocks=0)
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S", stock_top="8C", rest=1, rules=rules)
    ended = play(hand, "DRAW_STOCK", "DISCARD 2C")
    assert ended.outcome is not None and ended.outcome.void is Void.MAX_RESTOCKS


def test_11_3_3_turns_count_after_restocks_and_going_out_by_a_discard_beats_the_limit() -> None:
    rules = RummyRules(max_turns=2)
    hand = position(
        ["2C 5D", "7H 7D 7C"], to_act=0, discard="4S", stock_top="8C", rest=0, rules=rules
    )
    after = play(hand, "DRAW_STOCK", "DISCARD 8C")  # turn 1, the stock is now empty
    assert after.turns == 1 and after.stock == ()
    ended = play(after, "TURN_OVER", "MELD 7C 7D 7H", "DISCARD 4S")  # turn 2, out
    assert ended.outcome is not None and ended.outcome.void is None
    assert ended.outcome.winner == 1 and ended.turns == 2


def test_11_3_3_a_completed_turn_ends_with_a_discard() -> None:
    hand = position(
        ["2C 5D 9H", "7H 7D KC"],
        to_act=0,
        discard="4S",
        stock_top="8C 7C",
        rules=RummyRules(max_turns=2),
    )
    after = play(hand, "DRAW_STOCK", "DISCARD 8C", "DRAW_STOCK", "MELD 7C 7D 7H")
    assert after.turns == 1 and after.outcome is None  # the meld did not complete a turn


def test_11_7_1_turn_over_includes_the_draw() -> None:
    hand = empty_stock("3C 9D")
    turned = hand.apply(0, "TURN_OVER")
    assert turned.phase is Phase.PLAY and "3C" in turned.cards_of(0)
    assert_refused(turned, 0, "DRAW_STOCK", "ALREADY_DREW")


def test_11_7_1_no_cards_void_after_a_forfeit_mid_turn() -> None:
    hand = position(["2C 5D", "KS 6H", "QH"], to_act=0, discard="4S", rest=1)
    turned = hand.apply(0, "TURN_OVER")  # the one-card pile: stock and pile now empty
    assert turned.stock == () and turned.discard == ()
    ended = turned.forfeit(0)
    assert ended.outcome is not None and ended.outcome.void is Void.NO_CARDS
    assert ended.outcome.winner is None
