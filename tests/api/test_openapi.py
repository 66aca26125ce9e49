"""openapi.yaml is generated from the code, the committed file must match it, and it is a
complete, valid OpenAPI 3.1 contract; the documentation page works offline."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from openapi_spec_validator import validate

from service.api import spec_yaml
from service.api.contract import OPERATIONS, OPERATOR, PLAYER, REQUIRED

COMMITTED = Path(__file__).resolve().parents[2] / "openapi.yaml"
METHODS = ("get", "put", "post", "patch", "delete")
PROBLEM_JSON = "application/problem+json"
#: Shared response components written by another part of the service (the rate limiter's
#: 429): checked for problem+json only, not yet for the X-Request-Id header and an example.
SHARED_ELSEWHERE: set[str] = set()
#: Answers that are not problems by design: readiness reports its checks when not ready.
NOT_PROBLEMS = {("GET /readyz", "503")}


@pytest.fixture(scope="module")
def spec(app: Any) -> dict[str, Any]:
    return dict(yaml.safe_load(spec_yaml(app)))


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def resolve(spec: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        _, kind, name = node["$ref"].lstrip("#/").split("/")
        node = spec["components"][kind][name]
    return node


def test_committed_openapi_matches_the_code(app: Any) -> None:
    generated = spec_yaml(app)
    assert COMMITTED.read_text() == generated, (
        "openapi.yaml is stale: run `.venv/bin/gin-service openapi > openapi.yaml`"
    )


def test_the_document_is_valid_openapi_3_1(spec: dict[str, Any]) -> None:
    assert spec["openapi"] == "3.1.0"
    validate(spec)  # raises on any structural error
    # Nullable fields are JSON Schema 3.1 style, never the 3.0 keyword.
    assert "nullable:" not in COMMITTED.read_text()
    player = spec["components"]["schemas"]["PlayerOut"]["properties"]
    assert player["display_currency"]["type"] == ["string", "null"]


def test_every_route_is_documented_with_its_problems(app: Any, spec: dict[str, Any]) -> None:
    documented = {(path, method) for method, path, _ in operations(spec)}
    for rule in app.url_map.iter_rules():
        # Pages for people (every blueprint of service/pages) are HTML, not operations.
        blueprint = app.blueprints.get(rule.endpoint.rpartition(".")[0])
        if blueprint is not None and blueprint.import_name.startswith("service.pages"):
            continue
        if rule.endpoint.startswith(("api-docs", "api_docs_page", "static")):
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)  # <int:n> -> {n}
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (path, method) in documented, (path, method)
    deposit = spec["paths"]["/v1/players/{player_id}/deposits"]["post"]
    assert "idempotency_key_in_use" in deposit["responses"]["409"]["description"]
    assert "deposit_limit_exceeded" in deposit["responses"]["422"]["description"]
    assert PROBLEM_JSON in deposit["responses"]["422"]["content"]


def test_every_operation_is_complete(spec: dict[str, Any]) -> None:
    """operationId, summary, responses with schemas, examples, problems, auth, request ids."""
    seen_ids: set[str] = set()
    gaps: list[str] = []
    for method, path, operation in operations(spec):
        name = f"{method} {path}"
        op_id = operation.get("operationId")
        if not op_id or op_id in seen_ids:
            gaps.append(f"{name}: operationId missing or repeated")
        seen_ids.add(op_id)
        if not operation.get("summary"):
            gaps.append(f"{name}: no summary (the view's docstring)")
        if "default" in operation["responses"]:
            gaps.append(f"{name}: a catch-all default response hides undocumented statuses")
        successes = {s: r for s, r in operation["responses"].items() if s.startswith("2")}
        if not successes:
            gaps.append(f"{name}: no success response")
        parameters = [resolve(spec, p) for p in operation.get("parameters", [])]
        if not any(p["name"] == "X-Request-Id" for p in parameters):
            gaps.append(f"{name}: no X-Request-Id parameter")
        for status, response in operation["responses"].items():
            elsewhere = response.get("$ref") in SHARED_ELSEWHERE
            response = resolve(spec, response)
            if "X-Request-Id" not in response.get("headers", {}) and not elsewhere:
                gaps.append(f"{name} {status}: no X-Request-Id response header")
            if status[0] in "45" and (name, status) not in NOT_PROBLEMS:
                if set(response.get("content", {})) != {PROBLEM_JSON}:
                    gaps.append(f"{name} {status}: not application/problem+json")
                media = response["content"][PROBLEM_JSON]
                if media["schema"] != {"$ref": "#/components/schemas/Problem"}:
                    gaps.append(f"{name} {status}: not the Problem schema")
                if not media.get("examples") and not elsewhere:
                    gaps.append(f"{name} {status}: no problem example")
        if not path.startswith("/v1/"):
            continue  # operations endpoints (ops.py): public, documented by their owner
        for status in ("400", "401"):
            if status not in operation["responses"]:
                gaps.append(f"{name}: {status} not documented")
        contract = OPERATIONS.get(name)
        if contract is None:
            gaps.append(f"{name}: no entry in service.api.contract.OPERATIONS")
            continue
        if op_id != contract.operation_id:
            gaps.append(f"{name}: operationId {op_id} is not {contract.operation_id}")
        schemes = {scheme for entry in operation.get("security", []) for scheme in entry}
        expected = {OPERATOR: {"operatorKey"}, PLAYER: {"playerToken"}}.get(
            str(contract.auth), {"operatorKey", "playerToken"}
        )
        if schemes != expected:
            gaps.append(f"{name}: security {schemes} is not {expected}")
        for status, response in successes.items():
            for media in resolve(spec, response).get("content", {}).values():
                if "example" not in media and "examples" not in media:
                    gaps.append(f"{name} {status}: no response example")
        body = operation.get("requestBody")
        if body is not None:
            for media in body["content"].values():
                if "example" not in media and "examples" not in media:
                    gaps.append(f"{name}: no request body example")
        if "starting_after" in {p["name"] for p in parameters}:
            if "next_cursor" not in successes["200"]["description"]:
                gaps.append(f"{name}: the cursor contract is not described")
            for wanted in ("limit", "ending_before"):
                if wanted not in {p["name"] for p in parameters}:
                    gaps.append(f"{name}: no {wanted} parameter")
    assert not gaps, "\n".join(gaps)


def test_money_moving_posts_require_an_idempotency_key(spec: dict[str, Any]) -> None:
    def key_parameter(operation: dict[str, Any]) -> dict[str, Any] | None:
        for parameter in operation.get("parameters", []):
            parameter = resolve(spec, parameter)
            if parameter["name"] == "Idempotency-Key":
                return dict(parameter)
        return None

    money_moving = {
        "POST /v1/players/{player_id}/deposits",
        "POST /v1/players/{player_id}/withdrawals",
        "POST /v1/tables/{table_id}/seats",
    }
    for method, path, operation in operations(spec):
        name = f"{method} {path}"
        contract = OPERATIONS.get(name)
        parameter = key_parameter(operation)
        if name in money_moving or (contract and contract.idempotency == REQUIRED):
            assert parameter is not None and parameter.get("required") is True, name
            success = next(r for s, r in operation["responses"].items() if s.startswith("2"))
            assert "Idempotent-Replayed" in resolve(spec, success)["headers"], name
        elif contract and contract.idempotency:
            assert parameter is not None and not parameter.get("required"), name
        else:
            assert parameter is None, name
    action = spec["paths"]["/v1/matches/{match_id}/actions"]["post"]
    assert key_parameter(action) is not None


def test_idempotency_key_is_enforced_where_documented_as_required(
    api: Any, spec: dict[str, Any]
) -> None:
    """Behaviour matches the document: without the key, the operator's money-moving POSTs
    answer 400 ``idempotency_key_required``."""
    player = api.new_player()
    for path in ("/v1/players/{player_id}/deposits", "/v1/players/{player_id}/withdrawals"):
        response = api.post(
            path.format(player_id=player["id"]), {"amount": {"amount": 100, "currency": "EUR"}}
        )
        assert response.status_code == 400, response.get_json()
        assert response.mimetype == PROBLEM_JSON
        assert response.get_json()["code"] == "idempotency_key_required"


def _validator(spec: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A JSON Schema 2020-12 validator resolving #/components/... inside the document."""
    root = {**schema, "components": spec["components"]}
    return jsonschema.Draft202012Validator(root)


