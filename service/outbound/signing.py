"""Webhook signatures: how the service signs a delivery and how a receiver checks it.

A delivery carries ``Gin-Signature: t=<unix seconds>,v1=<hex>``, where ``<hex>`` is
HMAC-SHA256 keyed with the endpoint's secret (the whole ``whsec_...`` string, UTF-8) over
``"<t>.<raw body>"``. While a rotated secret is still in its grace period the header carries
one ``v1=`` per valid secret, newest first; a receiver accepts the delivery when any of them
matches its secret. Receivers compare in constant time and refuse timestamps more than
``tolerance`` seconds away from their clock, so a captured delivery cannot be replayed later.

Pure standard library: receivers can copy :func:`verify_signature` as it is.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as _random
from collections.abc import Sequence

SIGNATURE_HEADER = "Gin-Signature"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE = 300


def new_secret() -> str:
    """A fresh endpoint secret: ``whsec_`` plus 32 random bytes (base64url)."""
    return SECRET_PREFIX + _random.token_urlsafe(32)


def compute_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>.<body>"`` under ``secret``."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(secrets: Sequence[str], timestamp: int, body: bytes) -> str:
    """The ``Gin-Signature`` value for ``body``: one ``v1=`` per secret, in the given order.

    :raises ValueError: when no secret is given.
    """
    if not secrets:
        raise ValueError("a signature needs at least one secret")
    parts = [f"t={timestamp}"] + [f"v1={compute_signature(s, timestamp, body)}" for s in secrets]
    return ",".join(parts)


def verify_signature(
    secret: str, header: str, body: bytes, now: float, tolerance: int = DEFAULT_TOLERANCE
) -> bool:
    """Whether ``header`` (a ``Gin-Signature`` value) signs ``body`` with ``secret``.

    ``body`` is the raw request body, exactly as received (before any JSON parsing); ``now``
    is the receiver's clock in unix seconds (``time.time()``). False for a malformed header,
    a timestamp more than ``tolerance`` seconds from ``now``, or no matching ``v1=`` value.
    """
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isascii() and value.isdigit():
            timestamp = int(value)
        elif key == "v1" and value:
            candidates.append(value)
    if timestamp is None or not candidates or abs(now - timestamp) > tolerance:
        return False
    expected = compute_signature(secret, timestamp, body).encode()
    # Check every candidate (no early exit), each in constant time; bytes, so a non-ASCII
    # value is simply a mismatch.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(expected, candidate.encode("utf-8", "replace"))
    return matched
