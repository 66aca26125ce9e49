"""Graceful shutdown: a SIGTERM to gunicorn lets an in-flight request finish and exits 0; a
SIGTERM to a Celery worker in the middle of a task finishes the task before the worker exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text

from service.db.match_models import Settlement
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, make_test_app, new_operator, throwaway_postgres
from tests.integration.workers import ROOT, Broker, kill, wait_until
from tests.ops.servers import HttpClient, get, gunicorn, metric_samples

MATCH_ROUTE = "/v1/matches/<match_id>"


def _in_flight(base: str, route: str) -> float:
    text_ = get(base, "/metrics").get_data(as_text=True)
    return sum(
        v
        for labels, v in metric_samples(text_, "gin_http_requests_in_progress")
        if labels.get("route") == route
    )


def _started_match(app: Any) -> tuple[ApiClient, list[ApiClient], dict[str, Any]]:
    _operator, key = new_operator(app)
    api = ApiClient(app.test_client(), key)
    table = open_table(api, stake=100)
    players = [player_client(api, deposit=1000), player_client(api, deposit=1000)]
    for player in players:
        assert join(player, table["id"]).status_code == 201
    return api, players, table


@pytest.mark.slow
def test_sigterm_lets_an_in_flight_request_finish(fresh_database_url: str, tmp_path: Path) -> None:
    app = make_test_app(fresh_database_url)
    _api, players, table = _started_match(app)
    match_id = table["match_id"]
    views = [p.get(f"/v1/matches/{match_id}").get_json() for p in players]
    mover = next(i for i, v in enumerate(views) if v["you"] == v["hand"]["to_act"])
    waiter = players[1 - mover]
    version = views[mover]["version"]
    log = tmp_path / "gunicorn.log"

    with gunicorn(fresh_database_url, workers=2, log=log) as (process, base):
        answer: dict[str, Any] = {}

        def long_poll() -> None:
            client = ApiClient(HttpClient(base, timeout=60), waiter.token)
            answer["response"] = client.get(
                f"/v1/matches/{match_id}?wait_for_version={version}&timeout=25"
            )

        thread = threading.Thread(target=long_poll)
        thread.start()
        wait_until(lambda: _in_flight(base, MATCH_ROUTE) >= 1, 30, "the long-poll in flight")
        os.kill(process.pid, signal.SIGTERM)
        wait_until(lambda: "Handling signal: term" in log.read_text(), 30, "gunicorn's SIGTERM")
        # The server is shutting down; the waiting request still sees the opponent's move.
        legal = views[mover]["hand"]["legal_actions"]
        action = next(a for a in legal if a["action"] in ("PASS", "TAKE_UPCARD"))
        moved = players[mover].post(
            f"/v1/matches/{match_id}/actions", {**action, "expected_version": version}
        )
        assert moved.status_code == 200
        thread.join(timeout=60)
        assert process.wait(timeout=60) == 0
    response = answer["response"]
    assert response.status_code == 200
    assert response.get_json()["version"] == version + 1
    assert "Worker exiting" in log.read_text()
    app.extensions["gin"]["engine"].dispose()


# --- a Celery worker ---------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL")
@pytest.mark.skipif(not os.environ.get("TEST_BROKER_URL"), reason="needs TEST_BROKER_URL (Redis)")
def test_sigterm_to_a_worker_finishes_the_task_in_hand(tmp_path: Path) -> None:
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        app = make_test_app(url)
        _api, players, table = _started_match(app)
        match_id = table["match_id"]
        assert (
            players[0].post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"}).status_code
            == 200
        )
        app.extensions["gin"]["engine"].dispose()

        broker = Broker(os.environ["TEST_BROKER_URL"])
        engine = create_engine(url)
        blocker = engine.connect()
        log = tmp_path / "worker.log"
        try:
            # Hold the match row: the settlement task will wait on it, in the middle of its work.
            blocker.begin()
            blocker.execute(
                text("SELECT id FROM matches WHERE id = :id FOR UPDATE"), {"id": match_id}
            )
            with open(log, "wb") as output:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "worker.celery_app",
                        "worker",
                        "--concurrency",
                        "2",
                        "--pool",
                        "prefork",
                        "--queues",
                        broker.queue,
                        "--loglevel",
                        "INFO",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                    ],
                    cwd=ROOT,
                    env=dict(os.environ, DATABASE_URL=url, **broker.env),
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                broker.send("settlement.settle_match", [match_id])
                database = url.rsplit("/", 1)[1]

                def settlement_waits() -> bool:
                    with engine.connect() as probe:
                        return bool(
                            probe.scalar(
                                text(
                                    "SELECT count(*) FROM pg_stat_activity WHERE datname = :db "
                                    "AND wait_event_type = 'Lock'"
                                ),
                                {"db": database},
                            )
                        )

                wait_until(settlement_waits, 60, "the settlement task to wait on the match")
                # SIGTERM to the main process only, as Kubernetes or systemd send it.
                os.kill(process.pid, signal.SIGTERM)
                wait_until(lambda: "Warm shutdown" in log.read_text(), 30, "a warm shutdown")
                assert process.poll() is None  # still running: the task is not abandoned
                blocker.rollback()  # let the task go on
                assert process.wait(timeout=60) == 0
            finally:
                kill(process, signal.SIGKILL)
        finally:
            blocker.close()
            broker.cleanup()
        with engine.connect() as check:
            settled = check.scalar(
                select(func.count()).select_from(Settlement).where(Settlement.match_id == match_id)
            )
        engine.dispose()
        assert settled == 1
        assert "settlement.settle_match SUCCESS" in log.read_text()
