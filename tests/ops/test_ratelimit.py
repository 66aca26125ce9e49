"""Rate limits: per API key, per player (whatever token), per address without credentials;
429 problem+json with Retry-After; probes exempt; off with RATELIMIT_ENABLED=false."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from service.config import ConfigError, Settings
from tests.api.play_clients import player_client
from tests.conftest import ApiClient, make_test_app, new_operator


def _storages() -> list[Any]:
    """In-process counters always; Redis too when the run has one (CI)."""
    redis = os.environ.get("TEST_BROKER_URL", "")
    return ["memory://"] + ([redis] if redis.startswith("redis://") else [])


@pytest.fixture(params=_storages(), ids=lambda uri: uri.partition(":")[0])
def limited(database_url: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    app = make_test_app(
        database_url,
        RATELIMIT_STORAGE_URI=request.param,
        RATELIMIT_KEY_PREFIX=f"test-{secrets.token_hex(4)}",  # runs never share counters
        RATELIMIT_OPERATOR="5 per minute",
        RATELIMIT_PLAYER="3 per minute",
        RATELIMIT_ANONYMOUS="4 per minute",
    )
    yield app
    app.extensions["gin"]["engine"].dispose()


def operator(app: Any) -> ApiClient:
    _operator_id, key = new_operator(app)
    return ApiClient(app.test_client(), key)


def assert_rate_limited(response: Any) -> None:
    assert response.status_code == 429
    assert response.headers["Content-Type"] == "application/problem+json"
    body = response.get_json()
    assert body["type"] == "/problems/rate_limited"
    assert body["code"] == "rate_limited" and body["status"] == 429
    assert body["title"] == "Too many requests"
    retry = int(response.headers["Retry-After"])
    assert 1 <= retry <= 61
    assert response.headers["RateLimit-Remaining"] == "0"
    assert response.headers["X-Request-Id"]


def test_each_api_key_has_its_own_budget(limited: Any) -> None:
    first, second = operator(limited), operator(limited)
    statuses = [first.get("/v1/players").status_code for _ in range(5)]
    assert statuses == [200] * 5
    assert_rate_limited(first.get("/v1/players"))
    assert first.get("/v1/players").status_code == 429  # every route shares the budget
    assert first.post("/v1/players", {"external_id": "x", "display_name": "X"}).status_code == 429
    # Another key of another operator is unaffected.
    response = second.get("/v1/players")
    assert response.status_code == 200
    assert response.headers["RateLimit-Limit"] == "5"
    assert response.headers["RateLimit-Remaining"] == "4"
    assert 1 <= int(response.headers["RateLimit-Reset"]) <= 61


def test_a_player_is_limited_across_its_tokens(database_url: str) -> None:
    # Funding the players takes operator requests: give the operator room for them.
    roomy = make_test_app(
        database_url, RATELIMIT_OPERATOR="1000 per minute", RATELIMIT_PLAYER="3 per minute"
    )
    api = operator(roomy)
    one, two = player_client(api, deposit=0), player_client(api, deposit=0)
    path = f"/v1/players/{one.player_id}"  # type: ignore[attr-defined]
    for _ in range(3):
        assert one.get(path).status_code == 200
    assert_rate_limited(one.get(path))
    # A new token for the same player does not reset its budget...
    fresh = api.post(f"/v1/players/{one.player_id}/tokens", {})  # type: ignore[attr-defined]
    assert fresh.status_code == 201
    assert api.as_(fresh.get_json()["token"]).get(path).status_code == 429
    # ...while another player, and the operator, are unaffected.
    other_path = f"/v1/players/{two.player_id}"  # type: ignore[attr-defined]
    assert two.get(other_path).status_code == 200
    assert api.get(path).status_code == 200
    roomy.extensions["gin"]["engine"].dispose()


def test_without_credentials_the_address_is_limited_and_probes_are_exempt(limited: Any) -> None:
    client = ApiClient(limited.test_client())
    forged = client.as_("pt_forged.token")
    assert [client.get("/v1/players").status_code for _ in range(2)] == [401, 401]
    assert [forged.get("/v1/players").status_code for _ in range(2)] == [401, 401]
    assert_rate_limited(client.get("/v1/players"))
    assert_rate_limited(forged.get("/v1/players"))  # a forged token is just the address
    from_elsewhere = limited.test_client().get(
        "/v1/players", environ_base={"REMOTE_ADDR": "10.1.2.3"}
    )
    assert from_elsewhere.status_code == 401
    for path in ("/healthz", "/readyz", "/metrics"):
        for _ in range(6):
            response = client.get(path)
            assert response.status_code != 429, path
            assert "RateLimit-Limit" not in response.headers


def test_rate_limits_can_be_turned_off(database_url: str) -> None:
    app = make_test_app(database_url, RATELIMIT_ENABLED=False, RATELIMIT_OPERATOR="1 per minute")
    api = operator(app)
    assert [api.get("/v1/players").status_code for _ in range(3)] == [200] * 3
    assert "RateLimit-Limit" not in api.get("/v1/players").headers
    app.extensions["gin"]["engine"].dispose()


def test_limits_are_configured_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATELIMIT_OPERATOR", "50000 per minute;2000 per second")
    monkeypatch.setenv("RATELIMIT_ENABLED", "false")
    settings = Settings.from_env()
    assert settings.ratelimit_operator == "50000 per minute;2000 per second"
    assert settings.ratelimit_enabled is False
    monkeypatch.setenv("RATELIMIT_PLAYER", "lots")
    with pytest.raises(ConfigError, match="RATELIMIT_PLAYER"):
        Settings.from_env()
    monkeypatch.delenv("RATELIMIT_PLAYER")
    monkeypatch.setenv("RATELIMIT_ENABLED", "maybe")
    with pytest.raises(ConfigError, match="RATELIMIT_ENABLED"):
        Settings.from_env()


def test_the_429_is_documented(app: Any) -> None:
    from service.api import spec_yaml

    text = spec_yaml(app)
    assert "RATE_LIMITED:" in text
    assert "'429':\n          $ref: '#/components/responses/RATE_LIMITED'" in text


def test_a_failing_storage_lets_requests_through(database_url: str) -> None:
    app = make_test_app(
        database_url,
        RATELIMIT_STORAGE_URI="redis://127.0.0.1:9/0",
        RATELIMIT_OPERATOR="1 per minute",
    )
    api = operator(app)
    try:
        assert [api.get("/v1/players").status_code for _ in range(3)] == [200] * 3
        assert "RateLimit-Limit" not in api.get("/v1/players").headers
    finally:
        app.extensions["gin"]["engine"].dispose()


def test_several_limits_per_caller_the_tightest_answers(database_url: str) -> None:
    app = make_test_app(database_url, RATELIMIT_OPERATOR="100 per minute;2 per hour")
    api = operator(app)
    try:
        first = api.get("/v1/players")
        assert first.headers["RateLimit-Limit"] == "2"
        assert first.headers["RateLimit-Remaining"] == "1"
        assert api.get("/v1/players").status_code == 200
        third = api.get("/v1/players")
        assert third.status_code == 429
        assert 61 < int(third.headers["Retry-After"]) <= 3600  # the hourly window's reset
    finally:
        app.extensions["gin"]["engine"].dispose()
