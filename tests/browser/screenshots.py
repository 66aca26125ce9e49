"""Screenshots of every page for people at a laptop's and a phone's screen size, for a person
to look at (``make screenshots``; not committed): each stop of :mod:`tests.browser.tour` (the
front page, the console's pages signed in, the verify page), then the practice table's lobby,
a two-player Gin table and a Rummy table on the player's turn, a finished match, and a
practice knockout being played and over, all on a ``gin-service run`` of its own (as
``make run`` starts it).

    python -m tests.browser.screenshots [FOLDER]    (default: var/screenshots)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from service.client import GinClient
from service.practice import open_practice, open_tournament
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.browser.tour import SCREENS, STOPS, sign_in
from tests.integration.workers import Served, make_run


def my_turn(page: Any) -> None:
    page.get_by_role("status").filter(has_text="Your turn").wait_for(timeout=30_000)


def tour(page: Any, served: Served, folder: Path, screen: str) -> None:
    """Each stop of the tour, signing in to the console on the way."""
    signed_in = False
    for stop in STOPS:
        if stop.signed_in and not signed_in:
            sign_in(page, served.api_key())
            signed_in = True
        page.goto(stop.path)
        page.screenshot(path=folder / f"{stop.name}-{screen}.png", full_page=True)


def practice(page: Any, operator: GinClient, folder: Path, screen: str) -> None:
    """The practice table: the lobby, a Gin and a Rummy table, a finished match."""
    opened = open_practice(operator, games=("gin", "rummy"))
    tables = {t["game"]: t for t in opened.tables}
    page.goto("/")  # the tour ends at /play: the link must load a new page, not a fragment
    page.goto(f"/play#token={opened.token}")
    gin = tables["gin"]
    page.get_by_role("button", name=f"Sit at {gin['name']} ({gin['id']})").wait_for()
    page.screenshot(path=folder / f"play-lobby-{screen}.png", full_page=True)
    for game in ("gin", "rummy"):
        table = tables[game]
        page.get_by_role("button", name=f"Sit at {table['name']} ({table['id']})").click()
        my_turn(page)
        page.screenshot(path=folder / f"play-{game}-{screen}.png", full_page=True)
        page.get_by_role("button", name="Resign", exact=True).click()
        page.get_by_role("button", name="Confirm resign", exact=True).click()
        # Two-player Gin ends; Rummy's other seats play on without the player.
        ended = "Match over" if game == "gin" else "You resigned"
        page.get_by_role("status").filter(has_text=ended).wait_for()
        if game == "gin":
            page.screenshot(path=folder / f"play-over-{screen}.png", full_page=True)
        page.get_by_role("button", name="Back to the tables").click()


def tournament(page: Any, operator: GinClient, folder: Path, screen: str) -> None:
    """A practice knockout (First To Knock, against three bots): the player's match with the
    tournament's screen below it, then the places and prizes once the player resigned and
    the bots played it out."""
    opened = open_tournament(operator, "knockout", format="first_to_knock", target=None)
    page.get_by_role("button", name="Refresh tables").click()
    page.get_by_role("button", name=f"Enter {opened['name']} ({opened['id']})").click()
    state = page.locator("#tournament-state")
    state.filter(has_text="Your match is being played").wait_for()
    my_turn(page)
    page.screenshot(path=folder / f"play-tournament-{screen}.png", full_page=True)
    page.get_by_role("button", name="Resign", exact=True).click()
    page.get_by_role("button", name="Confirm resign", exact=True).click()
    state.filter(has_text="The tournament is over").wait_for(timeout=60_000)
    page.screenshot(path=folder / f"play-tournament-over-{screen}.png", full_page=True)
    page.get_by_role("button", name="Back to the tables").first.click()


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    folder = Path(argv[0] if argv else "var/screenshots").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as run_folder,
        make_run(Path(run_folder)) as served,
        GinClient(served.base, served.api_key()) as operator,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for screen, viewport in SCREENS.items():
            context = browser.new_context(base_url=served.base, viewport=viewport)
            page = context.new_page()
            tour(page, served, folder, screen)
            practice(page, operator, folder, screen)
            tournament(page, operator, folder, screen)
            context.close()
        browser.close()
    for shot in sorted(folder.glob("*.png")):
        print(shot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
