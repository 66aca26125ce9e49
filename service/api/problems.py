"""The one place that turns errors into RFC 9457 ``application/problem+json`` responses."""

from __future__ import annotations

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
    FieldError,
    MalformedRequest,
    ServiceError,
    ServiceUnavailable,
    Unauthenticated,
    ValidationFailed,
)

PROBLEM_TYPE_BASE = "https://docs.gin-service.example/problems/"
PROBLEM_JSON = "application/problem+json"

log = logging.getLogger(__name__)


def problem(
    status: int,
    code: str,
    title: str,
    detail: str,
    errors: Iterable[FieldError] = (),
    headers: Mapping[str, str] | None = None,
    extensions: Mapping[str, str] | None = None,
) -> Response:
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + code.replace("_", "-"),
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.path,
        "code": code,
        **(extensions or {}),
    }
    errors = list(errors)
    if errors:
        body["errors"] = [{"field": e.field, "message": e.message} for e in errors]
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def from_service_error(error: ServiceError) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(error, Unauthenticated) else None
    return problem(
        error.status, error.code, error.title, error.detail, error.errors, headers,
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
    code = _snake(error.name or "error")
    headers = dict(data.get("headers") or {})
    valid_methods = getattr(error, "valid_methods", None)
    if status == 405 and valid_methods:
        headers["Allow"] = ", ".join(valid_methods)
    if status >= 500:
        return problem(
            status,
            "internal_error",
            "Internal server error",
            "The server failed to answer; the error has been logged.",
        )
    return problem(
        status, code, error.name or "Error", error.description or error.name, (), headers
    )


def handle_unexpected(error: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return problem(
        500,
        "internal_error",
        "Internal server error",
        "The server failed to answer; the error has been logged.",
    )


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
            "type": PROBLEM_TYPE_BASE + error.code.replace("_", "-"),
            "title": error.title,
            "status": error.status,
            "detail": detail or PROBLEM_EXAMPLE_DETAILS.get(error.code) or _example_detail(error),
            "instance": "/v1/...",
            "code": error.code,
        }
        if error is ValidationFailed:
            value["errors"] = [{"field": "amount.amount",
                                "message": "Must be an integer number of minor units "
                                           "(no floats, no strings)."}]
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
