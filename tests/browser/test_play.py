"""The practice table (/play): a person pastes a player token, sits at a practice table with
the practice bots and plays a whole hand by clicks to its end, seeing the result in the page's
status region; no other seat's card ever reaches the page."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from service.client import GinClient
from service.practice import GAME_NAMES, PLAY_MONEY, open_table, practice_player
from tests.browser.tour import DESKTOP, PHONE
from tests.integration.workers import GIN_SERVICE, Served

CARD = re.compile(r"\b[A2-9TJQK][CDHS]\b")
RANK = "A23456789TJQK"
#: My actions before the test resigns (a drawn-out hand must not run past the time budget).
MAX_ACTIONS = 80
LABELS = "nodes => nodes.map((n) => n.getAttribute('aria-label'))"
WITHOUT_OTHER_DECKS = """seat => {
    const page = document.documentElement.cloneNode(true);
    page.querySelectorAll(`#piles [data-seats]:not([data-seats~='${seat}'])`)
        .forEach((pile) => pile.remove());
    return page.outerHTML;
}"""
#: The page's version and its HTML, read at one instant.
SNAPSHOT = """() => [
    Number(document.getElementById('status').dataset.version),
    document.documentElement.outerHTML,
]"""
ENDED = re.compile(r"Hand 1 is over|Match over")


@pytest.fixture(scope="module")
def operator(served: Served) -> Iterator[GinClient]:
    with GinClient(served.base, served.api_key()) as client:
        yield client


def status_text(page: Any) -> str:
    return str(page.get_by_role("status").inner_text())


def wait_for_my_turn_or(page: Any, ended: re.Pattern[str]) -> None:
    page.wait_for_function(
        """ended => {
          const status = document.getElementById("status").innerText;
          return new RegExp(ended).test(status) ||
            (/Your turn/.test(status) &&
             [...document.querySelectorAll("#actions button, #hand button")]
               .some((b) => !b.disabled && b.textContent !== "Resign"));
        }""",
        arg=ended.pattern,
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
    seat = next(s["seat"] for s in operator.match(match_id)["seats"] if s["player_id"] == me)
    # The page as it is at one instant, less the other tables' piles: those tables play on
    # meanwhile, with decks of their own (the same card codes), so reading the page and its
    # other piles apart could catch a card on a pile in one read and gone in the other.
    shown = set(CARD.findall(page.evaluate(WITHOUT_OTHER_DECKS, str(seat))))
    hidden = others_cards(operator, match_id, me)
    assert hidden, "the other seats' hands were not read"
    assert not shown & hidden, f"cards of another seat on the page: {shown & hidden}"


def highest(page: Any) -> Any:
    """The enabled card to shed: the highest of those with no neighbour in the hand (no card
    of its rank, none of its suit within two ranks), else the highest."""
    hand = [str(code) for code in page.locator("#hand button").evaluate_all(LABELS)]
    enabled = [str(code) for code in page.locator("#hand button:enabled").evaluate_all(LABELS)]

    def alone(code: str) -> bool:
        rank = RANK.index(code[0])
        return not any(
            other != code
            and (
                other[0] == code[0]
                or (other[1] == code[1] and abs(RANK.index(other[0]) - rank) <= 2)
            )
            for other in hand
        )

    best = max(enabled, key=lambda code: (alone(code), RANK.index(code[0])))
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


def sit_down(page: Any, operator: GinClient, table: dict[str, Any]) -> tuple[str, str]:
    """A fresh practice player's token handed to the page in the URL's fragment, and a click
    on the table's Sit button; returns the player's id and token."""
    player_id, minted = practice_player(operator, "Tester", ttl_seconds=600)
    token = minted["token"]
    page.goto(f"/play#token={token}")
    assert "token" not in page.url, "the token stays in the address bar"
    assert page.evaluate("sessionStorage.length") == 1
    page.get_by_role("button", name=f"Sit at {table['name']} ({table['id']})").click()
    return player_id, token


def play_by_clicks(
    page: Any,
    operator: GinClient,
    table: dict[str, Any],
    player_id: str,
    ended: re.Pattern[str] = ENDED,
    max_actions: int = MAX_ACTIONS,
) -> str:
    """Play by clicks until the status region says ``ended`` (resigning after
    ``max_actions``); returns the status region's text then."""
    actions = 0
    while True:
        wait_for_my_turn_or(page, ended)
        if ended.search(status_text(page)):
            return status_text(page)
        check_no_other_seat_card(page, operator, table["match_id"], player_id)
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), "overflow"
        actions += 1
        if actions > max_actions:
            page.get_by_role("button", name="Resign", exact=True).click()
            page.get_by_role("button", name="Confirm resign", exact=True).click()
        else:
            version = operator.match(table["match_id"])["version"]
            click_one_action(page)
            page.wait_for_function(
                "v => Number(document.getElementById('status').dataset.version) > v", arg=version
            )


