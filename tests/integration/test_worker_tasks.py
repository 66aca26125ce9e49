"""The idempotency purge task removes only keys past their retention."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from service.clock import utcnow
from service.usecases import idempotency
from tests.conftest import new_operator


def test_purge_task_deletes_only_expired_keys(
    app: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worker.celery_app import app as celery_app
    from worker.tasks import purge_expired_idempotency_keys

    assert "idempotency.purge_expired" in celery_app.tasks
    monkeypatch.setenv("DATABASE_URL", database_url)
    operator_id, _ = new_operator(app)
    session = app.extensions["gin"]["sessionmaker"]()
    long_ago = utcnow() - timedelta(hours=48)
    day, minute = timedelta(hours=24), timedelta(minutes=1)
    idempotency.claim(session, operator_id, "old", "h", long_ago, day, minute)
    idempotency.claim(session, operator_id, "new", "h", utcnow(), day, minute)
    assert purge_expired_idempotency_keys.apply().get() >= 1
    with pytest.raises(idempotency.IdempotencyKeyInUse):
        idempotency.claim(session, operator_id, "new", "h", utcnow(), day, minute)
    assert idempotency.claim(session, operator_id, "old", "h", utcnow(), day, minute) is None
    session.close()
