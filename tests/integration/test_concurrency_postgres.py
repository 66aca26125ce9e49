"""Concurrency on PostgreSQL through the HTTP API.

Sixteen clients hammer three hot wallets with random deposits and withdrawals over real HTTP
(a threaded server on a socket), each request sent twice at the same moment with the same
Idempotency-Key; beside them, threads place holds through the use case, also in twins. Then:
balances equal a model built from the answers, none is negative, each key moved money at most
once, the journal sums to zero, and the hash chains verify.

Runs only with TEST_DATABASE_URL (CI sets it), on a database of its own that it drops after.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import text
from werkzeug.serving import make_server

from service.clock import utcnow
from service.errors import InsufficientFunds
from service.ledger import store
from service.usecases import wallets
from tests.conftest import make_test_app, new_operator, throwaway_postgres

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"),
]

CLIENTS = 16
OPS_PER_CLIENT = 20
HOLD_CLIENTS = 4
HOLDS_PER_CLIENT = 10
HOT_WALLETS = 3


@dataclass
class Outcome:
    key: str
    kind: str
    player: str
    amount: int
    answers: list[tuple[int, dict[str, Any], bool]] = field(default_factory=list)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Any, int, str]]:
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        app = make_test_app(url, DB_POOL_SIZE=40)
        httpd = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield app, httpd.server_port, url
        finally:
            httpd.shutdown()
            thread.join()
            app.extensions["gin"]["engine"].dispose()


def _send(port: int, method: str, path: str, token: str, body: Any = None,
          key: str | None = None) -> tuple[int, dict[str, Any], bool]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    try:
        connection.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        payload = json.loads(response.read() or b"{}")
        return response.status, payload, response.getheader("Idempotent-Replayed") == "true"
    finally:
        connection.close()


def test_twin_requests_from_16_clients_move_money_exactly_once(
    server: tuple[Any, int, str],
) -> None:
    app, port, _url = server
    operator_id, token = new_operator(app)
    players = []
    for i in range(HOT_WALLETS):
        status, body, _ = _send(port, "POST", "/v1/players", token,
                                {"external_id": f"hot-{i}", "display_name": f"Hot {i}"})
        assert status == 201, body
        players.append(body["id"])

    rng = random.Random(20261201)
    plans: list[list[Outcome]] = []
    for client in range(CLIENTS):
        plan = []
        for n in range(OPS_PER_CLIENT):
            kind = rng.choice(["deposit", "deposit", "withdrawal"])
            amount = rng.randint(1, 500) if kind == "deposit" else rng.randint(1, 900)
            plan.append(Outcome(f"c{client}-{n}", kind, rng.choice(players), amount))
        plans.append(plan)
    hold_plans = [
        [Outcome(f"h{client}-{n}", "hold", rng.choice(players), rng.randint(1, 300))
         for n in range(HOLDS_PER_CLIENT)]
        for client in range(HOLD_CLIENTS)
    ]
    errors: list[BaseException] = []

    def http_twin(plan: list[Outcome], barrier: threading.Barrier, lock: threading.Lock) -> None:
        try:
            for op in plan:
                barrier.wait(timeout=60)
                path = f"/v1/players/{op.player}/{op.kind}s"
                body = {"amount": {"amount": op.amount, "currency": "EUR"}}
                answer = _send(port, "POST", path, token, body, op.key)
                with lock:
                    op.answers.append(answer)
        except BaseException as error:  # surfaced by the main thread
            errors.append(error)
            barrier.abort()

    def hold_twin(plan: list[Outcome], barrier: threading.Barrier, lock: threading.Lock) -> None:
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            for op in plan:
                barrier.wait(timeout=60)
                try:
                    moved = wallets.hold(session, operator_id, op.player, "mch_hot", "EUR",
                                         op.amount, op.key, utcnow())
                    answer = (201, {"id": moved.transaction.id}, moved.replayed)
                except InsufficientFunds:
                    answer = (422, {"code": "insufficient_funds"}, False)
                with lock:
                    op.answers.append(answer)
        except BaseException as error:
            errors.append(error)
            barrier.abort()
        finally:
            session.close()

    threads = []
    for plan in plans:
        barrier, lock = threading.Barrier(2), threading.Lock()
        threads += [threading.Thread(target=http_twin, args=(plan, barrier, lock))
                    for _ in range(2)]
    for plan in hold_plans:
        barrier, lock = threading.Barrier(2), threading.Lock()
        threads += [threading.Thread(target=hold_twin, args=(plan, barrier, lock))
                    for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert all(not thread.is_alive() for thread in threads)

    # Each pair of twins: one final answer at least; a second final answer is the same one.
    moved: dict[str, Outcome] = {}
    statuses: Counter[int] = Counter()
    for op in [op for plan in plans + hold_plans for op in plan]:
        assert len(op.answers) == 2, op
        finals = [a for a in op.answers if a[0] != 409]
        statuses.update(a[0] for a in op.answers)
        assert finals, f"{op.key}: both twins were told the key is in use"
        for status, body, _replayed in op.answers:
            assert status in (201, 409, 422), (op.key, status, body)
            if status == 409:
                assert body["code"] == "idempotency_key_in_use"
            if status == 422:
                assert body["code"] == "insufficient_funds", body
        if op.kind != "hold" and len(finals) == 2:
            assert finals[0][1] == finals[1][1], op.key
            assert sum(1 for a in finals if a[2]) >= 1, f"{op.key}: no replay marked"
        ids = {a[1]["id"] for a in finals if a[0] == 201}
        assert len(ids) <= 1, f"{op.key} moved money twice: {ids}"
        if ids:
            moved[op.key] = op
    # money moved, refusals happened, and twins really collided
    assert statuses[201] > 0 and statuses[422] > 0 and statuses[409] > 0, statuses

    # Every key's later retry replays its first answer (409s included).
    for op in [op for plan in plans for op in plan]:
        final = next(a for a in op.answers if a[0] != 409)
        status, body, replayed = _send(port, "POST", f"/v1/players/{op.player}/{op.kind}s",
                                       token, {"amount": {"amount": op.amount, "currency": "EUR"}},
                                       op.key)
        assert (status, body, replayed) == (final[0], final[1], True), op.key

    # Balances equal the model.
    available: dict[str, int] = defaultdict(int)
    held: dict[str, int] = defaultdict(int)
    for op in moved.values():
        sign = {"deposit": 1, "withdrawal": -1, "hold": -1}[op.kind]
        available[op.player] += sign * op.amount
        if op.kind == "hold":
            held[op.player] += op.amount
    for player in players:
        status, wallet, _ = _send(port, "GET", f"/v1/players/{player}/wallets/EUR", token)
        assert status == 200
        assert wallet["available"]["amount"] == available[player] >= 0, player
        assert wallet["held"]["amount"] == held[player], player

    session = app.extensions["gin"]["sessionmaker"]()
    with session.begin():
        per_key = dict(session.execute(text(
            "SELECT idempotency_key, count(*) FROM ledger_transactions "
            "WHERE operator_id = :op GROUP BY idempotency_key"
        ), {"op": operator_id}).all())
        negative = session.execute(text(
            "SELECT count(*) FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id "
            "WHERE a.kind <> 'operator_clearing' AND (e.balance_after < 0 OR a.balance < 0)"
        )).scalar_one()
        totals = store.journal_totals(session, operator_id)
        problems = store.verify(session, operator_id)
    session.close()
    assert set(per_key) == set(moved) and set(per_key.values()) == {1}
    assert negative == 0
    assert totals == {"EUR": 0}
    assert problems == []
