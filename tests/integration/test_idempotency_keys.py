"""Idempotency keys at the storage level: claim, replay, reuse, in flight, rollback, expiry."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from service.clock import utcnow
from service.config import ConfigError, Settings
from service.errors import IdempotencyKeyReused
from service.usecases import idempotency
from tests.api.play_clients import open_table, player_client
from tests.conftest import ApiClient, in_unit, new_operator, wait_until

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
    assert in_unit(session, idempotency.purge_expired, now + 3 * DAY) >= 1
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

    from service.db.models import IdempotencyRow

    pid = api.new_player()["id"]
    first = api.deposit(pid, 100, key="long-ago")
    session = app.extensions["gin"]["sessionmaker"]()
    with session.begin():
        session.execute(delete(IdempotencyRow).where(IdempotencyRow.key == "long-ago"))
    session.close()
    again = api.deposit(pid, 100, key="long-ago")
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json()["id"] == first.get_json()["id"]
    assert api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 100


# --- What a key stores: only a use case's decision (API_CONVENTIONS, Idempotency) ---------------


def test_an_unknown_resource_in_the_path_leaves_the_key_unused(api: ApiClient) -> None:
    """Before: the 404 was stored, and the corrected retry got 422 idempotency_key_reused."""
    pid = api.new_player()["id"]
    wrong = api.post(
        "/v1/players/ply_nobody/deposits",
        {"amount": {"amount": 100, "currency": "EUR"}},
        key="fix-me",
    )
    assert wrong.status_code == 404
    corrected = api.deposit(pid, 100, key="fix-me")
    assert corrected.status_code == 201, corrected.get_json()
    assert "Idempotent-Replayed" not in corrected.headers


def test_refusals_of_the_request_itself_leave_the_key_unused(api: ApiClient) -> None:
    """Authentication, another player's resource, a private table without its invite code,
    a buy-in the table refuses: each can be corrected and sent again with the same key."""
    pid = api.new_player()["id"]
    body = {"amount": {"amount": 100, "currency": "EUR"}}
    assert (
        api.as_("sk_wrong").post(f"/v1/players/{pid}/deposits", body, key="same").status_code == 401
    )
    table = open_table(api, private=True)
    player = player_client(api, deposit=1000)
    path = f"/v1/tables/{table['id']}/seats"
    assert player.post(path, {}, key="seat").status_code == 403  # no invite code
    money_table = open_table(
        api, format="money_play", stake=0, stake_per_point=1, min_buyin=100, max_buyin=500
    )
    money_path = f"/v1/tables/{money_table['id']}/seats"
    refused = player.post(money_path, {"buyin": 5000}, key="buyin")
    assert refused.status_code == 422 and refused.get_json()["code"] == "validation_failed"
    assert api.post(f"/v1/players/{pid}/deposits", body, key="same").status_code == 201
    seated = player.post(path, {"invite_code": table["invite_code"]}, key="seat")
    assert seated.status_code == 201, seated.get_json()
    bought = player.post(money_path, {"buyin": 200}, key="buyin")
    assert bought.status_code == 201, bought.get_json()


def test_a_use_cases_refusal_is_the_keys_answer(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    path = f"/v1/players/{pid}/withdrawals"
    body = {"amount": {"amount": 500, "currency": "EUR"}}
    assert api.post(path, body, key="short").get_json()["code"] == "insufficient_funds"
    api.deposit(pid, 1000)
    again = api.post(path, body, key="short")
    assert again.get_json()["code"] == "insufficient_funds"
    assert again.headers["Idempotent-Replayed"] == "true"


def test_problems_name_the_key_the_player_sent(api: ApiClient) -> None:
    """A player's keys are stored under the player's id (and hashed); a problem shows only
    the caller's key. Before: 'ply_...:52fd...'."""
    player = player_client(api, deposit=1000)
    first, second = open_table(api), open_table(api)
    assert player.post(f"/v1/tables/{first['id']}/seats", {}, key="mine").status_code == 201
    reused = player.post(f"/v1/tables/{second['id']}/seats", {}, key="mine")
    problem = reused.get_json()
    assert reused.status_code == 422 and problem["code"] == "idempotency_key_reused"
    assert problem["detail"] == "Idempotency key 'mine' was already used for a different request."
    assert player.player_id not in reused.get_data(as_text=True)  # type: ignore[attr-defined]


