"""Game scoring for two-player Gin (docs/engine.md 3.1-3.3).

A :class:`Game` accumulates hand results (who won, how many points) into hand points ``h``
and boxes ``b`` per seat, ends after the hand in which a seat's ``h`` first reaches the
target, and computes final totals with the end-of-game bonuses. :func:`final_totals` is the
one formula behind classic scoring (3.2) and Money Play (6.4, box bonus = line bonus, game
and shutout bonuses = the target): ``F(W) = h(W) + box * b(W) + game [+ shutout]``,
``F(L) = h(L) + box * b(L)``; the margin ``F(W) - F(L)`` goes to W when positive and to L
when negative (3.1.3).

Oklahoma needs nothing here: its doubling is already in each hand's points (3.3.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.games.common.errors import InvalidState, RulesError
from service.games.gin.ruleset import Ruleset, ShutoutMode


@dataclass(frozen=True, slots=True)
class GameTotals:
    """End-of-game figures, per seat (index 0 and 1)."""

    hand_points: tuple[int, int]
    boxes: tuple[int, int]
    target_reacher: int
    box_bonus: tuple[int, int]
    game_bonus: tuple[int, int]
    shutout_bonus: tuple[int, int]
    doubled_hand_points: tuple[int, int]
    final: tuple[int, int]
    margin: int
    winner: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "hand_points": list(self.hand_points),
            "boxes": list(self.boxes),
            "target_reacher": self.target_reacher,
            "box_bonus": list(self.box_bonus),
            "game_bonus": list(self.game_bonus),
            "shutout_bonus": list(self.shutout_bonus),
            "doubled_hand_points": list(self.doubled_hand_points),
            "final": list(self.final),
            "margin": self.margin,
            "winner": self.winner,
        }


def shutout_amount(
    mode: ShutoutMode, *, shutout_bonus: int, game_bonus: int, winner_hand_points: int
) -> int:
    """What the target reacher receives on top when its opponent won no hand (3.2.4, and per
    pair at three players, 11.1.2): the shutout bonus (``BONUS``), the game bonus once more
    (``DOUBLE_GAME_BONUS``) or its own hand points once more (``DOUBLE_HAND_POINTS``)."""
    if mode is ShutoutMode.BONUS:
        return shutout_bonus
    if mode is ShutoutMode.DOUBLE_GAME_BONUS:
        return game_bonus
    return winner_hand_points


def final_totals(
    hand_points: tuple[int, int],
    boxes: tuple[int, int],
    target_reacher: int,
    *,
    box_bonus: int,
    game_bonus: int,
    shutout_bonus: int,
    shutout_mode: ShutoutMode = ShutoutMode.BONUS,
) -> GameTotals:
    """Final totals and margin of a finished game (3.1.3, 3.2.5).

    ``margin`` is ``|F(0) - F(1)|`` and ``winner`` the seat with the higher total (``None`` on
    equal totals), which may be the seat that did not reach the target (7.9).
    """
    w = target_reacher
    lo = 1 - w
    box = (box_bonus * boxes[0], box_bonus * boxes[1])
    game = [0, 0]
    extra = [0, 0]
    doubled = [0, 0]
    game[w] = game_bonus
    if hand_points[lo] == 0:
        amount = shutout_amount(
            shutout_mode,
            shutout_bonus=shutout_bonus,
            game_bonus=game_bonus,
            winner_hand_points=hand_points[w],
        )
        if shutout_mode is ShutoutMode.DOUBLE_HAND_POINTS:
            doubled[w] = amount
        else:
            extra[w] = amount
    final = tuple(hand_points[s] + doubled[s] + box[s] + game[s] + extra[s] for s in (0, 1))
    difference = final[0] - final[1]
    winner = None if difference == 0 else (0 if difference > 0 else 1)
    return GameTotals(
        hand_points,
        boxes,
        w,
        box,
        (game[0], game[1]),
        (extra[0], extra[1]),
        (doubled[0], doubled[1]),
        (final[0], final[1]),
        abs(difference),
        winner,
    )


@dataclass(frozen=True, slots=True)
class HandResult:
    """A hand's contribution to the game: the winning seat (None for a dead hand), points."""

    winner: int | None
    points: int


#: Ruleset options this engine does not offer (they must keep their default, False):
#: Hollywood scoring (3.4, "implement only if product asks").
NOT_OFFERED = ("hollywood",)


class Game:
    """Hand points, boxes and the end of a game at the target (3.1)."""

    def __init__(self, ruleset: Ruleset | None = None, target: int | None = None) -> None:
        self.ruleset = ruleset or Ruleset()
        for option in NOT_OFFERED:
            if getattr(self.ruleset, option):
                raise RulesError(f"{option} (Hollywood scoring, 3.4) is not offered by this engine")
        self.target = self.ruleset.target if target is None else target
        if not isinstance(self.target, int) or self.target < 1:
            raise RulesError(f"target must be a positive integer, not {self.target!r}")
        self.results: list[HandResult] = []

    @property
    def hand_points(self) -> tuple[int, int]:
        h = [0, 0]
        for r in self.results:
            if r.winner is not None:
                h[r.winner] += r.points
        return h[0], h[1]

    @property
    def boxes(self) -> tuple[int, int]:
        b = [0, 0]
        for r in self.results:
            if r.winner is not None:
                b[r.winner] += 1
        return b[0], b[1]

    @property
    def dead_hands(self) -> int:
        return sum(1 for r in self.results if r.winner is None)

    @property
    def target_reacher(self) -> int | None:
        h = self.hand_points
        for seat in (0, 1):
            if h[seat] >= self.target:
                return seat
        return None

    @property
    def over(self) -> bool:
        return self.target_reacher is not None

    def record(self, winner: int | None, points: int) -> None:
        """Add a hand's result (``winner`` None for a dead hand).

        :raises RulesError: when the game is over or the result is malformed.
        """
        if self.over:
            raise RulesError("the game is over")
        if winner not in (0, 1, None):
            raise RulesError(f"winner must be seat 0, 1 or None, not {winner!r}")
        if not isinstance(points, int) or points < 0 or (winner is None and points):
            raise RulesError(f"bad hand points {points!r}")
        self.results.append(HandResult(winner, points))

    def totals(self) -> GameTotals:
        """Classic final totals (3.2) with this ruleset's bonuses.

        :raises RulesError: while no seat has reached the target.
        """
        reacher = self.target_reacher
        if reacher is None:
            raise RulesError("the game has not ended")
        r = self.ruleset
        return final_totals(
            self.hand_points,
            self.boxes,
            reacher,
            box_bonus=r.box_bonus,
            game_bonus=r.game_bonus,
            shutout_bonus=r.shutout_bonus,
            shutout_mode=r.shutout_mode,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ruleset": self.ruleset.to_dict(),
            "target": self.target,
            "results": [[r.winner, r.points] for r in self.results],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Game:
        """:raises InvalidState: when the data is malformed."""
        try:
            game = cls(Ruleset.from_dict(data["ruleset"]), data["target"])
            for winner, points in data["results"]:
                game.results.append(HandResult(winner, points))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed game state: {exc}") from None
        return game
