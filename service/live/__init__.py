"""Waiting for changes without holding a request thread (docs/scale-out.md, "Waiting for
changes").

- :mod:`service.live.notices`: after a transaction that changed a match commits, a notice
  (the match, its new version) is published on the pub/sub channel: Redis in production, a
  Unix datagram socket per web worker (in the var folder) when there is no server.
- :mod:`service.live.room`: each gunicorn web worker's waiting room, an asyncio event loop on
  a thread of its own. It holds the connections of long-polls that wait for a version and of
  event streams, hears the notices, and hands a connection back to the worker's request
  threads only when there is something to answer (the view is always built by the one view
  path, :func:`service.usecases.play.get_view`, through the application).
- This module: what the application and the worker say to each other through the WSGI
  environ (the keys below), so that the views stay ordinary Flask views.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: environ: the worker's waiting room (absent outside gunicorn: the view then waits itself).
ROOM = "gin.live.room"
#: environ: what the view asks the worker to do with the connection (a :class:`Wait` or a
#: :class:`Stream`) instead of, or after, answering.
TICKET = "gin.live.ticket"
#: environ: the request is a parked long-poll run again: answer now, never park again.
RESUMED = "gin.live.resumed"
#: environ: an event stream's next events, rendered by the worker (no client request): the
#: version the stream has sent so far.
RENDER = "gin.live.render"


@dataclass(frozen=True)
class Wait:
    """Park this long-poll until ``match_id`` passes ``wanted`` or ``deadline``
    (``time.monotonic()``), then run the request again."""

    match_id: str
    wanted: int
    deadline: float


@dataclass(frozen=True)
class Stream:
    """Keep this event stream's connection open; render its next events whenever its
    ``topic`` changes (a match id: when the match passes version ``sent``; a
    :func:`tournament_topic`: when the tournament passes version ``sent``; a
    :func:`lobby_topic`: on each notice of its operator's tables), and at ``recheck``
    (``time.monotonic()``: when the caller's token expires) even if nothing changed.
    ``sent``: what the stream has sent (a match's or tournament's version, a digest of the
    lobby)."""

    topic: str
    sent: int
    recheck: float | None = None

    @property
    def match_id(self) -> str:
        return self.topic


def lobby_topic(operator_id: str) -> str:
    """The topic of an operator's lobby stream (its notices are ``lobby`` notices)."""
    return f"lobby:{operator_id}"


_TOURNAMENT = "tournament:"


def tournament_topic(tournament_id: str) -> str:
    """The topic of a tournament's stream (its notices are ``tournament`` notices, with the
    tournament's version)."""
    return _TOURNAMENT + tournament_id


def tournament_of(topic: str) -> str | None:
    """The tournament a :func:`tournament_topic` names (None for another topic)."""
    return topic.removeprefix(_TOURNAMENT) if topic.startswith(_TOURNAMENT) else None


def can_park(environ: dict[str, Any]) -> bool:
    """Whether this request can hand its connection to a waiting room."""
    return environ.get(ROOM) is not None and RESUMED not in environ and RENDER not in environ


def resumed(environ: dict[str, Any]) -> bool:
    """Whether this is a parked long-poll run again (it answers now)."""
    return RESUMED in environ


def internal(environ: dict[str, Any]) -> bool:
    """Whether this request is no client's own answer: a long-poll being parked, or a
    stream's events rendered by the worker (request logs, metrics and rate limits skip
    it; the answer sent later is counted as the request)."""
    return isinstance(environ.get(TICKET), Wait) or RENDER in environ
