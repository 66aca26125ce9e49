"""A knockout for two-player Gin: the draw, the rounds, who advances, and the places.

**The draw.** When the field is full the tournament's server seed (committed, as SHA-256 of
its bytes, when the tournament opened) orders the entrants: the entrants' seat numbers
1..N are shuffled by the same HMAC-SHA256 byte stream and unbiased Fisher-Yates shuffle as
the cards (:mod:`service.rules.fair`), with the entrants' player ids, in seat order, as the
stream's client seeds and nonce 0. Anyone holding the revealed seed and the entrants can
recompute the bracket.

**The rounds.** Round 1 pairs the drawn order two by two (the first two, the next two, ...);
the winner of match ``k`` of a round meets the winner of match ``k + 1`` (``k`` even) in the
next round, the first of them in the match's first seat. The final's winner is first.

**The places.** The final's loser is second; the losers of each earlier round share the
places below, those of the semi-finals places 3-4, of the quarter-finals 5-8, and so on
(:meth:`Knockout.standings`). While the knockout is still being played (a cancellation),
the entrants still in are placed above every loser, those who reached a later round above
those still in an earlier one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from service.rules.fair import ByteStream, fisher_yates
from service.tournaments.errors import BracketError

SIZES = (4, 8, 16, 32)


def shuffle(server_seed: str, player_ids: Sequence[str]) -> tuple[int, ...]:
    """Seats 1..N (``player_ids`` in seat order) in the order the seed draws them: a
    knockout's bracket order, a single table's seating.

    :raises FairnessError: on a malformed seed or player id.
    """
    stream = ByteStream(server_seed, tuple(player_ids), 0)
    return tuple(fisher_yates(range(1, len(player_ids) + 1), stream))


def draw(server_seed: str, player_ids: Sequence[str]) -> tuple[int, ...]:
    """The bracket order of seats 1..N (``player_ids`` in seat order, N in :data:`SIZES`).

    :raises BracketError: on a field of another size.
    :raises FairnessError: on a malformed seed or player id.
    """
    if len(player_ids) not in SIZES:
        raise BracketError(f"a knockout has 4, 8, 16 or 32 entrants, not {len(player_ids)}")
    return shuffle(server_seed, player_ids)


@dataclass(frozen=True)
class Pairing:
    """One match of a round: two seats and, once it is played, the winner's seat."""

    first: int
    second: int
    winner: int | None = None

    @property
    def loser(self) -> int | None:
        if self.winner is None:
            return None
        return self.second if self.winner == self.first else self.first


@dataclass(frozen=True)
class Knockout:
    """The bracket as played so far: ``rounds[r]`` the pairings of round ``r + 1``; a round
    is added when the one before it is complete."""

    rounds: tuple[tuple[Pairing, ...], ...]

    @classmethod
    def start(cls, order: Sequence[int]) -> Knockout:
        """Round 1 of the drawn ``order`` (:func:`draw`)."""
        if len(order) not in SIZES or len(set(order)) != len(order):
            raise BracketError(f"a knockout starts from 4, 8, 16 or 32 seats, not {order!r}")
        pairs = tuple(Pairing(order[i], order[i + 1]) for i in range(0, len(order), 2))
        return cls((pairs,))

    @property
    def size(self) -> int:
        return 2 * len(self.rounds[0])

    @property
    def round_count(self) -> int:
        return self.size.bit_length() - 1

    @property
    def current(self) -> int:
        """The number (from 1) of the round being played, or the last one once finished."""
        return len(self.rounds)

    @property
    def finished(self) -> bool:
        return len(self.rounds) == self.round_count and self.rounds[-1][0].winner is not None

    @property
    def champion(self) -> int | None:
        return self.rounds[-1][0].winner if self.finished else None

    @property
    def champions(self) -> tuple[int, ...]:
        """The seats placed first once finished (a knockout has one)."""
        return () if self.champion is None else (self.champion,)

    @property
    def decided(self) -> bool:
        """Whether any of its matches has ended (what a cancellation's refund rule asks)."""
        return any(p.winner is not None for pairings in self.rounds for p in pairings)

    def record(self, round_no: int, match_no: int, winner: int) -> Knockout:
        """The bracket after match ``match_no`` (from 1) of round ``round_no`` was won by seat
        ``winner``; completing a round draws up the next.

        :raises BracketError: when that match is not being played, is decided, or ``winner``
            does not sit in it.
        """
        if round_no != self.current or not 1 <= match_no <= len(self.rounds[-1]):
            raise BracketError(f"round {round_no} match {match_no} is not being played")
        pairing = self.rounds[-1][match_no - 1]
        if pairing.winner is not None:
            raise BracketError(f"round {round_no} match {match_no} was already won")
        if winner not in (pairing.first, pairing.second):
            raise BracketError(
                f"seat {winner} does not play round {round_no} match {match_no} "
                f"({pairing.first} v {pairing.second})"
            )
        played = list(self.rounds[-1])
        played[match_no - 1] = Pairing(pairing.first, pairing.second, winner)
        rounds = (*self.rounds[:-1], tuple(played))
        if all(p.winner is not None for p in played) and len(rounds) < self.round_count:
            winners = [p.winner for p in played if p.winner is not None]
            upcoming = tuple(Pairing(winners[i], winners[i + 1]) for i in range(0, len(winners), 2))
            rounds = (*rounds, upcoming)
        return Knockout(rounds)

    def standings(self) -> list[list[int]]:
        """Groups of seats, best first, each tied for the places it occupies: the entrants
        still in (by the round they reached, later first), then the losers by the round they
        lost in (later first). Once finished: the champion, the final's loser, the
        semi-finals' losers, ..."""
        alive: dict[int, list[int]] = {}
        losers: dict[int, list[int]] = {}
        for number, pairings in enumerate(self.rounds, 1):
            for pairing in pairings:
                if pairing.winner is None:
                    alive.setdefault(number, []).extend((pairing.first, pairing.second))
                    continue
                losers.setdefault(number, []).append(
                    pairing.second if pairing.winner == pairing.first else pairing.first
                )
                if number == self.current:  # earlier rounds' winners play in a later one
                    alive.setdefault(number + 1, []).append(pairing.winner)
        groups = [sorted(alive[r]) for r in sorted(alive, reverse=True)]
        groups += [sorted(losers[r]) for r in sorted(losers, reverse=True)]
        return groups

    def to_dict(self) -> list[list[dict[str, int | None]]]:
        return [
            [{"first": p.first, "second": p.second, "winner": p.winner} for p in pairings]
            for pairings in self.rounds
        ]

    @classmethod
    def from_dict(cls, data: Sequence[Sequence[dict[str, int | None]]]) -> Knockout:
        rounds = []
        for pairings in data:
            played = []
            for p in pairings:
                first, second = p["first"], p["second"]
                if first is None or second is None:
                    raise BracketError(f"a pairing names both seats, not {p!r}")
                played.append(Pairing(first, second, p.get("winner")))
            rounds.append(tuple(played))
        return cls(tuple(rounds))
