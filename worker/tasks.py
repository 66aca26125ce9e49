"""Celery tasks: thin, taking ids or nothing, idempotent; each calls one use case."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache, partial
from typing import Any, TypeVar

from celery import signals
from kombu.entity import Queue
from sqlalchemy import text
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


@signals.worker_process_init.connect(weak=False, dispatch_uid="gin-connect-early")
def _connect_early(**_: Any) -> None:
    """Open a pool process's database connection as soon as it is forked, while the worker's
    main process still connects to the broker: a worker started with a backlog waiting (after
    a crash) otherwise paid for the connection, and the database's own start of a session,
    on its first settlement. Best effort: a database still away is the first task's to find.
    Then the process starts settling that backlog itself (:func:`settle_backlog`)."""
    try:
        _with_session(lambda session: session.execute(text("SELECT 1")))
    except OperationalError as exc:
        log.warning("could not connect to the database yet: %s", exc)
    threading.Thread(target=settle_backlog, name="gin-backlog", daemon=True).start()


def settle_backlog() -> int:
    """Settle every unsettled match, as a sweep with no grace does (:func:`_settle_unsettled`),
    in a thread of a pool process from the moment it is forked, beside the tasks it takes;
    how many it settled. Each process of a starting worker runs one: they share the backlog
    out as sweeps do (``SKIP LOCKED``), and so do the sweeps and settlements the broker brings.

    Neither the broker nor the worker's consumer has any part in it. A worker's catch-up
    sweeps are queued on the broker (:func:`catch_up`), behind whatever was queued before
    them (beat's ticks: its relay's batch, its sweep that leaves its last interval's matches):
    a worker that came back with a backlog took those first, and a broker gone a few seconds
    later took the catch-up with it, so that every match that ended while the worker was
    away waited for the broker's return (docs/performance.md, the fault mix). Nor could the
    consumer hand the sweeps to its pool: it writes to its processes from its event loop,
    which stops while it reconnects. A failure is logged: beat's sweeps and the catch-up find
    what is left, as they do after a connection is lost."""
    try:
        return _settle_unsettled(0)
    except Exception:
        log.exception("the settlement of the backlog at the process's start stopped")
        return 0


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


def hurry(name: str, args: list[Any]) -> None:
    """:func:`send_task` for a task that only hurries along what a sweep also finds (the
    relay's next batch, a sweep to share a backlog out, a sweep's remainder): a broker that is
    away is logged, and the caller goes on with the work it holds."""
    try:
        send_task(name, args)
    except Exception as exc:
        log.warning("could not queue %s: %s", name, exc)


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
    drains in a few seconds, not one batch per beat tick.

    Finished matches are settled here, after the relay's commit, one unit each, as their
    ``settlement.settle_match`` task would (:func:`_settle_one`), rather than queued: a
    match's settlement is one task away from its end, not two, and a backlog (the events a
    dead worker or a broker outage left) is settled as soon as a relay takes it, not behind
    everything queued meanwhile (with a sweep queued for another process to share it out).
    A relay that dies after its commit leaves its matches to the
    sweeps, as a lost settlement task would; one that meets a database error queues the
    rest as settlement tasks, which retry."""
    finished: list[str] = []

    def send(name: str, args: list[Any]) -> None:
        if name == "settlement.settle_match":
            finished.extend(args)  # settled below
        else:
            send_task(name, args)

    published = _in_unit(lambda session: relay_events(session, send, utcnow()))
    if published == RELAY_BATCH:
        hurry("outbox.relay", [])
    if len(finished) > 1:  # a backlog: a sweep lets another pool process share it out
        hurry("settlement.sweep", [])
    for done, match_id in enumerate(finished):
        try:
            _settle_one(match_id)
        except OperationalError as exc:
            log.warning("relay queues %d settlements: %s", len(finished) - done, exc)
            for left in finished[done:]:
                send_task("settlement.settle_match", [left])
            break
        except Exception:
            log.exception("relay could not settle %s; the sweep will", match_id)
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
    return _settle_one(match_id)


def _settle_one(match_id: str) -> str | None:
    """Settle ``match_id`` in a unit of its own (a tournament's match: advance its
    tournament), then send a seamless operator's credits; the settlement's id (``None``: no
    such match, not finished, or a tournament's match)."""
    try:
        done, credits = _in_unit(
            lambda session: settlement.conclude_with_credits(session, match_id, utcnow())
        )
    except (NotFound, MatchNotLive) as exc:
        log.warning("not settling %s: %s", match_id, exc)
        return None
    if done is not None:
        if credits:  # none to look for after a transfer-mode operator's settlement
            _with_session(
                lambda session: seamless.send_credits(session, match_id, operator_sender())
            )
    else:  # a tournament's match: the prizes, when it was the last, are credited now
        _with_session(
            lambda session: tournaments.send_credits(session, match_id, operator_sender())
        )
    return done


#: Seconds a sweep settles for; what is left then, it hands to a sweep it queues.
SWEEP_SECONDS = 30.0


def _settle_next(
    session: Session, cutoff: datetime | None, passing: set[str], claimed: list[str]
) -> tuple[str, bool] | None:
    """One unit of a sweep: claim the oldest unsettled match and settle it; the match and
    whether it may have credits to send (:func:`settlement.conclude_with_credits`)."""
    match_id = settlement.claim_unsettled(session, finished_before=cutoff, passing=passing)
    if match_id is None:
        return None
    claimed.append(match_id)
    # A tournament's match advances its tournament.
    _, credits = settlement.conclude_with_credits(session, match_id, utcnow())
    return match_id, credits


@app.task(
    name="settlement.sweep",
    acks_late=True,
    ignore_result=True,
    autoretry_for=(OperationalError,),
    retry_backoff=1,
    retry_backoff_max=10,
    retry_jitter=True,
    max_retries=None,
)
def sweep_unsettled(older_than: float = 0) -> int:
    """Settle every finished match still without a settlement (belt and braces behind the
    outbox), oldest first, in this task: each in a unit of work of its own, through the
    settlement task's own use case, so each is settled exactly once. With ``older_than``
    (seconds), only those finished that long ago, so that beat's frequent sweeps leave the
    settlements still on their way to their own tasks.

    A backlog (a Redis that came back empty lost every queued task, a worker killed with
    SIGKILL took its tasks with it) is settled at the rate of the settlements themselves, not
    one queued task per match behind everything else in the queue. Each match is claimed
    with ``SKIP LOCKED``: sweeps side by side (beat's and a worker's catch-up) and the
    settlement tasks share the backlog out instead of waiting on each other. A match whose
    settlement fails is logged and left to the next sweep; after :data:`SWEEP_SECONDS` the
    rest goes to a sweep queued behind the tasks that arrived meanwhile."""
    return _settle_unsettled(older_than)


def _settle_unsettled(older_than: float) -> int:
    """Settle every unsettled match (finished ``older_than`` seconds ago), each in a unit of
    its own, for :data:`SWEEP_SECONDS` at most; how many were settled (see
    :func:`sweep_unsettled`)."""
    cutoff = utcnow() - timedelta(seconds=older_than) if older_than else None
    settled, failed = 0, set[str]()
    until = time.monotonic() + SWEEP_SECONDS
    while time.monotonic() < until:
        claimed: list[str] = []
        try:
            found = _in_unit(partial(_settle_next, cutoff=cutoff, passing=failed, claimed=claimed))
        except OperationalError:
            raise  # the database is away: the task is retried
        except Exception:
            if not claimed:
                raise
            log.exception("sweep could not settle %s", claimed[0])
            failed.add(claimed[0])
            continue
        if found is None:
            return settled
        match_id, credits = found
        if credits:  # none to look for after a transfer-mode operator's settlement
            _with_session(partial(seamless.send_credits, match_id=match_id, post=operator_sender()))
        settled += 1
    hurry("settlement.sweep", [older_than])
    return settled


#: What a worker queues each time it connects to the broker: the settlement sweep with no
#: grace (tasks a Redis that restarted empty, or a worker killed with SIGKILL, lost; first,
#: so that settling starts at once), the relay (events an outage kept from the broker) and
#: the webhook sweep (retries that came due).
CATCH_UP: tuple[str, ...] = ("settlement.sweep", "outbox.relay", "webhooks.sweep")


def catch_up(sweeps: int = 1) -> None:
    """Queue :data:`CATCH_UP`, the settlement sweep ``sweeps`` times (one per pool process:
    they share the backlog out), called by the worker's consumer on every broker connection
    (see :class:`worker.celery_app.CatchUp`). Best effort: a broker gone again meanwhile
    means another connection, and another catch-up, later."""
    for name in CATCH_UP:
        for _ in range(sweeps if name == "settlement.sweep" else 1):
            try:
                send_task(name, [])
            except Exception as exc:
                log.warning("could not queue %s after connecting: %s", name, exc)
                return


@app.task(name="ops.ping", acks_late=True, ignore_result=True)
def ping() -> str:
    """Does nothing: a worker liveness probe, and the baseline of bench/settlement.py."""
    return "pong"
