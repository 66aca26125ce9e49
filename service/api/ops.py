"""Health, readiness, metrics and the OpenAPI document, all without authentication (metrics
take a bearer token when ``METRICS_TOKEN`` is set).

The OpenAPI document (``/openapi.yaml``, and ``/openapi.json`` that the documentation page at
``/docs`` loads) is built once per app and served from memory: compact JSON, gzip-compressed
once for the clients that accept it, with an ``ETag`` (a reload answers 304) and a few minutes
of ``Cache-Control``. The documentation page's own scripts and styles are compressed and
cached the same way.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import Response, current_app, request
from flask.blueprints import BlueprintSetupState
from flask_smorest import Blueprint
from sqlalchemy import text

from service.api.schemas import HealthOut
from service.db.migrate import is_current
from service.errors import Unauthenticated
from service.observability.metrics import exposition

blp = Blueprint(
    "ops", __name__, description="Operations: health, readiness, metrics, API description."
)
NO_AUTH: list[dict[str, list[str]]] = []


@blp.route("/healthz")
@blp.doc(security=NO_AUTH)
@blp.response(200, HealthOut)
def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


def _broker_reachable(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss", "amqp", "amqps", "pyamqp"}:
        return True  # file-backed embedded broker: nothing to reach
    default_port = 6379 if parts.scheme.startswith("redis") else 5672
    try:
        with socket.create_connection(
            (parts.hostname or "localhost", parts.port or default_port), 1
        ):
            return True
    except OSError:
        return False


@blp.route("/readyz")
@blp.doc(security=NO_AUTH)
@blp.response(200, HealthOut)
@blp.alt_response(503, schema=HealthOut, description="A dependency is not ready.")
def readyz() -> tuple[dict[str, object], int]:
    """Readiness: the database answers and is migrated, and the broker is reachable."""
    engine = current_app.extensions["gin"]["engine"]
    checks: dict[str, str] = {}
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        checks["database"] = "ok"
        checks["migrations"] = "ok" if is_current(engine) else "behind"
    except Exception:  # any failure means not ready
        checks["database"] = "unreachable"
    checks["broker"] = (
        "ok" if _broker_reachable(current_app.config["BROKER_URL"]) else "unreachable"
    )
    ready = all(value == "ok" for value in checks.values())
    return {"status": "ok" if ready else "unavailable", "checks": checks}, 200 if ready else 503


@blp.route("/metrics")
@blp.doc(
    security=NO_AUTH,
    responses={
        "200": {
            "description": "Prometheus metrics (text exposition format). With "
            "METRICS_TOKEN set, send it as `Authorization: Bearer <token>`.",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
def metrics() -> Response:
    """Prometheus metrics: request latency by route, method and status; actions applied;
    task durations and failures; and, read from the database at scrape time, matches,
    outbox and settlement backlogs, webhook deliveries and ledger totals per currency."""
    token = current_app.config.get("METRICS_TOKEN")
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip(), token):
            raise Unauthenticated("Send Authorization: Bearer <METRICS_TOKEN>.")
    body, content_type = exposition(current_app)
    return Response(body, content_type=content_type)


#: How long a client may reuse the document or a page asset before asking again (with its
#: ETag, answered 304 when nothing changed).
DOCUMENT_MAX_AGE = 300
#: The endpoints of the documents and assets served this way: flask-smorest's JSON document
#: and the Swagger UI blueprint's files (service.api.init_api names both).
OPENAPI_JSON_ENDPOINT = "api-docs.openapi_json"
DOCS_ASSETS_ENDPOINT = "api_docs_page.show"
_COMPRESSIBLE = ("text/css", "text/javascript", "application/javascript", "text/html")


@dataclass(frozen=True)
class Published:
    """A document as served: its bytes, the same gzip-compressed, and its entity tag."""

    body: bytes
    gzipped: bytes
    etag: str
    mimetype: str

    @classmethod
    def of(cls, body: bytes, mimetype: str) -> Published:
        return cls(
            body, gzip.compress(body, 9, mtime=0), hashlib.sha256(body).hexdigest()[:32], mimetype
        )


def published(name: str, build: Callable[[], Published]) -> Published:
    """``name``'s document, built on first use and kept for the app's life (the API does not
    change while it runs)."""
    cache: dict[str, Published] = current_app.extensions["gin"].setdefault("published", {})
    if name not in cache:
        cache[name] = build()
    return cache[name]


def _accepts_gzip() -> bool:
    return request.accept_encodings.quality("gzip") > 0


def serve(document: Published) -> Response:
    """``document`` compressed when the client accepts gzip, with its ETag and caching."""
    zipped = _accepts_gzip()
    response = Response(document.gzipped if zipped else document.body, mimetype=document.mimetype)
    if zipped:
        response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    response.set_etag(document.etag + ("-gzip" if zipped else ""))
    response.cache_control.public = True
    response.cache_control.max_age = DOCUMENT_MAX_AGE
    response.make_conditional(request)  # 304 when the client's ETag matches
    return response


def _openapi_yaml() -> Published:
    from service.api import spec_yaml

    return Published.of(spec_yaml(current_app).encode(), "application/yaml")


def _openapi_json() -> Published:
    spec = current_app.extensions["gin"]["api"].spec.to_dict()
    body = json.dumps(spec, ensure_ascii=False, separators=(",", ":")).encode()
    return Published.of(body, "application/json")


@blp.route("/openapi.yaml")
@blp.doc(security=NO_AUTH, responses={"200": {"description": "This API's OpenAPI document."}})
def openapi_yaml() -> Response:
    """The OpenAPI document of this API, as committed in ``openapi.yaml``."""
    return serve(published("openapi.yaml", _openapi_yaml))


def openapi_json() -> Response:
    """The OpenAPI document as compact JSON (what the documentation page loads)."""
    return serve(published("openapi.json", _openapi_json))


@blp.record_once
def _serve_openapi_json(state: BlueprintSetupState) -> None:
    """flask-smorest serves ``/openapi.json`` indented and rebuilt on every request: the same
    URL serves :func:`openapi_json` instead."""
    if OPENAPI_JSON_ENDPOINT in state.app.view_functions:
        state.app.view_functions[OPENAPI_JSON_ENDPOINT] = openapi_json


@blp.after_app_request
def _compress_docs_assets(response: Response) -> Response:
    """The documentation page's files (Swagger UI's 1.7 MB script among them), gzipped once
    per file and version, and cached by the client for a while."""
    if request.endpoint != DOCS_ASSETS_ENDPOINT or response.status_code != 200:
        return response
    etag, _ = response.get_etag()
    if not etag:  # the page itself (rendered per request), not a file
        return response
    if response.mimetype not in _COMPRESSIBLE or not _accepts_gzip():
        response.cache_control.public = True
        response.cache_control.max_age = DOCUMENT_MAX_AGE
        response.cache_control.no_cache = None
        return response
    response.direct_passthrough = False
    document = published(
        f"{request.path}@{etag}", lambda: Published.of(response.get_data(), str(response.mimetype))
    )
    response.close()
    return serve(document)
