"""The command line creates the first operator and key, and migrates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from tests.conftest import make_test_app


def test_create_operator_prints_a_working_key_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    monkeypatch.setenv("DATABASE_URL", url)
    assert main(["db", "upgrade"]) == 0
    assert main(["create-operator", "Acme"]) == 0
    printed: dict[str, Any] = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert printed["operator_id"].startswith("op_") and printed["api_key"].startswith("sk_")
    app = make_test_app(url)
    client = app.test_client()
    response = client.get("/v1/operator", headers={"Authorization": f"Bearer {printed['api_key']}"})
    assert response.status_code == 200 and response.get_json()["name"] == "Acme"
    keys = client.get("/v1/api-keys", headers={"Authorization": f"Bearer {printed['api_key']}"})
    assert printed["api_key"] not in keys.get_data(as_text=True)  # never shown again
    app.extensions["gin"]["engine"].dispose()
