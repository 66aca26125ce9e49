"""SQL of earlier revisions, for the later revisions whose downgrade puts it back.

A revision that replaces a database function keeps no copy of the one it replaces: its
downgrade reads the earlier revision's own text, so the two can never drift apart.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

VERSIONS = Path(__file__).with_name("versions")


def revision(filename: str) -> ModuleType:
    """The revision module ``versions/<filename>`` (loaded on its own, not registered)."""
    spec = importlib.util.spec_from_file_location(f"_gin_revision_{Path(filename).stem}",
                                                  VERSIONS / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def function(sql: str | list[str], name: str) -> str:
    """The ``CREATE FUNCTION name(...)`` statement in ``sql`` (one statement or several), as
    ``CREATE OR REPLACE`` so that it can be run over a later version."""
    statements = [sql] if isinstance(sql, str) else sql
    for statement in statements:
        head = f"CREATE FUNCTION {name}("
        if head in statement:
            return statement.replace(head, f"CREATE OR REPLACE FUNCTION {name}(", 1)
    raise LookupError(f"no CREATE FUNCTION {name} in the given SQL")
