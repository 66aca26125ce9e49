"""The basic Rummy match (5.1.4, 5.7.2, 5.8, 11.5.2, 11.5.3, 11.6.1, 11.6.3, 11.6.4, 11.7.3):
modes and their ends, void hands, forfeits, the dealer, the clock, views, the state's round
trip, and the standings fed to the money code."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.cards import parse_cards, random_deck
from service.games.common.clock import ClockSettings, OnTimeout
from service.games.common.errors import IllegalAction, InvalidSettings, InvalidState
from service.games.common.settings import Format, MatchSettings
from service.games.protocol import MatchStatus
from service.games.rummy.hand import deal_size
from service.games.rummy.match import RummyMatch, RummyMatchSettings, RummySlot
from service.games.rummy.payout import rummy_match, rummy_penalty, rummy_per_hand
from service.games.rummy.playout import choose, seeded_shuffler
from service.games.rummy.rules import RummyRules, Scoring
from service.games.rummy.spec import RUMMY
from tests.unit.budget import examples
from tests.unit.formats_multi.decks import card_strings
from tests.unit.rummy.scenarios import deck_for

# --- rigged hands -------------------------------------------------------------------------

#: The winner's cards by deal size, the card it draws to go out, and its two or three melds;
#: it then discards KD and has gone rummy (nothing laid down in an earlier turn).
WINNER = {
    10: ("2C 3C 4C 7D 7H 7S 9H TH JH KD", "5C", ("2C 3C 4C 5C", "7D 7H 7S", "9H TH JH")),
    7: ("2C 3C 4C 7D 7H 7S KD", "5C", ("2C 3C 4C 5C", "7D 7H 7S")),
    6: ("2C 3C 4C 7D 7H KD", "7S", ("2C 3C 4C", "7D 7H 7S")),
}
UPCARD = "KH"
#: Drawn (and at once discarded) by the seats that play before the winner.
FILLERS = ("9C", "TC", "JC", "QC", "KC")
#: The losers' cards, dealt in this order; none of them is named above.
LOSER_POOL = tuple(
    c.code
    for c in parse_cards(
        "AS 2S 3S 4S 5S 6S 8S 9S TS JS QS KS AD 2D 3D 4D 5D 6D 8D 9D TD JD QD AH 2H 3H 4H 5H 6H 8H"
        " QH AC 6C 8C"
    )
)


def value(code: str) -> int:
    """A card's count (1.3, aces 1): written out here apart from the engine's."""
    rank = code[0]
    return 1 if rank == "A" else 10 if rank in "TJQK" else int(rank)


def rules(match: str = "PER_HAND", **options: object) -> RummyRules:
    return RummyRules(match=match, **options)  # type: ignore[arg-type]


def new_match(players: int, dealer: int = 0, **options: object) -> RummyMatch:
    return RummyMatch(RummyMatchSettings(players, dealer, rules(**options)))  # type: ignore[arg-type]


def turn_order(slot: RummySlot) -> list[int]:
    first = slot.seats.index(slot.first_player)
    return [slot.seats[(first + i) % len(slot.seats)] for i in range(len(slot.seats))]


def win(match: RummyMatch, winner: int | None = None) -> dict[int, int]:
    """Deal the next hand so that ``winner`` (default: the first player) goes rummy in its
    first turn, the seats before it drawing a card and discarding it; returns each loser's
    count, worked out from the rigged cards."""
    slot = match.next_hand()
    assert slot is not None
    order = turn_order(slot)
    winner = order[0] if winner is None else winner
    before = order[: order.index(winner)]
    size = deal_size(len(slot.seats))
    cards, last, melds = WINNER[size]
    pool = iter(LOSER_POOL)
    hands = {s: cards if s == winner else " ".join(next(pool) for _ in range(size)) for s in order}
    stock_top = " ".join([*FILLERS[: len(before)], last])
    deck = deck_for(
        len(slot.seats),
        slot.hand_seat(slot.dealer),
        [hands[s] for s in slot.seats],
        UPCARD,
        stock_top,
    )
    match.deal(deck)
    for seat, filler in zip(before, FILLERS, strict=False):
        match.apply(seat, "DRAW_STOCK")
        match.apply(seat, f"DISCARD {filler}")
    match.apply(winner, "DRAW_STOCK")
    for meld in melds:
        match.apply(winner, f"MELD {meld}")
    match.apply(winner, "DISCARD KD")
    return {s: sum(value(c) for c in hands[s].split()) for s in order if s != winner}


def void(match: RummyMatch) -> None:
    """Deal the next hand and let its first player draw and discard: at a table with
    ``max_turns = 1`` that completed turn voids the hand (5.5.4 b)."""
    assert match.rules.max_turns == 1
    slot = match.next_hand()
    assert slot is not None
    match.deal(random_deck(random.Random(slot.number)))
    seat = match.to_act[0]
    match.apply(seat, "DRAW_STOCK")
    match.apply(seat, next(a for a in match.legal_actions(seat) if a.kind == "DISCARD"))
    assert match.records[-1].void == "MAX_TURNS"


# --- modes and their ends -----------------------------------------------------------------


def test_5_8_1_per_hand_match_ends_after_its_first_hand_with_a_winner() -> None:
    match = new_match(3, dealer=2)
    assert match.next_hand() == RummySlot(1, (0, 1, 2), 2)
    counts = win(match)
    assert match.status is MatchStatus.FINISHED and match.next_hand() is None
    s = match.standings()
    assert s.money_format is Format.RUMMY_PER_HAND and s.winners == (0,)
    assert s.points == (2 * (counts[1] + counts[2]), -2 * counts[1], -2 * counts[2])
    assert s.deciding_hand is not None and s.deciding_hand.loser_counts == counts


def test_11_7_3_void_hands_do_not_count_towards_deals() -> None:
    match = new_match(3, match="DEALS(2)", max_turns=1)
    void(match)
    win(match)
    void(match)
    assert match.status is MatchStatus.AWAITING_DEAL and match.deals == 1
    win(match)
    assert match.over and match.deals == 2 and match.hands_ended == 4
    assert [r.number for r in match.records] == [1, 2, 3, 4]  # every hand has its own nonce
    assert [r.winner is None for r in match.records] == [True, False, True, False]


def test_11_5_2_deals_match_ends_after_n_hands_and_points_accumulate() -> None:
    match = new_match(4, dealer=3, match="DEALS(3)")
    expected = [0, 0, 0, 0]
    for _ in range(3):
        assert not match.over
        winner = match.next_hand().first_player  # type: ignore[union-attr]
        counts = win(match)
        for seat, count in counts.items():
            expected[seat] -= 2 * count
            expected[winner] += 2 * count
    assert match.over and list(match.standings().points) == expected
    assert sum(match.standings().points) == 0
    assert match.standings().winners == (expected.index(max(expected)),)


def test_11_7_3_target_ends_when_a_cumulative_net_reaches_t() -> None:
    match = new_match(2, match="TARGET(150)")
    gained = 0
    while not match.over:
        assert gained < 150
        counts = win(match, winner=1)  # seat 1 wins every hand
        gained += 2 * counts[0]
    assert gained >= 150 and match.standings().points == (-gained, gained)
    assert match.standings().winners == (1,)
    assert match.standings().money_format is Format.RUMMY_TARGET


def test_5_7_2_penalty_over_n_deals_lowest_total_wins() -> None:
    match = new_match(3, dealer=0, match="DEALS(3)", scoring="PENALTY", rummy_penalty=25)
    expected = [0, 0, 0]
    for winner in (1, 1, 2):  # seat 0 never wins
        counts = win(match, winner=winner)
        for seat, count in counts.items():
            expected[seat] += count + 25
    s = match.standings()
    assert s.over and list(s.penalties) == expected and s.points == (0, 0, 0)
    low = min(expected)
    assert s.winners == tuple(i for i, p in enumerate(expected) if p == low)
    assert 0 not in s.winners


def test_5_7_2_penalty_target_ends_when_a_penalty_total_reaches_t() -> None:
    match = new_match(2, match="TARGET(100)", scoring="PENALTY")
    total = 0
    while not match.over:
        total += win(match, winner=0)[1] + 25
    assert total >= 100 and match.standings().penalties == (0, total)
    assert match.standings().winners == (0,)


def test_5_7_2_equal_penalties_share_the_win() -> None:
    match = new_match(2, dealer=0, match="DEALS(2)", scoring="PENALTY")
    win(match, winner=1)
    win(match, winner=0)  # the rigged losers hold the same cards each time
    s = match.standings()
    assert s.penalties[0] == s.penalties[1] > 0 and s.winners == (0, 1)


# --- the dealer -----------------------------------------------------------------------------


def test_5_1_4_the_deal_passes_left_at_three_or_more_and_a_void_hand_is_redealt() -> None:
    match = new_match(4, dealer=2, match="DEALS(5)", max_turns=1)
    dealers = []
    for step in ("win", "void", "win", "win", "void", "win", "win"):
        dealers.append(match.next_hand().dealer)  # type: ignore[union-attr]
        if step == "win":
            win(match)  # the first player wins: with max_turns = 1 nobody may play before it
        else:
            void(match)
    assert dealers == [2, 3, 3, 0, 1, 1, 2]


def test_5_1_4_at_two_players_the_winner_deals() -> None:
    match = new_match(2, dealer=0, match="DEALS(4)")
    dealers = []
    for winner in (0, 0, 1, 0):  # the dealer itself wins the first two hands
        dealers.append(match.next_hand().dealer)  # type: ignore[union-attr]
        win(match, winner=winner)
    assert dealers == [0, 0, 0, 1]


def test_5_1_4_a_forfeited_dealer_is_skipped() -> None:
    match = new_match(4, dealer=0, match="DEALS(3)")
    win(match)  # dealer 0; seat 1 deals next
    match.forfeit(1)
    slot = match.next_hand()
    assert slot == RummySlot(2, (0, 2, 3), 2)


def test_11_5_1_a_per_hand_table_passes_the_deal_to_the_first_seat_dealt_in_from_there() -> None:
    """Each hand of a per-hand table is a match of the players dealt in (match seat ``i`` at
    table seat ``at[i]``): the deal passes by 5.1.4, then clockwise round the table to the
    first seat dealt into the next hand (an index into those seats)."""
    tables = RUMMY.continuous
    assert tables is not None
    three = new_match(3, dealer=0)  # table seats 1, 3 and 4 of 6; the dealer at 1
    win(three)
    at = [1, 3, 4]
    assert tables.next_dealer(three, at, [1, 3, 4], 6) == 1  # the seat on the dealer's left
    assert tables.next_dealer(three, at, [0, 1, 4], 6) == 2  # seat 3 sits out: then seat 4
    assert tables.next_dealer(three, at, [0, 1], 6) == 0  # round the table to seat 0
    two = new_match(2, dealer=0)  # table seats 2 and 5
    win(two, winner=1)
    assert tables.next_dealer(two, [2, 5], [2, 5], 6) == 1  # the winner deals
    assert tables.next_dealer(two, [2, 5], [0, 2], 6) == 0  # it left: the seat after it
    voided = new_match(3, dealer=1, max_turns=1)
    void(voided)
    assert tables.next_dealer(voided, at, [1, 3, 4], 6) == 1  # the same dealer deals again


def test_11_5_1_at_a_per_hand_table_the_short_top_up_and_a_forfeiter_leaves() -> None:
    tables = RUMMY.continuous
    assert tables is not None
    per_hand = {"game": "rummy", "format": "rummy_per_hand", "seats": 4, "stake_per_point": 5}
    settings = MatchSettings.from_dict({**per_hand, "min_buyin": 100, "max_buyin": 500})
    assert tables.short({0: 49, 1: 50, 2: 0, 3: 500}, settings) == (0, 2)  # below 10 x 5
    floor = MatchSettings.from_dict(
        {**per_hand, "min_buyin": 100, "max_buyin": 500, "min_balance": 80}
    )
    assert tables.short({0: 79, 1: 80}, floor) == (0,)
    hand = new_match(3, dealer=0)
    hand.forfeit(1)
    assert tables.leaving(hand) == (1,)
    assert tables.formats == (Format("rummy_per_hand"),)


# --- forfeits -------------------------------------------------------------------------------


def test_11_7_3_a_forfeiter_is_dealt_no_more_hands_and_keeps_its_points() -> None:
    match = new_match(3, dealer=2, match="DEALS(3)")
    counts = win(match)  # seat 0 wins, seats 1 and 2 lose
    kept = match.standings().points[1]
    assert kept == -2 * counts[1]
    match.forfeit(1, "resign")
    assert match.status is MatchStatus.AWAITING_DEAL
    slot = match.next_hand()
    assert slot is not None and slot.seats == (0, 2)
    assert deal_size(len(slot.seats)) == 10
    win(match)
    assert match.records[-1].slot.seats == (0, 2) and match.records[-1].points[1] == 0
    assert match.standings().points[1] == kept
    with pytest.raises(IllegalAction):
        match.forfeit(1)
    match.forfeit(2)
    s = match.standings()
    assert match.over and s.forfeited == (1, 2) and s.winners == (0,)
    assert sum(s.points) == 0 and s.points[1] == kept


def test_11_6_3_a_forfeit_during_a_hand_counts_the_forfeiters_cards_as_a_losers() -> None:
    match = new_match(3, dealer=0, match="DEALS(2)")
    deck = random_deck(random.Random(7))
    match.deal(deck)
    held = [c.code for c in match.hand.cards_of(2)]  # type: ignore[union-attr]
    match.forfeit(2, "resign")  # not its turn: seat 1 is to act
    assert match.status is MatchStatus.PLAYING and match.to_act == (1,)
    assert match.legal_actions(2) == []
    match.forfeit(1, "timeout")  # the seat to act: only seat 0 is left, it wins at once
    record = match.records[-1]
    assert record.winner == 0 and not record.went_rummy and record.forfeited == (1, 2)
    assert record.counts[2] == sum(value(c) for c in held)
    assert record.points[2] == -record.counts[2]
    assert match.over and match.standings().winners == (0,)


def test_11_7_3_the_match_ends_when_fewer_than_two_players_remain_between_hands() -> None:
    match = new_match(2, match="DEALS(5)")
    win(match)
    match.forfeit(0)
    assert match.over and match.next_hand() is None and match.deals == 1
    with pytest.raises(IllegalAction):
        match.forfeit(1)


# --- the clock ------------------------------------------------------------------------------


def test_11_6_1_a_spent_clock_plays_the_automatic_action_then_forfeits() -> None:
    clock = ClockSettings(turn_seconds=10, bank_seconds=5, max_timeouts=2)
    settings = RummyMatchSettings(3, 0, rules("DEALS(1)"), clock)
    match = RummyMatch(settings)
    match.deal(random_deck(random.Random(3)), now_ms=0)
    assert match.deadline_ms() == 15_000
    assert match.timeout(14_999) is None
    assert match.timeout(15_000) == "auto:DRAW_STOCK"
    assert match.banks_ms[1] == 0 and match.deadline_ms() == 25_000
    assert match.hand.log[-1]["automatic"] is True  # type: ignore[union-attr]
    result = match.timeout(25_000)
    assert result == "forfeit" and match.forfeited[1] and match.timeouts[1] == 2
    assert match.to_act == (2,) and match.deadline_ms() == 25_000 + 15_000


def test_11_6_1_forfeit_mode_forfeits_at_the_first_timeout() -> None:
    clock = ClockSettings(on_timeout=OnTimeout.FORFEIT)
    match = RummyMatch(RummyMatchSettings(2, 0, rules(), clock))
    match.deal(random_deck(random.Random(4)), now_ms=0)
    assert match.timeout(clock.turn_seconds * 1000 + clock.bank_seconds * 1000) == "forfeit"
    assert match.over and match.records[-1].winner == 0 and match.forfeiters == (1,)


# --- fairness, settings, refusals --------------------------------------------------------


def test_11_6_4_the_fair_shuffle_of_a_hand_takes_the_dealt_in_seeds_ascending_and_its_number() -> (
    None
):
    match = new_match(4, dealer=1, match="DEALS(2)")
    win(match)
    match.forfeit(2)
    slot = match.next_hand()
    assert slot is not None and slot.number == 2
    seeds = ["s0", "s1", "s2", "s3"]
    shuffle = slot.fair_shuffle("ab" * 32, seeds)
    assert shuffle.client_seeds == ("s0", "s1", "s3") and shuffle.nonce == 2
    match.deal(shuffle.deck, shuffle)
    assert match.hand.deck == shuffle.deck  # type: ignore[union-attr]


def test_5_1_1_settings_are_checked() -> None:
    with pytest.raises(InvalidSettings):
        RummyMatchSettings(1, 0)
    with pytest.raises(InvalidSettings):
        RummyMatchSettings(5, 0, RummyRules(max_players=4))
    with pytest.raises(InvalidSettings):
        RummyMatchSettings(3, 3)


def test_5_2_refusals_leave_the_match_unchanged() -> None:
    match = new_match(3)
    with pytest.raises(IllegalAction):
        match.apply(1, "DRAW_STOCK")  # nothing dealt yet
    match.deal(random_deck(random.Random(5)))
    before = match.to_dict()
    with pytest.raises(IllegalAction):
        match.apply(2, "DRAW_STOCK")  # seat 1 is to act
    with pytest.raises(IllegalAction):
        match.apply(1, "DISCARD AS")  # must draw first
    with pytest.raises(IllegalAction):
        match.deal(random_deck(random.Random(6)))
    assert match.to_dict() == before


def test_from_dict_refuses_inconsistent_states() -> None:
    match = new_match(3, match="DEALS(2)")
    match.deal(random_deck(random.Random(8)))
    data = match.to_dict()
    with pytest.raises(InvalidState):
        RummyMatch.from_dict({**data, "status": "AWAITING_DEAL"})
    with pytest.raises(InvalidState):
        RummyMatch.from_dict({**data, "timeouts": [0, 0]})
    with pytest.raises(InvalidState):
        RummyMatch.from_dict({**data, "kind": "three_player"})
    with pytest.raises(InvalidState):
        RummyMatch.from_dict({k: v for k, v in data.items() if k != "slot"})


# --- money ---------------------------------------------------------------------------------


def test_11_5_2_standings_feed_rummy_match_and_it_is_zero_sum() -> None:
    match = new_match(3, match="DEALS(2)")
    win(match)
    win(match)
    s = match.standings()
    buyins = dict.fromkeys(s.seats, 10_000)
    statement = rummy_match(s.net_points, 10, buyins, format=s.money_format)
    assert sum(statement.net.values()) + statement.fee == 0
    assert statement.net == {seat: 10 * p for seat, p in s.net_points.items()}  # no cap binds


def test_11_5_3_standings_feed_rummy_penalty_and_it_is_zero_sum() -> None:
    match = new_match(3, match="DEALS(2)", scoring="PENALTY")
    win(match, winner=0)
    win(match, winner=0)
    s = match.standings()
    statement = rummy_penalty(s.penalty_totals, 1, dict.fromkeys(s.seats, 10_000))
    assert sum(statement.net.values()) + statement.fee == 0
    pen = s.penalties
    assert statement.net[0] == (pen[1] - pen[0]) + (pen[2] - pen[0]) > 0


def test_11_7_3_per_hand_penalty_is_settled_as_a_one_deal_match() -> None:
    match = new_match(4, scoring="PENALTY")
    win(match)
    s = match.standings()
    balances = dict.fromkeys(s.seats, 50)
    one_deal = rummy_penalty(s.penalty_totals, 1, balances, format=s.money_format)
    assert sum(one_deal.net.values()) + one_deal.fee == 0
    assert all(-one_deal.net[seat] <= 50 for seat in s.seats)  # the balance caps each loser


def test_5_8_1_per_hand_standings_feed_rummy_per_hand() -> None:
    match = new_match(3, dealer=1)
    counts = win(match)
    hand = match.standings().deciding_hand
    assert hand is not None and hand.winner == 2 and hand.went_rummy
    statement = rummy_per_hand(
        hand.winner,
        hand.loser_counts,
        1,
        dict.fromkeys(hand.slot.seats, 1_000),
        went_rummy=hand.went_rummy,
        forfeited=hand.forfeited,
    )
    assert statement.net == {0: -2 * counts[0], 1: -2 * counts[1], 2: 2 * sum(counts.values())}
    assert statement.net == dict(enumerate(match.standings().points))


# --- random matches -------------------------------------------------------------------------


def hidden(match: RummyMatch, seat: int | None) -> set[str]:
    """The cards ``seat`` must never see: the stock and every other seat's hand."""
    hand, slot = match.hand, match.slot
    if hand is None or slot is None:
        return set()
    secret = {c.code for c in hand.stock}
    for i, s in enumerate(slot.seats):
        if s != seat:
            secret |= {c.code for c in hand.cards_of(i)}
    return secret


