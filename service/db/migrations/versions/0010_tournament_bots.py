"""Practice bots in practice tournaments (docs/tournaments.md, "Practice tournaments"): a bot
is seated at one practice table or entered in one practice tournament, never both.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("bot_players") as batch:
        batch.add_column(sa.Column("tournament_id", sa.String(length=40), nullable=True))
        batch.alter_column("table_id", existing_type=sa.String(length=40), nullable=True)
        batch.create_foreign_key(
            batch.f("fk_bot_players_tournament_id_tournaments"),
            "tournaments",
            ["tournament_id"],
            ["id"],
        )
        batch.create_index(batch.f("ix_bot_players_tournament_id"), ["tournament_id"])
        batch.create_check_constraint(
            batch.f("ck_bot_players_one_place"), "(table_id IS NULL) <> (tournament_id IS NULL)"
        )


def downgrade() -> None:
    op.execute("DELETE FROM bot_players WHERE table_id IS NULL")
    with op.batch_alter_table("bot_players") as batch:
        batch.drop_constraint(batch.f("ck_bot_players_one_place"), "check")
        batch.drop_index(batch.f("ix_bot_players_tournament_id"))
        batch.drop_constraint(batch.f("fk_bot_players_tournament_id_tournaments"), "foreignkey")
        batch.alter_column("table_id", existing_type=sa.String(length=40), nullable=False)
        batch.drop_column("tournament_id")
