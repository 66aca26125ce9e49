"""A match names its settlement (``matches.settlement_id``, written with the settlement and
the version it bumps), so that the match's view and stream say the settlement is ready
without another read; filled in for the matches settled before.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("settlement_id", sa.String(length=40), nullable=True))
    op.execute(
        "UPDATE matches SET settlement_id = "
        "(SELECT settlements.id FROM settlements WHERE settlements.match_id = matches.id) "
        "WHERE settled_at IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("settlement_id")
