"""The verify page (/verify): real hands played to their end through the API of the served
run, their histories verified in the browser, tampered ones refused, and the replay checked
step by step against what the server showed each seat while the hand was played."""

from __future__ import annotations

import copy
import json
import random
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from service.bots import decide
from service.bots.multi import action_text, decide_multi
from service.client.api import ApiProblem, GinClient
from service.rules import fair
from service.rules.cards import DECK
from tests.api.play_clients import CODE
from tests.integration.workers import Served


@dataclass
class Played:
    """A finished hand: its history, and each seat's cards as the server showed them to that
    seat after each number of actions (``seen[(match seat, step)]``)."""

    history: dict[str, Any]
    base: str
    operator_key: str
    seen: dict[tuple[int, int], list[str]] = field(default_factory=dict)


def _players(operator: GinClient, count: int) -> list[GinClient]:
    clients = []
    for _ in range(count):
        player = operator.create_player(f"verify-{secrets.token_hex(4)}", "Verifier")
        operator.deposit(player["id"], 100_000, "EUR")
        clients.append(operator.as_(operator.player_token(player["id"])["token"]))
    return clients


def _play(served: Served, seats: int, settings: dict[str, Any]) -> Played:
    """Open a table of the demo operator, seat players and play hand 1 to its end with the
    practice bots' decisions, recording what each seat saw; returns hand 1's history."""
    operator = GinClient(served.base, served.api_key())
    clients = _players(operator, seats)
    table = operator.create_table(currency="EUR", **settings)
    for client in clients:
        client.join(table["id"], **({"buyin": 450} if "min_buyin" in settings else {}))
    match_id = operator.table(table["id"])["match_id"]
    assert match_id
    played = Played({}, served.base, served.api_key())
    rng = random.Random(11)
    for _ in range(2000):
        views = [client.match(match_id) for client in clients]
        rummy = "play" in views[0] and views[0]["play"] is not None
        for view in views:
            hand = view["play"]["hand"] if rummy else view["hand"]
            own = hand["hand"] if rummy else hand
            if hand and hand.get("number", view["hand_number"]) == 1 and own.get("hand"):
                played.seen[(view["you"], len(own["log"]))] = sorted(own["hand"])
        finished = views[0]["status"] != "playing"
        if finished or (views[0]["hand_number"] or 0) > 1:
            break
        if rummy:
            actor = rng.choice(list(views[0]["play"]["to_act"]))
            choice: Any = action_text(decide_multi(views[actor]["play"]))
        else:
            actor = views[0]["hand"]["to_act"]
            choice = decide(views[actor]["hand"])
        clients[actor].act(match_id, choice, views[actor]["version"])
    else:
        raise AssertionError("hand 1 did not end")
    played.history = dict(operator.hand_history(match_id, 1))
    operator.close()
    return played


def _settled(played: Played, seconds: float = 30) -> None:
    """Wait until the worker has settled the hand's match (the API has no wait for it)."""
    operator = GinClient(played.base, played.operator_key)
    deadline = time.monotonic() + seconds
    try:
        while True:
            try:
                operator.settlement(played.history["match_id"])
                return
            except ApiProblem as problem:
                if problem.status != 404 or time.monotonic() > deadline:
                    raise
            time.sleep(0.1)
    finally:
        operator.close()


@pytest.fixture(scope="module")
def gin(served: Served) -> Played:
    return _play(served, 2, {"format": "first_to_knock", "stake": 300})


@pytest.fixture(scope="module")
def rummy(served: Served) -> Played:
    settings = {
        "game": "rummy",
        "seat_count": 3,
        "format": "rummy_deals",
        "stake_per_point": 2,
        "min_buyin": 300,
        "max_buyin": 600,
        "target": 1,
    }
    return _play(served, 3, settings)


@pytest.fixture
def verify_page(page: Any) -> Iterator[Any]:
    response = page.goto("/verify")
    assert response.status == 200
    assert "unsafe-inline" not in response.headers["content-security-policy"]
    page.wait_for_selector("body[data-ready=true]")
    yield page


