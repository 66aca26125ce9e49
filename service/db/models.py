"""SQLAlchemy 2 models. The schema itself is owned by the Alembic migrations in
``service/db/migrations``; a test fails when these models and the migrations drift apart.

Money columns are ``BigInteger`` minor units. Ledger tables are append-only (PostgreSQL and
SQLite triggers refuse UPDATE and DELETE); balances never go below zero for player and house
accounts (a CHECK constraint, plus a PostgreSQL trigger that re-derives each entry's running
balance).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql import text

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# An autoincrementing 64-bit key; SQLite only autoincrements an INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}; use service.clock.utcnow()")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        moment: datetime = value
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def table_of(model: type[Base]) -> Table:
    """A model's table, typed as the ``Table`` it is (SQLAlchemy types ``__table__`` as any
    ``FromClause``)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


class Operator(Base):
    __tablename__ = "operators"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), index=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    label: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Player(Base):
    __tablename__ = "players"
    __table_args__ = (UniqueConstraint("operator_id", "external_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    external_id: Mapped[str] = mapped_column(String(255))
    display_name: Mapped[str] = mapped_column(String(255))
    display_currency: Mapped[str | None] = mapped_column(String(3))
    self_excluded_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class DepositLimit(Base):
    """A player's deposit limit for one period and currency; an increase waits 24 hours."""

    __tablename__ = "deposit_limits"
    __table_args__ = (
        CheckConstraint("period IN ('daily', 'weekly', 'monthly')", name="period"),
        CheckConstraint("amount IS NULL OR amount >= 0", name="amount_non_negative"),
        CheckConstraint(
            "pending_amount IS NULL OR pending_amount >= 0", name="pending_non_negative"
        ),
    )

    player_id: Mapped[str] = mapped_column(ForeignKey("players.id"), primary_key=True)
    currency: Mapped[str] = mapped_column(String(3), primary_key=True)
    period: Mapped[str] = mapped_column(String(8), primary_key=True)
    amount: Mapped[int | None] = mapped_column(BigInteger)
    pending: Mapped[bool] = mapped_column(Boolean, default=False)
    pending_amount: Mapped[int | None] = mapped_column(BigInteger)
    pending_effective_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ExchangeRate(Base):
    """Display units of ``quote`` per one unit of ``base``, set by the operator
    (docs/engine.md 6.5)."""

    __tablename__ = "exchange_rates"

    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), primary_key=True)
    base: Mapped[str] = mapped_column(String(3), primary_key=True)
    quote: Mapped[str] = mapped_column(String(3), primary_key=True)
    rate: Mapped[str] = mapped_column(String(40))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


#: The accounts ``ix_ledger_accounts_open_escrows`` holds: match escrows that may hold money.
OPEN_ESCROW = "kind = 'player_escrow' AND closed_at IS NULL"

#: The entries ``ix_ledger_entries_deposits`` holds: money deposited into an account (a deposit's
#: other entry, on the operator's clearing account, is negative).
DEPOSITS_INTO_ACCOUNT = "kind = 'deposit' AND amount > 0"


class LedgerAccount(Base):
    __tablename__ = "ledger_accounts"
    __table_args__ = (
        CheckConstraint(
            "kind IN ('player_available', 'player_escrow', 'house_fee', 'operator_clearing')",
            name="kind",
        ),
        CheckConstraint("kind = 'operator_clearing' OR balance >= 0", name="balance_non_negative"),
        CheckConstraint("entry_count >= 0", name="entry_count_non_negative"),
        Index(None, "player_id", "currency"),
        # What a player holds: the open escrow accounts only, not one per match ever played.
        Index(
            "ix_ledger_accounts_open_escrows",
            "player_id",
            "currency",
            postgresql_where=text(OPEN_ESCROW),
            sqlite_where=text(OPEN_ESCROW),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200), unique=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    kind: Mapped[str] = mapped_column(String(20))
    player_id: Mapped[str | None] = mapped_column(ForeignKey("players.id"))
    match_ref: Mapped[str | None] = mapped_column(String(64))
    currency: Mapped[str] = mapped_column(String(3))
    balance: Mapped[int] = mapped_column(BigInteger, default=0)
    entry_count: Mapped[int] = mapped_column(BigInteger, default=0)
    last_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: When a match escrow's balance last came back to zero (settled, released), or when it was
    #: created (empty, ``store.lock_accounts``); ``None`` while it holds money, and for every
    #: other kind. Only an empty escrow can be closed (a CHECK
    #: on PostgreSQL, a trigger on SQLite; migration 0010); holding money reopens it.
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class LedgerTransaction(Base):
    __tablename__ = "ledger_transactions"
    __table_args__ = (
        UniqueConstraint("operator_id", "idempotency_key"),
        CheckConstraint("entry_count >= 2", name="two_or_more_entries"),
        CheckConstraint("amount > 0", name="amount_positive"),
        Index(None, "match_ref"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    kind: Mapped[str] = mapped_column(String(20))
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    fingerprint: Mapped[str] = mapped_column(String(64))
    player_id: Mapped[str | None] = mapped_column(ForeignKey("players.id"))
    match_ref: Mapped[str | None] = mapped_column(String(64))
    external_reference: Mapped[str | None] = mapped_column(String(255))
    currency: Mapped[str] = mapped_column(String(3))
    amount: Mapped[int] = mapped_column(BigInteger)
    entry_count: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class LedgerEntry(Base):
    __tablename__ = "ledger_entries"
    __table_args__ = (
        UniqueConstraint("account_id", "account_version"),
        CheckConstraint("amount <> 0", name="amount_non_zero"),
        CheckConstraint("account_version >= 1", name="account_version_positive"),
        Index(None, "account_id", "seq"),
        # A player's deposits in a period (deposit limits), a range however long the history.
        Index(
            "ix_ledger_entries_deposits",
            "account_id",
            "created_at",
            postgresql_where=text(DEPOSITS_INTO_ACCOUNT),
            sqlite_where=text(DEPOSITS_INTO_ACCOUNT),
        ),
    )

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(40), unique=True)
    transaction_id: Mapped[str] = mapped_column(ForeignKey("ledger_transactions.id"), index=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("ledger_accounts.id"))
    account_version: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    amount: Mapped[int] = mapped_column(BigInteger)
    balance_after: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class LedgerAuditRow(Base):
    """The last ledger audit of an operator's books: its report as ``GET /v1/audit/ledger``
    answers it, and when it ran (the console's dashboard shows it)."""

    __tablename__ = "ledger_audits"

    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), primary_key=True)
    ran_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ok: Mapped[bool] = mapped_column(Boolean)
    report: Mapped[dict[str, Any]] = mapped_column(JSON)


class IdempotencyRow(Base):
    """One ``Idempotency-Key`` of one operator: in flight, or complete with its response."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (
        CheckConstraint("state IN ('in_flight', 'complete')", name="state"),
        Index(None, "expires_at"),
    )

    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(12))
    locked_at: Mapped[datetime] = mapped_column(UTCDateTime())
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_body: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())


# Tables, seats, matches, hands, the action log and the outbox live in their own module, and
# webhooks in another; they share this metadata (imported last: they import Base from here).
from service.db import (  # noqa: E402, F401
    bot_models,
    match_models,
    tournament_models,
    wallet_models,
    webhook_models,
)
