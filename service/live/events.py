"""Server-sent events of a match (``GET /v1/matches/{id}/events``): their text form.

- ``update``: the match changed; ``id`` is its version (what ``Last-Event-ID`` resumes
  after), ``data`` the caller's view as ``GET /v1/matches/{id}`` answers it. A view carries
  the whole state the caller may see, so a client that missed some versions (coalesced, or
  dropped while reconnecting) loses nothing by receiving only the latest. A tournament's
  stream (``GET /v1/tournaments/{id}/events``) sends the same events: ``id`` the
  tournament's version, ``data`` the tournament as ``GET /v1/tournaments/{id}`` answers it.
- ``end``: the match (the tournament) has finished (or is void, or cancelled); ``data``
  its ``version`` and, for a match, ``settlement``: ``pending`` (a ``settlement`` event
  follows once the worker has settled it: the stream stays open for it), ``completed``
  (the ``settlement`` event follows at once) or null (none comes: a tournament's match,
  whose tournament pays, or a cancelled one). The stream closes after it unless a
  settlement is pending.
- ``settlement`` (a match's stream): the match's settlement is ready; ``id`` the version
  that wrote it (the settlement bumps the match's version, after its ``end``), ``data``
  ``match_id``, ``version``, ``status`` (``completed``), ``settled_at``, and
  ``settlement``: the statement as ``GET /v1/matches/{id}/settlement`` answers the caller
  (the operator, or one of the match's players), or null for a spectator, who may not read
  it. The stream closes after it.
- ``lobby`` (the lobby's stream, ``GET /v1/tables/events``): the lobby's page, each time
  it changes.
- ``error``: the caller may no longer watch (a revoked key or token, ...): a problem
  document; the stream closes after it.
"""

from __future__ import annotations

import time
from typing import Any

from flask import current_app, request

from service.api.schemas import MAX_INTEGER
from service.clock import utcnow
from service.jsoncodec import dumps_bytes
from service.usecases.auth import player_token_expiry

EVENT_STREAM = "text/event-stream"
#: What OpenAPI says of the stream's body: the schema of each of its events (as OpenAPI 3.2
#: reads a ``text/event-stream`` schema); ``data`` is JSON text.
EVENT_STREAM_DOC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {
            "type": "string",
            "enum": ["update", "end", "settlement", "error", "lobby"],
            "description": "`update`: the caller's view (`data`) at version `id`. `end`: "
            "the match (tournament) is over; `data`: its `version` and, for a match, "
            "`settlement`: `pending` (a `settlement` event follows once the worker has "
            "settled it), `completed` (it follows at once) or null (none will). "
            "`settlement` (a match's stream, the last event): the settlement is ready; "
            "`data`: `match_id`, `version`, `status`, `settled_at` and `settlement`, the "
            "statement as `GET /v1/matches/{match_id}/settlement` answers the caller, null "
            "for a spectator. `error`: a problem document; the stream closes. `lobby`: the "
            "lobby's page.",
        },
        "id": {
            "type": "string",
            "description": "The match's (the tournament's) version (match and tournament streams).",
        },
        "data": {"type": "string", "contentMediaType": "application/json"},
        "retry": {"type": "integer", "description": "Milliseconds to wait before resuming."},
    },
}
#: The stream's first line: how long a client waits before it reconnects (milliseconds).
RETRY = b"retry: 2000\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def update(view: dict[str, Any]) -> bytes:
    return b"id: %d\nevent: update\ndata: %s\n\n" % (int(view["version"]), _json(view))


def end(version: int, settlement: str | None = None, *, match: bool = False) -> bytes:
    """The ``end`` event; a match's says whether its ``settlement`` is ``pending``,
    ``completed`` or not to come (None)."""
    data: dict[str, Any] = {"version": version}
    if match:
        data["settlement"] = settlement
    return b"id: %d\nevent: end\ndata: %s\n\n" % (version, _json(data))


def settlement(view: dict[str, Any], statement: dict[str, Any] | None) -> bytes:
    """The ``settlement`` event of a match's stream: the match's ``view`` (its version and
    its ``settlement`` state), and the ``statement`` the caller may read (None: it may
    not)."""
    version = int(view["version"])
    data = {"match_id": view["id"], "version": version, **view["settlement"]}
    data["settlement"] = statement
    return b"id: %d\nevent: settlement\ndata: %s\n\n" % (version, _json(data))


def _json(value: Any) -> bytes:
    return dumps_bytes(value)


def last_event_id() -> int | None:
    """The ``Last-Event-ID`` a reconnecting client sent (a version), if it is one."""
    text = request.headers.get("Last-Event-ID", "").strip()
    if text.isascii() and text.isdigit() and len(text) <= 16 and int(text) <= MAX_INTEGER:
        return int(text)
    return None


def token_expiry() -> float | None:
    """When the request's player token expires, on the ``time.monotonic()`` clock (its
    stream is checked again then, and ends), or None for an API key."""
    header = request.headers.get("Authorization", "")
    token = header.partition(" ")[2].strip()
    expires = player_token_expiry(token, current_app.config["SECRET_KEY"])
    if expires is None:
        return None
    return time.monotonic() + max(0.0, (expires - utcnow()).total_seconds()) + 0.5
