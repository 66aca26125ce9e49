"""Practice bots' turns, played every second by beat (thin: one use case)."""

from __future__ import annotations

from service.clock import utcnow
from service.usecases import bots
from worker.celery_app import app
from worker.tasks import _with_session, relay_outbox


@app.task(name="bots.play_turns", acks_late=True, ignore_result=True)
def play_bot_turns() -> int:
    """Act for every practice bot whose turn it is, through the same play use case a person's
    action goes through. Safe to run twice at once: the slower twin's action is a stale
    version and is ignored."""
    turns = _with_session(lambda session: bots.play_turns(session, utcnow()))
    if turns.finished:
        relay_outbox.delay()  # settle what a bot's action ended now, not at the next sweep
    return turns.applied