def play_first_hand(page: Any, operator: GinClient, table: dict[str, Any]) -> str:
    """Sit at ``table`` and play its first hand by clicks to its end; no request of the page
    carries the token in its URL."""
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    player_id, token = sit_down(page, operator, table)
    status = play_by_clicks(page, operator, table, player_id)
    assert requested and not [url for url in requested if token in url]
    return status


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
        assert f"{winner} " in status and f"({points} point{'' if points == 1 else 's'})" in status


def test_a_two_player_gin_hand_played_by_clicks(page: Any, operator: GinClient) -> None:
    table = open_table(operator, "gin")
    status = play_first_hand(page, operator, table)
    check_the_result_shown(status, dict(operator.match(table["match_id"])))


def test_a_rummy_hand_played_by_clicks(page: Any, operator: GinClient) -> None:
    """On a phone's screen: nothing runs off its width."""
    page.set_viewport_size(PHONE)
    table = open_table(operator, "rummy", seat_count=2)
    status = play_first_hand(page, operator, table)
    check_the_result_shown(status, dict(operator.match(table["match_id"])))


@pytest.fixture
def multi_table_page(browser: Any, served: Served) -> Iterator[Any]:
    """As the ``page`` fixture, but a 409 is no error: at partnership Gin the other table's
    play moves the match's version, and the page reads the match again and resends."""
    context = browser.new_context(base_url=served.base, viewport=DESKTOP)
    errors: list[str] = []
    opened = context.new_page()
    opened.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            errors.append(f"console {message.type}: {message.text}")
            if message.type == "error" and "status of 409" not in message.text
            else None
        ),
    )
    try:
        yield opened
        assert not errors, errors
    finally:
        context.close()


@pytest.mark.parametrize("game", ["gin_three", "gin_partnership"])
def test_three_player_and_partnership_gin_by_clicks(
    multi_table_page: Any, operator: GinClient, game: str
) -> None:
    """A few turns by clicks at a table of several seats (partnership Gin: two tables, each
    with its own deck), then a resignation ends the match for everyone."""
    page = multi_table_page
    table = open_table(operator, game)
    player_id, _ = sit_down(page, operator, table)
    over = re.compile("Match over")
    status = play_by_clicks(page, operator, table, player_id, over, max_actions=6)
    view = operator.match(table["match_id"])
    seat = next(s["seat"] for s in view["seats"] if s["player_id"] == player_id)
    assert view["status"] == "finished" and view["result"]["forfeiters"] == [seat]
    assert "(you forfeited)" in status


