"""Seamless wallets with every part a real process: the API served by gunicorn, Celery workers
(with beat: ``wallet.sweep`` every two seconds) on Redis, PostgreSQL, and the reference operator
wallet (``python -m refwallet``) misbehaving on purpose.

Faults on debits while players sit down, on credits while matches settle and while unfilled
tables are refunded, a declined debit beside a good one, ten debits of one player at once, a
player token that expires between the debit and the credit, and a worker SIGKILLed while a
credit is on its way. Each test ends on the bank's invariant (:func:`books_agree`): every
player's balance at the operator is its starting balance plus our ledger's clearing
sub-account for it, every wallet call is terminal, each transaction id was applied at most
once at the operator and the operator's books match our calls, and the ledger audits.

Needs TEST_DATABASE_URL (PostgreSQL) and TEST_BROKER_URL (Redis); CI sets both.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from service.clock import utcnow
from service.db.wallet_models import WalletCall
from service.usecases import unit_of_work
from service.usecases.audit import run_audit
from tests.api.play_clients import open_table, play_match
from tests.conftest import ApiClient, make_test_app, new_operator, throwaway_postgres
from tests.integration.workers import ROOT, Broker, _log, kill, wait_until
from tests.ops.servers import HttpClient, gunicorn
from tests.seamless_support import RefWallet, clearing_balance, reference_wallet, wallet_port

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not (os.environ.get("TEST_DATABASE_URL") and os.environ.get("TEST_BROKER_URL")),
        reason="needs PostgreSQL (TEST_DATABASE_URL) and Redis (TEST_BROKER_URL)",
    ),
]

STAKE = 500
START = 10_000
#: What we give the operator's wallet per call: short, so an ambiguous answer costs little.
TIMEOUT_MS = 300


# --- the processes -----------------------------------------------------------------------------


@dataclass
class Stack:
    """PostgreSQL, Redis and the API in gunicorn, shared by the module's tests; ``app`` reads
    the database in this process (never serves)."""

    url: str
    app: Any
    base: str
    broker: Broker
    folder: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    broker = Broker(os.environ["TEST_BROKER_URL"])
    folder = tmp_path_factory.mktemp("seamless-processes")
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url, ExitStack() as stack:
        stack.callback(broker.cleanup)
        app = make_test_app(url)
        stack.callback(app.extensions["gin"]["engine"].dispose)
        env = {**broker.env, "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1"}
        log = Path(os.environ["API_LOG"]) if os.environ.get("API_LOG") else None  # debugging
        _process, base = stack.enter_context(gunicorn(url, workers=3, env=env, log=log))
        yield Stack(url, app, base, broker, folder)


@contextmanager
def celery_worker(stack: Stack, *, beat: bool, concurrency: int = 2) -> Iterator[Any]:
    """A Celery worker process of the stack's queue, allowed to call a wallet on loopback;
    with ``beat``, embedded beat (``wallet.sweep`` every two seconds). SIGTERM on exit."""
    env = dict(
        os.environ,
        DATABASE_URL=stack.url,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS="1",
        **stack.broker.env,
    )
    command = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker"]
    command += ["--concurrency", str(concurrency), "--pool", "prefork"]
    command += ["--queues", stack.broker.queue, "--loglevel", "WARNING"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    if beat:
        schedule = stack.folder / f"celerybeat-{secrets.token_hex(4)}"
        command += ["--beat", "--schedule", str(schedule)]
    output = _log()
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
    )
    if output is not subprocess.DEVNULL:
        output.close()
    try:
        yield process
    finally:
        kill(process, signal.SIGTERM)


@pytest.fixture
def beat_worker(stack: Stack) -> Iterator[Any]:
    """One worker with beat for the test: it settles, sends credits and sweeps."""
    with celery_worker(stack, beat=True) as process:
        yield process


# --- an operator with a seamless wallet --------------------------------------------------------


@dataclass
class Player:
    client: ApiClient
    player_id: str
    external_id: str
    start: int


@dataclass
class Operator:
    stack: Stack
    operator_id: str
    api: ApiClient
    wallet: RefWallet
    players: list[Player] = field(default_factory=list)

    def player(self, balance: int = START, ttl_seconds: int | None = None) -> Player:
        """A player the operator's wallet holds ``balance`` for, with a token of its own."""
        created = self.api.new_player()
        self.wallet.player(created["external_id"], balance)
        body = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        response = self.api.post(f"/v1/players/{created['id']}/tokens", body)
        assert response.status_code == 201, response.get_json()
        found = Player(
            self.api.as_(response.get_json()["token"]),
            created["id"],
            created["external_id"],
            balance,
        )
        self.players.append(found)
        return found

    def session(self) -> Any:
        return self.stack.app.extensions["gin"]["sessionmaker"]()

    def calls(self, **where: Any) -> list[WalletCall]:
        stmt = select(WalletCall).where(WalletCall.operator_id == self.operator_id)
        for name, value in where.items():
            stmt = stmt.where(getattr(WalletCall, name) == value)
        stmt = stmt.order_by(WalletCall.created_at, WalletCall.id)
        db = self.session()
        try:
            return unit_of_work.run(db, lambda: list(db.scalars(stmt)))
        finally:
            db.close()

    def clearing(self, player: Player) -> int:
        return clearing_balance(self.session, self.operator_id, player.player_id)

    def balance(self, player: Player) -> int:
        return self.wallet.balance(player.external_id)

    def requests_for(self, transaction_id: str) -> list[dict[str, Any]]:
        return [r for r in self.wallet.requests() if r.get("transaction_id") == transaction_id]

    def seats(self, table_id: str) -> list[dict[str, Any]]:
        response = self.api.get(f"/v1/tables/{table_id}")
        assert response.status_code == 200, response.get_json()
        return list(response.get_json()["seats"])

    def settled(self, match_id: str) -> bool:
        return bool(self.api.get(f"/v1/matches/{match_id}/settlement").status_code == 200)


