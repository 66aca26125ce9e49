"""docs/configuration.md names every environment variable the code reads.

The scan reads the Python of service/, worker/ and deploy/ as syntax trees: ``os.environ.get``,
``os.environ[...]``, ``os.getenv``, ``os.environ.pop/setdefault``, ``"X" in os.environ``, and
calls of any helper that passes its parameter to one of those (``_int_env("X", 1)``). It also
reads ``${X}`` in deploy/'s shell scripts and compose file. A new variable anywhere fails this
test until it has a row in the reference.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "configuration.md"
SCANNED = ("service", "worker", "deploy")
NAME = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
SHELL_VARIABLE = re.compile(r"\$\{([A-Z][A-Z0-9_]*)")
DOCUMENTED = re.compile(r"^\|\s*`([A-Z][A-Z0-9_]*)`", re.MULTILINE)


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _env_read_argument(node: ast.AST) -> ast.AST | None:
    """The name expression of an environment read, or None when ``node`` is not one."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("get", "pop", "setdefault")
            and _is_environ(func.value)
        ):
            return node.args[0]
        if (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
            isinstance(func, ast.Name) and func.id == "getenv"
        ):
            return node.args[0]
    if isinstance(node, ast.Subscript) and _is_environ(node.value):
        return node.slice
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and _is_environ(node.comparators[0])
    ):
        return node.left
    return None


def _helpers(trees: Iterable[ast.AST]) -> set[str]:
    """Functions that read the environment variable named by one of their parameters."""
    found: set[str] = set()
    for tree in trees:
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            params = {a.arg for a in function.args.args + function.args.kwonlyargs}
            for node in ast.walk(function):
                argument = _env_read_argument(node)
                if isinstance(argument, ast.Name) and argument.id in params:
                    found.add(function.name)
    return found


def variables_in_python(sources: dict[str, str]) -> dict[str, set[str]]:
    """Variable name -> the files that read it, for Python sources given as text."""
    trees = {name: ast.parse(text, name) for name, text in sources.items()}
    helpers = _helpers(trees.values())
    found: dict[str, set[str]] = {}
    for filename, tree in trees.items():
        for node in ast.walk(tree):
            argument = _env_read_argument(node)
            if argument is None and isinstance(node, ast.Call) and node.args:
                func = node.func
                called = (
                    func.id
                    if isinstance(func, ast.Name)
                    else (func.attr if isinstance(func, ast.Attribute) else None)
                )
                if called in helpers:
                    argument = node.args[0]
            if (
                isinstance(argument, ast.Constant)
                and isinstance(argument.value, str)
                and NAME.match(argument.value)
            ):
                found.setdefault(argument.value, set()).add(filename)
    return found


def variables_read() -> dict[str, set[str]]:
    python = {
        str(path.relative_to(ROOT)): path.read_text()
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
    }
    found = variables_in_python(python)
    for path in [*(ROOT / "deploy").glob("*.sh"), ROOT / "deploy" / "compose.yaml"]:
        for name in SHELL_VARIABLE.findall(path.read_text()):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def documented() -> set[str]:
    return set(DOCUMENTED.findall(REFERENCE.read_text()))


def test_every_variable_the_code_reads_is_documented() -> None:
    found = variables_read()
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "GIN_VAR_DIR"} <= set(found)
    missing = {name: sorted(files) for name, files in found.items() if name not in documented()}
    assert missing == {}, f"add these to docs/configuration.md: {missing}"


def test_only_service_config_reads_the_environment() -> None:
    """Every setting is read in service/config.py; the rest of the code asks it."""
    python = {
        str(path.relative_to(ROOT)): path.read_text()
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
    }
    elsewhere = {
        name: sorted(files - {"service/config.py"})
        for name, files in variables_in_python(python).items()
        if files - {"service/config.py"}
    }
    assert elsewhere == {}


def test_the_scan_finds_each_kind_of_read() -> None:
    source = """
import os
from os import environ, getenv

def _int_env(name, default):
    raw = os.environ.get(name)
    return int(raw) if raw else default

def flag(key):
    return key in os.environ

A = os.environ.get("DIRECT_GET", "x")
B = os.environ["SUBSCRIPT"]
C = getenv("GETENV")
D = _int_env("VIA_HELPER", 3)
E = flag("VIA_IN_HELPER")
F = "MEMBERSHIP" in environ
G = os.environ.setdefault("SET_DEFAULT", "1")
H = {"NOT_AN_ENV_READ": 1}.get("NOT_AN_ENV_READ_EITHER")
I = print("SHOUTING_BUT_NOT_READ")
"""
    found = set(variables_in_python({"example.py": source}))
    assert found == {
        "DIRECT_GET",
        "SUBSCRIPT",
        "GETENV",
        "VIA_HELPER",
        "VIA_IN_HELPER",
        "MEMBERSHIP",
        "SET_DEFAULT",
    }


def test_an_undocumented_variable_is_reported() -> None:
    found = variables_in_python({"new.py": 'import os\nX = os.environ.get("GIN_SHINY_NEW")\n'})
    assert set(found) - documented() == {"GIN_SHINY_NEW"}


def test_documented_rows_have_a_default_and_a_meaning() -> None:
    rows = [line for line in REFERENCE.read_text().splitlines() if DOCUMENTED.match(line)]
    assert len(rows) == len(documented())  # each variable has one row
    for row in rows:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        assert len(cells) == 3 and all(cells), row


def test_the_deploy_examples_set_only_documented_variables() -> None:
    import yaml

    from tests.deploy.test_compose import env_example

    configmap = yaml.safe_load((ROOT / "deploy/k8s/configmap.yaml").read_text())
    secret = yaml.safe_load((ROOT / "deploy/k8s/secret.example.yaml").read_text())
    named = set(env_example()) | set(configmap["data"]) | set(secret["stringData"])
    assert named - documented() == set()
