"""A turn: the draw, melds and lay-offs, the discard (5.2, 5.3, 11.3.5-11.3.7)."""

from __future__ import annotations

import pytest

from service.games.common.cards import DECK, parse_cards
from service.games.rummy.actions import RummyAction
from service.games.rummy.hand import Phase, RummyHand
from service.games.rummy.melds import rummy_meld_kind
from service.games.rummy.rules import AceMode, RummyRules
from tests.unit.rummy.scenarios import assert_refused, listed, play, position

HIGH = RummyRules(ace_mode="HIGH_OR_LOW")


def two(first: str, second: str = "KS QD 2H", **kwargs: object) -> RummyHand:
    """Seat 0 to act against seat 1, the discard pile ending in 9S unless told."""
    kwargs.setdefault("discard", "9S")
    return position([first, second], to_act=0, **kwargs)  # type: ignore[arg-type]


# --- 5.2.1 the draw --------------------------------------------------------------------------


def test_5_2_1_draw_stock_takes_the_top_of_the_stock() -> None:
    hand = two("2C 5D", stock_top="8H 3S")
    after = hand.apply(0, "DRAW_STOCK")
    assert "8H" in after.cards_of(0)
    assert [c.code for c in after.stock[:1]] == ["3S"]
    assert after.phase is Phase.PLAY and after.taken is None


def test_5_2_1_the_upcard_is_an_ordinary_discard() -> None:
    hand = RummyHand.deal(3, 0, [c.code for c in DECK])
    upcard = hand.discard[-1]
    after = hand.apply(1, "DRAW_DISCARD")
    assert upcard in after.cards_of(1)
    assert after.discard == () and after.taken == upcard


def test_5_2_1_exactly_one_draw_first() -> None:
    hand = two("7C 7D 7H 2S")
    assert listed(hand) == {"DRAW_STOCK", "DRAW_DISCARD"}
    assert_refused(hand, 0, "MELD 7C 7D 7H", "MUST_DRAW_FIRST")
    assert_refused(hand, 0, "DISCARD 2S", "MUST_DRAW_FIRST")
    drawn = hand.apply(0, "DRAW_STOCK")
    assert_refused(drawn, 0, "DRAW_STOCK", "ALREADY_DREW")
    assert_refused(drawn, 0, "DRAW_DISCARD", "ALREADY_DREW")


# --- 5.2.2 melds and lay-offs ----------------------------------------------------------------


def test_5_2_2_melds_and_lay_offs_in_any_number_and_order() -> None:
    hand = two("7C 7D 7H 3S 4S 5S JD QD 2C", "KS 3H 2H", stock_top="6S", table=[(1, "8D 9D TD")])
    after = play(hand, "DRAW_STOCK", "LAY_OFF 0 JD QD", "MELD 3S 4S 5S 6S", "MELD 7D 7C 7H")
    assert after.to_act == 0 and after.phase is Phase.PLAY
    assert [c.code for c in after.cards_of(0)] == ["2C"]
    melds = after.table_melds
    assert [[c.code for c in m.cards] for m in melds] == [
        ["8D", "9D", "TD", "JD", "QD"],
        ["3S", "4S", "5S", "6S"],
        ["7C", "7D", "7H"],
    ]
    assert [m.melded_by for m in melds] == [1, 0, 0]
    assert melds[0].placed_by("JD") == 0 and melds[0].placed_by("9D") == 1


@pytest.mark.parametrize("cards", ["7C 8D 9H", "7C 7D", "7C 7D 8C", "3S 4S 6S", "KS AS 2S"])
def test_5_2_2_a_meld_is_a_set_or_a_run(cards: str) -> None:
    hand = two("7C 7D 7H 8C 8D 9H 3S 4S 6S KS AS", "2S 2H QD")
    drawn = hand.apply(0, "DRAW_STOCK")
    if "2S" in cards:
        assert_refused(drawn, 0, f"MELD {cards}", "CARD_NOT_IN_HAND")
    else:
        assert_refused(drawn, 0, f"MELD {cards}", "INVALID_MELD")


