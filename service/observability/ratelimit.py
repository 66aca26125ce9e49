"""Rate limits per API key and per player, answered with 429 problems.

Every caller has one budget shared by all routes:

- an operator API key (``sk_...``): ``RATELIMIT_OPERATOR`` per key, keyed on the key's SHA-256
  (the key itself is never stored);
- a player token (``pt_...``) with a valid signature: ``RATELIMIT_PLAYER`` per player, keyed on
  the player id inside the token (whatever token the operator mints next, same budget);
- anything else (no credential, a forged token): ``RATELIMIT_ANONYMOUS`` per remote address.

The key is computed from the ``Authorization`` header alone (a hash or an HMAC check, never a
database query), before authentication runs. ``/healthz``, ``/readyz`` and ``/metrics`` are
exempt. Limits are fixed windows (the ``limits`` library's strings, several separated by
``;``). Counters live in ``RATELIMIT_STORAGE_URI``: ``memory://`` (per process, the default: a
dictionary under a lock, no background thread) or any storage the ``limits`` library knows,
``redis://...`` in production (shared by every process; ``RATELIMIT_KEY_PREFIX`` keeps
deployments sharing one Redis apart). If the storage fails, requests are
let through and the error is logged. ``RATELIMIT_ENABLED=false`` turns all of it off.

This sits in front of every request, so it is kept to a dictionary update (or one storage
round trip per limit) per request; Flask-Limiter's per-request limit resolution cost more CPU
than a whole match read.

Responses carry ``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds
until the window resets); a 429 also ``Retry-After`` (API_CONVENTIONS, Operations).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from flask import Flask, Response, current_app, g, request
from limits import RateLimitItem, parse_many
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter

from service import live
from service.api.problems import problem, problem_type
from service.clock import utcnow
from service.errors import RateLimited
from service.usecases.auth import API_KEY_PREFIX, PLAYER_TOKEN_PREFIX, verify_player_token

log = logging.getLogger(__name__)

EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
CODE = RateLimited.code
TITLE = RateLimited.title
KINDS = {"op": "RATELIMIT_OPERATOR", "ply": "RATELIMIT_PLAYER", "ip": "RATELIMIT_ANONYMOUS"}


def caller_key() -> str:
    """``op:<sha256 of the API key>``, ``ply:<player id>`` or ``ip:<remote address>``."""
    cached = g.get("ratelimit_caller")
    if cached is not None:
        return str(cached)
    key = caller_for(
        request.headers.get("Authorization", ""),
        request.remote_addr,
        current_app.config["SECRET_KEY"],
    )
    g.ratelimit_caller = key
    return key


def caller_for(authorization: str, remote_addr: str | None, secret_key: str) -> str:
    """:func:`caller_key` of a request with this ``Authorization`` header and address."""
    scheme, _, credential = authorization.partition(" ")
    credential = credential.strip()
    if scheme.lower() == "bearer" and credential:
        if credential.startswith(API_KEY_PREFIX):
            return operator_key(hashlib.sha256(credential.encode()).hexdigest())
        if credential.startswith(PLAYER_TOKEN_PREFIX):
            try:
                who = verify_player_token(credential, secret_key, utcnow())
            except Exception:  # forged, malformed or expired: limited by address
                pass
            else:
                return f"ply:{who.player_id}"
    return f"ip:{remote_addr or 'unknown'}"


def operator_key(key_hash: str) -> str:
    """The caller key of an API key, from its sha256 hex digest."""
    return "op:" + key_hash[:32]


@dataclass(frozen=True)
class Window:
    """Where one limit stands for one caller after this request."""

    limit: int
    remaining: int
    reset_at: float  # epoch seconds

    @property
    def allowed(self) -> bool:
        return self.remaining >= 0

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(max(0, self.remaining)),
            "RateLimit-Reset": str(max(1, math.ceil(self.reset_at - time.time()))),
        }


class Counter(Protocol):
    def hit(self, item: RateLimitItem, prefix: str, key: str) -> Window: ...


class MemoryCounter:
    """Fixed windows in this process: ``{key: (window end, count)}`` under a lock."""

    MAX_KEYS = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[float, int]] = {}

    def hit(self, item: RateLimitItem, prefix: str, key: str) -> Window:
        now = time.time()
        name = item.key_for(prefix, key)
        with self._lock:
            ends, count = self._windows.get(name, (0.0, 0))
            if ends <= now:
                if len(self._windows) >= self.MAX_KEYS:
                    self._windows = {k: v for k, v in self._windows.items() if v[0] > now}
                ends, count = now + item.get_expiry(), 0
            count += 1
            self._windows[name] = (ends, count)
        return Window(item.amount, item.amount - count, ends)


class StorageCounter:
    """Fixed windows in a ``limits`` storage (Redis in production), shared by processes."""

    def __init__(self, uri: str) -> None:
        self._limiter = FixedWindowRateLimiter(storage_from_string(uri))

    def hit(self, item: RateLimitItem, prefix: str, key: str) -> Window:
        allowed = self._limiter.hit(item, prefix, key)
        stats = self._limiter.get_window_stats(item, prefix, key)
        remaining = stats.remaining if allowed else -1
        return Window(item.amount, remaining, stats.reset_time)


class RateLimits:
    def __init__(self, config: Any) -> None:
        uri = config.get("RATELIMIT_STORAGE_URI") or "memory://"
        self.counter: Counter = MemoryCounter() if uri == "memory://" else StorageCounter(uri)
        self.limits = {kind: parse_many(str(config[name])) for kind, name in KINDS.items()}
        self.prefix = str(config.get("RATELIMIT_KEY_PREFIX") or "gin")

    def check(self) -> Window | None:
        """Count this request; the tightest window, or ``None`` when the storage failed."""
        return self.count(caller_key())

    def count(self, key: str) -> Window | None:
        """Count a request of caller ``key`` (see :func:`caller_key`)."""
        try:
            windows = [
                self.counter.hit(item, self.prefix, key)
                for item in self.limits[key.partition(":")[0]]
            ]
        except Exception:  # the storage is down: let the request through
            log.exception("rate limit storage failed; request let through")
            return None
        return min(windows, key=lambda w: (w.allowed, w.remaining))


def register(app: Flask) -> RateLimits | None:
    config = app.config
    config.setdefault("RATELIMIT_ENABLED", True)
    if not config["RATELIMIT_ENABLED"]:
        return None
    for kind, name in KINDS.items():
        config.setdefault(name, {"op": "300000 per minute"}.get(kind, "30000 per minute"))
    limits = RateLimits(config)

    def before() -> Response | None:
        if request.path in EXEMPT_PATHS or live.RESUMED in request.environ:
            return None  # a parked long-poll answering was counted when it arrived
        if live.RENDER in request.environ:
            return None  # a stream's next events: the stream was counted
        window = limits.check()
        g.ratelimit_window = window
        if window is None or window.allowed:
            return None
        headers = window.headers()
        headers["Retry-After"] = headers["RateLimit-Reset"]
        return problem(
            429,
            CODE,
            TITLE,
            f"Rate limit exceeded ({window.limit} requests per window); retry after "
            f"{headers['Retry-After']} seconds.",
            headers=headers,
        )

    def after(response: Response) -> Response:
        window = g.get("ratelimit_window")
        if window is not None and response.status_code != 429:
            response.headers.update(window.headers())
        return response

    app.before_request(before)
    app.after_request(after)
    app.extensions["gin_limiter"] = limits
    return limits


PROBLEM_RESPONSE: dict[str, Any] = {
    "description": (
        "Too many requests: the caller's rate limit (per API key, per player, or per address "
        "without credentials) is used up. Problem details with `code` `rate_limited`; "
        "`Retry-After` says how many seconds to wait."
    ),
    "headers": {
        "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
        "Retry-After": {
            "description": "Seconds until the limit resets.",
            "schema": {"type": "integer"},
        },
        "RateLimit-Limit": {
            "description": "Requests allowed in the window.",
            "schema": {"type": "integer"},
        },
        "RateLimit-Remaining": {
            "description": "Requests left in the window.",
            "schema": {"type": "integer"},
        },
        "RateLimit-Reset": {
            "description": "Seconds until the window resets.",
            "schema": {"type": "integer"},
        },
    },
    "content": {
        "application/problem+json": {
            "schema": {"$ref": "#/components/schemas/Problem"},
            "examples": {
                "rate_limited": {
                    "summary": "Too many requests",
                    "value": {
                        "type": problem_type(CODE),
                        "title": "Too many requests",
                        "status": 429,
                        "detail": "Rate limit exceeded; retry after 12 seconds.",
                        "instance": "/v1/...",
                        "code": "rate_limited",
                    },
                }
            },
        }
    },
}


def document(api: Any) -> None:
    """Add the 429 answer (a shared response component) to every rate-limited operation of
    the OpenAPI document."""
    spec = api.spec
    spec.components.response("RATE_LIMITED", PROBLEM_RESPONSE)
    for path, operations in spec._paths.items():  # apispec keeps no public iterator
        if path in EXEMPT_PATHS:
            continue
        for method, operation in operations.items():
            if method.lower() in {"get", "post", "put", "patch", "delete"}:
                operation.setdefault("responses", {})["429"] = {
                    "$ref": "#/components/responses/RATE_LIMITED"
                }