def test_every_example_matches_its_schema(spec: dict[str, Any]) -> None:
    checked = 0
    for method, path, operation in operations(spec):
        bodies = [(operation.get("requestBody") or {}).get("content", {})]
        bodies += [resolve(spec, r).get("content", {}) for r in operation["responses"].values()]
        for content in bodies:
            for media_type, media in content.items():
                examples = [media["example"]] if "example" in media else []
                examples += [e["value"] for e in media.get("examples", {}).values()]
                for example in examples:
                    errors = list(_validator(spec, media["schema"]).iter_errors(example))
                    assert not errors, (method, path, media_type, errors[0].message)
                    checked += 1
    assert checked > 100


def test_openapi_and_docs_page_are_served_without_auth(api: Any) -> None:
    response = api.as_(None).get("/openapi.yaml")
    assert response.status_code == 200
    assert yaml.safe_load(response.get_data(as_text=True))["info"]["title"]
    assert api.as_(None).get("/openapi.json").get_json()["openapi"] == "3.1.0"


def test_the_docs_page_and_its_assets_are_served_locally(api: Any) -> None:
    """Swagger UI from the installed flask-swagger-ui package: the page names no http(s)://
    asset, and every script and stylesheet it loads is served here."""
    client = api.as_(None)
    assert client.get("/docs").status_code in (301, 308)  # to /docs/
    page = client.get("/docs/")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "SwaggerUIBundle" in html and '"/openapi.json"' in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html), html
    assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    assert {"/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"} <= set(assets)
    for asset in assets:
        served = client.get(asset)
        try:
            assert served.status_code == 200, asset
            assert len(served.data) > 100, asset
        finally:
            served.close()  # a file response: close it


