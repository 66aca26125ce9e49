"""Seamless wallets: an operator that keeps its players' money, and every call we make to it.

``OperatorWallet`` is an operator's choice per currency: ``transfer`` (money is deposited into
our ledger first) or ``seamless`` (we call the operator's wallet to take a stake and pay a
win), with the wallet's URL, the secret we sign calls with (rotatable with an overlap, as
webhook secrets are) and the time we give each call.

``WalletCall`` is one call's intent, written before the call is made and kept for good: our
transaction id (sent on every retry), what it moves, for which round, and where it stands.
A debit goes ``pending`` (sent, answer unknown) to ``applied`` (the operator took the money)
to ``booked`` (our ledger holds it, in the transaction that took the seat); or to ``failed``
(a definite refusal); or, when its outcome is unknown or its seat never started, to
``rollback_pending`` and then ``rolled_back``, under a rollback id of its own. A credit
goes ``pending`` to ``acknowledged``; it is never given up. The states are the guard; the
rules live in :mod:`service.usecases.seamless`.
"""

from __future__ import annotations

from datetime import datetime

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

DEBIT_STATES = ("pending", "applied", "booked", "failed", "rollback_pending", "rolled_back")
CREDIT_STATES = ("pending", "acknowledged")


class OperatorWallet(Base):
    __tablename__ = "operator_wallets"
    __table_args__ = (
        CheckConstraint("mode IN ('transfer', 'seamless')", name="mode"),
        CheckConstraint("timeout_ms BETWEEN 100 AND 30000", name="timeout_ms"),
    )

    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), primary_key=True)
    currency: Mapped[str] = mapped_column(String(3), primary_key=True)
    mode: Mapped[str] = mapped_column(String(10))
    url: Mapped[str | None] = mapped_column(String(2048))
    secret: Mapped[str | None] = mapped_column(String(100))
    previous_secret: Mapped[str | None] = mapped_column(String(100))
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    timeout_ms: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    def __repr__(self) -> str:  # never the secrets
        return f"<OperatorWallet {self.operator_id} {self.currency} {self.mode} {self.url!r}>"


class WalletCall(Base):
    __tablename__ = "wallet_calls"
    __table_args__ = (
        UniqueConstraint("operator_id", "request_key"),
        UniqueConstraint("rollback_id"),
        CheckConstraint("kind IN ('debit', 'credit')", name="kind"),
        CheckConstraint(
            "(kind = 'debit' AND amount > 0 AND state IN "
            "('pending', 'applied', 'booked', 'failed', 'rollback_pending', 'rolled_back')) OR "
            "(kind = 'credit' AND amount >= 0 AND state IN ('pending', 'acknowledged'))",
            name="kind_state_amount",
        ),
        CheckConstraint("attempts >= 0", name="attempts_non_negative"),
        Index(None, "state", "next_attempt_at"),
        Index(None, "player_id", "round_id"),
        Index(None, "operator_id", "created_at"),
        Index(None, "match_id"),  # a settled match's credits, sent by its settlement task
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id"))
    kind: Mapped[str] = mapped_column(String(8))
    reason: Mapped[str] = mapped_column(String(12))
    currency: Mapped[str] = mapped_column(String(3))
    amount: Mapped[int] = mapped_column(BigInteger)
    round_id: Mapped[str] = mapped_column(String(40))
    table_id: Mapped[str] = mapped_column(String(40))
    match_id: Mapped[str | None] = mapped_column(String(40))
    #: What the money is held for in our ledger (a match, or a per-hand table).
    escrow_ref: Mapped[str] = mapped_column(String(64))
    #: What made the call, unique per operator: a seat request's key and attempt, a ledger
    #: transaction and player for a credit. A second intent for it is the same intent.
    request_key: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str] = mapped_column(String(64))
    references: Mapped[list[str]] = mapped_column(JSON)
    round_closed: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(20))
    rollback_id: Mapped[str | None] = mapped_column(String(40))
    #: The ledger transaction that booked a debit or posted a credit.
    ledger_transaction_id: Mapped[str | None] = mapped_column(String(40))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    #: The operator's refusal (``insufficient_funds``...) of a failed debit.
    declined: Mapped[str | None] = mapped_column(String(40))
    #: When the call passed the retry ceiling and was raised to operations (still retried).
    escalated_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
