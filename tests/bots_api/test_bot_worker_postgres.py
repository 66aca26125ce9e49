"""On PostgreSQL with a real broker, a real Celery worker with beat plays a practice bot's
turns against a person to the end of the match, and the match is settled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.client import ApiProblem, GinClient
from service.games.gin.bot import decide
from tests.conftest import make_test_app, new_operator, throwaway_postgres
from tests.integration.workers import ROOT, Broker, kill, wait_until

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url() -> Iterator[str]:
    base = os.environ.get("TEST_DATABASE_URL")
    if not base or not os.environ.get("TEST_BROKER_URL"):
        pytest.skip("needs TEST_DATABASE_URL and TEST_BROKER_URL")
    with throwaway_postgres(base) as url:
        yield url


def worker_with_beat(url: str, broker: Broker, folder: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, DATABASE_URL=url, GIN_VAR_DIR=str(folder), **broker.env)
    log = open(os.environ["WORKER_LOG"], "ab") if os.environ.get("WORKER_LOG") else None  # noqa: SIM115
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--beat",
            "--schedule",
            str(folder / "beat-schedule"),
            "--concurrency",
            "2",
            "--queues",
            broker.queue,
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_a_worker_plays_the_bot_to_the_end(pg_url: str, tmp_path: Path) -> None:
    broker = Broker(os.environ["TEST_BROKER_URL"])
    app = make_test_app(pg_url)
    process = worker_with_beat(pg_url, broker, tmp_path)
    try:
        _operator_id, key = new_operator(app)
        operator = GinClient("http://gin.test", key, transport=httpx.WSGITransport(app=app))
        table = operator.create_table(
            "match_play",
            "XPM",
            stake=10,
            target=25,
            practice=True,
            clock={"turn_seconds": 30, "bank_seconds": 60},
        )
        player = operator.create_player("pg-human", "Hugo")
        operator.deposit(player["id"], 10, "XPM")
        person = operator.as_(operator.player_token(player["id"])["token"])
        person.join(table["id"])
        bot = operator.seat_bot(table["id"])
        match_id = table["match_id"]
        view = person.match(match_id)
        for _ in range(2000):
            if view["status"] != "playing":
                break
            hand = view["hand"]
            assert hand is not None
            if hand.get("legal_actions"):
                view = person.act(match_id, decide(hand), view["version"])
            else:  # the bot's turn: wait for the worker to play it (long-poll)
                before = view["version"]
                view = person.match(match_id, wait_for_version=before, timeout=15)
                assert view["version"] > before, "the worker did not play the bot's turn"
        assert view["status"] == "finished"
        assert process.poll() is None

        def settled() -> bool:
            try:
                operator.settlement(match_id)
            except ApiProblem as exc:
                assert exc.status == 404
                return False
            return True

        wait_until(settled, 60, "the match's settlement")
        statement = operator.settlement(match_id)
        bot_seat = statement["players"].index(bot["player_id"])
        wallet = operator.wallet(bot["player_id"], "XPM")
        assert wallet["held"]["amount"] == 0
        assert wallet["balance"]["amount"] == 10 + statement["net"][bot_seat]["amount"]
        assert operator.audit_ledger()["ok"]
    finally:
        kill(process, signal.SIGTERM)
        broker.cleanup()
        app.extensions["gin"]["engine"].dispose()
