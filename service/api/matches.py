"""Matches: the player's view (with long-poll), actions, resignation and hand histories."""

from __future__ import annotations

import logging
import time
from typing import Any

from flask import Response, after_this_request, current_app, jsonify, request, url_for
from flask_smorest import Blueprint

from service import live
from service.api import render
from service.api.context import (
    db_session,
    in_unit,
    optionally_idempotent,
    principal,
    release_db_session,
    unit,
)
from service.api.play_schemas import ActionIn, EventsQuery, HandHistoryOut, MatchOut, MatchQuery
from service.api.problems import documents
from service.api.schemas import MAX_INTEGER
from service.api.settlements import settlement_json
from service.api.wallets import IDEMPOTENCY_HEADER
from service.clock import utcnow
from service.errors import (
    FieldError,
    Forbidden,
    IdempotencyKeyInUse,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    IllegalMove,
    MatchNotLive,
    NotFound,
    StaleVersion,
    TokenExpired,
    Unauthenticated,
    ValidationFailed,
)
from service.games.common.action_text import action_text
from service.games.protocol import RESIGN
from service.ledger.money import PRACTICE_CURRENCY
from service.live import events as live_events
from service.live.events import EVENT_STREAM, EVENT_STREAM_DOC, token_expiry
from service.usecases import play, tournaments
from service.usecases.rates import display_rate

log = logging.getLogger(__name__)
blp = Blueprint("matches", __name__, url_prefix="/v1", description="Live matches.")

POLL_INTERVAL = 0.1  # long-poll: how often a waiting request re-reads the version
# Match views are built as JSON-ready data by the use case and sent as they are: they are the
# hottest responses, and marshmallow would spend more time re-serialising them than the rest
# of the request takes. The schemas document them; a test checks real views against them.


@blp.route("/matches/<match_id>")
@blp.arguments(MatchQuery, location="query")
@blp.response(200, MatchOut)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound, ValidationFailed)
def get_match(query: dict[str, Any], match_id: str) -> Response:
    """Your view of the match: own hand, public state, legal actions, the hand's commitment
    and ``version``; each seat's escrow also in ``display_currency`` where the operator set
    a rate. With ``wait_for_version=N`` the answer waits (up to ``timeout`` seconds)
    until the version exceeds N."""
    wanted = query.get("wait_for_version")
    environ = request.environ
    if wanted is not None and not live.resumed(environ):  # (a parked wait that woke answers)
        deadline = time.monotonic() + query["timeout"]
        wake = play.wake_after(db_session(), principal(), match_id, wanted)  # 404s first
        release_db_session()  # no pooled connection is held while waiting
        version = wake.seen
        if version > wanted:
            pass  # answer now: it moved
        elif live.can_park(environ):  # the worker's waiting room holds the connection
            if wake.at is not None:  # a spectator delay reveals an older change then
                deadline = min(deadline, time.monotonic() + (wake.at - utcnow()).total_seconds())
            environ[live.TICKET] = live.Wait(match_id, wake.version, deadline)
            return Response(status=204)  # never sent
        else:  # no waiting room (the Flask test client, another server): poll
            engine = current_app.extensions["gin"]["engine"]
            while version <= wanted and time.monotonic() < deadline:
                time.sleep(POLL_INTERVAL)
                version = play.peek_version(engine, match_id, principal())
    view = play.get_view(db_session(), principal(), match_id)
    return jsonify(_shown(view, query.get("display_currency")))


