"""Screenshots of every page for people at a laptop's and a phone's screen size.

    .venv/bin/python -m tests.browser.screenshots [--out var/screenshots]

Starts ``gin-service run`` on the embedded default in a temporary folder, makes a little data
through the API (two players who play a match to its settlement), and photographs each stop of
:mod:`tests.browser.tour` (full pages, PNG) with Debian's Chromium. Nothing it writes is
committed (``var/`` is ignored)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.browser.tour import SCREENS, STOPS, sign_in
from tests.integration.workers import make_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("var/screenshots"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory() as folder,
        make_run(Path(folder)) as served,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for screen, size in SCREENS.items():
            context = browser.new_context(base_url=served.base, viewport=size)
            page = context.new_page()
            signed_in = False
            for stop in STOPS:
                if stop.signed_in and not signed_in:
                    sign_in(page, served.api_key())
                    signed_in = True
                page.goto(stop.path)
                shot = args.out / f"{stop.name}-{screen}.png"
                page.screenshot(path=str(shot), full_page=True)
                print(shot)
            context.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
