"""Celery tasks: thin, taking ids or nothing, idempotent; each calls one use case."""

from __future__ import annotations

from service.clock import utcnow
from service.config import Settings
from service.db import make_engine, make_sessionmaker
from service.usecases.idempotency import purge_expired
from worker.celery_app import app


@app.task(name="idempotency.purge_expired", acks_late=True, ignore_result=True)
def purge_expired_idempotency_keys() -> int:
    """Delete idempotency keys past their retention (IDEMPOTENCY_RETENTION_HOURS, >= 24).

    Safe to run any number of times; the ledger keeps each money movement's key for good.
    """
    engine = make_engine(Settings.from_env().database_url)
    session = make_sessionmaker(engine)()
    try:
        return purge_expired(session, utcnow())
    finally:
        session.close()
        engine.dispose()
