"""Settlements: one immutable statement per match, tied to its ledger transaction (issue 5).

UPDATE and DELETE are refused by triggers on PostgreSQL and SQLite.

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
    op.create_table(
        "settlements",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("match_id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("fee", sa.BigInteger(), nullable=False),
        sa.Column("statement", sa.JSON(), nullable=False),
        sa.Column("ledger_transaction_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("fee >= 0", name=op.f("ck_settlements_fee_non_negative")),
        sa.ForeignKeyConstraint(
            ["ledger_transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_settlements_ledger_transaction_id_ledger_transactions"),
        ),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_settlements_match_id_matches")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_settlements_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_settlements")),
        sa.UniqueConstraint("match_id", name=op.f("uq_settlements_match_id")),
    )
    with op.batch_alter_table("settlements", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_settlements_operator_id"), ["operator_id", "created_at"], unique=False
        )
    _guards(install=True)


PG_GUARDS = [
    """
    CREATE FUNCTION settlements_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'settlements are append-only: % on %', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
    END $$
    """,
    """
    CREATE TRIGGER settlements_append_only BEFORE UPDATE OR DELETE ON settlements
    FOR EACH ROW EXECUTE FUNCTION settlements_refuse_change()
    """,
]
PG_DROP = [
    "DROP TRIGGER IF EXISTS settlements_append_only ON settlements",
    "DROP FUNCTION IF EXISTS settlements_refuse_change()",
]
SQLITE_GUARDS = [
    f"""
    CREATE TRIGGER settlements_no_{op_name.lower()} BEFORE {op_name} ON settlements
    BEGIN SELECT RAISE(ABORT, 'settlements are append-only'); END
    """
    for op_name in ("UPDATE", "DELETE")
]
SQLITE_DROP = [f"DROP TRIGGER IF EXISTS settlements_no_{o}" for o in ("update", "delete")]


def _guards(install: bool) -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if install:
        statements = PG_GUARDS if postgres else SQLITE_GUARDS
    else:
        statements = PG_DROP if postgres else SQLITE_DROP
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    _guards(install=False)
    with op.batch_alter_table("settlements", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_settlements_operator_id"))

    op.drop_table("settlements")
