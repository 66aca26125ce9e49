"""The tournament core's one exception family."""

from __future__ import annotations


class TournamentError(ValueError):
    """Base of every tournament rule violation; the message names the bad input."""


class PayoutTableError(TournamentError):
    """A payout table that cannot pay: shares not summing to 10,000, bands that overlap or
    leave a gap, more places than entrants, or no band for the number of entrants."""


class BracketError(TournamentError):
    """A knockout given a field it cannot draw (fewer than 2 or more than 32 entrants) or a
    result for a match that is not being played or is a bye; a single table given a match
    that does not fit it."""
