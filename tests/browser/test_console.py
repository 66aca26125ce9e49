"""The operator console in Chromium: sign in with the demo operator's key, find a player,
open a settlement and its audit, export the settlements as CSV, sign out; a wrong key is
refused. The data is made through the API on the served run, and the run's own worker
settles the match (the test polls the API until the settlement exists)."""

from __future__ import annotations

import csv
import io
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from service.client import GinClient
from service.client.api import ApiProblem
from service.games.gin.bot import decide
from tests.browser.tour import PHONE, overflow
from tests.conftest import wait_until
from tests.integration.workers import Served


@dataclass(frozen=True)
class Settled:
    match_id: str
    players: list[dict[str, Any]]
    settlement: dict[str, Any]


def _play_to_the_end(players: list[GinClient], match_id: str) -> None:
    """Both players play with the practice bot's decisions until the match is over."""
    for _ in range(2000):
        views = [p.match(match_id) for p in players]
        if views[0]["status"] != "playing":
            return
        hands = [v["hand"] for v in views]
        assert hands[0] is not None
        mover = next(i for i, v in enumerate(views) if v["you"] == hands[0]["to_act"])
        hand = hands[mover]
        assert hand is not None
        players[mover].act(match_id, decide(hand), views[mover]["version"])
    raise AssertionError(f"match {match_id} did not end")


@pytest.fixture(scope="module")
def settled(served: Served) -> Iterator[Settled]:
    """Two funded players of the demo operator play a First To Knock match to its end; the
    served run's worker settles it."""
    with GinClient(served.base, served.api_key()) as operator:
        tag = secrets.token_hex(4)
        made, clients = [], []
        for name in ("Ada", "Bo"):
            player = operator.create_player(f"console-{tag}-{name.lower()}", name)
            operator.deposit(player["id"], 10_000, "EUR")
            made.append(dict(player))
            clients.append(operator.as_(operator.player_token(player["id"])["token"]))
        table = operator.create_table(
            "first_to_knock", "EUR", stake=500, fee={"bps": 500}, name=f"Console {tag}"
        )
        for client in clients:
            client.join(table["id"])
        match_id = table["match_id"]
        _play_to_the_end(clients, match_id)

        def settled_now() -> bool:
            try:
                operator.settlement(match_id)
            except ApiProblem:
                return False
            return True

        wait_until(settled_now, timeout=60, what=f"the settlement of {match_id}", interval=0.2)
        yield Settled(match_id, made, dict(operator.settlement(match_id)))


def sign_in(page: Any, key: str) -> None:
    page.goto("/console")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()


@pytest.mark.page_only
def test_a_wrong_key_is_refused_with_a_clear_message(page: Any) -> None:
    sign_in(page, "sk_not-a-key-of-anyone")
    assert page.get_by_role("alert").inner_text().startswith("That API key is unknown or revoked")
    page.goto("/console/players")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()  # still signed out


def test_an_operator_finds_a_player_and_a_settlement_exports_it_and_signs_out(
    page: Any, served: Served, settled: Settled, tmp_path: Path
) -> None:
    sign_in(page, served.api_key())
    expect(page.get_by_role("heading", name="Dashboard", exact=True)).to_be_visible()
    page.get_by_role("button", name="Audit the books now").click()
    expect(page.locator("#audit-verdict")).to_contain_text("Passed")

    ada = settled.players[0]
    page.get_by_role("link", name="Players", exact=True).click()
    page.get_by_role("searchbox").fill(ada["external_id"][:-3])  # a prefix of it
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name=ada["id"]).click()
    expect(page.get_by_role("heading", name="Player Ada")).to_be_visible()
    expect(page.get_by_role("columnheader", name="Available")).to_be_visible()
    expect(page.get_by_role("link", name=settled.match_id).first).to_be_visible()

    page.get_by_role("link", name="Settlements", exact=True).click()
    page.get_by_role("link", name=f"Statement of {settled.match_id}").click()
    assert page.locator("#audit-verdict").inner_text().startswith("Verified")
    fee = settled.settlement["fee"]["amount"]
    expect(page.get_by_text(f"House fee: {fee // 100}.{fee % 100:02d} EUR")).to_be_visible()

    page.get_by_role("link", name="The match and its hands").click()
    verify = page.get_by_role("link", name="Verify hand 1")
    assert verify.get_attribute("href").startswith("/verify?hand=hnd_")

    page.get_by_role("link", name="Settlements", exact=True).click()
    with page.expect_download() as waiting:
        page.get_by_role("link", name="Export CSV").click()
    download = waiting.value
    assert download.suggested_filename.endswith(".csv")
    saved = tmp_path / "settlements.csv"
    download.save_as(saved)
    rows = list(csv.DictReader(io.StringIO(saved.read_text(encoding="utf-8"))))
    ours = [r for r in rows if r["match_id"] == settled.match_id]
    assert [r["player_id"] for r in ours] == [p for p in settled.settlement["players"]]
    assert [int(r["net"]) for r in ours] == [n["amount"] for n in settled.settlement["net"]]
    assert {int(r["fee"]) for r in ours} == {fee} and fee > 0

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status")).to_have_text("You are signed out.")
    page.goto("/console/players")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()


