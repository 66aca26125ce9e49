"""Authentication (API keys, player tokens), tenancy (404 vs 403) and problem+json errors."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from service.clock import utcnow
from service.usecases.auth import mint_player_token
from tests.conftest import TEST_SECRET_KEY, ApiClient, assert_problem


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer sk_nope", "Basic abc", "Bearer pt_x.y"])
def test_missing_or_bad_credentials_are_401(api: ApiClient, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    response = api.as_(None).get("/v1/players", headers=headers)
    body = assert_problem(response, 401, "unauthenticated")
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert body["instance"] == "/v1/players"


def test_api_keys_shown_once_several_active_and_revocable(api: ApiClient) -> None:
    created = api.post("/v1/api-keys", {"label": "rotation"})
    assert created.status_code == 201
    second = created.get_json()
    assert second["secret"].startswith("sk_") and second["prefix"] == second["secret"][:10]
    listed = api.get("/v1/api-keys").get_json()["data"]
    assert {k["id"] for k in listed} >= {second["id"]} and len(listed) == 2
    assert all("secret" not in k for k in listed)
    # both keys work
    assert api.as_(second["secret"]).get("/v1/operator").status_code == 200
    assert api.get("/v1/operator").get_json()["id"] == api.operator_id  # type: ignore[attr-defined]
    revoked = api.delete(f"/v1/api-keys/{second['id']}")
    assert revoked.status_code == 200 and revoked.get_json()["revoked_at"]
    assert_problem(api.as_(second["secret"]).get("/v1/operator"), 401, "unauthenticated")
    assert api.get("/v1/operator").status_code == 200


def test_another_operators_key_is_not_found(api: ApiClient, other_api: ApiClient) -> None:
    theirs = other_api.post("/v1/api-keys", {"label": "x"}).get_json()
    assert_problem(api.delete(f"/v1/api-keys/{theirs['id']}"), 404, "not_found")


def test_operators_see_only_their_own_players(api: ApiClient, other_api: ApiClient) -> None:
    player = api.new_player()
    for path in (
        f"/v1/players/{player['id']}",
        f"/v1/players/{player['id']}/wallets",
        f"/v1/players/{player['id']}/wallets/EUR",
        f"/v1/players/{player['id']}/entries",
    ):
        assert_problem(other_api.get(path), 404, "not_found")
    assert_problem(other_api.deposit(player["id"], 100), 404, "not_found")
    assert other_api.get("/v1/players").get_json()["data"] == []


def _token(api: ApiClient, player_id: str) -> str:
    response = api.post(f"/v1/players/{player_id}/tokens", {"ttl_seconds": 60})
    assert response.status_code == 201
    body = response.get_json()
    assert body["player_id"] == player_id and body["expires_at"].endswith("Z")
    return str(body["token"])


def test_player_token_reads_own_wallet_only(api: ApiClient, other_api: ApiClient) -> None:
    me, neighbour = api.new_player(), api.new_player()
    api.deposit(me["id"], 1200)
    token = _token(api, me["id"])
    as_me = api.as_(token)
    wallet = as_me.get(f"/v1/players/{me['id']}/wallets/EUR")
    assert wallet.status_code == 200 and wallet.get_json()["available"]["amount"] == 1200
    assert as_me.get(f"/v1/players/{me['id']}/entries").status_code == 200
    # another player of the same operator: 403; another operator's player: 404
    assert_problem(as_me.get(f"/v1/players/{neighbour['id']}/wallets/EUR"), 403, "forbidden")
    stranger = other_api.new_player()
    assert_problem(as_me.get(f"/v1/players/{stranger['id']}/wallets/EUR"), 404, "not_found")
    # operator-only operations: 403
    assert_problem(as_me.deposit(me["id"], 100), 403, "forbidden")
    assert_problem(as_me.post(f"/v1/players/{me['id']}/tokens", {}), 403, "forbidden")
    assert_problem(as_me.get("/v1/players"), 403, "forbidden")


def test_expired_and_forged_player_tokens_are_401(api: ApiClient) -> None:
    player = api.new_player()
    operator_id = api.operator_id  # type: ignore[attr-defined]
    expired = mint_player_token(
        operator_id, player["id"], TEST_SECRET_KEY, utcnow() - timedelta(seconds=1)
    )
    assert_problem(api.as_(expired).get(f"/v1/players/{player['id']}"), 401, "token_expired")
    forged = mint_player_token(
        operator_id, player["id"], "not-the-secret", utcnow() + timedelta(minutes=5)
    )
    assert_problem(api.as_(forged).get(f"/v1/players/{player['id']}"), 401, "unauthenticated")
    good = _token(api, player["id"])
    tampered = good[:-2] + ("A" if good[-2] != "A" else "B") + good[-1]
    assert_problem(api.as_(tampered).get(f"/v1/players/{player['id']}"), 401, "unauthenticated")


def test_unknown_route_and_method_are_problems(api: ApiClient) -> None:
    assert_problem(api.get("/v1/nothing-here"), 404, "not_found")
    response = api.put("/v1/players", {})
    assert_problem(response, 405, "method_not_allowed")
    assert "GET" in response.headers["Allow"]


def test_malformed_json_is_400(api: ApiClient) -> None:
    response = api.request(
        "POST", "/v1/players", data="{not json", headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 400, "malformed_request")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"display_name": "A"}, "external_id"),
        ({"external_id": "", "display_name": "A"}, "external_id"),
        ({"external_id": "x", "display_name": "A", "display_currency": "XXX"}, "display_currency"),
        ({"external_id": "x", "display_name": "A", "unexpected": 1}, "unexpected"),
        ({"external_id": 5, "display_name": "A"}, "external_id"),
        ([], "(body)"),
    ],
)
def test_validation_failures_name_the_fields(api: ApiClient, body: Any, field: str) -> None:
    problem = assert_problem(api.post("/v1/players", body), 422, "validation_failed")
    assert field in {e["field"] for e in problem["errors"]}, problem


def test_request_id_is_echoed_or_made(api: ApiClient) -> None:
    assert (
        api.get("/healthz", headers={"X-Request-Id": "abc-123"}).headers["X-Request-Id"]
        == "abc-123"
    )
    assert len(api.get("/healthz").headers["X-Request-Id"]) == 32


def test_health_and_readiness(api: ApiClient) -> None:
    assert api.as_(None).get("/healthz").get_json() == {"status": "ok"}
    ready = api.as_(None).get("/readyz")
    assert ready.status_code == 200, ready.get_json()
    assert ready.get_json()["checks"] == {"database": "ok", "migrations": "ok", "broker": "ok"}


def test_internal_errors_are_problems_without_a_trace(
    app: Any, api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.usecases import players

    def boom(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(players, "get_player", boom)
    player = api.new_player()
    response = api.get(f"/v1/players/{player['id']}")
    body = assert_problem(response, 500, "internal_error")
    assert "secret internals" not in response.get_data(as_text=True) and "errors" not in body


def test_nul_characters_are_refused_not_500(api: ApiClient) -> None:
    player = api.new_player()
    assert_problem(api.get("/v1/transactions/\x00"), 400, "malformed_request")
    assert_problem(
        api.get("/v1/players", query_string={"starting_after": "a\x00"}), 400, "malformed_request"
    )
    problem = assert_problem(
        api.post("/v1/players", {"external_id": "a\x00b", "display_name": "N"}),
        422,
        "validation_failed",
    )
    assert [e["field"] for e in problem["errors"]] == ["external_id"]
    problem = assert_problem(
        api.deposit(player["id"], 100, key="nul\x00key"), 400, "malformed_request"
    )
    assert [e["field"] for e in problem["errors"]] == ["Idempotency-Key"]


def test_every_player_operation_on_a_foreign_player_is_404(
    api: ApiClient, other_api: ApiClient
) -> None:
    theirs = other_api.new_player()["id"]
    txn = other_api.deposit(theirs, 100).get_json()["id"]
    assert_problem(api.get(f"/v1/transactions/{txn}"), 404, "not_found")
    assert other_api.get(f"/v1/transactions/{txn}").status_code == 200
    assert_problem(api.patch(f"/v1/players/{theirs}", {"display_name": "x"}), 404, "not_found")
    assert_problem(api.post(f"/v1/players/{theirs}/tokens", {}), 404, "not_found")
    assert_problem(
        api.put(f"/v1/players/{theirs}/self-exclusion", {"until": "2099-01-01T00:00:00Z"}),
        404,
        "not_found",
    )
    assert_problem(api.get(f"/v1/players/{theirs}/deposit-limits/EUR"), 404, "not_found")
    assert_problem(
        api.put(
            f"/v1/players/{theirs}/deposit-limits/EUR", {"daily": {"amount": 5, "currency": "EUR"}}
        ),
        404,
        "not_found",
    )
    assert_problem(
        api.post(
            f"/v1/players/{theirs}/withdrawals",
            {"amount": {"amount": 5, "currency": "EUR"}},
            key="w",
        ),
        404,
        "not_found",
    )
    # and nothing changed for the owner
    assert (
        other_api.get(f"/v1/players/{theirs}/wallets/EUR").get_json()["available"]["amount"] == 100
    )


def test_a_token_seen_before_still_expires_and_binds_to_its_key() -> None:
    """Signatures are remembered per token (the LRU in verify_player_token); the expiry is
    still checked on every use, and the same token under another secret is still refused."""
    from service.errors import TokenExpired, Unauthenticated
    from service.usecases.auth import verify_player_token

    now = utcnow()
    token = mint_player_token("op_x", "ply_y", TEST_SECRET_KEY, now + timedelta(seconds=30))
    first = verify_player_token(token, TEST_SECRET_KEY, now)
    assert (first.operator_id, first.player_id) == ("op_x", "ply_y")
    assert verify_player_token(token, TEST_SECRET_KEY, now + timedelta(seconds=29)) == first
    with pytest.raises(TokenExpired):
        verify_player_token(token, TEST_SECRET_KEY, now + timedelta(seconds=31))
    with pytest.raises(Unauthenticated):
        verify_player_token(token, "another-secret", now)


def test_requests_open_no_cookie_session(app: Any, api: ApiClient) -> None:
    """Callers authenticate every request; no cookie session is opened, written or sent."""
    from flask import session

    with app.test_request_context("/v1/players"):
        assert app.session_interface.is_null_session(session)
        with pytest.raises(RuntimeError):
            session["who"] = "someone"
    assert "Set-Cookie" not in api.get("/v1/players").headers
