"""Celery tasks: thin, taking ids or nothing, idempotent; each calls one use case."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache, partial
from typing import Any, TypeVar

from kombu.entity import Queue
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from service.clock import utcnow
from service.config import Settings
from service.db import make_engine, make_sessionmaker
from service.errors import MatchNotLive, NotFound
from service.outbound.transport import Post, http_sender
from service.usecases import play, seamless, settlement, tables, tournaments, unit_of_work
from service.usecases.idempotency import purge_expired
from worker.celery_app import app
from worker.relay import BATCH as RELAY_BATCH
from worker.relay import relay_events

log = logging.getLogger(__name__)
T = TypeVar("T")


@cache
def _sessions(url: str) -> sessionmaker[Session]:
    """One engine (and pool) per database and worker process, built on first use."""
    return make_sessionmaker(make_engine(url, pool_size=2))


def _with_session(work: Callable[[Session], T]) -> T:
    """``work`` on a session of its own: a process that runs its units of work itself."""
    session = _sessions(Settings.from_env().database_url)()
    try:
        return work(session)
    finally:
        session.close()


def _in_unit(work: Callable[[Session], T]) -> T:
    """``work`` as one unit of work on a session of its own."""
    return _with_session(lambda session: unit_of_work.run(session, work, session))


def operator_sender() -> Post:
    """How tasks reach operators' endpoints (webhooks, seamless wallets): public addresses
    only, unless WEBHOOK_ALLOW_PRIVATE_NETWORKS (the rule is :mod:`service.outbound.targets`)."""
    return http_sender(allow_private=Settings.from_env().webhook_allow_private_networks)


def send_task(name: str, args: list[Any]) -> None:
    """Publish one task, failing fast when the broker is unreachable (the relay retries).
    The queue is declared with it, so a message is never dropped for want of a binding (a
    Redis that restarted empty, before any worker re-declared it)."""
    queue = app.conf.task_default_queue
    app.send_task(name, args=args, retry=False, declare=[Queue(queue)])  # type: ignore[no-untyped-call]


@app.task(name="idempotency.purge_expired", acks_late=True, ignore_result=True)
def purge_expired_idempotency_keys() -> int:
    """Delete idempotency keys past their retention (IDEMPOTENCY_RETENTION_HOURS, >= 24).

    Safe to run any number of times; the ledger keeps each money movement's key for good.
    """
    return _in_unit(lambda session: purge_expired(session, utcnow()))


@app.task(name="matches.enforce_clocks", acks_late=True, ignore_result=True)
def enforce_clocks() -> int:
    """Act for every player whose turn clock and bank ran out (docs/engine.md 9.2). Each match is
    re-checked under its row lock, so a player's action that got in first wins and running
    this twice at once changes nothing twice."""
    changed = _with_session(lambda session: play.run_timeouts(session, utcnow()))
    if changed:
        relay_outbox.delay()  # settle forfeits now, not at the next sweep
    return changed


@app.task(name="tables.cancel_unfilled", acks_late=True, ignore_result=True)
def cancel_unfilled_tables() -> int:
    """Cancel tables whose seats did not fill in time and refund every seat (docs/engine.md 9.6)."""
    return _with_session(lambda session: tables.cancel_unfilled(session, utcnow()))


@app.task(name="tournaments.start_or_cancel_due", acks_late=True, ignore_result=True)
def start_or_cancel_due_tournaments() -> int:
    """Start scheduled tournaments due with enough entrants; cancel and refund the others
    whose registration closed (unfilled sit-and-gos, scheduled ones short of their field)
    (docs/tournaments.md, "Lifecycle", "Scheduled tournaments")."""
    return _with_session(lambda session: tournaments.start_or_cancel_due(session, utcnow()))


@app.task(name="outbox.relay", acks_late=True, ignore_result=True)
def relay_outbox() -> int:
    """Publish what the outbox holds (after a commit, swept by beat, and when a worker
    connects). A full batch queues the next one at once: a backlog left by a broker outage
    drains in a few seconds, not one batch per beat tick."""
    published = _in_unit(lambda session: relay_events(session, send_task, utcnow()))
    if published == RELAY_BATCH:
        send_task("outbox.relay", [])
    return published


@app.task(
    name="settlement.settle_match",
    bind=True,
    acks_late=True,
    ignore_result=True,
    autoretry_for=(OperationalError,),
    retry_backoff=2,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=None,
)
def settle_match(self: Any, match_id: str) -> str | None:
    """Settle one finished match: statement and ledger postings exactly once, however often
    this runs, then a seamless operator's credits sent (the wallet sweep sends what is left);
    a tournament's match advances its tournament instead, once. Transient database errors
    retry with backoff."""
    try:
        done = _in_unit(lambda session: settlement.conclude(session, match_id, utcnow()))
    except (NotFound, MatchNotLive) as exc:
        log.warning("not settling %s: %s", match_id, exc)
        return None
    if done is not None:
        _with_session(lambda session: seamless.send_credits(session, match_id, operator_sender()))
    else:  # a tournament's match: the prizes, when it was the last, are credited now
        _with_session(
            lambda session: tournaments.send_credits(session, match_id, operator_sender())
        )
    return done


#: Matches a sweep reads at once; it reads page after page until it has them all.
SWEEP_BATCH = 100


def _unsettled_page(session: Session, cutoff: datetime | None, after: str | None) -> list[str]:
    return settlement.unsettled_finished_matches(
        session, SWEEP_BATCH, finished_before=cutoff, after=after
    )


@app.task(name="settlement.sweep", acks_late=True, ignore_result=True)
def sweep_unsettled(older_than: float = 0) -> int:
    """Queue a settlement for every finished match still without one (belt and braces
    behind the outbox); with ``older_than`` (seconds), only for those finished that long ago,
    so that beat's frequent sweeps leave the settlements still on their way alone.

    Without ``older_than`` (a worker's catch-up) it reads every page: after an outage that
    lost more than a page of tasks with Redis, the rest would wait for a beat sweep, and
    those expire unread while the worker drains the first page. Beat's sweeps read one page
    each (the next comes in SETTLEMENT_SWEEP_SECONDS), so that a worker running behind is
    not sent its whole backlog again every interval."""
    cutoff = utcnow() - timedelta(seconds=older_than) if older_than else None
    queued, after = 0, None
    while True:
        page = _in_unit(partial(_unsettled_page, cutoff=cutoff, after=after))
        for match_id in page:
            send_task("settlement.settle_match", [match_id])
        queued += len(page)
        if len(page) < SWEEP_BATCH or older_than:
            return queued
        after = page[-1]


#: What a worker queues each time it connects to the broker: the relay (events an outage
#: kept from the broker), the settlement sweep with no grace (tasks a Redis that restarted
#: empty, or a worker killed with SIGKILL, lost) and the webhook sweep (retries that came due).
CATCH_UP: tuple[str, ...] = ("outbox.relay", "settlement.sweep", "webhooks.sweep")


def catch_up() -> None:
    """Queue :data:`CATCH_UP` (called by the worker's consumer on every broker connection,
    see :class:`worker.celery_app.CatchUp`). Best effort: a broker gone again meanwhile means
    another connection, and another catch-up, later."""
    for name in CATCH_UP:
        try:
            send_task(name, [])
        except Exception as exc:
            log.warning("could not queue %s after connecting: %s", name, exc)
            return


@app.task(name="ops.ping", acks_late=True, ignore_result=True)
def ping() -> str:
    """Does nothing: a worker liveness probe, and the baseline of bench/settlement.py."""
    return "pong"
