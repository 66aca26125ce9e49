"""deploy/Dockerfile, checked without a Docker daemon: parsed into stages (dockerfile-parse),
its entrypoint run against stand-in commands, its health check run against a real socket, and
the builder stage's wheel built from exactly the files the Dockerfile copies."""

from __future__ import annotations

import fnmatch
import http.server
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dockerfile_parse import DockerfileParser

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
ENTRYPOINT = ROOT / "deploy" / "docker-entrypoint.sh"
HEALTHCHECK = ROOT / "deploy" / "healthcheck.py"
BUILD_TOOLS = re.compile(
    r"\b(gcc|g\+\+|cc|clang|make|build-essential|[\w.-]+-dev|python3?-dev|"
    r"apt-get\s+install|apk\s+add|yum\s+install|dnf\s+install)\b"
)


def stages(text: str) -> list[dict[str, Any]]:
    """The Dockerfile's stages in order: name, base image and instructions."""
    # From a file object: given only text, dockerfile-parse would write ./Dockerfile.
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()))
    found: list[dict[str, Any]] = []
    for item in parser.structure:
        if item["instruction"] == "FROM":
            words = item["value"].split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            found.append({"name": name, "base": words[0], "instructions": []})
        elif found and item["instruction"] != "COMMENT":
            found[-1]["instructions"].append((item["instruction"], item["value"]))
    return found


def problems(text: str) -> list[str]:
    """What is wrong with a Dockerfile by this project's rules (empty when it is fine)."""
    found = stages(text)
    wrong: list[str] = []
    if len(found) < 2:
        return ["not multi-stage"]
    builder, final = found[0], found[-1]
    if builder["name"] != "builder":
        wrong.append("the first stage is not named builder")
    if not builder["base"].endswith("-slim") or not final["base"].endswith("-slim"):
        wrong.append("stages are not on a slim image")
    users = [value.split(":")[0] for op, value in final["instructions"] if op == "USER"]
    if not users or users[-1] in ("0", "root"):
        wrong.append("the final stage runs as root")
    for op, value in final["instructions"]:
        if op == "RUN" and BUILD_TOOLS.search(value):
            wrong.append(f"build tools in the final stage: {value!r}")
    if not any(op == "COPY" and "--from=builder" in value for op, value in final["instructions"]):
        wrong.append("the final stage copies nothing from the builder")
    if not any(op == "HEALTHCHECK" for op, _ in final["instructions"]):
        wrong.append("no HEALTHCHECK")
    if not any(op == "ENTRYPOINT" for op, _ in final["instructions"]):
        wrong.append("no ENTRYPOINT")
    return wrong


def test_the_dockerfile_is_multi_stage_non_root_and_has_no_build_tools_at_runtime() -> None:
    text = DOCKERFILE.read_text()
    assert problems(text) == []
    builder = stages(text)[0]
    assert any(op == "RUN" and "pip wheel" in value for op, value in builder["instructions"])


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda t: t.replace("USER 10001:10001", "USER root"), "runs as root"),
        (lambda t: t.replace("USER 10001:10001\n", ""), "runs as root"),
        (
            lambda t: t.replace("WORKDIR /app\n", "WORKDIR /app\nRUN apt-get install -y gcc\n"),
            "build tools",
        ),
        (lambda t: t.replace("COPY --from=builder", "COPY"), "copies nothing"),
        (
            lambda t: t.replace("AS builder", "AS build").replace("--from=builder", "--from=build"),
            "not named builder",
        ),
        (lambda t: re.sub(r"HEALTHCHECK[^\n]*\\\n[^\n]*\n", "", t), "HEALTHCHECK"),
    ],
)
def test_the_checks_catch_a_broken_dockerfile(edit: Any, problem: str) -> None:
    broken = edit(DOCKERFILE.read_text())
    assert broken != DOCKERFILE.read_text()
    assert any(problem in found for found in problems(broken)), problems(broken)


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore leaves ``path`` out of the build context (no ``!`` rules)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        fnmatch.fnmatch(prefix, pattern.removeprefix("**/"))
        or fnmatch.fnmatch(prefix.rsplit("/", 1)[-1], pattern.removeprefix("**/"))
        for pattern in patterns
        for prefix in prefixes
    )


def copy_sources() -> list[str]:
    sources: list[str] = []
    for stage in stages(DOCKERFILE.read_text()):
        for op, value in stage["instructions"]:
            words = shlex.split(value)
            if op == "COPY" and not any(w.startswith("--from") for w in words):
                sources += [w for w in words[:-1] if not w.startswith("--")]
    return sources


def test_every_copied_file_exists_and_is_in_the_build_context() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert not any(p.startswith("!") for p in patterns)  # dockerignored() does not do them
    sources = copy_sources()
    assert {"pyproject.toml", "service", "worker", "deploy/gunicorn.conf.py"} <= set(sources)
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not dockerignored(source, patterns), source
    # and the context leaves out what must never be baked in
    for secret_or_junk in (".git", ".venv", "var/gin.sqlite", "deploy/.env", "tests"):
        assert dockerignored(secret_or_junk, patterns), secret_or_junk


