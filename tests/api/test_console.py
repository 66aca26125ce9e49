"""The operator console's session rules through Flask's test client: a wrong key is refused,
every POST needs the session's CSRF token, a revoked key ends its sessions at their next
request, and an operator sees only its own players."""

from __future__ import annotations

import io
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
        "/console/tournaments",
        "/console/settlements",
        "/console/money",
        "/console/webhooks",
        "/console/api-keys",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert "unsafe-inline" not in response.headers["Content-Security-Policy"]
        assert response.headers["Cache-Control"] == "no-store"
    csv = client.get("/console/settlements/export.csv")
    assert csv.status_code == 200
    assert csv.text.startswith("settlement_id,match_id,created_at,currency,seat,player_id")


# --- the pages, with data made through the API ----------------------------------------------


def test_a_settlement_its_audit_and_its_exports_are_the_operators_own(
    app: Any, api: ApiClient, other_api: ApiClient
) -> None:
    from tests.api.test_audit import finished_and_settled

    _, match_id = finished_and_settled(api, app, resign=True)
    statement = api.get(f"/v1/matches/{match_id}/settlement").get_json()
    client = signed_in(app, str(api.token))
    page = client.get(f"/console/settlements/{match_id}")
    assert page.status_code == 200
    assert 'id="audit-verdict">Verified' in page.text
    assert "House fee: <strong>" in page.text

    listed = client.get("/console/settlements")
    assert f"Statement of {match_id}" in listed.text
    exported = client.get("/console/settlements/export.json")
    assert exported.headers["Content-Disposition"].startswith("attachment; filename=")
    [mine] = [s for s in exported.get_json()["data"] if s["match_id"] == match_id]
    assert mine == statement  # the API's form of it
    rows = client.get("/console/settlements/export.csv").text.splitlines()
    ours = [r for r in rows if f",{match_id}," in r]
    assert len(ours) == len(statement["players"])

    hands = client.get(f"/console/matches/{match_id}").text
    assert 'href="/verify?hand=hnd_' in hands

    stranger = signed_in(app, str(other_api.token))
    assert stranger.get(f"/console/settlements/{match_id}").status_code == 404
    assert stranger.get(f"/console/matches/{match_id}").status_code == 404
    assert match_id not in stranger.get("/console/settlements/export.csv").text
    assert client.get("/console/settlements?since=2026-12-06&until=2026-12-01").status_code == 422


def test_a_tournament_its_bracket_its_statement_and_its_audit(
    app: Any, api: ApiClient, other_api: ApiClient
) -> None:
    from tests.api.test_tournaments import full_field, resign_first_seat

    tournament, clients = full_field(api, name="Console cup")
    after_one = resign_first_seat(api, app, clients, tournament, 1)
    finished = resign_first_seat(api, app, clients, after_one, 2)
    assert finished["status"] == "finished"
    client = signed_in(app, str(api.token))

    listed = client.get("/console/tournaments").text
    row = re.search(
        r"<tr><td><a href=\"/console/tournaments/([^\"]+)\">Console cup</a>.*?</tr>", listed
    )
    assert row is not None and row.group(1) == tournament["id"]
    assert "<td>finished</td><td>knockout</td>" in row.group(0)
    assert "<td>4 of 4</td>" in row.group(0)
    assert '<th scope="col">Buy-in</th>' in listed
    assert "Console cup" not in client.get("/console/tournaments?status=open").text

    page = client.get(f"/console/tournaments/{tournament['id']}")
    assert page.status_code == 200
    assert 'id="audit-verdict">Verified: the draw, 3 match results' in page.text
    for r in finished["rounds"]:
        for m in r["matches"]:
            assert f'href="/console/matches/{m["match_id"]}"' in page.text
    assert "<caption>Round 2</caption>" in page.text
    assert "<h2>Standings</h2>" in page.text
    statement = api.get(f"/v1/tournaments/{tournament['id']}/statement").get_json()
    for line in statement["lines"]:
        assert f"<code>{line['transaction_id']}</code>" in page.text
    assert page.text.count("<td>prize</td>") == 2  # 2-5: 7000/3000 pays two places
    assert 'id="tournament-held">' in page.text
    final = client.get(f"/console/matches/{finished['rounds'][1]['matches'][0]['match_id']}")
    assert final.status_code == 200
    assert f'href="/console/tournaments/{tournament["id"]}"' in final.text

    stranger = signed_in(app, str(other_api.token))
    assert stranger.get(f"/console/tournaments/{tournament['id']}").status_code == 404
    assert "Console cup" not in stranger.get("/console/tournaments").text


