"""Scale-out: two API processes (gunicorn, two workers each) and two Celery workers share one
PostgreSQL database and one Redis broker. Clients alternate their requests between the two
APIs while playing whole matches; the workers settle them, and every wallet adds up.

Needs TEST_DATABASE_URL and TEST_BROKER_URL (CI sets both): with SQLite or the filesystem
broker there is nothing to scale out.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from service.db.match_models import Settlement
from service.db.models import LedgerTransaction
from tests.api.play_clients import join, open_table, play_match, player_client
from tests.conftest import ApiClient, make_test_app, new_operator, throwaway_postgres
from tests.integration.workers import Broker, wait_until, worker
from tests.ops.servers import Alternating, HttpClient, gunicorn

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (os.environ.get("TEST_DATABASE_URL") and os.environ.get("TEST_BROKER_URL")),
        reason="scale-out needs PostgreSQL (TEST_DATABASE_URL) and Redis (TEST_BROKER_URL)",
    ),
]

DEPOSIT = 10_000


def wallet(api: ApiClient, player_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/players/{player_id}/wallets/EUR")
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def test_two_apis_and_two_workers_play_and_settle_matches(tmp_path: Path) -> None:
    broker = Broker(os.environ["TEST_BROKER_URL"])
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url, ExitStack() as stack:
        stack.callback(broker.cleanup)
        app = make_test_app(url)
        stack.callback(app.extensions["gin"]["engine"].dispose)
        bases = [stack.enter_context(gunicorn(url, workers=2, env=broker.env))[1] for _ in range(2)]
        for _ in range(2):
            stack.enter_context(worker(url, broker, concurrency=2))

        _operator, key = new_operator(app)
        through_both = Alternating([HttpClient(base) for base in bases])
        api = ApiClient(through_both, key)
        games = []
        for settings in ({"format": "first_to_knock"}, {"format": "match_play"}):
            table = open_table(api, stake=500, fee={"bps": 1000}, **settings)
            clients = [player_client(api, deposit=DEPOSIT), player_client(api, deposit=DEPOSIT)]
            for client in clients:
                assert join(client, table["id"]).status_code == 201
            final = play_match(clients, table["match_id"])
            assert final["status"] == "finished"
            games.append((table["match_id"], [c.player_id for c in clients]))  # type: ignore[attr-defined]
        assert through_both.sent > 100  # a real conversation, spread over both APIs

        # The API that took each final action asked a worker to relay the outbox; a worker
        # settles the match. Nothing runs beat here.
        def settled(match_id: str) -> bool:
            return api.get(f"/v1/matches/{match_id}/settlement").status_code == 200

        for match_id, _players in games:
            wait_until(lambda m=match_id: settled(m), 60, f"settlement of {match_id}")

        session = app.extensions["gin"]["sessionmaker"]()
        try:
            for match_id, players in games:
                statement = api.get(f"/v1/matches/{match_id}/settlement").get_json()
                net = [n["amount"] for n in statement["net"]]
                fee = statement["fee"]["amount"]
                assert sum(net) == -fee and fee > 0  # the winner's gain is the pot less the fee
                for seat, player_id in enumerate(players):
                    held = wallet(api, player_id)
                    assert held["held"]["amount"] == 0
                    assert held["balance"]["amount"] == DEPOSIT + net[seat]
                assert (
                    session.scalar(
                        select(func.count())
                        .select_from(Settlement)
                        .where(Settlement.match_id == match_id)
                    )
                    == 1
                )
                assert (
                    session.scalar(
                        select(func.count())
                        .select_from(LedgerTransaction)
                        .where(
                            LedgerTransaction.match_ref == match_id,
                            LedgerTransaction.kind == "capture",
                        )
                    )
                    == 1
                )
        finally:
            session.close()
