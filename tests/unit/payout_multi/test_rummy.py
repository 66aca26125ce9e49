"""Basic Rummy for stakes: per hand (5.8.1, 11.5.1), target and deals matches (5.8.2, 11.5.2),
penalty scoring (11.5.3, 11.7.3) and forfeits (11.6.3)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from service.games.common.errors import SettlementError
from service.games.common.settings import FeeBase, FeeRule, Format
from service.games.common.statement import TABLE, LineKind
from service.games.rummy.payout import (
    needs_top_up,
    penalty_margins,
    rummy_match,
    rummy_penalty,
    rummy_per_hand,
)


def test_5_8_1_each_loser_pays_count_times_r() -> None:
    s = rummy_per_hand(2, {0: 12, 1: 30}, 4, {0: 1000, 1: 1000, 2: 1000})
    assert s.payments() == [(0, 2, 48), (1, 2, 120)]
    assert s.format is Format.RUMMY_PER_HAND and s.stake_per_point == 4


def test_5_8_1_a_loser_pays_at_most_its_remaining_table_balance() -> None:
    s = rummy_per_hand(0, {1: 20, 2: 23, 3: 1}, 5, {0: 10, 1: 60, 2: 1000, 3: 0})
    assert s.net == {0: 60 + 115, 1: -60, 2: -115, 3: 0}
    assert s.payouts == {0: 185, 1: 0, 2: 885, 3: 0}
    capped = [line for line in s.lines if line.kind is LineKind.PAYS and line.rule == "5.8.1"]
    assert "capped at its remaining table balance 60" in capped[0].reason


def test_11_5_1_going_rummy_doubles_then_the_balance_caps() -> None:
    s = rummy_per_hand(1, {0: 30, 2: 5}, 10, {0: 500, 1: 0, 2: 500}, went_rummy=True)
    assert s.raw_net == {0: -600, 1: 700, 2: -100}
    assert s.net == {0: -500, 1: 600, 2: -100}
    owes = [line for line in s.lines if line.kind is LineKind.OWES]
    assert [line.amount for line in owes] == [600, 100] and "doubled" in owes[0].reason


def test_11_5_1_fee_on_the_winners_gain() -> None:
    s = rummy_per_hand(
        0, {1: 20, 2: 23}, 5, {0: 0, 1: 1000, 2: 1000}, FeeRule(500, FeeBase.WINNINGS)
    )
    assert s.fees == {0: 10} and s.net[0] == 205  # 5% of 215 = 10.75, rounded down


def test_11_5_1_seats_below_the_minimum_balance_must_top_up() -> None:
    balances = {0: 49, 1: 50, 2: 0, 3: 1000}
    assert needs_top_up(balances, 5) == (0, 2)  # the default minimum is 10 x r = 50
    assert needs_top_up(balances, 5, min_balance=0) == (2,)  # no balance at all: top up
    assert needs_top_up(balances, 5, min_balance=100) == (0, 1, 2)


def test_5_8_2_and_11_5_2_target_match_settles_net_points_once() -> None:
    s = rummy_match({0: 80, 1: -50, 2: -30}, 10, {0: 100, 1: 1000, 2: 1000})
    assert s.net == {0: 800, 1: -500, 2: -300} and not s.cap_applied
    assert s.payments() == [(1, 0, 500), (2, 0, 300)]


def test_11_5_2_deals_match_with_the_net_loss_cap() -> None:
    s = rummy_match(
        {0: 80, 1: -50, 2: -30}, 10, {0: 100, 1: 300, 2: 1000}, format=Format.RUMMY_DEALS
    )
    assert s.net == {0: 600, 1: -300, 2: -300} and s.cap_applied
    assert s.format is Format.RUMMY_DEALS


def test_11_5_2_several_winners_share_a_capped_loss_in_proportion() -> None:
    s = rummy_match({0: 30, 1: 20, 2: -50}, 2, {0: 1, 1: 1, 2: 77})
    # 100 owed, 77 paid: 60 x 77 / 100 = 46.2 and 40 x 77 / 100 = 30.8 -> 46 + 1, 30
    assert s.net == {0: 47, 1: 30, 2: -77}
    assert s.payments() == [(2, TABLE, 77), (TABLE, 0, 47), (TABLE, 1, 30)]


def test_11_5_3_penalty_pairs_pay_the_lower_penalty() -> None:
    pairs = {(m.payer, m.payee, m.points) for m in penalty_margins({0: 10, 1: 35, 2: 10})}
    assert pairs == {(1, 0, 25), (1, 2, 25)}  # seats 0 and 2 are level: nothing between them
    s = rummy_penalty({0: 10, 1: 35, 2: 10}, 3, {0: 1000, 1: 100, 2: 1000})
    assert s.raw_net == {0: 75, 1: -150, 2: 75}
    assert s.net == {0: 50, 1: -100, 2: 50}  # capped at 100, shared equally


def test_11_7_3_per_hand_penalty_table_caps_at_the_balance() -> None:
    s = rummy_penalty({0: 0, 1: 45, 2: 48}, 1, {0: 0, 1: 10, 2: 10}, format=Format.RUMMY_PER_HAND)
    assert s.format is Format.RUMMY_PER_HAND
    assert "its remaining table balance" in s.text()
    assert s.net[1] == -10 and s.net[2] == -10


def test_11_6_3_a_forfeiter_is_counted_as_a_loser() -> None:
    s = rummy_per_hand(0, {1: 15, 2: 40}, 2, {0: 100, 1: 100, 2: 100}, forfeited={2})
    assert s.net == {0: 110, 1: -30, 2: -80}
    forfeit = [line for line in s.lines if line.payer == 2]
    assert "forfeited, counted as a loser (11.6.3)" in forfeit[0].reason


def test_11_6_3_only_one_active_player_left_wins_and_the_forfeiters_pay() -> None:
    s = rummy_per_hand(1, {0: 7, 2: 9}, 1, {0: 50, 1: 50, 2: 50}, forfeited={0, 2})
    assert s.net == {0: -7, 1: 16, 2: -9}


@pytest.mark.parametrize(
    "call",
    [
        lambda: rummy_per_hand(0, {1: 5}, 1, {0: 1, 1: 1, 2: 1}),  # seat 2 not counted
        lambda: rummy_per_hand(0, {0: 5, 1: 5}, 1, {0: 1, 1: 1}),  # the winner counted
        lambda: rummy_per_hand(3, {0: 5, 1: 5}, 1, {0: 1, 1: 1}),
        lambda: rummy_per_hand(0, {1: 5}, 1, {0: 1, 1: 1}, forfeited={0}),
        lambda: rummy_per_hand(0, {1: -5}, 1, {0: 1, 1: 1}),
        lambda: rummy_per_hand(0, {1: 5}, 0, {0: 1, 1: 1}),
        lambda: rummy_per_hand(0, {1: 5}, 1, {0: 1, 1: 1.0}),
        lambda: rummy_per_hand(0, {1: 5}, 1, {0: 1, 1: 1}, FeeRule(100, FeeBase.POT)),
        lambda: rummy_match({0: 5, 1: -4}, 1, {0: 1, 1: 1}),  # not zero-sum
        lambda: rummy_match({0: 5, 3: -5}, 1, {0: 1, 1: 1}),  # seat 3 has no buy-in
        lambda: rummy_match({0: 5, 1: -5}, 1, {0: 1, 1: 1}, format=Format.CLASSIC),
        lambda: needs_top_up({0: -1}, 1),
    ],
)
def test_bad_rummy_input_is_refused(call: Callable[[], object]) -> None:
    with pytest.raises(SettlementError):
        call()