# --- PostgreSQL: a twin never waits for another (real parallel clients) ----------------------

postgres_only = pytest.mark.skipif(
    not os.environ.get("TEST_DATABASE_URL"),
    reason="PostgreSQL only: SQLite serialises writers, so there a twin waits, then replays",
)


@pytest.fixture(scope="module")
def port(app: Any) -> Iterator[int]:
    """``app`` served on a socket by a threaded server: requests run in parallel."""
    from werkzeug.serving import make_server

    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_port
    httpd.shutdown()
    thread.join()


def _waiting_locks(app: Any, locktype: str | None = None) -> int:
    from sqlalchemy import text

    with app.extensions["gin"]["engine"].connect() as connection:
        return int(
            connection.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted"
                    " AND (CAST(:type AS text) IS NULL OR locktype = :type)"
                ),
                {"type": locktype},
            ).scalar_one()
        )


@postgres_only
def test_a_refused_request_finds_its_key_taken_again_and_answers_409_at_once(
    app: Any, api: ApiClient, port: int
) -> None:
    """A seat refused by its use case (insufficient funds) stores its refusal in a new
    transaction, taking the key again. A twin that took the key in between is running and its
    answer will be the key's: the refused request answers 409 at once. Before: it waited for
    the key (pg_advisory_xact_lock, no timeout) as long as the twin ran."""
    from sqlalchemy import select, text

    from service.db.match_models import GameTable
    from tests.integration.workers import send

    table = open_table(api, stake=500)
    player = player_client(api, deposit=100)
    seat_path = f"/v1/tables/{table['id']}/seats"
    engine = app.extensions["gin"]["engine"]
    lock = idempotency.lock_id(api.operator_id, "K", player.player_id)  # type: ignore[attr-defined]
    answer: dict[str, Any] = {}

    def seat() -> None:
        answer["response"] = send(port, "POST", seat_path, player.token or "", {}, key="K")
        answer["at"] = time.monotonic()

    table_lock, twin = engine.connect(), engine.connect()
    twin_holds = threading.Event()

    def twin_takes_the_key() -> None:  # queued behind the first request's lock on the key
        twin.execute(text("SELECT pg_advisory_lock(:id)"), {"id": lock})
        twin_holds.set()

    first = threading.Thread(target=seat)
    second = threading.Thread(target=twin_takes_the_key)
    try:
        table_lock.execute(select(GameTable).where(GameTable.id == table["id"]).with_for_update())
        first.start()  # claims the key, then waits for the table's row
        wait_until(lambda: _waiting_locks(app) >= 1, what="the seat waiting for its table")
        second.start()
        wait_until(lambda: _waiting_locks(app, "advisory") >= 1, what="the twin queued")
        released = time.monotonic()
        table_lock.rollback()  # the seat goes on: refused, rolled back, the twin has the key
        assert twin_holds.wait(10)
        first.join(10)
        assert not first.is_alive(), "the refused request waited for its twin"
        status, body, _replayed = answer["response"]
        assert status == 409 and body["code"] == "idempotency_key_in_use", body
        assert body["detail"] == ("A request with idempotency key 'K' is still being processed.")
        assert answer["at"] - released < 5
    finally:
        table_lock.close()
        second.join(30)
        if twin_holds.is_set():
            twin.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": lock})
        twin.close()
        first.join(30)
    # The twin gone, the key's answer is the use case's (stored, then replayed).
    status, body, replayed = send(port, "POST", seat_path, player.token or "", {}, key="K")
    assert (status, body["code"], replayed) == (422, "insufficient_funds", False)
    status, body, replayed = send(port, "POST", seat_path, player.token or "", {}, key="K")
    assert (status, body["code"], replayed) == (422, "insufficient_funds", True)
    with engine.connect() as connection:
        assert (
            connection.execute(
                text("SELECT count(*) FROM seats WHERE table_id = :t"), {"t": table["id"]}
            ).scalar_one()
            == 0
        )


