"""The one place that turns errors into RFC 9457 ``application/problem+json`` responses, and
the pages their ``type`` points at.

A problem's ``type`` is ``/problems/<code>``, a page this service serves for every code it
answers (:func:`service.errors.problem_classes`, the one list), saying what the code means.
It is a relative reference with the full path, as RFC 9457 (3.1.1) allows and asks of
relative ones: the client resolves it against the request's URI, so it names the page on
whichever host the client reached, and the body stays the same on every host: a stored
answer replayed for an ``Idempotency-Key`` carries no host of an earlier request, and no
``Host`` header a client made up ends in a body. A status no code is defined for (a
framework's refusal) has the type ``about:blank`` (RFC 9457 4.2.1).
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flask import Flask, Response, request
from flask_smorest import Blueprint
from werkzeug.exceptions import HTTPException

from service.api.schemas import ProblemSchema
from service.errors import (
    ContentTooLarge,
    ExpectationFailed,
    FieldError,
    Forbidden,
    HeaderFieldsTooLarge,
    InternalError,
    MalformedRequest,
    MethodNotAllowed,
    NotFound,
    NotImplementedCoding,
    ServiceError,
    ServiceUnavailable,
    Unauthenticated,
    UnsupportedMediaType,
    UriTooLong,
    ValidationFailed,
    problem_classes,
)

PROBLEMS_PATH = "/problems/"
PROBLEM_JSON = "application/problem+json"
#: The framework's own refusals (werkzeug's exceptions), by status, as the service's problems.
HTTP_PROBLEMS: dict[int, type[ServiceError]] = {
    cls.status: cls
    for cls in (
        MalformedRequest,
        NotFound,
        MethodNotAllowed,
        Forbidden,
        ContentTooLarge,
        UriTooLong,
        UnsupportedMediaType,
        ExpectationFailed,
        HeaderFieldsTooLarge,
        InternalError,
        NotImplementedCoding,
    )
}


def problem_type(code: str) -> str:
    """The ``type`` of the problem ``code``: its page here, or ``about:blank`` for a code
    that has none."""
    return PROBLEMS_PATH + code if code in problem_classes() else "about:blank"


log = logging.getLogger(__name__)


def problem_document(
    status: int,
    code: str,
    title: str,
    detail: str,
    instance: str | None,
    errors: Iterable[FieldError] = (),
    extensions: Mapping[str, str] | None = None,
) -> str:
    """A problem's JSON text; ``instance`` is left out when no path is known (the HTTP
    server's refusal of a request line it could not read)."""
    body: dict[str, Any] = {
        "type": problem_type(code),
        "title": title,
        "status": status,
        "detail": detail,
        **({"instance": instance} if instance is not None else {}),
        "code": code,
        **(extensions or {}),
    }
    errors = list(errors)
    if errors:
        body["errors"] = [{"field": e.field, "message": e.message} for e in errors]
    return json.dumps(body)


def refusal_document(error: ServiceError, instance: str | None) -> str:
    """``error`` as a problem's JSON text outside any Flask request: the HTTP server's own
    refusals (:mod:`service.gunicorn_worker`)."""
    return problem_document(
        error.status, error.code, error.title, error.detail, instance, error.errors
    )


