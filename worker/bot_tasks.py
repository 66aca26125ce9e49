"""Practice bots' turns (thin: one use case): played as soon as a person's action at a
practice table commits (the API kicks this task), again at once while bots keep acting (a
bot may follow a bot), and every second by beat as the backstop."""

from __future__ import annotations

from service.clock import utcnow
from service.usecases import bots
from worker.celery_app import app
from worker.tasks import _with_session, relay_outbox

#: A bot that follows a bot acts after this pause: a table of bots plays at a pace a person
#: watching can follow (and a worker is not kept busy by it), still well inside beat's second.
BOT_PAUSE_SECONDS = 0.3


@app.task(name="bots.play_turns", acks_late=True, ignore_result=True)
def play_bot_turns() -> int:
    """Act for every practice bot whose turn it is, through the same play use case a person's
    action goes through. Safe to run twice at once: the slower twin's action is a stale
    version and is ignored."""
    turns = _with_session(lambda session: bots.play_turns(session, utcnow()))
    if turns.finished:
        relay_outbox.delay()  # settle what a bot's action ended now, not at the next sweep
    if turns.applied:  # another bot may be next: its turn soon, not at beat's next tick
        play_bot_turns.apply_async(countdown=BOT_PAUSE_SECONDS)
    return turns.applied
