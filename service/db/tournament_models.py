"""Tournaments and their entries (docs/tournaments.md).

A tournament row holds what its operator chose (the game, the format of its matches, the
entry's buy-in and fee, the field size, the payout table in its text form) and what happens to
it: its status, its fairness seed (committed when it opens, revealed once drawn), the drawn
order and the bracket as played, with each pairing's match id. Every change to a tournament
happens under a row lock on it: registrations, the start, each match's result, a
cancellation. An entry is one player's seat (1..N) in one tournament, held until the start
(a player who unregisters gives the seat up); its money is in the ledger, held for the
tournament like a stake for a match.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from service.db.models import Base, UTCDateTime

TOURNAMENT_STATUSES = ("open", "running", "finished", "cancelled")
ENTRY_STATES = ("registered", "playing", "knocked_out", "champion", "placed", "refunded")
TOURNAMENT_KINDS = ("knockout", "single_table")


class Tournament(Base):
    __tablename__ = "tournaments"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'running', 'finished', 'cancelled')", name="status"),
        CheckConstraint("kind IN ('knockout', 'single_table')", name="kind"),
        CheckConstraint("entrants BETWEEN 2 AND 32", name="entrants"),
        CheckConstraint("min_entrants BETWEEN 2 AND entrants", name="min_entrants"),
        CheckConstraint("entries_taken BETWEEN 0 AND entrants", name="entries_taken"),
        CheckConstraint("buy_in >= 1 AND fee >= 0", name="entry_amounts"),
        CheckConstraint("version >= 0", name="version"),
        Index(None, "operator_id", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(20))
    game: Mapped[str] = mapped_column(String(20))
    #: The settings of its matches' tables (:class:`~service.games.common.settings.MatchSettings`).
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    format: Mapped[str] = mapped_column(String(20))
    currency: Mapped[str] = mapped_column(String(3))
    practice: Mapped[bool] = mapped_column(Boolean)
    buy_in: Mapped[int] = mapped_column(BigInteger)
    fee: Mapped[int] = mapped_column(BigInteger)
    entrants: Mapped[int] = mapped_column(Integer)
    #: The fewest entrants it starts with: the field (``entrants``) for a sit-and-go.
    min_entrants: Mapped[int] = mapped_column(Integer)
    entries_taken: Mapped[int] = mapped_column(Integer, default=0)
    payout_table: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(12))
    #: Grows with each change to it (a registration or withdrawal, the start, a recorded
    #: result, the end, a cancellation): its event stream's event ids.
    version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    server_seed: Mapped[str] = mapped_column(String(64))  # secret until the draw
    commitment: Mapped[str] = mapped_column(String(64))
    #: The drawn order of seats (``bracket.draw``; a single table's seating), once started.
    draw: Mapped[list[int] | None] = mapped_column(JSON)
    #: ``Knockout.to_dict()``, each pairing with its ``match_id`` once its match is opened;
    #: a single table's ``SingleTable.to_dict(match_id)``.
    bracket: Mapped[list[list[dict[str, Any]]] | None] = mapped_column(JSON)
    registration_deadline: Mapped[datetime] = mapped_column(UTCDateTime())
    #: A scheduled tournament's start (its registration closes then); None: a sit-and-go.
    starts_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class TournamentEntry(Base):
    __tablename__ = "tournament_entries"
    __table_args__ = (
        UniqueConstraint("tournament_id", "player_id"),
        CheckConstraint("seat BETWEEN 1 AND 32", name="seat"),
        CheckConstraint(
            "state IN ('registered', 'playing', 'knocked_out', 'champion', 'placed', 'refunded')",
            name="state",
        ),
        CheckConstraint("prize IS NULL OR prize >= 0", name="prize_non_negative"),
        Index(None, "player_id"),
    )

    tournament_id: Mapped[str] = mapped_column(ForeignKey("tournaments.id"), primary_key=True)
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id"))
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: The ledger transaction that held the entry (buy-in plus fee).
    hold_transaction_id: Mapped[str] = mapped_column(String(40))
    state: Mapped[str] = mapped_column(String(12))
    #: What the entry was paid when the tournament finished or was cancelled.
    prize: Mapped[int | None] = mapped_column(BigInteger)
    #: The places it holds (tied entrants share a range), once placed.
    first_place: Mapped[int | None] = mapped_column(Integer)
    last_place: Mapped[int | None] = mapped_column(Integer)