STAND_INS = ("gunicorn", "celery", "gin-service", "echo-args")


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """Commands that print the arguments they were started with, instead of running."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in STAND_INS:
        script = folder / name
        script.write_text(f'#!/bin/sh\nprintf "%s\\n" "{name}" "$@"\n')
        script.chmod(0o755)
    return folder


def run_entrypoint(fake_bin: Path, tmp_path: Path, *args: str) -> tuple[list[str], str]:
    role_file = tmp_path / "role"
    env = {
        "PATH": f"{fake_bin}:/usr/bin:/bin",
        "GIN_ROLE_FILE": str(role_file),
        "GIN_VAR_DIR": "/app/var",
    }
    result = subprocess.run(
        ["sh", str(ENTRYPOINT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return result.stdout.splitlines(), role_file.read_text().strip()


@pytest.mark.parametrize(
    "args, command, role",
    [
        ((), ["gunicorn", "-c", "/app/deploy/gunicorn.conf.py", "service.wsgi:app"], "api"),
        (("api",), ["gunicorn", "-c", "/app/deploy/gunicorn.conf.py", "service.wsgi:app"], "api"),
        (
            ("worker", "--concurrency", "4"),
            [
                "celery",
                "-A",
                "worker.celery_app",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "4",
            ],
            "worker",
        ),
        (
            ("beat",),
            [
                "celery",
                "-A",
                "worker.celery_app",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                "/app/var/celerybeat-schedule",
            ],
            "beat",
        ),
        (("migrate",), ["gin-service", "db", "upgrade"], "migrate"),
        (
            ("echo-args", "api-key", "list", "op_1"),
            ["echo-args", "api-key", "list", "op_1"],
            "echo-args",
        ),
    ],
)
def test_the_entrypoint_starts_each_role(
    fake_bin: Path, tmp_path: Path, args: tuple[str, ...], command: list[str], role: str
) -> None:
    started, recorded = run_entrypoint(fake_bin, tmp_path, *args)
    assert started == command
    assert recorded == role


def test_the_gunicorn_config_the_image_uses_loads(tmp_path: Path) -> None:
    """The api role runs ``gunicorn -c deploy/gunicorn.conf.py``: gunicorn must accept it."""
    script = (
        "import sys; from gunicorn.app.wsgiapp import WSGIApplication\n"
        "sys.argv = ['gunicorn', '-c', sys.argv[1], 'service.wsgi:app']\n"
        "app = WSGIApplication(); print(app.cfg.bind, app.cfg.workers)\n"
    )
    env = {
        **os.environ,
        "WEB_CONCURRENCY": "3",
        "GIN_BIND": "0.0.0.0:8123",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    result = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "deploy/gunicorn.conf.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.split() == ["['0.0.0.0:8123']", "3"]


# --- the image's health check ---------------------------------------------------------------


@pytest.fixture
def healthz_server() -> Iterator[tuple[int, list[int]]]:
    """A local HTTP server whose /healthz answers with the status at the list's head."""
    status = [200]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code = status[0] if self.path == "/healthz" else 404
            self.send_response(code)
            self.end_headers()
            self.wfile.write(json.dumps({"status": "ok"}).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], status
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def healthcheck(tmp_path: Path, role: str | None, port: int) -> int:
    role_file = tmp_path / "role"
    if role is not None:
        role_file.write_text(role + "\n")
    env = {**os.environ, "GIN_ROLE_FILE": str(role_file), "GIN_BIND": f"0.0.0.0:{port}"}
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK)], env=env, timeout=30, check=False
    ).returncode


def test_the_health_check_follows_the_api(
    tmp_path: Path, healthz_server: tuple[int, list[int]]
) -> None:
    port, status = healthz_server
    assert healthcheck(tmp_path, "api", port) == 0
    assert healthcheck(tmp_path, None, port) == 0  # no role recorded: the image's default, api
    status[0] = 500
    assert healthcheck(tmp_path, "api", port) == 1
    assert healthcheck(tmp_path, "api", free_port()) == 1  # nothing listening
    assert healthcheck(tmp_path, "beat", free_port()) == 0  # beat: alive while it runs


# --- the builder stage's wheel ----------------------------------------------------------------


def test_the_builder_stage_wheel_carries_the_app_and_its_migrations(tmp_path: Path) -> None:
    """Build the project's wheel from exactly what the builder stage copies (as `pip wheel .`
    does there), and check it holds the migrations, the worker and the console script."""
    context = tmp_path / "context"
    context.mkdir()
    for source in copy_sources():
        if source.startswith("deploy/"):
            continue  # copied into the final stage, not built
        target = context / source
        if (ROOT / source).is_dir():
            shutil.copytree(
                ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy(ROOT / source, target)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(tmp_path / "wheels"),
            str(context),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (wheel,) = (tmp_path / "wheels").glob("gin_service-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = {
        p.relative_to(ROOT).as_posix()
        for p in [
            *(ROOT / "service/db/migrations/versions").glob("*.py"),
            *(ROOT / "service/db/sql").glob("*.sql"),
        ]
    }
    assert migrations and migrations <= names
    assert {"service/wsgi.py", "worker/celery_app.py", "service/db/migrations/env.py"} <= names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "gin-service = service.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
