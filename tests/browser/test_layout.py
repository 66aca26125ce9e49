"""Every page for people fits a phone's screen (390 x 844) and a laptop's (1366 x 768): nothing
sticks out sideways, so no page needs a horizontal scroll to be read or used (a wide table
scrolls inside its own box)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.tour import SCREENS, STOPS, overflow, sign_in
from tests.integration.workers import Served


@pytest.mark.page_only
@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_every_page_fits_the_screen_without_sideways_scrolling(
    browser: Any, served: Served, screen: str
) -> None:
    context = browser.new_context(base_url=served.base, viewport=SCREENS[screen])
    try:
        page = context.new_page()
        signed_in = False
        wide = {}
        for stop in STOPS:
            if stop.signed_in and not signed_in:
                sign_in(page, served.api_key())
                signed_in = True
            response = page.goto(stop.path)
            assert response.status == 200, stop
            if (extra := overflow(page)) > 0:
                wide[stop.name] = extra
        assert wide == {}, f"pages wider than the {screen} screen, by pixels: {wide}"
    finally:
        context.close()
