"""Classic Gin for stakes at three players (4.1.5, 11.1, 11.6.2, 11.7.2) and in partnership
(4.2.7, 11.2.3, 11.7.2, 11.7.5)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from service.formats.payout import SettlementError
from service.formats.payout_multi import (
    HOUSE,
    LineKind,
    PairAmount,
    classic_three_player,
    classic_three_player_forfeit,
    partnership_classic,
    partnership_classic_forfeit,
    three_player_forfeit_margins,
    three_player_margins,
)
from service.formats.settings import CapMode, FeeBase, FeeRule
from service.rules.ruleset import ShutoutMode

PLENTY = {0: 10**6, 1: 10**6, 2: 10**6}
TEAMS_PLENTY = {0: 10**6, 1: 10**6, 2: 10**6, 3: 10**6}


def owed(margins: tuple[PairAmount, ...]) -> set[tuple[int, int, int, str]]:
    return {(m.payer, m.payee, m.points, m.rule) for m in margins}


def test_4_1_5_every_pair_settles_its_difference() -> None:
    margins = three_player_margins({0: 50, 1: 120, 2: 80}, {0: 10, 1: 90, 2: 40}, winner=1)
    assert owed(margins) == {(0, 1, 70, "4.1.5"), (2, 1, 40, "4.1.5"), (0, 2, 30, "4.1.5")}


def test_4_1_5_equal_totals_owe_nothing() -> None:
    margins = three_player_margins({0: 150, 1: 60, 2: 60}, {0: 110, 1: 30, 2: 30}, winner=0)
    assert owed(margins) == {(1, 0, 90, "4.1.5"), (2, 0, 90, "4.1.5")}


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


def test_11_1_2_every_shut_out_opponent_pays_the_winner() -> None:
    margins = three_player_margins({0: 240, 1: 0, 2: 0}, {0: 100, 1: 0, 2: 0}, winner=0)
    shutouts = {(m.payer, m.payee, m.points) for m in margins if m.rule == "11.1.2"}
    assert shutouts == {(1, 0, 100), (2, 0, 100)}
    # The two shut-out seats have equal totals: nothing between them.
    assert not [m for m in margins if {m.payer, m.payee} == {1, 2}]


def test_11_1_2_a_non_winner_is_never_paid_a_shutout() -> None:
    # Seat 2 has no hand points but seat 1, not the winner, receives no shutout from it.
    margins = three_player_margins({0: 200, 1: 60, 2: 0}, {0: 100, 1: 40, 2: 0}, winner=0)
    assert {(m.payer, m.payee) for m in margins if m.rule == "11.1.2"} == {(2, 0)}


def test_11_1_3_the_two_non_winners_settle_with_each_other() -> None:
    s = classic_three_player({0: 250, 1: 90, 2: 40}, {0: 110, 1: 50, 2: 20}, 0, 2, PLENTY)
    assert (2, 1, 100) in s.payments()  # (90 - 40) x 2, between the non-winners
    assert s.net == {0: 2 * (160 + 210), 1: 2 * (50 - 160), 2: 2 * (-210 - 50)}


def test_11_6_2_classic_forfeit_pairs() -> None:
    # Totals at the forfeit, no game bonus in them; seat 0 leads and forfeits.
    margins = three_player_forfeit_margins({0: 90, 1: 40, 2: 70}, 0, game_bonus=100)
    assert owed(margins) == {
        (0, 1, 100, "11.7.2"),  # max(40 - 90, 0) + 100: the lead does not count for seat 0
        (0, 2, 100, "11.7.2"),
        (1, 2, 30, "11.6.2"),  # the pair without the forfeiter: its plain difference
    }


def test_11_7_2_forfeit_margin_is_clamped_before_the_game_bonus() -> None:
    s = classic_three_player_forfeit({0: 90, 1: 40, 2: 70}, 1, 1, PLENTY, game_bonus=100)
    assert s.net == {0: 150 + 20, 1: -150 - 130, 2: 130 - 20}
    assert not any(line.rule == "11.1.2" for line in s.lines)  # no shutout after a forfeit


def test_11_7_2_forfeit_with_no_game_bonus_and_a_forfeiter_ahead() -> None:
    margins = three_player_forfeit_margins({0: 90, 1: 40, 2: 70}, 0, game_bonus=0)
    assert owed(margins) == {(1, 2, 30, "11.6.2")}


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
        lambda: three_player_margins({0: 1, 1: 2}, {0: 1, 1: 2}, 0),  # two seats
        lambda: three_player_margins({0: 1, 1: 2, 2: 3}, {0: 1, 1: 2, 2: 3}, 5),
        lambda: three_player_forfeit_margins({0: 1, 1: 2, 2: 3}, 3),
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
