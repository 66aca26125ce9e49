"""Contract fuzzing: schemathesis drives every operation of the served OpenAPI document against
the app in-process, with generated (valid) and mutated (invalid) inputs, authenticated.

Every answer must be documented: no 5xx, a documented status code and content type, headers
and a body matching the schema, negative data rejected with a 4xx, and every 4xx an RFC 9457
``application/problem+json``. Path parameters are sometimes the ids of real objects (a funded
player, a table with a live match, a webhook endpoint), so the happy paths are fuzzed too, not
only the 404s.

Then positive data alone, for the operations that create things: a body the document calls
valid is not refused as invalid (no 400, no 422 ``validation_failed``), so a client generated
from the document sends what the service takes.

Bounded for CI: ``CONTRACT_MAX_EXAMPLES`` generated cases per operation and mode (default 25;
``CONTRACT_POSITIVE_EXAMPLES`` for the positive run) on top of the schema examples and
schemathesis' coverage cases; derandomized, so a run is repeatable. Several thousand requests
per run: the run tallies them over its test processes and checks the figures at its end
(tests/contract/tally.py).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service.api.contract import OPERATIONS, PLAYER, operation_key
from service.outbound.targets import refusal
from tests.conftest import ApiClient, new_operator
from tests.contract.tally import CREATED, FUZZED

MAX_EXAMPLES = int(os.environ.get("CONTRACT_MAX_EXAMPLES", "25"))
PROBLEM_JSON = "application/problem+json"

#: Real ids the fuzzer may put in a path (filled by the ``world`` fixture).
REAL: dict[str, str] = {}
MIN_REQUESTS = int(os.environ.get("CONTRACT_MIN_REQUESTS", "2000"))


@schemathesis.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> Any:
    """Half the time, the path names objects that exist."""
    if not path_parameters:
        return st.just(path_parameters)
    return st.booleans().map(
        lambda real: {
            name: REAL.get(name, value) if real else value
            for name, value in path_parameters.items()
        }
    )


@schemathesis.hook
def map_query(context: Any, query: dict[str, Any] | None) -> dict[str, Any] | None:
    """A valid long-poll ``timeout`` is made 0: the waiting itself is tested elsewhere
    (tests/api/test_play.py), and the fuzzing must not sleep."""
    if query and type(query.get("timeout")) is int and 0 <= query["timeout"] <= 30:
        query = {**query, "timeout": 0}
    return query


@schemathesis.check
def errors_are_problem_details(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx and 5xx is application/problem+json with the RFC 9457 members."""
    if response.status_code < 400:
        return None
    values = [v for k, v in response.headers.items() if k.lower() == "content-type"] or [""]
    content_type = values[0][0] if isinstance(values[0], list) else values[0]
    assert content_type.split(";")[0].strip() == PROBLEM_JSON, (
        f"{response.status_code} answered as {content_type!r}"
    )
    body = response.json()
    for member in ("type", "title", "status", "detail", "code"):
        assert member in body, f"problem without {member!r}: {body}"
    assert body["status"] == response.status_code
    return None


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    errors_are_problem_details,
]


@pytest.fixture(scope="session")
def world(app: Any) -> Iterator[dict[str, str]]:
    """An operator with a funded player, a live match between two players, an endpoint."""
    _, key = new_operator(app, "Contract fuzzing")
    api = ApiClient(app.test_client(), key)

    def player_token(player_id: str) -> str:
        response = api.post(f"/v1/players/{player_id}/tokens", {"ttl_seconds": 3600})
        assert response.status_code == 201, response.get_json()
        return str(response.get_json()["token"])

    seated = []
    for _ in range(2):
        player = api.new_player()
        assert api.deposit(player["id"], 100_000).status_code == 201
        seated.append((player["id"], player_token(player["id"])))
    table = api.post("/v1/tables", {"format": "match_play", "currency": "EUR", "stake": 500})
    assert table.status_code == 201, table.get_json()
    table_id = table.get_json()["id"]
    for _, token in seated:
        joined = api.as_(token).post(f"/v1/tables/{table_id}/seats", {}, key=secrets.token_hex(8))
        assert joined.status_code == 201, joined.get_json()
    endpoint = api.post("/v1/webhook-endpoints", {"url": "https://receiver.example/hook"})
    assert endpoint.status_code == 201, endpoint.get_json()
    REAL.update(
        player_id=seated[0][0],
        table_id=table_id,
        match_id=table.get_json()["match_id"],
        endpoint_id=endpoint.get_json()["id"],
        currency="EUR",
        base="EUR",
        quote="USD",
    )
    yield {"operator": key, "player": seated[0][1]}
    REAL.clear()


def _document_app() -> Any:
    """An app to read the document from at collection time (no database is touched)."""
    from service import create_app

    return create_app({"DATABASE_URL": "sqlite://", "BROKER_URL": "memory://"})


schema = schemathesis.openapi.from_wsgi("/openapi.json", _document_app())
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=MAX_EXAMPLES,
    deterministic=True,
    allow_x00=False,
    database="none",
    # The test sends the credentials itself: a case generated without them (or with a
    # mutated ``Authorization``) would be answered as if its credentials were valid, and
    # read as negative data accepted. Missing and wrong credentials are tested on their own
    # (tests/api/test_auth_and_errors.py).
    with_security_parameters=False,
)


