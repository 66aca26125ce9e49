"""Request bodies, read in one place for every operation (``service.api.context``): JSON of
the declared media type, present where required, no longer than ``MAX_CONTENT_LENGTH``, no
key twice in one object, and text that is text (no lone surrogates, no NUL), each refusal a
problem naming the place, before any use case runs."""

from __future__ import annotations

import io
import re
import secrets
from typing import Any

import pytest

from service.api.context import JSON_BODIES
from service.config import DEFAULT_MAX_CONTENT_LENGTH, ConfigError, Settings
from tests.api.play_clients import open_table, player_client
from tests.conftest import ApiClient, assert_problem

JSON = "application/json"


def send(
    api: ApiClient,
    method: str,
    path: str,
    body: str | bytes | None,
    content_type: str | None = JSON,
    **headers: str,
) -> Any:
    """``body`` exactly as given (the test client's ``json=`` could not send a repeated key
    or a lone surrogate)."""
    if content_type is not None:
        headers["Content-Type"] = content_type
    return api.request(method, path, data=body, headers=headers)


def fields(problem: dict[str, Any]) -> list[str]:
    return [e["field"] for e in problem.get("errors", [])]


def available(api: ApiClient, pid: str) -> int:
    return int(api.get(f"/v1/players/{pid}/wallets/EUR").get_json()["available"]["amount"])


# --- Lone surrogates and NUL characters ----------------------------------------------------------

LONE = "a\\ud800b"  # as JSON text: the escape of half a surrogate pair


@pytest.mark.parametrize("kind", ["deposits", "withdrawals"])
def test_a_lone_surrogate_in_a_reference_is_422_naming_it(api: ApiClient, kind: str) -> None:
    pid = api.new_player()["id"]
    api.deposit(pid, 1000)
    body = f'{{"amount": {{"amount": 100, "currency": "EUR"}}, "external_reference": "{LONE}"}}'
    response = send(
        api, "POST", f"/v1/players/{pid}/{kind}", body, **{"Idempotency-Key": secrets.token_hex(6)}
    )
    problem = assert_problem(response, 422, "validation_failed")
    assert fields(problem) == ["external_reference"]
    assert available(api, pid) == 1000


def test_a_lone_surrogate_anywhere_is_422_naming_its_place(api: ApiClient) -> None:
    table = send(
        api,
        "POST",
        "/v1/tables",
        f'{{"format": "match_play", "currency": "EUR", "stake": 100, "name": "{LONE}"}}',
    )
    assert fields(assert_problem(table, 422, "validation_failed")) == ["name"]
    endpoint = send(
        api,
        "POST",
        "/v1/webhook-endpoints",
        f'{{"url": "https://ops.example/hook", "description": "{LONE}"}}',
    )
    assert fields(assert_problem(endpoint, 422, "validation_failed")) == ["description"]
    created = api.post("/v1/webhook-endpoints", {"url": "https://ops.example/hook"}).get_json()
    patched = send(
        api, "PATCH", f"/v1/webhook-endpoints/{created['id']}", '{"description": "\\udc00"}'
    )
    assert fields(assert_problem(patched, 422, "validation_failed")) == ["description"]
    nested = send(
        api,
        "POST",
        "/v1/webhook-endpoints",
        f'{{"url": "https://ops.example/hook", "event_types": ["x", "{LONE}"]}}',
    )
    assert fields(assert_problem(nested, 422, "validation_failed")) == ["event_types.1"]
    key = send(
        api, "POST", "/v1/players", '{"external_id": "e", "display_name": "N", "\\ud800": 1}'
    )
    assert fields(assert_problem(key, 422, "validation_failed")) == ["\ufffd"]


def test_surrogate_pairs_and_escaped_backslashes_are_text(api: ApiClient) -> None:
    response = send(
        api,
        "POST",
        "/v1/players",
        '{"external_id": "pair-\\ud83d\\ude00", "display_name": "\\\\ud800"}',
    )
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["external_id"] == "pair-\U0001f600"
    assert response.get_json()["display_name"] == "\\ud800"


