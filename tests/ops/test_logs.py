"""Structured logs: JSON lines with the request id, and the id carried from a request into the
Celery tasks it causes (the published message's headers, then the worker's log lines)."""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.observability.logs import JsonFormatter, TextFormatter, request_id_var
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, make_test_app, new_operator
from tests.integration.workers import ROOT, kill, settled_once, wait_until
from tests.ops.servers import HttpClient, gunicorn


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """JSON lines of the request logger, formatted as they are emitted."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("gin.request")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield stream
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_json_line_fields_and_exceptions() -> None:
    formatter = JsonFormatter()
    record = logging.LogRecord("gin.test", logging.WARNING, __file__, 1, "paid %s", ("500",), None)
    record.route = "/v1/x"
    token = request_id_var.set("rid-123")
    try:
        line = json.loads(formatter.format(record))
    finally:
        request_id_var.reset(token)
    assert line["level"] == "WARNING" and line["logger"] == "gin.test"
    assert line["message"] == "paid 500" and line["route"] == "/v1/x"
    assert line["request_id"] == "rid-123"
    assert line["time"].endswith("Z")
    try:
        raise ValueError("boom")
    except ValueError:
        failed = logging.LogRecord(
            "gin.test", logging.ERROR, __file__, 1, "oops", (), sys.exc_info()
        )
    out = formatter.format(failed)
    assert "\n" not in out  # one object per line, the traceback inside it
    assert "ValueError: boom" in json.loads(out)["exception"]
    assert "request_id" not in json.loads(out)
    text = TextFormatter().format(record)
    assert "gin.test" in text and "paid 500" in text and "route=/v1/x" in text


def test_each_request_logs_one_line_with_its_request_id(
    api: ApiClient, captured: io.StringIO
) -> None:
    missing = f"mch_{secrets.token_hex(6)}"
    response = api.get(f"/v1/matches/{missing}", headers={"X-Request-Id": "req-abc-1"})
    assert response.status_code == 404
    assert response.headers["X-Request-Id"] == "req-abc-1"
    [line] = [entry for entry in lines(captured) if entry.get("request_id") == "req-abc-1"]
    assert line["level"] == "INFO"
    assert line["logger"] == "gin.request"
    assert line["method"] == "GET"
    assert line["route"] == "/v1/matches/<match_id>"
    assert line["path"] == f"/v1/matches/{missing}"
    assert line["status"] == 404
    assert line["duration_ms"] >= 0
    # A request without an id gets one, logged and echoed alike.
    echoed = api.get("/v1/players").headers["X-Request-Id"]
    assert [e for e in lines(captured) if e.get("request_id") == echoed]


@pytest.mark.slow
@pytest.mark.parametrize("enabled", [True, False])
def test_gunicorn_access_log_follows_its_switch(
    fresh_database_url: str, tmp_path: Path, enabled: bool
) -> None:
    """GUNICORN_ACCESS_LOG=1 adds gunicorn's access line (with the request id); without it
    none is written (and none is formatted: see deploy/gunicorn.conf.py)."""
    log = tmp_path / "gunicorn.log"
    env = {"LOG_FORMAT": "json", "GUNICORN_ACCESS_LOG": "1" if enabled else ""}
    with gunicorn(fresh_database_url, workers=1, env=env, log=log) as (_process, base):
        answer = HttpClient(base).open("/v1/players", headers={"X-Request-Id": "acc-1"})
        assert answer.status_code == 401
        if enabled:
            wait_until(lambda: "gunicorn.access" in log.read_text(), 30, "the access line")
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    access = [e for e in entries if e.get("logger") == "gunicorn.access"]
    if enabled:
        assert any(e["path"] == "/v1/players" and e["request_id"] == "acc-1" for e in access)
    else:
        assert access == []
        # The application's own request line is still there.
        assert any(
            e.get("logger") == "gin.request" and e.get("request_id") == "acc-1" for e in entries
        )


# --- into Celery -------------------------------------------------------------------------------


def _queue_folder() -> Path:
    from worker.celery_app import app as celery_app

    return Path(celery_app.conf.broker_transport_options["data_folder_in"])


def _published(folder: Path, before: set[Path]) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(set(folder.glob("*.msg")) - before):
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):  # consumed or half-written meanwhile
            continue
    return found


@pytest.mark.slow
def test_request_id_travels_into_the_tasks_a_request_causes(
    fresh_database_url: str, tmp_path: Path
) -> None:
    # 1. A request that ends a match publishes the outbox relay, its id in the headers.
    app = make_test_app(fresh_database_url)
    _operator, key = new_operator(app)
    api = ApiClient(app.test_client(), key)
    table = open_table(api, stake=100, fee={"bps": 500})
    players = [player_client(api, deposit=1000), player_client(api, deposit=1000)]
    for player in players:
        assert join(player, table["id"]).status_code == 201
    folder = _queue_folder()
    before = set(folder.glob("*.msg"))
    request_id = f"req-{secrets.token_hex(6)}"
    resigned = players[0].post(
        f"/v1/matches/{table['match_id']}/actions",
        {"action": "RESIGN"},
        headers={"X-Request-Id": request_id},
    )
    assert resigned.status_code == 200
    ours = [
        (path, message)
        for path, message in _published(folder, before)
        if message["headers"].get("request_id") == request_id
    ]
    assert [message["headers"]["task"] for _path, message in ours] == ["outbox.relay"]
    app.extensions["gin"]["engine"].dispose()

    # 2. A worker runs that very message: the relay's log line carries the id (the relay
    # settles the match itself, under the same id).
    broker = tmp_path / "broker"
    (broker / "queue").mkdir(parents=True)
    path, _message = ours[0]
    shutil.copy(path, broker / "queue" / path.name)
    log_path = tmp_path / "worker.log"
    env = dict(
        os.environ,
        DATABASE_URL=fresh_database_url,
        CELERY_BROKER_URL=f"filesystem://{broker}",
        LOG_FORMAT="json",
        LOG_LEVEL="INFO",
        CELERY_QUEUE=path.name.split(".")[-2],
    )
    with open(log_path, "wb") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "worker.celery_app",
                "worker",
                "--concurrency",
                "1",
                "--pool",
                "prefork",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def task_lines() -> list[dict[str, Any]]:
        out = []
        for raw in log_path.read_text().splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if entry.get("logger") == "gin.tasks" and entry.get("request_id") == request_id:
                out.append(entry)
        return out

    try:
        wait_until(
            lambda: (
                {e["task"] for e in task_lines()} >= {"outbox.relay"}
                and settled_once(app, [table["match_id"]])
            ),
            60,
            "the relay to settle the match and log the request id",
        )
    finally:
        kill(process, signal.SIGTERM)
        app.extensions["gin"]["engine"].dispose()
    for entry in task_lines():
        assert entry["state"] == "SUCCESS"
        assert entry["task_id"] and entry["duration_ms"] >= 0
    # The worker's own lines (Celery's included) are JSON objects too. (Only a warning Python
    # prints before logging is set up, such as Celery's about running as root, is not.)
    records = [json.loads(raw) for raw in log_path.read_text().splitlines() if raw.startswith("{")]
    assert {"celery.worker.consumer.connection", "gin.tasks"} <= {r["logger"] for r in records}
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
