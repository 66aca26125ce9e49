"""The edges of HTTP the service answers itself, as problems: problem types that point at
pages served here, paths, queries and headers longer than it reads, idempotency keys longer
than their rule, and cursors that name nothing, each named in ``errors``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
import yaml

from service.config import MAX_HEADER_FIELD_BYTES, MAX_HEADER_FIELDS, MAX_REQUEST_TARGET_BYTES
from service.errors import problem_classes
from tests.conftest import ApiClient, assert_problem

SPEC = Path(__file__).resolve().parents[2] / "openapi.yaml"
METHODS = ("get", "put", "post", "patch", "delete")


def fields(problem: dict[str, Any]) -> list[str]:
    return [e["field"] for e in problem.get("errors", [])]


# --- Problem types are pages of this service ---------------------------------------------------


def test_a_problem_type_resolves_to_a_page_saying_what_the_code_means(api: ApiClient) -> None:
    response = api.get("/v1/players/ply_nope")
    body = assert_problem(response, 404, "not_found")
    # A relative reference (RFC 9457 3.1.1), resolved against the request's URI.
    page_url = urljoin("http://api.example/v1/players/ply_nope", body["type"])
    assert page_url == "http://api.example/problems/not_found"
    page = api.as_(None).get(body["type"])
    assert page.status_code == 200 and page.mimetype == "text/html"
    text = page.get_data(as_text=True)
    assert "<code>not_found</code>" in text and "404" in text and "does not exist" in text


@pytest.mark.parametrize("code", sorted(problem_classes()))
def test_every_problem_code_has_its_page(api: ApiClient, code: str) -> None:
    page = api.as_(None).get(f"/problems/{code}")
    assert page.status_code == 200, code
    assert f"<code>{code}</code>" in page.get_data(as_text=True)


def test_an_unknown_code_has_no_page(api: ApiClient) -> None:
    assert_problem(api.as_(None).get("/problems/no_such_code"), 404, "not_found")


def test_framework_refusals_carry_codes_with_pages(api: ApiClient) -> None:
    """Werkzeug's own refusals (no route, a method the path does not take) are the service's
    problems, with types that resolve, as every other problem's."""
    for response, status, code in (
        (api.get("/v1/nothing-here"), 404, "not_found"),
        (api.put("/v1/players", {}), 405, "method_not_allowed"),
    ):
        body = assert_problem(response, status, code)
        assert api.as_(None).get(body["type"]).status_code == 200


# --- Longer than the service reads: problems, not the HTTP server's pages ---------------------


def test_a_path_longer_than_read_is_414(api: ApiClient) -> None:
    problem = assert_problem(
        api.get("/v1/players/" + "p" * MAX_REQUEST_TARGET_BYTES), 414, "uri_too_long"
    )
    assert str(MAX_REQUEST_TARGET_BYTES) in problem["detail"]


def test_a_cursor_longer_than_read_is_414(api: ApiClient) -> None:
    long_cursor = "ply_" + "x" * MAX_REQUEST_TARGET_BYTES
    assert_problem(api.get(f"/v1/players?starting_after={long_cursor}"), 414, "uri_too_long")


def test_a_header_longer_than_read_is_431_naming_it(api: ApiClient) -> None:
    problem = assert_problem(
        api.get("/v1/players", headers={"X-Trace": "t" * MAX_HEADER_FIELD_BYTES}),
        431,
        "header_fields_too_large",
    )
    assert fields(problem) == ["X-Trace"]


def test_more_header_fields_than_read_is_431(api: ApiClient) -> None:
    headers = {f"X-Extra-{i}": "1" for i in range(MAX_HEADER_FIELDS)}
    assert_problem(api.get("/v1/players", headers=headers), 431, "header_fields_too_large")


def test_headers_within_the_limits_are_read(api: ApiClient) -> None:
    headers = {f"X-Extra-{i}": "1" for i in range(MAX_HEADER_FIELDS // 2)}
    headers["X-Trace"] = "t" * (MAX_HEADER_FIELD_BYTES // 2)
    assert api.get("/v1/players", headers=headers).status_code == 200


@pytest.mark.parametrize("key", ["k" * 256, "k" * 10_000, "tab\tkey"])
def test_an_idempotency_key_breaking_its_rule_is_400_naming_the_header(
    api: ApiClient, key: str
) -> None:
    pid = api.new_player()["id"]
    problem = assert_problem(api.deposit(pid, 100, key=key), 400, "malformed_request")
    assert fields(problem) == ["Idempotency-Key"]
    assert "1 to 255 printable characters" in problem["errors"][0]["message"]


# --- Cursors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cursor", ["starting_after", "ending_before"])
def test_an_invalid_cursor_names_its_parameter(api: ApiClient, cursor: str) -> None:
    problem = assert_problem(api.get(f"/v1/players?{cursor}=ply_nope"), 400, "invalid_cursor")
    assert fields(problem) == [cursor]


def test_two_cursors_at_once_name_both(api: ApiClient) -> None:
    problem = assert_problem(
        api.get("/v1/players?starting_after=a&ending_before=b"), 422, "validation_failed"
    )
    assert fields(problem) == ["starting_after", "ending_before"]


# --- OPTIONS -------------------------------------------------------------------------------------


def _paths_and_methods() -> list[tuple[str, set[str]]]:
    """Every path of openapi.yaml with its parameters filled ("1" routes for any of them),
    and the methods it documents."""
    spec = yaml.safe_load(SPEC.read_text())
    return [
        (re.sub(r"\{[^}]+\}", "1", path), {m.upper() for m in item if m in METHODS})
        for path, item in spec["paths"].items()
    ]


@pytest.mark.parametrize(("path", "methods"), _paths_and_methods())
def test_options_answers_204_allowing_the_paths_methods(
    api: ApiClient, path: str, methods: set[str]
) -> None:
    """Before: a 400 on paths whose POST or PUT takes a body (the body rule was applied to
    OPTIONS too), and a 401 without credentials (a CORS preflight sends none)."""
    expected = methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
    for client in (api, api.as_(None)):
        response = client.request("OPTIONS", path)
        assert response.status_code == 204, (path, response.get_data(as_text=True))
        allowed = {m.strip() for m in response.headers["Allow"].split(",")}
        assert allowed == expected, path
        assert response.get_data() == b""
        assert response.headers.get("X-Request-Id")


def test_options_on_an_unknown_path_is_404(api: ApiClient) -> None:
    for path in ("/v1/nothing-here", "/v1/players/1/nothing"):
        response = api.request("OPTIONS", path)
        assert_problem(response, 404, "not_found")
