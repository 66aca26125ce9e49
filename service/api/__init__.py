"""The HTTP API: flask-smorest blueprints (one per resource), marshmallow schemas, auth, the
problem+json error handler and the generated OpenAPI document."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_smorest import Api
from flask_swagger_ui import get_swaggerui_blueprint

from service.api.contract import SECURITY_SCHEMES, ContractPlugin
from service.api.schemas import ProblemSchema

DOCS_PATH = "/docs"
SPEC_OPTIONS: dict[str, Any] = {
    "info": {
        "description": (
            "Stake-play Gin Rummy match service: operators, players, wallets and the "
            "double-entry ledger, tables, live matches, settlement, webhooks and the audit.\n\n"
            "- **Money** is `{amount, currency}`: `amount` an integer in the currency's minor "
            "units; a float is a 422. Display conversions are strings and never money.\n"
            "- **Auth**: `Authorization: Bearer` with an operator API key (`operatorKey`) or a "
            "player token (`playerToken`); each operation names which it accepts. Missing or "
            "bad credentials: 401; another operator's resource: 404; not yours to touch: 403.\n"
            "- **Errors**: every 4xx and 5xx is `application/problem+json` (RFC 9457) with a "
            "stable `code`, listed per operation; validation failures carry `errors`. A "
            "problem's `type` is `/problems/<code>` (relative to the request's URI), a page "
            "saying what the code means.\n"
            "- **Bodies** are `application/json` (UTF-8; another type is a 415) of at most "
            "`MAX_CONTENT_LENGTH` bytes (64 KiB unless configured; a 413 beyond); a key twice "
            "in one object is a 400, text with a NUL or a lone surrogate a 422.\n"
            "- **Idempotency**: POSTs that move money require `Idempotency-Key`; match actions "
            "accept one. A replay answers the first response with `Idempotent-Replayed: true`.\n"
            "- **Lists**: `limit` (1-100, default 20), `starting_after` / `ending_before`; "
            "answers `{data, has_more, next_cursor}`, newest first.\n"
            "- **Request ids**: every response carries `X-Request-Id` (yours when you send one)."
        ),
    },
    "components": {"securitySchemes": SECURITY_SCHEMES},
    "security": [{"operatorKey": []}],
}


class GinApi(Api):
    """flask-smorest's Api with RFC 9457 problems as the documented error schema, and no
    catch-all ``default`` response: every status an operation answers is listed."""

    ERROR_SCHEMA = ProblemSchema
    DEFAULT_ERROR_RESPONSE_NAME = None


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
        seamless,
        settlements,
        tables,
        tournaments,
        wallets,
        webhooks,
    )

    app.config.setdefault("API_TITLE", "Gin Rummy match service")
    app.config.setdefault("API_VERSION", "0.1.0")
    app.config.setdefault("OPENAPI_VERSION", "3.1.0")
    app.config.setdefault("API_SPEC_OPTIONS", SPEC_OPTIONS)
    # /openapi.json from flask-smorest, /openapi.yaml from ops; the documentation page at
    # /docs is Swagger UI served from the flask-swagger-ui package (no CDN).
    app.config.setdefault("OPENAPI_URL_PREFIX", "/")
    app.config.setdefault("OPENAPI_JSON_PATH", "openapi.json")
    api = GinApi(app, spec_kwargs={"extra_plugins": [ContractPlugin()]})
    for module in (
        ops,
        operators,
        players,
        wallets,
        rates,
        tables,
        bots,
        matches,
        settlements,
        tournaments,
        webhooks,
        seamless,
    ):
        api.register_blueprint(module.blp)
    api.register_blueprint(audit.blp)
    api.register_blueprint(problems.blp)
    app.register_blueprint(
        get_swaggerui_blueprint(
            DOCS_PATH,
            "/openapi.json",
            config={"app_name": app.config["API_TITLE"]},
            blueprint_name="api_docs_page",
        )
    )
    problems.register(app)
    context.register(app)
    app.extensions["gin"]["api"] = api
    return api


def spec_yaml(app: Flask) -> str:
    """The OpenAPI document as YAML, exactly as committed in ``openapi.yaml``."""
    api: Api = app.extensions["gin"]["api"]
    text: str = api.spec.to_yaml({"sort_keys": True})
    return text
