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

from service.client.api import ApiProblem, GinClient
from service.games.bots import action_text, decide_multi
from service.games.common import fair
from service.games.common.cards import DECK
from service.games.gin.bot import decide
from service.games.gin.hand import Hand
from service.games.gin.melds import arrange
from service.games.gin.ruleset import Ruleset
from service.games.rummy.fair import fair_shuffle
from service.games.rummy.hand import RummyHand
from service.games.rummy.playout import choose as choose_rummy
from service.games.rummy.rules import RummyRules
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
    return str(_done(page).locator(".verdict").inner_text())


def _done(page: Any) -> Any:
    """The verdict region once the page has finished loading and checking."""
    page.locator("#verdict:not([data-pending])").wait_for()
    return page.get_by_role("status")


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
    score = copy.deepcopy(history)
    # One more point than the hand earned (a fixed figure is sometimes the true one).
    points = score["history"]["outcome"]["points"]
    score["history"]["outcome"]["points"] = (
        [value + 1 for value in points] if isinstance(points, list) else points + 1
    )
    return {"seed": seed, "deck": deck, "action": action, "score": score}


@pytest.mark.page_only
def test_the_browser_shuffle_is_fair_py_byte_for_byte(verify_page: Any) -> None:
    """The page's module computes the same commitments, decks and continued (restock)
    shuffles as service/games/common/fair.py, for several seeds and player counts."""
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


@pytest.mark.page_only
def test_the_browser_deadwood_is_the_engines(verify_page: Any) -> None:
    """The page's least-deadwood search (used to check a showdown) agrees with the engine's
    arrange() on docs/engine.md 1.9's examples and on random hands."""
    rng = random.Random(9)
    hands = [
        "5H 6H 7H 8H 7C 7D",
        "7C 7D 7H 7S 8S 9S",
        "3D 4D 5D 6D 7D 5C 5H 5S 9C 9H",
        "AC 2C 3C 4C 5C 6C 4D 4H KS QS",
        *(" ".join(rng.sample([str(c) for c in DECK], rng.choice((10, 11)))) for _ in range(30)),
    ]
    got = verify_page.evaluate(
        """async (hands) => {
            const replay = await import("/assets/verify/replay.js");
            return hands.map((hand) => replay.leastDeadwood(hand.split(" ")));
        }""",
        hands,
    )
    assert got[:4] == [14, 0, 18, 28]
    assert got == [arrange(hand).deadwood for hand in hands]


def _answer(history: dict[str, Any], seed: str, seeds: list[str], nonce: int) -> dict[str, Any]:
    """An engine's hand history wrapped as GET /v1/hands/{id} answers it."""
    fairness = {
        "algorithm": fair.ALGORITHM,
        "commitment": fair.commitment(seed),
        "server_seed": seed,
        "client_seed_1": seeds[0],
        "client_seed_2": seeds[1],
        "client_seeds": seeds,
        "seats": list(range(len(seeds))),
        "nonce": nonce,
    }
    return {"id": "hnd_engine", "number": nonce, "fairness": fairness, "history": history}


def _seeds(rng: random.Random, players: int) -> tuple[str, list[str]]:
    return rng.randbytes(32).hex(), [rng.randbytes(8).hex() for _ in range(players)]


def _engine_gin(rules: dict[str, Any], seed_no: int) -> dict[str, Any]:
    """A two-player Gin hand from the fair deck, played by the practice bot (now and then a
    random legal action instead)."""
    rng = random.Random(seed_no)
    seed, seeds = _seeds(rng, 2)
    hand = Hand.deal(fair.shuffle(seed, seeds, 3)[0], seed_no % 2, Ruleset.from_dict(rules))
    while not hand.ended:
        legal = hand.legal_actions()
        action = decide(hand.view(hand.to_act)) if rng.random() < 0.8 else rng.choice(legal)
        hand.apply(hand.to_act, action)
    return _answer(hand.history(), seed, seeds, 3)


def _engine_rummy(
    rules: dict[str, Any], seed_no: int, meld_rate: float = 0.0, forfeit: bool = False
) -> dict[str, Any]:
    """A three-player Rummy hand played at random; with no melds it runs the stock out and
    restocks until its restock limit voids it."""
    rng = random.Random(seed_no)
    seed, seeds = _seeds(rng, 3)
    shuffle = fair_shuffle(seed, seeds, 2)
    hand = RummyHand.deal(3, 1, shuffle.deck, RummyRules.from_dict(rules), shuffle)
    while hand.to_act is not None:
        if forfeit and len(hand.log) == 9:
            hand = hand.forfeit(0, "resign")
            continue
        hand = hand.apply(hand.to_act, choose_rummy(rng, hand.legal_actions(), meld_rate))
    return _answer({**hand.history(), "seats": [0, 1, 2]}, seed, seeds, 2)


