"""The webhook transport: one signed POST to an operator's endpoint, over HTTP(S), never
raising; seamless wallet calls (:mod:`service.usecases.seamless`) go out the same way. Kept
apart from the delivery use case (:mod:`service.usecases.webhooks`), which is handed a
:data:`Post` and records what it answered; tests hand it a stub or a sender allowed to reach
loopback.

Hosts are resolved once and vetted (:mod:`service.outbound.targets`), and the connection goes
to the vetted address (no second DNS answer); redirects are not followed; the whole exchange
has one time budget.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from service.outbound.targets import PrivateTarget, check

TIMEOUT_SECONDS = 10.0  # a 2xx must arrive within this budget (connect, send and answer)
MAX_RESPONSE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Response:
    """What one HTTP attempt got: a status code, or an error (connection, timeout)."""

    status_code: int | None
    error: str | None
    duration_ms: int
    #: The answer's body, up to MAX_RESPONSE_BYTES (a seamless wallet's answer is read).
    body: bytes = b""

    @property
    def ok(self) -> bool:
        return (
            self.error is None and self.status_code is not None and (200 <= self.status_code < 300)
        )


Post = Callable[[str, bytes, dict[str, str], float], Response]


class PrivateAddress(OSError):
    """Raised when a webhook URL's host resolves to an address that is not public."""


def resolve(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to for ``host``: the first it resolves to.

    :raises PrivateAddress: when ``allow_private`` is false and the host or any address it
        resolves to is not public (:mod:`service.outbound.targets`: the service's own network,
        a cloud metadata endpoint; server-side request forgery).
    :raises OSError: when the host does not resolve.
    """
    addresses = [
        str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    ]
    if not addresses:
        raise OSError(f"{host!r} resolves to no address")
    try:
        check(host, addresses, allow_private=allow_private)
    except PrivateTarget as exc:
        raise PrivateAddress(str(exc)) from None
    return addresses[0]


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to an address already resolved and vetted (no second DNS answer)."""

    def __init__(self, host: str, port: int | None, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


def tls_context() -> ssl.SSLContext:
    """How deliveries verify HTTPS receivers: the system's trusted authorities, host names
    checked."""
    return ssl.create_default_context()


class _PinnedHTTPS(http.client.HTTPSConnection):
    """Like :class:`_PinnedHTTP`, with TLS verified against the URL's host name."""

    def __init__(self, host: str, port: int | None, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address
        self.tls = tls_context()

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)


def http_sender(allow_private: bool = False) -> Post:
    """A :data:`Post` over HTTP(S); ``allow_private`` lets it reach loopback and private
    addresses (development and tests only)."""

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Response:
        return http_post(url, body, headers, timeout, allow_private=allow_private)

    return post


def http_post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    *,
    allow_private: bool = False,
) -> Response:
    """POST ``body`` to ``url``; never raises. Redirects are not followed (a 3xx is a
    failure), the whole exchange must finish within ``timeout`` seconds, and hosts that
    resolve to non-public addresses are refused unless ``allow_private``."""
    started = time.monotonic()

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    def remaining() -> float:
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            raise TimeoutError("timed out")
        return left

    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection: http.client.HTTPConnection
    try:
        https = parts.scheme == "https"
        host = parts.hostname or ""
        address = resolve(host, parts.port or (443 if https else 80), allow_private)
        pinned = _PinnedHTTPS if https else _PinnedHTTP
        connection = pinned(host, parts.port, address, remaining())
        try:
            connection.request("POST", path, body=body, headers=headers)
            if connection.sock is not None:
                connection.sock.settimeout(remaining())
            answer = connection.getresponse()
            if connection.sock is not None:
                connection.sock.settimeout(remaining())
            received = answer.read(MAX_RESPONSE_BYTES)
        finally:
            connection.close()
    except TimeoutError:
        return Response(None, f"timed out after {timeout:g} s", elapsed_ms())
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return Response(None, f"{type(exc).__name__}: {exc}"[:500], elapsed_ms())
    duration = elapsed_ms()
    if duration > timeout * 1000:
        return Response(answer.status, f"answered after {timeout:g} s", duration, received)
    return Response(answer.status, None, duration, received)
