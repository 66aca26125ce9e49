"""What the bots' API tests share: an operator's typed client on the test run's app."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from service.client import GinClient
from tests.conftest import new_operator


@pytest.fixture
def operator(app: Any) -> Iterator[GinClient]:
    """A new operator's typed client, calling the app in-process."""
    _operator_id, key = new_operator(app)
    client = GinClient("http://gin.test", key, transport=httpx.WSGITransport(app=app))
    yield client
    client.close()
