"""How a money-moving request uses the database: one transaction per request (claim, work and
stored answer together, retried whole after a deadlock), API key revocation, the 503 answer
when the database connection is lost, and the per-player clearing sub-accounts."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError, OperationalError

from service.db.models import IdempotencyRow, LedgerAccount
from service.ledger.postings import AccountKind, AccountRef
from service.usecases import wallets
from tests.conftest import ApiClient


def _available(api: ApiClient, pid: str) -> int:
    return int(api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"])


class _Deadlock(Exception):
    sqlstate = "40P01"


def test_a_deadlock_victim_is_run_again_and_moves_money_once(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = api.new_player()["id"]
    real = wallets.deposit
    calls: list[int] = []

    def deadlocked_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        movement = real(*args, **kwargs)  # the money moves, then the transaction dies
        if len(calls) == 1:
            raise OperationalError("UPDATE ledger_accounts", {}, _Deadlock())
        return movement

    monkeypatch.setattr(wallets, "deposit", deadlocked_once)
    response = api.deposit(pid, 250, key="dl-1")
    assert response.status_code == 201, response.get_json()
    assert len(calls) == 2
    assert _available(api, pid) == 250  # the first attempt's movement was rolled back
    again = api.deposit(pid, 250, key="dl-1")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert _available(api, pid) == 250


def test_a_refused_request_stores_its_refusal_and_moves_nothing(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    body = {"amount": {"amount": 100, "currency": "EUR"}}
    first = api.post(f"/v1/players/{pid}/withdrawals", body, key="wd-1")
    assert first.status_code == 422 and first.get_json()["code"] == "insufficient_funds"
    api.deposit(pid, 500)
    # The key's answer is the refusal, even though the withdrawal would now succeed.
    again = api.post(f"/v1/players/{pid}/withdrawals", body, key="wd-1")
    assert again.status_code == 422 and again.headers["Idempotent-Replayed"] == "true"
    assert _available(api, pid) == 500


def test_a_server_error_leaves_no_trace_of_the_key(
    api: ApiClient, app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = api.new_player()["id"]

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(wallets, "deposit", broken)
    assert api.deposit(pid, 100, key="boom").status_code == 500
    session = app.extensions["gin"]["sessionmaker"]()
    with session.begin():
        stored = session.scalar(
            select(func.count()).select_from(IdempotencyRow).where(IdempotencyRow.key == "boom")
        )
    session.close()
    assert stored == 0
    monkeypatch.undo()
    assert api.deposit(pid, 100, key="boom").status_code == 201  # the retry runs for real
    assert _available(api, pid) == 100


def test_a_lost_database_connection_is_a_503_problem(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = api.new_player()["id"]

    def disconnected(*_args: Any, **_kwargs: Any) -> Any:
        raise DBAPIError(
            "SELECT 1", {}, Exception("server closed the connection"), connection_invalidated=True
        )

    monkeypatch.setattr(wallets, "deposit", disconnected)
    response = api.deposit(pid, 100, key="lost")
    assert response.status_code == 503
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "service_unavailable"
    assert response.headers["Retry-After"] == "1"
    monkeypatch.undo()
    assert _available(api, pid) == 0


def test_revoking_a_key_stops_it_at_once_in_every_process(api: ApiClient, app: Any) -> None:
    from tests.conftest import make_test_app

    created = api.post("/v1/api-keys", {"label": "short-lived"}).get_json()
    elsewhere = make_test_app(app.config["DATABASE_URL"])  # another server process
    try:
        other = ApiClient(elsewhere.test_client(), created["secret"])
        assert other.get("/v1/operator").status_code == 200
        assert api.delete(f"/v1/api-keys/{created['id']}").status_code == 200
        assert other.get("/v1/operator").status_code == 401
    finally:
        elsewhere.extensions["gin"]["engine"].dispose()


def test_each_players_cashier_has_its_own_clearing_sub_account(api: ApiClient, app: Any) -> None:
    players = [api.new_player()["id"] for _ in range(3)]
    for pid in players:
        assert api.deposit(pid, 100).status_code == 201
    assert (
        api.post(
            f"/v1/players/{players[0]}/withdrawals",
            {"amount": {"amount": 40, "currency": "EUR"}},
            key="w-1",
        ).status_code
        == 201
    )
    session = app.extensions["gin"]["sessionmaker"]()
    with session.begin():
        clearing = dict(
            session.execute(
                select(LedgerAccount.player_id, LedgerAccount.balance).where(
                    LedgerAccount.operator_id == api.operator_id,  # type: ignore[attr-defined]
                    LedgerAccount.kind == AccountKind.OPERATOR_CLEARING.value,
                )
            ).all()
        )
    session.close()
    assert clearing == {players[0]: -60, players[1]: -100, players[2]: -100}
    # The player's own history and wallets show only the player's accounts.
    entries = api.get(f"/v1/players/{players[0]}/entries").get_json()["data"]
    assert [e["amount"]["amount"] for e in entries] == [-40, 100]
    assert {e["account"] for e in entries} == {"available"}
    wallets_ = api.get(f"/v1/players/{players[0]}/wallets").get_json()["data"]
    assert [(w["currency"], w["available"]["amount"]) for w in wallets_] == [("EUR", 60)]


def test_clearing_sub_accounts_round_trip() -> None:
    ref = AccountRef.cashier_clearing("op_1", "ply_1", "EUR")
    assert str(ref) == "operator_clearing:op_1:ply_1:-:EUR"
    assert AccountRef.parse(str(ref)) == ref
    assert AccountRef.operator_clearing("op_1", "EUR").player_id is None
    with pytest.raises(ValueError):
        AccountRef(AccountKind.HOUSE_FEE, "op_1", "ply_1", None, "EUR")


def test_the_outbox_relay_is_asked_only_after_the_final_action_commits(
    api: ApiClient, app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an Idempotency-Key the resignation commits after the view returns; the relay must
    be asked after that, or it would find nothing to publish."""
    from service.db.match_models import OutboxEvent
    from tests.api.play_clients import join, open_table, player_client
    from worker.celery_app import app as celery_app

    table = open_table(api)
    players = [player_client(api), player_client(api)]
    for client in players:
        assert join(client, table["id"]).status_code == 201
    visible_at_kick: list[int] = []

    def send_task(name: str, **_kwargs: Any) -> None:
        assert name == "outbox.relay"
        reader = app.extensions["gin"]["sessionmaker"]()  # another connection: committed only
        with reader.begin():
            visible_at_kick.append(
                reader.scalar(
                    select(func.count())
                    .select_from(OutboxEvent)
                    .where(
                        OutboxEvent.subject_id == table["match_id"],
                        OutboxEvent.type == "match.finished",
                    )
                )
                or 0
            )
        reader.close()

    monkeypatch.setattr(celery_app, "send_task", send_task)
    response = players[0].post(
        f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"}, key="resign-1"
    )
    assert response.status_code == 200 and response.get_json()["status"] == "finished"
    assert visible_at_kick == [1]


