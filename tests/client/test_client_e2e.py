"""The typed client end to end against the app (in process, over httpx's WSGI transport)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from service.client import ApiProblem, GinClient, new_key
from tests.conftest import new_operator


@pytest.fixture
def operator(app: Any) -> Iterator[GinClient]:
    _operator_id, key = new_operator(app)
    with GinClient("http://gin.test", key, transport=httpx.WSGITransport(app=app)) as client:
        yield client


def test_money_seats_and_problems_through_the_client(operator: GinClient) -> None:
    player = operator.create_player("c-1", "Carol")
    key = new_key()
    first = operator.deposit(player["id"], 1500, "EUR", idempotency_key=key)
    again = operator.deposit(player["id"], 1500, "EUR", idempotency_key=key)
    assert first["id"] == again["id"]  # replayed
    operator.withdraw(player["id"], 500, "EUR")
    assert operator.wallet(player["id"], "EUR")["available"]["amount"] == 1000
    with pytest.raises(ApiProblem) as broke:
        operator.withdraw(player["id"], 5000, "EUR")
    assert (broke.value.status, broke.value.code) == (422, "insufficient_funds")

    table = operator.create_table("match_play", "EUR", stake=400, name="client")
    assert table["id"] in [t["id"] for t in operator.lobby(format="match_play")["data"]]
    carol = operator.as_(operator.player_token(player["id"])["token"])
    carol.join(table["id"])
    assert operator.wallet(player["id"], "EUR")["held"]["amount"] == 400
    carol.leave(table["id"])
    assert operator.wallet(player["id"], "EUR")["held"]["amount"] == 0
    view = carol.match(table["match_id"], wait_for_version=5, timeout=0)
    assert view["status"] == "waiting" and view["you"] is None

    with pytest.raises(ApiProblem) as bad:
        operator.create_table("match_play", "EUR", stake=4.5)
    assert bad.value.status == 422 and [f.field for f in bad.value.fields] == ["stake"]
    with pytest.raises(ApiProblem) as stranger:
        GinClient("http://gin.test", "sk_nope", http=operator._http).operator()
    assert stranger.value.status == 401 and stranger.value.type == "/problems/unauthenticated"


def test_wallet_settings_and_the_call_report_through_the_client(operator: GinClient) -> None:
    assert operator.wallet_settings() == []
    with pytest.raises(ApiProblem) as refused:  # a seamless wallet needs its URL
        operator.set_wallet_settings("EUR", "seamless")
    assert refused.value.code == "validation_failed" and refused.value.fields[0].field == "url"
    made = operator.set_wallet_settings("EUR", "seamless", "https://wallet.example/gin", 2000)
    assert made["mode"] == "seamless" and made["secret"].startswith("whsec_")
    rotated = operator.rotate_wallet_secret("EUR")
    assert rotated["secret"] != made["secret"] and rotated["previous_secret_expires_at"]
    assert [s["currency"] for s in operator.wallet_settings()] == ["EUR"]
    assert operator.wallet_calls(escalated=True, date="2026-12-04")["data"] == []
    player = operator.create_player("seamless-1", "Sam")
    with pytest.raises(ApiProblem) as no_deposit:
        operator.deposit(player["id"], 100, "EUR")
    assert no_deposit.value.code == "seamless_wallet"
    back = operator.set_wallet_settings("EUR", "transfer")  # nothing held, nothing open
    assert back["mode"] == "transfer" and "secret" not in back
    operator.deposit(player["id"], 100, "EUR")  # money held here: no switch now
    with pytest.raises(ApiProblem) as held:
        operator.set_wallet_settings("EUR", "seamless", "https://wallet.example/gin")
    assert held.value.status == 409 and held.value.code == "conflict"


def test_a_test_webhook_through_the_client(operator: GinClient) -> None:
    endpoint = operator.create_webhook_endpoint("https://ops.example/gin", ["hand.ended"])
    assert endpoint["secret"].startswith("whsec_")
    sent = operator.send_test_webhook(endpoint["id"])
    assert (sent["event_type"], sent["status"], sent["attempts"]) == ("webhook.test", "pending", [])
    log = operator.webhook_deliveries(endpoint["id"], status="pending")
    assert [d["id"] for d in log["data"]] == [sent["id"]]
    assert operator.redeliver_webhook(sent["id"])["id"] == sent["id"]
    with pytest.raises(ApiProblem) as missing:
        operator.send_test_webhook("whk_missing")
    assert (missing.value.status, missing.value.code) == (404, "not_found")


def test_a_tournament_through_the_client(operator: GinClient) -> None:
    tournament = operator.create_tournament(
        "first_to_knock", "EUR", 500, 4, fee=50, payout_table="2-5: 10000"
    )
    players = []
    for n in range(4):
        player = operator.create_player(f"t-{n}", f"T{n}")
        operator.deposit(player["id"], 1000, "EUR")
        players.append(operator.as_(operator.player_token(player["id"])["token"]))
    players[0].register(tournament["id"])
    assert players[0].unregister(tournament["id"])["entries"] == []
    for player in players:
        running = player.register(tournament["id"])
    assert running["status"] == "running" and running["server_seed"]
    assert [t["id"] for t in operator.tournaments(status="running")["data"]] == [tournament["id"]]
    with pytest.raises(ApiProblem) as late:
        players[0].unregister(tournament["id"])
    assert (late.value.status, late.value.code) == (409, "tournament_not_open")
    cancelled = operator.cancel_tournament(tournament["id"])
    assert cancelled["status"] == "cancelled"
    statement = operator.tournament_statement(tournament["id"])
    assert statement["held"]["amount"] == 0
    assert operator.audit_tournament(tournament["id"])["ok"] is True
    assert operator.tournament(tournament["id"])["entries"][0]["state"] == "refunded"


def test_a_single_table_tournament_through_the_client(operator: GinClient) -> None:
    tournament = operator.create_tournament(
        "rummy_deals", "EUR", 300, kind="single_table", game="rummy", seat_count=3, target=1
    )
    assert (tournament["kind"], tournament["entrants"], tournament["table"]) == (
        "single_table",
        3,
        None,
    )
    for n in range(3):
        player = operator.create_player(f"st-{n}", f"S{n}")
        operator.deposit(player["id"], 1000, "EUR")
        running = operator.as_(operator.player_token(player["id"])["token"]).register(
            tournament["id"]
        )
    assert running["status"] == "running" and running["table"] is not None
    assert sorted(running["table"]["seats"]) == [1, 2, 3]
    assert [t["id"] for t in operator.tournaments(kind="single_table")["data"]] == [
        tournament["id"]
    ]
