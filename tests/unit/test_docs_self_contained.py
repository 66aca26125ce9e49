"""A clone is all a reader has: the README, the docs and the code's docstrings point at nothing
outside the repository (the rules are stated in docs/engine.md, the API conventions in
docs/api-conventions.md), the documents they name exist, and the docs describe no code that
was deleted."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Ways of pointing at the specification folder that lies beside the repository, not in it.
OUTSIDE = ("../shared", "shared/RULES.md", "shared/API_CONVENTIONS.md", "/work/shared")
TEXT = {".py", ".md", ".sql", ".mako", ".ini", ".txt", ".yaml", ".yml", ".toml"}

#: The WSGI fast paths in front of Flask, the deposit batcher and their database functions and
#: settings, all deleted (one request path through Flask).
DELETED = (
    "CASHIER_FAST_PATH",
    "CASHIER_BATCH",
    "MATCH_FAST_PATH",
    "cashier_post",
    "api/cashier.py",
    "matchpath",
    "fastpath",
    "array_literal",
    "One-call cashier",
)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def sources() -> list[Path]:
    return [
        path
        for folder in ("service", "worker", "refwallet")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file() and path.suffix in TEXT and "__pycache__" not in path.parts
    ]


def lines_naming(paths: list[Path], names: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(name in line for name in names)
    ]


def test_nothing_points_outside_the_repository() -> None:
    assert lines_naming(documents() + sources(), OUTSIDE) == []


#: A citation of the team's specification file, or of the tracker's issue numbers: the rules are
#: cited by their sections in docs/ (``docs/engine.md 6.5``), and a change says why in the code.
CITATION = re.compile(r"RULES(\.md)?\b|\b[Ii]ssue #?[0-9]+")


def test_nothing_cites_the_specification_file_or_an_issue_number() -> None:
    everything = [
        *documents(),
        *sources(),
        ROOT / "openapi.yaml",
        *(
            path
            for folder in ("tests", "bench", "deploy")
            for path in sorted((ROOT / folder).rglob("*"))
            if path.is_file()
            and path.suffix in TEXT | {".json"}
            and "__pycache__" not in path.parts
        ),
    ]
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in everything
        if path.name != Path(__file__).name
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CITATION.search(line)
    ]
    assert cited == []


def test_the_documents_named_exist() -> None:
    named = {
        name
        for path in documents()
        for name in re.findall(r"`(docs/[\w./-]+\.md)`", path.read_text("utf-8"))
    }
    assert {"docs/engine.md", "docs/api-conventions.md"} <= named
    assert sorted(name for name in named if not (ROOT / name).is_file()) == []


def test_the_docs_describe_no_deleted_request_path() -> None:
    assert lines_naming(documents(), DELETED) == []


def test_the_readme_is_a_short_page_that_leads_to_every_docs_page() -> None:
    """The README is a newcomer's page (under 150 lines); the design lives in docs/, and every
    page there is reachable from it."""
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 150
    linked = set(re.findall(r"`(docs/[\w./-]+\.md)`", readme))
    pages = {str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")}
    assert sorted(pages - linked) == []
