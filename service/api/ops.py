"""Health, readiness, metrics and the OpenAPI document, all without authentication (metrics
take a bearer token when ``METRICS_TOKEN`` is set)."""

from __future__ import annotations

import hmac
import socket
from urllib.parse import urlsplit

from flask import Response, current_app, request
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


@blp.route("/openapi.yaml")
@blp.doc(security=NO_AUTH, responses={"200": {"description": "This API's OpenAPI document."}})
def openapi_yaml() -> Response:
    """The OpenAPI document of this API, as committed in ``openapi.yaml``."""
    from service.api import spec_yaml

    return Response(spec_yaml(current_app), mimetype="application/yaml")
