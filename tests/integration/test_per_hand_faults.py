"""Faults around the settlement of a continuous Rummy table's hands (``rummy_per_hand``), with
real Celery worker processes: a hand that ends while the broker is down, the same
settlement task delivered several times at once, a settlement killed by the database after
its capture was written (the task retries), and a worker SIGKILLed in the middle of a
settlement. Each time: one settlement and one capture for the hand, the table balances
moved by its net once, exactly one next hand dealt (one new match row for the table), the
ledger verifies, and every cent is in a wallet, a table balance or the fees.

A settlement is caught in its middle by holding the table's row lock, which the settlement
takes last (``tables.after_hand``, after the capture and the settlement row are written):
the worker's transaction waits there, where it can be seen in ``pg_stat_activity``.

The outage test is marked like tests/integration/test_broker_outage.py (redis-server on the
PATH; PostgreSQL when TEST_DATABASE_URL is set, else a SQLite file); the others like
tests/integration/test_worker_settlement.py (PostgreSQL, and TEST_BROKER_URL /
TEST_RABBITMQ_URL).
"""

from __future__ import annotations

import os
import shutil
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func, select, text

from service.clock import utcnow
from service.db.match_models import GameTable, MatchRow, OutboxEvent, Seat, Settlement
from service.db.models import LedgerAccount, LedgerTransaction
from service.ledger import store
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, in_unit, new_operator
from tests.integration.test_broker_outage import (
    PROMPTLY,
    STARTED,
    database,  # noqa: F401  (the fixture)
    lost_with_the_broker,
    settled_within,
)
from tests.integration.test_worker_settlement import (
    BROKERS,
    _clean_brokers,  # noqa: F401  (the autouse fixture)
    request_cleanup,
)
from tests.integration.workers import (
    Broker,
    kill,
    private_redis,
    settled_once,
    wait_until,
    worker,
)
from worker.relay import relay_events

NEEDS_REDIS_SERVER = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="needs redis-server on the PATH"
)
NEEDS_POSTGRES = [
    pytest.mark.postgres,
    pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"),
]

TABLE = {
    "game": "rummy",
    "seat_count": 3,
    "format": "rummy_per_hand",
    "stake_per_point": 1,
    "min_buyin": 100,
    "max_buyin": 300,
    "fee": {"bps": 500, "base": "WINNINGS"},
}
BUYIN = 200
DEPOSIT = 1_000


@dataclass(frozen=True)
class Hand:
    """The first hand of a per-hand table of its own: ``players[0]`` and ``players[1]`` are
    dealt in, ``players[2]`` sat down during it and waits for the next; :func:`resign` ends
    it, ``players[1]`` (``resigner``) resigning."""

    api: ApiClient
    table_id: str
    match_id: str
    players: tuple[str, str, str]
    resigner: ApiClient


def seated_hands(app: Any, count: int) -> list[Hand]:
    """``count`` per-hand tables of one new operator, each with its first hand being played."""
    _operator, key = new_operator(app)
    api = ApiClient(app.test_client(), key)
    hands = []
    for _ in range(count):
        table = open_table(api, currency="EUR", **TABLE)
        clients = [player_client(api, deposit=DEPOSIT) for _ in range(3)]
        for client in clients:
            assert join(client, table["id"], buyin=BUYIN).status_code == 201
        match_id = api.get(f"/v1/tables/{table['id']}").get_json()["match_id"]
        players = tuple(c.player_id for c in clients)  # type: ignore[attr-defined]
        hands.append(Hand(api, table["id"], match_id, players, clients[1]))
    return hands


