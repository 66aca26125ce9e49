"""The audit: settled matches of every format replay and reconcile clean; a statement,
a hand's action, a server seed or a ledger entry altered behind the service's back is found,
and the command line exits non-zero."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text, update

from service.cli import main
from service.clock import utcnow
from service.db import make_engine
from service.db.match_models import HandRow, Settlement
from service.db.models import LedgerAuditRow
from service.games.common import fair
from service.usecases import settlement
from tests.api.play_clients import FORMATS, play_match, seated_match
from tests.conftest import ApiClient, in_unit, make_test_app, new_operator


@dataclass
class Books:
    """A database of the test's own, an operator's client on it, and its URL for the CLI."""

    url: str
    app: Any
    api: ApiClient

    def session(self) -> Any:
        return self.app.extensions["gin"]["sessionmaker"]()

    def settle(self, match_id: str) -> Settlement:
        session = self.session()
        try:
            return in_unit(session, settlement.settle_match, match_id, utcnow())
        finally:
            session.close()

    def finished(self, *, resign: bool = False, **settings: Any) -> str:
        """A match played to its end (or resigned at once) through the API, and settled."""
        clients, table = seated_match(self.api, **settings)
        match_id: str = table["match_id"]
        if resign:
            response = clients[0].post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"})
            assert response.status_code == 200, response.get_json()
        else:
            assert play_match(clients, match_id)["status"] == "finished"
        self.settle(match_id)
        return match_id

    def tamper(self, *statements: Any, **params: Any) -> None:
        """Run ``statements`` (SQL, or callables taking the connection) with the append-only
        triggers out of the way."""
        engine = make_engine(self.url)
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SET LOCAL session_replication_role = replica"))
            else:
                for trigger in (
                    "settlements_no_update",
                    "ledger_entries_no_update",
                    "ledger_entries_continue_account",
                ):
                    connection.execute(text(f"DROP TRIGGER IF EXISTS {trigger}"))
            for statement in statements:
                if callable(statement):
                    statement(connection)
                else:
                    connection.execute(text(statement), params)
        engine.dispose()

    def cli(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str) -> tuple[int, Any]:
        """``gin-service audit ARGS --report PATH`` in-process: exit status and report."""
        monkeypatch.setenv("DATABASE_URL", self.url)
        path = tmp_path / "audit.json"
        status = main(["audit", *args, "--report", str(path), "--no-progress"])
        return status, json.loads(path.read_text())


@pytest.fixture
def books(fresh_database_url: str) -> Iterator[Books]:
    app = make_test_app(fresh_database_url)
    _operator_id, key = new_operator(app)
    yield Books(fresh_database_url, app, ApiClient(app.test_client(), key))
    app.extensions["gin"]["engine"].dispose()


def findings(report: dict[str, Any]) -> list[str]:
    """Every discrepancy's field in a CLI report."""
    fields = [d["field"] for s in report["settlements"] for d in s["discrepancies"]]
    return fields + [d["field"] for d in (report["ledger"] or {}).get("discrepancies", [])]


