"""The hand state machine (docs/engine.md 2.1-2.12): deal, opening, turns, knocks, dead hands."""

from __future__ import annotations

import copy

import pytest

from service.games.common.cards import DECK
from service.games.common.errors import InvalidState, KnockLimitExceeded, RulesError
from service.games.gin.actions import Action
from service.games.gin.hand import Hand, HandOutcome, Phase, next_dealer
from service.games.gin.melds import deadwood
from service.games.gin.ruleset import DeadHandRule, KnockerArrangement, NextDealer, Opening, Ruleset
from service.games.gin.scoring import score_hand
from tests.unit.rules.scenarios import deal, deck_for

# Seat 0 is the first player (non-dealer) and seat 1 the dealer unless a test says otherwise.
LOW = "AC 2C 3C 4D 5D 6D 7H 8H 9H KS"  # three runs + KS: deadwood 10
JUNK = "AD 3D 5H 7C 9S JC KD QH 2S 8D"  # no melds, nothing close


def snapshot(hand: Hand) -> dict[str, object]:
    return copy.deepcopy(hand.to_dict())


def assert_rejected(hand: Hand, seat: int, action: str, code: str) -> None:
    before = snapshot(hand)
    with pytest.raises(RulesError) as err:
        hand.apply(seat, action)
    assert err.value.code == code
    assert hand.to_dict() == before, "a rejected action changed the state"


def test_deal_follows_deck_positions() -> None:
    deck = [str(c) for c in DECK]
    hand = Hand.deal(deck, dealer=1)
    # Cards 1, 3, ..., 19 to the non-dealer; 2, 4, ..., 20 to the dealer (2.1.2).
    assert [str(c) for c in hand.cards_of(0)] == sorted(deck[0:20:2], key=deck.index)
    assert [str(c) for c in hand.cards_of(1)] == sorted(deck[1:20:2], key=deck.index)
    assert str(hand.upcard) == deck[20]
    assert hand.discard == [hand.upcard]
    assert [str(c) for c in hand.stock] == deck[21:]
    assert len(hand.stock) == 31
    assert hand.phase is Phase.OFFER_1 and hand.to_act == 0


def test_deal_rejects_bad_decks() -> None:
    deck = [str(c) for c in DECK]
    with pytest.raises(InvalidState):
        Hand.deal(deck[:51], 0)
    with pytest.raises(InvalidState):
        Hand.deal(deck, 2)
    with pytest.raises(Exception, match="duplicate"):
        Hand.deal([*deck[:51], deck[0]], 0)


def test_opening_both_pass_then_first_player_must_draw_stock() -> None:
    # docs/engine.md 7.6: P2 deals, P1 is first player, upcard 9H.
    hand = deal(JUNK, LOW, "QC")
    assert_rejected(hand, 0, "DRAW_STOCK", "ACTION_NOT_ALLOWED")
    assert_rejected(hand, 1, "PASS", "NOT_YOUR_TURN")
    hand.apply(0, "PASS")
    assert hand.phase is Phase.OFFER_2 and hand.to_act == 1
    hand.apply(1, "PASS")
    assert hand.phase is Phase.FIRST_DRAW and hand.to_act == 0
    assert_rejected(hand, 0, "TAKE_UPCARD", "ACTION_NOT_ALLOWED")
    assert_rejected(hand, 0, "DRAW_DISCARD", "ACTION_NOT_ALLOWED")
    hand.apply(0, "DRAW_STOCK")
    assert len(hand.stock) == 30
    assert hand.phase is Phase.DISCARD and hand.to_act == 0
    hand.apply(0, "DISCARD KD")
    assert hand.phase is Phase.DRAW and hand.to_act == 1  # the dealer's normal turn


def test_dealer_takes_upcard_and_may_not_discard_it() -> None:
    hand = deal(JUNK, LOW, "QC")
    hand.apply(0, "PASS")
    hand.apply(1, "TAKE_UPCARD")
    assert hand.phase is Phase.DISCARD and hand.to_act == 1
    assert_rejected(hand, 1, "DISCARD QC", "DISCARD_PILE_CARD_BARRED")
    assert {"action": "DISCARD", "card": "QC"} not in hand.view(1)["legal_actions"]
    assert {"action": "DISCARD", "card": "KS"} in hand.view(1)["legal_actions"]
    hand.apply(1, "DISCARD KS")
    assert hand.phase is Phase.DRAW and hand.to_act == 0  # first player's normal turn
    assert [str(c) for c in hand.discard] == ["KS"]