def test_surrogates_encoded_in_the_bytes_are_not_utf8_400(api: ApiClient) -> None:
    body = '{"external_id": "x", "display_name": "a\udcedb"}'.encode("utf-8", "surrogatepass")
    assert_problem(send(api, "POST", "/v1/players", body), 400, "malformed_request")


def test_queries_paths_and_headers_cannot_carry_surrogates(api: ApiClient) -> None:
    """Percent-encoded surrogates are not UTF-8, and are read as replacement characters;
    header values are Latin-1: none of them reaches a use case as a lone surrogate."""
    assert_problem(api.get("/v1/players?starting_after=%ED%A0%80"), 400, "invalid_cursor")
    assert_problem(api.get("/v1/transactions/%ED%A0%80"), 404, "not_found")
    assert api.get("/v1/players", headers={"X-Request-Id": "r\xed\xa0\x80"}).status_code == 200


# --- Keys twice in one object -------------------------------------------------------------------


def test_a_repeated_key_is_400_and_nothing_is_deposited(api: ApiClient) -> None:
    """Before: the last one won, and this deposited 3."""
    pid = api.new_player()["id"]
    body = (
        '{"amount": {"amount": 5000000, "currency": "EUR"}, '
        '"amount": {"amount": 3, "currency": "EUR"}}'
    )
    response = send(
        api, "POST", f"/v1/players/{pid}/deposits", body, **{"Idempotency-Key": "twice"}
    )
    assert fields(assert_problem(response, 400, "malformed_request")) == ["amount"]
    assert available(api, pid) == 0
    assert api.deposit(pid, 3, key="twice").status_code == 201  # the key was not used up


