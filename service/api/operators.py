"""The calling operator and its API keys (several at a time, revocable, shown once)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from service.api import render
from service.api.context import db_session, principal, unit
from service.api.problems import documents
from service.api.schemas import ApiKeyIn, ApiKeyList, ApiKeyOut, OperatorOut
from service.clock import utcnow
from service.errors import Forbidden, NotFound, Unauthenticated, ValidationFailed
from service.usecases import operators
from service.usecases.auth import require_operator

blp = Blueprint("operators", __name__, url_prefix="/v1", description="Operators and API keys.")


@blp.route("/operator")
@blp.response(200, OperatorOut)
@documents(blp, Unauthenticated, Forbidden)
@unit
def get_operator() -> dict[str, Any]:
    """The operator the API key belongs to."""
    operator_id = require_operator(principal())
    return render.operator(operators.get_operator(db_session(), operator_id))


@blp.route("/api-keys")
class ApiKeys(MethodView):
    @blp.arguments(ApiKeyIn, required=False)
    @blp.response(201, ApiKeyOut)
    @documents(blp, Unauthenticated, Forbidden, ValidationFailed)
    @unit
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create another API key; its ``secret`` appears in this response only."""
        operator_id = require_operator(principal())
        issued = operators.create_api_key(db_session(), operator_id, body["label"], utcnow())
        return render.issued_key(issued)

    @blp.response(200, ApiKeyList)
    @documents(blp, Unauthenticated, Forbidden)
    @unit
    def get(self) -> dict[str, Any]:
        """The operator's API keys, newest first, without secrets."""
        operator_id = require_operator(principal())
        keys = operators.list_api_keys(db_session(), operator_id)
        return render.page([render.api_key(k) for k in keys], False, None)


@blp.route("/api-keys/<key_id>", methods=["DELETE"])
@blp.response(200, ApiKeyOut)
@documents(blp, Unauthenticated, Forbidden, NotFound)
@unit
def revoke_api_key(key_id: str) -> dict[str, Any]:
    """Revoke an API key at once (it may be the one making this call)."""
    operator_id = require_operator(principal())
    return render.api_key(operators.revoke_api_key(db_session(), operator_id, key_id, utcnow()))
