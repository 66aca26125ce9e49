"""Self-exclusion takes effect at once wherever the player sits (docs/games.md,
"Self-exclusion"): a seat whose match has not started is given up and its escrow released in
the exclusion's own transaction, a per-hand Rummy seat is sat out and shown so, and a match
already being played is played to its end. Every scenario leaves the audit clean."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from service.clock import utcnow
from service.usecases import settlement
from tests.api.play_clients import join, open_table, play_match, player_client, wallet
from tests.conftest import ApiClient, in_unit

RUMMY = {
    "game": "rummy",
    "seat_count": 4,
    "format": "rummy_per_hand",
    "stake_per_point": 1,
    "min_buyin": 100,
    "max_buyin": 300,
}


def exclude(api: ApiClient, player_id: str) -> dict[str, Any]:
    until = (utcnow() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    response = api.put(f"/v1/players/{player_id}/self-exclusion", {"until": until})
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def held(api: ApiClient, player_id: str) -> tuple[int, int]:
    found = wallet(api, player_id)
    return found["available"]["amount"], found["held"]["amount"]


def table_of(api: ApiClient, table_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/tables/{table_id}")
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def releases(api: ApiClient, player_id: str) -> list[int]:
    response = api.get(f"/v1/players/{player_id}/entries", query_string={"limit": 100})
    assert response.status_code == 200, response.get_json()
    return [
        e["amount"]["amount"]
        for e in response.get_json()["data"]
        if e["kind"] == "release" and e["account"] == "available"
    ]


def books_balance(api: ApiClient) -> None:
    ledger = api.get("/v1/audit/ledger").get_json()
    assert ledger["ok"] is True, ledger


def test_an_open_gin_seat_is_released_at_once_and_the_match_never_starts(
    api: ApiClient,
) -> None:
    table = open_table(api, stake=500)
    alice, bob = player_client(api, deposit=1_000), player_client(api, deposit=1_000)
    assert join(alice, table["id"]).status_code == 201
    assert held(api, alice.player_id) == (500, 500)  # type: ignore[attr-defined]
    exclude(api, alice.player_id)  # type: ignore[attr-defined]
    # Its seat is gone and its stake back in its wallet, by a ledger release.
    now = table_of(api, table["id"])
    assert now["status"] == "open" and now["seats"] == [] and now["free_seats"] == 2
    assert held(api, alice.player_id) == (1_000, 0)  # type: ignore[attr-defined]
    assert releases(api, alice.player_id) == [500]  # type: ignore[attr-defined]
    # Excluding it again (or extending) changes nothing more.
    exclude(api, alice.player_id)  # type: ignore[attr-defined]
    assert releases(api, alice.player_id) == [500]  # type: ignore[attr-defined]
    assert held(api, alice.player_id) == (1_000, 0)  # type: ignore[attr-defined]
    # An opponent who sits down waits for another player: no match with the excluded one.
    assert join(bob, table["id"]).status_code == 201
    now = table_of(api, table["id"])
    assert now["status"] == "open"
    assert [s["player_id"] for s in now["seats"]] == [bob.player_id]  # type: ignore[attr-defined]
    assert api.get(f"/v1/matches/{table['match_id']}").get_json()["status"] == "waiting"
    refused = join(alice, table["id"])
    assert refused.status_code == 422 and refused.get_json()["code"] == "self_excluded"
    books_balance(api)


def test_every_unstarted_seat_of_the_player_is_released(api: ApiClient) -> None:
    """Several tables at once, of every kind that waits for its seats to fill."""
    tables = [
        open_table(api, stake=300),
        open_table(api, game="gin_three", format="match_play", stake=200),
        open_table(
            api,
            game="rummy",
            seat_count=3,
            format="rummy_deals",
            stake_per_point=1,
            min_buyin=100,
            max_buyin=300,
            target=1,
        ),
    ]
    alice, bob = player_client(api, deposit=2_000), player_client(api, deposit=2_000)
    for table in tables:
        buyin = {"buyin": 150} if table["format"] == "rummy_deals" else {}
        assert join(alice, table["id"], **buyin).status_code == 201
    assert join(bob, tables[1]["id"]).status_code == 201  # a three-seat table, one seat left
    assert held(api, alice.player_id) == (1_350, 650)  # type: ignore[attr-defined]
    exclude(api, alice.player_id)  # type: ignore[attr-defined]
    assert held(api, alice.player_id) == (2_000, 0)  # type: ignore[attr-defined]
    assert sorted(releases(api, alice.player_id)) == [150, 200, 300]  # type: ignore[attr-defined]
    for table in tables:
        seated = [s["player_id"] for s in table_of(api, table["id"])["seats"]]
        assert alice.player_id not in seated  # type: ignore[attr-defined]
    assert held(api, bob.player_id) == (1_800, 200), "the others keep their seats"  # type: ignore[attr-defined]
    books_balance(api)


def test_a_match_in_play_is_played_to_its_end(api: ApiClient, app: Any) -> None:
    table = open_table(api, format="first_to_knock", stake=500, fee={"bps": 1000})
    alice, bob = player_client(api, deposit=1_000), player_client(api, deposit=1_000)
    for client in (alice, bob):
        assert join(client, table["id"]).status_code == 201
    match_id = table["match_id"]
    exclude(api, alice.player_id)  # type: ignore[attr-defined]
    assert table_of(api, table["id"])["status"] == "playing"
    assert held(api, alice.player_id) == (500, 500), "its stake stays in the match"  # type: ignore[attr-defined]
    final = play_match([alice, bob], match_id)  # it plays on to the end
    assert final["status"] == "finished"
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        done = in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    assert sorted(done.statement["payouts"]) == [0, 900]
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True, audit["discrepancies"]
    books_balance(api)


def test_a_per_hand_seat_is_sat_out_and_shown_so(api: ApiClient) -> None:
    table = open_table(api, currency="EUR", **RUMMY)
    clients = [player_client(api, deposit=1_000) for _ in range(3)]
    ids = [c.player_id for c in clients]  # type: ignore[attr-defined]
    for client in clients:
        assert join(client, table["id"], buyin=200).status_code == 201
    hand = table_of(api, table["id"])["match_id"]
    dealt = [s["player_id"] for s in api.get(f"/v1/matches/{hand}").get_json()["seats"]]
    assert dealt == ids[:2]
    exclude(api, ids[2])  # waiting for the next hand
    exclude(api, ids[0])  # dealt into the hand being played
    ready = {s["player_id"]: s["ready"] for s in table_of(api, table["id"])["seats"]}
    assert ready == {ids[0]: False, ids[1]: True, ids[2]: False}
    assert api.get(f"/v1/matches/{hand}").get_json()["status"] == "playing"
    # It cannot sit itself back in while excluded; sitting out stays allowed.
    back = clients[2].put(f"/v1/tables/{table['id']}/seats/me/ready", {"ready": True})
    assert back.status_code == 422 and back.get_json()["code"] == "self_excluded"
    out = clients[2].put(f"/v1/tables/{table['id']}/seats/me/ready", {"ready": False})
    assert out.status_code == 200, out.get_json()
    # Between its hands it may leave with its whole balance.
    left = clients[2].delete(f"/v1/tables/{table['id']}/seats/me", key=secrets.token_hex(8))
    assert left.status_code == 200, left.get_json()
    assert held(api, ids[2]) == (1_000, 0)
    books_balance(api)