def resign(hand: Hand) -> None:
    """End ``hand`` (its match.finished event unpublished: the test app's broker is memory)."""
    response = hand.resigner.post(f"/v1/matches/{hand.match_id}/actions", {"action": "RESIGN"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["status"] in ("finished", "void")


def ended_hands(app: Any, count: int) -> list[Hand]:
    hands = seated_hands(app, count)
    for hand in hands:
        resign(hand)
    return hands


def ids(hands: list[Hand]) -> list[str]:
    return [hand.match_id for hand in hands]


def _session(app: Any) -> Any:
    return app.extensions["gin"]["sessionmaker"]()


def unsettled_and_untouched(app: Any, hand: Hand) -> None:
    """Nothing of ``hand``'s settlement is there: no settlement, no capture, its table's
    balances as bought in, no next hand."""
    session = _session(app)
    try:
        row = session.get(MatchRow, hand.match_id)
        assert row.status in ("finished", "void") and row.settled_at is None
        assert not session.scalar(
            select(func.count()).select_from(Settlement).where(Settlement.match_id == row.id)
        )
        assert not session.scalar(
            select(func.count())
            .select_from(LedgerTransaction)
            .where(LedgerTransaction.match_ref == row.id, LedgerTransaction.kind == "capture")
        )
        escrow = session.scalars(select(Seat.escrow).where(Seat.table_id == hand.table_id)).all()
        assert escrow == [BUYIN] * 3
        tables = session.scalars(select(MatchRow.id).where(MatchRow.table_id == hand.table_id))
        assert tables.all() == [row.id]
        assert session.get(GameTable, hand.table_id).match_id == row.id
    finally:
        session.close()


def moved_once_and_dealt_once(app: Any, hands: list[Hand]) -> None:
    """Each hand settled once (one settlement, one capture), its table balances moved by its
    net once, and exactly one next hand dealt, to the winner and the player who waited."""
    assert settled_once(app, ids(hands))
    session = _session(app)
    try:
        for hand in hands:
            settled = session.scalars(
                select(Settlement).where(Settlement.match_id == hand.match_id)
            ).one()
            net = settled.statement["net"]
            assert settled.statement["players"] == list(hand.players[:2])
            assert net[1] < 0 < net[0], "the resigner paid the winner"
            assert net[0] + net[1] + settled.fee == 0
            capture = session.get(LedgerTransaction, settled.ledger_transaction_id)
            assert capture.kind == "capture" and capture.match_ref == hand.match_id
            balances = {
                seat.player_id: seat.escrow
                for seat in session.scalars(select(Seat).where(Seat.table_id == hand.table_id))
            }
            winner, loser, waiting = hand.players
            assert balances == {winner: BUYIN + net[0], waiting: BUYIN}, "the resigner left"
            released = session.scalar(
                select(LedgerAccount.balance).where(
                    LedgerAccount.player_id == loser, LedgerAccount.kind == "player_available"
                )
            )
            assert released == DEPOSIT + net[1], "with what was left of its table balance"
            rows = session.scalars(select(MatchRow).where(MatchRow.table_id == hand.table_id))
            by_id = {row.id: row for row in rows}
            assert len(by_id) == 2, f"one next hand at {hand.table_id}, not {len(by_id) - 1}"
            table = session.get(GameTable, hand.table_id)
            assert table.match_id in by_id and table.match_id != hand.match_id
            following = by_id[table.match_id]
            assert following.status == "playing" and following.settled_at is None
            assert [(s["player_id"], s["escrow"]) for s in following.seats] == [
                (winner, balances[winner]),
                (waiting, BUYIN),
            ], "the resigner has left; the others are dealt in with their new balances"
    finally:
        session.close()


def books_balance(app: Any, hands: list[Hand]) -> None:
    """The ledger verifies (in the database and over the audit API), every hand audits, and
    every cent deposited is in a wallet's available funds, a table balance (held for the
    table, equal to the seat's) or the house's fees."""
    session = _session(app)
    try:
        assert store.verify(session) == []
        accounts = session.scalars(select(LedgerAccount)).all()
        seats = session.scalars(select(Seat)).all()
        fees = sum(session.scalars(select(Settlement.fee)))
    finally:
        session.close()
    for api in {hand.api for hand in hands}:
        ledger = api.get("/v1/audit/ledger").get_json()
        assert ledger["ok"] is True, ledger
    for hand in hands:
        audit = hand.api.get(f"/v1/audit/settlements/{hand.match_id}").get_json()
        assert audit["ok"] is True, audit["discrepancies"]
    held = {(a.player_id, a.match_ref): a.balance for a in accounts if a.kind == "player_escrow"}
    assert {key: amount for key, amount in held.items() if amount} == {
        (seat.player_id, seat.table_id): seat.escrow for seat in seats if seat.escrow
    }, "each table balance is held for its table, and nothing else is held"
    available = {a.player_id: a.balance for a in accounts if a.kind == "player_available"}
    assert len(available) == 3 * len(hands)
    seated = {seat.player_id for seat in seats}
    assert {p: b for p, b in available.items() if p in seated} == dict.fromkeys(
        seated, DEPOSIT - BUYIN
    ), "a hand moves no seated player's available funds (a resigner left with its balance)"
    by_kind = Counter[str]()
    for account in accounts:
        by_kind[account.kind] += account.balance
    assert by_kind["house_fee"] == fees > 0
    deposited = 3 * DEPOSIT * len(hands)
    assert sum(available.values()) + sum(seat.escrow for seat in seats) + fees == deposited
    assert -by_kind["operator_clearing"] == deposited


# --- a settlement caught in its middle (PostgreSQL) ----------------------------------------------


@contextmanager
def table_locked(app: Any, table_id: str) -> Iterator[int]:
    """Hold ``table_id``'s row lock in a transaction of our own (a settlement of its hand
    waits for it in ``tables.after_hand``); the holder's backend pid. Released on exit."""
    session = _session(app)
    try:
        session.execute(select(GameTable.id).where(GameTable.id == table_id).with_for_update())
        yield session.scalar(text("SELECT pg_backend_pid()"))
    finally:
        session.rollback()
        session.close()


def _waiting(app: Any) -> dict[int, tuple[list[int], str]]:
    """The database's backends that wait for a lock: the backends they wait for, and their
    statement."""
    with app.extensions["gin"]["engine"].connect() as connection:
        rows = connection.execute(
            text(
                "SELECT pid, pg_blocking_pids(pid), query FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        )
        return {pid: (list(blockers), query) for pid, blockers, query in rows}


def _behind(waiting: dict[int, tuple[list[int], str]], pid: int) -> set[int]:
    """The backends that wait, directly or in a queue, for backend ``pid``."""
    found: set[int] = set()
    more = {pid}
    while more:
        more = {w for w, (blockers, _q) in waiting.items() if more & set(blockers)} - found
        found |= more
    return found


def _wrote(app: Any, pid: int) -> set[str]:
    """The tables backend ``pid``'s open transaction has written to."""
    with app.extensions["gin"]["engine"].connect() as connection:
        return set(
            connection.scalars(
                text(
                    "SELECT relation::regclass::text FROM pg_locks WHERE pid = :pid"
                    " AND locktype = 'relation' AND mode = 'RowExclusiveLock' AND granted"
                ),
                {"pid": pid},
            )
        )


def settling_behind(app: Any, holder: int, others: int = 0) -> int:
    """Wait until one worker's settlement waits for the table lock ``holder`` holds, its
    capture and settlement row written, and at least ``others`` more settlements of the hand
    wait behind it for the hand's row; the backend pid of the first."""
    found: list[int] = []

    def caught() -> bool:
        waiting = _waiting(app)
        found[:] = [pid for pid, (blockers, _q) in waiting.items() if holder in blockers]
        return len(found) == 1 and len(_behind(waiting, found[0])) >= others

    wait_until(caught, STARTED, f"a settlement waiting for the table lock, {others} behind it")
    [pid] = found
    waiting = _waiting(app)
    assert "FROM game_tables" in waiting[pid][1] and "FOR UPDATE" in waiting[pid][1]
    for other in _behind(waiting, pid):  # settle_match's first statement, on the hand's row
        assert "FROM matches LEFT OUTER JOIN settlements" in waiting[other][1], waiting[other]
    written = _wrote(app, pid)
    assert {"ledger_transactions", "settlements"} <= written, written
    return pid


def backend_gone(app: Any, pid: int) -> bool:
    with app.extensions["gin"]["engine"].connect() as connection:
        return not connection.scalar(
            text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
        )


def drained(broker: Broker) -> bool:
    """Nothing waits in the run's queue (Redis: nor taken and unacknowledged)."""
    if broker.url.startswith("redis"):
        return broker.idle()
    with broker.client().connection_for_write() as connection:
        declared = connection.default_channel.queue_declare(broker.queue, passive=True)
        return not declared.message_count


def given_back(broker: Broker) -> bool:
    """Whether the tasks a killed worker took are back in the queue. RabbitMQ gives them back
    at once; Redis keeps them unacknowledged until kombu restores those older than the
    visibility timeout (3 s here), in a scan it throttles to one every 100 s by default:
    that same restore is run here, now."""
    if not broker.url.startswith("redis"):
        return True
    import redis

    with broker.client().connection_for_write() as connection:
        connection.default_channel.qos.restore_visible(num=100, interval=1)
    client = redis.Redis.from_url(broker.url)
    try:
        return not client.hlen(f"{broker.env['CELERY_KEY_PREFIX']}unacked")
    finally:
        client.close()


# --- the tests -----------------------------------------------------------------------------------


@NEEDS_REDIS_SERVER
def test_a_hand_ended_while_redis_was_down_is_settled_once_and_the_next_hand_dealt_once(
    database: tuple[Any, str],  # noqa: F811
) -> None:
    """As test_broker_outage's first test, at per-hand tables: a hand whose settlement task
    was in the Redis that went down, and a hand that ended while it was down (its event
    kept), both settled once soon after Redis returns empty, each table's next hand dealt."""
    app, url = database
    session = _session(app)
    try:
        with private_redis() as (redis_url, stop, start):
            broker = Broker(redis_url)
            with worker(url, broker):
                first = ended_hands(app, 1)
                in_unit(session, relay_events, broker.send, utcnow())
                settled_within(app, ids(first), STARTED)  # the worker is up and consuming
                wait_until(broker.idle, STARTED, "the worker to finish what it took")
                lost = ended_hands(app, 1)
                lost_with_the_broker(session)
                stop()
                held = ended_hands(app, 1)
                in_unit(session, relay_events, broker.send, utcnow())  # fails: the event stays
                event = session.scalars(
                    select(OutboxEvent).where(
                        OutboxEvent.type == "match.finished",
                        OutboxEvent.subject_id == held[0].match_id,
                    )
                ).one()
                assert event.published_at is None and event.last_error, "kept for later"
                session.rollback()
                for hand in lost + held:
                    unsettled_and_untouched(app, hand)
                start()  # empty: the lost hand's task is gone
                took = settled_within(app, ids(lost + held), PROMPTLY)
                # The held hand is settled by the relayed event's task and the catch-up
                # sweep's: let both run before counting.
                wait_until(broker.idle, PROMPTLY, "every delivery to have run")
        moved_once_and_dealt_once(app, first + lost + held)
        books_balance(app, first + lost + held)
        print(f"settled {took:.1f} s after the broker returned")
    finally:
        session.close()


@pytest.mark.parametrize("broker_url", BROKERS)
@pytest.mark.postgres
@pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL")
def test_a_hand_delivered_many_times_at_once_or_retried_is_settled_once(
    database: tuple[Any, str],  # noqa: F811
    broker_url: str,
) -> None:
    """The same settlement task delivered three times (and once more by the worker's
    catch-up sweep), three deliveries inside the settlement at once, each in a pool process
    of its own; then a settlement whose database connection is killed after it wrote the
    capture, which the task's retry (``autoretry_for=OperationalError``) settles. Each
    hand's table lock is held from before the hand ends, so nothing settles it before the
    test has seen it in flight."""
    app, url = database
    broker = Broker(broker_url)
    request_cleanup(broker)
    session = _session(app)
    try:
        duplicated, retried = seated_hands(app, 2)
        with ExitStack() as running:
            with table_locked(app, duplicated.table_id) as holder:
                resign(duplicated)
                lost_with_the_broker(session)  # only the tasks sent here (and sweeps) settle it
                for _ in range(3):
                    broker.send("settlement.settle_match", [duplicated.match_id])
                running.enter_context(worker(url, broker, concurrency=3))
                settling_behind(app, holder, others=2)  # three deliveries at once
            settled_within(app, [duplicated.match_id], PROMPTLY)
            wait_until(lambda: drained(broker), PROMPTLY, "every delivery to have run")

            with table_locked(app, retried.table_id) as holder:
                resign(retried)
                lost_with_the_broker(session)
                broker.send("settlement.settle_match", [retried.match_id])
                pid = settling_behind(app, holder)
                with app.extensions["gin"]["engine"].connect() as connection:
                    assert connection.scalar(text(f"SELECT pg_terminate_backend({pid})"))
                wait_until(lambda: backend_gone(app, pid), PROMPTLY, "the killed connection")
                unsettled_and_untouched(app, retried)  # its transaction was rolled back
            took = settled_within(app, [retried.match_id], PROMPTLY)
            wait_until(lambda: drained(broker), PROMPTLY, "every delivery to have run")
        moved_once_and_dealt_once(app, [duplicated, retried])
        books_balance(app, [duplicated, retried])
        print(f"retried and settled {took:.1f} s after its connection was killed")
    finally:
        session.close()


@pytest.mark.parametrize("broker_url", BROKERS)
@pytest.mark.postgres
@pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL")
def test_a_worker_killed_in_the_middle_of_a_settlement_leaves_nothing_and_the_next_settles_once(
    database: tuple[Any, str],  # noqa: F811
    broker_url: str,
) -> None:
    """A worker SIGKILLed while its settlement of a hand waits for the table's lock, the
    capture and the settlement row written: none of it is committed, no next hand is dealt,
    and a worker started afterwards settles the hand once and deals the next hand once."""
    app, url = database
    broker = Broker(broker_url)
    request_cleanup(broker)
    session = _session(app)
    try:
        [hand] = seated_hands(app, 1)
        with table_locked(app, hand.table_id) as holder:
            resign(hand)
            lost_with_the_broker(session)
            broker.send("settlement.settle_match", [hand.match_id])
            with worker(url, broker) as first:
                pid = settling_behind(app, holder)
                kill(first, signal.SIGKILL)  # its task dies with it, unacknowledged
        # Released: the killed worker's transaction finds its client gone and rolls back.
        wait_until(lambda: backend_gone(app, pid), PROMPTLY, "the killed worker's connection")
        unsettled_and_untouched(app, hand)
        wait_until(lambda: not drained(broker), PROMPTLY, "the killed worker's task kept")
        with worker(url, broker):
            took = settled_within(app, [hand.match_id], PROMPTLY)
            # Its catch-up sweep settled the hand; the killed worker's task comes back too.
            wait_until(lambda: given_back(broker), PROMPTLY, "the killed worker's task back")
            wait_until(lambda: drained(broker), PROMPTLY, "the killed worker's task to run")
        moved_once_and_dealt_once(app, [hand])
        books_balance(app, [hand])
        print(f"settled {took:.1f} s after the next worker started")
    finally:
        session.close()
