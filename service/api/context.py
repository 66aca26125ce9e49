"""Per-request plumbing: the database session, the authenticated principal, request ids and
the ``Idempotency-Key`` wrapper for money-moving POSTs."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import flask_smorest
import marshmallow as ma
from flask import Flask, Response, current_app, g, request
from flask.sessions import SessionInterface
from sqlalchemy.orm import Session
from webargs.flaskparser import FlaskParser
from werkzeug.exceptions import RequestEntityTooLarge

from service import jsoncodec
from service.api.problems import PROBLEM_JSON, from_service_error
from service.clock import utcnow
from service.config import MAX_HEADER_FIELD_BYTES, MAX_HEADER_FIELDS, MAX_REQUEST_TARGET_BYTES
from service.errors import (
    ContentTooLarge,
    FieldError,
    HeaderFieldsTooLarge,
    MalformedRequest,
    ServiceError,
    UnsupportedMediaType,
    UriTooLong,
    ValidationFailed,
)
from service.outbound.transport import Post, http_sender
from service.usecases import idempotency, unit_of_work
from service.usecases.auth import Principal, authenticate, require_operator

PUBLIC_PREFIX = "/v1/"

T = TypeVar("T")


class SchemaReusingParser(FlaskParser):
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

    def _raw_load_json(self, req: Any) -> Any:
        """The body as :func:`request_json` read it (webargs' own reading, which takes any
        body that is not JSON for none at all, is never used)."""
        return request_json()


# Set before the blueprint modules apply @blp.arguments (each imports this module first).
flask_smorest.Blueprint.ARGUMENTS_PARSER = SchemaReusingParser()


def db_session() -> Session:
    """The request's session. It holds a pooled connection only while a transaction is open
    (a request that needs no database, or waits between transactions, holds none)."""
    if "db_session" not in g:
        g.db_session = Session(bind=current_app.extensions["gin"]["engine"], expire_on_commit=False)
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


def _refuse_unreadable() -> None:
    """What no operation reads, refused before anything else looks at the request: a path
    and query, a header field or a number of them beyond the limits in
    :mod:`service.config` (gunicorn's own limits, in ``deploy/gunicorn.conf.py``, lie beyond
    these, so these answers are problems too), NUL characters in the path or query (never
    meaningful here, and PostgreSQL text cannot store them), and a body whose
    ``Content-Length`` is over ``MAX_CONTENT_LENGTH`` (refused unread). Read from the WSGI
    environment directly: each of ``request``'s attributes costs a microsecond."""
    wsgi = request.environ
    path, query = wsgi.get("PATH_INFO", ""), wsgi.get("QUERY_STRING", "")
    raw = wsgi.get("RAW_URI") or wsgi.get("REQUEST_URI")
    target = len(raw) if raw else len(path) + 1 + len(query)
    if target > MAX_REQUEST_TARGET_BYTES:
        raise UriTooLong(
            f"The path and query are {target} bytes long; at most "
            f"{MAX_REQUEST_TARGET_BYTES} are read."
        )
    for name, value in wsgi.items():  # "Name: value" is HTTP_NAME (or CONTENT_TYPE) -> value
        if (
            value.__class__ is str
            and len(name) + 2 + len(value) > MAX_HEADER_FIELD_BYTES
            and (name.startswith("HTTP_") or name in ("CONTENT_TYPE", "CONTENT_LENGTH"))
        ):
            header = _header_name(name)
            if len(header) + 2 + len(value) <= MAX_HEADER_FIELD_BYTES:
                continue
            message = f"At most {MAX_HEADER_FIELD_BYTES} bytes per header field."
            raise HeaderFieldsTooLarge(
                f"The {header} header is too long: {message}", errors=[FieldError(header, message)]
            )
    if len(wsgi) > MAX_HEADER_FIELDS:  # else there cannot be more header fields
        count = sum(
            1
            for name in wsgi
            if name.startswith("HTTP_") or name in ("CONTENT_TYPE", "CONTENT_LENGTH")
        )
        if count > MAX_HEADER_FIELDS:
            raise HeaderFieldsTooLarge(
                f"The request has {count} header fields; at most {MAX_HEADER_FIELDS} are read."
            )
    if "\x00" in path or "%00" in query or "\x00" in query:
        raise MalformedRequest("NUL characters are not accepted in paths or queries.")
    length = wsgi.get("CONTENT_LENGTH")
    if length and length.isdigit():
        limit = current_app.config["MAX_CONTENT_LENGTH"]
        if limit is not None and int(length) > limit:
            raise _too_large(limit)


