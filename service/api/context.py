"""Per-request plumbing: the database session, the authenticated principal, request ids and
the ``Idempotency-Key`` wrapper for money-moving POSTs."""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import flask_smorest
import marshmallow as ma
from flask import Flask, Response, current_app, g, request
from flask.sessions import SessionInterface
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session
from webargs.flaskparser import FlaskParser

from service.api.problems import PROBLEM_JSON, from_service_error
from service.clock import utcnow
from service.db import ATTEMPTS, retryable, shared
from service.errors import (
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    MalformedRequest,
    ServiceError,
)
from service.usecases import idempotency
from service.usecases.auth import Principal, authenticate, require_operator

PUBLIC_PREFIX = "/v1/"


class SchemaReusingParser(FlaskParser):  # type: ignore[misc]
    """webargs builds a new schema instance per request when given a class (the blueprints
    pass classes); building one costs more than parsing a small body. Marshmallow schemas
    keep no per-load state, so one instance per class serves every request."""

    def __init__(self) -> None:
        super().__init__()
        self._instances: dict[type[ma.Schema], ma.Schema] = {}

    def _get_schema(self, argmap: Any, req: Any) -> ma.Schema:
        if isinstance(argmap, type) and issubclass(argmap, ma.Schema):
            schema = self._instances.get(argmap)
            if schema is None:
                schema = self._instances[argmap] = argmap()
            return schema
        found: ma.Schema = super()._get_schema(argmap, req)
        return found


# Set before the blueprint modules apply @blp.arguments (each imports this module first).
flask_smorest.Blueprint.ARGUMENTS_PARSER = SchemaReusingParser()


def db_session() -> Session:
    """The request's session. It holds a pooled connection only while a transaction is open
    (a request that needs no database, or waits between transactions, holds none)."""
    if "db_session" not in g:
        g.db_session = Session(
            bind=current_app.extensions["gin"]["engine"], expire_on_commit=False
        )
    session: Session = g.db_session
    return session


def release_db_session() -> None:
    """Hand the request's connection back to the pool now (before a long wait); the next
    :func:`db_session` call checks one out again."""
    _close_session(None)


def principal() -> Principal:
    found: Principal = g.principal
    return found


def _authenticate() -> None:
    if not request.path.startswith(PUBLIC_PREFIX):
        return
    header = request.headers.get("Authorization", "")
    scheme, _, credential = header.partition(" ")
    bearer = credential.strip() if scheme.lower() == "bearer" else None
    g.principal = authenticate(db_session(), bearer, current_app.config["SECRET_KEY"], utcnow())