def random_match(rng: random.Random, *, rounds: int = 8) -> RummyMatch:
    players = rng.randint(2, 6)
    mode = rng.choice(["PER_HAND", f"DEALS({rng.randint(1, 3)})", f"TARGET({rng.randint(1, 30)})"])
    options = RummyRules(
        match=mode,
        scoring=rng.choice(list(Scoring)),
        restock=rng.choice(["TURN_OVER", "SHUFFLE"]),
        max_turns=max(24, players * rng.randint(3, rounds)),  # short, yet often won
    )
    return RummyMatch(RummyMatchSettings(players, rng.randrange(players), options))


def check(match: RummyMatch) -> None:
    restored = RummyMatch.from_dict(json.loads(json.dumps(match.to_dict())))
    assert restored == match and restored.to_dict() == match.to_dict()
    for seat in (None, *match.seats):
        assert not card_strings(match.view(seat)) & hidden(match, seat)


def run(match: RummyMatch, rng: random.Random, forfeit_rate: float, *, checked: bool) -> None:
    """Play ``match`` out at random (with forfeits now and then), checking every state when
    ``checked``."""
    if checked:
        check(match)
    for _ in range(20_000):
        if match.over:
            return
        if rng.random() < forfeit_rate:
            match.forfeit(rng.choice(match.active_seats))
        elif match.status is MatchStatus.AWAITING_DEAL:
            slot = match.next_hand()
            assert slot is not None and slot.seats == match.active_seats
            match.deal(random_deck(rng), seeded_shuffler(rng))
        else:
            seat = match.to_act[0]
            match.apply(seat, choose(rng, match.legal_actions(seat), 0.9))
        if checked:
            check(match)
    raise AssertionError("the match did not end")