def _answer_options() -> Response | None:
    """``OPTIONS`` on any path the service routes: 204 with ``Allow`` listing the methods the
    path takes (every rule matching it), before authentication, as a CORS preflight sends no
    credentials, and before any operation's body rule (``OPTIONS`` sends no body). A path
    nothing routes is left to the routing error (404)."""
    if request.method != "OPTIONS" or request.routing_exception is not None:
        return None
    adapter = current_app.create_url_adapter(request)
    methods = adapter.allowed_methods() if adapter is not None else []
    return Response(status=204, headers={"Allow": ", ".join(sorted(methods))})


def _header_name(environ_key: str) -> str:
    """``HTTP_IDEMPOTENCY_KEY`` as ``Idempotency-Key``."""
    return "-".join(part.capitalize() for part in environ_key.removeprefix("HTTP_").split("_"))


def _too_large(limit: int) -> ContentTooLarge:
    return ContentTooLarge(f"The request body is longer than {limit} bytes (MAX_CONTENT_LENGTH).")


#: ``app.extensions["gin"]`` key: (endpoint, method) -> whether that operation's JSON body is
#: required, for every operation that reads one (from the ``@blp.arguments`` it declares).
JSON_BODIES = "json_bodies"


def json_bodies(app: Flask) -> dict[tuple[str, str], bool]:
    """The operations that take a JSON body, as their blueprints declare them in the OpenAPI
    document (``requestBody`` and its ``required``), by endpoint and method."""
    found: dict[tuple[str, str], bool] = {}
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        view_class = getattr(view, "view_class", None)
        # A function view serves OPTIONS and HEAD too (Flask adds them): no body for those.
        for method in (rule.methods or set()) - {"OPTIONS", "HEAD"}:
            handler = getattr(view_class, method.lower(), None) if view_class else view
            declared = getattr(handler, "_apidoc", {}).get("arguments", {})
            for argument in declared.get("parameters", []):
                if argument.get("in") == "json":
                    found[(rule.endpoint, method)] = bool(argument.get("required", True))
    return found


def _read_body() -> None:
    """The one place a request body is read, for every operation alike: an operation that
    declares a JSON body gets it as ``application/json`` (UTF-8) or refuses it (415), and
    one that requires it refuses a request without it (400); then it is read, at most
    ``MAX_CONTENT_LENGTH`` bytes of it, chunked or not (413), and decoded strictly
    (:func:`request_json`). An operation that declares no body reads none."""
    rule = request.url_rule
    if rule is None:
        return  # no such route or method: answered by the routing error
    required = current_app.extensions["gin"][JSON_BODIES].get((rule.endpoint, request.method))
    if required is None:
        return
    sent = (request.content_length or 0) > 0 or "chunked" in request.headers.get(
        "Transfer-Encoding", ""
    ).lower()
    if sent:
        charset = request.mimetype_params.get("charset", "utf-8").lower()
        if request.mimetype != "application/json" or charset not in ("utf-8", "utf8"):
            given = request.headers.get("Content-Type") or "none"
            raise UnsupportedMediaType(
                f"This operation reads an application/json body (UTF-8); the request's "
                f"Content-Type is {given!r}."
            )
    if request_json() is ma.missing and required:
        message = "This operation takes a JSON body; none was sent."
        raise MalformedRequest(message, errors=[FieldError("(body)", message)])