def test_first_player_takes_upcard_then_dealer_has_normal_turn() -> None:
    hand = deal(JUNK, LOW, "QC")
    hand.apply(0, "TAKE_UPCARD")
    assert hand.taken is not None and str(hand.taken) == "QC"
    assert_rejected(hand, 0, "KNOCK QC", "DISCARD_PILE_CARD_BARRED")
    hand.apply(0, "DISCARD AD")
    assert hand.phase is Phase.DRAW and hand.to_act == 1
    # The barred card may be discarded on a later turn (2.5).
    hand.apply(1, "DRAW_STOCK")
    hand.apply(1, "DISCARD KS")
    hand.apply(0, "DRAW_STOCK")
    hand.apply(0, "DISCARD QC")
    assert str(hand.discard[-1]) == "QC"


def test_free_first_draw_opening() -> None:
    ruleset = Ruleset(opening=Opening.FREE_FIRST_DRAW)
    hand = deal(JUNK, LOW, "QC", ruleset=ruleset)
    assert hand.phase is Phase.DRAW and hand.to_act == 0
    assert_rejected(hand, 0, "PASS", "ACTION_NOT_ALLOWED")
    hand.apply(0, "DRAW_DISCARD")
    assert_rejected(hand, 0, "DISCARD QC", "DISCARD_PILE_CARD_BARRED")


def test_knock_on_the_very_first_discard_step() -> None:
    # 2.3.5: knocking is legal on any discard step, the first one included.
    hand = deal(LOW, JUNK, "KH")
    hand.apply(0, "TAKE_UPCARD")
    hand.apply(0, "KNOCK KS")
    assert hand.ended
    out = hand.outcome
    assert out is not None and out.knocker == 0 and str(out.knock_card) == "KS"
    expected = score_hand(hand.cards_of(0), hand.cards_of(1))
    assert (out.kind, out.points, out.winner) == (expected.kind, expected.points, 0)


def test_knock_over_the_limit_is_refused_and_player_must_discard() -> None:
    # 7.5 / 2.7.3: an illegal knock changes nothing; the player is still to discard.
    hand = deal("AC 2C 3C 4D 5D 6D 7H 8H 9H TS", JUNK, "JS")
    hand.apply(0, "TAKE_UPCARD")
    assert_rejected(hand, 0, "KNOCK 7H", "KNOCK_LIMIT_EXCEEDED")
    with pytest.raises(KnockLimitExceeded):
        hand.apply(0, "KNOCK 7H")
    assert hand.phase is Phase.DISCARD and hand.to_act == 0
    hand.apply(0, "KNOCK TS")  # keeps JS: deadwood 10
    assert hand.ended


def test_gin_alias_requires_gin() -> None:
    hand = deal("AC 2C 3C 4D 5D 6D 7H 8H 9H TS", JUNK, "KS")
    hand.apply(0, "TAKE_UPCARD")
    assert_rejected(hand, 0, "GIN TS", "ILLEGAL_KNOCK")  # would keep KS: not gin
    hand.apply(0, "DISCARD TS")
    assert not hand.ended


def test_gin_is_classified_automatically() -> None:
    hand = deal("AC 2C 3C 4D 5D 6D 7H 8H 9H KS", JUNK, "TH")
    hand.apply(0, "TAKE_UPCARD")
    hand.apply(0, "KNOCK KS")
    assert hand.outcome is not None and hand.outcome.kind == "gin"
    d0 = 1 + 3 + 5 + 7 + 9 + 10 + 10 + 10 + 2 + 8  # JUNK, unmelded
    assert hand.outcome.points == 25 + d0


