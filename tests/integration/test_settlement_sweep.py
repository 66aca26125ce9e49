"""The settlement sweep: beat's every SETTLEMENT_SWEEP_SECONDS over the matches that have
waited that long unsettled, a worker's on connecting over all of them; each settles them
itself, read from ix_matches_unsettled and claimed with SKIP LOCKED."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.pool import NullPool

from service.config import ConfigError, Settings
from service.db.match_models import MatchRow
from service.usecases import settlement
from tests.conftest import plan_of, serving
from tests.integration.workers import finished_matches, settled_once
from worker import celery_app, tasks


def test_beat_sweeps_every_settlement_sweep_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SETTLEMENT_SWEEP_SECONDS", raising=False)
    assert Settings.from_env().settlement_sweep_seconds == 5
    monkeypatch.setenv("SETTLEMENT_SWEEP_SECONDS", "7")
    entry = celery_app.make_celery(Settings.from_env()).conf.beat_schedule[
        "sweep-unsettled-matches"
    ]
    assert entry["task"] == "settlement.sweep"
    assert entry["schedule"] == 7
    assert entry["kwargs"] == {"older_than": 7}  # the matches that waited a whole interval
    monkeypatch.setenv("SETTLEMENT_SWEEP_SECONDS", "0")
    with pytest.raises(ConfigError, match="SETTLEMENT_SWEEP_SECONDS"):
        Settings.from_env()


@pytest.fixture
def sweeping(fresh_database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The tasks' database is ``fresh_database_url``; their engine is closed afterwards."""
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    yield fresh_database_url
    # Only this database's engine: clearing the whole cache would leave other tests'
    # engines (the shared database's) to be collected with their connections still open.
    tasks._sessions(fresh_database_url).kw["bind"].dispose()


def test_the_sweep_leaves_recent_matches_to_their_own_settlement(
    sweeping: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beat's sweep skips a match that finished less than an interval ago (its settlement is
    probably on its way); a worker's catch-up settles every unsettled one. Both read
    ix_matches_unsettled."""
    monkeypatch.setattr(tasks, "send_task", lambda name, args: pytest.fail(f"queued {name}"))
    with serving(sweeping) as app:
        [match_id] = finished_matches(app, 1)
        assert tasks.sweep_unsettled(older_than=3600) == 0
        assert not settled_once(app, [match_id])
        assert tasks.sweep_unsettled() == 1
        assert settled_once(app, [match_id])
        assert tasks.sweep_unsettled() == 0
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            finished_at = session.get(MatchRow, match_id).finished_at
        finally:
            session.close()
        engine = app.extensions["gin"]["engine"]
        if engine.dialect.name == "postgresql":
            recent = settlement.UNSETTLED.where(MatchRow.finished_at <= finished_at)
            plan = plan_of(engine, recent.params(limit=100))
            assert "ix_matches_unsettled" in plan, plan


def test_the_sweep_settles_the_backlog_oldest_first_each_once(
    sweeping: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis that came back empty lost every queued settlement: one sweep settles them all
    itself, oldest first, each in its own unit and exactly once, queueing nothing per match;
    a match whose settlement fails is left for the next sweep and the others still settled."""
    sent: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(tasks, "send_task", lambda name, args: sent.append((name, args)))
    with serving(sweeping) as app:
        match_ids = finished_matches(app, 5)
        order: list[str] = []
        real = settlement.settle_with_credits  # settle_match's, and the workers' path

        def settle(session: Any, match_id: str, now: Any) -> Any:
            order.append(match_id)
            if match_id == match_ids[1] and order.count(match_id) == 1:
                raise RuntimeError("a bug in one match's settlement")
            return real(session, match_id, now)

        monkeypatch.setattr(settlement, "settle_with_credits", settle)
        assert tasks.sweep_unsettled() == 4
        assert order == match_ids  # oldest first, the failed one tried once
        assert settled_once(app, [m for m in match_ids if m != match_ids[1]])
        assert not settled_once(app, [match_ids[1]])
        assert tasks.sweep_unsettled() == 1  # the next sweep tries it again
        assert settled_once(app, match_ids)
        assert sent == []


def test_a_long_sweep_hands_the_rest_to_a_sweep_it_queues(
    sweeping: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks, "SWEEP_SECONDS", 0.0)
    sent: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(tasks, "send_task", lambda name, args: sent.append((name, args)))
    with serving(sweeping) as app:
        finished_matches(app, 2)
        assert tasks.sweep_unsettled(older_than=7) == 0
    assert sent == [("settlement.sweep", [7])]


def test_a_sweep_passes_over_a_match_another_transaction_holds(
    sweeping: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sweeps side by side, or a sweep beside a settlement task, never wait on each other:
    a match whose row another transaction holds is skipped (``SKIP LOCKED``), the others
    settled; the held one is left to its holder or a later sweep."""
    if not sweeping.startswith("postgresql"):
        pytest.skip("SKIP LOCKED: PostgreSQL (SQLite serialises writers)")
    monkeypatch.setattr(tasks, "send_task", lambda name, args: None)
    with serving(sweeping) as app:
        match_ids = finished_matches(app, 3)
        engine = create_engine(sweeping, poolclass=NullPool)
        try:
            with engine.connect() as holder, holder.begin():
                holder.execute(
                    select(MatchRow.id).where(MatchRow.id == match_ids[0]).with_for_update()
                )
                assert tasks.sweep_unsettled() == 2  # returns: it did not wait
            assert settled_once(app, match_ids[1:])
            assert not settled_once(app, match_ids[:1])
            assert tasks.sweep_unsettled() == 1
            assert settled_once(app, match_ids)
        finally:
            engine.dispose()
        claim = plan_of(
            app.extensions["gin"]["engine"],
            select(MatchRow.id)
            .where(MatchRow.status.in_(settlement.SETTLED_STATUSES), MatchRow.settled_at.is_(None))
            .order_by(MatchRow.finished_at)
            .limit(1),
        )
        assert "ix_matches_unsettled" in claim, claim


def test_the_relay_settles_what_it_publishes_and_shares_a_backlog_out(
    sweeping: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay settles the finished matches it takes itself, each once, instead of queueing
    a settlement task per match; more than one, and it queues a sweep for another process."""
    sent: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(tasks, "send_task", lambda name, args: sent.append((name, args)))
    with serving(sweeping) as app:
        [alone] = finished_matches(app, 1)
        tasks.relay_outbox()
        assert settled_once(app, [alone])
        assert sent == []
        backlog = finished_matches(app, 3)
        tasks.relay_outbox()
        assert settled_once(app, [alone, *backlog])
        assert sent == [("settlement.sweep", [])]
        tasks.relay_outbox()  # the settlements' own events: nothing to settle
        assert sent == [("settlement.sweep", [])]
