"""The SQL a revision runs, read from its files under ``service/db/sql/``.

Every database function and trigger is defined in exactly one file, named by the revision that
installs it and the dialect (``0001_postgresql.sql``, ``0001_sqlite.sql``). A later revision that
changes one restates its full text in a file of its own, so the live definition is always the
newest file's. The files hold guards only: they refuse a bad row, they compute nothing.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from alembic import op

SQL = Path(__file__).resolve().parents[1] / "sql"
_FUNCTION = re.compile(r"CREATE (?:OR REPLACE )?FUNCTION (\w+)\(")


def read(revision: str, dialect: str) -> str:
    """The text of ``<revision>_<dialect>.sql``."""
    return (SQL / f"{revision}_{dialect}.sql").read_text(encoding="utf-8")


def statements(text: str, dialect: str) -> list[str]:
    """The statements of a file, in order: each ends with a ``;`` at the end of a line that is
    outside a dollar-quoted body (PostgreSQL) or a trigger's ``BEGIN ... END`` (SQLite)."""
    found: list[str] = []
    lines: list[str] = []
    for line in text.splitlines():
        if not lines and (not line.strip() or line.lstrip().startswith("--")):
            continue
        lines.append(line)
        statement = "\n".join(lines)
        if not line.rstrip().endswith(";"):
            continue
        if dialect == "postgresql":
            complete = statement.count("$$") % 2 == 0
        else:
            complete = sqlite3.complete_statement(statement)
        if complete:
            found.append(statement.rstrip().removesuffix(";"))
            lines = []
    if lines:
        raise ValueError(f"unterminated statement: {lines[0]!r}")
    return found


def run(revision: str) -> None:
    """Run the revision's file for the database being migrated."""
    dialect = op.get_bind().dialect.name
    for statement in statements(read(revision, dialect), dialect):
        op.execute(statement)


def functions(revision: str, dialect: str) -> list[str]:
    """The names of the functions the revision's file creates."""
    return _FUNCTION.findall(read(revision, dialect))