@pytest.fixture(scope="session")
def fuzzed_app(app: Any, world: dict[str, str]) -> Any:
    """The requests go to the test run's app (its database: SQLite or PostgreSQL)."""
    return app


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_honours_the_contract(
    case: Any, fuzzed_app: Any, world: dict[str, str], record_property: Any
) -> None:
    contract = OPERATIONS.get(operation_key(case.method, case.path))
    who = "player" if contract is not None and contract.auth == PLAYER else "operator"
    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {world[who]}"}, checks=CHECKS, app=fuzzed_app
    )
    # Tallied by the run, over every test process (tests/contract/tally.py).
    operation = operation_key(case.operation.method, case.operation.path)
    record_property(FUZZED, (operation, response.status_code))


def documented_operations() -> set[str]:
    return {
        operation_key(result.ok().method, result.ok().path)
        for result in schema.get_all_operations()
    }


# Positive data: what the contract calls valid, the service takes. For the operations that
# create things, every generated body that matches the document must pass validation: no 400,
# no 422 ``validation_failed`` (a business refusal such as ``insufficient_funds`` is an answer
# about the world, not about the request, and stays allowed).
CREATING = [
    "createApiKey",
    "createPlayer",
    "createPlayerToken",
    "createDeposit",
    "createWithdrawal",
    "createTable",
    "createWebhookEndpoint",
    "setExchangeRate",
]
POSITIVE_EXAMPLES = int(os.environ.get("CONTRACT_POSITIVE_EXAMPLES", "25"))

creating = schemathesis.openapi.from_wsgi("/openapi.json", _document_app()).include(
    operation_id=CREATING
)
creating.config.generation.update(
    modes=[GenerationMode.POSITIVE],
    max_examples=POSITIVE_EXAMPLES,
    deterministic=True,
    allow_x00=False,
    database="none",
)


def _integers_as_written(value: Any) -> Any:
    """JSON Schema 2020-12 counts ``2.0`` as an integer; the API reads an integer as written
    (the contract says so of every integer field): whole floats are sent as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integers_as_written(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integers_as_written(v) for v in value]
    return value


#: The player the positive fuzzing creates tokens and deposits for (``creating_world``).
CREATING_REAL: dict[str, str] = {}


@creating.hook
def map_case(context: Any, case: Any) -> Any:
    case.body = _integers_as_written(case.body)
    if case.path_parameters and "player_id" in case.path_parameters and CREATING_REAL:
        case.path_parameters = {**case.path_parameters, **CREATING_REAL}
    return case


@creating.hook
def filter_case(context: Any, case: Any) -> bool:
    """Leave out the bodies that break a rule between values, which JSON Schema cannot state
    and the contract states in words: a buy-in range and a fee range the right way round (and
    a per-hand table's minimum balance within its buy-ins), a
    rate between two different currencies, and a webhook URL that is not private (judged by
    the service's own rule, ``service.outbound.targets``)."""
    body = case.body if isinstance(case.body, dict) else {}
    if body.get("max_buyin", 0) < body.get("min_buyin", 0):
        return False
    if body.get("format") == "rummy_per_hand":
        floor = body.get("min_balance") or body.get("stake_per_point", 0) * 10
        if floor > body.get("max_buyin", 0):
            return False
    fee = body.get("fee") if isinstance(body.get("fee"), dict) else {}
    if fee.get("maximum") is not None and fee["maximum"] < fee.get("minimum", 0):
        return False
    parameters = case.path_parameters or {}
    if "base" in parameters and parameters.get("base") == parameters.get("quote"):
        return False
    if isinstance(body.get("url"), str):
        host = urlsplit(body["url"]).hostname or ""
        return refusal(host) is None
    return True


@pytest.fixture(scope="session")
def creating_world(app: Any) -> Iterator[str]:
    """An operator of its own (the contract fuzzing changes its world's limits and
    exclusions), with a player: the key to call with."""
    _, key = new_operator(app, "Positive fuzzing")
    CREATING_REAL["player_id"] = ApiClient(app.test_client(), key).new_player()["id"]
    yield key
    CREATING_REAL.clear()


@creating.parametrize()
@settings(
    max_examples=POSITIVE_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_valid_bodies_of_creating_operations_are_accepted(
    case: Any, app: Any, creating_world: str, record_property: Any
) -> None:
    response = case.call(headers={"Authorization": f"Bearer {creating_world}"}, app=app)
    problem = response.json() if response.status_code >= 400 else {}
    assert response.status_code != 400 and problem.get("code") != "validation_failed", (
        f"{case.operation.label}: valid data refused: {response.status_code} {problem}\n"
        f"body: {case.body!r}\nquery: {case.query!r}\nheaders: {case.headers!r}"
    )
    # Tallied by the run, over every test process (tests/contract/tally.py).
    operation_id = case.operation.definition.raw["operationId"]
    record_property(CREATED, (operation_id, response.status_code))
