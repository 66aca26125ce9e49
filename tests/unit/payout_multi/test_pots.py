"""Match Play pots at three players and in partnership (11.4, 11.6.2, 11.7.4)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from service.games.common.errors import SettlementError
from service.games.common.netting import share_pot
from service.games.common.settings import FeeBase, FeeRule, Format
from service.games.common.statement import HOUSE, TABLE, LineKind
from service.games.multi_gin.payout import PARTNERSHIP_TEAMS
from service.games.multi_gin.pots import (
    match_play_forfeit,
    partnership_match_play,
    three_player_match_play,
)

match_play_pot = partial(share_pot, format=Format.MATCH_PLAY, rule="11.4", why="won the game")

THREE = {0: 500, 1: 500, 2: 500}
FOUR = {0: 500, 1: 500, 2: 500, 3: 500}


def test_11_4_three_player_winner_takes_the_pot_less_the_fee() -> None:
    s = three_player_match_play(THREE, 1, FeeRule(1000))
    assert s.fee == 150 and s.fee_base_amount == 1500  # 10% of the pot
    assert s.payouts == {0: 0, 1: 1350, 2: 0}
    assert s.net == {0: -500, 1: 850, 2: -500}
    assert (TABLE, HOUSE, 150) in s.payments() and (TABLE, 1, 1350) in s.payments()


def test_11_4_partnership_team_shares_the_pot_equally() -> None:
    s = partnership_match_play(FOUR, 0, FeeRule(1000))
    assert s.fee == 200 and s.payouts == {0: 900, 1: 0, 2: 900, 3: 0}
    assert s.receivers == PARTNERSHIP_TEAMS[0]


def test_11_4_partnership_odd_unit_to_the_lower_seat() -> None:
    s = partnership_match_play({0: 25, 1: 25, 2: 25, 3: 25}, 1, FeeRule(750))
    assert s.fee == 7  # 7.5 rounded down
    assert s.payouts == {0: 0, 1: 47, 2: 0, 3: 46}  # 93 shared: the odd unit to seat 1


def test_11_7_4_winnings_fee_base_is_the_pot_less_the_receivers_stakes() -> None:
    s = three_player_match_play(THREE, 0, FeeRule(1000, FeeBase.WINNINGS))
    assert (s.fee_base_amount, s.fee, s.payouts[0]) == (1000, 100, 1400)
    s = partnership_match_play(FOUR, 1, FeeRule(1000, FeeBase.WINNINGS))
    assert (s.fee_base_amount, s.fee) == (1000, 100)  # 2000 less the team's 1000
    assert s.payouts == {0: 0, 1: 950, 2: 0, 3: 950}
    assert [line.rule for line in s.lines if line.kind is LineKind.FEE] == ["11.7.4"]


def test_11_6_2_forfeit_pot_to_the_most_hand_points_without_the_forfeiter() -> None:
    # Seat 1 leads but forfeits: seat 2 (80) beats seat 0 (60).
    s = match_play_forfeit(THREE, 1, (60, 90, 80), FeeRule(1000))
    assert s.receivers == (2,) and s.payouts == {0: 0, 1: 0, 2: 1350}
    assert all(line.rule == "11.6.2" for line in s.lines if line.kind is LineKind.PAYS)


def test_11_6_2_forfeit_tie_split_odd_units_to_the_lower_seat() -> None:
    s = match_play_forfeit({0: 25, 1: 25, 2: 25}, 0, (60, 80, 80))
    assert s.payouts == {0: 0, 1: 38, 2: 37} and s.fee == 0


def test_11_6_2_forfeit_tie_with_winnings_fee() -> None:
    s = match_play_forfeit(THREE, 2, (70, 70, 10), FeeRule(1000, FeeBase.WINNINGS))
    assert s.fee_base_amount == 500 and s.fee == 50  # the pot less both receivers' stakes
    assert s.payouts == {0: 725, 1: 725, 2: 0}


def test_11_6_2_partnership_forfeit_pays_the_other_team_whatever_the_totals() -> None:
    s = match_play_forfeit(FOUR, 3, (10, 120), FeeRule(1000), sides=PARTNERSHIP_TEAMS)
    assert s.payouts == {0: 900, 1: 0, 2: 900, 3: 0}


@pytest.mark.parametrize(
    "call",
    [
        lambda: match_play_pot({0: 500, 1: 400, 2: 500}, [0]),  # unequal stakes
        lambda: match_play_pot({0: 0, 1: 0, 2: 0}, [0]),
        lambda: match_play_pot(THREE, []),
        lambda: match_play_pot(THREE, [3]),
        lambda: match_play_pot(THREE, [1, 1]),
        lambda: partnership_match_play(FOUR, 2),
        lambda: partnership_match_play(THREE, 0),
        lambda: match_play_forfeit(THREE, 5, (1, 2, 3)),
        lambda: match_play_forfeit(THREE, 0, (1, 2)),
        lambda: match_play_forfeit(FOUR, 0, (1, 2, 3)),
    ],
)
def test_bad_pots_are_refused(call: Callable[[], object]) -> None:
    with pytest.raises(SettlementError):
        call()
