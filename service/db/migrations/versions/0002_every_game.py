"""Tables for every game: a table names its game and its number of seats (up to six), a
match its game, and a hand the seats dealt in with all their client seeds (11.6.4).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("game_tables") as batch:
        batch.add_column(sa.Column("game", sa.String(20), nullable=False, server_default="gin"))
        batch.add_column(sa.Column("seat_count", sa.Integer(), nullable=False, server_default="2"))
        batch.drop_constraint(op.f("ck_game_tables_seats_taken"), type_="check")
        batch.create_check_constraint(
            op.f("ck_game_tables_seats_taken"), "seats_taken BETWEEN 0 AND seat_count"
        )
        batch.create_check_constraint(
            op.f("ck_game_tables_seat_count"), "seat_count BETWEEN 2 AND 6"
        )
    with op.batch_alter_table("seats") as batch:
        batch.drop_constraint(op.f("ck_seats_seat_no"), type_="check")
        batch.create_check_constraint(op.f("ck_seats_seat_no"), "seat_no BETWEEN 0 AND 5")
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("game", sa.String(20), nullable=False, server_default="gin"))
    with op.batch_alter_table("hands") as batch:
        batch.add_column(sa.Column("seats", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("client_seeds", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("hands") as batch:
        batch.drop_column("client_seeds")
        batch.drop_column("seats")
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("game")
    with op.batch_alter_table("seats") as batch:
        batch.drop_constraint(op.f("ck_seats_seat_no"), type_="check")
        batch.create_check_constraint(op.f("ck_seats_seat_no"), "seat_no IN (0, 1)")
    with op.batch_alter_table("game_tables") as batch:
        batch.drop_constraint(op.f("ck_game_tables_seat_count"), type_="check")
        batch.drop_constraint(op.f("ck_game_tables_seats_taken"), type_="check")
        batch.create_check_constraint(
            op.f("ck_game_tables_seats_taken"), "seats_taken BETWEEN 0 AND 2"
        )
        batch.drop_column("seat_count")
        batch.drop_column("game")
