"""Practice bots: players marked as bots, each seated at one practice table (issue 7).

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
    op.create_table(
        "bot_players",
        sa.Column("player_id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("table_id", sa.String(length=40), nullable=False),
        sa.Column("match_id", sa.String(length=40), nullable=False),
        sa.Column("strategy", sa.String(length=20), nullable=False),
        sa.Column("seen_version", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_bot_players_player_id_players")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_bot_players_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game_tables.id"], name=op.f("fk_bot_players_table_id_game_tables")
        ),
        sa.PrimaryKeyConstraint("player_id", name=op.f("pk_bot_players")),
    )
    op.create_index(op.f("ix_bot_players_match_id"), "bot_players", ["match_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_bot_players_match_id"), table_name="bot_players")
    op.drop_table("bot_players")