def test_a_live_match_is_watched_as_a_spectator_without_any_hand(app: Any, api: ApiClient) -> None:
    from tests.api.play_clients import seated_match

    clients, table = seated_match(api)
    match_id = table["match_id"]
    seen = clients[0].get(f"/v1/matches/{match_id}").get_json()
    cards = seen["hand"]["hand"]
    assert cards
    client = signed_in(app, str(api.token))
    page = client.get(f"/console/matches/{match_id}")
    assert page.status_code == 200
    assert "Live, as a spectator sees it" in page.text
    assert '<meta http-equiv="refresh" content="5">' in page.text
    for card in cards:
        assert not re.search(rf"\b{card}\b", page.text), card
    assert match_id in client.get("/console/matches?status=playing").text


def test_opening_a_table_from_the_console(app: Any, api: ApiClient) -> None:
    client = signed_in(app, str(api.token))
    token = csrf_of(client.get("/console/tables"))
    form = {"csrf_token": token, "name": "From the console", "format": "match_play"}
    refused = client.post("/console/tables", data={**form, "currency": "EUR", "stake": "1.5"})
    assert refused.status_code == 422
    assert "whole number" in refused.text
    opened = client.post("/console/tables", data={**form, "currency": "EUR", "stake": "700"})
    assert opened.status_code == 302
    [table] = api.get("/v1/tables").get_json()["data"]
    assert (table["name"], table["stake"]["amount"]) == ("From the console", 700)
    assert "From the console" in client.get(opened.headers["Location"]).text


def test_a_practice_link_issued_from_the_console_plays_with_play_money(
    app: Any, api: ApiClient
) -> None:
    """The console issues a person a /play link: a new guest with play money and a token in
    the link's fragment, which authenticates that player (and only with the form's token)."""
    client = signed_in(app, str(api.token))
    form = client.get("/console/practice")
    assert client.post("/console/practice", data={"name": "Ada"}).status_code == 403
    issued = client.post("/console/practice", data={"csrf_token": csrf_of(form), "name": "Ada"})
    assert issued.status_code == 200
    [link] = re.findall(r'href="(http://[^"]+/play#token=([^"]+))"', issued.text)
    token = link[1]
    player = ApiClient(app.test_client(), token)
    [mine] = [
        p for p in api.get("/v1/players?limit=100").get_json()["data"] if p["display_name"] == "Ada"
    ]
    wallet = player.get(f"/v1/players/{mine['id']}/wallets/XPM").get_json()
    assert wallet["available"]["amount"] == 100_000
    assert "Cache-Control" in issued.headers and "no-store" in issued.headers["Cache-Control"]


def test_a_test_event_and_a_redelivery_from_the_console(app: Any, api: ApiClient) -> None:
    endpoint = api.post("/v1/webhook-endpoints", {"url": "https://ops.example/hook"}).get_json()
    client = signed_in(app, str(api.token))
    page = client.get(f"/console/webhooks/{endpoint['id']}")
    sent = client.post(
        f"/console/webhooks/{endpoint['id']}/test", data={"csrf_token": csrf_of(page)}
    )
    assert sent.status_code == 302
    [delivery] = api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries").get_json()["data"]
    assert delivery["event_type"] == "webhook.test"
    page = client.get(sent.headers["Location"])
    assert "A test event is on its way." in page.text and delivery["id"] in page.text
    again = client.post(
        f"/console/webhook-deliveries/{delivery['id']}/redeliver",
        data={"csrf_token": csrf_of(page)},
    )
    assert again.status_code == 302
    assert "redelivered" in again.headers["Location"]


