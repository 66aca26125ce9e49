"""A worker's prompt recovery after a broker outage, piece by piece: it retries a
lost broker every second for as long as it takes, queues its catch-up on each connection, and
its relay drains a backlog batch after batch. (tests/integration/test_broker_outage.py puts
them together with real processes.)"""

from __future__ import annotations

import dataclasses
import threading
import types
from typing import Any

import kombu.utils.functional
import pytest
from celery.worker.consumer import Consumer as CeleryConsumer
from celery.worker.consumer.tasks import Tasks
from kombu.utils.imports import symbol_by_name
from sqlalchemy.exc import OperationalError

from service.config import Settings
from worker import celery_app, tasks
from worker.relay import BATCH


def test_a_lost_broker_is_retried_every_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """Celery's own consumer waits 2, 4, 6, 8 s between attempts: 20 s for these four, and
    gives up (the worker exits) after 100."""
    slept: list[float] = []
    monkeypatch.setattr(kombu.utils.functional, "sleep", slept.append)
    settings = dataclasses.replace(Settings.from_env(), broker_url="redis://127.0.0.1:1/0")
    app = celery_app.make_celery(settings)
    assert app.conf.broker_connection_max_retries is None  # for as long as it takes
    app.conf.broker_connection_max_retries = 4
    assert app.conf.worker_consumer == "worker.celery_app:Consumer"
    controller = types.SimpleNamespace(use_eventloop=False)  # all the consumer reads of it
    consumer = celery_app.Consumer(None, app=app, hostname="test@localhost", controller=controller)
    with pytest.raises(Exception, match="Connection refused"):
        consumer.ensure_connected(app.connection_for_read())
    assert sum(slept) == 4 * celery_app.RECONNECT_SECONDS


def test_a_kombu_error_closing_a_lost_connection_does_not_stop_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kombu's Redis channel can raise AttributeError in Celery's cleanup of a lost
    connection; uncaught, the worker exits with "Unrecoverable error" instead of reconnecting."""

    def closing_fails(self: Any, exc: Exception) -> None:
        raise AttributeError("'NoneType' object has no attribute 'hostname'")

    monkeypatch.setattr(CeleryConsumer, "on_connection_error_after_connected", closing_fails)
    consumer = celery_app.Consumer(
        None,
        app=celery_app.app,
        hostname="test@localhost",
        controller=types.SimpleNamespace(use_eventloop=False),
    )
    consumer.on_connection_error_after_connected(ConnectionError("Connection closed by server."))


def test_a_late_acknowledgement_on_a_lost_connection_does_not_stop_the_worker() -> None:
    """A task taken before Redis went away and finished after the worker reconnected is
    acknowledged on its old channel, whose cleared transport makes kombu raise AttributeError
    in the worker's event loop: uncaught, the worker exits as the broker comes back
    (tests/integration/test_fault_mix.py shows it with real processes)."""

    def lost_channel_ack(logger: Any, errors: Any) -> None:
        raise AttributeError("'NoneType' object has no attribute 'hostname'")

    consumer = celery_app.Consumer(
        None,
        app=celery_app.app,
        hostname="test@localhost",
        controller=types.SimpleNamespace(use_eventloop=False),
    )
    consumer.hub = types.SimpleNamespace(call_soon=lambda callback: callback())
    consumer.call_soon_ack(lost_channel_ack, None, ())


def test_the_consumer_catches_up_on_every_connection() -> None:
    steps = celery_app.make_celery(Settings.from_env()).steps["consumer"]
    assert celery_app.CatchUp in steps
    # After the queue is declared again. A blueprint that loaded the step resolves its
    # ``requires`` in place; in a process where none did yet, they are still names.
    required = [symbol_by_name(r) for r in celery_app.CatchUp.requires]
    assert required == [Tasks]


def test_catching_up_queues_the_relay_and_the_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[str] = []
    monkeypatch.setattr(tasks, "send_task", lambda name, args: sent.append(name))
    celery_app.CatchUp(types.SimpleNamespace()).start(types.SimpleNamespace())
    assert sent == ["settlement.sweep", "outbox.relay", "webhooks.sweep"]
    sent.clear()  # a sweep per pool process: they share the backlog out
    consumer = types.SimpleNamespace(pool=types.SimpleNamespace(num_processes=2))
    celery_app.CatchUp(types.SimpleNamespace()).start(consumer)
    assert sent == ["settlement.sweep", "settlement.sweep", "outbox.relay", "webhooks.sweep"]


def test_catching_up_stops_quietly_when_the_broker_is_gone_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried: list[str] = []

    def refused(name: str, args: list[Any]) -> None:
        tried.append(name)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(tasks, "send_task", refused)
    tasks.catch_up()  # no exception: the next connection catches up again
    assert tried == ["settlement.sweep"]


@pytest.mark.parametrize(("published", "again"), [(BATCH, True), (BATCH - 1, False), (0, False)])
def test_a_full_relay_batch_queues_the_next_at_once(
    monkeypatch: pytest.MonkeyPatch, published: int, again: bool
) -> None:
    sent: list[str] = []
    monkeypatch.setattr(tasks, "_with_session", lambda work: published)
    monkeypatch.setattr(tasks, "send_task", lambda name, args: sent.append(name))
    assert tasks.relay_outbox() == published
    assert sent == (["outbox.relay"] if again else [])


def test_a_pool_process_settles_the_backlog_from_its_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """As soon as it is forked, beside the tasks it takes: neither the broker nor the worker's
    consumer has a part in it (tests/integration/test_fault_mix.py, Redis gone at once)."""
    swept = threading.Event()
    graces: list[float] = []

    def settle(older_than: float) -> int:
        graces.append(older_than)
        swept.set()
        return 0

    monkeypatch.setattr(tasks, "_with_session", lambda work: None)  # the connection opened
    monkeypatch.setattr(tasks, "_settle_unsettled", settle)
    tasks._connect_early()
    assert swept.wait(10), "the process did not settle its backlog"
    assert graces == [0]  # every unsettled match, however recent


def test_the_backlog_at_a_process_start_is_left_to_the_sweeps_when_it_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def away(older_than: float) -> int:
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError(111, "refused"))

    monkeypatch.setattr(tasks, "_settle_unsettled", away)
    assert tasks.settle_backlog() == 0  # logged, not raised: no task to retry it
    assert "settlement of the backlog" in caplog.text


def test_a_relay_that_cannot_queue_its_next_batch_settles_what_it_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker went away after the relay's commit: the matches it took are settled all the
    same (they were left to the sweeps, which may be as far away as the broker's return)."""
    settled: list[str] = []

    def relay_events(session: Any, send: Any, now: Any) -> int:
        for match_id in ("mch_a", "mch_b"):  # a full batch, two of its events finished matches
            send("settlement.settle_match", [match_id])
        return BATCH

    def refused(name: str, args: list[Any]) -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(tasks, "relay_events", relay_events)
    monkeypatch.setattr(tasks, "_in_unit", lambda work: work(None))
    monkeypatch.setattr(tasks, "send_task", refused)
    monkeypatch.setattr(tasks, "_settle_one", settled.append)
    assert tasks.relay_outbox() == BATCH
    assert settled == ["mch_a", "mch_b"]
