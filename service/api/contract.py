"""The API contract's cross-cutting parts, written once into every operation of openapi.yaml.

The blueprints document what is particular to an operation (schemas, the problems it raises,
its docstring). This apispec plugin adds, as the paths are registered, what the API conventions
say about every operation: a stable ``operationId``, who may call it (an operator API key, a
player token, or either), the ``Idempotency-Key`` header and ``Idempotent-Replayed`` replays,
``X-Request-Id`` on requests and responses, the cursor contract on list operations, the
problems every operation can answer (400 malformed request, 401, 422 invalid input) as
``application/problem+json``, and an example for each request body and response.

An operation missing from :data:`OPERATIONS` still gets a derived ``operationId`` and the
shared parts; ``tests/api/test_openapi.py`` then names it until it has an entry.

Two more things are written here once for the whole document. Descriptions are Markdown (what
the documentation page renders): the views' docstrings are reStructuredText, so their
``literals`` and :class:`roles` are converted as the operations are registered
(:func:`markdown`). And a request schema whose rules go beyond its fields (one field's range
depending on another's value) states them as JSON Schema in a ``json_schema`` class attribute,
merged into its component (:meth:`ContractPlugin.schema_helper`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

from apispec import BasePlugin

from service.api.examples import REQUEST_EXAMPLE_SETS, REQUEST_EXAMPLES, RESPONSE_EXAMPLES
from service.api.problems import PROBLEM_JSON, problem_examples
from service.errors import (
    MalformedRequest,
    ServiceError,
    ServiceUnavailable,
    TokenExpired,
    Unauthenticated,
    ValidationFailed,
)

OPERATOR = "operator"
PLAYER = "player"
EITHER = "either"

SECURITY: dict[str, list[dict[str, list[str]]]] = {
    OPERATOR: [{"operatorKey": []}],
    PLAYER: [{"playerToken": []}],
    EITHER: [{"operatorKey": []}, {"playerToken": []}],
}
AUDIENCE = {
    OPERATOR: "Operator API key only (a player token is 403).",
    PLAYER: "Player token only (an operator API key is 403).",
    EITHER: "Operator API key, or the token of a player it concerns.",
}

SECURITY_SCHEMES: dict[str, Any] = {
    "operatorKey": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "sk_...",
        "description": "An operator API key: `Authorization: Bearer sk_...` (shown once when "
        "created; several may be active; revocable).",
    },
    "playerToken": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "pt_...",
        "description": "A short-lived signed player token minted by the operator with "
        "`POST /v1/players/{player_id}/tokens`: `Authorization: Bearer pt_...`.",
    },
}

REQUIRED = "required"
OPTIONAL = "optional"


@dataclass(frozen=True)
class Operation:
    """What the contract says about one operation beyond its blueprint."""

    operation_id: str
    auth: str | None = OPERATOR
    idempotency: str | None = None  # REQUIRED (money moves) or OPTIONAL (a match changes)


OPERATIONS: dict[str, Operation] = {
    "GET /healthz": Operation("getHealth", None),
    "GET /readyz": Operation("getReadiness", None),
    "GET /openapi.yaml": Operation("getOpenApiDocument", None),
    "GET /v1/operator": Operation("getOperator"),
    "GET /v1/api-keys": Operation("listApiKeys"),
    "POST /v1/api-keys": Operation("createApiKey"),
    "DELETE /v1/api-keys/{key_id}": Operation("revokeApiKey"),
    "GET /v1/players": Operation("listPlayers"),
    "POST /v1/players": Operation("createPlayer"),
    "GET /v1/players/{player_id}": Operation("getPlayer", EITHER),
    "PATCH /v1/players/{player_id}": Operation("updatePlayer"),
    "POST /v1/players/{player_id}/tokens": Operation("createPlayerToken"),
    "PUT /v1/players/{player_id}/self-exclusion": Operation("setSelfExclusion"),
    "GET /v1/players/{player_id}/deposit-limits/{currency}": Operation("getDepositLimits", EITHER),
    "PUT /v1/players/{player_id}/deposit-limits/{currency}": Operation("setDepositLimits"),
    "GET /v1/players/{player_id}/wallets": Operation("listWallets", EITHER),
    "GET /v1/players/{player_id}/wallets/{currency}": Operation("getWallet", EITHER),
    "POST /v1/players/{player_id}/deposits": Operation("createDeposit", OPERATOR, REQUIRED),
    "POST /v1/players/{player_id}/withdrawals": Operation("createWithdrawal", OPERATOR, REQUIRED),
    "GET /v1/players/{player_id}/entries": Operation("listLedgerEntries", EITHER),
    "GET /v1/transactions/{transaction_id}": Operation("getTransaction"),
    "GET /v1/exchange-rates": Operation("listExchangeRates"),
    "PUT /v1/exchange-rates/{base}/{quote}": Operation("setExchangeRate"),
    "GET /v1/tables": Operation("listTables", EITHER),
    "POST /v1/tables": Operation("createTable"),
    "GET /v1/tables/{table_id}": Operation("getTable", EITHER),
    "POST /v1/tables/{table_id}/seats": Operation("joinTable", PLAYER, REQUIRED),
    "DELETE /v1/tables/{table_id}/seats/me": Operation("leaveTable", PLAYER, REQUIRED),
    "POST /v1/tables/{table_id}/seats/me/top-ups": Operation("topUpSeat", PLAYER, REQUIRED),
    "PUT /v1/tables/{table_id}/seats/me/ready": Operation("setSeatReady", PLAYER),
    "POST /v1/tables/{table_id}/bots": Operation("seatBot", OPERATOR, REQUIRED),
    "GET /v1/tables/{table_id}/bots": Operation("listBots"),
    "POST /v1/tournaments/{tournament_id}/bots": Operation(
        "enterTournamentBot", OPERATOR, REQUIRED
    ),
    "GET /v1/tournaments": Operation("listTournaments", EITHER),
    "POST /v1/tournaments": Operation("createTournament"),
    "GET /v1/tournaments/{tournament_id}": Operation("getTournament", EITHER),
    "GET /v1/tournaments/{tournament_id}/events": Operation("followTournament", EITHER),
    "POST /v1/tournaments/{tournament_id}/entries": Operation(
        "registerForTournament", PLAYER, REQUIRED
    ),
    "DELETE /v1/tournaments/{tournament_id}/entries/me": Operation(
        "unregisterFromTournament", PLAYER, REQUIRED
    ),
    "POST /v1/tournaments/{tournament_id}/cancel": Operation(
        "cancelTournament", OPERATOR, REQUIRED
    ),
    "GET /v1/tournaments/{tournament_id}/statement": Operation("getTournamentStatement"),
    "GET /v1/matches/{match_id}": Operation("getMatch", EITHER),
    "GET /v1/matches/{match_id}/events": Operation("followMatch", EITHER),
    "GET /v1/tables/events": Operation("followLobby", EITHER),
    "POST /v1/matches/{match_id}/actions": Operation("playAction", PLAYER, OPTIONAL),
    "GET /v1/matches/{match_id}/hands/{number}": Operation("getHandHistory", EITHER),
    "GET /v1/hands/{hand_id}": Operation("getHand", EITHER),
    "GET /v1/matches/{match_id}/settlement": Operation("getSettlement", EITHER),
    "GET /v1/settlements": Operation("listSettlements"),
    "GET /v1/audit/settlements/{match_id}": Operation("auditSettlement"),
    "GET /v1/audit/ledger": Operation("auditLedger"),
    "GET /v1/audit/tournaments/{tournament_id}": Operation("auditTournament"),
    "GET /v1/webhook-endpoints": Operation("listWebhookEndpoints"),
    "POST /v1/webhook-endpoints": Operation("createWebhookEndpoint"),
    "GET /v1/webhook-endpoints/{endpoint_id}": Operation("getWebhookEndpoint"),
    "PATCH /v1/webhook-endpoints/{endpoint_id}": Operation("updateWebhookEndpoint"),
    "DELETE /v1/webhook-endpoints/{endpoint_id}": Operation("deleteWebhookEndpoint"),
    "POST /v1/webhook-endpoints/{endpoint_id}/rotate-secret": Operation("rotateWebhookSecret"),
    "GET /v1/webhook-endpoints/{endpoint_id}/deliveries": Operation("listWebhookDeliveries"),
    "POST /v1/webhook-endpoints/{endpoint_id}/test": Operation("sendTestWebhookEvent"),
    "GET /v1/wallet-settings": Operation("listWalletSettings"),
    "PUT /v1/wallet-settings/{currency}": Operation("setWalletSettings"),
    "POST /v1/wallet-settings/{currency}/rotate-secret": Operation("rotateWalletSecret"),
    "GET /v1/wallet-calls": Operation("listWalletCalls"),
    "GET /v1/webhook-deliveries/{delivery_id}": Operation("getWebhookDelivery"),
    "POST /v1/webhook-deliveries/{delivery_id}/redeliver": Operation("redeliverWebhook"),
}

IDEMPOTENCY_KEY = "IdempotencyKey"
IDEMPOTENCY_KEY_OPTIONAL = "IdempotencyKeyOptional"
REQUEST_ID = "RequestId"

COMPONENT_PARAMETERS: dict[str, Any] = {
    IDEMPOTENCY_KEY: {
        "in": "header",
        "name": "Idempotency-Key",
        # Printable: what a header carries (Latin-1) minus the control characters.
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "pattern": r"^[ -~\u00a1-\u00ac\u00ae-\u00ff]+$",
        },
        "description": "Your unique key for this request (1-255 printable characters), kept "
        "at least 24 hours per operator. The same key with the same body returns the "
        "first response again with `Idempotent-Replayed: true` and changes "
        "nothing; with another body or endpoint: 422 `idempotency_key_reused`; "
        "while the first is still running: 409 `idempotency_key_in_use` (a request "
        "whose process died is not running: its retry goes ahead within about a second; "
        "see the API conventions, Idempotency).",
        "required": True,
        "example": "dep-2026-12-01-0001",
    },
    REQUEST_ID: {
        "in": "header",
        "name": "X-Request-Id",
        "required": False,
        "schema": {"type": "string"},
        "description": "Your id for this request (up to 200 printable characters), echoed in "
        "the response and carried by the logs and tasks it causes; when it is absent, longer or "
        "unprintable, the service makes one up.",
        "example": "req-7f3a9c",
    },
}
COMPONENT_HEADERS: dict[str, Any] = {
    "X-Request-Id": {
        "description": "The request's id: yours when you sent a valid one, else generated.",
        "schema": {"type": "string"},
    },
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored response to an earlier request with "
        "the same Idempotency-Key (nothing was done again).",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "WWW-Authenticate": {
        "description": "`Bearer`: how to authenticate.",
        "schema": {"type": "string"},
    },
}
PAGINATION = (
    " Cursor pagination: `data` holds at most `limit` items (newest first); when `has_more` "
    "is true, pass `next_cursor` as `starting_after` to get the next page (`ending_before` "
    "pages back). `next_cursor` is null on the last page."
)


_RST_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(~?)([^`<]*?)(?:\s*<[^>]*>)?`")
_RST_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def _role_text(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2).strip()
    return target.rsplit(".", 1)[-1] if short else target


def _unwrapped(paragraph: str) -> str:
    """A paragraph's hard-wrapped lines joined (a list or an indented block stays as it is)."""
    lines = paragraph.split("\n")
    if any(line.startswith((" ", "\t", "- ", "* ", "|")) for line in lines[1:]):
        return paragraph
    return " ".join(line.strip() for line in lines)