def test_make_run_points_to_the_page_and_gin_service_practice_issues_a_token(
    page: Any, served: Served
) -> None:
    """The banner prints a ready /play link with a practice token, which opens the page
    signed in; ``gin-service practice`` (the demo operator's key from the run's folder) prints
    another, whose fragment the page takes the token from, and opens a practice table of every
    game and the practice tournaments, each waiting for one more player."""
    linked = re.findall(
        rf"^  ({re.escape(served.base)}/play#token=\S+)$", served.log.read_text(), re.M
    )
    assert len(linked) == 1, served.lines()
    page.goto(linked[0].removeprefix(served.base))
    page.get_by_role("button", name="Forget token").wait_for()
    page.get_by_role("button", name="Forget token").click()
    page.goto("/")  # so that the next link is a new page, not a new fragment of this one
    done = subprocess.run(
        [str(GIN_SERVICE), "practice", "--url", served.base, "--name", "Alice"],
        cwd=served.folder,
        env={k: v for k, v in os.environ.items() if k not in ("GIN_VAR_DIR", "GIN_API_KEY")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    issued = json.loads(done.stdout)
    assert issued["play_url"] == f"{served.base}/play#token={issued['token']}"
    assert sorted(t["game"] for t in issued["tables"]) == sorted(GAME_NAMES.values())
    assert sorted(t["kind"] for t in issued["tournaments"]) == ["knockout", "single_table"]
    with GinClient(served.base, issued["token"]) as player:
        lobby = {t["id"]: t for t in player.lobby(currency="XPM", limit=100)["data"]}
        assert all(lobby[t["id"]]["free_seats"] == 1 for t in issued["tables"])
        for t in issued["tournaments"]:  # each waits for one more entry, with bots in the rest
            tournament = player.tournament(t["id"])
            assert tournament["status"] == "open" and tournament["practice"] is True
            assert tournament["entries_taken"] == tournament["entrants"] - 1
        wallet = player.wallet(issued["player_id"], "XPM")
        assert wallet["available"]["amount"] == PLAY_MONEY
    response = page.goto(issued["play_url"].removeprefix(served.base))
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert page.url == f"{served.base}/play"
    page.get_by_role("button", name="Forget token").wait_for()
    assert page.get_by_role("heading", name="Practice tables").is_visible()
    for table in issued["tables"]:
        sit = page.get_by_role("button", name=f"Sit at Practice: {table['game']} ({table['id']})")
        sit.wait_for()
        assert sit.is_enabled()
    for t in issued["tournaments"]:
        enter = page.get_by_role("button", name=f"Enter {t['name']} ({t['id']})")
        enter.wait_for()
        assert enter.is_enabled()


def seat_hands(operator: GinClient, match_id: str) -> tuple[set[int], set[str]]:
    """Every card in any seat's hand now, each read from that seat's own view, and the
    versions those views were at."""
    view = operator.match(match_id)
    versions: set[int] = set()
    cards: set[str] = set()
    for seat in view["seats"]:
        token = operator.player_token(seat["player_id"], 60)["token"]
        theirs = operator.as_(token).match(match_id)
        versions.add(int(theirs["version"]))
        cards |= set((theirs.get("hand") or {}).get("hand") or [])
    return versions, cards


def test_a_spectator_watches_a_public_match_without_any_hand(
    page: Any, operator: GinClient
) -> None:
    """Two bots play; a person with a token of their own watches by the match's id: the page
    follows the match (long-polled) and holds no card of either hand."""
    table = open_table(operator, "gin", bots=2)
    _, minted = practice_player(operator, "Watcher", ttl_seconds=600)
    page.goto(f"/play#token={minted['token']}")
    page.get_by_label("Match id").fill(table["match_id"])
    page.get_by_role("button", name="Watch match").click()
    page.get_by_role("status").filter(has_text="Watching").wait_for()
    assert page.get_by_role("group", name="Your hand").count() == 0
    assert page.get_by_role("button", name="Resign").count() == 0
    shown_at = int(page.locator("#status").get_attribute("data-version"))
    page.wait_for_function(
        "v => Number(document.getElementById('status').dataset.version) > v", arg=shown_at
    )
    # Compared at one version: the hands read before and after the page, and the page, all at
    # the same version (the bots play on; a sample a move fell into is read again).
    compared = 0
    deadline = time.monotonic() + 60
    while compared < 3:
        assert time.monotonic() < deadline, f"only {compared} samples at one version"
        before, hidden = seat_hands(operator, table["match_id"])
        version, html = page.evaluate(SNAPSHOT)
        after, again = seat_hands(operator, table["match_id"])
        if before != {version} or after != {version}:
            continue
        assert hidden == again and len(hidden) >= 10
        shown = set(CARD.findall(html))
        assert not shown & hidden, shown & hidden
        compared += 1


@pytest.mark.page_only
def test_what_the_page_offers_for_the_listed_legal_actions(page: Any) -> None:
    """The page's reading of a view (static/play/model.js, run in the browser): a knock card
    that leaves every other card in melds is also offered as Gin; Rummy's melds and lay-offs
    are buttons named by their cards; a hand's result names the winner and the points."""
    page.goto("/play")
    got = page.evaluate(
        """async () => {
          const m = await import("/assets/play/model.js");
          const hand = ["AC", "2C", "3C", "7D", "7H", "7S", "9S", "TS", "JS", "QS", "KD"];
          const legal = [{action: "KNOCK", card: "KD"}, {action: "DISCARD", card: "KD"},
                         {action: "DISCARD", card: "AC"}];
          const offered = m.offers({cards: hand, legal});
          const rummy = m.offers({cards: ["8H", "9H"], legal: [
            {action: "MELD", cards: ["7S", "7H", "7D"]},
            {action: "LAY_OFF", cards: ["8H", "9H"], meld: 1}, {action: "DRAW_STOCK"}]});
          const names = (seat) => ["Bot", "Ann"][seat];
          return {
            modes: offered.modes.map((x) => [x.name, [...x.cards.keys()]]),
            runs: [m.allMelded(["AC", "2C", "3C", "4C"]), m.allMelded(["QS", "KS", "AS"]),
                   m.allMelded(["5D", "5H", "5S", "5C", "6C", "7C"])],
            rummy: rummy.buttons.map((b) => b.name),
            gin: m.handLine({number: 3, kind: "gin", winner: 1, points: 31}, names),
            rummyLine: m.handLine(
              {number: 1, winner: 0, points: [12, -12], went_rummy: false}, names),
            dead: m.handLine({number: 2, kind: "dead", winner: null, points: 0}, names),
            one: m.handLine({number: 4, kind: "knock", winner: 0, points: 1}, names),
          };
        }"""
    )
    assert got["modes"] == [["Knock", ["KD"]], ["Gin", ["KD"]], ["Discard", ["KD", "AC"]]]
    assert got["runs"] == [True, False, True]
    assert got["rummy"] == ["Meld 7S 7H 7D", "Lay off 8H 9H on meld 2", "Draw from stock"]
    assert got["gin"] == "Hand 3 is over: Ann went gin (31 points)."
    assert got["rummyLine"] == "Hand 1 is over: Bot went out (12 points)."
    assert got["dead"] == "Hand 2 is over: a dead hand, nobody scores."
    assert got["one"] == "Hand 4 is over: Bot won on a knock (1 point)."


@pytest.mark.page_only
def test_a_keyboard_player_keeps_the_focus_across_turns(page: Any, operator: GinClient) -> None:
    """Each redraw replaces the buttons; the focus goes back to the hand or the actions, so
    Tab and Enter play on."""
    table = open_table(operator, "gin")
    sit_down(page, operator, table)
    wait_for_my_turn_or(page, ENDED)
    first = page.locator("#actions button:enabled").first
    first.focus()
    version = int(page.locator("#status").get_attribute("data-version"))
    page.keyboard.press("Enter")
    page.wait_for_function(
        "v => Number(document.getElementById('status').dataset.version) > v", arg=version
    )
    wait_for_my_turn_or(page, ENDED)
    focused = page.evaluate("document.activeElement.closest('#hand, #actions') !== null")
    assert focused, page.evaluate("document.activeElement.outerHTML")
    # Back in the lobby, the match still being played is one click away.
    page.get_by_role("button", name="Back to the tables").click()
    page.get_by_role("button", name="Return to your match").click()
    page.get_by_role("group", name="Your hand").wait_for()
