"""Tournaments (docs/tournaments.md): a tournament, its entries, and the tables the system
opens for its matches.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.db.models import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tournaments",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("game", sa.String(length=20), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("format", sa.String(length=20), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("practice", sa.Boolean(), nullable=False),
        sa.Column("buy_in", sa.BigInteger(), nullable=False),
        sa.Column("fee", sa.BigInteger(), nullable=False),
        sa.Column("entrants", sa.Integer(), nullable=False),
        sa.Column("entries_taken", sa.Integer(), nullable=False),
        sa.Column("payout_table", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("server_seed", sa.String(length=64), nullable=False),
        sa.Column("commitment", sa.String(length=64), nullable=False),
        sa.Column("draw", sa.JSON(), nullable=True),
        sa.Column("bracket", sa.JSON(), nullable=True),
        sa.Column("registration_deadline", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("cancelled_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('open', 'running', 'finished', 'cancelled')",
            name=op.f("ck_tournaments_status"),
        ),
        sa.CheckConstraint("kind IN ('knockout')", name=op.f("ck_tournaments_kind")),
        sa.CheckConstraint("entrants IN (4, 8, 16, 32)", name=op.f("ck_tournaments_entrants")),
        sa.CheckConstraint(
            "entries_taken BETWEEN 0 AND entrants", name=op.f("ck_tournaments_entries_taken")
        ),
        sa.CheckConstraint("buy_in >= 1 AND fee >= 0", name=op.f("ck_tournaments_entry_amounts")),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_tournaments_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournaments")),
    )
    op.create_index(
        op.f("ix_tournaments_operator_id"),
        "tournaments",
        ["operator_id", "status", "created_at"],
        unique=False,
    )
    op.create_table(
        "tournament_entries",
        sa.Column("tournament_id", sa.String(length=40), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.String(length=40), nullable=False),
        sa.Column("registered_at", UTCDateTime(), nullable=False),
        sa.Column("hold_transaction_id", sa.String(length=40), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("prize", sa.BigInteger(), nullable=True),
        sa.Column("first_place", sa.Integer(), nullable=True),
        sa.Column("last_place", sa.Integer(), nullable=True),
        sa.CheckConstraint("seat BETWEEN 1 AND 32", name=op.f("ck_tournament_entries_seat")),
        sa.CheckConstraint(
            "state IN ('registered', 'playing', 'knocked_out', 'champion', 'refunded')",
            name=op.f("ck_tournament_entries_state"),
        ),
        sa.CheckConstraint(
            "prize IS NULL OR prize >= 0", name=op.f("ck_tournament_entries_prize_non_negative")
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_tournament_entries_player_id_players")
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_tournament_entries_tournament_id_tournaments"),
        ),
        sa.PrimaryKeyConstraint("tournament_id", "seat", name=op.f("pk_tournament_entries")),
        sa.UniqueConstraint(
            "tournament_id", "player_id", name=op.f("uq_tournament_entries_tournament_id")
        ),
    )
    op.create_index(
        op.f("ix_tournament_entries_player_id"), "tournament_entries", ["player_id"], unique=False
    )
    with op.batch_alter_table("game_tables") as batch:
        batch.add_column(sa.Column("tournament_id", sa.String(length=40), nullable=True))
        batch.create_index(batch.f("ix_game_tables_tournament_id"), ["tournament_id"])
        batch.create_foreign_key(
            batch.f("fk_game_tables_tournament_id_tournaments"),
            "tournaments",
            ["tournament_id"],
            ["id"],
        )


def downgrade() -> None:
    with op.batch_alter_table("game_tables") as batch:
        batch.drop_constraint(batch.f("fk_game_tables_tournament_id_tournaments"), "foreignkey")
        batch.drop_index(batch.f("ix_game_tables_tournament_id"))
        batch.drop_column("tournament_id")
    op.drop_index(op.f("ix_tournament_entries_player_id"), table_name="tournament_entries")
    op.drop_table("tournament_entries")
    op.drop_index(op.f("ix_tournaments_operator_id"), table_name="tournaments")
    op.drop_table("tournaments")
