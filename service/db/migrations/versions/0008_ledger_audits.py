"""The last ledger audit of each operator's books (docs/ledger.md, Audit): the worker's
periodic reconciliation, or an operator asking for one, stores its report here, and the
console's dashboard shows it instead of auditing the whole ledger on every load.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.db.models import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ledger_audits",
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("ran_at", UTCDateTime(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_ledger_audits_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("operator_id", name=op.f("pk_ledger_audits")),
    )


def downgrade() -> None:
    op.drop_table("ledger_audits")
