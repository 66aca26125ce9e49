"""A tour of every page for people, at a desktop's and a phone's screen size: the browser
tests check each stop's layout, and ``python -m tests.browser.screenshots`` photographs it.

A stop is a path and, for the console's pages, the need to be signed in first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
SCREENS = {"desktop": DESKTOP, "phone": PHONE}


@dataclass(frozen=True)
class Stop:
    name: str
    path: str
    signed_in: bool = False


STOPS = (
    Stop("home", "/"),
    Stop("console-sign-in", "/console/sign-in"),
    Stop("console-dashboard", "/console", signed_in=True),
    Stop("console-players", "/console/players", signed_in=True),
    Stop("console-tables", "/console/tables", signed_in=True),
    Stop("console-matches", "/console/matches", signed_in=True),
    Stop("console-tournaments", "/console/tournaments", signed_in=True),
    Stop("console-settlements", "/console/settlements", signed_in=True),
    Stop("console-money", "/console/money", signed_in=True),
    Stop("console-webhooks", "/console/webhooks", signed_in=True),
    Stop("console-practice", "/console/practice", signed_in=True),
    Stop("console-api-keys", "/console/api-keys", signed_in=True),
    Stop("verify", "/verify"),
    Stop("play", "/play"),
)


def sign_in(page: Any, key: str) -> None:
    page.goto("/console")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Sign out").wait_for()


def overflow(page: Any) -> int:
    """How many pixels the page is wider than its screen (0: nothing to scroll sideways)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))