@pytest.mark.parametrize("cards", ["JH", "JH QH", "7H", "6H 7H"])
def test_5_2_2_a_run_is_extended_at_either_end(cards: str) -> None:
    # Onto 8 9 10 one may add J, or J Q, or 7, or 6 7.
    hand = two("6H 7H JH QH 2C", table=[(1, "8H 9H TH")]).apply(0, "DRAW_STOCK")
    assert f"LAY_OFF 0 {cards}" in listed(hand)
    after = hand.apply(0, f"LAY_OFF 0 {cards}")
    assert set(after.table_melds[0].cards) == set(parse_cards(f"8H 9H TH {cards}"))
    assert after.table_melds[0].layoffs[0].seat == 0


def test_5_2_2_a_lay_off_must_leave_a_meld() -> None:
    hand = two("QH 5H 8C KD 4D", table=[(1, "8H 9H TH"), (1, "4C 4H 4S")]).apply(0, "DRAW_STOCK")
    assert_refused(hand, 0, "LAY_OFF 0 QH", "INVALID_LAY_OFF")  # a gap
    assert_refused(hand, 0, "LAY_OFF 0 5H", "INVALID_LAY_OFF")
    assert_refused(hand, 0, "LAY_OFF 1 KD", "INVALID_LAY_OFF")
    assert_refused(hand, 0, "LAY_OFF 2 4D", "NO_SUCH_MELD")
    assert_refused(hand, 0, "LAY_OFF 0 JH", "CARD_NOT_IN_HAND")
    assert "LAY_OFF 1 4D" in listed(hand)


def test_5_2_2_a_set_takes_cards_up_to_four() -> None:
    hand = two("4D 2C 9C", table=[(1, "4C 4H 4S")]).apply(0, "DRAW_STOCK")
    after = hand.apply(0, "LAY_OFF 0 4D")
    assert len(after.table_melds[0].cards) == 4
    assert not any(a.kind == "LAY_OFF" for a in after.legal_actions())


def test_5_2_2_melds_are_listed_exhaustively() -> None:
    hand = two("7C 7D 7H 7S 3S 4S 5S 6S 2C", stock_top="KD").apply(0, "DRAW_STOCK")
    melds = {a for a in listed(hand) if a.startswith("MELD")}
    assert melds == {
        "MELD 7C 7D 7H",
        "MELD 7C 7D 7S",
        "MELD 7C 7H 7S",
        "MELD 7D 7H 7S",
        "MELD 7C 7D 7H 7S",
        "MELD 3S 4S 5S",
        "MELD 4S 5S 6S",
        "MELD 5S 6S 7S",
        "MELD 3S 4S 5S 6S",
        "MELD 4S 5S 6S 7S",
        "MELD 3S 4S 5S 6S 7S",
    }


# --- 5.2.3 - 5.2.5 the end of a turn -----------------------------------------------------------


def test_5_2_3_the_turn_ends_with_a_discard() -> None:
    hand = two("7C 7D 7H 2S 5C", stock_top="KD")
    melded = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H")
    assert melded.to_act == 0 and melded.phase is Phase.PLAY
    passed = melded.apply(0, "DISCARD KD")
    assert passed.to_act == 1 and passed.phase is Phase.DRAW
    assert passed.discard[-1].code == "KD" and passed.turns == 1


def test_5_2_3_the_card_taken_from_the_discard_pile_cannot_be_discarded_that_turn() -> None:
    hand = two("2C 5D 8S", discard="4H 9S").apply(0, "DRAW_DISCARD")
    assert hand.taken is not None and hand.taken.code == "9S"
    assert_refused(hand, 0, "DISCARD 9S", "DISCARD_PILE_CARD_BARRED")
    assert {a for a in listed(hand) if a.startswith("DISCARD")} == {
        "DISCARD 2C",
        "DISCARD 5D",
        "DISCARD 8S",
    }
    # In a later turn it is an ordinary card.
    later = play(hand, "DISCARD 2C", "DRAW_STOCK", "DISCARD KS", "DRAW_STOCK")
    assert later.to_act == 0 and "DISCARD 9S" in listed(later)