@pytest.fixture
def operator(stack: Stack, tmp_path: Path) -> Iterator[Operator]:
    """A new operator in seamless mode for EUR, its wallet a reference wallet of its own."""
    with operator_with_wallet(stack, tmp_path, TIMEOUT_MS) as found:
        yield found


@contextmanager
def operator_with_wallet(stack: Stack, folder: Path, timeout_ms: int) -> Iterator[Operator]:
    operator_id, key = new_operator(stack.app)
    api = ApiClient(HttpClient(stack.base), key)
    port = wallet_port()
    response = api.put(
        "/v1/wallet-settings/EUR",
        {"mode": "seamless", "url": f"http://127.0.0.1:{port}", "timeout_ms": timeout_ms},
    )
    assert response.status_code == 200, response.get_json()
    with reference_wallet(folder, port, response.get_json()["secret"]) as wallet:
        yield Operator(stack, operator_id, api, wallet)


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    body = response.get_json()
    assert response.status_code == status, body
    assert body["code"] == code, body
    return dict(body)


def sit(player: Player, table_id: str, key: str | None = None) -> Any:
    return player.client.post(f"/v1/tables/{table_id}/seats", {}, key=key or secrets.token_hex(8))


def leave(player: Player, table_id: str) -> Any:
    return player.client.delete(f"/v1/tables/{table_id}/seats/me", key=secrets.token_hex(8))


def resign(player: Player, match_id: str) -> None:
    response = player.client.post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["status"] == "finished"


# --- the bank's invariant ----------------------------------------------------------------------


def all_terminal(op: Operator) -> bool:
    """Every wallet call terminal, and no request still in flight at the wallet (a delayed
    one may yet apply or be refused)."""
    if any(call.completed_at is None for call in op.calls()):
        return False
    return all(r.get("answer") is not None for r in op.wallet.requests())


