"""The ledger's pure core imports no framework (STYLE: a pure core, thin edges)."""

from __future__ import annotations

import subprocess
import sys

PURE = ["service.ledger.postings", "service.ledger.money", "service.ledger.chain", "service.errors"]
FRAMEWORKS = ["flask", "sqlalchemy", "celery", "marshmallow", "flask_smorest"]


def test_pure_ledger_modules_import_no_framework() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {module}\n" for module in PURE)
        + f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
