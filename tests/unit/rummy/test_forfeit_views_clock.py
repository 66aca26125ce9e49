"""The automatic action (11.6.1), forfeits within a hand (11.6.3) and views (11.6.5)."""

from __future__ import annotations

import json
import re

import pytest

from service.games.common.errors import RulesError
from service.games.rummy.actions import RummyAction
from service.games.rummy.errors import HandOver, NoSuchSeat
from service.games.rummy.hand import automatic_action
from service.games.rummy.rules import RummyRules
from tests.unit.rummy.scenarios import assert_refused, listed, play, position

CODE = re.compile(r"\b[A2-9TJQK][CDHS]\b")


# --- 11.6.1 the automatic action ---------------------------------------------------------------


def test_11_6_1_draws_from_the_stock() -> None:
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S")
    assert automatic_action(hand) == RummyAction.parse("DRAW_STOCK")


def test_11_6_1_turns_over_or_restocks_as_the_rules_force() -> None:
    turn = position(["2C 5D", "KS"], to_act=0, discard="4S 9H", rest=1)
    assert str(automatic_action(turn)) == "TURN_OVER"
    turned = turn.apply(0, automatic_action(turn))
    assert turned.restocks == 1 and "4S" in turned.cards_of(0)
    shuffle = position(
        ["2C 5D", "KS"], to_act=0, discard="4S 9H", rest=1, rules=RummyRules(restock="SHUFFLE")
    )
    assert str(automatic_action(shuffle)) == "DRAW_STOCK"
    assert shuffle.apply(0, automatic_action(shuffle)).restocks == 1


def test_11_6_1_discards_the_highest_value_card_not_taken_from_the_pile() -> None:
    hand = position(["9H 5D KC 2S", "3S 6H"], to_act=0, discard="KD").apply(0, "DRAW_DISCARD")
    assert str(automatic_action(hand)) == "DISCARD KC"
    ties = position(["JC 5D JD TH", "3S 6H"], to_act=0, discard="2D").apply(0, "DRAW_DISCARD")
    assert str(automatic_action(ties)) == "DISCARD JD"  # J beats T by rank; then the later suit
    ace = position(
        ["AC 5D KD", "3S 6H"], to_act=0, discard="2D", rules=RummyRules(ace_points=11)
    ).apply(0, "DRAW_DISCARD")
    assert str(automatic_action(ace)) == "DISCARD AC"


def test_11_6_1_never_melds() -> None:
    hand = position(["7C 7D 7H 2S", "3S 6H"], to_act=0, discard="4C", stock_top="KS")
    drawn = hand.apply(0, automatic_action(hand))
    assert "MELD 7C 7D 7H" in listed(drawn)
    assert str(automatic_action(drawn)) == "DISCARD KS"
    assert drawn.apply(0, automatic_action(drawn)).table_melds == ()


def test_11_6_1_no_automatic_action_once_the_hand_is_over() -> None:
    hand = position(["7C 7D", "3S 6H"], to_act=0, discard="4C", stock_top="7H")
    ended = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H")
    with pytest.raises(HandOver):
        automatic_action(ended)


# --- 11.6.3 forfeits ---------------------------------------------------------------------------


def test_11_6_3_a_forfeiter_takes_no_further_turn_and_its_cards_count_as_a_losers() -> None:
    hand = position(
        ["7C 7D 2S", "3S 6H 9C", "KC QC"],
        to_act=0,
        discard="4C",
        stock_top="8D 5H 7H",
        laid_before=[0],
    )
    gone = hand.forfeit(2, "resigned")
    assert gone.forfeited == (False, False, True) and gone.to_act == 0
    after = play(gone, "DRAW_STOCK", "DISCARD 8D", "DRAW_STOCK", "DISCARD 5H")
    assert after.to_act == 0  # seat 2 was skipped
    assert after.legal_actions(2) == []
    assert_refused(after, 2, "DRAW_STOCK", "NOT_YOUR_TURN")
    ended = play(after, "DRAW_STOCK", "MELD 7C 7D 7H", "DISCARD 2S")
    assert ended.outcome is not None and ended.outcome.winner == 0
    assert ended.outcome.counts == (0, 3 + 6 + 9, 20)
    assert ended.outcome.points == (38, -18, -20)
    assert ended.history()["actions"][0] == {
        "seq": 1,
        "seat": 2,
        "action": "FORFEIT",
        "reason": "resigned",
    }