def test_settled_matches_of_every_format_audit_clean(
    books: Books, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    matches = [books.finished(**settings) for settings in FORMATS]
    matches.append(
        books.finished(
            resign=True,
            format="money_play",
            stake_per_point=5,
            min_buyin=2000,
            max_buyin=5000,
            target=50,
        )
    )
    status, report = books.cli(monkeypatch, tmp_path)
    assert findings(report) == []
    assert status == 0 and report["ok"] is True
    assert report["settlements_checked"] == len(matches)
    audited = {s["match_id"]: s for s in report["settlements"]}
    assert set(audited) == set(matches)
    assert all(s["hands_replayed"] >= 1 for s in audited.values())
    ledger = report["ledger"]
    assert ledger["ok"] and ledger["settled_matches_checked"] == len(matches)
    assert ledger["transactions_checked"] > 0 and ledger["entries_checked"] > 0
    # One match alone, and a time range that holds none of them.
    status, one = books.cli(monkeypatch, tmp_path, "--match", matches[0])
    assert status == 0 and [s["match_id"] for s in one["settlements"]] == [matches[0]]
    status, none = books.cli(monkeypatch, tmp_path, "--until", "2000-01-01T00:00:00Z")
    assert status == 0 and none["settlements_checked"] == 0


FTK = FORMATS[0]  # First To Knock: one decided hand ends it, so a whole match is quick


def first_hand(books: Books, match_id: str) -> HandRow:
    session = books.session()
    try:
        with session.begin():
            row: HandRow = session.scalars(
                select(HandRow).where(HandRow.match_id == match_id, HandRow.number == 1)
            ).one()
            session.expunge(row)
            return row
    finally:
        session.close()


def update_hand(books: Books, match_id: str, **values: Any) -> None:
    engine = make_engine(books.url)
    table = HandRow.__table__
    with engine.begin() as connection:
        connection.execute(
            update(table).where(table.c.match_id == match_id, table.c.number == 1).values(**values)
        )
    engine.dispose()


def test_an_edited_statement_is_found(
    books: Books, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    match_id = books.finished(**FORMATS[1])  # Match Play: several hands
    clean = books.finished(**FTK)
    session = books.session()
    with session.begin():
        stored = session.scalars(select(Settlement).where(Settlement.match_id == match_id)).one()
        statement = dict(stored.statement)
        settlement_id = stored.id
    session.close()
    winner = statement["winner"]
    statement["payouts"] = list(statement["payouts"])
    statement["payouts"][winner] += 100  # the winner "received" one euro more
    books.tamper(
        lambda connection: connection.execute(
            update(Settlement.__table__)
            .where(Settlement.__table__.c.id == settlement_id)
            .values(statement=statement)
        )
    )
    status, report = books.cli(monkeypatch, tmp_path)
    assert status == 1 and report["ok"] is False
    audited = {s["match_id"]: s for s in report["settlements"]}
    assert audited[clean]["ok"] is True
    wrong = {d["field"]: d for d in audited[match_id]["discrepancies"]}
    assert "statement.payouts" in wrong
    assert wrong["statement.payouts"]["actual"][winner] == (
        wrong["statement.payouts"]["expected"][winner] + 100
    )
    # The ledger moved the true payout, so the capture no longer matches the stored statement.
    assert any(f.startswith("ledger.capture[") for f in wrong)
    assert report["ledger"]["ok"] is True  # the books themselves are intact


@pytest.mark.parametrize(
    "kinds",
    [("DISCARD", "KNOCK", "GIN"), ("DRAW_STOCK", "TAKE_UPCARD", "DRAW_DISCARD")],
    ids=["played", "drawn"],
)
def test_an_edited_hand_action_is_found(
    books: Books, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kinds: tuple[str, ...]
) -> None:
    """Another card discarded or knocked with (the engine refuses it or the play diverges), or
    another card claimed drawn (the replayed history differs). Every hand has both."""
    for _ in range(5):  # a big gin straight from the upcard names no card: play another
        match_id = books.finished(**FTK)
        history = first_hand(books, match_id).history
        assert history is not None
        actions = history["actions"]
        i = next((i for i, a in enumerate(actions) if a["action"] in kinds), -1)
        if i >= 0:
            break
    assert i >= 0, "no hand with such an action in five matches"
    others = sorted(set(history["deck"]) - {actions[i]["card"]})
    actions[i] = {**actions[i], "card": others[0]}
    update_hand(books, match_id, history=history)
    status, report = books.cli(monkeypatch, tmp_path, "--match", match_id)
    assert status == 1
    fields = findings(report)
    # Refused by the engine, or a legal play that ends elsewhere than the stored hand; in
    # either case not what the append-only action log says happened.
    assert any(f.startswith(("hands[1].history.", "match_actions[")) for f in fields), fields
    if "DRAW_STOCK" in kinds:
        assert f"hands[1].history.actions[{i}].card" in fields
    assert report["settlements"][0]["ok"] is False


def test_a_changed_server_seed_is_found(
    books: Books, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    match_id = books.finished(**FTK)
    update_hand(books, match_id, server_seed=fair.new_server_seed())
    status, report = books.cli(monkeypatch, tmp_path)
    assert status == 1
    fields = findings(report)
    assert "hands[1].commitment" in fields and "hands[1].history.deck" in fields, fields


def test_an_edited_ledger_entry_is_found(
    books: Books, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    match_id = books.finished(**FTK)
    session = books.session()
    with session.begin():
        txn_id = session.scalars(
            select(Settlement.ledger_transaction_id).where(Settlement.match_id == match_id)
        ).one()
    session.close()
    books.tamper(
        "UPDATE ledger_entries SET amount = amount + 1, balance_after = balance_after + 1 "
        "WHERE transaction_id = :t AND amount > 0",
        t=txn_id,
    )
    status, report = books.cli(monkeypatch, tmp_path)
    assert status == 1
    fields = findings(report)
    assert any(f.startswith("ledger.capture[") for f in fields), fields
    assert any(f.startswith("ledger.chain[") for f in fields), fields
    assert any(f.startswith(f"ledger.transaction[{txn_id}]") for f in fields), fields
    assert any(f.startswith("ledger.account[") for f in fields), fields


def test_reconcile_task_logs_and_counts_ledger_problems(
    books: Books, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from worker.audit_tasks import failures_total, reconcile
    from worker.celery_app import app as celery_app

    assert "audit.reconcile" in celery_app.tasks
    assert "audit.reconcile" in {e["task"] for e in celery_app.conf.beat_schedule.values()}
    monkeypatch.setenv("DATABASE_URL", books.url)
    match_id = books.finished(resign=True, **FTK)
    clean = reconcile.apply().get()
    assert clean["ok"] is True and clean["settled_matches_checked"] == 1
    before = failures_total()
    books.tamper(
        "UPDATE ledger_entries SET amount = amount - 1 WHERE transaction_id IN "
        "(SELECT ledger_transaction_id FROM settlements WHERE match_id = :m) AND amount < 0",
        m=match_id,
    )
    with caplog.at_level(logging.ERROR, logger="worker.audit_tasks"):
        result = reconcile.apply().get()
    assert result["ok"] is False and result["discrepancies"]
    assert failures_total() == before + len(result["discrepancies"])
    engine = make_engine(books.url)
    with engine.connect() as connection:  # each operator's report is kept as its last audit
        stored = connection.execute(select(LedgerAuditRow.ok, LedgerAuditRow.report)).all()
    engine.dispose()
    assert [(ok, report["discrepancies"]) for ok, report in stored] == [
        (False, result["discrepancies"])
    ]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any("FAILED" in r.getMessage() for r in errors)


def test_audit_of_an_unknown_match_is_a_usage_error(
    books: Books, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", books.url)
    assert main(["audit", "--match", "mch_nope", "--no-progress"]) == 2
    assert "mch_nope" in capsys.readouterr().err
    assert main(["audit", "--match", "mch_nope", "--since", "2026-01-01"]) == 2


def test_audit_of_one_match_prints_its_report_as_json(
    books: Books,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """``gin-service audit --match ID`` prints the report it writes with ``--report``; a
    discrepancy still prints it (``ok`` false), exit status 1, and one line on stderr."""
    monkeypatch.setenv("DATABASE_URL", books.url)
    match_id = books.finished(resign=True, **FTK)
    path = tmp_path / "report.json"
    status = main(["audit", "--match", match_id, "--no-progress", "--report", str(path)])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert status == 0 and report["ok"] is True, err
    assert report == json.loads(path.read_text())
    [audited] = report["settlements"]
    assert (audited["object"], audited["match_id"], audited["ok"]) == (
        "settlement_audit",
        match_id,
        True,
    )
    books.tamper(
        "UPDATE ledger_entries SET amount = amount - 1 WHERE transaction_id IN "
        "(SELECT ledger_transaction_id FROM settlements WHERE match_id = :m) AND amount < 0",
        m=match_id,
    )
    status = main(["audit", "--match", match_id, "--no-progress"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert status == 1 and report["ok"] is False
    assert err.strip() and all(line.startswith((match_id, "ledger:")) for line in err.splitlines())


def run_clock_until_over(books: Books, match_id: str, limit: int = 1000) -> str:
    """Let every turn time out (the server plays automatically) until the match is over."""
    from service.db.match_models import MatchRow
    from service.usecases import play

    session = books.session()
    start = utcnow()
    try:
        for k in range(1, limit):
            play.run_timeouts(session, start + timedelta(seconds=2 * k))
            with session.begin():
                status: str = session.get(MatchRow, match_id).status
            if status != "playing":
                return status
    finally:
        session.close()
    raise AssertionError("the clock did not end the match")


def test_automatic_play_dead_hands_void_and_timeout_forfeits_audit_clean(
    books: Books, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clock = {"turn_seconds": 1, "bank_seconds": 0, "max_timeouts": 100}
    # Nobody ever acts: the server plays every turn, never knocks, so hands die; First To
    # Knock voids the match after more dead hands than allowed and refunds both stakes.
    _clients, table = seated_match(
        books.api, format="first_to_knock", stake=300, ftk_max_dead_hands=1, clock=clock
    )
    void = table["match_id"]
    assert run_clock_until_over(books, void) == "void"
    books.settle(void)
    # Two timeouts forfeit a match in the middle of its first hand.
    _clients, table = seated_match(
        books.api, format="match_play", stake=500, clock={**clock, "max_timeouts": 2}
    )
    forfeited = table["match_id"]
    assert run_clock_until_over(books, forfeited) == "finished"
    books.settle(forfeited)
    status, report = books.cli(monkeypatch, tmp_path)
    assert findings(report) == [] and status == 0
    audited = {s["match_id"]: s for s in report["settlements"]}
    assert audited[void]["hands_replayed"] == 2 and audited[forfeited]["hands_replayed"] == 1
