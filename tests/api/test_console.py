"""The operator console's session rules through Flask's test client: a wrong key is refused,
every POST needs the session's CSRF token, a revoked key ends its sessions at their next
request, and an operator sees only its own players."""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import ApiClient

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def signed_in(app: Any, key: str) -> Any:
    """A test client with a console session opened with ``key``."""
    client = app.test_client()
    form = client.get("/console/sign-in")
    assert form.status_code == 200
    [token] = TOKEN.findall(form.text)
    response = client.post("/console/sign-in", data={"csrf_token": token, "api_key": key})
    assert response.status_code == 302, response.text
    assert response.headers["Location"] == "/console/"
    return client


def csrf_of(page: Any) -> str:
    found: str = TOKEN.findall(page.text)[0]
    return found


def key_id(api: ApiClient) -> str:
    [key] = api.get("/v1/api-keys").get_json()["data"]
    return str(key["id"])


def test_a_wrong_key_is_refused_with_a_clear_message(app: Any) -> None:
    client = app.test_client()
    [token] = TOKEN.findall(client.get("/console/sign-in").text)
    response = client.post("/console/sign-in", data={"csrf_token": token, "api_key": "sk_nope"})
    assert response.status_code == 200  # the form again, with the reason
    assert "That API key is unknown or revoked" in response.text
    assert "gin_console=" not in str(response.headers.getlist("Set-Cookie"))
    assert client.get("/console/").status_code == 302  # still signed out


def test_the_session_cookie_holds_no_key_and_no_script_can_read_it(
    app: Any, api: ApiClient
) -> None:
    client = app.test_client()
    [token] = TOKEN.findall(client.get("/console/sign-in").text)
    response = client.post("/console/sign-in", data={"csrf_token": token, "api_key": api.token})
    cookie = next(c for c in response.headers.getlist("Set-Cookie") if c.startswith("gin_console="))
    assert api.token is not None and api.token not in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie


def test_sign_in_without_its_form_token_is_refused(app: Any, api: ApiClient) -> None:
    client = app.test_client()
    response = client.post("/console/sign-in", data={"api_key": api.token})
    assert response.status_code == 403
    assert client.get("/console/").status_code == 302


def test_a_post_without_the_sessions_csrf_token_changes_nothing(app: Any, api: ApiClient) -> None:
    client = signed_in(app, str(api.token))
    revoke = f"/console/api-keys/{key_id(api)}/revoke"
    for sent in ({}, {"csrf_token": "forged"}):
        refused = client.post(revoke, data=sent)
        assert refused.status_code == 403
        assert "security token" in refused.text
    assert api.get("/v1/operator").status_code == 200  # the key still works
    assert client.post("/console/sign-out", data={}).status_code == 403
    assert client.get("/console/").status_code == 200  # still signed in


def test_revoking_the_key_ends_its_console_sessions_at_the_next_request(
    app: Any, api: ApiClient
) -> None:
    client = signed_in(app, str(api.token))
    other_tab = signed_in(app, str(api.token))
    assert client.get("/console/").status_code == 200
    page = client.get("/console/api-keys")
    revoked = client.post(
        f"/console/api-keys/{key_id(api)}/revoke", data={"csrf_token": csrf_of(page)}
    )
    assert revoked.status_code == 302
    assert api.get("/v1/operator").status_code == 401
    for session in (client, other_tab):
        ended = session.get("/console/")
        assert ended.status_code == 302
        assert ended.headers["Location"] == "/console/sign-in?notice=revoked"
    assert "its API key is unknown or was revoked" in client.get(ended.headers["Location"]).text


def test_signing_out_ends_the_session(app: Any, api: ApiClient) -> None:
    client = signed_in(app, str(api.token))
    page = client.get("/console/")
    out = client.post("/console/sign-out", data={"csrf_token": csrf_of(page)})
    assert out.status_code == 302
    assert client.get("/console/").status_code == 302


def test_an_operator_finds_its_own_players_and_never_anothers(
    app: Any, api: ApiClient, other_api: ApiClient
) -> None:
    mine = api.new_player(external_id="console-mine-1")
    theirs = other_api.new_player(external_id="console-theirs-1")
    client = signed_in(app, str(api.token))
    found = client.get("/console/players", query_string={"q": "console-mine"})
    assert mine["id"] in found.text
    assert (
        client.get("/console/players", query_string={"q": mine["id"]}).text.count(
            f'href="/console/players/{mine["id"]}"'
        )
        == 1
    )
    for query in (theirs["id"], "console-theirs"):
        page = client.get("/console/players", query_string={"q": query})
        assert f'href="/console/players/{theirs["id"]}"' not in page.text
        assert "No player has the id" in page.text
    assert client.get(f"/console/players/{mine['id']}").status_code == 200
    foreign = client.get(f"/console/players/{theirs['id']}")
    assert foreign.status_code == 404
    assert theirs["external_id"] not in foreign.text


def test_every_console_page_answers_for_a_new_operator(app: Any, api: ApiClient) -> None:
    client = signed_in(app, str(api.token))
    for path in (
        "/console/",
        "/console/players",
        "/console/tables",
        "/console/matches",
        "/console/settlements",
        "/console/money",
        "/console/webhooks",
        "/console/api-keys",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert "unsafe-inline" not in response.headers["Content-Security-Policy"]
    csv = client.get("/console/settlements/export.csv")
    assert csv.status_code == 200
    assert csv.text.startswith("settlement_id,match_id,created_at,currency,seat,player_id")
