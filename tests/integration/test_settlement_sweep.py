"""Beat's settlement sweep: every SETTLEMENT_SWEEP_SECONDS, over the matches that
have waited that long unsettled, read from ix_matches_unsettled."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from service.config import ConfigError, Settings
from service.db.match_models import MatchRow
from service.usecases import settlement
from tests.conftest import in_unit, plan_of, serving
from tests.integration.workers import finished_matches
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


def test_the_sweep_leaves_recent_matches_to_their_own_settlement(
    fresh_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beat's sweep skips a match that finished less than an interval ago (its settlement is
    probably on its way); a worker's catch-up takes every unsettled one. Both read
    ix_matches_unsettled."""
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    sent: list[list[Any]] = []
    monkeypatch.setattr(tasks, "send_task", lambda name, args: sent.append(args))
    with serving(fresh_database_url) as app:
        [match_id] = finished_matches(app, 1)
        assert tasks.sweep_unsettled(older_than=3600) == 0
        assert tasks.sweep_unsettled() == 1
        assert sent == [[match_id]]
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            finished_at = session.get(MatchRow, match_id).finished_at
            session.rollback()
            assert in_unit(
                session, settlement.unsettled_finished_matches, finished_before=finished_at
            ) == [match_id]
            assert (
                in_unit(
                    session,
                    settlement.unsettled_finished_matches,
                    finished_before=finished_at - timedelta(microseconds=1),
                )
                == []
            )
        finally:
            session.close()
        engine = app.extensions["gin"]["engine"]
        if engine.dialect.name == "postgresql":
            recent = settlement.UNSETTLED.where(MatchRow.finished_at <= finished_at)
            plan = plan_of(engine, recent.params(limit=100))
            assert "ix_matches_unsettled" in plan, plan


def test_a_workers_catch_up_queues_every_page_and_beats_sweep_one(
    fresh_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis that came back empty lost every queued settlement: the catch-up sweep queues
    all the unsettled matches, page after page, each once, oldest first; beat's sweep one
    page (it comes again, and a worker behind is not sent its backlog again)."""
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    monkeypatch.setattr(tasks, "SWEEP_BATCH", 2)
    sent: list[str] = []
    monkeypatch.setattr(tasks, "send_task", lambda name, args: sent.extend(args))
    with serving(fresh_database_url) as app:
        match_ids = finished_matches(app, 5)
        assert tasks.sweep_unsettled() == 5
        assert sent == match_ids
        sent.clear()
        assert tasks.sweep_unsettled(older_than=0.001) == 2
        assert sent == match_ids[:2]
