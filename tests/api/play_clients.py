"""Scripted HTTP clients for whole matches: an operator opens a table, two players sit down
and play through the API, each deciding with the practice bot or a script."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from service.games.gin.bot import decide
from tests.conftest import ApiClient

CODE = re.compile(r"\b[A2-9TJQK][CDHS]\b")


def player_client(api: ApiClient, deposit: int = 100_000, currency: str = "EUR") -> ApiClient:
    """A funded player of ``api``'s operator, acting with its own token."""
    player = api.new_player()
    if deposit:
        assert api.deposit(player["id"], deposit, currency).status_code == 201
    response = api.post(f"/v1/players/{player['id']}/tokens", {})
    assert response.status_code == 201, response.get_json()
    client = api.as_(response.get_json()["token"])
    client.player_id = player["id"]  # type: ignore[attr-defined]
    return client


def open_table(api: ApiClient, **settings: Any) -> dict[str, Any]:
    body = {"format": "match_play", "currency": "EUR", "stake": 500, **settings}
    response = api.post("/v1/tables", body)
    assert response.status_code == 201, response.get_json()
    return dict(response.get_json())


def join(client: ApiClient, table_id: str, **body: Any) -> Any:
    return client.post(f"/v1/tables/{table_id}/seats", body, key=secrets.token_hex(8))


@dataclass
class Recorder:
    """Keeps every response body a client received, to scan for leaked cards."""

    seen: list[tuple[int | None, dict[str, Any]]] = field(default_factory=list)


def action_body(action: str | Mapping[str, Any], version: int) -> dict[str, Any]:
    """The request body of ``action``: a listed legal action (sent as it is) or a text form
    (``"DISCARD TD"``), decided on ``version``."""
    if not isinstance(action, str):
        return {**action, "expected_version": version}
    words = action.split("|")[0].split()
    body: dict[str, Any] = {"action": words[0], "expected_version": version}
    if len(words) > 1:
        body["card"] = words[1]
    return body


def legal_texts(hand_view: Mapping[str, Any]) -> list[str]:
    """A hand view's legal actions in their text forms (``"DISCARD TD"``)."""
    return [
        " ".join(filter(None, (a["action"], a.get("card"))))
        for a in hand_view.get("legal_actions") or []
    ]


Policy = Callable[[dict[str, Any]], str | Mapping[str, Any]]


def play_match(
    clients: list[ApiClient],
    match_id: str,
    policies: list[Policy] | None = None,
    recorder: Recorder | None = None,
    max_actions: int = 5000,
) -> dict[str, Any]:
    """Both clients play until the match is over; returns the final view."""
    policies = policies or [lambda v: decide(v["hand"]), lambda v: decide(v["hand"])]
    for _ in range(max_actions):
        views = []
        for client in clients:
            response = client.get(f"/v1/matches/{match_id}")
            assert response.status_code == 200, response.get_json()
            view = response.get_json()
            if recorder is not None:
                recorder.seen.append((view["you"], view))
            views.append(view)
        view = views[0]
        if view["status"] != "playing":
            return view
        to_act = view["hand"]["to_act"]
        mover = next(v for v in views if v["you"] == to_act)
        client = clients[views.index(mover)]
        text = policies[views.index(mover)](mover)
        response = client.post(
            f"/v1/matches/{match_id}/actions", action_body(text, mover["version"])
        )
        assert response.status_code == 200, (text, response.get_json())
        if recorder is not None:
            recorder.seen.append((mover["you"], response.get_json()))
    raise AssertionError("match did not end")


def leaked_cards(seat: int | None, view: dict[str, Any]) -> set[str]:
    """Card codes in a view that its reader may not know (the other hand, the stock)."""
    hand = view.get("hand")
    if not hand or hand.get("phase") == "ENDED":
        return set()
    known = set(hand.get("discard_pile", [])) | {hand.get("upcard")}
    known |= set(hand.get("hand") or [])
    for entry in hand.get("log", []):
        if (
            entry["action"] in ("TAKE_UPCARD", "DRAW_DISCARD")
            or (entry["action"] == "DRAW_STOCK" and entry.get("seat") == seat)
            or entry["action"] == "DISCARD"
        ) and "card" in entry:
            known.add(entry["card"])
    shown: set[str] = set()
    for value in _strings(hand):
        shown |= set(CODE.findall(value))
    return shown - known


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def wallet(api: ApiClient, player_id: str, currency: str = "EUR") -> dict[str, Any]:
    response = api.get(f"/v1/players/{player_id}/wallets/{currency}")
    assert response.status_code == 200
    return dict(response.get_json())


def seated_match(api: ApiClient, **settings: Any) -> tuple[list[ApiClient], dict[str, Any]]:
    table = open_table(api, **settings)
    clients = [player_client(api), player_client(api)]
    buyin = {"buyin": settings["min_buyin"]} if "min_buyin" in settings else {}
    for client in clients:
        response = join(client, table["id"], **buyin)
        assert response.status_code == 201, response.get_json()
    return clients, table


FORMATS = [
    {"format": "first_to_knock", "stake": 300, "fee": {"bps": 500}},
    {"format": "match_play", "stake": 500, "target": 100, "fee": {"bps": 1000}},
    {
        "format": "money_play",
        "stake_per_point": 5,
        "min_buyin": 2000,
        "max_buyin": 5000,
        "target": 50,
    },
    {
        "format": "classic",
        "stake_per_point": 1,
        "min_buyin": 2000,
        "max_buyin": 5000,
        "target": 100,
    },
]