def test_big_gin_disabled_and_enabled() -> None:
    first = "AC 2C 3C 4D 5D 6D 7H 8H 9H TH"
    hand = deal(first, JUNK, "JH")
    hand.apply(0, "TAKE_UPCARD")
    assert_rejected(hand, 0, "BIG_GIN", "BIG_GIN_DISABLED")

    hand = deal(first, JUNK, "JH", ruleset=Ruleset(big_gin_enabled=True))
    hand.apply(0, "TAKE_UPCARD")
    assert {"action": "BIG_GIN"} in hand.view(0)["legal_actions"]
    hand.apply(0, "BIG_GIN")
    assert hand.outcome is not None and hand.outcome.kind == "big_gin"
    assert hand.outcome.points == 31 + 65
    assert hand.outcome.knock_card is None and len(hand.cards_of(0)) == 11


def test_big_gin_needs_all_eleven_melded() -> None:
    hand = deal(LOW, JUNK, "JH", ruleset=Ruleset(big_gin_enabled=True))
    hand.apply(0, "TAKE_UPCARD")
    assert {"action": "BIG_GIN"} not in hand.view(0)["legal_actions"]
    assert hand.view(0)["legal_actions"]
    assert_rejected(hand, 0, "BIG_GIN", "ILLEGAL_KNOCK")


def pass_both(hand: Hand) -> None:
    hand.apply(hand.to_act, "PASS")
    hand.apply(hand.to_act, "PASS")


def test_undercut_and_next_dealer() -> None:
    # docs/engine.md 7.2: knocker K = 8, the defender lays off to D1 = 6 and wins 27.
    knocker = "2H 3H 4H 9C 9D 9S JD QD KD 8C"
    defender = "6C 6D 6H TS JS QS 5H 9H AC 5C"
    hand = deal(knocker, defender, "2S", "KC", dealer=1)
    pass_both(hand)
    hand.apply(0, "DRAW_STOCK")
    hand.apply(0, "KNOCK KC")
    assert hand.outcome is not None
    assert hand.outcome.kind == "undercut" and hand.outcome.winner == 1
    assert hand.outcome.points == 27
    assert hand.next_dealer() == 1  # winner deals (default)


@pytest.mark.parametrize(
    ("rule", "dealer", "winner", "expected"),
    [
        (NextDealer.WINNER_DEALS, 0, 1, 1),
        (NextDealer.WINNER_DEALS, 1, 1, 1),
        (NextDealer.LOSER_DEALS, 0, 1, 0),
        (NextDealer.LOSER_DEALS, 1, 0, 1),
        (NextDealer.ALTERNATE, 0, 0, 1),
        (NextDealer.ALTERNATE, 1, 1, 0),
        (NextDealer.WINNER_DEALS, 0, None, 0),
        (NextDealer.LOSER_DEALS, 1, None, 1),
        (NextDealer.ALTERNATE, 1, None, 1),
    ],
)
def test_next_dealer_rules(
    rule: NextDealer, dealer: int, winner: int | None, expected: int
) -> None:
    kind = "dead" if winner is None else "knock"
    outcome = HandOutcome(kind, winner, 0 if winner is None else 5, winner, None, None)
    assert next_dealer(rule, dealer, outcome) == expected


def run_down_stock(hand: Hand, until: int) -> None:
    """Both players draw from the stock and discard the drawn card until ``until`` remain."""
    if hand.phase is Phase.OFFER_1:
        pass_both(hand)
    while len(hand.stock) > until:
        seat = hand.to_act
        hand.apply(seat, "DRAW_STOCK")
        hand.apply(seat, f"DISCARD {hand.log[-1]['card']}")


OTHER = "AH 3H 5C 7D 9C JD KC QS TD 2D"


def test_dead_hand_after_discard_with_two_left() -> None:
    # docs/engine.md 7.6: X draws from the discard pile at stock 3, Y draws (stock 2) and discards.
    hand = deal(JUNK, OTHER, "4S")
    run_down_stock(hand, 3)
    x = hand.to_act
    hand.apply(x, "DRAW_DISCARD")
    assert len(hand.stock) == 3
    hand.apply(x, f"DISCARD {hand.cards_of(x)[0]}")
    assert not hand.ended
    y = hand.to_act
    hand.apply(y, "DRAW_STOCK")
    assert len(hand.stock) == 2 and hand.phase is Phase.DISCARD
    hand.apply(y, f"DISCARD {hand.log[-1]['card']}")
    assert hand.ended and hand.to_act == y  # the opponent gets no turn
    assert hand.outcome is not None and hand.outcome.kind == "dead"
    assert hand.outcome.winner is None and hand.outcome.points == 0
    assert hand.next_dealer() == hand.dealer
    assert sum(hand.hands[s].bit_count() for s in (0, 1)) + len(hand.discard) + 2 == 52