def test_a_repeated_key_at_any_depth_is_400_naming_it(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    body = '{"amount": {"amount": 5, "currency": "EUR", "amount": 7}}'
    response = send(api, "POST", f"/v1/players/{pid}/deposits", body, **{"Idempotency-Key": "deep"})
    assert fields(assert_problem(response, 400, "malformed_request")) == ["amount.amount"]


# --- Declared bodies: required, and application/json --------------------------------------------


def player_path(api: ApiClient) -> str:
    return f"/v1/players/{api.new_player()['id']}"


@pytest.mark.parametrize(
    "method, path",
    [
        ("POST", "{player}/tokens"),
        ("PUT", "{player}/deposit-limits/EUR"),
        ("PATCH", "{player}"),
        ("PATCH", "{endpoint}"),
        ("POST", "{endpoint}/rotate-secret"),
    ],
)
def test_a_required_body_that_is_missing_is_400(api: ApiClient, method: str, path: str) -> None:
    """Before: each of these answered 2xx, as if an empty object had been sent."""
    endpoint = api.post("/v1/webhook-endpoints", {"url": "https://ops.example/h"}).get_json()
    url = path.format(player=player_path(api), endpoint=f"/v1/webhook-endpoints/{endpoint['id']}")
    for content_type in (None, JSON):
        problem = assert_problem(
            send(api, method, url, None, content_type), 400, "malformed_request"
        )
        assert fields(problem) == ["(body)"]


@pytest.mark.parametrize(
    "body, content_type",
    [
        ('{"buyin": 500}', "text/plain"),
        ('{"buyin": 500}', None),
        ("buyin=500", "application/x-www-form-urlencoded"),
        ('{"buyin": 500}', "application/json; charset=latin-1"),
    ],
)
def test_a_seat_with_another_media_type_is_415_and_holds_nothing(
    api: ApiClient, body: str, content_type: str | None
) -> None:
    """Before: the body was taken for none at all, and the player sat down, the stake held."""
    table = open_table(api)
    player = player_client(api, deposit=1000)
    response = send(
        player,
        "POST",
        f"/v1/tables/{table['id']}/seats",
        body,
        content_type,
        **{"Idempotency-Key": "seat"},
    )
    assert_problem(response, 415, "unsupported_media_type")
    assert api.get(f"/v1/tables/{table['id']}").get_json()["seats"] == []
    assert available(api, player.player_id) == 1000  # type: ignore[attr-defined]
    seated = send(
        player, "POST", f"/v1/tables/{table['id']}/seats", "{}", **{"Idempotency-Key": "seat"}
    )  # the key was not used up
    assert seated.status_code == 201, seated.get_json()


def test_every_operation_that_reads_a_body_refuses_other_media_types(
    app: Any, api: ApiClient
) -> None:
    """One rule for all: each operation that declares a JSON body (in openapi.yaml) answers
    415 to a text/plain one, and 400 to none when the body is required, before it looks at
    the path's resources or the caller's rights."""
    declared = app.extensions["gin"][JSON_BODIES]
    assert len(declared) >= 15
    paths = {rule.endpoint: rule.rule for rule in app.url_map.iter_rules()}
    for (endpoint, method), required in sorted(declared.items()):
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", "x1", paths[endpoint])
        wrong = send(api, method, path, '{"a": 1}', "text/plain", **{"Idempotency-Key": "m"})
        assert wrong.status_code == 415, (method, path, wrong.get_json())
        missing = send(api, method, path, None, None, **{"Idempotency-Key": "m"})
        if required:
            assert missing.status_code == 400, (method, path, missing.get_json())
            assert missing.get_json()["code"] == "malformed_request"
        else:
            assert missing.status_code != 400, (method, path, missing.get_json())


def test_an_optional_body_may_be_absent_but_not_of_another_type(api: ApiClient) -> None:
    assert api.request("POST", "/v1/api-keys").status_code == 201
    assert_problem(
        send(api, "POST", "/v1/api-keys", "label=x", "text/plain"), 415, "unsupported_media_type"
    )


def test_operations_without_a_body_ignore_one(api: ApiClient) -> None:
    player = api.new_player()
    response = send(api, "GET", f"/v1/players/{player['id']}", "not json", "text/plain")
    assert response.status_code == 200


# --- Size ---------------------------------------------------------------------------------------


class Unreadable(io.RawIOBase):
    """A request body that must not be read."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise AssertionError("the body was read")


def test_a_body_longer_than_the_limit_is_413_unread(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    response = api.client.post(
        f"/v1/players/{pid}/deposits",
        content_type=JSON,
        headers={"Authorization": f"Bearer {api.token}", "Idempotency-Key": "big"},
        environ_overrides={"wsgi.input": Unreadable(), "CONTENT_LENGTH": str(10 * 1024 * 1024)},
    )
    problem = assert_problem(response, 413, "content_too_large")
    assert str(DEFAULT_MAX_CONTENT_LENGTH) in problem["detail"]


def test_a_chunked_body_longer_than_the_limit_is_413(api: ApiClient) -> None:
    """No Content-Length (chunked, the server ends the stream): read up to the limit only."""
    pid = api.new_player()["id"]
    big = b'{"external_reference": "' + b"r" * (DEFAULT_MAX_CONTENT_LENGTH + 10) + b'"}'
    response = api.client.post(
        f"/v1/players/{pid}/deposits",
        input_stream=io.BytesIO(big),
        content_type=JSON,
        headers={
            "Authorization": f"Bearer {api.token}",
            "Idempotency-Key": "chunks",
            "Transfer-Encoding": "chunked",
        },
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert_problem(response, 413, "content_too_large")


def test_a_body_within_the_limit_is_read(api: ApiClient) -> None:
    pid = api.new_player()["id"]
    reference = "r" * 200
    body = (
        '{"amount": {"amount": 5, "currency": "EUR"}, "external_reference": "'
        + reference
        + '", "padding": "'
        + " " * (DEFAULT_MAX_CONTENT_LENGTH // 2)
        + '"}'
    )
    response = send(api, "POST", f"/v1/players/{pid}/deposits", body, **{"Idempotency-Key": "fits"})
    assert response.status_code == 422  # read and validated: "padding" is no field
    assert fields(response.get_json()) == ["padding"]


def test_the_limit_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().max_content_length == DEFAULT_MAX_CONTENT_LENGTH == 65536
    monkeypatch.setenv("MAX_CONTENT_LENGTH", "1048576")
    assert Settings.from_env().as_flask_config()["MAX_CONTENT_LENGTH"] == 1048576
    monkeypatch.setenv("MAX_CONTENT_LENGTH", "0")
    with pytest.raises(ConfigError):
        Settings.from_env()
