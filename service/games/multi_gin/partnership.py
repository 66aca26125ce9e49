"""Four-player partnership Gin (4.2, 11.2), as a pure match state machine.

Teams go by seat parity: team 1 is seats 0 and 2, team 2 seats 1 and 3 (4.2.1, 11.2.3); in
the code a team is its index, ``seat % 2`` (0 for team 1, 1 for team 2). Each deal is two
ordinary two-player hands played at the same time at two tables, each from its own deck,
each player acting on its own table only; a team-mate's hand is hidden like an opponent's
(4.2.2). The pairings alternate with every deal, a scoreless or wholly dead one included
(11.2.1): odd deals seat 0 against 1 and 2 against 3, even deals 0 against 3 and 2 against 1
(:func:`pairing`). The table of seat 0 plays hand ``2d - 1`` of deal ``d``, the other hand
``2d`` (11.6.4).

Both members of one team deal (4.2.3): for the first deal a team drawn at random, then the
team that won the previous deal; a deal without a winner (result 0, or both tables dead)
leaves the same team dealing (11.2.1).

A deal is complete when both hands have ended (4.2.4). Its result for team 1 is what team-1
players won minus what team-2 players won, gin and undercut bonuses included in each hand's
points; a dead table counts 0 and is not replayed (4.2.5). A positive result goes to team 1
as team hand points plus one box, a negative one to team 2, zero to nobody
(:func:`deal_result`). The team hand points run in a two-sided :class:`~service.games.gin.game.Game`
to ``ruleset.partnership_target`` (125; for ``match_play`` too: 11.7.4), and the end bonuses
are the classic ones at team level (4.2.6, 11.2.2): a team can be shut out although its
players won hands, netted away. The team margin moves between the money pairs, seat 0 with
seat 1 and seat 2 with seat 3 (4.2.7, 11.2.3), each pair the whole margin.

A forfeit (11.6.2, 11.7.2) ends the match at once; deals not complete then do not count.
The forfeiter's opponents receive their lead on the running totals (never less than 0) plus
the game bonus, through both money pairs; the ``match_play`` pot goes to the other team.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from service.games.common.errors import InvalidState
from service.games.common.settings import MatchSettings
from service.games.gin.game import Game
from service.games.multi_gin.match import (
    HandSlot,
    MultiMatch,
    PairMargin,
    Standings,
    TableHand,
    TableRecord,
    best_sides,
    forfeit_margin,
    running_totals,
)
from service.games.protocol import MatchStatus

TEAMS = ((0, 2), (1, 3))
MONEY_PAIRS = ((0, 1), (2, 3))


def team_of(seat: int) -> int:
    """The team of a seat: 0 (team 1, seats 0 and 2) or 1 (team 2, seats 1 and 3)."""
    if seat not in (0, 1, 2, 3):
        raise InvalidState(f"no such seat: {seat!r}")
    return seat % 2


def pairing(deal: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Who plays whom in deal ``deal`` (from 1), the table of seat 0 first (4.2.2)."""
    if deal < 1:
        raise InvalidState(f"deals are numbered from 1, not {deal!r}")
    return ((0, 1), (2, 3)) if deal % 2 else ((0, 3), (1, 2))


def deal_slots(deal: int, dealing_team: int) -> list[HandSlot]:
    """The two hands of deal ``deal``: numbers ``2d - 1`` and ``2d``, the dealing team's
    member at each table dealing (4.2.3, 11.6.4)."""
    return [
        HandSlot(2 * deal - 1 + i, seats, next(s for s in seats if s % 2 == dealing_team), deal)
        for i, seats in enumerate(pairing(deal))
    ]


def deal_result(hands: Sequence[TableRecord]) -> int:
    """A complete deal's result for team 1 (4.2.4-4.2.5): the points won by team-1 players
    minus those won by team-2 players; a dead hand counts 0."""
    result = 0
    for record in hands:
        if record.winner is not None:
            result += record.points if team_of(record.winner) == 0 else -record.points
    return result


def next_dealing_team(dealing_team: int, result: int) -> int:
    """The team dealing the next deal: the winner of this one, or the same team when it had
    no winner (4.2.3, 11.2.1)."""
    if result == 0:
        return dealing_team
    return 0 if result > 0 else 1


@dataclass(frozen=True, slots=True)
class DealRecord:
    """A complete deal: its number, the team that dealt it, its result for team 1."""

    number: int
    dealing_team: int
    result: int

    @property
    def scorer(self) -> int | None:
        """The team that scores the deal (and one box), or None."""
        if self.result == 0:
            return None
        return 0 if self.result > 0 else 1

    @property
    def points(self) -> int:
        return abs(self.result)

    @property
    def hand_numbers(self) -> tuple[int, int]:
        return 2 * self.number - 1, 2 * self.number

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "dealing_team": self.dealing_team,
            "pairing": [list(p) for p in pairing(self.number)],
            "hands": list(self.hand_numbers),
            "result": self.result,
            "scorer": self.scorer,
            "points": self.points,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DealRecord:
        return cls(int(data["number"]), int(data["dealing_team"]), int(data["result"]))