def test_5_2_3_a_discard_that_empties_the_hand_goes_out() -> None:
    hand = two("7C 7D 2S", stock_top="7H", laid_before=[0])
    ended = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H", "DISCARD 2S")
    assert ended.outcome is not None and ended.outcome.winner == 0
    assert ended.phase is Phase.ENDED and ended.to_act is None


def test_5_2_4_leaving_only_the_taken_card_is_refused_and_not_listed() -> None:
    hand = two("7C 7D 7H", discard="2D").apply(0, "DRAW_DISCARD")
    assert_refused(hand, 0, "MELD 7C 7D 7H", "NO_LEGAL_DISCARD_LEFT")
    lay = two("6C", discard="9H", table=[(1, "3C 4C 5C")]).apply(0, "DRAW_DISCARD")
    assert_refused(lay, 0, "LAY_OFF 0 6C", "NO_LEGAL_DISCARD_LEFT")
    assert listed(lay) == {"DISCARD 6C"}
    # Laying off the taken card itself is fine: the card left can be discarded.
    ok = two("9H", discard="6C", table=[(1, "3C 4C 5C")]).apply(0, "DRAW_DISCARD")
    assert listed(ok) == {"LAY_OFF 0 6C", "DISCARD 9H"}


def test_5_2_5_must_discard_to_go_out_refuses_emptying_the_hand_by_melding() -> None:
    rules = RummyRules(must_discard_to_go_out=True)
    hand = two("7C 7D", stock_top="7H", rules=rules).apply(0, "DRAW_STOCK")
    assert_refused(hand, 0, "MELD 7C 7D 7H", "MUST_DISCARD_TO_GO_OUT")
    lay = two("7C", stock_top="8C", table=[(1, "4C 5C 6C")], rules=rules).apply(0, "DRAW_STOCK")
    assert_refused(lay, 0, "LAY_OFF 0 7C 8C", "MUST_DISCARD_TO_GO_OUT")
    assert "LAY_OFF 0 7C" in listed(lay)
    ended = play(lay, "LAY_OFF 0 7C", "DISCARD 8C")
    assert ended.outcome is not None and ended.outcome.winner == 0


def test_5_2_5_by_default_a_player_may_go_out_by_melding() -> None:
    hand = two("7C 7D", stock_top="7H").apply(0, "DRAW_STOCK")
    assert "MELD 7C 7D 7H" in listed(hand)
    ended = hand.apply(0, "MELD 7C 7D 7H")
    assert ended.outcome is not None and ended.outcome.winner == 0
    assert ended.discard[-1].code == "9S"  # no final discard


# --- 5.3 ownership ---------------------------------------------------------------------------


def test_5_3_anyone_lays_off_onto_any_meld_and_who_did_what_is_recorded() -> None:
    hand = position(
        ["2C 9D", "TH 5S", "JH 6D"],
        to_act=1,
        discard="KC",
        stock_top="3D 4D",
        table=[(0, "7H 8H 9H")],
    )
    after = play(hand, "DRAW_STOCK", "LAY_OFF 0 TH", "DISCARD 3D", "DRAW_STOCK", "LAY_OFF 0 JH")
    meld = after.table_melds[0]
    assert [c.code for c in meld.cards] == ["7H", "8H", "9H", "TH", "JH"]
    assert (meld.melded_by, [(lay.seat, [c.code for c in lay.cards]) for lay in meld.layoffs]) == (
        0,
        [(1, ["TH"]), (2, ["JH"])],
    )


# --- 11.3.5 - 11.3.7 -------------------------------------------------------------------------


def test_11_3_5_several_cards_at_once_and_both_ends_at_once() -> None:
    hand = two("6H 7H JH 2C", table=[(1, "8H 9H TH")]).apply(0, "DRAW_STOCK")
    assert "LAY_OFF 0 6H 7H JH" in listed(hand)
    after = hand.apply(0, "LAY_OFF 0 JH 7H 6H")
    assert [c.code for c in after.table_melds[0].cards] == ["6H", "7H", "8H", "9H", "TH", "JH"]