FIFTIETH = {"dead_hand_rule": "FIFTIETH_CARD"}
ENGINE_HANDS = {  # the seeds give the outcome named
    "gin-gin": lambda: _engine_gin({}, 0),
    "gin-knock": lambda: _engine_gin({}, 1),
    "gin-undercut": lambda: _engine_gin({}, 17),
    "gin-dead": lambda: _engine_gin({}, 25),
    "gin-immediate-dead": lambda: _engine_gin({"dead_hand_rule": "IMMEDIATE"}, 25),
    "gin-fiftieth-card-take-and-knock": lambda: _engine_gin(FIFTIETH, 273),
    "gin-big-gin-free-first-draw": lambda: _engine_gin(
        {"opening": "FREE_FIRST_DRAW", "big_gin_enabled": True}, 100
    ),
    "gin-oklahoma": lambda: _engine_gin({"oklahoma": True}, 1),
    "rummy-goes-out-ace-high": lambda: _engine_rummy({"ace_mode": "HIGH_OR_LOW"}, 5, 0.8),
    "rummy-shuffle-restocks": lambda: _engine_rummy({"restock": "SHUFFLE"}, 6),
    "rummy-turn-over": lambda: _engine_rummy({"restock": "TURN_OVER"}, 7),
    "rummy-forfeit-penalty": lambda: _engine_rummy({"scoring": "PENALTY"}, 8, forfeit=True),
}


@pytest.mark.page_only
def test_hands_of_every_rule_variant_verify(verify_page: Any) -> None:
    """Engine-played hands under other options (dead-hand rules, free first draw, Oklahoma,
    Rummy's two restocks, a forfeit) verify too; a SHUFFLE restock's order is checked
    against the stream continued after the deal."""
    for name, make in ENGINE_HANDS.items():
        history = make()
        assert _verdict(verify_page, history) == "Verified", name
    shuffled = ENGINE_HANDS["rummy-shuffle-restocks"]()
    restocks = [a for a in shuffled["history"]["actions"] if a.get("restock") == "SHUFFLE"]
    assert len(restocks) == 3
    assert _verdict(verify_page, shuffled) == "Verified"
    assert verify_page.get_by_role("list", name="Checks").inner_text().count("Restock") == 3
    order = restocks[-1]["order"]
    order[-1], order[-2] = order[-2], order[-1]  # never drawn: only the stream can tell
    assert _verdict(verify_page, shuffled) == "Not verified"
    assert "restock" in verify_page.get_by_role("status").inner_text()


@pytest.mark.page_only
def test_a_two_player_gin_hand_verifies_and_any_tampering_does_not(
    verify_page: Any, gin: Played
) -> None:
    assert _verdict(verify_page, gin.history) == "Verified"
    checks = verify_page.get_by_role("list", name="Checks").inner_text()
    assert "Commitment" in checks and "Deck" in checks and "Actions" in checks
    why = {"seed": "commitment", "deck": "deck", "action": "is not", "score": "score"}
    for what, history in _tampered(gin.history).items():
        assert _verdict(verify_page, history) == "Not verified", what
        assert why[what] in verify_page.get_by_role("status").inner_text(), what
    assert _verdict(verify_page, "{not json") == "Not verified"


def _seat_hand(page: Any, seat: int) -> list[str]:
    text = page.locator(f"#holdings li[data-seat='{seat}']").inner_text()
    return sorted(CODE.findall(text.split(":", 1)[1]))


def _step(page: Any) -> int:
    return int(page.locator("#step").inner_text().split()[1])


@pytest.mark.page_only
def test_stepping_shows_each_seat_the_hand_the_server_showed_it(
    verify_page: Any, gin: Played
) -> None:
    assert _verdict(verify_page, gin.history) == "Verified"
    steps = len(gin.history["history"]["actions"])
    buttons = {
        name: verify_page.get_by_role("button", name=name, exact=True)
        for name in ("First", "Previous", "Next", "Last")
    }
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


@pytest.mark.page_only
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


@pytest.mark.page_only
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
    _settled(gin)  # the worker settles the match; the page shows the statement then
    verify_page.get_by_role("button", name="Fetch").click()
    assert _done(verify_page).inner_text().startswith("Verified")
    pasted = verify_page.get_by_label("Hand history", exact=True).input_value()
    assert pasted.count(f'"id": "{hand_id}"') == 1
    lines = verify_page.locator("#score").inner_text()
    by_number = f"/verify?match={gin.history['match_id']}&number=1"
    verify_page.goto(by_number)
    verify_page.wait_for_selector("body[data-ready=true]")
    verify_page.get_by_label("API key or player token").fill(gin.operator_key)
    verify_page.get_by_role("button", name="Fetch").click()
    assert _done(verify_page).inner_text().startswith("Verified")
    pasted = verify_page.get_by_label("Hand history", exact=True).input_value()
    assert pasted.count(f'"id": "{hand_id}"') == 1
    assert "docs/engine.md 6.2" in lines and "docs/engine.md 6.1" in lines
    assert "docs/engine.md 2.9" in verify_page.locator("#score-lines").inner_text()


@pytest.mark.page_only
def test_a_refused_credential_is_said_and_nothing_is_verified(
    browser: Any, served: Served, gin: Played
) -> None:
    # Not the page fixture: Chromium logs the refused fetch's 401 as a console error.
    context = browser.new_context(base_url=served.base)
    try:
        page = context.new_page()
        page.goto(f"/verify?hand={gin.history['id']}")
        page.wait_for_selector("body[data-ready=true]")
        page.get_by_label("API key or player token").fill("not-a-key")
        page.get_by_role("button", name="Fetch").click()
        assert _done(page).inner_text().startswith("Could not fetch the hand")
        assert page.get_by_label("Hand history", exact=True).input_value() == ""
    finally:
        context.close()


@pytest.mark.page_only
def test_the_front_page_links_the_verify_page(page: Any) -> None:
    page.goto("/")
    assert page.get_by_role("link", name="Verify a hand").get_attribute("href") == "/verify"
