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
    MAX_HEADER_FIELDS,
    MAX_REQUEST_TARGET_BYTES,
)
from service.gunicorn_worker import LINGER_BYTES
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


def assert_server_problem(answer: Answer, status: int, code: str) -> dict[str, Any]:
    """A refusal the HTTP server makes itself, shaped as the application's: problem+json, a
    ``type`` that is a page of this service, an ``X-Request-Id``."""
    problem = answer.problem()
    assert answer.status == status and problem["status"] == status, problem
    assert problem["code"] == code and problem["type"] == f"/problems/{code}"
    assert problem["title"] and problem["detail"]
    assert answer.headers.get("x-request-id")
    assert int(answer.headers["content-length"]) == len(answer.body)
    return problem


def test_past_gunicorns_own_limits_its_refusals_are_problems(served: Any) -> None:
    """What only the HTTP server can refuse (docs/deploy.md): a request line over 8190 bytes,
    a header field over twice the application's limit, more fields than twice its count.
    Before: gunicorn's text/html pages."""
    base, key, pid = served
    for target in (
        "/v1/players?starting_after=" + "c" * 9000,
        f"/v1/players/{pid}/" + "p" * 10_000,
    ):
        long_line = exchange(base, request_head("GET", target, key))
        assert_server_problem(long_line, 414, "uri_too_long")
    long_field = exchange(
        base,
        request_head(
            "GET", "/v1/players", key, "X-Trace: " + "t" * (2 * MAX_HEADER_FIELD_BYTES + 10)
        ),
    )
    assert_server_problem(long_field, 431, "header_fields_too_large")
    many = [f"X-Extra-{i}: 1" for i in range(2 * MAX_HEADER_FIELDS + 1)]
    too_many = exchange(base, request_head("GET", "/v1/players", key, *many))
    assert_server_problem(too_many, 431, "header_fields_too_large")


@pytest.mark.parametrize("value", ["a\x00b", "a\rb", "a\r\n\x00b"])
def test_a_header_with_cr_lf_or_nul_is_a_problem(served: Any, value: str) -> None:
    """Before: gunicorn's text/html 400."""
    base, key, _pid = served
    answer = exchange(base, request_head("GET", "/v1/players", key, f"X-Trace: {value}"))
    problem = assert_server_problem(answer, 400, "malformed_request")
    if "\n" not in value:  # a bare LF ends the field: the next line is the one at fault
        assert [e["field"] for e in problem["errors"]] == ["X-Trace"]


def test_what_is_not_http_is_a_problem(served: Any) -> None:
    base, key, _pid = served
    for head in ("NOT HTTP AT ALL\r\n", "GET /v1/players HTTP/9.9\r\nHost: a\r\n"):
        assert_server_problem(exchange(base, head), 400, "malformed_request")
    coding = exchange(
        base,
        request_head("POST", "/v1/tables", key, "Transfer-Encoding: foo, chunked"),
    )
    assert_server_problem(coding, 501, "not_implemented")
    expect = exchange(base, request_head("GET", "/v1/players", key, "Expect: magic"))
    assert_server_problem(expect, 417, "expectation_failed")
    twice = exchange(
        base, request_head("POST", "/v1/tables", key, "Content-Length: 2", "Content-Length: 2")
    )
    problem = assert_server_problem(twice, 400, "malformed_request")
    assert [e["field"] for e in problem["errors"]] == ["Content-Length"]


def read_one_answer(connection: socket.socket) -> Answer:
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += connection.recv(65536)
    head = raw.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    length = int(head.partition("content-length:")[2].split("\r\n")[0])
    while len(raw.partition(b"\r\n\r\n")[2]) < length:
        raw += connection.recv(65536)
    return Answer(raw)


def test_a_body_announced_too_long_is_413_before_it_is_sent(served: Any) -> None:
    """Only the headers are sent: the answer comes without the body ever arriving (the
    server then waits a while for the body, to read and drop it, before it closes)."""
    base, key, pid = served
    head = request_head(
        "POST",
        f"/v1/players/{pid}/deposits",
        key,
        "Content-Type: application/json",
        f"Content-Length: {10 * 1024 * 1024}",
        "Idempotency-Key: big",
    )
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(head.encode("latin-1") + b"\r\n")
        answer = read_one_answer(connection)
    assert answer.status == 413 and answer.problem()["code"] == "content_too_large"


def send_then_read(base: str, head: str, body: bytes) -> Answer:
    """A client that writes its whole request before it reads anything (as most HTTP clients
    do), on its own connection; the answer read to the end (``Connection: close``)."""
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(head.encode("latin-1") + b"Connection: close\r\n\r\n" + body)
        raw = b""
        while data := connection.recv(65536):
            raw += data
    return Answer(raw)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/players/{pid}/deposits",
        "/v1/players/{pid}/withdrawals",
        "/v1/tables",
        "/v1/tables/tbl_nope/seats",
        "/v1/matches/mch_nope/actions",
        "/v1/webhook-endpoints",
    ],
)
def test_a_whole_10_mb_body_sent_before_reading_gets_its_413(served: Any, path: str) -> None:
    """Before: the server answered 413 at the headers and closed with most of the body
    unread, the client's kernel got a reset, and the client's write failed (broken pipe,
    connection reset) before it read the answer. The server now reads and discards the rest
    of a refused body (up to a bound) before it closes."""
    base, key, pid = served
    size = 10 * 1024 * 1024
    answer = send_then_read(
        base,
        request_head(
            "POST",
            path.format(pid=pid),
            key,
            "Content-Type: application/json",
            f"Content-Length: {size}",
            "Idempotency-Key: whole-body",
        ),
        b"x" * size,
    )
    assert answer.status == 413 and answer.problem()["code"] == "content_too_large"


def test_after_a_refused_10_mb_body_the_connection_serves_the_next_request(served: Any) -> None:
    """Kept alive, the refused body is read to its end (gunicorn's own drain stopped at
    64 KiB and closed), so the connection's next request is answered."""
    base, key, pid = served
    size = 10 * 1024 * 1024
    parts = urlsplit(base)
    head = request_head(
        "POST",
        f"/v1/players/{pid}/deposits",
        key,
        "Content-Type: application/json",
        f"Content-Length: {size}",
        "Idempotency-Key: kept-alive",
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(head.encode("latin-1") + b"\r\n" + b"x" * size)
        refused = read_one_answer(connection)
        assert refused.status == 413 and refused.problem()["code"] == "content_too_large"
        connection.sendall(request_head("GET", "/v1/players", key).encode() + b"\r\n")
        assert read_one_answer(connection).status == 200


def test_a_body_past_the_linger_bound_is_not_read_to_its_end(served: Any) -> None:
    """The server reads a refused body for the client's sake, but only up to its bound: a
    client that goes on sending is cut off after that much."""
    base, key, pid = served
    size = 4 * LINGER_BYTES
    parts = urlsplit(base)
    head = request_head(
        "POST",
        f"/v1/players/{pid}/deposits",
        key,
        "Content-Type: application/json",
        f"Content-Length: {size}",
        "Idempotency-Key: endless",
    )
    piece = b"x" * (1024 * 1024)
    sent = 0
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(head.encode("latin-1") + b"\r\n")
        with pytest.raises(OSError):  # reset (or broken pipe) once the server has closed
            while sent < size:
                connection.sendall(piece)
                sent += len(piece)
    assert LINGER_BYTES <= sent < size


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