def test_11_3_5_lay_off_onto_a_meld_made_earlier_in_the_same_turn() -> None:
    hand = two("8H 9H TH JH 2C").apply(0, "DRAW_STOCK")
    after = play(hand, "MELD 8H 9H TH", "LAY_OFF 0 JH")
    assert len(after.table_melds) == 1 and len(after.table_melds[0].cards) == 4


def test_11_3_6_high_or_low_ace_above_the_king() -> None:
    low = two("QH KH AH 2C").apply(0, "DRAW_STOCK")
    assert_refused(low, 0, "MELD QH KH AH", "INVALID_MELD")
    high = two("QH KH AH 2C", rules=HIGH).apply(0, "DRAW_STOCK")
    assert "MELD AH QH KH" in listed(high)  # display order
    assert high.apply(0, "MELD QH KH AH").table_melds[0].cards == parse_cards("AH QH KH")


def test_11_3_6_never_both_ends_and_never_wrapping() -> None:
    for rules in (RummyRules(), HIGH):
        hand = two("KH AH 2H 5C", "KS QD 3C", rules=rules).apply(0, "DRAW_STOCK")
        assert_refused(hand, 0, "MELD KH AH 2H", "INVALID_MELD")
        lay = two("KH 5C", "KS QD 3C", table=[(1, "AH 2H 3H")], rules=rules)
        lay = lay.apply(0, "DRAW_STOCK")
        assert_refused(lay, 0, "LAY_OFF 0 KH", "INVALID_LAY_OFF")


def test_11_3_6_lay_off_an_ace_above_the_king_only_when_high_or_low() -> None:
    low = two("AH 5C", table=[(1, "JH QH KH")]).apply(0, "DRAW_STOCK")
    assert_refused(low, 0, "LAY_OFF 0 AH", "INVALID_LAY_OFF")
    high = two("AH 5C", table=[(1, "JH QH KH")], rules=HIGH).apply(0, "DRAW_STOCK")
    assert "LAY_OFF 0 AH" in listed(high)
    below = two("TH 5C", table=[(1, "QH KH AH")], rules=HIGH).apply(0, "DRAW_STOCK")
    assert_refused(below, 0, "LAY_OFF 0 TH", "INVALID_LAY_OFF")
    jack = two("JH TH 5C", table=[(1, "QH KH AH")], rules=HIGH).apply(0, "DRAW_STOCK")
    assert {a for a in listed(jack) if a.startswith("LAY_OFF")} == {
        "LAY_OFF 0 JH",
        "LAY_OFF 0 TH JH",
    }


def test_11_3_6_the_thirteen_card_run_reads_ace_low() -> None:
    suit = parse_cards("AH 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH")
    assert rummy_meld_kind(suit, AceMode.LOW) == "run"
    assert rummy_meld_kind(suit, AceMode.HIGH_OR_LOW) == "run"
    for rules in (RummyRules(), HIGH):
        hand = two(
            "AH 5C", "KS QD 2C", table=[(1, "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH")], rules=rules
        )
        drawn = hand.apply(0, "DRAW_STOCK")
        assert [a for a in listed(drawn) if a.startswith("LAY_OFF")] == ["LAY_OFF 0 AH"]
        assert len(drawn.apply(0, "LAY_OFF 0 AH").table_melds[0].cards) == 13


def test_11_3_7_cards_are_compared_as_sets_and_shown_in_display_order() -> None:
    assert RummyAction.parse("MELD 7S 7H 7D") == RummyAction.parse("MELD 7D 7H 7S")
    hand = two("7S 7H 7D 2C").apply(0, "DRAW_STOCK")
    after = hand.apply(0, "MELD 7S 7H 7D")
    assert [c.code for c in after.table_melds[0].cards] == ["7D", "7H", "7S"]
    assert after.view(0)["hand"] == sorted(
        after.view(0)["hand"], key=lambda c: parse_cards(c)[0].index
    )
