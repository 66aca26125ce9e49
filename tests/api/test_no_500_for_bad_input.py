"""No input, however odd, gets a 500: every answer to junk is a 4xx problem+json."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ApiClient

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
money_like = st.fixed_dictionaries(
    {"amount": json_values | st.integers(-10, 10**20), "currency": json_values | st.just("EUR")}
)
bodies = (
    json_values
    | st.fixed_dictionaries({"amount": money_like})
    | st.fixed_dictionaries(
        {
            "daily": money_like | st.none(),
            "until": json_values | st.just("2099-01-01T00:00:00Z"),
            "rate": json_values,
            "external_id": json_values,
            "display_name": json_values,
        }
    )
)
TARGETS = [
    ("POST", "/v1/players/{pid}/deposits"),
    ("POST", "/v1/players/{pid}/withdrawals"),
    ("POST", "/v1/players"),
    ("PATCH", "/v1/players/{pid}"),
    ("POST", "/v1/players/{pid}/tokens"),
    ("PUT", "/v1/players/{pid}/self-exclusion"),
    ("PUT", "/v1/players/{pid}/deposit-limits/EUR"),
    ("PUT", "/v1/exchange-rates/EUR/USD"),
    ("POST", "/v1/api-keys"),
]


@pytest.fixture(scope="module")
def fuzz_client(app: Any) -> tuple[ApiClient, str]:
    from tests.conftest import new_operator

    _operator, key = new_operator(app, "Fuzz")
    client = ApiClient(app.test_client(), key)
    return client, client.new_player()["id"]


def assert_not_500(response: Any) -> None:
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        assert response.mimetype == "application/problem+json"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    target=st.sampled_from(TARGETS),
    body=bodies,
    key=st.text(st.characters(blacklist_characters="\r\n"), min_size=1, max_size=20),
)
def test_junk_bodies_get_problems_not_500s(
    fuzz_client: tuple[ApiClient, str], target: tuple[str, str], body: Any, key: str
) -> None:
    client, pid = fuzz_client
    method, path = target
    safe_key = key.encode("latin-1", "replace").decode("latin-1")
    assert_not_500(
        client.request(
            method, path.format(pid=pid), json=body, headers={"Idempotency-Key": safe_key}
        )
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.dictionaries(
        st.sampled_from(["limit", "starting_after", "ending_before", "currency", "other"]),
        st.text(max_size=12),
        max_size=3,
    ),
    segment=st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s and "?" not in s),
)
def test_junk_queries_and_ids_get_problems_not_500s(
    fuzz_client: tuple[ApiClient, str], query: dict[str, str], segment: str
) -> None:
    client, pid = fuzz_client
    assert_not_500(client.get(f"/v1/players/{pid}/entries", query_string=query))
    assert_not_500(client.get("/v1/players", query_string=query))
    assert_not_500(client.get(f"/v1/players/{segment}/wallets/{segment}"))
    assert_not_500(client.get(f"/v1/transactions/{segment}"))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_json_nested_too_deep_for_the_parser_is_400(
    fuzz_client: tuple[ApiClient, str], target: tuple[str, str], opening: str
) -> None:
    """Python's JSON parser raises RecursionError (not a ValueError) past about 1,000 levels."""
    client, pid = fuzz_client
    method, path = target
    closing = "]" if opening == "[" else "}"
    body = opening * 5_000 + "1" + closing * 5_000  # well past the limit, within 64 KiB
    response = client.request(
        method,
        path.format(pid=pid),
        data=body,
        headers={"Idempotency-Key": "deep"},
        content_type="application/json",
    )
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["code"] == "malformed_request"
