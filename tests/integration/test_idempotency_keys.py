"""Idempotency keys at the storage level: claim, replay, reuse, in flight, rollback, expiry."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pytest

from service.clock import utcnow
from service.config import ConfigError, Settings
from service.errors import IdempotencyKeyReused
from service.usecases import idempotency
from tests.conftest import ApiClient, new_operator

DAY = timedelta(hours=24)


@pytest.fixture
def operator_id(app: Any) -> str:
    return new_operator(app)[0]


def _claim(session: Any, operator_id: str, key: str, digest: str, now: Any) -> Any:
    with session.begin():
        return idempotency.claim(session, operator_id, key, digest, now)


def _store(session: Any, operator_id: str, key: str, digest: str, now: Any, body: str) -> Any:
    with session.begin():
        assert idempotency.claim(session, operator_id, key, digest, now) is None
        return idempotency.record(session, operator_id, key, digest, 201, body, now, DAY)


def test_claim_then_replay(session: Any, operator_id: str) -> None:
    now = utcnow()
    assert _claim(session, operator_id, "k", "h1", now) is None  # nothing stored yet
    assert _store(session, operator_id, "k", "h1", now, '{"ok": true}') is None
    stored = _claim(session, operator_id, "k", "h1", now)
    assert stored == idempotency.StoredResponse(201, '{"ok": true}')
    with pytest.raises(IdempotencyKeyReused):
        _claim(session, operator_id, "k", "h2", now)


def test_a_request_that_dies_leaves_no_claim(session: Any, operator_id: str) -> None:
    """Claim, work and answer commit together: a crash rolls all of it back, so the retry
    runs as if the first attempt never happened (no stale claim to wait out)."""
    now = utcnow()
    with pytest.raises(RuntimeError), session.begin():
        assert idempotency.claim(session, operator_id, "k", "h", now) is None
        idempotency.record(session, operator_id, "k", "h", 201, "{}", now, DAY)
        raise RuntimeError("the worker died before committing")
    assert _claim(session, operator_id, "k", "other", now) is None


def test_a_losing_twin_gets_the_stored_answer(session: Any, operator_id: str) -> None:
    now = utcnow()
    _store(session, operator_id, "k", "h", now, '{"first": true}')
    with session.begin():
        again = idempotency.record(session, operator_id, "k", "h", 422, "{}", now, DAY)
    assert again == idempotency.StoredResponse(201, '{"first": true}')
    with pytest.raises(IdempotencyKeyReused), session.begin():
        idempotency.record(session, operator_id, "k", "other", 422, "{}", now, DAY)


def test_keys_are_kept_for_the_retention_then_expire(session: Any, operator_id: str) -> None:
    now = utcnow()
    _store(session, operator_id, "k", "h", now, "{}")
    just_before = now + DAY - timedelta(seconds=1)
    with pytest.raises(IdempotencyKeyReused):
        _claim(session, operator_id, "k", "new", just_before)
    assert _claim(session, operator_id, "k", "new", now + DAY) is None
    _store(session, operator_id, "k", "new", now + DAY, "{}")
    assert idempotency.purge_expired(session, now + 3 * DAY) >= 1
    assert _claim(session, operator_id, "k", "again", now + 3 * DAY) is None


def test_retention_is_configurable_but_never_below_24_hours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IDEMPOTENCY_RETENTION_HOURS", "72")
    assert Settings.from_env().idempotency_retention_hours == 72
    monkeypatch.setenv("IDEMPOTENCY_RETENTION_HOURS", "23")
    with pytest.raises(ConfigError):
        Settings.from_env()


@pytest.mark.skipif(
    not os.environ.get("TEST_DATABASE_URL"),
    reason="PostgreSQL only: SQLite serialises writers, so there a twin waits, then replays",
)
def test_in_flight_twin_gets_409_over_http(app: Any, api: ApiClient) -> None:
    from sqlalchemy import text

    pid = api.new_player()["id"]
    body = {"amount": {"amount": 100, "currency": "EUR"}}
    path = f"/v1/players/{pid}/deposits"
    engine = app.extensions["gin"]["engine"]
    lock = idempotency.lock_id(api.operator_id, "busy")  # type: ignore[attr-defined]
    with engine.connect() as twin:  # the twin's request, still running, holds the key's lock
        twin.execute(text("SELECT pg_advisory_lock(:id)"), {"id": lock})
        response = api.post(path, body, key="busy")
        assert response.status_code == 409
        assert response.get_json()["code"] == "idempotency_key_in_use"
        twin.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": lock})
        twin.commit()
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 0
    retried = api.post(path, body, key="busy")  # once the twin is gone, the key is free
    assert retried.status_code == 201
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 100


def test_ledger_keeps_keys_even_after_http_expiry(app: Any, api: ApiClient) -> None:
    """After the HTTP record is gone, the ledger still moves a key's money only once."""
    from sqlalchemy import delete

    from service.db.models import IdempotencyRecord

    pid = api.new_player()["id"]
    first = api.deposit(pid, 100, key="long-ago")
    session = app.extensions["gin"]["sessionmaker"]()
    with session.begin():
        session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.key == "long-ago"))
    session.close()
    again = api.deposit(pid, 100, key="long-ago")
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json()["id"] == first.get_json()["id"]
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 100
