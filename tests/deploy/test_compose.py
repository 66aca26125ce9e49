"""deploy/compose.yaml: valid against the Compose Specification schema (vendored, see
schemas/SOURCE.md) once interpolated from deploy/.env.example, and wired as documented: a
one-shot migration that everything waits for, health checks, a single beat."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
ENV_EXAMPLE = ROOT / "deploy" / ".env.example"
SCHEMA = Path(__file__).with_name("schemas") / "compose-spec.json"
SCHEMA_SHA256 = "e82b395a9ac423febdba22c159b85d51d972706aea67d64799672a6ae3e56f47"
VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def env_example() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's variable interpolation (``${X}``, ``${X:-default}``, ``${X:?error}``)."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        if env.get(name):
            return env[name]
        if op in (":?", "?"):
            raise KeyError(f"{name} is required: {arg}")
        return arg or "" if op else ""

    return VARIABLE.sub(substitute, value.replace("$$", "\0")).replace("\0", "$")


def load() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE.read_text()))


def validator() -> Any:
    raw = SCHEMA.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256  # the vendored file, unchanged
    schema = json.loads(raw)
    # It declares draft 2019-09 by a non-canonical URI ("http://.../schema#"): name it here.
    assert "2019-09" in schema["$schema"]
    jsonschema.Draft201909Validator.check_schema(schema)
    return jsonschema.Draft201909Validator(schema)


def schema_errors(document: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator().iter_errors(document)
    ]


def test_compose_file_is_valid_against_the_compose_specification() -> None:
    document = interpolate(load(), env_example())
    assert schema_errors(document) == []


@pytest.mark.parametrize(
    "path, value",
    [
        (("services", "api", "depends_on", "migrate", "condition"), "service_finished"),
        (("services", "api", "healthcheck", "interval"), {"seconds": 10}),
        (("services", "worker", "deploy", "replicas"), "two"),
        (("services", "beat", "restart_policy"), "always"),  # not a service key
        (("services", "api", "ports"), "8000:8000"),
    ],
)
def test_the_schema_refuses_a_broken_copy(path: tuple[str, ...], value: Any) -> None:
    broken = copy.deepcopy(interpolate(load(), env_example()))
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert schema_errors(broken) != []


def test_required_variables_are_in_the_env_example() -> None:
    required = {m["name"] for m in VARIABLE.finditer(COMPOSE.read_text()) if m["op"] in (":?", "?")}
    assert required == {"POSTGRES_PASSWORD"}
    assert required <= set(env_example())
    with pytest.raises(KeyError, match="POSTGRES_PASSWORD"):
        interpolate(load(), {})
    assert "SECRET_KEY" in env_example()  # the services read it from deploy/.env


def test_services_are_wired_as_documented() -> None:
    services = interpolate(load(), env_example())["services"]
    assert set(services) == {"postgres", "redis", "migrate", "api", "worker", "beat"}
    roles = {name: service.get("command", [None])[0] for name, service in services.items()}
    assert {roles[n] for n in ("migrate", "api", "worker", "beat")} == {
        "migrate",
        "api",
        "worker",
        "beat",
    }
    for name in ("api", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }, name
    assert services["migrate"]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert services["migrate"]["restart"] == "no"
    for name in ("postgres", "redis", "api", "worker", "beat"):
        assert services[name]["healthcheck"]["test"], name
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    assert services["beat"]["deploy"]["replicas"] == 1
    for name in ("migrate", "api", "worker", "beat"):
        service = services[name]
        assert service["env_file"] == [".env"]
        assert service["environment"]["DATABASE_URL"].startswith("postgresql+psycopg://gin:")
        assert service["environment"]["DATABASE_URL"].endswith("@postgres:5432/gin")
        assert service["environment"]["CELERY_BROKER_URL"] == "redis://redis:6379/0"
        assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert (COMPOSE.parent / services["api"]["build"]["context"] / "deploy/Dockerfile").exists()