def request_json() -> Any:
    """The request's JSON body, decoded once (``marshmallow.missing`` when there is none):
    strictly, by :func:`service.jsoncodec.loads_request`. A key twice in an object or a body
    that is not JSON is a 400 ``malformed_request``, a string that is not text (a NUL, a
    lone surrogate) a 422 ``validation_failed``; either names the place in ``errors``."""
    if "json_body" in g:
        return g.json_body
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    try:
        data = request.get_data(cache=True)
    except RequestEntityTooLarge:
        raise _too_large(limit) from None
    # A body of no announced length (chunked) is read up to the limit and, if it gets there,
    # silently cut (werkzeug's LimitedStream): one byte more from the server says whether it
    # was longer.
    if (
        request.content_length is None
        and limit is not None
        and len(data) >= limit
        and request.environ["wsgi.input"].read(1)
    ):
        raise _too_large(limit)
    if not data:
        g.json_body = ma.missing
        return g.json_body
    try:
        g.json_body = jsoncodec.loads_request(data)
    except jsoncodec.NotText as exc:
        raise ValidationFailed(
            f"{exc.path}: {exc.message}", errors=[FieldError(exc.path, exc.message)]
        ) from None
    except jsoncodec.RequestJSONError as exc:
        raise MalformedRequest(exc.message, errors=[FieldError(exc.path, exc.message)]) from None
    return g.json_body


class NoSessions(SessionInterface):
    """The API keeps no cookie sessions (every caller presents a key or a token), so no request
    pays for Flask's signed-cookie machinery; ``flask.session`` is a null session that refuses
    writes."""

    def open_session(self, app: Flask, request: Any) -> None:
        return None

    def save_session(self, app: Flask, session: Any, response: Response) -> None:
        return None


def register(app: Flask) -> None:
    app.session_interface = NoSessions()
    app.extensions["gin"][JSON_BODIES] = json_bodies(app)
    app.before_request(_take_request_id)
    app.before_request(_refuse_unreadable)
    app.before_request(_answer_options)
    app.before_request(_authenticate)
    app.before_request(_read_body)
    app.after_request(_request_id)
    app.teardown_appcontext(_close_session)


