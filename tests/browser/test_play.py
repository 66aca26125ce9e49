"""The practice table (/play): a person pastes a player token, sits at a practice table with
the practice bots and plays a whole hand by clicks to its end, seeing the result in the page's
status region; no other seat's card ever reaches the page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from service.client import GinClient
from service.practice import open_table, practice_player
from tests.integration.workers import Served

CARD = re.compile(r"\b[A2-9TJQK][CDHS]\b")
RANK = "A23456789TJQK"
#: My actions before the test resigns (a drawn-out hand must not run past the time budget).
MAX_ACTIONS = 80
ENDED = re.compile(r"Hand 1 is over|Match over")


@pytest.fixture(scope="module")
def operator(served: Served) -> Iterator[GinClient]:
    with GinClient(served.base, served.api_key()) as client:
        yield client


def status_text(page: Any) -> str:
    return str(page.get_by_role("status").inner_text())


def wait_for_my_turn_or_the_end(page: Any) -> None:
    page.wait_for_function(
        """() => {
          const status = document.getElementById("status").innerText;
          return /Hand 1 is over|Match over/.test(status) ||
            (/Your turn/.test(status) &&
             [...document.querySelectorAll("#actions button, #hand button")]
               .some((b) => !b.disabled && b.textContent !== "Resign"));
        }""",
        timeout=30_000,
    )


def others_cards(operator: GinClient, match_id: str, me: str) -> set[str]:
    """Every card in the hand of another seat dealt from my deck (partnership Gin's other
    table has a deck of its own), from that seat's own view (the bots are players of the
    operator: it mints each a token)."""
    view = dict(operator.match(match_id))
    mine = next(s["seat"] for s in view["seats"] if s["player_id"] == me)
    tables = (view.get("play") or {}).get("tables") or [
        {"seats": [s["seat"] for s in view["seats"]]}
    ]
    deck = next((t["seats"] for t in tables if mine in t["seats"]), [])
    cards: set[str] = set()
    for seat in view["seats"]:
        if seat["seat"] == mine or seat["seat"] not in deck:
            continue
        token = operator.player_token(seat["player_id"], 60)["token"]
        theirs = dict(operator.as_(token).match(match_id))
        if theirs.get("hand"):
            cards |= set(theirs["hand"]["hand"])
        play = theirs.get("play") or {}
        for table in play.get("tables") or [play.get("hand") or {}]:
            cards |= set((table.get("hand") or {}).get("hand") or [])
    return cards


def check_no_other_seat_card(page: Any, operator: GinClient, match_id: str, me: str) -> None:
    """Called on my turn (nobody else can move): the page holds none of the others' cards."""
    shown = set(CARD.findall(page.content()))
    seat = next(s["seat"] for s in operator.match(match_id)["seats"] if s["player_id"] == me)
    other_decks = page.locator(f"#piles [data-seats]:not([data-seats~='{seat}'])")
    shown -= {code for text in other_decks.all_inner_texts() for code in CARD.findall(text)}
    shown -= {
        str(label)
        for label in other_decks.locator("[aria-label]").evaluate_all(
            "nodes => nodes.map((n) => n.getAttribute('aria-label'))"
        )
    }
    hidden = others_cards(operator, match_id, me)
    assert hidden, "the other seats' hands were not read"
    assert not shown & hidden, f"cards of another seat on the page: {shown & hidden}"


def highest(page: Any) -> Any:
    """The enabled card of the highest rank (the most deadwood to shed)."""
    cards = page.locator("#hand button:enabled")
    names = [cards.nth(i).get_attribute("aria-label") for i in range(cards.count())]
    best = max(names, key=lambda code: RANK.index(code[0]))
    return page.get_by_role("button", name=best, exact=True)


def click_one_action(page: Any) -> None:
    """The simple strategy: gin or knock when offered; Rummy's melds and lay-offs; draw from
    the stock (pass on the upcard); else discard the highest card."""
    actions = page.get_by_role("group", name="Actions")
    for mode in ("Gin", "Knock"):
        button = actions.get_by_role("button", name=mode, exact=True)
        if button.count() and button.is_enabled():
            button.click()
            highest(page).click()
            return
    for name in (re.compile(r"^Meld "), re.compile(r"^Lay off ")):
        button = actions.get_by_role("button", name=name)
        if button.count():
            button.first.click()
            return
    for name in ("Draw from stock", "Pass", "Decline", "Turn over the discard pile"):
        button = actions.get_by_role("button", name=name, exact=True)
        if button.count() and button.is_enabled():
            button.click()
            return
    highest(page).click()


def play_first_hand(page: Any, operator: GinClient, table: dict[str, Any]) -> str:
    """Sit at ``table`` with a fresh practice player's token and play its first hand by clicks
    to its end; returns the status region's text then."""
    player_id, minted = practice_player(operator, "Tester", ttl_seconds=600)
    token = minted["token"]
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"/play#token={token}")
    assert "token" not in page.url, "the token stays in the address bar"
    assert page.evaluate("sessionStorage.length") == 1
    page.get_by_role("button", name=f"Sit at {table['name']} ({table['id']})").click()
    actions = 0
    while True:
        wait_for_my_turn_or_the_end(page)
        if ENDED.search(status_text(page)):
            assert not [url for url in requested if token in url], "the token went into a URL"
            return status_text(page)
        check_no_other_seat_card(page, operator, table["match_id"], player_id)
        actions += 1
        if actions > MAX_ACTIONS:
            page.get_by_role("button", name="Resign", exact=True).click()
            page.get_by_role("button", name="Confirm resign", exact=True).click()
        else:
            version = operator.match(table["match_id"])["version"]
            click_one_action(page)
            page.wait_for_function(
                "v => Number(document.getElementById('status').dataset.version) > v", arg=version
            )


def check_the_result_shown(status: str, view: dict[str, Any]) -> None:
    """The status region tells the hand's end as the server's view records it."""
    if view["status"] == "finished":  # resigned after MAX_ACTIONS
        assert view["result"]["forfeiter"] is not None or view["result"].get("forfeiters")
        assert "Match over" in status and "(you forfeited)" in status
        return
    record = view["previous_hand"] if view.get("previous_hand") else view["play"]["hands"][0]
    assert f"Hand {record['number']} is over" in status
    if record["winner"] is not None:
        winner = view["seats"][record["winner"]]["display_name"]
        points = record["points"]
        points = points[record["winner"]] if isinstance(points, list) else points
        assert f"{winner} " in status and f"({points} points)" in status


def test_a_two_player_gin_hand_played_by_clicks(page: Any, operator: GinClient) -> None:
    table = open_table(operator, "gin")
    status = play_first_hand(page, operator, table)
    check_the_result_shown(status, dict(operator.match(table["match_id"])))


def test_a_rummy_hand_played_by_clicks(page: Any, operator: GinClient) -> None:
    table = open_table(operator, "rummy", seat_count=2)
    status = play_first_hand(page, operator, table)
    check_the_result_shown(status, dict(operator.match(table["match_id"])))