def books_agree(op: Operator, timeout: float = 30) -> None:
    """The bank-style invariant, once every call is terminal: each player's balance at the
    operator equals its starting balance plus our ledger's clearing sub-account for it; each
    transaction id was applied at most once at the operator, and the operator holds exactly
    what our calls say (booked debits and acknowledged credits applied, failed debits
    absent, rolled-back ones absent, rolled back or tombstoned); the ledger audits."""
    wait_until(lambda: all_terminal(op), timeout, "every wallet call terminal")
    calls = op.calls()
    for player in op.players:
        assert op.balance(player) == player.start + op.clearing(player), player
    transactions = op.wallet.transactions()
    ids = [t["transaction_id"] for t in transactions]
    assert len(ids) == len(set(ids)), Counter(ids).most_common(3)
    applied = Counter(r["transaction_id"] for r in op.wallet.requests() if r["applied"])
    assert all(count == 1 for count in applied.values()), applied.most_common(3)
    theirs = {t["transaction_id"]: t for t in transactions}
    ours = {c.id for c in calls} | {c.rollback_id for c in calls if c.rollback_id}
    assert set(theirs) <= ours, set(theirs) - ours  # the operator holds nothing we never sent
    for call in calls:
        state = theirs.get(call.id, {}).get("state")
        if call.kind == "credit":
            assert call.state == "acknowledged" and state == "applied", (call.id, state)
            assert theirs[call.id]["amount"] == call.amount
        elif call.state == "booked":
            assert state == "applied", (call.id, state)
            assert theirs[call.id]["amount"] == call.amount
        elif call.state == "failed":
            assert state is None, (call.id, state)
        else:
            assert call.state == "rolled_back", (call.id, call.state)
            assert state in (None, "rolled_back", "tombstone"), (call.id, state)
    db = op.session()
    try:
        report = run_audit(db, operator_id=op.operator_id)
    finally:
        db.close()
    assert report.ok, report


# --- 1. faults while sitting down --------------------------------------------------------------


@pytest.mark.parametrize(
    "fault", ["timeout_after_apply", "timeout_before_apply", "error_5xx", "delay_apply"]
)
def test_a_seat_whose_debit_fails_ambiguously_is_refused_and_its_retry_seats(
    stack: Stack, beat_worker: Any, operator: Operator, fault: str
) -> None:
    """Each ambiguous debit: 503 ``wallet_unavailable``, no seat, the money back at the
    operator (the debit rolled back; ``delay_apply``: the rollback overtakes the debit,
    which the operator then refuses). The same request again (its Idempotency-Key) seats
    with a new debit, and a third time replays the answer without debiting."""
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    operator.wallet.faults({"kinds": ["debit"], "fault": fault, "times": 1, "seconds": 1.0})
    problem(sit(player, table["id"], key="seat-1"), 503, "wallet_unavailable")
    assert operator.seats(table["id"]) == []
    [first] = operator.calls()
    assert first.kind == "debit" and first.rollback_id
    wait_until(lambda: all_terminal(operator), 10, "the rollback and the debit answered")
    [first] = operator.calls()
    assert first.state == "rolled_back"
    assert operator.balance(player) == START
    if fault == "delay_apply":  # the late debit found the rollback's tombstone
        [late] = operator.requests_for(first.id)
        assert (late["answer"], late["applied"]) == ("transaction_rolled_back", False)

    retry = sit(player, table["id"], key="seat-1")
    assert retry.status_code == 201, retry.get_json()
    assert [s["player_id"] for s in operator.seats(table["id"])] == [player.player_id]
    first_again, second = operator.calls()
    assert first_again.id == first.id and second.state == "booked"
    assert operator.balance(player) == START - STAKE
    replay = sit(player, table["id"], key="seat-1")
    assert replay.status_code == 201 and replay.headers.get("Idempotent-Replayed") == "true"
    assert len(operator.calls()) == 2
    books_agree(operator)


