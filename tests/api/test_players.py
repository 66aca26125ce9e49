"""Players: creation, uniqueness of external ids, reads, updates, listing, self-exclusion."""

from __future__ import annotations

from tests.conftest import ApiClient, assert_problem


def test_create_and_read_a_player(api: ApiClient) -> None:
    created = api.post(
        "/v1/players", {"external_id": "u-1", "display_name": "Bob", "display_currency": "USD"}
    )
    assert created.status_code == 201
    body = created.get_json()
    assert body["id"].startswith("ply_") and body["object"] == "player"
    assert (body["external_id"], body["display_name"], body["display_currency"]) == (
        "u-1",
        "Bob",
        "USD",
    )
    assert body["created_at"].endswith("Z") and body["self_excluded_until"] is None
    assert api.get(f"/v1/players/{body['id']}").get_json() == body


def test_external_id_is_unique_per_operator(api: ApiClient, other_api: ApiClient) -> None:
    api.post("/v1/players", {"external_id": "same", "display_name": "A"})
    assert_problem(
        api.post("/v1/players", {"external_id": "same", "display_name": "B"}),
        409,
        "external_id_taken",
    )
    assert (
        other_api.post("/v1/players", {"external_id": "same", "display_name": "C"}).status_code
        == 201
    )


def test_update_display_fields(api: ApiClient) -> None:
    player = api.new_player()
    patched = api.patch(
        f"/v1/players/{player['id']}", {"display_currency": "JPY", "display_name": "Zed"}
    )
    assert patched.status_code == 200
    assert (patched.get_json()["display_currency"], patched.get_json()["display_name"]) == (
        "JPY",
        "Zed",
    )
    cleared = api.patch(f"/v1/players/{player['id']}", {"display_currency": None})
    assert cleared.get_json()["display_currency"] is None
    assert_problem(
        api.patch(f"/v1/players/{player['id']}", {"external_id": "no"}), 422, "validation_failed"
    )


def test_players_list_is_cursor_paginated_newest_first(api: ApiClient) -> None:
    ids = [api.new_player()["id"] for _ in range(5)]
    first = api.get("/v1/players?limit=2").get_json()
    assert [p["id"] for p in first["data"]] == ids[::-1][:2]
    assert first["has_more"] and first["next_cursor"] == ids[3]
    second = api.get(f"/v1/players?limit=2&starting_after={first['next_cursor']}").get_json()
    assert [p["id"] for p in second["data"]] == [ids[2], ids[1]]
    last = api.get(f"/v1/players?limit=2&starting_after={second['next_cursor']}").get_json()
    assert [p["id"] for p in last["data"]] == [ids[0]]
    assert not last["has_more"] and last["next_cursor"] is None
    back = api.get(f"/v1/players?limit=2&ending_before={ids[1]}").get_json()
    assert [p["id"] for p in back["data"]] == [ids[3], ids[2]]
    assert back["has_more"]
    assert_problem(api.get("/v1/players?limit=0"), 422, "validation_failed")
    assert_problem(api.get("/v1/players?limit=101"), 422, "validation_failed")
    assert_problem(api.get("/v1/players?starting_after=ply_nope"), 400, "invalid_cursor")
    assert_problem(
        api.get(f"/v1/players?starting_after={ids[0]}&ending_before={ids[1]}"),
        422,
        "validation_failed",
    )


def test_self_exclusion_blocks_deposits_and_cannot_be_shortened(api: ApiClient) -> None:
    player = api.new_player()
    path = f"/v1/players/{player['id']}/self-exclusion"
    set_ = api.put(path, {"until": "2099-01-01T00:00:00Z"})
    assert set_.status_code == 200
    assert set_.get_json()["self_excluded_until"] == "2099-01-01T00:00:00Z"
    assert_problem(api.deposit(player["id"], 100), 422, "self_excluded")
    assert_problem(api.put(path, {"until": "2098-01-01T00:00:00Z"}), 422, "self_exclusion_locked")
    assert (
        api.put(path, {"until": "2100-01-01T00:00:00+02:00"}).get_json()["self_excluded_until"]
        == "2099-12-31T22:00:00Z"
    )
    assert_problem(api.put(path, {"until": "2020-01-01T00:00:00Z"}), 422, "validation_failed")
    assert_problem(api.put(path, {"until": "2099-01-01T00:00:00"}), 422, "validation_failed")
    assert api.get(f"/v1/players/{player['id']}/wallets").get_json()["data"] == []
