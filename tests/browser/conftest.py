"""Browser tests: the pages driven in Debian's Chromium by Playwright for Python.

One ``gin-service run`` (the embedded default, as ``make run`` starts it, with its demo
operator) serves every test of a pytest process; each test gets a fresh browser context. When
TEST_DATABASE_URL and TEST_BROKER_URL are set (CI sets them), every test that goes through the
service (plays, settles, reads the console's data) runs a second time against ``gin-service
run`` on a PostgreSQL database and a Redis broker of the run's own, as production runs; a
``page_only`` test, of the page's own logic, runs once.
Chromium is ``/usr/bin/chromium`` (``.ci/run`` installs Debian's package when it is missing);
nothing here downloads a browser. The launch flags keep Chromium off the network: this
machine's network is closed, and a page may only talk to the service that served it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.tour import DESKTOP
from tests.conftest import throwaway_postgres
from tests.integration.workers import Broker, Served, make_run

CHROMIUM = Path(os.environ.get("GIN_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test here ``browser``; a ``page_only`` test (the page's own logic: what it
    computes from a pasted history, its layout, its keyboard handling) runs on the embedded
    default alone, since its second backend would repeat the same test."""
    kept, repeats = [], []
    for item in items:
        if "tests/browser/" not in str(item.fspath):
            kept.append(item)
            continue
        item.add_marker(pytest.mark.browser)
        params = getattr(item, "callspec", None)
        backend = params.params.get("served") if params is not None else None
        if item.get_closest_marker("page_only") and backend not in (None, "embedded"):
            repeats.append(item)
        else:
            kept.append(item)
    if repeats:
        config.hook.pytest_deselected(items=repeats)
        items[:] = kept


PRODUCTION_URLS = (os.environ.get("TEST_DATABASE_URL"), os.environ.get("TEST_BROKER_URL"))
BACKENDS = ["embedded", *(["postgres+redis"] if all(PRODUCTION_URLS) else [])]


@pytest.fixture(scope="session", params=BACKENDS)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """``gin-service run`` in a folder of its own: on the embedded default, and on PostgreSQL
    and Redis when the run has them."""
    folder = tmp_path_factory.mktemp("browser-run")
    if request.param == "embedded":
        with make_run(folder) as run:
            yield run
        return
    database, broker = PRODUCTION_URLS
    assert database and broker
    with (
        throwaway_postgres(database) as url,
        make_run(folder, {"DATABASE_URL": url, **Broker(broker).env}) as run,
    ):
        yield run


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    """A fresh browser context on the served run, failing the test on any script error or
    Content-Security-Policy violation the page reports."""
    context = browser.new_context(base_url=served.base, viewport=DESKTOP)
    errors: list[str] = []
    opened = context.new_page()
    opened.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            errors.append(f"console {message.type}: {message.text}")
            if message.type == "error"
            else None
        ),
    )
    try:
        yield opened
        assert not errors, errors
    finally:
        context.close()
