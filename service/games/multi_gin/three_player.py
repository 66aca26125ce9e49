"""Three-player Gin, "cutthroat" rotation (4.1, 11.1), as a pure match state machine.

Two of the three seats play each hand, an ordinary two-player hand; the third sits out and
sees that hand as a spectator does. The :class:`Seating` of a hand says who sits out and who
deals; the first player is the other one dealt in. The server draws the first seating at
random (4.1.2, :meth:`Seating.drawn`). After a hand with a winner the loser sits out, the
winner plays the one who sat out, who deals, so the winner is first player (4.1.3); after a
dead hand the same two play again with the same dealer and nothing else moves (11.1.1). This
rotation replaces the ruleset's ``next_dealer``.

Every seat keeps its own hand points ``h`` and boxes ``b``; the game ends after the hand in
which a seat's ``h`` reaches the target (``ruleset.target``, for ``match_play`` too: 11.7.4).
Then (4.1.4, 11.1.2) every seat gets the box bonus per box, the winner ``W`` the game bonus,
and ``W`` is owed the shutout amount (by ``shutout_mode``: the shutout bonus, the game bonus
again, or ``W``'s hand points again) by each opponent with ``h = 0``: per pair, not in the
totals. Every pair settles, the two non-winners too (4.1.5, 11.1.3): the pair (X, Y) moves
``F(X) - F(Y)`` (plus a shutout owed) to whoever is ahead; :func:`three_player_standings`
gives the three margins, which the money code multiplies by the stake per point.

A forfeit (11.6.2, 11.7.2) ends the match on the totals of that moment (no game bonus): in
each pair with the forfeiter the opponent receives its lead (never less than 0) plus the game
bonus, the other pair settles its difference; the ``match_play`` pot goes to whichever of the
two others has more hand points (shared when equal): Match Play has no bonuses, so boxes do
not count (6.3.1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from service.games.common.errors import InvalidState
from service.games.common.settings import MatchSettings
from service.games.gin.game import shutout_amount
from service.games.gin.ruleset import Ruleset
from service.games.multi_gin.match import (
    HandSlot,
    MultiMatch,
    PairMargin,
    Standings,
    TableHand,
    best_sides,
    forfeit_margin,
    running_totals,
)
from service.games.protocol import MatchStatus

SEATS = (0, 1, 2)
PAIRS = ((0, 1), (0, 2), (1, 2))


@dataclass(frozen=True, slots=True)
class Seating:
    """Who sits out and who deals the next hand (4.1.1-4.1.3)."""

    sitting_out: int
    dealer: int

    def __post_init__(self) -> None:
        if {self.sitting_out, self.dealer} - set(SEATS) or self.sitting_out == self.dealer:
            raise InvalidState(
                f"bad seating: seat {self.sitting_out!r} out, seat {self.dealer!r} deals"
            )

    @property
    def players(self) -> tuple[int, int]:
        """The two seats dealt in, ascending."""
        a, b = (s for s in SEATS if s != self.sitting_out)
        return a, b

    @property
    def first_player(self) -> int:
        a, b = self.players
        return b if self.dealer == a else a

    def after(self, winner: int | None) -> Seating:
        """The seating of the next hand: the loser sits out and the one who sat out deals
        to the winner; a dead hand (``winner`` None) changes nothing (4.1.3, 11.1.1).

        :raises InvalidState: when ``winner`` did not play the hand.
        """
        if winner is None:
            return self
        if winner not in self.players:
            raise InvalidState(f"seat {winner!r} did not play this hand")
        return Seating(
            sitting_out=next(s for s in self.players if s != winner), dealer=self.sitting_out
        )

    @classmethod
    def drawn(cls, randbelow: Callable[[int], int]) -> Seating:
        """The first hand's seating drawn at random (4.1.2); ``randbelow(n)`` is uniform over
        ``0..n-1`` (``secrets.randbelow`` in the service)."""
        out = randbelow(3)
        players = [s for s in SEATS if s != out]
        return cls(out, players[randbelow(2)])

    def to_dict(self) -> dict[str, Any]:
        return {"sitting_out": self.sitting_out, "dealer": self.dealer}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Seating:
        return cls(int(data["sitting_out"]), int(data["dealer"]))


def three_player_pairs(
    totals: Sequence[int],
    hand_points: Sequence[int],
    winner: int | None,
    ruleset: Ruleset,
    *,
    forfeiter: int | None = None,
) -> tuple[PairMargin, ...]:
    """The margins of the three pairs (0, 1), (0, 2), (1, 2) from each seat's ``totals``
    (4.1.5, 11.1.2-11.1.3, 11.6.2, 11.7.2): the one statement of these rules, which the money
    code multiplies by the stake per point.

    Each pair moves its difference in totals. In a pair of the target reacher ``winner`` and a
    seat with no hand points, the winner also receives the shutout amount of
    ``ruleset.shutout_mode`` (in :attr:`PairMargin.shutout`). After a forfeit (``totals`` are
    those of the moment, no game bonus) each pair with the forfeiter moves
    :func:`~service.games.multi_gin.match.forfeit_margin` and no shutout.

    :raises InvalidState: unless there are three seats and the winner is one of them.
    """
    f, h = tuple(totals), tuple(hand_points)
    if len(f) != 3 or len(h) != 3:
        raise InvalidState(f"three seats score, not {f!r} / {h!r}")
    if winner not in (None, *SEATS) or forfeiter not in (None, *SEATS):
        raise InvalidState(f"winner {winner!r} and forfeiter {forfeiter!r} must be seats")
    r = ruleset
    pairs = []
    for x, y in PAIRS:
        if forfeiter in (x, y):
            margin = forfeit_margin(f[x], f[y], forfeiter == x, r.game_bonus)
            bonus = r.game_bonus if forfeiter == y else -r.game_bonus
            pairs.append(PairMargin((x, y), margin, forfeit_bonus=bonus))
            continue
        shutout = 0
        if forfeiter is None and winner in (x, y):
            other = y if winner == x else x
            if h[other] == 0:
                amount = shutout_amount(
                    r.shutout_mode,
                    shutout_bonus=r.shutout_bonus,
                    game_bonus=r.game_bonus,
                    winner_hand_points=h[winner],
                )
                shutout = amount if winner == x else -amount
        pairs.append(PairMargin((x, y), f[x] - f[y] + shutout, shutout=shutout))
    return tuple(pairs)


def three_player_standings(
    hand_points: Sequence[int],
    boxes: Sequence[int],
    ruleset: Ruleset,
    target: int,
    *,
    forfeiter: int | None = None,
) -> Standings:
    """The standings of a three-player game (4.1.4-4.1.5, 11.1.2-11.1.3, 11.6.2, 11.7.2)
    from each seat's hand points and boxes: ended when a seat has reached ``target`` or
    ``forfeiter`` forfeited, else the running totals. The pairs are
    :func:`three_player_pairs` of the totals."""
    h = tuple(hand_points)
    b = tuple(boxes)
    if len(h) != 3 or len(b) != 3:
        raise InvalidState(f"three seats score, not {h!r} / {b!r}")
    r = ruleset
    box = tuple(r.box_bonus * x for x in b)
    running = running_totals(h, b, r.box_bonus)
    reacher = None if forfeiter is not None else next((s for s in SEATS if h[s] >= target), None)
    game = tuple(r.game_bonus if s == reacher else 0 for s in SEATS)
    totals = tuple(running[s] + game[s] for s in SEATS)
    pairs = three_player_pairs(totals, h, reacher, r, forfeiter=forfeiter)
    if forfeiter is not None:
        pot: tuple[int, ...] = best_sides(h, forfeiter)
    else:
        pot = () if reacher is None else (reacher,)
    return Standings(
        sides=((0,), (1,), (2,)),
        target=target,
        hand_points=h,
        boxes=b,
        box_bonus=box,
        game_bonus=game,
        totals=totals,
        pairs=pairs,
        over=reacher is not None or forfeiter is not None,
        winner=reacher,
        forfeiter=forfeiter,
        pot_sides=pot,
    )


class ThreePlayerMatch(MultiMatch):
    """A three-player Gin match; see the module docstring. ``seating`` is the first hand's
    (drawn at random by the server: :meth:`Seating.drawn`)."""

    SEATS = 3
    KIND = "three_player"

    def __init__(self, settings: MatchSettings, seating: Seating) -> None:
        super().__init__(settings)
        self.first_seating = seating
        self.seating = seating

    @property
    def target(self) -> int:
        """The game's own target, ``ruleset.target`` (11.7.4)."""
        target: int = self.settings.ruleset.target
        return target

    @property
    def sitting_out(self) -> int:
        """The seat sitting out the hand in play (between hands: the next hand's)."""
        return self.seating.sitting_out

    @property
    def hand_points(self) -> tuple[int, int, int]:
        h = [0, 0, 0]
        for r in self.records:
            if r.winner is not None:
                h[r.winner] += r.points
        return h[0], h[1], h[2]

    @property
    def boxes(self) -> tuple[int, int, int]:
        b = [0, 0, 0]
        for r in self.records:
            if r.winner is not None:
                b[r.winner] += 1
        return b[0], b[1], b[2]

    @property
    def winner(self) -> int | None:
        """The seat that reached the target (None while the game is on or after a forfeit)."""
        return self.standings().winner if self.over else None

    def standings(self) -> Standings:
        return three_player_standings(
            self.hand_points,
            self.boxes,
            self.settings.ruleset,
            self.target,
            forfeiter=self.forfeiter,
        )

    def _slots(self) -> list[HandSlot]:
        seating = self.seating
        return [HandSlot(len(self.records) + 1, seating.players, seating.dealer)]

    def _hand_ended(self, table: TableHand) -> None:
        self.seating = self.seating.after(self.records[-1].winner)
        if any(h >= self.target for h in self.hand_points):
            self.status = MatchStatus.FINISHED
        else:
            self.status = MatchStatus.AWAITING_DEAL

    def _state(self) -> dict[str, Any]:
        return {"first_seating": self.first_seating.to_dict(), "seating": self.seating.to_dict()}

    def _restore(self, data: dict[str, Any]) -> None:
        self.first_seating = Seating.from_dict(data["first_seating"])
        self.seating = Seating.from_dict(data["seating"])

    def _view_extra(self) -> dict[str, Any]:
        return {
            "sitting_out": self.sitting_out,
            "seating": self.seating.to_dict(),
            "target": self.target,
        }
