"""Settlement through a mix of faults, with a real Celery worker, PostgreSQL and a Redis of the
test's own: the worker's database connections terminated, the worker killed with SIGKILL and
started again, Redis stopped and started empty, each while the worker has a settlement in
hand (held on the match's row lock, as a settlement waits behind a player's action). After
each fault every finished match is settled within seconds of the fault's end, exactly once,
with no beat running: what settles them is the worker's own retry and catch-up.

Then the same faults one after the other while matches end without pause (the mix of
bench/faults.py on a shorter timeline, the worker with beat as deployed): every settlement
within 30 s of its match's end, and every match settled within 5 s of the end of each fault
it ended before (a killed worker's fault ends when its replacement consumes: booting a Celery
process takes 3-5 s on a loaded two-core machine, and the figures printed include it).

Last, a worker restarted with a backlog and Redis stopped as soon as it consumes: its pool
processes settle the backlog from their start, whatever the broker does.

The figures (seconds from each fault's end to every match settled) are printed; run with
``-s`` to see them. Needs TEST_DATABASE_URL (PostgreSQL) and TEST_BROKER_URL (CI sets both;
Redis is the broker this models), and redis-server on the PATH.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.pool import NullPool

from service.clock import utcnow
from service.config import Settings
from service.db.match_models import MatchRow, Settlement
from tests.conftest import in_unit, make_test_app, throwaway_postgres
from tests.integration.workers import (
    Broker,
    FaultPlan,
    consuming,
    fault_mix,
    finished_matches,
    kill,
    private_redis,
    settled_once,
    wait_until,
    worker,
)
from worker.celery_app import KICK_PRIORITY
from worker.relay import relay_events

pytestmark = [
    pytest.mark.timing,  # under pytest-xdist, with no other test beside it
    pytest.mark.postgres,
    pytest.mark.skipif(
        not (os.environ.get("TEST_DATABASE_URL") and os.environ.get("TEST_BROKER_URL")),
        reason="needs PostgreSQL (TEST_DATABASE_URL) and Redis (TEST_BROKER_URL)",
    ),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]

#: Seconds from a fault's end to every match it held back settled.
PROMPTLY = 5
#: Seconds a worker process may take to start (imports, its pool) on a busy machine.
STARTED = 60


@pytest.fixture
def database() -> Iterator[tuple[Any, str]]:
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        app = make_test_app(url)
        yield app, url
        app.extensions["gin"]["engine"].dispose()


class Faults:
    """The test's hands on the database: a match row held locked, the worker's connections
    terminated, and whether a worker waits on a lock."""

    def __init__(self, app: Any, url: str) -> None:
        self.app = app
        self.engine = create_engine(url, poolclass=NullPool)
        self.database = url.rsplit("/", 1)[1]

    def relay(self, broker: Broker) -> None:
        session = self.app.extensions["gin"]["sessionmaker"]()
        try:
            in_unit(session, relay_events, broker.send, utcnow())
        finally:
            session.close()

    @contextmanager
    def held(self, match_id: str) -> Iterator[int]:
        """The match's row locked (FOR UPDATE) by a transaction of the test's; its pid."""
        with self.engine.connect() as connection, connection.begin():
            connection.execute(select(MatchRow.id).where(MatchRow.id == match_id).with_for_update())
            yield int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())

    def waiting_on_a_lock(self) -> bool:
        with self.engine.connect() as connection:
            return bool(
                connection.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = :db"
                        " AND wait_event_type = 'Lock'"
                    ),
                    {"db": self.database},
                ).scalar_one()
            )

    def terminate_others(self, *spared: int) -> int:
        """pg_terminate_backend for every connection to the database but ``spared`` and this
        one; the test app's pool is emptied, as a gunicorn worker's is on a lost connection."""
        with self.engine.connect() as connection:
            terminated = connection.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = :db AND pid <> pg_backend_pid() AND NOT pid = ANY(:spared)"
                ),
                {"db": self.database, "spared": list(spared)},
            ).scalar_one()
        self.app.extensions["gin"]["engine"].dispose()
        return int(terminated)


def settled_within(app: Any, match_ids: list[str], since: float) -> float:
    """Seconds from ``since`` (a monotonic time) to every match settled exactly once."""
    wait_until(lambda: settled_once(app, match_ids), PROMPTLY + 30, "every match settled")
    return time.monotonic() - since


def test_every_fault_of_the_mix_is_settled_within_seconds_of_its_end(
    database: tuple[Any, str],
) -> None:
    app, url = database
    faults = Faults(app, url)
    took: dict[str, float] = {}
    everything: list[str] = []
    with private_redis() as (redis_url, stop, start):
        broker = Broker(redis_url)
        # Production's visibility timeout: a killed worker's tasks stay taken for hours.
        broker.env["CELERY_VISIBILITY_TIMEOUT"] = str(Settings.celery_visibility_timeout)
        with worker(url, broker) as first_worker:
            warm = finished_matches(app, 1)
            faults.relay(broker)
            wait_until(lambda: settled_once(app, warm), STARTED, "the worker to settle")
            everything += warm

            # The database: the worker's connections terminated, one of them in a settlement.
            [in_hand] = finished_matches(app, 1)
            with faults.held(in_hand) as holder:
                faults.relay(broker)
                wait_until(faults.waiting_on_a_lock, PROMPTLY, "the settlement to wait")
                assert faults.terminate_others(holder) >= 1
                ended = time.monotonic()
            took["database connections terminated"] = settled_within(app, [in_hand], ended)
            everything.append(in_hand)

            # The worker: SIGKILLed with a settlement in hand, started again.
            [in_hand] = finished_matches(app, 1)
            with faults.held(in_hand):
                faults.relay(broker)
                wait_until(faults.waiting_on_a_lock, PROMPTLY, "the settlement to wait")
                kill(first_worker, signal.SIGKILL)
            meanwhile = finished_matches(app, 2)
            faults.relay(broker)
        with worker(url, broker) as second_worker:
            wait_until(lambda: consuming(redis_url), STARTED, "the new worker to consume")
            took["worker killed and started"] = settled_within(
                app, [in_hand, *meanwhile], time.monotonic()
            )
            everything += [in_hand, *meanwhile]

            # Redis: stopped with a settlement in hand, started again empty; the settlement
            # in hand ends after the worker reconnected, on the connection it was taken on.
            [in_hand] = finished_matches(app, 1)
            with faults.held(in_hand):
                faults.relay(broker)
                wait_until(faults.waiting_on_a_lock, PROMPTLY, "the settlement to wait")
                stop()
                meanwhile = finished_matches(app, 2)
                faults.relay(broker)  # fails: the events wait in the outbox
                start()
                wait_until(lambda: consuming(redis_url), PROMPTLY, "the worker to reconnect")
                ended = time.monotonic()
            took["redis stopped"] = settled_within(app, [in_hand, *meanwhile], ended)
            everything += [in_hand, *meanwhile]

            # And the worker is still there for the next match.
            after = finished_matches(app, 1)
            faults.relay(broker)
            since = time.monotonic()
            took["next match"] = settled_within(app, after, since)
            assert second_worker.poll() is None, "the worker exited"
        broker.cleanup()
    faults.engine.dispose()
    print(", ".join(f"{fault}: {seconds:.1f} s" for fault, seconds in took.items()))
    assert settled_once(app, everything + after)
    late = {fault: seconds for fault, seconds in took.items() if seconds > PROMPTLY}
    assert not late, f"settled more than {PROMPTLY} s after the fault's end: {late}"


#: The mix of bench/faults.py on a shorter timeline: the same faults in the same order, the
#: worker down 4 s, Redis away 10 s.
MIX = FaultPlan(database_at=4, kill_at=8, restart=4, redis_at=20, outage=10, seconds=34)
#: Seconds from a match's end to its settlement, whatever the faults.
SETTLED_WITHIN = 30


def test_a_mix_of_faults_while_matches_end(tmp_path: Path) -> None:
    with throwaway_postgres(os.environ["TEST_DATABASE_URL"]) as url:
        mix = fault_mix(url, MIX, clients=2, folder=tmp_path, settle_within=SETTLED_WITHIN)
        app = make_test_app(url)
        try:
            assert settled_once(app, list(mix.ended))  # each exactly once
        finally:
            app.extensions["gin"]["engine"].dispose()
    print(
        f"{len(mix.ended)} matches; "
        + ", ".join(f"{what} at {seconds:.1f} s" for seconds, what in sorted(mix.faults))
        + "; the last match that ended before each fault's end settled after it: "
        + ", ".join(f"{fault} {took:+.1f} s" for fault, took in mix.after_faults().items())
    )
    assert len(mix.ended) > 20, "the clients finished too few matches to tell"
    stretches = {what for _, what in mix.faults}
    assert stretches >= set(MIX.ends()), mix.faults
    late = mix.late(SETTLED_WITHIN)
    assert not late, f"settled more than {SETTLED_WITHIN} s after their end: {late}"
    slow = mix.after_fault(PROMPTLY)
    assert not slow, f"matches settled more than {PROMPTLY} s after the fault's end: {slow}"


#: Matches that end while the worker is dead, in the backlog test: about what two clients
#: finish in the mix's 6 s without a worker.
BACKLOG = 40


def settled_count(app: Any, match_ids: list[str]) -> int:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        query = select(func.count()).select_from(Settlement)
        return int(session.scalar(query.where(Settlement.match_id.in_(match_ids))))
    finally:
        session.close()


def test_a_restarted_worker_settles_its_backlog_though_redis_goes_at_once(
    database: tuple[Any, str],
) -> None:
    """The worker SIGKILLed; meanwhile matches end (their events unpublished, a relay kick
    each, as the API sends) and two tasks are queued that will hold the new worker's two
    processes (settlements of matches whose rows a player's action holds locked; in
    bench/faults.py beat's relay batch and its sweep with a grace held them, queued while the
    worker started); the worker started again, and Redis stopped as soon as it consumes. Every
    match of the backlog is settled within :data:`PROMPTLY` seconds, Redis still away: once
    the worker has started, settling what it missed waits for no broker. (Before, its
    catch-up's sweeps were queued on Redis behind those two tasks, and Redis took them away:
    nothing of the backlog was settled until it came back.)"""
    app, url = database
    faults = Faults(app, url)
    with private_redis() as (redis_url, stop, start):
        broker = Broker(redis_url)
        broker.env["CELERY_VISIBILITY_TIMEOUT"] = str(Settings.celery_visibility_timeout)
        with worker(url, broker) as first_worker:
            warm = finished_matches(app, 1)
            broker.send("outbox.relay", [], priority=KICK_PRIORITY)
            wait_until(lambda: settled_once(app, warm), STARTED, "the worker to settle")
            kill(first_worker, signal.SIGKILL)
        held = finished_matches(app, 2)
        for match_id in held:
            broker.send("settlement.settle_match", [match_id])
        backlog = finished_matches(app, BACKLOG)
        for _ in backlog:
            broker.send("outbox.relay", [], priority=KICK_PRIORITY)
        with worker(url, broker):
            with faults.held(held[0]), faults.held(held[1]):
                wait_until(lambda: consuming(redis_url), STARTED, "the new worker to consume")
                stop()
                since = time.monotonic()
                try:
                    wait_until(
                        lambda: settled_count(app, backlog) == BACKLOG, PROMPTLY, "the backlog"
                    )
                finally:
                    took = time.monotonic() - since
                    print(f"{settled_count(app, backlog)} of {BACKLOG} settled in {took:.1f} s")
            start()  # the settlements in hand end, or the catch-up on reconnecting finds them
            wait_until(lambda: settled_once(app, held), STARTED, "the held matches settled")
        broker.cleanup()
    faults.engine.dispose()
    assert settled_once(app, warm + held + backlog)