def problem(
    status: int,
    code: str,
    title: str,
    detail: str,
    errors: Iterable[FieldError] = (),
    headers: Mapping[str, str] | None = None,
    extensions: Mapping[str, str] | None = None,
) -> Response:
    document = problem_document(status, code, title, detail, request.path, errors, extensions)
    response = Response(document, status=status, mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def from_service_error(error: ServiceError) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(error, Unauthenticated) else None
    return problem(
        error.status,
        error.code,
        error.title,
        error.detail,
        error.errors,
        headers,
        error.extensions,
    )


def flatten_messages(messages: Any, prefix: str = "") -> list[FieldError]:
    """marshmallow/webargs messages (``{"json": {"amount": {"amount": ["..."]}}}``) as a flat
    list of ``FieldError("amount.amount", "...")``; the location level is dropped."""
    if isinstance(messages, Mapping):
        if not prefix and set(messages) <= {"json", "query", "headers", "form", "view_args"}:
            return [e for value in messages.values() for e in flatten_messages(value, "")]
        out: list[FieldError] = []
        for key, value in messages.items():
            name = "(body)" if key == "_schema" else str(key)
            out += flatten_messages(value, f"{prefix}.{name}" if prefix else name)
        return out
    if isinstance(messages, list | tuple):
        if all(isinstance(m, str) for m in messages):
            return [FieldError(prefix or "(body)", m) for m in messages]
        return [e for m in messages for e in flatten_messages(m, prefix)]
    return [FieldError(prefix or "(body)", str(messages))]


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def handle_http_exception(error: HTTPException) -> Response:
    status = error.code or 500
    data = getattr(error, "data", None) or {}
    messages = data.get("messages") or data.get("errors")
    if status == 422 and messages:
        errors = flatten_messages(messages)
        return problem(
            422,
            ValidationFailed.code,
            ValidationFailed.title,
            "The request has invalid fields; see errors.",
            errors,
        )
    if status == 400 and messages:
        errors = flatten_messages(messages)
        return problem(
            400,
            MalformedRequest.code,
            MalformedRequest.title,
            "The request body is not valid JSON.",
            errors,
        )
    if status >= 500:
        return _internal_error()
    headers = dict(data.get("headers") or {})
    valid_methods = getattr(error, "valid_methods", None)
    if status == 405 and valid_methods:
        headers["Allow"] = ", ".join(valid_methods)
    known = HTTP_PROBLEMS.get(status)
    if known is not None:
        return problem(
            status, known.code, known.title, error.description or known.title, (), headers
        )
    return problem(
        status,
        _snake(error.name or "error"),
        error.name or "Error",
        error.description or error.name,
        (),
        headers,
    )


def _internal_error() -> Response:
    return problem(
        InternalError.status,
        InternalError.code,
        InternalError.title,
        "The server failed to answer; the error has been logged.",
    )


def handle_unexpected(error: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return _internal_error()


def handle_database_unavailable(error: Exception) -> Response:
    """The database connection failed (a restart, a failover): nothing was committed, the
    pool has dropped its stale connections, and the same request can be sent again."""
    log.warning("database unavailable on %s %s: %s", request.method, request.path, error)
    return problem(
        ServiceUnavailable.status,
        ServiceUnavailable.code,
        ServiceUnavailable.title,
        "The database could not be reached; nothing was changed. Retry the request.",
        (),
        {"Retry-After": "1"},
    )


def register(app: Flask) -> None:
    from sqlalchemy.exc import DBAPIError

    def database_error(error: DBAPIError) -> Response:
        if error.connection_invalidated:
            return handle_database_unavailable(error)
        return handle_unexpected(error)

    app.register_error_handler(DBAPIError, database_error)
    app.register_error_handler(ServiceError, from_service_error)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(Exception, handle_unexpected)


PROBLEM_EXAMPLE_DETAILS: dict[str, str] = {
    "validation_failed": "The request has invalid fields; see errors.",
    "malformed_request": "The request body is not valid JSON.",
    "unauthenticated": "Missing or invalid credentials.",
    "token_expired": "The player token has expired.",
    "insufficient_funds": "Available 1200 EUR, needed 1500 EUR.",
    "stale_version": "The match is at version 13; the action was decided on version 12.",
    "illegal_action": "DISCARD AS: you do not hold AS.",
}


def _example_detail(error: type[ServiceError]) -> str:
    """The class docstring's "Raised when X." as "When X." (no rst markup)."""
    text = " ".join((error.__doc__ or error.title).split()).removeprefix("Raised ")
    return text[:1].upper() + text[1:].replace("``", "`")


def problem_examples(
    errors: Iterable[type[ServiceError]], detail: str | None = None
) -> dict[str, Any]:
    """One named OpenAPI example per problem code (openapi.yaml), shaped as the handler
    answers it."""
    examples: dict[str, Any] = {}
    for error in errors:
        value: dict[str, Any] = {
            "type": PROBLEMS_PATH + error.code,
            "title": error.title,
            "status": error.status,
            "detail": detail or PROBLEM_EXAMPLE_DETAILS.get(error.code) or _example_detail(error),
            "instance": "/v1/...",
            "code": error.code,
        }
        if error is ValidationFailed:
            value["errors"] = [
                {
                    "field": "amount.amount",
                    "message": "Must be an integer number of minor units (no floats, no strings).",
                }
            ]
        if error.code == "illegal_action":
            value["rule_code"] = "CARD_NOT_IN_HAND"
        examples[error.code] = {"summary": error.title, "value": value}
    return examples


def documents(blp: Blueprint, *errors: type[ServiceError]) -> Callable[[Any], Any]:
    """Document, in openapi.yaml, the problems an operation can answer: their codes, and an
    example of each."""
    by_status: dict[int, list[type[ServiceError]]] = defaultdict(list)
    for error in errors:
        by_status[error.status].append(error)

    def decorator(view: Any) -> Any:
        documented = view
        for status, classes in sorted(by_status.items()):
            codes = ", ".join(f"`{cls.code}`" for cls in classes)
            documented = blp.alt_response(
                status,
                schema=ProblemSchema,
                content_type=PROBLEM_JSON,
                description=f"Problem details; `code` is one of {codes}.",
                examples=problem_examples(classes),
            )(documented)
        # Each alt_response wraps the view in a function that only forwards the call (through
        # Flask's ensure_sync, which inspects it every time); only their documentation is
        # needed, so the view keeps it and runs unwrapped.
        view._apidoc = documented._apidoc
        return view

    return decorator


blp = Blueprint(
    "problems",
    __name__,
    url_prefix=PROBLEMS_PATH.rstrip("/"),
    description="What each problem `code` means: the pages problem `type`s point at.",
)


@blp.route("/<code>")
@blp.doc(
    security=[],
    responses={
        "200": {
            "description": "A page (HTML) saying what the problem means: its status, title "
            "and when the service answers it.",
            "content": {"text/html": {"schema": {"type": "string"}}},
        }
    },
)
@documents(blp, NotFound)
def problem_page(code: str) -> Response:
    """What a problem ``code`` means (the page its ``type`` points at)."""
    found = problem_classes().get(code)
    if found is None:
        raise NotFound(f"No problem has the code {code!r}.")
    meaning = html.escape(" ".join((found.__doc__ or found.title).split()))
    meaning = re.sub(r"``(.+?)``", r"<code>\1</code>", meaning)
    title = html.escape(found.title)
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{found.status} {title}</title></head>\n<body>\n"
        f"<h1>{title}</h1>\n"
        f"<p>HTTP status <strong>{found.status}</strong>, problem code "
        f"<code>{found.code}</code>.</p>\n<p>{meaning}</p>\n"
        "<p>The problem's <code>detail</code> says what happened to the request, and "
        "<code>errors</code>, when present, names each field or header at fault.</p>\n"
        "</body></html>\n"
    )
    return Response(page, mimetype="text/html")