@blp.route("/matches/<match_id>/events")
@blp.arguments(EventsQuery, location="query")
@blp.response(200, EVENT_STREAM_DOC, content_type=EVENT_STREAM)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound, ValidationFailed)
def follow_match(query: dict[str, Any], match_id: str) -> Response:
    """Follow the match as server-sent events (``text/event-stream``): an ``update`` event
    (``id``: the version) carrying your view each time the match changes, ``end`` once it
    has finished, then ``settlement`` once the worker has settled it (the statement as
    ``GET /v1/matches/{match_id}/settlement`` answers you; a spectator only that it is
    ready), the last event. Resume after a dropped connection with ``Last-Event-ID`` (or
    ``after_version``). Authorised as your view is; a key or token revoked meanwhile ends
    the stream with an ``error`` event (docs/scale-out.md, "Waiting for changes")."""
    environ = request.environ
    later = live.RENDER in environ  # a later render of an open stream (not a new connection)
    sent = environ.get(live.RENDER)
    if sent is None:
        sent = query.get("after_version", live_events.last_event_id())
    view = play.get_view(db_session(), principal(), match_id)  # authorises, every time
    version = int(view["version"])
    settled = view["settlement"] is not None
    body = b""
    if sent is None or version > sent:
        body += live_events.update(_shown(view, None))
    ended = view["status"] in ENDED
    # The settlement is the one change after the end: the stream sent the end already if it
    # sent the version before it.
    ended_at = version - 1 if settled else version
    to_come = _settlement_to_come(view) if ended else None
    if ended and (not later or sent is None or sent < ended_at):
        body += live_events.end(version, to_come, match=True)
    if settled and (not later or sent is None or sent < version):
        body += live_events.settlement(view, _statement(match_id))
    release_db_session()
    closes = ended and to_come != "pending"
    if later:  # the events only (and the stream's state)
        if not closes:
            environ[live.TICKET] = live.Stream(match_id, max(version, sent or 0))
        return Response(body, mimetype=EVENT_STREAM)
    first = live_events.RETRY + body
    if live.can_park(environ) and not closes:
        environ[live.TICKET] = live.Stream(match_id, version, token_expiry())
    # no waiting room: the stream ends after the current view; clients reconnect
    return Response(iter([first]), mimetype=EVENT_STREAM, headers=live_events.HEADERS)


#: The statuses of a match that is over (its stream sends ``end``).
ENDED = ("finished", "void", "cancelled")


def _settlement_to_come(view: dict[str, Any]) -> str | None:
    """For a match that is over: ``completed`` (its settlement is written), ``pending`` (it
    will be: a finished or void match not played for a tournament), else None (none comes:
    a cancelled match, or a tournament's, whose tournament pays)."""
    if view["settlement"] is not None:
        return "completed"
    if not finished(view):
        return None
    return None if tournaments.tournament_of_match(db_session(), view["id"]) else "pending"


def _statement(match_id: str) -> dict[str, Any] | None:
    """The settlement as the caller may read it (:func:`settlement_json`, the settlement's
    own read and authorisation), or None for a caller who may not (a spectator)."""
    try:
        return settlement_json(match_id)
    except NotFound:
        return None


def _shown(view: dict[str, Any], requested: str | None) -> dict[str, Any]:
    """``view`` with each seat's escrow also in the display currency (docs/engine.md 6.5):
    ``requested``, else the calling player's."""
    who = principal()
    rate = display_rate(db_session(), who.operator_id, view["currency"], requested, who.player_id)
    if rate is not None:
        for seat in view["seats"]:
            seat["escrow"] = render.money_json(seat["escrow"]["amount"], view["currency"], rate)
    return view


def _expected_version(body: dict[str, Any]) -> int | None:
    if "expected_version" in body:
        return int(body["expected_version"])
    header = request.headers.get("If-Match")
    if header:
        text = header.strip().removeprefix("W/").strip('"')
        if text.isascii() and text.isdigit() and len(text) <= 16 and int(text) <= MAX_INTEGER:
            return int(text)
        message = f'If-Match must be a match version from 0 to {MAX_INTEGER}, e.g. "12".'
        raise ValidationFailed(message, errors=[FieldError("If-Match", message)])
    return None


def finished(view: dict[str, Any]) -> bool:
    """Whether the match in ``view`` has ended (it then has an outbox event to publish)."""
    return view["status"] in ("finished", "void")


