"""Webhooks: operators' endpoints, fanning outbox events out to them, and signed delivery with
retries (API_CONVENTIONS "Webhooks").

Flow. The outbox relay sends ``webhooks.fan_out(event_id)`` for every event; :func:`fan_out`
creates one delivery per enabled endpoint of the event's operator that wants the event's type
(unique per event and endpoint, so running it twice creates nothing twice) and returns the
ones to queue. :func:`deliver` makes one attempt in three steps: claim the delivery under its
row lock (it must be pending and due, and nobody else's attempt in flight: a lease in
``locked_until``), POST the signed envelope outside any transaction (10 s budget), then record
the attempt and the outcome: a 2xx is delivered; anything else is retried on
:data:`RETRY_DELAYS` (30 s doubling to a 3 h cap, about 25 hours in all) and then given up as
``failed``. :func:`due_deliveries` is the beat sweep's query: what is due and not queued
recently, so a lost task or a broker outage only delays a delivery.

Every function takes ``now``; tests drive the retry schedule by passing later times.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Text, cast, delete, exists, literal, or_, select
from sqlalchemy.orm import Session

from service.clock import rfc3339
from service.db import is_postgres
from service.db.match_models import OutboxEvent
from service.db.webhook_models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from service.errors import FieldError, NotFound, ValidationFailed, WebhookEndpointDisabled
from service.ids import new_id, ulid
from service.outbound.signing import SIGNATURE_HEADER, new_secret, signature_header
from service.outbound.targets import PrivateTarget, check
from service.outbound.transport import TIMEOUT_SECONDS, Post, Response
from service.usecases import unit_of_work
from service.usecases.auth import Principal, require_operator
from service.usecases.pages import Page, page_of

log = logging.getLogger(__name__)

#: The event types the service emits (an endpoint may subscribe to a subset).
EVENT_TYPES = (
    "match.started",
    "hand.ended",
    "match.finished",
    "settlement.completed",
    "tournament.started",
    "tournament.cancelled",
    "tournament.finished",
)
#: The event an operator asks for (:func:`send_test_event`): sent to that one endpoint,
#: whatever types it subscribes to, never fanned out to the others.
TEST_EVENT_TYPE = "webhook.test"

#: Seconds to wait before retry n (n = 1, 2, ...): 30 s doubling, capped at 3 hours. The
#: delays add up to 25 h 15 m, so a receiver that is down for a day still gets every event.
RETRY_DELAYS: tuple[int, ...] = tuple(min(30 * 2**n, 3 * 3600) for n in range(16))
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1

LEASE = timedelta(seconds=60)  # longer than any attempt; a crashed worker's claim expires
REQUEUE_AFTER = timedelta(minutes=2)  # the sweep re-queues a due delivery no sooner
MAX_GRACE = timedelta(days=7)
DEFAULT_GRACE = timedelta(hours=24)


def _delivery_id() -> str:
    # ``service.ids`` knows the conventions' prefixes; a delivery is a webhook's sub-resource.
    return f"whd_{ulid()}"


def retry_delay(attempt: int) -> timedelta | None:
    """How long after failed attempt number ``attempt`` (1-based) the next one is due; None
    once the schedule is exhausted."""
    if attempt < 1 or attempt > len(RETRY_DELAYS):
        return None
    return timedelta(seconds=RETRY_DELAYS[attempt - 1])


# --- Endpoints ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedEndpoint:
    """An endpoint and its new secret (shown in this one response only)."""

    endpoint: WebhookEndpoint
    secret: str


#: The longest webhook URL.
MAX_URL_LENGTH = 2048
_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_PCT = r"%[0-9A-Fa-f]{2}"
#: What a webhook URL looks like, written once for the check below and for the contract (a
#: JSON Schema ``pattern``): http or https, a host (a name or a bracketed IPv6 address), an
#: optional port from 1 to 65535, then a path and query of RFC 3986 characters (others
#: percent-encoded); no credentials, no fragment, ASCII only.
URL_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://"
    rf"(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9._~!$&'()*+,;=-]|{_PCT})+)"
    rf"(?::{_PORT})?"
    rf"(?:[/?](?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|{_PCT})*)?$"
)
_URL = re.compile(URL_PATTERN)


def check_url(url: str, *, allow_private: bool = False) -> str:
    """``url`` if it matches :data:`URL_PATTERN` (an absolute http(s) URL without
    credentials or fragment) and its host is not known to be private
    (:mod:`service.outbound.targets`; a host name is checked again, resolved, at every
    delivery), unless ``allow_private``.

    :raises ValidationFailed: naming the field ``url``.
    """

    def refuse(message: str) -> ValidationFailed:
        return ValidationFailed(f"{message} (got {url!r}).", errors=[FieldError("url", message)])

    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise refuse(
            f"Must be an absolute http or https URL of at most {MAX_URL_LENGTH} characters"
        )
    if any(c.isspace() or not c.isprintable() for c in url):
        raise refuse("Must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise refuse("Must be a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise refuse("Must be an absolute http or https URL")
    if parts.username is not None or parts.password is not None:
        raise refuse("Must not carry credentials; authenticate deliveries by their signature")
    if parts.fragment:
        raise refuse("Must not have a fragment")
    if port == 0:
        raise refuse("Must not name port 0")
    if not _URL.fullmatch(url):
        raise refuse(
            "Must be an http or https URL of RFC 3986 characters (others percent-encoded), "
            "its port from 1 to 65535"
        )
    try:
        check(parts.hostname, allow_private=allow_private)
    except PrivateTarget as exc:
        raise refuse(f"Must reach a public address: {exc}") from None
    return url


def check_event_types(types: Sequence[str] | None) -> list[str] | None:
    """The de-duplicated, known event types; None (every type) stays None.

    :raises ValidationFailed: naming the field ``event_types``.
    """
    if types is None:
        return None
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown or not types:
        message = (
            f"Unknown event types {unknown!r}; known: {', '.join(EVENT_TYPES)}."
            if unknown
            else "Send at least one event type, or leave event_types out for every type."
        )
        raise ValidationFailed(message, errors=[FieldError("event_types", message)])
    return sorted(set(types), key=EVENT_TYPES.index)


def create_endpoint(
    session: Session,
    principal: Principal,
    url: str,
    event_types: Sequence[str] | None,
    description: str,
    now: datetime,
    enabled: bool = True,
    *,
    allow_private: bool = False,
) -> IssuedEndpoint:
    """A new endpoint of the calling operator, with a server-generated secret.
    ``allow_private`` lets its URL name a private address (development and tests only).

    :raises Forbidden: for a player token.
    :raises ValidationFailed: for a bad ``url`` or ``event_types``.
    """
    operator_id = require_operator(principal)
    endpoint = WebhookEndpoint(
        id=new_id("whk"),
        operator_id=operator_id,
        url=check_url(url, allow_private=allow_private),
        description=description,
        event_types=check_event_types(event_types),
        enabled=enabled,
        secret=new_secret(),
        previous_secret=None,
        previous_secret_expires_at=None,
        created_at=now,
        updated_at=now,
        deleted_at=None,
    )
    session.add(endpoint)
    assert endpoint.secret is not None
    return IssuedEndpoint(endpoint, endpoint.secret)


def _endpoint(
    session: Session, principal: Principal, endpoint_id: str, *, lock: bool = False
) -> WebhookEndpoint:
    operator_id = require_operator(principal)
    endpoint = session.get(WebhookEndpoint, endpoint_id, with_for_update=lock)
    if endpoint is None or endpoint.operator_id != operator_id or endpoint.deleted_at:
        raise NotFound(f"No webhook endpoint {endpoint_id!r}.")
    return endpoint


def get_endpoint(session: Session, principal: Principal, endpoint_id: str) -> WebhookEndpoint:
    """:raises NotFound: when unknown, deleted or another operator's."""
    return _endpoint(session, principal, endpoint_id)


