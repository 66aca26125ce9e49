"""Concurrency on PostgreSQL through the HTTP API.

Sixteen clients hammer three hot wallets with random deposits and withdrawals over real HTTP
(a threaded server on a socket), each request sent twice at the same moment with the same
Idempotency-Key; beside them, threads place holds through the use case, also in twins. Then:
balances equal a model built from the answers, none is negative, each key moved money at most
once, the journal sums to zero, and the hash chains verify.

Runs only with TEST_DATABASE_URL (CI sets it), on a database of its own that it drops after.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import text
from werkzeug.serving import make_server

from service.clock import utcnow
from service.db.models import Player
from service.errors import InsufficientFunds
from service.ids import new_id
from service.ledger import store
from service.ledger.chain import GENESIS
from service.ledger.postings import AccountRef
from service.usecases import players, wallets
from service.usecases.auth import Principal
from tests.conftest import in_unit, make_test_app, new_operator, throwaway_postgres
from tests.integration.workers import send

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


def test_twin_requests_from_16_clients_move_money_exactly_once(
    server: tuple[Any, int, str],
) -> None:
    app, port, _url = server
    operator_id, token = new_operator(app)
    players = []
    for i in range(HOT_WALLETS):
        status, body, _ = send(
            port,
            "POST",
            "/v1/players",
            token,
            {"external_id": f"hot-{i}", "display_name": f"Hot {i}"},
        )
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
        [
            Outcome(f"h{client}-{n}", "hold", rng.choice(players), rng.randint(1, 300))
            for n in range(HOLDS_PER_CLIENT)
        ]
        for client in range(HOLD_CLIENTS)
    ]
    errors: list[BaseException] = []

    def http_twin(plan: list[Outcome], barrier: threading.Barrier, lock: threading.Lock) -> None:
        try:
            for op in plan:
                barrier.wait(timeout=60)
                path = f"/v1/players/{op.player}/{op.kind}s"
                body = {"amount": {"amount": op.amount, "currency": "EUR"}}
                answer = send(port, "POST", path, token, body, op.key)
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
                    moved = in_unit(
                        session,
                        wallets.hold,
                        operator_id,
                        op.player,
                        "mch_hot",
                        "EUR",
                        op.amount,
                        op.key,
                        utcnow(),
                    )
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
        threads += [
            threading.Thread(target=http_twin, args=(plan, barrier, lock)) for _ in range(2)
        ]
    for plan in hold_plans:
        barrier, lock = threading.Barrier(2), threading.Lock()
        threads += [
            threading.Thread(target=hold_twin, args=(plan, barrier, lock)) for _ in range(2)
        ]
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
        status, body, replayed = send(
            port,
            "POST",
            f"/v1/players/{op.player}/{op.kind}s",
            token,
            {"amount": {"amount": op.amount, "currency": "EUR"}},
            op.key,
        )
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
        status, wallet, _ = send(port, "GET", f"/v1/players/{player}/wallets/EUR", token)
        assert status == 200
        assert wallet["available"]["amount"] == available[player] >= 0, player
        assert wallet["held"]["amount"] == held[player], player

    session = app.extensions["gin"]["sessionmaker"]()
    with session.begin():
        per_key = dict(
            session.execute(
                text(
                    "SELECT idempotency_key, count(*) FROM ledger_transactions "
                    "WHERE operator_id = :op GROUP BY idempotency_key"
                ),
                {"op": operator_id},
            ).all()
        )
        negative = session.execute(
            text(
                "SELECT count(*) FROM ledger_entries e"
                " JOIN ledger_accounts a ON a.id = e.account_id "
                "WHERE a.kind <> 'operator_clearing' AND (e.balance_after < 0 OR a.balance < 0)"
            )
        ).scalar_one()
        totals = store.journal_totals(session, operator_id)
        problems = store.verify(session, operator_id)
    session.close()
    assert set(per_key) == set(moved) and set(per_key.values()) == {1}
    assert negative == 0
    assert totals == {"EUR": 0}
    assert problems == []


def test_an_account_is_created_apart_from_the_movement_that_needs_it(
    server: tuple[Any, int, str],
) -> None:
    """A movement's new accounts are committed before it locks them: a concurrent creation of
    the same account does not wait for the movement's commit. (Created inside the movement,
    it did, and such waits closed deadlock cycles with the movements' row locks.)"""
    app, _port, _url = server
    operator_id, _ = new_operator(app)
    maker = app.extensions["gin"]["sessionmaker"]
    player = in_unit(
        maker(), players.create_player, Principal(operator_id), "apart", "Apart", None, utcnow()
    )
    escrow = AccountRef.player_escrow(operator_id, player.id, "mch_apart", "EUR")
    available = AccountRef.player_available(operator_id, player.id, "EUR")
    movement = maker()
    try:
        with movement.begin():
            locked = store.lock_accounts(movement, [available, escrow], utcnow())
            assert set(locked) == {available, escrow}
            # The movement's transaction is open and holds both accounts' locks.
            with app.extensions["gin"]["engine"].begin() as other:
                other.execute(text("SET LOCAL lock_timeout = 1000"))
                created = other.execute(
                    text(
                        "INSERT INTO ledger_accounts (key, operator_id, kind, player_id, match_ref,"
                        " currency, balance, entry_count, last_hash, created_at) VALUES (:key, :op,"
                        " 'player_escrow', :player, 'mch_apart', 'EUR', 0, 0, :genesis, now())"
                        " ON CONFLICT (key) DO NOTHING RETURNING id"
                    ),
                    {
                        "key": str(escrow),
                        "op": operator_id,
                        "player": player.id,
                        "genesis": GENESIS,
                    },
                ).all()
                seen = other.execute(
                    text(
                        "SELECT key, entry_count, closed_at IS NOT NULL FROM ledger_accounts"
                        " WHERE player_id = :player ORDER BY key"
                    ),
                    {"player": player.id},
                ).all()
        assert created == []  # it existed, committed, for everyone
        # Both empty; the escrow closed while it holds nothing (store.post opens it).
        assert seen == [(str(available), 0, False), (str(escrow), 0, True)]
    finally:
        movement.close()
    # An account made for a movement that then failed is no wallet of the player's.
    session = maker()
    try:
        with pytest.raises(InsufficientFunds):
            in_unit(
                session,
                wallets.withdraw,
                Principal(operator_id),
                player.id,
                "USD",
                5,
                "none",
                utcnow(),
            )
        assert in_unit(session, wallets.list_wallets, Principal(operator_id), player.id) == []
    finally:
        session.close()