def partnership_standings(game: Game, *, forfeiter: int | None = None) -> Standings:
    """The standings of a partnership game from its team :class:`Game` (4.2.6-4.2.7,
    11.2.2-11.2.3, 11.6.2, 11.7.2): final at the target or after ``forfeiter`` forfeited,
    running totals while the game is on."""
    r = game.ruleset
    h, b = game.hand_points, game.boxes
    box = (r.box_bonus * b[0], r.box_bonus * b[1])
    running = running_totals(h, b, r.box_bonus)
    game_bonus: tuple[int, ...] = (0, 0)
    shutout = forfeit_bonus = 0
    winner = None
    pot: tuple[int, ...] = ()
    if forfeiter is not None:
        losing = team_of(forfeiter)
        totals: tuple[int, ...] = tuple(running)
        margin = forfeit_margin(running[0], running[1], losing == 0, r.game_bonus)
        forfeit_bonus = r.game_bonus if losing == 1 else -r.game_bonus
        pot = best_sides(h, losing)
    elif game.over:
        end = game.totals()
        totals = end.final
        margin = end.final[0] - end.final[1]
        game_bonus = end.game_bonus
        extra = [end.shutout_bonus[i] + end.doubled_hand_points[i] for i in (0, 1)]
        shutout = extra[0] - extra[1]
        winner = end.target_reacher
        pot = (winner,)
    else:
        totals = tuple(running)
        margin = running[0] - running[1]
    pairs = tuple(PairMargin(p, margin, shutout, forfeit_bonus) for p in MONEY_PAIRS)
    return Standings(
        sides=TEAMS,
        target=game.target,
        hand_points=h,
        boxes=b,
        box_bonus=box,
        game_bonus=game_bonus,
        totals=totals,
        pairs=pairs,
        over=forfeiter is not None or game.over,
        winner=winner,
        forfeiter=forfeiter,
        pot_sides=pot,
    )


class PartnershipMatch(MultiMatch):
    """A partnership Gin match; see the module docstring. ``dealing_team`` (0 or 1) deals
    the first deal (drawn at random by the server: :meth:`drawn_dealing_team`)."""

    SEATS = 4
    KIND = "partnership"

    def __init__(self, settings: MatchSettings, dealing_team: int) -> None:
        super().__init__(settings)
        if dealing_team not in (0, 1):
            raise InvalidState(f"the dealing team is 0 or 1, not {dealing_team!r}")
        self.first_dealing_team = dealing_team
        self.dealing_team = dealing_team
        self.deal_number = 1
        self.deals: list[DealRecord] = []

    @staticmethod
    def drawn_dealing_team(randbelow: Callable[[int], int]) -> int:
        """The first deal's dealing team, drawn at random (4.2.3)."""
        return randbelow(2)

    @property
    def target(self) -> int:
        """The team target, ``ruleset.partnership_target`` (4.2.6, 11.7.4)."""
        target: int = self.settings.ruleset.partnership_target
        return target

    def game(self) -> Game:
        """Team hand points and boxes over the complete deals (team 1 is index 0)."""
        game = Game(self.settings.ruleset, self.target)
        for deal in self.deals:
            if not game.over:
                game.record(deal.scorer, deal.points)
        return game

    @property
    def winning_team(self) -> int | None:
        """The team that reached the target (None while the game is on or after a forfeit)."""
        return self.standings().winner if self.over else None

    def standings(self) -> Standings:
        return partnership_standings(self.game(), forfeiter=self.forfeiter)

    def _slots(self) -> list[HandSlot]:
        return deal_slots(self.deal_number, self.dealing_team)

    def _hand_ended(self, table: TableHand) -> None:
        if len(self.tables) < 2 or any(t.live for t in self.tables):
            return  # the other table plays on
        number = self.deal_number
        result = deal_result([r for r in self.records if r.slot.deal == number])
        self.deals.append(DealRecord(number, self.dealing_team, result))
        self.dealing_team = next_dealing_team(self.dealing_team, result)
        self.deal_number = number + 1
        self.status = MatchStatus.FINISHED if self.game().over else MatchStatus.AWAITING_DEAL

    def _state(self) -> dict[str, Any]:
        return {
            "first_dealing_team": self.first_dealing_team,
            "dealing_team": self.dealing_team,
            "deal_number": self.deal_number,
            "deals": [d.to_dict() for d in self.deals],
        }

    def _copy_own(self, match: MultiMatch) -> None:
        assert isinstance(match, PartnershipMatch)
        match.deals = list(self.deals)

    def _restore(self, data: dict[str, Any]) -> None:
        self.first_dealing_team = int(data["first_dealing_team"])
        self.dealing_team = int(data["dealing_team"])
        self.deal_number = int(data["deal_number"])
        self.deals = [DealRecord.from_dict(d) for d in data["deals"]]

    def _view_extra(self) -> dict[str, Any]:
        return {
            "teams": [list(t) for t in TEAMS],
            "money_pairs": [list(p) for p in MONEY_PAIRS],
            "deal_number": self.deal_number,
            "dealing_team": self.dealing_team,
            "pairing": [list(p) for p in pairing(self.deal_number)],
            "deals": [d.to_dict() for d in self.deals],
            "target": self.target,
        }
