"""The schema is built by the migrations, and the models never drift from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from service.db import make_engine
from service.db.migrate import alembic_config, head_revision, is_current
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


def test_0014_drops_the_cashier_functions_and_its_downgrade_puts_them_back(
    fresh_database_url: str,
) -> None:
    if not fresh_database_url.startswith("postgresql"):
        pytest.skip("the cashier functions existed on PostgreSQL only")

    def functions() -> set[str]:
        engine = make_engine(fresh_database_url)
        with engine.connect() as connection:
            names = connection.execute(text(
                "SELECT proname FROM pg_proc WHERE proname IN"
                " ('cashier_post', 'cashier_post_batch', 'gin_idempotency_lock_id')")).scalars()
            found = set(names)
        engine.dispose()
        return found

    config = alembic_config(fresh_database_url)
    assert functions() == set()
    command.downgrade(config, "0013")
    assert functions() == {"cashier_post", "cashier_post_batch", "gin_idempotency_lock_id"}
    command.upgrade(config, "head")
    assert functions() == set()
