"""The embedded default broker (kombu's filesystem transport, each message written whole) takes
tasks quietly."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from service.config import Settings
from worker.celery_app import make_celery


def test_tasks_published_on_the_embedded_broker_land_in_its_folder_without_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)  # Celery would prefer it
    settings = Settings.from_env()
    assert settings.broker_url.startswith("filesystem://")  # the embedded default
    app = make_celery(dataclasses.replace(settings, broker_url=f"filesystem://{tmp_path}/broker"))
    with caplog.at_level(logging.WARNING):
        for n in range(2):  # each send takes a connection the producer pool clones
            app.send_task("bench.noop", args=[n])
    assert len(list((tmp_path / "broker" / "queue").iterdir())) == 2
    assert [r.getMessage() for r in caplog.records if r.name.startswith("kombu")] == []


PREPARED = """
import sys
import service.wsgi
from worker.celery_app import app
assert app._pool is None, "preparing opened a connection pool"
from service.api.matches import kick_relay
before = set(sys.modules)
kick_relay()
print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("celery", "kombu")))
print(len(list(__import__("pathlib").Path("broker/queue").iterdir())))
"""


def test_the_wsgi_module_readies_task_publishing_without_connecting(tmp_path: Path) -> None:
    """gunicorn's master imports ``service.wsgi`` before it forks: a worker's first finished
    match then publishes its task without importing Celery or its transport."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")}
    env.update(
        CELERY_BROKER_URL=f"filesystem://{tmp_path}/broker",
        DATABASE_URL=f"sqlite:///{tmp_path}/gin.sqlite",
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    done = subprocess.run(
        [sys.executable, "-c", PREPARED],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    imported, published = done.stdout.split("\n")[:2]
    assert imported == "[]"
    assert published == "1"


def test_a_consumer_never_takes_a_message_still_being_written(tmp_path: Path) -> None:
    """A message appears in the queue folder whole or not at all: kombu's own transport
    created the file and then wrote it, and a consumer polling in between took an empty
    message (the worker stopped on it, "Unrecoverable error: JSONDecodeError")."""
    import threading

    from kombu.exceptions import ChannelError
    from kombu.transport.virtual import Empty

    settings = dataclasses.replace(
        Settings.from_env(), broker_url=f"filesystem://{tmp_path}/broker"
    )
    app = make_celery(settings)
    sent = 300
    with app.connection_for_write() as writing, app.connection_for_read() as reading:
        out, into = writing.default_channel, reading.default_channel

        def publish() -> None:
            for n in range(sent):
                out._put("race", {"n": n, "padding": "x" * 4096})

        publisher = threading.Thread(target=publish)
        publisher.start()
        taken: list[int] = []
        failures: list[Exception] = []
        queue = tmp_path / "broker" / "queue"
        while len(taken) < sent and not failures:
            try:
                taken.append(into._get("race")["n"])
            except Empty:  # a message lost would leave us waiting: stop once all are out
                if not publisher.is_alive() and not any(queue.iterdir()):
                    break
            except (ValueError, ChannelError) as exc:  # an empty or partial message
                failures.append(exc)
        publisher.join()
    assert failures == []
    assert sorted(taken) == list(range(sent))
