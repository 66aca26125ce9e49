"""A player's view of a match and an action, answered without the Flask stack.

Playing is a read and an action per turn. The use cases behind them take about half of the
request's CPU; the Flask, werkzeug, webargs and flask-smorest layers around them took the
other half. This WSGI middleware (see :mod:`service.api.fastpath`) runs the same use cases
(:func:`service.usecases.play.get_view` and :func:`service.usecases.play.act`) for the
common forms of the two requests and answers with the same body and headers:

- ``GET /v1/matches/{id}`` with no query (a long-poll, ``wait_for_version``, goes to Flask);
- ``POST /v1/matches/{id}/actions`` with a JSON body the :class:`ActionIn` schema takes, an
  ``expected_version`` in it, no ``Idempotency-Key`` and no resignation.

The caller is authenticated as Flask would (a player token, or an API key looked up in the
database) after the rate limit counted it. Anything else, and every refusal, is answered by
the Flask application: a use case that refuses (not found, forbidden, stale, illegal) writes
nothing, so the ordinary path runs it again and answers the problem. So does any other error.
``MATCH_FAST_PATH=false`` sends every request through the ordinary path.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from flask import Flask
from sqlalchemy.orm import Session

from service.api.fastpath import Answer, FastPath, WsgiApp, bearer, read_json_body
from service.api.json_provider import FastJSONProvider
from service.api.matches import action_text, finished, kick_relay
from service.api.play_schemas import ActionIn
from service.clock import utcnow
from service.errors import ServiceError
from service.observability import metrics, ratelimit
from service.usecases import play
from service.usecases.auth import authenticate

log = logging.getLogger(__name__)

ROUTE = re.compile(r"/v1/matches/([A-Za-z0-9_-]{1,64})(/actions)?")
VIEW_RULE = "/v1/matches/<match_id>"
ACTION_RULE = "/v1/matches/<match_id>/actions"


class MatchFastPath(FastPath):
    """Match views and actions through the use cases alone (see the module docs)."""

    def __init__(self, app: Flask, wsgi_app: WsgiApp) -> None:
        super().__init__(app, wsgi_app)
        self.engine = app.extensions["gin"]["engine"]
        self.schema = ActionIn()
        assert isinstance(app.json, FastJSONProvider)
        self.json: FastJSONProvider = app.json

    def route(self, env: dict[str, Any]) -> tuple[str, re.Match[str]] | None:
        found = ROUTE.fullmatch(env.get("PATH_INFO", ""))
        if found is None or env.get("QUERY_STRING"):
            return None
        method = env.get("REQUEST_METHOD")
        if found.group(2) is None:
            return (VIEW_RULE, found) if method == "GET" else None
        return (ACTION_RULE, found) if method == "POST" else None

    def answer(self, env: dict[str, Any], found: re.Match[str]) -> Answer | None:
        plain = self._plain(env, found)
        if plain is None:
            metrics.labelled(metrics.MATCH_FAST_PATH, "declined").inc()
            return None
        credential, fields = plain
        match_id = found.group(1)
        session = Session(bind=self.engine, expire_on_commit=False)
        try:
            now = utcnow()
            who = authenticate(session, credential, self.app.config["SECRET_KEY"], now)
            if fields is None:
                view = play.get_view(session, who, match_id)
            else:
                view = play.act(session, who, match_id, action_text(fields),
                                fields["expected_version"], now)
        except ServiceError:  # refused, nothing written: Flask answers the problem
            metrics.labelled(metrics.MATCH_FAST_PATH, "refused").inc()
            return None
        except Exception:
            log.warning("match fast path failed; answering through the ordinary path",
                        exc_info=True)
            metrics.labelled(metrics.MATCH_FAST_PATH, "error").inc()
            return None
        finally:
            session.close()
        metrics.labelled(metrics.MATCH_FAST_PATH, "answered").inc()
        if fields is not None:
            metrics.count_action(fields["action"])
            if finished(view):
                kick_relay()
        return Answer(200, self.json.body(view))

    def _plain(
        self, env: dict[str, Any], found: re.Match[str]
    ) -> tuple[str, dict[str, Any] | None] | None:
        """``(credential, the action's fields or None for a view)`` of a plain request within
        its caller's rate limit (counted here), else ``None``."""
        credential = bearer(env)
        if credential is None or self.json.indents:
            return None
        fields = None
        if found.group(2) is not None:
            fields = self._action(env)
            if fields is None:
                return None
        caller = ratelimit.caller_for(
            env.get("HTTP_AUTHORIZATION", ""), env.get("REMOTE_ADDR"), self.app.config["SECRET_KEY"]
        )
        if not self.within_limit(env, caller):
            return None  # Flask answers the 429
        return credential, fields

    def _action(self, env: dict[str, Any]) -> dict[str, Any] | None:
        """The action's fields when it is a plain one (see the module docs), else ``None``."""
        if "HTTP_IDEMPOTENCY_KEY" in env:
            return None
        body = read_json_body(env)
        if body is None:
            return None
        try:
            fields: dict[str, Any] = self.schema.load(json.loads(body))
        except Exception:  # bad JSON, a schema error, nesting too deep: Flask's to answer
            return None
        if fields["action"] == "RESIGN" or "expected_version" not in fields:
            return None
        return fields


def install(app: Flask) -> None:
    """Put the fast path in front of ``app`` unless it is disabled."""
    if app.config.get("MATCH_FAST_PATH", True):
        app.wsgi_app = MatchFastPath(app, app.wsgi_app)  # type: ignore[method-assign]
