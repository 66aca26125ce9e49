"""Webhook tasks: thin wrappers over :mod:`service.usecases.webhooks`, taking ids.

``webhooks.fan_out(event_id)`` (sent by the outbox relay for every event) creates the event's
deliveries and queues them; ``webhooks.deliver(delivery_id)`` makes one attempt if it is due
(a duplicate or early task sends nothing); ``webhooks.sweep`` (beat) queues the retries that
have come due and recovers deliveries and fan-outs whose task was lost; ``webhooks.purge``
(beat) deletes finished deliveries after 30 days.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.exc import OperationalError

from service.clock import utcnow
from service.usecases import webhooks
from worker.celery_app import app
from worker.tasks import _in_unit, _with_session, operator_sender, send_task

log = logging.getLogger(__name__)

# Transient database errors retry with backoff; HTTP failures never raise (they are recorded
# and rescheduled by the use case).
_RETRYING: dict[str, Any] = {
    "bind": True,
    "acks_late": True,
    "ignore_result": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": 2,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 10,
}


@app.task(name="webhooks.fan_out", **_RETRYING)
def fan_out(self: Any, event_id: str) -> int:
    """Create one delivery per matching endpoint of the event's operator and queue them
    (idempotent: a second run creates nothing and re-queues only unattempted deliveries)."""
    ids = _in_unit(lambda session: webhooks.fan_out(session, event_id, utcnow()))
    for delivery_id in ids:
        send_task("webhooks.deliver", [delivery_id])
    return len(ids)


@app.task(name="webhooks.deliver", **_RETRYING)
def deliver(self: Any, delivery_id: str) -> str:
    """Attempt one delivery if it is due; its status afterwards."""
    post = operator_sender()
    outcome = _with_session(lambda session: webhooks.deliver(session, delivery_id, utcnow(), post))
    return outcome.status


@app.task(name="webhooks.sweep", acks_late=True, ignore_result=True)
def sweep() -> int:
    """Queue due retries and recover lost tasks: fan-outs first, then deliveries."""
    now = utcnow()
    events = _in_unit(lambda session: webhooks.unfanned_events(session, now))
    for event_id in events:
        send_task("webhooks.fan_out", [event_id])
    due = _in_unit(lambda session: webhooks.due_deliveries(session, now))
    for delivery_id in due:
        send_task("webhooks.deliver", [delivery_id])
    if events or due:
        log.info("webhook sweep queued %d fan-outs and %d deliveries", len(events), len(due))
    return len(events) + len(due)


@app.task(name="webhooks.purge", acks_late=True, ignore_result=True)
def purge() -> int:
    """Delete finished deliveries past their retention (30 days), a batch at a time."""
    return _in_unit(lambda session: webhooks.purge_finished(session, utcnow()))
