"""The games (their rules, matches, payout maths and bots, service/games) and the tournament
maths are pure: they import nothing of Flask, SQLAlchemy or Celery."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import service.games
import service.tournaments

FORBIDDEN = {
    "flask",
    "sqlalchemy",
    "celery",
    "kombu",
    "marshmallow",
    "alembic",
    "psycopg",
    "redis",
    "gunicorn",
    "werkzeug",
    "apispec",
    "flask_smorest",
}
PURE_DIRS = [Path(module.__file__ or "").parent for module in (service.games, service.tournaments)]


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_framework_import_in_the_source() -> None:
    files = sorted(path for folder in PURE_DIRS for path in folder.rglob("*.py"))
    assert len(files) >= 12
    names = {path.relative_to(path.parents[1]).as_posix() for path in files}
    # the subpackages are scanned too
    assert {"rummy/hand.py", "multi_gin/payout.py", "common/cards.py", "games/registry.py"} <= names
    for path in files:
        bad = imported_roots(path) & FORBIDDEN
        assert not bad, f"{path} imports {sorted(bad)}"


def test_importing_the_engine_loads_no_framework() -> None:
    code = (
        "import sys, service.games.common.fair, service.games.gin.playout, service.games\n"
        "import service.games.rummy.fair, service.games.rummy.playout, service.games.bots\n"
        "import service.games.multi_gin.three_player, service.games.multi_gin.partnership\n"
        "import service.tournaments.payouts, service.tournaments.bracket\n"
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(FORBIDDEN)!r}))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
