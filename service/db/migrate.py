"""Alembic, driven from code: ``upgrade(url)`` builds or updates a database to the newest
revision. There is no alembic.ini; ``gin-service db upgrade`` and the tests use this module.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Apply the migrations to the database at ``url`` up to ``revision``."""
    command.upgrade(alembic_config(url), revision)


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def is_current(engine: Engine) -> bool:
    """Whether the database at ``engine`` is at the newest revision."""
    with engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_revision()
    return current == head_revision()
