"""openapi.yaml is generated from the code; the committed file must match it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from service.api import spec_yaml

COMMITTED = Path(__file__).resolve().parents[2] / "openapi.yaml"


def test_committed_openapi_matches_the_code(app: Any) -> None:
    generated = spec_yaml(app)
    assert COMMITTED.read_text() == generated, (
        "openapi.yaml is stale: run `.venv/bin/gin-service openapi > openapi.yaml`"
    )


def test_every_route_is_documented_with_its_problems(app: Any) -> None:
    spec = yaml.safe_load(spec_yaml(app))
    documented = {(path, method.upper()) for path, item in spec["paths"].items() for method in item}
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith(("api-docs", "static")):
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)  # <int:n> -> {n}
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (path, method) in documented, (path, method)
    deposit = spec["paths"]["/v1/players/{player_id}/deposits"]["post"]
    assert "idempotency_key_in_use" in deposit["responses"]["409"]["description"]
    assert "deposit_limit_exceeded" in deposit["responses"]["422"]["description"]
    assert any(p["name"] == "Idempotency-Key" for p in deposit["parameters"])
    assert "application/problem+json" in deposit["responses"]["422"]["content"]


def test_openapi_and_docs_page_are_served_without_auth(api: Any) -> None:
    response = api.as_(None).get("/openapi.yaml")
    assert response.status_code == 200
    assert yaml.safe_load(response.get_data(as_text=True))["info"]["title"]
    assert api.as_(None).get("/openapi.json").get_json()["openapi"] == "3.0.3"
    docs = api.as_(None).get("/docs")
    assert docs.status_code == 200 and b"redoc" in docs.data.lower()
