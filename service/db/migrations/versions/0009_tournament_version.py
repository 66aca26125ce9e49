"""A tournament's ``version``: grows with each change to it, the ids of its event stream's
events (docs/tournaments.md, "Following a tournament").

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tournaments") as batch:
        batch.add_column(sa.Column("version", sa.BigInteger(), nullable=False, server_default="0"))
        batch.create_check_constraint(batch.f("ck_tournaments_version"), "version >= 0")


def downgrade() -> None:
    with op.batch_alter_table("tournaments") as batch:
        batch.drop_constraint(batch.f("ck_tournaments_version"), "check")
        batch.drop_column("version")