def test_drawer_of_the_fiftieth_card_may_still_knock() -> None:
    # 2.10.2: the player who draws the stock down to two may knock; it scores normally.
    hand = deal(LOW, "AS 2S 3S 4H 5H 6H 7D 8D 9D QC", "KH")
    run_down_stock(hand, 3)
    seat = hand.to_act
    hand.apply(seat, "DRAW_STOCK")
    drawn = hand.log[-1]["card"]
    assert len(hand.stock) == 2
    assert {"action": "KNOCK", "card": str(drawn)} in hand.view(seat)["legal_actions"]
    hand.apply(seat, f"KNOCK {drawn}")
    assert hand.outcome is not None and hand.outcome.kind in ("knock", "undercut")
    assert hand.outcome.knocker == seat


def test_immediate_dead_hand_rule() -> None:
    ruleset = Ruleset(dead_hand_rule=DeadHandRule.IMMEDIATE)
    hand = deal(LOW, OTHER, "4S", ruleset=ruleset)
    run_down_stock(hand, 3)
    hand.apply(hand.to_act, "DRAW_STOCK")  # no chance to knock, even with LOW
    assert hand.ended and hand.outcome is not None and hand.outcome.kind == "dead"
    assert len(hand.stock) == 2


def fiftieth_card_hand() -> Hand:
    """FIFTIETH_CARD: seat 0 draws the 29th stock card (3C, stock now 2) and discards it;
    seat 1 holds 4C 5C and could knock with 3C (keeping QS or KH)."""
    ruleset = Ruleset(dead_hand_rule=DeadHandRule.FIFTIETH_CARD)
    deck = deck_for(JUNK, "TC TD TH 6S 7S 8S 4C 5C QS KH", "4S")
    deck.remove("3C")
    deck.insert(21 + 28, "3C")
    return Hand.deal(deck, 1, ruleset)


def test_fiftieth_card_decline_ends_dead() -> None:
    hand = fiftieth_card_hand()
    run_down_stock(hand, 2)
    assert hand.phase is Phase.LAST_CHANCE and hand.to_act == 1
    assert hand.view(1)["legal_actions"][-1] == {"action": "DECLINE"}
    assert_rejected(hand, 1, "DRAW_STOCK", "ACTION_NOT_ALLOWED")
    assert_rejected(hand, 0, "DECLINE", "NOT_YOUR_TURN")
    hand.apply(1, "DECLINE")
    assert hand.ended and hand.outcome is not None and hand.outcome.kind == "dead"


def test_fiftieth_card_take_and_knock() -> None:
    hand = fiftieth_card_hand()
    run_down_stock(hand, 2)
    assert hand.phase is Phase.LAST_CHANCE and str(hand.discard[-1]) == "3C"
    legal = hand.view(1)["legal_actions"]
    assert legal == [
        {"action": "TAKE_DISCARD_AND_KNOCK", "card": "KH"},
        {"action": "TAKE_DISCARD_AND_KNOCK", "card": "QS"},
        {"action": "DECLINE"},
    ]
    assert_rejected(hand, 1, "TAKE_DISCARD_AND_KNOCK 3C", "DISCARD_PILE_CARD_BARRED")
    assert_rejected(hand, 1, "TAKE_DISCARD_AND_KNOCK TC", "KNOCK_LIMIT_EXCEEDED")
    hand.apply(1, "TAKE_DISCARD_AND_KNOCK KH")
    assert hand.outcome is not None and hand.outcome.knocker == 1
    assert hand.outcome.score is not None and hand.outcome.score.knocker_deadwood == 10
    assert "3C" in [str(c) for c in hand.cards_of(1)]


def test_actions_after_the_end_are_refused() -> None:
    hand = deal("AC 2C 3C 4D 5D 6D 7H 8H 9H KS", JUNK, "TH")
    hand.apply(0, "TAKE_UPCARD")
    hand.apply(0, "KNOCK KS")
    assert_rejected(hand, 1, "DRAW_STOCK", "HAND_OVER")
    assert hand.legal_actions() == []