def test_every_console_page_loads_under_the_policy_with_named_controls(
    page: Any, served: Served, settled: Settled
) -> None:
    """Each page in the navigation, with no script error or policy violation (the ``page``
    fixture fails on either), column headers on its tables and a name on every control."""
    sign_in(page, served.api_key())
    pages = {
        "Tables": "Tables",
        "Matches": "Matches",
        "Tournaments": "Tournaments",
        "Money": "Money",
        "Webhooks": "Webhook endpoints",
        "API keys": "API keys",
        "Dashboard": "Dashboard",
    }
    for name, heading in pages.items():
        page.get_by_role("navigation").get_by_role("link", name=name, exact=True).click()
        expect(page.get_by_role("heading", level=1, name=heading, exact=True)).to_be_visible()
        for table in page.get_by_role("table").all():
            assert table.locator("th[scope=col]").count() > 0, name
        unnamed = page.evaluate(
            """() => [...document.querySelectorAll('input:not([type=hidden]), select, button')]
                .filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
                             && !c.textContent.trim())
                .map(c => c.outerHTML)"""
        )
        assert unnamed == [], (name, unnamed)
    page.get_by_role("link", name="Matches", exact=True).click()
    expect(page.get_by_role("link", name=settled.match_id)).to_be_visible()


def test_a_tournaments_bracket_links_its_matches_and_fits_a_phone(
    browser: Any, served: Served
) -> None:
    """A knockout whose field filled (so its round 1 is dealt), opened from the console's
    Tournaments page on a phone's screen: its bracket links each match to the console's
    match page, its statement lists the entries, its audit passes, nothing scrolls sideways."""
    with GinClient(served.base, served.api_key()) as operator:
        tag = secrets.token_hex(4)
        name = f"Cup {tag}"
        cup = operator.create_tournament(
            "match_play", "EUR", 1_000, 4, fee=100, target=50, name=name
        )
        for n in range(4):
            player = operator.create_player(f"cup-{tag}-{n}", f"Entrant {n}")
            operator.deposit(player["id"], 5_000, "EUR")
            operator.as_(operator.player_token(player["id"])["token"]).register(cup["id"])
        started = operator.tournament(cup["id"])
    assert started["status"] == "running"
    context = browser.new_context(base_url=served.base, viewport=PHONE)
    try:
        page = context.new_page()
        sign_in(page, served.api_key())
        page.goto("/console/tournaments")
        page.get_by_role("link", name=name, exact=True).click()
        expect(page.get_by_role("heading", level=1, name=f"Tournament {name}")).to_be_visible()
        assert page.locator("#audit-verdict").inner_text().startswith("Verified")
        for table in page.get_by_role("table").all():
            assert table.locator("th[scope=col]").count() > 0
        expect(page.get_by_role("cell", name="entry", exact=True)).to_have_count(4)
        assert overflow(page) == 0
        first = started["rounds"][0]["matches"][0]["match_id"]
        page.get_by_role("link", name="Match 1", exact=True).click()
        expect(page.get_by_role("heading", level=1, name=f"Match {first}")).to_be_visible()
        assert overflow(page) == 0  # its heading names a long id
    finally:
        context.close()


def test_a_practice_link_from_the_console_opens_the_practice_table_signed_in(
    page: Any, served: Served
) -> None:
    """The demo operator issues a person a practice link from the console; following it
    opens /play with that player's token (taken from the fragment, gone from the address)."""
    sign_in(page, served.api_key())
    page.get_by_role("navigation").get_by_role("link", name="Practice", exact=True).click()
    page.get_by_label("Player's name").fill("Ada")
    page.get_by_role("button", name="Issue a practice link").click()
    link = page.get_by_role("status").get_by_role("link")
    href = link.get_attribute("href")
    assert href is not None and href.startswith(f"{served.base}/play#token=pt_")
    link.click()
    page.get_by_role("button", name="Forget token").wait_for()
    assert page.url == f"{served.base}/play"