def test_a_rollback_the_wallet_fails_is_finished_by_the_worker_while_the_retry_seats(
    stack: Stack, beat_worker: Any, operator: Operator
) -> None:
    """The debit times out after the wallet applied it, and its rollback fails too (500,
    twice): 503, no seat, the rollback left to the sweep. The player sends the same request
    again at once and sits with a new debit; the worker's sweep rolls the first one back
    with its one rollback id, and the player has paid one stake."""
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    operator.wallet.faults(
        {"kinds": ["debit"], "fault": "timeout_after_apply", "times": 1, "seconds": 1.0},
        {"kinds": ["rollback"], "fault": "error_5xx", "times": 2},
    )
    problem(sit(player, table["id"], key="seat-1"), 503, "wallet_unavailable")
    [first] = operator.calls()
    assert first.state == "rollback_pending" and first.attempts == 1
    assert operator.balance(player) == START - STAKE  # applied, not yet rolled back
    retry = sit(player, table["id"], key="seat-1")
    assert retry.status_code == 201, retry.get_json()
    books_agree(operator)
    first, second = operator.calls()
    assert (first.state, second.state) == ("rolled_back", "booked")
    rollbacks = operator.requests_for(first.rollback_id or "")
    assert [r["answer"] for r in rollbacks] == ["error", "error", "ok"]
    assert first.attempts == 3  # the request's own try, then the worker's sweep twice
    assert operator.balance(player) == START - STAKE
    assert [s["player_id"] for s in operator.seats(table["id"])] == [player.player_id]
    books_agree(operator)


# --- 2. faults while a match settles -----------------------------------------------------------


@pytest.mark.parametrize("fault", ["error_5xx", "down"])
def test_settlement_credits_are_retried_by_the_worker_until_acknowledged(
    stack: Stack, beat_worker: Any, operator: Operator, fault: str
) -> None:
    """A match played to its end over HTTP; the worker settles it and sends its credits while
    the operator's wallet fails them (500 four times; or down until the test ends the
    outage). The worker's sweep sends each again with its own transaction id until it is
    acknowledged; each arrives at the operator exactly once."""
    table = open_table(operator.api, format="first_to_knock", stake=STAKE, fee={"bps": 1000})
    alice, bob = operator.player(), operator.player()
    for player in (alice, bob):
        assert sit(player, table["id"]).status_code == 201
    if fault == "down":
        operator.wallet.faults({"kinds": ["credit"], "fault": "down", "seconds": 60})
    else:
        operator.wallet.faults({"kinds": ["credit"], "fault": "error_5xx", "times": 4})
    final = play_match([alice.client, bob.client], table["match_id"])
    assert final["status"] == "finished"
    wait_until(lambda: operator.settled(table["match_id"]), 30, "the worker's settlement")

    def tried(times: int) -> bool:
        credits = operator.calls(kind="credit")
        return len(credits) == 2 and all(c.attempts >= times for c in credits)

    wait_until(lambda: tried(2), 30, "every credit tried twice")
    if fault == "down":
        assert {c.state for c in operator.calls(kind="credit")} == {"pending"}
        operator.wallet.admin("DELETE", "/faults")  # the outage ends
    wait_until(lambda: all_terminal(operator), 30, "every credit acknowledged")

    credits = operator.calls(kind="credit")
    assert sorted(c.amount for c in credits) == [0, 2 * STAKE - 100]
    assert all(c.reason == "payout" and c.round_closed for c in credits)
    for credit in credits:
        sent = operator.requests_for(credit.id)
        assert len(sent) == credit.attempts >= 2, sent  # one id, every retry
        assert [r["applied"] for r in sent] == [False] * (len(sent) - 1) + [True]
        assert {r["fault"] for r in sent[:-1]} == {fault}
    assert sorted(operator.balance(p) for p in (alice, bob)) == [
        START - STAKE,
        START + STAKE - 100,
    ]
    escalated = operator.api.get("/v1/wallet-calls?escalated=true").get_json()["data"]
    assert escalated == []
    books_agree(operator)


# --- 3. refunds of an unfilled table -----------------------------------------------------------