def _close_session(_exc: BaseException | None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()


def _request_id(response: Response) -> Response:
    response.headers["X-Request-Id"] = g.get("request_id") or new_request_id()
    return response


def request_id(given: str) -> str:
    """The request's id: the client's ``X-Request-Id`` when it is usable, else a new one."""
    return given if 0 < len(given) <= 200 and given.isprintable() else new_request_id()


def new_request_id() -> str:
    """32 random hex digits, like ``uuid4().hex``. A request id correlates log lines and is no
    secret, so the process's PRNG (reseeded in each forked worker) serves, without the system
    call ``uuid4`` makes for every request."""
    return f"{random.getrandbits(128):032x}"


def _take_request_id() -> None:
    g.request_id = request_id(request.headers.get("X-Request-Id", ""))


#: A body with more brackets than this is parsed once up front to catch nesting too deep for
#: Python's JSON parser (its RecursionError is not a ValueError, so nothing else catches it).
BRACKETS_WORTH_CHECKING = 500


def _refuse_malformed() -> None:
    """NUL characters are never meaningful here, and PostgreSQL text cannot store them; JSON
    nested thousands deep is refused before any parser meets it."""
    body = request.get_data(cache=True)
    if (
        "\x00" in request.path
        or b"%00" in request.query_string
        or b"\x00" in request.query_string
        or b"\\u0000" in body
    ):
        raise MalformedRequest("NUL characters are not accepted in paths, queries or bodies.")
    if body.count(b"[") + body.count(b"{") > BRACKETS_WORTH_CHECKING:
        try:
            json.loads(body)
        except RecursionError:
            raise MalformedRequest("The JSON body is nested too deeply.") from None
        except ValueError:
            pass  # not JSON: the request's parser answers that


class NoSessions(SessionInterface):
    """The API keeps no cookie sessions (every caller presents a key or a token), so no request
    pays for Flask's signed-cookie machinery; ``flask.session`` is a null session that refuses
    writes."""

    def open_session(self, app: Flask, request: Any) -> None:
        return None

    def save_session(self, app: Flask, session: Any, response: Response) -> None:
        return None


def register(app: Flask) -> None:
    app.config.setdefault("MAX_CONTENT_LENGTH", 1024 * 1024)
    app.session_interface = NoSessions()
    app.before_request(_take_request_id)
    app.before_request(_refuse_malformed)
    app.before_request(_authenticate)
    app.after_request(_request_id)
    app.teardown_appcontext(_close_session)


def idempotent(view: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``view`` at most once per operator and ``Idempotency-Key`` (API_CONVENTIONS);
    operator credentials only (a player token gets 403 before the key is looked at).

    Placed under ``@blp.arguments`` (so invalid input is answered without using the key) and
    above ``@blp.response`` (so the stored response is the serialised one).
    """

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Response:
        operator_id = require_operator(principal())
        key = idempotency.check_key(request.headers.get("Idempotency-Key"))
        return _once(operator_id, key, view, args, kwargs)

    return wrapper


def player_idempotent(view: Callable[..., Any]) -> Callable[..., Any]:
    """Like :func:`idempotent`, for money-moving POSTs a player makes with its own token
    (taking a seat): keys are still scoped per operator, and per player within it."""
    return _player_scoped(view, required=True)


def optionally_idempotent(view: Callable[..., Any]) -> Callable[..., Any]:
    """For POSTs that change a match but move no money: an ``Idempotency-Key`` is honoured
    (same key and body replay the first answer) but not required."""
    return _player_scoped(view, required=False)


def _player_scoped(view: Callable[..., Any], *, required: bool) -> Callable[..., Any]:
    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        sent = request.headers.get("Idempotency-Key")
        if sent is None and not required:
            return view(*args, **kwargs)
        who = principal()
        key = idempotency.check_key(sent)
        if who.player_id is not None:
            key = f"{who.player_id}:{hashlib.sha256(key.encode()).hexdigest()}"
        return _once(who.operator_id, key, view, args, kwargs)

    return wrapper


class _Undo(Exception):
    """Rolls the request's transaction back and answers with ``response`` instead."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def _replay(stored: idempotency.StoredResponse) -> Response:
    mimetype = PROBLEM_JSON if stored.status >= 400 else "application/json"
    replay = Response(stored.body, status=stored.status, mimetype=mimetype)
    replay.headers["Idempotent-Replayed"] = "true"
    return replay


def _once(
    operator_id: str,
    key: str,
    view: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Response:
    """Run ``view`` once for ``key``: claim, work and stored answer in one transaction."""
    digest = idempotency.request_hash(
        request.method, request.path, request.get_json(silent=True)
    )
    retention = timedelta(hours=current_app.config["IDEMPOTENCY_RETENTION_HOURS"])
    session = db_session()
    for attempt in range(ATTEMPTS):
        now = utcnow()
        try:
            with shared(session):
                stored = idempotency.claim(session, operator_id, key, digest, now)
                if stored is not None:
                    return _replay(stored)
                response = view(*args, **kwargs)
                if response.status_code >= 500:
                    raise _Undo(response)
                earlier = idempotency.record(
                    session, operator_id, key, digest, response.status_code,
                    response.get_data(as_text=True), now, retention,
                )
                if earlier is not None:  # a twin's answer got stored first: it is the key's
                    raise _Undo(_replay(earlier))
                return response
        except (IdempotencyKeyInUse, IdempotencyKeyReused):
            raise  # about the key itself: nothing to store
        except ServiceError as error:
            if error.status >= 500:
                raise
            refusal = from_service_error(error)
        except _Undo as undo:
            return undo.response
        except OperationalError as error:  # the whole request's transaction rolled back
            if not retryable(error) or attempt == ATTEMPTS - 1:
                raise
            continue
        # Refused (4xx): nothing was written. Store the refusal so a retry gets the same
        # answer, under the key's lock (waiting for a twin that may be running: if it got
        # there first, its answer is the key's answer).
        with session.begin():
            idempotency.lock(session, operator_id, key)
            stored = idempotency.record(
                session, operator_id, key, digest, refusal.status_code,
                refusal.get_data(as_text=True), now, retention,
            )
        return refusal if stored is None else _replay(stored)
    raise AssertionError("unreachable")  # pragma: no cover