def test_oklahoma_terms_follow_the_upcard() -> None:
    ruleset = Ruleset(oklahoma=True)
    hand = deal(JUNK, LOW, "4S", ruleset=ruleset)
    assert (hand.terms.knock_limit, hand.terms.multiplier) == (4, 2)
    assert hand.view(0)["knock_limit"] == 4 and hand.view(None)["upcard"] == "4S"
    hand = deal(JUNK, LOW, "AH", ruleset=ruleset)
    assert (hand.terms.knock_limit, hand.terms.multiplier) == (0, 1)
    hand = deal(JUNK, LOW, "AH", ruleset=Ruleset(oklahoma=True, ace_requires_gin=False))
    assert hand.terms.knock_limit == 1


def test_oklahoma_knock_limit_enforced_in_play() -> None:
    # Upcard 4S: limit 4. LOW keeps KS (10) after any knock but the KS one.
    hand = deal(LOW, JUNK, "4S", ruleset=Ruleset(oklahoma=True))
    hand.apply(0, "PASS")
    hand.apply(1, "PASS")
    hand.apply(0, "DRAW_STOCK")
    drawn = hand.log[-1]["card"]
    assert_rejected(hand, 0, f"KNOCK {drawn}", "KNOCK_LIMIT_EXCEEDED")


def test_action_text_round_trip() -> None:
    for text in ["PASS", "DISCARD TD", "KNOCK 7D", "KNOCK 7D | 4C 4D 4H | 7S 8S 9S", "DECLINE"]:
        assert str(Action.parse(text)) == text
    for bad in ["FOLD", "DISCARD", "PASS TD", "DISCARD ZZ", "", "KNOCK 7D | 4C 5D 6H"]:
        with pytest.raises(RulesError):
            Action.parse(bad)


def test_manual_knocker_arrangement() -> None:
    ruleset = Ruleset(knocker_arrangement=KnockerArrangement.MANUAL)
    knocker = "4C 4D 4H 7S 8S 9S AC AS 6C 2D"
    defender = "7C 8C 9C 6S KH QD JC TH 5D 5H"
    hand = deal(knocker, defender, "2S", "7D", ruleset=ruleset)
    pass_both(hand)
    hand.apply(0, "DRAW_STOCK")
    assert_rejected(hand, 0, "KNOCK 7D | 4C 4D 4H", "KNOCK_LIMIT_EXCEEDED")
    assert_rejected(hand, 0, "KNOCK 7D | 7C 8C 9C", "ILLEGAL_KNOCK")
    hand.apply(0, "KNOCK 7D | 4C 4D 4H | 7S 8S 9S")
    assert hand.outcome is not None and hand.outcome.points == 40  # docs/engine.md 7.1
    restored = Hand.from_dict(hand.to_dict())
    assert restored.outcome == hand.outcome


def test_automatic_table_refuses_submitted_melds() -> None:
    hand = deal("4C 4D 4H 7S 8S 9S AC AS 6C 2D", "7C 8C 9C 6S KH QD JC TH 5D 5H", "3S", "7D")
    pass_both(hand)
    hand.apply(0, "DRAW_STOCK")
    assert_rejected(hand, 0, "KNOCK 7D | 4C 4D 4H | 7S 8S 9S", "UNEXPECTED_MELDS")


def test_action_fields_round_trip() -> None:
    for text in ["PASS", "DISCARD TD", "KNOCK 7D", "KNOCK 7D | 4C 4D 4H | 7S 8S 9S", "DECLINE"]:
        action = Action.parse(text)
        assert Action.from_dict(action.to_dict()) == action
    assert Action.parse("DISCARD TD").to_dict() == {"action": "DISCARD", "card": "TD"}
    assert Action.parse("PASS").to_dict() == {"action": "PASS"}
    assert Action.parse("KNOCK 7D | 4C 4D 4H").to_dict() == {
        "action": "KNOCK",
        "card": "7D",
        "melds": [["4C", "4D", "4H"]],
    }
    for bad in [
        {"action": "FOLD"},
        {"action": "DISCARD"},
        {"action": "PASS", "card": "TD"},
        {"card": "TD"},
        "DISCARD TD",
    ]:
        with pytest.raises(RulesError):
            Action.from_dict(bad)  # type: ignore[arg-type]


