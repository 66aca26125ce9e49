"""The settlement sweep reads the matches still to settle, not every match ever (issue 4).

Beat's ``settlement.sweep`` (every minute) finds finished or void matches without a
settlement, in case a settlement task was lost. Matches stay ``finished`` once settled, so the
query anti-joined every match ever finished with the settlements, a scan that grew with every
match played. ``matches.settled_at`` is written in the settlement's transaction, and the
partial index ``ix_matches_unsettled (finished_at) WHERE status IN ('finished', 'void') AND
settled_at IS NULL`` holds only the matches the sweep is for. Matches already settled get
their settlement's time here. On PostgreSQL the index is built ``CONCURRENTLY``.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.db.migrations.indexes import create_partial_index, drop_partial_index

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

NAME = "ix_matches_unsettled"
PREDICATE = "status IN ('finished', 'void') AND settled_at IS NULL"  # match_models.UNSETTLED


def upgrade() -> None:
    op.add_column("matches", sa.Column("settled_at", sa.DateTime(timezone=True)))
    op.execute(
        "UPDATE matches SET settled_at = (SELECT s.created_at FROM settlements s"
        " WHERE s.match_id = matches.id)"
        " WHERE EXISTS (SELECT 1 FROM settlements s WHERE s.match_id = matches.id)"
    )
    create_partial_index(NAME, "matches", ["finished_at"], PREDICATE)


def downgrade() -> None:
    drop_partial_index(NAME, "matches")
    op.execute("ALTER TABLE matches DROP COLUMN settled_at")