def list_endpoints(
    session: Session,
    principal: Principal,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
) -> Page[WebhookEndpoint]:
    """The operator's endpoints (deleted ones left out), newest first."""
    operator_id = require_operator(principal)
    stmt = select(WebhookEndpoint).where(
        WebhookEndpoint.operator_id == operator_id, WebhookEndpoint.deleted_at.is_(None)
    )
    return page_of(
        session,
        stmt,
        WebhookEndpoint.id,
        WebhookEndpoint,
        limit,
        starting_after,
        ending_before,
    )


_UNSET: Any = object()


def update_endpoint(
    session: Session,
    principal: Principal,
    endpoint_id: str,
    now: datetime,
    *,
    url: str = _UNSET,
    event_types: Sequence[str] | None = _UNSET,
    description: str = _UNSET,
    enabled: bool = _UNSET,
    allow_private: bool = False,
) -> WebhookEndpoint:
    """Change an endpoint; fields left out stay. Disabling it stops new deliveries, and a
    pending one is cancelled at its next attempt. ``allow_private`` as for
    :func:`create_endpoint`.

    :raises NotFound: when unknown, deleted or another operator's.
    :raises ValidationFailed: for a bad ``url`` or ``event_types``.
    """
    changes: dict[str, Any] = {}
    if url is not _UNSET:
        changes["url"] = check_url(url, allow_private=allow_private)
    if event_types is not _UNSET:
        changes["event_types"] = check_event_types(event_types)
    if description is not _UNSET:
        changes["description"] = description
    if enabled is not _UNSET:
        changes["enabled"] = enabled
    endpoint = _endpoint(session, principal, endpoint_id, lock=True)
    for name, value in changes.items():
        setattr(endpoint, name, value)
    endpoint.updated_at = now
    return endpoint


