"""Continuous Rummy tables (11.5.1): a table plays one match per hand, so a match no longer
owns its table alone; a seat keeps its table balance, which may run down to nothing, and
says whether its player is ready for the next hand.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.drop_constraint(op.f("uq_matches_table_id"), type_="unique")
        batch.create_index(batch.f("ix_matches_table_id"), ["table_id"], unique=False)
    with op.batch_alter_table("seats") as batch:
        batch.drop_constraint(op.f("ck_seats_escrow_positive"), type_="check")
        batch.create_check_constraint(op.f("ck_seats_escrow_non_negative"), "escrow >= 0")
        batch.add_column(sa.Column("ready", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table("seats") as batch:
        batch.drop_column("ready")
        batch.drop_constraint(op.f("ck_seats_escrow_non_negative"), type_="check")
        batch.create_check_constraint(op.f("ck_seats_escrow_positive"), "escrow > 0")
    with op.batch_alter_table("matches") as batch:
        batch.drop_index(batch.f("ix_matches_table_id"))
        batch.create_unique_constraint(op.f("uq_matches_table_id"), ["table_id"])
