"""The typed client stays in sync with openapi.yaml: every operation a client method declares
exists in the spec, and the body fields, query parameters and response fields it uses are
the spec's. The client imports no server framework."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.client import Endpoint, operations
from service.client.api import action_body

SPEC = Path(__file__).resolve().parents[2] / "openapi.yaml"


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return dict(yaml.safe_load(SPEC.read_text()))


def resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"][name]
    return schema


def properties(spec: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    schema = resolve(spec, schema)
    found = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        found |= properties(spec, part)
    return found


def spec_operation(spec: dict[str, Any], op: Endpoint) -> dict[str, Any]:
    item = spec["paths"].get(op.path)
    assert item is not None, f"{op.path} is not a path in openapi.yaml"
    found = item.get(op.method.lower())
    assert found is not None, f"{op.method} {op.path} is not an operation in openapi.yaml"
    return dict(found)


def test_the_client_declares_many_operations() -> None:
    declared = {(op.method, op.path) for op in operations().values()}
    assert len(declared) >= 20
    for needed in [
        ("POST", "/v1/players"),
        ("POST", "/v1/players/{player_id}/deposits"),
        ("POST", "/v1/players/{player_id}/withdrawals"),
        ("POST", "/v1/players/{player_id}/tokens"),
        ("POST", "/v1/tables"),
        ("GET", "/v1/tables"),
        ("POST", "/v1/tables/{table_id}/seats"),
        ("DELETE", "/v1/tables/{table_id}/seats/me"),
        ("GET", "/v1/matches/{match_id}"),
        ("POST", "/v1/matches/{match_id}/actions"),
        ("GET", "/v1/matches/{match_id}/hands/{number}"),
        ("GET", "/v1/matches/{match_id}/settlement"),
        ("GET", "/v1/players/{player_id}/entries"),
        ("GET", "/v1/players/{player_id}/wallets/{currency}"),
        ("POST", "/v1/tables/{table_id}/bots"),
        ("GET", "/v1/audit/ledger"),
        ("POST", "/v1/webhook-endpoints/{endpoint_id}/test"),
    ]:
        assert needed in declared, needed


@pytest.mark.parametrize("name", sorted(operations()))
def test_client_method_matches_the_spec(spec: dict[str, Any], name: str) -> None:
    op = operations()[name]
    found = spec_operation(spec, op)
    if op.body:
        body = found.get("requestBody")
        assert body is not None, f"{name}: {op.method} {op.path} takes no body in the spec"
        schema = body["content"]["application/json"]["schema"]
        unknown = op.body - properties(spec, schema)
        assert not unknown, f"{name} sends body fields the spec does not know: {unknown}"
    query = {p["name"] for p in found.get("parameters", []) if p.get("in") == "query"}
    assert op.query <= query, f"{name} sends query parameters not in the spec: {op.query - query}"
    if op.returns is not None:
        ok = [c for c in ("200", "201", "202") if c in found["responses"]]
        assert ok, f"{name}: no success response in the spec"
        content = found["responses"][ok[0]]["content"]["application/json"]
        declared = properties(spec, content["schema"])
        hints = typing.get_type_hints(op.returns)
        assert set(hints) <= declared, (
            f"{name} reads response fields the spec does not have: {set(hints) - declared}"
        )


def test_a_field_missing_from_the_spec_is_caught(spec: dict[str, Any]) -> None:
    """The check above can fail: an operation or a body field unknown to the spec."""
    with pytest.raises(AssertionError, match="not an operation"):
        spec_operation(spec, Endpoint("PUT", "/v1/tables"))
    deposit = spec_operation(spec, Endpoint("POST", "/v1/players/{player_id}/deposits"))
    schema = deposit["requestBody"]["content"]["application/json"]["schema"]
    assert "amount" in properties(spec, schema)
    assert "amount_float" not in properties(spec, schema)


def test_action_text_becomes_the_documented_body() -> None:
    assert action_body("DISCARD TD") == {"action": "DISCARD", "card": "TD"}
    assert action_body("PASS") == {"action": "PASS"}
    assert action_body("KNOCK 9S | AC 2C 3C | 4D 4H 4S") == {
        "action": "KNOCK",
        "card": "9S",
        "melds": [["AC", "2C", "3C"], ["4D", "4H", "4S"]],
    }


def test_the_client_imports_no_server_framework() -> None:
    code = (
        "import sys, service.client, service.client.api\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('flask', 'sqlalchemy', 'celery', 'flask_smorest', 'marshmallow', 'kombu'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
