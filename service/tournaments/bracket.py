"""A knockout for two-player Gin: the draw, the byes, the rounds, who advances, and the
places.

**The draw.** When the tournament starts, its server seed (committed, as SHA-256 of its
bytes, when the tournament opened) orders the entrants: the entrants' seat numbers 1..N are
shuffled by the same HMAC-SHA256 byte stream and unbiased Fisher-Yates shuffle as the cards
(:mod:`service.games.common.fair`), with the entrants' player ids, in seat order, as the stream's
client seeds and nonce 0. Anyone holding the revealed seed and the entrants can recompute
the bracket.

**The byes.** The bracket has ``P`` slots, the smallest power of two that is at least N (a
full field of 4, 8, 16 or 32 fills it); the ``P - N`` empty slots are byes. Round 1 has
``P / 2`` matches. The first ``P - N`` entrants of the drawn order each get a bye, in the
matches :func:`bye_matches` spreads them over (the first match, the first of the second
half, the first of the second and fourth quarters, ...), each alone in its match's first
seat: the bye advances at once, without a match. The rest of the drawn order fills the other
matches two by two, in match order. Since ``N > P / 2``, no match is two byes.

**The rounds.** The winner of match ``k`` of a round meets the winner of match ``k + 1``
(``k`` odd, from 1) in the next round, the first of them in the match's first seat. The
final's winner is first.

**The places.** The final's loser is second; the losers of each earlier round share the
places below, those of the semi-finals places 3-4, of the quarter-finals 5-8, and so on
(:meth:`Knockout.standings`); a bye loses nothing, so fewer entrants share round 1's places.
While the knockout is still being played (a cancellation), the entrants still in are placed
above every loser, those who reached a later round (a bye reaches round 2) above those still
in an earlier one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from service.games.common.fair import ByteStream, fisher_yates
from service.tournaments.errors import BracketError

#: The fields a knockout is created with (the most entrants it takes).
SIZES = (4, 8, 16, 32)
#: The fewest and the most entrants a knockout is drawn for (a scheduled one starts short of
#: its field, with byes).
FEWEST, MOST = 2, SIZES[-1]


def shuffle(server_seed: str, player_ids: Sequence[str]) -> tuple[int, ...]:
    """Seats 1..N (``player_ids`` in seat order) in the order the seed draws them: a
    knockout's bracket order, a single table's seating.

    :raises FairnessError: on a malformed seed or player id.
    """
    stream = ByteStream(server_seed, tuple(player_ids), 0)
    return tuple(fisher_yates(range(1, len(player_ids) + 1), stream))


def draw(server_seed: str, player_ids: Sequence[str]) -> tuple[int, ...]:
    """The bracket order of seats 1..N (``player_ids`` in seat order, N from 2 to 32): the
    first ``bracket_size(N) - N`` of it get the byes (:meth:`Knockout.start`).

    :raises BracketError: on a field of fewer than 2 or more than 32.
    :raises FairnessError: on a malformed seed or player id.
    """
    if not FEWEST <= len(player_ids) <= MOST:
        raise BracketError(f"a knockout has 2 to 32 entrants, not {len(player_ids)}")
    return shuffle(server_seed, player_ids)


def bracket_size(entrants: int) -> int:
    """The bracket's slots for ``entrants``: the smallest power of two at least as large."""
    return 1 << max(1, (entrants - 1).bit_length())


def bye_matches(matches: int, byes: int) -> tuple[int, ...]:
    """Which of round 1's ``matches`` (a power of two; numbered from 1) take the ``byes``,
    in the order the drawn entrants take them: the ``k``-th bye (from 0) goes to the match
    whose index is ``k``'s bits reversed over ``log2(matches)`` bits, so the byes spread
    over the halves of the bracket, then its quarters, and so on (8 matches: 1, 5, 3, 7,
    2, 6, 4, 8)."""
    if not 0 <= byes < max(matches, 1) or matches & (matches - 1):
        raise BracketError(f"{byes} byes do not fit {matches} first-round matches")
    bits = matches.bit_length() - 1
    return tuple(int(f"{k:0{bits}b}"[::-1] or "0", 2) + 1 for k in range(byes))


@dataclass(frozen=True)
class Pairing:
    """One match of a round: two seats and, once it is played, the winner's seat; or a bye
    (round 1 only): ``first`` alone, its winner at once, no match played."""

    first: int
    second: int | None
    winner: int | None = None

    @classmethod
    def bye_for(cls, seat: int) -> Pairing:
        return cls(seat, None, seat)

    @property
    def bye(self) -> bool:
        return self.second is None

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
        """Round 1 of the drawn ``order`` (:func:`draw`): its first ``bracket_size - N``
        seats on byes (:func:`bye_matches`), the rest paired in order in the other matches.
        """
        if not FEWEST <= len(order) <= MOST or len(set(order)) != len(order):
            raise BracketError(f"a knockout starts from 2 to 32 distinct seats, not {order!r}")
        matches = bracket_size(len(order)) // 2
        byes = 2 * matches - len(order)
        pairs: list[Pairing | None] = [None] * matches
        for seat, match_no in zip(order[:byes], bye_matches(matches, byes), strict=True):
            pairs[match_no - 1] = Pairing.bye_for(seat)
        rest = iter(order[byes:])
        played = [p if p is not None else Pairing(next(rest), next(rest)) for p in pairs]
        return cls((tuple(played),))

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
        """Whether any of its matches has ended (what a cancellation's refund rule asks); a
        bye is no match."""
        return any(p.winner is not None and not p.bye for pairings in self.rounds for p in pairings)

    @property
    def byes(self) -> tuple[int, ...]:
        """The seats that advanced from round 1 without a match."""
        return tuple(p.first for p in self.rounds[0] if p.bye)

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
            won = "is a bye" if pairing.bye else "was already won"
            raise BracketError(f"round {round_no} match {match_no} {won}")
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
                if pairing.winner is None:  # (a bye has its winner)
                    seats = (pairing.first, pairing.second)
                    alive.setdefault(number, []).extend(s for s in seats if s is not None)
                    continue
                if pairing.loser is not None:  # (a bye: none)
                    losers.setdefault(number, []).append(pairing.loser)
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
                if first is None or (second is None and p.get("winner") != first):
                    raise BracketError(f"a pairing names both seats or is a bye, not {p!r}")
                played.append(Pairing(first, second, p.get("winner")))
            rounds.append(tuple(played))
        return cls(tuple(rounds))
