"""The one-call cashier path (service.api.cashier, migration 0006) on PostgreSQL.

Two applications share one database: ``fast`` (the default, with the fast path) and ``slow``
(``CASHIER_FAST_PATH=false``, the ordinary Flask path). Whatever answered a request, the
client must not be able to tell: same bodies, same replays, same refusals, a ledger that
verifies. The outcome counter says which path answered, so every test also checks that the
path it means to exercise was the one taken.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from service.api.cashier import CashierFastPath
from service.api.fastpath import installed
from service.ledger import store
from service.usecases.idempotency import lock_id
from tests.api.test_auth_and_errors import assert_problem
from tests.conftest import (
    ApiClient,
    CounterMoved,
    counter_values,
    make_test_app,
    new_operator,
    wait_until,
)

pytestmark = pytest.mark.skipif(
    not os.environ.get("TEST_DATABASE_URL"), reason="the fast path exists on PostgreSQL only"
)


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    from tests.conftest import throwaway_postgres

    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        fast = make_test_app(url)
        slow = make_test_app(url, CASHIER_FAST_PATH=False)
        assert any(isinstance(p, CashierFastPath) for p in installed(fast))
        assert not any(isinstance(p, CashierFastPath) for p in installed(slow))
        yield fast, slow
        fast.extensions["gin"]["engine"].dispose()
        slow.extensions["gin"]["engine"].dispose()


@pytest.fixture
def clients(apps: tuple[Any, Any]) -> tuple[ApiClient, ApiClient]:
    fast, slow = apps
    _, key = new_operator(fast)
    return ApiClient(fast.test_client(), key), ApiClient(slow.test_client(), key)


OUTCOMES = ("posted", "replay", "fallback", "declined", "error")


def outcomes() -> dict[str, float]:
    return counter_values("gin_cashier_fast_path", "outcome", OUTCOMES)


#: Asserts how many requests each outcome counted inside the ``with`` block.
Took = functools.partial(CounterMoved, "gin_cashier_fast_path", "outcome", OUTCOMES)


def money(amount: Any, currency: str = "EUR") -> dict[str, Any]:
    return {"amount": {"amount": amount, "currency": currency}}


def funded(client: ApiClient, amount: int = 1000) -> str:
    """A player whose accounts exist (the first deposit creates them on the ordinary path)."""
    pid = client.new_player()["id"]
    with Took(fallback=1):
        assert client.deposit(pid, amount).status_code == 201
    return pid


def test_the_sql_lock_id_is_the_python_one(apps: tuple[Any, Any]) -> None:
    engine = apps[0].extensions["gin"]["engine"]
    with engine.connect() as connection:
        for operator_id, key in [("op_1", "k"), ("op_01X", "ключ ü 🎲"), ("o", "x" * 255)]:
            found = connection.execute(
                text("SELECT gin_idempotency_lock_id(:o, :k)"), {"o": operator_id, "k": key}
            ).scalar()
            assert found == lock_id(operator_id, key)


def test_the_sql_lock_id_is_inlined_into_the_plan(apps: tuple[Any, Any]) -> None:
    # A SQL function that is not inlined is parsed and planned again on every call.
    engine = apps[0].extensions["gin"]["engine"]
    with engine.connect() as connection:
        plan = "\n".join(connection.execute(text(
            "EXPLAIN (VERBOSE) SELECT gin_idempotency_lock_id(k.operator_id, 'key') "
            "FROM api_keys k"
        )).scalars())
    assert "sha256" in plan and "gin_idempotency_lock_id" not in plan, plan


def test_fast_answers_look_like_the_ordinary_ones(clients: tuple[ApiClient, ApiClient]) -> None:
    fast, slow = clients
    pid = funded(fast)
    with Took(posted=2):
        deposit = fast.post(
            f"/v1/players/{pid}/deposits", money(250) | {"external_reference": "cash-1"},
            key="d1", headers={"X-Request-Id": "req-fast-1"},
        )
        withdrawal = fast.post(f"/v1/players/{pid}/withdrawals", money(50), key="w1")
    ordinary = slow.post(f"/v1/players/{pid}/deposits", money(250), key="d2")
    assert deposit.status_code == withdrawal.status_code == ordinary.status_code == 201
    assert deposit.mimetype == "application/json"
    assert deposit.headers["X-Request-Id"] == "req-fast-1"
    assert "Idempotent-Replayed" not in deposit.headers
    limits = {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}
    assert limits <= set(deposit.headers.keys())
    body, other = deposit.get_json(), ordinary.get_json()
    assert set(body) == set(other) and set(body["wallet"]) == set(other["wallet"])
    assert body["wallet"]["available"] == {"amount": 1250, "currency": "EUR"}
    assert withdrawal.get_json()["wallet"]["balance"] == {"amount": 1200, "currency": "EUR"}
    # The stored transaction, read back through the ordinary path, is the one answered.
    fetched = slow.get(f"/v1/transactions/{body['id']}").get_json()
    assert fetched == {k: v for k, v in body.items() if k != "wallet"}
    assert fetched["external_reference"] == "cash-1" and fetched["kind"] == "deposit"
    wallet = slow.get(f"/v1/players/{pid}/wallets/EUR").get_json()
    assert wallet["available"]["amount"] == 1450  # 1000 + 250 - 50 + 250


def test_replays_cross_paths_both_ways(clients: tuple[ApiClient, ApiClient]) -> None:
    fast, slow = clients
    pid = funded(fast)
    with Took(posted=1):
        first = fast.post(f"/v1/players/{pid}/deposits", money(300), key="k-fast")
    again = slow.post(f"/v1/players/{pid}/deposits", money(300), key="k-fast")
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()

    earlier = slow.post(f"/v1/players/{pid}/deposits", money(400), key="k-slow")
    with Took(replay=1):
        replayed = fast.post(f"/v1/players/{pid}/deposits", money(400), key="k-slow")
    assert replayed.status_code == 201 and replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.get_json() == earlier.get_json()

    with Took(fallback=1):  # same key, other body: the ordinary path refuses it
        assert_problem(
            fast.post(f"/v1/players/{pid}/deposits", money(401), key="k-slow"),
            422, "idempotency_key_reused",
        )
    assert slow.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 1700


def test_a_stored_refusal_is_replayed_by_the_fast_path(
    clients: tuple[ApiClient, ApiClient],
) -> None:
    fast, _ = clients
    pid = funded(fast, 100)
    with Took(fallback=1):
        refused = fast.post(f"/v1/players/{pid}/withdrawals", money(500), key="too-much")
    assert_problem(refused, 422, "insufficient_funds")
    fast.deposit(pid, 1000)
    with Took(replay=1):  # the key's answer stays the refusal, though the money is there now
        again = fast.post(f"/v1/players/{pid}/withdrawals", money(500), key="too-much")
    assert again.status_code == 422 and again.mimetype == "application/problem+json"
    assert again.get_json() == refused.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"


@pytest.mark.parametrize(
    ("setup", "path", "body", "status", "code"),
    [
        ("self_excluded", "deposits", money(100), 422, "self_excluded"),
        ("limit", "deposits", money(600), 422, "deposit_limit_exceeded"),
        ("limit", "deposits", money(400), 201, None),
        ("display", "deposits", money(100), 201, None),
        (None, "withdrawals", money(5000), 422, "insufficient_funds"),
        ("other_operator", "deposits", money(100), 404, "not_found"),
    ],
)
def test_uncommon_cases_fall_back_to_the_ordinary_path(
    clients: tuple[ApiClient, ApiClient],
    apps: tuple[Any, Any],
    setup: str | None,
    path: str,
    body: dict[str, Any],
    status: int,
    code: str | None,
) -> None:
    fast, _ = clients
    pid = funded(fast)
    if setup == "self_excluded":
        fast.put(f"/v1/players/{pid}/self-exclusion", {"until": "2099-01-01T00:00:00Z"})
    elif setup == "limit":
        limit = {"daily": {"amount": 1500, "currency": "EUR"}}
        fast.put(f"/v1/players/{pid}/deposit-limits/EUR", limit)
    elif setup == "display":
        fast.put("/v1/exchange-rates/EUR/USD", {"rate": "1.0837"})
        fast.patch(f"/v1/players/{pid}", {"display_currency": "USD"})
    elif setup == "other_operator":
        fast = ApiClient(fast.client, new_operator(apps[0], "Other")[1])
    with Took(fallback=1):
        answer = fast.post(f"/v1/players/{pid}/{path}", body, key=secrets.token_hex(6))
    if code is None:
        assert answer.status_code == status, answer.get_json()
        if setup == "display":
            assert answer.get_json()["amount"]["display"]["currency"] == "USD"
    else:
        assert_problem(answer, status, code)


@pytest.mark.parametrize(
    ("body", "headers", "status", "code"),
    [
        (money(1.5), {}, 422, "validation_failed"),
        (money(100, "XXX"), {}, 422, "validation_failed"),
        (money(100) | {"surprise": 1}, {}, 422, "validation_failed"),
        (money(100), {"Idempotency-Key": ""}, 400, "idempotency_key_required"),
        (money(100), {"Authorization": "Bearer nope"}, 401, "unauthenticated"),
    ],
)
def test_requests_the_schema_refuses_never_reach_the_database_call(
    clients: tuple[ApiClient, ApiClient],
    body: dict[str, Any],
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    fast, _ = clients
    pid = funded(fast)
    sent = {"Idempotency-Key": "k", **headers}
    if "Authorization" in headers:
        fast = fast.as_(None)
    with Took(declined=1):
        answer = fast.post(f"/v1/players/{pid}/deposits", body, headers=sent)
    assert_problem(answer, status, code)


def test_unknown_or_revoked_keys_fall_back_to_401(
    clients: tuple[ApiClient, ApiClient], apps: tuple[Any, Any]
) -> None:
    fast, _ = clients
    pid = funded(fast)
    with Took(fallback=1):
        answer = fast.as_("sk_" + secrets.token_hex(16)).post(
            f"/v1/players/{pid}/deposits", money(100), key="k"
        )
    assert_problem(answer, 401, "unauthenticated")


def test_a_database_error_is_answered_by_the_ordinary_path(
    clients: tuple[ApiClient, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow = clients
    pid = funded(fast)
    monkeypatch.setattr("service.api.cashier.CALL", "SELECT no_such_function()")
    with Took(error=1):
        answer = fast.post(f"/v1/players/{pid}/deposits", money(100), key="k")
    assert answer.status_code == 201, answer.get_json()
    assert slow.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"] == 1100


def test_rate_limits_count_each_request_once(apps: tuple[Any, Any]) -> None:
    fast = make_test_app(
        apps[0].config["DATABASE_URL"], RATELIMIT_OPERATOR="4 per minute", TESTING=True
    )
    try:
        _, key = new_operator(fast)
        client = ApiClient(fast.test_client(), key)
        pid = client.new_player()["id"]  # 1
        first = client.deposit(pid, 100)  # 2: falls back (new accounts), counted once
        second = client.deposit(pid, 100)  # 3: fast
        assert (first.status_code, second.status_code) == (201, 201)
        assert first.headers["RateLimit-Remaining"] == "2"
        assert second.headers["RateLimit-Remaining"] == "1"
        assert client.deposit(pid, 100).status_code == 201  # 4
        with Took(declined=1):
            assert_problem(client.deposit(pid, 100), 429, "rate_limited")
    finally:
        fast.extensions["gin"]["engine"].dispose()


def test_concurrent_movements_keep_the_ledger_whole(
    clients: tuple[ApiClient, ApiClient], apps: tuple[Any, Any]
) -> None:
    """Real threads on one wallet, every key sent twice at once, deposits and withdrawals mixed:
    each key moves money once, the balance is the model's, and the hash chains (written by
    the database function) verify."""
    fast, _ = clients
    pid = funded(fast, 5000)
    app = apps[0]
    answers: dict[str, list[int]] = {}
    lock = threading.Lock()

    def send(key: str, path: str, amount: int) -> None:
        client = ApiClient(app.test_client(), fast.token)
        status = client.post(f"/v1/players/{pid}/{path}", money(amount), key=key).status_code
        with lock:
            answers.setdefault(key, []).append(status)

    plan = [(f"c{i}", "deposits" if i % 3 else "withdrawals", 10 + i) for i in range(60)]
    threads = [
        threading.Thread(target=send, args=step) for step in plan for _twice in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = 5000
    for key, path, amount in plan:
        statuses = sorted(answers[key])
        assert statuses in ([201, 201], [201, 409]), (key, statuses)
        expected += amount if path == "deposits" else -amount
    wallet = fast.get(f"/v1/players/{pid}/wallets/EUR").get_json()
    assert wallet["available"]["amount"] == expected
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():
            assert store.verify(session) == []
            assert set(store.journal_totals(session).values()) == {0}
            moved = session.execute(
                text("SELECT count(*) FROM ledger_transactions WHERE player_id = :p"), {"p": pid}
            ).scalar()
        assert moved == 1 + len(plan)
    finally:
        session.close()


def test_connections_killed_under_it_never_move_money_twice(
    clients: tuple[ApiClient, ApiClient], apps: tuple[Any, Any]
) -> None:
    """PostgreSQL drops every pooled connection (a failover, a restart): the fast path's call
    fails, its connection is thrown away, and the request is answered by the ordinary path
    (a 503 to retry if its own connection was dead too). Retrying with the same key moves the
    money once."""
    fast, slow = clients
    pid = funded(fast)
    engine = apps[0].extensions["gin"]["engine"]
    before = outcomes()
    for _ in range(3):  # the pool holds several connections: kill them all, thrice
        with contextlib.ExitStack() as opened:  # several at once, so that the pool keeps them
            for _connection in range(3):
                opened.enter_context(engine.connect())
        with engine.connect() as connection:
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
        statuses = []
        for _attempt in range(5):
            answer = fast.post(f"/v1/players/{pid}/deposits", money(100), key=f"kill-{_}")
            statuses.append(answer.status_code)
            if answer.status_code == 201:
                break
            assert_problem(answer, 503, "service_unavailable")
        assert statuses[-1] == 201, statuses
    assert outcomes()["error"] > before["error"]  # the fast path did meet the dead connections
    for _attempt in range(5):  # the other application's pool was killed too
        wallet = slow.get(f"/v1/players/{pid}/wallets/EUR")
        if wallet.status_code != 503:
            break
    assert wallet.get_json()["available"]["amount"] == 1300


# Batches (migration 0012, service.api.cashier.Batches): requests that reach one process while
# its previous call runs go to the database together, in one call of cashier_post_batch().


def fast_path(app: Any) -> CashierFastPath:
    return next(p for p in installed(app) if isinstance(p, CashierFastPath))


def batch_sizes() -> tuple[float, float]:
    """``gin_cashier_batch_size``'s count and sum so far."""
    from prometheus_client import REGISTRY

    count, total = (REGISTRY.get_sample_value(f"gin_cashier_batch_size_{part}") or 0.0
                    for part in ("count", "sum"))
    return count, total