def test_an_unfilled_table_is_cancelled_and_the_stake_credited_back_once(
    stack: Stack, beat_worker: Any, operator: Operator
) -> None:
    """A table whose second seat never fills is cancelled by the worker; the seated player's
    stake is credited back (reason ``release``) although the wallet first fails the credit,
    then applies it without answering in time: the retry with the same id is acknowledged
    as already processed, and the stake comes back once."""
    table = open_table(operator.api, stake=STAKE, clock={"fill_timeout_seconds": 1})
    player = operator.player()
    assert sit(player, table["id"]).status_code == 201
    assert operator.balance(player) == START - STAKE
    operator.wallet.faults(
        {"kinds": ["credit"], "fault": "error_5xx", "times": 1},
        {"kinds": ["credit"], "fault": "timeout_after_apply", "times": 1, "seconds": 1.0},
    )
    deadline = datetime.fromisoformat(table["fill_deadline"].replace("Z", "+00:00"))
    wait_until(lambda: utcnow() > deadline, 5, "the table's fill deadline")
    stack.broker.send("tables.cancel_unfilled", [])  # what beat sends every 10 s
    wait_until(
        lambda: operator.api.get(f"/v1/tables/{table['id']}").get_json()["status"] == "cancelled",
        30,
        "the worker to cancel the table",
    )
    books_agree(operator)
    [debit, credit] = operator.calls()
    assert (credit.kind, credit.reason, credit.amount) == ("credit", "release", STAKE)
    assert credit.references == [debit.id] and credit.round_id == debit.round_id
    answers = [r["answer"] for r in operator.requests_for(credit.id)]
    assert answers == ["error", "dropped", "already_processed"]
    assert credit.attempts == 3
    assert operator.balance(player) == START
    books_agree(operator)


# --- 4. one of two debits declined -------------------------------------------------------------


