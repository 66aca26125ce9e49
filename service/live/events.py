"""Server-sent events of a match (``GET /v1/matches/{id}/events``): their text form.

- ``update``: the match changed; ``id`` is its version (what ``Last-Event-ID`` resumes
  after), ``data`` the caller's view as ``GET /v1/matches/{id}`` answers it. A view carries
  the whole state the caller may see, so a client that missed some versions (coalesced, or
  dropped while reconnecting) loses nothing by receiving only the latest.
- ``end``: the match has finished (or is void); the stream closes after it.
- ``error``: the caller may no longer watch (a revoked key or token, ...): a problem
  document; the stream closes after it.
"""

from __future__ import annotations

from typing import Any

from service.jsoncodec import dumps_bytes

EVENT_STREAM = "text/event-stream"
#: What OpenAPI says of the stream's body.
EVENT_STREAM_DOC: dict[str, Any] = {"type": "string"}
#: The stream's first line: how long a client waits before it reconnects (milliseconds).
RETRY = b"retry: 2000\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def update(view: dict[str, Any]) -> bytes:
    return b"id: %d\nevent: update\ndata: %s\n\n" % (int(view["version"]), _json(view))


def end(version: int) -> bytes:
    return b'id: %d\nevent: end\ndata: {"version": %d}\n\n' % (version, version)


def _json(value: Any) -> bytes:
    return dumps_bytes(value)
