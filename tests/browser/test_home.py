"""The front page: served with its own assets under a policy that forbids inline script."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.page_only
def test_the_front_page_links_the_api_reference_under_a_strict_policy(page: Any) -> None:
    response = page.goto("/")
    assert response.status == 200
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert page.get_by_role("heading", name="Gin match service").is_visible()
    assert page.get_by_role("link", name="API reference").get_attribute("href") == "/docs"
