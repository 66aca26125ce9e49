"""Under gunicorn (deploy/gunicorn.conf.py): the refusals the service owns are problems, not
gunicorn's HTML pages, because gunicorn's limits lie beyond the application's; past those,
gunicorn answers with its own page (docs/deploy.md, "Request limits")."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from service.config import (
    DEFAULT_MAX_CONTENT_LENGTH,
    MAX_HEADER_FIELD_BYTES,
    MAX_REQUEST_TARGET_BYTES,
)
from tests.conftest import make_test_app, new_operator
from tests.ops.servers import gunicorn

PROBLEM_JSON = "application/problem+json"


class Answer:
    def __init__(self, raw: bytes) -> None:
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        if self.headers.get("transfer-encoding") == "chunked":
            self.body = _unchunk(self.body)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0]

    def problem(self) -> dict[str, Any]:
        assert self.media_type == PROBLEM_JSON, (self.status, self.headers, self.body[:200])
        return dict(json.loads(self.body))


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size, _, data = data.partition(b"\r\n")
        length = int(size, 16)
        if not length:
            break
        out, data = out + data[:length], data[length + 2 :]
    return out


def exchange(base: str, head: str, body: bytes = b"", chunks: list[bytes] | None = None) -> Answer:
    """One request on its own connection, as raw bytes (so nothing is checked or cut on the
    client's side), and the whole answer (the server closes, ``Connection: close``)."""
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(head.encode("latin-1") + b"Connection: close\r\n\r\n" + body)
        try:
            for chunk in chunks or []:
                connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            if chunks is not None:
                connection.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed before the rest was sent
            pass
        raw = b""
        while data := connection.recv(65536):
            raw += data
    return Answer(raw)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sqlite_template: str) -> Iterator[Any]:
    import shutil

    path = tmp_path_factory.mktemp("limits") / "limits.sqlite"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    app = make_test_app(url)
    _operator, key = new_operator(app)
    client = app.test_client()
    auth = {"Authorization": f"Bearer {key}"}
    player = client.post(
        "/v1/players", json={"external_id": "e", "display_name": "N"}, headers=auth
    ).get_json()
    app.extensions["gin"]["engine"].dispose()
    with gunicorn(url, workers=1, env={"RATELIMIT_ENABLED": "0"}) as (_process, base):
        yield base, key, player["id"]


def request_head(method: str, target: str, key: str, *headers: str) -> str:
    lines = [
        f"{method} {target} HTTP/1.1",
        "Host: api.example",
        f"Authorization: Bearer {key}",
        *headers,
    ]
    return "\r\n".join(lines) + "\r\n"


def test_a_10_kb_idempotency_key_is_a_problem_naming_the_header(served: Any) -> None:
    """Before: gunicorn's HTML 431 (its field limit was 8190 bytes)."""
    base, key, pid = served
    body = b'{"amount": {"amount": 100, "currency": "EUR"}}'
    answer = exchange(
        base,
        request_head(
            "POST",
            f"/v1/players/{pid}/deposits",
            key,
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            "Idempotency-Key: " + "k" * 10_000,
        ),
        body,
    )
    problem = answer.problem()
    assert answer.status == 400 and problem["code"] == "malformed_request"
    assert [e["field"] for e in problem["errors"]] == ["Idempotency-Key"]


def test_a_header_too_long_for_the_application_is_its_431(served: Any) -> None:
    base, key, _pid = served
    answer = exchange(
        base,
        request_head("GET", "/v1/players", key, "X-Trace: " + "t" * (MAX_HEADER_FIELD_BYTES + 100)),
    )
    assert answer.status == 431 and answer.problem()["code"] == "header_fields_too_large"


def test_a_path_or_cursor_too_long_for_the_application_is_its_414(served: Any) -> None:
    """Before: gunicorn's HTML 414 (its request line limit was 4094 bytes)."""
    base, key, pid = served
    for target in (
        f"/v1/players/{pid}/" + "p" * MAX_REQUEST_TARGET_BYTES,
        "/v1/players?starting_after=" + "c" * (MAX_REQUEST_TARGET_BYTES + 100),
    ):
        answer = exchange(base, request_head("GET", target, key))
        assert answer.status == 414 and answer.problem()["code"] == "uri_too_long"


def test_past_gunicorns_own_limits_gunicorn_answers(served: Any) -> None:
    """What only the HTTP server can refuse, as docs/deploy.md says: a request line over
    8190 bytes, a header field over twice the application's limit."""
    base, key, _pid = served
    long_line = exchange(base, request_head("GET", "/v1/players?x=" + "c" * 9000, key))
    assert long_line.status == 414 and long_line.media_type != PROBLEM_JSON
    long_field = exchange(
        base,
        request_head(
            "GET", "/v1/players", key, "X-Trace: " + "t" * (2 * MAX_HEADER_FIELD_BYTES + 10)
        ),
    )
    assert long_field.status == 431 and long_field.media_type != PROBLEM_JSON


def test_a_body_announced_too_long_is_413_before_it_is_sent(served: Any) -> None:
    """Only the headers are sent: the answer comes without the body ever arriving."""
    base, key, pid = served
    answer = exchange(
        base,
        request_head(
            "POST",
            f"/v1/players/{pid}/deposits",
            key,
            "Content-Type: application/json",
            f"Content-Length: {10 * 1024 * 1024}",
            "Idempotency-Key: big",
        ),
    )
    assert answer.status == 413 and answer.problem()["code"] == "content_too_large"


def test_a_chunked_body_too_long_is_413(served: Any) -> None:
    base, key, pid = served
    chunks = (
        [b'{"external_reference": "']
        + [b"r" * 16384] * (DEFAULT_MAX_CONTENT_LENGTH // 16384 + 2)
        + [b'"}']
    )
    answer = exchange(
        base,
        request_head(
            "POST",
            f"/v1/players/{pid}/deposits",
            key,
            "Content-Type: application/json",
            "Transfer-Encoding: chunked",
            "Idempotency-Key: chunked",
        ),
        chunks=chunks,
    )
    assert answer.status == 413 and answer.problem()["code"] == "content_too_large"


def test_a_lone_surrogate_on_the_deposit_path_is_a_422_problem(served: Any) -> None:
    """Before: an HTML 500 page from gunicorn."""
    base, key, pid = served
    body = b'{"amount": {"amount": 100, "currency": "EUR"}, "external_reference": "a\\ud800b"}'
    answer = exchange(
        base,
        request_head(
            "POST",
            f"/v1/players/{pid}/deposits",
            key,
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            "Idempotency-Key: lone",
        ),
        body,
    )
    problem = answer.problem()
    assert answer.status == 422 and [e["field"] for e in problem["errors"]] == [
        "external_reference"
    ]