def test_the_view_lists_legal_actions_as_fields_and_my_deadwood() -> None:
    hand = deal(LOW, JUNK, "TH")
    assert hand.view(0)["legal_actions"] == [{"action": "TAKE_UPCARD"}, {"action": "PASS"}]
    assert hand.view(0)["deadwood"] == 10 and hand.view(1)["deadwood"] == deadwood(JUNK) == 65
    assert hand.view(1)["legal_actions"] == []
    assert "deadwood" not in hand.view(None) and "legal_actions" not in hand.view(None)
    hand.apply(0, {"action": "TAKE_UPCARD"})  # the listed fields apply as they are
    listed = hand.view(0)["legal_actions"]
    assert {"action": "KNOCK", "card": "KS"} in listed
    assert [a["card"] for a in listed if a["action"] == "DISCARD"] == [
        str(c) for c in hand.cards_of(0) if str(c) != "TH"
    ]
    hand.apply(0, listed[-1])
    assert hand.ended and hand.outcome is not None and hand.outcome.kind == "gin"


@pytest.mark.parametrize("steps", [0, 3, 5])
def test_a_forfeit_cuts_the_hand_short_and_reveals_it(steps: int) -> None:
    hand = deal(LOW, JUNK, "QS")
    for _ in range(steps):  # PASS, PASS, DRAW_STOCK, a discard, DRAW_STOCK
        legal = hand.legal_actions()
        simple = [a for a in legal if str(a) in ("PASS", "DRAW_STOCK")]
        hand.apply(hand.to_act, (simple or [a for a in legal if a.kind == "DISCARD"])[0])
    cards = [hand.cards_of(0), hand.cards_of(1)]
    hand.forfeit(1, "resign", at="2026-12-01T00:00:00Z")
    assert hand.ended and hand.phase is Phase.ENDED
    assert hand.outcome == HandOutcome("forfeit", 0, 0, None, None, None)
    assert hand.log[-1] == {
        "seq": steps + 1,
        "seat": 1,
        "action": "FORFEIT",
        "reason": "resign",
        "at": "2026-12-01T00:00:00Z",
    }
    assert hand.legal_actions() == [] and hand.legal_actions(0) == []
    for seat in (0, 1, None):
        view = hand.view(seat)
        assert view["to_act"] is None and view.get("legal_actions", []) == []
        assert view["outcome"]["kind"] == "forfeit"
    history = hand.history()  # ended: the whole record may be revealed
    assert history["actions"][-1]["action"] == "FORFEIT" and len(history["actions"]) == steps + 1
    assert history["final_hands"] == [[str(c) for c in cs] for cs in cards]
    restored = Hand.from_dict(copy.deepcopy(hand.to_dict()))
    assert restored == hand and restored.outcome == hand.outcome
    with pytest.raises(RulesError) as err:
        hand.forfeit(0, "resign")
    assert err.value.code == "HAND_OVER"
    with pytest.raises(RulesError):
        deal(LOW, JUNK, "QS").forfeit(2, "resign")


def test_a_hand_cut_short_in_nobodys_name_has_no_winner() -> None:
    # 11.6.2: the match ended at another table; nobody at this one forfeited.
    hand = deal(LOW, JUNK, "QS")
    hand.apply(hand.to_act, "PASS")
    hand.cut_short("match_ended", at="2026-12-01T00:00:00Z")
    assert hand.ended and hand.outcome == HandOutcome("forfeit", None, 0, None, None, None)
    assert hand.log[-1] == {
        "seq": 2,
        "seat": None,
        "action": "FORFEIT",
        "reason": "match_ended",
        "at": "2026-12-01T00:00:00Z",
    }
    assert hand.next_dealer() == hand.dealer  # no winner: nothing moves
    assert hand.history()["outcome"]["winner"] is None
    restored = Hand.from_dict(copy.deepcopy(hand.to_dict()))
    assert restored == hand and restored.outcome == hand.outcome
    with pytest.raises(RulesError) as err:
        hand.cut_short("match_ended")
    assert err.value.code == "HAND_OVER"
