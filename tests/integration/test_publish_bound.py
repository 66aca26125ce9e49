"""A publish to a broker that does not answer fails within a bound
(worker.celery_app.PUBLISH_TIMEOUT_SECONDS), so that the request ending a match is not held by
its relay kick through a broker outage; the match is settled all the same, by the sweep. The
bound is on connections that publish only: the worker's consumer keeps waiting for its broker.

The brokers here are stand-ins on local ports: a closed port (the connection refused) and a
socket that listens but never answers (a stopped or overloaded broker: the connection is
accepted by the kernel and then nothing comes).
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kombu.exceptions import OperationalError

from service.config import Settings
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, free_port, new_operator, serving
from tests.integration.workers import settled_once
from worker import celery_app, tasks

pytestmark = pytest.mark.timing  # wall-clock bounds: under pytest-xdist, alone

#: What a publish may take on top of the bound, on a loaded machine (before the bound: ~6 s).
SLACK = 0.5


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def celery_on(broker_url: str) -> Any:
    return celery_app.make_celery(dataclasses.replace(Settings.from_env(), broker_url=broker_url))


def timed_publish(app: Any) -> float:
    """Seconds a kick (as :func:`service.api.matches.kick_relay` sends it) took to fail."""
    since = time.monotonic()
    with pytest.raises(OperationalError):
        app.send_task("outbox.relay", retry=False, priority=celery_app.KICK_PRIORITY)
    return time.monotonic() - since


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:{closed}/0",
        "redis://127.0.0.1:{silent}/0",
        "amqp://guest:guest@127.0.0.1:{closed}//",
        "amqp://guest:guest@127.0.0.1:{silent}//",
    ],
    ids=["redis-refused", "redis-silent", "amqp-refused", "amqp-silent"],
)
def test_a_publish_to_an_unreachable_broker_fails_within_the_bound(
    url: str, silent_port: int
) -> None:
    app = celery_on(url.format(closed=free_port(), silent=silent_port))
    # Twice: the first attempt and one on the pool's connection that failed (kombu retried
    # the connection for about 6 s, from the first attempt on).
    took = [timed_publish(app), timed_publish(app)]
    assert max(took) < celery_app.PUBLISH_TIMEOUT_SECONDS + SLACK, took


def test_the_bound_is_on_publishing_connections_only(tmp_path: Any) -> None:
    """The worker's consumer connection keeps Celery's patience (it retries a lost broker for
    as long as it takes); the embedded filesystem broker has no sockets to bound."""
    redis = celery_on("redis://127.0.0.1:6379/0")
    write, read = redis.connection_for_write(), redis.connection_for_read()
    assert write.transport_options["max_retries"] == 0
    assert write.transport_options["socket_timeout"] == celery_app.PUBLISH_TIMEOUT_SECONDS
    assert write.transport_options["visibility_timeout"]  # the app's own options are kept
    assert "max_retries" not in read.transport_options
    assert "socket_timeout" not in read.transport_options
    assert read.connect_timeout == redis.conf.broker_connection_timeout

    amqp = celery_on("amqp://guest:guest@127.0.0.1:5672//")
    assert amqp.connection_for_write().connect_timeout == celery_app.PUBLISH_TIMEOUT_SECONDS
    assert amqp.connection_for_read().connect_timeout == amqp.conf.broker_connection_timeout
    assert "socket_timeout" not in amqp.connection_for_write().transport_options  # Redis's

    embedded = celery_on(f"filesystem://{tmp_path}/broker")
    options = embedded.connection_for_write().transport_options
    assert "max_retries" not in options and "socket_timeout" not in options


def test_a_match_ended_while_the_broker_is_silent_answers_at_once_and_is_swept(
    fresh_database_url: str,
    silent_port: int,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The resignation that ends a match answers within the bound though its relay kick
    fails; the sweep settles the match, once."""
    monkeypatch.setattr(celery_app, "app", celery_on(f"redis://127.0.0.1:{silent_port}/0"))
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)  # the sweep's database
    monkeypatch.setattr(tasks, "send_task", lambda name, args: pytest.fail(f"queued {name}"))
    try:
        with serving(fresh_database_url) as app:
            _operator, key = new_operator(app)
            api = ApiClient(app.test_client(), key)
            table = open_table(api, stake=100)
            players = [player_client(api, deposit=1000), player_client(api, deposit=1000)]
            for player in players:
                assert join(player, table["id"]).status_code == 201
            match_id = table["match_id"]
            resign = f"/v1/matches/{match_id}/actions"
            with caplog.at_level(logging.WARNING, logger="service.api.matches"):
                since = time.monotonic()
                response = players[0].post(resign, {"action": "RESIGN"})
                took = time.monotonic() - since
            assert response.status_code == 200, response.get_json()
            assert response.get_json()["status"] == "finished"
            assert any("could not kick the outbox relay" in r.getMessage() for r in caplog.records)
            assert took < celery_app.PUBLISH_TIMEOUT_SECONDS + SLACK, took
            assert not settled_once(app, [match_id])
            assert tasks.sweep_unsettled() == 1
            assert settled_once(app, [match_id])
            assert tasks.sweep_unsettled() == 0
    finally:
        tasks._sessions(fresh_database_url).kw["bind"].dispose()