def waiting_for_locks(engine: Any) -> int:
    """Backends of this database waiting for a lock (read in a transaction of its own: a
    transaction sees pg_stat_activity as it was at its first read)."""
    with engine.connect() as connection:
        return int(connection.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock'")).scalar())


def in_one_batch(
    app: Any, token: str, held_player: str, requests: list[tuple[str, str, dict[str, Any], str]]
) -> list[Any]:
    """Sends ``requests`` (player, path, body, key) so that they reach the database as one
    batch, and returns their responses in order. A first deposit to ``held_player`` is sent
    while another connection holds that player's accounts locked, so that its call waits in
    the database; the requests are sent one by one, each seen waiting before the next, and
    then the lock is let go: the first call ends, and the waiting requests go in one call."""
    engine = app.extensions["gin"]["engine"]
    batches = fast_path(app).batches
    responses: list[Any] = [None] * (len(requests) + 1)

    def send(n: int, player: str, path: str, body: dict[str, Any], key: str) -> None:
        client = ApiClient(app.test_client(), token)
        responses[n] = client.post(f"/v1/players/{player}/{path}", body, key=key)

    threads: list[threading.Thread] = []
    with engine.connect() as blocker:
        blocker.execute(text("SELECT 1 FROM ledger_accounts WHERE player_id = :p FOR UPDATE"),
                        {"p": held_player})
        threads.append(threading.Thread(
            target=send, args=(0, held_player, "deposits", money(1), secrets.token_hex(6))))
        threads[0].start()
        wait_until(lambda: waiting_for_locks(engine) == 1, what="the first call to wait")
        for n, request in enumerate(requests, 1):
            threads.append(threading.Thread(target=send, args=(n, *request)))
            threads[-1].start()
            wait_until(lambda n=n: batches.waiting == n, what=f"{n} requests waiting")
        blocker.rollback()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    return responses[1:]


AWKWARD = 'NULL, "quoted" \\ {a,b} \u00e9\u20ac'


def test_a_batch_answers_each_request_as_it_would_alone(
    clients: tuple[ApiClient, ApiClient], apps: tuple[Any, Any]
) -> None:
    fast, slow = clients
    held, one, two, three = (funded(fast) for _ in range(4))
    stranger = ApiClient(fast.client, new_operator(apps[0], "Stranger")[1]).new_player()["id"]
    requests = [
        (one, "deposits", money(100), "b-1"),
        (one, "withdrawals", money(1050), "b-2"),  # the same player again: 1000 + 100 - 1050
        (two, "withdrawals", money(5000), "b-3"),  # too little money: the ordinary path's 422
        (three, "deposits", money(200), "b-twin"),
        (three, "deposits", money(200), "b-twin"),  # its twin, in the same batch: a replay
        (three, "deposits", money(201), "b-twin"),  # the key with another body: 422
        (stranger, "deposits", money(100), "b-4"),  # another operator's player: 404
        # What an array's text must quote and escape, in the body and in the key.
        (two, "deposits", {**money(1), "external_reference": AWKWARD}, f"b-5 {AWKWARD}"),
    ]
    count, total = batch_sizes()
    with Took(posted=5, replay=1, fallback=3):  # 5: the held deposit too
        answers = in_one_batch(apps[0], fast.token, held, requests)
    assert batch_sizes() == (count + 2, total + 1 + len(requests))  # the held call, the batch
    statuses = [a.status_code for a in answers]
    assert statuses == [201, 201, 422, 201, 201, 422, 404, 201], [a.get_json() for a in answers]
    assert answers[1].get_json()["wallet"]["available"]["amount"] == 50
    assert_problem(answers[2], 422, "insufficient_funds")
    assert answers[4].get_json() == answers[3].get_json()
    assert answers[4].headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in answers[3].headers
    assert_problem(answers[5], 422, "idempotency_key_reused")
    assert_problem(answers[6], 404, "not_found")
    assert answers[7].get_json()["external_reference"] == AWKWARD
    replayed = fast.post(f"/v1/players/{two}/deposits",
                         {**money(1), "external_reference": AWKWARD}, key=f"b-5 {AWKWARD}")
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.get_json() == answers[7].get_json()
    available = {pid: slow.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"]
                 for pid in (held, one, two, three)}
    assert available == {held: 1001, one: 50, two: 1001, three: 1200}
    session = apps[0].extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():
            assert store.verify(session) == []
            assert set(store.journal_totals(session).values()) == {0}
    finally:
        session.close()


def test_a_failed_batch_is_answered_by_the_ordinary_path(
    clients: tuple[ApiClient, ApiClient], apps: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow = clients
    held, one = funded(fast), funded(fast)
    monkeypatch.setattr("service.api.cashier.BATCH_CALL", "SELECT no_such_function()")
    with Took(posted=1, error=2):
        answers = in_one_batch(apps[0], fast.token, held, [
            (one, "deposits", money(100), "f-1"), (one, "deposits", money(10), "f-2"),
        ])
    assert [a.status_code for a in answers] == [201, 201]
    assert slow.get(f"/v1/players/{one}/wallets/EUR").get_json()["available"]["amount"] == 1110


def test_batches_of_the_same_players_in_opposite_orders_never_deadlock(
    clients: tuple[ApiClient, ApiClient], apps: tuple[Any, Any]
) -> None:
    """Two processes' batches name the same two players in opposite orders, again and again at
    the same time. Each batch locks every account it may move in id order before its first
    request runs, so neither ever waits for the other in a cycle (PostgreSQL would abort one
    after its deadlock_timeout, and its requests would take the ordinary path)."""
    from service.api.cashier import call_params
    from service.api.schemas import MovementIn
    from service.usecases.auth import hash_api_key

    fast, slow = clients
    one, two = funded(fast), funded(fast)
    path = fast_path(apps[0])
    key_hash = hash_api_key(fast.token)

    def params(player: str, key: str) -> Any:
        payload = money(1)
        return call_params("deposit", key_hash, key, f"/v1/players/{player}/deposits", payload,
                           player, MovementIn().load(payload), path.retention_seconds)

    rounds = 40
    start = threading.Barrier(2)
    rows: list[Any] = []

    def run(order: tuple[str, str], name: str) -> None:
        for n in range(rounds):
            batch = [params(player, f"{name}-{n}-{player}") for player in order]
            start.wait(10)
            rows.extend(path._call_many(batch))

    threads = [threading.Thread(target=run, args=((one, two), "a")),
               threading.Thread(target=run, args=((two, one), "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive()
    assert [row[0] for row in rows] == ["posted"] * (4 * rounds)
    for player in (one, two):
        wallet = slow.get(f"/v1/players/{player}/wallets/EUR").get_json()
        assert wallet["available"]["amount"] == 1000 + 2 * rounds


def test_a_batch_locks_no_account_after_its_first_statement(
    clients: tuple[ApiClient, ApiClient], apps: tuple[Any, Any]
) -> None:
    """Migration 0013. A batch locks its accounts in id order in its first statement. An
    account committed after that statement began (here the player's clearing account, with a
    lower id than the available account the batch waited for) is not locked by the request
    afterwards, out of id order: the request falls back to the ordinary path."""
    from service.api.cashier import call_params
    from service.api.schemas import MovementIn
    from service.ledger.chain import GENESIS
    from service.ledger.postings import AccountRef
    from service.usecases.auth import hash_api_key

    fast, slow = clients
    engine = apps[0].extensions["gin"]["engine"]
    path = fast_path(apps[0])
    player = fast.new_player()["id"]
    with engine.connect() as connection:
        operator_id = connection.execute(text("SELECT operator_id FROM players WHERE id = :p"),
                                         {"p": player}).scalar_one()
    clearing = AccountRef.cashier_clearing(operator_id, player, "EUR")
    available = AccountRef.player_available(operator_id, player, "EUR")
    insert = text(
        "INSERT INTO ledger_accounts (key, operator_id, kind, player_id, currency, balance,"
        " entry_count, last_hash, created_at) VALUES (:key, :op, :kind, :player, 'EUR', 0, 0,"
        " :genesis, now())")

    def account(ref: AccountRef) -> dict[str, Any]:
        return {"key": str(ref), "op": operator_id, "kind": ref.kind.value, "player": player,
                "genesis": GENESIS}

    payload = money(5)
    params = call_params("deposit", hash_api_key(fast.token), "late-1",
                         f"/v1/players/{player}/deposits", payload, player,
                         MovementIn().load(payload), path.retention_seconds)
    rows: list[Any] = []
    with engine.connect() as late, engine.connect() as blocker:
        late.execute(insert, account(clearing))  # the lower id, committed later
        with engine.begin() as other:
            other.execute(insert, account(available))
        blocker.execute(text("SELECT 1 FROM ledger_accounts WHERE key = :key FOR UPDATE"),
                        {"key": str(available)})
        call = threading.Thread(target=lambda: rows.extend(path._call_many([params])))
        call.start()
        wait_until(lambda: waiting_for_locks(engine) == 1, what="the batch to wait")
        late.commit()
        blocker.rollback()
        call.join(30)
        assert not call.is_alive()
    assert rows == [("fallback", None, None)]
    with Took(posted=1):  # the accounts are all there now: the one-call path posts
        assert fast.deposit(player, 5, key="late-1").status_code == 201
    assert slow.get(f"/v1/players/{player}/wallets/EUR").get_json()["available"]["amount"] == 5
