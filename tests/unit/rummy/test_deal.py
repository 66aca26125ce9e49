"""Players, the deal and the next dealer (5.1), and who plays first (5.2)."""

from __future__ import annotations

import pytest

from service.games.common.cards import DECK
from service.games.rummy.errors import InvalidDeal
from service.games.rummy.hand import Phase, RummyHand, next_dealer
from service.games.rummy.rules import RummyRules
from tests.unit.rummy.scenarios import deck_for, play, position

CODES = [c.code for c in DECK]


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_5_1_1_two_to_six_players(players: int) -> None:
    hand = RummyHand.deal(players, 0, CODES)
    assert hand.players == players
    assert len(hand.hands) == players


@pytest.mark.parametrize("players", [0, 1, 7, "3"])
def test_5_1_1_other_player_counts_are_refused(players: object) -> None:
    with pytest.raises(InvalidDeal) as err:
        RummyHand.deal(players, 0, CODES)  # type: ignore[arg-type]
    assert err.value.code == "INVALID_DEAL"


def test_5_1_1_max_players_caps_the_table() -> None:
    rules = RummyRules(max_players=4)
    RummyHand.deal(4, 0, CODES, rules)
    with pytest.raises(InvalidDeal, match="2-4"):
        RummyHand.deal(5, 0, CODES, rules)


@pytest.mark.parametrize(
    ("players", "size", "stock"), [(2, 10, 31), (3, 7, 30), (4, 7, 23), (5, 6, 21), (6, 6, 15)]
)
def test_5_1_2_deal_sizes_and_5_1_3_stock_sizes(players: int, size: int, stock: int) -> None:
    hand = RummyHand.deal(players, 0, CODES)
    assert [len(hand.cards_of(s)) for s in range(players)] == [size] * players
    assert len(hand.stock) == stock
    assert len(hand.discard) == 1


@pytest.mark.parametrize(("players", "dealer"), [(2, 1), (3, 2), (4, 0), (5, 3), (6, 5)])
def test_5_1_3_one_card_at_a_time_clockwise_from_the_dealers_left(
    players: int, dealer: int
) -> None:
    hand = RummyHand.deal(players, dealer, CODES)
    size = {2: 10, 3: 7, 4: 7, 5: 6, 6: 6}[players]
    left = (dealer + 1) % players
    # The k-th card dealt (from 0) goes to the seat k places clockwise of the dealer's left.
    for k in range(size * players):
        seat = (left + k) % players
        assert CODES[k] in hand.cards_of(seat), f"card {k} should be seat {seat}'s"
    dealt = size * players
    assert [c.code for c in hand.discard] == [CODES[dealt]]  # the upcard, face up
    assert [c.code for c in hand.stock] == CODES[dealt + 1 :]  # the next card on top
    assert hand.stock[0].code == CODES[dealt + 1]


def test_5_1_3_a_deck_must_be_the_52_cards() -> None:
    with pytest.raises(InvalidDeal):
        RummyHand.deal(2, 0, CODES[:51])
    with pytest.raises(InvalidDeal):
        RummyHand.deal(2, 0, [*CODES[:51], CODES[0]])
    with pytest.raises(InvalidDeal):
        RummyHand.deal(2, 0, [*CODES[:51], "ZZ"])
    with pytest.raises(InvalidDeal, match="dealer"):
        RummyHand.deal(3, 3, CODES)


def test_5_1_3_the_deck_may_be_text() -> None:
    assert RummyHand.deal(2, 0, " ".join(CODES)) == RummyHand.deal(2, 0, CODES)


def test_5_1_4_next_dealer_two_players_the_winner_deals() -> None:
    assert next_dealer(2, 0, winner=0) == 0
    assert next_dealer(2, 0, winner=1) == 1
    assert next_dealer(2, 1, winner=1) == 1


@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_5_1_4_next_dealer_three_or_more_the_deal_passes_left(players: int) -> None:
    for dealer in range(players):
        for winner in range(players):
            assert next_dealer(players, dealer, winner) == (dealer + 1) % players


def test_5_1_4_a_void_hand_is_dealt_again_by_the_same_dealer() -> None:
    assert next_dealer(4, 2, winner=None) == 2
    hand = position(
        ["2C 5D", "KS QH"], to_act=0, dealer=1, discard="9C", rules=RummyRules(max_turns=1)
    )
    ended = play(hand, "DRAW_STOCK", "DISCARD 5D")
    assert ended.outcome is not None and ended.outcome.void is not None
    assert ended.next_dealer() == 1


def test_5_1_4_next_dealer_of_a_played_hand() -> None:
    hand = position(["KS QH", "7C 7D", "2S 4S"], to_act=1, dealer=2, discard="9C", stock_top="7H")
    ended = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H")
    assert ended.outcome is not None and ended.outcome.winner == 1
    assert ended.next_dealer() == 0  # three players: the seat left of dealer 2, not the winner
    with pytest.raises(Exception, match="not ended"):
        hand.next_dealer()


@pytest.mark.parametrize(("players", "dealer"), [(2, 0), (3, 2), (6, 3)])
def test_5_2_play_starts_left_of_the_dealer_and_goes_clockwise(players: int, dealer: int) -> None:
    hand = RummyHand.deal(players, dealer, CODES)
    order = []
    for _ in range(players + 1):
        assert hand.phase is Phase.DRAW and hand.to_act is not None
        order.append(hand.to_act)
        hand = hand.apply(hand.to_act, "DRAW_STOCK")
        hand = hand.apply(hand.to_act, f"DISCARD {hand.cards_of(hand.to_act)[0]}")
    assert order == [(dealer + 1 + k) % players for k in range(players + 1)]


def test_deck_for_helper_matches_the_deal() -> None:
    deck = deck_for(
        3, 0, ["AC 2C 3C 4C 5C 6C 7C", "AD 2D 3D 4D 5D 6D 7D", "AH 2H 3H 4H 5H 6H 7H"], "KS"
    )
    hand = RummyHand.deal(3, 0, deck)
    assert [c.code for c in hand.cards_of(1)] == ["AD", "2D", "3D", "4D", "5D", "6D", "7D"]
    assert hand.discard[0].code == "KS"
