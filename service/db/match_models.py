"""Tables, seats, matches, hands, the action log and the event outbox.

A table hosts exactly one match (its id is allocated with the table, so escrow can be booked
against the match from the first seat on). The match row holds the pure engine's serialised
state (its game's engine's ``to_dict``) and a ``version`` that grows with every applied
change; every change happens under a row lock on it. ``match_actions`` is the append-only log
of everything applied; ``hands`` keeps each hand's fairness record (the seed is revealed only
once the hand has ended); ``events`` is the transactional outbox read by the workers.
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
from sqlalchemy.sql import text, true

from service.db.models import Base, BigId, UTCDateTime

#: The matches ``ix_matches_unsettled`` holds: finished or void, no settlement yet.
UNSETTLED = "status IN ('finished', 'void') AND settled_at IS NULL"

TABLE_STATUSES = ("open", "playing", "finished", "cancelled")
MATCH_STATUSES = ("waiting", "playing", "finished", "void", "cancelled")


class GameTable(Base):
    __tablename__ = "game_tables"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'playing', 'finished', 'cancelled')", name="status"),
        CheckConstraint("seats_taken BETWEEN 0 AND seat_count", name="seats_taken"),
        CheckConstraint("seat_count BETWEEN 2 AND 6", name="seat_count"),
        Index(None, "status", "format", "currency"),
        Index(None, "operator_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    match_id: Mapped[str] = mapped_column(String(40), unique=True)
    name: Mapped[str] = mapped_column(String(100))
    game: Mapped[str] = mapped_column(String(20), default="gin", server_default="gin")
    #: The seats a match needs to start (the most a per-hand Rummy table seats).
    seat_count: Mapped[int] = mapped_column(Integer, default=2, server_default="2")
    format: Mapped[str] = mapped_column(String(20))
    currency: Mapped[str] = mapped_column(String(3))
    practice: Mapped[bool] = mapped_column(Boolean)
    private: Mapped[bool] = mapped_column(Boolean)
    invite_code: Mapped[str | None] = mapped_column(String(64))
    # Lobby filter columns, copied from the settings: the fixed stake, or the buy-in range.
    stake: Mapped[int] = mapped_column(BigInteger)
    stake_per_point: Mapped[int] = mapped_column(BigInteger)
    min_buyin: Mapped[int] = mapped_column(BigInteger)
    max_buyin: Mapped[int] = mapped_column(BigInteger)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: How late spectators see a public table's match: ``{"moves": N}`` or
    #: ``{"seconds": S}``; ``None``: live (docs/games.md, Spectator delay).
    spectator_delay: Mapped[dict[str, int] | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(12))
    seats_taken: Mapped[int] = mapped_column(Integer, default=0)
    fill_deadline: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: A table the system opened for one match of a tournament: its seats hold nothing (the
    #: money is in the tournament's pool) and its match's end advances the tournament instead
    #: of being settled (docs/tournaments.md).
    tournament_id: Mapped[str | None] = mapped_column(ForeignKey("tournaments.id"), index=True)


class Seat(Base):
    __tablename__ = "seats"
    __table_args__ = (
        UniqueConstraint("table_id", "player_id"),
        CheckConstraint("seat_no BETWEEN 0 AND 5", name="seat_no"),
        # A per-hand Rummy seat's table balance may run down to nothing (11.5.1).
        CheckConstraint("escrow >= 0", name="escrow_non_negative"),
    )

    table_id: Mapped[str] = mapped_column(ForeignKey("game_tables.id"), primary_key=True)
    seat_no: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id"))
    escrow: Mapped[int] = mapped_column(BigInteger)
    hold_transaction_id: Mapped[str] = mapped_column(String(40))
    client_seed: Mapped[str] = mapped_column(String(256))
    joined_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: On a per-hand Rummy table, whether the player is dealt into the next hand (11.5.1).
    ready: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class MatchRow(Base):
    __tablename__ = "matches"
    __table_args__ = (
        CheckConstraint(
            "status IN ('waiting', 'playing', 'finished', 'void', 'cancelled')", name="status"
        ),
        CheckConstraint("version >= 0", name="version"),
        Index(None, "status", "deadline_at"),
        # The settlement sweep's work: finished matches not settled yet, not every match ever.
        Index(
            "ix_matches_unsettled",
            "finished_at",
            postgresql_where=text(UNSETTLED),
            sqlite_where=text(UNSETTLED),
        ),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    #: A table's match (one per hand on a per-hand Rummy table, the table's ``match_id``
    #: naming the latest).
    table_id: Mapped[str] = mapped_column(ForeignKey("game_tables.id"), index=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    status: Mapped[str] = mapped_column(String(12))
    game: Mapped[str] = mapped_column(String(20), default="gin", server_default="gin")
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    state: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Copied from the table and the seats when the match starts, so that reading or changing
    # a match touches this one row: format, currency, privacy, spectator delay, and per seat
    # the player id, display name, escrow and client seed; plus the current hand's fairness
    # commitment.
    format: Mapped[str] = mapped_column(String(20))
    currency: Mapped[str] = mapped_column(String(3))
    private: Mapped[bool] = mapped_column(Boolean)
    spectator_delay: Mapped[dict[str, int] | None] = mapped_column(JSON)
    seats: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    commitment: Mapped[str | None] = mapped_column(String(64))
    deadline_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: When the settlement was written (in its transaction); ``None`` until then. A
    #: tournament's match has no settlement: its result recorded writes ``settled_at`` alone.
    settled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: The match's settlement (written with it, with ``settled_at`` and the version it bumps):
    #: what the match's view and stream show of it (docs/play.md, Settlement).
    settlement_id: Mapped[str | None] = mapped_column(String(40))


class HandRow(Base):
    """One hand's fairness record and, once it has ended, its full history."""

    __tablename__ = "hands"
    __table_args__ = (UniqueConstraint("match_id", "number"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id"))
    number: Mapped[int] = mapped_column(Integer)
    algorithm: Mapped[str] = mapped_column(String(40))
    commitment: Mapped[str] = mapped_column(String(64))
    server_seed: Mapped[str] = mapped_column(String(64))  # secret until ended
    client_seed_1: Mapped[str] = mapped_column(String(256))
    client_seed_2: Mapped[str] = mapped_column(String(256))
    #: The seats dealt in, ascending, and all their client seeds (11.6.4); the first two
    #: client seeds are also ``client_seed_1``/``client_seed_2`` (a Rummy hand may have six).
    seats: Mapped[list[int] | None] = mapped_column(JSON)
    client_seeds: Mapped[list[str] | None] = mapped_column(JSON)
    nonce: Mapped[int] = mapped_column(Integer)
    dealer: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    outcome: Mapped[str | None] = mapped_column(String(12))
    winner_seat: Mapped[int | None] = mapped_column(Integer)
    points: Mapped[int | None] = mapped_column(Integer)
    history: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class MatchAction(Base):
    """The append-only log of every change applied to a match (one row per version). At a
    table with a spectator delay, each entry also keeps the match's state and the hand's
    commitment after the change: a spectator's view of that version is built from them."""

    __tablename__ = "match_actions"
    __table_args__ = (UniqueConstraint("match_id", "version"),)

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id"))
    version: Mapped[int] = mapped_column(BigInteger)
    hand_number: Mapped[int | None] = mapped_column(Integer)
    actor: Mapped[str] = mapped_column(String(40))  # a player id, or "system"
    seat: Mapped[int | None] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    state: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    commitment: Mapped[str | None] = mapped_column(String(64))


class OutboxEvent(Base):
    """An event written in the same transaction as the change it reports; the workers
    publish it (settlement, webhooks) and stamp ``published_at``."""

    __tablename__ = "events"
    __table_args__ = (Index(None, "published_at", "created_at"), Index(None, "operator_id"))

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    type: Mapped[str] = mapped_column(String(40))
    subject_id: Mapped[str] = mapped_column(String(40))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)


class Settlement(Base):
    """The immutable settlement of one match: the statement and the one ledger transaction
    that moved its escrow. At most one per match (the unique key is the exactly-once guard)."""

    __tablename__ = "settlements"
    __table_args__ = (
        CheckConstraint("fee >= 0", name="fee_non_negative"),
        Index(None, "operator_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id"), unique=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    currency: Mapped[str] = mapped_column(String(3))
    fee: Mapped[int] = mapped_column(BigInteger)
    statement: Mapped[dict[str, Any]] = mapped_column(JSON)
    ledger_transaction_id: Mapped[str] = mapped_column(ForeignKey("ledger_transactions.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
