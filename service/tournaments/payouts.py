"""The prize pool's split: payout tables, prizes to the minor unit, ties, cancellations.

A tournament's **prize pool** is the sum of its buy-ins (an entry is buy-in plus fee; the fees
are the house's from the start). A **payout table** says, for each band of entrant counts, the
share of the pool each place receives, in basis points summing to 10,000, best place first
(``2-5: 10000; 6-9: 6500/3500``). Written once here, it is used by the settlement, the statement
and the audit alike:

* :func:`place_prizes`: each place's prize is its share of the pool rounded down; the units
  that rounding leaves over go one each to the best places (first place first), so the prizes
  sum to the pool exactly and a better place is never paid less;
* :func:`award`: entrants tied in the standings share the prizes of the places they occupy
  equally; the units that do not divide go one each to the tied entrants with the lowest
  seat numbers (as every split of the service does);
* a tournament cancelled before any of its matches finished refunds every entry in full
  (:func:`full_refunds`); cancelled later, every entrant still playing is placed by its current
  standing and :func:`award` pays the places not yet awarded, so each receives at least the
  smallest of those prizes and the rest of the pool goes by standing
  (``docs/tournaments.md``, "Cancellation", has a worked example).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from service.tournaments.errors import PayoutTableError, TournamentError

BASIS_POINTS = 10_000
_BAND = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*:\s*(\d+(?:\s*/\s*\d+)*)\s*$")


@dataclass(frozen=True)
class Band:
    """The shares of one range of entrant counts (``min_entrants`` to ``max_entrants``
    inclusive), best place first, in basis points."""

    min_entrants: int
    max_entrants: int
    shares: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> Band:
        """A band from its text form, ``"6-9: 6500/3500"``.

        :raises PayoutTableError: when the text is not of that form or the band cannot pay.
        """
        found = _BAND.match(text)
        if found is None:
            raise PayoutTableError(f"a band reads like '6-9: 6500/3500', not {text!r}")
        low, high, shares = found.groups()
        return cls.of(int(low), int(high), [int(s) for s in shares.split("/")])

    @classmethod
    def of(cls, min_entrants: int, max_entrants: int, shares: Iterable[int]) -> Band:
        """A band, checked: 2 <= min <= max, shares positive, never more for a worse place,
        summing to 10,000, and no more places paid than the band's fewest entrants.

        :raises PayoutTableError: naming what is wrong.
        """
        paid = tuple(shares)
        name = f"{min_entrants}-{max_entrants}"
        if not 2 <= min_entrants <= max_entrants:
            raise PayoutTableError(f"band {name}: entrant counts run from 2 up, low to high")
        if not paid or any(type(s) is not int or s <= 0 for s in paid):
            raise PayoutTableError(f"band {name}: every share is a positive whole number")
        if sum(paid) != BASIS_POINTS:
            raise PayoutTableError(f"band {name}: shares sum to {sum(paid)}, not {BASIS_POINTS}")
        if any(worse > better for better, worse in itertools.pairwise(paid)):
            raise PayoutTableError(f"band {name}: a place is paid more than the one above it")
        if len(paid) > min_entrants:
            raise PayoutTableError(
                f"band {name}: pays {len(paid)} places with as few as {min_entrants} entrants"
            )
        return cls(min_entrants, max_entrants, paid)

    def __str__(self) -> str:
        return f"{self.min_entrants}-{self.max_entrants}: " + "/".join(map(str, self.shares))


@dataclass(frozen=True)
class PayoutTable:
    """Bands of entrant counts, in ascending order, none overlapping another."""

    bands: tuple[Band, ...]

    @classmethod
    def of(cls, bands: Iterable[Band]) -> PayoutTable:
        """The table of ``bands`` (in any order).

        :raises PayoutTableError: when there is no band or two bands overlap.
        """
        ordered = tuple(sorted(bands, key=lambda band: band.min_entrants))
        if not ordered:
            raise PayoutTableError("a payout table has at least one band")
        for lower, upper in itertools.pairwise(ordered):
            if upper.min_entrants <= lower.max_entrants:
                raise PayoutTableError(f"bands {lower} and {upper} overlap")
        return cls(ordered)

    @classmethod
    def parse(cls, text: str) -> PayoutTable:
        """A table from its text form, bands separated by ``;``:
        ``"2-5: 10000; 6-9: 6500/3500"``.

        :raises PayoutTableError: on a malformed band or overlapping bands.
        """
        return cls.of(Band.parse(part) for part in text.split(";") if part.strip())

    def __str__(self) -> str:
        return "; ".join(map(str, self.bands))

    def band_for(self, entrants: int) -> Band:
        """The band that pays a field of ``entrants``.

        :raises PayoutTableError: when no band covers that many entrants.
        """
        for band in self.bands:
            if band.min_entrants <= entrants <= band.max_entrants:
                return band
        raise PayoutTableError(f"no band of the payout table {self} pays {entrants} entrants")

    def covers(self, fewest: int, most: int) -> bool:
        """Whether every field from ``fewest`` to ``most`` entrants has a band."""
        return all(
            any(band.min_entrants <= n <= band.max_entrants for band in self.bands)
            for n in range(fewest, most + 1)
        )


#: The table a tournament gets when its operator names none.
DEFAULT_TABLE = PayoutTable.parse(
    "2-5: 10000; 6-9: 6500/3500; 10-18: 5000/3000/2000; 19-32: 4000/2600/1800/1600"
)


def place_prizes(pool: int, shares: Sequence[int]) -> tuple[int, ...]:
    """Each place's prize from a pool of ``pool`` minor units: its share rounded down, the
    units left over one each to the best places, so that they sum to ``pool`` exactly."""
    if type(pool) is not int or pool < 0:
        raise TournamentError(f"a prize pool is a whole number of minor units, not {pool!r}")
    prizes = [pool * share // BASIS_POINTS for share in shares]
    for place in range(pool - sum(prizes)):
        prizes[place] += 1
    return tuple(prizes)


@dataclass(frozen=True)
class Prize:
    """What one entrant is paid and why: the places (``first_place`` to ``last_place``) it
    holds, shared with ``shared_with`` other entrants tied with it."""

    seat: int
    amount: int
    first_place: int
    last_place: int
    shared_with: int

    @property
    def rule(self) -> str:
        """The rule that produced the amount, in words, for the statement."""
        if self.first_place == self.last_place:
            return f"place {self.first_place}"
        return (
            f"places {self.first_place}-{self.last_place} shared by {self.shared_with + 1} "
            "tied entrants, odd units to the lowest seats"
        )


def award(pool: int, shares: Sequence[int], standings: Sequence[Iterable[int]]) -> list[Prize]:
    """The prizes of a field placed as ``standings`` says: groups of entrants' seat numbers,
    best first, each group tied for the places it occupies. Places beyond the paid ones are
    worth nothing; every entrant gets a :class:`Prize`, in seat order.

    :raises TournamentError: when a seat appears twice.
    """
    prizes = place_prizes(pool, shares)
    awarded: list[Prize] = []
    place = 1
    for group in standings:
        seats = sorted(group)
        if not seats:
            continue
        last = place + len(seats) - 1
        total = sum(prizes[p - 1] for p in range(place, last + 1) if p <= len(prizes))
        each, odd = divmod(total, len(seats))
        for index, seat in enumerate(seats):
            amount = each + (1 if index < odd else 0)
            awarded.append(Prize(seat, amount, place, last, len(seats) - 1))
        place = last + 1
    seen = [prize.seat for prize in awarded]
    if len(set(seen)) != len(seen):
        raise TournamentError(f"an entrant is placed twice in {[sorted(g) for g in standings]}")
    return sorted(awarded, key=lambda prize: prize.seat)


def full_refunds(entries: Mapping[int, int]) -> dict[int, int]:
    """A tournament cancelled before any match finished: every entry (buy-in plus fee, by
    seat) back in full, the fees taken at the start returned by the house."""
    return dict(sorted(entries.items()))