def _verdict(page: Any, history: dict[str, Any] | str) -> str:
    text = history if isinstance(history, str) else json.dumps(history)
    page.get_by_label("Hand history", exact=True).fill(text)
    page.get_by_role("button", name="Verify", exact=True).click()
    status = page.get_by_role("status")
    status.locator(".verdict.ok, .verdict.bad").wait_for()
    return str(status.locator(".verdict").inner_text())


def _flip(text: str, at: int) -> str:
    """``text`` with the character at ``at`` changed (one byte: hex stays hex, a card's
    rank becomes another rank)."""
    alphabet = "0123456789abcdef" if text[at] in "0123456789abcdef" else "A23456789TJQK"
    return text[:at] + alphabet[(alphabet.index(text[at]) + 1) % len(alphabet)] + text[at + 1 :]


def _tampered(history: dict[str, Any]) -> dict[str, dict[str, Any]]:
    seed = copy.deepcopy(history)
    seed["fairness"]["server_seed"] = _flip(seed["fairness"]["server_seed"], 17)
    deck = copy.deepcopy(history)
    deck["history"]["deck"][30] = _flip(deck["history"]["deck"][30], 0)
    action = copy.deepcopy(history)
    entry = next(a for a in action["history"]["actions"][3:] if "card" in a)
    entry["card"] = _flip(entry["card"], 0)
    return {"seed": seed, "deck": deck, "action": action}


def test_the_browser_shuffle_is_fair_py_byte_for_byte(verify_page: Any) -> None:
    """The page's module computes the same commitments, decks and continued (restock)
    shuffles as service/rules/fair.py, for several seeds and player counts."""
    rng = random.Random(5)
    for players in (2, 3, 4, 6):
        seed = fair.new_server_seed()
        seeds = [fair.new_client_seed() for _ in range(players)]
        nonce = rng.randrange(1, 500)
        deck, counter = fair.shuffle(seed, seeds, nonce)
        pile = sorted(rng.sample(DECK, rng.randrange(5, 30)), key=lambda card: card.index)
        restock, after = fair.shuffle(seed, seeds, nonce, pile, counter=counter)
        got = verify_page.evaluate(
            """async ([seed, seeds, nonce, pile]) => {
                const fair = await import("/assets/verify/fair.js");
                const dealt = await fair.shuffle(seed, seeds, nonce);
                const again = await fair.shuffle(seed, seeds, nonce, pile, dealt.counter);
                return [await fair.commitment(seed), dealt, again];
            }""",
            [seed, seeds, nonce, [str(c) for c in pile]],
        )
        assert got[0] == fair.commitment(seed)
        assert got[1] == {"order": [str(c) for c in deck], "counter": counter}
        assert got[2] == {"order": [str(c) for c in restock], "counter": after}


def test_a_two_player_gin_hand_verifies_and_any_tampering_does_not(
    verify_page: Any, gin: Played
) -> None:
    assert _verdict(verify_page, gin.history) == "Verified"
    checks = verify_page.get_by_role("list", name="Checks").inner_text()
    assert "Commitment" in checks and "Deck" in checks and "Actions" in checks
    for what, history in _tampered(gin.history).items():
        assert _verdict(verify_page, history) == "Not verified", what
        assert "Why:" in verify_page.get_by_role("status").inner_text(), what
    assert _verdict(verify_page, "{not json") == "Not verified"


def _seat_hand(page: Any, seat: int) -> list[str]:
    text = page.locator(f"#holdings li[data-seat='{seat}']").inner_text()
    return sorted(CODE.findall(text.split(":", 1)[1]))


def _step(page: Any) -> int:
    return int(page.locator("#step").inner_text().split()[1])


