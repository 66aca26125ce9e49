"""Game scoring (docs/engine.md 3.1-3.3) with the worked examples of 7.7-7.9."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.errors import RulesError
from service.games.gin.game import Game, final_totals
from service.games.gin.ruleset import Ruleset, ShutoutMode

# docs/engine.md 7.7: #1 P1 +40, #2 P2 +27, #3 P1 +72 (seat 0 = P1).
CLASSIC = [(0, 40), (1, 27), (0, 72)]


def play(game: Game, results: list[tuple[int | None, int]]) -> Game:
    for winner, points in results:
        game.record(winner, points)
    return game


def test_classic_defaults() -> None:
    game = play(Game(), CLASSIC)
    assert game.over and game.target_reacher == 0
    totals = game.totals()
    assert totals.final == (252, 47)
    assert (totals.margin, totals.winner) == (205, 0)
    assert totals.boxes == (2, 1) and totals.box_bonus == (40, 20)


@pytest.mark.parametrize(
    ("options", "final", "margin"),
    [
        ({"box_bonus": 25}, (262, 52), 210),
        ({"game_bonus": 0}, (152, 47), 105),
    ],
)
def test_classic_variants(options: dict[str, int], final: tuple[int, int], margin: int) -> None:
    totals = play(Game(Ruleset(**options)), CLASSIC).totals()
    assert (totals.final, totals.margin) == (final, margin)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (ShutoutMode.BONUS, 352),
        (ShutoutMode.DOUBLE_HAND_POINTS, 364),
        (ShutoutMode.DOUBLE_GAME_BONUS, 112 + 40 + 200),
    ],
)
def test_shutout_modes(mode: ShutoutMode, expected: int) -> None:
    totals = play(Game(Ruleset(shutout_mode=mode)), [(0, 40), (0, 72)]).totals()
    assert totals.final == (expected, 0) and totals.margin == expected


def test_money_play_100_formula_with_zero_point_bonus() -> None:
    # docs/engine.md 7.8: line 25, target 100, zero-point 100 -> 362 vs 0.
    totals = final_totals((112, 0), (2, 0), 0, box_bonus=25, game_bonus=100, shutout_bonus=100)
    assert totals.final == (362, 0) and totals.margin == 362 and totals.winner == 0


def test_money_play_50_target_reacher_can_lose() -> None:
    # docs/engine.md 7.9: P2 wins five hands for 46; P1's gin for 52 reaches 50.
    game = play(Game(target=50), [(1, 9), (1, 8), (1, 6), (1, 12), (1, 11), (0, 52)])
    assert game.target_reacher == 0
    totals = final_totals(
        game.hand_points, game.boxes, 0, box_bonus=25, game_bonus=50, shutout_bonus=50
    )
    assert totals.final == (127, 171)
    assert (totals.winner, totals.margin) == (1, 44)


def test_dead_hands_count_no_box_and_game_ends_exactly_at_target() -> None:
    game = play(Game(target=50), [(None, 0), (0, 49), (None, 0)])
    assert not game.over and game.boxes == (1, 0) and game.dead_hands == 2
    with pytest.raises(RulesError):
        game.totals()
    game.record(1, 50)
    assert game.over and game.target_reacher == 1
    with pytest.raises(RulesError):
        game.record(0, 10)


@pytest.mark.parametrize(("winner", "points"), [(2, 5), (None, 5), (0, -1), (0, 2.5)])
def test_bad_results_are_refused(winner: int | None, points: int) -> None:
    with pytest.raises(RulesError):
        Game().record(winner, points)


def test_equal_totals_transfer_nothing() -> None:
    totals = final_totals((100, 60), (1, 3), 0, box_bonus=20, game_bonus=0, shutout_bonus=100)
    assert totals.final == (120, 120) and totals.margin == 0 and totals.winner is None


@given(
    results=st.lists(
        st.tuples(st.sampled_from([0, 1, None]), st.integers(1, 60)), min_size=1, max_size=40
    )
)
def test_game_bookkeeping(results: list[tuple[int | None, int]]) -> None:
    game = Game()
    for winner, points in results:
        if game.over:
            break
        game.record(winner, 0 if winner is None else points)
    h, b = game.hand_points, game.boxes
    assert sum(b) + game.dead_hands == len(game.results)
    if game.over:
        reacher = game.target_reacher
        assert reacher is not None and h[reacher] >= 100 and h[1 - reacher] < 100
        totals = game.totals()
        assert totals.margin == abs(totals.final[0] - totals.final[1])
        assert totals.final[reacher] >= h[reacher] + 100  # game bonus
        restored = Game.from_dict(game.to_dict())
        assert restored.totals() == totals