def unit(view: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``view`` (the use case it calls) as one unit of work on the request's session
    (:func:`unit_of_work.run`). The decorator nearest the view function, so invalid input
    is refused before, and the answer serialised after, the transaction."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return unit_of_work.run(db_session(), lambda: view(*args, **kwargs))

    return wrapper


def in_unit(work: Callable[[], T]) -> T:
    """``work()`` in the unit of work of a request with an ``Idempotency-Key`` (it runs inside
    :func:`_once`), or as a unit of its own in a request without one (an optionally
    idempotent operation)."""
    session = db_session()
    if session.in_transaction():
        return work()
    return unit_of_work.run(session, work)


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
        return _once(operator_id, None, key, view, args, kwargs)

    return wrapper


def player_idempotent(view: Callable[..., Any]) -> Callable[..., Any]:
    """Like :func:`idempotent`, for money-moving POSTs a player makes with its own token
    (taking a seat): keys are still scoped per operator, and per player within it."""
    return _player_scoped(view, required=True)


def debits(stake_of: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """For a request that puts a player's money on a table (a seat, a top-up), outside
    :func:`player_idempotent`: at a seamless operator, the operator's wallet is debited
    first, outside any transaction (:func:`seamless.debit`: the intent committed, the call,
    its answer recorded), and the view's unit books the applied debit with the seat
    (:func:`wallet_debit` names it). A debit no seat booked is rolled back afterwards.
    ``stake_of`` takes the view's arguments and says what to debit (``None``: transfer
    mode); when it refuses, the view answers (the same refusal, or the key's stored answer
    of an earlier request). The quote and the debit's intent are one unit of work. The
    request holds its key until it is over (:class:`idempotency.KeyHold`), so a retry can
    tell it still running (409) from dead (its debit is rolled back and the retry goes on)."""
    from service.usecases import seamless

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            session, who = db_session(), principal()

            def stake() -> seamless.Stake | None:
                try:
                    found: seamless.Stake | None = stake_of(*args, **kwargs)
                except ServiceError:
                    return None  # refused: the view refuses it the same way
                return found

            key = idempotency.check_key(request.headers.get("Idempotency-Key"))
            post = operator_sender()
            hold = idempotency.KeyHold(session.get_bind())
            try:
                call_id = seamless.debit(session, who.operator_id, stake, key, post, hold)
                if call_id is None:  # transfer mode, nothing to debit, or booked already
                    return view(*args, **kwargs)
                g.wallet_debit = call_id
                response = None
                try:
                    response = view(*args, **kwargs)
                    return response
                finally:
                    # A fresh success booked the debit with the seat; anything else may not
                    # have.
                    if not (
                        isinstance(response, Response)
                        and response.status_code < 300
                        and "Idempotent-Replayed" not in response.headers
                    ):
                        seamless.cancel_unbooked(session, call_id, post)
            finally:
                hold.release()  # the request is over: its key is free for a retry

        return wrapper

    return decorate


def credits_after(ref_arg: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """For a request that may pay money back at a seamless operator (a tournament's
    unregistration or cancellation), outside its unit of work: once the view has answered
    (its credits committed), the pending credits of what the view argument ``ref_arg``
    names are sent at once; the wallet sweep sends whatever this leaves."""
    from service.usecases import seamless

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            response = view(*args, **kwargs)
            seamless.send_credits_for(
                db_session(), principal().operator_id, kwargs[ref_arg], operator_sender()
            )
            return response

        return wrapper

    return decorate


def wallet_debit() -> str | None:
    """The seamless wallet debit :func:`debits` made for this request, if any."""
    found: str | None = g.get("wallet_debit")
    return found


def operator_sender() -> Post:
    """How requests reach operators' endpoints (seamless wallets): public addresses only,
    unless WEBHOOK_ALLOW_PRIVATE_NETWORKS (the rule is :mod:`service.outbound.targets`)."""
    return http_sender(
        allow_private=bool(current_app.config.get("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False))
    )


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
        return _once(who.operator_id, who.player_id, key, view, args, kwargs)

    return wrapper


def _replay(answer: unit_of_work.Answer) -> Response:
    mimetype = PROBLEM_JSON if answer.status >= 400 else "application/json"
    replay = Response(answer.body, status=answer.status, mimetype=mimetype)
    replay.headers["Idempotent-Replayed"] = "true"
    return replay


def _answer(response: Response) -> unit_of_work.Answer:
    return unit_of_work.Answer(response.status_code, response.get_data(as_text=True))


def _once(
    operator_id: str,
    player_id: str | None,
    key: str,
    view: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Response:
    """Run ``view`` once for ``key`` (the caller's, scoped to ``player_id`` when a player
    sent it), in one unit of work with the key's claim and stored answer
    (:func:`unit_of_work.run_once`)."""
    body = g.get("json_body", ma.missing)  # read by _read_body when the operation takes one
    claim = unit_of_work.IdempotencyClaim(
        operator_id,
        player_id,
        key,
        idempotency.request_hash(
            request.method, request.path, None if body is ma.missing else body
        ),
        timedelta(hours=current_app.config["IDEMPOTENCY_RETENTION_HOURS"]),
    )
    answered: dict[unit_of_work.Answer, Response] = {}  # the live responses, by their answer

    def work() -> unit_of_work.Answer:
        response: Response = view(*args, **kwargs)
        answer = _answer(response)
        answered[answer] = response
        return answer

    def refusal(error: ServiceError) -> unit_of_work.Answer:
        response = from_service_error(error)
        answer = _answer(response)
        answered[answer] = response
        return answer

    answer = unit_of_work.run_once(db_session(), claim, work, refusal, utcnow)
    return _replay(answer) if answer.replayed else answered[answer]
