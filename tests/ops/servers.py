"""Real gunicorn processes for the operations tests, and an HTTP client for them that fits
:class:`tests.conftest.ApiClient` (so the play helpers drive a real server as they drive the
Flask test client)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.integration.workers import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "gunicorn.conf.py"


class HttpResponse:
    """The parts of a Flask test response the tests use."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status_code = status
        self.headers = headers
        self.data = body

    def get_json(self) -> Any:
        return json.loads(self.data) if self.data else None

    def get_data(self, as_text: bool = False) -> Any:
        return self.data.decode() if as_text else self.data


class HttpClient:
    """``open(path, method=, json=, headers=)`` over real HTTP to one base URL."""

    def __init__(self, base: str, timeout: float = 30) -> None:
        self.base = base
        self.timeout = timeout

    def open(
        self,
        path: str,
        method: str = "GET",
        json: Any = None,
        headers: dict[str, str] | None = None,
        **_: Any,
    ) -> HttpResponse:
        sent = dict(headers or {})
        data = None
        if json is not None:
            data = _dumps(json)
            sent["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return HttpResponse(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as error:
            return HttpResponse(error.code, dict(error.headers), error.read())


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


class Alternating:
    """A client that sends each request to the next of several servers in turn."""

    def __init__(self, clients: list[HttpClient]) -> None:
        self.clients = clients
        self.sent = 0

    def open(self, *args: Any, **kwargs: Any) -> HttpResponse:
        client = self.clients[self.sent % len(self.clients)]
        self.sent += 1
        return client.open(*args, **kwargs)


def get(base: str, path: str, timeout: float = 10) -> HttpResponse:
    return HttpClient(base, timeout).open(path)


def _answers(base: str) -> bool:
    try:
        return get(base, "/healthz", timeout=1).status_code == 200
    except OSError:
        return False


@contextmanager
def gunicorn(
    database_url: str,
    workers: int = 2,
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """gunicorn with ``deploy/gunicorn.conf.py`` on a free port; yields (process, base URL).
    Stopped with SIGTERM (then SIGKILL) at exit if still running."""
    port = free_port()
    environment = dict(
        os.environ,
        DATABASE_URL=database_url,
        SECRET_KEY=os.environ.get("SECRET_KEY", "test-secret-key"),
        GIN_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY=str(workers),
        GUNICORN_THREADS="4",
        **(env or {}),
    )
    output: Any = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(CONFIG), "service.wsgi:app"],
        cwd=ROOT,
        env=environment,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    if log:
        output.close()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: process.poll() is not None or _answers(base), 60, "gunicorn")
        assert process.poll() is None, f"gunicorn exited with {process.returncode}"
        yield process, base
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def metric_samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of ``name`` in a text exposition, as (labels, value)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                out.append((dict(sample.labels), float(sample.value)))
    return out
