"""A knockout's bracket under faults, with real Celery worker processes and a Redis of the
test's own (docs/tournaments.md, "Results"): a worker killed with SIGKILL while a round's
results are being recorded, and the broker down when a match ends. Either way the results
are recorded once the worker (or the broker) is back, by the worker's own catch-up sweep
(no beat runs here), the next round is dealt exactly once, and the tournament ends with the
right prizes.

Needs redis-server on the PATH; runs on PostgreSQL when TEST_DATABASE_URL is set (CI), else
on a SQLite file.
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select

from service.clock import utcnow
from service.db.match_models import GameTable, MatchRow
from tests.api.test_tournaments import full_field, statement_sum
from tests.conftest import ApiClient, in_unit, new_operator, serving
from tests.integration.workers import Broker, kill, private_redis, wait_until, worker
from worker.relay import relay_events

pytestmark = [
    pytest.mark.timing,  # under pytest-xdist, with no other test beside it
    pytest.mark.skipif(
        shutil.which("redis-server") is None, reason="needs redis-server on the PATH"
    ),
]

#: Seconds from the broker's return (or a worker's start) to a result recorded.
PROMPTLY = 10
#: Seconds a worker process may take to start and record a first result.
STARTED = 60


@pytest.fixture
def database(fresh_database_url: str) -> Iterator[tuple[Any, str, ApiClient]]:
    """A database of the test's own, shared with the worker processes, and an operator's
    client of the in-process API."""
    with serving(fresh_database_url) as app:
        _, key = new_operator(app)
        yield app, fresh_database_url, ApiClient(app.test_client(), key)


def lose_first_seats(
    api: ApiClient,
    clients: dict[str, ApiClient],
    tournament: dict[str, Any],
    r: int,
    pairings: list[dict[str, Any]] | None = None,
) -> list[str]:
    """Every match of round ``r`` (or those of ``pairings``) ends by its first seat's
    resignation (the match.finished events wait in the outbox): their ids."""
    players = {e["seat"]: e["player_id"] for e in tournament["entries"]}
    ended = []
    for pairing in pairings or tournament["rounds"][r - 1]["matches"]:
        loser = clients[players[pairing["first_seat"]]]
        answer = loser.post(f"/v1/matches/{pairing['match_id']}/actions", {"action": "RESIGN"})
        assert answer.status_code == 200, answer.get_json()
        ended.append(pairing["match_id"])
    return ended


def view(api: ApiClient, tournament_id: str) -> dict[str, Any]:
    return dict(api.get(f"/v1/tournaments/{tournament_id}").get_json())


def recorded(api: ApiClient, tournament_id: str, r: int) -> int:
    """How many of round ``r``'s results are recorded."""
    matches = view(api, tournament_id)["rounds"][r - 1]["matches"]
    return sum(m["winner_seat"] is not None for m in matches)


def final_dealt(api: ApiClient, tournament_id: str) -> bool:
    rounds = view(api, tournament_id)["rounds"]
    return len(rounds) == 2 and all(m["match_id"] for m in rounds[1]["matches"])


def assert_paid_once(api: ApiClient, app: Any, tournament: dict[str, Any]) -> None:
    """The tournament finished: three matches were ever dealt, the final's winner took
    2,800 and its loser 1,200 of the pool of 4,000 (7000/3000), once each; its books and
    audit agree."""
    done = view(api, tournament["id"])
    assert done["status"] == "finished"
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        dealt = session.scalar(
            select(func.count(MatchRow.id))
            .join(GameTable, MatchRow.table_id == GameTable.id)
            .where(GameTable.tournament_id == tournament["id"])
        )
    finally:
        session.close()
    assert dealt == 3  # two semi-finals and one final: the final dealt exactly once
    [final] = done["rounds"][1]["matches"]
    prizes = {e["seat"]: e["prize"]["amount"] for e in done["entries"]}
    assert prizes[final["second_seat"]] == 2_800 and prizes[final["first_seat"]] == 1_200
    assert sorted(prizes.values()) == [0, 0, 1_200, 2_800]
    lines, total = statement_sum(api, tournament["id"])
    kinds = [line["kind"] for line in lines]
    assert total == 0 and kinds.count("prize") == 2 and kinds.count("fee") == 1
    audit = api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()
    assert audit["ok"] is True and audit["matches_checked"] == 3, audit


def play_final(
    api: ApiClient, clients: dict[str, ApiClient], tid: str, send: Any, app: Any
) -> None:
    """The final ends by its first seat's resignation; its result is relayed to ``send``
    and recorded."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        lose_first_seats(api, clients, view(api, tid), 2)
        in_unit(session, relay_events, send, utcnow())
        wait_until(lambda: view(api, tid)["status"] == "finished", STARTED, "the final recorded")
    finally:
        session.close()


def test_a_worker_killed_while_a_round_advances_deals_the_next_round_once_after_a_restart(
    database: tuple[Any, str, ApiClient],
) -> None:
    app, url, api = database
    tournament, clients = full_field(api, format="first_to_knock", target=None)
    tid = tournament["id"]
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with private_redis() as (redis_url, _stop, _start):
            broker = Broker(redis_url)
            with worker(url, broker) as first_worker:
                lose_first_seats(api, clients, tournament, 1)
                in_unit(session, relay_events, broker.send, utcnow())
                # Killed as soon as the round starts advancing: the other semi-final's
                # result (and the final's deal) may be taken, in hand, or not started.
                wait_until(lambda: recorded(api, tid, 1) >= 1, STARTED, "a result recorded")
                kill(first_worker, signal.SIGKILL)
            with worker(url, broker):
                wait_until(lambda: final_dealt(api, tid), PROMPTLY + STARTED, "the final dealt")
                assert recorded(api, tid, 1) == 2
                play_final(api, clients, tid, broker.send, app)
    finally:
        session.close()
    assert_paid_once(api, app, tournament)


def test_results_ended_while_the_broker_was_down_are_recorded_once_it_returns(
    database: tuple[Any, str, ApiClient],
) -> None:
    app, url, api = database
    tournament, clients = full_field(api, format="first_to_knock", target=None)
    tid = tournament["id"]
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with private_redis() as (redis_url, stop, start):
            broker = Broker(redis_url)
            with worker(url, broker):
                [semi_1, semi_2] = tournament["rounds"][0]["matches"]
                # The worker is up, its catch-up done, nothing in hand (a worker losing Redis
                # before its first acknowledgement may exit, not what this tests).
                broker.send("ops.ping", [])
                wait_until(broker.idle, STARTED, "the worker up and idle")
                stop()  # Redis is down when the semi-finals end
                # The first one's task was in Redis when it went down: its event is stamped
                # published and the task lost; only the sweep can find the result.
                lose_first_seats(api, clients, tournament, 1, [semi_1])
                in_unit(session, relay_events, lambda _name, _args: None, utcnow())
                # The second one's relay fails: its event stays in the outbox.
                lose_first_seats(api, clients, tournament, 1, [semi_2])
                in_unit(session, relay_events, broker.send, utcnow())
                assert recorded(api, tid, 1) == 0
                start()  # empty: the worker reconnects, relays and sweeps
                wait_until(lambda: final_dealt(api, tid), PROMPTLY, "the final dealt")
                play_final(api, clients, tid, broker.send, app)
    finally:
        session.close()
    assert_paid_once(api, app, tournament)
