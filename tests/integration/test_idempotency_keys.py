"""Idempotency keys at the storage level: claim, replay, reuse, in flight, takeover, expiry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from service.clock import utcnow
from service.config import ConfigError, Settings
from service.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from service.usecases import idempotency
from tests.conftest import ApiClient, new_operator

DAY, MINUTE = timedelta(hours=24), timedelta(minutes=1)


@pytest.fixture
def operator_id(app: Any) -> str:
    return new_operator(app)[0]


def test_claim_then_replay(session: Any, operator_id: str) -> None:
    now = utcnow()
    assert idempotency.claim(session, operator_id, "k", "h1", now, DAY, MINUTE) is None
    with pytest.raises(IdempotencyKeyInUse):
        idempotency.claim(session, operator_id, "k", "h1", now, DAY, MINUTE)
    with pytest.raises(IdempotencyKeyReused):
        idempotency.claim(session, operator_id, "k", "h2", now, DAY, MINUTE)
    idempotency.complete(session, operator_id, "k", 201, '{"ok": true}')
    stored = idempotency.claim(session, operator_id, "k", "h1", now, DAY, MINUTE)
    assert stored == idempotency.StoredResponse(201, '{"ok": true}')


def test_a_stale_claim_can_be_taken_over(session: Any, operator_id: str) -> None:
    now = utcnow()
    idempotency.claim(session, operator_id, "k", "h", now, DAY, MINUTE)
    with pytest.raises(IdempotencyKeyInUse):
        idempotency.claim(session, operator_id, "k", "h", now + MINUTE / 2, DAY, MINUTE)
    assert idempotency.claim(session, operator_id, "k", "h", now + 2 * MINUTE, DAY, MINUTE) is None


def test_released_claims_can_be_retried(session: Any, operator_id: str) -> None:
    now = utcnow()
    idempotency.claim(session, operator_id, "k", "h", now, DAY, MINUTE)
    idempotency.release(session, operator_id, "k")
    assert idempotency.claim(session, operator_id, "k", "other", now, DAY, MINUTE) is None


def test_keys_are_kept_for_the_retention_then_expire(session: Any, operator_id: str) -> None:
    now = utcnow()
    idempotency.claim(session, operator_id, "k", "h", now, DAY, MINUTE)
    idempotency.complete(session, operator_id, "k", 201, "{}")
    just_before = now + DAY - timedelta(seconds=1)
    with pytest.raises(IdempotencyKeyReused):
        idempotency.claim(session, operator_id, "k", "new", just_before, DAY, MINUTE)
    assert idempotency.claim(session, operator_id, "k", "new", now + DAY, DAY, MINUTE) is None
    idempotency.complete(session, operator_id, "k", 201, "{}")
    assert idempotency.purge_expired(session, now + 3 * DAY) >= 1
    assert idempotency.claim(session, operator_id, "k", "again", now + 3 * DAY, DAY, MINUTE) is None


def test_retention_is_configurable_but_never_below_24_hours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IDEMPOTENCY_RETENTION_HOURS", "72")
    assert Settings.from_env().idempotency_retention_hours == 72
    monkeypatch.setenv("IDEMPOTENCY_RETENTION_HOURS", "23")
    with pytest.raises(ConfigError):
        Settings.from_env()


def test_in_flight_twin_gets_409_over_http(app: Any, api: ApiClient) -> None:
    pid = api.new_player()["id"]
    body = {"amount": {"amount": 100, "currency": "EUR"}}
    path = f"/v1/players/{pid}/deposits"
    digest = idempotency.request_hash("POST", path, body)
    session = app.extensions["gin"]["sessionmaker"]()
    # The twin's claim, as if its first request were still running.
    idempotency.claim(session, api.operator_id, "busy", digest, utcnow(), DAY, MINUTE)  # type: ignore[attr-defined]
    session.close()
    response = api.post(path, body, key="busy")
    assert response.status_code == 409 and response.get_json()["code"] == "idempotency_key_in_use"
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 0


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
