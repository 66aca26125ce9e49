"""The schema is built by the migrations, and the models never drift from them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from service.db import make_engine
from service.db.migrate import alembic_config, head_revision, is_current
from service.db.migrations import sqlfiles
from service.db.models import Base


def test_models_match_migrations(database_url: str) -> None:
    engine = create_engine(database_url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diff = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diff == [], f"models and migrations drifted apart: {diff}"


def test_database_is_at_head(database_url: str) -> None:
    engine = make_engine(database_url)
    versions = Path(alembic_config(database_url).get_main_option("script_location") or "")
    newest = max(path.name.split("_")[0] for path in (versions / "versions").glob("0*.py"))
    assert head_revision() == newest
    assert is_current(engine)
    engine.dispose()


def test_downgrade_and_upgrade_round_trip(fresh_database_url: str) -> None:
    config = alembic_config(fresh_database_url)
    command.downgrade(config, "base")
    engine = make_engine(fresh_database_url)
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    engine.dispose()
    command.upgrade(config, "head")
    engine = make_engine(fresh_database_url)
    assert "ledger_entries" in inspect(engine).get_table_names()
    assert is_current(engine)
    engine.dispose()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE ledger_entries SET amount = amount + 1",
        "DELETE FROM ledger_entries",
        "UPDATE ledger_transactions SET amount = amount + 1",
        "DELETE FROM ledger_transactions",
    ],
)
def test_ledger_tables_are_append_only(funded: Any, statement: str) -> None:
    engine = make_engine(funded.url)
    with pytest.raises(Exception, match="append-only"), engine.begin() as connection:
        connection.execute(text(statement))
    engine.dispose()


def test_the_guards_in_the_database_are_exactly_those_of_the_sql_files(
    fresh_database_url: str,
) -> None:
    """Every database function and trigger is defined in a revision's .sql file, and nothing
    else is left in the database (no function outliving the revision that replaced it)."""
    engine = make_engine(fresh_database_url)
    dialect = engine.dialect.name
    text_of = sqlfiles.read("0001", dialect)
    defined = set(re.findall(r"CREATE (?:CONSTRAINT )?TRIGGER (\w+)", text_of))
    with engine.connect() as connection:
        if dialect == "postgresql":
            functions = set(
                connection.execute(
                    text(
                        "SELECT p.proname FROM pg_proc p"
                        " JOIN pg_namespace n ON n.oid = p.pronamespace"
                        " WHERE n.nspname = 'public'"
                    )
                ).scalars()
            )
            triggers = set(
                connection.execute(
                    text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
                ).scalars()
            )
            assert functions == set(sqlfiles.functions("0001", dialect))
        else:
            triggers = set(
                connection.execute(
                    text("SELECT name FROM sqlite_master WHERE type = 'trigger'")
                ).scalars()
            )
    engine.dispose()
    assert defined and triggers == defined


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
def test_a_sql_file_splits_into_its_statements(dialect: str) -> None:
    found = sqlfiles.statements(sqlfiles.read("0001", dialect), dialect)
    creates = sqlfiles.read("0001", dialect).count("\nCREATE ")
    assert len(found) == creates
    assert all(s.startswith("CREATE ") and not s.endswith(";") for s in found)
    body = "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  x;\nEND $$;"
    trigger = "CREATE TRIGGER t BEFORE DELETE ON x\nBEGIN SELECT RAISE(ABORT, 'no');\nEND;"
    text_of = body if dialect == "postgresql" else trigger
    assert (
        sqlfiles.statements(f"-- a comment\n{text_of}\n\n{text_of}\n", dialect)
        == [text_of.removesuffix(";")] * 2
    )
    with pytest.raises(ValueError, match="unterminated"):
        sqlfiles.statements(text_of.removesuffix(";"), dialect)