def test_a_declined_debit_leaves_the_other_player_seated_and_leaving_refunds_it(
    stack: Stack, beat_worker: Any, operator: Operator
) -> None:
    """Two players sit down at once; the operator declines one (insufficient funds). The
    other keeps its seat; the declined one's retry gets the same answer without a new
    debit. The seated player leaves and its stake comes back (the first credit failing)."""
    table = open_table(operator.api, stake=STAKE)
    rich, poor = operator.player(), operator.player(balance=STAKE - 1)
    answers: dict[str, Any] = {}
    barrier = threading.Barrier(2)

    def take(player: Player, key: str) -> None:
        barrier.wait()
        answers[player.player_id] = sit(player, table["id"], key=key)

    threads = [
        threading.Thread(target=take, args=(rich, "rich")),
        threading.Thread(target=take, args=(poor, "poor")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers[rich.player_id].status_code == 201, answers[rich.player_id].get_json()
    problem(answers[poor.player_id], 422, "insufficient_funds")
    problem(sit(poor, table["id"], key="poor"), 422, "insufficient_funds")
    assert [s["player_id"] for s in operator.seats(table["id"])] == [rich.player_id]
    by_player = {c.player_id: c for c in operator.calls(kind="debit")}
    assert len(operator.calls()) == 2
    assert by_player[rich.player_id].state == "booked"
    assert (by_player[poor.player_id].state, by_player[poor.player_id].declined) == (
        "failed",
        "insufficient_funds",
    )
    assert (operator.balance(rich), operator.balance(poor)) == (START - STAKE, STAKE - 1)
    books_agree(operator)

    operator.wallet.faults({"kinds": ["credit"], "fault": "error_5xx", "times": 1})
    left = leave(rich, table["id"])
    assert left.status_code == 200, left.get_json()
    books_agree(operator)
    [credit] = operator.calls(kind="credit")
    assert (credit.reason, credit.amount, credit.player_id) == ("release", STAKE, rich.player_id)
    assert credit.attempts == 2
    assert (operator.balance(rich), operator.balance(poor)) == (START, STAKE - 1)
    books_agree(operator)


# --- 5. ten debits of one player at once -------------------------------------------------------


def test_ten_concurrent_debits_of_one_player_take_only_what_it_has(
    stack: Stack, beat_worker: Any, tmp_path: Path
) -> None:
    """Ten seat requests of one player at ten tables, sent together over ten connections,
    with money for four stakes: four seats, six 422 ``insufficient_funds``, the operator's
    balance never below zero, and the books agree."""
    with operator_with_wallet(stack, tmp_path, timeout_ms=5000) as operator:
        tables = [open_table(operator.api, stake=STAKE) for _ in range(10)]
        balance = 4 * STAKE + STAKE // 2
        player = operator.player(balance=balance)
        seen: list[int] = []
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                seen.append(operator.balance(player))

        answers: list[Any] = [None] * len(tables)
        barrier = threading.Barrier(len(tables))

        def take(index: int) -> None:
            barrier.wait()
            answers[index] = sit(player, tables[index]["id"])

        watcher = threading.Thread(target=watch)
        watcher.start()
        threads = [threading.Thread(target=take, args=(i,)) for i in range(len(tables))]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            done.set()
            watcher.join()
        statuses = Counter(a.status_code for a in answers)
        assert statuses == {201: balance // STAKE, 422: len(tables) - balance // STAKE}, [
            a.get_json() for a in answers
        ]
        for answer in answers:
            if answer.status_code == 422:
                problem(answer, 422, "insufficient_funds")
        assert seen and min(seen) >= 0
        assert operator.balance(player) == balance - 4 * STAKE
        debits = operator.calls(kind="debit")
        assert Counter(c.state for c in debits) == {"booked": 4, "failed": 6}
        seated = [t for t in tables if operator.seats(t["id"])]
        assert len(seated) == 4
        books_agree(operator)


# --- 6. a player token that expires between the debit and the credit ---------------------------


def test_a_token_expired_before_the_credit_does_not_stop_it(
    stack: Stack, beat_worker: Any, operator: Operator
) -> None:
    """The winner sat down with a token of three seconds, which expires while the match is
    played; the opponent resigns and the worker settles: the winner's payout is credited
    (the wallet failing it once first) and acknowledged, though its token is long dead."""
    table = open_table(operator.api, stake=STAKE, fee={"bps": 1000})
    winner = operator.player(ttl_seconds=3)
    loser = operator.player()
    for player in (winner, loser):
        assert sit(player, table["id"]).status_code == 201
    wait_until(
        lambda: winner.client.get(f"/v1/tables/{table['id']}").status_code == 401,
        10,
        "the winner's token to expire",
    )
    problem(winner.client.get(f"/v1/matches/{table['match_id']}"), 401, "token_expired")
    operator.wallet.faults({"kinds": ["credit"], "fault": "error_5xx", "times": 1})
    resign(loser, table["match_id"])
    wait_until(lambda: operator.settled(table["match_id"]), 30, "the worker's settlement")
    books_agree(operator)
    credits = {c.player_id: c for c in operator.calls(kind="credit")}
    assert credits[winner.player_id].amount == 2 * STAKE - 100
    assert credits[winner.player_id].state == "acknowledged"
    assert operator.balance(winner) == START + STAKE - 100
    assert operator.balance(loser) == START - STAKE
    books_agree(operator)


# --- 7. a worker killed while a credit is on its way -------------------------------------------


def test_a_worker_killed_while_sending_a_credit_leaves_it_to_another(
    stack: Stack, tmp_path: Path
) -> None:
    """The only worker settles a match and is SIGKILLed while its first credit is at the
    wallet (held there by ``delay_apply``, which then applies it). Another worker's sweep
    sends the credit again with the same id once its lease has run out: acknowledged as
    already processed, and the payout applied once; the other credit is sent too."""
    with operator_with_wallet(stack, tmp_path, timeout_ms=4000) as operator:
        table = open_table(operator.api, stake=STAKE, fee={"bps": 1000})
        alice, bob = operator.player(), operator.player()
        for player in (alice, bob):
            assert sit(player, table["id"]).status_code == 201
        operator.wallet.faults(
            {"kinds": ["credit"], "fault": "delay_apply", "times": 1, "seconds": 2.5}
        )

        def credit_at_the_wallet() -> bool:
            return any(r["kind"] == "credit" for r in operator.wallet.requests())

        with celery_worker(stack, beat=False) as first:
            resign(bob, table["match_id"])
            # The first credit to arrive is held 2.5 s: the worker is killed while it waits.
            wait_until(credit_at_the_wallet, 30, "the first worker's credit at the wallet")
            kill(first, signal.SIGKILL)
        wait_until(
            lambda: all(r["answer"] for r in operator.wallet.requests()),
            10,
            "the held credit to be applied",
        )
        [delayed] = [r for r in operator.wallet.requests() if r["fault"] == "delay_apply"]
        assert delayed["applied"] and delayed["answer"] == "ok"
        [pending] = operator.calls(id=delayed["transaction_id"])
        # The killed worker leased it and never heard the answer.
        assert pending.state == "pending" and pending.attempts == 0
        assert pending.locked_until is not None

        with celery_worker(stack, beat=True):
            books_agree(operator)
        credits = {c.player_id: c for c in operator.calls(kind="credit")}
        assert credits[alice.player_id].amount == 2 * STAKE - 100
        answers = [r["answer"] for r in operator.requests_for(pending.id)]
        assert answers == ["ok", "already_processed"]
        assert operator.balance(alice) == START + STAKE - 100
        assert operator.balance(bob) == START - STAKE
        books_agree(operator)


# --- 8. a seat request whose gunicorn worker is killed mid-flight ------------------------------


def _connections(port: int, *, remote: bool) -> set[str]:
    """Socket inodes of this machine's established TCP connections whose remote (or local)
    port is ``port``."""
    found = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(name).read_text().splitlines()[1:]:
            fields = line.split()
            address = fields[2] if remote else fields[1]
            if int(address.rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                found.add(f"socket:[{fields[9]}]")
    return found


def gunicorn_worker_on(sockets: set[str]) -> int:
    """The gunicorn worker process holding one of ``sockets``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if b"gunicorn" not in (entry / "cmdline").read_bytes():
                continue
            if any(os.readlink(fd) in sockets for fd in (entry / "fd").iterdir()):
                return int(entry.name)
        except OSError:  # gone meanwhile, or not ours
            continue
    raise AssertionError(f"no gunicorn worker holds {sockets}")


def in_background(send: Any) -> threading.Thread:
    """``send()`` on a thread of its own (its answer never comes: its worker is killed)."""

    def run() -> None:
        with suppress(OSError):  # the connection dies with the worker
            send()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("fault", ["delay_apply", "timeout_after_apply"])
def test_a_seat_whose_worker_is_killed_mid_debit_is_taken_at_once_by_its_retry(
    stack: Stack, beat_worker: Any, tmp_path: Path, fault: str
) -> None:
    """The player's seat request is at the operator's wallet (held there 3 s before it is
    applied, or applied and its answer held 3 s) when its gunicorn worker is SIGKILLed. The
    same request again (its Idempotency-Key) seats at once, not 409
    ``idempotency_key_in_use`` until the sweep's minute is up: the key's holder is gone, so
    the retry rolls the dead request's debit back and debits anew. The player pays one
    stake, and the books agree."""
    with operator_with_wallet(stack, tmp_path, timeout_ms=5000) as operator:
        table = open_table(operator.api, stake=STAKE)
        player = operator.player()
        operator.wallet.faults({"kinds": ["debit"], "fault": fault, "times": 1, "seconds": 3.0})
        in_background(lambda: sit(player, table["id"], key="seat-1"))
        wait_until(
            lambda: any(r["kind"] == "debit" for r in operator.wallet.requests()),
            10,
            "the debit at the wallet",
        )
        port = int(operator.wallet.url.rsplit(":", 1)[1])
        os.kill(gunicorn_worker_on(_connections(port, remote=True)), signal.SIGKILL)
        # A retry a moment too soon may still find the key held (the database notices the
        # dead connection within milliseconds): 409, retry shortly, as a client does.
        answers: list[Any] = []

        def retried() -> bool:
            answers.append(sit(player, table["id"], key="seat-1"))
            return bool(answers[-1].status_code != 409)

        wait_until(retried, 5, "the retry to find the key free")  # not the sweep's minute
        retry = answers[-1]
        assert retry.status_code == 201, retry.get_json()
        assert [s["player_id"] for s in operator.seats(table["id"])] == [player.player_id]
        replay = sit(player, table["id"], key="seat-1")
        assert replay.status_code == 201 and replay.headers.get("Idempotent-Replayed") == "true"
        books_agree(operator)
        dead, booked = operator.calls(kind="debit")
        assert (dead.state, booked.state) == ("rolled_back", "booked")
        assert operator.balance(player) == START - STAKE
        [first] = operator.requests_for(dead.id)
        if fault == "delay_apply":  # it arrived after its rollback: refused, never applied
            assert (first["answer"], first["applied"]) == ("transaction_rolled_back", False)
        else:  # applied, then undone by its rollback
            assert first["applied"] and theirs(operator, dead.id) == "rolled_back"


def theirs(operator: Operator, transaction_id: str) -> str | None:
    """The state of a transaction at the operator's wallet (None: it holds none)."""
    found = [t for t in operator.wallet.transactions() if t["transaction_id"] == transaction_id]
    return str(found[0]["state"]) if found else None


def test_a_transfer_seat_whose_worker_is_killed_while_it_waits_frees_its_key(
    stack: Stack,
) -> None:
    """Transfer mode: the seat request waits inside its transaction for the table's row lock
    (held here, as a long transaction would) when its gunicorn worker is SIGKILLed. The
    database notices the dead client within a second and rolls its transaction back, so the
    key is free (no 409 while nothing runs) and the retry seats, once."""
    from sqlalchemy import text

    from tests.api.play_clients import player_client

    _operator_id, key = new_operator(stack.app)
    api = ApiClient(HttpClient(stack.base), key)
    table = open_table(api, stake=STAKE)
    player = player_client(api, deposit=START)
    engine = stack.app.extensions["gin"]["engine"]
    waiting = text(
        "SELECT pid, client_port FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock' AND query ILIKE '%FROM game_tables%'"
    )
    with engine.connect() as watcher, engine.connect() as blocker:
        blocker.execute(
            text("SELECT id FROM game_tables WHERE id = :id FOR UPDATE"), {"id": table["id"]}
        )
        in_background(lambda: player.post(f"/v1/tables/{table['id']}/seats", {}, key="seat-1"))
        found: list[Any] = []

        def stuck() -> bool:
            found[:] = watcher.execute(waiting).all()
            watcher.rollback()
            return len(found) == 1

        wait_until(stuck, 10, "the seat request waiting for the table's lock")
        [(backend, client_port)] = found
        os.kill(gunicorn_worker_on(_connections(client_port, remote=False)), signal.SIGKILL)

        def gone() -> bool:
            alive = watcher.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": backend}
            ).scalar()
            watcher.rollback()
            return alive == 0

        wait_until(gone, 5, "the dead request's transaction to end")
        blocker.rollback()
    retry = player.post(f"/v1/tables/{table['id']}/seats", {}, key="seat-1")
    assert retry.status_code == 201, retry.get_json()
    assert "Idempotent-Replayed" not in retry.headers
    seats = api.get(f"/v1/tables/{table['id']}").get_json()["seats"]
    assert [s["player_id"] for s in seats] == [player.player_id]  # type: ignore[attr-defined]
    wallet = api.get(f"/v1/players/{player.player_id}/wallets/EUR").get_json()  # type: ignore[attr-defined]
    assert wallet["held"]["amount"] == STAKE and wallet["available"]["amount"] == START - STAKE
