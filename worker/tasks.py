"""Celery tasks: thin, taking ids or nothing, idempotent; each calls one use case."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TypeVar

from sqlalchemy.orm import Session, sessionmaker

from service.clock import utcnow
from service.config import Settings
from service.db import make_engine, make_sessionmaker
from service.usecases import play, tables
from service.usecases.idempotency import purge_expired
from worker.celery_app import app

T = TypeVar("T")


@cache
def _sessions(url: str) -> sessionmaker[Session]:
    """One engine (and pool) per database and worker process, built on first use."""
    return make_sessionmaker(make_engine(url, pool_size=2))


def _with_session(work: Callable[[Session], T]) -> T:
    session = _sessions(Settings.from_env().database_url)()
    try:
        return work(session)
    finally:
        session.close()


@app.task(name="idempotency.purge_expired", acks_late=True, ignore_result=True)
def purge_expired_idempotency_keys() -> int:
    """Delete idempotency keys past their retention (IDEMPOTENCY_RETENTION_HOURS, >= 24).

    Safe to run any number of times; the ledger keeps each money movement's key for good.
    """
    return _with_session(lambda session: purge_expired(session, utcnow()))


@app.task(name="matches.enforce_clocks", acks_late=True, ignore_result=True)
def enforce_clocks() -> int:
    """Act for every player whose turn clock and bank ran out (RULES.md 9.2). Each match is
    re-checked under its row lock, so a player's action that got in first wins and running
    this twice at once changes nothing twice."""
    return _with_session(lambda session: play.run_timeouts(session, utcnow()))


@app.task(name="tables.cancel_unfilled", acks_late=True, ignore_result=True)
def cancel_unfilled_tables() -> int:
    """Cancel tables whose seats did not fill in time and refund every seat (RULES.md 9.6)."""
    return _with_session(lambda session: tables.cancel_unfilled(session, utcnow()))
