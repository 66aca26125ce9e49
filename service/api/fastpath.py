"""WSGI fast paths: the busiest requests answered in front of Flask, the rest handed to it.

A fast path answers only the plain, common form of its requests, and only with success. It
hands anything else to the Flask application untouched (a body it read is put back), and
the ordinary path owns every refusal and every uncommon case. A request it answers gets what
Flask's hooks would give it, so a client cannot tell which path answered:

- the ``X-Request-Id`` header, and the request id on every log line written meanwhile (and in
  the headers of the tasks it queues); a request handed to Flask keeps the same id;
- the rate limit, counted once: the caller's window travels in the environ
  (:data:`service.observability.ratelimit.COUNTED`) to Flask if the request is handed over,
  and a caller over its limit is handed over for Flask to answer the 429;
- the in-progress gauge, the latency histogram and the request's log line
  (:mod:`service.observability.metrics`).

Subclasses say which requests are theirs (:meth:`FastPath.route`) and answer them
(:meth:`FastPath.answer`). They are :mod:`service.api.cashier` (deposits and withdrawals) and
:mod:`service.api.matchpath` (a player's view of a match and an action).
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from flask import Flask

from service.api.context import request_id
from service.api.problems import PROBLEM_JSON
from service.observability import metrics, ratelimit
from service.observability.logs import request_id_var

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

#: Bodies larger than this are left to Flask (the requests served here have small ones).
MAX_BODY = 16 * 1024


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    replayed: bool = False  # an ``Idempotency-Key`` replay: ``Idempotent-Replayed: true``


class FastPath:
    """WSGI middleware in front of the Flask application ``app`` (see the module docs)."""

    def __init__(self, app: Flask, wsgi_app: WsgiApp) -> None:
        self.app = app
        self.wsgi_app = wsgi_app
        self.limiter: ratelimit.RateLimits | None = app.extensions.get("gin_limiter")

    def route(self, env: dict[str, Any]) -> tuple[str, re.Match[str]] | None:
        """``(URL rule, match of the path)`` for a request of this path, else ``None``."""
        raise NotImplementedError

    def answer(self, env: dict[str, Any], found: re.Match[str]) -> Answer | None:
        """The answer, or ``None`` to hand the request to Flask (any body read put back)."""
        raise NotImplementedError

    def __call__(self, env: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        routed = self.route(env)
        if routed is None:
            return self.wsgi_app(env, start_response)
        rule, found = routed
        started = time.perf_counter()
        rid = request_id(env.get("HTTP_X_REQUEST_ID", ""))
        metrics.labelled(metrics.IN_PROGRESS, rule).inc()
        token = request_id_var.set(rid)
        try:
            answer = self.answer(env, found)
        finally:
            request_id_var.reset(token)
            metrics.labelled(metrics.IN_PROGRESS, rule).dec()
        if answer is None:  # Flask counts it in progress itself, under the same request id
            env["HTTP_X_REQUEST_ID"] = rid
            return self.wsgi_app(env, start_response)
        headers = [
            ("Content-Type", PROBLEM_JSON if answer.status >= 400 else "application/json"),
            ("Content-Length", str(len(answer.body))),
            ("X-Request-Id", rid),
        ]
        if answer.replayed:
            headers.append(("Idempotent-Replayed", "true"))
        counted = env.get(ratelimit.COUNTED)
        if counted is not None and counted[1] is not None:
            headers.extend(counted[1].headers().items())
        start_response(f"{answer.status} {HTTPStatus(answer.status).phrase}", headers)
        metrics.observe(
            rule, env["REQUEST_METHOD"], env["PATH_INFO"], answer.status,
            time.perf_counter() - started, env.get("REMOTE_ADDR"), rid,
        )
        return [answer.body]

    def within_limit(self, env: dict[str, Any], caller: str) -> bool:
        """Count this request against ``caller``'s rate limit (once: Flask reuses the count if
        the request is handed over). ``False`` when it is over the limit: Flask answers it."""
        if self.limiter is None:
            return True
        window = self.limiter.count(caller)
        env[ratelimit.COUNTED] = (caller, window)
        return window is None or window.allowed


def installed(app: Flask) -> list[FastPath]:
    """The fast paths in front of ``app``, the outermost first."""
    found: list[FastPath] = []
    layer: Any = app.wsgi_app
    while isinstance(layer, FastPath):
        found.append(layer)
        layer = layer.wsgi_app
    return found


def bearer(env: dict[str, Any]) -> str | None:
    """The credential of ``Authorization: Bearer <credential>``, if that is the header."""
    scheme, _, credential = env.get("HTTP_AUTHORIZATION", "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None


def read_json_body(env: dict[str, Any]) -> bytes | None:
    """The JSON body, put back for Flask to read again; ``None`` if it is not a plain one (no
    JSON content type, no length, too long, or holding a NUL, which Flask refuses)."""
    mimetype = env.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
    try:
        length = int(env.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    if mimetype != "application/json" or not 0 < length <= MAX_BODY:
        return None
    body: bytes = env["wsgi.input"].read(length)
    env["wsgi.input"] = io.BytesIO(body)
    if len(body) != length or b"\\u0000" in body:
        return None
    return body
