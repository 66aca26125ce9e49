"""Every table body docs/games.md shows (its fenced JSON blocks, read from the page itself, so
the page and this test cannot drift apart) opens its table as it is, and the players it needs
sit down at it, depositing first and buying in where the format takes a buy-in, until its
match (or a ``rummy_per_hand`` table's first hand) is being played. The same bodies are
openapi.yaml's examples of ``POST /v1/tables``, and its example seat request is one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from service.api.examples import REQUEST_EXAMPLES, TABLE_EXAMPLES
from service.games.registry import GAME_FORMATS
from tests.api.play_clients import join, player_client
from tests.conftest import ApiClient

GAMES_DOC = Path(__file__).resolve().parents[2] / "docs" / "games.md"
FENCED_JSON = re.compile(r"^```json\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def doc_tables() -> list[dict[str, Any]]:
    """The bodies of docs/games.md's fenced JSON blocks, in their order."""
    return [json.loads(block) for block in FENCED_JSON.findall(GAMES_DOC.read_text())]


def test_the_page_shows_a_table_of_every_game_and_format_and_openapi_the_same() -> None:
    bodies = doc_tables()
    shown = {(b.get("game", "gin"), b["format"]) for b in bodies}
    offered = {(g.value, f.value) for g, formats in GAME_FORMATS.items() for f in formats}
    assert shown == offered
    assert bodies == list(TABLE_EXAMPLES.values())


@pytest.mark.parametrize(
    "body", doc_tables(), ids=lambda b: f"{b.get('game', 'gin')}-{b['format']}"
)
def test_every_table_the_page_shows_opens_and_seats_its_players(
    api: ApiClient, body: dict[str, Any]
) -> None:
    response = api.post("/v1/tables", body)
    assert response.status_code == 201, response.get_json()
    table = response.get_json()
    # what it is staked and played to, as the body says: a stake or a buy-in range, and a
    # target for the formats that count to one (First To Knock, one hand decides: none)
    assert (table["stake"] is None) == ("stake" not in body)
    assert (table["min_buyin"] is None) == ("min_buyin" not in body)
    if "target" in body or body["format"] == "first_to_knock":
        assert table["target"] == body.get("target")
    seats = table["seat_count"]
    seat_body = dict(REQUEST_EXAMPLES["joinTable"])
    if "min_buyin" in body:
        seat_body["buyin"] = body["min_buyin"]
    for i in range(seats):
        player = player_client(api, deposit=body.get("max_buyin", body.get("stake", 0)))
        seated = join(player, table["id"], **seat_body)
        assert seated.status_code == 201, seated.get_json()
        expected = "open" if i < seats - 1 or body["format"] == "rummy_per_hand" else "playing"
        assert seated.get_json()["status"] == expected
    now = api.get(f"/v1/tables/{table['id']}").get_json()
    assert now["free_seats"] == 0
    match = api.get(f"/v1/matches/{now['match_id']}").get_json()
    assert match["status"] == "playing", match
