"""The transactional outbox relay: events written with the changes they report are handed to
the broker after commit, and whatever could not be sent (a broker outage) is sent later.

``relay_events`` takes a batch of unpublished events (``FOR UPDATE SKIP LOCKED`` on PostgreSQL,
so several relays never send the same batch at once), sends each one's tasks and stamps
``published_at``. A send that fails leaves the event unpublished with its error, for the next
sweep (beat runs one every few seconds, and each worker one whenever it connects to the
broker, so an outage's backlog goes out as soon as the broker answers again). Sending is at
least once; every task it sends is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db import is_postgres
from service.db.match_models import OutboxEvent

log = logging.getLogger(__name__)

Send = Callable[[str, list[Any]], None]


def tasks_for(
    event: OutboxEvent, endpoints: dict[str, bool] | None = None
) -> list[tuple[str, list[Any]]]:
    """The tasks an event causes. ``endpoints``: whether each operator has a webhook endpoint,
    as far as the caller's batch has looked it up (filled in here)."""
    out: list[tuple[str, list[Any]]] = []
    if event.type == "match.finished":
        out.append(("settlement.settle_match", [event.subject_id]))
    # Webhooks: only for operators with an enabled endpoint (a lost race with a new endpoint
    # is caught by the webhook sweep).
    from sqlalchemy.orm import object_session

    from service.usecases.webhooks import has_endpoints

    session = object_session(event)
    if session is None:
        out.append(("webhooks.fan_out", [event.id]))
        return out
    endpoints = {} if endpoints is None else endpoints
    if event.operator_id not in endpoints:
        endpoints[event.operator_id] = has_endpoints(session, event.operator_id)
    if endpoints[event.operator_id]:
        out.append(("webhooks.fan_out", [event.id]))
    return out


#: Events a relay takes at once.
BATCH = 200


def relay_events(session: Session, send: Send, now: datetime, limit: int = BATCH) -> int:
    """Send the tasks of up to ``limit`` unpublished events; returns how many were published."""
    published = 0
    stmt = (
        select(OutboxEvent)
        .where(OutboxEvent.published_at.is_(None))
        .order_by(OutboxEvent.created_at, OutboxEvent.id)
        .limit(limit)
    )
    if is_postgres(session):
        stmt = stmt.with_for_update(skip_locked=True)
    endpoints: dict[str, bool] = {}  # a backlog's events are mostly of a few operators
    for event in session.scalars(stmt):
        try:
            for name, args in tasks_for(event, endpoints):
                send(name, args)
        except Exception as exc:  # the broker is down: keep the event for the next sweep
            event.attempts += 1
            event.last_error = f"{type(exc).__name__}: {exc}"[:1000]
            log.warning("outbox relay could not publish %s: %s", event.id, exc)
            break
        event.published_at = now
        event.attempts += 1
        published += 1
    return published