# The contract states the rules the code enforces.


def _component(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(spec["components"]["schemas"][name])


def _valid(spec: dict[str, Any], name: str, body: Any) -> bool:
    return _validator(spec, {"$ref": f"#/components/schemas/{name}"}).is_valid(body)


TABLES = [
    ({"format": "match_play", "currency": "EUR", "stake": 500}, True),
    ({"format": "match_play", "currency": "EUR"}, False),  # no stake
    ({"format": "first_to_knock", "currency": "EUR", "stake": 0}, False),
    (
        {
            "format": "money_play",
            "currency": "EUR",
            "stake_per_point": 5,
            "min_buyin": 2000,
            "max_buyin": 5000,
            "target": 50,
        },
        True,
    ),
    (
        {
            "format": "money_play",
            "currency": "EUR",
            "stake_per_point": 5,
            "min_buyin": 2000,
            "max_buyin": 5000,
            "target": 75,
        },
        False,
    ),  # Money Play targets 50 or 100
    ({"format": "classic", "currency": "EUR", "stake_per_point": 1, "min_buyin": 100}, False),
    (
        {
            "format": "classic",
            "currency": "EUR",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 100,
            "fee": {"bps": 500},
        },
        True,
    ),  # a fee from the winnings, the base a buy-in table takes by default
    (
        {
            "format": "classic",
            "currency": "EUR",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 100,
            "fee": {"bps": 500, "base": "POT"},
        },
        False,
    ),  # a fee from the pot
    (
        {
            "format": "classic",
            "currency": "EUR",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 100,
            "fee": {"bps": 500, "base": "WINNINGS"},
        },
        True,
    ),
    ({"format": "match_play", "currency": "XPM", "stake": 5}, False),  # play money, real table
    ({"format": "match_play", "currency": "XPM", "stake": 5, "practice": True}, True),
    ({"format": "match_play", "currency": "EUR", "stake": 5, "practice": True}, False),
    (
        {
            "format": "match_play",
            "currency": "EUR",
            "stake": 5,
            "ruleset": {"gin_bonus": 20, "gin.oklahoma": True, "oklahoma.spade_doubles": False},
        },
        True,
    ),
    (
        {
            "format": "match_play",
            "currency": "EUR",
            "stake": 5,
            "ruleset": {"oklahoma.gin_bonus": 20},
        },
        False,
    ),  # not an Appendix A key
    (
        {"format": "match_play", "currency": "EUR", "stake": 5, "ruleset": {"knock_limit": 11}},
        False,
    ),
    ({"format": "match_play", "currency": "EUR", "stake": 5, "ruleset": {"opening": "X"}}, False),
    ({"format": "match_play", "currency": "EUR", "stake": 5, "ruleset": {"hollywood": 1}}, False),
]


@pytest.mark.parametrize(("body", "valid"), TABLES)
def test_a_table_is_valid_in_the_contract_exactly_when_the_service_takes_it(
    api: Any, spec: dict[str, Any], body: dict[str, Any], valid: bool
) -> None:
    assert _valid(spec, "TableIn", body) is valid
    response = api.post("/v1/tables", body)
    assert (response.status_code == 201) is valid, response.get_json()
    if not valid:
        assert response.get_json()["code"] == "validation_failed"


WEBHOOKS = [
    ({"url": "https://ops.example/gin"}, True),
    ({"url": "http://hooks.ops.example:8080/a/b?c=d&e=%41"}, True),
    ({"url": "https://[2606:4700:4700::1111]/hook"}, True),
    ({"url": "https://ops.example/gin", "event_types": ["match.finished"]}, True),
    ({"url": "https://ops.example/gin", "event_types": []}, False),
    ({"url": "https://ops.example/gin", "event_types": [""]}, False),
    ({"url": "ftp://ops.example/gin"}, False),
    ({"url": "https://user@ops.example/gin"}, False),
    ({"url": "https://ops.example/gin#part"}, False),
    ({"url": "https://ops.example:0/gin"}, False),
    ({"url": "https://ops.example:65536/gin"}, False),
    ({"url": "https://ops.example/g in"}, False),
    ({"url": "https://ops.example/caf\u00e9"}, False),
    ({"url": "https://ops.example/%zz"}, False),
    ({"url": "https://ops.example/" + "a" * 2048}, False),
]


@pytest.mark.parametrize(("body", "valid"), WEBHOOKS)
def test_a_webhook_endpoint_is_valid_in_the_contract_exactly_when_the_service_takes_it(
    api: Any, spec: dict[str, Any], body: dict[str, Any], valid: bool
) -> None:
    assert _valid(spec, "WebhookEndpointIn", body) is valid
    response = api.post("/v1/webhook-endpoints", body)
    assert (response.status_code == 201) is valid, response.get_json()


def test_enums_and_formats_are_stated(spec: dict[str, Any]) -> None:
    from service.ledger.money import EXPONENTS
    from service.usecases.webhooks import EVENT_TYPES, URL_PATTERN

    for name in ("WebhookEndpointIn", "WebhookEndpointPatch"):
        properties = _component(spec, name)["properties"]
        assert properties["event_types"]["items"]["enum"] == list(EVENT_TYPES)
        assert properties["event_types"]["minItems"] == 1
        url = properties["url"]
        assert (url["format"], url["pattern"], url["maxLength"]) == ("uri", URL_PATTERN, 2048)
        assert "private" in url["description"]
    for name in ("MoneyIn", "TableIn", "PlayerIn"):
        prop = "display_currency" if name == "PlayerIn" else "currency"
        enum = [c for c in _component(spec, name)["properties"][prop]["enum"] if c]
        assert enum == sorted(EXPONENTS), name
    ruleset = _component(spec, "RulesetIn")
    assert ruleset["additionalProperties"] is False
    assert ruleset["properties"]["opening"]["enum"] == ["PASS_SEQUENCE", "FREE_FIRST_DRAW"]
    assert ruleset["properties"]["gin.big_gin_enabled"]["type"] == "boolean"
    assert ruleset["properties"]["knock_limit"]["maximum"] == 10
    rate = _component(spec, "RateIn")["properties"]["rate"]
    assert rate["not"] == {"pattern": "^[0.]+$"}


def test_descriptions_are_markdown(spec: dict[str, Any]) -> None:
    """Docstrings are reStructuredText; the contract shows Markdown (Swagger UI renders it):
    no ``double backquotes``, no :role:`targets`, no hard-wrapped lines."""
    from service.api.contract import markdown

    text = yaml.safe_dump(spec)
    assert "``" not in text
    assert not re.search(r":(class|func|meth|data|mod|attr|exc):`", text)
    assert markdown(
        "Send ``external_id``; see :class:`~service.games.gin.ruleset.Ruleset`, "
        ":func:`service.usecases.play.act` and :data:`the table <X>`.\n"
        "Next line.\n\nNew paragraph."
    ) == (
        "Send `external_id`; see Ruleset, service.usecases.play.act and the table. "
        "Next line.\n\nNew paragraph."
    )
    token = spec["paths"]["/v1/players/{player_id}/tokens"]["post"]
    assert "`Authorization: Bearer <token>`" in token["description"]
    assert "/v1/tables/{table_id}/seats" in token["description"]
    assert "/v1/matches/{match_id}/actions" in token["description"]


def test_the_document_is_served_compact_compressed_and_cached(api: Any, app: Any) -> None:
    """/docs loads /openapi.json first: it is compact JSON built once, gzip-compressed for
    clients that accept it, with an ETag (a reload is a 304) and a max-age."""
    client = api.as_(None)
    plain = client.get("/openapi.json")
    assert plain.status_code == 200 and plain.mimetype == "application/json"
    assert b"\n" not in plain.data  # no indentation
    assert json.loads(plain.data) == app.extensions["gin"]["api"].spec.to_dict()
    assert len(plain.data) < 450_000  # a budget: 403 KB with tournaments and every game
    zipped = client.get("/openapi.json", headers={"Accept-Encoding": "gzip, br"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.data) == plain.data and len(zipped.data) < 60_000
    assert "Accept-Encoding" in zipped.headers["Vary"]
    assert "max-age=300" in zipped.headers["Cache-Control"]
    again = client.get("/openapi.json", headers={"If-None-Match": plain.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    yaml_doc = client.get("/openapi.yaml", headers={"If-None-Match": "nothing"})
    assert yaml_doc.get_data(as_text=True) == spec_yaml(app)
    assert (
        client.get("/openapi.yaml", headers={"If-None-Match": yaml_doc.headers["ETag"]}).status_code
        == 304
    )
    # Built once: a later request does not build the document again.
    spec = app.extensions["gin"]["api"].spec
    original = spec.to_dict
    spec.to_dict = None  # type: ignore[method-assign]
    try:
        assert client.get("/openapi.json").data == plain.data
    finally:
        spec.to_dict = original  # type: ignore[method-assign]


def test_the_docs_page_assets_are_compressed_and_cached(api: Any) -> None:
    client = api.as_(None)
    script = client.get("/docs/swagger-ui-bundle.js", headers={"Accept-Encoding": "gzip"})
    try:
        assert script.status_code == 200 and script.headers["Content-Encoding"] == "gzip"
        assert len(script.data) < 700_000 < len(gzip.decompress(script.data))
        assert "max-age=300" in script.headers["Cache-Control"]
        etag = script.headers["ETag"]
    finally:
        script.close()
    again = client.get(
        "/docs/swagger-ui-bundle.js", headers={"Accept-Encoding": "gzip", "If-None-Match": etag}
    )
    try:
        assert again.status_code == 304
    finally:
        again.close()