@pytest.mark.timing
def test_accounts_of_a_player_not_yet_committed_are_created_in_the_transaction(
    server: tuple[Any, int, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another connection cannot see a player the movement's own transaction has just written
    (the foreign key refuses the insert at once): the accounts are then created inside it."""
    app, _port, _url = server
    operator_id, _ = new_operator(app)
    caplog.set_level(logging.DEBUG, logger=store.__name__)
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():
            player = Player(
                id=new_id("ply"),
                operator_id=operator_id,
                external_id="uncommitted",
                display_name="Uncommitted",
                created_at=utcnow(),
            )
            session.add(player)
            session.flush()
            available = AccountRef.player_available(operator_id, player.id, "EUR")
            locked = store.lock_accounts(session, [available], utcnow())
            assert locked[available].entry_count == 0
            # the expected case, not a warning: the player is this transaction's own
            (record,) = [r for r in caplog.records if "not created apart" in r.getMessage()]
            assert record.levelno == logging.DEBUG and "ForeignKeyViolation" in record.getMessage()
            # A later movement of the same transaction (a seat's hold after the deposit)
            # creates its accounts inside too, at once: created apart, they would wait for
            # the uncommitted account above until the lock timeout.
            escrow = AccountRef.player_escrow(operator_id, player.id, "mch_uncommitted", "EUR")
            started = time.monotonic()
            locked = store.lock_accounts(session, [available, escrow], utcnow())
            assert time.monotonic() - started < store.CREATE_LOCK_TIMEOUT_MS / 2000
            assert set(locked) == {available, escrow}
        with session.begin():
            assert (
                session.scalar(
                    text("SELECT count(*) FROM ledger_accounts WHERE key = :key"),
                    {"key": str(available)},
                )
                == 1
            )
    finally:
        session.close()


def test_accounts_are_created_while_the_movement_holds_no_account_lock(
    server: tuple[Any, int, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A movement that finds one of its accounts missing has locked none of them when it
    creates it: locking the existing one first, and the new one after, locks out of id order
    whenever another creator took a lower id and commits later."""
    app, _port, _url = server
    operator_id, _ = new_operator(app)
    maker = app.extensions["gin"]["sessionmaker"]
    engine = app.extensions["gin"]["engine"]
    player = in_unit(
        maker(),
        players.create_player,
        Principal(operator_id),
        "lockless",
        "Lockless",
        None,
        utcnow(),
    )
    in_unit(
        maker(),
        wallets.deposit,
        Principal(operator_id),
        player.id,
        "EUR",
        500,
        "lockless",
        utcnow(),
    )
    available = AccountRef.player_available(operator_id, player.id, "EUR")
    escrow = AccountRef.player_escrow(operator_id, player.id, "mch_lockless", "EUR")
    free_while_creating: list[bool] = []
    create = store._create_accounts

    def create_and_look(session: Any, refs: list[AccountRef], now: Any) -> None:
        with engine.begin() as other:  # is the existing account locked by the movement?
            free_while_creating.append(
                bool(
                    other.execute(
                        text(
                            "SELECT id FROM ledger_accounts WHERE key = :key FOR UPDATE SKIP LOCKED"
                        ),
                        {"key": str(available)},
                    ).all()
                )
            )
        create(session, refs, now)

    monkeypatch.setattr(store, "_create_accounts", create_and_look)
    moved = in_unit(
        maker(),
        wallets.hold,
        operator_id,
        player.id,
        "mch_lockless",
        "EUR",
        200,
        "lockless-hold",
        utcnow(),
    )
    assert free_while_creating == [True]
    assert (moved.wallet.available, moved.wallet.held) == (300, 200)
    session = maker()
    with session.begin():
        assert store.lock_accounts(session, [available, escrow], utcnow()).keys() == {
            available,
            escrow,
        }
    session.close()
    assert free_while_creating == [True]  # both exist now: nothing created


FIRST_TOUCH_ROUNDS = 6
FIRST_TOUCH_PLAYERS = 3
FIRST_TOUCH_TWINS = 2


def test_first_movements_of_new_players_at_once_are_never_deadlocked(
    server: tuple[Any, int, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deposits and withdrawals over HTTP (the one-call path, its batches and the ordinary
    path) beside holds, all started at once on players with no accounts yet: every one
    creates or waits for its player's accounts, and none is a deadlock victim. Every error a
    layer would run again is recorded, and so is each batch call that failed."""
    from service.usecases import unit_of_work

    victims: list[BaseException] = []
    run_again = unit_of_work._run_again

    def recorded(error: Any) -> bool:
        if run_again(error):
            victims.append(error)
        return run_again(error)

    monkeypatch.setattr(unit_of_work, "_run_again", recorded)
    app, port, _url = server
    operator_id, token = new_operator(app)
    principal = Principal(operator_id)
    maker = app.extensions["gin"]["sessionmaker"]
    errors: list[BaseException] = []
    moved: set[tuple[str, str, str]] = set()  # (player, kind, key) of what moved money

    def movement(kind: str, player_id: str, n: int, barrier: threading.Barrier) -> None:
        session = maker()
        try:
            barrier.wait(timeout=60)
            key = f"{kind}-{player_id}-{n % len(kinds)}"  # FIRST_TOUCH_TWINS of each
            if kind.startswith("hold"):
                try:
                    in_unit(
                        session,
                        wallets.hold,
                        operator_id,
                        player_id,
                        f"mch_{kind}",
                        "EUR",
                        1,
                        key,
                        utcnow(),
                    )
                except InsufficientFunds:
                    return  # before the deposits: refused, as it should be
            else:
                amount = 100 if kind == "deposit" else 1
                status, body, _ = send(
                    port,
                    "POST",
                    f"/v1/players/{player_id}/{kind}s",
                    token,
                    {"amount": {"amount": amount, "currency": "EUR"}},
                    key,
                )
                assert status == 201 or (status, body["code"]) in {
                    (409, "idempotency_key_in_use"),
                    (422, "insufficient_funds"),
                }, (status, body)
                if status != 201:
                    return
            moved.add((player_id, kind[:4], key))
        except BaseException as error:
            errors.append(error)
        finally:
            session.close()

    kinds = ["deposit", "deposit", "withdrawal", "hold-a", "hold-a", "hold-b"]
    for round_ in range(FIRST_TOUCH_ROUNDS):
        new = [
            in_unit(
                maker(), players.create_player, principal, f"ft-{round_}-{i}", "New", None, utcnow()
            ).id
            for i in range(FIRST_TOUCH_PLAYERS)
        ]
        barrier = threading.Barrier(len(kinds) * FIRST_TOUCH_TWINS * len(new))
        threads = [
            threading.Thread(target=movement, args=(kind, player_id, n, barrier))
            for player_id in new
            for n, kind in enumerate(kinds * FIRST_TOUCH_TWINS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        for player_id in new:
            wallet = in_unit(maker(), wallets.get_wallet, principal, player_id, "EUR")
            count = Counter(kind for player, kind, _key in moved if player == player_id)
            assert wallet.held == count["hold"], wallet
            assert wallet.balance == 100 * count["depo"] - count["with"], wallet
            assert count["depo"] == 2, wallet
    assert victims == []
    session = maker()
    try:
        with session.begin():
            assert store.journal_totals(session, operator_id) == {"EUR": 0}
            assert store.verify(session, operator_id) == []
    finally:
        session.close()