def kick_relay() -> None:
    """Ask a worker to publish a finished match's outbox event now (best effort: beat's sweep
    publishes it anyway if the broker is unreachable). Call it after the transaction that
    wrote the event committed."""
    try:
        from worker.celery_app import KICK_PRIORITY
        from worker.celery_app import app as celery_app

        celery_app.send_task("outbox.relay", retry=False, priority=KICK_PRIORITY)
    except Exception as exc:  # the broker is down: the sweep will do it
        log.warning("could not kick the outbox relay: %s", exc)


def kick_bots() -> None:
    """Ask a worker to play the practice bots' turns now, rather than at beat's next tick
    (best effort, like :func:`kick_relay`)."""
    try:
        from worker.celery_app import app as celery_app

        celery_app.send_task("bots.play_turns", retry=False)
    except Exception as exc:  # the broker is down: beat's tick plays them
        log.warning("could not kick the practice bots: %s", exc)


def _kick_workers(view: dict[str, Any]) -> None:
    """At the end of the request, once its action committed (with an ``Idempotency-Key``
    the action commits only after the view returns): :func:`kick_relay` for a finished
    match; :func:`kick_bots` for a practice match going on (a bot may be next to act)."""
    if finished(view):
        kick = kick_relay
    elif view["currency"] == PRACTICE_CURRENCY:
        kick = kick_bots
    else:
        return

    @after_this_request
    def after(response: Response) -> Response:
        if response.status_code < 300:
            kick()
        return response


@blp.route("/matches/<match_id>/actions", methods=["POST"])
@blp.doc(parameters=[{**IDEMPOTENCY_HEADER, "required": False}])
@blp.arguments(ActionIn)
@optionally_idempotent
@blp.response(200, MatchOut)
@documents(
    blp,
    Unauthenticated,
    TokenExpired,
    Forbidden,
    NotFound,
    ValidationFailed,
    StaleVersion,
    IllegalMove,
    MatchNotLive,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    IdempotencyKeyInUse,
)
def act(body: dict[str, Any], match_id: str) -> Response:
    """Play an action decided on ``expected_version`` (or ``If-Match``): a stale or repeated
    action is 409 and changes nothing; an illegal one is 422 with the rule's code. With an
    ``Idempotency-Key``, a retry of the same request replays the first answer instead."""
    expected = _expected_version(body)
    session = db_session()
    if body["action"] == RESIGN:
        view = in_unit(lambda: play.resign(session, principal(), match_id, expected, utcnow()))
        _kick_workers(view)
        return jsonify(view)
    if expected is None:
        message = "expected_version (or If-Match) is required for an action."
        raise ValidationFailed(message, errors=[FieldError("expected_version", message)])
    view = play.act(session, principal(), match_id, action_text(body), expected, utcnow())
    _kick_workers(view)
    return jsonify(view)


@blp.route("/matches/<match_id>/hands/<int(min=1, max=100000):number>")
@blp.response(200, HandHistoryOut)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound)
@unit
def hand_history(match_id: str, number: int) -> Response:
    """A finished hand's full history: the revealed seed and the fairness inputs, the deck,
    every action with actor and time, the showdown and the score."""
    return jsonify(_linked(play.hand_history(db_session(), principal(), match_id, number)))


@blp.route("/hands/<hand_id>")
@blp.response(200, HandHistoryOut)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound)
@unit
def hand_history_by_id(hand_id: str) -> Response:
    """The same history by the hand's own ``id``, for links to one hand (the page
    ``/verify?hand=<id>`` replays and verifies it in the browser)."""
    return jsonify(_linked(play.hand_history_by_id(db_session(), principal(), hand_id)))


def _linked(history: dict[str, Any]) -> dict[str, Any]:
    """A hand's history with the page that replays and verifies it."""
    return {**history, "verify_url": url_for("verify.verify", hand=history["id"])}
