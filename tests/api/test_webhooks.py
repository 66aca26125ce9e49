"""Webhook endpoints over HTTP: CRUD, secrets shown once, rotation, validation problems,
tenancy, the delivery log and redelivery."""

from __future__ import annotations

from typing import Any

import pytest

from service.clock import utcnow
from service.usecases import webhooks
from tests.api.play_clients import player_client, seated_match
from tests.conftest import ApiClient, in_unit, new_operator

URL = "https://ops.example/gin/webhooks"


def create(api: ApiClient, **body: Any) -> dict[str, Any]:
    response = api.post("/v1/webhook-endpoints", {"url": URL, **body})
    assert response.status_code == 201, response.get_json()
    return dict(response.get_json())


def problem(response: Any, status: int, code: str, field: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = dict(response.get_json())
    assert body["code"] == code
    if field is not None:
        assert field in [e["field"] for e in body["errors"]], body
    return body


def test_create_shows_the_secret_once(api: ApiClient) -> None:
    created = create(api, description="Ops", event_types=["settlement.completed"])
    assert created["id"].startswith("whk_") and created["object"] == "webhook_endpoint"
    assert created["secret"].startswith("whsec_")
    assert created["url"] == URL and created["enabled"] is True
    assert created["event_types"] == ["settlement.completed"]
    assert created["previous_secret_expires_at"] is None
    shown = api.get(f"/v1/webhook-endpoints/{created['id']}")
    assert shown.status_code == 200
    listed = api.get("/v1/webhook-endpoints")
    for response in (shown, listed):
        assert "whsec_" not in response.get_data(as_text=True)  # never again
    assert [e["id"] for e in listed.get_json()["data"]] == [created["id"]]
    assert create(api)["event_types"] is None  # left out: every event type


@pytest.mark.parametrize(
    "body, field",
    [
        ({"url": "ftp://ops.example/hook"}, "url"),
        ({"url": "ops.example/hook"}, "url"),
        ({"url": "https://"}, "url"),
        ({"url": "https://user:pw@ops.example/hook"}, "url"),
        ({"url": "https://ops.example/hook#frag"}, "url"),
        ({"url": "https://ops.example:99999/hook"}, "url"),
        ({"url": "https://ops.example/a b"}, "url"),
        ({"url": "http://[fe80::1%25eth0]/hook"}, "url"),
        ({"url": "https://ops.example:0/hook"}, "url"),
        ({"url": "https://ops.example/caf\u00e9"}, "url"),
        ({"url": 12}, "url"),
        ({"url": None}, "url"),
        ({}, "url"),
        ({"url": "https://" + "a" * 2050}, "url"),
        ({"url": URL, "event_types": ["match.exploded"]}, "event_types"),
        ({"url": URL, "event_types": []}, "event_types"),
        ({"url": URL, "event_types": "match.finished"}, "event_types"),
        ({"url": URL, "enabled": "maybe"}, "enabled"),
        ({"url": URL, "description": "x" * 256}, "description"),
    ],
)
def test_invalid_endpoints_are_problems_naming_the_field(
    api: ApiClient, body: dict[str, Any], field: str
) -> None:
    problem(api.post("/v1/webhook-endpoints", body), 422, "validation_failed", field)


PRIVATE_URLS = [
    "http://127.0.0.1:8080/hook",
    "http://127.1/hook",
    "http://2130706433/hook",
    "http://0x7f000001/hook",
    "http://localhost/hook",
    "https://api.localhost./hook",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[fe80::1]/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.1.2.3/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.10/hook",
    "http://100.64.0.1/hook",
    "http://[fc00::1]/hook",
    "http://[fd12:3456::1]/hook",
    "http://0.0.0.0/hook",
    "http://[::]/hook",
    "http://[64:ff9b::a00:1]/hook",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_private_targets_are_refused_at_creation_and_update(api: ApiClient, url: str) -> None:
    """Server-side request forgery is refused when the URL is given, not only at delivery:
    any address that is not public, however it is spelt, and the loopback names."""
    body = problem(api.post("/v1/webhook-endpoints", {"url": url}), 422, "validation_failed", "url")
    assert "public address" in body["detail"]
    created = create(api)
    path = f"/v1/webhook-endpoints/{created['id']}"
    problem(api.patch(path, {"url": url}), 422, "validation_failed", "url")
    assert api.get(path).get_json()["url"] == URL


def test_private_targets_are_allowed_when_configured(database_url: str) -> None:
    """WEBHOOK_ALLOW_PRIVATE_NETWORKS (development, tests) lets an endpoint name any address;
    public names and addresses are taken either way."""
    from tests.conftest import new_operator, serving

    with serving(database_url, WEBHOOK_ALLOW_PRIVATE_NETWORKS=True) as allowing:
        _, key = new_operator(allowing)
        api = ApiClient(allowing.test_client(), key)
        for url in (
            "http://127.0.0.1:9/hook",
            "http://[::1]/hook",
            "http://localhost/x",
            "https://93.184.215.14/hook",
        ):
            assert create(api, url=url)["url"] == url


def test_update_disable_enable_and_validate(api: ApiClient) -> None:
    created = create(api)
    path = f"/v1/webhook-endpoints/{created['id']}"
    changed = api.patch(
        path,
        {
            "enabled": False,
            "event_types": ["match.finished"],
            "url": "http://hooks.ops.example:8080/x",
            "description": "later",
        },
    )
    assert changed.status_code == 200, changed.get_json()
    body = changed.get_json()
    assert body["enabled"] is False and body["event_types"] == ["match.finished"]
    assert body["url"] == "http://hooks.ops.example:8080/x" and "secret" not in body
    assert api.patch(path, {"event_types": None}).get_json()["event_types"] is None
    assert api.patch(path, {"enabled": True}).get_json()["enabled"] is True
    problem(api.patch(path, {"url": "javascript:alert(1)"}), 422, "validation_failed", "url")
    problem(api.patch(path, {"event_types": ["nope"]}), 422, "validation_failed", "event_types")
    assert api.get(path).get_json()["url"] == "http://hooks.ops.example:8080/x"  # nothing changed


def test_rotation_returns_a_new_secret_and_keeps_the_old_for_the_grace(api: ApiClient) -> None:
    created = create(api)
    path = f"/v1/webhook-endpoints/{created['id']}/rotate-secret"
    rotated = api.post(path, {"grace_period_seconds": 3600})
    assert rotated.status_code == 200, rotated.get_json()
    body = rotated.get_json()
    assert body["secret"].startswith("whsec_") and body["secret"] != created["secret"]
    assert body["previous_secret_expires_at"] is not None
    assert "whsec_" not in api.get(f"/v1/webhook-endpoints/{created['id']}").get_data(True)
    immediate = api.post(path, {"grace_period_seconds": 0}).get_json()
    assert immediate["previous_secret_expires_at"] is None
    assert api.post(path).get_json()["previous_secret_expires_at"] is not None  # 24 h default
    for bad in (-1, 8 * 86400, 1.5, "60"):
        problem(
            api.post(path, {"grace_period_seconds": bad}),
            422,
            "validation_failed",
            "grace_period_seconds",
        )


def test_delete_hides_the_endpoint(api: ApiClient) -> None:
    created = create(api)
    path = f"/v1/webhook-endpoints/{created['id']}"
    deleted = api.delete(path)
    assert deleted.status_code == 200
    assert deleted.get_json()["deleted"] is True and "secret" not in deleted.get_json()
    for response in (
        api.get(path),
        api.delete(path),
        api.patch(path, {"enabled": True}),
        api.post(f"{path}/rotate-secret"),
        api.get(f"{path}/deliveries"),
    ):
        problem(response, 404, "not_found")
    assert api.get("/v1/webhook-endpoints").get_json()["data"] == []


def test_list_is_cursor_paginated_newest_first(api: ApiClient) -> None:
    ids = [create(api)["id"] for _ in range(3)]
    first = api.get("/v1/webhook-endpoints?limit=2").get_json()
    assert [e["id"] for e in first["data"]] == ids[::-1][:2]
    assert first["has_more"] is True and first["next_cursor"] == ids[1]
    rest = api.get(f"/v1/webhook-endpoints?limit=2&starting_after={ids[1]}").get_json()
    assert [e["id"] for e in rest["data"]] == [ids[0]] and rest["has_more"] is False
    back = api.get(f"/v1/webhook-endpoints?ending_before={ids[0]}").get_json()
    assert [e["id"] for e in back["data"]] == ids[::-1][:2]
    problem(api.get("/v1/webhook-endpoints?starting_after=whk_nope"), 400, "invalid_cursor")
    problem(api.get("/v1/webhook-endpoints?limit=0"), 422, "validation_failed", "limit")


def test_other_operators_players_and_strangers_are_kept_out(
    api: ApiClient, other_api: ApiClient
) -> None:
    created = create(api)
    path = f"/v1/webhook-endpoints/{created['id']}"
    for response in (
        other_api.get(path),
        other_api.patch(path, {"enabled": False}),
        other_api.delete(path),
        other_api.post(f"{path}/rotate-secret"),
        other_api.get(f"{path}/deliveries"),
    ):
        problem(response, 404, "not_found")
    assert other_api.get("/v1/webhook-endpoints").get_json()["data"] == []
    player = player_client(api, deposit=0)
    problem(player.get("/v1/webhook-endpoints"), 403, "forbidden")
    problem(player.post("/v1/webhook-endpoints", {"url": URL}), 403, "forbidden")
    problem(player.get(path), 403, "forbidden")
    problem(api.as_(None).get(path), 401, "unauthenticated")
    assert api.get(path).get_json()["enabled"] is True  # untouched


def _finished_match_deliveries(app: Any, api: ApiClient, endpoint_id: str) -> list[str]:
    """Finish a match by resignation and fan its events out (as the worker would)."""
    from sqlalchemy import select

    from service.db.match_models import OutboxEvent

    clients, table = seated_match(api)
    clients[0].post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():
            events = session.scalars(
                select(OutboxEvent.id).where(OutboxEvent.subject_id == table["match_id"])
            ).all()
        return [d for event in events for d in in_unit(session, webhooks.fan_out, event, utcnow())]
    finally:
        session.close()


def test_delivery_log_and_redelivery_over_http(
    app: Any, api: ApiClient, other_api: ApiClient
) -> None:
    endpoint = create(api, url="http://receiver.example:9/unused", event_types=["match.finished"])
    ids = _finished_match_deliveries(app, api, endpoint["id"])
    assert len(ids) == 1  # only the subscribed type
    log = api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries")
    assert log.status_code == 200
    (delivery,) = log.get_json()["data"]
    assert delivery["id"] == ids[0] and delivery["id"].startswith("whd_")
    assert delivery["object"] == "webhook_delivery" and delivery["event_type"] == "match.finished"
    assert delivery["status"] == "pending" and delivery["attempts"] == []
    assert delivery["event_id"].startswith("evt_") and delivery["attempt_count"] == 0
    assert api.get(f"/v1/webhook-deliveries/{ids[0]}").get_json()["id"] == ids[0]
    filtered = api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries?status=delivered")
    assert filtered.get_json()["data"] == []
    problem(
        api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries?status=lost"),
        422,
        "validation_failed",
        "status",
    )
    # Another operator can neither see nor redeliver it; a player may not either.
    problem(other_api.get(f"/v1/webhook-deliveries/{ids[0]}"), 404, "not_found")
    problem(other_api.post(f"/v1/webhook-deliveries/{ids[0]}/redeliver"), 404, "not_found")
    problem(
        player_client(api, deposit=0).post(f"/v1/webhook-deliveries/{ids[0]}/redeliver"),
        403,
        "forbidden",
    )
    problem(api.post("/v1/webhook-deliveries/whd_nope/redeliver"), 404, "not_found")
    redelivered = api.post(f"/v1/webhook-deliveries/{ids[0]}/redeliver")
    assert redelivered.status_code == 202 and redelivered.get_json()["status"] == "pending"
    # A disabled endpoint takes no redelivery.
    api.patch(f"/v1/webhook-endpoints/{endpoint['id']}", {"enabled": False})
    problem(
        api.post(f"/v1/webhook-deliveries/{ids[0]}/redeliver"), 409, "webhook_endpoint_disabled"
    )


def test_disabled_and_other_operators_endpoints_get_no_deliveries(
    app: Any, api: ApiClient, other_api: ApiClient
) -> None:
    disabled = create(api, enabled=False)
    foreign = create(other_api)
    assert _finished_match_deliveries(app, api, disabled["id"]) == []
    log = other_api.get(f"/v1/webhook-endpoints/{foreign['id']}/deliveries").get_json()
    assert log["data"] == []


def test_test_events_are_for_the_operators_own_enabled_endpoints(api: ApiClient, app: Any) -> None:
    """Another operator's endpoint is a 404, a player token a 403, a disabled endpoint a
    409 (nothing is sent to it, as for a redelivery), a deleted one a 404."""
    endpoint = create(api)
    path = f"/v1/webhook-endpoints/{endpoint['id']}/test"
    _, other_key = new_operator(app, "Other Casino")
    other = ApiClient(app.test_client(), other_key)
    problem(other.post(path), 404, "not_found")
    problem(other.post("/v1/webhook-endpoints/whk_missing/test"), 404, "not_found")
    player = player_client(api)
    problem(player.post(path), 403, "forbidden")
    assert (
        api.patch(f"/v1/webhook-endpoints/{endpoint['id']}", {"enabled": False}).status_code == 200
    )
    problem(api.post(path), 409, "webhook_endpoint_disabled")
    log = api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries").get_json()
    assert log["data"] == []
    assert (
        api.patch(f"/v1/webhook-endpoints/{endpoint['id']}", {"enabled": True}).status_code == 200
    )
    assert api.post(path).status_code == 202
    assert api.delete(f"/v1/webhook-endpoints/{endpoint['id']}").status_code == 200
    problem(api.post(path), 404, "not_found")
