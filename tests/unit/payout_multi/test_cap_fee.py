"""The buy-in as the most a player can lose (11.4.1), the net-loss cap with its proportional
shares and leftover units (11.4.2), and the fee per winner on its gain (11.4.3)."""

from __future__ import annotations

import pytest

from service.games.common.errors import SettlementError
from service.games.common.netting import PairAmount, net_loss_cap, settle_nets, settle_pairs
from service.games.common.settings import FeeBase, FeeRule, Format
from service.games.common.statement import HOUSE, TABLE, LineKind
from service.games.multi_gin.payout import classic_three_player


def test_11_4_1_the_buyin_is_the_most_a_player_can_lose() -> None:
    s = classic_three_player(
        {0: 400, 1: 300, 2: 0},
        {0: 150, 1: 120, 2: 0},
        0,
        10,
        {
            0: 5000,
            1: 5000,
            2: 800,
        },
    )
    assert s.net[2] == -800 and s.payouts[2] == 0
    assert s.raw_net[2] == -(400 + 100 + 300) * 10  # pairs and the shutout, before the cap


def test_11_4_2_winners_share_what_was_paid_with_leftover_units() -> None:
    # Raw gains 5, 3, 3 against a loss of 11 capped at 7: 35/11, 21/11, 21/11 round down to
    # 3, 1, 1; the 2 units left go to the largest raw gain (seat 0), then the lower of the tied
    # seats 1 and 2.
    cap = net_loss_cap({0: 5, 1: 3, 2: 3, 3: -11}, {0: 0, 1: 0, 2: 0, 3: 7})
    assert cap.settled == {0: 4, 1: 2, 2: 1, 3: -7}
    assert (cap.paid, cap.raw_total, cap.capped, cap.leftover_to) == (7, 11, (3,), (0, 1))


def test_11_4_2_leftover_goes_by_raw_gain_not_by_remainder() -> None:
    # 6 x 7 / 10 = 4.2 and 4 x 7 / 10 = 2.8: the unit goes to seat 0, the larger raw gain,
    # although seat 1's remainder is larger.
    cap = net_loss_cap({0: 6, 1: 4, 2: -10}, {2: 7})
    assert cap.settled == {0: 5, 1: 2, 2: -7}


def test_11_4_2_uncapped_losers_pay_in_full_beside_a_capped_one() -> None:
    cap = net_loss_cap({0: 700, 1: 300, 2: -600, 3: -400}, {2: 300, 3: 1000})
    assert cap.settled == {0: 490, 1: 210, 2: -300, 3: -400}
    assert cap.capped == (2,) and cap.leftover_to == ()


def test_11_4_2_no_cap_binds_nothing_changes() -> None:
    cap = net_loss_cap({0: 70, 1: -30, 2: -40}, {1: 30, 2: 1000})
    assert cap.settled == {0: 70, 1: -30, 2: -40} and not cap.applied


def test_11_4_2_lines_through_the_table_with_several_winners() -> None:
    s = settle_nets(
        {0: 6, 1: 4, 2: -10}, 1, {0: 1, 1: 1, 2: 7}, format=Format.RUMMY_TARGET, rule="11.5.2"
    )
    assert s.payments() == [(2, TABLE, 7), (TABLE, 0, 5), (TABLE, 1, 2)]
    assert "plus one leftover unit" in str(s.lines[-2]) and "leftover" not in str(s.lines[-1])


def test_11_4_2_refuses_nets_that_are_not_zero_sum() -> None:
    with pytest.raises(SettlementError):
        net_loss_cap({0: 5, 1: -4}, {1: 10})
    with pytest.raises(SettlementError):
        net_loss_cap({0: 5, 1: -5}, {0: 10})  # the loser has no cap


def test_11_4_3_fee_per_winner_on_its_net_gain() -> None:
    margins = [
        PairAmount(0, 2, 44, "11.5.3", "penalties"),
        PairAmount(1, 2, 41, "11.5.3", "penalties"),
    ]
    s = settle_pairs(
        margins,
        5,
        {0: 10**6, 1: 10**6, 2: 10**6},
        FeeRule(250, FeeBase.WINNINGS),
        format=Format.RUMMY_DEALS,
    )
    assert s.fees == {0: 5, 1: 5}  # 2.5% of 220 = 5.5 and of 205 = 5.125, rounded down
    assert s.net == {0: 215, 1: 200, 2: -425} and s.fee == 10
    assert [line.payer for line in s.lines if line.kind is LineKind.FEE] == [0, 1]
    assert all(line.payee == HOUSE for line in s.lines if line.kind is LineKind.FEE)


def test_11_4_3_fee_is_on_the_capped_gain_and_never_on_a_loser() -> None:
    s = classic_three_player(
        {0: 180, 1: 90, 2: 40},
        {0: 1, 1: 1, 2: 1},
        0,
        10,
        {0: 1000, 1: 1000, 2: 1000},
        FeeRule(1000, FeeBase.WINNINGS),
    )
    assert s.fees == {0: 140}  # 10% of 1400 (the capped gain), not of 2300; Q received 500
    assert s.net == {0: 1260, 1: -400, 2: -1000}


def test_11_4_3_fee_minimum_and_maximum_per_winner() -> None:
    s = settle_nets(
        {0: 30, 1: 2000, 2: -2030},
        1,
        {0: 1, 1: 1, 2: 10**6},
        FeeRule(100, FeeBase.WINNINGS, minimum=5, maximum=15),
        format=Format.RUMMY_DEALS,
        rule="11.5.2",
    )
    assert s.fees == {0: 5, 1: 15}


def test_11_4_3_fee_must_be_on_winnings() -> None:
    with pytest.raises(SettlementError):
        settle_nets(
            {0: 1, 1: -1},
            1,
            {0: 1, 1: 1},
            FeeRule(100),
            format=Format.RUMMY_DEALS,
            rule="11.5.2",
        )


def test_11_4_1_every_seat_in_a_pair_needs_a_buyin() -> None:
    with pytest.raises(SettlementError):
        settle_pairs(
            [PairAmount(0, 3, 5, "11.5.3", "penalties")],
            1,
            {0: 10, 1: 10},
            format=Format.RUMMY_DEALS,
        )