def delete_endpoint(
    session: Session, principal: Principal, endpoint_id: str, now: datetime
) -> WebhookEndpoint:
    """Delete an endpoint: no more deliveries, pending ones cancelled, secrets wiped. Its
    delivery log stays in the database.

    :raises NotFound: when unknown, already deleted or another operator's.
    """
    endpoint = _endpoint(session, principal, endpoint_id, lock=True)
    endpoint.deleted_at = now
    endpoint.updated_at = now
    endpoint.enabled = False
    endpoint.secret = None
    endpoint.previous_secret = None
    endpoint.previous_secret_expires_at = None
    pending = session.scalars(
        select(WebhookDelivery).where(
            WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.status == "pending"
        )
    )
    for delivery in pending:
        _cancel(delivery, "endpoint deleted")
    return endpoint


def rotate_secret(
    session: Session,
    principal: Principal,
    endpoint_id: str,
    grace: timedelta,
    now: datetime,
) -> IssuedEndpoint:
    """A new secret for the endpoint. The current one keeps signing beside it (a second
    ``v1=``) for ``grace``; an older secret still in its grace period stops at once.

    :raises NotFound: when unknown, deleted or another operator's.
    :raises ValidationFailed: when ``grace`` is negative or longer than 7 days.
    """
    if grace < timedelta(0) or grace > MAX_GRACE:
        message = f"Must be between 0 and {int(MAX_GRACE.total_seconds())} seconds."
        raise ValidationFailed(
            f"Bad grace period {grace.total_seconds():.0f} s: {message}",
            errors=[FieldError("grace_period_seconds", message)],
        )
    endpoint = _endpoint(session, principal, endpoint_id, lock=True)
    if grace > timedelta(0):
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_expires_at = now + grace
    else:
        endpoint.previous_secret = None
        endpoint.previous_secret_expires_at = None
    secret = new_secret()
    endpoint.secret = secret
    endpoint.updated_at = now
    return IssuedEndpoint(endpoint, secret)


def signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The secrets that sign a delivery made at ``now``: the current one first."""
    out = [endpoint.secret] if endpoint.secret else []
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret and expires is not None and expires > now:
        out.append(endpoint.previous_secret)
    return out


# --- Fan-out ------------------------------------------------------------------------------


def wants(endpoint: WebhookEndpoint, event_type: str) -> bool:
    """Whether the event type is fanned out to ``endpoint`` (a test event never is)."""
    return event_type in EVENT_TYPES and (
        endpoint.event_types is None or event_type in endpoint.event_types
    )


def has_endpoints(session: Session, operator_id: str) -> bool:
    """Whether the operator has an enabled endpoint (in the caller's transaction)."""
    return bool(
        session.scalar(
            select(
                exists().where(
                    WebhookEndpoint.operator_id == operator_id,
                    WebhookEndpoint.enabled.is_(True),
                    WebhookEndpoint.deleted_at.is_(None),
                )
            )
        )
    )


def fan_out(session: Session, event_id: str, now: datetime) -> list[str]:
    """Create the event's deliveries (one per enabled endpoint of its operator that wants its
    type and existed when it happened); returns the ids of its deliveries not yet attempted,
    stamped as queued. Idempotent: a second run creates nothing.

    An unknown event id gives ``[]`` (nothing to deliver).
    """
    # The event's row lock serialises fan-outs of one event (SQLite: BEGIN IMMEDIATE).
    event = session.get(OutboxEvent, event_id, with_for_update=True)
    if event is None:
        return []
    endpoints = session.scalars(
        select(WebhookEndpoint).where(
            WebhookEndpoint.operator_id == event.operator_id,
            WebhookEndpoint.enabled.is_(True),
            WebhookEndpoint.deleted_at.is_(None),
            WebhookEndpoint.created_at <= event.created_at,
        )
    ).all()
    existing = {
        d.endpoint_id: d
        for d in session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.event_id == event_id)
        )
    }
    for endpoint in endpoints:
        if endpoint.id in existing or not wants(endpoint, event.type):
            continue
        delivery = _new_delivery(event, endpoint.id, now)
        session.add(delivery)
        existing[endpoint.id] = delivery
    fresh = [d for d in existing.values() if d.status == "pending" and d.attempts == 0]
    for delivery in fresh:
        delivery.queued_at = now
    return sorted(d.id for d in fresh)


def _new_delivery(event: OutboxEvent, endpoint_id: str, now: datetime) -> WebhookDelivery:
    """A delivery of ``event`` to one endpoint, pending and due ``now``, not yet queued."""
    return WebhookDelivery(
        id=_delivery_id(),
        operator_id=event.operator_id,
        endpoint_id=endpoint_id,
        event_id=event.id,
        event_type=event.type,
        status="pending",
        attempts=0,
        next_attempt_at=now,
        redelivery_requested=False,
        created_at=now,
    )


#: How far back the sweep looks for events whose fan-out was lost.
FAN_OUT_WINDOW = timedelta(hours=1)


def unfanned_events(session: Session, now: datetime, limit: int = 100) -> list[str]:
    """Events published between :data:`FAN_OUT_WINDOW` and two minutes ago that an endpoint
    wants and has no delivery for (their ``fan_out`` task was lost): for the sweep. The type
    filter runs in SQL, so unwanted events never crowd out the ones to recover."""
    listed = cast(WebhookEndpoint.event_types, Text)
    wanted = or_(
        WebhookEndpoint.event_types.is_(None),
        listed == "null",  # JSON null: every type
        listed.contains(literal('"') + OutboxEvent.type + literal('"')),
    )
    return list(
        session.scalars(
            select(OutboxEvent.id)
            .join(WebhookEndpoint, WebhookEndpoint.operator_id == OutboxEvent.operator_id)
            .where(
                OutboxEvent.type.in_(EVENT_TYPES),
                OutboxEvent.published_at >= now - FAN_OUT_WINDOW,
                OutboxEvent.published_at <= now - REQUEUE_AFTER,
                WebhookEndpoint.enabled.is_(True),
                WebhookEndpoint.deleted_at.is_(None),
                WebhookEndpoint.created_at <= OutboxEvent.created_at,
                wanted,
                ~exists().where(
                    WebhookDelivery.event_id == OutboxEvent.id,
                    WebhookDelivery.endpoint_id == WebhookEndpoint.id,
                ),
            )
            .group_by(OutboxEvent.id, OutboxEvent.created_at)
            .order_by(OutboxEvent.created_at)
            .limit(limit)
        )
    )


