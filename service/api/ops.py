"""Health, readiness and the OpenAPI document, all without authentication."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from flask import Response, current_app
from flask_smorest import Blueprint
from sqlalchemy import text

from service.api.schemas import HealthOut
from service.db.migrate import is_current

blp = Blueprint("ops", __name__, description="Operations: health, readiness, API description.")
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


@blp.route("/openapi.yaml")
@blp.doc(security=NO_AUTH, responses={"200": {"description": "This API's OpenAPI document."}})
def openapi_yaml() -> Response:
    """The OpenAPI document of this API, as committed in ``openapi.yaml``."""
    from service.api import spec_yaml

    return Response(spec_yaml(current_app), mimetype="application/yaml")