def test_stepping_shows_each_seat_the_hand_the_server_showed_it(
    verify_page: Any, gin: Played
) -> None:
    assert _verdict(verify_page, gin.history) == "Verified"
    steps = len(gin.history["history"]["actions"])
    buttons = {name: verify_page.get_by_role("button", name=name, exact=True) for name in
               ("First", "Previous", "Next", "Last")}
    assert _step(verify_page) == 0 and buttons["First"].is_disabled()
    buttons["Last"].click()
    assert _step(verify_page) == steps and buttons["Next"].is_disabled()
    buttons["Previous"].click()
    assert _step(verify_page) == steps - 1
    buttons["First"].click()
    verify_page.get_by_role("heading", name="Replay").click()  # focus off the form fields
    for seat in (0, 1):
        verify_page.get_by_label("Seen by").select_option(label=f"Seat {seat}")
        verify_page.keyboard.press("Home")
        checked = 0
        for step in range(steps + 1):
            assert _step(verify_page) == step
            if (seat, step) in gin.seen and step < steps:  # the server's view while playing
                assert _seat_hand(verify_page, seat) == gin.seen[(seat, step)], (seat, step)
                checked += 1
            verify_page.keyboard.press("ArrowRight")
        assert checked >= steps // 2
        verify_page.keyboard.press("ArrowLeft")
        assert _step(verify_page) == steps - 1
    buttons["Next"].click()
    assert _step(verify_page) == steps


def test_a_spectator_sees_no_hand(verify_page: Any, gin: Played) -> None:
    assert _verdict(verify_page, gin.history) == "Verified"
    verify_page.get_by_label("Seen by").select_option(label="Spectator")
    for _ in range(6):
        holdings = verify_page.locator("#holdings").inner_text()
        assert not CODE.findall(holdings), holdings
        assert "cards" in holdings
        step = verify_page.locator("#step").inner_text()
        if "from the stock" in step:
            assert not CODE.findall(step.split("stock", 1)[1]), step
        verify_page.get_by_role("button", name="Next", exact=True).click()


def test_a_rummy_hand_verifies_replays_and_refuses_tampering(
    verify_page: Any, rummy: Played
) -> None:
    history = rummy.history
    assert history["history"]["game"] == "rummy" and len(history["fairness"]["seats"]) == 3
    assert _verdict(verify_page, history) == "Verified"
    for what, tampered in _tampered(history).items():
        assert _verdict(verify_page, tampered) == "Not verified", what
    assert _verdict(verify_page, history) == "Verified"
    score = verify_page.locator("#score-lines").inner_text()
    assert "docs/rummy.md 5.6.2" in score
    seat = history["fairness"]["seats"][1]
    verify_page.get_by_label("Seen by").select_option(label=f"Seat {seat}")
    checked = 0
    for step in range(len(history["history"]["actions"])):
        if (seat, step) in rummy.seen:
            assert _seat_hand(verify_page, seat) == rummy.seen[(seat, step)], step
            checked += 1
        verify_page.get_by_role("button", name="Next", exact=True).click()
    assert checked >= 3


def test_a_hand_fetched_by_id_with_a_credential_shows_its_settlement(
    verify_page: Any, gin: Played
) -> None:
    hand_id = gin.history["id"]
    verify_page.goto(f"/verify?hand={hand_id}")
    verify_page.wait_for_selector("body[data-ready=true]")
    assert verify_page.get_by_label("Hand id").input_value() == hand_id
    verify_page.get_by_label("API key or player token").fill(gin.operator_key)
    verify_page.get_by_role("button", name="Fetch").click()
    verify_page.get_by_role("status").locator(".verdict.ok").wait_for()
    assert verify_page.get_by_label("Hand history", exact=True).input_value().count(hand_id) == 1
    # The worker settles the match; once it has, a fetch shows the statement too.
    _settled(gin)
    verify_page.get_by_role("button", name="Fetch").click()
    verify_page.get_by_role("status").locator(".verdict.ok").wait_for()
    verify_page.locator("#settlement-lines li").first.wait_for()
    lines = verify_page.locator("#settlement-lines").inner_text()
    assert "docs/engine.md 6.2" in lines and "docs/engine.md 6.1" in lines
    assert "docs/engine.md 2.9" in verify_page.locator("#score-lines").inner_text()


def test_the_front_page_links_the_verify_page(page: Any) -> None:
    page.goto("/")
    assert page.get_by_role("link", name="Verify a hand").get_attribute("href") == "/verify"