# Every step is checked (a round trip and a view per seat): 20 matches under ci.
@examples(20)
@given(seed=st.integers(0, 2**32 - 1))
def test_11_7_3_random_matches_round_trip_hide_secrets_and_end_by_their_mode(seed: int) -> None:
    rng = random.Random(seed)
    match = random_match(rng, rounds=5)
    run(match, rng, forfeit_rate=0.01, checked=True)
    s = match.standings()
    assert s.over and s.winners and not set(s.winners) & set(s.forfeited)
    assert sum(s.points) == 0 and all(p >= 0 for p in s.penalties)
    r = match.rules
    ended_by_forfeit = len(match.active_seats) < 2
    if not ended_by_forfeit:
        if r.match_deals is not None:
            assert s.deals == r.match_deals
        elif r.match_target is not None:
            figures = s.penalties if r.scoring is Scoring.PENALTY else s.points
            assert max(figures) >= r.match_target
        else:
            assert s.deals == 1


def dealer_rule(players: int, dealer: int, winner: int | None) -> int:
    """5.1.4 in a hand's own seats, written out apart from the engine."""
    if winner is None:
        return dealer
    return winner if players == 2 else (dealer + 1) % players


# Whole matches of up to six seats: 50 under ci.
@examples(50)
@given(seed=st.integers(0, 2**32 - 1))
def test_5_1_4_random_matches_rotate_the_dealer_and_settle_zero_sum(seed: int) -> None:
    rng = random.Random(seed)
    match = random_match(rng)
    run(match, rng, forfeit_rate=0.0, checked=False)
    records = match.records
    for before, after in itertools.pairwise(records):
        seats = before.slot.seats
        winner = None if before.winner is None else seats.index(before.winner)
        expected = dealer_rule(len(seats), seats.index(before.slot.dealer), winner)
        assert after.slot.dealer == seats[expected]
    s = match.standings()
    caps = dict.fromkeys(s.seats, rng.randint(1, 500))
    hand = s.deciding_hand
    if s.scoring is Scoring.PENALTY:
        statement = rummy_penalty(s.penalty_totals, 3, caps, format=s.money_format)
    elif s.money_format is Format.RUMMY_PER_HAND:
        assert hand is not None and hand.winner is not None
        statement = rummy_per_hand(
            hand.winner, hand.loser_counts, 3, caps, went_rummy=hand.went_rummy
        )
    else:
        statement = rummy_match(s.net_points, 3, caps, format=s.money_format)
    assert sum(statement.net.values()) + statement.fee == 0
    assert all(-statement.net[seat] <= caps[seat] for seat in s.seats)
