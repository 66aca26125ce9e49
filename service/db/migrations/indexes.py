"""Partial indexes as the migrations add them to live tables.

On PostgreSQL an index is built ``CONCURRENTLY`` (outside the migration's transaction), so a
table in service keeps taking writes while it is built; SQLite builds it in place.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


def create_partial_index(name: str, table: str, columns: list[str], predicate: str) -> None:
    """``CREATE INDEX name ON table (columns) WHERE predicate``."""
    where = sa.text(predicate)
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.create_index(name, table, columns, postgresql_where=where,
                            postgresql_concurrently=True)
    else:
        op.create_index(name, table, columns, sqlite_where=where)


def drop_partial_index(name: str, table: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.drop_index(name, table, postgresql_concurrently=True)
    else:
        op.drop_index(name, table)