def due_deliveries(session: Session, now: datetime, limit: int = 500) -> list[str]:
    """Pending deliveries that are due, not in flight and not queued in the last
    :data:`REQUEUE_AFTER`; stamped as queued now (for the sweep to queue)."""
    stmt = (
        select(WebhookDelivery)
        .where(
            WebhookDelivery.status == "pending",
            WebhookDelivery.next_attempt_at <= now,
            (WebhookDelivery.locked_until.is_(None)) | (WebhookDelivery.locked_until <= now),
            (WebhookDelivery.queued_at.is_(None))
            | (WebhookDelivery.queued_at <= now - REQUEUE_AFTER),
        )
        .order_by(WebhookDelivery.next_attempt_at)
        .limit(limit)
    )
    if is_postgres(session):
        stmt = stmt.with_for_update(skip_locked=True)
    due = list(session.scalars(stmt))
    for delivery in due:
        delivery.queued_at = now
    return [d.id for d in due]


# --- Delivery -----------------------------------------------------------------------------


def envelope(event: OutboxEvent) -> bytes:
    """The JSON body POSTed for ``event`` (API_CONVENTIONS: id, type, created_at,
    operator_id, data)."""
    body = {
        "id": event.id,
        "type": event.type,
        "created_at": rfc3339(event.created_at),
        "operator_id": event.operator_id,
        "data": event.data,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class DeliveryClaim:
    """One attempt a worker may make: what to send, where, signed how."""

    delivery_id: str
    endpoint_id: str
    number: int
    manual: bool
    url: str
    body: bytes
    headers: dict[str, str]


@dataclass(frozen=True)
class DeliveryOutcome:
    """What :func:`deliver` did: ``sent`` False when there was nothing to do (``reason``)."""

    delivery_id: str
    sent: bool
    status: str
    reason: str = ""
    attempt: int | None = None
    status_code: int | None = None
    next_attempt_at: datetime | None = None


def _cancel(delivery: WebhookDelivery, reason: str) -> None:
    delivery.status = "cancelled"
    delivery.next_attempt_at = None
    delivery.locked_until = None
    delivery.last_error = reason


def claim(session: Session, delivery_id: str, now: datetime) -> DeliveryClaim | DeliveryOutcome:
    """Take the next attempt of a delivery (under its row lock), or say why not."""
    delivery = session.get(WebhookDelivery, delivery_id, with_for_update=True)
    if delivery is None:
        return DeliveryOutcome(delivery_id, False, "missing", "no such delivery")
    if delivery.status != "pending":
        return DeliveryOutcome(delivery_id, False, delivery.status, f"already {delivery.status}")
    if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
        return DeliveryOutcome(
            delivery_id,
            False,
            "pending",
            "not due yet",
            next_attempt_at=delivery.next_attempt_at,
        )
    if delivery.locked_until is not None and delivery.locked_until > now:
        return DeliveryOutcome(delivery_id, False, "pending", "an attempt is in flight")
    endpoint = session.get(WebhookEndpoint, delivery.endpoint_id)
    event = session.get(OutboxEvent, delivery.event_id)
    assert endpoint is not None and event is not None  # foreign keys
    secrets = signing_secrets(endpoint, now)
    if endpoint.deleted_at is not None or not endpoint.enabled or not secrets:
        _cancel(
            delivery, "endpoint disabled" if endpoint.deleted_at is None else "endpoint deleted"
        )
        return DeliveryOutcome(delivery_id, False, "cancelled", delivery.last_error or "")
    delivery.attempts += 1
    delivery.locked_until = now + LEASE
    delivery.queued_at = None  # its task is running; after the lease the sweep may queue
    manual = delivery.redelivery_requested
    delivery.redelivery_requested = False
    body = envelope(event)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "gin-service-webhooks/1",
        SIGNATURE_HEADER: signature_header(secrets, int(now.timestamp()), body),
        "Gin-Event-Id": event.id,
        "Gin-Event-Type": event.type,
        "Gin-Delivery-Id": delivery.id,
        "Gin-Delivery-Attempt": str(delivery.attempts),
    }
    return DeliveryClaim(
        delivery.id, endpoint.id, delivery.attempts, manual, endpoint.url, body, headers
    )