def markdown(text: str) -> str:
    """A docstring's reStructuredText as Markdown: ``x`` becomes `x`, a role becomes plain
    text (:class:`~service.games.gin.ruleset.Ruleset` is Ruleset, :data:`Title <target>` is
    Title), and the lines of a paragraph are joined."""
    text = _RST_LITERAL.sub(lambda m: f"`{m.group(1)}`", _RST_ROLE.sub(_role_text, text))
    return "\n\n".join(_unwrapped(p) for p in re.split(r"\n[ \t]*\n", text.strip()))


def operation_key(method: str, path: str) -> str:
    return f"{method.upper()} {path}"


def _derived_id(method: str, path: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", path) if w and w != "v1"]
    return method.lower() + "".join(w[:1].upper() + w[1:] for w in words)


def _json_copy(example: Any) -> Any:
    """An example as fresh JSON data: the examples module builds variants from shared parts,
    which a deep copy would keep shared and the YAML would then show as anchors."""
    return json.loads(json.dumps(example))


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _add_problem(
    responses: dict[str, Any], status: int, error: type[ServiceError], detail: str
) -> None:
    """Document ``error`` under ``status``: a new problem+json response, or one more code and
    example in the one the blueprint documented."""
    key = str(status)
    response = responses.get(key)
    if not isinstance(response, dict):
        responses[key] = {
            "description": f"Problem details; `code` is one of `{error.code}`.",
            "content": {
                PROBLEM_JSON: {
                    "schema": _ref("schemas", "Problem"),
                    "examples": problem_examples([error], detail),
                }
            },
        }
        return
    description = response.get("description", "")
    if f"`{error.code}`" in description:
        return
    response["description"] = (
        description.rstrip(".") + f", `{error.code}`."
        if "`code`" in description
        else f"Problem details; `code` is one of `{error.code}`."
    )
    for media in response.get("content", {}).values():
        media.setdefault("examples", {}).update(problem_examples([error], detail))


class ContractPlugin(BasePlugin):
    """Adds the conventions of docs/api-conventions.md to every registered operation."""

    def init_spec(self, spec: Any) -> None:
        super().init_spec(spec)
        self.spec = spec
        optional = {**COMPONENT_PARAMETERS[IDEMPOTENCY_KEY], "required": False}
        optional["description"] = (
            "Optional here: with a key, a retry of the same request replays the first answer "
            "(`Idempotent-Replayed: true`). " + optional["description"]
        )
        for name, parameter in {**COMPONENT_PARAMETERS, IDEMPOTENCY_KEY_OPTIONAL: optional}.items():
            spec.components.parameter(name, parameter["in"], copy.deepcopy(parameter))
        for name, header in COMPONENT_HEADERS.items():
            spec.components.header(name, copy.deepcopy(header))

    def schema_helper(
        self, name: str, definition: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any] | None:
        """The ``json_schema`` rules a marshmallow schema class states beyond its fields."""
        schema = kwargs.get("schema")
        extra = getattr(schema, "json_schema", None)
        return copy.deepcopy(extra) if isinstance(extra, dict) else None

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        for method, operation in (operations or {}).items():
            self._complete(method, str(path), operation)

    def _complete(self, method: str, path: str, operation: dict[str, Any]) -> None:
        for part in ("summary", "description"):
            if isinstance(operation.get(part), str):
                operation[part] = markdown(operation[part])
        contract = OPERATIONS.get(operation_key(method, path))
        operation.setdefault(
            "operationId", contract.operation_id if contract else _derived_id(method, path)
        )
        responses: dict[str, Any] = {
            str(status): response for status, response in operation.get("responses", {}).items()
        }
        operation["responses"] = responses
        public = path.startswith("/v1/")
        if contract is not None and contract.auth is not None:
            operation.setdefault("security", SECURITY[contract.auth])
            audience = AUDIENCE[contract.auth]
            operation["description"] = (
                f"{operation.get('description', '')}\n\n**Auth:** {audience}".strip()
            )
        parameters: list[Any] = [
            p
            for p in operation.get("parameters", [])
            if not (isinstance(p, dict) and p.get("name") == "Idempotency-Key")
        ]
        if contract is not None and contract.idempotency is not None:
            name = IDEMPOTENCY_KEY if contract.idempotency == REQUIRED else IDEMPOTENCY_KEY_OPTIONAL
            parameters.append(name)
        parameters.append(REQUEST_ID)
        operation["parameters"] = parameters
        has_input = (
            bool(operation.get("requestBody"))
            or any(isinstance(p, dict) and p.get("in") in ("query", "body") for p in parameters)
            or "{" in path
        )
        self._errors(responses, public, has_input)
        self._headers(responses, contract)
        self._examples(operation, responses, contract)
        if any(isinstance(p, dict) and p.get("name") == "starting_after" for p in parameters):
            ok = responses.get("200")
            if isinstance(ok, dict):
                ok["description"] = (ok.get("description", "OK") + "." + PAGINATION).replace(
                    "..", "."
                )

    @staticmethod
    def _errors(responses: dict[str, Any], public: bool, has_input: bool) -> None:
        responses.pop("default", None)
        for status, response in list(responses.items()):
            if status.startswith(("4", "5")) and (
                isinstance(response, str) or (isinstance(response, dict) and "$ref" in response)
            ):
                responses.pop(status)  # flask-smorest's generic entry: written below instead
        shared: list[tuple[int, type[ServiceError], str]] = []
        if public:
            shared += [
                (400, MalformedRequest, "The request body is not valid JSON."),
                (401, Unauthenticated, "Missing or invalid credentials."),
                (401, TokenExpired, "The player token has expired."),
            ]
            if has_input:
                shared.append((422, ValidationFailed, "The request has invalid fields."))
            shared.append(
                (
                    503,
                    ServiceUnavailable,
                    "The database could not be reached; nothing was changed. Retry the request.",
                )
            )
        for code, error, detail in shared:
            _add_problem(responses, code, error, detail)
        for status, response in responses.items():
            if status.startswith(("4", "5")) and isinstance(response, dict):
                for media in list(response.get("content", {})):
                    if media != PROBLEM_JSON:  # every error is application/problem+json
                        response["content"][PROBLEM_JSON] = response["content"].pop(media)
        unauthenticated = responses.get("401")
        if isinstance(unauthenticated, dict):
            unauthenticated.setdefault("headers", {})["WWW-Authenticate"] = "WWW-Authenticate"

    @staticmethod
    def _headers(responses: dict[str, Any], contract: Operation | None) -> None:
        for response in responses.values():
            if not isinstance(response, dict):
                continue
            headers = response.setdefault("headers", {})
            headers.setdefault("X-Request-Id", "X-Request-Id")
            if contract is not None and contract.idempotency is not None:
                headers.setdefault("Idempotent-Replayed", "Idempotent-Replayed")

    @staticmethod
    def _examples(
        operation: dict[str, Any], responses: dict[str, Any], contract: Operation | None
    ) -> None:
        if contract is None:
            return
        body = REQUEST_EXAMPLES.get(contract.operation_id)
        named = REQUEST_EXAMPLE_SETS.get(contract.operation_id)
        request = operation.get("requestBody")
        if body is not None and isinstance(request, dict):
            for media in request.get("content", {}).values():
                media.setdefault("example", _json_copy(body))
        if named is not None and isinstance(request, dict):
            for media in request.get("content", {}).values():
                media.setdefault(
                    "examples",
                    {name: {"summary": name, "value": _json_copy(v)} for name, v in named.items()},
                )
        answer = RESPONSE_EXAMPLES.get(contract.operation_id)
        if answer is None:
            return
        for status, response in responses.items():
            if status.startswith("2") and isinstance(response, dict):
                for media in response.get("content", {}).values():
                    media.setdefault("example", _json_copy(answer))
                break


__all__ = [
    "OPERATIONS",
    "SECURITY_SCHEMES",
    "ContractPlugin",
    "Operation",
    "markdown",
    "operation_key",
]
