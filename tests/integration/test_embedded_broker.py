"""The embedded default broker (kombu's filesystem transport) takes tasks quietly."""

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