def test_argument_schemas_are_built_once_not_per_request(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flask_smorest

    from service.api.schemas import MovementIn

    built: list[int] = []
    original = MovementIn.__init__

    def counting_init(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        original(self, *args, **kwargs)

    parser = flask_smorest.Blueprint.ARGUMENTS_PARSER
    monkeypatch.setattr(parser, "_instances", {})
    monkeypatch.setattr(MovementIn, "__init__", counting_init)
    pid = api.new_player()["id"]
    for _ in range(3):
        assert api.deposit(pid, 100).status_code == 201
    assert built == [1]


def test_a_unit_of_work_never_joins_a_transaction_left_open(app: Any) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import InvalidRequestError

    from service.usecases import unit_of_work

    session = app.extensions["gin"]["sessionmaker"]()
    try:
        session.execute(text("SELECT 1"))  # an unrelated, autobegun transaction
        with pytest.raises(InvalidRequestError):
            unit_of_work.run(session, lambda: None)  # never silently left uncommitted
    finally:
        session.close()


class _DriverError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("error", "runs"),
    [
        ("deadlock", 2),  # a deadlock victim is run again, and then commits
        ("serialization", 2),
        ("twin", 2),  # a unique key a twin took: run again, it sees the twin's row
        ("other", 1),  # anything else is raised at once
        ("always", 3),  # at most ATTEMPTS runs, then the error is raised
    ],
)
def test_a_unit_of_work_reruns_what_the_database_asks_to_rerun(
    app: Any, error: str, runs: int
) -> None:
    from sqlalchemy import func, select
    from sqlalchemy.exc import IntegrityError, OperationalError

    from service.clock import utcnow
    from service.db.models import Operator
    from service.usecases import unit_of_work
    from service.usecases.operators import create_operator

    errors = {
        "deadlock": OperationalError("x", {}, _DriverError("40P01")),
        "serialization": OperationalError("x", {}, _DriverError("40001")),
        "twin": IntegrityError("x", {}, _DriverError("23505")),
        "other": OperationalError("x", {}, _DriverError("57014")),
        "always": OperationalError("x", {}, _DriverError("40P01")),
    }
    session = app.extensions["gin"]["sessionmaker"]()
    name = f"rerun-{error}"
    calls: list[int] = []

    def work() -> str:
        calls.append(1)
        operator, _ = create_operator(session, name, utcnow())
        if error == "always" or len(calls) == 1:
            raise errors[error]  # after writing: the rollback must undo it
        return operator.id

    try:
        if runs == 2:
            assert unit_of_work.run(session, work).startswith("op_")
        else:
            with pytest.raises(type(errors[error])):
                unit_of_work.run(session, work)
        assert len(calls) == runs
        with session.begin():
            kept = session.scalar(select(func.count()).where(Operator.name == name))
        assert kept == (1 if runs == 2 else 0)  # each failed run was rolled back whole
    finally:
        session.close()


def test_a_twin_answer_found_at_the_end_wins_and_this_work_is_rolled_back(
    api: ApiClient, app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup missed a twin that committed a moment earlier (PostgreSQL's window between
    the statement's snapshot and the lock): storing the answer then finds the twin's, which
    becomes the answer, and this request's own movement is rolled back."""
    from datetime import timedelta

    from service.clock import utcnow
    from service.usecases import idempotency

    pid = api.new_player()["id"]
    body = {"amount": {"amount": 300, "currency": "EUR"}}
    path = f"/v1/players/{pid}/deposits"
    digest = idempotency.request_hash("POST", path, body)
    session = app.extensions["gin"]["sessionmaker"]()
    with session.begin():  # the twin's committed answer
        idempotency.record(
            session,
            api.operator_id,
            "late-twin",
            digest,
            201,  # type: ignore[attr-defined]
            '{"id": "txn_twin"}',
            utcnow(),
            timedelta(hours=24),
        )
    session.close()
    monkeypatch.setattr(idempotency, "claim", lambda *_args, **_kwargs: None)  # missed it
    response = api.post(path, body, key="late-twin")
    assert response.status_code == 201
    assert response.get_json() == {"id": "txn_twin"}
    assert response.headers["Idempotent-Replayed"] == "true"
    assert _available(api, pid) == 0  # this request's own deposit was rolled back
