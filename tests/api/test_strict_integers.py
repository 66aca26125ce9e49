"""Every integer a request carries is a JSON integer within a stated range: a number with a
fraction or an exponent, a string or a boolean is a 422 naming the field, and so is a value
above the field's maximum (never more than 2^53 - 1); the contract says ``type: integer``
with ``minimum`` and ``maximum`` for each of them."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from marshmallow import Schema, fields

from service.api import spec_yaml
from service.api.schemas import MAX_INTEGER, StrictInteger
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient

PROBLEM_JSON = "application/problem+json"
#: JSON texts that are not an integer in range, as they would be written on the wire.
NOT_INTEGERS = ['"1"', "2.0", "1e308", "1E2", str(2**64), str(MAX_INTEGER + 1), "true", "-1"]


def send(client: ApiClient, path: str, text: str, **headers: str) -> Any:
    """POST a raw JSON text (so ``1e308`` and ``2.0`` reach the service as written)."""
    sent = {"Content-Type": "application/json", **headers}
    if client.token:
        sent["Authorization"] = f"Bearer {client.token}"
    return client.client.post(path, data=text, headers=sent)


def refused(response: Any, field: str) -> None:
    assert response.status_code == 422, (response.status_code, response.get_json())
    assert response.mimetype == PROBLEM_JSON
    problem = response.get_json()
    assert problem["code"] == "validation_failed", problem
    assert field in {e["field"] for e in problem["errors"]}, problem


@pytest.fixture
def live_match(api: ApiClient) -> tuple[ApiClient, str, int]:
    """The player to act in a live match, the match id and its version."""
    table = open_table(api)
    clients = [player_client(api), player_client(api)]
    for client in clients:
        assert join(client, table["id"]).status_code == 201
    match_id = table["match_id"]
    for client in clients:
        view = client.get(f"/v1/matches/{match_id}").get_json()
        if view["hand"]["to_act"] == view["you"]:
            return client, match_id, int(view["version"])
    raise AssertionError("nobody to act")


@pytest.mark.parametrize("text", NOT_INTEGERS)
def test_expected_version_is_an_integer_in_range(
    live_match: tuple[ApiClient, str, int], text: str
) -> None:
    client, match_id, version = live_match
    response = send(
        client,
        f"/v1/matches/{match_id}/actions",
        f'{{"action": "PASS", "expected_version": {text}}}',
    )
    refused(response, "expected_version")
    assert client.get(f"/v1/matches/{match_id}").get_json()["version"] == version


def test_expected_version_at_its_maximum_is_only_stale(
    live_match: tuple[ApiClient, str, int],
) -> None:
    client, match_id, _ = live_match
    response = send(
        client,
        f"/v1/matches/{match_id}/actions",
        f'{{"action": "PASS", "expected_version": {MAX_INTEGER}}}',
    )
    assert response.status_code == 409 and response.get_json()["code"] == "stale_version"


@pytest.mark.parametrize("header", ['"99999999999999999999"', '"\u00b2"', f'"{MAX_INTEGER + 1}"'])
def test_if_match_is_a_version_in_range(
    live_match: tuple[ApiClient, str, int], header: str
) -> None:
    client, match_id, _ = live_match
    response = send(
        client, f"/v1/matches/{match_id}/actions", '{"action": "PASS"}', **{"If-Match": header}
    )
    refused(response, "If-Match")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/players/{player}/tokens", '{{"ttl_seconds": {value}}}', "ttl_seconds"),
        ("/v1/tables", '{{"format": "match_play", "currency": "EUR", "stake": {value}}}', "stake"),
        (
            "/v1/tables",
            '{{"format": "match_play", "currency": "EUR", "stake": 500, '
            '"clock": {{"turn_seconds": {value}}}}}',
            "clock.turn_seconds",
        ),
        (
            "/v1/tables",
            '{{"format": "match_play", "currency": "EUR", "stake": 500, '
            '"fee": {{"bps": {value}}}}}',
            "fee.bps",
        ),
        (
            "/v1/webhook-endpoints/{endpoint}/rotate-secret",
            '{{"grace_period_seconds": {value}}}',
            "grace_period_seconds",
        ),
    ],
)
@pytest.mark.parametrize("value", ["2.0", "1e308", '"1"', "true", str(2**64)])
def test_body_integers_are_strict(
    api: ApiClient, path: str, body: str, field: str, value: str
) -> None:
    player = api.new_player()
    endpoint = api.post("/v1/webhook-endpoints", {"url": "https://receiver.example/hook"})
    assert endpoint.status_code == 201, endpoint.get_json()
    target = path.format(player=player["id"], endpoint=endpoint.get_json()["id"])
    refused(send(api, target, body.format(value=value)), field)


@pytest.mark.parametrize("value", ["1.0", "1e1", "+5", " 5", "\u0665", "1_0", str(2**64), "0"])
def test_query_integers_are_plain_digits_in_range(api: ApiClient, value: str) -> None:
    refused(api.get("/v1/players", query_string={"limit": value}), "limit")
    if value != "0":
        refused(api.get("/v1/tables", query_string={"min_stake": value}), "min_stake")


def _request_schemas() -> Iterator[type[Schema]]:
    from service.api import (
        audit,
        bots,
        matches,
        operators,
        ops,
        play_schemas,
        players,
        rates,
        schemas,
        settlements,
        tables,
        wallets,
        webhook_schemas,
        webhooks,
    )

    modules = (
        audit,
        bots,
        matches,
        operators,
        ops,
        play_schemas,
        players,
        rates,
        schemas,
        settlements,
        tables,
        wallets,
        webhook_schemas,
        webhooks,
    )
    for module in modules:
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, Schema) and value.__name__.endswith(("In", "Patch", "Query")):
                yield value


def _integer_fields(schema: Schema, prefix: str = "") -> Iterator[tuple[str, fields.Field]]:
    for name, field in schema.fields.items():
        while isinstance(field, fields.List):
            field = field.inner
        if isinstance(field, fields.Nested):
            yield from _integer_fields(field.schema, f"{prefix}{name}.")
        elif isinstance(field, fields.Number):
            yield f"{prefix}{name}", field


def test_every_request_integer_is_the_strict_bounded_field() -> None:
    checked = []
    for schema in _request_schemas():
        for name, field in _integer_fields(schema()):
            assert isinstance(field, StrictInteger), f"{schema.__name__}.{name}"
            checked.append(f"{schema.__name__}.{name}")
    assert "ActionIn.expected_version" in checked and "ListQuery.limit" in checked
    assert len(checked) > 25


def _request_properties(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    components = spec["components"]["schemas"]

    def walk(where: str, node: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        if isinstance(node, dict):
            if "integer" in (
                node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
            ):
                yield where, node
            for key, value in node.items():
                yield from walk(f"{where}.{key}", value)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(f"{where}[{i}]", value)

    for name, schema in components.items():
        if name.endswith(("In", "Patch")):
            yield from walk(name, schema)
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            for parameter in operation.get("parameters", []):
                if isinstance(parameter, dict) and parameter.get("in") == "query":
                    yield from walk(f"{method} {path} {parameter['name']}", parameter["schema"])


def test_the_contract_bounds_every_request_integer(app: Any) -> None:
    spec = yaml.safe_load(spec_yaml(app))
    seen = dict(_request_properties(spec))
    for where, node in seen.items():
        assert "minimum" in node and "maximum" in node, where
        assert node["maximum"] <= MAX_INTEGER, where
    names = " ".join(seen)
    assert "ActionIn.properties.expected_version" in names
    assert "limit" in names and "wait_for_version" in names