def _at_once(clients: int, send: Any) -> list[tuple[float, int, dict[str, Any], bool]]:
    """``send()`` from ``clients`` threads released together: (seconds, status, body,
    replayed) of each."""
    barrier = threading.Barrier(clients)
    answers: list[tuple[float, int, dict[str, Any], bool]] = []

    def client() -> None:
        barrier.wait()
        started = time.monotonic()
        status, body, replayed = send()
        answers.append((time.monotonic() - started, status, body, replayed))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return answers


@postgres_only
@pytest.mark.timing
def test_twin_seats_from_parallel_clients_answer_promptly(
    app: Any, api: ApiClient, port: int
) -> None:
    """Four clients send the same seat request (one key) at the same moment, round after
    round: every answer comes promptly, the first's 201 or its replay, or 409 while the first
    runs; one seat is taken and its stake held once."""
    from tests.integration.workers import send

    clients, stake = 4, 100
    for round_ in range(8):
        table = open_table(api, stake=stake)
        player = player_client(api, deposit=1000)
        path, token, key = f"/v1/tables/{table['id']}/seats", player.token or "", f"seat-{round_}"
        answers = _at_once(clients, lambda: send(port, "POST", path, token, {}, key=key))  # noqa: B023
        assert len(answers) == clients
        assert max(seconds for seconds, *_ in answers) < 3, answers
        firsts = [a for a in answers if a[1] == 201 and not a[3]]
        assert len(firsts) == 1, answers
        for _seconds, status, body, _replayed in answers:
            assert (status == 201 and body == firsts[0][2]) or (
                status == 409 and body["code"] == "idempotency_key_in_use"
            ), body
        seats = api.get(f"/v1/tables/{table['id']}").get_json()["seats"]
        assert [s["player_id"] for s in seats] == [player.player_id]  # type: ignore[attr-defined]
        wallet = api.get(f"/v1/players/{player.player_id}/wallets/EUR")  # type: ignore[attr-defined]
        assert wallet.get_json()["available"]["amount"] == 1000 - stake


def test_a_key_hold_lasts_until_released_or_its_holder_dies(app: Any) -> None:
    """A request's :class:`idempotency.KeyHold` (a PostgreSQL advisory lock, or a lock in a
    file beside a SQLite database): its twin cannot take the key while it is held, another
    key can; it is free again once released, or as soon as what holds it (the connection,
    the open file) is gone without letting go, as when its process dies."""
    engine = app.extensions["gin"]["engine"]
    held, twin, other = (idempotency.KeyHold(engine) for _ in range(3))
    try:
        assert held.take("op_1", "seat-1", player_id="ply_1") is True
        assert held.take("op_1", "seat-1", player_id="ply_1") is True  # held already
        assert twin.take("op_1", "seat-1", player_id="ply_1") is False
        assert other.take("op_1", "seat-1", player_id="ply_2") is True
        held.release()
        assert twin.take("op_1", "seat-1", player_id="ply_1") is True
        # The holder's process dies: its connection or file closes without a word.
        if twin._connection is not None:
            twin._connection.connection.dbapi_connection.close()  # type: ignore[union-attr]
        else:
            assert twin._fd is not None
            os.close(twin._fd)
            twin._fd = None
        after = idempotency.KeyHold(engine)
        wait_until(
            lambda: after.take("op_1", "seat-1", player_id="ply_1") is True,
            5,
            "the dead holder's lock to go",
        )
        after.release()
    finally:
        for hold in (held, twin, other):
            hold.release()


def test_an_in_memory_database_cannot_hold_keys() -> None:
    from sqlalchemy import create_engine

    engine = create_engine("sqlite://")
    try:
        assert idempotency.KeyHold(engine).take("op_1", "seat-1") is None
    finally:
        engine.dispose()
