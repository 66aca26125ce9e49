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
    day = timedelta(hours=24)
    with session.begin():
        for key, at in (("old", long_ago), ("new", utcnow())):
            idempotency.record(session, operator_id, key, "h", 201, "{}", at, day)
    assert purge_expired_idempotency_keys.apply().get() >= 1
    with session.begin():
        assert idempotency.claim(session, operator_id, "new", "h", utcnow()) is not None
        assert idempotency.claim(session, operator_id, "old", "h", utcnow()) is None
    session.close()


def test_clock_and_fill_tasks_run_their_use_cases(
    app: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The beat tasks are registered, scheduled, and act on due matches and tables."""
    from service.usecases import tables
    from tests.api.play_clients import join, open_table, player_client
    from tests.conftest import ApiClient
    from worker.celery_app import app as celery_app
    from worker.tasks import cancel_unfilled_tables, enforce_clocks

    schedule = {entry["task"] for entry in celery_app.conf.beat_schedule.values()}
    assert {"matches.enforce_clocks", "tables.cancel_unfilled"} <= schedule
    monkeypatch.setenv("DATABASE_URL", database_url)
    _operator_id, key = new_operator(app)
    api = ApiClient(app.test_client(), key)
    # A match whose clock already ran out, and a table whose fill deadline has passed.
    table = open_table(api, clock={"turn_seconds": 1, "bank_seconds": 0, "max_timeouts": 5})
    for client in (player_client(api), player_client(api)):
        assert join(client, table["id"]).status_code == 201
    lonely = open_table(api, clock={"fill_timeout_seconds": 1})
    alice = player_client(api, deposit=1000)
    assert join(alice, lonely["id"]).status_code == 201
    held = api.get(f"/v1/players/{alice.player_id}/wallets/EUR").get_json()  # type: ignore[attr-defined]
    assert held["held"]["amount"] == 500
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        later = utcnow() + timedelta(seconds=3)
        monkeypatch.setattr("worker.tasks.utcnow", lambda: later)
        assert enforce_clocks.apply().get() >= 1
        assert cancel_unfilled_tables.apply().get() >= 1
        # Each run cancels a batch; tables other tests of this database left may be due too.
        while cancel_unfilled_tables.apply().get():
            pass
        assert tables.cancel_unfilled(session, later) == 0  # nothing left to do
    finally:
        session.close()
    view = api.get(f"/v1/matches/{table['match_id']}").get_json()
    assert view["scores"]["timeouts"] != [0, 0]
    assert api.get(f"/v1/tables/{lonely['id']}").get_json()["status"] == "cancelled"
    wallet = api.get(f"/v1/players/{alice.player_id}/wallets/EUR").get_json()  # type: ignore[attr-defined]
    assert wallet["held"]["amount"] == 0 and wallet["available"]["amount"] == 1000
