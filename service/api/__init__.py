"""The HTTP API: flask-smorest blueprints (one per resource), marshmallow schemas, auth, the
problem+json error handler and the generated OpenAPI document."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_smorest import Api

from service.api.schemas import ProblemSchema

SPEC_OPTIONS: dict[str, Any] = {
    "info": {
        "description": (
            "Stake-play Gin Rummy match service: operators, players, wallets and the "
            "double-entry ledger. Conventions: ../shared/API_CONVENTIONS.md. Money is "
            "{amount: integer minor units, currency}; every error is application/problem+json."
        ),
    },
    "components": {
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An operator API key (sk_...) or a player token (pt_...).",
            },
        },
    },
    "security": [{"bearer": []}],
}


class GinApi(Api):  # type: ignore[misc]
    """flask-smorest's Api with RFC 9457 problems as the documented error schema."""

    ERROR_SCHEMA = ProblemSchema
    DEFAULT_ERROR_RESPONSE_NAME = "DEFAULT_ERROR"


def init_api(app: Flask) -> Api:
    from service.api import (
        audit,
        bots,
        context,
        matches,
        operators,
        ops,
        players,
        problems,
        rates,
        settlements,
        tables,
        wallets,
        webhooks,
    )

    app.config.setdefault("API_TITLE", "Gin Rummy match service")
    app.config.setdefault("API_VERSION", "0.1.0")
    app.config.setdefault("OPENAPI_VERSION", "3.0.3")
    app.config.setdefault("API_SPEC_OPTIONS", SPEC_OPTIONS)
    # A documentation page at /docs (ReDoc) reading /openapi.json; /openapi.yaml is in ops.
    app.config.setdefault("OPENAPI_URL_PREFIX", "/")
    app.config.setdefault("OPENAPI_JSON_PATH", "openapi.json")
    app.config.setdefault("OPENAPI_REDOC_PATH", "/docs")
    app.config.setdefault(
        "OPENAPI_REDOC_URL", "https://cdn.jsdelivr.net/npm/redoc@2/bundles/redoc.standalone.js"
    )
    api = GinApi(app)
    for module in (
        ops, operators, players, wallets, rates, tables, bots, matches, settlements, webhooks,
    ):
        api.register_blueprint(module.blp)
    api.register_blueprint(audit.blp)
    problems.register(app)
    context.register(app)
    app.extensions["gin"]["api"] = api
    return api


def spec_yaml(app: Flask) -> str:
    """The OpenAPI document as YAML, exactly as committed in ``openapi.yaml``."""
    api: Api = app.extensions["gin"]["api"]
    text: str = api.spec.to_yaml({"sort_keys": True})
    return text
