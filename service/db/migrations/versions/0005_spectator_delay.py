"""Spectator delay (docs/games.md, Spectator delay): a public table may show spectators its
match some moves or seconds late. The table says how late, its matches copy it, and each
action's log entry of a delayed match keeps the match's state and commitment after it, from
which a spectator's earlier view is built.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("game_tables") as batch:
        batch.add_column(sa.Column("spectator_delay", sa.JSON(), nullable=True))
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("spectator_delay", sa.JSON(), nullable=True))
    with op.batch_alter_table("match_actions") as batch:
        batch.add_column(sa.Column("state", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("commitment", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("match_actions") as batch:
        batch.drop_column("commitment")
        batch.drop_column("state")
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("spectator_delay")
    with op.batch_alter_table("game_tables") as batch:
        batch.drop_column("spectator_delay")
