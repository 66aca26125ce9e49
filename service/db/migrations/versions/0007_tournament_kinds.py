"""Single-table and scheduled tournaments (docs/tournaments.md): a tournament's kind may be
``single_table``, its field 2 to 32, its fewest entrants ``min_entrants`` and its start
``starts_at``; an entry of a single table ends ``placed``.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.db.models import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

OLD_STATES = "state IN ('registered', 'playing', 'knocked_out', 'champion', 'refunded')"
NEW_STATES = "state IN ('registered', 'playing', 'knocked_out', 'champion', 'placed', 'refunded')"


def upgrade() -> None:
    with op.batch_alter_table("tournaments") as batch:
        batch.add_column(sa.Column("min_entrants", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("starts_at", UTCDateTime(), nullable=True))
    op.execute("UPDATE tournaments SET min_entrants = entrants")
    with op.batch_alter_table("tournaments") as batch:
        batch.alter_column("min_entrants", existing_type=sa.Integer(), nullable=False)
        batch.drop_constraint(batch.f("ck_tournaments_kind"), "check")
        batch.drop_constraint(batch.f("ck_tournaments_entrants"), "check")
        batch.create_check_constraint(
            batch.f("ck_tournaments_kind"), "kind IN ('knockout', 'single_table')"
        )
        batch.create_check_constraint(
            batch.f("ck_tournaments_entrants"), "entrants BETWEEN 2 AND 32"
        )
        batch.create_check_constraint(
            batch.f("ck_tournaments_min_entrants"), "min_entrants BETWEEN 2 AND entrants"
        )
    with op.batch_alter_table("tournament_entries") as batch:
        batch.drop_constraint(batch.f("ck_tournament_entries_state"), "check")
        batch.create_check_constraint(batch.f("ck_tournament_entries_state"), NEW_STATES)


def downgrade() -> None:
    with op.batch_alter_table("tournament_entries") as batch:
        batch.drop_constraint(batch.f("ck_tournament_entries_state"), "check")
        batch.create_check_constraint(batch.f("ck_tournament_entries_state"), OLD_STATES)
    with op.batch_alter_table("tournaments") as batch:
        batch.drop_constraint(batch.f("ck_tournaments_min_entrants"), "check")
        batch.drop_constraint(batch.f("ck_tournaments_entrants"), "check")
        batch.drop_constraint(batch.f("ck_tournaments_kind"), "check")
        batch.create_check_constraint(batch.f("ck_tournaments_kind"), "kind IN ('knockout')")
        batch.create_check_constraint(
            batch.f("ck_tournaments_entrants"), "entrants IN (4, 8, 16, 32)"
        )
        batch.drop_column("starts_at")
        batch.drop_column("min_entrants")