def record(
    session: Session, taken: DeliveryClaim, response: Response, now: datetime
) -> DeliveryOutcome:
    """Log the attempt and apply its outcome: delivered on a 2xx, else the next retry (or
    ``failed`` when the schedule is exhausted). A late answer for a claim that another
    worker has since superseded is logged, and only a success changes the delivery."""
    delivery = session.get(WebhookDelivery, taken.delivery_id, with_for_update=True)
    assert delivery is not None
    current = delivery.attempts == taken.number
    if delivery.status == "pending" and response.ok:
        delivery.status = "delivered"
        delivery.delivered_at = now
        delivery.next_attempt_at = None
        delivery.locked_until = None
    elif delivery.status == "pending" and current:
        delay = retry_delay(taken.number)
        if delay is None:
            delivery.status = "failed"
            delivery.next_attempt_at = None
        else:
            delivery.next_attempt_at = now + delay
    if current:
        delivery.locked_until = None
        delivery.queued_at = None
        delivery.last_attempt_at = now
        delivery.last_status_code = response.status_code
        delivery.last_error = response.error or (
            None if response.ok else f"HTTP {response.status_code}"
        )
    session.add(
        WebhookAttempt(
            delivery_id=delivery.id,
            number=taken.number,
            manual=taken.manual,
            attempted_at=now,
            status_code=response.status_code,
            error=response.error or (None if response.ok else f"HTTP {response.status_code}"),
            duration_ms=response.duration_ms,
            next_attempt_at=delivery.next_attempt_at,
        )
    )
    return DeliveryOutcome(
        delivery.id,
        True,
        delivery.status,
        attempt=taken.number,
        status_code=response.status_code,
        next_attempt_at=delivery.next_attempt_at,
    )


def deliver(session: Session, delivery_id: str, now: datetime, post: Post) -> DeliveryOutcome:
    """Make the delivery's next attempt if it is due: claim, POST (``post``, the transport:
    :func:`service.outbound.transport.http_sender` in production), record, the claim and the
    record each a unit of work and the POST outside both. Running it again (a duplicate
    task), or while another attempt is in flight, sends nothing."""
    taken = unit_of_work.run(session, lambda: claim(session, delivery_id, now))
    if isinstance(taken, DeliveryOutcome):
        return taken
    response = post(taken.url, taken.body, taken.headers, TIMEOUT_SECONDS)
    outcome = unit_of_work.run(session, lambda: record(session, taken, response, now))
    log.info(
        "webhook delivery %s to %s attempt %d: %s",
        outcome.delivery_id,
        taken.endpoint_id,
        taken.number,
        response.status_code if response.error is None else response.error,
    )
    return outcome


#: Finished deliveries (delivered, failed, cancelled) and their attempts are kept this long.
RETENTION = timedelta(days=30)


def purge_finished(session: Session, now: datetime, batch: int = 1000) -> int:
    """Delete up to ``batch`` finished deliveries created before ``now - RETENTION``, with
    their attempts; how many were deleted. Pending ones are never touched."""
    old = list(
        session.scalars(
            select(WebhookDelivery.id)
            .where(
                WebhookDelivery.status != "pending",
                WebhookDelivery.created_at < now - RETENTION,
            )
            .order_by(WebhookDelivery.created_at)
            .limit(batch)
        )
    )
    if old:
        session.execute(delete(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(old)))
        session.execute(delete(WebhookDelivery).where(WebhookDelivery.id.in_(old)))
    return len(old)


# --- The delivery log and redelivery ------------------------------------------------------


@dataclass(frozen=True)
class DeliveryView:
    delivery: WebhookDelivery
    attempts: Sequence[WebhookAttempt]


def _with_attempts(session: Session, deliveries: Sequence[WebhookDelivery]) -> list[DeliveryView]:
    by_delivery: dict[str, list[WebhookAttempt]] = {d.id: [] for d in deliveries}
    if deliveries:
        for attempt in session.scalars(
            select(WebhookAttempt)
            .where(WebhookAttempt.delivery_id.in_(list(by_delivery)))
            .order_by(WebhookAttempt.delivery_id, WebhookAttempt.number)
        ):
            by_delivery[attempt.delivery_id].append(attempt)
    return [DeliveryView(d, by_delivery[d.id]) for d in deliveries]


