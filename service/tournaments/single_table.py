"""A single-table tournament for the multi-player games: the seating, and the places the
match's final standing gives.

**The seating.** When the field is full, the tournament's server seed orders the entrants'
seat numbers exactly as a knockout's draw does (:func:`service.tournaments.bracket.shuffle`):
the first drawn takes the table's seat 0, the next seat 1, and so on (at partnership Gin,
seats 0 and 2 play seats 1 and 3).

**The places**, from the ended match (:func:`match_result` reads it, :func:`places` ranks):

1. the players the match names as its winners (the target reacher, the best figure, the
   winning team), tied with each other;
2. every other player who did not forfeit, by the match's own figure (hand points at Gin,
   a team's for both its players; at Rummy cumulative points, or the fewest penalties under
   penalty scoring), equal figures tied;
3. the players who forfeited, below everyone still in, the later forfeit above the earlier
   (each alone).

While the match is being played every entrant is tied (a cancellation before it ends
refunds every entry in full, ``docs/tournaments.md``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from service.games import AnyMatch, spec_of
from service.games.protocol import MatchResult
from service.tournaments.errors import BracketError


def match_result(match: AnyMatch) -> MatchResult:
    """The figures, winners and forfeiters of an ended multi-player ``match``, as its game
    states them (:meth:`~service.games.protocol.GameSpec.standing`).

    :raises BracketError: for a match no single table plays (a knockout's) or one not over.
    """
    result = spec_of(match).standing(match) if match.over else None
    if result is None:
        raise BracketError("a single table ranks an ended multi-player match")
    return result


def places(result: MatchResult, forfeit_order: Sequence[int]) -> list[list[int]]:
    """Groups of match seats, best first, each tied for the places it occupies (the module's
    rule). ``forfeit_order``: the forfeiters, earliest first (one it leaves out counts as
    the earliest)."""
    seats = range(len(result.scores))
    winners = sorted(result.winners)
    others = sorted(
        (s for s in seats if s not in result.winners and s not in result.forfeiters),
        key=lambda s: -result.scores[s],
    )
    groups = [winners] if winners else []
    for _, tied in itertools.groupby(others, key=lambda s: result.scores[s]):
        groups.append(sorted(tied))
    ordered = [s for s in forfeit_order if s in result.forfeiters]
    ordered = sorted(result.forfeiters - set(ordered)) + ordered
    groups += [[s] for s in reversed(ordered)]
    return groups


@dataclass(frozen=True)
class SingleTable:
    """One table of the whole field: ``seating[i]`` the tournament seat at table seat ``i``;
    ``places`` (groups of tournament seats, best first) once its match has ended."""

    seating: tuple[int, ...]
    places: tuple[tuple[int, ...], ...] | None = None

    @property
    def finished(self) -> bool:
        return self.places is not None

    @property
    def decided(self) -> bool:
        """Whether a match of it has ended (what a cancellation's refund rule asks)."""
        return self.finished

    @property
    def champions(self) -> tuple[int, ...]:
        return () if self.places is None else self.places[0]

    def finish(self, result: MatchResult, forfeit_order: Sequence[int]) -> SingleTable:
        """The table once its match ended with ``result`` (match seats are table seats)."""
        if len(result.scores) != len(self.seating):
            raise BracketError(f"a table of {len(self.seating)} seats, not {len(result.scores)}")
        groups = places(result, forfeit_order)
        return SingleTable(
            self.seating, tuple(tuple(sorted(self.seating[s] for s in g)) for g in groups)
        )

    def standings(self) -> list[list[int]]:
        """Groups of tournament seats, best first: the places, or everyone tied while the
        match is played."""
        if self.places is None:
            return [sorted(self.seating)]
        return [list(group) for group in self.places]

    def to_dict(self, match_id: str | None) -> list[list[dict[str, Any]]]:
        """The stored form (the tournament's ``bracket``): one round of one table."""
        places = None if self.places is None else [list(g) for g in self.places]
        return [[{"seats": list(self.seating), "places": places, "match_id": match_id}]]

    @classmethod
    def from_dict(cls, data: Sequence[Sequence[Mapping[str, Any]]]) -> SingleTable:
        [[table]] = data
        stored: Iterable[Iterable[int]] | None = table.get("places")
        return cls(
            tuple(table["seats"]),
            None if stored is None else tuple(tuple(g) for g in stored),
        )
