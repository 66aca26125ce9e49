"""Classic Gin for stakes at three players (4.1.5, 11.1, 11.6.2, 11.7.2) and in partnership
(4.2.7, 11.2.3, 11.7.2, 11.7.5)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from service.games.common.errors import SettlementError
from service.games.common.settings import CapMode, FeeBase, FeeRule
from service.games.common.statement import HOUSE, LineKind
from service.games.gin.game import Game
from service.games.gin.ruleset import Ruleset, ShutoutMode
from service.games.multi_gin.partnership import partnership_standings
from service.games.multi_gin.payout import (
    classic_three_player,
    classic_three_player_forfeit,
    partnership_classic,
    partnership_classic_forfeit,
    settle_three_player,
)
from service.games.multi_gin.three_player import three_player_standings

PLENTY = {0: 10**6, 1: 10**6, 2: 10**6}
TEAMS_PLENTY = {0: 10**6, 1: 10**6, 2: 10**6, 3: 10**6}


@pytest.mark.parametrize(
    ("mode", "extra"),
    [
        (ShutoutMode.BONUS, 150),  # the shutout bonus
        (ShutoutMode.DOUBLE_GAME_BONUS, 100),  # the game bonus again
        (ShutoutMode.DOUBLE_HAND_POINTS, 120),  # the winner's hand points again
    ],
)
def test_11_1_2_shutout_is_per_pair(mode: ShutoutMode, extra: int) -> None:
    # Seat 1 won no hand; seat 2 did. Only the pair (winner 0, seat 1) carries the shutout.
    s = classic_three_player(
        {0: 260, 1: 0, 2: 50},
        {0: 120, 1: 0, 2: 30},
        0,
        1,
        PLENTY,
        shutout_mode=mode,
        shutout_bonus=150,
        game_bonus=100,
    )
    shutouts = [line for line in s.lines if line.rule == "11.1.2"]
    assert [(x.payer, x.payee, x.amount) for x in shutouts] == [(1, 0, extra)]
    assert s.net == {0: 260 + extra + 210, 1: -260 - extra - 50, 2: 50 - 210}


def test_11_1_3_the_two_non_winners_settle_with_each_other() -> None:
    s = classic_three_player({0: 250, 1: 90, 2: 40}, {0: 110, 1: 50, 2: 20}, 0, 2, PLENTY)
    assert (2, 1, 100) in s.payments()  # (90 - 40) x 2, between the non-winners
    assert s.net == {0: 2 * (160 + 210), 1: 2 * (50 - 160), 2: 2 * (-210 - 50)}


def test_11_7_2_forfeit_margin_is_clamped_before_the_game_bonus() -> None:
    s = classic_three_player_forfeit({0: 90, 1: 40, 2: 70}, 1, 1, PLENTY, game_bonus=100)
    assert s.net == {0: 150 + 20, 1: -150 - 130, 2: 130 - 20}
    assert not any(line.rule == "11.1.2" for line in s.lines)  # no shutout after a forfeit


def test_11_2_3_money_pairs_capped_per_pair_by_cap_mode() -> None:
    buyins = {0: 1000, 1: 400, 2: 300, 3: 2000}
    both = partnership_classic((300, 180), 5, buyins, cap_mode=CapMode.MIN_BOTH)
    assert both.payments() == [(1, 0, 400), (3, 2, 300)]  # min(600, 1000, 400), min(600, 300, 2000)
    assert both.cap_applied
    loser = partnership_classic((300, 180), 5, buyins, cap_mode=CapMode.LOSER_ONLY)
    assert loser.payments() == [(1, 0, 400), (3, 2, 600)]  # the winner's buy-in caps nothing
    assert loser.net == {0: 400, 1: -400, 2: 600, 3: -600}


def test_4_2_7_each_player_nets_the_team_margin_times_r() -> None:
    s = partnership_classic((95, 170), 3, TEAMS_PLENTY)
    assert s.net == {0: -225, 1: 225, 2: -225, 3: 225}
    assert s.receivers == (1, 3) and not s.cap_applied


def test_11_2_3_equal_team_totals_move_nothing() -> None:
    s = partnership_classic((140, 140), 3, TEAMS_PLENTY)
    assert s.net == dict.fromkeys(range(4), 0) and s.lines == ()


def test_11_4_3_partnership_fee_on_each_winners_gain() -> None:
    s = partnership_classic(
        (300, 180), 5, {0: 1000, 1: 400, 2: 300, 3: 2000}, FeeRule(250, FeeBase.WINNINGS)
    )
    assert s.fees == {0: 10, 2: 7}  # 2.5% of 400 and of 300 (7.5 rounded down)
    assert s.net == {0: 390, 1: -400, 2: 293, 3: -300} and s.fee == 17
    assert (0, HOUSE, 10) in s.payments()


def test_11_7_2_partnership_forfeit_both_pairs_pay_at_team_level() -> None:
    s = partnership_classic_forfeit((80, 120), 1, 2, TEAMS_PLENTY, game_bonus=100)
    assert s.net == {0: 200, 1: -200, 2: 200, 3: -200}  # max(80 - 120, 0) + 100, x 2
    s = partnership_classic_forfeit((80, 120), 2, 2, TEAMS_PLENTY, game_bonus=100)
    assert s.net == {0: -280, 1: 280, 2: -280, 3: 280}  # (120 - 80) + 100, x 2
    assert {line.rule for line in s.lines} == {"11.7.2"}


def test_11_7_5_partnership_forfeit_pairs_follow_cap_mode() -> None:
    buyins = {0: 50, 1: 500, 2: 500, 3: 500}
    s = partnership_classic_forfeit((0, 0), 3, 10, buyins, cap_mode=CapMode.MIN_BOTH)
    assert s.payments() == [(1, 0, 50), (3, 2, 500)]  # 100 x 10 = 1000, capped per pair


def test_11_7_5_net_loss_cap_caps_losers_only() -> None:
    # Seat 0 brought 100 but wins 2300 at r = 10: a winner's buy-in caps nothing at three.
    s = classic_three_player(
        {0: 180, 1: 90, 2: 40}, {0: 1, 1: 1, 2: 1}, 0, 10, {0: 100, 1: 10**6, 2: 10**6}
    )
    assert s.net == {0: 2300, 1: -400, 2: -1900} and not s.cap_applied


@pytest.mark.parametrize(
    "call",
    [
        lambda: classic_three_player({0: 1, 1: 2}, {0: 1, 1: 2}, 0, 1, PLENTY),  # two seats
        lambda: classic_three_player({0: 1, 1: 2, 2: 3}, {0: 1, 1: 2, 2: 3}, 5, 1, PLENTY),
        lambda: classic_three_player_forfeit({0: 1, 1: 2, 2: 3}, 3, 1, PLENTY),
        lambda: classic_three_player({0: 1.5, 1: 2, 2: 3}, {0: 1, 1: 1, 2: 1}, 0, 1, PLENTY),
        lambda: partnership_classic((10, 5), 1, {0: 1, 1: 1, 2: 1}),  # three seats
        lambda: partnership_classic((10, 5), 0, TEAMS_PLENTY),  # no stake per point
        lambda: partnership_classic((10, 5, 1), 1, TEAMS_PLENTY),
        lambda: partnership_classic_forfeit((10, 5), 4, 1, TEAMS_PLENTY),
        lambda: partnership_classic((10, 5), 1, TEAMS_PLENTY, FeeRule(100)),  # fee on POT
    ],
)
def test_bad_input_is_refused(call: Callable[[], object]) -> None:
    with pytest.raises(SettlementError):
        call()


def test_lines_say_who_pays_whom_and_why() -> None:
    s = classic_three_player(
        {0: 240, 1: 0, 2: 50}, {0: 100, 1: 0, 2: 20}, 0, 1, PLENTY, shutout_bonus=100
    )
    text = s.text({0: "P", 1: "Q", 2: "R"}).splitlines()
    assert "Q pays P 100: shut out (no hand points), BONUS: 100 points x 1 (11.1.2)" in text
    assert all(line.kind is LineKind.PAYS for line in s.lines)


def test_4_1_5_a_matchs_standings_are_settled_from_their_own_margins() -> None:
    # Totals P 180, Q 90, R 40 with no bonuses: Q pays P 90, R pays P 140, R pays Q 50.
    plain = Ruleset(game_bonus=0, box_bonus=0)
    standings = three_player_standings((180, 90, 40), (0, 0, 0), plain, 100)
    s = settle_three_player(standings, 10, PLENTY)
    assert s.payments() == [(1, 0, 900), (2, 0, 1400), (2, 1, 500)]
    assert s.net == {0: 2300, 1: -400, 2: -1900}
    same = classic_three_player({0: 180, 1: 90, 2: 40}, {0: 180, 1: 90, 2: 40}, 0, 10, PLENTY)
    assert same.lines == s.lines


def test_11_7_2_a_forfeited_matchs_standings_are_settled_from_their_margins() -> None:
    standings = three_player_standings((50, 30, 10), (2, 1, 1), Ruleset(), 100, forfeiter=1)
    s = settle_three_player(standings, 1, PLENTY)
    # Totals 90, 50, 30: seat 1 pays seat 0 (90 - 50) + 100 and seat 2 max(30 - 50, 0) + 100.
    assert s.net == {0: 140 + 60, 1: -140 - 100, 2: -60 + 100}
    assert {line.rule for line in s.lines} == {"11.7.2", "11.6.2"}
    assert s.lines == classic_three_player_forfeit({0: 90, 1: 50, 2: 30}, 1, 1, PLENTY).lines


def test_settle_three_player_refuses_partnership_standings() -> None:
    with pytest.raises(SettlementError):
        settle_three_player(partnership_standings(Game(Ruleset(), 125)), 1, TEAMS_PLENTY)
