"""Rate limits per API key and per player (Flask-Limiter), answered with 429 problems.

Every caller has one budget shared by all routes (Flask-Limiter's application limits):

- an operator API key (``sk_...``): ``RATELIMIT_OPERATOR`` per key, keyed on the key's SHA-256
  (the key itself is never stored);
- a player token (``pt_...``) with a valid signature: ``RATELIMIT_PLAYER`` per player, keyed on
  the player id inside the token (whatever token the operator mints next, same budget);
- anything else (no credential, a forged token): ``RATELIMIT_ANONYMOUS`` per remote address.

The key is computed from the ``Authorization`` header alone (a hash or an HMAC check, never a
database query), before authentication runs. ``/healthz``, ``/readyz`` and ``/metrics`` are
exempt. Counters live in ``RATELIMIT_STORAGE_URI``: ``memory://`` (per process, the default)
or ``redis://...`` (shared by every process, for production). If the storage fails, requests
are let through and the error is logged (``swallow_errors``). ``RATELIMIT_ENABLED=false``
turns all of it off.

Responses carry ``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds
until the window resets); a 429 also ``Retry-After`` (API_CONVENTIONS, Operations).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
from typing import Any

from flask import Flask, Response, current_app, g, request
from flask_limiter import Limiter
from flask_limiter.errors import RateLimitExceeded

from service.api.problems import problem
from service.clock import utcnow
from service.usecases.auth import API_KEY_PREFIX, PLAYER_TOKEN_PREFIX, verify_player_token

EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
CODE = "rate_limited"
TITLE = "Too many requests"


def caller_key() -> str:
    """``op:<sha256 of the API key>``, ``ply:<player id>`` or ``ip:<remote address>``."""
    cached = g.get("ratelimit_caller")
    if cached is not None:
        return str(cached)
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    credential = credential.strip()
    key = f"ip:{request.remote_addr or 'unknown'}"
    if scheme.lower() == "bearer" and credential:
        if credential.startswith(API_KEY_PREFIX):
            key = "op:" + hashlib.sha256(credential.encode()).hexdigest()[:32]
        elif credential.startswith(PLAYER_TOKEN_PREFIX):
            try:
                who = verify_player_token(
                    credential, current_app.config["SECRET_KEY"], utcnow()
                )
            except Exception:  # forged, malformed or expired: limited by address
                pass
            else:
                key = f"ply:{who.player_id}"
    g.ratelimit_caller = key
    return key


def caller_limit() -> str:
    """The limit string of the caller's kind (read from the app's config per request)."""
    kind = caller_key().partition(":")[0]
    config = current_app.config
    if kind == "op":
        return str(config["RATELIMIT_OPERATOR"])
    if kind == "ply":
        return str(config["RATELIMIT_PLAYER"])
    return str(config["RATELIMIT_ANONYMOUS"])


def _exempt() -> bool:
    return request.path in EXEMPT_PATHS


def _seconds_until(reset_at: float) -> int:
    return max(1, math.ceil(reset_at - time.time()))


def _limit_headers(limiter: Limiter) -> dict[str, str]:
    current = limiter.current_limit
    if current is None:
        return {}
    return {
        "RateLimit-Limit": str(current.limit.amount),
        "RateLimit-Remaining": str(max(0, current.remaining)),
        "RateLimit-Reset": str(_seconds_until(current.reset_at)),
    }


def register(app: Flask) -> Limiter | None:
    config = app.config
    config.setdefault("RATELIMIT_ENABLED", True)
    if not config["RATELIMIT_ENABLED"]:
        return None
    limiter = Limiter(
        caller_key,
        application_limits=[caller_limit],
        storage_uri=config.get("RATELIMIT_STORAGE_URI") or "memory://",
        strategy="fixed-window",
        headers_enabled=False,  # written below: RateLimit-* names, Reset in seconds
        swallow_errors=True,
        key_prefix="gin",
    )
    limiter.request_filter(_exempt)
    limiter.init_app(app)

    def too_many(error: RateLimitExceeded) -> Response:
        headers = _limit_headers(limiter)
        retry = headers.get("RateLimit-Reset", "1")
        headers["Retry-After"] = retry
        return problem(
            429,
            CODE,
            TITLE,
            f"Rate limit exceeded ({error.description}); retry after {retry} seconds.",
            headers=headers,
        )

    def add_headers(response: Response) -> Response:
        if response.status_code != 429:
            # If the storage failed, the request was let through anyway: no headers then.
            with contextlib.suppress(Exception):
                response.headers.update(_limit_headers(limiter))
        return response

    app.register_error_handler(RateLimitExceeded, too_many)
    app.after_request(add_headers)
    app.extensions["gin_limiter"] = limiter
    return limiter


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
            "description": "Requests allowed in the window.", "schema": {"type": "integer"},
        },
        "RateLimit-Remaining": {
            "description": "Requests left in the window.", "schema": {"type": "integer"},
        },
        "RateLimit-Reset": {
            "description": "Seconds until the window resets.", "schema": {"type": "integer"},
        },
    },
    "content": {
        "application/problem+json": {
            "schema": {"$ref": "#/components/schemas/Problem"},
            "examples": {
                "rate_limited": {
                    "summary": "Too many requests",
                    "value": {
                        "type": "https://docs.gin-service.example/problems/rate-limited",
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