def test_11_6_3_a_forfeit_mid_turn_ends_that_turn_without_a_discard() -> None:
    hand = position(["7C 7D 2S", "3S 6H 9C", "KC QC"], to_act=0, discard="4C", stock_top="8D")
    drawn = hand.apply(0, "DRAW_DISCARD")
    gone = drawn.forfeit(0)
    assert gone.to_act == 1 and gone.phase == "DRAW" and gone.turns == 0
    assert gone.taken is None and "4C" in gone.cards_of(0)  # the taken card stays in its hand


def test_11_6_3_the_last_active_player_wins_at_once() -> None:
    two = position(["7C 7D 2S", "3S 6H 9C"], to_act=0, discard="4C")
    won = two.forfeit(0)
    assert won.outcome is not None and won.outcome.winner == 1
    assert not won.outcome.went_rummy and won.outcome.points == (-16, 16)
    hand = position(["7C 7D 2S", "3S 6H 9C", "KC QC"], to_act=0, discard="4C")
    one = hand.forfeit(1)
    assert one.outcome is None
    won3 = one.forfeit(0)
    assert won3.outcome is not None and won3.outcome.winner == 2
    assert won3.outcome.points == (-16, -18, 34)


def test_11_6_3_forfeit_refusals() -> None:
    hand = position(["7C 7D 2S", "3S 6H 9C", "KC QC"], to_act=0, discard="4C")
    gone = hand.forfeit(1)
    with pytest.raises(RulesError) as err:
        gone.forfeit(1)
    assert err.value.code == "ALREADY_FORFEITED"
    with pytest.raises(NoSuchSeat):
        hand.forfeit(3)
    ended = gone.forfeit(2)
    with pytest.raises(HandOver):
        ended.forfeit(0)
    assert hand.forfeited == (False, False, False)  # the original is untouched


# --- 11.6.5 views ------------------------------------------------------------------------------


def test_11_6_5_a_player_sees_its_hand_the_table_the_pile_and_the_counts() -> None:
    hand = position(
        ["7C 7D 2S 5H", "3S 6H 9C", "KC QC"],
        to_act=0,
        discard="4C 8D",
        stock_top="JD",
        table=[(1, "TS JS QS")],
    )
    drawn = hand.apply(0, "DRAW_DISCARD")
    view = drawn.view(0)
    assert view["hand"] == ["7C", "7D", "8D", "5H", "2S"]  # display order
    assert view["discard_pile"] == ["4C"]
    assert view["table_melds"][0]["cards"] == ["TS", "JS", "QS"]
    assert view["card_counts"][0] == 5 and view["to_act"] == 0
    assert view["taken_from_discard"] == "8D"
    assert {a["action"] for a in view["legal_actions"]} == {"DISCARD"}
    other = drawn.view(1)
    assert other["hand"] == ["9C", "6H", "3S"] and other["legal_actions"] == []
    assert other["taken_from_discard"] is None
    for seat in (1, 2, None):
        shown = set(CODE.findall(json.dumps(drawn.view(seat))))
        assert not shown & {c.code for c in drawn.cards_of(0)}, seat
        assert "JD" not in shown  # a stock card
    spectator = drawn.view(None)
    assert "hand" not in spectator and "legal_actions" not in spectator
    with pytest.raises(NoSuchSeat):
        drawn.view(3)


def test_11_6_5_an_ended_hand_still_hides_hands_until_its_history() -> None:
    hand = position(["7C 7D", "3S 6H 9C"], to_act=0, discard="4C", stock_top="7H")
    ended = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H")
    view = ended.view(0)
    assert view["outcome"]["points"] == [36, -36]  # rummy: paid double
    assert not set(CODE.findall(json.dumps(view))) & {"3S", "6H", "9C"}
    assert ended.history()["final_hands"] == [[], ["9C", "6H", "3S"]]