def test_the_wallet_report_is_compared_with_an_uploaded_export(app: Any, api: ApiClient) -> None:
    client = signed_in(app, str(api.token))
    page = client.get("/console/money?date=2026-11-30")
    assert "No wallet call on 2026-11-30" in page.text
    theirs = b'[{"transaction_id": "wtx_1", "kind": "debit", "round_id": "r1", "amount": 5, '
    theirs += b'"currency": "EUR", "state": "applied"}]'
    compared = client.post(
        "/console/money",
        data={
            "csrf_token": csrf_of(page),
            "date": "2026-11-30",
            "export": (io.BytesIO(theirs), "export.json"),
        },
        content_type="multipart/form-data",
    )
    assert compared.status_code == 200
    assert "wtx_1" in compared.text and "unknown_to_us" in compared.text
    unreadable = client.post(
        "/console/money",
        data={"csrf_token": csrf_of(page), "export": (io.BytesIO(b"{"), "export.json")},
        content_type="multipart/form-data",
    )
    assert unreadable.status_code == 422
    assert "The export could not be read" in unreadable.text


def test_an_export_over_the_body_limit_is_refused_with_a_page(app: Any, api: ApiClient) -> None:
    client = signed_in(app, str(api.token))
    page = client.get("/console/money")
    big = io.BytesIO(b" " * (app.config["MAX_CONTENT_LENGTH"] + 1))
    refused = client.post(
        "/console/money",
        data={"csrf_token": csrf_of(page), "export": (big, "export.json")},
        content_type="multipart/form-data",
    )
    assert refused.status_code == 413
    assert refused.mimetype == "text/html"
    assert "MAX_CONTENT_LENGTH" in refused.text


def test_the_dashboard_counts_the_operators_day(app: Any, api: ApiClient) -> None:
    from sqlalchemy import update

    from service.db.webhook_models import WebhookDelivery
    from tests.api.play_clients import open_table
    from tests.api.test_audit import finished_and_settled

    _, match_id = finished_and_settled(
        api, app, format="first_to_knock", stake=1000, fee={"bps": 1000}
    )
    fee = api.get(f"/v1/matches/{match_id}/settlement").get_json()["fee"]["amount"]
    assert fee > 0
    hands = api.get(f"/v1/matches/{match_id}").get_json()["scores"]["hands_played"]
    open_table(api)
    endpoint = api.post("/v1/webhook-endpoints", {"url": "https://ops.example/hook"}).get_json()
    delivery = api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test").get_json()
    engine = app.extensions["gin"]["engine"]
    with engine.begin() as connection:  # as the worker leaves it after its last failed attempt
        connection.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery["id"])
            .values(status="failed", attempts=3, last_status_code=503, last_error="HTTP 503")
        )
    client = signed_in(app, str(api.token))
    board = client.get("/console/")
    assert 'id="audit-verdict">Not audited yet' in board.text  # no audit run on a page load
    audited = client.post("/console/audit", data={"csrf_token": csrf_of(board)})
    assert audited.status_code == 302 and audited.headers["Location"].endswith("/console/")
    page = client.get("/console/").text
    today = re.search(r"Today \((\d{4}-\d\d-\d\d), UTC\)", page)
    assert today is not None
    cells = re.findall(r"<td>([^<]*)</td>", page)
    assert cells[:4] == ["1", "0", "1", str(hands)]  # a table open, none playing, a match
    amount = f"{fee // 100}.{fee % 100:02d} EUR"
    assert cells[4:8] == [today.group(1), "EUR", "1", amount]
    assert f'href="/console/webhooks/{endpoint["id"]}"' in page and "HTTP 503" in page
    assert 'id="audit-verdict">\nPassed' in page and "1 settled matches checked at" in page