def list_deliveries(
    session: Session,
    principal: Principal,
    endpoint_id: str,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
    status: str | None = None,
) -> Page[DeliveryView]:
    """One endpoint's deliveries, newest first, each with its attempts.

    :raises NotFound: when the endpoint is unknown, deleted or another operator's.
    """
    endpoint = _endpoint(session, principal, endpoint_id)
    stmt = select(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint.id)
    if status is not None:
        stmt = stmt.where(WebhookDelivery.status == status)
    page = page_of(
        session,
        stmt,
        WebhookDelivery.id,
        WebhookDelivery,
        limit,
        starting_after,
        ending_before,
    )
    return Page(_with_attempts(session, page.data), page.has_more, page.next_cursor)


def _delivery(
    session: Session, principal: Principal, delivery_id: str, *, lock: bool = False
) -> WebhookDelivery:
    operator_id = require_operator(principal)
    delivery = session.get(WebhookDelivery, delivery_id, with_for_update=lock)
    if delivery is None or delivery.operator_id != operator_id:
        raise NotFound(f"No webhook delivery {delivery_id!r}.")
    return delivery


def get_delivery(session: Session, principal: Principal, delivery_id: str) -> DeliveryView:
    """:raises NotFound: when unknown or another operator's."""
    return _with_attempts(session, [_delivery(session, principal, delivery_id)])[0]


def _check_enabled(endpoint: WebhookEndpoint) -> None:
    """:raises WebhookEndpointDisabled: when ``endpoint`` is disabled or deleted."""
    if endpoint.deleted_at is not None or not endpoint.enabled:
        raise WebhookEndpointDisabled(
            f"Webhook endpoint {endpoint.id} is disabled or deleted; enable it first."
        )


def send_test_event(
    session: Session, principal: Principal, endpoint_id: str, now: datetime
) -> DeliveryView:
    """A new :data:`TEST_EVENT_TYPE` event for one endpoint (whatever types it subscribes
    to) and its delivery, due now; the caller queues ``webhooks.deliver``. The event is
    written as published (the outbox relay never fans it out to the operator's other
    endpoints); from there it is delivered, logged, retried and redelivered as any other.

    :raises NotFound: when the endpoint is unknown, deleted or another operator's.
    :raises WebhookEndpointDisabled: when it is disabled.
    """
    endpoint = _endpoint(session, principal, endpoint_id, lock=True)
    _check_enabled(endpoint)
    event = OutboxEvent(
        id=new_id("evt"),
        operator_id=endpoint.operator_id,
        type=TEST_EVENT_TYPE,
        subject_id=endpoint.id,
        data={"endpoint_id": endpoint.id, "test": True},
        created_at=now,
        published_at=now,
        attempts=0,
    )
    delivery = _new_delivery(event, endpoint.id, now)
    delivery.queued_at = now
    session.add(event)
    session.flush()  # the event before its delivery (foreign key)
    session.add(delivery)
    session.flush()
    return DeliveryView(delivery, [])


def redeliver(
    session: Session, principal: Principal, delivery_id: str, now: datetime
) -> DeliveryView:
    """Reopen a delivery for an attempt now (whatever its state: delivered, failed, or
    pending with a retry later); the caller queues ``webhooks.deliver``. If that attempt
    fails, whatever is left of the retry schedule follows.

    :raises NotFound: when unknown or another operator's.
    :raises WebhookEndpointDisabled: when its endpoint is disabled or deleted.
    """
    delivery = _delivery(session, principal, delivery_id, lock=True)
    endpoint = session.get(WebhookEndpoint, delivery.endpoint_id)
    assert endpoint is not None
    _check_enabled(endpoint)
    delivery.status = "pending"
    delivery.next_attempt_at = now
    delivery.queued_at = now
    delivery.redelivery_requested = True
    delivery.delivered_at = None
    return _with_attempts(session, [delivery])[0]
