"""Webhook endpoints, their deliveries and the log of every delivery attempt.

An endpoint belongs to one operator: a URL, an optional list of event types (``NULL`` means
every type), and a signing secret. The server must sign with the secret, so it is stored as
it is (never returned except by the creation and rotation calls, never logged); after a
rotation the previous secret keeps signing until ``previous_secret_expires_at``. Deleting an
endpoint keeps its row (the delivery log refers to it) but wipes its secrets.

A delivery is one event for one endpoint (unique per pair, the fan-out's idempotency guard).
``next_attempt_at`` is when it is due; ``locked_until`` is the lease a worker takes while its
HTTP request is in flight (so a duplicate task does not send it twice); ``queued_at`` is when
a task was last queued for it (so the sweep does not queue it again and again).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
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

from service.db.models import Base, BigId, UTCDateTime

DELIVERY_STATUSES = ("pending", "delivered", "failed", "cancelled")


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index(None, "operator_id", "id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    url: Mapped[str] = mapped_column(String(2048))
    description: Mapped[str] = mapped_column(String(255))
    event_types: Mapped[list[str] | None] = mapped_column(JSON)
    enabled: Mapped[bool] = mapped_column(Boolean)
    secret: Mapped[str | None] = mapped_column(String(100))
    previous_secret: Mapped[str | None] = mapped_column(String(100))
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    def __repr__(self) -> str:  # never the secrets
        return f"<WebhookEndpoint {self.id} {self.url!r} enabled={self.enabled}>"


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "endpoint_id"),
        CheckConstraint("status IN ('pending', 'delivered', 'failed', 'cancelled')", name="status"),
        CheckConstraint("attempts >= 0", name="attempts_non_negative"),
        Index(None, "status", "next_attempt_at"),
        Index(None, "endpoint_id", "id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id"))
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id"))
    event_type: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(12))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    queued_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    redelivery_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class WebhookAttempt(Base):
    """One HTTP attempt of a delivery: the append-only delivery log."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (UniqueConstraint("delivery_id", "number"),)

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(ForeignKey("webhook_deliveries.id"))
    number: Mapped[int] = mapped_column(Integer)
    manual: Mapped[bool] = mapped_column(Boolean)
    attempted_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
